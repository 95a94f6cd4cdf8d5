/* analysis/sweep-csv.c: the sweep table: rows, appends, resume and merge
 * (analysis/sweep-csv.h). */
#include "analysis/sweep-csv.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/fileio.h"
#include "core/outfile.h"
#include "core/strmap.h"

const char *const qp_sweep_columns[QP_SWEEP_NCOLS] = {
    "index", "name", "kind", "mode", "scheme", "requant", "hash", "status",
    "sqnr_db", "cosine", "kl", "kl_err", "top1", "top1_err", "ppl", "ppl_err",
    "task_acc", "task_acc_err", "exact_match", "exact_match_err",
    "weight_bytes", "params", "bits_per_weight", "bitops", "worst_tensor",
    "worst_sqnr_db", "ms_per_input", "tokens_per_s", "peak_rss_mb", "seconds",
    "recipe", "error"};

bool qp_sweep_column_is_timing(const char *name)
{
    static const char *const t[] = {"ms_per_input", "tokens_per_s", "peak_rss_mb",
                                    "seconds"};
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        if (!strcmp(name, t[i]))
            return true;
    return false;
}

bool qp_sweep_column_compared(const char *name)
{
    return !qp_sweep_column_is_timing(name) && strcmp(name, "index") &&
           strcmp(name, "name");
}

bool qp_sweep_header_is(const char *const *header, size_t ncols)
{
    if (ncols != QP_SWEEP_NCOLS)
        return false;
    for (size_t i = 0; i < ncols; i++)
        if (strcmp(header[i], qp_sweep_columns[i]))
            return false;
    return true;
}

/* ---- rows ------------------------------------------------------------------- */

/* A measurement: empty when absent (NaN), an integer when it is one. */
static void value(struct qp_csv_writer *w, double v)
{
    if (isnan(v))
        qp_csv_str(w, NULL);
    else if (isfinite(v) && v == floor(v) && fabs(v) < 9e15)
        qp_csv_int(w, (int64_t)v);
    else
        qp_csv_num(w, v);
}

static void header(struct qp_csv_writer *w)
{
    qp_csv_row(w, qp_sweep_columns, QP_SWEEP_NCOLS);
}

static void measurements(struct qp_csv_writer *w, const struct qp_sweep_result *r)
{
    const double q[] = {r->sqnr_db, r->cosine, r->kl, r->kl_err, r->top1,
                        r->top1_err, r->ppl, r->ppl_err, r->task_acc,
                        r->task_acc_err, r->exact_match, r->exact_match_err,
                        r->weight_bytes, r->params,
                        r->params > 0 ? r->weight_bytes * 8 / r->params : NAN,
                        r->bitops};
    for (size_t i = 0; i < sizeof q / sizeof q[0]; i++)
        value(w, q[i]);
    qp_csv_str(w, r->worst);
    value(w, r->worst[0] ? r->worst_sqnr_db : NAN);
    const double t[] = {r->ms_per_input, r->tokens_per_s, r->peak_rss_mb,
                        r->seconds};
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        value(w, t[i]);
}

enum qp_status qp_sweep_format_row(size_t index, const struct qp_sweep_cfg *c,
                                   const char *hash,
                                   const struct qp_sweep_result *r,
                                   const char *error, char **line, size_t *len,
                                   struct qp_error *err)
{
    struct qp_csv_writer *w;
    enum qp_status st = qp_csv_open_mem(&w, err);
    if (st)
        return st;
    qp_csv_int(w, (int64_t)index);
    qp_csv_str(w, c->name);
    qp_csv_str(w, qp_sweep_kind_name(c->kind));
    qp_csv_str(w, qp_run_mode_name(c->mode));
    qp_csv_str(w, c->scheme_text);
    qp_csv_str(w, c->kind == QP_SWEEP_FP32 ? NULL : qp_rq_flavor_name(c->flavor));
    qp_csv_str(w, hash);
    qp_csv_str(w, error ? "error" : "ok");
    if (error) {
        for (int k = 8; k < QP_SWEEP_NCOLS - 2; k++)
            qp_csv_str(w, NULL);
    } else {
        measurements(w, r);
    }
    qp_csv_str(w, c->recipe_json);
    /* one line per row: an error message keeps its first line */
    char msg[QP_ERROR_MSG_MAX];
    snprintf(msg, sizeof msg, "%s", error ? error : "");
    msg[strcspn(msg, "\r\n")] = '\0';
    qp_csv_str(w, msg);
    qp_csv_end_row(w);
    return qp_csv_take_text(w, line, len, err);
}

/* ---- the file ------------------------------------------------------------------ */

void qp_sweep_file_close(struct qp_sweep_file *f)
{
    if (!f)
        return;
    if (f->fd >= 0)
        close(f->fd); /* releases the lock */
    qp_csv_free(f->rows);
    free(f->path);
    free(f);
}

/* Creates path holding the header alone, whole. */
static enum qp_status create(const char *path, struct qp_error *err)
{
    struct qp_csv_writer *w;
    enum qp_status st = qp_csv_open(path, &w, err);
    if (st)
        return st;
    header(w);
    return qp_csv_commit(w, err);
}

/* Reads the open file's bytes; a torn last line is cut off the file. */
static enum qp_status read_and_mend(struct qp_sweep_file *f, char **text,
                                    size_t *len, struct qp_error *err)
{
    enum qp_status st = qp_read_file(f->path, (size_t)1 << 30, text, len, err);
    if (st)
        return st;
    size_t keep = *len;
    while (keep && (*text)[keep - 1] != '\n')
        keep--;
    if (keep == *len)
        return QP_OK;
    if (!keep) {
        free(*text);
        *text = NULL;
        return qp_fail(err, QP_E_FORMAT, "'%s': not a sweep table (no complete "
                       "header line)", f->path);
    }
    f->torn_bytes = *len - keep;
    if (ftruncate(f->fd, (off_t)keep) != 0 || fsync(f->fd) != 0) {
        free(*text);
        *text = NULL;
        return qp_fail(err, QP_E_IO, "'%s': cannot drop the torn last line: %s",
                       f->path, strerror(errno));
    }
    *len = keep;
    (*text)[keep] = '\0';
    return QP_OK;
}

/* Refuses (and frees) a table whose header is not the sweep table's. */
static enum qp_status check_header(const char *path, struct qp_csv **t,
                                   struct qp_error *err)
{
    if (qp_sweep_header_is((const char *const *)(*t)->header, (*t)->ncols))
        return QP_OK;
    qp_csv_free(*t);
    *t = NULL;
    return qp_fail(err, QP_E_FORMAT, "'%s': not a sweep table of this qprobe "
                   "(its header differs from '%s,%s,...')", path,
                   qp_sweep_columns[0], qp_sweep_columns[1]);
}

/* Parses a table's text and checks its header. */
static enum qp_status parse_table(const char *path, const char *text, size_t len,
                                  struct qp_csv **out, struct qp_error *err)
{
    char what[600];
    snprintf(what, sizeof what, "'%s'", path);
    enum qp_status st = qp_csv_parse(text, len, what, out, err);
    return st ? st : check_header(path, out, err);
}

enum qp_status qp_sweep_file_open(const char *path, struct qp_sweep_file **out,
                                  struct qp_error *err)
{
    *out = NULL;
    struct stat sb;
    enum qp_status st = QP_OK;
    if (stat(path, &sb) != 0 && (errno != ENOENT || (st = create(path, err))))
        return st ? st : qp_fail(err, QP_E_IO, "'%s': %s", path, strerror(errno));
    struct qp_sweep_file *f = calloc(1, sizeof *f);
    if (!f || !(f->path = strdup(path))) {
        free(f);
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    }
    f->fd = open(path, O_RDWR | O_APPEND | O_CLOEXEC);
    if (f->fd < 0)
        st = qp_fail(err, QP_E_IO, "'%s': %s", path, strerror(errno));
    else if (flock(f->fd, LOCK_EX | LOCK_NB) != 0)
        st = qp_fail(err, QP_E_IO, "'%s': %s", path, errno == EWOULDBLOCK
                     ? "another sweep is writing it (give each process its own "
                       "--csv and merge them)" : strerror(errno));
    char *text = NULL;
    size_t len = 0;
    if (!st)
        st = read_and_mend(f, &text, &len, err);
    if (!st)
        st = parse_table(path, text, len, &f->rows, err);
    free(text);
    if (st) {
        qp_sweep_file_close(f);
        return st;
    }
    *out = f;
    return QP_OK;
}

enum qp_status qp_sweep_file_append(struct qp_sweep_file *f, const char *line,
                                    size_t len, struct qp_error *err)
{
    ssize_t n;
    while ((n = write(f->fd, line, len)) < 0 && errno == EINTR)
        ;
    if (n < 0 || (size_t)n != len)
        return qp_fail(err, QP_E_IO, "'%s': cannot append a row: %s", f->path,
                       n < 0 ? strerror(errno) : "short write (disk full?)");
    if (fsync(f->fd) != 0)
        return qp_fail(err, QP_E_IO, "'%s': fsync failed: %s", f->path,
                       strerror(errno));
    return QP_OK;
}

/* ---- merge ------------------------------------------------------------------- */

struct mrow {
    const struct qp_csv *t;
    size_t row, file;
    long long index;
};

static int cmp_index(const void *a, const void *b)
{
    const struct mrow *x = a, *y = b;
    if (x->index != y->index)
        return x->index < y->index ? -1 : 1;
    if (x->file != y->file)
        return x->file < y->file ? -1 : 1;
    return (x->row > y->row) - (x->row < y->row);
}

static bool parse_index(const char *s, long long *out)
{
    char *end;
    errno = 0;
    *out = strtoll(s, &end, 10);
    return *s && !*end && !errno && *out >= 0;
}

/* True when the file's last byte is a newline (or it is empty). */
static bool ends_whole(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    char last = '\n';
    off_t end = fd >= 0 ? lseek(fd, 0, SEEK_END) : -1;
    if (end > 0 && pread(fd, &last, 1, end - 1) != 1)
        last = '\0';
    if (fd >= 0)
        close(fd);
    return last == '\n';
}

/* Loads an input of the merge: a whole sweep table, not torn. */
static enum qp_status load_input(const char *path, struct qp_csv **out,
                                 struct qp_error *err)
{
    *out = NULL;
    if (!ends_whole(path))
        return qp_fail(err, QP_E_FORMAT, "'%s': its last line is torn (an "
                       "interrupted sweep): run that sweep again to finish it",
                       path);
    enum qp_status st = qp_csv_load(path, out, err);
    return st ? st : check_header(path, out, err);
}

/* The first compared column where rows a and b differ, or -1. */
static long differs(const struct mrow *a, const struct mrow *b)
{
    for (size_t c = 0; c < QP_SWEEP_NCOLS; c++)
        if (qp_sweep_column_compared(qp_sweep_columns[c]) &&
            strcmp(a->t->rows[a->row][c], b->t->rows[b->row][c]))
            return (long)c;
    return -1;
}

static enum qp_status collect(struct qp_csv **t, size_t n, const char *const *in,
                              struct mrow **out, size_t *nout, size_t *dups,
                              struct qp_error *err)
{
    size_t total = 0, hash_col = 6; /* qp_sweep_columns[6] */
    for (size_t i = 0; i < n; i++)
        total += t[i]->nrows;
    struct mrow *m = calloc(total + 1, sizeof *m);
    struct qp_strmap seen;
    qp_strmap_init(&seen);
    enum qp_status st = m ? QP_OK : qp_fail(err, QP_E_NOMEM, "out of memory");
    size_t k = 0;
    *dups = 0;
    for (size_t i = 0; !st && i < n; i++)
        for (size_t r = 0; !st && r < t[i]->nrows; r++) {
            char **f = t[i]->rows[r];
            struct mrow row = {t[i], r, i, 0};
            bool existing = false;
            size_t j;
            if (!parse_index(f[0], &row.index))
                st = qp_fail(err, QP_E_FORMAT, "'%s' row %zu: index '%s' is not "
                             "a whole number", in[i], r + 1, f[0]);
            if (!st)
                st = qp_strmap_put(&seen, f[hash_col], k, &existing, err);
            if (st || !existing) {
                m[k++] = row;
                continue;
            }
            qp_strmap_get(&seen, f[hash_col], &j);
            long c = differs(&m[j], &row);
            if (c >= 0)
                st = qp_fail(err, QP_E_FORMAT, "conflicting rows for '%s' (hash "
                             "%.12s): '%s' row %zu and '%s' row %zu differ in %s "
                             "('%s' vs '%s')", f[1], f[hash_col], in[m[j].file],
                             m[j].row + 1, in[i], r + 1, qp_sweep_columns[c],
                             m[j].t->rows[m[j].row][c], f[c]);
            (*dups)++;
        }
    qp_strmap_release(&seen);
    if (st) {
        free(m);
        return st;
    }
    qsort(m, k, sizeof *m, cmp_index);
    *out = m;
    *nout = k;
    return QP_OK;
}

enum qp_status qp_sweep_merge(const char *const *in, size_t n, const char *out,
                              size_t *rows, size_t *dups, struct qp_error *err)
{
    struct qp_csv **t = calloc(n + 1, sizeof *t);
    struct mrow *m = NULL;
    size_t nm = 0, nd = 0;
    enum qp_status st = t ? QP_OK : qp_fail(err, QP_E_NOMEM, "out of memory");
    for (size_t i = 0; !st && i < n; i++)
        st = load_input(in[i], &t[i], err);
    if (!st)
        st = collect(t, n, in, &m, &nm, &nd, err);
    struct qp_csv_writer *w = NULL;
    if (!st)
        st = qp_csv_open(out, &w, err);
    if (!st) {
        header(w);
        for (size_t k = 0; k < nm; k++)
            qp_csv_row(w, (const char *const *)m[k].t->rows[m[k].row], QP_SWEEP_NCOLS);
        st = qp_csv_commit(w, err);
    }
    if (rows)
        *rows = nm;
    if (dups)
        *dups = nd;
    free(m);
    for (size_t i = 0; t && i < n; i++)
        qp_csv_free(t[i]);
    free(t);
    return st;
}
