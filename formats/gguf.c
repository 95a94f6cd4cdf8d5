/* formats/gguf.c: the GGUF reader and the value accessors (the writer is
 * formats/gguf-write.c). */
#include "formats/gguf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/size.h"

static const char *const type_names[] = {
    "u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "string", "array",
    "u64", "i64", "f64",
};
_Static_assert(sizeof type_names / sizeof type_names[0] == QP_GGUF_TYPE_COUNT,
               "type_names must cover every GGUF value type");

/* Bytes of a fixed-size value type; 0 for string and array. */
static const uint8_t type_sizes[] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
_Static_assert(sizeof type_sizes == QP_GGUF_TYPE_COUNT,
               "type_sizes must cover every GGUF value type");

const char *qp_gguf_type_name(enum qp_gguf_type t)
{
    return (unsigned)t < QP_GGUF_TYPE_COUNT ? type_names[t] : "?";
}

/* ---- the cursor ------------------------------------------------------------- */

struct rd {
    const unsigned char *p;
    size_t len, pos;
    const char *what;
    struct qp_error *err;
};

__attribute__((format(printf, 2, 3)))
static enum qp_status bad(struct rd *r, const char *fmt, ...)
{
    char msg[QP_ERROR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return qp_fail(r->err, QP_E_FORMAT, "'%s': %s", r->what, msg);
}

static size_t left(const struct rd *r) { return r->len - r->pos; }

/* n little-endian bytes at the cursor into *v (n <= 8); the caller checked
 * there are n left. */
static uint64_t take(struct rd *r, size_t n)
{
    uint64_t v = 0;
    memcpy(&v, r->p + r->pos, n);
    r->pos += n;
    return v;
}

/* A u32 or u64 field called `field` of `whose`. */
static enum qp_status field(struct rd *r, size_t n, const char *whose,
                            const char *name, uint64_t *v)
{
    if (left(r) < n)
        return bad(r, "%s: the file ends inside its %s (offset %zu)", whose,
                   name, r->pos);
    *v = take(r, n);
    return QP_OK;
}

/* A GGUF string of at most max bytes: *s, *len into the file. */
static enum qp_status string(struct rd *r, const char *whose, const char *name,
                             uint64_t max, const unsigned char **s,
                             uint64_t *len)
{
    enum qp_status st = field(r, 8, whose, name, len);
    if (st)
        return st;
    if (*len > max)
        return bad(r, "%s: %s of %llu bytes (at most %llu)", whose, name,
                   (unsigned long long)*len, (unsigned long long)max);
    if (*len > left(r))
        return bad(r, "%s: %s of %llu bytes runs past the end of the file "
                   "(%zu bytes left)", whose, name, (unsigned long long)*len,
                   left(r));
    *s = r->p + r->pos;
    r->pos += (size_t)*len;
    return QP_OK;
}

/* ---- values ------------------------------------------------------------------ */

static bool valid_type(uint64_t t) { return t < QP_GGUF_TYPE_COUNT; }

/* Reads a value of type t at the cursor into *v (without offsets), checking
 * everything; depth counts enclosing arrays. */
static enum qp_status value(struct rd *r, uint64_t t, int depth,
                            const char *whose, struct qp_gguf_value *v);

static enum qp_status array(struct rd *r, int depth, const char *whose,
                            struct qp_gguf_value *v)
{
    uint64_t et = 0, n = 0;
    enum qp_status st;
    if (depth >= QP_GGUF_MAX_DEPTH)
        return bad(r, "%s: arrays nested deeper than %d", whose,
                   QP_GGUF_MAX_DEPTH);
    if ((st = field(r, 4, whose, "array element type", &et)) ||
        (st = field(r, 8, whose, "array length", &n)))
        return st;
    if (!valid_type(et))
        return bad(r, "%s: unknown array element type %llu", whose,
                   (unsigned long long)et);
    v->elem = (enum qp_gguf_type)et;
    v->count = n;
    v->p = r->p + r->pos;
    size_t es = type_sizes[et];
    /* every element takes at least one byte (strings and arrays 8) */
    if (n > left(r) / (es ? es : 8))
        return bad(r, "%s: array of %llu %s elements needs more than the %zu "
                   "bytes left", whose, (unsigned long long)n, type_names[et],
                   left(r));
    if (es) {
        size_t bytes = (size_t)n * es;
        if (et == QP_GGUF_BOOL)
            for (size_t i = 0; i < bytes; i++)
                if (r->p[r->pos + i] > 1)
                    return bad(r, "%s: element %zu is bool %u (must be 0 or 1)",
                               whose, i, r->p[r->pos + i]);
        r->pos += bytes;
    } else {
        for (uint64_t i = 0; i < n; i++) {
            struct qp_gguf_value e;
            if ((st = value(r, et, depth + 1, whose, &e)))
                return st;
        }
    }
    v->size = (size_t)(r->p + r->pos - v->p);
    return QP_OK;
}

static enum qp_status value(struct rd *r, uint64_t t, int depth,
                            const char *whose, struct qp_gguf_value *v)
{
    memset(v, 0, sizeof *v);
    if (!valid_type(t))
        return bad(r, "%s: unknown value type %llu", whose,
                   (unsigned long long)t);
    v->type = (enum qp_gguf_type)t;
    if (t == QP_GGUF_ARRAY)
        return array(r, depth, whose, v);
    if (t == QP_GGUF_STRING) {
        const unsigned char *s = NULL;
        uint64_t len = 0;
        enum qp_status st = string(r, whose, "string", UINT64_MAX, &s, &len);
        v->p = s;
        v->count = len;
        v->size = (size_t)len;
        return st;
    }
    size_t n = type_sizes[t];
    if (left(r) < n)
        return bad(r, "%s: the file ends inside its %s value", whose,
                   type_names[t]);
    if (t == QP_GGUF_BOOL && r->p[r->pos] > 1)
        return bad(r, "%s: bool value %u (must be 0 or 1)", whose,
                   r->p[r->pos]);
    v->p = r->p + r->pos;
    v->size = n;
    r->pos += n;
    return QP_OK;
}

/* Bytes of the element at p (type t) within a valid array: the walk. */
static size_t elem_bytes(enum qp_gguf_type t, const unsigned char *p)
{
    if (type_sizes[t])
        return type_sizes[t];
    uint64_t n;
    if (t == QP_GGUF_STRING) {
        memcpy(&n, p, 8);
        return 8 + (size_t)n;
    }
    uint32_t et;
    memcpy(&et, p, 4);
    memcpy(&n, p + 4, 8);
    size_t off = 12;
    if (type_sizes[et])
        return off + (size_t)n * type_sizes[et];
    for (uint64_t i = 0; i < n; i++)
        off += elem_bytes((enum qp_gguf_type)et, p + off);
    return off;
}

/* The element at p of type t as a value. */
static void elem_value(enum qp_gguf_type t, const unsigned char *p,
                       struct qp_gguf_value *out)
{
    memset(out, 0, sizeof *out);
    out->type = t;
    if (t == QP_GGUF_STRING) {
        memcpy(&out->count, p, 8);
        out->p = p + 8;
        out->size = (size_t)out->count;
    } else if (t == QP_GGUF_ARRAY) {
        uint32_t et;
        memcpy(&et, p, 4);
        memcpy(&out->count, p + 4, 8);
        out->elem = (enum qp_gguf_type)et;
        out->p = p + 12;
        out->size = elem_bytes(t, p) - 12;
    } else {
        out->p = p;
        out->size = type_sizes[t];
    }
}

void qp_gguf_array_at(const struct qp_gguf_value *a, uint64_t i,
                      struct qp_gguf_value *out)
{
    size_t off = 0;
    if (type_sizes[a->elem])
        off = (size_t)i * type_sizes[a->elem];
    else if (a->offs)
        off = (size_t)a->offs[i];
    else
        for (uint64_t k = 0; k < i; k++)
            off += elem_bytes(a->elem, a->p + off);
    elem_value(a->elem, a->p + off, out);
}

bool qp_gguf_value_int(const struct qp_gguf_value *v, int64_t *out)
{
    uint64_t u = 0;
    if (v->type >= QP_GGUF_TYPE_COUNT || !type_sizes[v->type] ||
        v->type == QP_GGUF_F32 || v->type == QP_GGUF_F64)
        return false;
    memcpy(&u, v->p, type_sizes[v->type]);
    switch (v->type) {
    case QP_GGUF_I8: *out = (int8_t)u; return true;
    case QP_GGUF_I16: *out = (int16_t)u; return true;
    case QP_GGUF_I32: *out = (int32_t)u; return true;
    case QP_GGUF_I64: *out = (int64_t)u; return true;
    default:
        if (u > INT64_MAX)
            return false;
        *out = (int64_t)u;
        return true;
    }
}

bool qp_gguf_value_float(const struct qp_gguf_value *v, double *out)
{
    if (v->type == QP_GGUF_F32) {
        float f;
        memcpy(&f, v->p, 4);
        *out = f;
        return true;
    }
    if (v->type == QP_GGUF_F64) {
        memcpy(out, v->p, 8);
        return true;
    }
    int64_t i;
    if (v->type == QP_GGUF_U64) {
        uint64_t u;
        memcpy(&u, v->p, 8);
        *out = (double)u;
        return true;
    }
    if (!qp_gguf_value_int(v, &i))
        return false;
    *out = (double)i;
    return true;
}

/* ---- the file -------------------------------------------------------------- */

void qp_gguf_free(struct qp_gguf *g)
{
    if (!g)
        return;
    for (size_t i = 0; i < g->n_kv; i++) {
        free(g->kv[i].key);
        free((void *)g->kv[i].val.offs);
    }
    for (size_t i = 0; i < g->n_tensors; i++)
        free(g->tensors[i].name);
    free(g->kv);
    free(g->tensors);
    qp_strmap_release(&g->kv_index);
    qp_strmap_release(&g->tensor_index);
    qp_mmap_unref(g->map);
    free(g->path);
    free(g);
}

/* Element offsets of a top-level array of strings or arrays. */
static enum qp_status build_offsets(struct rd *r, struct qp_gguf_kv *kv)
{
    struct qp_gguf_value *v = &kv->val;
    if (v->type != QP_GGUF_ARRAY || type_sizes[v->elem])
        return QP_OK;
    uint64_t *offs = malloc((size_t)v->count * sizeof *offs + 1);
    if (!offs)
        return qp_fail(r->err, QP_E_NOMEM, "'%s': key '%s': out of memory",
                       r->what, kv->key);
    size_t off = 0;
    for (uint64_t i = 0; i < v->count; i++) {
        offs[i] = off;
        off += elem_bytes(v->elem, v->p + off);
    }
    v->offs = offs;
    return QP_OK;
}

/* Copies len bytes of s as a C string, refusing NUL bytes. */
static enum qp_status cstring(struct rd *r, const unsigned char *s, uint64_t len,
                              const char *whose, char **out)
{
    if (memchr(s, 0, (size_t)len))
        return bad(r, "%s holds a NUL byte", whose);
    if (!(*out = malloc((size_t)len + 1)))
        return qp_fail(r->err, QP_E_NOMEM, "'%s': out of memory", r->what);
    memcpy(*out, s, (size_t)len);
    (*out)[len] = '\0';
    return QP_OK;
}

/* The name of entry i of a section (kind "key" or "tensor"): a string of
 * 1..QP_GGUF_MAX_KEY bytes without NUL, copied into *name; whose becomes
 * "kind 'name'" for later messages. */
static enum qp_status entry_name(struct rd *r, const char *kind, uint64_t i,
                                 char **name, char *whose, size_t wsize)
{
    snprintf(whose, wsize, "%s %llu", kind, (unsigned long long)i);
    const unsigned char *s = NULL;
    uint64_t len = 0;
    enum qp_status st = string(r, whose, "name", QP_GGUF_MAX_KEY, &s, &len);
    if (st)
        return st;
    if (!len)
        return bad(r, "%s has an empty name", whose);
    if ((st = cstring(r, s, len, whose, name)))
        return st;
    snprintf(whose, wsize, "%s '%.64s%s'", kind, *name, len > 64 ? "..." : "");
    return QP_OK;
}

/* Records name as entry slot of index, refusing a second use. */
static enum qp_status unique(struct rd *r, struct qp_strmap *index,
                             const char *name, size_t slot, const char *whose)
{
    bool dup = false;
    enum qp_status st = qp_strmap_put(index, name, slot, &dup, r->err);
    return st ? st : dup ? bad(r, "%s appears twice", whose) : QP_OK;
}

static enum qp_status read_kvs(struct rd *r, struct qp_gguf *g, uint64_t n)
{
    /* a KV takes at least 8 + 1 + 4 + 1 bytes */
    if (n > left(r) / 14)
        return bad(r, "the header claims %llu keys, more than the file can "
                   "hold", (unsigned long long)n);
    if (!(g->kv = calloc((size_t)n + 1, sizeof *g->kv)))
        return qp_fail(r->err, QP_E_NOMEM, "'%s': out of memory", r->what);
    for (uint64_t i = 0; i < n; i++) {
        char whose[96];
        uint64_t t = 0;
        struct qp_gguf_kv *kv = &g->kv[g->n_kv];
        enum qp_status st = entry_name(r, "key", i, &kv->key, whose,
                                       sizeof whose);
        if (st)
            return st;
        g->n_kv++;
        if ((st = unique(r, &g->kv_index, kv->key, g->n_kv - 1, whose)))
            return st;
        if ((st = field(r, 4, whose, "value type", &t)) ||
            (st = value(r, t, 0, whose, &kv->val)) ||
            (st = build_offsets(r, kv)))
            return st;
    }
    return QP_OK;
}

static enum qp_status read_alignment(struct rd *r, struct qp_gguf *g)
{
    g->alignment = QP_GGUF_DEFAULT_ALIGNMENT;
    const struct qp_gguf_kv *a = qp_gguf_find(g, QP_GGUF_KEY_ALIGNMENT);
    if (!a)
        return QP_OK;
    if (a->val.type != QP_GGUF_U32)
        return bad(r, "key '%s' is %s, must be u32", QP_GGUF_KEY_ALIGNMENT,
                   type_names[a->val.type]);
    uint32_t v;
    memcpy(&v, a->val.p, 4);
    if (!v || (v & (v - 1)))
        return bad(r, "key '%s' is %u, not a power of two",
                   QP_GGUF_KEY_ALIGNMENT, v);
    g->alignment = v;
    return QP_OK;
}

/* The ggml type id of a tensor, refused when qprobe does not handle it. */
static enum qp_status tensor_type(struct rd *r, uint64_t id, const char *whose,
                                  enum qp_ggml_type *out)
{
    if (id <= UINT32_MAX && qp_ggml_type_from_id((uint32_t)id, out))
        return QP_OK;
    const char *name = id <= UINT32_MAX ? qp_ggml_id_name((uint32_t)id) : NULL;
    if (!name)
        return bad(r, "%s has unknown ggml type %llu", whose,
                   (unsigned long long)id);
    return qp_fail(r->err, QP_E_UNSUPPORTED, "'%s': %s has ggml type %s (%llu), "
                   "which qprobe does not read (it reads f32, f16, bf16, q8_0, "
                   "q4_0, q4_1, q5_0, q4_K, q6_K and the integer types)",
                   r->what, whose, name, (unsigned long long)id);
}

/* Dims, type and offset of tensor t (its name read already). */
static enum qp_status tensor_shape(struct rd *r, struct qp_gguf *g,
                                   struct qp_gguf_tensor *t, const char *whose)
{
    uint64_t nd = 0, v = 0;
    enum qp_status st = field(r, 4, whose, "number of dims", &nd);
    if (st)
        return st;
    if (nd > QP_GGUF_MAX_DIMS)
        return bad(r, "%s has %llu dims (at most %d)", whose,
                   (unsigned long long)nd, QP_GGUF_MAX_DIMS);
    t->ndim = (int)nd;
    size_t numel = 1;
    for (int k = 0; k < QP_GGUF_MAX_DIMS; k++) {
        t->ne[k] = 1;
        if (k >= t->ndim)
            continue;
        if ((st = field(r, 8, whose, "dims", &v)))
            return st;
        if (v > INT64_MAX || qp_size_mul(numel, (size_t)v, &numel))
            return bad(r, "%s: dim %d (%llu) makes the tensor too large",
                       whose, k, (unsigned long long)v);
        t->ne[k] = (int64_t)v;
    }
    if ((st = field(r, 4, whose, "type", &v)) ||
        (st = tensor_type(r, v, whose, &t->type)))
        return st;
    const struct qp_ggml_type_info *ti = qp_ggml_type_info(t->type);
    if (t->ne[0] % ti->block)
        return bad(r, "%s: %s rows of %lld values are not a multiple of its "
                   "block of %lld", whose, ti->name, (long long)t->ne[0],
                   (long long)ti->block);
    if (numel > INT64_MAX || !qp_ggml_row_bytes(t->type, (int64_t)numel,
                                                &t->nbytes))
        return bad(r, "%s is too large", whose);
    if ((st = field(r, 8, whose, "offset", &t->offset)))
        return st;
    if (t->offset % g->alignment)
        return bad(r, "%s: offset %llu is not a multiple of the alignment %u",
                   whose, (unsigned long long)t->offset, g->alignment);
    return QP_OK;
}

static enum qp_status read_tensors(struct rd *r, struct qp_gguf *g, uint64_t n)
{
    /* name (8 + 1), dims (4), type (4), offset (8) */
    if (n > left(r) / 25)
        return bad(r, "the header claims %llu tensors, more than the file can "
                   "hold", (unsigned long long)n);
    if (!(g->tensors = calloc((size_t)n + 1, sizeof *g->tensors)))
        return qp_fail(r->err, QP_E_NOMEM, "'%s': out of memory", r->what);
    for (uint64_t i = 0; i < n; i++) {
        char whose[96];
        struct qp_gguf_tensor *t = &g->tensors[g->n_tensors];
        enum qp_status st = entry_name(r, "tensor", i, &t->name, whose,
                                       sizeof whose);
        if (st)
            return st;
        g->n_tensors++;
        if ((st = unique(r, &g->tensor_index, t->name, g->n_tensors - 1, whose)))
            return st;
        if ((st = tensor_shape(r, g, t, whose)))
            return st;
    }
    return QP_OK;
}

static int cmp_offset(const void *a, const void *b)
{
    const struct qp_gguf_tensor *x = *(const struct qp_gguf_tensor *const *)a,
                                *y = *(const struct qp_gguf_tensor *const *)b;
    return x->offset < y->offset ? -1 : x->offset > y->offset;
}

/* Places every tensor's data inside the file, without overlaps. */
static enum qp_status place_data(struct rd *r, struct qp_gguf *g)
{
    size_t pad = (g->alignment - r->pos % g->alignment) % g->alignment;
    g->data_offset = r->pos + pad;
    if (!g->n_tensors)
        return QP_OK;
    if (pad > left(r))
        return bad(r, "the data section would start at %zu, past the end of "
                   "the file (%zu bytes)", g->data_offset, r->len);
    size_t avail = r->len - g->data_offset;
    const struct qp_gguf_tensor **by = malloc(g->n_tensors * sizeof *by);
    if (!by)
        return qp_fail(r->err, QP_E_NOMEM, "'%s': out of memory", r->what);
    enum qp_status st = QP_OK;
    for (size_t i = 0; i < g->n_tensors && !st; i++) {
        struct qp_gguf_tensor *t = &g->tensors[i];
        by[i] = t;
        if (t->offset > avail || t->nbytes > avail - t->offset)
            st = bad(r, "tensor '%s': its %zu bytes at offset %llu run past "
                     "the end of the data section (%zu bytes)", t->name,
                     t->nbytes, (unsigned long long)t->offset, avail);
        else
            t->data = r->p + g->data_offset + t->offset;
    }
    if (!st)
        qsort(by, g->n_tensors, sizeof *by, cmp_offset);
    for (size_t i = 1; i < g->n_tensors && !st; i++)
        if (by[i - 1]->offset + by[i - 1]->nbytes > by[i]->offset)
            st = bad(r, "tensors '%s' and '%s' overlap", by[i - 1]->name,
                     by[i]->name);
    free(by);
    return st;
}

static enum qp_status parse_into(struct rd *r, struct qp_gguf *g)
{
    if (r->len < 24)
        return bad(r, "not a GGUF file (%zu bytes, shorter than the 24-byte "
                   "header)", r->len);
    if (memcmp(r->p, "GGUF", 4))
        return bad(r, "not a GGUF file (it starts with %02x %02x %02x %02x, "
                   "not 'GGUF')", r->p[0], r->p[1], r->p[2], r->p[3]);
    r->pos = 4;
    g->version = (uint32_t)take(r, 4);
    if (g->version != 2 && g->version != 3) {
        if (g->version && !(g->version & 0xffff))
            return qp_fail(r->err, QP_E_UNSUPPORTED, "'%s': a big-endian GGUF "
                           "file (version field %08x); qprobe reads "
                           "little-endian ones", r->what, g->version);
        return qp_fail(r->err, QP_E_UNSUPPORTED, "'%s': GGUF version %u is not "
                       "supported (qprobe reads versions 2 and 3)", r->what,
                       g->version);
    }
    uint64_t nt = take(r, 8), nkv = take(r, 8);
    enum qp_status st = read_kvs(r, g, nkv);
    if (!st)
        st = read_alignment(r, g);
    if (!st)
        st = read_tensors(r, g, nt);
    if (!st)
        st = place_data(r, g);
    return st;
}

enum qp_status qp_gguf_parse(const void *data, size_t size, const char *what,
                             struct qp_gguf **out, struct qp_error *err)
{
    *out = NULL;
    struct qp_gguf *g = calloc(1, sizeof *g);
    if (!g || !(g->path = strdup(what))) {
        free(g);
        return qp_fail(err, QP_E_NOMEM, "'%s': out of memory", what);
    }
    qp_strmap_init(&g->kv_index);
    qp_strmap_init(&g->tensor_index);
    struct rd r = {data, size, 0, what, err};
    enum qp_status st = parse_into(&r, g);
    if (st) {
        qp_gguf_free(g);
        return st;
    }
    *out = g;
    return QP_OK;
}

enum qp_status qp_gguf_load(const char *path, struct qp_gguf **out,
                            struct qp_error *err)
{
    *out = NULL;
    struct qp_mmap *m;
    enum qp_status st = qp_mmap_open(path, &m, err);
    if (st)
        return st;
    if ((st = qp_gguf_parse(m->data, m->size, path, out, err))) {
        qp_mmap_unref(m);
        return st;
    }
    (*out)->map = m;
    return QP_OK;
}

const struct qp_gguf_kv *qp_gguf_find(const struct qp_gguf *g, const char *key)
{
    size_t i;
    return qp_strmap_get(&g->kv_index, key, &i) ? &g->kv[i] : NULL;
}

long qp_gguf_find_tensor(const struct qp_gguf *g, const char *name)
{
    size_t i;
    return qp_strmap_get(&g->tensor_index, name, &i) ? (long)i : -1;
}

/* The KV with key, or a QP_E_NOTFOUND / QP_E_FORMAT error (`want` names
 * the expected kind). */
static enum qp_status typed(const struct qp_gguf *g, const char *key,
                            bool ok_type(const struct qp_gguf_value *),
                            const char *want, const struct qp_gguf_value **v,
                            struct qp_error *err)
{
    const struct qp_gguf_kv *kv = qp_gguf_find(g, key);
    if (!kv)
        return qp_fail(err, QP_E_NOTFOUND, "'%s': no key '%s'", g->path, key);
    if (!ok_type(&kv->val))
        return qp_fail(err, QP_E_FORMAT, "'%s': key '%s' is %s, expected %s",
                       g->path, key, type_names[kv->val.type], want);
    *v = &kv->val;
    return QP_OK;
}

static bool is_int(const struct qp_gguf_value *v)
{
    return type_sizes[v->type] && v->type != QP_GGUF_F32 &&
           v->type != QP_GGUF_F64 && v->type != QP_GGUF_BOOL;
}
static bool is_float(const struct qp_gguf_value *v)
{
    return v->type == QP_GGUF_F32 || v->type == QP_GGUF_F64;
}
static bool is_bool(const struct qp_gguf_value *v) { return v->type == QP_GGUF_BOOL; }
static bool is_str(const struct qp_gguf_value *v) { return v->type == QP_GGUF_STRING; }
static bool is_array(const struct qp_gguf_value *v) { return v->type == QP_GGUF_ARRAY; }

enum qp_status qp_gguf_get_int(const struct qp_gguf *g, const char *key,
                               int64_t *out, struct qp_error *err)
{
    const struct qp_gguf_value *v;
    enum qp_status st = typed(g, key, is_int, "an integer", &v, err);
    if (!st && !qp_gguf_value_int(v, out))
        st = qp_fail(err, QP_E_FORMAT, "'%s': key '%s' is too large", g->path,
                     key);
    return st;
}

enum qp_status qp_gguf_get_float(const struct qp_gguf *g, const char *key,
                                 double *out, struct qp_error *err)
{
    const struct qp_gguf_value *v;
    enum qp_status st = typed(g, key, is_float, "f32 or f64", &v, err);
    if (!st)
        qp_gguf_value_float(v, out);
    return st;
}

enum qp_status qp_gguf_get_bool(const struct qp_gguf *g, const char *key,
                                bool *out, struct qp_error *err)
{
    const struct qp_gguf_value *v;
    enum qp_status st = typed(g, key, is_bool, "bool", &v, err);
    if (!st)
        *out = v->p[0] != 0;
    return st;
}

enum qp_status qp_gguf_get_str(const struct qp_gguf *g, const char *key,
                               const char **s, size_t *len,
                               struct qp_error *err)
{
    const struct qp_gguf_value *v;
    enum qp_status st = typed(g, key, is_str, "string", &v, err);
    if (!st) {
        *s = (const char *)v->p;
        *len = v->size;
    }
    return st;
}

enum qp_status qp_gguf_get_array(const struct qp_gguf *g, const char *key,
                                 enum qp_gguf_type elem,
                                 struct qp_gguf_value *out,
                                 struct qp_error *err)
{
    const struct qp_gguf_value *v;
    enum qp_status st = typed(g, key, is_array, "an array", &v, err);
    if (!st && v->elem != elem)
        st = qp_fail(err, QP_E_FORMAT, "'%s': key '%s' is an array of %s, "
                     "expected %s", g->path, key, type_names[v->elem],
                     qp_gguf_type_name(elem));
    if (!st)
        *out = *v;
    return st;
}

size_t qp_gguf_tensor_numel(const struct qp_gguf_tensor *t)
{
    size_t n = 1;
    for (int k = 0; k < t->ndim; k++)
        n *= (size_t)t->ne[k];
    return n;
}

void qp_gguf_tensor_read_f32(const struct qp_gguf_tensor *t, float *out)
{
    qp_ggml_dequantize_row(t->type, t->data, out,
                           (int64_t)qp_gguf_tensor_numel(t));
}
