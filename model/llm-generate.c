/* model/llm-generate.c: greedy generation (model/llm-generate.h). */
#include "model/llm-generate.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int32_t qp_llm_argmax(const float *x, size_t n)
{
    size_t best = 0;
    for (size_t i = 1; i < n; i++)
        if (x[i] > x[best] || (x[best] != x[best] && x[i] == x[i]))
            best = i;
    return (int32_t)best;
}

/* The next token from the last row of logits [t, vocab]. */
static int32_t next_token(const struct qp_tensor *logits, int64_t vocab)
{
    size_t rows = qp_tensor_numel(logits) / (size_t)vocab;
    return qp_llm_argmax((const float *)logits->data + (rows - 1) * (size_t)vocab,
                         (size_t)vocab);
}

enum qp_status qp_llm_generate(struct qp_llm *m, const struct qp_splan *plan,
                               const int32_t *prompt, size_t np,
                               const struct qp_gen_opts *o, int32_t **out,
                               size_t *nout, struct qp_gen_stats *stats,
                               struct qp_error *err)
{
    *out = NULL;
    *nout = 0;
    if (!np)
        return qp_fail(err, QP_E_INVAL, "generation needs a prompt of at least "
                       "one token");
    struct qp_gen_stats gs = {0, 0, np, 0};
    int32_t *seq = malloc((np + o->max_new + 1) * sizeof *seq);
    struct qp_kv_cache *kv = NULL;
    enum qp_status st = seq ? QP_OK : qp_fail(err, QP_E_NOMEM, "out of memory");
    if (!st && !o->no_cache)
        st = qp_kv_cache_new((int)m->cfg.n_layers, &kv, err);
    if (!st)
        memcpy(seq, prompt, np * sizeof *seq);
    size_t len = np, done = 0; /* tokens in seq; of them already in the cache */
    while (!st && len - np < o->max_new) {
        struct qp_llm_pass p = {.plan = plan, .kv = kv};
        struct qp_tensor *logits;
        double t0 = now_seconds();
        size_t from = kv ? done : 0;
        st = qp_llm_forward(m, &p, seq + from, 0, (int64_t)(len - from), &logits,
                            err);
        if (st)
            break;
        *(len == np ? &gs.prefill_seconds : &gs.decode_seconds) += now_seconds() - t0;
        done = len;
        int32_t id = next_token(logits, m->vocab);
        qp_tensor_free(logits);
        seq[len++] = id;
        gs.new_tokens++;
        qp_progress_report(o->progress, "generate", len - np, o->max_new);
        if (o->on_token)
            st = o->on_token(o->ctx, id, err);
        if (id == o->eos)
            break;
    }
    qp_kv_cache_free(kv);
    if (st) {
        free(seq);
        return st;
    }
    memmove(seq, seq + np, (len - np) * sizeof *seq);
    *out = seq;
    *nout = len - np;
    if (stats)
        *stats = gs;
    return QP_OK;
}
