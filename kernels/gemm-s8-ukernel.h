/* kernels/gemm-s8-ukernel.h: the interface between the GEMM driver
 * (kernels/gemm-s8.c: packing, blocking, threads, epilogue) and the SIMD
 * micro-kernels in kernels/x86/ and kernels/arm/ (one file per instruction
 * set). Internal to kernels/.
 *
 * A micro-kernel multiplies unsigned bytes by signed bytes, the shape of
 * VNNI's vpdpbusd, or (a_signed) signed by signed bytes, the shape of
 * NEON's SDOT: the driver maps every int8/uint8 combination onto it by
 * flipping the top bit (a ^ 0x80 turns int8 into uint8 + 128, and uint8
 * into int8 + 128) and folds the offsets this introduces into per-column
 * terms (see kernels/gemm-s8.c). */
#ifndef QP_KERNELS_GEMM_S8_UKERNEL_H
#define QP_KERNELS_GEMM_S8_UKERNEL_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/dispatch.h"

struct qp_gemm_s8_ukernel {
    const char *name;      /* the instruction set's name, for --version */
    enum qp_kern_isa isa;
    unsigned mr, nr;       /* tile rows (of A and C), tile columns (of C) */
    unsigned kr;           /* K is zero-padded to kp, a multiple of kr */
    unsigned a_elem;       /* bytes per packed A element: 1 (u8), 2 (u16) */
    unsigned b_elem;       /* bytes per packed B element: 1 (s8), 2 (s16) */
    unsigned a_signed;     /* 0: packed A is unsigned (u8/u16); 1: signed
                              (s8/s16), e.g. for SDOT */
    /* One mr x nr tile, all sums modulo 2^32:
     *   c[r*ldc + j] = init[j] + sum_{k < kp} A[r][k] * B[j][k]
     * a: packed A, [mr][kp] elements (row r starts at element r*kp), u8/u16
     *    (s8/s16 when a_signed).
     * b: one packed panel of B, [kp/kr][nr][kr] elements, s8/s16.
     * init: nr int32. c: rows of ldc int32; all nr columns are written. */
    void (*tile)(size_t kp, const void *a, const void *b, const int32_t *init,
                 int32_t *c, size_t ldc);
    /* The same for one row (a: kp elements), for tiles with few valid
     * rows (matrix-vector products). */
    void (*tile1)(size_t kp, const void *a, const void *b,
                  const int32_t *init, int32_t *c, size_t ldc);
};

/* x86 micro-kernels (defined only on x86-64). */
extern const struct qp_gemm_s8_ukernel qp_gemm_s8_avx2;
extern const struct qp_gemm_s8_ukernel qp_gemm_s8_avxvnni;
extern const struct qp_gemm_s8_ukernel qp_gemm_s8_avx512vnni;
/* aarch64 micro-kernel (defined only on aarch64). */
extern const struct qp_gemm_s8_ukernel qp_gemm_s8_neondot;

#endif
