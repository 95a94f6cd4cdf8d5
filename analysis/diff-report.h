/* analysis/diff-report.h: what qprobe diff writes: the metrics CSV, the
 * alignment report and the SQNR plot.
 *
 * Metrics CSV (one row per compared pair, in the diff's current order):
 *   rank,name,shape,numel,sqnr_db,cosine,mae,max_abs,rel_l2,ref_absmax,
 *   nonfinite,kl,top1,test_name,mae_lsb,max_lsb,rmse_lsb,mismatches,order
 * The first eleven columns are DESIGN.md's; kl and top1 are empty for
 * tensors not treated as logits; test_name is the paired test tensor;
 * mae_lsb, max_lsb, rmse_lsb and mismatches are errors in steps of the
 * test tensor's scale (analysis/lsb.h), empty unless it holds integers;
 * order is the pair's place in reference order from 0 (model order for a
 * dump of a run), so that a report can draw the metrics across depth
 * whatever the rows' sort.
 * shape is written as dims joined by 'x' ("1x8x4x4", "scalar" for 0-d) so
 * that no field needs quoting; numel counts every element.
 *
 * Alignment report (CSV): ref,test,how,detail; one row per aligned pair in
 * reference order (how: exact, normalised, map-pair, map-rule, or refused
 * with the reason in detail; detail also names a rule "rule N" and a
 * layout conversion "layout NHWC->NCHW"), then ref-only and test-only rows
 * for unpaired names, then note rows (ambiguities, map entries naming
 * absent tensors). */
#ifndef QP_ANALYSIS_DIFF_REPORT_H
#define QP_ANALYSIS_DIFF_REPORT_H

#include "analysis/diff.h"
#include "analysis/plot.h"
#include "formats/csv.h"

/* Writes the header and rows; errors surface at qp_csv_commit. */
void qp_diff_write_csv(struct qp_csv_writer *w, const struct qp_diff *d);

/* Shape as written in the CSV ("1x8x4x4", "scalar"). */
void qp_diff_shape_field(int ndim, const int64_t *shape, char *buf,
                         size_t size);

struct qp_align_entry {
    const char *ref, *test; /* NULL on the unpaired side and for notes */
    const char *how;        /* exact, normalised, map-pair, map-rule, refused,
                               ref-only, test-only, note */
    const char *detail;     /* "" when none */
};

/* Calls fn for every entry of the alignment report, in its order. */
enum qp_status qp_diff_align_entries(const struct qp_dump *ref,
                                     const struct qp_dump *test,
                                     const struct qp_align *al,
                                     const struct qp_diff *d,
                                     void (*fn)(void *ctx,
                                                const struct qp_align_entry *e),
                                     void *ctx, struct qp_error *err);

/* Writes the alignment report's header and rows. */
enum qp_status qp_diff_write_align(struct qp_csv_writer *w,
                                   const struct qp_dump *ref,
                                   const struct qp_dump *test,
                                   const struct qp_align *al,
                                   const struct qp_diff *d,
                                   struct qp_error *err);

/* The SQNR plot: rows in reference order, the first `worst` rows of the
 * diff's current order marked. */
enum qp_status qp_diff_plot(const char *out, const char *title,
                            const struct qp_diff *d, size_t worst,
                            struct qp_plot **pending, struct qp_error *err);

#endif
