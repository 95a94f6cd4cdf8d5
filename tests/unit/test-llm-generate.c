/* tests/unit/test-llm-generate.c: the KV cache (model/kvcache.h) and greedy
 * generation (model/llm-generate.h): logits of cached single-token steps
 * equal the full recomputation's last row, for one sequence and a batch,
 * after a truncation too; generated tokens equal the no-cache
 * recomputation token for token in fp32 and quantized modes. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "model/llm-generate.h"
#include "quant/scheme.h"
#include "tests/test.h"
#include "tests/unit/llama-test-util.h"

static struct qp_llm *open_model(struct qp_test_ctx *ctx, const struct tl_cfg *c)
{
    char *dir = qp_test_path(ctx, "m");
    struct qp_llm *llm = NULL;
    struct qp_error err;
    if (dir && mkdir(dir, 0755) == 0 && tl_write_model(dir, c, NULL) &&
        qp_llm_open(dir, &llm, &err))
        qp_test_failf(ctx, __FILE__, __LINE__, "open: %s", err.msg);
    free(dir);
    return llm;
}

/* rel L2 of a[n] against b[n] */
static double rel(const float *a, const float *b, size_t n)
{
    double e = 0, r = 0;
    for (size_t i = 0; i < n; i++) {
        e += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
        r += (double)b[i] * b[i];
    }
    return sqrt(e / r);
}

/* Runs seq[b][t] with cache kv from position t0 (b = 0: one sequence of
 * row 0) and compares each new row with the full run's. */
static void check_steps(struct qp_test_ctx *ctx, struct qp_llm *m, int b,
                        const int32_t *seq, int total, int pre)
{
    struct qp_kv_cache *kv;
    struct qp_error err;
    REQUIRE_OK(qp_kv_cache_new((int)m->cfg.n_layers, &kv, &err), &err);
    int rows = b ? b : 1;
    int32_t *part = malloc((size_t)rows * (size_t)total * sizeof *part);
    size_t V = (size_t)m->vocab;
    for (int t0 = 0, len = pre; t0 < total; t0 = len, len++) {
        for (int r = 0; r < rows; r++)
            memcpy(part + r * (len - t0), seq + r * total + t0,
                   (size_t)(len - t0) * sizeof *part);
        struct qp_llm_pass p = {.kv = kv};
        struct qp_tensor *step, *full;
        REQUIRE_OK(qp_llm_forward(m, &p, part, b, len - t0, &step, &err), &err);
        for (int r = 0; r < rows; r++)
            memcpy(part + r * len, seq + r * total, (size_t)len * sizeof *part);
        REQUIRE_OK(qp_llm_forward(m, NULL, part, b, len, &full, &err), &err);
        CHECK_INT(qp_kv_cache_len(kv), len);
        for (int r = 0; r < rows; r++) {
            const float *a = (const float *)step->data +
                             ((size_t)r * (len - t0) + (len - t0 - 1)) * V;
            const float *f = (const float *)full->data + ((size_t)r * len + len - 1) * V;
            double e = rel(a, f, V);
            if (!(e < 1e-5))
                qp_test_failf(ctx, __FILE__, __LINE__, "position %d row %d: "
                              "rel L2 %.3g", len - 1, r, e);
        }
        qp_tensor_free(step);
        qp_tensor_free(full);
        if (len == total)
            break;
    }
    /* back to the prefix: the next token continues from there */
    qp_kv_cache_truncate(kv, pre);
    CHECK_INT(qp_kv_cache_len(kv), pre);
    for (int r = 0; r < rows; r++)
        part[r] = seq[r * total + total - 1];
    struct qp_llm_pass p = {.kv = kv};
    struct qp_tensor *step, *full;
    REQUIRE_OK(qp_llm_forward(m, &p, part, b, 1, &step, &err), &err);
    for (int r = 0; r < rows; r++) {
        memcpy(part + r * (pre + 1), seq + r * total, (size_t)pre * sizeof *part);
        part[r * (pre + 1) + pre] = seq[r * total + total - 1];
    }
    REQUIRE_OK(qp_llm_forward(m, NULL, part, b, pre + 1, &full, &err), &err);
    for (int r = 0; r < rows; r++)
        CHECK(rel((const float *)step->data + (size_t)r * V,
                  (const float *)full->data + ((size_t)r * (pre + 1) + pre) * V, V) <
              1e-5);
    qp_tensor_free(step);
    qp_tensor_free(full);
    free(part);
    qp_kv_cache_free(kv);
}

QP_TEST(kv_cache_steps_equal_recomputation)
{
    struct tl_cfg c = tl_default();
    c.layers = 3;
    c.rope = "llama3";
    c.factor = 4;
    c.orig_max = 8;
    c.head_dim = 16;
    struct qp_llm *m = open_model(ctx, &c);
    REQUIRE(m);
    int32_t seq[2][12] = {{1, 7, 9, 30, 2, 11, 45, 3, 8, 0, 19, 22},
                          {1, 4, 4, 4, 49, 12, 6, 17, 33, 5, 2, 40}};
    check_steps(ctx, m, 0, seq[0], 12, 5);
    check_steps(ctx, m, 2, &seq[0][0], 12, 1);
    qp_llm_free(m);
}

QP_TEST(kv_cache_refuses_another_batch)
{
    struct qp_kv_cache *kv;
    struct qp_error err;
    REQUIRE_OK(qp_kv_cache_new(2, &kv, &err), &err);
    REQUIRE_OK(qp_kv_cache_reserve(kv, 1, 1, 2, 8, 70, &err), &err);
    CHECK(kv->layer[1].cap >= 70);
    CHECK_FAILS(qp_kv_cache_reserve(kv, 1, 2, 2, 8, 1, &err), QP_E_SHAPE, &err,
                "layer 1 holds a batch of 1 x 2 heads x 8");
    CHECK_FAILS(qp_kv_cache_reserve(kv, 2, 1, 2, 8, 1, &err), QP_E_INVAL, &err,
                "layer 2 of 2");
    qp_kv_cache_free(kv);
}

static void check_generate(struct qp_test_ctx *ctx, struct qp_llm *m,
                           const struct qp_splan *plan)
{
    int32_t prompt[4] = {1, 17, 3, 29};
    struct qp_gen_opts o = {.max_new = 20, .eos = -1};
    int32_t *a, *b;
    size_t na, nb;
    struct qp_error err;
    struct qp_gen_stats gs;
    REQUIRE_OK(qp_llm_generate(m, plan, prompt, 4, &o, &a, &na, &gs, &err), &err);
    o.no_cache = true;
    REQUIRE_OK(qp_llm_generate(m, plan, prompt, 4, &o, &b, &nb, NULL, &err), &err);
    CHECK_INT(na, 20);
    CHECK_INT(nb, 20);
    CHECK_INT(gs.prompt_tokens, 4);
    CHECK(!memcmp(a, b, na * sizeof *a));
    /* the sequence is not degenerate: several distinct tokens */
    int distinct = 0;
    for (size_t i = 0; i < na; i++) {
        bool seen = false;
        for (size_t j = 0; j < i; j++)
            seen |= a[j] == a[i];
        distinct += !seen;
    }
    CHECK(distinct >= 3);
    /* stopping at an EOS: the generated token, included */
    o.no_cache = false;
    o.eos = a[5];
    free(b);
    REQUIRE_OK(qp_llm_generate(m, plan, prompt, 4, &o, &b, &nb, NULL, &err), &err);
    size_t first = 0;
    while (a[first] != a[5])
        first++;
    CHECK_INT(nb, first + 1);
    free(a);
    free(b);
}

QP_TEST(generate_cache_equals_recomputation)
{
    struct tl_cfg c = tl_default();
    c.layers = 2;
    c.vocab = 64;
    c.seed = 11;
    struct qp_llm *m = open_model(ctx, &c);
    REQUIRE(m);
    check_generate(ctx, m, NULL);
    /* the third: the int mode's 8da4w (kernels/gemm-qd8.h) */
    const char *schemes[3] = {"w4g16", "w8c+a8d", "8da4w:g16"};
    for (int i = 0; i < 3; i++) {
        struct qp_scheme s;
        struct qp_error err;
        struct qp_splan *p;
        REQUIRE_OK(qp_scheme_parse(schemes[i], &s, NULL, &err), &err);
        struct qp_session_cfg cfg = {.mode = i == 2 ? QP_MODE_INT : QP_MODE_FAKE,
                                     .scheme = &s,
                                     .flavor = QP_RQ_TFLITE_DOUBLE};
        int32_t calib[8] = {1, 2, 3, 4, 5, 6, 7, 8};
        REQUIRE_OK(qp_llm_plan(m, &cfg, calib, 8, 8, 0, NULL, &p, &err), &err);
        check_generate(ctx, m, p);
        qp_splan_free(p);
    }
    int32_t none[1];
    int32_t *out;
    size_t n;
    struct qp_gen_opts o = {.max_new = 2, .eos = -1};
    struct qp_error err;
    CHECK_FAILS(qp_llm_generate(m, NULL, none, 0, &o, &out, &n, NULL, &err),
                QP_E_INVAL, &err, "prompt");
    qp_llm_free(m);
}
