/* model/op-unary.c: elementwise functions of one tensor: activations
 * (Relu, LeakyRelu, Clip, Sigmoid, HardSigmoid, HardSwish, Tanh, Erf,
 * Gelu, Elu), math (Sqrt, Exp, Log, Neg, Abs, Reciprocal, Floor, Ceil),
 * Cast, Identity and inference-mode Dropout.
 *
 * Float functions have an f32 loop and a double path for f64/f16/bf16
 * inputs; Relu, Neg, Abs and Clip also take integers (through int64). */
#include <math.h>
#include <string.h>

#include "kernels/eltwise-f32.h"
#include "model/op.h"

static const char *const uop_names[] = {
    "Relu", "LeakyRelu", "Sigmoid", "HardSigmoid", "HardSwish", "Tanh", "Erf",
    "Gelu", "Gelu", "Elu", "Sqrt", "Exp", "Log", "Neg", "Abs", "Reciprocal",
    "Floor", "Ceil", "Clip"};
_Static_assert(sizeof uop_names / sizeof uop_names[0] == QP_EW_UNARY_COUNT,
               "uop names");

struct ujob {
    enum qp_ew_unary op;
    float alpha, beta;
    const struct qp_tensor *x;
    struct qp_tensor *y;
};

static enum qp_ew_unary uop_of(const struct qp_node *n)
{
    for (int i = 0; i < QP_EW_CLIP; i++)
        if (!strcmp(uop_names[i], n->op_type)) {
            if (i == QP_EW_GELU &&
                !strcmp(qp_attr_str(n, "approximate", "none"), "tanh"))
                return QP_EW_GELU_TANH;
            return (enum qp_ew_unary)i;
        }
    return QP_EW_RELU;
}

static void urange(void *ctx, size_t b, size_t e)
{
    const struct ujob *j = ctx;
    enum qp_dtype dt = j->x->dtype;
    if (dt == QP_DTYPE_F32) {
        qp_ew_f32()->unary(j->op, j->alpha, j->beta,
                           (const float *)j->x->data + b,
                           (float *)j->y->data + b, e - b);
        return;
    }
    if (qp_dtype_traits(dt)->is_float) {
        for (size_t i = b; i < e; i++)
            qp_elem_set_f64(dt, j->y->data, i,
                            qp_ew_unary_f64(j->op, j->alpha, j->beta,
                                            qp_elem_get_f64(dt, j->x->data, i)));
        return;
    }
    for (size_t i = b; i < e; i++) { /* integers: Relu, Neg, Abs */
        int64_t v = qp_elem_get_i64(dt, j->x->data, i);
        int64_t r = j->op == QP_EW_RELU ? (v > 0 ? v : 0)
                  : j->op == QP_EW_NEG  ? (int64_t)(0 - (uint64_t)v)
                                    : (v < 0 ? (int64_t)(0 - (uint64_t)v) : v);
        qp_elem_set_i64(dt, j->y->data, i, r);
    }
}

/* The function and parameters of a unary node (not Clip). */
static void unary_step(const struct qp_node *n, struct qp_ew_step *s)
{
    enum qp_ew_unary op = uop_of(n);
    float alpha = op == QP_EW_LEAKY      ? 0.01f
                : op == QP_EW_HSIGMOID ? 0.2f
                                       : 1.0f;
    *s = (struct qp_ew_step){false, op, qp_attr_float(n, "alpha", alpha),
                             qp_attr_float(n, "beta", 0.5f), QP_EW_ADD};
}

static enum qp_status same_infer(const struct qp_op_ctx *c,
                                 struct qp_tdesc *out, struct qp_error *err)
{
    (void)err;
    qp_tdesc_of(c->in[0], &out[0]);
    return QP_OK;
}

static enum qp_status unary_infer(const struct qp_op_ctx *c,
                                  struct qp_tdesc *out, struct qp_error *err)
{
    enum qp_ew_unary op = uop_of(c->n);
    enum qp_dtype dt = c->in[0]->dtype;
    bool int_ok = op == QP_EW_RELU || op == QP_EW_NEG || op == QP_EW_ABS;
    if (!qp_dtype_traits(dt)->is_float && !(int_ok && qp_dtype_is_int(dt)))
        return qp_op_fail(err, c, QP_E_UNSUPPORTED, "input is %s; a float "
                          "tensor is needed", qp_dtype_name(dt));
    return same_infer(c, out, err);
}

static enum qp_status unary_run(const struct qp_op_ctx *c,
                                struct qp_tensor *const *out,
                                struct qp_error *err)
{
    (void)err;
    struct qp_ew_step s;
    unary_step(c->n, &s);
    struct ujob j = {s.unary, s.alpha, s.beta, c->in[0], out[0]};
    qp_op_parallel_for(c, qp_tensor_numel(c->in[0]), QP_OP_PAR_MIN, urange, &j);
    return QP_OK;
}

/* ---- Clip: bounds from attributes (opset < 11) or inputs 1 and 2 -------- */

static enum qp_status clip_check_bounds(const struct qp_op_ctx *c,
                                        struct qp_error *err)
{
    enum qp_dtype dt = c->in[0]->dtype;
    for (int i = 1; i < c->n_in; i++)
        if (c->in[i] && (c->in[i]->dtype != dt || qp_tensor_numel(c->in[i]) != 1))
            return qp_op_fail(err, c, QP_E_SHAPE, "bound %d must be a %s "
                              "scalar", i, qp_dtype_name(dt));
    return QP_OK;
}

/* Float bounds (checked), -inf/+inf when absent. */
static void clip_bounds(const struct qp_op_ctx *c, double *lo, double *hi)
{
    enum qp_dtype dt = c->in[0]->dtype;
    const struct qp_tensor *lo_t = qp_op_in(c, 1), *hi_t = qp_op_in(c, 2);
    *lo = c->n->opset < 11 ? qp_attr_float(c->n, "min", -INFINITY)
        : lo_t ? qp_elem_get_f64(dt, lo_t->data, 0) : -INFINITY;
    *hi = c->n->opset < 11 ? qp_attr_float(c->n, "max", INFINITY)
        : hi_t ? qp_elem_get_f64(dt, hi_t->data, 0) : INFINITY;
}

static enum qp_status clip_run(const struct qp_op_ctx *c,
                               struct qp_tensor *const *out,
                               struct qp_error *err)
{
    const struct qp_tensor *x = c->in[0];
    enum qp_dtype dt = x->dtype;
    enum qp_status st = clip_check_bounds(c, err);
    if (st)
        return st;
    size_t n = qp_tensor_numel(x);
    if (qp_dtype_traits(dt)->is_float) {
        double lo, hi;
        clip_bounds(c, &lo, &hi);
        if (dt == QP_DTYPE_F32) {
            struct ujob j = {QP_EW_CLIP, (float)lo, (float)hi, x, out[0]};
            qp_op_parallel_for(c, n, QP_OP_PAR_MIN, urange, &j);
            return QP_OK;
        }
        for (size_t i = 0; i < n; i++)
            qp_elem_set_f64(dt, out[0]->data, i,
                            fmin(fmax(qp_elem_get_f64(dt, x->data, i), lo), hi));
        return QP_OK;
    }
    const struct qp_tensor *lo_t = qp_op_in(c, 1), *hi_t = qp_op_in(c, 2);
    int64_t lo = lo_t ? qp_elem_get_i64(dt, lo_t->data, 0) : INT64_MIN;
    int64_t hi = hi_t ? qp_elem_get_i64(dt, hi_t->data, 0) : INT64_MAX;
    for (size_t i = 0; i < n; i++) {
        int64_t v = qp_elem_get_i64(dt, x->data, i);
        qp_elem_set_i64(dt, out[0]->data, i, v < lo ? lo : v > hi ? hi : v);
    }
    return QP_OK;
}

bool qp_op_unary_ew(const struct qp_op_ctx *c, struct qp_ew_step *s)
{
    const struct qp_op_def *d = c->n->def;
    bool clip = d && d->run == clip_run;
    if (!d || (d->run != unary_run && !clip))
        return false;
    if (!c->in)
        return true;
    if (!c->in[0] || c->in[0]->dtype != QP_DTYPE_F32)
        return false;
    if (!clip) {
        unary_step(c->n, s);
        return true;
    }
    for (int i = 1; i < c->n_in; i++)
        if (c->in[i] && !c->in[i]->data)
            return false;
    if (clip_check_bounds(c, NULL))
        return false;
    double lo, hi;
    clip_bounds(c, &lo, &hi);
    *s = (struct qp_ew_step){false, QP_EW_CLIP, (float)lo, (float)hi,
                             QP_EW_ADD};
    return true;
}

/* ---- Cast, Identity, Dropout ------------------------------------------ */

/* ONNX TensorProto.DataType codes the runtime handles. */
static bool dtype_from_onnx(int64_t code, enum qp_dtype *out)
{
    static const struct {
        int code;
        enum qp_dtype dt;
    } map[] = {{1, QP_DTYPE_F32},  {2, QP_DTYPE_U8},   {3, QP_DTYPE_I8},
               {4, QP_DTYPE_U16},  {5, QP_DTYPE_I16},  {6, QP_DTYPE_I32},
               {7, QP_DTYPE_I64},  {9, QP_DTYPE_BOOL}, {10, QP_DTYPE_F16},
               {11, QP_DTYPE_F64}, {12, QP_DTYPE_U32}, {13, QP_DTYPE_U64},
               {16, QP_DTYPE_BF16}};
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (map[i].code == code) {
            *out = map[i].dt;
            return true;
        }
    return false;
}

static enum qp_status cast_check(const struct qp_op_ctx *c, struct qp_error *err)
{
    enum qp_dtype dt;
    if (!strcmp(c->n->op_type, "Cast") &&
        !dtype_from_onnx(qp_attr_int(c->n, "to", -1), &dt))
        return qp_op_fail(err, c, QP_E_UNSUPPORTED, "cannot cast to ONNX data "
                          "type %lld", (long long)qp_attr_int(c->n, "to", -1));
    return QP_OK;
}

static enum qp_status cast_infer(const struct qp_op_ctx *c,
                                 struct qp_tdesc *out, struct qp_error *err)
{
    qp_tdesc_of(c->in[0], &out[0]);
    if (!strcmp(c->n->op_type, "CastLike")) {
        out[0].dtype = c->in[1]->dtype;
        return QP_OK;
    }
    if (!dtype_from_onnx(qp_attr_int(c->n, "to", -1), &out[0].dtype))
        return cast_check(c, err);
    return QP_OK;
}

static enum qp_status cast_run(const struct qp_op_ctx *c,
                               struct qp_tensor *const *out,
                               struct qp_error *err)
{
    (void)err;
    const struct qp_tensor *x = c->in[0];
    enum qp_dtype from = x->dtype, to = out[0]->dtype;
    size_t n = qp_tensor_numel(x);
    if (from == to) {
        memcpy(out[0]->data, x->data, x->nbytes);
        return QP_OK;
    }
    bool ff = qp_dtype_traits(from)->is_float, tf = qp_dtype_traits(to)->is_float;
    for (size_t i = 0; i < n; i++) {
        if (ff || tf)
            qp_elem_set_f64(to, out[0]->data, i,
                            qp_elem_get_f64(from, x->data, i));
        else
            qp_elem_set_i64(to, out[0]->data, i,
                            qp_elem_get_i64(from, x->data, i));
    }
    return QP_OK;
}

/* Inference mode, or training mode with ratio 0 (both the identity);
 * random masks are not supported. */
static enum qp_status dropout_infer(const struct qp_op_ctx *c,
                                    struct qp_tdesc *out, struct qp_error *err)
{
    const struct qp_tensor *ratio = qp_op_in(c, 1), *train = qp_op_in(c, 2);
    bool training = qp_attr_int(c->n, "is_test", 1) == 0 ||
                    (train && train->data &&
                     qp_elem_get_i64(train->dtype, train->data, 0));
    double r = c->n->opset < 12 ? qp_attr_float(c->n, "ratio", 0.5f)
             : !ratio ? 0.5
             : ratio->data ? qp_elem_get_f64(ratio->dtype, ratio->data, 0) : -1;
    if (training && r != 0.0)
        return qp_op_fail(err, c, QP_E_UNSUPPORTED, "training mode with a "
                          "non-zero ratio (a random mask) is not supported");
    qp_tdesc_of(c->in[0], &out[0]);
    if (c->n->n_out > 1) {
        qp_tdesc_of(c->in[0], &out[1]);
        out[1].dtype = QP_DTYPE_BOOL;
    }
    return QP_OK;
}

static enum qp_status copy_run(const struct qp_op_ctx *c,
                               struct qp_tensor *const *out,
                               struct qp_error *err)
{
    (void)err;
    memcpy(out[0]->data, c->in[0]->data, c->in[0]->nbytes);
    if (c->n->n_out > 1 && out[1]) /* Dropout's mask: all kept */
        memset(out[1]->data, 1, out[1]->nbytes);
    return QP_OK;
}

static const struct qp_attr_spec act_attrs[] = {
    {"alpha", QP_ATTR_FLOAT}, {"beta", QP_ATTR_FLOAT},
    {"approximate", QP_ATTR_STRING}, {NULL, 0}};
static const struct qp_attr_spec clip_attrs[] = {
    {"min", QP_ATTR_FLOAT}, {"max", QP_ATTR_FLOAT}, {NULL, 0}};
static const struct qp_attr_spec cast_attrs[] = {
    {"to", QP_ATTR_INT}, {"saturate", QP_ATTR_INT}, {NULL, 0}};
static const struct qp_attr_spec dropout_attrs[] = {
    {"ratio", QP_ATTR_FLOAT}, {"seed", QP_ATTR_INT}, {"is_test", QP_ATTR_INT},
    {NULL, 0}};

#define UNARY(name) {"", name, 1, 1, 1, 1, 0, false, false, act_attrs, NULL,   \
                     unary_infer, unary_run, QP_TRAIT_ELEMENTWISE, NULL, NULL, \
                     NULL}

const struct qp_op_def qp_ops_unary[] = {
    UNARY("Relu"),  UNARY("LeakyRelu"), UNARY("Sigmoid"), UNARY("HardSigmoid"),
    UNARY("HardSwish"), UNARY("Tanh"),  UNARY("Erf"),     UNARY("Gelu"),
    UNARY("Elu"),   UNARY("Sqrt"),      UNARY("Exp"),     UNARY("Log"),
    UNARY("Neg"),   UNARY("Abs"),       UNARY("Reciprocal"),
    UNARY("Floor"), UNARY("Ceil"),
    {"", "Clip", 1, 3, 1, 1, 0, false, false, clip_attrs, NULL, same_infer,
     clip_run, QP_TRAIT_ELEMENTWISE, NULL, NULL, NULL},
    {"", "Cast", 1, 1, 1, 1, 0, false, false, cast_attrs, cast_check,
     cast_infer, cast_run, 0, NULL, NULL, NULL},
    {"", "CastLike", 2, 2, 1, 1, 0, false, false, cast_attrs, NULL, cast_infer,
     cast_run, 0, NULL, NULL, NULL},
    {"", "Identity", 1, 1, 1, 1, 0, false, false, NULL, NULL, same_infer,
     copy_run, QP_TRAIT_INT_PASS, qp_op_always, NULL, NULL},
    {"", "Dropout", 1, 3, 1, 2, 6u, false, false, dropout_attrs, NULL,
     dropout_infer, copy_run, QP_TRAIT_INT_PASS, qp_op_always, NULL, NULL},
    {NULL},
};
