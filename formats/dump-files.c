#include "formats/dump-files.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/fileio.h"
#include "core/outfile.h"

#define ORDER_FILE ".qprobe-order" /* as read by qp_dump_scan_dir */

/* ---- reading ------------------------------------------------------------ */

struct listing {
    qp_dump_file_reader read;
    char **paths, **names; /* by backing index; names NULL for a file */
    size_t n;
};

void qp_dump_files_close(struct qp_dump *d)
{
    struct listing *l = d->impl;
    if (!l)
        return;
    for (size_t i = 0; i < l->n; i++) {
        free(l->paths[i]);
        free(l->names[i]);
    }
    free(l->paths);
    free(l->names);
    free(l);
    d->impl = NULL;
}

enum qp_status qp_dump_files_read(struct qp_dump *d, bool dir, const char *ext,
                                  qp_dump_file_reader read,
                                  struct qp_error *err)
{
    char **rel = NULL, dot[16];
    size_t n = 1;
    snprintf(dot, sizeof dot, ".%s", ext);
    enum qp_status st = dir ? qp_dump_scan_dir(d->path, dot, &rel, &n, err)
                            : QP_OK;
    if (st)
        return st;
    struct listing *l = calloc(1, sizeof *l);
    d->impl = l;
    d->entries = calloc(n ? n : 1, sizeof *d->entries);
    if (l) {
        l->read = read;
        l->paths = calloc(n ? n : 1, sizeof *l->paths);
        l->names = calloc(n ? n : 1, sizeof *l->names);
    }
    if (!l || !l->paths || !l->names || !d->entries)
        st = qp_fail(err, QP_E_NOMEM, "out of memory");
    for (size_t i = 0; i < n && !st; i++) {
        l->n = i + 1;
        if (rel) {
            l->paths[i] = qp_path_join(d->path, rel[i]);
            rel[i][strlen(rel[i]) - strlen(dot)] = '\0';
            qp_dump_unescape_name(rel[i]);
            l->names[i] = rel[i];
            rel[i] = NULL;
        } else {
            l->paths[i] = strdup(d->path);
        }
        if (!l->paths[i]) {
            st = qp_fail(err, QP_E_NOMEM, "out of memory");
            break;
        }
        st = read(l->paths[i], l->names[i], true, &d->entries[i], err);
        if (!st)
            d->count = i + 1;
    }
    for (size_t i = 0; rel && i < n; i++)
        free(rel[i]);
    free(rel);
    if (!st && dir)
        st = qp_dump_attach_companions(d, err);
    return st;
}

enum qp_status qp_dump_files_load(struct qp_dump *d, size_t i,
                                  struct qp_tensor **out, struct qp_error *err)
{
    struct listing *l = d->impl;
    return l->read(l->paths[i], l->names[i], false, out, err);
}

/* ---- writing ------------------------------------------------------------ */

struct files {
    qp_dump_file_writer write;
    char ext[16];           /* ".pb" */
    struct qp_outdir *od;   /* directory form */
    FILE *order;
    struct qp_outfile *of;  /* single-file form */
    int count;
};

enum qp_status qp_dump_files_open(struct qp_dump_writer *w, bool dir,
                                  const char *ext, qp_dump_file_writer write,
                                  struct qp_error *err)
{
    struct files *f = calloc(1, sizeof *f);
    if (!f)
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    f->write = write;
    snprintf(f->ext, sizeof f->ext, ".%s", ext);
    enum qp_status st;
    if (!dir) {
        st = qp_outfile_open(w->path, &f->of, err);
    } else {
        size_t len = strlen(w->path);
        while (len > 1 && w->path[len - 1] == '/')
            w->path[--len] = '\0';
        st = qp_outdir_open(w->path, &f->od, err);
        char *op = st ? NULL : qp_path_join(f->od->tmp_path, ORDER_FILE);
        if (!st && !(f->order = op ? fopen(op, "w") : NULL)) {
            st = qp_fail(err, QP_E_IO, "'%s': cannot write", w->path);
            qp_outdir_abort(f->od);
        }
        free(op);
    }
    if (st) {
        free(f);
        return st;
    }
    w->impl = f;
    return QP_OK;
}

static enum qp_status write_one(struct files *f, const struct qp_tensor *t,
                                struct qp_error *err)
{
    char *file = qp_dump_escape_name(t->name, f->ext);
    char *full = file ? qp_path_join(f->od->tmp_path, file) : NULL;
    enum qp_status st = full ? QP_OK : qp_fail(err, QP_E_NOMEM, "out of memory");
    FILE *fp = NULL;
    if (!st && !(fp = fopen(full, "wb")))
        st = qp_fail(err, QP_E_IO, "cannot write '%s': %s", file, strerror(errno));
    if (!st)
        st = f->write(fp, t, err);
    if (fp && fclose(fp) != 0 && !st)
        st = qp_fail(err, QP_E_IO, "'%s': write failed", file);
    if (!st && fprintf(f->order, "%s\n", file) < 0)
        st = qp_fail(err, QP_E_IO, "order file: write failed");
    free(file);
    free(full);
    return st;
}

enum qp_status qp_dump_files_add(struct qp_dump_writer *w,
                                 const struct qp_tensor *t,
                                 struct qp_error *err)
{
    struct files *f = w->impl;
    enum qp_status st;
    if (f->of) {
        if (f->count++)
            return qp_fail(err, QP_E_INVAL, "'%s': a %s file holds one "
                           "tensor; use a directory for a dump", w->path,
                           f->ext);
        if (t->qp)
            return qp_fail(err, QP_E_UNSUPPORTED, "'%s': a %s file cannot "
                           "carry the quantization parameters of '%s'",
                           w->path, f->ext, t->name);
        st = f->write(f->of->fp, t, err);
    } else {
        st = write_one(f, t, err);
        if (!st && t->qp && qp_dtype_is_int(t->dtype)) {
            struct qp_tensor *s, *z;
            st = qp_dump_companions(t, &s, &z, err);
            if (!st)
                st = write_one(f, s, err);
            if (!st && z)
                st = write_one(f, z, err);
            qp_tensor_free(s);
            qp_tensor_free(z);
        }
    }
    return st ? qp_error_prefix(err, "'%s': ", w->path) : QP_OK;
}

enum qp_status qp_dump_files_commit(struct qp_dump_writer *w,
                                    struct qp_error *err)
{
    struct files *f = w->impl;
    enum qp_status st;
    if (f->of && f->count != 1) {
        qp_outfile_abort(f->of);
        st = qp_fail(err, QP_E_INVAL, "'%s': no tensor written", w->path);
    } else if (f->of) {
        st = qp_outfile_commit(f->of, err);
    } else if (fclose(f->order) != 0) {
        st = qp_fail(err, QP_E_IO, "'%s': write failed", w->path);
        qp_outdir_abort(f->od);
    } else {
        st = qp_outdir_commit(f->od, err);
    }
    free(f);
    return st;
}

void qp_dump_files_abort(struct qp_dump_writer *w)
{
    struct files *f = w->impl;
    if (f->of) {
        qp_outfile_abort(f->of);
    } else {
        fclose(f->order);
        qp_outdir_abort(f->od);
    }
    free(f);
}
