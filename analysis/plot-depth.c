/* analysis/plot-depth.c: a metric across depth (analysis/plot-depth.h). */
#include "analysis/plot-depth.h"

#include <ctype.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SERIES 8
#define TABLE_ROWS 20   /* marked points listed beside the plot */
#define MAX_BLOCK_LABELS 16

int qp_depth_block_of(const char *name)
{
    static const char *const keys[] = {"layers", "layer", "blocks", "block", "h"};
    for (const char *p = name; *p; p++) {
        if (p != name && !strchr("./_", p[-1]))
            continue;
        for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
            size_t l = strlen(keys[k]);
            if (strncmp(p, keys[k], l) || !strchr("./_", p[l]) ||
                !isdigit((unsigned char)p[l + 1]))
                continue;
            const char *d = p + l + 1;
            long v = 0;
            while (isdigit((unsigned char)*d) && v < 1000000)
                v = v * 10 + (*d++ - '0');
            if (!*d || strchr("./_", *d))
                return (int)v;
        }
    }
    return -1;
}

static int kind_of(double v)
{
    return isfinite(v) ? 0 : v > 0 ? 1 : 2;
}

/* The drawn y range over every series' finite values. */
static void yrange(const struct qp_depth_plot *p, double *bottom, double *top)
{
    double lo = INFINITY, hi = -INFINITY;
    for (size_t s = 0; s < p->nseries; s++)
        for (size_t i = 0; i < p->n; i++) {
            double v = p->series[s].value[i];
            if (isfinite(v)) {
                lo = v < lo ? v : lo;
                hi = v > hi ? v : hi;
            }
        }
    if (lo > hi)
        lo = 0, hi = 100;
    double pad = (hi - lo) * 0.08 + 2;
    *top = hi + pad;
    *bottom = lo - pad;
}

static void put_name(FILE *f, const char *s, size_t max)
{
    size_t n = strlen(s);
    if (n > max) { /* keep the end: it names the layer */
        fputs("...", f);
        s += n - (max - 3);
    }
    for (; *s; s++)
        fputc(*s == '"' || *s == '\'' ? '`' : *s, f);
}

static double drawn(double v, double bottom, double top)
{
    int k = kind_of(v);
    return k == 0 ? v : k == 1 ? top : bottom;
}

static void write_data(FILE *d, const struct qp_depth_plot *p, const size_t *rank,
                       double bottom, double top)
{
    fprintf(d, "# index block");
    for (size_t s = 0; s < p->nseries; s++)
        fprintf(d, " value%zu kind%zu", s, s);
    fprintf(d, " worst_rank mark_y name  (kind: 0 finite, 1 +inf drawn at the "
               "top, 2 -inf/nan at the bottom; rank 0: not marked)\n");
    for (size_t i = 0; i < p->n; i++) {
        fprintf(d, "%zu %d", i, p->block ? p->block[i] : -1);
        for (size_t s = 0; s < p->nseries; s++) {
            double v = p->series[s].value[i];
            int k = kind_of(v);
            fprintf(d, " %.9g %d", k == 0 ? v : k == 1 ? top : bottom, k);
        }
        size_t ms = rank[i] && p->marked_series ? p->marked_series[rank[i] - 1] : 0;
        fprintf(d, " %zu %.9g \"", rank[i],
                drawn(p->series[ms < p->nseries ? ms : 0].value[i], bottom, top));
        put_name(d, p->names[i], 200);
        fputs("\"\n", d);
    }
}

/* Dotted lines where the block changes, labelled sparsely. */
static void write_blocks(FILE *b, const struct qp_depth_plot *p)
{
    if (!p->block)
        return;
    size_t nb = 0;
    for (size_t i = 1; i < p->n; i++)
        nb += p->block[i] != p->block[i - 1] && p->block[i] >= 0;
    size_t every = nb / MAX_BLOCK_LABELS + 1, k = 0;
    for (size_t i = 1; i < p->n; i++) {
        if (p->block[i] == p->block[i - 1] || p->block[i] < 0)
            continue;
        fprintf(b, "set arrow from %.1f, graph 0 to %.1f, graph 1 nohead dt 3 "
                   "lc rgb '#aaaaaa'\n", (double)i - 0.5, (double)i - 0.5);
        if (k++ % every == 0)
            fprintf(b, "set label 'L%d' at %.1f, graph 1.02 center tc rgb "
                       "'#777777'\n", p->block[i], (double)i - 0.5);
    }
}

/* Rank numbers next to marked points far enough apart, and the table of
 * every marked point beside the plot. */
static void write_marks(FILE *b, const struct qp_depth_plot *p, double bottom,
                        double top)
{
    double gap = (double)p->n / 40.0 + 1.0;
    size_t shown = p->nmarked < TABLE_ROWS ? p->nmarked : TABLE_ROWS;
    double *placed = calloc(shown + 1, sizeof *placed);
    size_t np = 0;
    for (size_t r = 0; r < shown; r++) {
        size_t i = p->marked[r];
        size_t ms = p->marked_series ? p->marked_series[r] : 0;
        const double *v0 = p->series[ms < p->nseries ? ms : 0].value;
        bool room = placed != NULL;
        for (size_t q = 0; room && q < np; q++)
            room = fabs(placed[q] - (double)i) >= gap;
        double y = kind_of(v0[i]) == 0 ? v0[i] : v0[i] > 0 ? top : bottom;
        if (room && np < 10) {
            placed[np++] = (double)i;
            fprintf(b, "set label '%zu' at %zu, %.9g offset 0.8,0.8 tc rgb "
                       "'#cc3311' front\n", r + 1, i, y);
        }
        fprintf(b, "set label '%2zu  %.1f  ", r + 1, v0[i]);
        put_name(b, p->names[i], 38);
        fprintf(b, "' at screen 0.775, screen %.4f left font ',9'\n",
                0.86 - 0.038 * (double)r);
    }
    if (p->nmarked > shown)
        fprintf(b, "set label '(+%zu more in the CSV)' at screen 0.775, screen "
                   "%.4f left font ',9'\n", p->nmarked - shown,
                0.86 - 0.038 * (double)shown);
    if (shown)
        fprintf(b, "set label 'worst (rank, value, name)' at screen 0.775, "
                   "screen 0.9 left font ',9'\n");
    free(placed);
}

enum qp_status qp_plot_depth(const char *out, const struct qp_depth_plot *p,
                             struct qp_plot **pending, struct qp_error *err)
{
    *pending = NULL;
    if (p->nseries < 1 || p->nseries > MAX_SERIES)
        return qp_fail(err, QP_E_INVAL, "a depth plot has 1 to %d series",
                       MAX_SERIES);
    double bottom, top;
    yrange(p, &bottom, &top);
    struct qp_plot_text t;
    enum qp_status st = qp_plot_text_open(&t, err);
    if (st)
        return st;
    FILE *d = t.dat, *b = t.body;
    size_t *rank = calloc(p->n + 1, sizeof *rank);
    if (!rank)
        return qp_plot_text_render(&t, out, true, pending, err);
    for (size_t r = 0; r < p->nmarked; r++)
        if (p->marked[r] < p->n)
            rank[p->marked[r]] = r + 1;
    write_data(d, p, rank, bottom, top);
    free(rank);
    fputs("set title ", b);
    qp_plot_quote(b, p->title);
    fputs("\nset ylabel ", b);
    qp_plot_quote(b, p->ylabel ? p->ylabel : "SQNR (dB)");
    fprintf(b, "\nset xlabel 'depth (tensor index in model order)'\n"
               "set grid ytics\nset key left bottom opaque\n"
               "set rmargin at screen %s\n"
               "set yrange [%.9g:%.9g]\nset xrange [-0.5:%zu.5]\n",
            p->nmarked ? "0.76" : "0.97", bottom, top, p->n ? p->n - 1 : 0);
    write_blocks(b, p);
    write_marks(b, p, bottom, top);
    static const char *const colors[MAX_SERIES] = {
        "#4477aa", "#ee6677", "#228833", "#ccbb44",
        "#66ccee", "#aa3377", "#bbbbbb", "#000000"};
    fputs("plot ", b);
    for (size_t s = 0; s < p->nseries; s++) {
        int vc = 3 + 2 * (int)s, kc = vc + 1;
        fprintf(b, "%sqp_dat using 1:($%d == 0 ? $%d : 1/0) with linespoints pt 7 "
                   "ps 0.5 lc rgb '%s' title ", s ? ", \\\n     " : "", kc, vc,
                colors[s]);
        qp_plot_quote(b, p->series[s].title ? p->series[s].title : "");
        fprintf(b, ", \\\n     qp_dat using 1:($%d == 1 ? $%d : 1/0) with points "
                   "pt 8 ps 1.0 lc rgb '%s' notitle, \\\n     qp_dat using "
                   "1:($%d == 2 ? $%d : 1/0) with points pt 9 ps 1.0 lc rgb "
                   "'#000000' notitle", kc, vc, colors[s], kc, vc);
    }
    if (p->nmarked) /* circles where each mark is drawn */
        fprintf(b, ", \\\n     qp_dat using 1:($%zu > 0 ? $%zu : 1/0) with points "
                   "pt 6 ps 2 lw 2 lc rgb '#cc3311' title 'worst'",
                3 + 2 * p->nseries, 4 + 2 * p->nseries);
    fputc('\n', b);
    st = qp_plot_text_render(&t, out, false, pending, err);
    return st;
}
