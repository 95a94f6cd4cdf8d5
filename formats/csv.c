#include "formats/csv.h"

#include <csv.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fileio.h"
#include "core/outfile.h"

/* ---- writing -------------------------------------------------------------- */

struct qp_csv_writer {
    struct qp_outfile *of; /* NULL when writing to stdout or memory */
    FILE *fp;
    bool row_started;
    char *mem;             /* qp_csv_open_mem: the memory stream's buffer */
    size_t mem_len;
};

enum qp_status qp_csv_open(const char *path, struct qp_csv_writer **out,
                           struct qp_error *err)
{
    *out = NULL;
    struct qp_csv_writer *w = calloc(1, sizeof *w);
    if (!w)
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    if (!strcmp(path, "-")) {
        w->fp = stdout;
    } else {
        enum qp_status st = qp_outfile_open(path, &w->of, err);
        if (st) {
            free(w);
            return st;
        }
        w->fp = w->of->fp;
    }
    *out = w;
    return QP_OK;
}

enum qp_status qp_csv_open_mem(struct qp_csv_writer **out, struct qp_error *err)
{
    struct qp_csv_writer *w = calloc(1, sizeof *w);
    if (w && !(w->fp = open_memstream(&w->mem, &w->mem_len))) {
        free(w);
        w = NULL;
    }
    *out = w;
    return w ? QP_OK : qp_fail(err, QP_E_NOMEM, "out of memory");
}

enum qp_status qp_csv_take_text(struct qp_csv_writer *w, char **text,
                                size_t *len, struct qp_error *err)
{
    bool bad = ferror(w->fp) != 0;
    bad |= fclose(w->fp) != 0;
    *text = bad ? NULL : w->mem;
    *len = bad ? 0 : w->mem_len;
    if (bad)
        free(w->mem);
    free(w);
    return bad ? qp_fail(err, QP_E_NOMEM, "out of memory") : QP_OK;
}

static bool needs_quotes(const char *s)
{
    size_t n = strlen(s);
    if (n && (s[0] == ' ' || s[n - 1] == ' '))
        return true;
    return strpbrk(s, ",\"\r\n") != NULL;
}

static void sep(struct qp_csv_writer *w)
{
    if (w->row_started)
        fputc(',', w->fp);
    w->row_started = true;
}

void qp_csv_str(struct qp_csv_writer *w, const char *s)
{
    sep(w);
    if (!s || !*s)
        return;
    if (needs_quotes(s))
        csv_fwrite(w->fp, s, strlen(s));
    else
        fputs(s, w->fp);
}

const char *qp_csv_fmt_num(double v, char *buf, size_t size)
{
    if (isnan(v))
        snprintf(buf, size, "nan");
    else if (isinf(v))
        snprintf(buf, size, v > 0 ? "inf" : "-inf");
    else
        snprintf(buf, size, "%.9g", v);
    return buf;
}

void qp_csv_num(struct qp_csv_writer *w, double v)
{
    char b[40];
    sep(w);
    fputs(qp_csv_fmt_num(v, b, sizeof b), w->fp);
}

void qp_csv_int(struct qp_csv_writer *w, int64_t v)
{
    sep(w);
    fprintf(w->fp, "%lld", (long long)v);
}

void qp_csv_end_row(struct qp_csv_writer *w)
{
    fputc('\n', w->fp);
    w->row_started = false;
}

void qp_csv_row(struct qp_csv_writer *w, const char *const *fields, size_t n)
{
    for (size_t i = 0; i < n; i++)
        qp_csv_str(w, fields[i]);
    qp_csv_end_row(w);
}

enum qp_status qp_csv_commit(struct qp_csv_writer *w, struct qp_error *err)
{
    enum qp_status st = QP_OK;
    if (w->of) {
        st = qp_outfile_commit(w->of, err);
    } else if (fflush(w->fp) != 0 || ferror(w->fp)) {
        st = qp_fail(err, QP_E_IO, "standard output: write failed: %s",
                     strerror(errno));
    }
    free(w);
    return st;
}

void qp_csv_abort(struct qp_csv_writer *w)
{
    if (!w)
        return;
    qp_outfile_abort(w->of);
    if (!w->of && w->fp != stdout) { /* a memory writer */
        fclose(w->fp);
        free(w->mem);
    }
    free(w);
}

/* ---- reading -------------------------------------------------------------- */

struct parse_state {
    struct qp_csv *t;
    char **row;       /* fields of the row being read */
    size_t nfields, cap;
    size_t rows_cap;
    size_t record;    /* records completed, the header included */
    const char *what;
    struct qp_error *err;
    enum qp_status st;
};

static void free_row(char **row, size_t n)
{
    for (size_t i = 0; row && i < n; i++)
        free(row[i]);
    free(row);
}

void qp_csv_free(struct qp_csv *t)
{
    if (!t)
        return;
    free_row(t->header, t->ncols);
    for (size_t r = 0; r < t->nrows; r++)
        free_row(t->rows[r], t->ncols);
    free(t->rows);
    free(t);
}

static void on_field(void *s, size_t len, void *data)
{
    struct parse_state *p = data;
    if (p->st)
        return;
    if (p->nfields == p->cap) {
        size_t cap = p->cap ? 2 * p->cap : 16;
        char **nr = realloc(p->row, cap * sizeof *nr);
        if (!nr) {
            p->st = qp_fail(p->err, QP_E_NOMEM, "out of memory");
            return;
        }
        p->row = nr;
        p->cap = cap;
    }
    char *f = malloc(len + 1);
    if (!f) {
        p->st = qp_fail(p->err, QP_E_NOMEM, "out of memory");
        return;
    }
    if (len)
        memcpy(f, s, len);
    f[len] = '\0';
    p->row[p->nfields++] = f;
}

static enum qp_status check_header(struct parse_state *p)
{
    struct qp_csv *t = p->t;
    for (size_t i = 0; i < t->ncols; i++) {
        if (!t->header[i][0])
            return qp_fail(p->err, QP_E_FORMAT, "%s: header column %zu is empty",
                           p->what, i + 1);
        for (size_t j = 0; j < i; j++)
            if (!strcmp(t->header[i], t->header[j]))
                return qp_fail(p->err, QP_E_FORMAT,
                               "%s: header names column '%s' twice", p->what,
                               t->header[i]);
    }
    return QP_OK;
}

static void on_row(int c, void *data)
{
    (void)c;
    struct parse_state *p = data;
    struct qp_csv *t = p->t;
    if (p->st)
        return;
    p->record++;
    if (p->record == 1) {
        t->header = p->row;
        t->ncols = p->nfields;
        p->row = NULL;
        p->nfields = p->cap = 0;
        p->st = check_header(p);
        return;
    }
    if (p->nfields != t->ncols) {
        p->st = qp_fail(p->err, QP_E_FORMAT,
                        "%s: row %zu has %zu fields, the header has %zu",
                        p->what, p->record, p->nfields, t->ncols);
        return;
    }
    if (t->nrows == p->rows_cap) {
        size_t cap = p->rows_cap ? 2 * p->rows_cap : 64;
        char ***nr = realloc(t->rows, cap * sizeof *nr);
        if (!nr) {
            p->st = qp_fail(p->err, QP_E_NOMEM, "out of memory");
            return;
        }
        t->rows = nr;
        p->rows_cap = cap;
    }
    t->rows[t->nrows++] = p->row;
    p->row = NULL;
    p->nfields = p->cap = 0;
}

static size_t line_of(const char *text, size_t off)
{
    size_t line = 1;
    for (size_t i = 0; i < off; i++)
        line += text[i] == '\n';
    return line;
}

enum qp_status qp_csv_parse(const char *text, size_t len, const char *what,
                            struct qp_csv **out, struct qp_error *err)
{
    *out = NULL;
    struct csv_parser cp;
    if (csv_init(&cp, CSV_STRICT | CSV_STRICT_FINI) != 0)
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    struct parse_state p = {0};
    p.t = calloc(1, sizeof *p.t);
    p.what = what;
    p.err = err;
    if (!p.t) {
        csv_free(&cp);
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    }
    size_t done = csv_parse(&cp, text, len, on_field, on_row, &p);
    if (!p.st && done != len) {
        if (csv_error(&cp) == CSV_EPARSE)
            p.st = qp_fail(err, QP_E_FORMAT, "%s: line %zu: malformed quoting",
                           what, line_of(text, done));
        else
            p.st = qp_fail(err, QP_E_NOMEM, "%s: %s", what,
                           csv_strerror(csv_error(&cp)));
    }
    if (!p.st && csv_fini(&cp, on_field, on_row, &p) != 0 && !p.st)
        p.st = qp_fail(err, QP_E_FORMAT, "%s: unterminated quoted field at the end",
                       what);
    csv_free(&cp);
    if (!p.st && p.record == 0)
        p.st = qp_fail(err, QP_E_FORMAT, "%s: no header row", what);
    free_row(p.row, p.nfields);
    if (p.st) {
        qp_csv_free(p.t);
        return p.st;
    }
    *out = p.t;
    return QP_OK;
}

enum qp_status qp_csv_load(const char *path, struct qp_csv **out,
                           struct qp_error *err)
{
    char *text;
    size_t len;
    *out = NULL;
    enum qp_status st = qp_read_file(path, (size_t)1 << 30, &text, &len, err);
    if (st)
        return st;
    size_t n = strlen(path) + 3;
    char *what = malloc(n);
    if (!what) {
        free(text);
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    }
    snprintf(what, n, "'%s'", path);
    st = qp_csv_parse(text, len, what, out, err);
    free(what);
    free(text);
    return st;
}

long qp_csv_column(const struct qp_csv *t, const char *name)
{
    for (size_t i = 0; i < t->ncols; i++)
        if (!strcmp(t->header[i], name))
            return (long)i;
    return -1;
}

const char *qp_csv_get(const struct qp_csv *t, size_t row, size_t col)
{
    if (row >= t->nrows || col >= t->ncols)
        return NULL;
    return t->rows[row][col];
}

bool qp_csv_to_num(const char *s, double *out)
{
    if (!s || !*s)
        return false;
    if (!strcmp(s, "inf") || !strcmp(s, "+inf")) {
        *out = INFINITY;
        return true;
    }
    if (!strcmp(s, "-inf")) {
        *out = -INFINITY;
        return true;
    }
    if (!strcmp(s, "nan")) {
        *out = NAN;
        return true;
    }
    char *end;
    double v = strtod(s, &end);
    if (*end)
        return false;
    *out = v;
    return true;
}
