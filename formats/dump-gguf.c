/* formats/dump-gguf.c: a GGUF file as a dump (formats/gguf.h).
 *
 * Reading: one entry per tensor, in file order, with the shape reversed
 * from GGUF's ne (ne = {in, out} lists as [out, in], the torch order).
 * Plain types keep their dtype (f32, f16, bf16, i8..i64, f64) and borrow
 * the mapping when aligned; block types (q8_0, q4_0, q4_1, q5_0, q4_K,
 * q6_K) load as f32, decoded as ggml decodes them, and their scheme is
 * recorded in the metadata as "scheme:NAME" (q4_k, ...), the key
 * `qprobe quantize` writes. Every KV is metadata too: strings as they are
 * (up to a NUL byte), numbers in decimal (floats in shortest round-trip
 * form), bools as true / false, arrays as JSON lists when they have at
 * most 64 elements, else as "[N x TYPE]".
 *
 * Writing (formats/dump.h's writer, QP_DUMP_GGUF): plain tensors of the
 * types above, and ggml blocks through qp_dump_gguf_add_ggml; metadata as
 * string KVs. Tensor data is spooled to an unlinked temporary file as it
 * is added and copied after the header at commit (formats/gguf.h's
 * writer). Integer tensors with quantization parameters have no GGUF
 * type: refused, naming the tensor. */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/outfile.h"
#include "formats/dump-gguf.h"
#include "formats/gguf.h"

/* ---- reading ------------------------------------------------------------------ */

static void gguf_close(struct qp_dump *d)
{
    qp_gguf_free(d->impl);
    d->impl = NULL;
}

/* qprobe's dtype of a GGUF tensor's entries. */
static enum qp_dtype entry_dtype(enum qp_ggml_type t)
{
    enum qp_dtype dt = qp_ggml_type_info(t)->dtype;
    return dt == QP_DTYPE_COUNT ? QP_DTYPE_F32 : dt;
}

static void shape_of(const struct qp_gguf_tensor *t, int *ndim, int64_t *shape)
{
    *ndim = t->ndim;
    for (int k = 0; k < t->ndim; k++)
        shape[k] = t->ne[t->ndim - 1 - k];
}

/* Appends to buf (size cap, at *len) without overflowing; truncates. */
__attribute__((format(printf, 4, 5)))
static void append(char *buf, size_t cap, size_t *len, const char *fmt, ...)
{
    if (*len >= cap)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf + *len, cap - *len, fmt, ap);
    va_end(ap);
    *len = n < 0 ? cap : *len + (size_t)n > cap ? cap : *len + (size_t)n;
}

/* A scalar or string value as text (strings JSON-quoted when quoted). */
static void scalar_text(const struct qp_gguf_value *v, bool quoted, char *buf,
                        size_t cap, size_t *len)
{
    int64_t i;
    double f;
    if (v->type == QP_GGUF_BOOL) {
        append(buf, cap, len, "%s", v->p[0] ? "true" : "false");
    } else if (v->type == QP_GGUF_STRING) {
        size_t n = strnlen((const char *)v->p, v->size);
        if (!quoted) {
            append(buf, cap, len, "%.*s", (int)(n < 65536 ? n : 65536),
                   (const char *)v->p);
            return;
        }
        append(buf, cap, len, "\"");
        for (size_t k = 0; k < n && *len < cap; k++) {
            unsigned char c = v->p[k];
            if (c == '"' || c == '\\')
                append(buf, cap, len, "\\%c", c);
            else if (c < 0x20)
                append(buf, cap, len, "\\u%04x", c);
            else
                append(buf, cap, len, "%c", c);
        }
        append(buf, cap, len, "\"");
    } else if (v->type == QP_GGUF_F32 || v->type == QP_GGUF_F64) {
        qp_gguf_value_float(v, &f);
        char num[40];
        for (int prec = v->type == QP_GGUF_F32 ? 6 : 15; prec <= 17; prec++) {
            snprintf(num, sizeof num, "%.*g", prec, f);
            if (v->type == QP_GGUF_F32 ? (float)strtod(num, NULL) == (float)f
                                       : strtod(num, NULL) == f)
                break;
        }
        append(buf, cap, len, "%s", num);
    } else if (v->type == QP_GGUF_U64) {
        uint64_t u;
        memcpy(&u, v->p, 8);
        append(buf, cap, len, "%llu", (unsigned long long)u);
    } else if (qp_gguf_value_int(v, &i)) {
        append(buf, cap, len, "%lld", (long long)i);
    }
}

#define ARRAY_SHOWN 64

static void value_text(const struct qp_gguf_value *v, bool quoted, char *buf,
                       size_t cap, size_t *len)
{
    if (v->type != QP_GGUF_ARRAY) {
        scalar_text(v, quoted, buf, cap, len);
        return;
    }
    if (v->count > ARRAY_SHOWN) {
        append(buf, cap, len, "[%llu x %s]", (unsigned long long)v->count,
               qp_gguf_type_name(v->elem));
        return;
    }
    append(buf, cap, len, "[");
    for (uint64_t k = 0; k < v->count; k++) {
        struct qp_gguf_value e;
        qp_gguf_array_at(v, k, &e);
        if (k)
            append(buf, cap, len, ", ");
        value_text(&e, true, buf, cap, len);
    }
    append(buf, cap, len, "]");
}

static enum qp_status add_meta(struct qp_dump *d, const struct qp_gguf *g,
                               struct qp_error *err)
{
    enum { CAP = 1 << 16 };
    char *buf = malloc(CAP);
    if (!buf)
        return qp_fail(err, QP_E_NOMEM, "'%s': out of memory", d->path);
    enum qp_status st = QP_OK;
    for (size_t i = 0; i < g->n_kv && !st; i++) {
        size_t len = 0;
        value_text(&g->kv[i].val, false, buf, CAP - 1, &len);
        buf[len] = '\0';
        st = qp_dump_meta_set(&d->meta, g->kv[i].key, buf, err);
    }
    for (size_t i = 0; i < g->n_tensors && !st; i++) {
        const char *scheme = qp_ggml_type_info(g->tensors[i].type)->scheme;
        if (!scheme)
            continue;
        size_t n = strlen(g->tensors[i].name) + sizeof "scheme:";
        char *key = malloc(n);
        if (!key) {
            st = qp_fail(err, QP_E_NOMEM, "'%s': out of memory", d->path);
            break;
        }
        snprintf(key, n, "scheme:%s", g->tensors[i].name);
        if (!qp_dump_meta_get(&d->meta, key))
            st = qp_dump_meta_set(&d->meta, key, scheme, err);
        free(key);
    }
    free(buf);
    return st;
}

static enum qp_status gguf_open(struct qp_dump *d, struct qp_error *err)
{
    struct qp_gguf *g;
    enum qp_status st = qp_gguf_load(d->path, &g, err);
    if (st)
        return st;
    d->impl = g;
    d->entries = calloc(g->n_tensors + 1, sizeof *d->entries);
    if (!d->entries)
        return qp_fail(err, QP_E_NOMEM, "'%s': out of memory", d->path);
    for (size_t i = 0; i < g->n_tensors; i++) {
        const struct qp_gguf_tensor *t = &g->tensors[i];
        int ndim;
        int64_t shape[QP_GGUF_MAX_DIMS];
        shape_of(t, &ndim, shape);
        if ((st = qp_tensor_new_desc(t->name, entry_dtype(t->type), ndim, shape,
                                     &d->entries[i], err)))
            return qp_error_prefix(err, "'%s': ", d->path);
        d->count = i + 1;
    }
    return add_meta(d, g, err);
}

static enum qp_status gguf_load(struct qp_dump *d, size_t i,
                                struct qp_tensor **out, struct qp_error *err)
{
    const struct qp_gguf *g = d->impl;
    const struct qp_gguf_tensor *t = &g->tensors[i];
    int ndim;
    int64_t shape[QP_GGUF_MAX_DIMS];
    shape_of(t, &ndim, shape);
    enum qp_dtype dt = entry_dtype(t->type);
    size_t esize = qp_ggml_type_info(t->type)->block_bytes;
    bool plain = qp_ggml_type_info(t->type)->dtype != QP_DTYPE_COUNT;
    if (plain && (uintptr_t)t->data % esize == 0)
        return qp_tensor_wrap(t->name, dt, ndim, shape, t->data, t->nbytes,
                              g->map, out, err);
    enum qp_status st = qp_tensor_new(t->name, dt, ndim, shape, out, err);
    if (st)
        return st;
    if (plain)
        memcpy((*out)->data, t->data, t->nbytes);
    else
        qp_gguf_tensor_read_f32(t, (*out)->data);
    return QP_OK;
}

const struct qp_dump_ops qp_dump_ops_gguf = {
    "gguf", gguf_open, gguf_load, gguf_close,
};

/* ---- writing ------------------------------------------------------------------ */

struct span {
    int fd;
    uint64_t off;
};

struct gguf_dw {
    struct qp_gguf_writer *w;
    struct qp_outfile *spool;   /* tensor bytes; its name unlinked at once */
    struct span **spans;        /* per tensor (fill callback contexts, which
                                 * the writer keeps: allocated one by one) */
    size_t n, cap;
    uint64_t off;
};

static void gw_free(struct gguf_dw *g)
{
    if (!g)
        return;
    qp_gguf_writer_free(g->w);
    qp_outfile_abort(g->spool);
    for (size_t i = 0; i < g->n; i++)
        free(g->spans[i]);
    free(g->spans);
    free(g);
}

static enum qp_status gw_open(struct qp_dump_writer *dw, struct qp_error *err)
{
    struct gguf_dw *g = calloc(1, sizeof *g);
    char *home = qp_outfile_temp_home(dw->path); /* not /dev for /dev/full */
    size_t len = home ? strlen(home) + sizeof ".data" : 0;
    char *spool = home ? malloc(len) : NULL;
    enum qp_status st = g && spool ? qp_gguf_writer_new(dw->path, &g->w, err)
                                   : qp_fail(err, QP_E_NOMEM, "out of memory");
    if (!st) {
        snprintf(spool, len, "%s.data", home);
        st = qp_outfile_open(spool, &g->spool, err);
    }
    free(spool);
    free(home);
    if (st) {
        gw_free(g);
        return st;
    }
    unlink(g->spool->tmp_path); /* nothing is left behind if we die */
    dw->impl = g;
    return QP_OK;
}

/* Reads a spooled tensor back during commit. */
static enum qp_status fill_from_spool(void *ctx, void *buf, size_t nbytes,
                                      struct qp_error *err)
{
    const struct span *s = ctx;
    size_t done = 0;
    while (done < nbytes) {
        ssize_t r = pread(s->fd, (char *)buf + done, nbytes - done,
                          (off_t)(s->off + done));
        if (r <= 0)
            return qp_fail(err, QP_E_IO, "reading the spooled data back "
                           "failed: %s", r < 0 ? strerror(errno) : "short file");
        done += (size_t)r;
    }
    return QP_OK;
}

/* Spools nbytes of data and declares the tensor. */
static enum qp_status spool_tensor(struct qp_dump_writer *dw, const char *name,
                                   int ndim, const int64_t *ne,
                                   enum qp_ggml_type type, const void *data,
                                   size_t nbytes, struct qp_error *err)
{
    struct gguf_dw *g = dw->impl;
    if (g->n == g->cap) {
        size_t cap = g->cap ? 2 * g->cap : 64;
        struct span **v = realloc(g->spans, cap * sizeof *v);
        if (!v)
            return qp_fail(err, QP_E_NOMEM, "out of memory");
        g->spans = v;
        g->cap = cap;
    }
    struct span *s = malloc(sizeof *s);
    if (!s)
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    g->spans[g->n++] = s;
    s->fd = fileno(g->spool->fp);
    s->off = g->off;
    enum qp_status st = qp_gguf_add_tensor_fill(g->w, name, ndim, ne, type,
                                                fill_from_spool, s, err);
    if (st)
        return st;
    if (nbytes && fwrite(data, 1, nbytes, g->spool->fp) != nbytes)
        return qp_fail(err, QP_E_IO, "'%s': tensor '%s': write failed: %s",
                       dw->path, name, strerror(errno));
    g->off += nbytes;
    return QP_OK;
}

/* The ggml type of a plain dtype; false for those GGUF lacks. */
static bool plain_type(enum qp_dtype dt, enum qp_ggml_type *out)
{
    for (int t = 0; t < QP_GGML_TYPE_COUNT; t++)
        if (qp_ggml_type_info((enum qp_ggml_type)t)->dtype == dt) {
            *out = (enum qp_ggml_type)t;
            return true;
        }
    return false;
}

/* ne of a tensor of shape [ndim] (reversed; a scalar is {1}). */
static enum qp_status ne_of(const char *path, const char *name, int ndim,
                            const int64_t *shape, int *nd, int64_t *ne,
                            struct qp_error *err)
{
    if (ndim > QP_GGUF_MAX_DIMS)
        return qp_fail(err, QP_E_UNSUPPORTED, "'%s': tensor '%s' has %d dims; "
                       "GGUF holds at most %d", path, name, ndim,
                       QP_GGUF_MAX_DIMS);
    *nd = ndim ? ndim : 1;
    ne[0] = 1;
    for (int k = 0; k < ndim; k++)
        ne[k] = shape[ndim - 1 - k];
    return QP_OK;
}

static enum qp_status gw_add(struct qp_dump_writer *dw, const struct qp_tensor *t,
                             struct qp_error *err)
{
    enum qp_ggml_type type;
    if (t->qp && qp_dtype_is_int(t->dtype))
        return qp_fail(err, QP_E_UNSUPPORTED, "'%s': tensor '%s' holds %s "
                       "integers with scales, which GGUF cannot store; use a "
                       "ggml scheme (q8_0, q4_k, ...) or --fake", dw->path,
                       t->name, qp_dtype_name(t->dtype));
    if (!plain_type(t->dtype, &type))
        return qp_fail(err, QP_E_UNSUPPORTED, "'%s': tensor '%s': GGUF has no "
                       "%s type", dw->path, t->name, qp_dtype_name(t->dtype));
    int nd = 1;
    int64_t ne[QP_GGUF_MAX_DIMS];
    enum qp_status st = ne_of(dw->path, t->name, t->ndim, t->shape, &nd, ne, err);
    return st ? st : spool_tensor(dw, t->name, nd, ne, type, t->data, t->nbytes,
                                  err);
}

enum qp_status qp_dump_gguf_add_ggml(struct qp_dump_writer *dw, const char *name,
                                     const struct qp_ggml_data *d,
                                     struct qp_error *err)
{
    if (dw->format != QP_DUMP_GGUF)
        return qp_fail(err, QP_E_INVAL, "'%s': ggml blocks go to GGUF files "
                       "only", dw->path);
    if (d->ndim > QP_GGUF_MAX_DIMS)
        return qp_fail(err, QP_E_UNSUPPORTED, "'%s': tensor '%s' has %d dims; "
                       "GGUF holds at most %d", dw->path, name, d->ndim,
                       QP_GGUF_MAX_DIMS);
    bool dup = false;
    enum qp_status st = qp_strmap_put(&dw->names, name, dw->count, &dup, err);
    if (!st && dup)
        st = qp_fail(err, QP_E_INVAL, "'%s': tensor name '%s' is used twice",
                     dw->path, name);
    if (!st)
        st = spool_tensor(dw, name, d->ndim, d->ne, d->type, d->data, d->nbytes,
                          err);
    if (!st)
        dw->count++;
    return st;
}

static enum qp_status gw_commit(struct qp_dump_writer *dw, struct qp_error *err)
{
    struct gguf_dw *g = dw->impl;
    enum qp_status st = QP_OK;
    for (size_t i = 0; i < dw->meta.count && !st; i++)
        st = qp_gguf_add_str(g->w, dw->meta.keys[i], dw->meta.values[i], err);
    if (!st && fflush(g->spool->fp))
        st = qp_fail(err, QP_E_IO, "'%s': write failed: %s", dw->path,
                     strerror(errno));
    if (!st) {
        st = qp_gguf_writer_commit(g->w, err);
        g->w = NULL;
    }
    gw_free(g);
    dw->impl = NULL;
    return st;
}

static void gw_abort(struct qp_dump_writer *dw)
{
    gw_free(dw->impl);
    dw->impl = NULL;
}

const struct qp_dump_writer_ops qp_dump_writer_ops_gguf = {
    "gguf", gw_open, gw_add, gw_commit, gw_abort,
};
