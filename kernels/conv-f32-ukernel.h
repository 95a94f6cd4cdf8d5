/* kernels/conv-f32-ukernel.h: the interface between the float
 * convolution driver (kernels/conv-f32.c) and its SIMD variants in
 * kernels/x86/. Internal to kernels/.
 *
 * A variant computes whole convolutions it supports, directly from the
 * NCHW tensors (no im2col): the same sums as the GEMM path
 * (kernels/conv-f32-gemm.c) in another order and with fused multiply-adds,
 * so results differ from it by rounding only (tests bound the
 * difference). */
#ifndef QP_KERNELS_CONV_F32_UKERNEL_H
#define QP_KERNELS_CONV_F32_UKERNEL_H

#include <stdbool.h>
#include <stddef.h>

#include "kernels/conv-f32.h"
#include "kernels/dispatch.h"

struct qp_conv_f32_variant {
    const char *name;  /* the instruction set's, for --version */
    enum qp_kern_isa isa;
    /* True when run handles g; then *scratch receives the floats of
     * scratch it needs. */
    bool (*supports)(const struct qp_conv_nd *g, size_t *scratch);
    /* qp_conv_f32's contract, for a supported g. */
    void (*run)(struct qp_pool *pool, const struct qp_conv_nd *g,
                const float *x, const float *w, const float *bias, float *y,
                float *scratch, const struct qp_conv_epilogue *epi);
    /* The same pair for the transposed convolution (NULL: none). */
    bool (*supports_transpose)(const struct qp_conv_nd *g, size_t *scratch);
    void (*run_transpose)(struct qp_pool *pool, const struct qp_conv_nd *g,
                          const float *x, const float *w, const float *bias,
                          float *y, float *scratch,
                          const struct qp_conv_epilogue *epi);
};

#if defined(__x86_64__)
extern const struct qp_conv_f32_variant qp_conv_f32_avx512;
#endif

#endif
