/* model/llm.c: the shared pieces of the LLM commands (model/llm.h). */
#include "model/llm.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/fileio.h"
#include "formats/dump.h"
#include "formats/npy.h"
#include "formats/tokenizer.h"
#include "model/llama-import.h"

/* Bytes of the mapped weights of g (each mapping counted once). */
static size_t mapped_bytes(const struct qp_graph *g)
{
    size_t total = 0;
    const struct qp_mmap *seen[64];
    int nseen = 0;
    for (int v = 0; v < g->n_values; v++) {
        const struct qp_tensor *t = g->values[v].konst;
        if (!t || !t->map)
            continue;
        bool dup = false;
        for (int i = 0; i < nseen && !dup; i++)
            dup = seen[i] == t->map;
        if (dup)
            continue;
        if (nseen < 64)
            seen[nseen++] = t->map;
        total += t->map->size;
    }
    return total;
}

enum qp_status qp_llm_open(const char *dir, struct qp_llm **out,
                           struct qp_error *err)
{
    *out = NULL;
    struct qp_llm *m = calloc(1, sizeof *m);
    if (!m || !(m->dir = strdup(dir))) {
        free(m);
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    }
    struct qp_graph *g;
    enum qp_status st = qp_llama_load(dir, &g, &m->cfg, err);
    if (!st)
        st = qp_session_new(g, dir, &m->s, err);
    if (st) {
        qp_llm_free(m);
        return st;
    }
    char *tj = qp_path_join(dir, "tokenizer.json");
    struct stat sb;
    if (!tj)
        st = qp_fail(err, QP_E_NOMEM, "out of memory");
    else if (stat(tj, &sb) == 0)
        st = qp_tokenizer_load(dir, &m->tok, err);
    free(tj);
    if (st) {
        qp_llm_free(m);
        return st;
    }
    g = (struct qp_graph *)qp_session_graph(m->s);
    m->vocab = g->values[qp_graph_find(g, "model.embed_tokens.weight")].konst->shape[0];
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    double phys = pages > 0 && page > 0 ? (double)pages * (double)page : 0;
    m->release_weights = phys > 0 && (double)mapped_bytes(g) > phys / 4;
    *out = m;
    return QP_OK;
}

void qp_llm_free(struct qp_llm *m)
{
    if (!m)
        return;
    qp_session_free(m->s);
    qp_tokenizer_free(m->tok);
    free(m->dir);
    free(m);
}

/* ---- token ids ---------------------------------------------------------------- */

/* The ids tensor of path: an .npy file, or the tensor "input_ids" of a
 * dump (or its only tensor). */
static enum qp_status load_ids_tensor(const char *path, struct qp_tensor **t,
                                      struct qp_error *err)
{
    if (qp_str_ends_with(path, ".npy"))
        return qp_fmt_npy_load(path, "ids", false, t, err);
    struct qp_dump *d;
    enum qp_status st = qp_dump_open(path, QP_DUMP_AUTO, &d, err);
    if (st)
        return st;
    long i = qp_dump_find(d, QP_LLAMA_INPUT);
    if (i < 0 && qp_dump_count(d) == 1)
        i = 0;
    st = i < 0 ? qp_fail(err, QP_E_NOTFOUND, "'%s': no tensor '%s' (and more "
                         "than one tensor)", path, QP_LLAMA_INPUT)
               : qp_dump_load(d, (size_t)i, t, err);
    qp_dump_close(d);
    return st;
}

enum qp_status qp_llm_read_ids(const char *path, int64_t vocab, int32_t **ids,
                               size_t *n, int64_t *shape, int *ndim,
                               struct qp_error *err)
{
    *ids = NULL;
    *n = 0;
    struct qp_tensor *t;
    enum qp_status st = load_ids_tensor(path, &t, err);
    if (st)
        return st;
    if (t->dtype != QP_DTYPE_I32 && t->dtype != QP_DTYPE_I64)
        st = qp_fail(err, QP_E_FORMAT, "'%s': token ids are %s, expected int32 "
                     "or int64", path, qp_dtype_name(t->dtype));
    else if (ndim && t->ndim != 1 && t->ndim != 2)
        st = qp_fail(err, QP_E_SHAPE, "'%s': token ids have rank %d; expected "
                     "[T] or [B, T]", path, t->ndim);
    size_t count = qp_tensor_numel(t);
    int32_t *v = st ? NULL : malloc((count ? count : 1) * sizeof *v);
    if (!st && !v)
        st = qp_fail(err, QP_E_NOMEM, "out of memory");
    for (size_t i = 0; !st && i < count; i++) {
        int64_t id = qp_elem_get_i64(t->dtype, t->data, i);
        if (id < 0 || id >= vocab)
            st = qp_fail(err, QP_E_INVAL, "'%s': token id %lld at position %zu "
                         "is outside the model's vocabulary [0, %lld)", path,
                         (long long)id, i, (long long)vocab);
        else
            v[i] = (int32_t)id;
    }
    if (!st && ndim) {
        *ndim = t->ndim;
        memcpy(shape, t->shape, (size_t)t->ndim * sizeof *shape);
    }
    qp_tensor_free(t);
    if (st) {
        free(v);
        return st;
    }
    *ids = v;
    *n = count;
    return QP_OK;
}

enum qp_status qp_llm_feed(const int32_t *ids, int64_t b, int64_t t,
                           struct qp_tensor **out, struct qp_error *err)
{
    int64_t shape[2] = {b, t};
    enum qp_status st = b ? qp_tensor_new(QP_LLAMA_INPUT, QP_DTYPE_I32, 2, shape,
                                          out, err)
                          : qp_tensor_new(QP_LLAMA_INPUT, QP_DTYPE_I32, 1, &t,
                                          out, err);
    if (!st)
        memcpy((*out)->data, ids, qp_tensor_numel(*out) * sizeof *ids);
    return st;
}

enum qp_status qp_llm_load_feed(const struct qp_llm *m, const char *path,
                                struct qp_tensor ***feed, struct qp_error *err)
{
    int32_t *ids = NULL;
    size_t n;
    int64_t shape[2];
    int nd;
    *feed = calloc(1, sizeof **feed);
    if (!*feed)
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    enum qp_status st = qp_llm_read_ids(path, m->vocab, &ids, &n, shape, &nd, err);
    if (!st && !n)
        st = qp_fail(err, QP_E_SHAPE, "'%s': no token ids", path);
    if (!st)
        st = nd == 2 ? qp_llm_feed(ids, shape[0], shape[1], &(*feed)[0], err)
                     : qp_llm_feed(ids, 0, shape[0], &(*feed)[0], err);
    free(ids);
    if (st) {
        free(*feed);
        *feed = NULL;
    }
    return st;
}

enum qp_status qp_llm_add_calib_ids(struct qp_llm *m, const int32_t *ids,
                                    size_t n, int64_t ctx, size_t max_seqs,
                                    size_t *added, struct qp_error *err)
{
    if (added)
        *added = 0;
    if (ctx < 1)
        return qp_fail(err, QP_E_INVAL, "calibration sequences need ctx >= 1");
    size_t len = (size_t)ctx, seqs = n / len;
    if (!seqs && n) {
        seqs = 1;
        len = n;
    }
    if (max_seqs && seqs > max_seqs)
        seqs = max_seqs;
    for (size_t i = 0; i < seqs; i++) {
        struct qp_tensor **feed = calloc(1, sizeof *feed);
        enum qp_status st = feed ? qp_llm_feed(ids + i * len, 0, (int64_t)len,
                                               &feed[0], err)
                                 : qp_fail(err, QP_E_NOMEM, "out of memory");
        if (!st)
            st = qp_session_add_calib_feed(m->s, feed, err);
        else
            free(feed);
        if (st)
            return st;
        if (added)
            (*added)++;
    }
    return QP_OK;
}

enum qp_status qp_llm_read_tokens(const struct qp_llm *m, const char *path,
                                  int32_t **ids, size_t *n, struct qp_error *err)
{
    if (qp_str_ends_with(path, ".npy") || qp_str_ends_with(path, ".safetensors") ||
        qp_str_ends_with(path, ".npz") || qp_str_ends_with(path, ".h5"))
        return qp_llm_read_ids(path, m->vocab, ids, n, NULL, NULL, err);
    return qp_llm_read_text(m, path, ids, n, err);
}

enum qp_status qp_llm_read_text(const struct qp_llm *m, const char *path,
                                int32_t **ids, size_t *n, struct qp_error *err)
{
    *ids = NULL;
    *n = 0;
    char *text;
    size_t len;
    enum qp_status st = qp_read_file(path, (size_t)1 << 31, &text, &len, err);
    if (st)
        return st;
    st = qp_llm_encode(m, text, len, true, ids, n, err);
    free(text);
    if (!st && !*n)
        st = qp_fail(err, QP_E_INVAL, "no tokens");
    return st ? qp_error_prefix(err, "'%s': ", path) : QP_OK;
}

enum qp_status qp_llm_text_feed(const struct qp_llm *m, const char *path,
                                struct qp_tensor ***feed, struct qp_error *err)
{
    int32_t *ids;
    size_t n;
    *feed = calloc(1, sizeof **feed);
    if (!*feed)
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    enum qp_status st = qp_llm_read_text(m, path, &ids, &n, err);
    if (!st) {
        st = qp_llm_feed(ids, 0, (int64_t)n, &(*feed)[0], err);
        free(ids);
    }
    if (st) {
        free(*feed);
        *feed = NULL;
    }
    return st;
}

enum qp_status qp_llm_encode(const struct qp_llm *m, const char *text,
                             size_t len, bool add_special, int32_t **ids,
                             size_t *n, struct qp_error *err)
{
    *ids = NULL;
    *n = 0;
    if (!m->tok)
        return qp_fail(err, QP_E_NOTFOUND, "'%s' has no tokenizer.json; give "
                       "token ids", m->dir);
    enum qp_status st = qp_tokenizer_encode(m->tok, text, len, add_special, ids, n,
                                            err);
    for (size_t i = 0; !st && i < *n; i++)
        if ((*ids)[i] < 0 || (*ids)[i] >= m->vocab)
            st = qp_fail(err, QP_E_INVAL, "the tokenizer gives id %d, outside the "
                         "model's vocabulary of %lld", (*ids)[i],
                         (long long)m->vocab);
    if (st) {
        free(*ids);
        *ids = NULL;
        *n = 0;
    }
    return st;
}

enum qp_status qp_llm_decode(const struct qp_llm *m, const int32_t *ids,
                             size_t n, char **text, size_t *len,
                             struct qp_error *err)
{
    *text = NULL;
    *len = 0;
    if (!m->tok)
        return qp_fail(err, QP_E_NOTFOUND, "'%s' has no tokenizer.json", m->dir);
    return qp_tokenizer_decode(m->tok, ids, n, 0, text, len, err);
}

int32_t qp_llm_bos(const struct qp_llm *m)
{
    if (m->tok)
        return qp_tokenizer_adds_bos(m->tok) ? qp_tokenizer_bos_id(m->tok) : -1;
    return (int32_t)m->cfg.bos_id;
}

int32_t qp_llm_eos(const struct qp_llm *m)
{
    int32_t e = m->tok ? qp_tokenizer_eos_id(m->tok) : -1;
    return e >= 0 ? e : (int32_t)m->cfg.eos_id;
}

enum qp_status qp_llm_plan(struct qp_llm *m, const struct qp_session_cfg *cfg,
                           const int32_t *calib, size_t n_calib, int64_t ctx,
                           size_t max_seqs, size_t *seqs, struct qp_splan **out,
                           struct qp_error *err)
{
    enum qp_status st = calib ? qp_llm_add_calib_ids(m, calib, n_calib, ctx,
                                                     max_seqs, seqs, err)
                              : QP_OK;
    if (!calib && seqs)
        *seqs = 0;
    return st ? st : qp_session_plan(m->s, cfg, out, err);
}

/* ---- forward -------------------------------------------------------------------- */

enum qp_status qp_llm_forward(struct qp_llm *m, const struct qp_llm_pass *p,
                              const int32_t *ids, int64_t b, int64_t t,
                              struct qp_tensor **logits, struct qp_error *err)
{
    *logits = NULL;
    struct qp_tensor *x;
    enum qp_status st = qp_llm_feed(ids, b, t, &x, err);
    if (st)
        return st;
    struct qp_session_run_opts o = {
        .capture = p ? p->capture : NULL,
        .on_capture = p ? p->on_capture : NULL,
        .capture_ctx = p ? p->capture_ctx : NULL,
        .progress = p ? p->progress : NULL,
        .state = p ? p->kv : NULL,
        .release_weights = m->release_weights};
    const struct qp_tensor *feed[1] = {x};
    st = qp_session_run(m->s, p ? p->plan : NULL, feed, &o, logits, NULL, err);
    qp_tensor_free(x);
    return st;
}
