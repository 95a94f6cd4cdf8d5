/* analysis/metrics.c: the metrics of DESIGN.md §4 on top of the fused pass
 * of kernels/metrics-f32.h: accumulation, the derived metrics and
 * whole-tensor comparison on all threads. */
#include "analysis/metrics.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/blocks.h"
#include "kernels/metrics-f32.h"

void qp_metrics_init(struct qp_metrics *m)
{
    memset(m, 0, sizeof *m);
}

/* The kernel's accumulator and back: the kernel adds its partial sums to
 * the running ones exactly as if it worked on m itself. */
static struct qp_metrics_f32 to_kernel(const struct qp_metrics *m)
{
    return (struct qp_metrics_f32){
        m->numel, m->nonfinite, m->ref_nonfinite, m->sum_ref2, m->sum_test2,
        m->sum_dot, m->sum_err2, m->sum_abs_err, m->max_abs_err,
        m->ref_absmax};
}

static void from_kernel(struct qp_metrics *m, const struct qp_metrics_f32 *k)
{
    m->numel = k->numel;
    m->nonfinite = k->nonfinite;
    m->ref_nonfinite = k->ref_nonfinite;
    m->sum_ref2 = k->sum_ref2;
    m->sum_test2 = k->sum_test2;
    m->sum_dot = k->sum_dot;
    m->sum_err2 = k->sum_err2;
    m->sum_abs_err = k->sum_abs_err;
    m->max_abs_err = k->max_abs_err;
    m->ref_absmax = k->ref_absmax;
}

void qp_metrics_add_f32(struct qp_metrics *m, const float *ref,
                        const float *test, size_t n)
{
    struct qp_metrics_f32 k = to_kernel(m);
    qp_metrics_f32_add(&k, ref, test, n);
    from_kernel(m, &k);
}

const char *qp_metrics_variant(void)
{
    return qp_metrics_f32_variant();
}

/* ---- combining and derived metrics ------------------------------------------ */

void qp_metrics_merge(struct qp_metrics *into, const struct qp_metrics *m)
{
    const double s[QP_MS_COUNT] = {m->sum_ref2, m->sum_test2, m->sum_dot,
                                   m->sum_err2, m->sum_abs_err};
    struct qp_metrics_f32 k = to_kernel(into);
    qp_metrics_f32_fold(&k, m->numel, m->nonfinite, m->ref_nonfinite, s,
                        m->max_abs_err, m->ref_absmax);
    from_kernel(into, &k);
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
