/* kernels/ref/metrics-f32.c: the fused metrics pass, the reference
 * (kernels/metrics-f32.h). */
#include "kernels/metrics-f32.h"

#include <math.h>
#include <stdbool.h>

void qp_metrics_f32_fold(struct qp_metrics_f32 *m, uint64_t count,
                         uint64_t nonfinite_test, uint64_t nonfinite_ref,
                         const double sums[QP_MS_COUNT], double max_abs_err,
                         double ref_absmax)
{
    m->numel += count;
    m->nonfinite += nonfinite_test;
    m->ref_nonfinite += nonfinite_ref;
    m->sum_ref2 += sums[QP_MS_REF2];
    m->sum_test2 += sums[QP_MS_TEST2];
    m->sum_dot += sums[QP_MS_DOT];
    m->sum_err2 += sums[QP_MS_ERR2];
    m->sum_abs_err += sums[QP_MS_ABS_ERR];
    if (max_abs_err > m->max_abs_err)
        m->max_abs_err = max_abs_err;
    if (ref_absmax > m->ref_absmax)
        m->ref_absmax = ref_absmax;
}

/* The specification: one pair at a time, in double. */
void qp_metrics_f32_add_ref(struct qp_metrics_f32 *m, const float *ref,
                            const float *test, size_t n)
{
    double s[QP_MS_COUNT] = {0};
    double maxe = 0, maxr = 0;
    uint64_t count = 0, nft = 0, nfr = 0;
    for (size_t i = 0; i < n; i++) {
        double r = ref[i], t = test[i];
        bool fr = fabs(r) < INFINITY, ft = fabs(t) < INFINITY;
        nfr += !fr;
        nft += !ft;
        if (fr && fabs(r) > maxr)
            maxr = fabs(r);
        if (!fr || !ft)
            continue;
        double e = r - t, a = fabs(e);
        s[QP_MS_REF2] += r * r;
        s[QP_MS_TEST2] += t * t;
        s[QP_MS_DOT] += r * t;
        s[QP_MS_ERR2] += e * e;
        s[QP_MS_ABS_ERR] += a;
        if (a > maxe)
            maxe = a;
        count++;
    }
    qp_metrics_f32_fold(m, count, nft, nfr, s, maxe, maxr);
}
