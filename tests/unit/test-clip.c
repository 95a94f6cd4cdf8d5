/* Unit tests of quant/clip: the squared error of a range (hand-computed),
 * the search picking the grid's best shrink per scale (checked by brute
 * force), never losing to min/max, and beating it on an outlier. */
#include <stdlib.h>
#include <string.h>

#include "quant/clip.h"
#include "quant/rtn.h"
#include "tests/test.h"

QP_TEST(clip_sse_hand_computed)
{
    /* 4-bit symmetric, range [-10, 10]: s = 10/7; 1 -> q 1 (0.7), 2 -> q 1
     * (1.4), 10 -> q 7, 0 -> 0: errors (10/7 - 1)^2 + (2 - 10/7)^2 */
    float x[4] = {0, 1, 2, 10};
    struct qp_qformat f = {4, false, false};
    double want = (10.0 / 7 - 1) * (10.0 / 7 - 1) + (2 - 10.0 / 7) * (2 - 10.0 / 7);
    CHECK_NEAR(qp_clip_sse(x, 4, &f, QP_ROUND_HALF_AWAY, 0, 10), want, 1e-6);
    /* clipped to [-3.5, 3.5]: s = 0.5, 10 -> 3.5 (error 6.5^2), the rest exact */
    CHECK_NEAR(qp_clip_sse(x, 4, &f, QP_ROUND_HALF_AWAY, -3.5f, 3.5f), 42.25, 1e-9);
    /* asymmetric 2-bit on [0, 3]: s = 1, z = 0, all exact */
    float y[4] = {0, 1, 2, 3};
    struct qp_qformat a = {2, true, false};
    CHECK(qp_clip_sse(y, 4, &a, QP_ROUND_HALF_EVEN, 0, 3) == 0);
}

static uint64_t rs = 42;
static float rnd(void)
{
    rs ^= rs << 13;
    rs ^= rs >> 7;
    rs ^= rs << 17;
    return (float)((rs >> 11) * 0x1p-53 * 2 - 1);
}

QP_TEST(clip_search_picks_the_best_grid_point_per_group)
{
    /* [3, 64], groups of 32: one group per row half, one with an outlier */
    enum { R = 3, C = 64 };
    float x[R * C];
    for (int i = 0; i < R * C; i++)
        x[i] = rnd() * rnd();
    x[5] = 9.0f;
    x[100] = -6.0f;
    int64_t shape[2] = {R, C};
    struct qp_qformat f = {4, false, false};
    struct qp_qgeom g;
    struct qp_error err;
    REQUIRE_OK(qp_qgeom_init(&g, 2, shape, QP_GRAN_GROUP, 32, QP_WLAYOUT_TORCH,
                             &err), &err);
    REQUIRE(g.count == 6);
    float lo[6], hi[6], mlo[6], mhi[6];
    REQUIRE_OK(qp_qgeom_minmax(&g, x, "x", lo, hi, &err), &err);
    memcpy(mlo, lo, sizeof lo);
    memcpy(mhi, hi, sizeof hi);
    REQUIRE_OK(qp_clip_mse(x, &g, &f, QP_ROUND_HALF_AWAY, NULL, lo, hi, &err), &err);
    int shrunk = 0;
    for (int i = 0; i < 6; i++) {
        /* group i is row i / 2, columns (i % 2) * 32 .. + 32: contiguous */
        const float *p = x + i * 32;
        double best = 1e300;
        float blo = 0, bhi = 0;
        for (int k = 0; k <= QP_CLIP_STEPS; k++) {
            float a = 1.0f - (float)k / QP_CLIP_GRID;
            double e = qp_clip_sse(p, 32, &f, QP_ROUND_HALF_AWAY, a * mlo[i],
                                   a * mhi[i]);
            if (e < best) {
                best = e;
                blo = a * mlo[i];
                bhi = a * mhi[i];
            }
        }
        CHECK(lo[i] == blo && hi[i] == bhi);
        shrunk += hi[i] < mhi[i];
    }
    /* clipping the outlier itself costs (9 (1 - a))^2, more than all 31
     * small values can lose (< 31): a stays above 1 - sqrt(31) / 9 */
    CHECK(hi[0] > 0.38f * 9.0f && hi[0] < 9.0f);
    CHECK(shrunk >= 3);
}

/* Sum of squared errors of the dequantized tensor t against x. */
static double tensor_sse(const struct qp_tensor *t, const float *x)
{
    size_t n = qp_tensor_numel(t);
    float *d = malloc(n * sizeof *d);
    qp_tensor_read_f32(t, 0, n, d);
    double s = 0;
    for (size_t i = 0; i < n; i++)
        s += ((double)x[i] - d[i]) * ((double)x[i] - d[i]);
    free(d);
    return s;
}

QP_TEST(clip_mse_never_loses_to_minmax_and_wins_on_outliers)
{
    enum { R = 8, C = 96 };
    static float x[R * C];
    int64_t shape[2] = {R, C};
    struct qp_error err;
    int strictly_better = 0, cases = 0;
    for (int trial = 0; trial < 4; trial++) {
        for (int i = 0; i < R * C; i++)
            x[i] = rnd() * (trial & 1 ? rnd() * rnd() : 1.0f);
        if (trial >= 2)
            x[7 * trial] = 40.0f;
        struct qp_tensor *w;
        REQUIRE_OK(qp_tensor_wrap("w", QP_DTYPE_F32, 2, shape, x, sizeof x, NULL,
                                  &w, &err), &err);
        static const char *const names[] = {"w8t", "w4c", "w4g32z", "w3g32", "w2c"};
        struct qp_wscheme ws[5] = {
            {.f = {8, false, false}, .gran = QP_GRAN_TENSOR},
            {.f = {4, false, false}, .gran = QP_GRAN_CHANNEL},
            {.f = {4, true, false}, .gran = QP_GRAN_GROUP, .group = 32},
            {.f = {3, false, false}, .gran = QP_GRAN_GROUP, .group = 32},
            {.f = {2, false, true}, .gran = QP_GRAN_CHANNEL},
        };
        for (int k = 0; k < 5; k++) {
            struct qp_wquant_opts o = {QP_ROUND_HALF_EVEN, QP_WLAYOUT_TORCH};
            struct qp_tensor *a, *b;
            REQUIRE_OK(qp_rtn_quantize(w, &ws[k], &o, &a, &err), &err);
            ws[k].algo = QP_WALGO_MSE;
            REQUIRE_OK(qp_rtn_quantize(w, &ws[k], &o, &b, &err), &err);
            double ea = tensor_sse(a, x), eb = tensor_sse(b, x);
            if (!(eb <= ea))
                qp_test_failf(ctx, __FILE__, __LINE__, "trial %d %s: mse %g > "
                              "minmax %g", trial, names[k], eb, ea);
            strictly_better += eb < 0.9 * ea;
            cases++;
            qp_tensor_free(a);
            qp_tensor_free(b);
        }
        qp_tensor_free(w);
    }
    CHECK_INT(cases, 20);
    CHECK(strictly_better >= 8);
}

QP_TEST(clip_mse_on_strided_groups_matches_a_transposed_copy)
{
    /* keras [in 40, out 3] with groups of 8 along the rows (axis 0) are
     * strided in memory; the search must equal the search on the
     * transposed torch [3, 40] tensor */
    enum { I = 40, O = 3 };
    float k[I * O], t[O * I];
    for (int i = 0; i < I; i++)
        for (int o = 0; o < O; o++) {
            float v = rnd() * rnd();
            if ((i * 7 + o) % 13 == 0)
                v *= 10;
            k[i * O + o] = v;
            t[o * I + i] = v;
        }
    int64_t ks[2] = {I, O}, ts[2] = {O, I};
    struct qp_tensor *wk, *wt, *qk, *qt;
    struct qp_error err;
    REQUIRE_OK(qp_tensor_wrap("k", QP_DTYPE_F32, 2, ks, k, sizeof k, NULL, &wk,
                              &err), &err);
    REQUIRE_OK(qp_tensor_wrap("t", QP_DTYPE_F32, 2, ts, t, sizeof t, NULL, &wt,
                              &err), &err);
    struct qp_wscheme ws = {.f = {3, true, false}, .gran = QP_GRAN_GROUP,
                            .group = 8, .algo = QP_WALGO_MSE};
    struct qp_wquant_opts ok = {QP_ROUND_HALF_AWAY, QP_WLAYOUT_KERAS};
    struct qp_wquant_opts ot = {QP_ROUND_HALF_AWAY, QP_WLAYOUT_TORCH};
    REQUIRE_OK(qp_rtn_quantize(wk, &ws, &ok, &qk, &err), &err);
    REQUIRE_OK(qp_rtn_quantize(wt, &ws, &ot, &qt, &err), &err);
    REQUIRE(qk->qp->count == 15 && qt->qp->count == 15);
    /* keras scale (block j, column o) is at j * 3 + o; torch at o * 5 + j */
    for (int o = 0; o < O; o++)
        for (int j = 0; j < 5; j++) {
            CHECK(qk->qp->scale[j * O + o] == qt->qp->scale[o * 5 + j]);
            CHECK(qk->qp->zero_point[j * O + o] == qt->qp->zero_point[o * 5 + j]);
        }
    qp_tensor_free(wk);
    qp_tensor_free(wt);
    qp_tensor_free(qk);
    qp_tensor_free(qt);
}

/* Sum of |e|^p of quantizing x[0..n) on [lo, hi], with libm's pow. */
static double err_pow(const float *x, size_t n, const struct qp_qformat *f,
                      float lo, float hi, double p)
{
    int32_t qmin, qmax, z;
    float s;
    qp_qformat_range(f, &qmin, &qmax);
    qp_qparams_from_range(f, QP_ROUND_HALF_AWAY, lo, hi, &s, &z);
    double sum = 0;
    for (size_t k = 0; k < n; k++) {
        int32_t q = qp_quantize_f32(x[k], s, z, qmin, qmax, QP_ROUND_HALF_AWAY);
        sum += pow(fabs((double)(x[k] - (float)(q - z) * s)), p);
    }
    return sum;
}

QP_TEST(clip_gptq_norm_matches_pow_and_its_grid)
{
    /* |e|^2.4 from the polynomial exp2/log2 agrees with pow to 1e-6 over
     * magnitudes 1e-6 .. 1e3; the GPTQ grid is 80 shrinks 1.00 .. 0.21 */
    struct qp_qformat f = {4, true, false};
    float x[64];
    for (int mag = -6; mag <= 3; mag++) {
        for (int i = 0; i < 64; i++)
            x[i] = rnd() * (float)pow(10, mag) * (i == 9 ? 8 : 1);
        float lo = x[0], hi = x[0];
        for (int i = 1; i < 64; i++) {
            lo = x[i] < lo ? x[i] : lo;
            hi = x[i] > hi ? x[i] : hi;
        }
        for (float a = 1.0f; a > 0.2f; a -= 0.13f) {
            double want = err_pow(x, 64, &f, a * lo, a * hi, 2.4);
            double got = qp_clip_err(x, 64, &f, QP_ROUND_HALF_AWAY, a * lo,
                                     a * hi, 2.4);
            CHECK_NEAR(got, want, 1e-6 * want);
        }
        CHECK(qp_clip_err(x, 64, &f, QP_ROUND_HALF_AWAY, lo, hi, 2.0) ==
              qp_clip_sse(x, 64, &f, QP_ROUND_HALF_AWAY, lo, hi));
        float slo = lo, shi = hi, blo = lo, bhi = hi;
        qp_clip_search(x, 64, &f, QP_ROUND_HALF_AWAY, &qp_clip_grid_gptq, &slo,
                       &shi);
        double best = 1e300;
        for (int k = 0; k < 80; k++) {
            float a = 1.0f - (float)k / QP_CLIP_GRID;
            double e = err_pow(x, 64, &f, a * lo, a * hi, 2.4);
            if (e < best * (1 - 1e-5)) { /* ties within the 1e-6 noise aside */
                best = e;
                blo = a * lo;
                bhi = a * hi;
            }
        }
        CHECK(slo == blo && shi == bhi);
        CHECK(shi >= 0.21f * hi * 0.9999f);
    }
    CHECK_INT(qp_clip_grid_gptq.steps, 80);
    CHECK(qp_clip_grid_gptq.norm == 2.4);
}
