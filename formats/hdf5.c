/* formats/hdf5.c: HDF5 helpers and the dump reader (formats/hdf5.h). */
#include "formats/hdf5.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "formats/dump.h"
#include "formats/hdf5-reader.h"

/* ---- shared helpers --------------------------------------------------------- */

/* libhdf5 1.10 closes at exit what is still open, and crashes closing a
 * dataset whose flush failed (a full disk, RLIMIT_FSIZE): the files are
 * closed by qprobe itself, and left to the kernel after a failure. Runs
 * before anything initializes the library. */
__attribute__((constructor)) static void h5_no_exit_handler(void)
{
    H5dont_atexit();
}

void qp_h5_quiet(void)
{
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
}

void qp_h5_close(size_t n, const hid_t *ids)
{
    for (size_t i = 0; i < n; i++)
        if (ids[i] >= 0)
            H5Idec_ref(ids[i]);
}

struct h5_msg {
    char inner[256], outer[256];
    int sys_errno; /* from a system call's failure, 0 if none */
};

static herr_t walk_msg(unsigned n, const H5E_error2_t *e, void *data)
{
    struct h5_msg *m = data;
    const char *en = e->desc ? strstr(e->desc, "errno = ") : NULL;
    if (en && !m->sys_errno)
        m->sys_errno = atoi(en + 8);
    if (e->desc && *e->desc)
        snprintf(n == 0 ? m->inner : m->outer, sizeof m->inner, "%s", e->desc);
    return 0;
}

enum qp_status qp_h5_fail(struct qp_error *err, enum qp_status status,
                          const char *prefix)
{
    struct h5_msg m = {"", "", 0};
    H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, walk_msg, &m);
    H5Eclear2(H5E_DEFAULT);
    /* a failed read or write: its reason, not HDF5's record of the call
     * (which names the temporary file, the descriptor and the buffer) */
    if (m.sys_errno > 0)
        return qp_fail(err, status, "%s: %s", prefix, strerror(m.sys_errno));
    if (!*m.inner)
        return qp_fail(err, status, "%s", prefix);
    if (!*m.outer || !strcmp(m.inner, m.outer))
        return qp_fail(err, status, "%s: %s", prefix, m.inner);
    return qp_fail(err, status, "%s: %s (%s)", prefix, m.outer, m.inner);
}

/* Float layouts by dtype: bytes, sign/exponent/mantissa positions, bias. */
static const struct {
    enum qp_dtype dtype;
    size_t size, spos, epos, esize, mpos, msize, bias;
} float_layouts[] = {
    {QP_DTYPE_F32, 4, 31, 23, 8, 0, 23, 127},
    {QP_DTYPE_F64, 8, 63, 52, 11, 0, 52, 1023},
    {QP_DTYPE_F16, 2, 15, 10, 5, 0, 10, 15},
    {QP_DTYPE_BF16, 2, 15, 7, 8, 0, 7, 127},
    {QP_DTYPE_F8E4M3, 1, 7, 3, 4, 0, 3, 7},
    {QP_DTYPE_F8E5M2, 1, 7, 2, 5, 0, 2, 15},
};

static hid_t float_type(size_t k)
{
    if (float_layouts[k].dtype == QP_DTYPE_F32)
        return H5Tcopy(H5T_IEEE_F32LE);
    if (float_layouts[k].dtype == QP_DTYPE_F64)
        return H5Tcopy(H5T_IEEE_F64LE);
    hid_t t = H5Tcopy(H5T_IEEE_F32LE); /* narrowed the way h5py makes f16 */
    if (t < 0 || H5Tset_fields(t, float_layouts[k].spos, float_layouts[k].epos,
                               float_layouts[k].esize, float_layouts[k].mpos,
                               float_layouts[k].msize) < 0 ||
        H5Tset_size(t, float_layouts[k].size) < 0 ||
        H5Tset_ebias(t, float_layouts[k].bias) < 0) {
        if (t >= 0)
            H5Tclose(t);
        return H5I_INVALID_HID;
    }
    return t;
}

hid_t qp_h5_type(enum qp_dtype dtype)
{
    for (size_t k = 0; k < sizeof float_layouts / sizeof float_layouts[0]; k++)
        if (float_layouts[k].dtype == dtype)
            return float_type(k);
    switch (dtype) {
    case QP_DTYPE_I8:
    case QP_DTYPE_I4:
    case QP_DTYPE_I3:
    case QP_DTYPE_I2: return H5Tcopy(H5T_STD_I8LE);
    case QP_DTYPE_U8:
    case QP_DTYPE_U4:
    case QP_DTYPE_U3:
    case QP_DTYPE_U2: return H5Tcopy(H5T_STD_U8LE);
    case QP_DTYPE_I16: return H5Tcopy(H5T_STD_I16LE);
    case QP_DTYPE_U16: return H5Tcopy(H5T_STD_U16LE);
    case QP_DTYPE_I32: return H5Tcopy(H5T_STD_I32LE);
    case QP_DTYPE_U32: return H5Tcopy(H5T_STD_U32LE);
    case QP_DTYPE_I64: return H5Tcopy(H5T_STD_I64LE);
    case QP_DTYPE_U64: return H5Tcopy(H5T_STD_U64LE);
    case QP_DTYPE_BOOL: { /* h5py's bool */
        hid_t t = H5Tenum_create(H5T_NATIVE_INT8);
        int8_t f = 0, v = 1;
        if (t < 0 || H5Tenum_insert(t, "FALSE", &f) < 0 ||
            H5Tenum_insert(t, "TRUE", &v) < 0) {
            if (t >= 0)
                H5Tclose(t);
            return H5I_INVALID_HID;
        }
        return t;
    }
    default: return H5I_INVALID_HID;
    }
}

/* Opens attribute name of obj with its type and space: *found false (and
 * QP_OK) when obj has none. Close with qp_h5_close(3, ids). */
static enum qp_status attr_open(hid_t obj, const char *name, const char *what,
                                hid_t ids[3], bool *found, struct qp_error *err)
{
    ids[0] = ids[1] = ids[2] = H5I_INVALID_HID;
    htri_t ex = H5Aexists(obj, name);
    *found = ex > 0;
    if (ex <= 0)
        return ex < 0 ? qp_h5_fail(err, QP_E_FORMAT, what) : QP_OK;
    if ((ids[0] = H5Aopen(obj, name, H5P_DEFAULT)) < 0 ||
        (ids[1] = H5Aget_type(ids[0])) < 0 || (ids[2] = H5Aget_space(ids[0])) < 0) {
        qp_h5_close(3, ids);
        return qp_h5_fail(err, QP_E_FORMAT, what);
    }
    return QP_OK;
}

/* The value of obj's string attribute `name` into a malloc'd *out. Our
 * string attributes (name, layout, dtype; the root's metadata) may mean
 * something else in files from other tools: *out is NULL when obj has no
 * such attribute or its value is not one string. */
static enum qp_status opt_str_attr(hid_t obj, const char *name, const char *what,
                                   char **out, struct qp_error *err)
{
    *out = NULL;
    hid_t ids[3], mt = H5I_INVALID_HID;
    bool found;
    enum qp_status st = attr_open(obj, name, what, ids, &found, err);
    if (st || !found)
        return st;
    hid_t a = ids[0], t = ids[1], sp = ids[2];
    if (H5Tget_class(t) != H5T_STRING || H5Sget_simple_extent_npoints(sp) != 1) {
        /* not ours: ignored */
    } else if (H5Tis_variable_str(t) > 0) {
        char *s = NULL;
        mt = H5Tcopy(H5T_C_S1);
        if (mt < 0 || H5Tset_size(mt, H5T_VARIABLE) < 0 ||
            H5Tset_cset(mt, H5Tget_cset(t)) < 0 || H5Aread(a, mt, &s) < 0)
            st = qp_h5_fail(err, QP_E_FORMAT, what);
        else if (!(*out = strdup(s ? s : "")))
            st = qp_fail(err, QP_E_NOMEM, "out of memory");
        H5free_memory(s);
    } else {
        size_t n = H5Tget_size(t);
        char *s = calloc(1, n + 1);
        mt = H5Tcopy(t);
        if (!s)
            st = qp_fail(err, QP_E_NOMEM, "out of memory");
        else if (mt < 0 || H5Aread(a, mt, s) < 0)
            st = qp_h5_fail(err, QP_E_FORMAT, what);
        if (!st && H5Tget_strpad(t) == H5T_STR_SPACEPAD)
            while (n && s[n - 1] == ' ')
                s[--n] = '\0';
        if (st)
            free(s);
        else
            *out = s; /* NUL-terminated at the first NUL or the end */
    }
    qp_h5_close(1, &mt);
    qp_h5_close(3, ids);
    return st;
}

enum qp_status qp_h5_put_str_attr(hid_t obj, const char *name, const char *value,
                                  const char *what, struct qp_error *err)
{
    hid_t t = H5Tcopy(H5T_C_S1);
    hid_t sp = H5Screate(H5S_SCALAR);
    hid_t a = H5I_INVALID_HID;
    enum qp_status st = QP_OK;
    if (t < 0 || sp < 0 || H5Tset_size(t, H5T_VARIABLE) < 0 ||
        H5Tset_cset(t, H5T_CSET_UTF8) < 0 ||
        (a = H5Acreate2(obj, name, t, sp, H5P_DEFAULT, H5P_DEFAULT)) < 0 ||
        H5Awrite(a, t, &value) < 0)
        st = qp_h5_fail(err, QP_E_IO, what);
    qp_h5_close(3, (hid_t[]){a, sp, t});
    return st;
}

/* ---- reader ------------------------------------------------------------------ */

static const char *class_name(H5T_class_t c)
{
    switch (c) {
    case H5T_INTEGER: return "integer";
    case H5T_FLOAT: return "float";
    case H5T_STRING: return "string";
    case H5T_COMPOUND: return "compound";
    case H5T_BITFIELD: return "bitfield";
    case H5T_OPAQUE: return "opaque";
    case H5T_REFERENCE: return "reference";
    case H5T_ENUM: return "enum";
    case H5T_VLEN: return "variable-length";
    case H5T_ARRAY: return "array";
    case H5T_TIME: return "time";
    default: return "unknown";
    }
}

/* h5py's bool: a 1-byte enum {FALSE = 0, TRUE = 1}. */
static bool is_h5py_bool(hid_t t)
{
    if (H5Tget_size(t) != 1 || H5Tget_nmembers(t) != 2)
        return false;
    for (unsigned i = 0; i < 2; i++) {
        char *name = H5Tget_member_name(t, i);
        int8_t v = -1;
        bool ok = name && !strcasecmp(name, i ? "TRUE" : "FALSE") &&
                  H5Tget_member_value(t, i, &v) >= 0 && v == (int8_t)i;
        H5free_memory(name);
        if (!ok)
            return false;
    }
    return true;
}

/* The exponent and mantissa widths of a float type (0 for an integer). */
struct h5_bits {
    size_t esize, msize;
};

/* Whether number type t of class c (integer or float) and size bytes
 * keeps its bits inside its bytes; b gets the float's field widths, why
 * (n bytes) which bits lie outside when they do not. Such a type
 * (precision 65535 at offset 65535 in 2 bytes, say) is malformed:
 * libhdf5 opens it and then converts it bit by bit, seconds for a few
 * kilobytes of file. A type of fewer bits than bytes (n-bit data) is
 * fine. */
static bool bits_fit(hid_t t, H5T_class_t c, size_t size, struct h5_bits *b,
                     char *why, size_t n)
{
    size_t prec = H5Tget_precision(t), bits = 8 * size;
    size_t spos = 0, epos = 0, mpos = 0; /* printed even if H5Tget_fields fails */
    int off = H5Tget_offset(t);
    *b = (struct h5_bits){0};
    if (!prec || prec > bits || off < 0 || (size_t)off > bits - prec) {
        snprintf(why, n, "precision %zu, offset %d", prec, off);
        return false;
    }
    if (c != H5T_FLOAT)
        return true;
    if (H5Tget_fields(t, &spos, &epos, &b->esize, &mpos, &b->msize) < 0 ||
        spos >= bits || b->esize > bits || epos > bits - b->esize ||
        b->msize > bits || mpos > bits - b->msize) {
        snprintf(why, n, "sign at bit %zu, exponent %zu bits at %zu, mantissa "
                 "%zu bits at %zu", spos, b->esize, epos, b->msize, mpos);
        return false;
    }
    return true;
}

static enum qp_status dtype_of(hid_t t, const char *what, enum qp_dtype *out,
                               struct qp_error *err)
{
    H5T_class_t c = H5Tget_class(t);
    size_t size = H5Tget_size(t);
    struct h5_bits b;
    char why[160];
    if ((c == H5T_INTEGER || c == H5T_FLOAT) &&
        !bits_fit(t, c, size, &b, why, sizeof why))
        return qp_fail(err, QP_E_FORMAT, "%s: its %zu-byte %s type places "
                       "bits outside its bytes (%s)", what, size,
                       class_name(c), why);
    if (c == H5T_INTEGER) {
        bool sign = H5Tget_sign(t) == H5T_SGN_2;
        static const enum qp_dtype ints[2][4] = {
            {QP_DTYPE_U8, QP_DTYPE_U16, QP_DTYPE_U32, QP_DTYPE_U64},
            {QP_DTYPE_I8, QP_DTYPE_I16, QP_DTYPE_I32, QP_DTYPE_I64}};
        for (int k = 0; k < 4; k++)
            if (size == (size_t)1 << k) {
                *out = ints[sign][k];
                return QP_OK;
            }
        return qp_fail(err, QP_E_UNSUPPORTED, "%s: %zu-byte integers are not "
                       "supported", what, size);
    }
    if (c == H5T_FLOAT) {
        for (size_t k = 0; k < sizeof float_layouts / sizeof float_layouts[0]; k++)
            if (float_layouts[k].size == size && float_layouts[k].esize == b.esize &&
                float_layouts[k].msize == b.msize) {
                *out = float_layouts[k].dtype;
                return QP_OK;
            }
        return qp_fail(err, QP_E_UNSUPPORTED, "%s: %zu-byte floats with %zu "
                       "exponent and %zu mantissa bits are not supported", what,
                       size, b.esize, b.msize);
    }
    if (c == H5T_ENUM && is_h5py_bool(t)) {
        *out = QP_DTYPE_BOOL;
        return QP_OK;
    }
    return qp_fail(err, QP_E_UNSUPPORTED, "%s: HDF5 %s type is not supported",
                   what, class_name(c));
}

/* A numeric attribute of at most max values into a malloc'd buffer of
 * mem-typed values; *n = 0 when absent. */
static enum qp_status num_attr(hid_t obj, const char *name, hid_t mem,
                               size_t esize, size_t max, hsize_t fsize,
                               void **buf, size_t *n, const char *what,
                               struct qp_error *err)
{
    *buf = NULL;
    *n = 0;
    hid_t ids[3];
    bool found;
    enum qp_status st = attr_open(obj, name, what, ids, &found, err);
    if (st || !found)
        return st;
    hid_t a = ids[0];
    hssize_t np = H5Sget_simple_extent_npoints(ids[2]);
    H5T_class_t c = H5Tget_class(ids[1]);
    struct h5_bits bits;
    char why[160];
    if (np < 0)
        st = qp_h5_fail(err, QP_E_FORMAT, what);
    else if (c != H5T_INTEGER && c != H5T_FLOAT)
        st = qp_fail(err, QP_E_FORMAT, "%s: attribute '%s' is a %s, expected "
                     "numbers", what, name, class_name(c));
    else if (!bits_fit(ids[1], c, H5Tget_size(ids[1]), &bits, why, sizeof why))
        st = qp_fail(err, QP_E_FORMAT, "%s: attribute '%s' has a number type "
                     "whose bits lie outside its bytes (%s)", what, name, why);
    else if (np == 0 || (size_t)np > max)
        st = qp_fail(err, QP_E_FORMAT, "%s: attribute '%s' has %lld values, "
                     "expected 1..%zu", what, name, (long long)np, max);
    else if ((hsize_t)np * H5Tget_size(ids[1]) > fsize) /* stored as is */
        st = qp_fail(err, QP_E_FORMAT, "%s: attribute '%s' declares %lld "
                     "values, more than the file holds", what, name,
                     (long long)np);
    else if (!(*buf = malloc((size_t)np * esize)))
        st = qp_fail(err, QP_E_NOMEM, "out of memory");
    else if (H5Aread(a, mem, *buf) < 0)
        st = qp_h5_fail(err, QP_E_FORMAT, what);
    qp_h5_close(3, ids);
    if (st) {
        free(*buf);
        *buf = NULL;
    } else {
        *n = (size_t)np;
    }
    return st;
}

/* scale / zero_point / axis / block_size attributes onto an integer desc. */
static enum qp_status read_qparams(hid_t ds, struct qp_tensor *t, hsize_t fsize,
                                   const char *what, struct qp_error *err)
{
    size_t max = qp_tensor_numel(t);
    for (int i = 0; i < t->ndim; i++) /* per-axis scales of an empty tensor */
        if ((size_t)t->shape[i] > max)
            max = (size_t)t->shape[i];
    float *scale;
    int32_t *zp = NULL, *axis = NULL;
    int64_t *block = NULL;
    size_t n, nz, na, nb;
    enum qp_status st = num_attr(ds, "scale", H5T_NATIVE_FLOAT, sizeof *scale,
                                 max ? max : 1, fsize, (void **)&scale, &n,
                                 what, err);
    if (st || !n)
        return st;
    if (!(st = num_attr(ds, "zero_point", H5T_NATIVE_INT32, sizeof *zp, n,
                        fsize, (void **)&zp, &nz, what, err)) && zp && nz != n)
        st = qp_fail(err, QP_E_FORMAT, "%s: attribute 'zero_point' has %zu "
                     "values, 'scale' has %zu", what, nz, n);
    if (!st)
        st = num_attr(ds, "axis", H5T_NATIVE_INT32, sizeof *axis, 1, fsize,
                      (void **)&axis, &na, what, err);
    if (!st)
        st = num_attr(ds, "block_size", H5T_NATIVE_INT64, sizeof *block, 1,
                      fsize, (void **)&block, &nb, what, err);
    int ax = -1;
    int64_t bs = block ? *block : 0;
    if (!st && axis) {
        ax = *axis;
    } else if (!st && n > 1) { /* no axis: the first dim of length n */
        int64_t sn = (int64_t)n;
        if (!qp_qparams_infer(t->ndim, t->shape, 1, &sn, &ax, &bs) || block)
            st = qp_fail(err, QP_E_FORMAT, "%s: %zu scales but no 'axis' "
                         "attribute", what, n);
    }
    if (!st && (st = qp_tensor_set_qparams(t, n, scale, zp, ax, bs, err)))
        qp_error_prefix(err, "%s: ", what);
    free(scale);
    free(zp);
    free(axis);
    free(block);
    return st;
}

static enum qp_status push_ref(struct qp_h5_reader *r, struct qp_dump *d,
                               const char *path, struct qp_tensor *t,
                               struct qp_error *err)
{
    if (r->n == r->cap) {
        size_t cap = r->cap ? 2 * r->cap : 64;
        struct qp_h5_ref *nr = realloc(r->refs, cap * sizeof *nr);
        struct qp_tensor **ne = nr ? realloc(d->entries, cap * sizeof *ne) : NULL;
        if (nr)
            r->refs = nr;
        if (!ne)
            return qp_fail(err, QP_E_NOMEM, "out of memory");
        d->entries = ne;
        r->cap = cap;
    }
    char *p = strdup(path);
    if (!p)
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    r->refs[r->n++] = (struct qp_h5_ref){p, t->dtype};
    d->entries[d->count++] = t;
    return QP_OK;
}

/* The descriptor of dataset `path` (relative to the root). */
static enum qp_status add_dataset(struct qp_dump *d, struct qp_h5_reader *r,
                                  const char *path, struct qp_error *err)
{
    char what[700];
    snprintf(what, sizeof what, "'%s': dataset '%s'", d->path, path);
    hid_t ds = H5Dopen2(r->file, path, H5P_DEFAULT);
    hid_t t = ds < 0 ? H5I_INVALID_HID : H5Dget_type(ds);
    hid_t sp = ds < 0 ? H5I_INVALID_HID : H5Dget_space(ds);
    char *name = NULL, *packed = NULL, *layout = NULL;
    struct qp_tensor *desc = NULL;
    enum qp_dtype dtype = QP_DTYPE_F32;
    int ndim = 0;
    hsize_t dims[H5S_MAX_RANK];
    int64_t shape[QP_MAX_DIMS];
    enum qp_status st = QP_OK;
    if (ds < 0 || t < 0 || sp < 0)
        st = qp_h5_fail(err, QP_E_FORMAT, what);
    if (!st)
        st = dtype_of(t, what, &dtype, err);
    if (!st && (ndim = H5Sget_simple_extent_ndims(sp)) < 0)
        st = qp_h5_fail(err, QP_E_FORMAT, what);
    if (!st && H5Sget_simple_extent_type(sp) == H5S_NULL)
        st = qp_fail(err, QP_E_UNSUPPORTED, "%s: has no data (null dataspace)",
                     what);
    if (!st && ndim > QP_MAX_DIMS)
        st = qp_fail(err, QP_E_UNSUPPORTED, "%s: %d dims, at most %d are "
                     "supported", what, ndim, QP_MAX_DIMS);
    if (!st && H5Sget_simple_extent_dims(sp, dims, NULL) < 0)
        st = qp_h5_fail(err, QP_E_FORMAT, what);
    for (int i = 0; !st && i < ndim; i++) {
        if (dims[i] > (hsize_t)INT64_MAX)
            st = qp_fail(err, QP_E_OVERFLOW, "%s: dim %d is too large", what, i);
        shape[i] = (int64_t)dims[i];
    }
    if (!st)
        st = opt_str_attr(ds, "dtype", what, &packed, err);
    enum qp_dtype p;
    if (!st && packed && qp_dtype_from_name(packed, &p) && qp_dtype_is_packed(p)) {
        /* unpacked 2/3/4-bit values, one per 8-bit integer */
        if (!qp_dtype_is_int(dtype) || qp_dtype_traits(dtype)->bits != 8)
            st = qp_fail(err, QP_E_FORMAT, "%s: attribute dtype '%s' does not "
                         "describe %s data", what, packed, qp_dtype_name(dtype));
        dtype = p;
    }
    if (!st)
        st = opt_str_attr(ds, "name", what, &name, err);
    if (!st)
        st = opt_str_attr(ds, "layout", what, &layout, err);
    if (!st)
        st = qp_tensor_new_desc(name ? name : path, dtype, ndim, shape, &desc, err);
    if (!st && qp_dtype_is_int(dtype))
        st = read_qparams(ds, desc, r->size, what, err);
    if (!st && layout)
        st = qp_tensor_set_layout(desc, layout, err);
    if (!st)
        st = push_ref(r, d, path, desc, err);
    if (st)
        qp_tensor_free(desc);
    free(name);
    free(packed);
    free(layout);
    qp_h5_close(3, (hid_t[]){sp, t, ds});
    return st;
}

struct names {
    char **v;
    size_t n, cap;
    bool nomem;
};

static herr_t collect_link(hid_t g, const char *name, const H5L_info_t *info,
                           void *data)
{
    (void)g;
    struct names *l = data;
    if (info->type != H5L_TYPE_HARD) /* soft and external links: skipped */
        return 0;
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 16;
        char **v = realloc(l->v, cap * sizeof *v);
        if (!v) {
            l->nomem = true;
            return -1;
        }
        l->v = v;
        l->cap = cap;
    }
    if (!(l->v[l->n] = strdup(name))) {
        l->nomem = true;
        return -1;
    }
    l->n++;
    return 0;
}

static void names_free(struct names *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i]);
    free(l->v);
}

static enum qp_status walk(struct qp_dump *d, struct qp_h5_reader *r,
                           const char *gpath, int depth, struct qp_error *err);

/* Visits link `name` of group gpath: a dataset or a group to descend. */
static enum qp_status visit(struct qp_dump *d, struct qp_h5_reader *r,
                            const char *gpath, const char *name, int depth,
                            struct qp_error *err)
{
    size_t len = strlen(gpath) + strlen(name) + 2;
    char *path = malloc(len);
    if (!path)
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    snprintf(path, len, "%s%s%s", gpath, *gpath ? "/" : "", name);
    H5O_info_t oi;
    enum qp_status st = QP_OK;
    if (H5Oget_info_by_name2(r->file, path, &oi, H5O_INFO_BASIC, H5P_DEFAULT) < 0) {
        char what[700];
        snprintf(what, sizeof what, "'%s': object '%s'", d->path, path);
        st = qp_h5_fail(err, QP_E_FORMAT, what);
    } else if (oi.type == H5O_TYPE_DATASET) {
        st = add_dataset(d, r, path, err);
    } else if (oi.type == H5O_TYPE_GROUP) {
        bool seen = false;
        for (size_t i = 0; i < r->ngroups; i++)
            seen |= r->groups[i] == oi.addr;
        if (!seen && r->ngroups == r->capgroups) {
            size_t cap = r->capgroups ? 2 * r->capgroups : 16;
            haddr_t *g = realloc(r->groups, cap * sizeof *g);
            if (!g)
                st = qp_fail(err, QP_E_NOMEM, "out of memory");
            else {
                r->groups = g;
                r->capgroups = cap;
            }
        }
        if (!seen && !st) {
            r->groups[r->ngroups++] = oi.addr;
            st = walk(d, r, path, depth + 1, err);
        }
    }
    free(path);
    return st;
}

/* Lists group gpath ("" for the root): creation order when tracked. */
static enum qp_status walk(struct qp_dump *d, struct qp_h5_reader *r,
                           const char *gpath, int depth, struct qp_error *err)
{
    if (depth > 64)
        return qp_fail(err, QP_E_UNSUPPORTED, "'%s': groups nested deeper than "
                       "64 levels at '%s'", d->path, gpath);
    hid_t g = H5Gopen2(r->file, *gpath ? gpath : "/", H5P_DEFAULT);
    char what[700];
    snprintf(what, sizeof what, "'%s': group '/%s'", d->path, gpath);
    if (g < 0)
        return qp_h5_fail(err, QP_E_FORMAT, what);
    unsigned flags = 0;
    hid_t cp = H5Gget_create_plist(g);
    if (cp >= 0) {
        H5Pget_link_creation_order(cp, &flags);
        H5Pclose(cp);
    }
    struct names l = {0};
    hsize_t idx = 0;
    herr_t rc = -1;
    if (flags & H5P_CRT_ORDER_TRACKED)
        rc = H5Literate(g, H5_INDEX_CRT_ORDER, H5_ITER_INC, &idx, collect_link, &l);
    if (rc < 0 && !l.nomem) {
        names_free(&l);
        memset(&l, 0, sizeof l);
        idx = 0;
        rc = H5Literate(g, H5_INDEX_NAME, H5_ITER_INC, &idx, collect_link, &l);
    }
    H5Gclose(g);
    enum qp_status st = l.nomem ? qp_fail(err, QP_E_NOMEM, "out of memory")
                      : rc < 0  ? qp_h5_fail(err, QP_E_FORMAT, what)
                                : QP_OK;
    for (size_t i = 0; i < l.n && !st; i++)
        st = visit(d, r, gpath, l.v[i], depth, err);
    names_free(&l);
    return st;
}

static herr_t collect_attr(hid_t obj, const char *name, const H5A_info_t *info,
                           void *data)
{
    (void)obj;
    (void)info;
    H5L_info_t li = {.type = H5L_TYPE_HARD};
    return collect_link(obj, name, &li, data);
}

/* Root string attributes are the dump's metadata; others are skipped. */
static enum qp_status read_meta(struct qp_dump *d, struct qp_h5_reader *r,
                                struct qp_error *err)
{
    hid_t root = H5Gopen2(r->file, "/", H5P_DEFAULT);
    char what[600];
    snprintf(what, sizeof what, "'%s': root attributes", d->path);
    if (root < 0)
        return qp_h5_fail(err, QP_E_FORMAT, what);
    struct names l = {0};
    hsize_t idx = 0;
    herr_t rc = H5Aiterate2(root, H5_INDEX_CRT_ORDER, H5_ITER_INC, &idx,
                            collect_attr, &l);
    if (rc < 0 && !l.nomem) {
        names_free(&l);
        memset(&l, 0, sizeof l);
        idx = 0;
        rc = H5Aiterate2(root, H5_INDEX_NAME, H5_ITER_INC, &idx, collect_attr, &l);
    }
    enum qp_status st = l.nomem ? qp_fail(err, QP_E_NOMEM, "out of memory")
                      : rc < 0  ? qp_h5_fail(err, QP_E_FORMAT, what)
                                : QP_OK;
    for (size_t i = 0; i < l.n && !st; i++) {
        char *v = NULL;
        if (!(st = opt_str_attr(root, l.v[i], what, &v, err)) && v)
            st = qp_dump_meta_set(&d->meta, l.v[i], v, err);
        free(v);
    }
    names_free(&l);
    H5Gclose(root);
    return st;
}

void qp_h5_reader_release(struct qp_h5_reader *r)
{
    if (r->file >= 0)
        H5Fclose(r->file);
    for (size_t i = 0; i < r->n; i++)
        free(r->refs[i].path);
    free(r->refs);
    free(r->groups);
    memset(r, 0, sizeof *r);
    r->file = H5I_INVALID_HID;
}

/* Opens r->image (copied by libhdf5) through the in-memory driver. */
static hid_t open_image(const char *name, struct qp_h5_reader *r)
{
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS), f = H5I_INVALID_HID;
    if (fapl >= 0 && H5Pset_fapl_core(fapl, 1 << 16, 0) >= 0 &&
        H5Pset_file_image(fapl, (void *)r->image, r->image_size) >= 0)
        f = H5Fopen(name, H5F_ACC_RDONLY, fapl);
    qp_h5_close(1, &fapl);
    r->image = NULL;
    return f;
}

enum qp_status qp_h5_reader_open(struct qp_dump *d, struct qp_h5_reader *r,
                                 struct qp_error *err)
{
    qp_h5_quiet();
    char what[600];
    snprintf(what, sizeof what, "'%s': cannot open as HDF5", d->path);
    if (r->image) {
        r->file = open_image(d->path, r);
    } else {
        r->file = H5I_INVALID_HID;
        struct stat sb;
        if (stat(d->path, &sb) != 0 || !S_ISREG(sb.st_mode))
            return qp_fail(err, QP_E_IO, "'%s': cannot open: not a readable "
                           "file", d->path);
        if (H5Fis_hdf5(d->path) <= 0) {
            H5Eclear2(H5E_DEFAULT);
            return qp_fail(err, QP_E_FORMAT, "%s: not an HDF5 file", what);
        }
        r->file = H5Fopen(d->path, H5F_ACC_RDONLY, H5P_DEFAULT);
    }
    if (r->file < 0 || H5Fget_filesize(r->file, &r->size) < 0)
        return qp_h5_fail(err, QP_E_FORMAT, what);
    enum qp_status st = walk(d, r, "", 0, err);
    if (!st)
        st = read_meta(d, r, err);
    return st;
}
