/* kernels/arm/gemm-s8-neondot.c: the GEMM micro-kernel for aarch64 with
 * the dot-product extension (Armv8.2 FEAT_DotProd; kernels/gemm-s8-
 * ukernel.h). SDOT multiplies signed by signed bytes, so the kernel asks
 * for signed packed A (a_signed: the driver leaves int8 A as it is and
 * flips uint8 A to int8 - 128) beside the usual signed packed B.
 *
 * A tile is 8 rows x 8 columns in 16 int32x4 accumulators. Packed B holds,
 * per K group of 4, 8 columns x 4 bytes (two q registers); the by-element
 * SDOT (vdotq_laneq_s32) adds to each int32 lane the dot product of 4 B
 * bytes with 4 bytes of one A row picked from a q register, so one 16-byte
 * load of an A row serves 4 K groups. Each 4-product sum is at most
 * 4 * 128 * 128 = 2^16 in magnitude and SDOT accumulates without
 * saturation: the sums are modulo 2^32, as the contract asks. Registers:
 * 16 accumulators + 8 A rows + 2 B = 26 of 32.
 *
 * Built with -march=armv8.2-a+dotprod (mk/neon.mk) and only called after
 * the run-time check of HWCAP_ASIMDDP (kernels/dispatch.c). */
#if defined(__aarch64__)
#include <arm_neon.h>
#include <string.h>

#include "kernels/gemm-s8-ukernel.h"

#define MR 8 /* tile rows */
#define NV 2 /* int32x4 vectors per row: 8 columns */
#define KR 4 /* K elements per SDOT group */

#define INLINE static inline __attribute__((always_inline))

/* rows (a constant after inlining: MR or 1) rows of one tile */
INLINE void tile_rows(int rows, size_t kp, const int8_t *a, const int8_t *b,
                      const int32_t *init, int32_t *c, size_t ldc)
{
    int32x4_t acc[MR][NV];
#pragma GCC unroll 2
    for (int j = 0; j < NV; j++) {
        int32x4_t v = vld1q_s32(init + 4 * j);
#pragma GCC unroll 8
        for (int r = 0; r < rows; r++)
            acc[r][j] = v;
    }
    size_t g = 0;
    /* 16 K at a time: one A load per row, 4 groups of B */
    for (; g + 16 <= kp; g += 16) {
        int8x16_t av[MR];
#pragma GCC unroll 8
        for (int r = 0; r < rows; r++)
            av[r] = vld1q_s8(a + (size_t)r * kp + g);
#define GROUP(L)                                                               \
    do {                                                                       \
        int8x16_t b0 = vld1q_s8(b + 32 * (L)), b1 = vld1q_s8(b + 32 * (L) + 16); \
        _Pragma("GCC unroll 8") for (int r = 0; r < rows; r++) {               \
            acc[r][0] = vdotq_laneq_s32(acc[r][0], b0, av[r], L);              \
            acc[r][1] = vdotq_laneq_s32(acc[r][1], b1, av[r], L);              \
        }                                                                      \
    } while (0)
        GROUP(0);
        GROUP(1);
        GROUP(2);
        GROUP(3);
#undef GROUP
        b += 4 * 32;
    }
    /* the last K groups (kp % 16 / 4 of them): A broadcast per row */
    for (; g < kp; g += KR) {
        int8x16_t b0 = vld1q_s8(b), b1 = vld1q_s8(b + 16);
#pragma GCC unroll 8
        for (int r = 0; r < rows; r++) {
            int32_t w;
            memcpy(&w, a + (size_t)r * kp + g, 4);
            int8x16_t av = vreinterpretq_s8_s32(vdupq_n_s32(w));
            acc[r][0] = vdotq_s32(acc[r][0], b0, av);
            acc[r][1] = vdotq_s32(acc[r][1], b1, av);
        }
        b += 32;
    }
#pragma GCC unroll 8
    for (int r = 0; r < rows; r++)
#pragma GCC unroll 2
        for (int j = 0; j < NV; j++)
            vst1q_s32(c + (size_t)r * ldc + 4 * j, acc[r][j]);
}

static void tile(size_t kp, const void *a, const void *b, const int32_t *init,
                 int32_t *c, size_t ldc)
{
    tile_rows(MR, kp, a, b, init, c, ldc);
}

static void tile1(size_t kp, const void *a, const void *b, const int32_t *init,
                  int32_t *c, size_t ldc)
{
    tile_rows(1, kp, a, b, init, c, ldc);
}

const struct qp_gemm_s8_ukernel qp_gemm_s8_neondot = {
    .name = "neon-dot",
    .isa = QP_KERN_NEONDOT,
    .mr = MR,
    .nr = NV * 4,
    .kr = KR,
    .a_elem = 1,
    .b_elem = 1,
    .a_signed = 1,
    .tile = tile,
    .tile1 = tile1,
};
#else
/* not aarch64: nothing to build (ISO C wants a declaration) */
typedef int qp_gemm_s8_neondot_unused;
#endif
