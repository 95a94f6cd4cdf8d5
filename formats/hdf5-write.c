/* formats/hdf5-write.c: the HDF5 dump writer (formats/hdf5.h). HDF5 writes
 * the temporary file of core/outfile.h in place; commit closes it and
 * renames it over the output. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/outfile.h"
#include "formats/dump.h"
#include "formats/hdf5.h"

struct h5_writer {
    struct qp_outfile *of;
    hid_t file, gcpl, lcpl;
};

static void h5w_free(struct h5_writer *hw)
{
    qp_h5_close(3, (hid_t[]){hw->gcpl, hw->lcpl, hw->file});
    qp_outfile_abort(hw->of);
    free(hw);
}

static enum qp_status h5w_open(struct qp_dump_writer *w, struct qp_error *err)
{
    qp_h5_quiet();
    struct h5_writer *hw = calloc(1, sizeof *hw);
    if (!hw)
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    hw->file = hw->gcpl = hw->lcpl = H5I_INVALID_HID;
    enum qp_status st = qp_outfile_open(w->path, &hw->of, err);
    if (st) {
        free(hw);
        return st;
    }
    unsigned order = H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED;
    hid_t fcpl = H5Pcreate(H5P_FILE_CREATE), fapl = H5Pcreate(H5P_FILE_ACCESS);
    hw->gcpl = H5Pcreate(H5P_GROUP_CREATE);
    hw->lcpl = H5Pcreate(H5P_LINK_CREATE);
    if (fcpl < 0 || fapl < 0 || hw->gcpl < 0 || hw->lcpl < 0 ||
        H5Pset_link_creation_order(fcpl, order) < 0 ||
        H5Pset_attr_creation_order(fcpl, order) < 0 ||
        H5Pset_link_creation_order(hw->gcpl, order) < 0 ||
        H5Pset_char_encoding(hw->lcpl, H5T_CSET_UTF8) < 0 ||
        /* the 1.8 format stores attributes over 64 KiB (many scales) */
        H5Pset_libver_bounds(fapl, H5F_LIBVER_V18, H5F_LIBVER_V18) < 0 ||
        (hw->file = H5Fcreate(hw->of->tmp_path, H5F_ACC_TRUNC, fcpl, fapl)) < 0) {
        char what[600];
        snprintf(what, sizeof what, "'%s': cannot create", w->path);
        st = qp_h5_fail(err, QP_E_IO, what);
    }
    qp_h5_close(2, (hid_t[]){fcpl, fapl});
    if (st) {
        h5w_free(hw);
        return st;
    }
    w->impl = hw;
    return QP_OK;
}

/* A name is a path of groups when no component is empty, "." or "..". */
static bool path_name(const char *name)
{
    for (const char *p = name;;) {
        const char *s = strchr(p, '/');
        size_t len = s ? (size_t)(s - p) : strlen(p);
        if (!len || (p[0] == '.' && (len == 1 || (len == 2 && p[1] == '.'))))
            return false;
        if (!s)
            return true;
        p = s + 1;
    }
}

/* Link `comp` of g: 1 a group, 0 absent, -1 something else. */
static int link_kind(hid_t g, const char *comp)
{
    htri_t ex = H5Lexists(g, comp, H5P_DEFAULT);
    if (ex <= 0)
        return ex < 0 ? -1 : 0;
    H5O_info_t oi;
    if (H5Oget_info_by_name2(g, comp, &oi, H5O_INFO_BASIC, H5P_DEFAULT) < 0)
        return -1;
    return oi.type == H5O_TYPE_GROUP ? 1 : -1;
}

/* The group (*parent, to close) and link name (*leaf, malloc'd) of tensor
 * name: its path when possible (leading '/' dropped, as in ONNX names),
 * else an escaped name at the root. *renamed: the reader would rebuild
 * another name from the path, so the dataset needs a "name" attribute. */
static enum qp_status place(struct h5_writer *hw, const char *name, hid_t *parent,
                            char **leaf, bool *renamed, struct qp_error *err)
{
    const char *rel = name;
    while (*rel == '/')
        rel++;
    char *copy = strdup(rel);
    hid_t g = H5Gopen2(hw->file, "/", H5P_DEFAULT);
    bool esc = !path_name(rel), *escaped = &esc;
    *leaf = NULL;
    *renamed = rel != name;
    if (!copy || g < 0) {
        free(copy);
        if (g >= 0)
            H5Gclose(g);
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    }
    char *comp = copy;
    for (char *s; !*escaped && (s = strchr(comp, '/')); comp = s + 1) {
        *s = '\0';
        int kind = link_kind(g, comp);
        hid_t ng = kind == 1   ? H5Gopen2(g, comp, H5P_DEFAULT)
                   : kind == 0 ? H5Gcreate2(g, comp, hw->lcpl, hw->gcpl, H5P_DEFAULT)
                               : H5I_INVALID_HID;
        if (kind < 0) { /* a dataset already holds this name */
            *escaped = true;
            break;
        }
        H5Gclose(g);
        if ((g = ng) < 0) {
            free(copy);
            return qp_h5_fail(err, QP_E_IO, "cannot create group");
        }
    }
    if (!*escaped && link_kind(g, comp) != 0)
        *escaped = true; /* a group (or dataset) of that name exists */
    *renamed |= *escaped;
    if (*escaped) { /* the root, under a free escaped name */
        H5Gclose(g);
        g = H5Gopen2(hw->file, "/", H5P_DEFAULT);
        char *base = qp_dump_escape_name(name, "");
        size_t len = base ? strlen(base) + 24 : 0;
        char *cand = base ? malloc(len) : NULL;
        for (unsigned k = 0; cand; k++) {
            snprintf(cand, len, k || !*base ? "%s~%u" : "%s", base, k);
            if (link_kind(g, cand) == 0)
                break;
        }
        free(base);
        free(copy);
        if (!cand) {
            H5Gclose(g);
            return qp_fail(err, QP_E_NOMEM, "out of memory");
        }
        *leaf = cand;
    } else {
        *leaf = strdup(comp);
        free(copy);
    }
    *parent = g;
    return *leaf ? QP_OK : qp_fail(err, QP_E_NOMEM, "out of memory");
}

/* Writes count values of mem type as an attribute of file type (count 0:
 * a scalar). */
static enum qp_status put_num_attr(hid_t obj, const char *name, hid_t ftype,
                                   hid_t mtype, size_t count, const void *v,
                                   const char *what, struct qp_error *err)
{
    hsize_t n = count;
    hid_t sp = count ? H5Screate_simple(1, &n, NULL) : H5Screate(H5S_SCALAR);
    hid_t a = sp < 0 ? H5I_INVALID_HID
                     : H5Acreate2(obj, name, ftype, sp, H5P_DEFAULT, H5P_DEFAULT);
    enum qp_status st = a < 0 || H5Awrite(a, mtype, v) < 0
                            ? qp_h5_fail(err, QP_E_IO, what)
                            : QP_OK;
    qp_h5_close(2, (hid_t[]){a, sp});
    return st;
}

static enum qp_status put_attrs(hid_t ds, const struct qp_tensor *t, bool renamed,
                                const char *what, struct qp_error *err)
{
    enum qp_status st = QP_OK;
    if (qp_dtype_is_packed(t->dtype))
        st = qp_h5_put_str_attr(ds, "dtype", qp_dtype_name(t->dtype), what, err);
    if (!st && renamed)
        st = qp_h5_put_str_attr(ds, "name", t->name, what, err);
    if (!st && t->layout)
        st = qp_h5_put_str_attr(ds, "layout", t->layout, what, err);
    const struct qp_qparams *q = t->qp;
    if (st || !q || !qp_dtype_is_int(t->dtype))
        return st;
    int32_t axis = q->axis;
    int64_t block = q->block_size;
    st = put_num_attr(ds, "scale", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, q->count,
                      q->scale, what, err);
    if (!st && q->zero_point) {
        /* stored in the narrowest type holding them; read back as int32 */
        enum qp_dtype zt = qp_dtype_narrowest_int(q->zero_point, q->count);
        hid_t ft = zt == QP_DTYPE_U8 ? H5T_STD_U8LE : zt == QP_DTYPE_I8 ? H5T_STD_I8LE
                 : zt == QP_DTYPE_U16 ? H5T_STD_U16LE
                 : zt == QP_DTYPE_I16 ? H5T_STD_I16LE : H5T_STD_I32LE;
        st = put_num_attr(ds, "zero_point", ft, H5T_NATIVE_INT32, q->count,
                          q->zero_point, what, err);
    }
    if (!st)
        st = put_num_attr(ds, "axis", H5T_STD_I32LE, H5T_NATIVE_INT32, 0, &axis,
                          what, err);
    if (!st)
        st = put_num_attr(ds, "block_size", H5T_STD_I64LE, H5T_NATIVE_INT64, 0,
                          &block, what, err);
    return st;
}

static enum qp_status h5w_add(struct qp_dump_writer *w, const struct qp_tensor *t,
                              struct qp_error *err)
{
    qp_h5_quiet();
    struct h5_writer *hw = w->impl;
    char what[700];
    snprintf(what, sizeof what, "'%s': dataset '%s'", w->path, t->name);
    hid_t parent = H5I_INVALID_HID, ds = H5I_INVALID_HID, sp = H5I_INVALID_HID;
    char *leaf = NULL;
    bool renamed = false;
    enum qp_status st = place(hw, t->name, &parent, &leaf, &renamed, err);
    size_t n = qp_tensor_numel(t);
    hid_t type = qp_h5_type(t->dtype);
    hsize_t dims[QP_MAX_DIMS];
    for (int i = 0; i < t->ndim; i++)
        dims[i] = (hsize_t)t->shape[i];
    int8_t *unpacked = NULL;
    if (!st && qp_dtype_is_packed(t->dtype)) { /* one value per byte */
        if (!(unpacked = malloc(n + 1)))
            st = qp_fail(err, QP_E_NOMEM, "out of memory");
        for (size_t i = 0; !st && i < n; i++)
            unpacked[i] = (int8_t)qp_packed_get(t->dtype, t->data, i);
    }
    if (!st && (type < 0 ||
                (sp = t->ndim ? H5Screate_simple(t->ndim, dims, NULL)
                              : H5Screate(H5S_SCALAR)) < 0 ||
                (ds = H5Dcreate2(parent, leaf, type, sp, hw->lcpl, H5P_DEFAULT,
                                 H5P_DEFAULT)) < 0 ||
                (n && H5Dwrite(ds, type, H5S_ALL, H5S_ALL, H5P_DEFAULT,
                               unpacked ? (void *)unpacked : t->data) < 0)))
        st = qp_h5_fail(err, QP_E_IO, what);
    if (!st)
        st = put_attrs(ds, t, renamed, what, err);
    free(unpacked);
    free(leaf);
    qp_h5_close(4, (hid_t[]){ds, sp, type, parent});
    return st;
}

static enum qp_status h5w_commit(struct qp_dump_writer *w, struct qp_error *err)
{
    qp_h5_quiet();
    struct h5_writer *hw = w->impl;
    char what[600];
    snprintf(what, sizeof what, "'%s': metadata", w->path);
    hid_t root = H5Gopen2(hw->file, "/", H5P_DEFAULT);
    enum qp_status st = root < 0 ? qp_h5_fail(err, QP_E_IO, what) : QP_OK;
    for (size_t i = 0; !st && i < w->meta.count; i++)
        st = qp_h5_put_str_attr(root, w->meta.keys[i], w->meta.values[i], what, err);
    if (root >= 0)
        H5Gclose(root);
    snprintf(what, sizeof what, "'%s': cannot write", w->path);
    if (H5Fclose(hw->file) < 0 && !st)
        st = qp_h5_fail(err, QP_E_IO, what);
    hw->file = H5I_INVALID_HID;
    if (!st) {
        st = qp_outfile_commit(hw->of, err);
        hw->of = NULL;
    }
    h5w_free(hw);
    return st;
}

static void h5w_abort(struct qp_dump_writer *w)
{
    h5w_free(w->impl);
}

const struct qp_dump_writer_ops qp_dump_writer_ops_hdf5 = {
    "h5", h5w_open, h5w_add, h5w_commit, h5w_abort,
};
