/* analysis/sens-evidence.c: the evidence behind each unit's hint
 * (analysis/sens-evidence.h). */
#include "analysis/sens-evidence.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/metrics.h"
#include "analysis/stats.h"

/* ---- weights ----------------------------------------------------------- */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Largest over median per-output-channel absmax of weight w. */
static double channel_spread(const struct qp_tensor *w, enum qp_wlayout layout)
{
    struct qp_qgeom geo;
    struct qp_error err;
    if (qp_qgeom_init(&geo, w->ndim, w->shape, QP_GRAN_CHANNEL, 0, layout, &err) ||
        geo.axis < 0 || geo.dim < 2)
        return NAN;
    double *amax = calloc(geo.dim, sizeof *amax);
    float *row = malloc((geo.inner ? geo.inner : 1) * sizeof *row);
    if (!amax || !row) {
        free(amax);
        free(row);
        return NAN;
    }
    for (size_t o = 0; o < geo.outer; o++)
        for (size_t c = 0; c < geo.dim; c++) {
            qp_tensor_read_f32(w, (o * geo.dim + c) * geo.inner, geo.inner, row);
            for (size_t k = 0; k < geo.inner; k++)
                amax[c] = fabs(row[k]) > amax[c] ? fabs(row[k]) : amax[c];
        }
    double top = 0;
    for (size_t c = 0; c < geo.dim; c++)
        top = amax[c] > top ? amax[c] : top;
    qsort(amax, geo.dim, sizeof *amax, cmp_double);
    double med = amax[geo.dim / 2];
    free(amax);
    free(row);
    return med > 0 ? top / med : NAN;
}

static enum qp_status weight_evidence(const struct qp_graph *g,
                                      const struct qp_qplan *p,
                                      const struct qp_unit *u,
                                      struct qp_sens_row *row,
                                      struct qp_error *err)
{
    row->w_sqnr = row->w_kurtosis = row->w_outliers = row->spread = NAN;
    for (size_t k = 0; k < u->nnodes; k++) {
        int i = u->nodes[k];
        const struct qp_tensor *w = g->values[g->nodes[i].in[1]].konst;
        struct qp_stats s;
        struct qp_metrics m;
        enum qp_status st = qp_stats_tensor(w, &s, err);
        if (!st && p->n[i].wq)
            st = qp_metrics_tensors(w, p->n[i].w_q, &m, err);
        if (st)
            return st;
        double wsq = p->n[i].wq ? qp_metrics_sqnr_db(&m) : NAN;
        if (!(row->w_sqnr <= wsq))
            row->w_sqnr = wsq;
        double ku = qp_stats_kurtosis(&s), out = qp_stats_outlier_ratio(&s);
        if (!(row->w_kurtosis >= ku))
            row->w_kurtosis = ku;
        if (!(row->w_outliers >= out))
            row->w_outliers = out;
        enum qp_wlayout l;
        if (p->n[i].ws.gran == QP_GRAN_TENSOR && qp_node_weighted(g, i, &l)) {
            double sp = channel_spread(w, l);
            if (!(row->spread >= sp))
                row->spread = sp;
        }
    }
    return QP_OK;
}

/* ---- activation clipping over the calibration sets ------------------- */

struct clip {
    const struct qp_qplan *p;
    const int *owner;        /* value -> row, or -1 */
    uint64_t *out, *total;   /* per row */
};

static enum qp_status clip_capture(void *ctx, const struct qp_graph *g, int v,
                                   const struct qp_tensor *t, struct qp_error *err)
{
    struct clip *c = ctx;
    (void)g;
    (void)err;
    int r = c->owner[v];
    const struct qp_qval *q = &c->p->v[v];
    if (r < 0 || t->dtype != QP_DTYPE_F32 || !q->quant || q->as.dynamic)
        return QP_OK;
    float lo = q->scale * (float)(q->qmin - q->zp);
    float hi = q->scale * (float)(q->qmax - q->zp);
    /* half a step beyond the last code still rounds onto it */
    lo -= 0.5f * q->scale;
    hi += 0.5f * q->scale;
    const float *x = t->data;
    size_t n = qp_tensor_numel(t);
    uint64_t k = 0;
    for (size_t i = 0; i < n; i++)
        k += x[i] < lo || x[i] > hi;
    c->out[r] += k;
    c->total[r] += n;
    return QP_OK;
}

static enum qp_status clip_evidence(struct qp_session *s, const struct qp_qplan *p,
                                    struct qp_sens_result *res, const int *owner,
                                    struct qp_error *err)
{
    const struct qp_graph *g = qp_session_graph(s);
    size_t n = res->units.n;
    struct clip c = {p, owner, calloc(n + 1, sizeof *c.out),
                     calloc(n + 1, sizeof *c.total)};
    struct qp_tensor **outs = calloc((size_t)g->n_outputs + 1, sizeof *outs);
    enum qp_status st = c.out && c.total && outs
                            ? QP_OK : qp_fail(err, QP_E_NOMEM, "out of memory");
    for (size_t k = 0; !st && k < qp_session_calib_count(s); k++) {
        struct qp_session_run_opts ro = {.capture = "*", .on_capture = clip_capture,
                                         .capture_ctx = &c};
        st = qp_session_run(s, NULL,
                            (const struct qp_tensor *const *)qp_session_calib_set(s, k),
                            &ro, outs, NULL, err);
        for (int j = 0; j < g->n_outputs; j++) {
            qp_tensor_free(outs[j]);
            outs[j] = NULL;
        }
    }
    for (size_t r = 0; !st && r < n; r++)
        res->rows[r].clip_share = c.total[r] ? (double)c.out[r] / (double)c.total[r]
                                             : NAN;
    free(c.out);
    free(c.total);
    free(outs);
    return st;
}

/* ---- created vs inherited ----------------------------------------------- */

struct sq {
    const struct qp_memo *ref;
    const int *first;  /* value -> row when it is the row's first value */
    double *sqnr;      /* per row */
    double *range;     /* per row: absmax / std of the reference, or NULL */
};

static enum qp_status sq_capture(void *ctx, const struct qp_graph *g, int v,
                                 const struct qp_tensor *t, struct qp_error *err)
{
    struct sq *c = ctx;
    (void)g;
    const struct qp_tensor *r = qp_memo_value(c->ref, v);
    if (c->first[v] < 0 || !r)
        return QP_OK;
    struct qp_metrics m;
    enum qp_status st = qp_metrics_tensors(r, t, &m, err);
    if (!st)
        c->sqnr[c->first[v]] = qp_metrics_sqnr_db(&m);
    struct qp_stats s;
    if (!st && c->range && !(st = qp_stats_tensor(r, &s, err)))
        c->range[c->first[v]] = qp_stats_std(&s) > 0 ? s.absmax / qp_stats_std(&s)
                                                     : NAN;
    return st;
}

static enum qp_status local_evidence(struct qp_session *s, const struct qp_splan *p,
                                     const struct qp_memo *ref,
                                     const struct qp_tensor *const *feed,
                                     struct qp_sens_result *res, const int *first,
                                     struct qp_error *err)
{
    const struct qp_graph *g = qp_session_graph(s);
    size_t n = res->units.n;
    double *loc = malloc((n + 1) * sizeof *loc), *acc = malloc((n + 1) * sizeof *acc);
    double *rng = malloc((n + 1) * sizeof *rng);
    struct qp_tensor **outs = calloc((size_t)g->n_outputs + 1, sizeof *outs);
    enum qp_status st = loc && acc && rng && outs
                            ? QP_OK : qp_fail(err, QP_E_NOMEM, "out of memory");
    for (size_t r = 0; !st && r <= n; r++)
        loc[r] = acc[r] = rng[r] = NAN;
    for (int pass = 0; !st && pass < 2; pass++) {
        struct sq c = {ref, first, pass ? loc : acc, pass ? rng : NULL};
        struct qp_session_run_opts ro = {.capture = "*", .on_capture = sq_capture,
                                         .capture_ctx = &c,
                                         .local_memo = pass ? ref : NULL};
        st = qp_session_run(s, p, feed, &ro, outs, NULL, err);
        for (int j = 0; j < g->n_outputs; j++) {
            qp_tensor_free(outs[j]);
            outs[j] = NULL;
        }
    }
    for (size_t r = 0; !st && r < n; r++) {
        res->rows[r].local_sqnr = loc[r];
        res->rows[r].accum_sqnr = acc[r];
        res->rows[r].act_range = rng[r];
    }
    free(loc);
    free(acc);
    free(rng);
    free(outs);
    return st;
}

/* ---- hints ------------------------------------------------------------------- */

/* Appends printf output to buf (a "; " between sentences when asked). */
static void append(char *buf, size_t size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void append(char *buf, size_t size, const char *fmt, ...)
{
    size_t len = strlen(buf);
    if (len + 4 >= size)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + len, size - len, fmt, ap);
    va_end(ap);
}

static void act_hint(char *h, size_t hs, const struct qp_unit *u,
                     const struct qp_sens_row *r)
{
    append(h, hs, "activations: %u-bit alone gives %.1f dB on this tensor",
           u->abits, r->local_sqnr);
    if (r->act_range > 20)
        append(h, hs, ", its absmax is %.0fx its std (outliers: try a16t or a "
               "pct/kl range)", r->act_range);
    if (r->clip_share > 1e-4)
        append(h, hs, ", %.3g%% of calibration values clipped by the range",
               100 * r->clip_share);
}

static void weight_hint(char *h, size_t hs, const struct qp_unit *u,
                        const struct qp_sens_row *r)
{
    append(h, hs, "weights: %.1f dB at %u bits", r->w_sqnr, u->wbits);
    if (r->w_kurtosis > 20 || r->w_outliers > 1e-4)
        append(h, hs, ", outliers (kurtosis %.0f, %.3g%% beyond 6 sigma: try "
               "@mse clipping or more bits)", r->w_kurtosis, 100 * r->w_outliers);
    if (r->spread > 8)
        append(h, hs, ", channel ranges differ %.0fx under a per-tensor scheme "
               "(try 'c')", r->spread);
}

static void hint(const struct qp_unit *u, struct qp_sens_row *r)
{
    char *h = r->hint;
    size_t hs = sizeof r->hint;
    h[0] = '\0';
    bool w = u->nnodes > 0, a = u->nvalues > 0 && isfinite(r->local_sqnr);
    double iw = r->in[QP_SP_W].done ? r->in[QP_SP_W].sqnr : NAN;
    double ia = r->in[QP_SP_A].done ? r->in[QP_SP_A].sqnr : NAN;
    /* the part that hurts the output more when quantized alone first */
    bool act_first = a && (!w || !(iw <= ia));
    if (act_first)
        act_hint(h, hs, u, r);
    if (w) {
        if (h[0])
            append(h, hs, "; ");
        weight_hint(h, hs, u, r);
    }
    if (a && !act_first) {
        append(h, hs, "; ");
        act_hint(h, hs, u, r);
    }
    if (a && isfinite(r->accum_sqnr) && r->accum_sqnr < r->local_sqnr - 6)
        append(h, hs, "; fully quantized it also inherits error: %.1f dB "
               "accumulated vs %.1f dB on its own", r->accum_sqnr, r->local_sqnr);
}

enum qp_status qp_sens_evidence(struct qp_session *s, const struct qp_splan *base,
                                const struct qp_memo *ref,
                                const struct qp_tensor *const *feed,
                                struct qp_sens_result *res, struct qp_error *err)
{
    const struct qp_graph *g = qp_session_graph(s);
    const struct qp_qplan *p = qp_splan_qplan(base);
    size_t nv = (size_t)g->n_values + 1;
    int *owner = malloc(nv * sizeof *owner), *first = malloc(nv * sizeof *first);
    if (!owner || !first) {
        free(owner);
        free(first);
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    }
    for (size_t v = 0; v < nv; v++)
        owner[v] = first[v] = -1;
    for (size_t r = 0; r < res->units.n; r++) {
        const struct qp_unit *u = &res->units.u[r];
        for (size_t k = 0; k < u->nvalues; k++)
            owner[u->values[k]] = (int)r;
        if (u->nvalues)
            first[u->values[0]] = (int)r;
    }
    enum qp_status st = QP_OK;
    for (size_t r = 0; !st && r < res->units.n; r++)
        st = weight_evidence(g, p, &res->units.u[r], &res->rows[r], err);
    if (!st)
        st = clip_evidence(s, p, res, owner, err);
    if (!st)
        st = local_evidence(s, base, ref, feed, res, first, err);
    for (size_t r = 0; !st && r < res->units.n; r++)
        hint(&res->units.u[r], &res->rows[r]);
    free(owner);
    free(first);
    return st;
}
