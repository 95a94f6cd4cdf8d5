/* Unit tests of quant/hessian and of GPTQ's edge cases: the streamed
 * Hessian against 2/n X^T X in double (threaded SYRK included), the
 * output error from H against the one computed from X, dead columns, the
 * dampening retry on a rank-deficient H, and every refusal (NaN/Inf in
 * W, H or X, widths that disagree, an unusable H, bad g_idx). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/parallel.h"
#include "quant/gptq.h"
#include "quant/pack.h"
#include "tests/test.h"
#include "tests/unit/gptq-test-util.h"

static enum qp_status quantize(const struct qp_tensor *w,
                               const struct qp_hessian *h,
                               const struct qp_wscheme *ws,
                               struct qp_gptq_result *res, struct qp_error *err)
{
    struct qp_gptq_opts o = {ws, QP_ROUND_HALF_AWAY, "model.fc1", NULL};
    return qp_gptq_quantize(w, h, &o, res, err);
}

QP_TEST(hessian_streams_to_2_over_n_xtx)
{
    enum { T = 300, C = 256 };
    float *x = gt_inputs(T, C, 2.0f, 3);
    REQUIRE(x);
    /* 2/n X^T X in double */
    double *want = calloc(C * C, sizeof *want);
    REQUIRE(want);
    for (size_t t = 0; t < T; t++)
        for (size_t i = 0; i < C; i++)
            for (size_t j = 0; j <= i; j++)
                want[i * C + j] += 2.0 / T * x[t * C + i] * x[t * C + j];
    /* one batch, odd batches, single rows; threads from a pool of 3 so the
     * split SYRK runs even on one core */
    static const size_t batches[] = {T, 128, 37, 1};
    struct qp_pool *pool = qp_pool_new(3);
    REQUIRE(pool);
    for (size_t b = 0; b < 4; b++) {
        struct qp_hessian *h;
        struct qp_error err;
        REQUIRE_OK(qp_hessian_new("l", C, pool, &h, &err), &err);
        for (size_t t = 0; t < T; t += batches[b]) {
            size_t n = T - t < batches[b] ? T - t : batches[b];
            REQUIRE_OK(qp_hessian_add(h, x + t * C, n, C, &err), &err);
        }
        CHECK(h->tokens == T);
        double worst = 0;
        for (size_t i = 0; i < C; i++)
            for (size_t j = 0; j <= i; j++) {
                double scale = sqrt(want[i * C + i] * want[j * C + j]);
                double e = fabs(h->h[i * C + j] - want[i * C + j]) / scale;
                worst = e > worst ? e : worst;
            }
        /* float32 sums of 300 products and 300 rescalings */
        CHECK(worst < 2e-5);
        /* the strict upper triangle is never written */
        int touched = 0;
        for (size_t i = 0; i < C; i++)
            for (size_t j = i + 1; j < C; j++)
                touched += h->h[i * C + j] != 0;
        CHECK_INT(touched, 0);
        qp_hessian_free(h);
    }
    qp_pool_free(pool);
    free(want);
    free(x);
}

QP_TEST(hessian_output_error_equals_the_error_on_x)
{
    enum { T = 500, C = 64, R = 300 };
    float *x = gt_inputs(T, C, 3.0f, 8);
    struct qp_tensor *w = gt_weight(R, C, 9);
    struct qp_pool *pool = qp_pool_new(3);
    REQUIRE(x && w && pool);
    struct qp_hessian *h;
    struct qp_error err;
    REQUIRE_OK(qp_hessian_new("l", C, pool, &h, &err), &err);
    REQUIRE_OK(qp_hessian_add(h, x, T, C, &err), &err);
    float *a = gt_rtn(w, gt_scheme("w3g16"), QP_ROUND_HALF_AWAY, NULL);
    float *b = gt_rtn(w, gt_scheme("w4c"), QP_ROUND_HALF_AWAY, NULL);
    REQUIRE(a && b);
    /* ||X W^T - X What^T||^2 / ||X W^T||^2 directly, in double */
    const float *wv = w->data, *q[2] = {a, b};
    double want[2], den = 0, num[2] = {0, 0};
    for (size_t t = 0; t < T; t++)
        for (size_t o = 0; o < R; o++) {
            double y = 0, d[2] = {0, 0};
            for (size_t i = 0; i < C; i++) {
                double xi = x[t * C + i];
                y += xi * wv[o * C + i];
                for (int k = 0; k < 2; k++)
                    d[k] += xi * (wv[o * C + i] - q[k][o * C + i]);
            }
            den += y * y;
            for (int k = 0; k < 2; k++)
                num[k] += d[k] * d[k];
        }
    for (int k = 0; k < 2; k++)
        want[k] = num[k] / den;
    double rel[2];
    REQUIRE_OK(qp_hessian_output_error(h, wv, R, q, 2, rel, &err), &err);
    CHECK_NEAR(rel[0], want[0], 1e-4 * want[0]);
    CHECK_NEAR(rel[1], want[1], 1e-4 * want[1]);
    CHECK(want[0] > want[1]); /* 3-bit groups vs 4-bit channels differ */
    /* the weight itself has no error */
    const float *self = wv;
    REQUIRE_OK(qp_hessian_output_error(h, wv, R, &self, 1, rel, &err), &err);
    CHECK(rel[0] == 0);
    free(a);
    free(b);
    qp_hessian_free(h);
    qp_pool_free(pool);
    qp_tensor_free(w);
    free(x);
}

QP_TEST(gptq_dead_columns_are_zero)
{
    /* inputs 3 and 17 never fire: H has zero rows and columns there; the
     * reference sets H_ii = 1 and W[:, i] = 0, so those weights come out
     * exactly 0 and move nothing */
    enum { T = 200, C = 24, R = 10 };
    float *x = gt_inputs(T, C, 1.0f, 4);
    struct qp_tensor *w = gt_weight(R, C, 5);
    REQUIRE(x && w);
    for (size_t t = 0; t < T; t++)
        x[t * C + 3] = x[t * C + 17] = 0;
    struct qp_hessian *h = gt_hessian(x, T, C, 64);
    REQUIRE(h);
    static const char *const schemes[] = {"w4g8z@gptq", "w4c@gptq:act",
                                          "w3g6@gptq:act,static"};
    for (size_t k = 0; k < 3; k++) {
        struct qp_wscheme ws = gt_scheme(schemes[k]);
        struct qp_gptq_result res;
        struct qp_error err;
        REQUIRE_OK(quantize(w, h, &ws, &res, &err), &err);
        CHECK_INT(res.dead, 2);
        float *d = gt_dequant(res.q, res.g_idx);
        REQUIRE(d);
        int nonzero = 0;
        for (size_t o = 0; o < R; o++)
            nonzero += d[o * C + 3] != 0 || d[o * C + 17] != 0;
        CHECK_INT(nonzero, 0);
        float *rd = gt_rtn(w, ws, QP_ROUND_HALF_AWAY, NULL);
        double eg, er;
        gt_output_error(h, w, d, rd, &eg, &er);
        CHECK(eg < er);
        free(rd);
        free(d);
        qp_gptq_result_release(&res);
    }
    qp_hessian_free(h);
    qp_tensor_free(w);
    free(x);
}

/* A Hessian [n, n] from the lower triangle of the full matrix m. */
static struct qp_hessian *hessian_of(const float *m, size_t n)
{
    struct qp_hessian *h;
    struct qp_error err;
    if (qp_hessian_new("model.fc1", n, NULL, &h, &err))
        return NULL;
    memcpy(h->h, m, n * n * sizeof *m);
    h->tokens = 1;
    return h;
}

QP_TEST(gptq_dampening_retry_on_a_rank_deficient_hessian)
{
    /* two identical input columns: H = [[4, 4], [4, 4]] is singular; with
     * dampening 1e-9 x mean the diagonal stays 4 in float, the second
     * pivot is exactly 0 and the factorization fails; the dampening
     * doubles until 4 + damp * 4 rounds above 4 */
    float m[4] = {4, 4, 4, 4};
    struct qp_hessian *h = hessian_of(m, 2);
    struct qp_tensor *w = gt_weight(3, 2, 1);
    REQUIRE(h && w);
    struct qp_wscheme ws = gt_scheme("w4c@gptq");
    ws.gptq.damp = 1e-9;
    struct qp_gptq_result res, again;
    struct qp_error err;
    REQUIRE_OK(quantize(w, h, &ws, &res, &err), &err);
    CHECK(res.retries >= 1);
    CHECK(res.damp == ldexp(1e-9, res.retries));
    CHECK((float)(4 + (float)(res.damp * 4)) > 4.0f);
    CHECK((float)(4 + (float)(res.damp / 2 * 4)) == 4.0f);
    /* the dampening it reports reproduces the run without a retry */
    ws.gptq.damp = res.damp;
    REQUIRE_OK(quantize(w, h, &ws, &again, &err), &err);
    CHECK_INT(again.retries, 0);
    CHECK(again.damp == res.damp);
    CHECK(!memcmp(again.q->data, res.q->data, res.q->nbytes));
    qp_gptq_result_release(&res);
    qp_gptq_result_release(&again);
    qp_hessian_free(h);
    /* an indefinite H (eigenvalues -2 and 4) stays so up to dampening 1 */
    float bad[4] = {1, 3, 3, 1};
    h = hessian_of(bad, 2);
    REQUIRE(h);
    ws.gptq.damp = 0;
    CHECK_FAILS(quantize(w, h, &ws, &res, &err), QP_E_INVAL, &err,
                "layer 'model.fc1': the Hessian is not positive definite even "
                "with dampening 1");
    CHECK(!res.q);
    qp_hessian_free(h);
    qp_tensor_free(w);
}

QP_TEST(gptq_few_tokens_warn)
{
    enum { T = 20, C = 48 };
    struct gt_problem p;
    REQUIRE(gt_problem_init(&p, 8, C, T, T, 1.0f, 2, 3));
    struct qp_hessian *h = p.h;
    struct qp_tensor *w = p.w;
    struct qp_wscheme ws = gt_scheme("w4g16@gptq");
    struct qp_gptq_result res;
    struct qp_error err;
    REQUIRE_OK(quantize(w, h, &ws, &res, &err), &err);
    CHECK(res.few_tokens && res.tokens == T);
    qp_gptq_result_release(&res);
    gt_problem_release(&p);
}

QP_TEST(gptq_refuses_bad_input)
{
    enum { T = 100, C = 16, R = 4 };
    struct gt_problem p;
    REQUIRE(gt_problem_init(&p, R, C, T, T, 1.0f, 2, 3));
    struct qp_hessian *h = p.h;
    struct qp_tensor *w = p.w;
    struct qp_wscheme ws = gt_scheme("w4g8@gptq");
    struct qp_gptq_result res;
    struct qp_error err;
    float *wv = w->data;

    wv[1 * C + 2] = NAN;
    CHECK_FAILS(quantize(w, h, &ws, &res, &err), QP_E_INVAL, &err,
                "layer 'model.fc1': weight: element [1, 2] is not finite");
    CHECK(!res.q && !res.g_idx);
    wv[1 * C + 2] = -INFINITY;
    CHECK_FAILS(quantize(w, h, &ws, &res, &err), QP_E_INVAL, &err, "[1, 2]");
    wv[1 * C + 2] = 0;

    float keep = h->h[5 * C + 3];
    h->h[5 * C + 3] = INFINITY;
    CHECK_FAILS(quantize(w, h, &ws, &res, &err), QP_E_INVAL, &err,
                "layer 'model.fc1': the Hessian entry (5, 3) is not finite");
    h->h[5 * C + 3] = keep;
    /* the strict upper triangle is not H's: garbage there is ignored */
    h->h[3 * C + 5] = NAN;
    CHECK_OK(quantize(w, h, &ws, &res, &err), &err);
    qp_gptq_result_release(&res);

    struct qp_hessian *h8;
    REQUIRE_OK(qp_hessian_new("l", C, NULL, &h8, &err), &err);
    CHECK_FAILS(quantize(w, h8, &ws, &res, &err), QP_E_INVAL, &err,
                "no calibration tokens");
    qp_hessian_free(h8);
    REQUIRE_OK(qp_hessian_new("l", 8, NULL, &h8, &err), &err);
    h8->tokens = 5;
    CHECK_FAILS(quantize(w, h8, &ws, &res, &err), QP_E_SHAPE, &err,
                "the weight has 16 input columns, the Hessian 8");
    qp_hessian_free(h8);

    struct qp_wscheme wc = gt_scheme("w4c@gptq");
    wc.gptq.static_groups = true;
    CHECK_FAILS(quantize(w, h, &wc, &res, &err), QP_E_INVAL, &err,
                "static groups need group-wise weights");
    wc = gt_scheme("w4c@gptq");
    wc.gptq.damp = 1.5;
    CHECK_FAILS(quantize(w, h, &wc, &res, &err), QP_E_INVAL, &err,
                "dampening 1.5 must be in (0, 1)");

    int64_t s3[3] = {2, 2, C};
    struct qp_tensor *t3, *ti;
    REQUIRE_OK(qp_tensor_new("conv", QP_DTYPE_F32, 3, s3, &t3, &err), &err);
    CHECK_FAILS(quantize(t3, h, &ws, &res, &err), QP_E_UNSUPPORTED, &err,
                "GPTQ takes a 2-D float weight [out, in], this one is f32 of "
                "rank 3");
    int64_t s2[2] = {R, C};
    REQUIRE_OK(qp_tensor_new("q", QP_DTYPE_I8, 2, s2, &ti, &err), &err);
    CHECK_FAILS(quantize(ti, h, &ws, &res, &err), QP_E_UNSUPPORTED, &err,
                "this one is i8");
    qp_tensor_free(t3);
    qp_tensor_free(ti);
    gt_problem_release(&p);
}

QP_TEST(hessian_refuses_bad_batches)
{
    enum { C = 8 };
    float x[4 * C];
    for (size_t i = 0; i < 4 * C; i++)
        x[i] = (float)i / 10;
    struct qp_hessian *h;
    struct qp_error err;
    REQUIRE_OK(qp_hessian_new("model.layers.3.mlp.down_proj", C, NULL, &h, &err),
               &err);
    REQUIRE_OK(qp_hessian_add(h, x, 4, C, &err), &err);
    CHECK_FAILS(qp_hessian_add(h, x, 2, C + 1, &err), QP_E_SHAPE, &err,
                "calibration inputs have 9 columns, the layer 8");
    REQUIRE_OK(qp_hessian_add(h, x, 0, C, &err), &err);
    CHECK(h->tokens == 4);
    x[2 * C + 5] = NAN;
    CHECK_FAILS(qp_hessian_add(h, x, 4, C, &err), QP_E_INVAL, &err,
                "layer 'model.layers.3.mlp.down_proj': calibration input row "
                "2, column 5 is nan");
    /* poisoned from now on, for adds and for GPTQ */
    x[2 * C + 5] = 0;
    CHECK_FAILS(qp_hessian_add(h, x, 4, C, &err), QP_E_INVAL, &err,
                "the Hessian is unusable");
    struct qp_tensor *w = gt_weight(2, C, 1);
    REQUIRE(w);
    struct qp_wscheme ws = gt_scheme("w4c@gptq");
    struct qp_gptq_result res;
    CHECK_FAILS(quantize(w, h, &ws, &res, &err), QP_E_INVAL, &err,
                "the Hessian is unusable");
    const float *self = w->data;
    double rel;
    CHECK_FAILS(qp_hessian_output_error(h, w->data, 2, &self, 1, &rel, &err),
                QP_E_INVAL, &err, "unusable");
    qp_hessian_free(h);
    /* finite inputs whose squares overflow */
    REQUIRE_OK(qp_hessian_new(NULL, C, NULL, &h, &err), &err);
    x[C + 1] = 3e19f;
    CHECK_FAILS(qp_hessian_add(h, x, 4, C, &err), QP_E_INVAL, &err,
                "layer 'layer': the squares of the calibration inputs overflow");
    qp_hessian_free(h);
    CHECK_FAILS(qp_hessian_new("l", 0, NULL, &h, &err), QP_E_INVAL, &err,
                "at least one input column");
    CHECK_FAILS(qp_hessian_new("l", (size_t)1 << 33, NULL, &h, &err),
                QP_E_OVERFLOW, &err, "too large");
    qp_tensor_free(w);
}

QP_TEST(gptq_dequantize_checks_g_idx)
{
    enum { T = 100, C = 12, R = 3 };
    struct gt_problem p;
    REQUIRE(gt_problem_init(&p, R, C, T, T, 5.0f, 1, 2));
    struct qp_hessian *h = p.h;
    struct qp_tensor *w = p.w;
    struct qp_wscheme ws = gt_scheme("w4g5z@gptq:act");
    struct qp_gptq_result res;
    struct qp_error err;
    REQUIRE_OK(quantize(w, h, &ws, &res, &err), &err);
    REQUIRE(res.g_idx && !res.g_idx_trivial);
    /* 12 columns in groups of 5: 3 groups, the last of 2 columns */
    int count[3] = {0, 0, 0};
    for (size_t i = 0; i < C; i++)
        if (res.g_idx[i] >= 0 && res.g_idx[i] < 3)
            count[res.g_idx[i]]++;
    CHECK(count[0] == 5 && count[1] == 5 && count[2] == 2);
    /* dequantize = s[g_idx] * (q - z[g_idx]) element by element */
    float *d = gt_dequant(res.q, res.g_idx);
    REQUIRE(d);
    int32_t q[R * C];
    qp_pack_load(res.q->dtype, res.q->data, 0, R * C, q);
    int bad = 0;
    for (size_t o = 0; o < R; o++)
        for (size_t i = 0; i < C; i++) {
            size_t k = o * 3 + (size_t)res.g_idx[i];
            float want = (float)(q[o * C + i] - res.q->qp->zero_point[k]) *
                         res.q->qp->scale[k];
            bad += d[o * C + i] != want;
        }
    CHECK_INT(bad, 0);
    res.g_idx[4] = 3;
    CHECK_FAILS(qp_gptq_dequantize(res.q, res.g_idx, d, &err), QP_E_INVAL, &err,
                "g_idx[4] = 3, expected 0..2");
    res.g_idx[4] = -1;
    CHECK_FAILS(qp_gptq_dequantize(res.q, res.g_idx, d, &err), QP_E_INVAL, &err,
                "g_idx[4] = -1");
    free(d);
    qp_gptq_result_release(&res);
    gt_problem_release(&p);
}
