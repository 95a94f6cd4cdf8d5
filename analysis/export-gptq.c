/* analysis/export-gptq.c: GPTQ checkpoints of Llama-family folders
 * (analysis/export-gptq.h). */
#include "analysis/export-gptq.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/export-llm.h"
#include "core/fileio.h"
#include "core/half.h"
#include "core/outfile.h"
#include "core/strmap.h"
#include "formats/dump.h"
#include "formats/json.h"
#include "model/gptq-view.h"
#include "model/llama-import.h"
#include "model/llm.h"
#include "model/qassign.h"
#include "quant/pack.h"

/* Calibration sequences: at most CALIB_SEQS of CALIB_CTX tokens. */
#define CALIB_CTX 512
#define CALIB_SEQS 16
/* config.json and the tokenizer files copied: at most this many bytes */
#define SIDE_FILE_MAX ((size_t)64 << 20)

static const char *const side_files[] = {"tokenizer.json", "tokenizer_config.json",
                                         "generation_config.json",
                                         "special_tokens_map.json"};

struct job {
    const struct qp_export_opts *o;
    struct qp_wscheme ws;       /* the scheme's, with 'half' */
    struct qp_llm *m;
    const struct qp_graph *g;
    struct qp_qassign *a;
    const struct qp_wquant **w; /* [n_nodes] GPTQ results, borrowed */
    struct qp_strmap byname;    /* weight name -> node */
    size_t layers, kept, nlin;  /* written, copied, to write */
};

/* The decoder's Linear layers get ws; everything else stays float. */
static enum qp_status assign(struct job *j, struct qp_error *err)
{
    enum qp_status st = qp_qassign_new(j->g, &j->a, err);
    char name[256];
    for (int i = 0; !st && i < j->g->n_nodes; i++) {
        if (!qp_node_weighted(j->g, i, NULL) ||
            !qp_gview_llm_linear(&j->g->nodes[i]))
            continue;
        qp_node_weight_name(j->g, i, name, sizeof name);
        if (strncmp(name, "model.layers.", 13))
            continue;
        j->a->wq[i] = true;
        j->a->ws[i] = j->ws;
        bool dup;
        st = qp_strmap_put(&j->byname, name, (size_t)i, &dup, err);
        j->nlin += !dup;
    }
    return st;
}

/* Opens the model with its calibration sequences and runs GPTQ. */
static enum qp_status calibrate(struct job *j, struct qp_export_result *r,
                                struct qp_error *err)
{
    int32_t *ids = NULL;
    size_t n = 0;
    enum qp_status st = qp_llm_open(j->o->model, &j->m, err);
    if (!st)
        st = qp_llm_read_tokens(j->m, j->o->calib, &ids, &n, err);
    if (!st)
        st = qp_llm_add_calib_ids(j->m, ids, n, CALIB_CTX, CALIB_SEQS,
                                  &r->calib_sets, err);
    free(ids);
    if (!st && !r->calib_sets)
        st = qp_fail(err, QP_E_INVAL, "--calib '%s': no tokens", j->o->calib);
    if (st)
        return st;
    j->g = qp_session_graph(j->m->s);
    if ((st = assign(j, err)))
        return st;
    if (!(j->w = calloc((size_t)j->g->n_nodes + 1, sizeof *j->w)))
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    struct qp_session_gptq_opts go = {.progress = j->o->progress};
    qp_session_set_gptq(j->m->s, &go);
    return qp_session_gptq(j->m->s, j->a, QP_ROUND_HALF_AWAY, NULL, j->w, err);
}

/* ---- packing ------------------------------------------------------------ */

/* PREFIX.SUFFIX of shape [d0, d1] (d1 0: [d0]). */
static enum qp_status new_tensor(const char *prefix, const char *suffix,
                                 enum qp_dtype dt, int64_t d0, int64_t d1,
                                 struct qp_tensor **out, struct qp_error *err)
{
    char name[640];
    snprintf(name, sizeof name, "%.512s.%s", prefix, suffix);
    return qp_tensor_new(name, dt, d1 ? 2 : 1, (const int64_t[]){d0, d1}, out,
                         err);
}

/* The four tensors of one layer, from its GPTQ weight q [out, in]. */
static enum qp_status pack_layer(const char *prefix, const struct qp_wquant *wq,
                                 unsigned bits, bool sym, struct qp_tensor *t[4],
                                 struct qp_error *err)
{
    const struct qp_tensor *q = wq->q;
    const struct qp_qparams *qp = q->qp;
    size_t out = (size_t)q->shape[0], in = (size_t)q->shape[1];
    size_t per = 32 / bits, ng = qp->count / out;
    size_t block = qp->block_size ? (size_t)qp->block_size : in;
    if (q->ndim != 2 || in % per || out % per || ng * out != qp->count)
        return qp_fail(err, QP_E_UNSUPPORTED, "layer '%s' [%zu, %zu]: the GPTQ "
                       "format packs %zu rows and outputs a word", prefix, out,
                       in, per);
    enum qp_status st;
    if ((st = new_tensor(prefix, "qweight", QP_DTYPE_I32, (int64_t)(in / per),
                         (int64_t)out, &t[0], err)) ||
        (st = new_tensor(prefix, "qzeros", QP_DTYPE_I32, (int64_t)ng,
                         (int64_t)(out / per), &t[1], err)) ||
        (st = new_tensor(prefix, "scales", QP_DTYPE_F16, (int64_t)ng,
                         (int64_t)out, &t[2], err)) ||
        (st = new_tensor(prefix, "g_idx", QP_DTYPE_I32, (int64_t)in, 0, &t[3],
                         err)))
        return st;
    uint32_t *qw = t[0]->data, *qz = t[1]->data, mask = (1u << bits) - 1;
    uint16_t *sc = t[2]->data;
    int32_t *gi = t[3]->data, off = sym ? 1 << (bits - 1) : 0;
    for (size_t i = 0; i < in; i++)
        gi[i] = wq->g_idx ? ((const int32_t *)wq->g_idx->data)[i]
                          : (int32_t)(i / block);
    for (size_t o = 0; o < out; o++)
        for (size_t i = 0; i < in; i++) {
            int32_t u = qp_packed_get(q->dtype, q->data, o * in + i) + off;
            if (u < 0 || (uint32_t)u > mask)
                return qp_fail(err, QP_E_INVAL, "layer '%s': integer %d outside "
                               "%u bits", prefix, u - off, bits);
            qw[i / per * out + o] |= (uint32_t)u << (bits * (i % per));
        }
    for (size_t g = 0; g < ng; g++)
        for (size_t o = 0; o < out; o++) {
            float s = qp->scale[o * ng + g];
            int32_t z = sym ? off : qp->zero_point ? qp->zero_point[o * ng + g] : 0;
            sc[g * out + o] = qp_f32_to_f16(s);
            if (qp_f16_to_f32(sc[g * out + o]) != s)
                return qp_fail(err, QP_E_INVAL, "layer '%s': scale %g is not a "
                               "float16", prefix, (double)s);
            if (z < 1 || (uint32_t)z > mask)
                return qp_fail(err, QP_E_UNSUPPORTED, "layer '%s': zero point "
                               "%d (output %zu, group %zu) has no code in the "
                               "GPTQ format (it stores zero point - 1 in %u "
                               "bits); use a symmetric scheme", prefix, z, o, g,
                               bits);
            qz[g * (out / per) + o / per] |= (uint32_t)(z - 1) << (bits * (o % per));
        }
    return QP_OK;
}

/* model.safetensors: the folder's tensors, the quantized ones packed. */
static enum qp_status write_weights(struct job *j, const char *dir,
                                    struct qp_error *err)
{
    struct qp_dump *d = NULL;
    struct qp_dump_writer *w = NULL;
    char *path = qp_path_join(dir, "model.safetensors");
    enum qp_status st = path ? qp_dump_open(j->o->model, QP_DUMP_SAFETENSORS, &d, err)
                             : qp_fail(err, QP_E_NOMEM, "out of memory");
    if (!st)
        st = qp_dump_writer_open(path, QP_DUMP_SAFETENSORS, &w, err);
    if (!st)
        st = qp_dump_writer_set_meta(w, "format", "pt", err);
    unsigned bits = j->ws.f.bits;
    for (size_t e = 0; !st && e < qp_dump_count(d); e++) {
        const char *name = qp_dump_entry(d, e)->name;
        size_t node;
        if (qp_strmap_get(&j->byname, name, &node) && j->w[node]) {
            struct qp_tensor *t[4] = {0};
            char prefix[512];
            snprintf(prefix, sizeof prefix, "%.*s", (int)(strlen(name) - 7), name);
            st = qp_str_ends_with(name, ".weight")
                     ? pack_layer(prefix, j->w[node], bits, !j->ws.f.asym, t, err)
                     : qp_fail(err, QP_E_FORMAT, "'%s': a layer weight not named "
                               "PREFIX.weight", name);
            for (int k = 0; k < 4; k++) {
                if (!st)
                    st = qp_dump_writer_add(w, t[k], err);
                qp_tensor_free(t[k]);
            }
            j->layers++;
            continue;
        }
        struct qp_tensor *t;
        if (!(st = qp_dump_load(d, e, &t, err))) {
            st = qp_dump_writer_add(w, t, err);
            qp_tensor_free(t);
            j->kept++;
        }
    }
    if (!st && j->layers != j->nlin)
        st = qp_fail(err, QP_E_FORMAT, "'%s': %zu of the %zu decoder layers have "
                     "no weight in the checkpoint", j->o->model,
                     j->nlin - j->layers, j->nlin);
    if (!st) {
        st = qp_dump_writer_commit(w, err);
        w = NULL;
    }
    qp_dump_writer_abort(w);
    qp_dump_close(d);
    free(path);
    return st;
}

/* ---- configuration files ------------------------------------------------- */

static enum qp_status quant_config(const struct job *j, struct qp_json **out,
                                   struct qp_error *err)
{
    struct qp_json *c = *out = qp_json_new_object();
    if (!c)
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    enum qp_status st = qp_export_gptq_fields(&j->ws, "--scheme", c, err);
    const struct qp_gptq_options *g = &j->ws.gptq;
    double damp = g->damp ? g->damp : QP_GPTQ_DAMP_DEFAULT;
    if (!st && (!qp_json_add_bool(c, "desc_act", g->act_order) ||
                !qp_json_add_bool(c, "static_groups", g->static_groups) ||
                !qp_json_add_num(c, "damp_percent", damp) ||
                !qp_json_add_bool(c, "true_sequential", true) ||
                !qp_json_add_bool(c, "lm_head", false) ||
                !qp_json_add_str(c, "quant_method", "gptq") ||
                !qp_json_add_str(c, "checkpoint_format", "gptq") ||
                !qp_json_add_str(c, "model_file_base_name", "model")))
        st = qp_fail(err, QP_E_NOMEM, "out of memory");
    return st;
}

/* Writes text[len] to path (whole or not at all). */
static enum qp_status write_text(const char *path, const char *text, size_t len,
                                 struct qp_error *err)
{
    struct qp_outfile *of;
    enum qp_status st = qp_outfile_open(path, &of, err);
    if (st)
        return st;
    if (len && fwrite(text, 1, len, of->fp) != len) {
        qp_outfile_abort(of);
        return qp_fail(err, QP_E_IO, "'%s': write failed", path);
    }
    return qp_outfile_commit(of, err);
}

/* config.json with "quantization_config": qc put before its closing brace. */
static enum qp_status write_config(const struct job *j, const struct qp_json *qc,
                                   const char *dir, struct qp_error *err)
{
    char *src = qp_path_join(j->o->model, "config.json");
    char *dst = qp_path_join(dir, "config.json"), *text = NULL, *qtext = NULL,
         *all = NULL;
    size_t len = 0;
    struct qp_json *root = NULL;
    enum qp_status st = src && dst ? qp_read_file(src, SIDE_FILE_MAX, &text, &len, err)
                                   : qp_fail(err, QP_E_NOMEM, "out of memory");
    if (!st)
        st = qp_json_parse(text, src, &root, err);
    if (!st && (qp_json_type(root) != QP_JSON_OBJECT ||
                qp_json_get(root, "quantization_config")))
        st = qp_fail(err, QP_E_FORMAT, "'%s': %s", src,
                     qp_json_type(root) != QP_JSON_OBJECT
                         ? "not a JSON object"
                         : "the model is quantized already (quantization_config)");
    char *end = st ? NULL : strrchr(text, '}');
    if (!st && !(qtext = qp_json_print(qc, false)))
        st = qp_fail(err, QP_E_NOMEM, "out of memory");
    size_t head = end ? (size_t)(end - text) : 0;
    while (head && (text[head - 1] == ' ' || text[head - 1] == '\n' ||
                    text[head - 1] == '\r' || text[head - 1] == '\t'))
        head--;
    size_t n = head + strlen(qtext ? qtext : "") + 64;
    if (!st && !(all = malloc(n)))
        st = qp_fail(err, QP_E_NOMEM, "out of memory");
    if (!st) {
        bool empty = text[head - 1] == '{';
        int k = snprintf(all, n, "%.*s%s\n  \"quantization_config\": %s\n}\n",
                         (int)head, text, empty ? "" : ",", qtext);
        st = write_text(dst, all, (size_t)k, err);
    }
    qp_json_free(root);
    free(all);
    free(qtext);
    free(text);
    free(src);
    free(dst);
    return st;
}

/* The tokenizer and generation files, copied when present. */
static enum qp_status copy_side_files(const struct job *j, const char *dir,
                                      struct qp_error *err)
{
    enum qp_status st = QP_OK;
    for (size_t k = 0; !st && k < sizeof side_files / sizeof *side_files; k++) {
        char *src = qp_path_join(j->o->model, side_files[k]);
        char *dst = qp_path_join(dir, side_files[k]), *text = NULL;
        size_t len;
        FILE *fp = src ? fopen(src, "rb") : NULL;
        if (fp)
            fclose(fp);
        if (!src || !dst)
            st = qp_fail(err, QP_E_NOMEM, "out of memory");
        else if (fp && !(st = qp_read_file(src, SIDE_FILE_MAX, &text, &len, err)))
            st = write_text(dst, text, len, err);
        free(text);
        free(src);
        free(dst);
    }
    return st;
}

/* ---- the export ----------------------------------------------------------- */

static enum qp_status check(const struct qp_export_opts *o, struct qp_error *err)
{
    if (!qp_llama_is_model_dir(o->model))
        return qp_fail(err, QP_E_UNSUPPORTED, "--to gptq: '%s' is not a Hugging "
                       "Face model folder (config.json)", o->model);
    if (!o->scheme)
        return qp_fail(err, QP_E_UNSUPPORTED, "--to gptq takes one --scheme for "
                       "every decoder layer, not a recipe");
    if (o->scheme->w.algo != QP_WALGO_GPTQ || o->scheme->has_acts)
        return qp_fail(err, QP_E_UNSUPPORTED, "--to gptq: the scheme must be "
                       "weight-only '@gptq' (e.g. w4g128@gptq)");
    if (o->scheme->w.f.bits == 3)
        return qp_fail(err, QP_E_UNSUPPORTED, "--to gptq: 3-bit weights (packed "
                       "across words) are not written; use 2, 4 or 8 bits");
    if (!o->calib)
        return qp_fail(err, QP_E_INVAL, "--to gptq needs --calib: calibration "
                       "tokens (.npy ids or text)");
    char *a = realpath(o->model, NULL), *b = realpath(o->out, NULL);
    bool same = a && b && !strcmp(a, b);
    free(a);
    free(b);
    if (same)
        return qp_fail(err, QP_E_INVAL, "--to gptq: -o '%s' is the model folder "
                       "(it would be replaced)", o->out);
    return QP_OK;
}

enum qp_status qp_export_gptq(const struct qp_export_opts *o,
                              struct qp_export_result *r, struct qp_error *err)
{
    struct job j = {.o = o};
    struct qp_json *qc = NULL;
    struct qp_outdir *od = NULL;
    qp_strmap_init(&j.byname);
    enum qp_status st = check(o, err);
    if (!st) {
        j.ws = o->scheme->w;
        j.ws.gptq.half_scales = true;
        st = quant_config(&j, &qc, err);
    }
    if (!st)
        st = calibrate(&j, r, err);
    if (!st)
        st = qp_outdir_open(o->out, &od, err);
    if (!st && !(st = write_weights(&j, od->tmp_path, err)) &&
        !(st = write_config(&j, qc, od->tmp_path, err))) {
        char *p = qp_path_join(od->tmp_path, "quantize_config.json");
        st = p ? qp_json_save(p, qc, true, err)
               : qp_fail(err, QP_E_NOMEM, "out of memory");
        free(p);
    }
    if (!st)
        st = copy_side_files(&j, od->tmp_path, err);
    if (!st) {
        st = qp_outdir_commit(od, err);
        od = NULL;
    }
    qp_outdir_abort(od);
    if (!st) {
        struct qp_scheme s = {.w = j.ws};
        char sch[QP_SCHEME_MAX];
        qp_scheme_format(&s, sch, sizeof sch);
        snprintf(r->summary, sizeof r->summary, "%s: %zu layers GPTQ-packed "
                 "(%s, fp16 scales), %zu tensors kept", o->out, j.layers, sch,
                 j.kept);
    }
    qp_json_free(qc);
    qp_qassign_free(j.a);
    free(j.w);
    qp_strmap_release(&j.byname);
    qp_llm_free(j.m);
    return st;
}
