/* Unit tests of analysis/stats.c (qprobe inspect's statistics): moments,
 * excess kurtosis and the 6-sigma outlier share against hand-computed
 * values. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/stats.h"
#include "tests/test.h"

/* {1,2,3,4}: mean 2.5, deviations +-0.5, +-1.5: M2 = 5, M4 = 10.25,
 * variance 1.25, excess kurtosis 4 * 10.25 / 25 - 3 = -1.36. */
static void check_1234(struct qp_test_ctx *ctx, const struct qp_stats *s,
                       double offset, double tol)
{
    CHECK_NEAR(s->mean, 2.5 + offset, tol * (1 + offset));
    CHECK_NEAR(qp_stats_std(s), sqrt(1.25), tol);
    CHECK_NEAR(qp_stats_kurtosis(s), -1.36, tol);
    CHECK_NEAR(s->min, 1 + offset, 0);
    CHECK_NEAR(s->max, 4 + offset, 0);
    CHECK_INT(s->outliers, 0);
}

QP_TEST(stats_hand_computed)
{
    const float x[4] = {1, 2, 3, 4};
    struct qp_stats s;
    qp_stats_init(&s);
    qp_stats_add_f32(&s, x, 4);
    CHECK_INT(s.count, 4);
    CHECK_NEAR(s.m2, 5, 1e-15);
    CHECK_NEAR(s.m3, 0, 1e-15);
    CHECK_NEAR(s.m4, 10.25, 1e-14);
    CHECK_NEAR(s.absmax, 4, 0);
    check_1234(ctx, &s, 0, 1e-14);
    /* skewed: {0,0,0,4}: mean 1, M2 = 3+9 = 12, M3 = -3+27 = 24,
     * M4 = 3+81 = 84; kurtosis 4*84/144 - 3 = -2/3 */
    const float y[4] = {0, 0, 0, 4};
    qp_stats_init(&s);
    qp_stats_add_f32(&s, y, 4);
    CHECK_NEAR(s.m3, 24, 1e-13);
    CHECK_NEAR(qp_stats_kurtosis(&s), -2.0 / 3.0, 1e-14);
    CHECK_NEAR(qp_stats_std(&s), sqrt(3.0), 1e-15);
}

QP_TEST(stats_merge_across_blocks_and_large_offset)
{
    /* 10000 values cycling 1..4 (several 4096 blocks, merged pairwise) */
    size_t n = 10000;
    float *x = malloc(n * sizeof *x);
    REQUIRE(x);
    for (size_t i = 0; i < n; i++)
        x[i] = (float)(i % 4 + 1);
    struct qp_stats s, a, b;
    qp_stats_init(&s);
    qp_stats_add_f32(&s, x, n);
    check_1234(ctx, &s, 0, 1e-12);
    /* any split merges to the same result */
    qp_stats_init(&a);
    qp_stats_init(&b);
    qp_stats_add_f32(&a, x, 4321);
    qp_stats_add_f32(&b, x + 4321, n - 4321);
    qp_stats_merge(&a, &b);
    CHECK_INT(a.count, n);
    check_1234(ctx, &a, 0, 1e-12);
    /* 1e6 + {1,2,3,4} is exact in f32; raw power sums in double would lose
     * the kurtosis to cancellation, central moments keep it */
    for (size_t i = 0; i < n; i++)
        x[i] = (float)(1e6 + (double)(i % 4 + 1));
    qp_stats_init(&s);
    qp_stats_add_f32(&s, x, n);
    check_1234(ctx, &s, 1e6, 1e-9);
    free(x);
}

QP_TEST(stats_constant_and_empty)
{
    const float x[3] = {2.5f, 2.5f, 2.5f};
    struct qp_stats s;
    qp_stats_init(&s);
    qp_stats_add_f32(&s, x, 3);
    CHECK_NEAR(qp_stats_std(&s), 0, 0);
    CHECK(isnan(qp_stats_kurtosis(&s)));
    CHECK_INT(qp_stats_count_outliers(&s, x, 3), 0);
    qp_stats_init(&s);
    CHECK(isnan(qp_stats_std(&s)));
    CHECK(isnan(qp_stats_kurtosis(&s)));
    CHECK_NEAR(qp_stats_outlier_ratio(&s), 0, 0);
}

QP_TEST(stats_nonfinite_counted_apart)
{
    const float x[6] = {1, NAN, 2, INFINITY, 3, -INFINITY};
    struct qp_stats s;
    qp_stats_init(&s);
    qp_stats_add_f32(&s, x, 6);
    CHECK_INT(s.count, 3);
    CHECK_INT(s.nonfinite, 3);
    CHECK_NEAR(s.mean, 2, 0);
    CHECK_NEAR(s.max, 3, 0);
    CHECK_NEAR(s.absmax, 3, 0);
    CHECK_NEAR(qp_stats_std(&s), sqrt(2.0 / 3.0), 1e-15);
}

/* n values: n-1 zeros and one a. mean a/n, std a sqrt(n-1)/n, and the
 * lone value lies (n-1)/sqrt(n-1) = sqrt(n-1) std from the mean: an
 * outlier beyond 6 std exactly when n - 1 > 36. */
static uint64_t lone_outliers(struct qp_test_ctx *ctx, size_t n, double *ratio)
{
    float *x = calloc(n, sizeof *x);
    if (!x)
        return 99;
    x[n / 2] = 10;
    int64_t shape[1] = {(int64_t)n};
    struct qp_error err;
    struct qp_tensor *t;
    struct qp_stats s;
    uint64_t r = 99;
    if (qp_tensor_wrap("x", QP_DTYPE_F32, 1, shape, x, n * sizeof *x, NULL, &t,
                       &err) == QP_OK) {
        CHECK_OK(qp_stats_tensor(t, &s, &err), &err);
        CHECK_NEAR(s.mean, 10.0 / (double)n, 1e-15);
        r = s.outliers;
        *ratio = qp_stats_outlier_ratio(&s);
        qp_tensor_free(t);
    }
    free(x);
    return r;
}

QP_TEST(stats_outliers_beyond_six_sigma)
{
    double ratio = -1;
    CHECK_INT(lone_outliers(ctx, 30, &ratio), 0); /* sqrt(29) < 6 */
    CHECK_NEAR(ratio, 0, 0);
    CHECK_INT(lone_outliers(ctx, 100, &ratio), 1); /* sqrt(99) > 6 */
    CHECK_NEAR(ratio, 0.01, 1e-15);
    /* above the threading threshold: 2^19 values on 2 threads */
    setenv("QP_THREADS", "2", 1);
    CHECK_INT(lone_outliers(ctx, (size_t)1 << 19, &ratio), 1);
    unsetenv("QP_THREADS");
    CHECK_NEAR(ratio, 1.0 / 524288, 1e-18);
}

static void check_summary(struct qp_test_ctx *ctx, const struct qp_tensor *t,
                          unsigned bits, const char *gran, double smin,
                          double smax, int64_t zmin, int64_t zmax)
{
    struct qp_qparam_summary qs;
    qp_qparam_summarise(t, &qs);
    CHECK_INT(qs.bits, bits);
    CHECK_STR(qs.granularity, gran);
    CHECK_NEAR(qs.scale_min, smin, 0);
    CHECK_NEAR(qs.scale_max, smax, 0);
    CHECK_INT(qs.zp_min, zmin);
    CHECK_INT(qs.zp_max, zmax);
}

QP_TEST(stats_of_dequantized_int8_and_qparam_summary)
{
    /* q = {3,5,7,9}, scale 0.5, zero point 1: (q-1)*0.5 = {1,2,3,4} */
    int64_t shape[1] = {4};
    struct qp_error err;
    struct qp_tensor *t;
    REQUIRE_OK(qp_tensor_new("q", QP_DTYPE_I8, 1, shape, &t, &err), &err);
    const int8_t q[4] = {3, 5, 7, 9};
    memcpy(t->data, q, 4);
    const float sc = 0.5f;
    const int32_t zp = 1;
    REQUIRE_OK(qp_tensor_set_qparams(t, 1, &sc, &zp, -1, 0, &err), &err);
    struct qp_stats s;
    REQUIRE_OK(qp_stats_tensor(t, &s, &err), &err);
    check_1234(ctx, &s, 0, 1e-14);
    check_summary(ctx, t, 8, "per-tensor", 0.5, 0.5, 1, 1);
    qp_tensor_free(t);
    /* per-axis and group-wise 4-bit */
    int64_t s2[2] = {2, 8};
    REQUIRE_OK(qp_tensor_new("w", QP_DTYPE_I4, 2, s2, &t, &err), &err);
    const float scales[4] = {0.25f, 2.0f, 0.5f, 1.0f};
    const int32_t zps[4] = {-3, 0, 4, 1};
    REQUIRE_OK(qp_tensor_set_qparams(t, 2, scales, zps, 0, 0, &err), &err);
    check_summary(ctx, t, 4, "per-axis 0", 0.25, 2, -3, 0);
    REQUIRE_OK(qp_tensor_set_qparams(t, 4, scales, NULL, 1, 4, &err), &err);
    check_summary(ctx, t, 4, "group 4 axis 1", 0.25, 2, 0, 0);
    qp_tensor_free(t);
}
