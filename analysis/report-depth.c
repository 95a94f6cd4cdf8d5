/* analysis/report-depth.c: the report's sections of per-tensor and
 * per-unit tables (analysis/report.h): diff, sensitivity, ladder, recipe. */
#include "analysis/report-sections.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/plot-depth.h"
#include "analysis/report-plots.h"

static void figure(struct qp_report_ctx *c, const char *s, const char *caption)
{
    qp_html_figure(c->html, s, caption);
    c->sum->plots++;
}

/* A table of every row inside a closed <details>. */
static enum qp_status full_table(struct qp_report_ctx *c,
                                 const struct qp_report_col *cols, size_t ncols,
                                 struct qp_error *err)
{
    char id[48];
    snprintf(id, sizeof id, "%s-all", c->id);
    fprintf(c->html, "<details><summary>all %zu rows</summary>\n", c->t->nrows);
    enum qp_status st = qp_report_table(c, id, cols, ncols, NULL, 0, NULL, NULL, err);
    fputs("</details>\n", c->html);
    return st;
}

/* The rows' order in the model: by column col when every row has it,
 * else the file's. */
static size_t *model_order(const struct qp_report_ctx *c, const char *col,
                           bool *known)
{
    size_t n = c->t->nrows;
    size_t *pos = malloc((n + 1) * sizeof *pos), *rows = malloc((n + 1) * sizeof *rows);
    bool *used = calloc(n + 1, sizeof *used);
    *known = pos && rows && used;
    for (size_t r = 0; *known && r < n; r++) {
        double v = qp_report_num(c, r, col);
        *known = v >= 0 && v < (double)n && v == floor(v) && !used[(size_t)v];
        if (*known) {
            used[(size_t)v] = true;
            pos[r] = (size_t)v;
        }
    }
    for (size_t r = 0; rows && r < n; r++)
        rows[*known ? pos[r] : r] = r;
    free(pos);
    free(used);
    return rows;
}

/* ---- diff ---------------------------------------------------------------------- */

static const struct qp_report_col diff_cols[] = {
    {"rank", "rank", "%.0f", 1, 0},
    {"name", "tensor", NULL, 1, 0},
    {"shape", "shape", NULL, 1, 0},
    {"sqnr_db", "SQNR (dB)", "%.2f", 1, 0},
    {"cosine", "cosine", "%.5f", 1, 0},
    {"mae", "MAE", "%.4g", 1, 0},
    {"max_abs", "max |err|", "%.4g", 1, 0},
    {"rel_l2", "rel L2", "%.4g", 1, 0},
    {"nonfinite", "NaN/Inf", "%.0f", 1, 0},
    {"kl", "KL", "%.4g", 1, 0},
    {"top1", "top-1", "%.3f", 1, 0},
    {"max_lsb", "max LSB", "%.4g", 1, 0},
    {"mismatches", "mismatches", "%.0f", 1, 0},
};

enum qp_status qp_report_diff(struct qp_report_ctx *c, struct qp_error *err)
{
    size_t n = c->t->nrows;
    qp_report_open(c, "diff");
    bool known;
    size_t *rows = model_order(c, "order", &known);
    const char **names = calloc(n + 1, sizeof *names);
    double *v = calloc(n + 1, sizeof *v);
    int *block = calloc(n + 1, sizeof *block);
    size_t marked[5], nm = 0;
    enum qp_status st = rows && names && v && block ? QP_OK
                                                    : qp_fail(err, QP_E_NOMEM, "out of memory");
    bool blocks = false;
    for (size_t i = 0; !st && i < n; i++) {
        names[i] = qp_report_field(c, rows[i], "name");
        v[i] = qp_report_num(c, rows[i], "sqnr_db");
        block[i] = qp_depth_block_of(names[i]);
        blocks |= block[i] >= 0;
        if (rows[i] < 5) /* the file is worst first: rows 0..4 */
            marked[nm++] = i;
    }
    qp_html_para(c->html, known ? "SQNR of every tensor in model order; the five "
                                  "worst (the table's first rows) numbered."
                                : "SQNR of every tensor in the table's order (it has "
                                  "no order column: an older qprobe diff).");
    char s[64], title[4200];
    snprintf(title, sizeof title, "SQNR across depth: %s", c->path);
    snprintf(s, sizeof s, "%s-depth", c->id);
    if (!st && n) {
        struct qp_depth_series ser = {"SQNR", v};
        struct qp_depth_plot p = {title, "SQNR (dB)", n, names, blocks ? block : NULL,
                                  &ser, 1, marked, nm, NULL};
        if (!(st = qp_report_plot_depth(c->dir, s, &p, err)))
            figure(c, s, "SQNR across depth (block boundaries dotted, the worst "
                         "tensors circled and listed beside the plot).");
    }
    size_t top[20], nt = n < 20 ? n : 20;
    for (size_t i = 0; i < nt; i++)
        top[i] = i;
    char id[48];
    snprintf(id, sizeof id, "%s-worst", c->id);
    size_t ncols = sizeof diff_cols / sizeof diff_cols[0];
    if (!st)
        st = qp_report_table(c, id, diff_cols, ncols, top, nt, NULL, NULL, err);
    if (!st && n > nt)
        st = full_table(c, diff_cols, ncols, err);
    qp_html_section_end(c->html);
    free(rows);
    free(names);
    free(v);
    free(block);
    return st;
}

/* ---- sensitivity ------------------------------------------------------------------ */

static const struct qp_report_col sens_cols[] = {
    {"rank", "rank", "%.0f", 1, 0},
    {"unit", "unit", NULL, 1, 0},
    {"kind", "kind", NULL, 1, 0},
    {"params", "params", "%.0f", 1, 0},
    {"in_wa_sqnr", "one-in w+a (dB)", "%.2f", 1, 0},
    {"in_w_sqnr", "one-in w (dB)", "%.2f", 1, 0},
    {"in_a_sqnr", "one-in a (dB)", "%.2f", 1, 0},
    {"out_wa_sqnr", "one-out w+a (dB)", "%.2f", 1, 0},
    {"weight_sqnr", "weight SQNR (dB)", "%.2f", 1, 0},
    {"kurtosis", "kurtosis", "%.3g", 1, 0},
    {"clip_share", "clipped", "%.3g", 1, 0},
    {"local_sqnr", "local (dB)", "%.2f", 1, 0},
    {"accum_sqnr", "accumulated (dB)", "%.2f", 1, 0},
    {"hint", "hint", NULL, 1, 0},
};

/* The ranking value of a row, as qp_sens_rank_value: one-in SQNR of both
 * parts, else weights, else activations. */
static double sens_value(const struct qp_report_ctx *c, size_t r)
{
    static const char *const cols[] = {"in_wa_sqnr", "in_w_sqnr", "in_a_sqnr"};
    for (int k = 0; k < 3; k++) {
        double v = qp_report_num(c, r, cols[k]);
        if (!isnan(v))
            return v;
    }
    return NAN;
}

enum qp_status qp_report_sens(struct qp_report_ctx *c, struct qp_error *err)
{
    size_t n = c->t->nrows, nb = n < 40 ? n : 40;
    qp_report_open(c, "sensitivity");
    qp_html_para(c->html, "Output SQNR against fp32 with only the unit quantized "
                          "(one-in) or everything but it (one-out); most sensitive "
                          "first, with the hint of its evidence.");
    double *v = calloc(nb + 1, sizeof *v);
    const char **labels = calloc(nb + 1, sizeof *labels);
    enum qp_status st = v && labels ? QP_OK : qp_fail(err, QP_E_NOMEM, "out of memory");
    size_t nv = 0;
    for (size_t r = 0; !st && r < nb; r++) {
        v[nv] = sens_value(c, r);
        labels[nv] = qp_report_field(c, r, "unit");
        nv += !isnan(v[nv]);
    }
    char s[64], title[4200];
    snprintf(s, sizeof s, "%s-bars", c->id);
    snprintf(title, sizeof title, "sensitivity (one-in): %s", c->path);
    if (!st && nv &&
        !(st = qp_report_bars(c->dir, s, title, "output SQNR with only this unit "
                              "quantized (dB)", v, labels, nv, err)))
        figure(c, s, "The most sensitive units: output SQNR with only that unit "
                     "quantized (lower is worse).");
    char id[48];
    snprintf(id, sizeof id, "%s-table", c->id);
    if (!st)
        st = qp_report_table(c, id, sens_cols, sizeof sens_cols / sizeof sens_cols[0],
                             NULL, 0, NULL, NULL, err);
    qp_html_section_end(c->html);
    free(v);
    free(labels);
    return st;
}

/* ---- ladder ------------------------------------------------------------------------- */

/* The rungs: columns LABEL_vs_first_db; labels[k] point into the header. */
static size_t rungs(const struct qp_csv *t, const char **labels, size_t max,
                    size_t *lens)
{
    size_t n = 0;
    const char *sfx = "_vs_first_db";
    for (size_t k = 0; k < t->ncols && n < max; k++) {
        size_t len = strlen(t->header[k]), sl = strlen(sfx);
        if (len > sl && !strcmp(t->header[k] + len - sl, sfx)) {
            labels[n] = t->header[k];
            lens[n++] = len - sl;
        }
    }
    return n;
}

static enum qp_status ladder_summary(struct qp_report_ctx *c, const char **labels,
                                     const size_t *lens, size_t nr,
                                     struct qp_error *err)
{
    static const struct qp_html_col cols[] = {
        {"rung", 0, NULL}, {"lowest vs first (dB)", 0, NULL},
        {"at", 0, NULL}, {"largest step: vs previous (dB)", 0, NULL},
        {"at", 0, NULL}, {"max LSB vs previous", 0, NULL}};
    struct qp_html_table t;
    qp_html_table_init(&t, cols, 6);
    enum qp_status st = QP_OK;
    for (size_t k = 0; !st && k < nr; k++) {
        char col[3][300], label[256], num[3][40];
        snprintf(label, sizeof label, "%.*s", (int)lens[k], labels[k]);
        static const char *const sfx[] = {"_vs_first_db", "_vs_prev_db",
                                          "_prev_max_lsb"};
        for (int j = 0; j < 3; j++)
            snprintf(col[j], sizeof col[j], "%s%s", label, sfx[j]);
        double lo[3] = {INFINITY, INFINITY, -INFINITY};
        size_t at[3] = {0, 0, 0};
        for (size_t r = 0; r < c->t->nrows; r++)
            for (int j = 0; j < 3; j++) {
                double v = qp_report_num(c, r, col[j]);
                if (!isnan(v) && (j < 2 ? v < lo[j] : v > lo[j])) {
                    lo[j] = v;
                    at[j] = r;
                }
            }
        for (int j = 0; j < 3; j++)
            snprintf(num[j], sizeof num[j], isfinite(lo[j]) ? "%.2f" : "", lo[j]);
        const char *cells[6] = {label, num[0],
                                isfinite(lo[0]) ? qp_report_field(c, at[0], "name") : "",
                                num[1],
                                isfinite(lo[1]) ? qp_report_field(c, at[1], "name") : "",
                                num[2]};
        double keys[6] = {NAN, lo[0], NAN, lo[1], NAN, lo[2]};
        st = qp_html_table_add(&t, cells, keys, false, NULL, err);
    }
    char id[48];
    snprintf(id, sizeof id, "%s-rungs", c->id);
    if (!st)
        qp_html_table_write(c->html, id, &t);
    qp_html_table_release(&t);
    return st;
}

enum qp_status qp_report_ladder(struct qp_report_ctx *c, struct qp_error *err)
{
    size_t n = c->t->nrows;
    const char *labels[8];
    size_t lens[8], nr = rungs(c->t, labels, 8, lens);
    qp_report_open(c, "ladder");
    qp_html_para(c->html, "Each rung against the first across depth; a rung's "
                          "largest step against the rung before it is marked: "
                          "where the scheme (fake), the kernels (int) or the "
                          "device adds its error.");
    double *v = calloc(n * nr + 1, sizeof *v);
    const char **names = calloc(n + 1, sizeof *names);
    int *block = calloc(n + 1, sizeof *block);
    struct qp_depth_series ser[8];
    char titles[8][256];
    size_t marked[8], mseries[8], nm = 0;
    enum qp_status st = v && names && block ? QP_OK
                                            : qp_fail(err, QP_E_NOMEM, "out of memory");
    bool blocks = false;
    for (size_t r = 0; !st && r < n; r++) {
        names[r] = qp_report_field(c, r, "name");
        block[r] = qp_depth_block_of(names[r]);
        blocks |= block[r] >= 0;
    }
    for (size_t k = 0; !st && k < nr; k++) {
        char first[300], prev[300];
        snprintf(titles[k], sizeof titles[k], "%.*s", (int)lens[k], labels[k]);
        snprintf(first, sizeof first, "%s_vs_first_db", titles[k]);
        snprintf(prev, sizeof prev, "%s_vs_prev_db", titles[k]);
        double lo = INFINITY;
        size_t at = n;
        for (size_t r = 0; r < n; r++) {
            v[k * n + r] = qp_report_num(c, r, first);
            double p = qp_report_num(c, r, prev);
            if (!isnan(p) && p < lo) {
                lo = p;
                at = r;
            }
        }
        ser[k] = (struct qp_depth_series){titles[k], v + k * n};
        if (at < n && isfinite(lo)) {
            marked[nm] = at;
            mseries[nm++] = k;
        }
    }
    char s[64], title[4200];
    snprintf(s, sizeof s, "%s-depth", c->id);
    snprintf(title, sizeof title, "ladder: %s", c->path);
    if (!st && n && nr) {
        struct qp_depth_plot p = {title, "SQNR vs the first rung (dB)", n, names,
                                  blocks ? block : NULL, ser, nr, marked, nm, mseries};
        if (!(st = qp_report_plot_depth(c->dir, s, &p, err)))
            figure(c, s, "Every rung against the first across depth; each rung's "
                         "largest step numbered.");
    }
    if (!st)
        st = ladder_summary(c, labels, lens, nr, err);
    static const struct qp_report_col base[] = {{"index", "#", "%.0f", 1, 0},
                                                {"name", "tensor", NULL, 1, 0}};
    struct qp_report_col cols[2 + 8 * 2];
    char heads[8][2][300];
    size_t nc = 2;
    memcpy(cols, base, sizeof base);
    for (size_t k = 0; k < nr; k++)
        for (int j = 0; j < 2; j++) {
            snprintf(heads[k][j], sizeof heads[k][j], "%.250s%s", titles[k],
                     j ? "_vs_prev_db" : "_vs_first_db");
            cols[nc++] = (struct qp_report_col){heads[k][j], heads[k][j], "%.2f", 1, 0};
        }
    if (!st)
        st = full_table(c, cols, nc, err);
    qp_html_section_end(c->html);
    free(v);
    free(names);
    free(block);
    return st;
}

/* ---- recipe ------------------------------------------------------------------------- */

static const struct qp_report_col recipe_cols[] = {
    {"step", "step", "%.0f", 1, 0},
    {"unit", "unit promoted", NULL, 1, 0},
    {"scheme", "to", NULL, 1, 0},
    {"predicted_gain", "predicted gain", "%.3g", 1, 0},
    {"measured_gain", "measured gain", "%.3g", 1, 0},
    {"calib_sqnr", "calib SQNR (dB)", "%.2f", 1, 0},
    {"eval_sqnr", "held-out SQNR (dB)", "%.2f", 1, 0},
    {"calib_kl", "calib KL", "%.4g", 1, 0},
    {"eval_kl", "held-out KL", "%.4g", 1, 0},
    {"bytes", "weights (MB)", "%.4f", 1e-6, 0},
    {"bitops", "GBitOps", "%.4g", 1e-9, 0},
    {"transitions", "transitions", "%.0f", 1, 0},
    {"reranked", "re-ranked", "%.0f", 1, 0},
    {"kind", "step kind", NULL, 1, 0},
    {"units", "units", "%.0f", 1, 0},
    {"calib_ppl_delta", "calib PPL - fp32", "%.4g", 1, 0},
    {"eval_ppl_delta", "held-out PPL - fp32", "%.4g", 1, 0},
};

/* A figure of the calibration and held-out columns cal and ev against the
 * weights' size (stem ID-suffix), when any of their values is finite (an
 * older table without them, or an ONNX search's PPL columns: none). */
static enum qp_status recipe_curve(struct qp_report_ctx *c, const char *suffix,
                                   const char *cal, const char *ev, const char *ylabel,
                                   const char *caption, struct qp_error *err)
{
    size_t n = c->t->nrows;
    double *x = calloc(n + 1, sizeof *x), *yc = calloc(n + 1, sizeof *yc),
           *ye = calloc(n + 1, sizeof *ye);
    enum qp_status st = x && yc && ye ? QP_OK : qp_fail(err, QP_E_NOMEM, "out of memory");
    bool any = false;
    for (size_t r = 0; !st && r < n; r++) {
        x[r] = qp_report_num(c, r, "bytes") / 1e6;
        yc[r] = qp_report_num(c, r, cal);
        ye[r] = qp_report_num(c, r, ev);
        any |= isfinite(yc[r]) || isfinite(ye[r]);
    }
    char s[64], title[4200];
    snprintf(s, sizeof s, "%s-%s", c->id, suffix);
    snprintf(title, sizeof title, "recipe search: %s vs size, %s", ylabel, c->path);
    const double *ys[2] = {yc, ye};
    static const char *const names[2] = {"calibration", "held-out"};
    if (!st && any &&
        !(st = qp_report_curves(c->dir, s, title, "weights (MB)", ylabel, x, ys, names,
                                2, n, err)))
        figure(c, s, caption);
    free(x);
    free(yc);
    free(ye);
    return st;
}

enum qp_status qp_report_recipe(struct qp_report_ctx *c, struct qp_error *err)
{
    qp_report_open(c, "recipe search");
    qp_html_para(c->html, "Each step of the search (the start first): quality on "
                          "the calibration inputs that decided it and on held-out "
                          "inputs, against the weights' size.");
    enum qp_status st = recipe_curve(c, "pareto", "calib_sqnr", "eval_sqnr",
                                     "output SQNR vs fp32 (dB)",
                                     "The search's Pareto curve: quality per step "
                                     "against the weights' size.", err);
    if (!st)
        st = recipe_curve(c, "ppl", "calib_ppl_delta", "eval_ppl_delta",
                          "perplexity - fp32's", "A language model's search: its "
                          "perplexity above fp32's per step against the weights' "
                          "size.", err);
    char id[48];
    snprintf(id, sizeof id, "%s-table", c->id);
    if (!st)
        st = qp_report_table(c, id, recipe_cols,
                             sizeof recipe_cols / sizeof recipe_cols[0], NULL, 0,
                             NULL, NULL, err);
    qp_html_section_end(c->html);
    return st;
}
