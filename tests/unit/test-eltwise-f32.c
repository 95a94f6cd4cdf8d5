/* Unit tests of the float elementwise loops (kernels/eltwise-f32.h):
 * hand-computed values of the reference, including the rules for NaN and
 * signed zeros, and every SIMD variant this machine runs against the
 * reference, bit for bit (NaN payloads aside), on special and random
 * values. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "kernels/eltwise-f32.h"
#include "tests/test.h"
#include "tests/unit/kern-test.h"

static uint32_t bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

/* Same bits, or both NaN: which NaN's payload an operation on two NaNs
 * returns depends on the operand order the compiler picked (x86 returns
 * the first source's), which the C source does not fix. */
static bool same(float x, float y)
{
    return bits(x) == bits(y) || (isnan(x) && isnan(y));
}

static float from_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

QP_TEST(eltwise_ref_unary_values)
{
    const struct qp_ew_f32 *k = &qp_ew_f32_ref;
    const float x[6] = {-2.0f, -0.0f, 0.0f, 1.5f, 9.0f, NAN};
    float y[6];
    k->unary(QP_EW_RELU, 0, 0, x, y, 6);
    CHECK(y[0] == 0.0f && y[3] == 1.5f && isnan(y[5]) == 0 && y[5] == 0.0f);
    CHECK_INT(bits(y[1]), 0); /* relu(-0) is +0 */
    /* HardSwish: x * clamp(x/6 + 0.5, 0, 1): -2 * (1/6) = -1/3 */
    k->unary(QP_EW_HSWISH, 0, 0, x, y, 6);
    CHECK_NEAR(y[0], -2.0 * (-2.0f * (1.0f / 6.0f) + 0.5f), 1e-7);
    CHECK(y[4] == 9.0f && isnan(y[5]));
    /* Clip keeps NaN and -0; bounds alpha..beta */
    k->unary(QP_EW_CLIP, -1.0f, 6.0f, x, y, 6);
    CHECK(y[0] == -1.0f && y[3] == 1.5f && y[4] == 6.0f && isnan(y[5]));
    CHECK_INT(bits(y[1]), 0x80000000u);
    /* HardSigmoid alpha 0.2, beta 0.5 */
    k->unary(QP_EW_HSIGMOID, 0.2f, 0.5f, x, y, 6);
    CHECK(y[0] == 0.2f * -2.0f + 0.5f && y[4] == 1.0f);
    k->unary(QP_EW_LEAKY, 0.1f, 0, x, y, 6);
    CHECK(y[0] == 0.1f * -2.0f && y[3] == 1.5f);
    k->unary(QP_EW_RECIP, 0, 0, x + 3, y, 1);
    CHECK(y[0] == 1.0f / 1.5f);
    /* in place */
    float z[3] = {4.0f, 9.0f, 16.0f};
    k->unary(QP_EW_SQRT, 0, 0, z, z, 3);
    CHECK(z[0] == 2.0f && z[1] == 3.0f && z[2] == 4.0f);
}

QP_TEST(eltwise_ref_binary_values_and_broadcast_operands)
{
    const struct qp_ew_f32 *k = &qp_ew_f32_ref;
    const float a[4] = {1.0f, -2.0f, NAN, 6.0f}, b[4] = {3.0f, 4.0f, 1.0f, NAN};
    float o[4];
    k->binary(QP_EW_DIV, a, true, b, true, o, 4);
    CHECK(o[0] == 1.0f / 3.0f && o[1] == -0.5f && isnan(o[2]) && isnan(o[3]));
    /* Max: a NaN on the left wins, on the right loses */
    k->binary(QP_EW_MAX, a, true, b, true, o, 4);
    CHECK(o[0] == 3.0f && o[1] == 4.0f && isnan(o[2]) && isnan(o[3]));
    k->binary(QP_EW_MIN, b, true, a, true, o, 4);
    CHECK(o[0] == 1.0f && o[1] == -2.0f && isnan(o[2]) && isnan(o[3]));
    /* one value on either side, or both */
    const float six = 6.0f;
    k->binary(QP_EW_SUB, a, true, &six, false, o, 2);
    CHECK(o[0] == -5.0f && o[1] == -8.0f);
    k->binary(QP_EW_SUB, &six, false, a, true, o, 2);
    CHECK(o[0] == 5.0f && o[1] == 8.0f);
    k->binary(QP_EW_MUL, &six, false, &six, false, o, 4);
    CHECK(o[0] == 36.0f && o[3] == 36.0f);
    k->binary(QP_EW_POW, b, true, b, true, o, 2);
    CHECK(o[0] == 27.0f && o[1] == 256.0f);
}

/* Specials, then random bit patterns of every exponent, then ordinary
 * values near the activations' kinks. */
static void fill(float *x, size_t n, uint64_t seed)
{
    static const uint32_t special[] = {
        0x00000000u, 0x80000000u, 0x7f800000u, 0xff800000u, 0x7fc00000u,
        0xffc00001u, 0x00000001u, 0x80000001u, 0x007fffffu, 0x3f800000u,
        0xbf800000u, 0x40400000u, 0xc0400000u, 0x40c00000u, 0xc0c00000u,
        0x7f7fffffu, 0xff7fffffu};
    size_t ns = sizeof special / sizeof special[0];
    uint64_t s = seed;
    for (size_t i = 0; i < n; i++) {
        if (i < ns)
            x[i] = from_bits(special[i]);
        else if (i % 3 == 0)
            x[i] = from_bits((uint32_t)kt_next(&s));
        else
            x[i] = (float)kt_range(&s, -80000, 80000) / 8192.0f;
    }
}

QP_TEST(eltwise_simd_variants_match_the_reference_bit_for_bit)
{
    enum { N = 1000 };
    static float a[N], b[N], want[N], got[N];
    fill(a, N, 1);
    fill(b, N, 2);
    struct {
        enum qp_kern_isa isa;
        const struct qp_ew_f32 *k;
    } vars[2] = {{QP_KERN_REF, NULL}, {QP_KERN_REF, NULL}};
#if defined(__x86_64__)
    vars[0].isa = QP_KERN_AVX2;
    vars[0].k = &qp_ew_f32_avx2;
    vars[1].isa = QP_KERN_AVX512;
    vars[1].k = &qp_ew_f32_avx512;
#endif
    int compared = 0;
    for (int v = 0; v < 2; v++) {
        if (!vars[v].k || !qp_kern_isa_available(vars[v].isa))
            continue;
        const struct qp_ew_f32 *k = vars[v].k;
        for (int op = 0; op < QP_EW_UNARY_COUNT; op++) {
            float al = op == QP_EW_CLIP ? -1.5f : 0.3f;
            float be = op == QP_EW_CLIP ? 2.5f : 0.6f;
            /* odd lengths and offsets: vector bodies and scalar tails */
            qp_ew_f32_ref.unary((enum qp_ew_unary)op, al, be, a + 1, want, N - 3);
            k->unary((enum qp_ew_unary)op, al, be, a + 1, got, N - 3);
            int bad = 0;
            for (int i = 0; i < N - 3; i++)
                bad += !same(want[i], got[i]);
            if (bad)
                qp_test_failf(ctx, __FILE__, __LINE__, "%s unary op %d: %d of "
                              "%d differ", k->name, op, bad, N - 3);
            compared++;
        }
        for (int op = 0; op < QP_EW_BINARY_COUNT; op++)
            for (int pat = 0; pat < 4; pat++) {
                bool av = pat & 1, bv = pat & 2;
                qp_ew_f32_ref.binary((enum qp_ew_binary)op, a + 2, av, b + 5,
                                     bv, want, N - 7);
                k->binary((enum qp_ew_binary)op, a + 2, av, b + 5, bv, got,
                          N - 7);
                int bad = 0;
                for (int i = 0; i < N - 7; i++)
                    bad += !same(want[i], got[i]);
                if (bad)
                    qp_test_failf(ctx, __FILE__, __LINE__, "%s binary op %d "
                                  "pattern %d: %d differ", k->name, op, pat,
                                  bad);
                compared++;
            }
    }
    /* the dispatched variant is one of them (or the reference) */
    CHECK(qp_ew_f32() != NULL);
#if defined(__x86_64__)
    if (qp_kern_isa_available(QP_KERN_AVX2))
        CHECK(compared >= QP_EW_UNARY_COUNT + 4 * QP_EW_BINARY_COUNT);
#endif
}

QP_TEST(eltwise_unary_f64_forms)
{
    CHECK_NEAR(qp_ew_unary_f64(QP_EW_HSWISH, 0, 0, 3.0), 3.0 * (3.0 / 6 + 0.5), 0);
    CHECK_NEAR(qp_ew_unary_f64(QP_EW_ELU, 2.0f, 0, -1.0), 2.0 * (exp(-1.0) - 1), 1e-15);
    CHECK_NEAR(qp_ew_unary_f64(QP_EW_GELU, 0, 0, 1.0), 0.8413447460685429, 1e-15);
    CHECK_NEAR(qp_ew_unary_f64(QP_EW_CLIP, -1.0f, 1.0f, 5.0), 1.0, 0);
    CHECK_NEAR(qp_ew_unary_f64(QP_EW_LEAKY, 0.5f, 0, -4.0), -2.0, 0);
}

/* The variants this machine runs, the reference first; returns how many
 * (the chains' tests run every one). */
static int ew_variants(const struct qp_ew_f32 **v)
{
    int n = 0;
    v[n++] = &qp_ew_f32_ref;
#if defined(__x86_64__)
    if (qp_kern_isa_available(QP_KERN_AVX2))
        v[n++] = &qp_ew_f32_avx2;
    if (qp_kern_isa_available(QP_KERN_AVX512))
        v[n++] = &qp_ew_f32_avx512;
#endif
    return n;
}

/* The four loops hswish_chain stands for, run one after the other with
 * variant k (o = x * clip(x + add, lo, hi), then / d or * d). */
static void chain_by_steps(const struct qp_ew_f32 *k, const float *x, float add,
                           float lo, float hi, bool div, float d, float *t,
                           float *o, size_t n)
{
    k->binary(QP_EW_ADD, x, true, &add, false, t, n);
    k->unary(QP_EW_CLIP, lo, hi, t, t, n);
    k->binary(QP_EW_MUL, x, true, t, true, t, n);
    k->binary(div ? QP_EW_DIV : QP_EW_MUL, t, true, &d, false, o, n);
}

QP_TEST(eltwise_hswish_chain_is_the_four_loops_bit_for_bit)
{
    enum { N = 777 };
    static float x[N], t[N], want[N], got[N];
    fill(x, N, 3);
    x[0] = -3.0f; /* clip(0) = 0: -3 * 0 = -0 */
    x[1] = 3.0f;  /* clip(6) = 6: 3 * 6 / 6 = 3 */
    x[2] = NAN;
    x[3] = 1.0f;  /* 1 * 4 / 6 */
    const struct qp_ew_f32 *vars[3];
    int nv = ew_variants(vars);
    qp_ew_f32_ref.hswish_chain(x, 3.0f, 0.0f, 6.0f, true, 6.0f, got, 4);
    CHECK_INT(bits(got[0]), 0x80000000u);
    CHECK(got[1] == 3.0f && isnan(got[2]) && got[3] == 4.0f / 6.0f);
    for (int v = 0; v < nv; v++) {
        for (int div = 0; div < 2; div++) {
            float d = div ? 6.0f : 1.0f / 6.0f;
            /* odd length and offset: vector bodies and scalar tails */
            chain_by_steps(&qp_ew_f32_ref, x + 1, 3.0f, -0.5f, 6.0f, div, d, t,
                           want, N - 2);
            vars[v]->hswish_chain(x + 1, 3.0f, -0.5f, 6.0f, div, d, got, N - 2);
            int bad = 0;
            for (int i = 0; i < N - 2; i++)
                bad += !same(want[i], got[i]);
            if (bad)
                qp_test_failf(ctx, __FILE__, __LINE__, "%s div %d: %d of %d "
                              "differ", vars[v]->name, div, bad, N - 2);
            /* in place */
            memcpy(got, x + 1, (N - 2) * sizeof *got);
            vars[v]->hswish_chain(got, 3.0f, -0.5f, 6.0f, div, d, got, N - 2);
            CHECK(same(want[N / 2], got[N / 2]) && same(want[7], got[7]));
        }
    }
}

QP_TEST(eltwise_affine_is_mul_then_add_bit_for_bit)
{
    enum { N = 555 };
    static float x[N], want[N], got[N];
    fill(x, N, 4);
    const float a = 0.7f, b = -0.1f;
    /* two roundings, not one fused multiply-add: (1 + 2^-23)^2 rounds to
     * 1 + 2^-22, and adding -(1 + 2^-22) gives 0 (fused: 2^-46) */
    const float e = 1.0f + 0x1p-23f, p = -(1.0f + 0x1p-22f);
    const struct qp_ew_f32 *vars[3];
    int nv = ew_variants(vars);
    for (int v = 0; v < nv; v++) {
        qp_ew_f32_ref.binary(QP_EW_MUL, x + 3, true, &a, false, want, N - 5);
        qp_ew_f32_ref.binary(QP_EW_ADD, want, true, &b, false, want, N - 5);
        vars[v]->affine(x + 3, a, b, got, N - 5);
        float ee[17], eo[17];
        for (int i = 0; i < 17; i++)
            ee[i] = e;
        vars[v]->affine(ee, e, p, eo, 17);
        CHECK(eo[0] == 0.0f && eo[16] == 0.0f);
        int bad = 0;
        for (int i = 0; i < N - 5; i++)
            bad += !same(want[i], got[i]);
        if (bad)
            qp_test_failf(ctx, __FILE__, __LINE__, "%s: %d of %d differ",
                          vars[v]->name, bad, N - 5);
    }
}

/* ---- exp_shifted: a softmax's numerators expf(x - m), every variant the
 * C library's expf bit for bit (on inputs spread over every binade expf
 * does not saturate on, its overflow and underflow bounds, infinities
 * and NaN, the two floats, found by an exhaustive search, on which
 * glibc's FMA form of expf differs from the same steps without FMA), vector
 * tails and in place ---- */

/* Runs every variant on x[0..n) with m; counts results whose bits differ
 * from expf(x[i] - m) (any NaN matching any NaN), reporting the first. */
static int mismatches(struct qp_test_ctx *ctx, const float *x, size_t n, float m)
{
    const struct qp_ew_f32 *variants[4];
    int nv = ew_variants(variants);
    float *y = malloc((n + 1) * sizeof *y);
    int bad = 0;
    if (!y)
        return 1;
    for (int v = 0; v < nv; v++) {
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
    const struct qp_ew_f32 *variants[4];
    int nv = ew_variants(variants);
    for (int v = 0; v < nv; v++)
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
