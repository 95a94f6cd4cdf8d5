/* analysis/metrics.h: error metrics between a reference and a test tensor
 * (DESIGN.md §4 "Metric definitions"), accumulated in double in one fused
 * pass over both inputs.
 *
 *   sqnr_db = 10*log10(sum ref^2 / sum (ref-test)^2); +inf when the error is 0
 *   cosine  = sum ref*test / (|ref| |test|); 1 when both are all zero
 *   mae     = mean |ref-test|, max_abs = max |ref-test|
 *   rel_l2  = |ref-test| / |ref|
 *
 * Pairs where either value is NaN or Inf are left out of the sums; the test
 * side's are counted in nonfinite (such tensors sort first), the
 * reference's in ref_nonfinite. ref_absmax is the largest |ref| over the
 * finite reference values.
 *
 * A tensor pair with any NaN/Inf (either side) has no error figure: the
 * accessors give sqnr -inf and NaN cosine, mae, max_abs and rel_l2, so no
 * threshold passes it (NaN is never a pass). Other edge cases: no pair at
 * all (empty tensors) gives sqnr +inf, cosine 1, mae 0, rel_l2 0. One side
 * all zero and the other not: cosine 0; a zero reference with a non-zero
 * error: sqnr -inf, rel_l2 +inf.
 *
 * The pass is the kernel of kernels/metrics-f32.h: a portable reference
 * and AVX2 and AVX-512 variants, chosen by the kernel dispatch table
 * (kernels/dispatch.h: QP_KERNELS=ref forces the reference, QP_KERNELS=avx2
 * caps the choice). Counts and maxima are identical across variants; the
 * sums agree within a relative 1e-12 (they are added in another order). */
#ifndef QP_ANALYSIS_METRICS_H
#define QP_ANALYSIS_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "core/tensor.h"

struct qp_metrics {
    uint64_t numel;          /* elements compared (finite pairs) */
    uint64_t nonfinite;      /* NaN/Inf in test */
    uint64_t ref_nonfinite;  /* NaN/Inf in ref */
    double sum_ref2, sum_test2, sum_dot, sum_err2, sum_abs_err;
    double max_abs_err, ref_absmax;
};

void qp_metrics_init(struct qp_metrics *m);

/* Adds n pairs (fused single pass; SIMD when available). */
void qp_metrics_add_f32(struct qp_metrics *m, const float *ref,
                        const float *test, size_t n);

/* Combines partial results (e.g. one per thread). */
void qp_metrics_merge(struct qp_metrics *into, const struct qp_metrics *m);

double qp_metrics_sqnr_db(const struct qp_metrics *m);
double qp_metrics_cosine(const struct qp_metrics *m);
double qp_metrics_mae(const struct qp_metrics *m);
double qp_metrics_max_abs(const struct qp_metrics *m);
double qp_metrics_rel_l2(const struct qp_metrics *m);

/* Metrics of two whole tensors of equal element count, any dtype
 * (integer tensors dequantized with their parameters), on all threads.
 * QP_E_SHAPE when the element counts differ. */
enum qp_status qp_metrics_tensors(const struct qp_tensor *ref,
                                  const struct qp_tensor *test,
                                  struct qp_metrics *out, struct qp_error *err);

/* The variant qp_metrics_add_f32 uses: "ref", "avx2" or "avx512". */
const char *qp_metrics_variant(void);

#endif
