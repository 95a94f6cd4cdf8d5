#include "cli/table.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "formats/csv.h"

struct qp_table {
    size_t ncols, nrows, cap;
    char **cells;  /* [(nrows + 1) * ncols], row 0 the header */
    char *align;
};

struct qp_table *qp_table_new(size_t ncols, const char *const *headers,
                              const char *align)
{
    struct qp_table *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->ncols = ncols;
    t->align = strdup(align);
    if (!t->align || !qp_table_add(t, headers)) {
        qp_table_free(t);
        return NULL;
    }
    t->nrows = 0; /* the header is row 0 of cells, not a data row */
    return t;
}

bool qp_table_add(struct qp_table *t, const char *const *cells)
{
    size_t used = t->cells ? (t->nrows + 1) * t->ncols : 0;
    if (used + t->ncols > t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 16 * t->ncols;
        char **nc = realloc(t->cells, cap * sizeof *nc);
        if (!nc)
            return false;
        t->cells = nc;
        t->cap = cap;
    }
    for (size_t c = 0; c < t->ncols; c++) {
        t->cells[used + c] = strdup(cells[c] ? cells[c] : "");
        if (!t->cells[used + c]) {
            while (c--)
                free(t->cells[used + c]);
            return false;
        }
    }
    if (used)
        t->nrows++;
    return true;
}

/* Prints one row, padded, without trailing spaces. */
static void print_row(const struct qp_table *t, char *const *cells,
                      const size_t *w, FILE *f)
{
    size_t pending = 0; /* spaces owed before the next visible text */
    for (size_t c = 0; c < t->ncols; c++) {
        const char *s = cells[c];
        size_t len = strlen(s), pad = w[c] - len;
        if (c)
            pending += 2;
        if (t->align[c] == 'r')
            pending += pad;
        if (len) {
            fprintf(f, "%*s%s", (int)pending, "", s);
            pending = 0;
        }
        if (t->align[c] != 'r')
            pending += pad;
    }
    fputc('\n', f);
}

bool qp_table_print(const struct qp_table *t, FILE *f)
{
    size_t *w = calloc(t->ncols, sizeof *w);
    if (!w)
        return false;
    size_t total = 0;
    for (size_t r = 0; r <= t->nrows; r++)
        for (size_t c = 0; c < t->ncols; c++) {
            size_t n = strlen(t->cells[r * t->ncols + c]);
            w[c] = n > w[c] ? n : w[c];
        }
    for (size_t c = 0; c < t->ncols; c++)
        total += w[c] + (c ? 2 : 0);
    for (size_t r = 0; r <= t->nrows; r++) {
        print_row(t, t->cells + r * t->ncols, w, f);
        if (r == 0) {
            for (size_t k = 0; k < total; k++)
                fputc('-', f);
            fputc('\n', f);
        }
    }
    free(w);
    return !ferror(f);
}

void qp_table_free(struct qp_table *t)
{
    if (!t)
        return;
    size_t used = t->cells ? (t->nrows + 1) * t->ncols : 0;
    for (size_t i = 0; i < used; i++)
        free(t->cells[i]);
    free(t->cells);
    free(t->align);
    free(t);
}

const char *qp_table_num(double v, const char *fmt, char *buf, size_t size)
{
    if (!isfinite(v))
        return qp_csv_fmt_num(v, buf, size); /* "inf", "-inf", "nan" */
    snprintf(buf, size, fmt, v);
    return buf;
}

enum qp_status qp_text_out_open(const char *path, struct qp_text_out *o,
                                struct qp_error *err)
{
    *o = (struct qp_text_out){NULL, NULL};
    if (!path || !strcmp(path, "-"))
        return QP_OK;
    enum qp_status st = qp_outfile_open(path, &o->of, err);
    if (!st)
        o->fp = o->of->fp;
    return st;
}

enum qp_status qp_text_out_close(struct qp_text_out *o, bool commit,
                                 struct qp_error *err)
{
    enum qp_status st = QP_OK;
    if (o->of && commit)
        st = qp_outfile_commit(o->of, err);
    else if (o->of)
        qp_outfile_abort(o->of);
    o->of = NULL;
    o->fp = NULL;
    return st;
}
