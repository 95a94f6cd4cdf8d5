/* analysis/plot-bars.h: a bar chart's gnuplot texts (analysis/plot.h), one
 * bar per value with its label under it (rotated, for names of layers):
 * the sensitivity ranking, and the report's. Non-finite values are drawn
 * at the end of the axis they point to. */
#ifndef QP_ANALYSIS_PLOT_BARS_H
#define QP_ANALYSIS_PLOT_BARS_H

#include <stddef.h>

#include "analysis/plot.h"

/* Writes the data (position, value, label) and the commands into t
 * (opened by qp_plot_text_open). */
void qp_plot_bars_fill(struct qp_plot_text *t, const char *title,
                       const char *ylabel, const double *v,
                       const char *const *labels, size_t n);

#endif
