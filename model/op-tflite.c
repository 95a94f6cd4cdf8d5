/* model/op-tflite.c: the "tflite" operator domain (model/op-tflite.h):
 * registry, the generic infer and run every TFLite operator shares, the
 * preparation of a node's state and the helpers of the operator files. */
#include "model/op-tflite.h"
#include "model/tflite-import.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char *const flavor_names[] = {"tflite", "tflite-x86"};
_Static_assert(sizeof flavor_names / sizeof flavor_names[0] ==
               QP_TFL_FLAVOR_COUNT, "flavor names");

const char *qp_tfl_flavor_name(enum qp_tfl_flavor f)
{
    return (unsigned)f < QP_TFL_FLAVOR_COUNT ? flavor_names[f] : "?";
}

bool qp_tfl_flavor_from_name(const char *name, enum qp_tfl_flavor *out)
{
    static const struct { const char *n; enum qp_tfl_flavor f; } names[] = {
        {"tflite", QP_TFL_MICRO},        {"tflite-micro", QP_TFL_MICRO},
        {"tflite-double", QP_TFL_MICRO}, {"tflm", QP_TFL_MICRO},
        {"tflite-x86", QP_TFL_X86},      {"tflite-interp", QP_TFL_X86},
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!strcasecmp(name, names[i].n)) {
            *out = names[i].f;
            return true;
        }
    return false;
}

static const struct qp_tfl_impl *const families[] = {
    qp_tfl_impls_conv, qp_tfl_impls_elem, qp_tfl_impls_shape,
    qp_tfl_impls_pool,
};

const struct qp_tfl_impl *qp_tfl_impl_find(int32_t builtin)
{
    for (size_t f = 0; f < sizeof families / sizeof families[0]; f++)
        for (const struct qp_tfl_impl *d = families[f]; d->builtin >= 0; d++)
            if (d->builtin == builtin)
                return d;
    return NULL;
}

enum qp_status qp_tfl_fail(struct qp_error *err, const struct qp_tfl_model *m,
                           const struct qp_tfl_op *op, enum qp_status st,
                           const char *fmt, ...)
{
    char msg[QP_ERROR_MSG_MAX], lab[96];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return qp_fail(err, st, "'%s': operator %td (%s): %s", m->path,
                   op - m->ops, qp_tfl_op_label(m, op, lab, sizeof lab), msg);
}

/* ---- state ---------------------------------------------------------------- */

void qp_tfl_node_free(void *p)
{
    struct qp_tfl_node *s = p;
    if (!s)
        return;
    if (s->impl_free)
        s->impl_free(s->impl);
    free(s);
}

/* Descriptor and per-tensor quantization of tensor ti. */
static enum qp_status describe(const struct qp_tfl_model *m,
                               const struct qp_tfl_op *op, int ti, bool output,
                               struct qp_tdesc *d, struct qp_tfl_qp *q,
                               struct qp_error *err)
{
    memset(d, 0, sizeof *d);
    memset(q, 0, sizeof *q);
    if (ti < 0)
        return QP_OK;
    const struct qp_tfl_tensor *t = &m->tensors[ti];
    if (t->sparse)
        return qp_tfl_fail(err, m, op, QP_E_UNSUPPORTED, "tensor '%s' is "
                           "sparse", t->name);
    d->dtype = t->dtype;
    d->ndim = t->ndim;
    memcpy(d->shape, t->shape, sizeof d->shape);
    if (!t->q.count || !qp_dtype_is_int(t->dtype))
        return QP_OK;
    if (t->q.count > 1) {
        if (output)
            return qp_tfl_fail(err, m, op, QP_E_UNSUPPORTED, "output '%s' is "
                               "quantized per channel", t->name);
        return QP_OK; /* a weight: the operator reads its parameters */
    }
    /* TFLite's contract: the zero point inside the type, a positive
     * normal scale (the ratios derived from two scales stay finite) */
    const struct qp_dtype_traits *tr = qp_dtype_traits(t->dtype);
    int64_t zmin = tr->bits > 16 ? INT32_MIN : tr->min;
    int64_t zmax = tr->bits > 16 ? INT32_MAX : tr->max;
    if (t->q.zero_point[0] < zmin || t->q.zero_point[0] > zmax)
        return qp_tfl_fail(err, m, op, QP_E_FORMAT, "tensor '%s': zero point "
                           "%lld outside %s", t->name,
                           (long long)t->q.zero_point[0],
                           qp_dtype_name(t->dtype));
    float sc = t->q.scale[0];
    if (!(sc >= 1e-30f && sc <= 1e30f))
        return qp_tfl_fail(err, m, op, QP_E_FORMAT, "tensor '%s': scale %g "
                           "(expected a positive normal number)", t->name,
                           (double)sc);
    q->quant = true;
    q->scale = t->q.scale[0];
    q->zp = (int32_t)t->q.zero_point[0];
    return QP_OK;
}

enum qp_status qp_tfl_node_new(const struct qp_tfl_model *m, size_t op_index,
                               enum qp_tfl_flavor flavor,
                               struct qp_tfl_node **out, struct qp_error *err)
{
    const struct qp_tfl_op *op = &m->ops[op_index];
    *out = NULL;
    const struct qp_tfl_impl *def = qp_tfl_impl_find(op->builtin);
    if (!def)
        return qp_tfl_fail(err, m, op, QP_E_UNSUPPORTED, "operator not "
                           "supported");
    if (op->n_in > QP_TFL_MAX_IO || op->n_out > QP_TFL_MAX_IO ||
        op->n_out < 1)
        return qp_tfl_fail(err, m, op, QP_E_UNSUPPORTED, "%d inputs and %d "
                           "outputs", op->n_in, op->n_out);
    /* every input is required but the bias of the convolutions */
    int bias = op->builtin == QP_TFL_TRANSPOSE_CONV ? 3
             : op->builtin == QP_TFL_CONV_2D ||
               op->builtin == QP_TFL_DEPTHWISE_CONV_2D ||
               op->builtin == QP_TFL_FULLY_CONNECTED ? 2 : -1;
    if (op->n_in < 1)
        return qp_tfl_fail(err, m, op, QP_E_FORMAT, "no input");
    for (int k = 0; k < op->n_in; k++)
        if (op->in[k] < 0 && k != bias)
            return qp_tfl_fail(err, m, op, QP_E_FORMAT, "input %d is absent",
                               k);
    struct qp_tfl_node *s = calloc(1, sizeof *s);
    if (!s)
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    s->def = def;
    s->builtin = op->builtin;
    s->index = (int)op_index;
    s->flavor = flavor;
    s->opt = op->opt;
    s->n_in = op->n_in;
    s->n_out = op->n_out;
    enum qp_status st = QP_OK;
    for (int k = 0; k < op->n_in && !st; k++)
        st = describe(m, op, op->in[k], false, &s->in[k], &s->qin[k], err);
    for (int k = 0; k < op->n_out && !st; k++) {
        if (op->out[k] < 0)
            st = qp_tfl_fail(err, m, op, QP_E_UNSUPPORTED, "output %d is "
                             "absent", k);
        else
            st = describe(m, op, op->out[k], true, &s->out[k], &s->qout[k],
                          err);
    }
    if (!st)
        st = qp_tfl_act_range(s, QP_TFL_ACT_NONE, s->out[0].dtype, &s->qout[0],
                              err);
    if (!st)
        st = def->prepare(s, m, op, err);
    if (st) {
        qp_tfl_node_free(s);
        return st;
    }
    *out = s;
    return QP_OK;
}

/* ---- helpers ---------------------------------------------------------------- */

int64_t qp_tfl_pad(int padding, int64_t in, int64_t k, int64_t stride,
                   int64_t dilation, int64_t *pad, int64_t *pad_end)
{
    *pad = *pad_end = 0;
    if (stride < 1 || dilation < 1) /* the callers refuse these */
        return 0;
    int64_t eff = (k - 1) * dilation + 1;
    int64_t out = padding == 0 ? (in + stride - 1) / stride
                               : (in + stride - eff) / stride;
    if (out <= 0)
        return 0;
    int64_t total = (out - 1) * stride + eff - in;
    if (total > 0) {
        *pad = total / 2;
        *pad_end = total - *pad;
    }
    return out;
}

enum qp_status qp_tfl_act_range(struct qp_tfl_node *s, int act,
                                enum qp_dtype dt, const struct qp_tfl_qp *q,
                                struct qp_error *err)
{
    const struct qp_dtype_traits *tr = qp_dtype_traits(dt);
    s->act_min = (int32_t)(tr->is_float ? 0 : tr->min);
    s->act_max = (int32_t)(tr->is_float ? 0 : tr->max);
    if (tr->is_float || tr->bits > 32)
        return QP_OK;
    static const enum qp_rq_act map[] = {QP_RQ_ACT_NONE, QP_RQ_ACT_RELU,
                                         QP_RQ_ACT_RELU_N1_TO_1,
                                         QP_RQ_ACT_RELU6};
    if (act < 0 || act > QP_TFL_ACT_RELU6)
        return qp_fail(err, QP_E_UNSUPPORTED, "operator %d: fused activation "
                       "%d is not supported", s->index, act);
    if (act == QP_TFL_ACT_NONE || !q->quant)
        return QP_OK;
    enum qp_status st = qp_rq_activation_range(map[act], q->scale, q->zp,
                                               s->act_min, s->act_max,
                                               &s->act_min, &s->act_max, err);
    return st ? qp_error_prefix(err, "operator %d: ", s->index) : QP_OK;
}

int32_t qp_tfl_ruy_scale(int32_t x, int32_t multiplier, int32_t shift)
{
    int left = shift > 0 ? shift : 0, right = shift < 0 ? -shift : 0;
    int32_t xs = (int32_t)((uint32_t)x << left);
    int64_t high = ((int64_t)xs * multiplier + ((int64_t)1 << 30)) >> 31;
    if (!right)
        return (int32_t)high;
    int64_t nudge = (int64_t)1 << (right - 1);
    if (high > (int64_t)INT32_MAX - nudge)
        return (int32_t)((int64_t)1 << (31 - right));
    return (int32_t)((high + nudge) >> right);
}

enum qp_status qp_tfl_same_shape(const struct qp_tfl_node *s,
                                 const struct qp_tfl_model *m,
                                 const struct qp_tfl_op *op, int k,
                                 struct qp_error *err)
{
    if (k >= s->n_in ||
        !qp_shape_equal(s->in[k].ndim, s->in[k].shape, s->out[0].ndim,
                        s->out[0].shape))
        return qp_tfl_fail(err, m, op, QP_E_SHAPE, "input %d and the output "
                           "differ in shape", k);
    return QP_OK;
}

float qp_tfl_act_f32(int act, float v)
{
    switch (act) {
    case QP_TFL_ACT_RELU: return v < 0 ? 0 : v;
    case QP_TFL_ACT_RELU6: return v < 0 ? 0 : v > 6 ? 6 : v;
    case QP_TFL_ACT_RELU_N1_TO_1: return v < -1 ? -1 : v > 1 ? 1 : v;
    default: return v;
    }
}

int32_t qp_tfl_get_int(enum qp_dtype dt, const void *p, size_t i)
{
    return (int32_t)qp_elem_get_i64(dt, p, i);
}

void qp_tfl_put_clamped(enum qp_dtype dt, void *p, size_t i, int32_t v)
{
    const struct qp_dtype_traits *tr = qp_dtype_traits(dt);
    v = v < tr->min ? (int32_t)tr->min : v > tr->max ? (int32_t)tr->max : v;
    qp_elem_set_i64(dt, p, i, v);
}

int32_t qp_tfl_round_code(float v, int32_t zp)
{
    const float sat = (float)(1 << 20);
    float r = roundf(v);
    r = r >= -sat ? r : -sat; /* and a NaN */
    r = r <= sat ? r : sat;
    return (int32_t)r + zp;
}

/* A constant int32/int64 input into vals (at most QP_MAX_DIMS * 2). */
enum qp_status qp_tfl_const_ints(const struct qp_tfl_model *m,
                                 const struct qp_tfl_op *op, int k,
                                 int64_t *vals, size_t max, size_t *n,
                                 struct qp_error *err)
{
    if (k >= op->n_in || op->in[k] < 0)
        return qp_tfl_fail(err, m, op, QP_E_FORMAT, "input %d is missing", k);
    const struct qp_tfl_tensor *t = &m->tensors[op->in[k]];
    size_t cnt = qp_tfl_tensor_numel(t);
    if (!t->data || (t->dtype != QP_DTYPE_I32 && t->dtype != QP_DTYPE_I64) ||
        cnt > max)
        return qp_tfl_fail(err, m, op, QP_E_UNSUPPORTED, "input %d ('%s') "
                           "must be a constant int32 tensor of at most %zu "
                           "values", k, t->name, max);
    for (size_t i = 0; i < cnt; i++) {
        if (t->dtype == QP_DTYPE_I32) {
            int32_t v;
            memcpy(&v, t->data + 4 * i, 4);
            vals[i] = v;
        } else {
            memcpy(&vals[i], t->data + 8 * i, 8);
        }
    }
    *n = cnt;
    return QP_OK;
}

bool qp_tfl_qp_equal(const struct qp_tfl_qp *a, const struct qp_tfl_qp *b)
{
    return a->quant == b->quant && (!a->quant ||
                                    (a->scale == b->scale && a->zp == b->zp));
}

enum qp_status qp_tfl_same_q(const struct qp_tfl_node *s,
                                  const struct qp_tfl_model *m,
                                  const struct qp_tfl_op *op, int k,
                                  struct qp_error *err)
{
    if (s->in[k].dtype != s->out[0].dtype || !qp_tfl_qp_equal(&s->qin[k], &s->qout[0]))
        return qp_tfl_fail(err, m, op, QP_E_UNSUPPORTED, "input %d and the "
                           "output differ in type or quantization", k);
    return QP_OK;
}

void qp_tfl_strides(const struct qp_tdesc *d, int64_t *st)
{
    int64_t s = 1;
    for (int i = d->ndim - 1; i >= 0; i--) {
        st[i] = s;
        s *= d->shape[i];
    }
}

/* Output index i as coordinates of d. */
void qp_tfl_coords(const struct qp_tdesc *d, size_t i, int64_t *co)
{
    for (int k = d->ndim - 1; k >= 0; k--) {
        co[k] = (int64_t)(i % (size_t)d->shape[k]);
        i /= (size_t)d->shape[k];
    }
}

void qp_tfl_copy(const struct qp_op_ctx *c, struct qp_tensor *const *out)
{
    const struct qp_tensor *x = c->in[0];
    memcpy(out[0]->data, x->data, out[0]->nbytes < x->nbytes ? out[0]->nbytes
                                                             : x->nbytes);
}

/* ---- the operator definitions ---------------------------------------------- */

static const struct qp_tfl_node *state(const struct qp_op_ctx *c,
                                       struct qp_error *err)
{
    const struct qp_tfl_node *s = c->n->state;
    if (!s)
        qp_op_fail(err, c, QP_E_INVAL, "a TFLite operator outside a TFLite "
                   "model");
    return s;
}

static enum qp_status tfl_infer(const struct qp_op_ctx *c, struct qp_tdesc *out,
                                struct qp_error *err)
{
    const struct qp_tfl_node *s = state(c, err);
    if (!s)
        return QP_E_INVAL;
    for (int k = 0; k < c->n->n_out && k < s->n_out; k++)
        out[k] = s->out[k];
    return QP_OK;
}

static enum qp_status tfl_run(const struct qp_op_ctx *c,
                              struct qp_tensor *const *out,
                              struct qp_error *err)
{
    const struct qp_tfl_node *s = state(c, err);
    if (!s)
        return QP_E_INVAL;
    for (int k = 0; k < c->n_in && k < s->n_in; k++) {
        const struct qp_tensor *x = c->in[k];
        if (!x)
            continue;
        if (x->dtype != s->in[k].dtype ||
            !qp_shape_equal(x->ndim, x->shape, s->in[k].ndim, s->in[k].shape)) {
            char a[128], b[128];
            qp_shape_str(x->ndim, x->shape, a, sizeof a);
            qp_shape_str(s->in[k].ndim, s->in[k].shape, b, sizeof b);
            return qp_op_fail(err, c, QP_E_SHAPE, "input %d is %s %s, the model "
                              "declares %s %s", k, qp_dtype_name(x->dtype), a,
                              qp_dtype_name(s->in[k].dtype), b);
        }
    }
    enum qp_status st = s->def->run(c, s, out, err);
    for (int k = 0; !st && k < c->n->n_out && k < s->n_out; k++)
        if (out[k] && s->qout[k].quant)
            st = qp_tensor_set_qparams(out[k], 1, &s->qout[k].scale,
                                       &s->qout[k].zp, -1, 0, err);
    return st;
}

/* The weight layout of the four weighted operators (qp_tfl_node_weight):
 * OHWI and [out, in] put the output channel first (QP_WLAYOUT_TFLITE),
 * the depthwise [1, H, W, out] last (QP_WLAYOUT_KERAS). Fake quantization
 * hands the kernels the quantized weight (model/op-tflite-conv.c). */
static bool tfl_weight_layout(const struct qp_node *n, enum qp_wlayout *out)
{
    int w, b, axis;
    const char *layout;
    if (!qp_tfl_node_weight(n, &w, &b, &layout, &axis) || w != 1)
        return false;
    *out = axis ? QP_WLAYOUT_KERAS : QP_WLAYOUT_TFLITE;
    return true;
}

#define TFL_OP_(name, layout)                                                  \
    {"tflite", name, 0, QP_OP_MAX_IO, 1, QP_OP_MAX_IO, 0, false, true, NULL,   \
     NULL, tfl_infer, tfl_run, 0, NULL, layout, NULL}
#define TFL_OP(name) TFL_OP_(name, NULL)
#define TFL_WOP(name) TFL_OP_(name, tfl_weight_layout)

const struct qp_op_def qp_ops_tflite[] = {
    TFL_WOP("CONV_2D"), TFL_WOP("DEPTHWISE_CONV_2D"), TFL_WOP("FULLY_CONNECTED"),
    TFL_WOP("TRANSPOSE_CONV"), TFL_OP("ADD"), TFL_OP("SUB"), TFL_OP("MUL"),
    TFL_OP("AVERAGE_POOL_2D"), TFL_OP("MAX_POOL_2D"), TFL_OP("MEAN"),
    TFL_OP("RESHAPE"), TFL_OP("SQUEEZE"), TFL_OP("SOFTMAX"),
    TFL_OP("LOGISTIC"), TFL_OP("TANH"), TFL_OP("QUANTIZE"),
    TFL_OP("DEQUANTIZE"), TFL_OP("PAD"), TFL_OP("CONCATENATION"),
    TFL_OP("TRANSPOSE"), TFL_OP("STRIDED_SLICE"), TFL_OP("LEAKY_RELU"),
    TFL_OP("HARD_SWISH"), TFL_OP("RELU"), TFL_OP("RELU6"),
    TFL_OP("RELU_N1_TO_1"),
    {NULL},
};
