/* kernels/requant.h: requantization of integer accumulators to int8 /
 * uint8 / int16 outputs, bit-exact to the runtimes each flavor names
 * (DESIGN.md §3; golden vectors in ../shared/golden/, README there).
 *
 * Flow, as in TFLite Micro: derive the per-channel parameters once
 * (qp_rq_prepare_*), then apply them to accumulators many times. The
 * portable reference (kernels/ref/requant*.c) is the specification; SIMD
 * paths chosen at run time (kernels/x86/requant-*.c, kernels/arm/
 * requant-neon.c) give identical bytes.
 *
 * Shift convention everywhere (TFLite): shift > 0 shifts left; the real
 * multiplier is multiplier * 2^(shift - 31). Offsets: the output zero point
 * is added after scaling, then the result is clamped to [qmin, qmax]
 * (output units, zero point included: TFLite's quantized_activation_min/max)
 * and narrowed to out_dtype.
 *
 * Flavors and their arithmetic (each written out, with its overflow
 * reasoning, next to the code in kernels/ref/requant.c):
 *
 *   tflite-double       RoundingDivideByPOT(SRDHM(x * 2^left, M), right)
 *   tflite-single       (x * M + 2^(30 - shift)) >> (31 - shift), one rounding
 *   tflite-int64-double int64 x, 15-bit reduced multiplier, one rounding
 *   tflite-int64-single same arithmetic as tflite-int64-double (the TFLite
 *                       builds differ only in QuantizeMultiplier)
 *   cmsis-nn-double     as tflite-double, SRDHM without saturation
 *   cmsis-nn-single     the same value as tflite-single for every input
 *   cmsis-nn-s64        as tflite-int64, intermediate truncated to 32 bits
 *   gemmlowp            as tflite-double, left shift saturating
 *   xnnpack-fp32        float(x) * scale (float32), clamp, round half even
 *   xnnpack-rndnu       x * M >> (31 - shift) rounded half up, exact, with a
 *                       saturating pre-shift (NEON qdmulh kernels)
 *   onnx-ref            (double)x * scale + zp, round half even (numpy rint)
 *   ort                 as xnnpack-fp32 (MLAS MlasRequantizeOutput)
 *
 * Outside a runtime's documented input contract (in_contract in the golden
 * README) each flavor does what the compiled runtime does on a two's-
 * complement machine: e.g. tflite-double's left shift wraps where gemmlowp
 * saturates, cmsis-nn-s64 wraps results >= 2^30. The contract on shifts is
 * enforced at prepare time (qp_rq_shift_range). */
#ifndef QP_KERNELS_REQUANT_H
#define QP_KERNELS_REQUANT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/dtype.h"
#include "core/status.h"

/* Only grows; names in qp_rq_flavor_name(). */
enum qp_rq_flavor {
    QP_RQ_TFLITE_DOUBLE = 0,  /* "tflite-double" (alias "tflite") */
    QP_RQ_TFLITE_SINGLE,      /* "tflite-single" */
    QP_RQ_TFLITE_INT64_DOUBLE,/* "tflite-int64-double": int64 acc (16x8) */
    QP_RQ_TFLITE_INT64_SINGLE,/* "tflite-int64-single" */
    QP_RQ_CMSIS_NN_DOUBLE,    /* "cmsis-nn-double" (alias "cmsis-nn") */
    QP_RQ_CMSIS_NN_SINGLE,    /* "cmsis-nn-single" */
    QP_RQ_CMSIS_NN_S64,       /* "cmsis-nn-s64": int64 acc */
    QP_RQ_GEMMLOWP,           /* "gemmlowp" */
    QP_RQ_XNNPACK_FP32,       /* "xnnpack-fp32": float scale */
    QP_RQ_XNNPACK_RNDNU,      /* "xnnpack-rndnu" */
    QP_RQ_ONNX_REF,           /* "onnx-ref" (alias "onnx"): double, half-even */
    QP_RQ_ORT,                /* "ort": float32 scale, half-even (MLAS) */
    QP_RQ_COUNT
};

const char *qp_rq_flavor_name(enum qp_rq_flavor f);
/* Accepts the names above and the aliases; false when unknown. */
bool qp_rq_flavor_from_name(const char *name, enum qp_rq_flavor *out);
/* "tflite-double, tflite-single, ...": every name, for help and errors.
 * Static storage. */
const char *qp_rq_flavor_list(void);
/* True for the flavors whose accumulator is int64. */
bool qp_rq_flavor_acc64(enum qp_rq_flavor f);
/* True for the flavors applied as (multiplier, shift): the TFLite, CMSIS-NN
 * and gemmlowp flavors and xnnpack-rndnu. The others (xnnpack-fp32, ort,
 * onnx-ref) multiply by a float scale. */
bool qp_rq_flavor_fixed(enum qp_rq_flavor f);
/* The shifts a fixed-point flavor accepts, from its runtime's contract:
 * [-31, 30] for the int32 flavors (beyond, the runtimes shift by 32 or more,
 * which C leaves undefined), [-31, 7] for the int64 ones, [-31, 8] for
 * xnnpack-rndnu (its float scale range [2^-32, 256)). */
void qp_rq_shift_range(enum qp_rq_flavor f, int32_t *lo, int32_t *hi);

/* Derived parameters of one requantization step. Arrays have `channels`
 * entries (1 broadcasts to every column); which arrays are used depends on
 * the flavor: fixed-point flavors (incl. xnnpack-rndnu) multiplier+shift,
 * xnnpack-fp32 and ort scale, onnx-ref scale_d. Unused arrays are NULL. All
 * are owned; release with qp_rq_release. */
struct qp_rq {
    enum qp_rq_flavor flavor;
    size_t channels;
    int32_t *multiplier;
    int32_t *shift;
    float *scale;
    double *scale_d;
    int32_t zero_point;      /* output zero point */
    int32_t qmin, qmax;      /* final clamp, output units */
    enum qp_dtype out_dtype; /* QP_DTYPE_I8, QP_DTYPE_U8 or QP_DTYPE_I16 */
    /* Every shift <= 0 and no multiplier INT32_MIN (qp_rq_prepare_fixed
     * sets it): the double-rounding flavors' left shift and saturating
     * multiply have nothing to do, and the SIMD rows leave them out. false
     * (the safe value) in a struct filled by hand. */
    bool right_only;
};

/* A view of rq restricted to channels [c0, c0 + n) (a conv group, a
 * thread's columns): per-channel arrays advance by c0; a per-tensor rq
 * (channels == 1) comes back unchanged. The arrays stay borrowed from rq:
 * never qp_rq_release a view. Kept next to the struct so a new per-channel
 * field cannot be forgotten here. */
static inline struct qp_rq qp_rq_slice(const struct qp_rq *rq, size_t c0,
                                       size_t n)
{
    struct qp_rq v = *rq;
    if (rq->channels > 1) {
        v.channels = n;
        v.multiplier = rq->multiplier ? rq->multiplier + c0 : NULL;
        v.shift = rq->shift ? rq->shift + c0 : NULL;
        v.scale = rq->scale ? rq->scale + c0 : NULL;
        v.scale_d = rq->scale_d ? rq->scale_d + c0 : NULL;
    }
    return v;
}

/* From float scales, as the flavor's runtime derives them for a conv or
 * matmul layer (w_scale has `channels` entries):
 *   TFLite, CMSIS-NN, gemmlowp: QuantizeMultiplier((double)in_scale *
 *     (double)w_scale[c] / (double)out_scale) of the flavor's build
 *     (PopulateConvolutionQuantizationParams);
 *   xnnpack-*, ort: float32 in_scale * w_scale[c] / out_scale, then
 *     XNNPACK's limits (0 < scale < 256, normal; rndnu also >= 2^-32) or
 *     ORT's (finite, > 0);
 *   onnx-ref: the same float32 scale, multiplied in double (the reference's
 *     numpy promotion of int32 * float32).
 * Common checks (all flavors, QP_E_INVAL with a message naming the value):
 * scales finite and > 0; out_dtype int8/uint8/int16 (int8/uint8 for the
 * xnnpack flavors); qmin <= qmax (< for xnnpack) inside out_dtype's range;
 * zero_point inside out_dtype's range; resulting shifts inside
 * qp_rq_shift_range. On failure rq is left released. */
enum qp_status qp_rq_prepare_scales(struct qp_rq *rq, enum qp_rq_flavor f,
                                    float in_scale, const float *w_scale,
                                    size_t channels, float out_scale,
                                    int32_t zero_point, enum qp_dtype out_dtype,
                                    int32_t qmin, int32_t qmax,
                                    struct qp_error *err);

/* From given (multiplier, shift) pairs, for the fixed-point flavors.
 * Checks shift[c] in qp_rq_shift_range and, for xnnpack-rndnu, multiplier
 * >= 0; other multipliers are taken as given (negative ones are outside
 * TFLite's contract and follow the same arithmetic). */
enum qp_status qp_rq_prepare_fixed(struct qp_rq *rq, enum qp_rq_flavor f,
                                   const int32_t *multiplier,
                                   const int32_t *shift, size_t channels,
                                   int32_t zero_point, enum qp_dtype out_dtype,
                                   int32_t qmin, int32_t qmax,
                                   struct qp_error *err);

/* From given effective scales (acc * scale[c]). xnnpack-fp32, xnnpack-rndnu
 * and ort take float32(scale[c]) with the limits of qp_rq_prepare_scales;
 * onnx-ref keeps the double. The TFLite/CMSIS-NN/gemmlowp flavors derive
 * (multiplier, shift) with their QuantizeMultiplier. */
enum qp_status qp_rq_prepare_float(struct qp_rq *rq, enum qp_rq_flavor f,
                                   const double *scale, size_t channels,
                                   int32_t zero_point, enum qp_dtype out_dtype,
                                   int32_t qmin, int32_t qmax,
                                   struct qp_error *err);

/* The checks every prepare makes on the output side: out_dtype i8, u8 or
 * i16 (i8/u8 for the xnnpack flavors), zero_point and [qmin, qmax] inside
 * its range, qmin <= qmax (< for xnnpack). QP_E_INVAL with a message. */
enum qp_status qp_rq_check_output(enum qp_rq_flavor f, int32_t zero_point,
                                  enum qp_dtype out_dtype, int32_t qmin,
                                  int32_t qmax, struct qp_error *err);

/* Frees the arrays and zeroes *rq; safe on a zeroed or released rq. */
void qp_rq_release(struct qp_rq *rq);

/* The scaling step of a fixed-point flavor alone: the value the upstream
 * function returns (MultiplyByQuantizedMultiplier, arm_nn_requantize[_s64]
 * with REDUCE_MULTIPLIER applied inside, gemmlowp's scale stage, XNNPACK's
 * rndnu before the zero point). For int32 flavors acc is first narrowed to
 * int32 (two's complement). shift must be inside qp_rq_shift_range. */
int32_t qp_rq_scale_fixed(enum qp_rq_flavor f, int64_t acc,
                          int32_t multiplier, int32_t shift);

/* The reference: requantizes one accumulator of channel c (c < channels,
 * or any c when channels == 1) and returns the clamped output value. For
 * the int32 flavors acc is first narrowed to int32 (two's complement). */
int32_t qp_rq_one(const struct qp_rq *rq, size_t c, int64_t acc);

/* Every intermediate of qp_rq_one, for checking a device by hand. */
#define QP_RQ_TRACE_MAX 16
struct qp_rq_step {
    const char *what; /* e.g. "high = (product + nudge) / 2^31" */
    bool is_float;
    int64_t i;        /* the value when !is_float */
    double f;         /* the value when is_float */
};
struct qp_rq_trace {
    int n;
    struct qp_rq_step step[QP_RQ_TRACE_MAX];
};
/* Same result as qp_rq_one; fills t with the steps in order. */
int32_t qp_rq_explain(const struct qp_rq *rq, size_t c, int64_t acc,
                      struct qp_rq_trace *t);

/* acc is [rows, cols] int32 (row stride cols); channel = column (channels
 * is 1 or cols). out is [rows, cols] of out_dtype. SIMD when available. */
void qp_rq_apply_i32(const struct qp_rq *rq, const int32_t *acc, size_t rows,
                     size_t cols, void *out);

/* Same for int64 accumulators (the int64 flavors; for the int32 flavors
 * each value is narrowed to int32 first). Reference arithmetic. */
void qp_rq_apply_i64(const struct qp_rq *rq, const int64_t *acc, size_t rows,
                     size_t cols, void *out);

/* n accumulators all of channel c (an NCHW plane); out has n elements. */
void qp_rq_apply_plane(const struct qp_rq *rq, size_t c, const int32_t *acc,
                       size_t n, void *out);

/* ---- multiplier derivation (kernels/ref/requant-derive.c) ---- */

/* TFLite's QuantizeMultiplier for the flavor's build: the single-rounding
 * flavors (tflite-single, tflite-int64-single, cmsis-nn-single) saturate
 * shift > 30 to (2^31 - 1, 30); the others keep any shift. frexp, then
 * round half away from zero of q * 2^31; q_fixed == 2^31 becomes (2^30,
 * shift + 1); shift < -31 flushes to (0, 0); 0 gives (0, 0). real must be
 * finite (qp_rq_derive checks); negative reals give negative multipliers,
 * as TFLite's. */
void qp_rq_quantize_multiplier(enum qp_rq_flavor f, double real,
                               int32_t *multiplier, int32_t *shift);

/* XNNPACK's rndnu parameters of a float32 scale in the TFLite convention:
 * multiplier = (mantissa | 2^23) << 7 in [2^30, 2^31), shift = biased
 * exponent - 126. QP_E_INVAL unless scale is normal, >= 2^-32 and < 256. */
enum qp_status qp_rq_rndnu_params(float scale, int32_t *multiplier,
                                  int32_t *shift, struct qp_error *err);

/* The (multiplier, shift) pairs a fixed-point flavor's runtime derives
 * from real multipliers (qp_rq_quantize_multiplier; xnnpack-rndnu rounds to
 * float32 first, then qp_rq_rndnu_params). QP_E_INVAL for the float
 * flavors, for non-finite reals, and for xnnpack-rndnu scales outside its
 * limits; the message names the index. */
enum qp_status qp_rq_derive(enum qp_rq_flavor f, const double *real, size_t n,
                            int32_t *multiplier, int32_t *shift,
                            struct qp_error *err);

/* How a runtime forms the effective scale of a conv/fc channel. */
enum qp_rq_product {
    /* (double)in * (double)w / (double)out: TFLite's per-channel path */
    QP_RQ_PRODUCT_DOUBLE = 0,
    /* (double)(float32)(in * w) / (double)out: TFLite's legacy uint8
     * GetQuantizedConvolutionMultipler */
    QP_RQ_PRODUCT_LEGACY_FLOAT,
    /* float32(float32(in * w) / out): XNNPACK, ORT, the ONNX reference */
    QP_RQ_PRODUCT_FLOAT,
    QP_RQ_PRODUCT_COUNT
};
/* The product a flavor's runtime uses for conv/matmul layers. */
enum qp_rq_product qp_rq_flavor_product(enum qp_rq_flavor f);
/* in * w / out computed as `p` says. */
double qp_rq_effective_scale(enum qp_rq_product p, float in_scale,
                             float w_scale, float out_scale);

/* Per-channel derivation: qp_rq_derive of the effective scales of
 * (in_scale, w_scale[c], out_scale) computed with product p (the flavor's
 * own, or QP_RQ_PRODUCT_LEGACY_FLOAT for TFLite's uint8 path). Scales must
 * be finite and > 0 (QP_E_INVAL naming the channel). */
enum qp_status qp_rq_derive_per_channel(enum qp_rq_flavor f,
                                        enum qp_rq_product p, float in_scale,
                                        const float *w_scale, size_t channels,
                                        float out_scale, int32_t *multiplier,
                                        int32_t *shift, struct qp_error *err);

/* Fused activations of TFLite, for the clamp range. */
enum qp_rq_act {
    QP_RQ_ACT_NONE = 0,
    QP_RQ_ACT_RELU,
    QP_RQ_ACT_RELU6,
    QP_RQ_ACT_RELU_N1_TO_1,
    QP_RQ_ACT_COUNT
};
/* "none", "relu", "relu6", "relu-n1-to-1"; and the parser (also accepts
 * TFLite's spellings "RELU_N1_TO_1", any case). */
const char *qp_rq_act_name(enum qp_rq_act a);
bool qp_rq_act_from_name(const char *name, enum qp_rq_act *out);

/* TFLite's CalculateActivationRangeQuantized: the activation's bounds
 * quantized as zero_point + round_half_away(float32(v) / scale), then
 * intersected with [qmin, qmax] (the output dtype's range). QP_E_INVAL when
 * a bound does not fit int32 (TFLite's no_integer_overflow check). */
enum qp_status qp_rq_activation_range(enum qp_rq_act a, float out_scale,
                                      int32_t zero_point, int32_t qmin,
                                      int32_t qmax, int32_t *act_min,
                                      int32_t *act_max, struct qp_error *err);

/* ---- variants (kernels/requant.c) ---- */

enum qp_rq_isa {
    QP_RQ_ISA_REF = 0,
    QP_RQ_ISA_AVX2,
    QP_RQ_ISA_AVX512,
    QP_RQ_ISA_NEON,   /* aarch64 */
    QP_RQ_ISA_COUNT
};
/* "ref", "avx2", "avx512", "neon". */
const char *qp_rq_isa_name(enum qp_rq_isa isa);
/* Whether this build and CPU can run isa. */
bool qp_rq_isa_available(enum qp_rq_isa isa);
/* Available, and allowed by QP_KERNELS (kernels/dispatch.h). */
bool qp_rq_isa_allowed(enum qp_rq_isa isa);
/* The variant qp_rq_apply_i32/_plane use: the dispatch table's choice,
 * the best allowed. Static storage. */
const char *qp_rq_variant(void);
/* Whether isa has a SIMD path for flavor f (else it runs the reference). */
bool qp_rq_isa_covers(enum qp_rq_isa isa, enum qp_rq_flavor f);
/* qp_rq_apply_i32 / _plane on an explicit variant (tests, benchmarks);
 * isa must be available. */
void qp_rq_apply_i32_isa(enum qp_rq_isa isa, const struct qp_rq *rq,
                         const int32_t *acc, size_t rows, size_t cols,
                         void *out);
void qp_rq_apply_plane_isa(enum qp_rq_isa isa, const struct qp_rq *rq,
                           size_t c, const int32_t *acc, size_t n, void *out);

#endif
