#include "quant/histogram.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum qp_status qp_hist_init(struct qp_hist *h, size_t bins, struct qp_error *err)
{
    memset(h, 0, sizeof *h);
    if (bins == 0)
        bins = QP_HIST_BINS_DEFAULT;
    if (bins < 2 || bins % 2 || bins > ((size_t)1 << 24))
        return qp_fail(err, QP_E_INVAL, "histogram bins must be even, 2..%d, "
                       "got %zu", 1 << 24, bins);
    h->bins = bins;
    h->neg = calloc(bins, sizeof *h->neg);
    h->pos = calloc(bins, sizeof *h->pos);
    if (!h->neg || !h->pos) {
        qp_hist_release(h);
        return qp_fail(err, QP_E_NOMEM, "out of memory for a histogram");
    }
    h->min = INFINITY;
    h->max = -INFINITY;
    return QP_OK;
}

void qp_hist_release(struct qp_hist *h)
{
    free(h->neg);
    free(h->pos);
    h->neg = h->pos = NULL;
}

/* Doubles the range: bin i takes bins 2i and 2i+1. */
static void merge_pairs(uint64_t *a, size_t bins)
{
    for (size_t i = 0; i < bins / 2; i++)
        a[i] = a[2 * i] + a[2 * i + 1];
    memset(a + bins / 2, 0, bins / 2 * sizeof *a);
}

void qp_hist_add(struct qp_hist *h, const float *x, size_t n)
{
    float amax = 0;
    for (size_t i = 0; i < n; i++) {
        float v = x[i];
        h->min = v < h->min ? v : h->min;
        h->max = v > h->max ? v : h->max;
        amax = fabsf(v) > amax ? fabsf(v) : amax;
    }
    h->count += n;
    if (amax > 0 && amax >= h->range) {
        if (h->range == 0) { /* the power of two above amax */
            int e;
            frexp(amax, &e);
            h->range = ldexp(1.0, e);
            h->pos[0] += h->zeros;
            h->zeros = 0;
        }
        while (amax >= h->range) {
            merge_pairs(h->neg, h->bins);
            merge_pairs(h->pos, h->bins);
            h->range *= 2;
        }
    }
    if (h->range == 0) {
        h->zeros += n;
        return;
    }
    double inv = (double)h->bins / h->range;
    size_t last = h->bins - 1;
    for (size_t i = 0; i < n; i++) {
        double v = x[i];
        size_t b = (size_t)(fabs(v) * inv);
        b = b > last ? last : b;
        if (v >= 0)
            h->pos[b]++;
        else
            h->neg[b]++;
    }
}

double qp_hist_quantile(const struct qp_hist *h, double p, bool abs)
{
    if (h->range == 0)
        return 0;
    double w = h->range / (double)h->bins, target = p * (double)h->count;
    double lo = abs ? 0 : h->min;
    double hi = abs ? fmax(fabs(h->min), fabs(h->max)) : h->max;
    double cum = 0;
    /* ascending: neg[bins-1] .. neg[0] (unless abs), then pos[0] .. */
    for (size_t k = 0; k < 2 * h->bins; k++) {
        bool neg = k < h->bins;
        if (neg && abs)
            continue;
        size_t i = neg ? h->bins - 1 - k : k - h->bins;
        double c = (double)(neg ? h->neg[i] : h->pos[i]);
        if (abs)
            c += (double)h->neg[i];
        double a = neg ? -(double)(i + 1) * w : (double)i * w;
        if (c > 0 && cum + c >= target) {
            double v = a + w * (target - cum) / c;
            return fmin(fmax(v, lo), hi);
        }
        cum += c;
    }
    return hi;
}

/* G(u) = integral over [0, u] of (t - round(t))^2. */
static double g_int(double u)
{
    double n = floor(u + 0.5), r = u - n;
    return n / 12.0 + r * r * r / 3.0;
}

double qp_quant_interval_sse(double a, double b, double s, double L, double U)
{
    double sse = 0;
    if (a < L) { /* clipped to L */
        double hi = fmin(b, L);
        sse += (pow(hi - L, 3) - pow(a - L, 3)) / 3;
    }
    double lo = fmax(a, L), hi = fmin(b, U);
    if (lo < hi)
        sse += s * s * s * (g_int(hi / s) - g_int(lo / s));
    if (b > U) { /* clipped to U */
        double l = fmax(a, U);
        sse += (pow(b - U, 3) - pow(l - U, 3)) / 3;
    }
    return sse;
}

/* Squared error of the single value x. */
static double point_sse(double x, double s, double L, double U)
{
    double q = fmin(fmax(s * round(x / s), L), U);
    return (x - q) * (x - q);
}

struct bin {
    double a, b, c; /* [a, b] clamped to the observed extremes, count */
};

void qp_hist_mse_range(const struct qp_hist *h, const struct qp_qformat *f,
                       enum qp_round r, float *lo, float *hi)
{
    *lo = h->count ? h->min : 0;
    *hi = h->count ? h->max : 0;
    if (h->range == 0)
        return;
    struct bin *v = malloc(2 * h->bins * sizeof *v);
    if (!v)
        return; /* min/max: still a valid range */
    double w = h->range / (double)h->bins;
    size_t n = 0;
    for (size_t i = 0; i < h->bins; i++) {
        if (h->neg[i])
            v[n++] = (struct bin){fmax(-(double)(i + 1) * w, h->min),
                                  fmin(-(double)i * w, h->max),
                                  (double)h->neg[i]};
        if (h->pos[i])
            v[n++] = (struct bin){fmax((double)i * w, h->min),
                                  fmin((double)(i + 1) * w, h->max),
                                  (double)h->pos[i]};
    }
    int32_t qmin, qmax;
    qp_qformat_range(f, &qmin, &qmax);
    double best = INFINITY;
    float mn = *lo, mx = *hi;
    for (int k = QP_HIST_MSE_STEPS; k >= 1; k--) {
        float a = (float)k / QP_HIST_MSE_STEPS, s;
        int32_t z;
        qp_qparams_from_range(f, r, a * mn, a * mx, &s, &z);
        double L = (double)s * (qmin - z), U = (double)s * (qmax - z), e = 0;
        for (size_t j = 0; j < n; j++)
            e += v[j].b > v[j].a
                ? v[j].c / (v[j].b - v[j].a) *
                      qp_quant_interval_sse(v[j].a, v[j].b, s, L, U)
                : v[j].c * point_sse(v[j].a, s, L, U);
        if (e < best) {
            best = e;
            *lo = a * mn;
            *hi = a * mx;
        }
    }
    free(v);
}

double qp_hist_kl_threshold(const struct qp_hist *h, unsigned bits)
{
    double amax = fmax(fabs(h->min), fabs(h->max));
    size_t nb = h->bins, nq = (size_t)1 << (bits - 1);
    if (h->range == 0 || nq >= nb)
        return h->range == 0 ? 0 : amax;
    double *abs = malloc(nb * sizeof *abs), *p = malloc(nb * sizeof *p);
    double *q = malloc(nb * sizeof *q);
    if (!abs || !p || !q) {
        free(abs);
        free(p);
        free(q);
        return amax;
    }
    double total = 0;
    for (size_t i = 0; i < nb; i++)
        total += abs[i] = (double)h->neg[i] + (double)h->pos[i];
    double best = INFINITY, inside = 0;
    size_t best_i = nb;
    for (size_t i = 0; i < nq; i++)
        inside += abs[i];
    for (size_t i = nq; i <= nb; i++) {
        if (i > nq)
            inside += abs[i - 1];
        if (inside <= 0)
            continue;
        memcpy(p, abs, i * sizeof *p);
        p[i - 1] += total - inside;
        size_t m = i / nq;
        for (size_t j = 0; j < nq; j++) {
            size_t start = j * m, stop = j == nq - 1 ? i : start + m;
            double tot = 0;
            size_t nz = 0;
            for (size_t k = start; k < stop; k++) {
                tot += abs[k];
                nz += p[k] != 0;
            }
            for (size_t k = start; k < stop; k++)
                q[k] = p[k] != 0 ? tot / (double)nz : 0;
        }
        double kl = 0;
        for (size_t k = 0; k < i && kl < INFINITY; k++) {
            if (p[k] == 0)
                continue;
            double pk = p[k] / total, qk = q[k] / inside;
            kl = qk > 0 ? kl + pk * log(pk / qk) : INFINITY;
        }
        if (kl < best) {
            best = kl;
            best_i = i;
        }
    }
    free(abs);
    free(p);
    free(q);
    return fmin((double)best_i * (h->range / (double)nb), amax);
}
