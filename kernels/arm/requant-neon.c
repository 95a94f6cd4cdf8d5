/* kernels/arm/requant-neon.c: NEON requantization, 4 accumulators at a
 * time, bit-identical to kernels/ref/requant.c (tests/unit/
 * test-requant-simd.c and tests/aarch64/ compare them on random and
 * adversarial inputs). Advanced SIMD is part of the aarch64 base: no
 * run-time check is needed.
 *
 * Covered: tflite-double, cmsis-nn-double, gemmlowp, tflite-single,
 * cmsis-nn-single, xnnpack-fp32, ort, xnnpack-rndnu, onnx-ref. The int64
 * flavors run the reference, and so do tails (n % 4). NEON has the
 * gemmlowp/TFLite primitives as instructions: SQRDMULH is
 * SaturatingRoundingDoublingHighMul, SRSHL a rounding (half up) shift,
 * SQSHL a saturating left shift, SQDMULH XNNPACK's rndnu high multiply,
 * FCVTNS a float to int conversion rounding half to even. The flavor
 * dispatch and the row loop are kernels/x86/requant-simd-row.h, shared
 * with the x86 variants. Built with -ffp-contract=off (mk/neon.mk): a
 * multiply and an add must round separately, as in the reference. */
#include "kernels/ref/requant-impl.h"

#if defined(__aarch64__)
#include <arm_neon.h>
#include <string.h>

#define INLINE static inline __attribute__((always_inline))

/* a + b modulo 2^32. GCC implements vaddq_s32 as C vector arithmetic,
 * where signed overflow is undefined; the unsigned add wraps. */
INLINE int32x4_t add_wrap(int32x4_t a, int32x4_t b)
{
    return vreinterpretq_s32_u32(
        vaddq_u32(vreinterpretq_u32_s32(a), vreinterpretq_u32_s32(b)));
}

bool qp_rq_neon_covers(enum qp_rq_flavor f)
{
    return !qp_rq_flavor_acc64(f) && (unsigned)f < QP_RQ_COUNT;
}

/* tflite-double (sat_left 0, sat_mul 1), cmsis-nn-double (0, 0),
 * gemmlowp (1, 1): see scale_double/high_mul/div_pot in the reference. */
INLINE int32x4_t scale_double(int32x4_t x, int32x4_t m, int32x4_t sh,
                              bool sat_left, bool sat_mul, bool no_left)
{
    const int32x4_t zero = vdupq_n_s32(0);
    int32x4_t nright = sh, xs = x; /* no_left: every shift <= 0 */
    if (!no_left) {
        int32x4_t left = vmaxq_s32(sh, zero);
        nright = vminq_s32(sh, zero); /* -right, in [-31, 0] */
        /* gemmlowp's ShiftLeft saturates (SQSHL); TFLite's and CMSIS-NN's
         * x * (1 << left) wraps (SSHL keeps the low 32 bits) */
        xs = sat_left ? vqshlq_s32(x, left) : vshlq_s32(x, left);
    }
    /* SQRDMULH: sat((2 xs m + 2^31) >> 32) = floor((xs m + 2^30) / 2^31),
     * gemmlowp's nudged quotient for either sign; it saturates only
     * INT32_MIN * INT32_MIN, to INT32_MAX as gemmlowp does. CMSIS-NN's
     * no_sat form wraps that one product to INT32_MIN instead. */
    int32x4_t h = vqrdmulhq_s32(xs, m);
    if (!sat_mul) {
        const int32x4_t min = vdupq_n_s32(INT32_MIN);
        uint32x4_t both = vandq_u32(vceqq_s32(xs, min), vceqq_s32(m, min));
        h = vbslq_s32(both, min, h);
    }
    /* RoundingDivideByPOT, half away from zero, as gemmlowp's NEON path:
     * SRSHL rounds half up, so a negative h first loses 1 when right > 0
     * (h & -right has the sign bit exactly then). Ties of negative h move
     * down to the rounded-away value; non-ties keep their rounding since
     * |rem| < 2^(right-1) stays <= after the -1. The saturating add only
     * saturates at h = INT32_MIN, where the remainder is 0 anyway. */
    int32x4_t fixup = vshrq_n_s32(vandq_s32(h, nright), 31);
    return vrshlq_s32(vqaddq_s32(h, fixup), nright);
}

/* tflite-single and cmsis-nn-single (scale_single in the reference):
 * 64-bit products; total = 31 - shift in [1, 62]. */
INLINE int32x4_t scale_single(int32x4_t x, int32x4_t m, int32x4_t sh)
{
    int64x2_t plo = vmull_s32(vget_low_s32(x), vget_low_s32(m));
    int64x2_t phi = vmull_high_s32(x, m);
    int32x4_t n = vsubq_s32(sh, vdupq_n_s32(31)); /* -(total) */
    int64x2_t nlo = vmovl_s32(vget_low_s32(n)), nhi = vmovl_high_s32(n);
    /* SRSHL: (p + 2^(total-1)) >> total, computed without overflow like
     * the reference's int64 sum (|p| <= 2^62); XTN narrows mod 2^32 like
     * its final narrowing */
    return vmovn_high_s64(vmovn_s64(vrshlq_s64(plo, nlo)),
                          vrshlq_s64(phi, nhi));
}

/* xnnpack-rndnu (scale_rndnu in the reference), the instructions
 * XNNPACK's NEON kernels use: SQSHL by pre, SQDMULH, SRSHL by -post. */
INLINE int32x4_t scale_rndnu(int32x4_t x, int32x4_t m, int32x4_t sh)
{
    int32x4_t xs = vnegq_s32(sh); /* XNNPACK's shift, in [-8, 31] */
    int32x4_t post = vmaxq_s32(xs, vdupq_n_s32(1));
    int32x4_t pre = vsubq_s32(post, xs);
    int32x4_t h = vqdmulhq_s32(vqshlq_s32(x, pre), m);
    return vrshlq_s32(h, vnegq_s32(post));
}

struct params {
    int32x4_t zp, qmin, qmax;
    float32x4_t lo, hi;            /* float clamp, qmin - zp and qmax - zp */
    float64x2_t dlo, dhi, dzp;     /* onnx-ref */
};

INLINE void params_init(struct params *p, const struct qp_rq *rq)
{
    p->zp = vdupq_n_s32(rq->zero_point);
    p->qmin = vdupq_n_s32(rq->qmin);
    p->qmax = vdupq_n_s32(rq->qmax);
    p->lo = vdupq_n_f32((float)(rq->qmin - rq->zero_point));
    p->hi = vdupq_n_f32((float)(rq->qmax - rq->zero_point));
    p->dlo = vdupq_n_f64(rq->qmin);
    p->dhi = vdupq_n_f64(rq->qmax);
    p->dzp = vdupq_n_f64(rq->zero_point);
}

INLINE int32x4_t v_load(const int32_t *a)
{
    return vld1q_s32(a);
}

INLINE int32x4_t v_loadi(const int32_t *a, size_t k, bool per)
{
    return per ? vld1q_s32(a + k) : vdupq_n_s32(a[k]);
}

INLINE int32x4_t v_add(int32x4_t a, int32x4_t b)
{
    return add_wrap(a, b); /* the zero point: wraps like the reference */
}

INLINE int32x4_t clamp(int32x4_t v, const struct params *p)
{
    return vminq_s32(vmaxq_s32(v, p->qmin), p->qmax);
}

/* xnnpack-fp32 / ort: float(x) * scale (SCVTF rounds like the C cast),
 * clamp, FCVTNS (round half to even), + zp */
INLINE int32x4_t requant_float(int32x4_t x, const float *sc, size_t k,
                               bool per, const struct params *p)
{
    float32x4_t s = per ? vld1q_f32(sc + k) : vdupq_n_f32(sc[k]);
    float32x4_t f = vmulq_f32(vcvtq_f32_s32(x), s);
    f = vminq_f32(vmaxq_f32(f, p->lo), p->hi);
    return vaddq_s32(vcvtnq_s32_f32(f), p->zp);
}

/* onnx-ref on two lanes: double product + zp, clip, round half to even */
INLINE int32x2_t requant_double2(int32x2_t x, float64x2_t s,
                                 const struct params *p)
{
    float64x2_t d = vmulq_f64(vcvtq_f64_s64(vmovl_s32(x)), s);
    d = vaddq_f64(d, p->dzp);
    d = vminq_f64(vmaxq_f64(d, p->dlo), p->dhi);
    return vmovn_s64(vcvtnq_s64_f64(d));
}

INLINE int32x4_t requant_onnx(int32x4_t x, const double *sc, size_t k,
                              bool per, const struct params *p)
{
    float64x2_t s0 = per ? vld1q_f64(sc + k) : vdupq_n_f64(sc[k]);
    float64x2_t s1 = per ? vld1q_f64(sc + k + 2) : s0;
    return vcombine_s32(requant_double2(vget_low_s32(x), s0, p),
                        requant_double2(vget_high_s32(x), s1, p));
}

/* v is clamped inside the output dtype: the narrowing moves are exact
 * (uint8 values keep their low 8 bits) */
INLINE void store(enum qp_dtype dt, void *out, size_t i, int32x4_t v)
{
    int16x4_t h = vmovn_s32(v);
    if (dt == QP_DTYPE_I16) {
        vst1_s16((int16_t *)out + i, h);
        return;
    }
    int8x8_t b = vmovn_s16(vcombine_s16(h, h));
    uint32_t w = vget_lane_u32(vreinterpret_u32_s8(b), 0);
    memcpy((uint8_t *)out + i, &w, 4);
}

#define VI int32x4_t
#define LANES 4
#define ROW_FN qp_rq_row_neon
#include "kernels/x86/requant-simd-row.h"
#else
/* not aarch64: nothing to build (ISO C wants a declaration) */
typedef int qp_rq_neon_unused;
#endif
