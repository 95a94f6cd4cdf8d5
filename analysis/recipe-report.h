/* analysis/recipe-report.h: what `qprobe recipe` writes besides the recipe.
 *
 * Pareto CSV, one row per step of the search (the start first):
 *   step,unit,scheme,predicted_gain,measured_gain,calib_sqnr,calib_kl,
 *   eval_sqnr,eval_kl,bytes,bitops,transitions,reranked
 * (unit and scheme empty at the start; scheme is the unit's new level,
 * "fp32" or a scheme string; kl empty for outputs without classes; eval
 * empty for states measured on calibration data only: the bisection's
 * probes). The plot draws quality (calib and eval) against weight bytes. */
#ifndef QP_ANALYSIS_RECIPE_REPORT_H
#define QP_ANALYSIS_RECIPE_REPORT_H

#include "analysis/plot.h"
#include "analysis/recipe-search.h"
#include "formats/csv.h"
#include "formats/json.h"

/* The name of level l ("base", "fp32", or its scheme) into buf. */
void qp_rsearch_level_name(const struct qp_rsearch_opts *o, int l, char *buf,
                           size_t size);

void qp_rsearch_write_csv(struct qp_csv_writer *w,
                          const struct qp_rsearch_result *res,
                          const struct qp_rsearch_opts *o);

enum qp_status qp_rsearch_plot(const char *out, const char *title,
                               const struct qp_rsearch_result *res,
                               struct qp_plot **pending, struct qp_error *err);

/* The "derived" object of the recipe JSON: target, data, metric reached on
 * calibration and evaluation data, bytes, BitOps, transitions, steps.
 * Added to doc (a recipe document, quant/recipe.h qp_recipe_to_json). */
enum qp_status qp_rsearch_derived(struct qp_json *doc,
                                  const struct qp_rsearch_result *res,
                                  const struct qp_rsearch_opts *o,
                                  const char *calib, const char *eval,
                                  struct qp_error *err);

#endif
