#include "quant/observer.h"

#include <math.h>
#include <stdlib.h>

#include "quant/histogram.h"

#define EMA_DEFAULT 0.01

struct qp_observer {
    struct qp_observer_opts o;
    uint64_t count, nonfinite;
    float min, max;       /* exact extremes */
    double ema_lo, ema_hi;
    bool uses_hist;
    struct qp_hist h;
};

struct qp_observer_opts qp_observer_opts_from_scheme(const struct qp_ascheme *a)
{
    struct qp_observer_opts o = {a->range, a->pct, 0, 0};
    return o;
}

enum qp_status qp_observer_new(const struct qp_observer_opts *o,
                               struct qp_observer **out, struct qp_error *err)
{
    *out = NULL;
    if ((unsigned)o->method >= QP_ARANGE_COUNT)
        return qp_fail(err, QP_E_INVAL, "invalid range method %d", (int)o->method);
    if (o->method == QP_ARANGE_PCT && !(o->pct > 0 && o->pct <= 100))
        return qp_fail(err, QP_E_INVAL, "percentile must be in (0, 100], got %g",
                       o->pct);
    if (o->method == QP_ARANGE_EMA && !(o->ema_c >= 0 && o->ema_c <= 1))
        return qp_fail(err, QP_E_INVAL, "averaging constant must be in (0, 1], "
                       "got %g", o->ema_c);
    struct qp_observer *obs = calloc(1, sizeof *obs);
    if (!obs)
        return qp_fail(err, QP_E_NOMEM, "out of memory for an observer");
    obs->o = *o;
    if (obs->o.ema_c == 0)
        obs->o.ema_c = EMA_DEFAULT;
    obs->min = INFINITY;
    obs->max = -INFINITY;
    obs->uses_hist = o->method == QP_ARANGE_PCT || o->method == QP_ARANGE_MSE ||
                     o->method == QP_ARANGE_KL;
    if (obs->uses_hist) {
        enum qp_status st = qp_hist_init(&obs->h, o->bins, err);
        if (st) {
            free(obs);
            return st;
        }
    }
    *out = obs;
    return QP_OK;
}

void qp_observer_free(struct qp_observer *obs)
{
    if (!obs)
        return;
    if (obs->uses_hist)
        qp_hist_release(&obs->h);
    free(obs);
}

enum qp_status qp_observer_add(struct qp_observer *obs, const float *x,
                               size_t n, struct qp_error *err)
{
    size_t bad = 0;
    float lo = INFINITY, hi = -INFINITY;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(x[i])) {
            bad++;
            continue;
        }
        lo = x[i] < lo ? x[i] : lo;
        hi = x[i] > hi ? x[i] : hi;
    }
    float *finite = NULL;
    if (bad && bad < n) {
        finite = malloc((n - bad) * sizeof *finite);
        if (!finite)
            return qp_fail(err, QP_E_NOMEM, "out of memory for a batch");
        size_t k = 0;
        for (size_t i = 0; i < n; i++)
            if (isfinite(x[i]))
                finite[k++] = x[i];
        x = finite;
    }
    obs->nonfinite += bad;
    n -= bad;
    if (n) {
        if (obs->count == 0) {
            obs->ema_lo = lo;
            obs->ema_hi = hi;
        } else {
            obs->ema_lo += obs->o.ema_c * (lo - obs->ema_lo);
            obs->ema_hi += obs->o.ema_c * (hi - obs->ema_hi);
        }
        obs->count += n;
        obs->min = lo < obs->min ? lo : obs->min;
        obs->max = hi > obs->max ? hi : obs->max;
        if (obs->uses_hist)
            qp_hist_add(&obs->h, x, n);
    }
    free(finite);
    return QP_OK;
}

uint64_t qp_observer_count(const struct qp_observer *obs) { return obs->count; }

uint64_t qp_observer_nonfinite(const struct qp_observer *obs)
{
    return obs->nonfinite;
}

enum qp_status qp_observer_range(const struct qp_observer *obs,
                                 const struct qp_qformat *f, enum qp_round r,
                                 float *lo, float *hi, struct qp_error *err)
{
    if (!obs->count)
        return qp_fail(err, QP_E_INVAL, "no finite calibration values observed");
    double t;
    switch (obs->o.method) {
    case QP_ARANGE_EMA:
        *lo = (float)obs->ema_lo;
        *hi = (float)obs->ema_hi;
        break;
    case QP_ARANGE_PCT:
        if (f->asym) {
            *lo = (float)qp_hist_quantile(&obs->h, 1 - obs->o.pct / 100, false);
            *hi = (float)qp_hist_quantile(&obs->h, obs->o.pct / 100, false);
        } else {
            t = qp_hist_quantile(&obs->h, obs->o.pct / 100, true);
            *lo = (float)-t;
            *hi = (float)t;
        }
        break;
    case QP_ARANGE_MSE:
        qp_hist_mse_range(&obs->h, f, r, lo, hi);
        break;
    case QP_ARANGE_KL:
        t = qp_hist_kl_threshold(&obs->h, f->bits);
        *lo = (float)fmax(obs->min, -t);
        *hi = (float)fmin(obs->max, t);
        break;
    default:
        *lo = obs->min;
        *hi = obs->max;
        break;
    }
    return QP_OK;
}
