/* analysis/metrics.c: the portable reference of the fused metrics pass, the
 * run-time choice of variant, the derived metrics and whole-tensor
 * comparison on all threads. */
#include "analysis/metrics.h"

#include <math.h>
#include <stdbool.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/blocks.h"
#include "analysis/metrics-impl.h"
#include "kernels/dispatch.h"

void qp_metrics_init(struct qp_metrics *m)
{
    memset(m, 0, sizeof *m);
}

void qp_metrics_accumulate(struct qp_metrics *m, uint64_t count,
                           uint64_t nonfinite_test, uint64_t nonfinite_ref,
                           const double sums[5], double max_abs_err,
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

/* The specification: one pair at a time, in double. A value is finite when
 * |x| < inf (false for NaN). */
void qp_metrics_add_f32_ref(struct qp_metrics *m, const float *ref,
                            const float *test, size_t n)
{
    double s[5] = {0};
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
    qp_metrics_accumulate(m, count, nft, nfr, s, maxe, maxr);
}

/* ---- run-time choice ------------------------------------------------------ */

/* Best first; the instruction sets and QP_KERNELS follow kernels/dispatch.h
 * (QP_KERNELS=ref forces the reference, QP_KERNELS=avx2 caps the choice). */
static const struct {
    const char *name;
    qp_metrics_kernel fn;
    enum qp_kern_isa isa;
} variants[] = {
#if defined(__x86_64__)
    {"avx512", qp_metrics_add_f32_avx512, QP_KERN_AVX512},
    {"avx2", qp_metrics_add_f32_avx2, QP_KERN_AVX2},
#endif
    {"ref", qp_metrics_add_f32_ref, QP_KERN_REF},
};
enum { NVARIANTS = sizeof variants / sizeof variants[0] };

qp_metrics_kernel qp_metrics_variant_kernel(const char *name)
{
    for (size_t i = 0; i < NVARIANTS; i++)
        if (!strcmp(name, variants[i].name))
            return qp_kern_isa_available(variants[i].isa) ? variants[i].fn : NULL;
    return NULL;
}

/* Filled once (the dispatch table of STYLE.md), read-only afterwards. */
static size_t chosen = NVARIANTS - 1;
static pthread_once_t chosen_once = PTHREAD_ONCE_INIT;

static void choose(void)
{
    for (size_t i = 0; i < NVARIANTS; i++)
        if (qp_kern_isa_allowed(variants[i].isa)) {
            chosen = i;
            return;
        }
}

static size_t variant(void)
{
    pthread_once(&chosen_once, choose);
    return chosen;
}

const char *qp_metrics_variant(void)
{
    return variants[variant()].name;
}

void qp_metrics_add_f32(struct qp_metrics *m, const float *ref,
                        const float *test, size_t n)
{
    variants[variant()].fn(m, ref, test, n);
}

/* ---- combining and derived metrics ------------------------------------------ */

void qp_metrics_merge(struct qp_metrics *into, const struct qp_metrics *m)
{
    const double s[5] = {m->sum_ref2, m->sum_test2, m->sum_dot, m->sum_err2,
                         m->sum_abs_err};
    qp_metrics_accumulate(into, m->numel, m->nonfinite, m->ref_nonfinite, s,
                          m->max_abs_err, m->ref_absmax);
}

/* A comparison with NaN/Inf on either side has no meaningful error figure:
 * it reports NaN (-inf SQNR), so that no threshold can pass it. */
static bool broken(const struct qp_metrics *m)
{
    return m->nonfinite || m->ref_nonfinite;
}

double qp_metrics_sqnr_db(const struct qp_metrics *m)
{
    if (broken(m))
        return -INFINITY;
    if (m->sum_err2 == 0)
        return INFINITY;
    if (m->sum_ref2 == 0)
        return -INFINITY;
    return 10.0 * log10(m->sum_ref2 / m->sum_err2);
}

double qp_metrics_cosine(const struct qp_metrics *m)
{
    if (broken(m))
        return NAN;
    if (m->sum_ref2 == 0 || m->sum_test2 == 0)
        return m->sum_ref2 == m->sum_test2 ? 1.0 : 0.0;
    double c = m->sum_dot / (sqrt(m->sum_ref2) * sqrt(m->sum_test2));
    return c > 1 ? 1 : c < -1 ? -1 : c;
}

double qp_metrics_mae(const struct qp_metrics *m)
{
    if (broken(m))
        return NAN;
    return m->numel ? m->sum_abs_err / (double)m->numel : 0.0;
}

double qp_metrics_max_abs(const struct qp_metrics *m)
{
    return broken(m) ? NAN : m->max_abs_err;
}

double qp_metrics_rel_l2(const struct qp_metrics *m)
{
    if (broken(m))
        return NAN;
    if (m->sum_err2 == 0)
        return 0.0;
    if (m->sum_ref2 == 0)
        return INFINITY;
    return sqrt(m->sum_err2) / sqrt(m->sum_ref2);
}

/* ---- whole tensors ------------------------------------------------------------ */

struct tensors_ctx {
    struct qp_metrics *part; /* [nthreads] */
};

static void tensors_block(void *arg, int thread, const float *const *x,
                          size_t start, size_t n)
{
    (void)start;
    struct tensors_ctx *c = arg;
    qp_metrics_add_f32(&c->part[thread], x[0], x[1], n);
}

enum qp_status qp_metrics_tensors(const struct qp_tensor *ref,
                                  const struct qp_tensor *test,
                                  struct qp_metrics *out, struct qp_error *err)
{
    qp_metrics_init(out);
    size_t n = qp_tensor_numel(ref);
    if (qp_tensor_numel(test) != n)
        return qp_fail(err, QP_E_SHAPE,
                       "tensors '%s' and '%s' have %zu and %zu elements",
                       ref->name, test->name, n, qp_tensor_numel(test));
    if (n && (!ref->data || !test->data))
        return qp_fail(err, QP_E_INVAL, "tensor '%s': no data loaded",
                       ref->data ? test->name : ref->name);
    int nthreads = qp_blocks_threads(n);
    struct tensors_ctx c = {calloc((size_t)nthreads, sizeof *c.part)};
    if (!c.part)
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    const struct qp_tensor *ts[2] = {ref, test};
    qp_blocks_run(ts, 2, n, nthreads, tensors_block, &c);
    for (int t = 0; t < nthreads; t++)
        qp_metrics_merge(out, &c.part[t]);
    free(c.part);
    return QP_OK;
}
