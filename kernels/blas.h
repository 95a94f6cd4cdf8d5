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

/* The same for the rows of A: C = alpha * A A^T + beta * C with A [n, k]
 * (row stride lda), e.g. the Hessian of inputs given as columns (an
 * im2col matrix [features, positions]). */
void qp_blas_ssyrk_lower_rows(struct qp_pool *pool, size_t n, size_t k,
                              float alpha, const float *a, size_t lda,
                              float beta, float *c, size_t ldc);

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

/* The number of threads large products use. */
int qp_blas_threads(void);

/* ---- which kernels OpenBLAS runs ----
 *
 * A DYNAMIC_ARCH OpenBLAS picks its kernels ("core") from the CPU's family
 * and model when the library loads, unless OPENBLAS_CORETYPE names one. A
 * library older than the CPU falls back to old kernels: Debian 12's 0.3.21
 * runs its Prescott (SSE3) kernels on Intel family 6 models it does not
 * list (e.g. 207, with AVX-512 and AMX), 3-4x slower than its SkylakeX
 * ones there. qprobe decides the core from the CPU's features instead
 * (qp_blas_wanted_core) when the library's choice is for an older
 * instruction set than the CPU has. The choice can only be made before
 * OpenBLAS initializes, which happens when the program loads (the
 * library's constructor; LAPACKE and libblas.so.3 load it too, so loading
 * it later with dlopen is not reliable): qp_blas_startup re-executes the
 * program with OPENBLAS_CORETYPE set. That costs one more program start
 * (about 30 ms on this machine, as much as a start without it), once per run
 * and only on such CPUs. An OPENBLAS_CORETYPE already in the environment
 * (the user's, or a machine's that works around a miscomputing core) is
 * never changed, nor any other OPENBLAS_* variable. */

/* Called first in main() (kernels/startup.h does), before any thread is
 * started or output written, with main's argv. When OPENBLAS_CORETYPE is
 * unset, the library is DYNAMIC_ARCH and its core is outgrown by this CPU
 * (qp_blas_core_outgrown), sets OPENBLAS_CORETYPE to qp_blas_wanted_core()
 * and QP_BLAS_REPLACED to the library's own choice, and execs
 * /proc/self/exe with argv and that environment. Returns when nothing is
 * to be done or the exec failed (then the library keeps its choice).
 * QP_BLAS_ASSUME_CORE=NAME makes it act as if the library had chosen NAME
 * (tests of this path on CPUs the library knows). */
void qp_blas_startup(char **argv);

/* The core OpenBLAS runs ("SkylakeX"), and the one qprobe picks for this
 * CPU from its features: "SkylakeX" (AVX-512 F, BW, VL, DQ, CD), "Zen"
 * (AMD) or "Haswell" (AVX2 + FMA), "Sandybridge" (AVX); NULL on CPUs
 * without AVX and off x86-64 (nothing to improve). Static storage. */
const char *qp_blas_core(void);
const char *qp_blas_wanted_core(void);

/* True when lib_core is an OpenBLAS x86-64 core whose kernels stop at an
 * older instruction set than want's (Prescott or Haswell against
 * SkylakeX). False for cores at least as new (Cooperlake against
 * SkylakeX) and for names this table does not know (a newer library
 * knows better). */
bool qp_blas_core_outgrown(const char *lib_core, const char *want);

/* The cores qprobe may pick that this CPU runs, best first (for tests and
 * benchmarks that try each one): up to max names into names; returns how
 * many. */
size_t qp_blas_candidate_cores(const char **names, size_t max);

/* One line: "blas: OpenBLAS 0.3.21 ... (build) core SkylakeX (why)", why
 * being OpenBLAS's own choice, OPENBLAS_CORETYPE from the environment, or
 * set by qprobe over the library's fallback. Static storage. */
const char *qp_blas_describe(void);

#endif
