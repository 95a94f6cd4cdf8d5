/* analysis/llm-eval.c: perplexity and KL divergence over a token stream
 * (analysis/llm-eval.h). */
#include "analysis/llm-eval.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* The evaluation's geometry, checked against the base file. */
static enum qp_status plan_chunks(const struct qp_llm *m, const struct qp_ppl_opts *o,
                                  const struct qp_kld_file *base,
                                  const int32_t *ids, size_t n, int64_t *ctx,
                                  int64_t *chunks, struct qp_error *err)
{
    *ctx = o->ctx ? o->ctx : base ? base->n_ctx : 512;
    if (*ctx < 2 || *ctx > (1 << 24))
        return qp_fail(err, QP_E_INVAL, "a context of %lld tokens: it must be "
                       "in [2, 2^24]", (long long)*ctx);
    if (base && base->n_ctx != *ctx)
        return qp_fail(err, QP_E_SHAPE, "'%s': the base was computed with a "
                       "context of %d tokens, this evaluation uses %lld",
                       o->kl_base, base->n_ctx, (long long)*ctx);
    if (base && base->n_vocab != m->vocab)
        return qp_fail(err, QP_E_SHAPE, "'%s': the base has a vocabulary of %d "
                       "tokens, the model '%s' %lld", o->kl_base, base->n_vocab,
                       m->dir, (long long)m->vocab);
    if (!base && n < 2 * (size_t)*ctx)
        return qp_fail(err, QP_E_INVAL, "%zu tokens: perplexity with a context "
                       "of %lld needs at least %lld (llama.cpp's rule)", n,
                       (long long)*ctx, 2 * (long long)*ctx);
    int64_t most = (int64_t)(n / (size_t)*ctx);
    if (base && base->n_chunk < most)
        most = base->n_chunk;
    if (most < 1)
        return qp_fail(err, QP_E_INVAL, "%zu tokens do not make one chunk of "
                       "%lld%s", n, (long long)*ctx,
                       base ? " (or the base file has no chunk)" : "");
    *chunks = o->chunks > 0 && o->chunks < most ? o->chunks : most;
    size_t total = (size_t)(*chunks * *ctx);
    for (size_t i = 0; base && i < total; i++)
        if (base->tokens[i] != ids[i])
            return qp_fail(err, QP_E_FORMAT, "'%s': the base was computed on "
                           "another token stream: token %zu is %d there, %d here",
                           o->kl_base, i, base->tokens[i], ids[i]);
    return QP_OK;
}

struct eval {
    struct qp_llm *m;
    const struct qp_splan *plan;
    const struct qp_ppl_opts *o;
    const int32_t *ids;
    int64_t ctx, chunks, batch;
    int vocab, rows;             /* scored rows per chunk */
    struct qp_kld_file *base;
    struct qp_kld_writer w;
    uint16_t *enc;               /* one chunk's encoded rows (saving) */
    int32_t *in;                 /* [batch, ctx] */
    struct qp_ppl_acc ppl;
    struct qp_kld_acc kld;
    double seconds;
};

/* Scores chunk c from its logits [ctx, vocab]. */
static enum qp_status score_chunk(struct eval *e, int64_t c, const float *logits,
                                  struct qp_error *err)
{
    int64_t first = e->ctx / 2;
    const int32_t *tok = e->ids + c * e->ctx;
    size_t nv = qp_kld_row_u16(e->vocab);
    for (int64_t j = first; j < e->ctx - 1; j++) {
        const float *row = logits + (size_t)j * (size_t)e->vocab;
        int next = tok[j + 1];
        double nll = e->enc ? qp_kld_encode_row(row, e->vocab, next,
                                                e->enc + (size_t)(j - first) * nv)
                            : qp_kld_nll(row, e->vocab, next);
        qp_ppl_add(&e->ppl, nll);
        if (e->base) {
            enum qp_status st = qp_kld_add(&e->kld, row, e->vocab,
                                           qp_kld_file_row(e->base, (int)c,
                                                           (int)(j - first)),
                                           next, err);
            if (st)
                return st;
        }
    }
    return e->enc ? qp_kld_writer_chunk(&e->w, e->enc, err) : QP_OK;
}

/* Chunks [c0, c0 + b) in one forward pass. */
static enum qp_status run_group(struct eval *e, int64_t c0, int64_t b,
                                struct qp_error *err)
{
    for (int64_t s = 0; s < b; s++) {
        memcpy(e->in + s * e->ctx, e->ids + (c0 + s) * e->ctx,
               (size_t)e->ctx * sizeof *e->in);
        if (e->o->bos >= 0)
            e->in[s * e->ctx] = e->o->bos;
    }
    struct qp_llm_pass p = {.plan = e->plan};
    struct qp_tensor *logits;
    double t0 = now_seconds();
    enum qp_status st = qp_llm_forward(e->m, &p, e->in, b > 1 ? b : 0, e->ctx,
                                       &logits, err);
    e->seconds += now_seconds() - t0;
    for (int64_t s = 0; !st && s < b; s++)
        st = score_chunk(e, c0 + s, (const float *)logits->data +
                                        (size_t)(s * e->ctx) * (size_t)e->vocab,
                         err);
    qp_tensor_free(logits);
    return st;
}

enum qp_status qp_llm_perplexity(struct qp_llm *m, const struct qp_splan *plan,
                                 const int32_t *ids, size_t n,
                                 const struct qp_ppl_opts *o,
                                 struct qp_ppl_result *r, struct qp_error *err)
{
    memset(r, 0, sizeof *r);
    struct eval e = {.m = m, .plan = plan, .o = o, .ids = ids,
                     .vocab = (int)m->vocab};
    enum qp_status st = QP_OK;
    if (o->bos >= m->vocab)
        return qp_fail(err, QP_E_INVAL, "BOS id %d is outside the vocabulary "
                       "(%lld)", o->bos, (long long)m->vocab);
    if (o->kl_base)
        st = qp_kld_file_open(o->kl_base, &e.base, err);
    if (!st)
        st = plan_chunks(m, o, e.base, ids, n, &e.ctx, &e.chunks, err);
    e.batch = o->batch > 1 ? (o->batch < e.chunks ? o->batch : e.chunks) : 1;
    e.rows = qp_kld_rows((int)e.ctx);
    if (!st && !(e.in = malloc((size_t)(e.batch * e.ctx) * sizeof *e.in)))
        st = qp_fail(err, QP_E_NOMEM, "out of memory");
    if (!st && o->save_logits) {
        size_t bytes = (size_t)e.rows * qp_kld_row_u16(e.vocab) * sizeof *e.enc;
        if (!(e.enc = malloc(bytes ? bytes : 1)))
            st = qp_fail(err, QP_E_NOMEM, "out of memory");
        if (!st)
            st = qp_kld_writer_open(o->save_logits, (int)e.ctx, e.vocab,
                                    (int)e.chunks, ids, &e.w, err);
    }
    for (int64_t c = 0; !st && c < e.chunks; c += e.batch) {
        int64_t b = e.chunks - c < e.batch ? e.chunks - c : e.batch;
        st = run_group(&e, c, b, err);
        qp_progress_report(o->progress, "eval", (uint64_t)(c + b),
                           (uint64_t)e.chunks);
    }
    if (!st && o->save_logits)
        st = qp_kld_writer_commit(&e.w, err);
    else if (o->save_logits)
        qp_kld_writer_abort(&e.w);
    if (!st) {
        r->ctx = e.ctx;
        r->chunks = e.chunks;
        r->count = e.ppl.count;
        qp_ppl_result(&e.ppl, &r->ppl, &r->ppl_unc);
        r->has_kld = e.base != NULL;
        if (e.base)
            qp_kld_stats(&e.kld, &r->kld);
        r->seconds = e.seconds;
    }
    qp_kld_acc_release(&e.kld);
    qp_kld_file_close(e.base);
    free(e.enc);
    free(e.in);
    return st;
}
