/* Unit tests of exp_shifted (kernels/eltwise-f32.h), a softmax's
 * numerators expf(x - m): every variant gives the C library's expf bit
 * for bit, on inputs spread over every binade expf does not saturate on,
 * the boundaries of its overflow and underflow, infinities and NaN, the
 * two floats (found by an exhaustive search) on which glibc's FMA form of
 * expf differs from the same steps without FMA, vector tails and in place. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/dispatch.h"
#include "kernels/eltwise-f32.h"
#include "tests/test.h"

static const struct qp_ew_f32 *variants[4];

static int exp_variants(void)
{
    int n = 0;
    variants[n++] = &qp_ew_f32_ref;
#if defined(__x86_64__)
    if (qp_kern_isa_available(QP_KERN_AVX2))
        variants[n++] = &qp_ew_f32_avx2;
    if (qp_kern_isa_available(QP_KERN_AVX512))
        variants[n++] = &qp_ew_f32_avx512;
#endif
    return n;
}

static uint32_t bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

/* Runs every variant on x[0..n) with m; counts results whose bits differ
 * from expf(x[i] - m) (any NaN matching any NaN), reporting the first. */
static int mismatches(struct qp_test_ctx *ctx, const float *x, size_t n, float m)
{
    float *y = malloc((n + 1) * sizeof *y);
    int bad = 0;
    if (!y)
        return 1;
    for (int v = 0; v < exp_variants(); v++) {
        variants[v]->exp_shifted(x, m, y, n);
        for (size_t i = 0; i < n; i++) {
            float want = expf(x[i] - m);
            if (bits(y[i]) == bits(want) || (isnan(y[i]) && isnan(want)))
                continue;
            if (bad++ == 0)
                qp_test_failf(ctx, __FILE__, __LINE__, "%s: expf(%a - %a) = "
                              "%a, want %a", variants[v]->name, x[i], m,
                              y[i], want);
        }
    }
    free(y);
    return bad;
}

QP_TEST(exp_shifted_is_expf_bit_for_bit)
{
    /* every 4099th float of magnitude below 120 (so every binade and
     * mantissa pattern), both signs */
    size_t n = 0, cap = 1 << 21;
    float *x = malloc(cap * sizeof *x);
    REQUIRE(x != NULL);
    for (uint32_t u = 0; u < 0x42f00000u && n + 2 <= cap; u += 4099) {
        float f;
        memcpy(&f, &u, sizeof f);
        x[n++] = f;
        x[n++] = -f;
    }
    CHECK_INT(mismatches(ctx, x, n, 0.0f), 0);
    /* a softmax's shift: x - m rounds first */
    CHECK_INT(mismatches(ctx, x, n, 3.3f), 0);
    free(x);
}

QP_TEST(exp_shifted_edges_and_tails)
{
    static const float edges[] = {
        0x1.04845ep+5f, -0x1.f8cbb2p+5f, /* FMA form vs plain: differ */
        0x1.62e42ep6f, -0x1.9fe368p6f,   /* overflow, underflow bounds */
        -0x1.9d1d9ep6f, -87.5f, 88.0f, 88.72f, 89.0f, -104.0f, -150.0f,
        0.0f, -0.0f, 1e-30f, -1e-30f, 1.0f, -1.0f, 0.5f, 1e30f, -1e30f,
        INFINITY, -INFINITY, NAN};
    float x[3 * sizeof edges / sizeof edges[0]];
    size_t n = 0;
    for (size_t i = 0; i < sizeof edges / sizeof edges[0]; i++) {
        x[n++] = edges[i];
        x[n++] = nextafterf(edges[i], INFINITY);
        x[n++] = nextafterf(edges[i], -INFINITY);
    }
    CHECK_INT(mismatches(ctx, x, n, 0.0f), 0);
    /* lengths around the vector widths: nothing past n is written */
    for (int v = 0; v < exp_variants(); v++)
        for (size_t len = 0; len <= 33; len++) {
            float in[40], out[40];
            for (size_t i = 0; i < 40; i++) {
                in[i] = -0.37f * (float)i;
                out[i] = 42.0f;
            }
            variants[v]->exp_shifted(in, -1.0f, out, len);
            int wrong = 0;
            for (size_t i = 0; i < 40; i++)
                wrong += i < len ? bits(out[i]) != bits(expf(in[i] + 1.0f))
                                 : out[i] != 42.0f;
            if (wrong)
                qp_test_failf(ctx, __FILE__, __LINE__, "%s: length %zu: %d "
                              "wrong", variants[v]->name, len, wrong);
            /* in place */
            variants[v]->exp_shifted(in, 0.0f, in, len);
            for (size_t i = 0; i < len; i++)
                wrong += bits(in[i]) != bits(expf(-0.37f * (float)i));
            if (wrong)
                qp_test_failf(ctx, __FILE__, __LINE__, "%s: length %zu in "
                              "place: %d wrong", variants[v]->name, len, wrong);
        }
}
