/* analysis/metrics-impl.h: the variants behind qp_metrics_add_f32, for the
 * dispatcher and for tests that check each SIMD variant against the
 * reference. Each adds n pairs into m exactly as qp_metrics_add_f32 does;
 * the SIMD ones may only be called when the CPU has their ISA
 * (qp_metrics_variant_supported). */
#ifndef QP_ANALYSIS_METRICS_IMPL_H
#define QP_ANALYSIS_METRICS_IMPL_H

#include <stdbool.h>

#include "analysis/metrics.h"

typedef void (*qp_metrics_kernel)(struct qp_metrics *m, const float *ref,
                                  const float *test, size_t n);

void qp_metrics_add_f32_ref(struct qp_metrics *m, const float *ref,
                            const float *test, size_t n);
void qp_metrics_add_f32_avx2(struct qp_metrics *m, const float *ref,
                             const float *test, size_t n);
void qp_metrics_add_f32_avx512(struct qp_metrics *m, const float *ref,
                               const float *test, size_t n);

/* Adds the partial sums of one variant's pass to m (shared by the SIMD
 * files so each folds its lanes the same way). */
void qp_metrics_accumulate(struct qp_metrics *m, uint64_t count,
                           uint64_t nonfinite_test, uint64_t nonfinite_ref,
                           const double sums[5], double max_abs_err,
                           double ref_absmax);

/* The sums[] order of qp_metrics_accumulate. */
enum { QP_MS_REF2, QP_MS_TEST2, QP_MS_DOT, QP_MS_ERR2, QP_MS_ABS_ERR };

/* Variant by name ("ref", "avx2", "avx512"); NULL when unknown or not
 * supported by this CPU. */
qp_metrics_kernel qp_metrics_variant_kernel(const char *name);

#endif
