/* analysis/sweep-llm.c: sweep rows of a Hugging Face Llama-family folder
 * (analysis/sweep-backend.h) through one qp_llm.
 *
 *   open     load the folder once, read the token stream (--text through
 *            the tokenizer, or --tokens ids) and the calibration tokens
 *            (--calib; else the stream's first chunk calibrates, as `qprobe
 *            eval` does);
 *   digest   the folder's .json and .safetensors files (sorted by name),
 *            the stream, the calibration tokens, ctx and chunks, a given
 *            base-logits file and the task files;
 *   eval     a plan per row, then qp_llm_perplexity against the fp32 base
 *            logits (a given --kl-base, else the fp32 model's, made by the
 *            first row that needs them into a temporary folder removed when
 *            the backend is freed or the process is ended by a signal):
 *            ppl, kl and same-top-p with their uncertainties and tokens/s;
 *            task_acc / exact_match from the task files; weight_bytes,
 *            params and bitops from the plan (analysis/price.h, MACs for one
 *            chunk). A perplexity that is not finite makes an error row. */
#include "analysis/sweep-backend.h"

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/llm-eval.h"
#include "analysis/llm-tasks.h"
#include "analysis/price.h"
#include "core/outfile.h"
#include "model/llm.h"

struct llm {
    struct qp_llm *m;
    const struct qp_sweep_src *src;
    int32_t *ids, *calib;       /* the stream, the calibration tokens */
    size_t n, ncalib;
    int64_t ctx;
    uint64_t *macs;             /* [n_nodes] for one chunk */
    struct qp_outdir *tmp;      /* holds base.kl when made here */
    char *base;                 /* the base-logits file, or NULL */
};

static void llm_free(void *self)
{
    struct llm *x = self;
    if (!x)
        return;
    qp_outdir_abort(x->tmp);
    free(x->base);
    free(x->macs);
    free(x->ids);
    free(x->calib);
    qp_llm_free(x->m);
    free(x);
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool ends_with(const char *s, const char *sfx)
{
    size_t n = strlen(s), k = strlen(sfx);
    return n >= k && !strcmp(s + n - k, sfx);
}

/* The folder's .json and .safetensors files, by name. */
static enum qp_status hash_folder(struct qp_sha256 *h, const char *dir,
                                  struct qp_error *err)
{
    DIR *d = opendir(dir);
    if (!d)
        return qp_fail(err, QP_E_IO, "'%s': cannot list the folder", dir);
    char **names = NULL;
    size_t n = 0, cap = 0;
    enum qp_status st = QP_OK;
    for (struct dirent *e; !st && (e = readdir(d));) {
        if (e->d_name[0] == '.' ||
            !(ends_with(e->d_name, ".json") || ends_with(e->d_name, ".safetensors")))
            continue;
        if (n == cap) {
            char **grown = realloc(names, (cap = cap ? 2 * cap : 16) * sizeof *names);
            if (!grown) {
                st = qp_fail(err, QP_E_NOMEM, "out of memory");
                break;
            }
            names = grown;
        }
        if (!(names[n] = strdup(e->d_name)))
            st = qp_fail(err, QP_E_NOMEM, "out of memory");
        else
            n++;
    }
    closedir(d);
    if (n)
        qsort(names, n, sizeof *names, by_name);
    for (size_t i = 0; !st && i < n; i++) {
        size_t len = strlen(dir) + strlen(names[i]) + 2;
        char *path = malloc(len);
        if (!path) {
            st = qp_fail(err, QP_E_NOMEM, "out of memory");
            break;
        }
        snprintf(path, len, "%s/%s", dir, names[i]);
        qp_sha256_str(h, names[i]);
        st = qp_sha256_file(h, path, err);
        free(path);
    }
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
    return st;
}

static void hash_ids(struct qp_sha256 *h, const char *what, const int32_t *ids,
                     size_t n)
{
    qp_sha256_str(h, what);
    qp_sha256_u64(h, n);
    for (size_t i = 0; i < n; i++)
        qp_sha256_u64(h, (uint64_t)(uint32_t)ids[i]);
}

/* A file's bytes under a label, or the label "none". */
static enum qp_status hash_opt_file(struct qp_sha256 *h, const char *what,
                                    const char *path, struct qp_error *err)
{
    qp_sha256_str(h, what);
    qp_sha256_str(h, path ? "file" : "none");
    return path ? qp_sha256_file(h, path, err) : QP_OK;
}

static enum qp_status llm_digest(void *self, struct qp_sha256 *h,
                                 struct qp_error *err)
{
    struct llm *x = self;
    const struct qp_sweep_src *s = x->src;
    enum qp_status st = hash_folder(h, s->model, err);
    hash_ids(h, "stream", x->ids, x->n);
    hash_ids(h, "calibration", x->calib, x->ncalib);
    qp_sha256_u64(h, (uint64_t)x->ctx);
    qp_sha256_u64(h, (uint64_t)s->chunks);
    if (!st)
        st = hash_opt_file(h, "kl-base", s->kl_base, err);
    if (!st)
        st = hash_opt_file(h, "choices", s->choices, err);
    if (!st)
        st = hash_opt_file(h, "exact-match", s->exact, err);
    return st;
}

/* The fp32 model's logits over the stream into the temporary folder. */
static enum qp_status make_base(struct llm *x, struct qp_error *err)
{
    const char *home = getenv("TMPDIR");
    char where[4096];
    snprintf(where, sizeof where, "%s/qprobe-sweep-%ld", home && *home ? home : "/tmp",
             (long)getpid());
    enum qp_status st = qp_outdir_open(where, &x->tmp, err);
    if (st)
        return st;
    size_t len = strlen(x->tmp->tmp_path) + sizeof "/base.kl";
    if (!(x->base = malloc(len)))
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    snprintf(x->base, len, "%s/base.kl", x->tmp->tmp_path);
    struct qp_ppl_opts po = {x->ctx, x->src->chunks, 0, qp_llm_bos(x->m), NULL,
                             x->base, NULL};
    struct qp_ppl_result r;
    st = qp_llm_perplexity(x->m, NULL, x->ids, x->n, &po, &r, err);
    if (st) {
        free(x->base);
        x->base = NULL;
    }
    return st;
}

/* Perplexity, KL and same-top-p of plan p into r. */
static enum qp_status score_stream(struct llm *x, const struct qp_splan *p,
                                   struct qp_sweep_result *r, struct qp_error *err)
{
    if (!x->n)
        return QP_OK;
    enum qp_status st = !x->base && !x->src->kl_base ? make_base(x, err) : QP_OK;
    struct qp_ppl_opts po = {x->ctx, x->src->chunks, 0, qp_llm_bos(x->m),
                             x->src->kl_base ? x->src->kl_base : x->base, NULL, NULL};
    struct qp_ppl_result pr;
    if (!st)
        st = qp_llm_perplexity(x->m, p, x->ids, x->n, &po, &pr, err);
    if (st)
        return st;
    r->ppl = pr.ppl;
    r->ppl_err = pr.ppl_unc;
    if (pr.has_kld) {
        r->kl = pr.kld.kld;
        r->kl_err = pr.kld.kld_unc;
        r->top1 = pr.kld.same_top;
        r->top1_err = pr.kld.same_top_unc;
    }
    r->tokens_per_s = pr.seconds > 0 ? (double)(pr.chunks * pr.ctx) / pr.seconds : NAN;
    if (!isfinite(pr.ppl))
        return qp_fail(err, QP_E_UNSUPPORTED, "perplexity is not finite under "
                       "this configuration (the model's logits are NaN or Inf)");
    return QP_OK;
}

/* The task files' scores of plan p into r. */
static enum qp_status score_tasks(struct llm *x, const struct qp_splan *p,
                                  struct qp_sweep_result *r, struct qp_error *err)
{
    struct qp_task_result t = {0};
    enum qp_status st = QP_OK;
    if (x->src->choices && !(st = qp_llm_choices(x->m, p, x->src->choices, NULL, &t,
                                                  err))) {
        r->task_acc = t.acc;
        r->task_acc_err = t.acc_unc;
        qp_task_result_release(&t);
    }
    if (!st && x->src->exact &&
        !(st = qp_llm_exact_match(x->m, p, x->src->exact, NULL, &t, err))) {
        r->exact_match = t.acc;
        r->exact_match_err = t.acc_unc;
        qp_task_result_release(&t);
    }
    return st;
}

static enum qp_status llm_eval(void *self, const struct qp_sweep_cfg *c,
                               struct qp_sweep_result *r, struct qp_error *err)
{
    struct llm *x = self;
    struct qp_splan *p = NULL;
    enum qp_status st = QP_OK;
    if (c->kind != QP_SWEEP_FP32) {
        struct qp_session_cfg cfg;
        qp_sweep_session_cfg(c, &cfg);
        st = qp_llm_plan(x->m, &cfg, x->calib, x->ncalib, x->ctx, 16, NULL, &p, err);
    }
    if (!st)
        st = score_stream(x, p, r, err);
    if (!st)
        st = score_tasks(x, p, r, err);
    if (!st) {
        struct qp_price pr;
        const struct qp_graph *g = qp_session_graph(x->m->s);
        qp_price_plan(g, p ? qp_splan_qplan(p) : NULL, x->macs, &pr);
        r->weight_bytes = (double)pr.bytes;
        r->params = (double)pr.params;
        r->bitops = x->macs ? pr.bitops : NAN;
    }
    qp_splan_free(p);
    return st;
}

/* MACs of every node for one chunk of ctx tokens (x->macs left NULL when
 * the graph cannot say). */
static void chunk_macs(struct llm *x)
{
    const struct qp_graph *g = qp_session_graph(x->m->s);
    int32_t *ids = calloc((size_t)x->ctx, sizeof *ids);
    struct qp_tensor *feed = NULL;
    struct qp_error ignored;
    x->macs = calloc((size_t)g->n_nodes + 1, sizeof *x->macs);
    if (!ids || !x->macs || qp_llm_feed(ids, 0, x->ctx, &feed, &ignored) ||
        qp_session_node_macs(x->m->s, (const struct qp_tensor *const *)&feed, x->macs,
                             &ignored)) {
        free(x->macs);
        x->macs = NULL;
    }
    qp_tensor_free(feed);
    free(ids);
}

enum qp_status qp_sweep_llm_open(const struct qp_sweep_src *src,
                                 struct qp_sweep_backend **out,
                                 struct qp_error *err)
{
    *out = NULL;
    if (!src->text && !src->tokens && !src->choices && !src->exact)
        return qp_fail(err, QP_E_INVAL, "'%s': a language-model sweep needs "
                       "--text or --tokens (and/or --choices, --exact-match)",
                       src->model);
    struct llm *x = calloc(1, sizeof *x);
    struct qp_sweep_backend *b = calloc(1, sizeof *b);
    if (!x || !b) {
        free(x);
        free(b);
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    }
    x->src = src;
    x->ctx = src->ctx ? src->ctx : 512;
    *b = (struct qp_sweep_backend){"llm", x, llm_digest, llm_eval, llm_free};
    enum qp_status st = qp_llm_open(src->model, &x->m, err);
    if (!st && src->tokens)
        st = qp_llm_read_ids(src->tokens, x->m->vocab, &x->ids, &x->n, NULL, NULL,
                             err);
    else if (!st && src->text)
        st = qp_llm_read_text(x->m, src->text, &x->ids, &x->n, err);
    if (!st && src->calib) {
        st = qp_llm_read_tokens(x->m, src->calib, &x->calib, &x->ncalib, err);
    } else if (!st && x->n) { /* the stream's first chunk calibrates */
        x->ncalib = x->n < (size_t)x->ctx ? x->n : (size_t)x->ctx;
        if (!(x->calib = malloc(x->ncalib * sizeof *x->calib + 1)))
            st = qp_fail(err, QP_E_NOMEM, "out of memory");
        else
            memcpy(x->calib, x->ids, x->ncalib * sizeof *x->calib);
    }
    if (!st && src->eval)
        st = qp_fail(err, QP_E_INVAL, "'%s': --eval is for graph models; a "
                     "language model is scored on --text or --tokens", src->model);
    if (!st && x->n && x->n < 2 * (size_t)x->ctx)
        st = qp_fail(err, QP_E_INVAL, "'%s': %zu tokens, fewer than two chunks of "
                     "%lld (--ctx)", src->text ? src->text : src->tokens, x->n,
                     (long long)x->ctx);
    if (!st)
        chunk_macs(x);
    if (st) {
        qp_sweep_backend_free(b);
        return st;
    }
    *out = b;
    return QP_OK;
}
