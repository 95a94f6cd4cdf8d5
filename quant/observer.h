/* quant/observer.h: activation range observers, fed with calibration
 * batches, one observer per tensor (static per-tensor activations).
 *
 *   minmax : the exact extremes of everything seen
 *   ema    : moving-average min/max over batches (PyTorch's
 *            MovingAverageMinMaxObserver): m <- m + c (batch_m - m), the
 *            first batch sets m; c defaults to 0.01
 *   pct P  : the P-th percentile of |x| (symmetric formats), or the
 *            (100 - P)-th and P-th percentiles of x (asymmetric)
 *   mse    : the range a * [min, max] minimising the expected quantization
 *            error over the histogram (quant/histogram.h)
 *   kl     : the TensorRT entropy threshold T on |x|; the range is
 *            [max(min, -T), min(max, T)]
 *
 * The histogram methods keep a fixed-size histogram whose range grows by
 * exact merges, so memory does not depend on the amount of data. Non-finite
 * values are skipped and counted. The model runtime that feeds observers
 * comes with `qprobe run` (issue 5). */
#ifndef QP_QUANT_OBSERVER_H
#define QP_QUANT_OBSERVER_H

#include <stddef.h>
#include <stdint.h>

#include "core/status.h"
#include "quant/qparams.h"
#include "quant/scheme.h"

struct qp_observer_opts {
    enum qp_arange method;
    double pct;        /* QP_ARANGE_PCT: percentile in (0, 100] */
    double ema_c;      /* QP_ARANGE_EMA: averaging constant in (0, 1]; 0: 0.01 */
    size_t bins;       /* histogram bins per side; 0: QP_HIST_BINS_DEFAULT */
};

struct qp_observer;

/* Options for the activation part of a scheme. */
struct qp_observer_opts qp_observer_opts_from_scheme(const struct qp_ascheme *a);

/* QP_E_INVAL for an out-of-range pct, ema_c or bins. *out belongs to the
 * caller (qp_observer_free). */
enum qp_status qp_observer_new(const struct qp_observer_opts *o,
                               struct qp_observer **out, struct qp_error *err);
void qp_observer_free(struct qp_observer *obs);

/* Feeds one batch of n values. QP_E_NOMEM only. */
enum qp_status qp_observer_add(struct qp_observer *obs, const float *x,
                               size_t n, struct qp_error *err);

/* Finite values seen, and non-finite values skipped. */
uint64_t qp_observer_count(const struct qp_observer *obs);
uint64_t qp_observer_nonfinite(const struct qp_observer *obs);

/* The chosen real range [lo, hi] for format f (feed it to
 * qp_qparams_from_range). QP_E_INVAL when no finite value was seen. */
enum qp_status qp_observer_range(const struct qp_observer *obs,
                                 const struct qp_qformat *f, enum qp_round r,
                                 float *lo, float *hi, struct qp_error *err);

#endif
