/* quant/ggml-kquant.h: ggml's reference quantizers of the K types
 * (quantize_row_q4_K_ref, quantize_row_q6_K_ref), byte-identical to
 * ggml-org/ggml commit d99724f2b141fed9e1a9f402213506c081433465 built with
 * -ffp-contract=off (see quant/ggml-quant.h for the vectors and the FMA
 * note; this file gets the same flag from mk/ggml.mk).
 *
 * Both are searches, not closed forms, and the bytes depend on every
 * float operation in ggml's order:
 *   q4_K  per sub-block of 32: weights av_x + |x| (av_x the RMS of the
 *         sub-block), then ggml's make_qkx2_quants (nmax 15, rmin -1,
 *         rdelta 0.1, 20 steps, squared error): a scale and a min from 21
 *         candidate inverse scales by weighted least squares; then the 8
 *         scales and mins are quantized to 6 bits against the super-block's
 *         largest (d = max_scale / 63, dmin = max_min / 63 in fp16) and the
 *         values re-quantized with the rounded scales.
 *   q6_K  per sub-block of 16: make_qx_quants (nmax 32, weights x^2): 19
 *         candidate scales -(32 + 0.1 k) / max, k = -9..9, by weighted least
 *         squares; the 16 scales are quantized to int8 against the largest
 *         (d = max_scale / -128 in fp16), the values re-quantized.
 * Rounding is ggml's nearest_int (adding 1.5 * 2^23: ties to even). */
#ifndef QP_QUANT_GGML_KQUANT_H
#define QP_QUANT_GGML_KQUANT_H

#include <stdint.h>

/* x[n] (n a multiple of 256, finite values) into n / 256 blocks at
 * `blocks` (any alignment). */
void qp_ggml_quantize_row_q4_K_ref(const float *x, void *blocks, int64_t n);
void qp_ggml_quantize_row_q6_K_ref(const float *x, void *blocks, int64_t n);

#endif
