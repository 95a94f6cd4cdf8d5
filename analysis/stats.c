#include "analysis/stats.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "analysis/blocks.h"

void qp_stats_init(struct qp_stats *s)
{
    *s = (struct qp_stats){0};
    s->min = INFINITY;
    s->max = -INFINITY;
}

/* Pebay's pairwise update of the central moment sums: a and b describe
 * disjoint sets; a becomes their union. */
static void moments_merge(struct qp_stats *a, uint64_t nb_, double mean_b,
                          double m2b, double m3b, double m4b)
{
    if (nb_ == 0)
        return;
    if (a->count == 0) {
        a->count = nb_;
        a->mean = mean_b;
        a->m2 = m2b;
        a->m3 = m3b;
        a->m4 = m4b;
        return;
    }
    double na = (double)a->count, nb = (double)nb_, n = na + nb;
    double d = mean_b - a->mean, d2 = d * d;
    double m2a = a->m2, m3a = a->m3, m4a = a->m4;
    a->m4 = m4a + m4b + d2 * d2 * na * nb * (na * na - na * nb + nb * nb) / (n * n * n) +
            6.0 * d2 * (na * na * m2b + nb * nb * m2a) / (n * n) +
            4.0 * d * (na * m3b - nb * m3a) / n;
    a->m3 = m3a + m3b + d2 * d * na * nb * (na - nb) / (n * n) +
            3.0 * d * (na * m2b - nb * m2a) / n;
    a->m2 = m2a + m2b + d2 * na * nb / n;
    a->mean += d * nb / n;
    a->count += nb_;
}

/* One block of at most QP_BLOCK_ELEMS values: moments around its mean. */
static void add_block(struct qp_stats *s, const float *x, size_t n)
{
    double sum = 0, mn = s->min, mx = s->max;
    uint64_t cnt = 0;
    for (size_t i = 0; i < n; i++) {
        double v = x[i];
        if (!(fabs(v) < INFINITY))
            continue;
        sum += v;
        mn = v < mn ? v : mn;
        mx = v > mx ? v : mx;
        cnt++;
    }
    s->nonfinite += n - cnt;
    if (!cnt)
        return;
    s->min = mn;
    s->max = mx;
    double am = fabs(mn) > fabs(mx) ? fabs(mn) : fabs(mx);
    if (am > s->absmax)
        s->absmax = am;
    double mean = sum / (double)cnt, m2 = 0, m3 = 0, m4 = 0;
    for (size_t i = 0; i < n; i++) {
        double v = x[i];
        if (!(fabs(v) < INFINITY))
            continue;
        double d = v - mean, d2 = d * d;
        m2 += d2;
        m3 += d2 * d;
        m4 += d2 * d2;
    }
    moments_merge(s, cnt, mean, m2, m3, m4);
}

void qp_stats_add_f32(struct qp_stats *s, const float *x, size_t n)
{
    for (size_t i = 0; i < n; i += QP_BLOCK_ELEMS)
        add_block(s, x + i, n - i < QP_BLOCK_ELEMS ? n - i : QP_BLOCK_ELEMS);
}

void qp_stats_merge(struct qp_stats *into, const struct qp_stats *b)
{
    into->nonfinite += b->nonfinite;
    into->outliers += b->outliers;
    if (b->min < into->min)
        into->min = b->min;
    if (b->max > into->max)
        into->max = b->max;
    if (b->absmax > into->absmax)
        into->absmax = b->absmax;
    moments_merge(into, b->count, b->mean, b->m2, b->m3, b->m4);
}

double qp_stats_std(const struct qp_stats *s)
{
    return s->count ? sqrt(s->m2 / (double)s->count) : NAN;
}

double qp_stats_kurtosis(const struct qp_stats *s)
{
    if (!s->count || s->m2 == 0)
        return NAN;
    return (double)s->count * s->m4 / (s->m2 * s->m2) - 3.0;
}

double qp_stats_outlier_ratio(const struct qp_stats *s)
{
    return s->count ? (double)s->outliers / (double)s->count : 0.0;
}

uint64_t qp_stats_count_outliers(const struct qp_stats *s, const float *x,
                                 size_t n)
{
    double lim = QP_STATS_OUTLIER_SIGMA * qp_stats_std(s);
    if (!s->count || !(lim > 0))
        return 0;
    uint64_t k = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)x[i] - s->mean);
        k += d > lim && d < INFINITY; /* NaN compares false */
    }
    return k;
}

/* ---- whole tensors ---------------------------------------------------------- */

struct tensor_ctx {
    struct qp_stats *part; /* [nthreads] */
    const struct qp_stats *whole; /* pass 2: the merged pass-1 result */
};

static void pass1(void *arg, int thread, const float *const *x, size_t start,
                  size_t n)
{
    (void)start;
    struct tensor_ctx *c = arg;
    qp_stats_add_f32(&c->part[thread], x[0], n);
}

static void pass2(void *arg, int thread, const float *const *x, size_t start,
                  size_t n)
{
    (void)start;
    struct tensor_ctx *c = arg;
    c->part[thread].outliers += qp_stats_count_outliers(c->whole, x[0], n);
}

enum qp_status qp_stats_tensor(const struct qp_tensor *t, struct qp_stats *out,
                               struct qp_error *err)
{
    qp_stats_init(out);
    size_t n = qp_tensor_numel(t);
    if (n && !t->data)
        return qp_fail(err, QP_E_INVAL, "tensor '%s': no data loaded", t->name);
    int nthreads = qp_blocks_threads(n);
    struct tensor_ctx c = {calloc((size_t)nthreads, sizeof *c.part), out};
    if (!c.part)
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    for (int k = 0; k < nthreads; k++)
        qp_stats_init(&c.part[k]);
    const struct qp_tensor *ts[1] = {t};
    qp_blocks_run(ts, 1, n, nthreads, pass1, &c);
    for (int k = 0; k < nthreads; k++) {
        qp_stats_merge(out, &c.part[k]);
        c.part[k].outliers = 0;
    }
    if (out->count && qp_stats_std(out) > 0) {
        qp_blocks_run(ts, 1, n, nthreads, pass2, &c);
        for (int k = 0; k < nthreads; k++)
            out->outliers += c.part[k].outliers;
    }
    free(c.part);
    return QP_OK;
}

void qp_qparam_summarise(const struct qp_tensor *t,
                         struct qp_qparam_summary *out)
{
    const struct qp_qparams *q = t->qp;
    *out = (struct qp_qparam_summary){0};
    out->bits = qp_dtype_traits(t->dtype)->bits;
    if (q->axis < 0)
        snprintf(out->granularity, sizeof out->granularity, "per-tensor");
    else if (!q->block_size)
        snprintf(out->granularity, sizeof out->granularity, "per-axis %d",
                 q->axis);
    else
        snprintf(out->granularity, sizeof out->granularity,
                 "group %lld axis %d", (long long)q->block_size, q->axis);
    out->scale_min = q->count ? INFINITY : 0;
    out->scale_max = q->count ? -INFINITY : 0;
    for (size_t i = 0; i < q->count; i++) {
        double s = q->scale[i];
        out->scale_min = s < out->scale_min ? s : out->scale_min;
        out->scale_max = s > out->scale_max ? s : out->scale_max;
        int64_t z = q->zero_point ? q->zero_point[i] : 0;
        if (i == 0 || z < out->zp_min)
            out->zp_min = z;
        if (i == 0 || z > out->zp_max)
            out->zp_max = z;
    }
}
