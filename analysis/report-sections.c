/* analysis/report-sections.c: the report's sections (analysis/report.h):
 * sweep, diff, sensitivity, ladder and recipe tables. */
#include "analysis/report-sections.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/plot-depth.h"
#include "analysis/report-plots.h"

const char *qp_report_field(const struct qp_report_ctx *c, size_t r,
                            const char *col)
{
    long k = qp_csv_column(c->t, col);
    return k >= 0 && r < c->t->nrows ? c->t->rows[r][k] : "";
}

double qp_report_num(const struct qp_report_ctx *c, size_t r, const char *col)
{
    double v;
    return qp_csv_to_num(qp_report_field(c, r, col), &v) ? v : NAN;
}

/* A cell: the field scaled and formatted (a number), or as it is. */
static void cell(const char *field, const struct qp_report_col *col, char *buf,
                 size_t n, double *key)
{
    double v;
    *key = NAN;
    if (!col->fmt || !qp_csv_to_num(field, &v)) {
        snprintf(buf, n, "%s", field);
        return;
    }
    v *= col->scale;
    *key = v;
    if (isnan(v))
        snprintf(buf, n, "nan");
    else if (isinf(v))
        snprintf(buf, n, v > 0 ? "inf" : "-inf");
    else
        snprintf(buf, n, col->fmt, v);
}

enum qp_status qp_report_table(struct qp_report_ctx *c, const char *id,
                               const struct qp_report_col *cols, size_t ncols,
                               const size_t *rows, size_t n,
                               const char *const *rclass, const bool *eligible,
                               struct qp_error *err)
{
    if (!rows)
        n = c->t->nrows;
    /* the columns present, with at least one non-empty cell */
    struct qp_html_col *hc = calloc(ncols + 1, sizeof *hc);
    const struct qp_report_col **use = calloc(ncols + 1, sizeof *use);
    char **cells = calloc(ncols + 1, sizeof *cells);
    double *keys = calloc(ncols + 1, sizeof *keys);
    size_t nu = 0;
    enum qp_status st = hc && use && cells && keys ? QP_OK
                                                   : qp_fail(err, QP_E_NOMEM, "out of memory");
    for (size_t k = 0; !st && k < ncols; k++) {
        if (qp_csv_column(c->t, cols[k].csv) < 0)
            continue;
        bool any = false;
        for (size_t i = 0; !any && i < n; i++)
            any = *qp_report_field(c, rows ? rows[i] : i, cols[k].csv) != '\0';
        if (!any)
            continue;
        use[nu] = &cols[k];
        hc[nu++] = (struct qp_html_col){cols[k].head, cols[k].better, cols[k].csv};
    }
    for (size_t k = 0; !st && k < nu; k++)
        if (!(cells[k] = malloc(2048)))
            st = qp_fail(err, QP_E_NOMEM, "out of memory");
    struct qp_html_table t;
    qp_html_table_init(&t, hc, nu);
    for (size_t i = 0; !st && i < n; i++) {
        size_t r = rows ? rows[i] : i;
        for (size_t k = 0; k < nu; k++)
            cell(qp_report_field(c, r, use[k]->csv), use[k], cells[k], 2048, &keys[k]);
        st = qp_html_table_add(&t, (const char *const *)cells, keys,
                               eligible && eligible[i], rclass ? rclass[i] : NULL, err);
    }
    if (!st) {
        qp_html_table_write(c->html, id, &t);
        c->sum->rows += n;
    }
    qp_html_table_release(&t);
    for (size_t k = 0; cells && k < nu; k++)
        free(cells[k]);
    free(cells);
    free(keys);
    free(use);
    free(hc);
    return st;
}

/* "sweep-1-size" into buf. */
static const char *stem(const struct qp_report_ctx *c, const char *what, char *buf,
                        size_t n)
{
    snprintf(buf, n, "%s-%s", c->id, what);
    return buf;
}

void qp_report_open(struct qp_report_ctx *c, const char *kind)
{
    char h[4200];
    snprintf(h, sizeof h, "%s: %s", kind, c->path);
    qp_html_section(c->html, c->id, h);
}

/* ---- sweep ---------------------------------------------------------------------- */

static const struct qp_report_col sweep_cols[] = {
    {"index", "#", "%.0f", 1, 0},
    {"name", "configuration", NULL, 1, 0},
    {"mode", "mode", NULL, 1, 0},
    {"sqnr_db", "SQNR (dB)", "%.2f", 1, 1},
    {"cosine", "cosine", "%.5f", 1, 1},
    {"kl", "KL", "%.4g", 1, -1},
    {"kl_err", "KL ±", "%.2g", 1, 0},
    {"top1", "top-1", "%.3f", 1, 1},
    {"ppl", "PPL", "%.3f", 1, -1},
    {"ppl_err", "PPL ±", "%.3f", 1, 0},
    {"task_acc", "task acc", "%.3f", 1, 1},
    {"exact_match", "exact match", "%.3f", 1, 1},
    {"weight_bytes", "weights (MB)", "%.3f", 1e-6, -1},
    {"bits_per_weight", "bits/weight", "%.2f", 1, -1},
    {"bitops", "GBitOps", "%.4g", 1e-9, -1},
    {"ms_per_input", "ms/input", "%.1f", 1, -1},
    {"tokens_per_s", "tokens/s", "%.1f", 1, 1},
    {"peak_rss_mb", "peak RSS (MB)", "%.0f", 1, -1},
    {"worst_tensor", "worst tensor", NULL, 1, 0},
    {"worst_sqnr_db", "its SQNR (dB)", "%.2f", 1, 0},
    {"error", "error", NULL, 1, 0},
};

/* The quality the plots use: SQNR, else -PPL, else -KL (higher better). */
static const char *quality_of(const struct qp_report_ctx *c, bool *negate)
{
    static const char *const q[] = {"sqnr_db", "ppl", "kl"};
    for (int k = 0; k < 3; k++)
        for (size_t r = 0; r < c->t->nrows; r++)
            if (isfinite(qp_report_num(c, r, q[k])) &&
                strcmp(qp_report_field(c, r, "kind"), "fp32")) {
                *negate = k > 0;
                return q[k];
            }
    *negate = false;
    return NULL;
}

/* A scatter of the quality against cost column xcol (scaled), with its
 * front; front[r] (may be NULL) receives each row's place on it. */
static enum qp_status sweep_scatter(struct qp_report_ctx *c, const char *what,
                                    const char *xcol, double xscale,
                                    const char *xlabel, const char *q, bool negate,
                                    bool *front, struct qp_error *err)
{
    size_t n = c->t->nrows, np = 0;
    struct qp_rpoint *p = calloc(n + 1, sizeof *p);
    double *x = calloc(n + 1, sizeof *x), *y = calloc(n + 1, sizeof *y);
    bool *f = calloc(n + 1, sizeof *f);
    size_t *row = calloc(n + 1, sizeof *row);
    enum qp_status st = p && x && y && f && row ? QP_OK
                                                : qp_fail(err, QP_E_NOMEM, "out of memory");
    for (size_t r = 0; !st && r < n; r++) {
        double xv = qp_report_num(c, r, xcol) * xscale, yv = qp_report_num(c, r, q);
        if (!strcmp(xcol, "tokens_per_s")) /* time per token instead */
            xv = xv > 0 ? 1e3 / xv : NAN;
        if (!isfinite(xv) || !isfinite(yv) || strcmp(qp_report_field(c, r, "status"), "ok"))
            continue;
        x[np] = xv;
        y[np] = negate ? -yv : yv;
        p[np] = (struct qp_rpoint){xv, yv, qp_report_field(c, r, "name"), false};
        row[np++] = r;
    }
    if (!st && np) {
        qp_pareto_front(x, y, np, f);
        for (size_t i = 0; i < np; i++) {
            p[i].front = f[i];
            if (front)
                front[row[i]] = f[i];
        }
        char s[64], title[4200];
        snprintf(title, sizeof title, "quality vs %s: %s", what, c->path);
        st = qp_report_scatter(c->dir, stem(c, what, s, sizeof s), title, xlabel,
                               !strcmp(q, "sqnr_db") ? "output SQNR vs fp32 (dB)"
                               : !strcmp(q, "ppl") ? "perplexity (lower is better)"
                                                   : "KL vs fp32 (lower is better)",
                               p, np, err);
        if (!st) {
            char cap[4400];
            snprintf(cap, sizeof cap, "Quality against %s; the Pareto front "
                     "(nothing both %s and better) joined and named.", what,
                     !strcmp(what, "size") ? "smaller" : "faster");
            qp_html_figure(c->html, s, cap);
            c->sum->plots++;
        }
    }
    free(p);
    free(x);
    free(y);
    free(f);
    free(row);
    return st;
}

enum qp_status qp_report_sweep(struct qp_report_ctx *c, struct qp_error *err)
{
    size_t n = c->t->nrows;
    qp_report_open(c, "sweep");
    bool negate;
    const char *q = quality_of(c, &negate);
    bool *front = calloc(n + 1, sizeof *front), *eligible = calloc(n + 1, sizeof *eligible);
    const char **rclass = calloc(n + 1, sizeof *rclass);
    if (!front || !eligible || !rclass) {
        free(front);
        free(eligible);
        free(rclass);
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    }
    size_t failed = 0;
    for (size_t r = 0; r < n; r++) {
        bool ok = !strcmp(qp_report_field(c, r, "status"), "ok");
        bool ref = !strcmp(qp_report_field(c, r, "kind"), "fp32");
        eligible[r] = ok && !ref;
        failed += !ok;
    }
    char para[600];
    snprintf(para, sizeof para, "%zu configurations (%zu failed). Best value per "
             "column in green (the fp32 reference aside); rows on the quality-vs-"
             "size Pareto front have a blue edge. Click a header to sort.", n,
             failed);
    qp_html_para(c->html, para);
    enum qp_status st = QP_OK;
    if (q) {
        st = sweep_scatter(c, "size", "weight_bytes", 1e-6, "weights (MB)", q,
                           negate, front, err);
        bool ms = false;
        for (size_t r = 0; r < n; r++)
            ms |= isfinite(qp_report_num(c, r, "ms_per_input"));
        if (!st)
            st = sweep_scatter(c, "speed", ms ? "ms_per_input" : "tokens_per_s", 1,
                               ms ? "forward time per input (ms)"
                                  : "time per token (ms)", q, negate, NULL, err);
    }
    for (size_t r = 0; r < n; r++)
        rclass[r] = strcmp(qp_report_field(c, r, "status"), "ok") ? "error"
                    : front[r] ? "front"
                    : !strcmp(qp_report_field(c, r, "kind"), "fp32") ? "ref" : NULL;
    char id[48];
    snprintf(id, sizeof id, "%s-table", c->id);
    if (!st)
        st = qp_report_table(c, id, sweep_cols, sizeof sweep_cols / sizeof sweep_cols[0],
                             NULL, n, rclass, eligible, err);
    qp_html_section_end(c->html);
    free(front);
    free(eligible);
    free(rclass);
    return st;
}
