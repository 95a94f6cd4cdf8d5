/* kernels/requant.h: requantization of integer accumulators to int8 /
 * uint8 / int16 outputs, bit-exact to the runtimes each flavor names
 * (DESIGN.md §3; golden vectors in ../shared/golden/, README there).
 *
 * Flow, as in TFLite Micro: derive the per-channel parameters once
 * (qp_rq_prepare_*), then apply them to accumulators many times. The
 * portable reference (kernels/ref/requant*.c) is the specification; SIMD
 * paths chosen at run time must give identical bytes.
 *
 * Shift convention everywhere (TFLite): shift > 0 shifts left; the real
 * multiplier is multiplier * 2^(shift - 31). Offsets: the output zero point
 * is added after scaling, then the result is clamped to [qmin, qmax]
 * (output units, zero point included: TFLite's quantized_activation_min/max)
 * and narrowed to out_dtype. */
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
/* True for the flavors whose accumulator is int64. */
bool qp_rq_flavor_acc64(enum qp_rq_flavor f);

/* Derived parameters of one requantization step. Arrays have `channels`
 * entries (1 broadcasts to every column); which arrays are used depends on
 * the flavor: fixed-point flavors multiplier+shift, xnnpack-fp32 and ort
 * scale, onnx-ref scale_d, xnnpack-rndnu its own multiplier+shift. All are
 * owned; release with qp_rq_release. */
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
};

/* From float scales, as the flavor's runtime derives them for a conv or
 * matmul layer: effective[c] = in_scale * w_scale[c] / out_scale computed
 * the runtime's way (TFLite: double product then QuantizeMultiplier;
 * XNNPACK and ORT: float32 products; ONNX reference: double), then
 * converted to the flavor's parameters. w_scale has `channels` entries. */
enum qp_status qp_rq_prepare_scales(struct qp_rq *rq, enum qp_rq_flavor f,
                                    float in_scale, const float *w_scale,
                                    size_t channels, float out_scale,
                                    int32_t zero_point, enum qp_dtype out_dtype,
                                    int32_t qmin, int32_t qmax,
                                    struct qp_error *err);

/* From given (multiplier, shift) pairs, for the fixed-point flavors. */
enum qp_status qp_rq_prepare_fixed(struct qp_rq *rq, enum qp_rq_flavor f,
                                   const int32_t *multiplier,
                                   const int32_t *shift, size_t channels,
                                   int32_t zero_point, enum qp_dtype out_dtype,
                                   int32_t qmin, int32_t qmax,
                                   struct qp_error *err);

/* From given effective float scales (acc * scale[c]), for xnnpack-fp32,
 * xnnpack-rndnu, ort and onnx-ref. */
enum qp_status qp_rq_prepare_float(struct qp_rq *rq, enum qp_rq_flavor f,
                                   const double *scale, size_t channels,
                                   int32_t zero_point, enum qp_dtype out_dtype,
                                   int32_t qmin, int32_t qmax,
                                   struct qp_error *err);

void qp_rq_release(struct qp_rq *rq);

/* The reference: requantizes one accumulator of channel c and returns the
 * clamped output value. */
int32_t qp_rq_one(const struct qp_rq *rq, size_t c, int64_t acc);

/* acc is [rows, cols] int32 (row stride cols); channel = column (channels
 * is 1 or cols). out is [rows, cols] of out_dtype. SIMD when available. */
void qp_rq_apply_i32(const struct qp_rq *rq, const int32_t *acc, size_t rows,
                     size_t cols, void *out);

/* Same for the int64-accumulator flavors. */
void qp_rq_apply_i64(const struct qp_rq *rq, const int64_t *acc, size_t rows,
                     size_t cols, void *out);

/* n accumulators all of channel c (an NCHW plane); out has n elements. */
void qp_rq_apply_plane(const struct qp_rq *rq, size_t c, const int32_t *acc,
                       size_t n, void *out);

/* TFLite's QuantizeMultiplier for the flavor's build (double or single
 * rounding): real multiplier -> (Q31 multiplier, shift). */
void qp_rq_quantize_multiplier(enum qp_rq_flavor f, double real,
                               int32_t *multiplier, int32_t *shift);

#endif
