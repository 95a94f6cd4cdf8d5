/* analysis/plot-bars.c: bar charts (analysis/plot-bars.h). */
#include "analysis/plot-bars.h"

#include <math.h>
#include <stdio.h>

void qp_plot_bars_fill(struct qp_plot_text *t, const char *title,
                       const char *ylabel, const double *v,
                       const char *const *labels, size_t n)
{
    double lo = INFINITY, hi = -INFINITY;
    for (size_t k = 0; k < n; k++)
        if (isfinite(v[k])) {
            lo = v[k] < lo ? v[k] : lo;
            hi = v[k] > hi ? v[k] : hi;
        }
    if (lo > hi)
        lo = 0, hi = 100;
    fprintf(t->dat, "# position value label\n");
    for (size_t k = 0; k < n; k++) {
        fprintf(t->dat, "%zu %.9g \"", k + 1, isfinite(v[k]) ? v[k] : v[k] > 0 ? hi : lo);
        for (const char *s = labels[k]; s && *s; s++)
            fputc(*s == '"' ? '\'' : *s == '\n' ? ' ' : *s, t->dat);
        fputs("\"\n", t->dat);
    }
    fputs("set title ", t->body);
    qp_plot_quote(t->body, title);
    fputs("\nset ylabel ", t->body);
    qp_plot_quote(t->body, ylabel);
    fprintf(t->body, "\nset style fill solid 0.7\nset boxwidth 0.7\nset grid ytics\n"
                     "set xtics rotate by -60 left font ',8'\nset bmargin 12\n"
                     "set yrange [%.9g:%.9g]\nset xrange [0.3:%zu.7]\nunset key\n"
                     "plot qp_dat using 1:2:xtic(3) with boxes lc rgb '#cc6677'\n",
             lo < 0 ? lo * 1.1 : 0, hi + (hi - lo) * 0.1 + 1, n);
}
