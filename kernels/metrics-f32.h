/* kernels/metrics-f32.h: the fused error-metrics pass over a reference and
 * a test float array, the kernel behind analysis/metrics.h (which defines
 * the metrics and their edge cases): one pass accumulating, in double,
 *
 *   count of finite pairs, NaN/Inf in test, NaN/Inf in ref,
 *   sum ref^2, sum test^2, sum ref*test, sum (ref-test)^2, sum |ref-test|,
 *   max |ref-test|, max |ref| (finite ref values)
 *
 * over the pairs where both values are finite (a value is finite when |x|
 * < inf, false for NaN). A portable reference (kernels/ref/metrics-f32.c)
 * and AVX2 and AVX-512 variants (kernels/x86/metrics-f32-*.c), chosen by
 * the dispatch table (kernels/dispatch.h). Counts and maxima are identical
 * across variants; the sums agree within a relative 1e-12 (they are added
 * in another order; tests/unit/test-metrics.c). */
#ifndef QP_KERNELS_METRICS_F32_H
#define QP_KERNELS_METRICS_F32_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/dispatch.h"

struct qp_metrics_f32 {
    uint64_t numel;          /* finite pairs */
    uint64_t nonfinite;      /* NaN/Inf in test */
    uint64_t ref_nonfinite;  /* NaN/Inf in ref */
    double sum_ref2, sum_test2, sum_dot, sum_err2, sum_abs_err;
    double max_abs_err, ref_absmax;
};

/* Adds n pairs into m (m's sums grow by this pass's partial sums; maxima
 * and counts merge). ref and test may be unaligned. */
typedef void (*qp_metrics_f32_fn)(struct qp_metrics_f32 *m, const float *ref,
                                  const float *test, size_t n);

/* On the variant the dispatch table chose. */
void qp_metrics_f32_add(struct qp_metrics_f32 *m, const float *ref,
                        const float *test, size_t n);

/* The reference: one pair at a time. */
void qp_metrics_f32_add_ref(struct qp_metrics_f32 *m, const float *ref,
                            const float *test, size_t n);

/* A SIMD variant: its instruction set and its pass. */
struct qp_metrics_f32_variant {
    const char *name;     /* "avx2", "avx512" */
    enum qp_kern_isa isa;
    qp_metrics_f32_fn add;
};
#if defined(__x86_64__)
extern const struct qp_metrics_f32_variant qp_metrics_f32_avx2;
extern const struct qp_metrics_f32_variant qp_metrics_f32_avx512;
#endif

/* The pass of the variant named name ("ref", "avx2", "avx512"), for tests
 * and benchmarks; NULL when unknown or when this CPU lacks its
 * instruction set (QP_KERNELS is not consulted). */
qp_metrics_f32_fn qp_metrics_f32_by_name(const char *name);

/* "ref", "avx2" or "avx512": what qp_metrics_f32_add runs. */
const char *qp_metrics_f32_variant(void);

/* For the variants: adds one pass's partial results to m, the same way
 * for all of them. sums[] in the order of enum qp_metrics_f32_sum. */
enum qp_metrics_f32_sum {
    QP_MS_REF2, QP_MS_TEST2, QP_MS_DOT, QP_MS_ERR2, QP_MS_ABS_ERR,
    QP_MS_COUNT
};
void qp_metrics_f32_fold(struct qp_metrics_f32 *m, uint64_t count,
                         uint64_t nonfinite_test, uint64_t nonfinite_ref,
                         const double sums[QP_MS_COUNT], double max_abs_err,
                         double ref_absmax);

#endif
