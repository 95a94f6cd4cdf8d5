/* Live oracle: gemmlowp's own SaturatingRoundingDoublingHighMul,
 * RoundingDivideByPOT and ShiftLeft (libgemmlowp-dev, fixedpoint.h) against
 * the tflite-double, gemmlowp and cmsis-nn-double flavors on 10^7 random
 * (x, multiplier, shift) triples (QP_ORACLE_N >= 10^6 overrides; the
 * loop touches no memory, so even the sanitizer build runs 10^7 in well
 * under a second), plus exact 128-bit arithmetic against the
 * single-rounding and rndnu flavors.
 *
 * Built without -msse4.1/-mavx2 (the Makefile adds neither to .cc files):
 * fixedpoint_sse.h's SaturatingRoundingDoublingHighMul has a known
 * saturation bug, so the scalar templates must be the ones compiled here. */
#include <gemmlowp/fixedpoint/fixedpoint.h>

#if defined(GEMMLOWP_SSE4) || defined(GEMMLOWP_AVX2) || defined(GEMMLOWP_NEON)
#error "build the gemmlowp oracle without SSE4.1/AVX2/NEON (scalar fixedpoint.h only)"
#endif

#include <cstdint>
#include <cstdlib>

extern "C" {
#include "kernels/requant.h"
#include "tests/test.h"
}

namespace {

uint64_t next(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * UINT64_C(2685821657736338717);
}

/* x: edges, small values, values near the shift's overflow limit, or
 * uniform over int32 */
int32_t draw_x(uint64_t *s, int left)
{
    static const int32_t edges[] = {0, 1, -1, 2, -2, INT32_MAX, INT32_MIN,
                                    INT32_MAX - 1, INT32_MIN + 1, 1 << 30,
                                    -(1 << 30)};
    uint64_t r = next(s);
    switch (r % 8) {
    case 0: return edges[(r >> 8) % (sizeof edges / sizeof edges[0])];
    case 1: return (int32_t)((r >> 8) % 2001) - 1000;
    case 2: { /* around +-2^(31 - left), where the left shift overflows */
        int64_t lim = INT64_C(1) << (31 - left);
        int64_t v = lim + (int64_t)((r >> 8) % 9) - 4;
        v = (r >> 40) & 1 ? -v : v;
        return (int32_t)(v > INT32_MAX ? INT32_MAX : v < INT32_MIN ? INT32_MIN : v);
    }
    default: return (int32_t)(uint32_t)(r >> 16);
    }
}

/* multiplier: QuantizeMultiplier's range [2^30, 2^31) mostly, anything
 * (negatives, INT32_MIN) sometimes */
int32_t draw_m(uint64_t *s)
{
    uint64_t r = next(s);
    switch (r % 8) {
    case 0: return (int32_t)(uint32_t)(r >> 16);
    case 1: return (r >> 8) & 1 ? INT32_MIN : INT32_MAX;
    default: return (int32_t)((UINT32_C(1) << 30) + (uint32_t)((r >> 16) & 0x3FFFFFFF));
    }
}

long count_from_env(void)
{
    const char *e = getenv("QP_ORACLE_N");
    if (e && atol(e) >= 1000000)
        return atol(e);
    return 10000000;
}

} // namespace

QP_TEST(oracle_gemmlowp_fixedpoint)
{
    long n = count_from_env();
    uint64_t seed = UINT64_C(0x9E3779B97F4A7C15);
    long bad = 0, saturated = 0, wrapped = 0;
    for (long i = 0; i < n && bad < 5; i++) {
        int32_t shift = (int32_t)(next(&seed) % 62) - 31; /* [-31, 30] */
        int left = shift > 0 ? shift : 0, right = shift > 0 ? 0 : -shift;
        int32_t x = draw_x(&seed, left), m = draw_m(&seed);

        /* gemmlowp: saturating ShiftLeft (its scale stage) */
        int32_t g = gemmlowp::RoundingDivideByPOT(
            gemmlowp::SaturatingRoundingDoublingHighMul(gemmlowp::ShiftLeft(x, left), m),
            right);
        /* TFLite: x * (1 << left) in int32, which wraps on the targets it
         * runs on; the harness forms that product without UB */
        int32_t xs = (int32_t)((uint32_t)x << left);
        int32_t t = gemmlowp::RoundingDivideByPOT(
            gemmlowp::SaturatingRoundingDoublingHighMul(xs, m), right);
        /* CMSIS-NN differs only where gemmlowp saturates INT32_MIN^2 */
        bool sat = xs == INT32_MIN && m == INT32_MIN;
        int32_t c = sat ? gemmlowp::RoundingDivideByPOT(INT32_MIN, right) : t;
        saturated += sat;
        wrapped += xs != gemmlowp::ShiftLeft(x, left);

        int32_t og = qp_rq_scale_fixed(QP_RQ_GEMMLOWP, x, m, shift);
        int32_t ot = qp_rq_scale_fixed(QP_RQ_TFLITE_DOUBLE, x, m, shift);
        int32_t oc = qp_rq_scale_fixed(QP_RQ_CMSIS_NN_DOUBLE, x, m, shift);
        if (og != g || ot != t || oc != c) {
            bad++;
            qp_test_failf(ctx, __FILE__, __LINE__,
                          "x %d m %d shift %d: gemmlowp %d/%d tflite %d/%d cmsis %d/%d",
                          x, m, shift, og, g, ot, t, oc, c);
        }
    }
    CHECK_INT(bad, 0);
    /* the draws reached the overflow paths */
    CHECK(wrapped > n / 100);
    CHECK(saturated > 0);
}

/* round half up of v / 2^k in exact arithmetic */
static __int128 round_up_div(__int128 v, int k)
{
    __int128 d = (__int128)1 << k;
    __int128 q = v / d, r = v % d;
    if (r < 0) {
        q -= 1;
        r += d;
    }
    return q + (2 * r >= d ? 1 : 0);
}

QP_TEST(oracle_exact_single_rounding_and_rndnu)
{
    long n = count_from_env() / 4;
    uint64_t seed = UINT64_C(0xD1B54A32D192ED03);
    long bad = 0, rndnu_checked = 0;
    for (long i = 0; i < n && bad < 5; i++) {
        int32_t shift = (int32_t)(next(&seed) % 62) - 31;
        int32_t x = draw_x(&seed, shift > 0 ? shift : 0), m = draw_m(&seed);
        /* tflite-single: x * M * 2^(shift-31) rounded half up, narrowed
         * modulo 2^32 when it does not fit */
        __int128 e = round_up_div((__int128)x * m, 31 - shift);
        int32_t want = (int32_t)(uint32_t)(uint64_t)(int64_t)e;
        int32_t got = qp_rq_scale_fixed(QP_RQ_TFLITE_SINGLE, x, m, shift);
        /* cmsis-nn-single: the same value for every input */
        int32_t gc = qp_rq_scale_fixed(QP_RQ_CMSIS_NN_SINGLE, x, m, shift);
        if (got != want || gc != want) {
            bad++;
            qp_test_failf(ctx, __FILE__, __LINE__, "single x %d m %d shift %d: %d %d, want %d",
                          x, m, shift, got, gc, want);
        }
        /* xnnpack-rndnu (multiplier >= 0, shift <= 8): exact when the
         * saturating pre-shift does not saturate */
        if (m >= 0 && shift <= 8) {
            int pre = shift >= 0 ? shift + 1 : 0; /* post = max(-shift, 1) */
            int64_t xp = (int64_t)x * (INT64_C(1) << pre);
            if (xp >= INT32_MIN && xp <= INT32_MAX) {
                int32_t r = qp_rq_scale_fixed(QP_RQ_XNNPACK_RNDNU, x, m, shift);
                if (r != (int32_t)(int64_t)e) {
                    bad++;
                    qp_test_failf(ctx, __FILE__, __LINE__,
                                  "rndnu x %d m %d shift %d: %d, want %lld", x, m, shift, r,
                                  (long long)e);
                }
                rndnu_checked++;
            }
        }
    }
    CHECK_INT(bad, 0);
    CHECK(rndnu_checked > n / 4);
}
