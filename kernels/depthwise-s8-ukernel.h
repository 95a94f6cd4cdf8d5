/* kernels/depthwise-s8-ukernel.h: the interface between the depthwise
 * driver (kernels/depthwise-s8.c) and its SIMD variants in kernels/x86/
 * and kernels/arm/.
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
    /* n pixels of one channel's output row (kernels/depthwise-s8-nchw.c),
     * sums modulo 2^32:
     *   acc[j] = init + sum_{t < taps} x[t][j] * w[t]
     * x[t]: n input bytes (int8 when x_signed, else uint8) under the n
     * pixels for tap t; w[t]: the tap's weight, zero point subtracted
     * (the input's zero point is folded into init). NULL: not provided. */
    void (*row)(size_t n, size_t taps, const uint8_t *const *x,
                const int32_t *w, bool x_signed, int32_t init, int32_t *acc);
};

/* row() in the reference's arithmetic from pixel j0 on: the tail a SIMD
 * variant leaves after its whole vectors. */
static inline void qp_dw_s8_row_tail(size_t j0, size_t n, size_t taps,
                                     const uint8_t *const *x, const int32_t *w,
                                     bool x_signed, int32_t init, int32_t *acc)
{
    for (size_t j = j0; j < n; j++) {
        uint32_t a = (uint32_t)init;
        for (size_t t = 0; t < taps; t++) {
            int32_t v = x_signed ? (int8_t)x[t][j] : x[t][j];
            a += (uint32_t)v * (uint32_t)w[t];
        }
        acc[j] = (int32_t)a;
    }
}

/* Channels [c0, n) of pixel() in the reference's arithmetic (uint32,
 * modulo 2^32): the tail a SIMD variant leaves after its whole vectors. */
static inline void qp_dw_s8_pixel_tail(size_t c0, size_t n, size_t taps,
                                       const uint8_t *const *x,
                                       const int32_t *const *w, bool x_signed,
                                       int32_t zp, const int32_t *init,
                                       int32_t *acc)
{
    for (size_t c = c0; c < n; c++) {
        uint32_t a = (uint32_t)init[c];
        for (size_t t = 0; t < taps; t++) {
            int32_t v = x_signed ? (int8_t)x[t][c] : x[t][c];
            a += ((uint32_t)v - (uint32_t)zp) * (uint32_t)w[t][c];
        }
        acc[c] = (int32_t)a;
    }
}

/* The row of an NCHW plane for stride and dilation 1 along rows, with
 * AVX-512 VNNI and VBMI (kernels/x86/depthwise-s8-vnni.c), modulo 2^32:
 *   acc[j] = init + sum_{y < kh, x < kw} u(rows[y][j + x]) * w[y][x]
 * u(b) = b for uint8 input, b ^ 0x80 (int8 + 128) for int8 (x_signed; the
 * caller folds 128 * sum w into init); w int8, packed four taps of a row
 * per int32 (little-endian, zero past kw): wq[y * ceil(kw/4) + g]. rows[y]
 * has len readable bytes. Defined only on x86-64; call only when
 * qp_dw_s8_rows4_available(). */
#if defined(__x86_64__)
bool qp_dw_s8_rows4_available(void);
void qp_dw_s8_rows4(size_t n, size_t kh, size_t kw, const uint8_t *const *rows,
                    size_t len, const int32_t *wq, bool x_signed, int32_t init,
                    int32_t *acc);
#else
/* elsewhere never available: callers' dead branches still link */
static inline bool qp_dw_s8_rows4_available(void) { return false; }
static inline void qp_dw_s8_rows4(size_t n, size_t kh, size_t kw,
                                  const uint8_t *const *rows, size_t len,
                                  const int32_t *wq, bool x_signed,
                                  int32_t init, int32_t *acc)
{
    (void)n, (void)kh, (void)kw, (void)rows, (void)len, (void)wq;
    (void)x_signed, (void)init, (void)acc;
}
#endif

/* x86 variants (defined only on x86-64). */
extern const struct qp_dw_s8_ukernel qp_dw_s8_avx2;
extern const struct qp_dw_s8_ukernel qp_dw_s8_avx512;
/* aarch64 variant (defined only on aarch64). */
extern const struct qp_dw_s8_ukernel qp_dw_s8_neon;

#endif
