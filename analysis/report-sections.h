/* analysis/report-sections.h: one section of the report page per input
 * table (analysis/report.h), each writing its HTML and its plots. Internal
 * to analysis/. */
#ifndef QP_ANALYSIS_REPORT_SECTIONS_H
#define QP_ANALYSIS_REPORT_SECTIONS_H

#include <stdio.h>

#include "analysis/report-html.h"
#include "analysis/report.h"
#include "formats/csv.h"

struct qp_report_ctx {
    FILE *html;
    const char *dir;         /* where plots go (the folder being made) */
    const char *path;        /* the input, as given */
    const struct qp_csv *t;
    int seq;                 /* 1, 2, ... among inputs of its kind */
    char id[32];             /* "sweep-1": the section id, the plots' stem */
    struct qp_report_summary *sum;
};

enum qp_status qp_report_sweep(struct qp_report_ctx *c, struct qp_error *err);
enum qp_status qp_report_diff(struct qp_report_ctx *c, struct qp_error *err);
enum qp_status qp_report_sens(struct qp_report_ctx *c, struct qp_error *err);
enum qp_status qp_report_ladder(struct qp_report_ctx *c, struct qp_error *err);
enum qp_status qp_report_recipe(struct qp_report_ctx *c, struct qp_error *err);

/* ---- shared by the sections -------------------------------------------- */

/* Opens c's section, headed "KIND: PATH" (qp_html_section_end closes it). */
void qp_report_open(struct qp_report_ctx *c, const char *kind);

/* Field (r, column name) of c's table; "" when the column is absent. */
const char *qp_report_field(const struct qp_report_ctx *c, size_t r,
                            const char *col);

/* The field as a number (NaN when empty or not one). */
double qp_report_num(const struct qp_report_ctx *c, size_t r, const char *col);

/* One column of a section's table: the CSV column, how to show it. */
struct qp_report_col {
    const char *csv;     /* the CSV column */
    const char *head;
    const char *fmt;     /* printf format of the scaled number; NULL: text */
    double scale;
    int better;          /* as struct qp_html_col */
};

/* Rows rows[0..n) of c's table (NULL: every row) as an HTML table of the
 * columns present (those whose every shown cell is empty left out too),
 * rows styled by rclass[k] (may be NULL) and eligible[k] for best marks
 * (NULL: none). */
enum qp_status qp_report_table(struct qp_report_ctx *c, const char *id,
                               const struct qp_report_col *cols, size_t ncols,
                               const size_t *rows, size_t n,
                               const char *const *rclass, const bool *eligible,
                               struct qp_error *err);

#endif
