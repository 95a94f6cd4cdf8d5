/* model/op.c: operator registry, generic checks and the helpers operator
 * files share (model/op.h). */
#include "model/op.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/half.h"
#include "core/parallel.h"

static const struct qp_op_def *const families[] = {
    qp_ops_binary, qp_ops_unary, qp_ops_conv,   qp_ops_pool,  qp_ops_matmul,
    qp_ops_norm,   qp_ops_shape, qp_ops_layout, qp_ops_resize, qp_ops_reduce,
    qp_ops_quant,
    qp_ops_tflite,
    qp_ops_llm,
};

const struct qp_op_def *qp_op_at(size_t i)
{
    for (size_t f = 0; f < sizeof families / sizeof families[0]; f++)
        for (const struct qp_op_def *d = families[f]; d->name; d++)
            if (i-- == 0)
                return d;
    return NULL;
}

bool qp_op_always(const struct qp_node *n)
{
    (void)n;
    return true;
}

uint64_t qp_tdesc_dims(const struct qp_tdesc *d, int from, int to)
{
    uint64_t p = 1;
    for (int i = from < 0 ? 0 : from; i < to && i < d->ndim; i++)
        p *= d->shape[i] > 0 ? (uint64_t)d->shape[i] : 0;
    return p;
}

const struct qp_op_def *qp_op_find(const char *domain, const char *op_type)
{
    /* "ai.onnx" is another spelling of the default domain */
    if (!domain || !strcmp(domain, "ai.onnx"))
        domain = "";
    for (size_t i = 0;; i++) {
        const struct qp_op_def *d = qp_op_at(i);
        if (!d)
            return NULL;
        if (!strcmp(d->name, op_type) && !strcmp(d->domain, domain))
            return d;
    }
}

static const char *attr_type_name(enum qp_attr_type t)
{
    static const char *const names[] = {"int",    "float",   "string", "ints",
                                        "floats", "strings", "tensor"};
    _Static_assert(sizeof names / sizeof names[0] == QP_ATTR_COUNT,
                   "attribute type names");
    return (unsigned)t < QP_ATTR_COUNT ? names[t] : "?";
}

enum qp_status qp_op_fail(struct qp_error *err, const struct qp_op_ctx *c,
                          enum qp_status status, const char *fmt, ...)
{
    char lab[256], msg[QP_ERROR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return qp_fail(err, status, "%s: %s",
                   qp_node_label(c->g, c->node, lab, sizeof lab), msg);
}

enum qp_status qp_op_check(const struct qp_graph *g, int node,
                           struct qp_error *err)
{
    const struct qp_node *n = &g->nodes[node];
    const struct qp_op_def *d = n->def;
    struct qp_op_ctx c = {g, node, n, NULL, 0, NULL, NULL, NULL};
    int last_in = n->n_in;
    while (last_in > 0 && n->in[last_in - 1] < 0)
        last_in--;
    if (last_in > d->max_in || n->n_in < d->min_in)
        return qp_op_fail(err, &c, QP_E_FORMAT, "%d inputs, expected %d to %d",
                          n->n_in, d->min_in, d->max_in);
    for (int k = 0; k < d->min_in; k++)
        if (n->in[k] < 0)
            return qp_op_fail(err, &c, QP_E_FORMAT, "input %d is required", k);
    if (n->n_out > d->max_out || n->n_out < d->min_out)
        return qp_op_fail(err, &c, QP_E_FORMAT,
                          "%d outputs, expected %d to %d", n->n_out,
                          d->min_out, d->max_out);
    for (int a = 0; a < n->n_attrs && d->attrs; a++)
        for (const struct qp_attr_spec *s = d->attrs; s->name; s++)
            if (!strcmp(s->name, n->attrs[a].name) &&
                s->type != n->attrs[a].type)
                return qp_op_fail(err, &c, QP_E_FORMAT,
                                  "attribute '%s' is %s, expected %s", s->name,
                                  attr_type_name(n->attrs[a].type),
                                  attr_type_name(s->type));
    return d->check ? d->check(&c, err) : QP_OK;
}

/* ---- attributes -------------------------------------------------------- */

static const struct qp_attr *typed(const struct qp_node *n, const char *name,
                                   enum qp_attr_type t)
{
    const struct qp_attr *a = qp_node_attr(n, name);
    return a && a->type == t ? a : NULL;
}

int64_t qp_attr_int(const struct qp_node *n, const char *name, int64_t def)
{
    const struct qp_attr *a = typed(n, name, QP_ATTR_INT);
    return a ? a->i : def;
}

float qp_attr_float(const struct qp_node *n, const char *name, float def)
{
    const struct qp_attr *a = typed(n, name, QP_ATTR_FLOAT);
    return a ? a->f : def;
}

const char *qp_attr_str(const struct qp_node *n, const char *name,
                        const char *def)
{
    const struct qp_attr *a = typed(n, name, QP_ATTR_STRING);
    return a ? a->s : def;
}

const int64_t *qp_attr_ints(const struct qp_node *n, const char *name,
                            size_t *count)
{
    const struct qp_attr *a = typed(n, name, QP_ATTR_INTS);
    *count = a ? a->count : 0;
    return a ? a->ints : NULL;
}

const float *qp_attr_floats(const struct qp_node *n, const char *name,
                            size_t *count)
{
    const struct qp_attr *a = typed(n, name, QP_ATTR_FLOATS);
    *count = a ? a->count : 0;
    return a ? a->floats : NULL;
}

/* ---- inputs and descriptors -------------------------------------------- */

enum qp_status qp_op_axis(const struct qp_op_ctx *c, const char *what,
                          int64_t axis, int ndim, int *out,
                          struct qp_error *err)
{
    if (axis < -(int64_t)ndim || axis >= ndim)
        return qp_op_fail(err, c, QP_E_FORMAT, "%s %lld is out of range for "
                          "rank %d", what, (long long)axis, ndim);
    *out = (int)(axis < 0 ? axis + ndim : axis);
    return QP_OK;
}

/* Reads t (integer when ints, else float) into out[max] as int64 or
 * float. */
static enum qp_status read_values(const struct qp_op_ctx *c, const char *what,
                                  const struct qp_tensor *t, bool ints,
                                  void *out, size_t max, size_t *count,
                                  struct qp_error *err)
{
    bool ok = ints ? t->dtype == QP_DTYPE_I64 || t->dtype == QP_DTYPE_I32
                   : qp_dtype_traits(t->dtype)->is_float;
    if (!ok)
        return qp_op_fail(err, c, QP_E_FORMAT, "%s must be %s, not %s", what,
                          ints ? "int64 or int32" : "a float tensor",
                          qp_dtype_name(t->dtype));
    size_t n = qp_tensor_numel(t);
    if (n > max)
        return qp_op_fail(err, c, QP_E_UNSUPPORTED, "%s has %zu values, at "
                          "most %zu are supported", what, n, max);
    for (size_t i = 0; i < n; i++) {
        if (ints)
            ((int64_t *)out)[i] = qp_elem_get_i64(t->dtype, t->data, i);
        else
            ((float *)out)[i] = (float)qp_elem_get_f64(t->dtype, t->data, i);
    }
    *count = n;
    return QP_OK;
}

enum qp_status qp_op_read_ints(const struct qp_op_ctx *c, const char *what,
                               const struct qp_tensor *t, int64_t *out,
                               size_t max, size_t *count, struct qp_error *err)
{
    return read_values(c, what, t, true, out, max, count, err);
}

enum qp_status qp_op_read_floats(const struct qp_op_ctx *c, const char *what,
                                 const struct qp_tensor *t, float *out,
                                 size_t max, size_t *count,
                                 struct qp_error *err)
{
    return read_values(c, what, t, false, out, max, count, err);
}

enum qp_status qp_op_want_f32(const struct qp_op_ctx *c, int i,
                              struct qp_error *err)
{
    const struct qp_tensor *t = qp_op_in(c, i);
    if (t && t->dtype != QP_DTYPE_F32)
        return qp_op_fail(err, c, QP_E_UNSUPPORTED, "input %d is %s; only "
                          "f32 is supported", i, qp_dtype_name(t->dtype));
    return QP_OK;
}

void qp_tdesc_of(const struct qp_tensor *t, struct qp_tdesc *d)
{
    d->dtype = t->dtype;
    d->ndim = t->ndim;
    memcpy(d->shape, t->shape, sizeof d->shape);
}

size_t qp_tdesc_numel(const struct qp_tdesc *d)
{
    size_t n = 1;
    for (int i = 0; i < d->ndim; i++)
        n *= (size_t)d->shape[i];
    return n;
}

bool qp_tdesc_equal(const struct qp_tdesc *a, const struct qp_tdesc *b)
{
    if (a->dtype != b->dtype || a->ndim != b->ndim)
        return false;
    for (int d = 0; d < a->ndim; d++)
        if (a->shape[d] != b->shape[d])
            return false;
    return true;
}

size_t qp_elem_size(enum qp_dtype dt)
{
    unsigned bits = qp_dtype_traits(dt)->bits;
    return bits >= 8 ? bits / 8 : 0;
}

enum qp_status qp_op_broadcast(const struct qp_op_ctx *c,
                               const struct qp_tensor *const *ts, int n,
                               struct qp_tdesc *out, struct qp_error *err)
{
    int nd = 0;
    for (int i = 0; i < n; i++)
        if (ts[i] && ts[i]->ndim > nd)
            nd = ts[i]->ndim;
    out->ndim = nd;
    for (int d = 0; d < nd; d++)
        out->shape[d] = 1;
    for (int i = 0; i < n; i++) {
        if (!ts[i])
            continue;
        int off = nd - ts[i]->ndim;
        for (int d = 0; d < ts[i]->ndim; d++) {
            int64_t a = out->shape[off + d], b = ts[i]->shape[d];
            if (a == b || b == 1)
                continue;
            if (a != 1) {
                char s0[128], s1[128];
                qp_shape_str(nd, out->shape, s0, sizeof s0);
                qp_shape_str(ts[i]->ndim, ts[i]->shape, s1, sizeof s1);
                return qp_op_fail(err, c, QP_E_SHAPE, "shapes %s and %s do not "
                                  "broadcast", s0, s1);
            }
            out->shape[off + d] = b;
        }
    }
    return QP_OK;
}

/* ---- element access ---------------------------------------------------- */

double qp_elem_get_f64(enum qp_dtype dt, const void *data, size_t i)
{
    switch (dt) {
    case QP_DTYPE_F32: return ((const float *)data)[i];
    case QP_DTYPE_F64: return ((const double *)data)[i];
    case QP_DTYPE_F16: return qp_f16_to_f32(((const uint16_t *)data)[i]);
    case QP_DTYPE_BF16: return qp_bf16_to_f32(((const uint16_t *)data)[i]);
    case QP_DTYPE_F8E4M3: return qp_f8e4m3_to_f32(((const uint8_t *)data)[i]);
    case QP_DTYPE_F8E5M2: return qp_f8e5m2_to_f32(((const uint8_t *)data)[i]);
    case QP_DTYPE_U64: return (double)((const uint64_t *)data)[i];
    default: return (double)qp_elem_get_i64(dt, data, i);
    }
}

static int64_t f64_to_i64(double v)
{
    if (isnan(v))
        return 0;
    if (v >= 9223372036854775807.0)
        return INT64_MAX;
    if (v <= -9223372036854775808.0)
        return INT64_MIN;
    return (int64_t)v;
}

int64_t qp_elem_get_i64(enum qp_dtype dt, const void *data, size_t i)
{
    switch (dt) {
    case QP_DTYPE_I8: return ((const int8_t *)data)[i];
    case QP_DTYPE_U8: return ((const uint8_t *)data)[i];
    case QP_DTYPE_BOOL: return ((const uint8_t *)data)[i] != 0;
    case QP_DTYPE_I16: return ((const int16_t *)data)[i];
    case QP_DTYPE_U16: return ((const uint16_t *)data)[i];
    case QP_DTYPE_I32: return ((const int32_t *)data)[i];
    case QP_DTYPE_U32: return ((const uint32_t *)data)[i];
    case QP_DTYPE_I64: return ((const int64_t *)data)[i];
    case QP_DTYPE_U64: return (int64_t)((const uint64_t *)data)[i];
    case QP_DTYPE_I4: case QP_DTYPE_U4: case QP_DTYPE_I2: case QP_DTYPE_U2:
    case QP_DTYPE_I3: case QP_DTYPE_U3: return qp_packed_get(dt, data, i);
    default: return f64_to_i64(qp_elem_get_f64(dt, data, i));
    }
}

static int64_t clamp_i64(double v, double lo, double hi)
{
    if (isnan(v))
        return 0;
    return v <= lo ? (int64_t)lo : v >= hi ? (int64_t)hi : (int64_t)v;
}

void qp_elem_set_f64(enum qp_dtype dt, void *data, size_t i, double v)
{
    switch (dt) {
    case QP_DTYPE_F32: ((float *)data)[i] = (float)v; break;
    case QP_DTYPE_F64: ((double *)data)[i] = v; break;
    case QP_DTYPE_F16: ((uint16_t *)data)[i] = qp_f32_to_f16((float)v); break;
    case QP_DTYPE_BF16: ((uint16_t *)data)[i] = qp_f32_to_bf16((float)v); break;
    case QP_DTYPE_BOOL: ((uint8_t *)data)[i] = v != 0.0; break;
    case QP_DTYPE_I8: ((int8_t *)data)[i] = (int8_t)clamp_i64(v, -128, 127); break;
    case QP_DTYPE_U8: ((uint8_t *)data)[i] = (uint8_t)clamp_i64(v, 0, 255); break;
    case QP_DTYPE_I16:
        ((int16_t *)data)[i] = (int16_t)clamp_i64(v, -32768, 32767);
        break;
    case QP_DTYPE_U16: ((uint16_t *)data)[i] = (uint16_t)clamp_i64(v, 0, 65535); break;
    case QP_DTYPE_I32:
        ((int32_t *)data)[i] = (int32_t)clamp_i64(v, -2147483648.0, 2147483647.0);
        break;
    case QP_DTYPE_U32:
        ((uint32_t *)data)[i] = (uint32_t)clamp_i64(v, 0, 4294967295.0);
        break;
    case QP_DTYPE_U64:
        ((uint64_t *)data)[i] = isnan(v) || v <= 0 ? 0
                                : v >= 18446744073709551615.0 ? UINT64_MAX
                                                              : (uint64_t)v;
        break;
    case QP_DTYPE_I64: ((int64_t *)data)[i] = f64_to_i64(v); break;
    default:
        /* packed integers saturate to their range; float8 has no
         * narrowing here (the runtime never produces it) */
        if (qp_dtype_is_packed(dt)) {
            const struct qp_dtype_traits *tr = qp_dtype_traits(dt);
            qp_packed_set(dt, data, i, (int32_t)clamp_i64(v, (double)tr->min,
                                                          (double)tr->max));
        }
        break;
    }
}

void qp_elem_set_i64(enum qp_dtype dt, void *data, size_t i, int64_t v)
{
    /* integer narrowing wraps (two's complement), as numpy's astype */
    switch (dt) {
    case QP_DTYPE_I8: ((int8_t *)data)[i] = (int8_t)(uint8_t)v; break;
    case QP_DTYPE_U8: ((uint8_t *)data)[i] = (uint8_t)v; break;
    case QP_DTYPE_BOOL: ((uint8_t *)data)[i] = v != 0; break;
    case QP_DTYPE_I16: ((int16_t *)data)[i] = (int16_t)(uint16_t)v; break;
    case QP_DTYPE_U16: ((uint16_t *)data)[i] = (uint16_t)v; break;
    case QP_DTYPE_I32: ((int32_t *)data)[i] = (int32_t)(uint32_t)v; break;
    case QP_DTYPE_U32: ((uint32_t *)data)[i] = (uint32_t)v; break;
    case QP_DTYPE_I64: ((int64_t *)data)[i] = v; break;
    case QP_DTYPE_U64: ((uint64_t *)data)[i] = (uint64_t)v; break;
    default: qp_elem_set_f64(dt, data, i, (double)v); break;
    }
}

/* ---- parallel loops ---------------------------------------------------- */

struct pfor {
    size_t n, align;
    void (*fn)(void *, size_t, size_t);
    void *ctx;
};

static void pfor_run(void *ctx, int t, int nt)
{
    const struct pfor *p = ctx;
    size_t b, e;
    qp_parallel_split(p->n, t, nt, p->align, &b, &e);
    if (b < e)
        p->fn(p->ctx, b, e);
}

static void parallel_for(const struct qp_op_ctx *c, size_t n,
                         size_t min_per_thread, size_t align,
                         void (*fn)(void *ctx, size_t begin, size_t end),
                         void *ctx)
{
    int nt = qp_pool_threads(c->pool);
    if (min_per_thread < 1)
        min_per_thread = 1;
    if ((size_t)nt > n / min_per_thread)
        nt = (int)(n / min_per_thread);
    if (nt <= 1) {
        if (n)
            fn(ctx, 0, n);
        return;
    }
    struct pfor p = {n, align, fn, ctx};
    qp_pool_run(c->pool, pfor_run, &p, nt);
}

void qp_op_parallel_for(const struct qp_op_ctx *c, size_t n,
                        size_t min_per_thread,
                        void (*fn)(void *ctx, size_t begin, size_t end),
                        void *ctx)
{
    parallel_for(c, n, min_per_thread, 16, fn, ctx);
}

void qp_op_parallel_items(const struct qp_op_ctx *c, size_t n,
                          size_t min_per_thread,
                          void (*fn)(void *ctx, size_t begin, size_t end),
                          void *ctx)
{
    parallel_for(c, n, min_per_thread, 1, fn, ctx);
}

/* ---- broadcasting ------------------------------------------------------ */

void qp_bcast_init(struct qp_bcast *b, const struct qp_tdesc *out,
                   const struct qp_tensor *const *ops, int nops)
{
    int64_t st[4][QP_MAX_DIMS];
    int nd = out->ndim;
    b->nops = nops;
    for (int o = 0; o < nops; o++) {
        int off = nd - ops[o]->ndim;
        int64_t s = 1;
        for (int d = nd - 1; d >= 0; d--) {
            int64_t dim = d >= off ? ops[o]->shape[d - off] : 1;
            st[o][d] = dim == 1 ? 0 : s;
            s *= dim;
        }
    }
    /* drop dims of extent 1, then merge neighbours that stay contiguous
     * for every operand */
    int m = 0;
    for (int d = 0; d < nd; d++) {
        if (out->shape[d] == 1)
            continue;
        bool merge = m > 0;
        for (int o = 0; merge && o < nops; o++)
            merge = b->stride[o][m - 1] == st[o][d] * out->shape[d];
        if (merge) {
            b->shape[m - 1] *= out->shape[d];
            for (int o = 0; o < nops; o++)
                b->stride[o][m - 1] = st[o][d];
            continue;
        }
        b->shape[m] = out->shape[d];
        for (int o = 0; o < nops; o++)
            b->stride[o][m] = st[o][d];
        m++;
    }
    if (m == 0) {
        b->shape[0] = 1;
        for (int o = 0; o < nops; o++)
            b->stride[o][0] = 0;
        m = 1;
    }
    b->nd = m;
    b->inner = (size_t)b->shape[m - 1];
    b->total = qp_tdesc_numel(out);
}

void qp_bcast_row(const struct qp_bcast *b, size_t row, int64_t *off)
{
    for (int o = 0; o < b->nops; o++)
        off[o] = 0;
    for (int d = b->nd - 2; d >= 0; d--) {
        int64_t i = (int64_t)(row % (size_t)b->shape[d]);
        row /= (size_t)b->shape[d];
        for (int o = 0; o < b->nops; o++)
            off[o] += i * b->stride[o][d];
    }
}

enum qp_status qp_op_broadcasts_to(const struct qp_op_ctx *c, const char *what,
                                   const struct qp_tensor *t,
                                   const struct qp_tdesc *d,
                                   struct qp_error *err)
{
    bool ok = t->ndim <= d->ndim;
    for (int i = 0; ok && i < t->ndim; i++) {
        int64_t td = t->shape[t->ndim - 1 - i], dd = d->shape[d->ndim - 1 - i];
        ok = td == dd || td == 1;
    }
    if (!ok) {
        char s0[128], s1[128];
        qp_shape_str(t->ndim, t->shape, s0, sizeof s0);
        qp_shape_str(d->ndim, d->shape, s1, sizeof s1);
        return qp_op_fail(err, c, QP_E_SHAPE, "%s of shape %s does not "
                          "broadcast to %s", what, s0, s1);
    }
    return QP_OK;
}

void qp_bcast_at(const struct qp_bcast *b, size_t o, int64_t *off)
{
    qp_bcast_row(b, o / b->inner, off);
    int64_t col = (int64_t)(o % b->inner);
    for (int k = 0; k < b->nops; k++)
        off[k] += col * b->stride[k][b->nd - 1];
}

enum qp_status qp_op_batch_dims(const struct qp_op_ctx *c,
                                const struct qp_tensor *a,
                                const struct qp_tensor *b, struct qp_tensor *ab,
                                struct qp_tensor *bb, struct qp_tdesc *batch,
                                struct qp_error *err)
{
    memset(ab, 0, sizeof *ab);
    memset(bb, 0, sizeof *bb);
    ab->ndim = a->ndim > 2 ? a->ndim - 2 : 0;
    bb->ndim = b->ndim > 2 ? b->ndim - 2 : 0;
    memcpy(ab->shape, a->shape, (size_t)ab->ndim * sizeof(int64_t));
    memcpy(bb->shape, b->shape, (size_t)bb->ndim * sizeof(int64_t));
    const struct qp_tensor *ops[2] = {ab, bb};
    return qp_op_broadcast(c, ops, 2, batch, err);
}
