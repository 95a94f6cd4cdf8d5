/* kernels/ref/requant.c: the reference arithmetic of every requantization
 * flavor (the specification the SIMD variants are tested against).
 *
 * Each flavor's scaling step is one static function that also records its
 * intermediates when given a trace (qp_rq_explain); with a NULL trace the
 * recording compiles away. Overflow reasoning sits next to the arithmetic,
 * TFLite Micro style. Where a runtime's C/C++ has undefined or
 * implementation-defined behavior outside its input contract (signed
 * overflow, narrowing), we reproduce what its compiled code does on a
 * two's-complement target: wrapping modulo 2^32 / 2^64, arithmetic right
 * shifts. */
#include <float.h>
#include <string.h>

#include "kernels/ref/requant-impl.h"
#include "kernels/requant.h"

#if FLT_EVAL_METHOD != 0
#error "requant: float arithmetic must be evaluated in its own type (SSE, not x87)"
#endif
_Static_assert((-1 >> 1) == -1, "right shifts of negative values must be arithmetic");

/* ---- trace recording ---- */

static inline void tr_i(struct qp_rq_trace *t, const char *what, int64_t v)
{
    if (t && t->n < QP_RQ_TRACE_MAX)
        t->step[t->n++] = (struct qp_rq_step){what, false, v, 0.0};
}

static inline void tr_f(struct qp_rq_trace *t, const char *what, double v)
{
    if (t && t->n < QP_RQ_TRACE_MAX)
        t->step[t->n++] = (struct qp_rq_step){what, true, 0, v};
}

/* ---- integer helpers ---- */

/* Narrowing modulo 2^32: what static_cast<int32_t> of an int64 does on
 * every compiler these runtimes are built with (C calls the conversion
 * implementation-defined; gcc and clang define it as modulo). */
static inline int32_t wrap32(int64_t v)
{
    return (int32_t)(uint32_t)(uint64_t)v;
}

static inline int32_t sat32(int64_t v)
{
    return v < INT32_MIN ? INT32_MIN : v > INT32_MAX ? INT32_MAX : (int32_t)v;
}

static inline int32_t clamp32(int32_t v, int32_t lo, int32_t hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

/* gemmlowp SaturatingRoundingDoublingHighMul(a, b) (= ARM VQRDMULH):
 * a*b / 2^31 rounded half up. |a*b| <= 2^62 fits int64 and the nudged
 * quotient fits int32 except for INT32_MIN * INT32_MIN = 2^62, whose
 * rounded high half 2^31 does not: gemmlowp saturates it to INT32_MAX,
 * CMSIS-NN's arm_nn_doubling_high_mult_no_sat (which adds 2^30 and shifts
 * arithmetically, the same rounding) lets it wrap to INT32_MIN. */
static inline int32_t high_mul(int32_t a, int32_t b, bool saturate,
                               struct qp_rq_trace *t)
{
    int64_t ab = (int64_t)a * b;
    tr_i(t, "product = x' * multiplier", ab);
    if (!saturate) {
        tr_i(t, "nudge (CMSIS-NN no_sat: always +2^30)", INT64_C(1) << 30);
        int32_t h = wrap32((ab + (INT64_C(1) << 30)) >> 31);
        tr_i(t, "high = (product + nudge) >> 31, 32 bits kept", h);
        return h;
    }
    int64_t nudge = ab >= 0 ? (1 << 30) : 1 - (1 << 30);
    tr_i(t, "nudge (gemmlowp: 2^30, or 1-2^30 when product < 0)", nudge);
    if (a == INT32_MIN && b == INT32_MIN) {
        tr_i(t, "high: both INT32_MIN, saturated", INT32_MAX);
        return INT32_MAX;
    }
    int32_t h = (int32_t)((ab + nudge) / (INT64_C(1) << 31));
    tr_i(t, "high = (product + nudge) / 2^31, truncating", h);
    return h;
}

/* gemmlowp RoundingDivideByPOT(x, e), e in [0, 31] (= CMSIS-NN
 * arm_nn_divide_by_power_of_two): x / 2^e rounded half away from zero.
 * mask = 2^e - 1 is formed in 64 bits as gemmlowp does, so e = 31 gives
 * 0x7fffffff; q + 1 cannot overflow since q <= INT32_MAX >> e and the +1
 * needs e >= 1. */
static inline int32_t div_pot(int32_t x, int e, struct qp_rq_trace *t)
{
    int32_t mask = (int32_t)((INT64_C(1) << e) - 1);
    int32_t rem = x & mask;
    int32_t threshold = (mask >> 1) + (x < 0 ? 1 : 0);
    int32_t q = x >> e;
    tr_i(t, "right shift r", e);
    tr_i(t, "remainder = high & (2^r - 1)", rem);
    tr_i(t, "threshold = (2^r - 1) >> 1, +1 when high < 0", threshold);
    tr_i(t, "high >> r", q);
    int32_t r = q + (rem > threshold ? 1 : 0);
    tr_i(t, "scaled = (high >> r) + (remainder > threshold)", r);
    return r;
}

/* ---- the scaling step of each fixed-point flavor ---- */

/* tflite-double, cmsis-nn-double, gemmlowp: SRDHM(x * 2^left, M) then
 * RoundingDivideByPOT by right. shift in [-31, 30], so left <= 30 and
 * right <= 31, in contract; a larger left (the multiplier of scales a
 * file gave) is defined as below, as the vector variants compute it. */
static inline int32_t scale_double(int32_t x, int32_t m, int32_t shift,
                                   bool sat_left, bool sat_mul,
                                   struct qp_rq_trace *t)
{
    int left = shift > 0 ? shift : 0;
    int right = shift > 0 ? 0 : -shift;
    int32_t xs;
    tr_i(t, "left shift l", left);
    if (sat_left) {
        /* gemmlowp ShiftLeft: x * 2^l in int64 (|x| 2^30 < 2^62),
         * saturated to int32. */
        xs = left < 32 ? sat32((int64_t)x * (INT64_C(1) << left))
                       : x > 0 ? INT32_MAX : x < 0 ? INT32_MIN : 0;
        tr_i(t, "x' = x * 2^l, saturated to int32", xs);
    } else {
        /* TFLite x * (1 << left), CMSIS-NN val * (1 << LEFT_SHIFT(shift)):
         * an int32 multiply whose overflow is undefined in C/C++ and that
         * compilers emit as imul/lsl, wrapping modulo 2^32. We wrap too
         * (in-contract inputs never overflow here), to 0 from a shift of
         * 32 on (a file's scales can ask for any; vector shifts give 0). */
        xs = left < 32 ? (int32_t)((uint32_t)x << left) : 0;
        tr_i(t, "x' = x * 2^l, int32 (wraps on overflow)", xs);
    }
    int32_t h = high_mul(xs, m, sat_mul, t);
    return div_pot(h, right, t);
}

/* tflite-single and cmsis-nn-single: one rounding of x * M / 2^(31-shift),
 * half up. shift in [-31, 30] so total = 31 - shift is in [1, 62]; |x * M|
 * <= 2^62 and the rounding term <= 2^61, so the int64 sum cannot overflow.
 * TFLite adds 2^(total-1) and shifts by total; CMSIS-NN's
 * arm_nn_requantize shifts by total - 1, adds 1 and shifts by 1, all in
 * int64 (floor(floor(p / 2^(t-1)) + 1) / 2) = floor((p + 2^(t-1)) / 2^t)):
 * the same value for every input. Both narrow the int64 result to int32
 * only at the end (TFLite DCHECKs that it fits, CMSIS-NN does not check;
 * release builds wrap modulo 2^32). tests/golden/requant-extremes/ holds
 * both runtimes' values on the int32 extremes. */
static inline int32_t scale_single(int32_t x, int32_t m, int32_t shift,
                                   struct qp_rq_trace *t)
{
    int64_t prod = (int64_t)x * m;
    int total = 31 - shift;
    tr_i(t, "product = x * multiplier", prod);
    tr_i(t, "total right shift = 31 - shift", total);
    int64_t round = INT64_C(1) << (total - 1);
    tr_i(t, "rounding term = 2^(total-1)", round);
    int64_t r = (prod + round) >> total;
    tr_i(t, "(product + rounding) >> total, int64", r);
    int32_t s = wrap32(r);
    tr_i(t, "scaled = int32 narrowing (wraps)", s);
    return s;
}

/* REDUCE_MULTIPLIER of TFLite's int64 path and CMSIS-NN: Q31 -> Q15,
 * rounded half up; from 0x7FFF0000 on the rounding would reach 2^15, so it
 * saturates to 0x7FFF. m + 2^15 cannot overflow below 0x7FFF0000. */
static inline int32_t reduce_multiplier(int32_t m)
{
    return m < 0x7FFF0000 ? (m + (1 << 15)) >> 16 : 0x7FFF;
}

/* tflite-int64-* and cmsis-nn-s64: int64 x (contract [-2^47, 2^47)), the
 * 15-bit reduced multiplier, shift in [-31, 7]. In contract |x * red| <
 * 2^62; outside, the runtimes' 64-bit multiply wraps modulo 2^64 and so
 * does ours (unsigned arithmetic). */
static inline int32_t scale_int64(int64_t x, int32_t m, int32_t shift,
                                  bool cmsis, struct qp_rq_trace *t)
{
    int32_t red = reduce_multiplier(m);
    tr_i(t, "reduced multiplier (Q15)", red);
    int64_t prod = (int64_t)((uint64_t)x * (uint64_t)(int64_t)red);
    tr_i(t, "product = x * reduced (int64, wraps)", prod);
    if (!cmsis) {
        int total = 15 - shift; /* [8, 46] */
        int64_t round = INT64_C(1) << (total - 1);
        tr_i(t, "total right shift = 15 - shift", total);
        tr_i(t, "rounding term = 2^(total-1)", round);
        int64_t r = (int64_t)((uint64_t)prod + (uint64_t)round) >> total;
        tr_i(t, "(product + rounding) >> total, int64", r);
        /* TFLite narrows with an implicit/static cast: modulo 2^32 */
        int32_t s = wrap32(r);
        tr_i(t, "scaled = int32 narrowing (wraps)", s);
        return s;
    }
    /* arm_nn_requantize_s64: (int32)(prod >> (14 - shift)), then
     * (result + 1) >> 1: results with |r| >= 2^30 wrap (the documented
     * 64->32 bit reduction), INT32_MAX + 1 wraps. */
    int32_t r = wrap32(prod >> (14 - shift));
    tr_i(t, "product >> (14 - shift), truncated to 32 bits", r);
    int32_t s = (int32_t)((uint32_t)r + 1u) >> 1;
    tr_i(t, "scaled = (that + 1) >> 1", s);
    return s;
}

/* xnnpack-rndnu as XNNPACK's NEON qdmulh GEMM/IGEMM/DWCONV kernels compute
 * it (params from xnn_init_qs8_conv_minmax_rndnu_neon_params). With the
 * XNNPACK shift xs = -shift in [-8, 31]: post = max(xs, 1), pre = post - xs
 * in [0, 9];
 *   x'   = vqshlq_s32(x, pre)        saturating left shift
 *   high = vqdmulhq_s32(x', M)       floor(x' * M / 2^31); saturates only
 *                                    for INT32_MIN * INT32_MIN, impossible
 *                                    with M >= 0 (checked at prepare)
 *   r    = vrshlq_s32(high, -post)   rounding right shift, half up, no
 *                                    overflow: (high >> post) + bit post-1
 * floor then round-half-up equals one exact rounding of x * M * 2^(shift-31)
 * (floor(floor(y) / 2^p) = floor(y / 2^p)), the rndnu scalar semantics. */
static inline int32_t scale_rndnu(int32_t x, int32_t m, int32_t shift,
                                  struct qp_rq_trace *t)
{
    int xs = -shift;
    int post = xs > 1 ? xs : 1;
    int pre = post - xs;
    tr_i(t, "pre left shift (vqshl)", pre);
    int32_t xp = sat32((int64_t)x * (INT64_C(1) << pre));
    tr_i(t, "x' = x << pre, saturated", xp);
    int64_t prod = (int64_t)xp * m;
    tr_i(t, "product = x' * multiplier", prod);
    int32_t h = (int32_t)(prod >> 31); /* |prod| < 2^62: fits after >> 31 */
    tr_i(t, "high = product >> 31 (vqdmulh, floor)", h);
    tr_i(t, "post right shift (vrshl)", post);
    int32_t r = (h >> post) + ((h >> (post - 1)) & 1);
    tr_i(t, "scaled = (high >> post) + bit(post-1) of high", r);
    return r;
}

int32_t qp_rq_scale_fixed(enum qp_rq_flavor f, int64_t acc,
                          int32_t multiplier, int32_t shift)
{
    int32_t x = wrap32(acc);
    switch (f) {
    case QP_RQ_TFLITE_DOUBLE: return scale_double(x, multiplier, shift, false, true, NULL);
    case QP_RQ_CMSIS_NN_DOUBLE: return scale_double(x, multiplier, shift, false, false, NULL);
    case QP_RQ_GEMMLOWP: return scale_double(x, multiplier, shift, true, true, NULL);
    case QP_RQ_TFLITE_SINGLE: return scale_single(x, multiplier, shift, NULL);
    case QP_RQ_CMSIS_NN_SINGLE: return scale_single(x, multiplier, shift, NULL);
    case QP_RQ_TFLITE_INT64_DOUBLE:
    case QP_RQ_TFLITE_INT64_SINGLE: return scale_int64(acc, multiplier, shift, false, NULL);
    case QP_RQ_CMSIS_NN_S64: return scale_int64(acc, multiplier, shift, true, NULL);
    case QP_RQ_XNNPACK_RNDNU: return scale_rndnu(x, multiplier, shift, NULL);
    default: return 0;
    }
}

/* ---- epilogues ---- */

/* TFLite / CMSIS-NN / gemmlowp: out = scaled + zero point as an int32 add
 * (wrapping like the compiled code when scaled is near the int32 limits),
 * then max(qmin), min(qmax). */
static inline int32_t epilogue_int32(int32_t scaled, const struct qp_rq *rq,
                                     struct qp_rq_trace *t)
{
    int32_t o = (int32_t)((uint32_t)scaled + (uint32_t)rq->zero_point);
    tr_i(t, "+ zero point (int32 add)", o);
    o = clamp32(o, rq->qmin, rq->qmax);
    tr_i(t, "clamped to [qmin, qmax]", o);
    return o;
}

/* XNNPACK rndnu clamps scaled to [qmin - zp, qmax - zp] before adding the
 * zero point (or saturates in int16 first, the same result): no overflow. */
static inline int32_t epilogue_clamp_first(int32_t scaled, const struct qp_rq *rq,
                                           struct qp_rq_trace *t)
{
    int64_t o = (int64_t)scaled + rq->zero_point;
    tr_i(t, "+ zero point", o);
    int32_t c = o < rq->qmin ? rq->qmin : o > rq->qmax ? rq->qmax : (int32_t)o;
    tr_i(t, "clamped to [qmin, qmax]", c);
    return c;
}

/* xnnpack-fp32 and ort: float(x) * scale in float32 (float(x) rounds |x| >
 * 2^24 to nearest even first, as cvtdq2ps/scvtf do), clamped to
 * [qmin - zp, qmax - zp] in float, rounded half to even, + zp. XNNPACK's
 * x86 kernels apply the lower bound after rounding, MLAS before: the same
 * result since the bounds are integers. Rounding adds 1.5 * 2^23 so the
 * integer part lands in the mantissa (|f| <= 2^17 after the clamp), the
 * magic-bias rounding of XNNPACK's and MLAS's scalar paths; like cvtps2dq
 * it assumes the default round-to-nearest mode. */
static inline int32_t requant_float(int32_t x, float s, const struct qp_rq *rq,
                                    struct qp_rq_trace *t)
{
    float xf = (float)x;
    tr_f(t, "float(acc)", xf);
    float f = xf * s;
    tr_f(t, "product = float(acc) * scale (float32)", f);
    float lo = (float)(rq->qmin - rq->zero_point);
    float hi = (float)(rq->qmax - rq->zero_point);
    f = f < lo ? lo : f > hi ? hi : f;
    tr_f(t, "clamped to [qmin - zp, qmax - zp]", f);
    int32_t r = (int32_t)((f + 0x1.8p23f) - 0x1.8p23f);
    tr_i(t, "rounded half to even", r);
    int32_t o = r + rq->zero_point;
    tr_i(t, "+ zero point", o);
    return o;
}

/* onnx-ref, as the ONNX reference (numpy): D = C * scale in float64, D +=
 * y_zero_point, rint (half to even), clip, cast. The zero point is added
 * before rounding, as numpy does: it can matter when the product is within
 * an ulp of a tie. Clipping first and then rounding is the same (integer
 * bounds); |D| <= 2^17 after the clip, so adding 1.5 * 2^52 rounds exactly
 * (default rounding mode). */
static inline int32_t requant_double(int32_t x, double s, const struct qp_rq *rq,
                                     struct qp_rq_trace *t)
{
    double d = (double)x * s;
    tr_f(t, "product = acc * scale (float64)", d);
    d += (double)rq->zero_point;
    tr_f(t, "+ zero point (float64)", d);
    double lo = rq->qmin, hi = rq->qmax;
    d = d < lo ? lo : d > hi ? hi : d;
    tr_f(t, "clipped to [qmin, qmax]", d);
    int32_t r = (int32_t)((d + 0x1.8p52) - 0x1.8p52);
    tr_i(t, "rounded half to even", r);
    return r;
}

/* ---- one element, every flavor ---- */

static inline int32_t rq_eval(enum qp_rq_flavor f, const struct qp_rq *rq,
                              size_t c, int64_t acc, struct qp_rq_trace *t)
{
    size_t k = rq->channels == 1 ? 0 : c;
    int32_t x = wrap32(acc);
    switch (f) {
    case QP_RQ_TFLITE_DOUBLE:
        return epilogue_int32(scale_double(x, rq->multiplier[k], rq->shift[k], false, true, t), rq, t);
    case QP_RQ_CMSIS_NN_DOUBLE:
        return epilogue_int32(scale_double(x, rq->multiplier[k], rq->shift[k], false, false, t), rq, t);
    case QP_RQ_GEMMLOWP:
        return epilogue_int32(scale_double(x, rq->multiplier[k], rq->shift[k], true, true, t), rq, t);
    case QP_RQ_TFLITE_SINGLE:
        return epilogue_int32(scale_single(x, rq->multiplier[k], rq->shift[k], t), rq, t);
    case QP_RQ_CMSIS_NN_SINGLE:
        return epilogue_int32(scale_single(x, rq->multiplier[k], rq->shift[k], t), rq, t);
    case QP_RQ_TFLITE_INT64_DOUBLE:
    case QP_RQ_TFLITE_INT64_SINGLE:
        return epilogue_int32(scale_int64(acc, rq->multiplier[k], rq->shift[k], false, t), rq, t);
    case QP_RQ_CMSIS_NN_S64:
        return epilogue_int32(scale_int64(acc, rq->multiplier[k], rq->shift[k], true, t), rq, t);
    case QP_RQ_XNNPACK_RNDNU:
        return epilogue_clamp_first(scale_rndnu(x, rq->multiplier[k], rq->shift[k], t), rq, t);
    case QP_RQ_XNNPACK_FP32:
    case QP_RQ_ORT:
        return requant_float(x, rq->scale[k], rq, t);
    case QP_RQ_ONNX_REF:
        return requant_double(x, rq->scale_d[k], rq, t);
    case QP_RQ_COUNT:
        break;
    }
    return 0;
}

int32_t qp_rq_one(const struct qp_rq *rq, size_t c, int64_t acc)
{
    return rq_eval(rq->flavor, rq, c, acc, NULL);
}

int32_t qp_rq_explain(const struct qp_rq *rq, size_t c, int64_t acc,
                      struct qp_rq_trace *t)
{
    memset(t, 0, sizeof *t);
    return rq_eval(rq->flavor, rq, c, acc, t);
}

/* ---- rows ---- */

static inline void store(enum qp_dtype dt, void *out, size_t i, int32_t v)
{
    /* v is already clamped to [qmin, qmax] inside dt's range */
    if (dt == QP_DTYPE_I8)
        ((int8_t *)out)[i] = (int8_t)v;
    else if (dt == QP_DTYPE_U8)
        ((uint8_t *)out)[i] = (uint8_t)v;
    else
        ((int16_t *)out)[i] = (int16_t)v;
}

/* The flavor is a constant inside each case, so rq_eval's switch folds and
 * each loop is that flavor's straight-line arithmetic. */
#define ROW_LOOP(F, ACC)                                                       \
    case F:                                                                    \
        for (size_t i = 0; i < n; i++)                                         \
            store(dt, out, i, rq_eval(F, rq, per_elem ? c + i : c, ACC[i], NULL)); \
        break

#define ROW_SWITCH(ACC)                                                        \
    switch (rq->flavor) {                                                      \
        ROW_LOOP(QP_RQ_TFLITE_DOUBLE, ACC);                                    \
        ROW_LOOP(QP_RQ_TFLITE_SINGLE, ACC);                                    \
        ROW_LOOP(QP_RQ_TFLITE_INT64_DOUBLE, ACC);                              \
        ROW_LOOP(QP_RQ_TFLITE_INT64_SINGLE, ACC);                              \
        ROW_LOOP(QP_RQ_CMSIS_NN_DOUBLE, ACC);                                  \
        ROW_LOOP(QP_RQ_CMSIS_NN_SINGLE, ACC);                                  \
        ROW_LOOP(QP_RQ_CMSIS_NN_S64, ACC);                                     \
        ROW_LOOP(QP_RQ_GEMMLOWP, ACC);                                         \
        ROW_LOOP(QP_RQ_XNNPACK_FP32, ACC);                                     \
        ROW_LOOP(QP_RQ_XNNPACK_RNDNU, ACC);                                    \
        ROW_LOOP(QP_RQ_ONNX_REF, ACC);                                         \
        ROW_LOOP(QP_RQ_ORT, ACC);                                              \
    case QP_RQ_COUNT:                                                          \
        break;                                                                 \
    }

void qp_rq_row_ref(const struct qp_rq *rq, size_t c, bool per_elem,
                   const int32_t *acc, size_t n, void *out)
{
    enum qp_dtype dt = rq->out_dtype;
    ROW_SWITCH(acc)
}

static void row_ref_i64(const struct qp_rq *rq, size_t c, bool per_elem,
                        const int64_t *acc, size_t n, void *out)
{
    enum qp_dtype dt = rq->out_dtype;
    ROW_SWITCH(acc)
}

void qp_rq_apply_i64(const struct qp_rq *rq, const int64_t *acc, size_t rows,
                     size_t cols, void *out)
{
    size_t esz = qp_rq_out_size(rq);
    for (size_t r = 0; r < rows; r++)
        row_ref_i64(rq, 0, rq->channels > 1, acc + r * cols, cols,
                    (char *)out + r * cols * esz);
}
