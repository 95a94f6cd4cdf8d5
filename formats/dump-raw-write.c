/* formats/dump-raw-write.c: the raw directory writer (formats/dump-raw.h):
 * one NAME.raw file per tensor (name escaped as in npy directories) and
 * the index JSON, in a temporary folder renamed into place at commit. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fileio.h"
#include "core/outfile.h"
#include "formats/dump-raw.h"
#include "formats/json.h"

struct raw_writer {
    struct qp_outdir *od;
    struct qp_json *index, *meta, *tensors; /* meta, tensors: in index */
};

static void raww_free(struct raw_writer *rw)
{
    qp_json_free(rw->index);
    free(rw);
}

static enum qp_status raww_open(struct qp_dump_writer *w, struct qp_error *err)
{
    struct raw_writer *rw = calloc(1, sizeof *rw);
    if (!rw)
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    size_t len = strlen(w->path);
    while (len > 1 && w->path[len - 1] == '/')
        w->path[--len] = '\0';
    rw->index = qp_json_new_object();
    if (!rw->index || !qp_json_add_num(rw->index, "qprobe_raw", 1) ||
        !(rw->meta = qp_json_add_object(rw->index, "metadata")) ||
        !(rw->tensors = qp_json_add_object(rw->index, "tensors"))) {
        raww_free(rw);
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    }
    enum qp_status st = qp_outdir_open(w->path, &rw->od, err);
    if (st) {
        raww_free(rw);
        return st;
    }
    w->impl = rw;
    return QP_OK;
}

static bool add_ints(struct qp_json *arr, const int32_t *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!qp_json_add_num(arr, NULL, v[i]))
            return false;
    return true;
}

/* The index entry of t. */
static enum qp_status describe(struct raw_writer *rw, const struct qp_tensor *t,
                               const char *file, struct qp_error *err)
{
    struct qp_json *o = qp_json_add_object(rw->tensors, t->name), *sh;
    bool ok = o && qp_json_add_str(o, "file", file) &&
              qp_json_add_str(o, "dtype", qp_dtype_name(t->dtype)) &&
              (sh = qp_json_add_array(o, "shape"));
    for (int i = 0; ok && i < t->ndim; i++)
        ok = qp_json_add_num(sh, NULL, (double)t->shape[i]) != NULL;
    if (ok && t->layout)
        ok = qp_json_add_str(o, "layout", t->layout) != NULL;
    const struct qp_qparams *q = t->qp;
    if (ok && q && qp_dtype_is_int(t->dtype)) {
        struct qp_json *sc = qp_json_add_array(o, "scale"), *zp = NULL;
        ok = sc != NULL;
        for (size_t i = 0; ok && i < q->count; i++) {
            if (!isfinite(q->scale[i]))
                return qp_fail(err, QP_E_UNSUPPORTED, "tensor '%s': scale %zu is "
                               "not finite, which JSON cannot hold", t->name, i);
            ok = qp_json_add_num(sc, NULL, q->scale[i]) != NULL;
        }
        if (ok && q->zero_point)
            ok = (zp = qp_json_add_array(o, "zero_point")) &&
                 add_ints(zp, q->zero_point, q->count);
        ok = ok && qp_json_add_num(o, "axis", q->axis) &&
             qp_json_add_num(o, "block_size", (double)q->block_size);
    }
    return ok ? QP_OK : qp_fail(err, QP_E_NOMEM, "out of memory");
}

static enum qp_status raww_add(struct qp_dump_writer *w, const struct qp_tensor *t,
                               struct qp_error *err)
{
    struct raw_writer *rw = w->impl;
    char *file = qp_dump_escape_name(t->name, ".raw");
    char *full = file ? qp_path_join(rw->od->tmp_path, file) : NULL;
    enum qp_status st = full ? QP_OK : qp_fail(err, QP_E_NOMEM, "out of memory");
    FILE *fp = NULL;
    if (!st && !(fp = fopen(full, "wb")))
        st = qp_fail(err, QP_E_IO, "'%s': cannot write: %s", file, strerror(errno));
    if (!st && t->nbytes && fwrite(t->data, 1, t->nbytes, fp) != t->nbytes)
        st = qp_fail(err, QP_E_IO, "'%s': write failed: %s", file,
                     strerror(errno));
    if (fp && fclose(fp) != 0 && !st)
        st = qp_fail(err, QP_E_IO, "'%s': write failed: %s", file,
                     strerror(errno));
    if (!st)
        st = describe(rw, t, file, err);
    free(file);
    free(full);
    return st ? qp_error_prefix(err, "'%s': ", w->path) : QP_OK;
}

static enum qp_status raww_commit(struct qp_dump_writer *w, struct qp_error *err)
{
    struct raw_writer *rw = w->impl;
    char *ipath = qp_path_join(rw->od->tmp_path, QP_RAW_INDEX);
    enum qp_status st = ipath && qp_dump_meta_to_json(&w->meta, rw->meta)
                            ? qp_json_save(ipath, rw->index, true, err)
                            : qp_fail(err, QP_E_NOMEM, "out of memory");
    free(ipath);
    if (st) {
        qp_error_rename(err, rw->od->tmp_path, w->path);
        qp_outdir_abort(rw->od);
    }
    else
        st = qp_outdir_commit(rw->od, err);
    raww_free(rw);
    return st;
}

static void raww_abort(struct qp_dump_writer *w)
{
    struct raw_writer *rw = w->impl;
    qp_outdir_abort(rw->od);
    raww_free(rw);
}

const struct qp_dump_writer_ops qp_dump_writer_ops_raw_dir = {
    "raw-dir", raww_open, raww_add, raww_commit, raww_abort,
};
