/* Unit tests of quant/observer and quant/histogram: every range method on
 * crafted batches with hand-computed answers (min/max, moving average,
 * percentiles, the KL threshold on a 4-bin histogram), the interval error
 * formula against numerical integration, the MSE choice against a brute
 * force over the raw values, exact range growth, and the refusals. */
#include <stdlib.h>
#include <string.h>

#include "quant/clip.h"
#include "quant/histogram.h"
#include "quant/observer.h"
#include "tests/test.h"

static struct qp_observer *make(struct qp_test_ctx *ctx, enum qp_arange m,
                                double pct, double c, size_t bins)
{
    struct qp_observer_opts o = {m, pct, c, bins};
    struct qp_observer *obs = NULL;
    struct qp_error err;
    if (qp_observer_new(&o, &obs, &err))
        qp_test_failf(ctx, __FILE__, __LINE__, "observer: %s", err.msg);
    return obs;
}

static const struct qp_qformat S8 = {8, false, false}, U8 = {8, true, false};

QP_TEST(observer_minmax_and_moving_average)
{
    float b1[3] = {-1, 0.5f, 2}, b2[2] = {-3, 1}, b3[3] = {-2, 4, 0};
    struct qp_observer *mm = make(ctx, QP_ARANGE_MINMAX, 0, 0, 0);
    struct qp_observer *ema = make(ctx, QP_ARANGE_EMA, 0, 0.5, 0);
    REQUIRE(mm && ema);
    struct qp_error err;
    const float *b[3] = {b1, b2, b3};
    size_t n[3] = {3, 2, 3};
    for (int i = 0; i < 3; i++) {
        REQUIRE_OK(qp_observer_add(mm, b[i], n[i], &err), &err);
        REQUIRE_OK(qp_observer_add(ema, b[i], n[i], &err), &err);
    }
    float lo, hi;
    REQUIRE_OK(qp_observer_range(mm, &S8, QP_ROUND_HALF_AWAY, &lo, &hi, &err), &err);
    CHECK(lo == -3 && hi == 4);
    /* min: -1 -> -1 + (-3 + 1) / 2 = -2 -> -2 + (-2 + 2) / 2 = -2
     * max:  2 ->  2 + (1 - 2) / 2 = 1.5 -> 1.5 + (4 - 1.5) / 2 = 2.75 */
    REQUIRE_OK(qp_observer_range(ema, &S8, QP_ROUND_HALF_AWAY, &lo, &hi, &err), &err);
    CHECK(lo == -2.0f);
    CHECK(hi == 2.75f);
    CHECK_INT(qp_observer_count(ema), 8);
    qp_observer_free(mm);
    qp_observer_free(ema);
    /* the default constant is 0.01 */
    struct qp_observer *d = make(ctx, QP_ARANGE_EMA, 0, 0, 0);
    REQUIRE_OK(qp_observer_add(d, b1, 3, &err), &err);
    REQUIRE_OK(qp_observer_add(d, b3, 3, &err), &err);
    REQUIRE_OK(qp_observer_range(d, &S8, QP_ROUND_HALF_AWAY, &lo, &hi, &err), &err);
    CHECK_NEAR(hi, 2 + 0.01 * 2, 1e-6);
    CHECK_NEAR(lo, -1 + 0.01 * -1, 1e-6);
    qp_observer_free(d);
}

QP_TEST(observer_percentiles)
{
    static float x[1000];
    for (int i = 0; i < 1000; i++)
        x[i] = (float)(i + 1); /* 1 .. 1000 */
    struct qp_error err;
    float lo, hi;
    struct qp_observer *p = make(ctx, QP_ARANGE_PCT, 99, 0, 0);
    REQUIRE_OK(qp_observer_add(p, x, 500, &err), &err);
    REQUIRE_OK(qp_observer_add(p, x + 500, 500, &err), &err);
    REQUIRE_OK(qp_observer_range(p, &S8, QP_ROUND_HALF_AWAY, &lo, &hi, &err), &err);
    /* 990 of the 1000 values are <= 990; bins are 1024/2048 wide */
    CHECK_NEAR(hi, 990, 1.0);
    CHECK(lo == -hi);
    qp_observer_free(p);
    /* asymmetric: both tails of -500 .. 499 */
    for (int i = 0; i < 1000; i++)
        x[i] = (float)(i - 500);
    p = make(ctx, QP_ARANGE_PCT, 99, 0, 0);
    REQUIRE_OK(qp_observer_add(p, x, 1000, &err), &err);
    REQUIRE_OK(qp_observer_range(p, &U8, QP_ROUND_HALF_AWAY, &lo, &hi, &err), &err);
    CHECK_NEAR(lo, -490, 1.0);
    CHECK_NEAR(hi, 489, 1.0);
    qp_observer_free(p);
    /* pct100 is min/max */
    p = make(ctx, QP_ARANGE_PCT, 100, 0, 0);
    REQUIRE_OK(qp_observer_add(p, x, 1000, &err), &err);
    REQUIRE_OK(qp_observer_range(p, &U8, QP_ROUND_HALF_AWAY, &lo, &hi, &err), &err);
    CHECK(lo == -500 && hi == 499);
    qp_observer_free(p);
}

QP_TEST(histogram_grows_by_exact_merges)
{
    /* big-range batch first, or last: the same bins, as the range is the
     * power of two above the largest magnitude (8) either way */
    float small[6] = {-1, -0.3f, 0, 0.2f, 0.7f, 1}, big[3] = {4, -3.9f, 2.5f};
    struct qp_hist a, b;
    struct qp_error err;
    REQUIRE_OK(qp_hist_init(&a, 8, &err), &err);
    REQUIRE_OK(qp_hist_init(&b, 8, &err), &err);
    qp_hist_add(&a, big, 3);
    qp_hist_add(&a, small, 6);
    qp_hist_add(&b, small, 6);
    CHECK(b.range == 2);
    qp_hist_add(&b, big, 3);
    CHECK(a.range == 8 && b.range == 8);
    CHECK(!memcmp(a.pos, b.pos, 8 * sizeof *a.pos));
    CHECK(!memcmp(a.neg, b.neg, 8 * sizeof *a.neg));
    /* w = 1: pos [0,1) holds 0, 0.2, 0.7; [1,2) 1; [2,3) 2.5; [4,5) 4.
     * neg: 0.3 -> 0, 1 -> 1, 3.9 -> 3 */
    static const uint64_t pos[8] = {3, 1, 1, 0, 1, 0, 0, 0};
    static const uint64_t neg[8] = {1, 1, 0, 1, 0, 0, 0, 0};
    CHECK(!memcmp(a.pos, pos, sizeof pos));
    CHECK(!memcmp(a.neg, neg, sizeof neg));
    CHECK_INT(a.count, 9);
    qp_hist_release(&a);
    qp_hist_release(&b);
    /* zeros before any other value are kept */
    float z[4] = {0, 0, 0, 0}, one = 1;
    REQUIRE_OK(qp_hist_init(&a, 4, &err), &err);
    qp_hist_add(&a, z, 4);
    CHECK(a.range == 0);
    CHECK(qp_hist_quantile(&a, 0.5, true) == 0);
    qp_hist_add(&a, &one, 1); /* range 2, bins of 0.5 */
    CHECK(a.range == 2);
    CHECK_INT(a.pos[0], 4);
    CHECK_INT(a.pos[2], 1);
    qp_hist_release(&a);
    CHECK_FAILS(qp_hist_init(&a, 7, &err), QP_E_INVAL, &err, "must be even");
}

QP_TEST(observer_kl_threshold_hand_computed)
{
    /* |x| histogram with 4 bins of width 1: [8, 4, 0, 1]; 2 bits -> 2
     * quantized bins. Keeping i bins:
     *   i = 2: P = [8, 5],       Q = [8, 4]:       KL = 0.00578
     *   i = 3: P = [8, 4, 1],    Q = [8, 2, 2]:    KL = 0.0799
     *   i = 4: P = [8, 4, 0, 1], Q = [6, 6, 0, 1]: KL = 0.0523
     * (P, Q normalised by their sums): i = 2 wins, T = 2. */
    float x[13];
    for (int i = 0; i < 8; i++)
        x[i] = 0.5f;
    for (int i = 8; i < 12; i++)
        x[i] = -1.5f;
    x[12] = 3.5f; /* range 4 */
    struct qp_hist h;
    struct qp_error err;
    REQUIRE_OK(qp_hist_init(&h, 4, &err), &err);
    qp_hist_add(&h, x, 13);
    CHECK(qp_hist_kl_threshold(&h, 2) == 2.0);
    /* 3 bits -> 4 quantized bins >= 4 histogram bins: no clipping */
    CHECK(qp_hist_kl_threshold(&h, 3) == 3.5);
    qp_hist_release(&h);
    /* i = 2: P = [8, 5], Q = [8, 4]: KL = 8/13 ln(12/13) + 5/13 ln(15/13) */
    double kl2 = 8.0 / 13 * log(12.0 / 13) + 5.0 / 13 * log(15.0 / 13);
    CHECK_NEAR(kl2, 0.005782, 1e-6);
    /* through the observer: symmetric range clipped to [-1.5, 2] */
    struct qp_observer *o = make(ctx, QP_ARANGE_KL, 0, 0, 4);
    REQUIRE_OK(qp_observer_add(o, x, 13, &err), &err);
    float lo, hi;
    struct qp_qformat f2 = {2, false, false};
    REQUIRE_OK(qp_observer_range(o, &f2, QP_ROUND_HALF_AWAY, &lo, &hi, &err), &err);
    CHECK(lo == -1.5f && hi == 2.0f);
    qp_observer_free(o);
}

static uint64_t rs = 1;
static double unif(void) /* (0, 1) */
{
    rs ^= rs << 13;
    rs ^= rs >> 7;
    rs ^= rs << 17;
    return ((double)(rs >> 11) + 0.5) * 0x1p-53;
}

static float laplace(void)
{
    double u = unif() - 0.5;
    return (float)(u < 0 ? log(1 + 2 * u) : -log(1 - 2 * u));
}

QP_TEST(observer_kl_clips_heavy_tails_not_uniform_data)
{
    enum { N = 200000 };
    float *x = malloc(N * sizeof *x);
    struct qp_error err;
    float lo, hi;
    for (int i = 0; i < N; i++)
        x[i] = (float)(2 * unif() - 1);
    struct qp_observer *o = make(ctx, QP_ARANGE_KL, 0, 0, 0);
    REQUIRE_OK(qp_observer_add(o, x, N, &err), &err);
    REQUIRE_OK(qp_observer_range(o, &S8, QP_ROUND_HALF_AWAY, &lo, &hi, &err), &err);
    CHECK(hi > 0.97f);
    qp_observer_free(o);
    for (int i = 0; i < N; i++)
        x[i] = laplace();
    float amax = 0;
    for (int i = 0; i < N; i++)
        amax = fabsf(x[i]) > amax ? fabsf(x[i]) : amax;
    o = make(ctx, QP_ARANGE_KL, 0, 0, 0);
    REQUIRE_OK(qp_observer_add(o, x, N / 2, &err), &err);
    REQUIRE_OK(qp_observer_add(o, x + N / 2, N / 2, &err), &err);
    REQUIRE_OK(qp_observer_range(o, &S8, QP_ROUND_HALF_AWAY, &lo, &hi, &err), &err);
    /* a Laplace tail is clipped, more so with fewer levels (8 bits: near
     * the ~9.9 scale units MSE analysis gives; 4 bits: near ~5) */
    CHECK(hi < 0.95f * amax && hi > 0.6f * amax);
    CHECK(lo == -hi);
    struct qp_qformat s4 = {4, false, false};
    REQUIRE_OK(qp_observer_range(o, &s4, QP_ROUND_HALF_AWAY, &lo, &hi, &err), &err);
    CHECK(hi < 0.6f * amax && hi > 0.2f * amax);
    qp_observer_free(o);
    free(x);
}

QP_TEST(histogram_interval_sse_matches_numerical_integration)
{
    static const double cases[][5] = {
        /* a, b, s, L, U */
        {0.0, 1.0, 0.1, -1.28, 1.27}, {-0.37, 0.52, 0.25, -2.0, 1.75},
        {0.9, 3.0, 0.5, -4.0, 1.5},   {-5.0, -1.2, 0.3, -0.9, 0.9},
        {-2.0, 2.0, 1.0, 0.0, 15.0},  {0.123, 0.125, 0.01, -1.0, 1.0},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        double a = cases[c][0], b = cases[c][1], s = cases[c][2], L = cases[c][3],
               U = cases[c][4], num = 0;
        int steps = 200000;
        double h = (b - a) / steps;
        for (int k = 0; k < steps; k++) {
            double x = a + (k + 0.5) * h;
            double q = fmin(fmax(s * round(x / s), L), U);
            num += (x - q) * (x - q) * h;
        }
        double got = qp_quant_interval_sse(a, b, s, L, U);
        if (fabs(got - num) > 1e-6 * fmax(1, num))
            qp_test_failf(ctx, __FILE__, __LINE__, "case %zu: %.9g, numerical %.9g",
                          c, got, num);
    }
}

QP_TEST(observer_mse_range_is_near_the_best_on_the_raw_values)
{
    enum { N = 50000 };
    float *x = malloc(N * sizeof *x);
    for (int i = 0; i < N; i++)
        x[i] = laplace();
    float mn = x[0], mx = x[0];
    for (int i = 0; i < N; i++) {
        mn = x[i] < mn ? x[i] : mn;
        mx = x[i] > mx ? x[i] : mx;
    }
    struct qp_error err;
    static const struct qp_qformat fmts[] = {{4, false, false}, {4, true, false},
                                             {8, false, false}};
    for (int fi = 0; fi < 3; fi++) {
        struct qp_observer *o = make(ctx, QP_ARANGE_MSE, 0, 0, 0);
        REQUIRE_OK(qp_observer_add(o, x, N, &err), &err);
        float lo, hi;
        REQUIRE_OK(qp_observer_range(o, &fmts[fi], QP_ROUND_HALF_EVEN, &lo, &hi,
                                     &err), &err);
        double chosen = qp_clip_sse(x, N, &fmts[fi], QP_ROUND_HALF_EVEN, lo, hi);
        double best = INFINITY, full = qp_clip_sse(x, N, &fmts[fi],
                                                   QP_ROUND_HALF_EVEN, mn, mx);
        for (int k = 1; k <= 256; k++) {
            float a = (float)k / 256;
            double e = qp_clip_sse(x, N, &fmts[fi], QP_ROUND_HALF_EVEN, a * mn,
                                   a * mx);
            best = e < best ? e : best;
        }
        if (!(chosen <= 1.05 * best) || !(chosen < 0.9 * full))
            qp_test_failf(ctx, __FILE__, __LINE__, "format %d: chosen sse %g, "
                          "best %g, min/max %g", fi, chosen, best, full);
        qp_observer_free(o);
    }
    free(x);
}

QP_TEST(observer_skips_nonfinite_and_refuses_bad_options)
{
    float x[5] = {1, NAN, -2, INFINITY, 0.5f};
    struct qp_error err;
    float lo, hi;
    struct qp_observer *o = make(ctx, QP_ARANGE_PCT, 100, 0, 0);
    CHECK_FAILS(qp_observer_range(o, &S8, QP_ROUND_HALF_AWAY, &lo, &hi, &err),
                QP_E_INVAL, &err, "no finite calibration values observed");
    REQUIRE_OK(qp_observer_add(o, x, 5, &err), &err);
    REQUIRE_OK(qp_observer_add(o, x + 1, 1, &err), &err);
    CHECK_INT(qp_observer_count(o), 3);
    CHECK_INT(qp_observer_nonfinite(o), 3);
    REQUIRE_OK(qp_observer_range(o, &S8, QP_ROUND_HALF_AWAY, &lo, &hi, &err), &err);
    CHECK(lo == -2 && hi == 2);
    qp_observer_free(o);
    struct qp_observer_opts bad = {QP_ARANGE_PCT, 0, 0, 0};
    CHECK_FAILS(qp_observer_new(&bad, &o, &err), QP_E_INVAL, &err,
                "percentile must be in (0, 100], got 0");
    bad = (struct qp_observer_opts){QP_ARANGE_EMA, 0, 1.5, 0};
    CHECK_FAILS(qp_observer_new(&bad, &o, &err), QP_E_INVAL, &err,
                "averaging constant must be in (0, 1], got 1.5");
    bad = (struct qp_observer_opts){QP_ARANGE_KL, 0, 0, 3};
    CHECK_FAILS(qp_observer_new(&bad, &o, &err), QP_E_INVAL, &err,
                "histogram bins must be even");
    struct qp_ascheme a = {{8, false, false}, false, QP_ARANGE_PCT, 99.9};
    struct qp_observer_opts from = qp_observer_opts_from_scheme(&a);
    CHECK(from.method == QP_ARANGE_PCT && from.pct == 99.9);
}
