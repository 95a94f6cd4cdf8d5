/* kernels/gemm-wq-impl.h: the SIMD row decoders of kernels/gemm-wq.c.
 * Internal to kernels/. */
#ifndef QP_KERNELS_GEMM_WQ_IMPL_H
#define QP_KERNELS_GEMM_WQ_IMPL_H

#include <stdbool.h>
#include <stddef.h>

#include "kernels/gemm-wq.h"

/* Decodes row j, columns [i0, i0 + ni) of w into out with AVX-512 (the same
 * floats as the portable decoder), or returns false for a weight it does
 * not handle (then nothing is written). */
bool qp_wq_decode_row_avx512(const struct qp_wq *w, size_t j, size_t i0,
                             size_t ni, float *out);

#endif
