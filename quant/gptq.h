/* quant/gptq.h: GPTQ weight quantization (Frantar et al. 2022), the
 * algorithm of IST-DASLab/gptq gptq.py (fasterquant) and GPTQModel, on the
 * CPU, independent of any model runtime.
 *
 * Given a layer's weight W [rows = out, cols = in] (torch layout) and the
 * Hessian H = 2/n X^T X of its calibration inputs (quant/hessian.h), the
 * columns are quantized one by one on the grid of quant/qparams.h (the
 * same scales, zero points, qmin/qmax and rounding as RTN, quant/rtn.h),
 * and each column's rounding error is spread onto the columns not yet
 * quantized through the upper Cholesky factor U of H^-1 (H^-1 = U^T U):
 *
 *   e_c = (w_c - q_c) / U_cc;   w_j -= e_c U_cj  for every later column j
 *
 * inside blocks of `blk` columns, with one GEMM per block for the columns
 * after it (the lazy batch). Rows are independent; they run in parallel.
 *
 * Steps, as the reference:
 *   - dead columns (H_ii == 0): H_ii = 1 and W[:, i] = 0;
 *   - parameters: per-tensor and per-channel from the whole (dead-zeroed)
 *     W first; static groups ('static') per group of the original W first;
 *     otherwise each group's parameters are refit when quantization reaches
 *     its first column, on the error-compensated weights of that moment;
 *   - act-order ('act'): columns in decreasing diag(H) (a stable order:
 *     ties keep the lower index first); the result is in the original
 *     column order;
 *   - dampening: H_ii += damp * mean(diag H), damp = 'damp' (default
 *     0.01); when the Cholesky factorization fails the dampening doubles
 *     (up to 1, then QP_E_INVAL) and the retry is counted;
 *   - U through LAPACK without forming H^-1: with J the reversal
 *     permutation, J H J = L L^T gives U = J L^-1 J (one SPOTRF and one
 *     STRTRI, half the reference's chol / cholesky_inverse / chol);
 *   - 'mse': each parameter set's range comes from the reference's --mse
 *     search (quant/clip.h qp_clip_grid_gptq).
 *
 * Differences from the reference, on purpose:
 *   - the grid is qprobe's (symmetric: s = amax / qmax with qmax =
 *     2^(b-1) - 1, z = 0; the reference's "sym" is an unsigned grid with
 *     a mid zero point); asymmetric agrees with it but for the rounding
 *     mode (qprobe's default half-away, torch.round half-even);
 *   - a group that starts inside a block is fitted on its fully
 *     error-compensated columns (the reference reads W, which misses the
 *     current block's updates when the group starts mid-block), and a
 *     block stops before a group start whose group would straddle its end;
 *     so the result does not depend on the block size (but for float
 *     rounding), and equals the reference's whenever the group size is a
 *     multiple of the block size (w4g128 with blk128);
 *   - the loss sums in double; H counts tokens, not sequences.
 *
 * Result layout (core/tensor.h): an integer tensor [rows, cols] in the
 * original column order, storage dtype of qp_qformat_dtype (packed below
 * 8 bits), with the qparams geometry RTN gives the same scheme:
 * per-tensor, per-channel (axis 0), or blocked along axis 1 with block G,
 * scales [rows, ceil(cols / G)]. With act-order and refit groups, group j
 * is the j-th group of G columns in quantization order, so column i's
 * parameters are those of group g_idx[i] (as GPTQ checkpoints: scales in
 * group order plus g_idx); the tensor's own parameters then describe it
 * exactly only where g_idx[i] == i / G, and qp_gptq_dequantize is the
 * exact reading.
 *
 * Use, for one layer (the session captures its inputs):
 *   qp_hessian_new(name, in, pool, &h, err);
 *   per calibration batch: qp_hessian_add(h, x, tokens, in, err);
 *   qp_gptq_quantize(w, h, &opts, &res, err);      res.q, res.g_idx, figures
 *   qp_gptq_dequantize(res.q, res.g_idx, fake, err);  --fake, later layers
 *   qp_hessian_output_error(h, w, out, what, 2, rel, err);  GPTQ vs RTN
 *
 * Threads: rows are split over opts.pool, the GEMMs too, and LAPACK runs
 * on as many OpenBLAS threads; 1 and N threads agree to float rounding. */
#ifndef QP_QUANT_GPTQ_H
#define QP_QUANT_GPTQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/tensor.h"
#include "quant/hessian.h"
#include "quant/qparams.h"
#include "quant/scheme.h"

struct qp_pool;

struct qp_gptq_opts {
    const struct qp_wscheme *ws; /* required: bits, granularity, symmetry, the
                                  * ws->gptq options; ws->algo QP_WALGO_MSE
                                  * also selects the 'mse' grid */
    enum qp_round round;         /* as RTN's (default half-away) */
    const char *name;            /* layer name in messages (NULL: W's) */
    struct qp_pool *pool;        /* threads (NULL: the default) */
};

struct qp_gptq_result {
    struct qp_tensor *q;  /* [rows, cols] integer tensor named like W */
    int32_t *g_idx;       /* [cols] group of each column (act-order with
                           * groups), else NULL */
    bool g_idx_trivial;   /* g_idx is NULL or g_idx[i] == i / G for all i:
                           * q's own parameters are exact */
    double damp;          /* dampening used (fraction of mean diag H) */
    int retries;          /* factorizations that failed before it */
    double loss;          /* sum of (w - q)^2 / (2 U_cc^2): the reference's
                           * "error" line, per-token H (reference x tokens
                           * per sequence) */
    double seconds;       /* wall time of qp_gptq_quantize */
    uint64_t tokens;      /* calibration tokens behind H */
    size_t dead;          /* columns with diag H == 0 */
    bool few_tokens;      /* tokens < cols: H is singular and the dampening
                           * dominates (a warning, not an error) */
};

/* Quantizes w (2-D float [rows, cols], finite) with the Hessian h
 * (h->cols == cols). On success *res owns q and g_idx (release with
 * qp_gptq_result_release); on failure *res is empty. Errors name the
 * layer: QP_E_INVAL for NaN/Inf in W or H, an unusable h, a scheme GPTQ
 * cannot run ('static' without groups) or an H no dampening up to 1
 * makes positive definite; QP_E_SHAPE when the widths disagree;
 * QP_E_UNSUPPORTED for integer or non-2-D w; QP_E_NOMEM. */
enum qp_status qp_gptq_quantize(const struct qp_tensor *w,
                                const struct qp_hessian *h,
                                const struct qp_gptq_opts *o,
                                struct qp_gptq_result *res,
                                struct qp_error *err);

/* Frees q and g_idx and zeroes *res. */
void qp_gptq_result_release(struct qp_gptq_result *res);

/* Dequantizes q ([rows, cols] integer, blocked along axis 1 when g_idx is
 * given) into out [rows * cols] floats: out = s * (q - z) with the scale
 * and zero point of group g_idx[i] for column i, or q's own parameters
 * (qp_tensor_read_f32) when g_idx is NULL. QP_E_INVAL when g_idx does not
 * fit q's parameters. */
enum qp_status qp_gptq_dequantize(const struct qp_tensor *q,
                                  const int32_t *g_idx, float *out,
                                  struct qp_error *err);

#endif
