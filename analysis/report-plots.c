/* analysis/report-plots.c: the report's plots (analysis/report-plots.h). */
#include "analysis/report-plots.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "analysis/plot-bars.h"
#include "analysis/plot.h"
#include "core/fileio.h"
#include "core/outfile.h"

/* ---- both formats ---------------------------------------------------------- */

typedef enum qp_status (*render_fn)(const char *out, const void *ctx,
                                    struct qp_plot **pending, struct qp_error *err);

/* Renders through fn as dir/stem.png, then as an SVG in a scratch folder
 * whose .gp and .dat are dropped (the PNG's draw both). */
static enum qp_status pair(const char *dir, const char *stem, render_fn fn,
                           const void *ctx, struct qp_error *err)
{
    char png[4096], svg[8300], scratch[4096], final[4096];
    if (strlen(dir) + strlen(stem) + 16 > sizeof png)
        return qp_fail(err, QP_E_INVAL, "'%s': the path is too long", dir);
    snprintf(png, sizeof png, "%s/%s.png", dir, stem);
    snprintf(scratch, sizeof scratch, "%s/.svg-%s", dir, stem);
    snprintf(svg, sizeof svg, "%s/%s.svg", scratch, stem);
    snprintf(final, sizeof final, "%s/%s.svg", dir, stem);
    struct qp_plot *p;
    enum qp_status st = fn(png, ctx, &p, err);
    if (!st)
        st = qp_plot_commit(p, err);
    if (!st && mkdir(scratch, 0777) != 0)
        st = qp_fail(err, QP_E_IO, "'%s': cannot make a folder", scratch);
    if (!st && !(st = fn(svg, ctx, &p, err)))
        st = qp_plot_commit(p, err);
    if (!st && rename(svg, final) != 0)
        st = qp_fail(err, QP_E_IO, "'%s': cannot rename into place", final);
    qp_rmtree(scratch);
    return st;
}

struct text {
    const char *dat, *body;
};

static enum qp_status render_text(const char *out, const void *ctx,
                                  struct qp_plot **pending, struct qp_error *err)
{
    const struct text *t = ctx;
    return qp_plot_render(out, t->dat, t->body, pending, err);
}

static enum qp_status render_depth(const char *out, const void *ctx,
                                   struct qp_plot **pending, struct qp_error *err)
{
    return qp_plot_depth(out, ctx, pending, err);
}

enum qp_status qp_report_plot(const char *dir, const char *stem, const char *dat,
                              const char *body, struct qp_error *err)
{
    struct text t = {dat, body};
    return pair(dir, stem, render_text, &t, err);
}

enum qp_status qp_report_plot_depth(const char *dir, const char *stem,
                                    const struct qp_depth_plot *p,
                                    struct qp_error *err)
{
    return pair(dir, stem, render_depth, p, err);
}

/* Closes t's streams and plots them. */
static enum qp_status plot_text(const char *dir, const char *stem,
                                struct qp_plot_text *t, struct qp_error *err)
{
    int bad = fclose(t->dat) | fclose(t->body);
    enum qp_status st = bad ? qp_fail(err, QP_E_NOMEM, "out of memory")
                            : qp_report_plot(dir, stem, t->dbuf, t->bbuf, err);
    free(t->dbuf);
    free(t->bbuf);
    *t = (struct qp_plot_text){0};
    return st;
}

/* A label for the .dat file: quotes and blanks made safe. */
static void dat_label(FILE *f, const char *s)
{
    fputc('"', f);
    for (; s && *s; s++)
        fputc(*s == '"' ? '\'' : *s == '\n' ? ' ' : *s, f);
    fputc('"', f);
}

static void title_line(FILE *b, const char *title, const char *xl, const char *yl)
{
    fputs("set title ", b);
    qp_plot_quote(b, title);
    if (xl) {
        fputs("\nset xlabel ", b);
        qp_plot_quote(b, xl);
    }
    fputs("\nset ylabel ", b);
    qp_plot_quote(b, yl);
    fputs("\nset grid\nset datafile missing 'nan'\n", b);
}

/* ---- Pareto scatter ----------------------------------------------------------- */

void qp_pareto_front(const double *cost, const double *quality, size_t n,
                     bool *front)
{
    for (size_t i = 0; i < n; i++) {
        front[i] = isfinite(cost[i]) && isfinite(quality[i]);
        for (size_t j = 0; front[i] && j < n; j++) {
            if (j == i || !isfinite(cost[j]) || !isfinite(quality[j]))
                continue;
            bool no_worse = cost[j] <= cost[i] && quality[j] >= quality[i];
            bool better = cost[j] < cost[i] || quality[j] > quality[i];
            front[i] = !(no_worse && better);
        }
    }
}

static int cmp_x(const void *a, const void *b)
{
    const struct qp_rpoint *p = *(const struct qp_rpoint *const *)a,
                           *q = *(const struct qp_rpoint *const *)b;
    return (p->x > q->x) - (p->x < q->x);
}

enum qp_status qp_report_scatter(const char *dir, const char *stem,
                                 const char *title, const char *xlabel,
                                 const char *ylabel, const struct qp_rpoint *pts,
                                 size_t n, struct qp_error *err)
{
    const struct qp_rpoint **front = calloc(n + 1, sizeof *front);
    if (!front)
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    size_t nf = 0;
    for (size_t i = 0; i < n; i++)
        if (pts[i].front)
            front[nf++] = &pts[i];
    qsort(front, nf, sizeof *front, cmp_x);
    struct qp_plot_text t;
    enum qp_status st = qp_plot_text_open(&t, err);
    if (st) {
        free(front);
        return st;
    }
    /* block 0: every point; block 1: the front, by cost */
    fputs("# x y on_front label\n", t.dat);
    for (size_t i = 0; i < n; i++) {
        fprintf(t.dat, "%.9g %.9g %d ", isfinite(pts[i].x) ? pts[i].x : NAN,
                isfinite(pts[i].y) ? pts[i].y : NAN, pts[i].front);
        dat_label(t.dat, pts[i].label);
        fputc('\n', t.dat);
    }
    fputs("\n\n# the Pareto front\n", t.dat);
    for (size_t i = 0; i < nf; i++) {
        fprintf(t.dat, "%.9g %.9g 1 ", front[i]->x, front[i]->y);
        dat_label(t.dat, front[i]->label);
        fputc('\n', t.dat);
    }
    free(front);
    title_line(t.body, title, xlabel, ylabel);
    fprintf(t.body, "set key bottom right\nset offsets graph 0.05, graph 0.12, "
                    "graph 0.08, graph 0.08\n"
                    "plot qp_dat index 0 using 1:2 with points pt 7 ps 1.1 "
                    "lc rgb '#999999' title 'configuration', \\\n"
                    "     qp_dat index 1 using 1:2 with linespoints pt 7 ps 1.3 "
                    "lw 2 lc rgb '#2a7ab0' title 'Pareto front', \\\n"
                    "     qp_dat index 1 using 1:2:4 with labels offset 1,0.8 left "
                    "font ',9' notitle\n");
    return plot_text(dir, stem, &t, err);
}

/* ---- bars and curves ------------------------------------------------------------ */

enum qp_status qp_report_bars(const char *dir, const char *stem, const char *title,
                              const char *ylabel, const double *v,
                              const char *const *labels, size_t n,
                              struct qp_error *err)
{
    struct qp_plot_text t;
    enum qp_status st = qp_plot_text_open(&t, err);
    if (st)
        return st;
    qp_plot_bars_fill(&t, title, ylabel, v, labels, n);
    return plot_text(dir, stem, &t, err);
}

enum qp_status qp_report_curves(const char *dir, const char *stem,
                                const char *title, const char *xlabel,
                                const char *ylabel, const double *x,
                                const double *const *y, const char *const *titles,
                                size_t ncurves, size_t n, struct qp_error *err)
{
    static const char *const colors[] = {"#2a7ab0", "#ee6677", "#228833", "#ccbb44"};
    if (ncurves > 4)
        return qp_fail(err, QP_E_INVAL, "at most 4 curves");
    struct qp_plot_text t;
    enum qp_status st = qp_plot_text_open(&t, err);
    if (st)
        return st;
    fputs("# x", t.dat);
    for (size_t k = 0; k < ncurves; k++)
        fprintf(t.dat, " y%zu", k + 1);
    fputs(" (nan: no point)\n", t.dat);
    for (size_t i = 0; i < n; i++) {
        fprintf(t.dat, "%.9g", x[i]);
        for (size_t k = 0; k < ncurves; k++)
            fprintf(t.dat, " %.9g", isfinite(y[k][i]) ? y[k][i] : NAN);
        fputc('\n', t.dat);
    }
    title_line(t.body, title, xlabel, ylabel);
    fputs("set key left top\nplot ", t.body);
    for (size_t k = 0; k < ncurves; k++) {
        fprintf(t.body, "%sqp_dat using 1:%zu with linespoints pt 7 ps 0.7 lc rgb "
                        "'%s' title ", k ? ", \\\n     " : "", k + 2, colors[k]);
        qp_plot_quote(t.body, titles[k]);
    }
    fputc('\n', t.body);
    return plot_text(dir, stem, &t, err);
}
