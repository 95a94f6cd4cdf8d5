/* formats/tflite.c: the TFLite model reader (formats/tflite.h).
 *
 * Field numbers below are the schema's (schema.fbs), counting a union as
 * two fields (its type, then its value). */
#include "formats/tflite.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/size.h"
#include "core/strmap.h"
#include "formats/flatbuf.h"

/* Model, SubGraph, Tensor, QuantizationParameters, OperatorCode, Operator,
 * Buffer fields. */
enum { M_VERSION = 0, M_OPCODES = 1, M_SUBGRAPHS = 2, M_DESCRIPTION = 3,
       M_BUFFERS = 4 };
enum { SG_TENSORS = 0, SG_INPUTS = 1, SG_OUTPUTS = 2, SG_OPERATORS = 3 };
enum { T_SHAPE = 0, T_TYPE = 1, T_BUFFER = 2, T_NAME = 3, T_QUANT = 4,
       T_IS_VARIABLE = 5, T_SPARSITY = 6, T_SIGNATURE = 7 };
enum { Q_SCALE = 2, Q_ZERO_POINT = 3, Q_DETAILS_TYPE = 4, Q_DIM = 6 };
enum { OC_DEPRECATED = 0, OC_CUSTOM = 1, OC_VERSION = 2, OC_BUILTIN = 3 };
enum { OP_OPCODE = 0, OP_INPUTS = 1, OP_OUTPUTS = 2, OP_OPTIONS_TYPE = 3,
       OP_OPTIONS = 4 };
enum { B_DATA = 0, B_OFFSET = 1, B_SIZE = 2 };

/* Arrays copied from the file may total this much plus BUDGET_PER_BYTE
 * bytes per file byte. */
#define BUDGET_BASE ((size_t)64 << 20)
#define BUDGET_PER_BYTE 16

struct parse {
    const char *what;
    struct qp_fb fb;
    struct qp_tfl_model *m;
    struct qp_error *err;
    const uint8_t **buf_data; /* per buffer: its bytes, NULL when empty */
    size_t *buf_size;
};

/* qp_fail with "'file': " in front. */
static enum qp_status fail(struct parse *p, enum qp_status st, const char *fmt,
                           ...) __attribute__((format(printf, 3, 4)));
static enum qp_status fail(struct parse *p, enum qp_status st, const char *fmt,
                           ...)
{
    char msg[QP_ERROR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return qp_fail(p->err, st, "'%s': %s", p->what, msg);
}

/* A failed FlatBuffer access: prefixes the file and what was read. */
static enum qp_status ctx(struct parse *p, enum qp_status st, const char *fmt,
                          ...) __attribute__((format(printf, 3, 4)));
static enum qp_status ctx(struct parse *p, enum qp_status st, const char *fmt,
                          ...)
{
    if (!st)
        return QP_OK;
    char what[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    qp_error_prefix(p->err, "'%s': %s: ", p->what, what);
    return st;
}

static void *alloc(struct parse *p, size_t n, size_t elem)
{
    size_t bytes;
    if (qp_size_mul(n ? n : 1, elem, &bytes) || bytes > p->m->budget)
        return NULL;
    p->m->budget -= bytes;
    return calloc(n ? n : 1, elem);
}

static enum qp_status nomem(struct parse *p)
{
    return fail(p, QP_E_NOMEM, "out of memory (or arrays far larger than the "
                "file, %zu bytes)", p->fb.size);
}

static enum qp_status note(struct parse *p, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static enum qp_status note(struct parse *p, const char *fmt, ...)
{
    struct qp_tfl_model *m = p->m;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    char **n = realloc(m->notes, (m->n_notes + 1) * sizeof *n);
    if (!n)
        return nomem(p);
    m->notes = n;
    if (!(n[m->n_notes] = strdup(msg)))
        return nomem(p);
    m->n_notes++;
    return QP_OK;
}

/* An int32 vector field copied into a new array of ints, each checked in
 * [lo, hi). */
static enum qp_status int_list(struct parse *p, const struct qp_fb_table *t,
                               int field, int lo, int hi, const char *what,
                               int **out, int *n)
{
    struct qp_fb_vec v;
    enum qp_status st = qp_fb_vector(&p->fb, t, field, 4, &v, p->err);
    if (st)
        return ctx(p, st, "%s", what);
    if (v.n > (size_t)INT32_MAX)
        return fail(p, QP_E_FORMAT, "%s: %zu entries", what, v.n);
    if (!(*out = alloc(p, v.n, sizeof **out)))
        return nomem(p);
    *n = (int)v.n;
    for (size_t i = 0; i < v.n; i++) {
        int32_t x = qp_fb_vec_i32(&p->fb, &v, i);
        if (x < lo || x >= hi)
            return fail(p, QP_E_FORMAT, "%s: entry %zu is %d, outside [%d, %d)",
                        what, i, (int)x, lo, hi);
        (*out)[i] = x;
    }
    return QP_OK;
}

/* ---- operator codes and buffers ----------------------------------------- */

static enum qp_status parse_opcodes(struct parse *p,
                                    const struct qp_fb_table *root)
{
    struct qp_tfl_model *m = p->m;
    struct qp_fb_vec v;
    enum qp_status st = qp_fb_vector(&p->fb, root, M_OPCODES, 4, &v, p->err);
    if (st)
        return ctx(p, st, "operator codes");
    if (!(m->opcodes = alloc(p, v.n, sizeof *m->opcodes)))
        return nomem(p);
    m->n_opcodes = v.n;
    for (size_t i = 0; i < v.n && !st; i++) {
        struct qp_fb_table t;
        struct qp_tfl_opcode *oc = &m->opcodes[i];
        int8_t dep;
        size_t len;
        st = qp_fb_vec_table(&p->fb, &v, i, root->depth, &t, p->err);
        if (!st)
            st = qp_fb_i8(&p->fb, &t, OC_DEPRECATED, 0, &dep, p->err);
        if (!st)
            st = qp_fb_i32(&p->fb, &t, OC_BUILTIN, 0, &oc->builtin, p->err);
        if (!st)
            st = qp_fb_i32(&p->fb, &t, OC_VERSION, 1, &oc->version, p->err);
        if (!st)
            st = qp_fb_string(&p->fb, &t, OC_CUSTOM, &oc->custom, &len, p->err);
        if (st)
            return ctx(p, st, "operator code %zu", i);
        /* old files set only the int8 field; newer ones both */
        if (dep > oc->builtin)
            oc->builtin = dep;
    }
    return QP_OK;
}

static enum qp_status parse_buffers(struct parse *p,
                                    const struct qp_fb_table *root)
{
    struct qp_fb_vec v;
    enum qp_status st = qp_fb_vector(&p->fb, root, M_BUFFERS, 4, &v, p->err);
    if (st)
        return ctx(p, st, "buffers");
    p->m->n_buffers = v.n;
    if (!(p->buf_data = alloc(p, v.n, sizeof *p->buf_data)) ||
        !(p->buf_size = alloc(p, v.n, sizeof *p->buf_size)))
        return nomem(p);
    for (size_t i = 0; i < v.n; i++) {
        struct qp_fb_table t;
        struct qp_fb_vec d;
        uint64_t off, size;
        st = qp_fb_vec_table(&p->fb, &v, i, root->depth, &t, p->err);
        if (!st)
            st = qp_fb_vector(&p->fb, &t, B_DATA, 1, &d, p->err);
        if (!st)
            st = qp_fb_u64(&p->fb, &t, B_OFFSET, 0, &off, p->err);
        if (!st)
            st = qp_fb_u64(&p->fb, &t, B_SIZE, 0, &size, p->err);
        if (st)
            return ctx(p, st, "buffer %zu", i);
        if (off > 1) { /* stored after the FlatBuffer (models over 2 GB) */
            if (off > p->fb.size || size > p->fb.size - off)
                return fail(p, QP_E_FORMAT, "buffer %zu: %llu bytes at offset "
                            "%llu run past the end of the file (%zu bytes)", i,
                            (unsigned long long)size, (unsigned long long)off,
                            p->fb.size);
            p->buf_data[i] = size ? p->fb.buf + off : NULL;
            p->buf_size[i] = (size_t)size;
        } else if (d.n) {
            p->buf_data[i] = p->fb.buf + d.pos;
            p->buf_size[i] = d.n;
        }
    }
    return QP_OK;
}

/* ---- tensors ------------------------------------------------------------- */

static bool dtype_of(int32_t type, enum qp_dtype *dt)
{
    static const struct { int32_t t; enum qp_dtype d; } map[] = {
        {QP_TFL_FLOAT32, QP_DTYPE_F32}, {QP_TFL_FLOAT16, QP_DTYPE_F16},
        {QP_TFL_INT32, QP_DTYPE_I32},   {QP_TFL_UINT8, QP_DTYPE_U8},
        {QP_TFL_INT64, QP_DTYPE_I64},   {QP_TFL_BOOL, QP_DTYPE_BOOL},
        {QP_TFL_INT16, QP_DTYPE_I16},   {QP_TFL_INT8, QP_DTYPE_I8},
        {QP_TFL_FLOAT64, QP_DTYPE_F64}, {QP_TFL_UINT64, QP_DTYPE_U64},
        {QP_TFL_UINT32, QP_DTYPE_U32},  {QP_TFL_UINT16, QP_DTYPE_U16},
    };
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (map[i].t == type) {
            *dt = map[i].d;
            return true;
        }
    return false;
}

/* A shape-like vector field into dims[QP_MAX_DIMS]; every entry >= lo. */
static enum qp_status dims_field(struct parse *p, const struct qp_fb_table *t,
                                 int field, int64_t lo, const char *what,
                                 size_t ti, int *ndim, int64_t *dims,
                                 bool *present)
{
    struct qp_fb_vec v;
    enum qp_status st = qp_fb_vector(&p->fb, t, field, 4, &v, p->err);
    if (st)
        return ctx(p, st, "tensor %zu: %s", ti, what);
    *present = v.present;
    if (v.n > QP_MAX_DIMS)
        return fail(p, QP_E_UNSUPPORTED, "tensor %zu: %s has rank %zu, at most "
                    "%d is supported", ti, what, v.n, QP_MAX_DIMS);
    *ndim = (int)v.n;
    for (size_t i = 0; i < v.n; i++) {
        dims[i] = qp_fb_vec_i32(&p->fb, &v, i);
        if (dims[i] < lo)
            return fail(p, QP_E_FORMAT, "tensor %zu: %s dim %zu is %lld", ti,
                        what, i, (long long)dims[i]);
    }
    return QP_OK;
}

static enum qp_status parse_quant(struct parse *p, const struct qp_fb_table *q,
                                  size_t ti, struct qp_tfl_tensor *t)
{
    struct qp_fb_vec sv, zv;
    uint8_t details;
    enum qp_status st = qp_fb_vector(&p->fb, q, Q_SCALE, 4, &sv, p->err);
    if (!st)
        st = qp_fb_vector(&p->fb, q, Q_ZERO_POINT, 8, &zv, p->err);
    if (!st)
        st = qp_fb_u8(&p->fb, q, Q_DETAILS_TYPE, 0, &details, p->err);
    if (!st)
        st = qp_fb_i32(&p->fb, q, Q_DIM, 0, &t->q.file_dim, p->err);
    if (st)
        return ctx(p, st, "tensor %zu '%s': quantization", ti, t->name);
    t->q.dim_slot = qp_fb_slot(&p->fb, q, Q_DIM);
    if (details)
        return fail(p, QP_E_UNSUPPORTED, "tensor %zu '%s': custom quantization "
                    "(details type %u) is not supported", ti, t->name, details);
    if (!sv.n)
        return QP_OK; /* TFLite: no scale, no quantization */
    if (zv.present && zv.n != sv.n)
        return fail(p, QP_E_FORMAT, "tensor %zu '%s': %zu scales but %zu zero "
                    "points", ti, t->name, sv.n, zv.n);
    t->q.dim = t->q.file_dim;
    if (sv.n > 1) {
        bool ok = t->q.dim >= 0 && t->q.dim < t->ndim;
        if (!ok && t->ndim == 1 && t->shape[0] == (int64_t)sv.n) {
            /* as TFLite Micro: a 1-D bias quantized along "dimension 3" */
            st = note(p, "tensor %zu '%s': quantized_dimension %d on a 1-D "
                      "tensor, read as 0 (as TFLite Micro does; TFLite refuses "
                      "it)", ti, t->name, (int)t->q.file_dim);
            if (st)
                return st;
            t->q.dim = 0;
            ok = true;
        }
        if (!ok)
            return fail(p, QP_E_FORMAT, "tensor %zu '%s': quantized_dimension "
                        "%d is out of range for rank %d", ti, t->name,
                        (int)t->q.dim, t->ndim);
        if (t->shape[t->q.dim] != (int64_t)sv.n)
            return fail(p, QP_E_FORMAT, "tensor %zu '%s': %zu scales along "
                        "dimension %d of size %lld", ti, t->name, sv.n,
                        (int)t->q.dim, (long long)t->shape[t->q.dim]);
    }
    if (!(t->q.scale = alloc(p, sv.n, sizeof *t->q.scale)) ||
        !(t->q.zero_point = alloc(p, sv.n, sizeof *t->q.zero_point)))
        return nomem(p);
    t->q.count = sv.n;
    for (size_t i = 0; i < sv.n; i++) {
        t->q.scale[i] = qp_fb_vec_f32(&p->fb, &sv, i);
        t->q.zero_point[i] = zv.n ? qp_fb_vec_i64(&p->fb, &zv, i) : 0;
    }
    return QP_OK;
}

static enum qp_status parse_tensor(struct parse *p, const struct qp_fb_table *tt,
                                   size_t ti)
{
    struct qp_tfl_tensor *t = &p->m->tensors[ti];
    size_t len;
    int8_t type;
    uint8_t var;
    bool present;
    struct qp_fb_table q;
    enum qp_status st = qp_fb_string(&p->fb, tt, T_NAME, &t->name, &len, p->err);
    if (!st)
        st = qp_fb_i8(&p->fb, tt, T_TYPE, 0, &type, p->err);
    if (!st)
        st = qp_fb_u32(&p->fb, tt, T_BUFFER, 0, &t->buffer, p->err);
    if (!st)
        st = qp_fb_u8(&p->fb, tt, T_IS_VARIABLE, 0, &var, p->err);
    if (st)
        return ctx(p, st, "tensor %zu", ti);
    if (!t->name)
        t->name = "";
    t->type = type;
    t->is_variable = var != 0;
    t->sparse = qp_fb_has(&p->fb, tt, T_SPARSITY);
    if (!dtype_of(type, &t->dtype)) {
        const char *tn = qp_tfl_type_name(type);
        return fail(p, tn ? QP_E_UNSUPPORTED : QP_E_FORMAT, "tensor %zu '%s': "
                    "%s type %s%d", ti, t->name, tn ? "unsupported" : "unknown",
                    tn ? tn : "", tn ? 0 : (int)type);
    }
    if ((st = dims_field(p, tt, T_SHAPE, 0, "shape", ti, &t->ndim, t->shape,
                         &present)))
        return st;
    int sig_ndim = 0;
    if ((st = dims_field(p, tt, T_SIGNATURE, -1, "shape_signature", ti,
                         &sig_ndim, t->signature, &t->has_signature)))
        return st;
    if (t->has_signature && sig_ndim != t->ndim)
        return fail(p, QP_E_FORMAT, "tensor %zu '%s': shape_signature has rank "
                    "%d, shape %d", ti, t->name, sig_ndim, t->ndim);
    if (t->buffer >= p->m->n_buffers)
        return fail(p, QP_E_FORMAT, "tensor %zu '%s': buffer %u of %zu", ti,
                    t->name, t->buffer, p->m->n_buffers);
    size_t nbytes;
    if (qp_shape_check("tensor", t->dtype, t->ndim, t->shape, &nbytes, p->err))
        return ctx(p, QP_E_FORMAT, "tensor %zu '%s'", ti, t->name);
    t->data = p->buf_data[t->buffer];
    t->nbytes = t->data ? p->buf_size[t->buffer] : 0;
    if (t->data && !t->sparse && t->nbytes != nbytes) {
        char s[128];
        qp_shape_str(t->ndim, t->shape, s, sizeof s);
        return fail(p, QP_E_FORMAT, "tensor %zu '%s': buffer %u holds %zu bytes, "
                    "its shape %s of %s needs %zu", ti, t->name, t->buffer,
                    t->nbytes, s, qp_tfl_type_name(type), nbytes);
    }
    st = qp_fb_table(&p->fb, tt, T_QUANT, &present, &q, p->err);
    if (st)
        return ctx(p, st, "tensor %zu '%s': quantization", ti, t->name);
    return present ? parse_quant(p, &q, ti, t) : QP_OK;
}

/* ---- operators ----------------------------------------------------------- */

/* The BuiltinOptions union type of each operator whose options are read. */
static uint8_t options_type_of(int32_t builtin)
{
    switch (builtin) {
    case QP_TFL_CONV_2D: return 1;
    case QP_TFL_DEPTHWISE_CONV_2D: return 2;
    case QP_TFL_AVERAGE_POOL_2D: case QP_TFL_MAX_POOL_2D: return 5;
    case QP_TFL_FULLY_CONNECTED: return 8;
    case QP_TFL_SOFTMAX: return 9;
    case QP_TFL_CONCATENATION: return 10;
    case QP_TFL_ADD: return 11;
    case QP_TFL_RESHAPE: return 17;
    case QP_TFL_MUL: return 21;
    case QP_TFL_MEAN: return 27;
    case QP_TFL_SUB: return 28;
    case QP_TFL_SQUEEZE: return 30;
    case QP_TFL_STRIDED_SLICE: return 32;
    case QP_TFL_TRANSPOSE_CONV: return 49;
    case QP_TFL_LEAKY_RELU: return 75;
    default: return 0;
    }
}

/* Field numbers of one options table, -1 where it has no such field. */
struct opt_fields {
    int padding, stride_w, stride_h, act, dil_w, dil_h, filter_w, filter_h,
        depth_mult;
};

static enum qp_status read_i32s(struct parse *p, const struct qp_fb_table *t,
                                const int *fields, int32_t *const *outs, int n)
{
    enum qp_status st = QP_OK;
    for (int i = 0; i < n && !st; i++)
        if (fields[i] >= 0)
            st = qp_fb_i32(&p->fb, t, fields[i], *outs[i], outs[i], p->err);
    return st;
}

static enum qp_status conv_like(struct parse *p, const struct qp_fb_table *t,
                                const struct opt_fields *f,
                                struct qp_tfl_options *o)
{
    enum qp_status st = QP_OK;
    if (f->padding >= 0)
        st = qp_fb_i8(&p->fb, t, f->padding, 0, &o->padding, p->err);
    if (!st && f->act >= 0)
        st = qp_fb_i8(&p->fb, t, f->act, 0, &o->act, p->err);
    const int fields[] = {f->stride_w, f->stride_h, f->dil_w, f->dil_h,
                          f->filter_w, f->filter_h, f->depth_mult};
    int32_t *const outs[] = {&o->stride_w, &o->stride_h, &o->dilation_w,
                             &o->dilation_h, &o->filter_w, &o->filter_h,
                             &o->depth_multiplier};
    return st ? st : read_i32s(p, t, fields, outs, 7);
}

static enum qp_status read_bool(struct parse *p, const struct qp_fb_table *t,
                                int field, bool def, bool *out)
{
    uint8_t v;
    enum qp_status st = qp_fb_u8(&p->fb, t, field, def, &v, p->err);
    *out = v != 0;
    return st;
}

static enum qp_status parse_options(struct parse *p, const struct qp_fb_table *t,
                                    struct qp_tfl_op *op)
{
    struct qp_tfl_options *o = &op->opt;
    enum qp_status st = QP_OK;
    switch (op->builtin) {
    case QP_TFL_CONV_2D:
        return conv_like(p, t, &(struct opt_fields){0, 1, 2, 3, 4, 5, -1, -1, -1}, o);
    case QP_TFL_DEPTHWISE_CONV_2D:
        return conv_like(p, t, &(struct opt_fields){0, 1, 2, 4, 5, 6, -1, -1, 3}, o);
    case QP_TFL_AVERAGE_POOL_2D: case QP_TFL_MAX_POOL_2D:
        return conv_like(p, t, &(struct opt_fields){0, 1, 2, 5, -1, -1, 3, 4, -1}, o);
    case QP_TFL_TRANSPOSE_CONV:
        return conv_like(p, t, &(struct opt_fields){0, 1, 2, 3, -1, -1, -1, -1, -1}, o);
    case QP_TFL_FULLY_CONNECTED:
        st = qp_fb_i8(&p->fb, t, 0, 0, &o->act, p->err);
        if (!st)
            st = qp_fb_i8(&p->fb, t, 1, 0, &o->weights_format, p->err);
        return st ? st : read_bool(p, t, 2, false, &o->keep_num_dims);
    case QP_TFL_SOFTMAX: return qp_fb_f32(&p->fb, t, 0, 0.0f, &o->beta, p->err);
    case QP_TFL_LEAKY_RELU:
        return qp_fb_f32(&p->fb, t, 0, 0.0f, &o->alpha, p->err);
    case QP_TFL_CONCATENATION:
        st = qp_fb_i32(&p->fb, t, 0, 0, &o->axis, p->err);
        return st ? st : qp_fb_i8(&p->fb, t, 1, 0, &o->act, p->err);
    case QP_TFL_ADD: case QP_TFL_SUB:
        st = qp_fb_i8(&p->fb, t, 0, 0, &o->act, p->err);
        return st ? st : read_bool(p, t, 1, true, &o->pot_scale_int16);
    case QP_TFL_MUL: return qp_fb_i8(&p->fb, t, 0, 0, &o->act, p->err);
    case QP_TFL_MEAN: return read_bool(p, t, 0, false, &o->keep_dims);
    case QP_TFL_STRIDED_SLICE: {
        const int fields[] = {0, 1, 2, 3, 4};
        int32_t *const outs[] = {&o->begin_mask, &o->end_mask,
                                 &o->ellipsis_mask, &o->new_axis_mask,
                                 &o->shrink_axis_mask};
        st = read_i32s(p, t, fields, outs, 5);
        return st ? st : read_bool(p, t, 5, false, &o->offset);
    }
    case QP_TFL_RESHAPE: case QP_TFL_SQUEEZE: {
        struct qp_fb_vec v;
        if ((st = qp_fb_vector(&p->fb, t, 0, 4, &v, p->err)))
            return st;
        if (v.n > QP_MAX_DIMS)
            return qp_fail(p->err, QP_E_UNSUPPORTED, "%s has %zu entries, at "
                           "most %d are supported", op->builtin == QP_TFL_RESHAPE
                           ? "new_shape" : "squeeze_dims", v.n, QP_MAX_DIMS);
        for (size_t i = 0; i < v.n; i++) {
            if (op->builtin == QP_TFL_RESHAPE)
                o->new_shape[i] = qp_fb_vec_i32(&p->fb, &v, i);
            else
                o->squeeze_dims[i] = qp_fb_vec_i32(&p->fb, &v, i);
        }
        if (op->builtin == QP_TFL_RESHAPE)
            o->n_new_shape = v.present ? (int)v.n : -1;
        else
            o->n_squeeze_dims = (int)v.n;
        return QP_OK;
    }
    default: return QP_OK;
    }
}

static void default_options(struct qp_tfl_options *o)
{
    memset(o, 0, sizeof *o);
    o->stride_w = o->stride_h = 1;
    o->dilation_w = o->dilation_h = 1;
    o->pot_scale_int16 = true;
    o->n_new_shape = -1;
}

static enum qp_status parse_op(struct parse *p, const struct qp_fb_table *t,
                               size_t i)
{
    struct qp_tfl_model *m = p->m;
    struct qp_tfl_op *op = &m->ops[i];
    char what[64];
    int nt = (int)m->n_tensors;
    enum qp_status st = qp_fb_u32(&p->fb, t, OP_OPCODE, 0, &op->opcode, p->err);
    if (!st)
        st = qp_fb_u8(&p->fb, t, OP_OPTIONS_TYPE, 0, &op->options_type, p->err);
    if (st)
        return ctx(p, st, "operator %zu", i);
    if (op->opcode >= m->n_opcodes)
        return fail(p, QP_E_FORMAT, "operator %zu: opcode index %u of %zu", i,
                    op->opcode, m->n_opcodes);
    op->builtin = m->opcodes[op->opcode].builtin;
    snprintf(what, sizeof what, "operator %zu inputs", i);
    if ((st = int_list(p, t, OP_INPUTS, -1, nt, what, &op->in, &op->n_in)))
        return st;
    snprintf(what, sizeof what, "operator %zu outputs", i);
    if ((st = int_list(p, t, OP_OUTPUTS, -1, nt, what, &op->out, &op->n_out)))
        return st;
    default_options(&op->opt);
    uint8_t want = options_type_of(op->builtin);
    if (!want || !op->options_type)
        return QP_OK;
    char lab[64];
    if (op->options_type != want)
        return fail(p, QP_E_FORMAT, "operator %zu (%s): builtin options of "
                    "type %u, expected %u", i,
                    qp_tfl_op_label(m, op, lab, sizeof lab), op->options_type,
                    want);
    struct qp_fb_table ot;
    bool present;
    st = qp_fb_table(&p->fb, t, OP_OPTIONS, &present, &ot, p->err);
    if (!st && present)
        st = parse_options(p, &ot, op);
    return ctx(p, st, "operator %zu (%s): options", i,
               qp_tfl_op_label(m, op, lab, sizeof lab));
}

/* ---- model --------------------------------------------------------------- */

/* Aliases for empty and repeated tensor names (dumps and graphs key
 * tensors by name). */
static enum qp_status unique_names(struct parse *p)
{
    struct qp_tfl_model *m = p->m;
    struct qp_strmap seen;
    enum qp_status st = QP_OK;
    qp_strmap_init(&seen);
    for (size_t i = 0; i < m->n_tensors && !st; i++) {
        struct qp_tfl_tensor *t = &m->tensors[i];
        bool dup = false;
        if (t->name[0])
            st = qp_strmap_put(&seen, t->name, i, &dup, p->err);
        if (st || (t->name[0] && !dup))
            continue;
        char buf[64];
        snprintf(buf, sizeof buf, "#%zu", i);
        size_t n = strlen(t->name) + strlen(buf) + 8;
        if (!(t->alias = alloc(p, n, 1))) {
            st = nomem(p);
            break;
        }
        snprintf(t->alias, n, "%s%s", t->name[0] ? t->name : "tensor", buf);
        if (!t->name[0])
            t->alias[strlen("tensor")] = '_';
        st = qp_strmap_put(&seen, t->alias, i, &dup, p->err);
        if (!st && dup)
            st = fail(p, QP_E_FORMAT, "tensor %zu: name '%s' is taken", i,
                      t->alias);
    }
    qp_strmap_release(&seen);
    return st;
}

static enum qp_status parse_subgraph(struct parse *p, const struct qp_fb_table *sg)
{
    struct qp_tfl_model *m = p->m;
    struct qp_fb_vec tv, ov;
    enum qp_status st = qp_fb_vector(&p->fb, sg, SG_TENSORS, 4, &tv, p->err);
    if (!st)
        st = qp_fb_vector(&p->fb, sg, SG_OPERATORS, 4, &ov, p->err);
    if (st)
        return ctx(p, st, "subgraph 0");
    if (tv.n > (size_t)INT32_MAX)
        return fail(p, QP_E_FORMAT, "subgraph 0: %zu tensors", tv.n);
    if (!(m->tensors = alloc(p, tv.n, sizeof *m->tensors)))
        return nomem(p);
    m->n_tensors = tv.n;
    for (size_t i = 0; i < tv.n; i++) {
        struct qp_fb_table t;
        if ((st = qp_fb_vec_table(&p->fb, &tv, i, sg->depth, &t, p->err)))
            return ctx(p, st, "tensor %zu", i);
        if ((st = parse_tensor(p, &t, i)))
            return st;
    }
    if ((st = unique_names(p)))
        return st;
    int nt = (int)m->n_tensors;
    if ((st = int_list(p, sg, SG_INPUTS, 0, nt, "subgraph 0 inputs", &m->inputs,
                       &m->n_inputs)) ||
        (st = int_list(p, sg, SG_OUTPUTS, 0, nt, "subgraph 0 outputs",
                       &m->outputs, &m->n_outputs)))
        return st;
    m->outputs_slot = qp_fb_slot(&p->fb, sg, SG_OUTPUTS);
    if (!(m->ops = alloc(p, ov.n, sizeof *m->ops)))
        return nomem(p);
    m->n_ops = ov.n;
    for (size_t i = 0; i < ov.n; i++) {
        struct qp_fb_table t;
        if ((st = qp_fb_vec_table(&p->fb, &ov, i, sg->depth, &t, p->err)))
            return ctx(p, st, "operator %zu", i);
        if ((st = parse_op(p, &t, i)))
            return st;
    }
    return QP_OK;
}

static enum qp_status parse_model(struct parse *p)
{
    struct qp_tfl_model *m = p->m;
    struct qp_fb_table root, sg;
    struct qp_fb_vec sv;
    size_t len;
    enum qp_status st = qp_fb_root(&p->fb, "TFL3", &root, p->err);
    if (st)
        return ctx(p, st, "not a TFLite model");
    st = qp_fb_u32(&p->fb, &root, M_VERSION, 0, &m->version, p->err);
    if (!st)
        st = qp_fb_string(&p->fb, &root, M_DESCRIPTION, &m->description, &len,
                          p->err);
    if (!st)
        st = qp_fb_vector(&p->fb, &root, M_SUBGRAPHS, 4, &sv, p->err);
    if (st)
        return ctx(p, st, "model");
    if (m->version != 3)
        return fail(p, QP_E_UNSUPPORTED, "schema version %u (qprobe reads "
                    "version 3)", m->version);
    if (!sv.n)
        return fail(p, QP_E_FORMAT, "the model has no subgraph");
    m->n_subgraphs = sv.n;
    if ((st = parse_opcodes(p, &root)) || (st = parse_buffers(p, &root)))
        return st;
    if ((st = qp_fb_vec_table(&p->fb, &sv, 0, root.depth, &sg, p->err)))
        return ctx(p, st, "subgraph 0");
    return parse_subgraph(p, &sg);
}

enum qp_status qp_tfl_parse(const char *what, const void *buf, size_t len,
                            struct qp_mmap *map, struct qp_tfl_model **out,
                            struct qp_error *err)
{
    *out = NULL;
    struct qp_tfl_model *m = calloc(1, sizeof *m);
    if (!m || !(m->path = strdup(what))) {
        free(m);
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    }
    m->budget = BUDGET_BASE;
    size_t extra;
    if (!qp_size_mul(len, BUDGET_PER_BYTE, &extra) &&
        !qp_size_add(m->budget, extra, &extra))
        m->budget = extra;
    if (map)
        m->map = qp_mmap_ref(map);
    m->bytes = buf;
    m->size = len;
    struct parse p = {m->path, {buf, len}, m, err, NULL, NULL};
    enum qp_status st = parse_model(&p);
    free(p.buf_data);
    free(p.buf_size);
    if (st) {
        qp_tfl_model_free(m);
        return st;
    }
    *out = m;
    return QP_OK;
}

enum qp_status qp_tfl_load(const char *path, struct qp_tfl_model **out,
                           struct qp_error *err)
{
    struct qp_mmap *map;
    *out = NULL;
    enum qp_status st = qp_mmap_open(path, &map, err);
    if (st)
        return st;
    st = qp_tfl_parse(path, map->data, map->size, map, out, err);
    qp_mmap_unref(map);
    return st;
}

void qp_tfl_model_free(struct qp_tfl_model *m)
{
    if (!m)
        return;
    for (size_t i = 0; m->tensors && i < m->n_tensors; i++) {
        free(m->tensors[i].alias);
        free(m->tensors[i].q.scale);
        free(m->tensors[i].q.zero_point);
    }
    for (size_t i = 0; m->ops && i < m->n_ops; i++) {
        free(m->ops[i].in);
        free(m->ops[i].out);
    }
    for (size_t i = 0; i < m->n_notes; i++)
        free(m->notes[i]);
    free(m->notes);
    free(m->tensors);
    free(m->ops);
    free(m->opcodes);
    free(m->inputs);
    free(m->outputs);
    free(m->path);
    qp_mmap_unref(m->map);
    free(m);
}

enum qp_status qp_tfl_tensor_new(const struct qp_tfl_model *m, size_t i,
                                 struct qp_tensor **out, struct qp_error *err)
{
    const struct qp_tfl_tensor *t = &m->tensors[i];
    struct qp_tensor *x = NULL;
    enum qp_status st;
    *out = NULL;
    if (t->sparse)
        return qp_fail(err, QP_E_UNSUPPORTED, "'%s': tensor %zu '%s' is sparse "
                       "(not supported)", m->path, i, t->name);
    size_t esz = qp_dtype_traits(t->dtype)->bits / 8;
    if (!t->data)
        st = qp_tensor_new_desc(qp_tfl_tensor_name(m, i), t->dtype, t->ndim, t->shape, &x, err);
    else if (esz && (uintptr_t)t->data % esz == 0)
        st = qp_tensor_wrap(qp_tfl_tensor_name(m, i), t->dtype, t->ndim, t->shape, t->data,
                            t->nbytes, m->map, &x, err);
    else if (!(st = qp_tensor_new(qp_tfl_tensor_name(m, i), t->dtype, t->ndim, t->shape, &x, err)))
        memcpy(x->data, t->data, t->nbytes);
    if (st)
        return st;
    if (t->q.count && qp_dtype_is_int(t->dtype)) {
        int32_t *zp = calloc(t->q.count, sizeof *zp);
        if (!zp) {
            qp_tensor_free(x);
            return qp_fail(err, QP_E_NOMEM, "out of memory");
        }
        for (size_t k = 0; k < t->q.count && !st; k++) {
            if (t->q.zero_point[k] < INT32_MIN || t->q.zero_point[k] > INT32_MAX)
                st = qp_fail(err, QP_E_FORMAT, "'%s': tensor %zu '%s': zero "
                             "point %lld does not fit int32", m->path, i,
                             t->name, (long long)t->q.zero_point[k]);
            zp[k] = (int32_t)t->q.zero_point[k];
        }
        if (!st)
            st = qp_tensor_set_qparams(x, t->q.count, t->q.scale, zp,
                                       t->q.count > 1 ? t->q.dim : -1, 0, err);
        free(zp);
    }
    if (st) {
        qp_tensor_free(x);
        return st;
    }
    *out = x;
    return QP_OK;
}
