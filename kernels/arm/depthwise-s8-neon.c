/* kernels/arm/depthwise-s8-neon.c: one depthwise output pixel with NEON
 * (kernels/depthwise-s8-ukernel.h), for every aarch64 CPU (Advanced SIMD
 * is part of the base architecture). 16 channels per step: the input
 * bytes are widened to 32 bits (vmovl), the zero point subtracted and the
 * weights multiplied and added with vmlaq_u32, whose products and sums
 * keep the low 32 bits: exact modulo 2^32, like the reference. The lanes
 * are unsigned, as the reference's uint32 sums, because GCC implements
 * the signed intrinsics as C vector arithmetic, where overflow is
 * undefined. Then 8 channels, then the last few one by one in the
 * reference's arithmetic (qp_dw_s8_pixel_tail). */
#if defined(__aarch64__)
#include <arm_neon.h>

#include "kernels/depthwise-s8-ukernel.h"

#define INLINE static inline __attribute__((always_inline))

/* 8 input bytes (int8 when s, else uint8) widened to 32 bits minus zp,
 * modulo 2^32, in two vectors */
INLINE void load8(const uint8_t *p, bool s, uint32x4_t zp, uint32x4_t *lo,
                  uint32x4_t *hi)
{
    int16x8_t h = s ? vmovl_s8(vld1_s8((const int8_t *)p))
                    : vreinterpretq_s16_u16(vmovl_u8(vld1_u8(p)));
    *lo = vsubq_u32(vreinterpretq_u32_s32(vmovl_s16(vget_low_s16(h))), zp);
    *hi = vsubq_u32(vreinterpretq_u32_s32(vmovl_high_s16(h)), zp);
}

/* channels [c, c + 8 * nb) of one pixel, nb (1 or 2) a constant */
INLINE void block(int nb, size_t c, size_t taps, const uint8_t *const *x,
                  const int32_t *const *w, bool s, uint32x4_t zp,
                  const int32_t *init, int32_t *acc)
{
    uint32x4_t a[4];
#pragma GCC unroll 4
    for (int v = 0; v < 2 * nb; v++)
        a[v] = vld1q_u32((const uint32_t *)init + c + 4 * v);
    for (size_t t = 0; t < taps; t++) {
#pragma GCC unroll 2
        for (int h = 0; h < nb; h++) {
            uint32x4_t lo, hi;
            load8(x[t] + c + 8 * h, s, zp, &lo, &hi);
            const uint32_t *wt = (const uint32_t *)w[t] + c + 8 * h;
            a[2 * h] = vmlaq_u32(a[2 * h], lo, vld1q_u32(wt));
            a[2 * h + 1] = vmlaq_u32(a[2 * h + 1], hi, vld1q_u32(wt + 4));
        }
    }
#pragma GCC unroll 4
    for (int v = 0; v < 2 * nb; v++)
        vst1q_u32((uint32_t *)acc + c + 4 * v, a[v]);
}

/* the whole pixel; s is a constant after inlining */
INLINE void pixel_all(size_t n, size_t taps, const uint8_t *const *x,
                      const int32_t *const *w, bool s, int32_t zp,
                      const int32_t *init, int32_t *acc)
{
    const uint32x4_t z = vdupq_n_u32((uint32_t)zp);
    size_t c = 0;
    for (; c + 16 <= n; c += 16)
        block(2, c, taps, x, w, s, z, init, acc);
    if (c + 8 <= n) {
        block(1, c, taps, x, w, s, z, init, acc);
        c += 8;
    }
    qp_dw_s8_pixel_tail(c, n, taps, x, w, s, zp, init, acc);
}

static void pixel(size_t n, size_t taps, const uint8_t *const *x,
                  const int32_t *const *w, bool s, int32_t zp,
                  const int32_t *init, int32_t *acc)
{
    if (s)
        pixel_all(n, taps, x, w, true, zp, init, acc);
    else
        pixel_all(n, taps, x, w, false, zp, init, acc);
}

const struct qp_dw_s8_ukernel qp_dw_s8_neon = {
    .name = "neon",
    .isa = QP_KERN_NEON,
    .pixel = pixel,
};
#else
/* not aarch64: nothing to build (ISO C wants a declaration) */
typedef int qp_dw_s8_neon_unused;
#endif
