/* kernels/x86/convt-f32-avx512.h: the AVX-512 variant's transposed float
 * convolution (kernel == stride, no padding), the supports_transpose and
 * run_transpose of qp_conv_f32_avx512 (kernels/conv-f32-ukernel.h). */
#ifndef QP_KERNELS_X86_CONVT_F32_AVX512_H
#define QP_KERNELS_X86_CONVT_F32_AVX512_H

#include <stdbool.h>
#include <stddef.h>

#include "kernels/conv-f32-ukernel.h"

/* Below this many multiply-adds (tens of microseconds) one thread is
 * faster than waking another (both AVX-512 float convolution files). */
#define PAR_MIN_MACS ((size_t)1 << 21)

/* True when g is one this kernel runs; *scratch: the floats it needs. */
bool qp_convt_f32_avx512_supports(const struct qp_conv_nd *g, size_t *scratch);

/* y = ConvTranspose(x, w) + bias then epi (may be NULL), over pool;
 * scratch of qp_convt_f32_avx512_supports's size. */
void qp_convt_f32_avx512_run(struct qp_pool *pool, const struct qp_conv_nd *g,
                             const float *x, const float *w, const float *bias,
                             float *y, float *scratch,
                             const struct qp_conv_epilogue *epi);

#endif
