/* The SIMD requantization variants against the reference, byte for byte:
 * every covered flavor, output dtype and layout (per-tensor, per-channel,
 * planes, ragged tails) on random and adversarial inputs (int32 extremes,
 * exact ties, left-shift overflows, saturating multipliers, clamps), and
 * with every shift <= 0 (the rows that leave the saturation checks out). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/requant.h"
#include "tests/test.h"
#include "tests/unit/test-requant.h"

static int32_t draw_acc(uint64_t *s)
{
    static const int32_t edges[] = {0, 1, -1, 3, -3, 5, -5, INT32_MAX, INT32_MIN,
                                    INT32_MAX - 1, INT32_MIN + 1, 1 << 30, -(1 << 30),
                                    (1 << 24) + 1, -(1 << 24) - 3, 1 << 29, 3 << 28};
    uint64_t r = test_rand(s);
    switch (r % 6) {
    case 0: return edges[(r >> 8) % (sizeof edges / sizeof edges[0])];
    case 1: return (int32_t)((r >> 8) % 4001) - 2000;
    case 2: return (int32_t)((r >> 8) % 2000001) - 1000000;
    default: return (int32_t)(uint32_t)(r >> 20);
    }
}

/* Parameters for channel c of flavor f: multipliers over the whole int32
 * range for the TFLite-family flavors (negatives and INT32_MIN are outside
 * the contract, but the arithmetic is defined and must agree), exact
 * powers of two for ties, float scales across each flavor's limits. */
static void draw_params(enum qp_rq_flavor f, uint64_t *s, int32_t *m,
                        int32_t *sh, double *sc)
{
    int32_t lo, hi;
    qp_rq_shift_range(f, &lo, &hi);
    uint64_t r = test_rand(s);
    *sh = lo + (int32_t)((r >> 8) % (uint64_t)(hi - lo + 1));
    switch ((r >> 32) % 4) {
    case 0: *m = 1 << 30; break;
    case 1: *m = (int32_t)(uint32_t)(test_rand(s) >> 32); break;
    case 2: *m = (r >> 40) & 1 ? INT32_MIN : INT32_MAX; break;
    default: *m = (int32_t)((1u << 30) | (uint32_t)(test_rand(s) >> 34)); break;
    }
    if (f == QP_RQ_XNNPACK_RNDNU && *m < 0)
        *m = (int32_t)((uint32_t)*m & 0x7FFFFFFF);
    /* float scales: 2^e * (1 + u), e in [-30, 7] (XNNPACK's range), with
     * exact powers of two a quarter of the time (ties) */
    int e = -30 + (int)((r >> 16) % 38);
    double u = (r >> 48) % 4 == 0 ? 0.0 : (double)(test_rand(s) >> 11) * 0x1p-53;
    *sc = ldexp(1.0 + u, e);
    if (*sc >= 256.0)
        *sc = 255.5;
}

static bool dtype_ok(enum qp_rq_flavor f, enum qp_dtype dt)
{
    return dt != QP_DTYPE_I16 ||
           (f != QP_RQ_XNNPACK_FP32 && f != QP_RQ_XNNPACK_RNDNU);
}

/* right: every shift <= 0 and no multiplier INT32_MIN (the SIMD rows'
 * right_only path, which leaves the saturation checks out) */
static bool prepare_random(struct qp_test_ctx *ctx, enum qp_rq_flavor f,
                           enum qp_dtype dt, size_t channels, bool right,
                           uint64_t *s, struct qp_rq *rq)
{
    int32_t m[64], sh[64];
    double sc[64];
    for (size_t c = 0; c < channels; c++) {
        draw_params(f, s, &m[c], &sh[c], &sc[c]);
        if (right) {
            sh[c] = sh[c] > 0 ? -sh[c] : sh[c];
            m[c] = m[c] == INT32_MIN ? INT32_MIN + 1 : m[c];
        }
    }
    const struct qp_dtype_traits *tr = qp_dtype_traits(dt);
    int64_t span = tr->max - tr->min;
    uint64_t r = test_rand(s);
    int32_t zp = (int32_t)(tr->min + (int64_t)(r % (uint64_t)(span + 1)));
    int32_t qmin = (int32_t)tr->min, qmax = (int32_t)tr->max;
    if ((r >> 32) % 3 == 0) { /* an activation clamp inside the range */
        qmin = (int32_t)(tr->min + (int64_t)((r >> 40) % (uint64_t)(span / 2)));
        qmax = qmin + 1 + (int32_t)((r >> 20) % (uint64_t)(tr->max - qmin));
    }
    struct qp_error err;
    enum qp_status st = qp_rq_flavor_fixed(f)
        ? qp_rq_prepare_fixed(rq, f, m, sh, channels, zp, dt, qmin, qmax, &err)
        : qp_rq_prepare_float(rq, f, sc, channels, zp, dt, qmin, qmax, &err);
    CHECK_OK(st, &err);
    if (st == QP_OK && qp_rq_flavor_fixed(f) && right)
        CHECK(rq->right_only);
    return st == QP_OK;
}

static void compare_isa(struct qp_test_ctx *ctx, enum qp_rq_isa isa,
                        enum qp_rq_flavor f)
{
    static const enum qp_dtype dts[] = {QP_DTYPE_I8, QP_DTYPE_U8, QP_DTYPE_I16};
    static const size_t widths[] = {1, 7, 8, 16, 33, 64};
    uint64_t seed = 0x1234567ull + (uint64_t)f * 7919 + (uint64_t)isa;
    enum { ROWS = 9, MAXC = 64 };
    int32_t acc[ROWS * MAXC];
    uint8_t ref[ROWS * MAXC * 2], simd[ROWS * MAXC * 2];
    int bad = 0;
    for (int trial = 0; trial < 60 && bad < 3; trial++) {
        for (size_t d = 0; d < 3; d++) {
            if (!dtype_ok(f, dts[d]))
                continue;
            size_t cols = widths[(size_t)trial % 6];
            size_t channels = trial % 2 ? cols : 1;
            struct qp_rq rq;
            if (!prepare_random(ctx, f, dts[d], channels, trial / 2 % 2, &seed, &rq))
                return;
            for (size_t i = 0; i < ROWS * cols; i++)
                acc[i] = draw_acc(&seed);
            size_t bytes = ROWS * cols * (dts[d] == QP_DTYPE_I16 ? 2 : 1);
            memset(ref, 0xA5, sizeof ref);
            memset(simd, 0x5A, sizeof simd);
            qp_rq_apply_i32_isa(QP_RQ_ISA_REF, &rq, acc, ROWS, cols, ref);
            qp_rq_apply_i32_isa(isa, &rq, acc, ROWS, cols, simd);
            if (memcmp(ref, simd, bytes) && bad++ < 3) {
                size_t i = 0;
                while (ref[i] == simd[i])
                    i++;
                qp_test_failf(ctx, __FILE__, __LINE__,
                              "%s %s %s cols %zu: byte %zu differs (acc %d)",
                              qp_rq_isa_name(isa), qp_rq_flavor_name(f),
                              qp_dtype_name(dts[d]), cols, i,
                              acc[i / (dts[d] == QP_DTYPE_I16 ? 2 : 1)]);
            }
            /* one plane of the last channel, of a tail past whole
             * vectors and of less than one (the masked tails); the bytes
             * past it untouched */
            size_t c = channels - 1, es = dts[d] == QP_DTYPE_I16 ? 2 : 1;
            for (size_t i = 0; i < 64; i++)
                acc[i] = draw_acc(&seed);
            for (size_t len = 13; len <= 37; len += 24) {
                memset(ref, 0xA5, sizeof ref);
                memset(simd, 0xA5, sizeof simd);
                qp_rq_apply_plane_isa(QP_RQ_ISA_REF, &rq, c, acc, len, ref);
                qp_rq_apply_plane_isa(isa, &rq, c, acc, len, simd);
                size_t i = 0;
                while (i < 64 * es && ref[i] == simd[i])
                    i++;
                if (i < 64 * es && bad++ < 3)
                    qp_test_failf(ctx, __FILE__, __LINE__,
                                  "%s %s %s plane of %zu: byte %zu differs",
                                  qp_rq_isa_name(isa), qp_rq_flavor_name(f),
                                  qp_dtype_name(dts[d]), len, i);
            }
            qp_rq_release(&rq);
        }
    }
}

QP_TEST(requant_simd_matches_reference)
{
    int compared = 0;
    for (int isa = 1; isa < QP_RQ_ISA_COUNT; isa++) {
        if (!qp_rq_isa_available((enum qp_rq_isa)isa))
            continue;
        for (int f = 0; f < QP_RQ_COUNT; f++) {
            if (!qp_rq_isa_covers((enum qp_rq_isa)isa, (enum qp_rq_flavor)f))
                continue;
            compare_isa(ctx, (enum qp_rq_isa)isa, (enum qp_rq_flavor)f);
            compared++;
        }
    }
    /* on an x86-64 machine with AVX2 every int32 flavor has a SIMD path */
#if defined(__x86_64__)
    if (qp_rq_isa_available(QP_RQ_ISA_AVX2))
        CHECK(compared >= 9);
#endif
    (void)compared;
}

QP_TEST(requant_variant_choice)
{
    const char *v = qp_rq_variant();
    bool known = false;
    for (int isa = 0; isa < QP_RQ_ISA_COUNT; isa++)
        known |= !strcmp(v, qp_rq_isa_name((enum qp_rq_isa)isa));
    CHECK(known);
    const char *env = getenv("QP_KERNELS");
    if (env && !strcmp(env, "ref"))
        CHECK_STR(v, "ref");
    else if (qp_rq_isa_available(QP_RQ_ISA_AVX512))
        CHECK_STR(v, "avx512");
    else if (qp_rq_isa_available(QP_RQ_ISA_AVX2))
        CHECK_STR(v, "avx2");
    CHECK(qp_rq_isa_available(QP_RQ_ISA_REF));
    CHECK(!qp_rq_isa_covers(QP_RQ_ISA_REF, QP_RQ_TFLITE_DOUBLE));
}

/* right_only, from either way of preparing: scales below 1/2 give shifts
 * < 0, a channel of scale 3 (shift 2) does not, nor an INT32_MIN
 * multiplier. */
QP_TEST(requant_right_only_from_scales_and_fixed)
{
    struct qp_error err;
    struct qp_rq rq;
    float ws[3] = {0.001f, 0.002f, 0.003f};
    CHECK_OK(qp_rq_prepare_scales(&rq, QP_RQ_TFLITE_DOUBLE, 0.05f, ws, 3, 0.1f, 0,
                                  QP_DTYPE_I8, -128, 127, &err), &err);
    CHECK(rq.right_only);
    qp_rq_release(&rq);
    ws[2] = 6.0f; /* 0.05 * 6 / 0.1 = 3: shift 2 */
    CHECK_OK(qp_rq_prepare_scales(&rq, QP_RQ_TFLITE_DOUBLE, 0.05f, ws, 3, 0.1f, 0,
                                  QP_DTYPE_I8, -128, 127, &err), &err);
    CHECK(!rq.right_only);
    CHECK_INT(rq.shift[2], 2);
    qp_rq_release(&rq);
    int32_t m[2] = {1 << 30, INT32_MIN}, sh[2] = {-3, -1};
    CHECK_OK(qp_rq_prepare_fixed(&rq, QP_RQ_GEMMLOWP, m, sh, 1, 0, QP_DTYPE_I8,
                                 -128, 127, &err), &err);
    CHECK(rq.right_only);
    qp_rq_release(&rq);
    CHECK_OK(qp_rq_prepare_fixed(&rq, QP_RQ_GEMMLOWP, m, sh, 2, 0, QP_DTYPE_I8,
                                 -128, 127, &err), &err);
    CHECK(!rq.right_only); /* INT32_MIN */
    qp_rq_release(&rq);
}
