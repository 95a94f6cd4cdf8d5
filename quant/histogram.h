/* quant/histogram.h: a signed histogram of calibration values whose range
 * grows by exact bin merges, and the range choices made from it:
 * percentile, MSE-optimal threshold, and KL divergence (the TensorRT
 * entropy method).
 *
 * Layout: `bins` bins on each side of zero over [-R, R]; value v >= 0 goes
 * to pos[floor(v / w)], v < 0 to neg[floor(-v / w)], w = R / bins, the
 * last bin also holding |v| = R. R starts at the smallest power of two
 * above the first batch's largest magnitude; when a later value exceeds
 * it, R doubles (adjacent bin pairs merge, exactly) until it fits. No count
 * is ever interpolated, and R (hence every bin) depends only on the
 * largest magnitude overall, not on the order of the batches. Values are
 * assumed uniform inside a bin. */
#ifndef QP_QUANT_HISTOGRAM_H
#define QP_QUANT_HISTOGRAM_H

#include <stddef.h>
#include <stdint.h>

#include "core/status.h"
#include "quant/qparams.h"

#define QP_HIST_BINS_DEFAULT 2048
/* Candidate ranges the MSE search tries: a * [min, max], a = k / STEPS. */
#define QP_HIST_MSE_STEPS 256

struct qp_hist {
    size_t bins;        /* per side, even, >= 2 */
    double range;       /* R; 0 until a non-zero value arrives */
    uint64_t *neg, *pos; /* [bins] each, owned */
    uint64_t zeros;     /* zeros seen while range is 0 (moved to pos[0]) */
    uint64_t count;     /* values added */
    float min, max;     /* exact extremes */
};

/* bins per side (0: QP_HIST_BINS_DEFAULT); QP_E_INVAL unless even >= 2. */
enum qp_status qp_hist_init(struct qp_hist *h, size_t bins, struct qp_error *err);
void qp_hist_release(struct qp_hist *h);

/* Adds n finite values. */
void qp_hist_add(struct qp_hist *h, const float *x, size_t n);

/* The p-quantile (0 <= p <= 1) of the values (signed), or of their
 * magnitudes (abs), interpolated linearly inside its bin and clamped to the
 * observed extremes. Requires count > 0. */
double qp_hist_quantile(const struct qp_hist *h, double p, bool abs);

/* Integral over x in [a, b] of (x - Q(x))^2, where Q rounds to the grid
 * s * k (s > 0) and clamps to [L, U] (grid points, L <= 0 <= U). */
double qp_quant_interval_sse(double a, double b, double s, double L, double U);

/* The range a * [min, max] (a = k / QP_HIST_MSE_STEPS, k >= 1) whose
 * quantization in format f has the smallest expected squared error over
 * the histogram; ties keep the larger range. */
void qp_hist_mse_range(const struct qp_hist *h, const struct qp_qformat *f,
                       enum qp_round r, float *lo, float *hi);

/* The TensorRT entropy threshold: over the magnitudes' histogram, for each
 * i from nq to bins, P = the first i bins with everything beyond added to
 * bin i-1, Q = the first i bins merged into nq chunks and spread back over
 * the bins P has non-zero; returns i * w for the i minimising KL(P || Q).
 * nq = 2^(bits-1) levels (128 for 8 bits). When nq >= bins the histogram
 * cannot resolve a clip and the largest magnitude is returned. */
double qp_hist_kl_threshold(const struct qp_hist *h, unsigned bits);

#endif
