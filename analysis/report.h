/* analysis/report.h: `qprobe report INPUT... -o DIR`: the CSV tables
 * qprobe writes, gathered into one folder with one page.
 *
 * Each input is recognized by its header: a sweep table
 * (analysis/sweep-csv.h), a diff's metrics (analysis/diff-report.h), a
 * sensitivity ranking (analysis/sens-report.h), a ladder
 * (analysis/ladder-report.h) or a recipe search's Pareto steps
 * (analysis/recipe-report.h). DIR receives index.html, one page with no
 * outside resource (inline style, a few lines of script to sort tables)
 * and, drawn by gnuplot as PNG and SVG with their .gp and .dat kept:
 *   sweep        its table (best value per column marked, the fp32 row
 *                aside), quality against weight size and against time
 *                per input, each with its Pareto front (SQNR for graph
 *                models; perplexity, else KL, for language models)
 *   diff         SQNR across depth (model order from the order column,
 *                block boundaries, the worst tensors numbered), the worst
 *                rows and the whole table
 *   sensitivity  the ranking as bars and a table with the hints
 *   ladder       every rung against the first across depth, each rung's
 *                largest step marked, a summary per rung
 *   recipe       calibration and held-out quality against weight size per
 *                step, and the steps
 * Sections follow that order, inputs of one kind in the order given. The
 * folder appears whole or not at all (core/outfile.h); an existing DIR is
 * replaced. With screenshot, headless Chromium (the program named by
 * $QP_CHROMIUM, default chromium) draws the page into DIR/screenshot.png. */
#ifndef QP_ANALYSIS_REPORT_H
#define QP_ANALYSIS_REPORT_H

#include <stdbool.h>
#include <stddef.h>

#include "core/status.h"

enum qp_report_kind {
    QP_REPORT_SWEEP = 0,
    QP_REPORT_DIFF,
    QP_REPORT_SENS,
    QP_REPORT_LADDER,
    QP_REPORT_RECIPE,
    QP_REPORT_KIND_COUNT
};

/* "sweep", "diff", "sensitivity", "ladder", "recipe". */
const char *qp_report_kind_name(enum qp_report_kind k);

/* The kind of table a CSV header belongs to; false when none. */
bool qp_report_kind_of(const char *const *header, size_t ncols,
                       enum qp_report_kind *out);

struct qp_report_opts {
    const char *title;   /* the page's (NULL: "qprobe report") */
    bool screenshot;     /* DIR/screenshot.png through headless Chromium */
};

struct qp_report_summary {
    size_t inputs[QP_REPORT_KIND_COUNT];
    size_t plots;        /* each as .png and .svg */
    size_t rows;         /* table rows written */
};

/* Writes the report of inputs in[0..n) into dir. Errors name the file:
 * QP_E_FORMAT for a CSV qprobe does not write (with its first columns)
 * or a malformed one, QP_E_IO when the folder cannot be written or gnuplot
 * or Chromium fails. */
enum qp_status qp_report_write(const char *const *in, size_t n, const char *dir,
                               const struct qp_report_opts *o,
                               struct qp_report_summary *sum,
                               struct qp_error *err);

#endif
