/* analysis/diff-dumps.h: the whole comparison of two dumps on disk, as
 * `qprobe diff` (and the ladder, the demo, the sweep) runs it: open both,
 * load the name map, align the names, plan every pair from the listings,
 * then compute the metrics one pair at a time (analysis/diff.h).
 *
 * The result keeps the dumps open so that reports (analysis/diff-report.h)
 * can name and describe every tensor. */
#ifndef QP_ANALYSIS_DIFF_DUMPS_H
#define QP_ANALYSIS_DIFF_DUMPS_H

#include <stdbool.h>

#include "analysis/align.h"
#include "analysis/diff.h"
#include "formats/dump.h"

struct qp_diff_dumps {
    struct qp_dump *ref, *test;
    struct qp_align_map *map;   /* NULL without a map file */
    struct qp_align al;
    struct qp_diff d;
    /* why nothing can be compared ("no tensor names pair up (see --map)"),
     * or, with opts->strict, what --strict refuses; NULL when fine */
    const char *problem;
};

/* Opens ref_path and test_path (any dump format; QP_E_IO / QP_E_NOTFOUND
 * naming a path that does not exist), loads map_path (NULL: none), aligns
 * and plans. out is filled and owned by the caller (qp_diff_dumps_release),
 * also on failure. With o->strict, unpaired tensors, refused pairs and
 * alignment notes (map pairs or rules naming absent tensors, ambiguities)
 * set out->problem. */
enum qp_status qp_diff_dumps_open(const char *ref_path, const char *test_path,
                                  const char *map_path,
                                  const struct qp_diff_opts *o,
                                  struct qp_diff_dumps *out,
                                  struct qp_error *err);

/* Computes the metrics of every planned pair (o->progress reports). */
enum qp_status qp_diff_dumps_compute(struct qp_diff_dumps *dd,
                                     const struct qp_progress *progress,
                                     struct qp_error *err);

void qp_diff_dumps_release(struct qp_diff_dumps *dd);

#endif
