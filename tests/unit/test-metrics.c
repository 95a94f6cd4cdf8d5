/* Unit tests of analysis/metrics.c and the SIMD variants of its kernel
 * (kernels/metrics-f32.h): hand-computed values, edge cases, and every
 * variant against the reference. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/metrics.h"
#include "core/half.h"
#include "kernels/metrics-f32.h"
#include "tests/test.h"

static struct qp_metrics run(const float *r, const float *t, size_t n)
{
    struct qp_metrics m;
    qp_metrics_init(&m);
    qp_metrics_add_f32(&m, r, t, n);
    return m;
}

QP_TEST(metrics_hand_computed)
{
    /* sum ref^2 = 30, sum test^2 = 39, sum ref*test = 34, error only 1 at
     * the last element */
    const float r[4] = {1, 2, 3, 4}, t[4] = {1, 2, 3, 5};
    struct qp_metrics m = run(r, t, 4);
    CHECK_INT(m.numel, 4);
    CHECK_INT(m.nonfinite, 0);
    CHECK_NEAR(m.sum_ref2, 30, 0);
    CHECK_NEAR(m.sum_test2, 39, 0);
    CHECK_NEAR(m.sum_dot, 34, 0);
    CHECK_NEAR(m.sum_err2, 1, 0);
    CHECK_NEAR(qp_metrics_sqnr_db(&m), 14.771212547196624, 1e-12); /* 10 lg 30 */
    CHECK_NEAR(qp_metrics_cosine(&m), 0.9939990885479664, 1e-14); /* 34/sqrt(1170) */
    CHECK_NEAR(qp_metrics_mae(&m), 0.25, 0);
    CHECK_NEAR(m.max_abs_err, 1, 0);
    CHECK_NEAR(qp_metrics_rel_l2(&m), 0.18257418583505536, 1e-15); /* 1/sqrt 30 */
    CHECK_NEAR(m.ref_absmax, 4, 0);
}

QP_TEST(metrics_one_element_and_negative_values)
{
    const float r[1] = {2}, t[1] = {1.5f};
    struct qp_metrics m = run(r, t, 1);
    CHECK_NEAR(qp_metrics_sqnr_db(&m), 12.041199826559248, 1e-12); /* 10 lg 16 */
    CHECK_NEAR(qp_metrics_cosine(&m), 1, 1e-15);
    CHECK_NEAR(qp_metrics_mae(&m), 0.5, 0);
    /* opposite signs: cosine -1, error 2x the reference */
    const float r2[2] = {-1, 3}, t2[2] = {1, -3};
    m = run(r2, t2, 2);
    CHECK_NEAR(qp_metrics_cosine(&m), -1, 1e-15);
    CHECK_NEAR(qp_metrics_rel_l2(&m), 2, 1e-15);
    CHECK_NEAR(qp_metrics_sqnr_db(&m), -6.0205999132796242, 1e-12); /* 10 lg 1/4 */
    CHECK_NEAR(m.ref_absmax, 3, 0);
    CHECK_NEAR(m.max_abs_err, 6, 0);
}

QP_TEST(metrics_identical_zero_and_empty)
{
    const float r[3] = {-1.5f, 0, 7}, z[3] = {0, 0, 0}, one[3] = {0, 1, 0};
    struct qp_metrics m = run(r, r, 3);
    CHECK(isinf(qp_metrics_sqnr_db(&m)) && qp_metrics_sqnr_db(&m) > 0);
    CHECK_NEAR(qp_metrics_cosine(&m), 1, 1e-15);
    CHECK_NEAR(qp_metrics_mae(&m), 0, 0);
    CHECK_NEAR(qp_metrics_rel_l2(&m), 0, 0);
    m = run(z, z, 3); /* both all zero */
    CHECK(isinf(qp_metrics_sqnr_db(&m)) && qp_metrics_sqnr_db(&m) > 0);
    CHECK_NEAR(qp_metrics_cosine(&m), 1, 0);
    CHECK_NEAR(qp_metrics_rel_l2(&m), 0, 0);
    m = run(z, one, 3); /* zero reference, non-zero test */
    CHECK(isinf(qp_metrics_sqnr_db(&m)) && qp_metrics_sqnr_db(&m) < 0);
    CHECK_NEAR(qp_metrics_cosine(&m), 0, 0);
    CHECK(isinf(qp_metrics_rel_l2(&m)));
    CHECK_NEAR(qp_metrics_mae(&m), 1.0 / 3, 1e-15);
    m = run(one, z, 3); /* zero test */
    CHECK_NEAR(qp_metrics_sqnr_db(&m), 0, 1e-15);
    CHECK_NEAR(qp_metrics_cosine(&m), 0, 0);
    CHECK_NEAR(qp_metrics_rel_l2(&m), 1, 0);
    m = run(r, r, 0); /* nothing compared */
    CHECK_INT(m.numel, 0);
    CHECK(isinf(qp_metrics_sqnr_db(&m)));
    CHECK_NEAR(qp_metrics_cosine(&m), 1, 0);
    CHECK_NEAR(qp_metrics_mae(&m), 0, 0);
}

QP_TEST(metrics_nonfinite_counted_and_left_out)
{
    const float r[5] = {1, NAN, 3, INFINITY, 2};
    const float t[5] = {1, 2, NAN, -INFINITY, 4};
    struct qp_metrics m = run(r, t, 5);
    CHECK_INT(m.numel, 2);        /* pairs 0 and 4 */
    CHECK_INT(m.nonfinite, 2);    /* test NaN, -Inf */
    CHECK_INT(m.ref_nonfinite, 2);/* ref NaN, Inf */
    CHECK_NEAR(m.sum_ref2, 5, 0);
    CHECK_NEAR(m.sum_err2, 4, 0);
    CHECK_NEAR(m.sum_abs_err, 2, 0);
    CHECK_NEAR(m.max_abs_err, 2, 0);
    /* ref_absmax is over every finite reference value: 3 at index 2 */
    CHECK_NEAR(m.ref_absmax, 3, 0);
    /* NaN is never a pass: the error figures of such a pair are NaN (-inf
     * SQNR), though the finite pairs alone would give 10 lg 5/4 dB */
    CHECK(isinf(qp_metrics_sqnr_db(&m)) && qp_metrics_sqnr_db(&m) < 0);
    CHECK(isnan(qp_metrics_cosine(&m)));
    CHECK(isnan(qp_metrics_mae(&m)));
    CHECK(isnan(qp_metrics_max_abs(&m)));
    CHECK(isnan(qp_metrics_rel_l2(&m)));
}

QP_TEST(metrics_all_nan_test_never_passes)
{
    /* defect: an all-NaN test tensor scored sqnr inf, cosine 1 */
    const float r[4] = {1, 2, 3, 4};
    const float t[4] = {NAN, NAN, NAN, NAN};
    struct qp_metrics m = run(r, t, 4);
    CHECK_INT(m.nonfinite, 4);
    CHECK_INT(m.numel, 0);
    CHECK(qp_metrics_sqnr_db(&m) == -INFINITY);
    CHECK(isnan(qp_metrics_cosine(&m)));
    CHECK(isnan(qp_metrics_mae(&m)));
    /* a reference with Inf fails the same way */
    const float r2[2] = {INFINITY, 1}, t2[2] = {INFINITY, 1};
    m = run(r2, t2, 2);
    CHECK(qp_metrics_sqnr_db(&m) == -INFINITY);
}

QP_TEST(metrics_merge_adds_sums_and_keeps_maxima)
{
    const float r[4] = {1, 2, 3, 4}, t[4] = {1, 2, 3, 5};
    struct qp_metrics a = run(r, t, 2), b = run(r + 2, t + 2, 2), all = run(r, t, 4);
    qp_metrics_merge(&a, &b);
    CHECK_INT(a.numel, all.numel);
    CHECK_NEAR(a.sum_ref2, all.sum_ref2, 0);
    CHECK_NEAR(a.sum_dot, all.sum_dot, 0);
    CHECK_NEAR(a.max_abs_err, 1, 0);
    CHECK_NEAR(a.ref_absmax, 4, 0);
}

/* Pseudo-random data with NaN/Inf sprinkled on both sides. */
static void fill(float *r, float *t, size_t n, unsigned seed, bool specials)
{
    uint32_t s = seed * 2654435761u + 1;
    for (size_t i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        float x = (float)((int32_t)s >> 8) / 8388608.0f * 10.0f;
        s = s * 1664525u + 1013904223u;
        float e = (float)((int32_t)s >> 8) / 8388608.0f * 0.01f;
        r[i] = x;
        t[i] = x + e;
        if (specials && i % 97 == 5)
            t[i] = i % 3 ? NAN : -INFINITY;
        if (specials && i % 89 == 7)
            r[i] = i % 2 ? INFINITY : NAN;
    }
}

static void check_same(struct qp_test_ctx *ctx, const struct qp_metrics *a,
                       const struct qp_metrics *b, const char *what, size_t n)
{
    if (a->numel != b->numel || a->nonfinite != b->nonfinite ||
        a->ref_nonfinite != b->ref_nonfinite || a->max_abs_err != b->max_abs_err ||
        a->ref_absmax != b->ref_absmax)
        qp_test_failf(ctx, __FILE__, __LINE__,
                      "%s n=%zu: counts/maxima differ: %llu/%llu %llu/%llu "
                      "%.17g/%.17g %.17g/%.17g", what, n,
                      (unsigned long long)a->numel, (unsigned long long)b->numel,
                      (unsigned long long)a->nonfinite,
                      (unsigned long long)b->nonfinite, a->max_abs_err,
                      b->max_abs_err, a->ref_absmax, b->ref_absmax);
    const double x[5] = {a->sum_ref2, a->sum_test2, a->sum_dot, a->sum_err2,
                         a->sum_abs_err};
    const double y[5] = {b->sum_ref2, b->sum_test2, b->sum_dot, b->sum_err2,
                         b->sum_abs_err};
    for (int k = 0; k < 5; k++)
        if (fabs(x[k] - y[k]) > 1e-12 * fabs(y[k]))
            qp_test_failf(ctx, __FILE__, __LINE__,
                          "%s n=%zu: sum %d: %.17g vs reference %.17g", what, n,
                          k, x[k], y[k]);
}

/* The kernel pass k over n pairs, as metrics. */
static struct qp_metrics kernel_pass(qp_metrics_f32_fn k, const float *r,
                                     const float *t, size_t n)
{
    struct qp_metrics_f32 a = {0};
    k(&a, r, t, n);
    return (struct qp_metrics){a.numel, a.nonfinite, a.ref_nonfinite,
                               a.sum_ref2, a.sum_test2, a.sum_dot, a.sum_err2,
                               a.sum_abs_err, a.max_abs_err, a.ref_absmax};
}

/* Variant k and the reference over the same n pairs; the reference's
 * result in *out. */
static void compare_variant(struct qp_test_ctx *ctx, qp_metrics_f32_fn k,
                            const char *name, const float *r, const float *t,
                            size_t n, struct qp_metrics *out)
{
    struct qp_metrics a = kernel_pass(k, r, t, n);
    *out = kernel_pass(qp_metrics_f32_add_ref, r, t, n);
    check_same(ctx, &a, out, name, n);
}

QP_TEST(metrics_simd_variants_match_the_reference)
{
    const char *names[] = {"avx2", "avx512"};
    size_t big = 100003;
    float *r = malloc(big * sizeof *r), *t = malloc(big * sizeof *t);
    REQUIRE(r && t);
    struct qp_metrics ref;
    for (int v = 0; v < 2; v++) {
        qp_metrics_f32_fn k = qp_metrics_f32_by_name(names[v]);
        if (!k)
            continue; /* this CPU lacks the ISA */
        for (size_t n = 0; n <= 70; n++) { /* every tail length */
            fill(r, t, n, (unsigned)n, true);
            compare_variant(ctx, k, names[v], r, t, n, &ref);
        }
        for (int specials = 0; specials < 2; specials++) {
            fill(r, t, big, 99, specials);
            compare_variant(ctx, k, names[v], r, t, big, &ref);
            CHECK(ref.nonfinite == (specials ? 1031u : 0u));
        }
    }
    CHECK(qp_metrics_f32_by_name("ref") == qp_metrics_f32_add_ref);
    CHECK(qp_metrics_f32_by_name("sse9") == NULL);
    const char *chosen = qp_metrics_variant();
    CHECK(qp_metrics_f32_by_name(chosen) != NULL);
    free(r);
    free(t);
}

QP_TEST(metrics_tensors_on_threads_match_one_pass)
{
    /* above QP_BLOCK_PARALLEL_MIN, on 3 threads (uneven shares) */
    size_t n = 600001;
    int64_t shape[1] = {(int64_t)n};
    struct qp_error err;
    struct qp_tensor *a, *b;
    REQUIRE_OK(qp_tensor_new("a", QP_DTYPE_F32, 1, shape, &a, &err), &err);
    REQUIRE_OK(qp_tensor_new("b", QP_DTYPE_F32, 1, shape, &b, &err), &err);
    fill(a->data, b->data, n, 7, true);
    setenv("QP_THREADS", "3", 1);
    struct qp_metrics m, ref;
    CHECK_OK(qp_metrics_tensors(a, b, &m, &err), &err);
    unsetenv("QP_THREADS");
    ref = kernel_pass(qp_metrics_f32_add_ref, a->data, b->data, n);
    check_same(ctx, &m, &ref, "threads", n);
    qp_tensor_free(a);
    qp_tensor_free(b);
}

QP_TEST(metrics_tensors_dequantize_8dim_per_axis)
{
    /* 8 dims, 16 elements; axis 6 has 2 channels and the last dim is 1, so
     * element i is in channel i % 2. Scales {0.5, 0.25}, zero points {0, 2},
     * q_i = i - 8. The reference equals the dequantized values except
     * element 5, which is 1 larger. */
    int64_t shape[8] = {2, 1, 2, 1, 2, 1, 2, 1};
    struct qp_error err;
    struct qp_tensor *r, *q;
    REQUIRE_OK(qp_tensor_new("r", QP_DTYPE_F32, 8, shape, &r, &err), &err);
    REQUIRE_OK(qp_tensor_new("q", QP_DTYPE_I8, 8, shape, &q, &err), &err);
    const float scale[2] = {0.5f, 0.25f};
    const int32_t zp[2] = {0, 2};
    REQUIRE_OK(qp_tensor_set_qparams(q, 2, scale, zp, 6, 0, &err), &err);
    float *rv = r->data;
    double ref2 = 0;
    for (int i = 0; i < 16; i++) {
        ((int8_t *)q->data)[i] = (int8_t)(i - 8);
        rv[i] = i % 2 ? 0.25f * (float)(i - 8 - 2) : 0.5f * (float)(i - 8);
        if (i == 5)
            rv[i] += 1;
        ref2 += (double)rv[i] * rv[i];
    }
    struct qp_metrics m;
    REQUIRE_OK(qp_metrics_tensors(r, q, &m, &err), &err);
    CHECK_INT(m.numel, 16);
    CHECK_NEAR(m.sum_err2, 1, 0);
    CHECK_NEAR(m.max_abs_err, 1, 0);
    CHECK_NEAR(qp_metrics_mae(&m), 1.0 / 16, 0);
    CHECK_NEAR(m.sum_ref2, ref2, 0);
    CHECK_NEAR(qp_metrics_sqnr_db(&m), 10 * log10(ref2), 1e-12);
    /* ref2 by hand: channel 0 (i even) 0.25*(64+36+16+4+0+4+16+36) = 44,
     * channel 1: 0.0625*(81+49+25+9+1+1+9+25) = 12.5, with element 5
     * (-1.25 -> -0.25) changing 1.5625 to 0.0625: 44 + 11 = 55 */
    CHECK_NEAR(ref2, 55, 0);
    /* element counts that differ are refused */
    int64_t s2[1] = {15};
    struct qp_tensor *c;
    REQUIRE_OK(qp_tensor_new("c", QP_DTYPE_F32, 1, s2, &c, &err), &err);
    CHECK_FAILS(qp_metrics_tensors(r, c, &m, &err), QP_E_SHAPE, &err,
                "16 and 15 elements");
    qp_tensor_free(c);
    qp_tensor_free(r);
    qp_tensor_free(q);
}

QP_TEST(metrics_tensors_f16_test_side)
{
    int64_t shape[1] = {3};
    struct qp_error err;
    struct qp_tensor *r, *h;
    REQUIRE_OK(qp_tensor_new("r", QP_DTYPE_F32, 1, shape, &r, &err), &err);
    REQUIRE_OK(qp_tensor_new("h", QP_DTYPE_F16, 1, shape, &h, &err), &err);
    const float rv[3] = {1.0f, 1.0f / 3.0f, -2.0f};
    memcpy(r->data, rv, sizeof rv);
    for (int i = 0; i < 3; i++)
        ((uint16_t *)h->data)[i] = qp_f32_to_f16(rv[i]);
    struct qp_metrics m;
    REQUIRE_OK(qp_metrics_tensors(r, h, &m, &err), &err);
    /* only 1/3 is inexact in f16: nearest is 0x3555 = 0.333251953125 */
    double e = (double)(1.0f / 3.0f) - 0.333251953125;
    CHECK_NEAR(m.max_abs_err, e, 0);
    CHECK_NEAR(m.sum_err2, e * e, 0);
    qp_tensor_free(r);
    qp_tensor_free(h);
}
