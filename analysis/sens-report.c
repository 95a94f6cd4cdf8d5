/* analysis/sens-report.c: the sensitivity CSV and bar chart
 * (analysis/sens-report.h). */
#include "analysis/sens-report.h"

#include "analysis/plot-bars.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct rank_ctx {
    const struct qp_sens_result *res;
};

static int cmp_rank(const void *a, const void *b, void *arg)
{
    const struct qp_sens_result *res = arg;
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    double vx = qp_sens_rank_value(res, x), vy = qp_sens_rank_value(res, y);
    if (isnan(vx) != isnan(vy))
        return isnan(vx) ? -1 : 1; /* NaN: broken, first */
    if (vx != vy && !isnan(vx))
        return vx < vy ? -1 : 1;
    return (x > y) - (x < y);
}

enum qp_status qp_sens_order(const struct qp_sens_result *res, size_t **order,
                             struct qp_error *err)
{
    size_t n = res->units.n;
    *order = malloc((n + 1) * sizeof **order);
    if (!*order)
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    for (size_t i = 0; i < n; i++)
        (*order)[i] = i;
    qsort_r(*order, n, sizeof **order, cmp_rank, (void *)res);
    return QP_OK;
}

static void num_or_empty(struct qp_csv_writer *w, bool have, double v)
{
    if (have)
        qp_csv_num(w, v);
    else
        qp_csv_str(w, NULL);
}

void qp_sens_write_csv(struct qp_csv_writer *w, const struct qp_sens_result *res,
                       const size_t *order)
{
    static const char *const head[] = {
        "rank", "unit", "kind", "params", "bytes_fp32", "bytes_scheme", "macs",
        "in_w_sqnr", "in_a_sqnr", "in_wa_sqnr", "in_wa_kl", "in_wa_top1",
        "out_w_sqnr", "out_a_sqnr", "out_wa_sqnr", "out_wa_kl", "weight_sqnr",
        "kurtosis", "outliers_6sigma", "channel_spread", "clip_share",
        "act_range", "local_sqnr", "accum_sqnr", "hint"};
    qp_csv_row(w, head, sizeof head / sizeof head[0]);
    for (size_t k = 0; k < res->units.n; k++) {
        size_t i = order[k];
        const struct qp_unit *u = &res->units.u[i];
        const struct qp_sens_row *r = &res->rows[i];
        qp_csv_int(w, (int64_t)k + 1);
        qp_csv_str(w, u->name);
        qp_csv_str(w, u->nnodes ? "weights" : "activation");
        qp_csv_int(w, (int64_t)u->params);
        qp_csv_int(w, (int64_t)u->bytes_fp32);
        qp_csv_int(w, (int64_t)u->bytes_base);
        qp_csv_int(w, (int64_t)u->macs);
        for (int p = 0; p < QP_SP_COUNT; p++)
            num_or_empty(w, r->in[p].done, r->in[p].sqnr);
        num_or_empty(w, r->in[QP_SP_WA].done, r->in[QP_SP_WA].kl);
        num_or_empty(w, r->in[QP_SP_WA].done, r->in[QP_SP_WA].top1);
        for (int p = 0; p < QP_SP_COUNT; p++)
            num_or_empty(w, r->out[p].done, r->out[p].sqnr);
        num_or_empty(w, r->out[QP_SP_WA].done, r->out[QP_SP_WA].kl);
        double ev[] = {r->w_sqnr, r->w_kurtosis, r->w_outliers, r->spread,
                       r->clip_share, r->act_range, r->local_sqnr, r->accum_sqnr};
        for (size_t e = 0; e < sizeof ev / sizeof ev[0]; e++)
            num_or_empty(w, !isnan(ev[e]), ev[e]);
        qp_csv_str(w, r->hint);
        qp_csv_end_row(w);
    }
}

enum qp_status qp_sens_plot(const char *out, const char *title,
                            const struct qp_sens_result *res, const size_t *order,
                            size_t top, struct qp_plot **pending,
                            struct qp_error *err)
{
    size_t n = res->units.n < top ? res->units.n : top;
    double *v = calloc(n + 1, sizeof *v);
    const char **names = calloc(n + 1, sizeof *names);
    struct qp_plot_text t;
    enum qp_status st = v && names ? qp_plot_text_open(&t, err)
                                   : qp_fail(err, QP_E_NOMEM, "out of memory");
    for (size_t k = 0; !st && k < n; k++) {
        v[k] = qp_sens_rank_value(res, order[k]); /* the ranking value */
        names[k] = res->units.u[order[k]].name;
    }
    if (!st) {
        qp_plot_bars_fill(&t, title, "output SQNR with only this unit quantized "
                          "(dB)", v, names, n);
        st = qp_plot_text_render(&t, out, false, pending, err);
    }
    free(v);
    free(names);
    return st;
}
