/* kernels/blas.c: OpenBLAS behind qp_blas_* (see kernels/blas.h). */
#include "kernels/blas.h"

#include <cblas.h>

void qp_blas_sgemm(bool trans_a, bool trans_b, size_t m, size_t n, size_t k,
                   float alpha, const float *a, size_t lda, const float *b,
                   size_t ldb, float beta, float *c, size_t ldc)
{
    if (m == 0 || n == 0)
        return;
    if (k == 0) {
        /* BLAS leaves C alone when k == 0 only if beta == 1; be explicit */
        for (size_t i = 0; i < m; i++)
            for (size_t j = 0; j < n; j++)
                c[i * ldc + j] = beta == 0.0f ? 0.0f : beta * c[i * ldc + j];
        return;
    }
    /* cblas requires leading dimensions >= the stored row length even when
     * a dimension is 1 */
    size_t la = trans_a ? m : k, lb = trans_b ? k : n;
    if (lda < la)
        lda = la;
    if (ldb < lb)
        ldb = lb;
    if (ldc < n)
        ldc = n;
    cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
                trans_b ? CblasTrans : CblasNoTrans, (blasint)m, (blasint)n,
                (blasint)k, alpha, a, (blasint)lda, b, (blasint)ldb, beta, c,
                (blasint)ldc);
}

int qp_blas_threads(void)
{
    return openblas_get_num_threads();
}

const char *qp_blas_describe(void)
{
    return openblas_get_config();
}
