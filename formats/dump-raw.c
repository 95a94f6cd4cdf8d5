/* formats/dump-raw.c: raw tensor file directories (formats/dump-raw.h). */
#include "formats/dump-raw.h"

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/fileio.h"
#include "formats/dump-info.h"
#include "formats/json.h"
#include "formats/qnn-encodings.h"

/* What an index entry or a sidecar says about one file. */
struct raw_spec {
    bool has_dtype, has_shape, has_axis;
    enum qp_dtype dtype;
    int ndim;
    int64_t shape[QP_MAX_DIMS];
    const char *layout; /* borrowed from the JSON document */
    size_t nscale;
    float *scale;       /* [nscale], owned */
    int32_t *zp;        /* [nscale] or NULL, owned */
    int axis;
    int64_t block;
};

static void spec_release(struct raw_spec *sp)
{
    free(sp->scale);
    free(sp->zp);
    memset(sp, 0, sizeof *sp);
}

/* A number or an array of numbers; integers only when zp. */
static enum qp_status read_values(const struct qp_json *n, const char *what,
                                  const char *field, bool zp, size_t *count,
                                  void **out, struct qp_error *err)
{
    bool arr = qp_json_type(n) == QP_JSON_ARRAY;
    size_t k = arr ? qp_json_size(n) : 1;
    *out = malloc(k * 4 + 1);
    if (!*out)
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    const struct qp_json *e = arr ? qp_json_first(n) : n;
    for (size_t i = 0; i < k; i++, e = qp_json_next(e)) {
        double v;
        int64_t iv;
        if (zp ? !qp_dump_json_int(e, INT32_MIN, INT32_MAX, &iv)
               : !qp_json_num(e, &v) || !isfinite(v))
            return qp_fail(err, QP_E_FORMAT, "%s: %s must be %s or an array of "
                           "them", what, field,
                           zp ? "a 32-bit integer" : "a finite number");
        if (zp)
            ((int32_t *)*out)[i] = (int32_t)iv;
        else
            ((float *)*out)[i] = (float)v;
    }
    if (!k)
        return qp_fail(err, QP_E_FORMAT, "%s: %s is empty", what, field);
    *count = k;
    return QP_OK;
}

static enum qp_status parse_spec(const struct qp_json *o, const char *what,
                                 struct raw_spec *sp, struct qp_error *err)
{
    memset(sp, 0, sizeof *sp);
    if (qp_json_type(o) != QP_JSON_OBJECT)
        return qp_fail(err, QP_E_FORMAT, "%s is a %s, expected an object", what,
                       qp_json_type_name(qp_json_type(o)));
    const struct qp_json *dt = qp_json_get(o, "dtype"), *sh = qp_json_get(o, "shape"),
                         *ly = qp_json_get(o, "layout"), *sc = qp_json_get(o, "scale"),
                         *zp = qp_json_get(o, "zero_point"), *ax = qp_json_get(o, "axis"),
                         *bs = qp_json_get(o, "block_size");
    const char *s;
    char field[700];
    int64_t v;
    enum qp_status st = QP_OK;
    if (dt && (!qp_json_str(dt, &s) || !qp_dtype_from_name(s, &sp->dtype)))
        return qp_fail(err, QP_E_FORMAT, "%s: dtype must be a dtype name such as "
                       "\"f32\" or \"int8\"", what);
    sp->has_dtype = dt != NULL;
    snprintf(field, sizeof field, "%s: shape", what);
    if (sh && (st = qp_dump_json_shape(sh, field, &sp->ndim, sp->shape, err)))
        return st;
    sp->has_shape = sh != NULL;
    if (ly && !qp_json_str(ly, &sp->layout))
        return qp_fail(err, QP_E_FORMAT, "%s: layout must be a string", what);
    size_t nz = 0;
    if (sc && (st = read_values(sc, what, "scale", false, &sp->nscale,
                                (void **)&sp->scale, err)))
        return st;
    if (zp && (st = read_values(zp, what, "zero_point", true, &nz, (void **)&sp->zp,
                                err)))
        return st;
    if (zp && nz != sp->nscale)
        return qp_fail(err, QP_E_FORMAT, "%s: zero_point has %zu values, scale has "
                       "%zu", what, nz, sp->nscale);
    if (ax && !qp_dump_json_int(ax, -1, QP_MAX_DIMS - 1, &v))
        return qp_fail(err, QP_E_FORMAT, "%s: axis must be an integer in [-1, %d]",
                       what, QP_MAX_DIMS - 1);
    sp->has_axis = ax != NULL;
    sp->axis = ax ? (int)v : -1;
    if (bs && (!ax || !qp_dump_json_int(bs, 0, INT64_MAX, &sp->block)))
        return qp_fail(err, QP_E_FORMAT, "%s: block_size must be a non-negative "
                       "integer beside an axis", what);
    if ((ax || bs) && !sc)
        return qp_fail(err, QP_E_FORMAT, "%s: axis without scale", what);
    return QP_OK;
}

/* The dtype a qnn-net-run native file has under encoding enc. */
static bool encoding_dtype(const struct qp_qnn_encoding *enc, enum qp_dtype *out)
{
    static const enum qp_dtype types[3][2] = {{QP_DTYPE_U8, QP_DTYPE_I8},
                                              {QP_DTYPE_U16, QP_DTYPE_I16},
                                              {QP_DTYPE_U32, QP_DTYPE_I32}};
    int k = enc->bitwidth == 8 ? 0 : enc->bitwidth == 16 ? 1
          : enc->bitwidth == 32 ? 2 : -1;
    if (k < 0)
        return false;
    bool fits_u = true, fits_s = true, zero = true;
    int64_t half = (int64_t)1 << (enc->bitwidth - 1);
    for (size_t i = 0; i < enc->count; i++) {
        int64_t z = enc->zero_point[i];
        fits_u &= z >= 0 && z < 2 * half;
        fits_s &= z >= -half && z < half;
        zero &= z == 0;
    }
    /* QNN's activations are unsigned (offset in [-2^b+1, 0]); a symmetric
     * encoding with offset 0 is a signed type */
    if (fits_u && !(enc->symmetric && zero))
        *out = types[k][0];
    else if (fits_s)
        *out = types[k][1];
    else
        return false;
    return true;
}

struct raw_file {
    const char *what; /* the file, for messages */
    size_t size;
    bool native;      /* a qnn-net-run NAME_native.raw */
};

/* dtype and shape of a file from what is stated and its size. */
static enum qp_status file_type(const struct raw_file *f, const struct raw_spec *sp,
                                const struct qp_qnn_encoding *enc,
                                enum qp_dtype *dtype, int *ndim, int64_t *shape,
                                struct qp_error *err)
{
    *dtype = QP_DTYPE_F32;
    bool stated = sp->has_dtype;
    if (stated)
        *dtype = sp->dtype;
    else if (f->native && enc && encoding_dtype(enc, dtype))
        stated = true;
    else if (f->native && enc)
        return qp_fail(err, QP_E_UNSUPPORTED, "'%s': no dtype for the %d-bit "
                       "encoding of this native file; give one in a sidecar",
                       f->what, enc->bitwidth);
    char s[128];
    size_t need;
    if (sp->has_shape) {
        *ndim = sp->ndim;
        memcpy(shape, sp->shape, sizeof sp->shape);
        enum qp_status st = qp_shape_check(f->what, *dtype, *ndim, shape, &need, err);
        if (st)
            return st;
        if (need == f->size)
            return QP_OK;
        qp_shape_str(*ndim, shape, s, sizeof s);
        return qp_fail(err, QP_E_FORMAT, "'%s': %s%s %s needs %zu bytes, the file "
                       "has %zu", f->what, stated ? "" : "no dtype given, and ",
                       qp_dtype_name(*dtype), s, need, f->size);
    }
    unsigned bits = qp_dtype_traits(*dtype)->bits;
    if (bits < 8)
        return qp_fail(err, QP_E_FORMAT, "'%s': packed %s data needs a shape",
                       f->what, qp_dtype_name(*dtype));
    if (f->size % (bits / 8))
        return qp_fail(err, QP_E_FORMAT, "'%s': %zu bytes are not a whole number "
                       "of %s values%s", f->what, f->size, qp_dtype_name(*dtype),
                       stated ? "" : " (no dtype given)");
    *ndim = 1;
    shape[0] = (int64_t)(f->size / (bits / 8));
    return QP_OK;
}

/* Quantization parameters from the spec, else from the encoding. */
static enum qp_status file_qparams(const struct raw_file *f, struct qp_tensor *t,
                                   const struct raw_spec *sp,
                                   const struct qp_qnn_encoding *enc,
                                   struct qp_error *err)
{
    if (!qp_dtype_is_int(t->dtype) || (!sp->nscale && !enc))
        return QP_OK;
    size_t n = sp->nscale ? sp->nscale : enc->count;
    int axis = sp->nscale ? sp->axis : -1;
    int64_t block = sp->nscale ? sp->block : 0;
    if (n > 1 && sp->nscale && !sp->has_axis) { /* the first dim of length n */
        int64_t sn = (int64_t)n;
        if (!qp_qparams_infer(t->ndim, t->shape, 1, &sn, &axis, &block))
            axis = -2;
    } else if (n > 1 && !sp->nscale) { /* QNN is channels-last: the last */
        axis = -2;
        for (int a = 0; a < t->ndim; a++)
            if ((size_t)t->shape[a] == n)
                axis = a;
    }
    char s[128];
    qp_shape_str(t->ndim, t->shape, s, sizeof s);
    if (axis == -2)
        return qp_fail(err, QP_E_FORMAT, "'%s': %zu scales fit no dim of %s",
                       f->what, n, s);
    enum qp_status st = qp_tensor_set_qparams(t, n, sp->nscale ? sp->scale : enc->scale,
                                              sp->nscale ? sp->zp : enc->zero_point,
                                              axis, block, err);
    return st ? qp_error_prefix(err, "'%s': ", f->what) : QP_OK;
}

/* ---- the reader -------------------------------------------------------------- */

struct raw_reader {
    char **paths; /* full path of each entry */
    size_t n, cap;
    struct qp_qnn_encodings enc;
};

static void raw_close(struct qp_dump *d)
{
    struct raw_reader *r = d->impl;
    if (!r)
        return;
    for (size_t i = 0; i < r->n; i++)
        free(r->paths[i]);
    free(r->paths);
    qp_qnn_encodings_release(&r->enc);
    free(r);
    d->impl = NULL;
}

/* Adds the tensor `name` held by file path. */
static enum qp_status add_file(struct qp_dump *d, struct raw_reader *r,
                               const char *name, const char *path, bool native,
                               const struct raw_spec *sp, struct qp_error *err)
{
    struct stat sb;
    if (stat(path, &sb) != 0 || !S_ISREG(sb.st_mode))
        return qp_fail(err, QP_E_IO, "'%s': cannot open: not a readable file", path);
    struct raw_file f = {path, (size_t)sb.st_size, native};
    const struct qp_qnn_encoding *enc = qp_qnn_encodings_find(&r->enc, name);
    enum qp_dtype dtype;
    int ndim = 0;
    int64_t shape[QP_MAX_DIMS];
    struct qp_tensor *t = NULL;
    enum qp_status st = file_type(&f, sp, enc, &dtype, &ndim, shape, err);
    if (!st)
        st = qp_tensor_new_desc(name, dtype, ndim, shape, &t, err);
    if (!st)
        st = file_qparams(&f, t, sp, enc, err);
    if (!st && sp->layout)
        st = qp_tensor_set_layout(t, sp->layout, err);
    if (!st && r->n == r->cap) {
        size_t cap = r->cap ? 2 * r->cap : 64;
        char **p = realloc(r->paths, cap * sizeof *p);
        struct qp_tensor **e = p ? realloc(d->entries, cap * sizeof *e) : NULL;
        if (p)
            r->paths = p;
        if (!e)
            st = qp_fail(err, QP_E_NOMEM, "out of memory");
        else {
            d->entries = e;
            r->cap = cap;
        }
    }
    if (!st && !(r->paths[r->n] = strdup(path)))
        st = qp_fail(err, QP_E_NOMEM, "out of memory");
    if (st) {
        qp_tensor_free(t);
        return st;
    }
    r->n++;
    d->entries[d->count++] = t;
    return QP_OK;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int cmp_natural(const void *a, const void *b)
{
    return strverscmp(*(char *const *)a, *(char *const *)b);
}

struct file_set {
    char **rel; /* relative paths of the .raw/.bin files, natural order */
    size_t n;
    char **sorted; /* the same, strcmp order, for lookups */
    bool *used;    /* named by the index */
};

static void set_release(struct file_set *s)
{
    for (size_t i = 0; i < s->n; i++)
        free(s->rel[i]);
    free(s->rel);
    free(s->sorted);
    free(s->used);
}

static long set_find(const struct file_set *s, const char *rel)
{
    char **f = bsearch(&rel, s->sorted, s->n, sizeof *s->sorted, cmp_str);
    if (!f)
        return -1;
    for (size_t i = 0; i < s->n; i++) /* back to the natural-order index */
        if (s->rel[i] == *f)
            return (long)i;
    return -1;
}

static enum qp_status scan_files(const char *root, struct file_set *s,
                                 struct qp_error *err)
{
    char **a, **b;
    size_t na, nb;
    enum qp_status st = qp_dump_scan_dir(root, ".raw", &a, &na, err);
    if (st)
        return st;
    if ((st = qp_dump_scan_dir(root, ".bin", &b, &nb, err))) {
        for (size_t i = 0; i < na; i++)
            free(a[i]);
        free(a);
        return st;
    }
    s->n = na + nb;
    s->rel = realloc(a, (s->n + 1) * sizeof *s->rel);
    s->sorted = malloc((s->n + 1) * sizeof *s->sorted);
    s->used = calloc(s->n + 1, sizeof *s->used);
    if (!s->rel || !s->sorted || !s->used) {
        if (!s->rel)
            s->rel = a;
        s->n = na;
        for (size_t i = 0; i < nb; i++)
            free(b[i]);
        free(b);
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    }
    if (nb)
        memcpy(s->rel + na, b, nb * sizeof *b);
    free(b);
    qsort(s->rel, s->n, sizeof *s->rel, cmp_natural);
    memcpy(s->sorted, s->rel, s->n * sizeof *s->rel);
    qsort(s->sorted, s->n, sizeof *s->sorted, cmp_str);
    return QP_OK;
}

/* A path inside the folder: relative, without ".." components. */
static bool inside(const char *rel)
{
    if (!*rel || rel[0] == '/')
        return false;
    for (const char *p = rel; *p;) {
        size_t len = strcspn(p, "/");
        if (len == 2 && p[0] == '.' && p[1] == '.')
            return false;
        p += len + (p[len] == '/');
    }
    return true;
}

static enum qp_status read_index(struct qp_dump *d, struct raw_reader *r,
                                 const struct qp_json *index, const char *ipath,
                                 struct file_set *s, struct qp_error *err)
{
    const struct qp_json *tens = qp_json_get(index, "tensors"),
                         *md = qp_json_get(index, "metadata");
    char what[700];
    snprintf(what, sizeof what, "'%s'", ipath);
    enum qp_status st = md ? qp_dump_meta_from_json(&d->meta, md, what, err) : QP_OK;
    for (const struct qp_json *o = qp_json_first(tens); o && !st; o = qp_json_next(o)) {
        const char *name = qp_json_key(o), *file;
        struct raw_spec sp;
        snprintf(what, sizeof what, "'%s': tensor '%s'", ipath, name);
        if (!(st = parse_spec(o, what, &sp, err))) {
            if (!qp_json_str(qp_json_get(o, "file"), &file) || !inside(file))
                st = qp_fail(err, QP_E_FORMAT, "%s: file must name a file inside "
                             "the folder", what);
        }
        char *path = st ? NULL : qp_path_join(d->path, file);
        if (!st && !path)
            st = qp_fail(err, QP_E_NOMEM, "out of memory");
        if (!st)
            st = add_file(d, r, name, path, false, &sp, err);
        if (!st) {
            long k = set_find(s, file);
            if (k >= 0)
                s->used[k] = true;
        }
        free(path);
        spec_release(&sp);
    }
    return st;
}

/* The length of a "Result_N/" folder holding every file the index does
 * not name (one qnn-net-run input), or 0. */
static size_t result_prefix(const struct file_set *s)
{
    const char *first = NULL;
    size_t len = 0;
    for (size_t i = 0; i < s->n; i++) {
        const char *p = s->rel[i];
        if (s->used[i])
            continue;
        if (first) {
            if (strncmp(p, first, len))
                return 0;
            continue;
        }
        size_t k = 7;
        if (strncmp(p, "Result_", 7))
            return 0;
        while (p[k] >= '0' && p[k] <= '9')
            k++;
        if (k == 7 || p[k] != '/')
            return 0;
        first = p;
        len = k + 1;
    }
    return len;
}

static bool sibling_exists(const char *root, const char *rel, size_t stem_len)
{
    static const char *const exts[] = {".raw", ".bin"};
    bool found = false;
    for (int e = 0; e < 2 && !found; e++) {
        size_t n = strlen(root) + stem_len + 8;
        char *p = malloc(n);
        if (!p)
            return false;
        snprintf(p, n, "%s/%.*s%s", root, (int)stem_len, rel, exts[e]);
        struct stat sb;
        found = stat(p, &sb) == 0;
        free(p);
    }
    return found;
}

/* Files the index does not name: name from the path, a sidecar beside. */
static enum qp_status read_loose(struct qp_dump *d, struct raw_reader *r,
                                 struct file_set *s, struct qp_error *err)
{
    size_t skip = result_prefix(s);
    enum qp_status st = QP_OK;
    for (size_t i = 0; i < s->n && !st; i++) {
        if (s->used[i])
            continue;
        const char *rel = s->rel[i];
        size_t stem = strlen(rel) - 4; /* .raw / .bin */
        bool native = stem >= 7 && !strncmp(rel + stem - 7, "_native", 7) &&
                      !sibling_exists(d->path, rel, stem - 7);
        char *name = strndup(rel + skip, stem - skip - (native ? 7 : 0));
        char *path = qp_path_join(d->path, rel);
        size_t slen = strlen(d->path) + stem + 8;
        char *side = malloc(slen);
        if (!name || !path || !side) {
            st = qp_fail(err, QP_E_NOMEM, "out of memory");
        } else {
            qp_dump_unescape_name(name);
            snprintf(side, slen, "%s/%.*s.json", d->path, (int)stem, rel);
            struct raw_spec sp = {0};
            struct qp_json *doc = NULL;
            struct stat sb;
            if (stat(side, &sb) == 0) {
                char what[700];
                snprintf(what, sizeof what, "'%s'", side);
                if (!(st = qp_json_load(side, &doc, err)))
                    st = parse_spec(doc, what, &sp, err);
            }
            if (!st)
                st = add_file(d, r, name, path, native, &sp, err);
            spec_release(&sp);
            qp_json_free(doc);
        }
        free(name);
        free(path);
        free(side);
    }
    return st;
}

/* Root JSON files: the index, encodings; others (sidecars) are skipped. */
static enum qp_status read_root_json(struct qp_dump *d, struct raw_reader *r,
                                     struct qp_json **index, char **ipath,
                                     struct qp_error *err)
{
    DIR *dp = opendir(d->path);
    if (!dp)
        return qp_fail(err, QP_E_IO, "'%s': cannot open directory", d->path);
    char **files = NULL;
    size_t n = 0;
    struct dirent *de;
    enum qp_status st = QP_OK;
    while (!st && (de = readdir(dp))) {
        if (de->d_name[0] == '.' || (!qp_str_ends_with(de->d_name, ".json") &&
                                     !qp_str_ends_with(de->d_name, ".encodings")))
            continue;
        char **nf = realloc(files, (n + 1) * sizeof *nf);
        if (!nf || !(nf[n] = qp_path_join(d->path, de->d_name))) {
            files = nf ? nf : files;
            st = qp_fail(err, QP_E_NOMEM, "out of memory");
        } else {
            files = nf;
            n++;
        }
    }
    closedir(dp);
    if (files)
        qsort(files, n, sizeof *files, cmp_str);
    for (size_t i = 0; i < n && !st; i++) {
        struct stat sb;
        if (stat(files[i], &sb) != 0 || !S_ISREG(sb.st_mode))
            continue;
        struct qp_json *doc;
        if ((st = qp_json_load(files[i], &doc, err)))
            break;
        char what[700];
        snprintf(what, sizeof what, "'%s'", files[i]);
        const struct qp_json *tens = qp_json_get(doc, "tensors");
        if (tens && qp_json_type(tens) != QP_JSON_OBJECT) {
            st = qp_fail(err, QP_E_FORMAT, "%s: tensors is a %s, expected an "
                         "object", what, qp_json_type_name(qp_json_type(tens)));
        } else if (tens && *index) {
            st = qp_fail(err, QP_E_FORMAT, "'%s': two index files, '%s' and '%s'",
                         d->path, *ipath, files[i]);
        } else if (tens) {
            *index = doc;
            *ipath = files[i];
            files[i] = NULL;
            continue;
        } else if (qp_qnn_is_encodings(doc)) {
            st = qp_qnn_encodings_parse(doc, what, &r->enc, err);
        }
        qp_json_free(doc);
    }
    for (size_t i = 0; i < n; i++)
        free(files[i]);
    free(files);
    return st;
}

static enum qp_status raw_open(struct qp_dump *d, struct qp_error *err)
{
    size_t len = strlen(d->path);
    while (len > 1 && d->path[len - 1] == '/')
        d->path[--len] = '\0';
    struct raw_reader *r = calloc(1, sizeof *r);
    if (!r)
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    d->impl = r;
    struct file_set s = {0};
    struct qp_json *index = NULL;
    char *ipath = NULL;
    enum qp_status st = scan_files(d->path, &s, err);
    if (!st)
        st = read_root_json(d, r, &index, &ipath, err);
    if (!st && index)
        st = read_index(d, r, index, ipath, &s, err);
    if (!st)
        st = read_loose(d, r, &s, err);
    set_release(&s);
    qp_json_free(index);
    free(ipath);
    return st;
}

static enum qp_status raw_load(struct qp_dump *d, size_t i, struct qp_tensor **out,
                               struct qp_error *err)
{
    struct raw_reader *r = d->impl;
    const struct qp_tensor *e = d->entries[i]; /* raw dumps never hide entries */
    struct qp_mmap *m;
    enum qp_status st = qp_mmap_open(r->paths[i], &m, err);
    if (st)
        return st;
    if (m->size != e->nbytes)
        st = qp_fail(err, QP_E_FORMAT, "'%s': changed size since it was listed",
                     r->paths[i]);
    else if (m->size)
        st = qp_tensor_wrap(e->name, e->dtype, e->ndim, e->shape, m->data, m->size,
                            m, out, err);
    else
        st = qp_tensor_new(e->name, e->dtype, e->ndim, e->shape, out, err);
    qp_mmap_unref(m);
    return st;
}

const struct qp_dump_ops qp_dump_ops_raw_dir = {
    "raw-dir", raw_open, raw_load, raw_close,
};
