/* quant/ggml-quant.h: ggml's reference quantizers (quantize_row_<t>_ref,
 * the code llama-quantize runs without an importance matrix), producing
 * blocks byte-identical to ggml's, and weight tensors quantized to ggml
 * block types (the q8_0 / q4_0 / q4_1 / q5_0 / q4_k / q6_k schemes).
 *
 * The block formats, the type table and the decoders are in
 * core/ggml-block.h (so formats/ can read GGUF without quant/). The K
 * types' searches are in quant/ggml-kquant.h.
 *
 * Checked against ggml-org/ggml commit
 * d99724f2b141fed9e1a9f402213506c081433465 (src/ggml-quants.c), built with
 * plain C flags (-O3, no -march) and -ffp-contract=off: every vector of
 * tests/golden/ggml/ (23 per type, 8704 values) gives the same bytes and the
 * same dequantized floats (test-ggml-quant.c).
 *
 * Rounding, as ggml has it (not qprobe's qp_round_f32):
 *   q8_0  d = amax / 127, q = roundf(x * (1/d)) (half away from zero)
 *   q4_0  d = max / -8 (max: the signed value of largest magnitude, the
 *         first one on ties), q = min(15, (int8)(x * (1/d) + 8.5f)): a
 *         truncation, so x * id = k + 0.5 rounds up
 *   q4_1  d = (max - min) / 15, q = min(15, (int8)((x - min) * (1/d) + 0.5f))
 *   q5_0  d = max / -16, q = min(31, (int8)(x * (1/d) + 16.5f))
 *   d, m are then rounded to fp16 (round to nearest even, as ggml's
 *   GGML_FP32_TO_FP16); the quants use the f32 reciprocal, not the fp16 d.
 *   When 1/d overflows (|max| below about 8 / FLT_MAX, values that are
 *   float subnormals) ggml's C is undefined (a float-to-int8 conversion of
 *   inf or NaN); its x86-64 build stores 0, and so does this code.
 *
 * FMA: ggml built with contraction (-O3 -march=native, FMA available)
 * fuses x*id + 8.5f and rounds some q4_0 blocks differently from its plain
 * build; the reference semantics are the uncontracted ones, so this file
 * and quant/ggml-kquant.c are built with -ffp-contract=off (mk/ggml.mk). */
#ifndef QP_QUANT_GGML_QUANT_H
#define QP_QUANT_GGML_QUANT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/ggml-block.h"
#include "core/status.h"
#include "core/tensor.h"
#include "quant/qparams.h"

/* ggml's quantize_row_<t>_ref: x[n] (n a multiple of the block size, finite
 * values) into n / block blocks at `blocks` (any alignment), byte for byte
 * as ggml writes them. */
void qp_ggml_quantize_row_q8_0_ref(const float *x, void *blocks, int64_t n);
void qp_ggml_quantize_row_q4_0_ref(const float *x, void *blocks, int64_t n);
void qp_ggml_quantize_row_q4_1_ref(const float *x, void *blocks, int64_t n);
void qp_ggml_quantize_row_q5_0_ref(const float *x, void *blocks, int64_t n);

/* Any type of the table: the block types' _ref quantizers, f16 and bf16 by
 * round to nearest even (core/half.h; ggml's fp32_to_fp16 / fp32_to_bf16
 * give the same bits for finite values), f32 copied. The integer types and
 * f64 are not quantization targets: false, nothing written. */
bool qp_ggml_quantize_row(enum qp_ggml_type t, const float *x, void *blocks,
                          int64_t n);

/* The qprobe type named by scheme name s ("q4_k"; lower case, as the
 * scheme grammar spells it); false for any other string. */
bool qp_ggml_type_from_scheme(const char *s, size_t len, enum qp_ggml_type *out);

/* The type llama.cpp's quantizer falls back to when a row of `row` values
 * is not a multiple of t's block (llama-quant.cpp: q4_K -> q5_0, q6_K ->
 * q8_0, then f16 when that does not divide either); t itself when it
 * divides. */
enum qp_ggml_type qp_ggml_fallback(enum qp_ggml_type t, int64_t row);

/* The ggml type closest to integer scheme ws, for messages refusing a
 * scheme GGUF cannot hold: w8 -> q8_0, w6/w7 -> q6_k, w5 -> q5_0,
 * symmetric w4 -> q4_0, asymmetric w4 -> q4_1 (groups below 256) or q4_k,
 * w2/w3 -> q4_k (the smallest type here), w16 -> f16; a ggml scheme's own
 * type. */
enum qp_ggml_type qp_ggml_nearest(const struct qp_wscheme *ws);

/* Fails with QP_E_SHAPE when rows of `row` values cannot be stored as t:
 * "tensor 'NAME': rows of 100 values (axis 1) are not a multiple of q4_K's
 * block of 256; llama.cpp falls back to q5_0 (use it, or fp32 in a
 * recipe)". `what` names the tensor, axis is the row axis of its shape. */
enum qp_status qp_ggml_check_row(enum qp_ggml_type t, int64_t row, int axis,
                                 const char *what, struct qp_error *err);

/* Exact bytes of a weight of shape [ndim] stored as t with rows along its
 * input axis under layout l (a torch [out, in] matrix: out rows of in
 * values, ggml's ne0 = in): numel / block * block_bytes. False when the
 * rows do not divide or the size overflows. */
bool qp_ggml_weight_bytes(enum qp_ggml_type t, int ndim, const int64_t *shape,
                          enum qp_wlayout l, size_t *out);

/* Quantizes (or converts) float tensor w (any float dtype) to type t, rows
 * being w's last, contiguous axis, as GGUF stores a tensor: what an export
 * writes (struct qp_ggml_data: core/ggml-block.h; ne = w's shape reversed,
 * a scalar as [1]). *out is filled (out->data belongs to the caller). QP_E_SHAPE
 * when the last axis does not divide into blocks (qp_ggml_check_row's
 * message), QP_E_INVAL for a non-finite value or a block whose fp16 scale
 * overflows (|values| beyond about 65504 times the type's range), naming
 * the tensor, QP_E_UNSUPPORTED for integer inputs or target types. */
enum qp_status qp_ggml_quantize_tensor(const struct qp_tensor *w,
                                       enum qp_ggml_type t,
                                       struct qp_ggml_data *out,
                                       struct qp_error *err);

/* Fake quantization: w quantized to t and dequantized, rows along the
 * input axis of layout l (so a [in, out] MatMul weight is quantized as the
 * [out, in] matrix llama.cpp would store), as ggml's dequantize_row gives
 * them. *out is a new F32 tensor named and shaped like w (caller frees).
 * Errors as qp_ggml_quantize_tensor. */
enum qp_status qp_ggml_fake_quantize(const struct qp_tensor *w,
                                     enum qp_ggml_type t, enum qp_wlayout l,
                                     struct qp_tensor **out,
                                     struct qp_error *err);

#endif
