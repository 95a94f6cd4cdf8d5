/* model/op-binary.c: elementwise Add, Sub, Mul, Div, Pow, Max, Min and
 * the comparisons, with numpy broadcasting.
 *
 * f32 runs the loops of kernels/eltwise-f32.h; every other dtype goes
 * through int64 (integers: add/sub/mul wrap, division truncates toward
 * zero and x/0 gives 0) or double (floats: exact for the four
 * operations, whose double result rounds to the same float). Pow's output has the base's
 * dtype, as ONNX says; integer ** integer is exact. */
#include <math.h>
#include <string.h>

#include "kernels/eltwise-f32.h"
#include "model/op.h"

enum bop { B_ADD, B_SUB, B_MUL, B_DIV, B_POW, B_MAX, B_MIN, B_EQ, B_LT, B_GT,
           B_LE, B_GE };

/* The f32 kernel's function for op, or false for the comparisons. */
static bool ew_op(enum bop op, enum qp_ew_binary *out)
{
    static const enum qp_ew_binary map[] = {QP_EW_ADD, QP_EW_SUB, QP_EW_MUL,
                                            QP_EW_DIV, QP_EW_POW, QP_EW_MAX,
                                            QP_EW_MIN};
    if ((size_t)op >= sizeof map / sizeof map[0])
        return false;
    *out = map[op];
    return true;
}

/* ---- generic element ops ----------------------------------------------- */

static int64_t ipow(int64_t x, int64_t y)
{
    if (y < 0)
        return x == 1 ? 1 : x == -1 ? (y & 1 ? -1 : 1) : 0;
    uint64_t r = 1, b = (uint64_t)x;
    while (y) {
        if (y & 1)
            r *= b;
        b *= b;
        y >>= 1;
    }
    return (int64_t)r;
}

static int64_t int_op(enum bop op, int64_t x, int64_t y, bool is_unsigned)
{
    uint64_t ux = (uint64_t)x, uy = (uint64_t)y;
    switch (op) {
    case B_ADD: return (int64_t)(ux + uy);
    case B_SUB: return (int64_t)(ux - uy);
    case B_MUL: return (int64_t)(ux * uy);
    case B_DIV:
        if (y == 0)
            return 0;
        if (is_unsigned)
            return (int64_t)(ux / uy);
        return x == INT64_MIN && y == -1 ? x : x / y;
    case B_POW: return ipow(x, y);
    case B_MAX: return is_unsigned ? (ux > uy ? x : y) : (x > y ? x : y);
    case B_MIN: return is_unsigned ? (ux < uy ? x : y) : (x < y ? x : y);
    case B_EQ: return x == y;
    case B_LT: return is_unsigned ? ux < uy : x < y;
    case B_GT: return is_unsigned ? ux > uy : x > y;
    case B_LE: return is_unsigned ? ux <= uy : x <= y;
    case B_GE: return is_unsigned ? ux >= uy : x >= y;
    }
    return 0;
}

static double float_op(enum bop op, double x, double y)
{
    switch (op) {
    case B_ADD: return x + y;
    case B_SUB: return x - y;
    case B_MUL: return x * y;
    case B_DIV: return x / y;
    case B_POW: return pow(x, y);
    case B_MAX: return isnan(x) || x > y ? x : y;
    case B_MIN: return isnan(x) || x < y ? x : y;
    case B_EQ: return x == y;
    case B_LT: return x < y;
    case B_GT: return x > y;
    case B_LE: return x <= y;
    case B_GE: return x >= y;
    }
    return 0;
}

/* ---- the operators ----------------------------------------------------- */

struct bjob {
    enum bop op;
    struct qp_bcast bc;
    const struct qp_tensor *a, *b;
    struct qp_tensor *o;
};

static void generic_elem(const struct bjob *j, int64_t ia, int64_t ib,
                         size_t io)
{
    enum qp_dtype da = j->a->dtype, db = j->b->dtype, dout = j->o->dtype;
    bool fa = qp_dtype_traits(da)->is_float, fb = qp_dtype_traits(db)->is_float;
    bool uns = !qp_dtype_traits(da)->is_signed && da != QP_DTYPE_BOOL;
    if (!fa && !fb) {
        int64_t r = int_op(j->op, qp_elem_get_i64(da, j->a->data, (size_t)ia),
                           qp_elem_get_i64(db, j->b->data, (size_t)ib), uns);
        qp_elem_set_i64(dout, j->o->data, io, r);
        return;
    }
    double r = float_op(j->op, qp_elem_get_f64(da, j->a->data, (size_t)ia),
                        qp_elem_get_f64(db, j->b->data, (size_t)ib));
    if (dout == QP_DTYPE_BOOL)
        qp_elem_set_i64(dout, j->o->data, io, r != 0.0);
    else
        qp_elem_set_f64(dout, j->o->data, io, r);
}

static void brange(void *ctx, size_t begin, size_t end)
{
    const struct bjob *j = ctx;
    const struct qp_bcast *bc = &j->bc;
    bool f32 = j->a->dtype == QP_DTYPE_F32 && j->b->dtype == QP_DTYPE_F32 &&
               j->o->dtype == QP_DTYPE_F32;
    enum qp_ew_binary ew;
    const struct qp_ew_f32 *k = f32 && ew_op(j->op, &ew) ? qp_ew_f32() : NULL;
    int64_t sa = bc->stride[0][bc->nd - 1], sb = bc->stride[1][bc->nd - 1];
    size_t pos = begin;
    while (pos < end) {
        size_t row = pos / bc->inner, col = pos % bc->inner;
        size_t n = bc->inner - col < end - pos ? bc->inner - col : end - pos;
        int64_t off[2];
        qp_bcast_row(bc, row, off);
        int64_t ia = off[0] + (int64_t)col * sa, ib = off[1] + (int64_t)col * sb;
        if (k)
            k->binary(ew, (const float *)j->a->data + ia, sa != 0,
                      (const float *)j->b->data + ib, sb != 0,
                      (float *)j->o->data + pos, n);
        else
            for (size_t i = 0; i < n; i++)
                generic_elem(j, ia + (int64_t)i * sa, ib + (int64_t)i * sb,
                             pos + i);
        pos += n;
    }
}

static bool is_compare(enum bop op)
{
    return op >= B_EQ;
}

static enum bop op_of(const struct qp_node *n)
{
    static const struct {
        const char *name;
        enum bop op;
    } map[] = {{"Add", B_ADD},       {"Sub", B_SUB},  {"Mul", B_MUL},
               {"Div", B_DIV},       {"Pow", B_POW},  {"Max", B_MAX},
               {"Min", B_MIN},       {"Equal", B_EQ}, {"Less", B_LT},
               {"Greater", B_GT},    {"LessOrEqual", B_LE},
               {"GreaterOrEqual", B_GE}};
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (!strcmp(map[i].name, n->op_type))
            return map[i].op;
    return B_ADD;
}

static enum qp_status binary_infer(const struct qp_op_ctx *c,
                                   struct qp_tdesc *out, struct qp_error *err)
{
    enum bop op = op_of(c->n);
    for (int i = 0; i < c->n_in; i++)
        if (!c->in[i]) /* an empty input name: no such optional input */
            return qp_op_fail(err, c, QP_E_FORMAT, "input %d is missing", i);
    enum qp_status st = qp_op_broadcast(c, c->in, c->n_in, out, err);
    if (st)
        return st;
    enum qp_dtype dt = c->in[0]->dtype;
    for (int i = 1; i < c->n_in; i++)
        if (op != B_POW && c->in[i]->dtype != dt)
            return qp_op_fail(err, c, QP_E_SHAPE, "inputs are %s and %s; "
                              "they must have one dtype", qp_dtype_name(dt),
                              qp_dtype_name(c->in[i]->dtype));
    out->dtype = is_compare(op) ? QP_DTYPE_BOOL : dt;
    return QP_OK;
}

/* out = in[0] op in[1] (op in[2] ...): Max and Min are variadic. */
static enum qp_status binary_run(const struct qp_op_ctx *c,
                                 struct qp_tensor *const *out,
                                 struct qp_error *err)
{
    (void)err;
    struct qp_tdesc od;
    qp_tdesc_of(out[0], &od);
    const struct qp_tensor *acc = c->in[0];
    for (int i = 1; i < c->n_in || i == 1; i++) {
        const struct qp_tensor *rhs = i < c->n_in ? c->in[i] : c->in[0];
        struct bjob j = {op_of(c->n), {0}, acc, rhs, out[0]};
        const struct qp_tensor *ops[2] = {acc, rhs};
        qp_bcast_init(&j.bc, &od, ops, 2);
        qp_op_parallel_for(c, j.bc.total, QP_OP_PAR_MIN, brange, &j);
        acc = out[0]; /* variadic: fold the rest into the output */
    }
    return QP_OK;
}

/* Sum and Mean: variadic addition (Mean divides at the end). */
static enum qp_status sum_run(const struct qp_op_ctx *c,
                              struct qp_tensor *const *out,
                              struct qp_error *err)
{
    struct qp_tdesc od;
    qp_tdesc_of(out[0], &od);
    const struct qp_tensor *acc = c->in[0];
    if (c->n_in == 1) {
        /* broadcast copy: acc + 0 */
        for (size_t i = 0; i < qp_tensor_numel(out[0]); i++)
            qp_elem_set_f64(out[0]->dtype, out[0]->data, i,
                            qp_elem_get_f64(acc->dtype, acc->data, i));
    }
    for (int i = 1; i < c->n_in; i++) {
        struct bjob j = {B_ADD, {0}, acc, c->in[i], out[0]};
        const struct qp_tensor *ops[2] = {acc, c->in[i]};
        qp_bcast_init(&j.bc, &od, ops, 2);
        qp_op_parallel_for(c, j.bc.total, QP_OP_PAR_MIN, brange, &j);
        acc = out[0];
    }
    if (!strcmp(c->n->op_type, "Mean")) {
        if (!qp_dtype_traits(out[0]->dtype)->is_float)
            return qp_op_fail(err, c, QP_E_UNSUPPORTED, "Mean needs floats");
        size_t n = qp_tensor_numel(out[0]);
        for (size_t i = 0; i < n; i++)
            qp_elem_set_f64(out[0]->dtype, out[0]->data, i,
                            qp_elem_get_f64(out[0]->dtype, out[0]->data, i) /
                                c->n_in);
    }
    return QP_OK;
}

bool qp_op_binary_ew(const struct qp_op_ctx *c, struct qp_ew_step *s)
{
    const struct qp_op_def *d = c->n->def;
    enum qp_ew_binary ew;
    if (!d || d->run != binary_run || c->n->n_in != 2 || !ew_op(op_of(c->n), &ew))
        return false;
    if (c->in && (!c->in[0] || !c->in[1] || c->in[0]->dtype != QP_DTYPE_F32 ||
                  c->in[1]->dtype != QP_DTYPE_F32))
        return false;
    *s = (struct qp_ew_step){true, QP_EW_RELU, 0.0f, 0.0f, ew};
    return true;
}

#define BINARY(name, tr) {"", name, 2, 2, 1, 1, 0, false, false, NULL, NULL, \
                          binary_infer, binary_run, tr, NULL, NULL, NULL}
#define VARIADIC(name, run, tr) {"", name, 1, QP_OP_MAX_IO, 1, 1, 0, false,    \
                                 false, NULL, NULL, binary_infer, run, tr,     \
                                 NULL, NULL, NULL}
#define EW QP_TRAIT_ELEMENTWISE

const struct qp_op_def qp_ops_binary[] = {
    BINARY("Add", EW),  BINARY("Sub", EW),      BINARY("Mul", EW),
    BINARY("Div", EW),  BINARY("Pow", EW),      BINARY("Equal", 0),
    BINARY("Less", 0),  BINARY("Greater", 0),   BINARY("LessOrEqual", 0),
    BINARY("GreaterOrEqual", 0),
    VARIADIC("Max", binary_run, EW),    VARIADIC("Min", binary_run, EW),
    VARIADIC("Sum", sum_run, 0),        VARIADIC("Mean", sum_run, 0),
    {NULL},
};
