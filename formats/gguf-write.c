/* formats/gguf-write.c: the GGUF writer (formats/gguf.h). KVs are
 * serialized as they are added; tensors are declarations until commit,
 * which writes the header with every offset, then the data one tensor at a
 * time into a temporary file renamed into place at the end. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/outfile.h"
#include "core/size.h"
#include "core/strmap.h"
#include "formats/gguf.h"

struct wtensor {
    char *name;
    int ndim;
    int64_t ne[QP_GGUF_MAX_DIMS];
    enum qp_ggml_type type;
    size_t nbytes;
    const void *data;       /* or fill */
    qp_gguf_fill_fn fill;
    void *ctx;
};

struct qp_gguf_writer {
    char *path;
    unsigned char *kvs;     /* the serialized KV section */
    size_t kv_len, kv_cap;
    uint64_t n_kv;
    struct qp_strmap keys, names;
    struct wtensor *t;
    size_t n_t, cap_t;
    uint32_t alignment;
};

enum qp_status qp_gguf_writer_new(const char *path, struct qp_gguf_writer **out,
                                  struct qp_error *err)
{
    *out = NULL;
    struct qp_gguf_writer *w = calloc(1, sizeof *w);
    if (!w || !(w->path = strdup(path))) {
        free(w);
        return qp_fail(err, QP_E_NOMEM, "'%s': out of memory", path);
    }
    qp_strmap_init(&w->keys);
    qp_strmap_init(&w->names);
    w->alignment = QP_GGUF_DEFAULT_ALIGNMENT;
    *out = w;
    return QP_OK;
}

void qp_gguf_writer_free(struct qp_gguf_writer *w)
{
    if (!w)
        return;
    for (size_t i = 0; i < w->n_t; i++)
        free(w->t[i].name);
    free(w->t);
    free(w->kvs);
    qp_strmap_release(&w->keys);
    qp_strmap_release(&w->names);
    free(w->path);
    free(w);
}

/* Appends n bytes to the KV section; false on no memory. */
static bool kv_put(struct qp_gguf_writer *w, const void *p, size_t n)
{
    if (n > SIZE_MAX / 2 - w->kv_len)
        return false;
    if (w->kv_len + n > w->kv_cap) {
        size_t cap = w->kv_cap ? w->kv_cap : 1024;
        while (cap < w->kv_len + n)
            cap *= 2;
        unsigned char *k = realloc(w->kvs, cap);
        if (!k)
            return false;
        w->kvs = k;
        w->kv_cap = cap;
    }
    if (n)
        memcpy(w->kvs + w->kv_len, p, n);
    w->kv_len += n;
    return true;
}

static bool kv_u32(struct qp_gguf_writer *w, uint32_t v) { return kv_put(w, &v, 4); }
static bool kv_u64(struct qp_gguf_writer *w, uint64_t v) { return kv_put(w, &v, 8); }

/* Checks key and starts its KV: name and value type (and, for arrays, the
 * element type and count). The payload follows. */
static enum qp_status kv_begin(struct qp_gguf_writer *w, const char *key,
                               enum qp_gguf_type type, enum qp_gguf_type elem,
                               uint64_t count, struct qp_error *err)
{
    size_t len = strlen(key);
    if (!len || len > QP_GGUF_MAX_KEY)
        return qp_fail(err, QP_E_INVAL, "'%s': key of %zu bytes (1 to %d)",
                       w->path, len, QP_GGUF_MAX_KEY);
    for (size_t i = 0; i < len; i++)
        if (key[i] <= 0x20 || key[i] >= 0x7f)
            return qp_fail(err, QP_E_INVAL, "'%s': key '%s': byte %zu is not "
                           "printable ASCII", w->path, key, i);
    bool dup = false;
    enum qp_status st = qp_strmap_put(&w->keys, key, (size_t)w->n_kv, &dup, err);
    if (st)
        return st;
    if (dup)
        return qp_fail(err, QP_E_INVAL, "'%s': key '%s' added twice", w->path,
                       key);
    if (!kv_u64(w, len) || !kv_put(w, key, len) || !kv_u32(w, type) ||
        (type == QP_GGUF_ARRAY && (!kv_u32(w, elem) || !kv_u64(w, count))))
        return qp_fail(err, QP_E_NOMEM, "'%s': out of memory", w->path);
    w->n_kv++;
    return QP_OK;
}

static enum qp_status kv_payload(struct qp_gguf_writer *w, const void *p,
                                 size_t n, struct qp_error *err)
{
    return kv_put(w, p, n) ? QP_OK
                           : qp_fail(err, QP_E_NOMEM, "'%s': out of memory",
                                     w->path);
}

/* A scalar of a fixed-size type. */
static enum qp_status scalar(struct qp_gguf_writer *w, const char *key,
                             enum qp_gguf_type t, const void *v, size_t n,
                             struct qp_error *err)
{
    bool align = !strcmp(key, QP_GGUF_KEY_ALIGNMENT);
    uint32_t a = 0;
    if (align) {
        memcpy(&a, v, n < 4 ? n : 4);
        if (t != QP_GGUF_U32 || !a || (a & (a - 1)))
            return qp_fail(err, QP_E_INVAL, "'%s': key '%s' must be a u32 "
                           "power of two", w->path, key);
    }
    enum qp_status st = kv_begin(w, key, t, QP_GGUF_U8, 0, err);
    if (!st && align)
        w->alignment = a;
    return st ? st : kv_payload(w, v, n, err);
}

enum qp_status qp_gguf_add_u32(struct qp_gguf_writer *w, const char *key,
                               uint32_t v, struct qp_error *err)
{
    return scalar(w, key, QP_GGUF_U32, &v, 4, err);
}

enum qp_status qp_gguf_add_i32(struct qp_gguf_writer *w, const char *key,
                               int32_t v, struct qp_error *err)
{
    return scalar(w, key, QP_GGUF_I32, &v, 4, err);
}

enum qp_status qp_gguf_add_u64(struct qp_gguf_writer *w, const char *key,
                               uint64_t v, struct qp_error *err)
{
    return scalar(w, key, QP_GGUF_U64, &v, 8, err);
}

enum qp_status qp_gguf_add_f32(struct qp_gguf_writer *w, const char *key,
                               float v, struct qp_error *err)
{
    return scalar(w, key, QP_GGUF_F32, &v, 4, err);
}

enum qp_status qp_gguf_add_bool(struct qp_gguf_writer *w, const char *key,
                                bool v, struct qp_error *err)
{
    uint8_t b = v ? 1 : 0;
    return scalar(w, key, QP_GGUF_BOOL, &b, 1, err);
}

enum qp_status qp_gguf_add_str(struct qp_gguf_writer *w, const char *key,
                               const char *s, struct qp_error *err)
{
    size_t n = strlen(s);
    enum qp_status st = kv_begin(w, key, QP_GGUF_STRING, QP_GGUF_U8, 0, err);
    if (!st && !kv_u64(w, n))
        st = qp_fail(err, QP_E_NOMEM, "'%s': out of memory", w->path);
    return st ? st : kv_payload(w, s, n, err);
}

/* Bytes of one element of a fixed-size type (0 for the others). */
static size_t fixed_size(enum qp_gguf_type t)
{
    switch (t) {
    case QP_GGUF_U8: case QP_GGUF_I8: case QP_GGUF_BOOL: return 1;
    case QP_GGUF_U16: case QP_GGUF_I16: return 2;
    case QP_GGUF_U32: case QP_GGUF_I32: case QP_GGUF_F32: return 4;
    case QP_GGUF_U64: case QP_GGUF_I64: case QP_GGUF_F64: return 8;
    default: return 0;
    }
}

enum qp_status qp_gguf_add_array(struct qp_gguf_writer *w, const char *key,
                                 enum qp_gguf_type elem, const void *data,
                                 size_t n, struct qp_error *err)
{
    size_t es = fixed_size(elem), bytes;
    if (!es || elem == QP_GGUF_BOOL)
        return qp_fail(err, QP_E_INVAL, "'%s': key '%s': arrays of %s need "
                       "their own function", w->path, key,
                       qp_gguf_type_name(elem));
    if (qp_size_mul(n, es, &bytes))
        return qp_fail(err, QP_E_OVERFLOW, "'%s': key '%s': array too large",
                       w->path, key);
    enum qp_status st = kv_begin(w, key, QP_GGUF_ARRAY, elem, n, err);
    return st ? st : kv_payload(w, data, bytes, err);
}

enum qp_status qp_gguf_add_str_array(struct qp_gguf_writer *w, const char *key,
                                     const char *const *s, const size_t *lens,
                                     size_t n, struct qp_error *err)
{
    enum qp_status st = kv_begin(w, key, QP_GGUF_ARRAY, QP_GGUF_STRING, n, err);
    for (size_t i = 0; i < n && !st; i++) {
        size_t len = lens ? lens[i] : strlen(s[i]);
        if (!kv_u64(w, len))
            st = qp_fail(err, QP_E_NOMEM, "'%s': out of memory", w->path);
        else
            st = kv_payload(w, s[i], len, err);
    }
    return st;
}

enum qp_status qp_gguf_add_value(struct qp_gguf_writer *w, const char *key,
                                 const struct qp_gguf_value *v,
                                 struct qp_error *err)
{
    if ((unsigned)v->type >= QP_GGUF_TYPE_COUNT)
        return qp_fail(err, QP_E_INVAL, "'%s': key '%s': invalid value type",
                       w->path, key);
    if (fixed_size(v->type))
        return scalar(w, key, v->type, v->p, v->size, err);
    enum qp_status st = kv_begin(w, key, v->type, v->elem, v->count, err);
    if (!st && v->type == QP_GGUF_STRING && !kv_u64(w, v->size))
        st = qp_fail(err, QP_E_NOMEM, "'%s': out of memory", w->path);
    return st ? st : kv_payload(w, v->p, v->size, err);
}

static enum qp_status declare(struct qp_gguf_writer *w, const char *name,
                              int ndim, const int64_t *ne,
                              enum qp_ggml_type type, struct wtensor **out,
                              struct qp_error *err)
{
    size_t len = strlen(name);
    if (!len || len > QP_GGUF_MAX_NAME)
        return qp_fail(err, QP_E_INVAL, "'%s': tensor name '%s' is %zu bytes; "
                       "GGUF (llama.cpp) allows 1 to %d", w->path, name, len,
                       QP_GGUF_MAX_NAME);
    if (ndim < 1 || ndim > QP_GGUF_MAX_DIMS)
        return qp_fail(err, QP_E_INVAL, "'%s': tensor '%s' has %d dims (1 to "
                       "%d)", w->path, name, ndim, QP_GGUF_MAX_DIMS);
    if ((unsigned)type >= QP_GGML_TYPE_COUNT)
        return qp_fail(err, QP_E_INVAL, "'%s': tensor '%s': invalid type",
                       w->path, name);
    size_t numel = 1;
    for (int k = 0; k < ndim; k++)
        if (ne[k] < 0 || qp_size_mul(numel, (size_t)ne[k], &numel))
            return qp_fail(err, QP_E_INVAL, "'%s': tensor '%s': dim %d (%lld) "
                           "is negative or too large", w->path, name, k,
                           (long long)ne[k]);
    const struct qp_ggml_type_info *ti = qp_ggml_type_info(type);
    size_t nbytes;
    if (ne[0] % ti->block)
        return qp_fail(err, QP_E_SHAPE, "'%s': tensor '%s': rows of %lld "
                       "values are not a multiple of %s's block of %lld",
                       w->path, name, (long long)ne[0], ti->name,
                       (long long)ti->block);
    if (numel > INT64_MAX || !qp_ggml_row_bytes(type, (int64_t)numel, &nbytes))
        return qp_fail(err, QP_E_OVERFLOW, "'%s': tensor '%s' is too large",
                       w->path, name);
    bool dup = false;
    enum qp_status st = qp_strmap_put(&w->names, name, w->n_t, &dup, err);
    if (st)
        return st;
    if (dup)
        return qp_fail(err, QP_E_INVAL, "'%s': tensor '%s' added twice",
                       w->path, name);
    if (w->n_t == w->cap_t) {
        size_t cap = w->cap_t ? 2 * w->cap_t : 64;
        struct wtensor *t = realloc(w->t, cap * sizeof *t);
        if (!t)
            return qp_fail(err, QP_E_NOMEM, "'%s': out of memory", w->path);
        w->t = t;
        w->cap_t = cap;
    }
    struct wtensor *t = &w->t[w->n_t];
    memset(t, 0, sizeof *t);
    if (!(t->name = strdup(name)))
        return qp_fail(err, QP_E_NOMEM, "'%s': out of memory", w->path);
    w->n_t++;
    t->ndim = ndim;
    for (int k = 0; k < QP_GGUF_MAX_DIMS; k++)
        t->ne[k] = k < ndim ? ne[k] : 1;
    t->type = type;
    t->nbytes = nbytes;
    *out = t;
    return QP_OK;
}

enum qp_status qp_gguf_add_tensor(struct qp_gguf_writer *w, const char *name,
                                  int ndim, const int64_t *ne,
                                  enum qp_ggml_type type, const void *data,
                                  struct qp_error *err)
{
    struct wtensor *t;
    enum qp_status st = declare(w, name, ndim, ne, type, &t, err);
    if (!st)
        t->data = data;
    return st;
}

enum qp_status qp_gguf_add_tensor_fill(struct qp_gguf_writer *w,
                                       const char *name, int ndim,
                                       const int64_t *ne, enum qp_ggml_type type,
                                       qp_gguf_fill_fn fill, void *ctx,
                                       struct qp_error *err)
{
    struct wtensor *t;
    enum qp_status st = declare(w, name, ndim, ne, type, &t, err);
    if (!st) {
        t->fill = fill;
        t->ctx = ctx;
    }
    return st;
}

/* ---- commit ------------------------------------------------------------------ */

struct out {
    FILE *fp;
    uint64_t written;
    bool failed;
};

static void put(struct out *o, const void *p, size_t n)
{
    if (!o->failed && n && fwrite(p, 1, n, o->fp) != n)
        o->failed = true;
    o->written += n;
}

static void put_u32(struct out *o, uint32_t v) { put(o, &v, 4); }
static void put_u64(struct out *o, uint64_t v) { put(o, &v, 8); }

static void pad(struct out *o, uint32_t alignment)
{
    static const unsigned char zeros[256];
    size_t n = (size_t)((alignment - o->written % alignment) % alignment);
    while (n) {
        size_t k = n < sizeof zeros ? n : sizeof zeros;
        put(o, zeros, k);
        n -= k;
    }
}

static uint64_t padded(uint64_t n, uint32_t a) { return n + (a - n % a) % a; }

static void put_header(const struct qp_gguf_writer *w, struct out *o)
{
    put(o, "GGUF", 4);
    put_u32(o, QP_GGUF_VERSION);
    put_u64(o, w->n_t);
    put_u64(o, w->n_kv);
    put(o, w->kvs, w->kv_len);
    uint64_t off = 0;
    for (size_t i = 0; i < w->n_t; i++) {
        const struct wtensor *t = &w->t[i];
        size_t len = strlen(t->name);
        put_u64(o, len);
        put(o, t->name, len);
        put_u32(o, (uint32_t)t->ndim);
        for (int k = 0; k < t->ndim; k++)
            put_u64(o, (uint64_t)t->ne[k]);
        put_u32(o, qp_ggml_type_info(t->type)->id);
        put_u64(o, off);
        off += padded(t->nbytes, w->alignment);
    }
    pad(o, w->alignment);
}

/* Writes every tensor's data, each padded; buf holds filled tensors. */
static enum qp_status put_data(const struct qp_gguf_writer *w, struct out *o,
                               struct qp_error *err)
{
    void *buf = NULL;
    size_t cap = 0;
    enum qp_status st = QP_OK;
    for (size_t i = 0; i < w->n_t && !st && !o->failed; i++) {
        const struct wtensor *t = &w->t[i];
        const void *src = t->data;
        if (t->fill) {
            if (t->nbytes > cap) {
                free(buf);
                cap = t->nbytes;
                if (!(buf = malloc(cap))) {
                    st = qp_fail(err, QP_E_NOMEM, "'%s': tensor '%s': out of "
                                 "memory", w->path, t->name);
                    break;
                }
            }
            if ((st = t->fill(t->ctx, buf, t->nbytes, err))) {
                qp_error_prefix(err, "'%s': tensor '%s': ", w->path, t->name);
                break;
            }
            src = buf;
        }
        put(o, src, t->nbytes);
        pad(o, w->alignment);
    }
    free(buf);
    return st;
}

enum qp_status qp_gguf_writer_commit(struct qp_gguf_writer *w,
                                     struct qp_error *err)
{
    for (size_t i = 0; i < w->n_t; i++)
        if (!w->t[i].data && !w->t[i].fill && w->t[i].nbytes) {
            enum qp_status st = qp_fail(err, QP_E_INVAL, "'%s': tensor '%s' "
                                        "has no data", w->path, w->t[i].name);
            qp_gguf_writer_free(w);
            return st;
        }
    struct qp_outfile *of;
    enum qp_status st = qp_outfile_open(w->path, &of, err);
    if (st) {
        qp_gguf_writer_free(w);
        return st;
    }
    struct out o = {of->fp, 0, false};
    put_header(w, &o);
    st = put_data(w, &o, err);
    if (!st && o.failed)
        st = qp_fail(err, QP_E_IO, "'%s': write failed: %s", w->path,
                     strerror(errno));
    if (st)
        qp_outfile_abort(of);
    else
        st = qp_outfile_commit(of, err);
    qp_gguf_writer_free(w);
    return st;
}
