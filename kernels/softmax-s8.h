/* kernels/softmax-s8.h: ONNX Runtime's QLinearSoftmax (contrib op, CPU
 * provider 1.20), which replaces DequantizeLinear -> Softmax ->
 * QuantizeLinear: a lookup table of exponentials built from the input
 * scale alone (the zero point cancels), indexed by the distance of each
 * code from the row's largest:
 *
 *   shift = max(0, ln(FLT_MAX / D) - 5) / x_scale      (double; D: row length)
 *   table[i] = (float)exp((i - 255 + shift) * x_scale), i = 0..255
 *   uint8: e_k = table[x_k + 255 - max]; int8: e_k = table[uint8(x_k + 127 - max) - 128
 *          read through the int8 layout], sum S = e_0 + e_1 + ... in float
 *   y_k = nearbyint(e_k * floor(1 / y_scale) / S) + y_zp   (float32)
 *   uint8: values above 255 become 255; int8: stored as int8 when <= 255,
 *   so 128..255 wrap (ONNX Runtime's own behavior: y_zp = -128 and one
 *   dominating code give 128, stored as -128). A row whose sum is 0 ends
 *   the whole call, leaving the remaining rows unwritten (0 here).
 *
 * Rows are the last axis (opset >= 13: softmax along one axis, others
 * transposed there by the caller) or the flattened trailing dims (opset <
 * 13). */
#ifndef QP_KERNELS_SOFTMAX_S8_H
#define QP_KERNELS_SOFTMAX_S8_H

#include <stddef.h>
#include <stdint.h>

#include "core/dtype.h"

/* table[256] for rows of length d and input scale x_scale; dt picks the
 * layout (int8: entry of code c at (uint8_t)c). */
void qp_softmax_s8_table(enum qp_dtype dt, float x_scale, size_t d,
                         float table[256]);

/* rows x [rows][d] of dt (i8 or u8) into y. */
void qp_softmax_s8_ref(enum qp_dtype dt, const float table[256],
                       const void *x, size_t rows, size_t d, float y_scale,
                       int32_t y_zp, void *y);

#endif
