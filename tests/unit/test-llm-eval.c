/* tests/unit/test-llm-eval.c: perplexity and KL divergence over a token
 * stream (analysis/llm-eval.h) on a tiny random model: the chunking, BOS
 * and scored rows of llama.cpp against the reference forward, batches,
 * a base file of the model itself, quantized plans (weight-only int ==
 * fake), and bases from another context, vocabulary or token stream
 * refused naming both values. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "analysis/llm-eval.h"
#include "model/llm.h"
#include "quant/scheme.h"
#include "tests/test.h"
#include "tests/unit/llama-test-util.h"

#define N_STREAM 70

static void stream(int32_t *ids, int n, int vocab)
{
    unsigned s = 99;
    for (int i = 0; i < n; i++) {
        s = s * 1103515245u + 12345u;
        ids[i] = (int32_t)((s >> 16) % (unsigned)vocab);
    }
}

static struct qp_llm *open_model(struct qp_test_ctx *ctx, const char *name,
                                 const struct tl_cfg *c, struct tl_model *m)
{
    char *dir = qp_test_path(ctx, name);
    struct qp_llm *llm = NULL;
    struct qp_error err;
    if (dir && mkdir(dir, 0755) == 0 && tl_write_model(dir, c, m) &&
        qp_llm_open(dir, &llm, &err))
        qp_test_failf(ctx, __FILE__, __LINE__, "open: %s", err.msg);
    free(dir);
    return llm;
}

QP_TEST(llm_eval_ppl_as_llama_cpp)
{
    struct tl_cfg c = tl_default();
    struct tl_model tm;
    struct qp_llm *m = open_model(ctx, "m", &c, &tm);
    REQUIRE(m);
    int32_t ids[N_STREAM];
    stream(ids, N_STREAM, c.vocab);
    /* expected: 4 chunks of 16 (6 tokens dropped), BOS (1) first, rows
     * 8..14 scored against the next token of the original stream */
    int ctxn = 16, chunks = 4;
    double nll = 0, nll2 = 0, *logits = malloc(16 * 50 * sizeof *logits);
    int count = 0;
    for (int ch = 0; ch < chunks; ch++) {
        int32_t in[16];
        memcpy(in, ids + ch * ctxn, sizeof in);
        in[0] = 1;
        tl_ref_forward(&tm, in, ctxn, logits, NULL);
        for (int j = ctxn / 2; j < ctxn - 1; j++) {
            const double *l = logits + j * 50;
            double mx = l[0], s = 0;
            for (int v = 1; v < 50; v++)
                mx = l[v] > mx ? l[v] : mx;
            for (int v = 0; v < 50; v++)
                s += exp(l[v] - mx);
            double x = -(l[ids[ch * ctxn + j + 1]] - mx - log(s));
            nll += x;
            nll2 += x * x;
            count++;
        }
    }
    double mean = nll / count, ppl = exp(mean);
    double unc = ppl * sqrt((nll2 / count - mean * mean) / (count - 1));
    struct qp_ppl_opts o = {.ctx = 16, .bos = 1};
    struct qp_ppl_result r, rb;
    struct qp_error err;
    REQUIRE_OK(qp_llm_perplexity(m, NULL, ids, N_STREAM, &o, &r, &err), &err);
    CHECK_INT(r.chunks, 4);
    CHECK_INT(r.count, 28);
    CHECK_NEAR(r.ppl / ppl, 1, 1e-5);
    CHECK_NEAR(r.ppl_unc / unc, 1, 1e-4);
    /* three chunks per pass: the same figures */
    o.batch = 3;
    REQUIRE_OK(qp_llm_perplexity(m, NULL, ids, N_STREAM, &o, &rb, &err), &err);
    CHECK_NEAR(rb.ppl / r.ppl, 1, 1e-6);
    /* --chunks 2 and no BOS: different numbers, fewer rows */
    o.batch = 1;
    o.chunks = 2;
    o.bos = -1;
    REQUIRE_OK(qp_llm_perplexity(m, NULL, ids, N_STREAM, &o, &rb, &err), &err);
    CHECK_INT(rb.count, 14);
    CHECK(rb.ppl != r.ppl);
    /* llama.cpp's rule: at least 2 * ctx tokens */
    o.chunks = 0;
    o.ctx = 64;
    CHECK_FAILS(qp_llm_perplexity(m, NULL, ids, N_STREAM, &o, &rb, &err),
                QP_E_INVAL, &err, "needs at least 128");
    free(logits);
    tl_model_free(&tm);
    qp_llm_free(m);
}

static struct qp_splan *plan_for(struct qp_test_ctx *ctx, struct qp_llm *m,
                                 enum qp_run_mode mode, const char *scheme)
{
    struct qp_scheme s;
    struct qp_error err;
    struct qp_splan *p = NULL;
    if (qp_scheme_parse(scheme, &s, NULL, &err))
        return NULL;
    struct qp_session_cfg cfg = {.mode = mode, .scheme = &s,
                                 .flavor = QP_RQ_TFLITE_DOUBLE};
    if (qp_llm_plan(m, &cfg, NULL, 0, 16, 0, NULL, &p, &err))
        qp_test_failf(ctx, __FILE__, __LINE__, "plan %s: %s", scheme, err.msg);
    return p;
}

QP_TEST(llm_eval_kl_against_base)
{
    struct tl_cfg c = tl_default();
    c.dtype = QP_DTYPE_BF16;
    struct qp_llm *m = open_model(ctx, "m", &c, NULL);
    REQUIRE(m);
    int32_t ids[N_STREAM];
    stream(ids, N_STREAM, c.vocab);
    char *base = qp_test_path(ctx, "base.kl");
    struct qp_ppl_opts o = {.ctx = 16, .bos = 1, .save_logits = base};
    struct qp_ppl_result r0, r;
    struct qp_error err;
    REQUIRE_OK(qp_llm_perplexity(m, NULL, ids, N_STREAM, &o, &r0, &err), &err);
    o.save_logits = NULL;
    o.kl_base = base;
    o.ctx = 0; /* taken from the base */
    REQUIRE_OK(qp_llm_perplexity(m, NULL, ids, N_STREAM, &o, &r, &err), &err);
    CHECK(r.has_kld && r.ctx == 16 && r.kld.count == 28);
    /* the model against itself: nothing moves but the base's rounding */
    CHECK(fabs(r.kld.kld) < 1e-5);
    CHECK_NEAR(r.kld.same_top, 1.0, 0);
    CHECK(fabs(r.kld.ln_ratio) < 1e-4);
    CHECK_NEAR(r.kld.ppl / r0.ppl, 1, 1e-6);
    /* quantized: weight-only int is the fake mode's arithmetic */
    struct qp_splan *fake = plan_for(ctx, m, QP_MODE_FAKE, "w4g16");
    struct qp_splan *wint = plan_for(ctx, m, QP_MODE_INT, "w4g16");
    REQUIRE(fake && wint);
    struct qp_ppl_result rf, ri;
    REQUIRE_OK(qp_llm_perplexity(m, fake, ids, N_STREAM, &o, &rf, &err), &err);
    REQUIRE_OK(qp_llm_perplexity(m, wint, ids, N_STREAM, &o, &ri, &err), &err);
    CHECK(rf.kld.kld > 1e-4 && rf.kld.same_top < 1.0 + 1e-12);
    CHECK(rf.ppl != r.ppl);
    CHECK(ri.ppl == rf.ppl && ri.kld.kld == rf.kld.kld);
    qp_splan_free(fake);
    qp_splan_free(wint);
    free(base);
    qp_llm_free(m);
}

QP_TEST(llm_eval_refuses_other_bases)
{
    struct tl_cfg c = tl_default();
    struct qp_llm *m = open_model(ctx, "m", &c, NULL);
    c.vocab = 60;
    struct qp_llm *m60 = open_model(ctx, "m60", &c, NULL);
    REQUIRE(m && m60);
    int32_t ids[N_STREAM];
    stream(ids, N_STREAM, 50);
    char *base = qp_test_path(ctx, "base.kl");
    struct qp_ppl_opts o = {.ctx = 16, .bos = 1, .save_logits = base};
    struct qp_ppl_result r;
    struct qp_error err;
    REQUIRE_OK(qp_llm_perplexity(m, NULL, ids, N_STREAM, &o, &r, &err), &err);
    o.save_logits = NULL;
    o.kl_base = base;
    o.ctx = 32;
    CHECK_FAILS(qp_llm_perplexity(m, NULL, ids, N_STREAM, &o, &r, &err),
                QP_E_SHAPE, &err, "context of 16 tokens, this evaluation uses 32");
    CHECK_CONTAINS(err.msg, "base.kl");
    o.ctx = 16;
    CHECK_FAILS(qp_llm_perplexity(m60, NULL, ids, N_STREAM, &o, &r, &err),
                QP_E_SHAPE, &err, "vocabulary of 50 tokens, the model");
    CHECK_CONTAINS(err.msg, "60");
    int32_t other[N_STREAM];
    memcpy(other, ids, sizeof other);
    other[21] = (ids[21] + 1) % 50;
    char want[96];
    snprintf(want, sizeof want, "token 21 is %d there, %d here", ids[21], other[21]);
    CHECK_FAILS(qp_llm_perplexity(m, NULL, other, N_STREAM, &o, &r, &err),
                QP_E_FORMAT, &err, want);
    free(base);
    qp_llm_free(m);
    qp_llm_free(m60);
}
