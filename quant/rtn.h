/* quant/rtn.h: round-to-nearest weight quantization.
 *
 * qp_rtn_quantize turns a float tensor into an integer tensor (storage
 * dtype from quant/qparams.h, packed below 8 bits) carrying its scales and
 * zero points in the ONNX layout of core/tensor.h, so every writer, inspect
 * and diff handle the result; qp_tensor_read_f32 dequantizes it.
 *
 * Ranges: min/max per scale (QP_WALGO_RTN) or the MSE-optimal clipping of
 * quant/clip.h (QP_WALGO_MSE). QP_WALGO_GPTQ is refused (QP_E_UNSUPPORTED):
 * it needs calibration data run through the model (model/gptq-graph.h).
 *
 * A ggml scheme (q4_k, ...: QP_WFAMILY_GGML) has no integer-with-scales
 * form: qp_rtn_quantize returns its values as ggml's reference quantizer
 * and decoder give them, an F32 tensor (quant/ggml-quant.h,
 * qp_ggml_fake_quantize), so fake quantization and the metrics work as
 * for every scheme; the raw blocks come from qp_ggml_quantize_tensor and
 * the bytes from qp_ggml_weight_bytes. */
#ifndef QP_QUANT_RTN_H
#define QP_QUANT_RTN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/tensor.h"
#include "quant/qparams.h"
#include "quant/scheme.h"

struct qp_wquant_opts {
    enum qp_round round;    /* QP_ROUND_HALF_AWAY by default (zeroed) */
    enum qp_wlayout layout; /* QP_WLAYOUT_TORCH by default */
};

/* Quantizes w (any float dtype, finite values) with scheme ws. *out is a new
 * integer tensor named like w, with w's shape and layout tag; it belongs to
 * the caller. QP_E_INVAL names the tensor and the first non-finite
 * element; QP_E_UNSUPPORTED for integer inputs and for @gptq. */
enum qp_status qp_rtn_quantize(const struct qp_tensor *w,
                               const struct qp_wscheme *ws,
                               const struct qp_wquant_opts *o,
                               struct qp_tensor **out, struct qp_error *err);

/* The quantizer proper: q = clamp(round(x / s) + z, qmin, qmax) for every
 * element of x (g->outer * g->dim * g->inner floats) with the scale of its
 * index in g, stored into data (dtype dt, qp_dtype_bytes(dt, numel) bytes).
 * zp may be NULL (all zero). Single-threaded; this is what bench-rtn
 * measures. */
void qp_rtn_apply(const float *x, const struct qp_qgeom *g, const float *scale,
                  const int32_t *zp, int32_t qmin, int32_t qmax,
                  enum qp_round r, enum qp_dtype dt, void *data);

/* Per-scale ranges -> scales and zero points (zp may be NULL when f is
 * symmetric). */
void qp_rtn_params(const struct qp_qformat *f, enum qp_round r,
                   const float *lo, const float *hi, size_t count,
                   float *scale, int32_t *zp);

/* True for the tensors quantize selects by default: float weights of
 * linear/matmul (2-D) and conv (4-D) layers. Biases, norms and other 1-D
 * tensors, scalars, and integer tensors are not. */
bool qp_rtn_default_selected(const struct qp_tensor *t);

/* Bytes a quantized tensor costs: its packed data, 4 per scale, and its
 * zero points in the narrowest integer type holding them
 * (qp_dtype_narrowest_int), which is how every writer stores them (the
 * bytes a .safetensors file holds for the tensor and its companions); for
 * a tensor without parameters, its data. */
size_t qp_rtn_bytes(const struct qp_tensor *q);

#endif
