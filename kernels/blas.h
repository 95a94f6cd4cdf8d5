/* kernels/blas.h: the one place qprobe calls OpenBLAS.
 *
 * Row-major single-precision GEMM, C = alpha * op(A) * op(B) + beta * C,
 * with op(X) = X or X^T. Large products are split over core/parallel.h
 * threads, each running a single-threaded OpenBLAS sgemm (OpenBLAS's own
 * spinning pool is not used). Safe to call from several threads. */
#ifndef QP_KERNELS_BLAS_H
#define QP_KERNELS_BLAS_H

#include <stdbool.h>
#include <stddef.h>

/* op(A) is [m, k], op(B) is [k, n], C is [m, n]; lda/ldb/ldc are the row
 * strides (in elements) of A, B and C as stored. m, n or k of 0 is allowed
 * (with k == 0, C = beta * C). Sizes must fit in int (OpenBLAS's interface);
 * callers split larger products. */
struct qp_pool;

/* pool (core/parallel.h; NULL: threads started per call) runs the parts
 * of large products. */
void qp_blas_sgemm(struct qp_pool *pool, bool trans_a, bool trans_b, size_t m,
                   size_t n, size_t k,
                   float alpha, const float *a, size_t lda, const float *b,
                   size_t ldb, float beta, float *c, size_t ldc);

/* Largest dimension or stride qp_blas_sgemm accepts. */
#define QP_BLAS_MAX_DIM ((size_t)0x7fffffff)

/* The number of threads large products use, and OpenBLAS's build
 * description ("OpenBLAS 0.3.21 ... Haswell"): static storage. */
int qp_blas_threads(void);
const char *qp_blas_describe(void);

#endif
