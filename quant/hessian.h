/* quant/hessian.h: the Hessian of a layer's output error with respect to
 * its weights, H = 2/n X^T X over the n calibration tokens X [n, cols]
 * (the layer's inputs), accumulated batch by batch so the activations are
 * never all in memory, and the output reconstruction error it gives.
 *
 * Accumulation follows GPTQModel's process_batch (the reference
 * IST-DASLab/gptq add_batch written as one BLAS call): for a batch of
 * `rows` tokens, H = n/(n+rows) H + 2/(n+rows) X^T X, in float32, with
 * one SYRK (only the lower triangle is computed: half the FLOPs of the
 * reference's GEMM). The reference counts n in sequences, GPTQModel and
 * qprobe in tokens; the scale of H does not change GPTQ's result, only
 * its loss figure (quant/gptq.h). A conv layer's inputs arrive as im2col
 * rows [tokens * positions, in * kh * kw]. */
#ifndef QP_QUANT_HESSIAN_H
#define QP_QUANT_HESSIAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/status.h"

struct qp_pool;

struct qp_hessian {
    size_t cols;           /* in-features */
    uint64_t tokens;       /* rows of X added so far (n) */
    float *h;              /* [cols, cols] row-major, owned; only the lower
                            * triangle (j <= i) is maintained and read */
    char *name;            /* layer name for messages, owned */
    struct qp_pool *pool;  /* borrowed; NULL: the default threads */
    bool poisoned;         /* a batch held NaN/Inf: H is unusable */
};

/* A zero accumulator for a layer with cols in-features (cols >= 1;
 * cols * cols floats must fit in memory: QP_E_OVERFLOW / QP_E_NOMEM).
 * name (may be NULL: "layer") is copied. pool runs the products. *out
 * belongs to the caller (qp_hessian_free). */
enum qp_status qp_hessian_new(const char *name, size_t cols,
                              struct qp_pool *pool, struct qp_hessian **out,
                              struct qp_error *err);

void qp_hessian_free(struct qp_hessian *h);

/* Adds a batch: x [rows, cols] row-major (cols must equal h->cols:
 * QP_E_SHAPE). rows of 0 is a no-op. A batch holding NaN or Inf, or whose
 * squares overflow float32, is refused with QP_E_INVAL naming the layer,
 * the row and the column; H is then poisoned and every later add or use
 * fails (the batch was already folded in). */
enum qp_status qp_hessian_add(struct qp_hessian *h, const float *x,
                              size_t rows, size_t cols, struct qp_error *err);

/* The same for a batch given as columns: xt [cols, ld] row-major holds
 * the batch's token r in column r < rows (an im2col matrix [features,
 * positions]: one SYRK, no transposition). QP_E_INVAL when ld < rows. */
enum qp_status qp_hessian_add_cols(struct qp_hessian *h, const float *xt,
                                   size_t cols, size_t rows, size_t ld,
                                   struct qp_error *err);

/* QP_OK when h can be used by GPTQ: not poisoned, at least one token. */
enum qp_status qp_hessian_check(const struct qp_hessian *h,
                                struct qp_error *err);

/* The relative output error of approximations of a weight on the
 * calibration inputs: for each k < count,
 *     rel[k] = ||X W^T - X What_k^T||^2 / ||X W^T||^2
 *            = tr(D H D^T) / tr(W H W^T),  D = W - What_k,
 * computed from H alone (no X). w and what[k] are [rows, h->cols] f32.
 * Costs 2 rows cols^2 multiply-adds per matrix (a SYMM on row panels);
 * sums in double. rel is 0 when both traces are 0 and inf when only the
 * denominator is. QP_E_NOMEM, or QP_E_INVAL for a poisoned H. */
enum qp_status qp_hessian_output_error(const struct qp_hessian *h,
                                       const float *w, size_t rows,
                                       const float *const *what, size_t count,
                                       double *rel, struct qp_error *err);

/* The traces behind qp_hessian_output_error: num[0] = tr(W H W^T) and
 * num[k + 1] = tr(D_k H D_k^T) (count + 1 entries), so that errors of
 * several matrices sharing a scale of H (the groups of a grouped
 * convolution) can be summed before dividing. Same errors. */
enum qp_status qp_hessian_output_energy(const struct qp_hessian *h,
                                        const float *w, size_t rows,
                                        const float *const *what, size_t count,
                                        double *num, struct qp_error *err);

#endif
