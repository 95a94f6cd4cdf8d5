/* quant/clip.h: MSE-optimal clipping of weight ranges (scheme '@mse', and
 * GPTQ's 'mse' option).
 *
 * For each scale (tensor, channel or group) the min/max range [lo, hi] is
 * shrunk to [a*lo, a*hi] for a = 1 - k/QP_CLIP_GRID, k = 0 .. steps - 1,
 * and the a whose quantization gives the smallest sum of |error|^norm over
 * that scale's elements is kept; the first (largest) a wins ties, so the
 * result is never worse than min/max (a = 1). Two grids:
 *
 *   qp_clip_grid_mse : '@mse', norm 2, 81 steps (1.00, 0.99, ..., 0.20),
 *                      the grid AWQ's search uses; errors summed in double
 *   qp_clip_grid_gptq: the reference GPTQ's --mse (IST-DASLab/gptq
 *                      quant.py: norm 2.4, grid 100, maxshrink 0.8), 80
 *                      steps (1.00 .. 0.21); |e|^2.4 is computed as
 *                      e^2 * 2^(0.4 log2|e|) with polynomial log2/exp2
 *                      (relative error below 1e-6, not libm's powf, which
 *                      would cost more than the rest of GPTQ) */
#ifndef QP_QUANT_CLIP_H
#define QP_QUANT_CLIP_H

#include <stddef.h>

#include "core/status.h"
#include "quant/qparams.h"

#define QP_CLIP_GRID 100
#define QP_CLIP_STEPS 80

struct qp_clip_grid {
    double norm; /* 2, or 2.4 (any value > 0) */
    int steps;   /* candidates a = 1 - k / QP_CLIP_GRID, k < steps (<= 100) */
};

extern const struct qp_clip_grid qp_clip_grid_mse;
extern const struct qp_clip_grid qp_clip_grid_gptq;

/* Sum of squared errors of quantizing x[0..n) with the parameters that
 * range [lo, hi] gives in format f. */
double qp_clip_sse(const float *x, size_t n, const struct qp_qformat *f,
                   enum qp_round r, float lo, float hi);

/* Sum of |error|^norm of the same quantization (qp_clip_sse for norm 2). */
double qp_clip_err(const float *x, size_t n, const struct qp_qformat *f,
                   enum qp_round r, float lo, float hi, double norm);

/* Replaces [*lo, *hi] (the min/max of x[0..n)) by the best shrunk range
 * of grid for those elements. */
void qp_clip_search(const float *x, size_t n, const struct qp_qformat *f,
                    enum qp_round r, const struct qp_clip_grid *grid,
                    float *lo, float *hi);

/* Replaces lo[i], hi[i] (min/max per scale index of g, as from
 * qp_qgeom_minmax) by the best shrunk range of grid (NULL:
 * qp_clip_grid_mse), for every index, on all threads. x holds the tensor
 * (g->outer * g->dim * g->inner floats). QP_E_NOMEM only. */
enum qp_status qp_clip_mse(const float *x, const struct qp_qgeom *g,
                           const struct qp_qformat *f, enum qp_round r,
                           const struct qp_clip_grid *grid, float *lo,
                           float *hi, struct qp_error *err);

#endif
