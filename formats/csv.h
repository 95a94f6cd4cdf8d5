/* formats/csv.h: CSV files, through libcsv (the only module that calls it).
 *
 * Writing: fields are separated by ',' and rows end in '\n'; a field is
 * quoted (RFC 4180: "..." with inner quotes doubled) only when it needs to
 * be: when it holds a comma, a quote, CR or LF, or starts or ends with a
 * space. Numbers are written with %.9g (enough for every float and for the
 * metrics' useful precision), as "inf", "-inf" and "nan" when not finite.
 * The file appears whole or not at all (core/outfile.h); the path "-"
 * writes to stdout instead.
 *
 * Reading: a whole file into a table of strings (strict RFC 4180 quoting;
 * CRLF or LF line ends; blank lines skipped); row 0 is the header and every
 * row must have as many fields as the header. */
#ifndef QP_FORMATS_CSV_H
#define QP_FORMATS_CSV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/status.h"

/* ---- writing -------------------------------------------------------------- */

struct qp_csv_writer;

/* Opens path for writing (a temporary name until commit; "-" is stdout).
 * *out belongs to the caller until qp_csv_commit or qp_csv_abort. */
enum qp_status qp_csv_open(const char *path, struct qp_csv_writer **out,
                           struct qp_error *err);

/* A writer into memory: the same fields and rows, as text that
 * qp_csv_take_text hands over (for a row appended whole with one write,
 * as sweeps do). */
enum qp_status qp_csv_open_mem(struct qp_csv_writer **out, struct qp_error *err);

/* The text written so far into *text (malloc'd, NUL-terminated; the
 * caller frees it) and its length; frees w. QP_E_NOMEM when memory ran
 * out while writing. */
enum qp_status qp_csv_take_text(struct qp_csv_writer *w, char **text,
                                size_t *len, struct qp_error *err);

/* Fields of the current row. NULL or "" writes an empty field. */
void qp_csv_str(struct qp_csv_writer *w, const char *s);
void qp_csv_num(struct qp_csv_writer *w, double v);
void qp_csv_int(struct qp_csv_writer *w, int64_t v);
/* Ends the current row. */
void qp_csv_end_row(struct qp_csv_writer *w);
/* A whole row of n string fields. */
void qp_csv_row(struct qp_csv_writer *w, const char *const *fields, size_t n);

/* Flushes and renames the file into place; reports any earlier write error
 * (QP_E_IO naming the file). Frees w in every case. */
enum qp_status qp_csv_commit(struct qp_csv_writer *w, struct qp_error *err);

/* Drops the file; frees w. NULL is ignored. */
void qp_csv_abort(struct qp_csv_writer *w);

/* Formats v as qp_csv_num writes it; returns buf. */
const char *qp_csv_fmt_num(double v, char *buf, size_t size);

/* ---- reading -------------------------------------------------------------- */

struct qp_csv {
    size_t ncols;   /* fields per row (the header's count) */
    size_t nrows;   /* data rows, not counting the header */
    char **header;  /* [ncols] */
    char ***rows;   /* [nrows][ncols] */
};

/* Parses text[0..len) named `what` in messages. QP_E_FORMAT on bad quoting,
 * an empty document, an empty or duplicate header name, or a row whose
 * field count differs from the header's (naming the row). *out belongs to
 * the caller (qp_csv_free). */
enum qp_status qp_csv_parse(const char *text, size_t len, const char *what,
                            struct qp_csv **out, struct qp_error *err);

/* Reads and parses a file (at most 1 GiB). */
enum qp_status qp_csv_load(const char *path, struct qp_csv **out,
                           struct qp_error *err);

void qp_csv_free(struct qp_csv *t);

/* Index of the column named name, or -1. */
long qp_csv_column(const struct qp_csv *t, const char *name);

/* Field (row, col) of the data rows; NULL when out of range. */
const char *qp_csv_get(const struct qp_csv *t, size_t row, size_t col);

/* Parses a numeric field as written by qp_csv_num (also "inf", "-inf",
 * "nan"); false when s is empty or not a whole number. */
bool qp_csv_to_num(const char *s, double *out);

#endif
