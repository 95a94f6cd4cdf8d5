/* quant/clip.h: MSE-optimal clipping of weight ranges (scheme '@mse').
 *
 * For each scale (tensor, channel or group) the min/max range [lo, hi] is
 * shrunk to [a*lo, a*hi] for a = 1 - i/QP_CLIP_GRID, i = 0..QP_CLIP_STEPS
 * (1.00, 0.99, ..., 0.20, the grid GPTQ's and AWQ's searches use), and the
 * a whose quantization gives the smallest sum of squared errors over that
 * scale's elements is kept; the first (largest) a wins ties, so the result
 * is never worse than min/max (a = 1). Errors are summed in double. */
#ifndef QP_QUANT_CLIP_H
#define QP_QUANT_CLIP_H

#include <stddef.h>

#include "core/status.h"
#include "quant/qparams.h"

#define QP_CLIP_GRID 100
#define QP_CLIP_STEPS 80

/* Sum of squared errors of quantizing x[0..n) with the parameters that
 * range [lo, hi] gives in format f. */
double qp_clip_sse(const float *x, size_t n, const struct qp_qformat *f,
                   enum qp_round r, float lo, float hi);

/* Replaces lo[i], hi[i] (min/max per scale index of g, as from
 * qp_qgeom_minmax) by the best shrunk range, for every index, on all
 * threads. x holds the tensor (g->outer * g->dim * g->inner floats).
 * QP_E_NOMEM only. */
enum qp_status qp_clip_mse(const float *x, const struct qp_qgeom *g,
                           const struct qp_qformat *f, enum qp_round r,
                           float *lo, float *hi, struct qp_error *err);

#endif
