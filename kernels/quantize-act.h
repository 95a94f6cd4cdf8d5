/* kernels/quantize-act.h: float -> integer quantization of activations and
 * its inverse, the way each runtime computes them (DESIGN.md §3).
 *
 *   q = clamp(round(x / s) + zp, qmin, qmax),   x^ = s * (q - zp)
 *
 * The flavors differ in how x / s is formed and rounded, and so disagree
 * on real inputs, not only on ties:
 *
 *   onnx     x / s in float32, round half to even (the ONNX reference's
 *            np.rint, ORT's MlasQuantizeLinear nearbyintf)
 *   pytorch  x * (1.0f / s) in float32, round half to even (quantize_val:
 *            inv_scale = 1.0f / scale, nearbyint)
 *   xnnpack  x * (1.0f / s) in float32, round half to even (the f32->qs8
 *            convert operator is created with scale 1 / output_scale)
 *   tflite   x / s in float32, round half away from zero (TfLiteRound =
 *            std::round in AffineQuantize / PerChannelQuantize)
 *
 * The rounding never depends on the floating-point environment. NaN
 * quantizes to qmin (what every one of these runtimes produces on x86,
 * where the float -> int conversion of NaN gives INT_MIN), +-inf saturate.
 * Dequantization is ((float)q - (float)zp) * s in float32 for every
 * flavor (TFLite's double product rounds to the same float: the exact
 * product of a float scale and |q - zp| <= 2^16 fits a double). */
#ifndef QP_KERNELS_QUANTIZE_ACT_H
#define QP_KERNELS_QUANTIZE_ACT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/dtype.h"
#include "core/status.h"
#include "kernels/requant.h"

/* Only grows; names in qp_qa_flavor_name(). */
enum qp_qa_flavor {
    QP_QA_ONNX = 0, /* "onnx" (also ORT) */
    QP_QA_PYTORCH,  /* "pytorch" */
    QP_QA_XNNPACK,  /* "xnnpack" */
    QP_QA_TFLITE,   /* "tflite" (also CMSIS-NN, gemmlowp users) */
    QP_QA_COUNT
};

const char *qp_qa_flavor_name(enum qp_qa_flavor f);
/* Accepts the names above and "ort"; false when unknown. */
bool qp_qa_flavor_from_name(const char *name, enum qp_qa_flavor *out);
/* The activation quantizer of a requantization flavor's runtime. */
enum qp_qa_flavor qp_qa_for_requant(enum qp_rq_flavor f);

/* One value. scale must be finite and > 0; [qmin, qmax] is the output
 * range (zero point included). */
int32_t qp_qa_quantize_one(enum qp_qa_flavor f, float x, float scale,
                           int32_t zp, int32_t qmin, int32_t qmax);

/* x is [outer, channels, inner] float32, quantized along the middle axis
 * (channels = 1: per tensor) with scale[c] and zp[c] (zp NULL: zero) into
 * out of out_dtype (i8, u8, i16, u16), clamped to the dtype's range.
 * QP_E_INVAL when a scale is not finite and > 0, a zero point is outside
 * the dtype, or the dtype is another; the message names the channel. */
enum qp_status qp_qa_quantize(enum qp_qa_flavor f, const float *x, size_t outer,
                              size_t channels, size_t inner,
                              const float *scale, const int32_t *zp,
                              enum qp_dtype out_dtype, void *out,
                              struct qp_error *err);

/* The inverse on [outer, channels, inner] values of dtype (i8, u8, i16,
 * u16, i32): out = ((float)q - (float)zp[c]) * scale[c]. */
enum qp_status qp_qa_dequantize(const void *q, enum qp_dtype dtype,
                                size_t outer, size_t channels, size_t inner,
                                const float *scale, const int32_t *zp,
                                float *out, struct qp_error *err);

/* ---- rows: one scale, the hot loops of the quantized runtime ----
 *
 * The same values as qp_qa_quantize_one for every element (tested bit for
 * bit on every variant), computed as: y = x / s or x * (1 / s) in float32;
 * NaN becomes qmin - zp; clamp to [qmin - zp, qmax - zp] in float; round
 * (half to even, or half away from zero for tflite); + zp. The variant is
 * the dispatch table's (kernels/dispatch.h: requantization's instruction
 * set when it has rows here, AVX-512 or AVX2, else the reference;
 * QP_KERNELS=ref forces the reference). Parameters are not
 * checked here (qp_qa_quantize checks them): scale finite and > 0,
 * qmin <= zp <= qmax inside out_dtype's range. */

/* out[i] (out_dtype: i8, u8, i16, u16 or i32) for x[i], i < n. */
void qp_qa_quantize_row(enum qp_qa_flavor f, const float *x, size_t n,
                        float scale, int32_t zp, int32_t qmin, int32_t qmax,
                        enum qp_dtype out_dtype, void *out);

/* y[i] = dequantize(quantize(x[i])) = ((float)q - (float)zp) * scale, the
 * fake quantization of one value; y may be x. */
void qp_qa_fake_row(enum qp_qa_flavor f, const float *x, size_t n,
                    float scale, int32_t zp, int32_t qmin, int32_t qmax,
                    float *y);

/* out[i] = ((float)q[i] - (float)zp) * scale for n values of dtype (i8,
 * u8, i16, u16, i32), the inverse (a loop the compiler vectorizes). */
void qp_qa_dequantize_row(const void *q, enum qp_dtype dtype, size_t n,
                          float scale, int32_t zp, float *out);

/* The variant the rows use ("ref", "avx2", "avx512"). Static storage. */
const char *qp_qa_variant(void);

/* The rows on an explicit variant (tests, benchmarks); isa must be
 * available (qp_rq_isa_available). */
void qp_qa_quantize_row_isa(enum qp_rq_isa isa, enum qp_qa_flavor f,
                            const float *x, size_t n, float scale, int32_t zp,
                            int32_t qmin, int32_t qmax,
                            enum qp_dtype out_dtype, void *out);
void qp_qa_fake_row_isa(enum qp_rq_isa isa, enum qp_qa_flavor f,
                        const float *x, size_t n, float scale, int32_t zp,
                        int32_t qmin, int32_t qmax, float *y);

/* ONNX DynamicQuantizeLinear (uint8), as the reference computes it in
 * float32: the range [min(0, min x), max(0, max x)] (NaN elements ignored),
 * scale = range / 255 (1 when the range is empty), zero point =
 * rint(clamp(-min / scale, 0, 255)), then onnx quantization of every
 * element. */
void qp_qa_dynamic_u8(const float *x, size_t n, float *scale, uint8_t *zp,
                      uint8_t *out);

#endif
