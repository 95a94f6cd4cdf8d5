/* analysis/stats.h: distribution statistics of one tensor (qprobe inspect).
 *
 * Over the finite values (NaN/Inf are counted apart), accumulated in
 * double, in two passes:
 *   pass 1: count, min, max, absmax and the central moment sums
 *           M2 = sum (x-mean)^2, M3, M4, computed per block of at most
 *           QP_BLOCK_ELEMS values around the block's own mean and merged
 *           with the pairwise update of Chan et al. / Pebay (2008), which
 *           stays accurate when |mean| >> std;
 *   pass 2: the outliers, values with |x - mean| > 6 std.
 *
 *   mean = sum x / n
 *   std  = sqrt(M2 / n)                 population standard deviation
 *   kurtosis = n M4 / M2^2 - 3          excess kurtosis (0 for a normal
 *                                       distribution; NaN when std is 0
 *                                       or there are no values)
 *   outlier_ratio = outliers / n        (0 when n is 0)
 * Integer tensors with quantization parameters are described by their
 * dequantized values. */
#ifndef QP_ANALYSIS_STATS_H
#define QP_ANALYSIS_STATS_H

#include <stddef.h>
#include <stdint.h>

#include "core/tensor.h"

/* |x - mean| beyond this many standard deviations counts as an outlier. */
#define QP_STATS_OUTLIER_SIGMA 6.0

struct qp_stats {
    uint64_t count;     /* finite values */
    uint64_t nonfinite; /* NaN or Inf values */
    uint64_t outliers;  /* filled by pass 2 */
    double min, max, absmax; /* +inf, -inf, 0 before any value */
    double mean, m2, m3, m4;
};

void qp_stats_init(struct qp_stats *s);

/* Pass 1 over n values (may be called repeatedly, in any split). */
void qp_stats_add_f32(struct qp_stats *s, const float *x, size_t n);

/* Combines two pass-1 results (outliers are added too). */
void qp_stats_merge(struct qp_stats *into, const struct qp_stats *b);

/* Pass 2: how many of the n values lie beyond 6 std of s's mean. */
uint64_t qp_stats_count_outliers(const struct qp_stats *s, const float *x,
                                 size_t n);

double qp_stats_std(const struct qp_stats *s);
double qp_stats_kurtosis(const struct qp_stats *s);
double qp_stats_outlier_ratio(const struct qp_stats *s);

/* Both passes over a whole tensor holding data, any dtype, on all threads.
 * QP_E_NOMEM only. */
enum qp_status qp_stats_tensor(const struct qp_tensor *t, struct qp_stats *out,
                               struct qp_error *err);

/* Summary of a tensor's quantization parameters (t->qp non-NULL). */
struct qp_qparam_summary {
    unsigned bits;              /* of the stored integer dtype */
    char granularity[48];       /* "per-tensor", "per-axis 0",
                                   "group 128 axis 1" */
    double scale_min, scale_max;
    int64_t zp_min, zp_max;     /* 0, 0 without zero points */
};
void qp_qparam_summarise(const struct qp_tensor *t,
                         struct qp_qparam_summary *out);

#endif
