/* cli/table.h: plain-text tables for the terminal (inspect, diff).
 *
 * Cells are copied; columns are as wide as their widest cell; a column is
 * right-aligned when its letter in `align` is 'r'. */
#ifndef QP_CLI_TABLE_H
#define QP_CLI_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "core/outfile.h"

struct qp_table;

/* ncols headers; align holds ncols letters 'l' or 'r'. NULL on no memory. */
struct qp_table *qp_table_new(size_t ncols, const char *const *headers,
                              const char *align);

/* Adds a row of ncols cells (NULL prints as ""); false on no memory. */
bool qp_table_add(struct qp_table *t, const char *const *cells);

/* Prints the header, a rule and the rows; false on a write error. */
bool qp_table_print(const struct qp_table *t, FILE *f);

void qp_table_free(struct qp_table *t);

/* Formats v with printf format fmt (one double), or "inf", "-inf", "nan";
 * returns buf. */
const char *qp_table_num(double v, const char *fmt, char *buf, size_t size);

/* A command's text output written to a file (-o FILE) that appears whole
 * or not at all, together with the command's other outputs. For stdout
 * (path NULL or "-") fp stays NULL: the command prints after committing
 * its files, so a reader that stops early (`| head`) cannot cost them. */
struct qp_text_out {
    FILE *fp;              /* NULL: print to stdout after the files */
    struct qp_outfile *of;
};

enum qp_status qp_text_out_open(const char *path, struct qp_text_out *o,
                                struct qp_error *err);
/* Commits (or with commit false, drops) a file output; nothing for stdout. */
enum qp_status qp_text_out_close(struct qp_text_out *o, bool commit,
                                 struct qp_error *err);

#endif
