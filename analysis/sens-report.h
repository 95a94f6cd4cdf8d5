/* analysis/sens-report.h: what `qprobe sensitivity` writes.
 *
 * CSV, one row per unit, most sensitive first (qp_sens_rank_value):
 *   rank,unit,kind,params,bytes_fp32,bytes_scheme,macs,
 *   in_w_sqnr,in_a_sqnr,in_wa_sqnr,in_wa_kl,in_wa_top1,
 *   out_w_sqnr,out_a_sqnr,out_wa_sqnr,out_wa_kl,
 *   weight_sqnr,kurtosis,outliers_6sigma,channel_spread,clip_share,
 *   act_range,local_sqnr,accum_sqnr,hint
 * (kind: weights for a weighted layer, activation otherwise; empty fields
 * for what was not computed or does not apply; SQNR in dB of the model's
 * output against fp32). The bar chart shows the one-in damage (fp32
 * output SQNR) of the most sensitive units. */
#ifndef QP_ANALYSIS_SENS_REPORT_H
#define QP_ANALYSIS_SENS_REPORT_H

#include "analysis/plot.h"
#include "analysis/sensitivity.h"
#include "formats/csv.h"

/* order[0..res->units.n): rows most sensitive first. */
enum qp_status qp_sens_order(const struct qp_sens_result *res, size_t **order,
                             struct qp_error *err);

void qp_sens_write_csv(struct qp_csv_writer *w, const struct qp_sens_result *res,
                       const size_t *order);

/* A bar chart of the first `top` rows of order into out (.png/.svg). */
enum qp_status qp_sens_plot(const char *out, const char *title,
                            const struct qp_sens_result *res, const size_t *order,
                            size_t top, struct qp_plot **pending,
                            struct qp_error *err);

#endif
