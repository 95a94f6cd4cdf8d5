/* kernels/ref/gemm-s8.c: the reference int8/uint8 GEMM, the specification
 * the SIMD variants are tested against (kernels/gemm-s8.h).
 *
 *   A [m, k] int8|uint8 (row stride lda)   B [n, k] int8|uint8 (ldb)
 *   acc[i][j] = bias[j] + sum_k (A[i][k] - a_zp) * (B[j][k] - b_zp[j])
 *   C [m, n] = requant(rq, channel j, acc[i][j])  (int32 acc if no rq)
 *
 * Sums are modulo 2^32: they are computed in uint32_t, where wrap-around
 * is defined, and read back as two's complement int32. */
#include "kernels/gemm-s8.h"
#include "kernels/ref/ref-util.h"

void qp_gemm_s8_ref(const struct qp_gemm_s8_params *p, const void *b,
                    size_t ldb, const void *a, size_t m, size_t lda, void *c,
                    size_t ldc)
{
    for (size_t i = 0; i < m; i++) {
        for (size_t j = 0; j < p->n; j++) {
            uint32_t bzp = (uint32_t)qp_kern_zp(p->b_zero_point,
                                                p->b_zero_points, j);
            uint32_t acc = p->bias ? (uint32_t)p->bias[j] : 0;
            for (size_t k = 0; k < p->k; k++) {
                uint32_t x = (uint32_t)qp_kern_load8(p->a_dtype, a,
                                                     i * lda + k) -
                             (uint32_t)p->a_zero_point;
                uint32_t w = (uint32_t)qp_kern_load8(p->b_dtype, b,
                                                     j * ldb + k) - bzp;
                acc += x * w;
            }
            qp_kern_store_out(p->rq, j, (int32_t)acc, c, i * ldc + j);
        }
    }
}
