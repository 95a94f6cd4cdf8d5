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

/* The lower triangle (j <= i) of the row-major [n, n] matrix C,
 * C = alpha * A^T A + beta * C, with A [k, n] (row stride lda). Only the
 * lower triangle of C is read or written. Large products are split over
 * the pool's threads in row ranges of equal triangle area (a GEMM for the
 * part left of the diagonal block and a SYRK for the block). n of 0 is
 * allowed; k of 0 gives C = beta * C. */
void qp_blas_ssyrk_lower(struct qp_pool *pool, size_t n, size_t k, float alpha,
                         const float *a, size_t lda, float beta, float *c,
                         size_t ldc);

/* C [m, n] = alpha * B S + beta * C, with B [m, n] and S a symmetric
 * [n, n] matrix of which only the lower triangle is read (row-major,
 * strides ldb, lds, ldc). Large products are split over the pool's
 * threads in row blocks of B. */
void qp_blas_ssymm_right_lower(struct qp_pool *pool, size_t m, size_t n,
                               float alpha, const float *s, size_t lds,
                               const float *b, size_t ldb, float beta, float *c,
                               size_t ldc);

/* LAPACK (OpenBLAS's) in single precision on row-major matrices, on as
 * many threads as pool has (OpenBLAS's own, set for the call; products
 * from other threads wait meanwhile). The Cholesky factor of the
 * symmetric matrix whose lower triangle a [n, n] holds: on success the lower triangle holds L with
 * A = L L^T; the strict upper triangle is never touched. Returns 0, or
 * k > 0 when the leading minor of order k is not positive definite
 * (LAPACK's info; a is then partly overwritten). */
int qp_lapack_spotrf_lower(struct qp_pool *pool, size_t n, float *a,
                           size_t lda);

/* The inverse of the lower-triangular matrix in a [n, n] (non-unit
 * diagonal), in place; the strict upper triangle is never touched.
 * Returns 0, or k > 0 when L[k-1][k-1] is exactly zero. */
int qp_lapack_strtri_lower(struct qp_pool *pool, size_t n, float *a,
                           size_t lda);

/* Largest dimension or stride qp_blas_sgemm accepts. */
#define QP_BLAS_MAX_DIM ((size_t)0x7fffffff)

/* The number of threads large products use, and OpenBLAS's build
 * description ("OpenBLAS 0.3.21 ... Haswell"): static storage. */
int qp_blas_threads(void);
const char *qp_blas_describe(void);

#endif
