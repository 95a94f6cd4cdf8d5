/* kernels/depthwise-s8-ukernel.h: the interface between the depthwise
 * driver (kernels/depthwise-s8.c) and its SIMD variants in kernels/x86/.
 * Internal to kernels/. */
#ifndef QP_KERNELS_DEPTHWISE_S8_UKERNEL_H
#define QP_KERNELS_DEPTHWISE_S8_UKERNEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/dispatch.h"

struct qp_dw_s8_ukernel {
    const char *name;     /* the instruction set's name, for --version */
    enum qp_kern_isa isa;
    /* One output pixel of n channels, sums modulo 2^32:
     *   acc[c] = init[c] + sum_{t < taps} (x[t][c] - zp) * w[t][c]
     * x[t]: n input bytes (int8 when x_signed, else uint8) of tap t;
     * w[t]: n int32 weights of tap t (zero point already subtracted). */
    void (*pixel)(size_t n, size_t taps, const uint8_t *const *x,
                  const int32_t *const *w, bool x_signed, int32_t zp,
                  const int32_t *init, int32_t *acc);
};

/* x86 variants (defined only on x86-64). */
extern const struct qp_dw_s8_ukernel qp_dw_s8_avx2;
extern const struct qp_dw_s8_ukernel qp_dw_s8_avx512;

#endif
