/* analysis/report-plots.h: the plots of `qprobe report`, drawn by gnuplot
 * (analysis/plot.h) into the report's folder twice: STEM.png (with
 * STEM.gp and STEM.dat kept, which draw either format again) and
 * STEM.svg. Depth plots are analysis/plot-depth.h's; the others are
 * scatter plots with their Pareto front, bar charts and curves. */
#ifndef QP_ANALYSIS_REPORT_PLOTS_H
#define QP_ANALYSIS_REPORT_PLOTS_H

#include <stdbool.h>
#include <stddef.h>

#include "analysis/plot-depth.h"
#include "core/status.h"

/* Renders the plot (dat, gnuplot body as qp_plot_render takes them) as
 * dir/stem.png and dir/stem.svg, committed. */
enum qp_status qp_report_plot(const char *dir, const char *stem, const char *dat,
                              const char *body, struct qp_error *err);

/* The same for a depth plot. */
enum qp_status qp_report_plot_depth(const char *dir, const char *stem,
                                    const struct qp_depth_plot *p,
                                    struct qp_error *err);

/* Marks front[i] for the points no other point beats: one of lower or
 * equal cost and higher or equal quality, better in one. Points with a
 * non-finite cost or quality are never on the front. */
void qp_pareto_front(const double *cost, const double *quality, size_t n,
                     bool *front);

struct qp_rpoint {
    double x, y;
    const char *label;
    bool front;
};

/* Quality (y) against cost (x): every point, the front joined by a line
 * and labelled (the other points are named in the report's table). */
enum qp_status qp_report_scatter(const char *dir, const char *stem,
                                 const char *title, const char *xlabel,
                                 const char *ylabel, const struct qp_rpoint *pts,
                                 size_t n, struct qp_error *err);

/* One bar per value (labels under the bars, rotated). */
enum qp_status qp_report_bars(const char *dir, const char *stem, const char *title,
                              const char *ylabel, const double *v,
                              const char *const *labels, size_t n,
                              struct qp_error *err);

/* Curves y[k][i] (NaN: no point) against x[i], one per title[k] (k < 4). */
enum qp_status qp_report_curves(const char *dir, const char *stem,
                                const char *title, const char *xlabel,
                                const char *ylabel, const double *x,
                                const double *const *y, const char *const *titles,
                                size_t ncurves, size_t n, struct qp_error *err);

#endif
