/* kernels/gemm-s8.h: 8-bit integer matrix multiplication with int32
 * accumulation, zero points, bias and requantization.
 *
 *   acc[m][n] = bias[n] + sum_k (A[m][k] - a_zp) * (B[n][k] - b_zp[n])
 *   C[m][n]   = requant(rq, channel n, acc[m][n])
 *
 *   A  [M, K]  activations, int8 or uint8, row stride lda (elements)
 *   B  [N, K]  weights, int8 or uint8: row n belongs to output channel n
 *              (TFLite's fully-connected [OC, IC] and conv OHWI layouts)
 *   C  [M, N]  rq->out_dtype (int8, uint8, int16), or int32 accumulators
 *              when rq is NULL; row stride ldc (elements)
 *
 * Integer arithmetic is modulo 2^32 (two's complement wrap-around): this
 * equals the runtimes' int32 arithmetic wherever theirs does not overflow,
 * and gives every variant the same bytes where it does. Zero points are
 * subtracted (ONNX convention); TFLite's offsets are their negation
 * (input_offset = -a_zp, weights_offset = -b_zp).
 *
 * Flow (as TFLite Micro): prepare once (packs B for the chosen variant,
 * precomputes the per-column zero-point terms), then run many times. run
 * never allocates: the caller asks qp_gemm_s8_scratch_size and passes that
 * many bytes. */
#ifndef QP_KERNELS_GEMM_S8_H
#define QP_KERNELS_GEMM_S8_H

#include <stddef.h>
#include <stdint.h>

#include "core/dtype.h"
#include "core/status.h"
#include "kernels/dispatch.h"
#include "kernels/requant.h"

struct qp_gemm_s8_ukernel;

struct qp_gemm_s8_params {
    size_t n, k;                  /* output channels, reduction length */
    enum qp_dtype a_dtype;        /* QP_DTYPE_I8 or QP_DTYPE_U8 */
    enum qp_dtype b_dtype;        /* QP_DTYPE_I8 or QP_DTYPE_U8 */
    int32_t a_zero_point;         /* any int32 */
    const int32_t *b_zero_point;  /* b_zero_points values; NULL: all 0 */
    size_t b_zero_points;         /* 1 (per tensor) or n (per channel) */
    const int32_t *bias;          /* [n] or NULL */
    const struct qp_rq *rq;       /* borrowed, must outlive the gemm; its
                                     channels must be 1 or n. NULL: int32
                                     output */
    enum qp_kern_isa isa;         /* QP_KERN_AUTO: the dispatch table's */
    int threads;                  /* 0: qp_parallel_threads() */
};

/* A prepared GEMM. Fields are private to kernels/. */
struct qp_gemm_s8 {
    size_t n, k, kp, npad;
    enum qp_dtype a_dtype, b_dtype;
    int32_t a_zero_point;
    const struct qp_gemm_s8_ukernel *uk; /* NULL: reference */
    struct qp_rq rq;              /* copy of *params.rq (arrays borrowed) */
    int has_rq;
    int threads;
    size_t mb;                    /* rows per block (a multiple of uk->mr) */
    /* reference: copies of the operands */
    uint8_t *b;                   /* [n][k] */
    int32_t *bias;                /* [n] or NULL */
    int32_t *b_zero_point;        /* [n] */
    /* micro-kernel: packed B and folded zero-point terms */
    void *bpack;                  /* npad/nr panels */
    int32_t *colterm;             /* [npad] */
    int32_t *beta;                /* [n], NULL when every entry is 0 */
};

/* Checks params (dtypes, sizes, rq channels), copies or packs B (row
 * stride ldb elements) and derives what run needs. B may be freed
 * afterwards; params.rq may not. QP_E_INVAL names the bad parameter,
 * QP_E_UNSUPPORTED an unavailable isa, QP_E_OVERFLOW/QP_E_NOMEM sizes.
 * On failure g is left released. */
enum qp_status qp_gemm_s8_prepare(struct qp_gemm_s8 *g,
                                  const struct qp_gemm_s8_params *params,
                                  const void *b, size_t ldb,
                                  struct qp_error *err);

void qp_gemm_s8_release(struct qp_gemm_s8 *g);

/* Name of the variant the prepared gemm runs ("ref", "avx512-vnni"...). */
const char *qp_gemm_s8_variant(const struct qp_gemm_s8 *g);

/* Bytes of scratch run needs for m rows (0 is possible). */
size_t qp_gemm_s8_scratch_size(const struct qp_gemm_s8 *g, size_t m);

/* C = requant(A x B^T) for m rows of A. scratch: qp_gemm_s8_scratch_size
 * bytes (any alignment). Returns QP_E_INVAL when lda < k, ldc < n or
 * scratch is missing. */
enum qp_status qp_gemm_s8_run(const struct qp_gemm_s8 *g, const void *a,
                              size_t m, size_t lda, void *c, size_t ldc,
                              void *scratch, struct qp_error *err);

/* ---- building blocks for kernels/ (conv, fc) ---------------------------- */

/* Scratch for one thread processing up to `rows` rows at a time. */
size_t qp_gemm_s8_thread_scratch(const struct qp_gemm_s8 *g);

/* Rows [0, m) of A into C, columns [0, n), on the calling thread only.
 * scratch: qp_gemm_s8_thread_scratch bytes, 64-byte aligned. */
void qp_gemm_s8_rows(const struct qp_gemm_s8 *g, const void *a, size_t m,
                     size_t lda, void *c, size_t ldc, void *scratch);

/* The portable reference (kernels/ref/gemm-s8.c), the specification of
 * everything above: p as for prepare, b [n][k] with row stride ldb.
 * Needs no scratch. */
void qp_gemm_s8_ref(const struct qp_gemm_s8_params *p, const void *b,
                    size_t ldb, const void *a, size_t m, size_t lda, void *c,
                    size_t ldc);

#endif
