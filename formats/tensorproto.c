/* formats/tensorproto.c: TensorProto <-> tensor, and `.pb` files. See
 * formats/tensorproto.h for what is accepted and how memory is used. */
#include "formats/tensorproto.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "core/fileio.h"
#include "core/outfile.h"
#include "core/size.h"
#include "formats/tensorproto-pb.h"

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
               "raw_data is little-endian; a big-endian host needs swaps");

#define NODT (-1) /* no qprobe dtype */

static const struct {
    const char *name;
    int dtype;       /* enum qp_dtype or NODT */
    const char *why; /* when NODT */
} types[] = {
    [QP_ONNX_UNDEFINED] = {"UNDEFINED", NODT, NULL},
    [QP_ONNX_FLOAT] = {"FLOAT", QP_DTYPE_F32, NULL},
    [QP_ONNX_UINT8] = {"UINT8", QP_DTYPE_U8, NULL},
    [QP_ONNX_INT8] = {"INT8", QP_DTYPE_I8, NULL},
    [QP_ONNX_UINT16] = {"UINT16", QP_DTYPE_U16, NULL},
    [QP_ONNX_INT16] = {"INT16", QP_DTYPE_I16, NULL},
    [QP_ONNX_INT32] = {"INT32", QP_DTYPE_I32, NULL},
    [QP_ONNX_INT64] = {"INT64", QP_DTYPE_I64, NULL},
    [QP_ONNX_STRING] = {"STRING", NODT, "string tensors have no numeric value"},
    [QP_ONNX_BOOL] = {"BOOL", QP_DTYPE_BOOL, NULL},
    [QP_ONNX_FLOAT16] = {"FLOAT16", QP_DTYPE_F16, NULL},
    [QP_ONNX_DOUBLE] = {"DOUBLE", QP_DTYPE_F64, NULL},
    [QP_ONNX_UINT32] = {"UINT32", QP_DTYPE_U32, NULL},
    [QP_ONNX_UINT64] = {"UINT64", QP_DTYPE_U64, NULL},
    [QP_ONNX_COMPLEX64] = {"COMPLEX64", NODT, "complex tensors are not handled"},
    [QP_ONNX_COMPLEX128] = {"COMPLEX128", NODT, "complex tensors are not handled"},
    [QP_ONNX_BFLOAT16] = {"BFLOAT16", QP_DTYPE_BF16, NULL},
    [QP_ONNX_FLOAT8E4M3FN] = {"FLOAT8E4M3FN", QP_DTYPE_F8E4M3, NULL},
    [QP_ONNX_FLOAT8E4M3FNUZ] = {"FLOAT8E4M3FNUZ", NODT,
                                "the FNUZ float8 variants are not handled "
                                "(FLOAT8E4M3FN is)"},
    [QP_ONNX_FLOAT8E5M2] = {"FLOAT8E5M2", QP_DTYPE_F8E5M2, NULL},
    [QP_ONNX_FLOAT8E5M2FNUZ] = {"FLOAT8E5M2FNUZ", NODT,
                                "the FNUZ float8 variants are not handled "
                                "(FLOAT8E5M2 is)"},
    [QP_ONNX_UINT4] = {"UINT4", QP_DTYPE_U4, NULL},
    [QP_ONNX_INT4] = {"INT4", QP_DTYPE_I4, NULL},
    [QP_ONNX_FLOAT4E2M1] = {"FLOAT4E2M1", NODT, "4-bit floats are not handled"},
    [QP_ONNX_FLOAT8E8M0] = {"FLOAT8E8M0", NODT, "e8m0 scales are not handled"},
    [QP_ONNX_UINT2] = {"UINT2", QP_DTYPE_U2, NULL},
    [QP_ONNX_INT2] = {"INT2", QP_DTYPE_I2, NULL},
};
_Static_assert(sizeof types / sizeof types[0] == QP_ONNX_TYPE_COUNT,
               "types must cover every ONNX data type");

const char *qp_fmt_onnx_type_name(int32_t t)
{
    return t >= 0 && t < QP_ONNX_TYPE_COUNT ? types[t].name : "unknown";
}

enum qp_status qp_fmt_onnx_dtype(int32_t t, enum qp_dtype *out,
                                 struct qp_error *err)
{
    if (t <= 0 || t >= QP_ONNX_TYPE_COUNT)
        return qp_fail(err, QP_E_FORMAT, "ONNX data type %d is %s", (int)t,
                       t == 0 ? "undefined" : "unknown");
    if (types[t].dtype == NODT)
        return qp_fail(err, QP_E_UNSUPPORTED,
                       "ONNX data type %s (%d) is not supported: %s",
                       types[t].name, (int)t, types[t].why);
    *out = (enum qp_dtype)types[t].dtype;
    return QP_OK;
}

enum qp_onnx_type qp_fmt_onnx_type_of(enum qp_dtype dtype)
{
    for (int t = 1; t < QP_ONNX_TYPE_COUNT; t++)
        if (types[t].dtype == (int)dtype)
            return (enum qp_onnx_type)t;
    return QP_ONNX_UNDEFINED;
}

/* ---- external data ------------------------------------------------------ */

struct ext_file {
    char *real; /* resolved path */
    struct qp_mmap *map;
};

struct qp_tp_ext {
    struct ext_file *f;
    size_t n, cap;
};

void qp_tp_ctx_release(struct qp_tp_ctx *c)
{
    struct qp_tp_ext *e = c->ext;
    if (!e)
        return;
    for (size_t i = 0; i < e->n; i++) {
        free(e->f[i].real);
        qp_mmap_unref(e->f[i].map);
    }
    free(e->f);
    free(e);
    c->ext = NULL;
}

/* Maps external file loc (relative to c->dir, already checked to have no
 * ".." component), refusing one that resolves outside c->dir. */
static enum qp_status ext_open(struct qp_tp_ctx *c, const char *where,
                               const char *loc, struct qp_mmap **map,
                               struct qp_error *err)
{
    char *full = qp_path_join(c->dir, loc);
    char *real = full ? realpath(full, NULL) : NULL;
    char *root = real ? realpath(c->dir, NULL) : NULL;
    enum qp_status st = QP_OK;
    if (!full)
        st = qp_fail(err, QP_E_NOMEM, "out of memory");
    else if (!real || !root)
        st = qp_fail(err, QP_E_IO, "%s: external data file '%s' cannot be "
                     "opened: %s", where, full, strerror(errno));
    if (!st) {
        size_t rl = strlen(root);
        bool inside = (rl == 1 && root[0] == '/') ||
                      (!strncmp(real, root, rl) && real[rl] == '/');
        if (!inside)
            st = qp_fail(err, QP_E_FORMAT, "%s: external data location '%s' "
                         "resolves outside the model's directory", where, loc);
    }
    free(full);
    free(root);
    if (st) {
        free(real);
        return st;
    }
    if (!c->ext && !(c->ext = calloc(1, sizeof *c->ext))) {
        free(real);
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    }
    struct qp_tp_ext *e = c->ext;
    for (size_t i = 0; i < e->n; i++)
        if (!strcmp(e->f[i].real, real)) {
            free(real);
            *map = e->f[i].map;
            return QP_OK;
        }
    if (e->n == e->cap) {
        size_t cap = e->cap ? 2 * e->cap : 4;
        struct ext_file *f = realloc(e->f, cap * sizeof *f);
        if (!f) {
            free(real);
            return qp_fail(err, QP_E_NOMEM, "out of memory");
        }
        e->f = f;
        e->cap = cap;
    }
    st = qp_mmap_open(real, map, err);
    if (st) {
        free(real);
        return qp_error_prefix(err, "%s: external data: ", where);
    }
    e->f[e->n++] = (struct ext_file){real, *map};
    return QP_OK;
}

/* Strict decimal uint64 (no sign, no spaces). */
static bool parse_u64(const char *s, uint64_t *v)
{
    if (!s || !*s)
        return false;
    uint64_t r = 0;
    for (; *s; s++) {
        if (*s < '0' || *s > '9' || qp_u64_mul(r, 10, &r) ||
            qp_u64_add(r, (uint64_t)(*s - '0'), &r))
            return false;
    }
    *v = r;
    return true;
}

/* True when some component of the relative path loc is "..". */
static bool has_dotdot(const char *loc)
{
    for (const char *p = loc; *p;) {
        size_t n = strcspn(p, "/");
        if (n == 2 && p[0] == '.' && p[1] == '.')
            return true;
        p += n;
        p += *p == '/';
    }
    return false;
}

/* The external bytes of tp: *p, with *map the file's mapping. */
static enum qp_status ext_bytes(struct qp_tp_ctx *c, const Onnx__TensorProto *tp,
                                const char *where, size_t nbytes,
                                const uint8_t **p, struct qp_mmap **map,
                                struct qp_error *err)
{
    const char *loc = NULL, *off_s = NULL, *len_s = NULL;
    for (size_t i = 0; i < tp->n_external_data; i++) {
        const Onnx__StringStringEntryProto *kv = tp->external_data[i];
        if (!kv->key)
            continue;
        if (!strcmp(kv->key, "location"))
            loc = kv->value;
        else if (!strcmp(kv->key, "offset"))
            off_s = kv->value;
        else if (!strcmp(kv->key, "length"))
            len_s = kv->value;
    }
    if (!loc || !*loc)
        return qp_fail(err, QP_E_FORMAT, "%s: external data has no location",
                       where);
    if (!c->dir)
        return qp_fail(err, QP_E_UNSUPPORTED, "%s: external data '%s' needs "
                       "the file's directory", where, loc);
    if (loc[0] == '/')
        return qp_fail(err, QP_E_FORMAT, "%s: external data location '%s' is "
                       "absolute; it must be relative to the model's "
                       "directory", where, loc);
    if (has_dotdot(loc))
        return qp_fail(err, QP_E_FORMAT, "%s: external data location '%s' "
                       "leaves the model's directory", where, loc);
    uint64_t off = 0, len = 0;
    if (off_s && !parse_u64(off_s, &off))
        return qp_fail(err, QP_E_FORMAT, "%s: external data offset '%s' is "
                       "not a non-negative integer", where, off_s);
    if (len_s && !parse_u64(len_s, &len))
        return qp_fail(err, QP_E_FORMAT, "%s: external data length '%s' is "
                       "not a non-negative integer", where, len_s);
    enum qp_status st = ext_open(c, where, loc, map, err);
    if (st)
        return st;
    size_t size = (*map)->size;
    uint64_t want = len_s ? len : nbytes;
    if (off > size || want > size - off)
        return qp_fail(err, QP_E_FORMAT, "%s: external data '%s': offset %" PRIu64
                       " + length %" PRIu64 " is beyond the file (%zu bytes)",
                       where, loc, off, want, size);
    if (want != nbytes)
        return qp_fail(err, QP_E_FORMAT, "%s: external data '%s' has length %"
                       PRIu64 ", the shape needs %zu bytes", where, loc, len,
                       nbytes);
    *p = (*map)->data + off;
    return QP_OK;
}

/* ---- TensorProto -> tensor --------------------------------------------- */

struct shape {
    enum qp_dtype dtype;
    int ndim;
    int64_t dims[QP_MAX_DIMS];
    size_t numel, nbytes;
};

/* A tensor over n bytes at p: borrowed from map when aligned, else copied. */
static enum qp_status from_bytes(const struct qp_tp_ctx *c, const char *name,
                                 const struct shape *s, const uint8_t *p,
                                 struct qp_mmap *map, struct qp_tensor **out,
                                 struct qp_error *err)
{
    if (c->header_only)
        return qp_tensor_new_desc(name, s->dtype, s->ndim, s->dims, out, err);
    unsigned bits = qp_dtype_traits(s->dtype)->bits;
    size_t es = bits >= 8 ? bits / 8 : 1;
    if (map && s->dtype != QP_DTYPE_BOOL && (uintptr_t)p % es == 0)
        return qp_tensor_wrap(name, s->dtype, s->ndim, s->dims, p, s->nbytes,
                              map, out, err);
    enum qp_status st = qp_tensor_new(name, s->dtype, s->ndim, s->dims, out, err);
    if (st)
        return st;
    uint8_t *d = (*out)->data;
    if (s->nbytes)
        memcpy(d, p, s->nbytes);
    if (s->dtype == QP_DTYPE_BOOL)
        for (size_t i = 0; i < s->nbytes; i++)
            d[i] = d[i] != 0;
    return QP_OK;
}

enum field { F_FLOAT, F_INT32, F_INT64, F_DOUBLE, F_UINT64, F_STRING, F_COUNT };

static const char *const field_names[] = {
    "float_data", "int32_data", "int64_data", "double_data", "uint64_data",
    "string_data",
};
_Static_assert(sizeof field_names / sizeof field_names[0] == F_COUNT,
               "field_names must cover every field");

/* The typed field holding dtype's values, the range a value may take and
 * the bytes it is stored in (1, 2, 4 or 8). */
static enum field typed_field(enum qp_dtype dt, int64_t *lo, int64_t *hi,
                              unsigned *bytes)
{
    const struct qp_dtype_traits *tr = qp_dtype_traits(dt);
    *bytes = tr->bits >= 8 ? tr->bits / 8 : 1;
    *lo = tr->min;
    *hi = tr->max;
    switch (dt) {
    case QP_DTYPE_F32:
        return F_FLOAT;
    case QP_DTYPE_F64:
        return F_DOUBLE;
    case QP_DTYPE_I64:
        return F_INT64;
    case QP_DTYPE_U32:
    case QP_DTYPE_U64: /* checked against UINT32_MAX for u32 only */
        return F_UINT64;
    case QP_DTYPE_BOOL: /* any non-zero value is true */
        *lo = INT32_MIN;
        *hi = INT32_MAX;
        return F_INT32;
    case QP_DTYPE_F16:
    case QP_DTYPE_BF16: /* bit patterns, unsigned or sign-extended */
        *lo = INT16_MIN;
        *hi = UINT16_MAX;
        return F_INT32;
    default:
        if (tr->is_float || tr->bits < 8) { /* float8 patterns, packed bytes */
            *lo = INT8_MIN;
            *hi = UINT8_MAX;
        }
        return F_INT32;
    }
}

static size_t field_count(const Onnx__TensorProto *tp, enum field f)
{
    switch (f) {
    case F_FLOAT: return tp->n_float_data;
    case F_INT32: return tp->n_int32_data;
    case F_INT64: return tp->n_int64_data;
    case F_DOUBLE: return tp->n_double_data;
    case F_UINT64: return tp->n_uint64_data;
    default: return tp->n_string_data;
    }
}

/* Converts the typed values of tp (field f, already counted) into dst
 * (NULL: validate only). */
static enum qp_status from_typed(const Onnx__TensorProto *tp, const char *where,
                                 const struct shape *s, enum field f,
                                 uint8_t *dst, struct qp_error *err)
{
    int64_t lo, hi;
    unsigned bytes;
    typed_field(s->dtype, &lo, &hi, &bytes);
    size_t n = field_count(tp, f);
    if (f == F_FLOAT || f == F_DOUBLE || f == F_INT64) {
        const void *src = f == F_FLOAT ? (const void *)tp->float_data
                          : f == F_DOUBLE ? (const void *)tp->double_data
                                          : (const void *)tp->int64_data;
        if (dst && n)
            memcpy(dst, src, n * bytes);
        return QP_OK;
    }
    for (size_t i = 0; i < n; i++) {
        int64_t v;
        if (f == F_UINT64) {
            if (s->dtype == QP_DTYPE_U32 && tp->uint64_data[i] > UINT32_MAX)
                return qp_fail(err, QP_E_FORMAT, "%s: uint64_data[%zu] = %" PRIu64
                               " does not fit %s", where, i, tp->uint64_data[i],
                               qp_dtype_name(s->dtype));
            v = (int64_t)tp->uint64_data[i];
        } else {
            v = tp->int32_data[i];
            if (v < lo || v > hi)
                return qp_fail(err, QP_E_FORMAT, "%s: int32_data[%zu] = %" PRId64
                               " does not fit %s", where, i, v,
                               qp_dtype_name(s->dtype));
            if (s->dtype == QP_DTYPE_BOOL)
                v = v != 0;
        }
        if (!dst)
            continue;
        uint64_t u = (uint64_t)v; /* little-endian: low bytes first */
        memcpy(dst + i * bytes, &u, bytes);
    }
    return QP_OK;
}

/* Element count of the typed field for a tensor of shape s. */
static size_t typed_expected(const struct shape *s)
{
    return qp_dtype_is_packed(s->dtype) ? s->nbytes : s->numel;
}

static enum qp_status tensor_from_typed(const struct qp_tp_ctx *c,
                                        const Onnx__TensorProto *tp,
                                        const char *where, const char *name,
                                        const struct shape *s, enum field have,
                                        struct qp_tensor **out,
                                        struct qp_error *err)
{
    int64_t lo, hi;
    unsigned bytes;
    enum field f = typed_field(s->dtype, &lo, &hi, &bytes);
    char sh[128];
    qp_shape_str(s->ndim, s->dims, sh, sizeof sh);
    if (have != f)
        return qp_fail(err, QP_E_FORMAT, "%s: %s cannot hold %s values (ONNX "
                       "stores them in %s)", where, field_names[have],
                       qp_dtype_name(s->dtype), field_names[f]);
    size_t n = field_count(tp, f), want = typed_expected(s);
    if (n != want)
        return qp_fail(err, QP_E_FORMAT, "%s: %s has %zu values, shape %s %s "
                       "needs %zu", where, field_names[f], n, sh,
                       qp_dtype_name(s->dtype), want);
    enum qp_status st = from_typed(tp, where, s, f, NULL, err);
    if (st)
        return st;
    if (c->header_only)
        return qp_tensor_new_desc(name, s->dtype, s->ndim, s->dims, out, err);
    st = qp_tensor_new(name, s->dtype, s->ndim, s->dims, out, err);
    if (!st)
        st = from_typed(tp, where, s, f, (*out)->data, err);
    return st;
}

static enum qp_status read_shape(const Onnx__TensorProto *tp, const char *where,
                                 struct shape *s, struct qp_error *err)
{
    if (!tp->has_data_type)
        return qp_fail(err, QP_E_FORMAT, "%s: has no data_type", where);
    if (qp_fmt_onnx_dtype(tp->data_type, &s->dtype, err))
        return qp_error_prefix(err, "%s: ", where);
    if (tp->segment)
        return qp_fail(err, QP_E_UNSUPPORTED, "%s: segmented tensors are not "
                       "supported", where);
    if (tp->n_dims > QP_MAX_DIMS)
        return qp_fail(err, QP_E_UNSUPPORTED, "%s: %zu dims, at most %d are "
                       "supported", where, tp->n_dims, QP_MAX_DIMS);
    s->ndim = (int)tp->n_dims;
    for (int i = 0; i < s->ndim; i++)
        s->dims[i] = tp->dims[i];
    enum qp_status st = qp_shape_check(where, s->dtype, s->ndim, s->dims,
                                       &s->nbytes, err);
    s->numel = 1;
    for (int i = 0; !st && i < s->ndim; i++)
        s->numel *= (size_t)s->dims[i];
    return st;
}

enum qp_status qp_fmt_tensorproto_to_tensor(struct qp_tp_ctx *c,
                                            const Onnx__TensorProto *tp,
                                            const char *label, const char *name,
                                            struct qp_tensor **out,
                                            struct qp_error *err)
{
    *out = NULL;
    char where[768];
    snprintf(where, sizeof where, "'%s': %s", c->file, label);
    struct shape s;
    enum qp_status st = read_shape(tp, where, &s, err);
    if (st)
        return st;
    const struct qp_pb_span *raw;
    if (qp_pb_raw_span(c->msg, tp->has_raw_data, &tp->raw_data, &raw, err))
        return qp_error_prefix(err, "%s: ", where);
    bool external = false;
    if (tp->has_data_location) {
        if (tp->data_location != ONNX__TENSOR_PROTO__DATA_LOCATION__DEFAULT &&
            tp->data_location != ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL)
            return qp_fail(err, QP_E_FORMAT, "%s: unknown data_location %d",
                           where, (int)tp->data_location);
        external = tp->data_location ==
                   ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
    }
    /* where the data is: exactly one place, or none for an empty tensor */
    const char *first = raw ? "raw_data" : NULL;
    int typed = -1;
    for (int f = 0; f < F_COUNT; f++) {
        if (!field_count(tp, (enum field)f))
            continue;
        if (first)
            return qp_fail(err, QP_E_FORMAT, "%s: has both %s and %s", where,
                           first, field_names[f]);
        first = field_names[f];
        typed = f;
    }
    if (external && first)
        return qp_fail(err, QP_E_FORMAT, "%s: has both external data and %s",
                       where, first);
    if (external) {
        const uint8_t *p = NULL;
        struct qp_mmap *map = NULL;
        st = ext_bytes(c, tp, where, s.nbytes, &p, &map, err);
        return st ? st : from_bytes(c, name, &s, p, map, out, err);
    }
    if (raw) {
        if (raw->len != s.nbytes) {
            char sh[128];
            qp_shape_str(s.ndim, s.dims, sh, sizeof sh);
            return qp_fail(err, QP_E_FORMAT, "%s: raw_data has %zu bytes, shape "
                           "%s %s needs %zu", where, raw->len, sh,
                           qp_dtype_name(s.dtype), s.nbytes);
        }
        return from_bytes(c, name, &s, c->base + raw->off, c->map, out, err);
    }
    if (typed >= 0)
        return tensor_from_typed(c, tp, where, name, &s, (enum field)typed, out,
                                 err);
    if (s.numel)
        return qp_fail(err, QP_E_FORMAT, "%s: has no data (no raw_data, typed "
                       "values or external data) for %zu elements", where,
                       s.numel);
    return from_bytes(c, name, &s, NULL, NULL, out, err);
}

/* ---- .pb files ----------------------------------------------------------- */

enum qp_status qp_tp_unpack(struct qp_tp_ctx *c, struct qp_pb_msg *m,
                            const ProtobufCMessageDescriptor *desc,
                            const char *kind, const char *what,
                            const void *buf, size_t len, struct qp_mmap *map,
                            const char *dir, struct qp_error *err)
{
    static const uint8_t empty[1];
    const uint8_t *b = buf ? buf : empty;
    bool in_map = map && map->data && b >= map->data &&
                  len <= map->size - (size_t)(b - map->data);
    *c = (struct qp_tp_ctx){
        .file = what, .base = b, .map = in_map ? map : NULL, .msg = m,
        .dir = dir,
    };
    return qp_pb_unpack(what, kind, b, len, desc, m, err);
}

char *qp_tp_dir_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? strndup(path, (size_t)(slash - path) + 1) : strdup(".");
}

enum qp_status qp_fmt_pb_parse(const char *what, const void *buf, size_t len,
                               struct qp_mmap *map, const char *dir,
                               const char *name, bool header_only,
                               struct qp_tensor **out, struct qp_error *err)
{
    *out = NULL;
    struct qp_pb_msg m;
    struct qp_tp_ctx c;
    enum qp_status st = qp_tp_unpack(&c, &m, &onnx__tensor_proto__descriptor,
                                     "TensorProto", what, buf, len, map, dir,
                                     err);
    if (!st) {
        c.header_only = header_only;
        const Onnx__TensorProto *tp = (const Onnx__TensorProto *)m.msg;
        const char *nm = tp->name && *tp->name ? tp->name
                         : name                ? name
                                               : "tensor";
        char label[512];
        snprintf(label, sizeof label, "tensor '%s'", nm);
        st = qp_fmt_tensorproto_to_tensor(&c, tp, label, nm, out, err);
    }
    qp_tp_ctx_release(&c);
    qp_pb_msg_release(&m);
    return st;
}

enum qp_status qp_fmt_pb_read(const char *path, const char *name,
                              bool header_only, struct qp_tensor **out,
                              struct qp_error *err)
{
    *out = NULL;
    struct qp_mmap *map;
    enum qp_status st = qp_mmap_open(path, &map, err);
    if (st)
        return st;
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    size_t bl = strlen(base);
    if (bl > 3 && qp_str_ends_with(base, ".pb"))
        bl -= 3;
    char *dir = qp_tp_dir_of(path);
    char *fallback = name ? NULL : strndup(base, bl);
    if (!dir || (!name && !fallback))
        st = qp_fail(err, QP_E_NOMEM, "out of memory");
    else
        st = qp_fmt_pb_parse(path, map->data, map->size, map, dir,
                             name ? name : fallback, header_only, out, err);
    free(dir);
    free(fallback);
    qp_mmap_unref(map);
    return st;
}

enum qp_status qp_fmt_pb_load(const char *path, struct qp_tensor **out,
                              struct qp_error *err)
{
    return qp_fmt_pb_read(path, NULL, false, out, err);
}

/* ---- writing ------------------------------------------------------------- */

struct file_buffer {
    ProtobufCBuffer base;
    FILE *fp;
    bool failed;
};

static void file_append(ProtobufCBuffer *b, size_t len, const uint8_t *data)
{
    struct file_buffer *f = (struct file_buffer *)b;
    if (!f->failed && len && fwrite(data, 1, len, f->fp) != len)
        f->failed = true;
}

enum qp_status qp_fmt_pb_write(FILE *fp, const struct qp_tensor *t,
                               struct qp_error *err)
{
    enum qp_onnx_type type = qp_fmt_onnx_type_of(t->dtype);
    if (type == QP_ONNX_UNDEFINED)
        return qp_fail(err, QP_E_UNSUPPORTED, "tensor '%s': ONNX has no data "
                       "type for %s", t->name, qp_dtype_name(t->dtype));
    if (t->nbytes > INT_MAX - 4096)
        return qp_fail(err, QP_E_UNSUPPORTED, "tensor '%s': %zu bytes exceed "
                       "protobuf's 2 GiB limit; use .npy, .safetensors or .h5",
                       t->name, t->nbytes);
    if (t->nbytes && !t->data)
        return qp_fail(err, QP_E_INVAL, "tensor '%s' has no data", t->name);
    Onnx__TensorProto tp = ONNX__TENSOR_PROTO__INIT;
    int64_t dims[QP_MAX_DIMS];
    for (int i = 0; i < t->ndim; i++)
        dims[i] = t->shape[i];
    tp.n_dims = (size_t)t->ndim;
    tp.dims = dims;
    tp.has_data_type = 1;
    tp.data_type = (int32_t)type;
    tp.name = t->name;
    tp.has_raw_data = 1;
    tp.raw_data.len = t->nbytes;
    tp.raw_data.data = t->data;
    struct file_buffer fb = {{file_append}, fp, false};
    protobuf_c_message_pack_to_buffer(&tp.base, &fb.base);
    if (fb.failed)
        return qp_fail(err, QP_E_IO, "tensor '%s': write failed: %s", t->name,
                       strerror(errno));
    return QP_OK;
}

enum qp_status qp_fmt_pb_save(const char *path, const struct qp_tensor *t,
                              struct qp_error *err)
{
    if (t->qp)
        return qp_fail(err, QP_E_UNSUPPORTED, "'%s': a .pb file cannot carry "
                       "the quantization parameters of '%s'", path, t->name);
    struct qp_outfile *of;
    enum qp_status st = qp_outfile_open(path, &of, err);
    if (st)
        return st;
    st = qp_fmt_pb_write(of->fp, t, err);
    if (st) {
        qp_outfile_abort(of);
        return qp_error_prefix(err, "'%s': ", path);
    }
    return qp_outfile_commit(of, err);
}
