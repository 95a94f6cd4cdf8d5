#include "formats/dump.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "core/fileio.h"

extern const struct qp_dump_ops qp_dump_ops_safetensors, qp_dump_ops_npz,
    qp_dump_ops_hdf5, qp_dump_ops_npy, qp_dump_ops_pb, qp_dump_ops_onnx,
    qp_dump_ops_npy_dir, qp_dump_ops_pb_dir, qp_dump_ops_raw_dir,
    qp_dump_ops_gguf,
    qp_dump_ops_tflite;
extern const struct qp_dump_writer_ops qp_dump_writer_ops_safetensors,
    qp_dump_writer_ops_npz, qp_dump_writer_ops_hdf5, qp_dump_writer_ops_npy,
    qp_dump_writer_ops_pb, qp_dump_writer_ops_npy_dir, qp_dump_writer_ops_pb_dir,
    qp_dump_writer_ops_raw_dir, qp_dump_writer_ops_gguf;

static const struct {
    const char *name;
    const struct qp_dump_ops *reader;
    const struct qp_dump_writer_ops *writer;
} formats[] = {
    [QP_DUMP_AUTO] = {"auto", NULL, NULL},
    [QP_DUMP_SAFETENSORS] = {"safetensors", &qp_dump_ops_safetensors,
                             &qp_dump_writer_ops_safetensors},
    [QP_DUMP_NPZ] = {"npz", &qp_dump_ops_npz, &qp_dump_writer_ops_npz},
    [QP_DUMP_HDF5] = {"h5", &qp_dump_ops_hdf5, &qp_dump_writer_ops_hdf5},
    [QP_DUMP_NPY] = {"npy", &qp_dump_ops_npy, &qp_dump_writer_ops_npy},
    [QP_DUMP_PB] = {"pb", &qp_dump_ops_pb, &qp_dump_writer_ops_pb},
    [QP_DUMP_ONNX] = {"onnx", &qp_dump_ops_onnx, NULL},
    [QP_DUMP_NPY_DIR] = {"npy-dir", &qp_dump_ops_npy_dir,
                         &qp_dump_writer_ops_npy_dir},
    [QP_DUMP_PB_DIR] = {"pb-dir", &qp_dump_ops_pb_dir, &qp_dump_writer_ops_pb_dir},
    [QP_DUMP_RAW_DIR] = {"raw-dir", &qp_dump_ops_raw_dir,
                         &qp_dump_writer_ops_raw_dir},
    [QP_DUMP_GGUF] = {"gguf", &qp_dump_ops_gguf, &qp_dump_writer_ops_gguf},
    [QP_DUMP_TFLITE] = {"tflite", &qp_dump_ops_tflite, NULL},
};
_Static_assert(sizeof formats / sizeof formats[0] == QP_DUMP_FORMAT_COUNT,
               "formats must cover every dump format");

const char *qp_dump_format_name(enum qp_dump_format f)
{
    return (unsigned)f < QP_DUMP_FORMAT_COUNT ? formats[f].name : "?";
}

bool qp_dump_format_from_name(const char *name, enum qp_dump_format *out)
{
    static const struct {
        const char *alias;
        enum qp_dump_format f;
    } aliases[] = {{"hdf5", QP_DUMP_HDF5}, {"raw", QP_DUMP_RAW_DIR},
                   {"bin", QP_DUMP_RAW_DIR}};
    for (int f = 0; f < QP_DUMP_FORMAT_COUNT; f++)
        if (!strcasecmp(name, formats[f].name)) {
            *out = (enum qp_dump_format)f;
            return true;
        }
    for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
        if (!strcasecmp(name, aliases[i].alias)) {
            *out = aliases[i].f;
            return true;
        }
    return false;
}

/* The format of an existing directory, from the files it holds. */
static enum qp_dump_format detect_dir(const char *path)
{
    DIR *d = opendir(path);
    if (!d)
        return QP_DUMP_NPY_DIR;
    int npy = 0, pb = 0, raw = 0, st = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        npy += qp_str_ends_with(de->d_name, ".npy");
        pb += qp_str_ends_with(de->d_name, ".pb");
        st += qp_str_ends_with(de->d_name, ".safetensors") ||
              qp_str_ends_with(de->d_name, ".safetensors.index.json");
        raw += qp_str_ends_with(de->d_name, ".raw") ||
               qp_str_ends_with(de->d_name, ".bin") ||
               qp_str_ends_with(de->d_name, ".json");
        if (de->d_type == DT_DIR && de->d_name[0] != '.')
            raw++; /* device dumps nest their outputs in folders */
    }
    closedir(d);
    if (npy)
        return QP_DUMP_NPY_DIR;
    if (pb)
        return QP_DUMP_PB_DIR;
    if (st) /* a (sharded) checkpoint directory */
        return QP_DUMP_SAFETENSORS;
    if (raw)
        return QP_DUMP_RAW_DIR;
    return QP_DUMP_NPY_DIR;
}

static enum qp_dump_format detect_file(const char *path)
{
    static const struct {
        const char *ext;
        enum qp_dump_format f;
    } exts[] = {
        {".safetensors", QP_DUMP_SAFETENSORS},
        {".safetensors.index.json", QP_DUMP_SAFETENSORS},
        {".npz", QP_DUMP_NPZ},   {".h5", QP_DUMP_HDF5},
        {".hdf5", QP_DUMP_HDF5}, {".npy", QP_DUMP_NPY},
        {".pb", QP_DUMP_PB},     {".onnx", QP_DUMP_ONNX},
        {".gguf", QP_DUMP_GGUF},
        {".tflite", QP_DUMP_TFLITE},
    };
    for (size_t i = 0; i < sizeof exts / sizeof exts[0]; i++)
        if (qp_str_ends_with(path, exts[i].ext))
            return exts[i].f;
    return QP_DUMP_AUTO;
}

static void dump_free(struct qp_dump *d)
{
    if (!d)
        return;
    for (size_t i = 0; i < d->count; i++)
        qp_tensor_free(d->entries[i]);
    free(d->entries);
    free(d->backing);
    free(d->path);
    qp_dump_meta_release(&d->meta);
    qp_strmap_release(&d->index);
    free(d);
}

enum qp_status qp_dump_open(const char *path, enum qp_dump_format format,
                            struct qp_dump **out, struct qp_error *err)
{
    *out = NULL;
    if (format == QP_DUMP_AUTO) {
        struct stat sb;
        if (stat(path, &sb) != 0)
            return qp_fail(err, QP_E_IO, "'%s': cannot open: %s", path,
                           strerror(errno));
        if (S_ISDIR(sb.st_mode))
            format = detect_dir(path);
        else
            format = detect_file(path);
    }
    if (format == QP_DUMP_AUTO)
        return qp_fail(err, QP_E_UNSUPPORTED,
                       "'%s': unknown dump format (expected .safetensors, .npz, "
                       ".h5, .npy, .pb, .onnx, .gguf, .tflite or a directory)", path);
    return qp_dump_open_impl(path, format, NULL, out, err);
}

enum qp_status qp_dump_open_impl(const char *path, enum qp_dump_format format,
                                 void *impl, struct qp_dump **out,
                                 struct qp_error *err)
{
    *out = NULL;
    if ((unsigned)format >= QP_DUMP_FORMAT_COUNT || !formats[format].reader) {
        free(impl);
        return qp_fail(err, QP_E_INVAL, "'%s': invalid dump format", path);
    }
    struct qp_dump *d = calloc(1, sizeof *d);
    if (!d || !(d->path = strdup(path))) {
        free(d);
        free(impl);
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    }
    d->impl = impl;
    d->ops = formats[format].reader;
    d->format = format;
    enum qp_status st = d->ops->open(d, err);
    if (st) {
        qp_error_in_file(err, path);
        if (d->ops->close)
            d->ops->close(d);
        dump_free(d);
        return st;
    }
    /* refuse duplicate names: a dump maps names to tensors */
    for (size_t i = 0; i < d->count && !st; i++) {
        bool dup;
        st = qp_strmap_put(&d->index, d->entries[i]->name, i, &dup, err);
        if (!st && dup)
            st = qp_fail(err, QP_E_FORMAT, "'%s': tensor name '%s' appears twice",
                         path, d->entries[i]->name);
    }
    if (st) {
        qp_dump_close(d);
        return st;
    }
    *out = d;
    return QP_OK;
}

long qp_dump_find(const struct qp_dump *d, const char *name)
{
    size_t i;
    return qp_strmap_get(&d->index, name, &i) ? (long)i : -1;
}

static size_t backing_of(const struct qp_dump *d, size_t i)
{
    return d->backing ? d->backing[i] : i;
}

enum qp_status qp_dump_load(struct qp_dump *d, size_t i, struct qp_tensor **out,
                            struct qp_error *err)
{
    *out = NULL;
    if (i >= d->count)
        return qp_fail(err, QP_E_INVAL, "'%s': entry %zu out of range", d->path, i);
    const struct qp_tensor *e = d->entries[i];
    struct qp_tensor *t;
    enum qp_status st = d->ops->load(d, backing_of(d, i), &t, err);
    if (st)
        return qp_error_in_file(err, d->path);
    if (!qp_shape_equal(t->ndim, t->shape, e->ndim, e->shape) ||
        t->dtype != e->dtype) {
        qp_tensor_free(t);
        return qp_fail(err, QP_E_FORMAT,
                       "'%s': tensor '%s' changed between listing and loading",
                       d->path, e->name);
    }
    if (strcmp(t->name, e->name))
        st = qp_tensor_rename(t, e->name, err);
    if (!st && e->qp && !t->qp)
        st = qp_tensor_set_qparams(t, e->qp->count, e->qp->scale,
                                   e->qp->zero_point, e->qp->axis,
                                   e->qp->block_size, err);
    if (!st && e->layout && !t->layout)
        st = qp_tensor_set_layout(t, e->layout, err);
    if (st) {
        qp_tensor_free(t);
        return st;
    }
    *out = t;
    return QP_OK;
}

void qp_dump_close(struct qp_dump *d)
{
    if (!d)
        return;
    if (d->ops && d->ops->close)
        d->ops->close(d);
    dump_free(d);
}

bool qp_qparams_infer(int ndim, const int64_t *shape, int sndim,
                      const int64_t *sshape, int *axis, int64_t *block_size)
{
    int64_t sn = 1;
    for (int i = 0; i < sndim; i++)
        sn *= sshape[i];
    *block_size = 0;
    if (sn == 1) {
        *axis = -1;
        return true;
    }
    if (sndim == 1) {
        for (int a = 0; a < ndim; a++)
            if (shape[a] == sshape[0]) {
                *axis = a;
                return true;
            }
        return false;
    }
    if (sndim != ndim)
        return false;
    /* broadcast form [1,..,C,..,1] */
    int big = -1, nbig = 0;
    for (int a = 0; a < ndim; a++)
        if (sshape[a] != 1) {
            big = a;
            nbig++;
        }
    if (nbig == 1 && sshape[big] == shape[big]) {
        *axis = big;
        return true;
    }
    /* blocked: the tensor's shape with one dim divided into blocks */
    int found = -1;
    for (int a = 0; a < ndim; a++) {
        if (sshape[a] == shape[a])
            continue;
        if (found >= 0 || sshape[a] <= 0 || sshape[a] > shape[a])
            return false;
        found = a;
    }
    if (found < 0) { /* every dim equal: blocks of 1 along the last axis */
        *axis = ndim - 1;
        *block_size = 1;
        return true;
    }
    int64_t b = (shape[found] + sshape[found] - 1) / sshape[found];
    if ((shape[found] + b - 1) / b != sshape[found])
        return false;
    *axis = found;
    *block_size = b;
    return true;
}

struct name_idx {
    const char *name;
    size_t idx;
};

static int cmp_name_idx(const void *a, const void *b)
{
    return strcmp(((const struct name_idx *)a)->name,
                  ((const struct name_idx *)b)->name);
}

static long lookup(const struct name_idx *v, size_t n, const char *name)
{
    struct name_idx key = {name, 0};
    const struct name_idx *r = bsearch(&key, v, n, sizeof *v, cmp_name_idx);
    return r ? (long)r->idx : -1;
}

/* Attaches the companions scale (and zp) to descriptor e. */
static enum qp_status attach(struct qp_dump *d, struct qp_tensor *e,
                             size_t si, long zi, struct qp_error *err)
{
    struct qp_tensor *s = NULL, *z = NULL;
    float *sv = NULL;
    int32_t *zv = NULL;
    enum qp_status st = d->ops->load(d, backing_of(d, si), &s, err);
    if (!st && zi >= 0)
        st = d->ops->load(d, backing_of(d, (size_t)zi), &z, err);
    if (st)
        goto out;
    int axis;
    int64_t block;
    size_t n = qp_tensor_numel(s);
    if (!qp_qparams_infer(e->ndim, e->shape, s->ndim, s->shape, &axis, &block) ||
        (z && !qp_shape_equal(s->ndim, s->shape, z->ndim, z->shape))) {
        char a[96], b[96];
        qp_shape_str(e->ndim, e->shape, a, sizeof a);
        qp_shape_str(s->ndim, s->shape, b, sizeof b);
        st = qp_fail(err, QP_E_SHAPE,
                     "'%s': scale of '%s' has shape %s, which fits no axis of %s%s",
                     d->path, e->name, b, a,
                     z ? " (or its zero_point has another shape)" : "");
        goto out;
    }
    sv = malloc(n * sizeof *sv + 1);
    zv = z ? malloc(n * sizeof *zv + 1) : NULL;
    if (!sv || (z && !zv)) {
        st = qp_fail(err, QP_E_NOMEM, "out of memory");
        goto out;
    }
    qp_tensor_read_f32(s, 0, n, sv);
    for (size_t k = 0; z && k < n && !st; k++) {
        float v;
        qp_tensor_read_f32(z, k, 1, &v);
        if (v >= -2147483648.0f && v < 2147483648.0f)
            zv[k] = (int32_t)v;
        else
            st = qp_fail(err, QP_E_FORMAT,
                         "'%s': zero_point of '%s' holds %.9g at [%zu], outside "
                         "int32", d->path, e->name, (double)v, k);
    }
    if (st)
        goto out;
    st = qp_tensor_set_qparams(e, n, sv, zv, axis, block, err);
out:
    free(sv);
    free(zv);
    qp_tensor_free(s);
    qp_tensor_free(z);
    return st;
}

enum qp_status qp_dump_attach_companions(struct qp_dump *d, struct qp_error *err)
{
    size_t n = d->count;
    if (n < 2)
        return QP_OK;
    struct name_idx *v = malloc(n * sizeof *v);
    bool *hide = calloc(n, sizeof *hide);
    if (!v || !hide) {
        free(v);
        free(hide);
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    }
    for (size_t i = 0; i < n; i++)
        v[i] = (struct name_idx){d->entries[i]->name, i};
    qsort(v, n, sizeof *v, cmp_name_idx);
    enum qp_status st = QP_OK;
    for (size_t i = 0; i < n && !st; i++) {
        struct qp_tensor *e = d->entries[i];
        if (!qp_dtype_is_int(e->dtype) || e->qp)
            continue;
        size_t len = strlen(e->name);
        char *key = malloc(len + sizeof ".zero_point");
        if (!key) {
            st = qp_fail(err, QP_E_NOMEM, "out of memory");
            break;
        }
        memcpy(key, e->name, len);
        strcpy(key + len, ".scale");
        long si = lookup(v, n, key);
        strcpy(key + len, ".zero_point");
        long zi = lookup(v, n, key);
        free(key);
        if (si < 0 || !qp_dtype_traits(d->entries[si]->dtype)->is_float)
            continue;
        if (zi >= 0 && !qp_dtype_is_int(d->entries[zi]->dtype))
            zi = -1;
        st = attach(d, e, (size_t)si, zi, err);
        hide[si] = true;
        if (zi >= 0)
            hide[zi] = true;
    }
    if (!st) {
        size_t *backing = malloc(n * sizeof *backing);
        if (!backing) {
            st = qp_fail(err, QP_E_NOMEM, "out of memory");
        } else {
            size_t k = 0;
            for (size_t i = 0; i < n; i++) {
                if (hide[i]) {
                    qp_tensor_free(d->entries[i]);
                    continue;
                }
                backing[k] = backing_of(d, i);
                d->entries[k++] = d->entries[i];
            }
            free(d->backing);
            d->backing = backing;
            d->count = k;
        }
    }
    free(v);
    free(hide);
    return st;
}

/* ---- writing ----------------------------------------------------------- */

/* The extension of path's last component ("" for none, a leading '.' is
 * a hidden name, not an extension). */
static const char *extension(const char *path)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    const char *dot = strrchr(base, '.');
    return dot && dot != base ? dot : "";
}

/* The format to write at path: from its extension when format is AUTO,
 * else the one asked for, which must agree with a known extension. A
 * path with no extension, or ending in '/', is a directory (npy unless
 * asked otherwise); an unknown extension needs an explicit format. */
static enum qp_status writer_format(const char *path,
                                    enum qp_dump_format *format,
                                    struct qp_error *err)
{
    static const struct {
        const char *ext;
        enum qp_dump_format auto_fmt, also;
    } exts[] = {
        {".safetensors", QP_DUMP_SAFETENSORS, QP_DUMP_SAFETENSORS},
        {".npz", QP_DUMP_NPZ, QP_DUMP_NPZ},
        {".h5", QP_DUMP_HDF5, QP_DUMP_HDF5},
        {".hdf5", QP_DUMP_HDF5, QP_DUMP_HDF5},
        {".npy", QP_DUMP_NPY_DIR, QP_DUMP_NPY},
        {".pb", QP_DUMP_PB_DIR, QP_DUMP_PB},
        {".onnx", QP_DUMP_ONNX, QP_DUMP_ONNX},
        {".gguf", QP_DUMP_GGUF, QP_DUMP_GGUF},
    };
    size_t len = strlen(path);
    bool dir = len && path[len - 1] == '/';
    const char *ext = dir ? "" : extension(path);
    enum qp_dump_format f = *format;
    bool is_dir_format = f == QP_DUMP_NPY_DIR || f == QP_DUMP_PB_DIR ||
                         f == QP_DUMP_RAW_DIR;
    struct stat sb;
    bool file = !dir && stat(path, &sb) == 0 && !S_ISDIR(sb.st_mode);
    if (f == QP_DUMP_AUTO && file && !strcasecmp(ext, ".npy"))
        f = *format = QP_DUMP_NPY; /* an existing file (or /dev/...): one */
    if (f == QP_DUMP_AUTO && file && !strcasecmp(ext, ".pb"))
        f = *format = QP_DUMP_PB;
    if (!*ext) {
        if (f == QP_DUMP_AUTO || (dir && f == QP_DUMP_NPY))
            *format = QP_DUMP_NPY_DIR;
        else if (dir && f == QP_DUMP_PB)
            *format = QP_DUMP_PB_DIR;
        else if (dir && !is_dir_format)
            return qp_fail(err, QP_E_INVAL, "'%s' names a directory, and %s "
                           "dumps are files", path, qp_dump_format_name(f));
        return QP_OK;
    }
    for (size_t i = 0; i < sizeof exts / sizeof exts[0]; i++) {
        if (strcasecmp(ext, exts[i].ext))
            continue;
        if (f == QP_DUMP_AUTO)
            *format = exts[i].auto_fmt;
        else if (f != exts[i].auto_fmt && f != exts[i].also)
            return qp_fail(err, QP_E_INVAL, "'%s': the extension %s says %s, "
                           "not %s", path, ext,
                           qp_dump_format_name(exts[i].auto_fmt),
                           qp_dump_format_name(f));
        return QP_OK;
    }
    if (f == QP_DUMP_AUTO)
        return qp_fail(err, QP_E_INVAL, "'%s': unknown extension %s: name the "
                       "output .safetensors, .npz, .h5, .gguf, or a directory (no "
                       "extension or a trailing '/'), or give the format", path,
                       ext);
    return QP_OK;
}

enum qp_status qp_dump_writer_open(const char *path, enum qp_dump_format format,
                                   struct qp_dump_writer **out,
                                   struct qp_error *err)
{
    *out = NULL;
    enum qp_status st = writer_format(path, &format, err);
    if (st)
        return st;
    if ((unsigned)format >= QP_DUMP_FORMAT_COUNT || !formats[format].writer)
        return qp_fail(err, QP_E_UNSUPPORTED, "'%s': cannot write %s dumps",
                       path, qp_dump_format_name(format));
    struct qp_dump_writer *w = calloc(1, sizeof *w);
    if (!w || !(w->path = strdup(path))) {
        free(w);
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    }
    w->ops = formats[format].writer;
    w->format = format;
    st = w->ops->open(w, err);
    if (st) {
        free(w->path);
        free(w);
        return st;
    }
    *out = w;
    return QP_OK;
}

static void writer_free(struct qp_dump_writer *w)
{
    qp_strmap_release(&w->names);
    free(w->path);
    qp_dump_meta_release(&w->meta);
    free(w);
}

/* Takes name for tensor `owner` (itself, or the quantized tensor whose
 * companion it is); refuses a name already taken. */
static enum qp_status take_name(struct qp_dump_writer *w, const char *name,
                                const char *owner, struct qp_error *err)
{
    bool dup;
    enum qp_status st = qp_strmap_put(&w->names, name, 0, &dup, err);
    if (st || !dup)
        return st;
    if (strcmp(name, owner))
        return qp_fail(err, QP_E_INVAL, "'%s': tensor '%s' needs the name '%s' "
                       "for its quantization parameters, which is taken",
                       w->path, owner, name);
    return qp_fail(err, QP_E_INVAL, "'%s': tensor name '%s' is taken (added "
                   "twice, or a companion of a quantized tensor)", w->path, name);
}

enum qp_status qp_dump_writer_add(struct qp_dump_writer *w,
                                  const struct qp_tensor *t,
                                  struct qp_error *err)
{
    if (!t->data && t->nbytes)
        return qp_fail(err, QP_E_INVAL, "'%s': tensor '%s' has no data", w->path,
                       t->name);
    if (qp_strmap_get(&w->names, t->name, NULL))
        return take_name(w, t->name, t->name, err);
    bool quantized = t->qp && qp_dtype_is_int(t->dtype);
    size_t len = strlen(t->name);
    char *comp = malloc(len + sizeof ".zero_point");
    if (!comp)
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    enum qp_status st = QP_OK;
    for (int k = 0; k < 2 && quantized && !st; k++) {
        snprintf(comp, len + sizeof ".zero_point", "%s%s", t->name,
                 k ? ".zero_point" : ".scale");
        if (qp_strmap_get(&w->names, comp, NULL))
            st = take_name(w, comp, t->name, err);
    }
    if (!st)
        st = w->ops->add(w, t, err);
    if (!st)
        st = take_name(w, t->name, t->name, err);
    for (int k = 0; k < 2 && quantized && !st; k++) {
        snprintf(comp, len + sizeof ".zero_point", "%s%s", t->name,
                 k ? ".zero_point" : ".scale");
        st = take_name(w, comp, t->name, err);
    }
    free(comp);
    if (!st)
        w->count++;
    return st;
}

enum qp_status qp_dump_writer_commit(struct qp_dump_writer *w,
                                     struct qp_error *err)
{
    enum qp_status st = w->ops->commit(w, err);
    writer_free(w);
    return st;
}

void qp_dump_writer_abort(struct qp_dump_writer *w)
{
    if (!w)
        return;
    w->ops->abort(w);
    writer_free(w);
}

/* Candidate companion shapes for q, in order of preference. */
static int companion_shapes(const struct qp_tensor *t, const struct qp_qparams *q,
                            int ndims[3], int64_t shapes[3][QP_MAX_DIMS])
{
    int n = 0;
    if (q->axis < 0) {
        ndims[n] = 1;
        shapes[n++][0] = 1;
        return n;
    }
    if (q->block_size == 0) {
        ndims[n] = 1;
        shapes[n++][0] = (int64_t)q->count;
        ndims[n] = t->ndim;
        for (int i = 0; i < t->ndim; i++)
            shapes[n][i] = i == q->axis ? t->shape[i] : 1;
        n++;
        return n;
    }
    ndims[n] = t->ndim;
    for (int i = 0; i < t->ndim; i++)
        shapes[n][i] = i == q->axis
            ? (t->shape[i] + q->block_size - 1) / q->block_size : t->shape[i];
    return n + 1;
}

enum qp_status qp_dump_companions(const struct qp_tensor *t,
                                  struct qp_tensor **scale,
                                  struct qp_tensor **zp, struct qp_error *err)
{
    *scale = *zp = NULL;
    const struct qp_qparams *q = t->qp;
    int ndims[3], pick = -1;
    int64_t shapes[3][QP_MAX_DIMS];
    int n = companion_shapes(t, q, ndims, shapes);
    for (int c = 0; c < n && pick < 0; c++) {
        int axis;
        int64_t block;
        if (qp_qparams_infer(t->ndim, t->shape, ndims[c], shapes[c], &axis,
                             &block) &&
            axis == q->axis && block == q->block_size)
            pick = c;
    }
    if (pick < 0)
        return qp_fail(err, QP_E_UNSUPPORTED,
                       "tensor '%s': quantization axis %d block %lld cannot be "
                       "written as companion tensors unambiguously", t->name,
                       q->axis, (long long)q->block_size);
    return qp_dump_companions_shaped(t, ndims[pick], shapes[pick], scale, zp,
                                     err);
}

enum qp_status qp_dump_companions_shaped(const struct qp_tensor *t, int ndim,
                                         const int64_t *shape,
                                         struct qp_tensor **scale,
                                         struct qp_tensor **zp,
                                         struct qp_error *err)
{
    const struct qp_qparams *q = t->qp;
    *scale = *zp = NULL;
    size_t len = strlen(t->name) + sizeof ".zero_point";
    char *name = malloc(len);
    if (!name)
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    snprintf(name, len, "%s.scale", t->name);
    enum qp_status st = qp_tensor_new(name, QP_DTYPE_F32, ndim, shape, scale, err);
    if (!st && q->zero_point) {
        snprintf(name, len, "%s.zero_point", t->name);
        /* the narrowest integer type holding them: what a device stores */
        st = qp_tensor_new(name, qp_dtype_narrowest_int(q->zero_point, q->count),
                           ndim, shape, zp, err);
    }
    free(name);
    if (!st && qp_tensor_numel(*scale) != q->count)
        st = qp_fail(err, QP_E_SHAPE, "tensor '%s': %zu scales do not fill the "
                     "companion shape", t->name, q->count);
    if (st) {
        qp_tensor_free(*scale);
        qp_tensor_free(*zp);
        *scale = *zp = NULL;
        return st;
    }
    memcpy((*scale)->data, q->scale, q->count * sizeof(float));
    for (size_t i = 0; *zp && i < q->count; i++) {
        int32_t z = q->zero_point[i];
        switch ((*zp)->dtype) {
        case QP_DTYPE_U8: ((uint8_t *)(*zp)->data)[i] = (uint8_t)z; break;
        case QP_DTYPE_I8: ((int8_t *)(*zp)->data)[i] = (int8_t)z; break;
        case QP_DTYPE_U16: ((uint16_t *)(*zp)->data)[i] = (uint16_t)z; break;
        case QP_DTYPE_I16: ((int16_t *)(*zp)->data)[i] = (int16_t)z; break;
        default: ((int32_t *)(*zp)->data)[i] = z; break;
        }
    }
    return QP_OK;
}
