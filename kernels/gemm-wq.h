/* kernels/gemm-wq.h: a float GEMM against a weight kept in its stored form.
 *
 *   y[m, n] = x[m, k] . W^T (+ bias[n]),  W [n, k] row-major (row j is
 *   output j: the torch / Hugging Face Linear layout)
 *
 * W may be float32, bfloat16, float16, or integers with quantization
 * parameters (int8/uint8, packed int4/uint4 and narrower, anything
 * core/tensor.h's qp_tensor_read_f32 reads), per tensor, per output row or
 * in groups of G consecutive elements along k. Tiles of W are decoded to
 * float32 into scratch (a tile fits in L2) just before OpenBLAS multiplies
 * them, so the weight is never expanded whole: an int4 or BF16 model runs
 * with its own bytes plus a few hundred KB per thread.
 *
 * A decoded integer element is (float)(q - z) * s with the scale s and
 * zero point z of its row or group, the same float qp_tensor_read_f32
 * gives: the product equals the float32 product with the dequantized
 * weight, to the rounding of the GEMM's sums.
 *
 * This is the reference weight-only path (the fake mode and the
 * weight-only int mode of LLM linear layers both run it). Format-specific
 * integer kernels (int4 group-wise with int8 activations, as ExecuTorch's
 * 8da4w) are separate kernels a planner selects; they do not change this
 * one. */
#ifndef QP_KERNELS_GEMM_WQ_H
#define QP_KERNELS_GEMM_WQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/status.h"
#include "core/tensor.h"

struct qp_pool;

/* How scales index the weight's elements. */
enum qp_wq_gran {
    QP_WQ_FLOAT = 0, /* a float weight: no scales */
    QP_WQ_TENSOR,    /* one scale (and zero point) */
    QP_WQ_ROW,       /* scale[j] for row j */
    QP_WQ_GROUP,     /* scale[j * groups + i / group] */
    QP_WQ_GENERIC,   /* any other layout: element by element through
                        qp_tensor_read_f32 (slow, exact) */
    QP_WQ_GRAN_COUNT
};

/* A weight as the kernel reads it (borrowed pointers). */
struct qp_wq {
    const struct qp_tensor *t; /* the tensor (for QP_WQ_GENERIC) */
    enum qp_dtype dtype;
    size_t n, k;
    const void *data;          /* element j * k + i (packed types: bits) */
    enum qp_wq_gran gran;
    size_t group, groups;      /* QP_WQ_GROUP: elements per group along k
                                  (the last may be partial), ceil(k / group) */
    const float *scale;
    const int32_t *zp;         /* NULL: all zero */
};

/* Describes the 2-D tensor w ([n, k]) for the kernel: a float tensor
 * (F32, BF16, F16) or an integer tensor with quantization parameters
 * (per-tensor, per-axis 0, blocked along axis 1, or anything else as
 * QP_WQ_GENERIC). QP_E_UNSUPPORTED for other ranks or dtypes (naming w). */
enum qp_status qp_wq_init(struct qp_wq *wq, const struct qp_tensor *w,
                          struct qp_error *err);

/* Decodes rows [j0, j0 + nj) and columns [i0, i0 + ni) of W into
 * out[r * ldo + c] (float32). */
void qp_wq_decode(const struct qp_wq *w, size_t j0, size_t nj, size_t i0,
                  size_t ni, float *out, size_t ldo);

/* Scratch bytes qp_gemm_wq needs for threads threads. */
size_t qp_gemm_wq_scratch_size(const struct qp_wq *w, size_t m, int threads);

/* y[r * ldy + j] = sum_i x[r * ldx + i] * W[j, i] (+ bias[j]) for r < m,
 * j < n. pool runs the parts (NULL: one thread); serial is a pool of one
 * thread (core/parallel.h) that each part's OpenBLAS call runs on, so
 * parts never split again. scratch holds qp_gemm_wq_scratch_size(w, m,
 * qp_pool_threads(pool)) bytes (16-byte aligned). bias may be NULL. */
void qp_gemm_wq(struct qp_pool *pool, struct qp_pool *serial,
                const struct qp_wq *w, const float *x, size_t ldx, size_t m,
                const float *bias, float *y, size_t ldy, void *scratch);

#endif
