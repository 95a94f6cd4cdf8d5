/* analysis/ladder-report.h: what `qprobe ladder` writes.
 *
 * CSV, one row per tensor of the first rung in model order:
 *   index,name,block, then per rung k >= 1:
 *   LABEL_vs_first_db, LABEL_vs_prev_db, LABEL_prev_max_lsb,
 *   LABEL_prev_mismatches
 * (empty where the tensor does not pair up, or the LSB columns where the
 * rung's tensor is not integer). The plot draws each rung's SQNR against
 * the first across depth (analysis/plot-depth.h), the jumps marked. */
#ifndef QP_ANALYSIS_LADDER_REPORT_H
#define QP_ANALYSIS_LADDER_REPORT_H

#include "analysis/ladder.h"
#include "analysis/plot.h"
#include "formats/csv.h"

void qp_ladder_write_csv(struct qp_csv_writer *w, const struct qp_ladder *l);

enum qp_status qp_ladder_plot(const char *out, const char *title,
                              const struct qp_ladder *l, struct qp_plot **pending,
                              struct qp_error *err);

#endif
