/* analysis/plot-depth.h: a metric across a model's depth (SQNR per tensor
 * in model order), one line per series (a diff, or each rung of a
 * ladder), drawn by gnuplot (analysis/plot.h).
 *
 * Readable with hundreds of tensors: the x axis is the depth index, block
 * boundaries (transformer layers, named "layers.N", "blocks.N", ...) are
 * dotted vertical lines labelled with the block number (at most about 16
 * labels), and the marked (worst) points are circled and numbered by rank;
 * only numbers whose points are far enough apart are drawn on the plot,
 * and every marked point is listed with its number, name and value in a
 * table beside the plot, so no label overprints another. Infinite values
 * (no error) are drawn at the top as open triangles, -inf and NaN at the
 * bottom. The .dat file has one row per point: index, block, then per
 * series the value drawn and its kind (0 finite, 1 +inf, 2 -inf/NaN), the
 * rank of a marked point (0: not marked), the value its mark is drawn at,
 * and the name. */
#ifndef QP_ANALYSIS_PLOT_DEPTH_H
#define QP_ANALYSIS_PLOT_DEPTH_H

#include <stddef.h>

#include "analysis/plot.h"

struct qp_depth_series {
    const char *title;     /* the key's entry */
    const double *value;   /* one per point; may be +-inf or NaN */
};

struct qp_depth_plot {
    const char *title, *ylabel;
    size_t n;                    /* points, in model order */
    const char *const *names;    /* [n] */
    const int *block;            /* [n] block number or -1; NULL: none */
    const struct qp_depth_series *series;
    size_t nseries;              /* 1 to 8 */
    /* points to mark, worst first (indices into [0, n)), drawn on series
     * marked_series[k] (NULL: series 0) */
    const size_t *marked;
    size_t nmarked;
    const size_t *marked_series;
};

/* Renders the plot into out (.png or .svg); *pending as qp_plot_render. */
enum qp_status qp_plot_depth(const char *out, const struct qp_depth_plot *p,
                             struct qp_plot **pending, struct qp_error *err);

/* The block a tensor name belongs to: N of the first "layers.N",
 * "layer.N", "blocks.N", "block.N" or "h.N" component (separators '.',
 * '/', '_'), else -1. */
int qp_depth_block_of(const char *name);

#endif
