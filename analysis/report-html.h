/* analysis/report-html.h: the pieces of `qprobe report`'s page: one
 * self-contained HTML document (inline CSS, a few lines of plain
 * JavaScript that sort tables, no network), sections, figures and
 * sortable tables whose best value per column is marked.
 *
 * Tables are filled row by row (cells as display text, each with a sort
 * key: a number, or NaN to sort as text) and written at once, so that the
 * best value of each column (the highest or lowest key among the rows
 * eligible for it) can be marked. Clicking a header sorts by it (numbers
 * numerically, empty cells last; again: the other way). */
#ifndef QP_ANALYSIS_REPORT_HTML_H
#define QP_ANALYSIS_REPORT_HTML_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "core/status.h"

/* Writes s with &, <, >, " and ' escaped. */
void qp_html_text(FILE *f, const char *s);

/* The document's start: doctype, title, the style sheet and the sorting
 * script; then an <h1> with title. */
void qp_html_begin(FILE *f, const char *title);
void qp_html_end(FILE *f);

/* <section id=id><h2>heading</h2> ... </section> */
void qp_html_section(FILE *f, const char *id, const char *heading);
void qp_html_section_end(FILE *f);

/* A paragraph of plain text (escaped). */
void qp_html_para(FILE *f, const char *text);

/* A plot: stem.png shown, linked to stem.svg, with its caption and the
 * names of its .gp and .dat files. */
void qp_html_figure(FILE *f, const char *stem, const char *caption);

struct qp_html_col {
    const char *head;
    int better;        /* +1 the highest key is best, -1 the lowest, 0 none */
    const char *tip;   /* the header's tooltip, or NULL */
};

struct qp_html_table {
    const struct qp_html_col *cols;
    size_t ncols, nrows, cap;
    char **cell;       /* [nrows * ncols] owned */
    double *key;       /* [nrows * ncols] */
    bool *eligible;    /* [nrows] may carry a best mark */
    char **rclass;     /* [nrows] owned class names, or NULL */
};

void qp_html_table_init(struct qp_html_table *t, const struct qp_html_col *cols,
                        size_t ncols);
/* Adds a row: ncols cells (NULL: empty) and keys (NULL: all NaN); rclass
 * (may be NULL) styles the row ("front", "error", "ref"). */
enum qp_status qp_html_table_add(struct qp_html_table *t,
                                 const char *const *cells, const double *keys,
                                 bool eligible, const char *rclass,
                                 struct qp_error *err);
/* Writes the table (id for the script and for links). */
void qp_html_table_write(FILE *f, const char *id, const struct qp_html_table *t);
void qp_html_table_release(struct qp_html_table *t);

#endif
