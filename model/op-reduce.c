/* model/op-reduce.c: the Reduce* family (Mean, Sum, Max, Min, Prod,
 * SumSquare, L1, L2, LogSum, LogSumExp). Axes come from the attribute
 * before opset 18 (13 for ReduceSum) and from input 1 after; keepdims and
 * noop_with_empty_axes as ONNX. Accumulation is in double. */
#include <math.h>
#include <string.h>

#include "model/op.h"

enum rop { R_MEAN, R_SUM, R_MAX, R_MIN, R_PROD, R_SUMSQ, R_L1, R_L2, R_LOGSUM,
           R_LOGSUMEXP, R_COUNT };

static const char *const rop_names[] = {
    "ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd",
    "ReduceSumSquare", "ReduceL1", "ReduceL2", "ReduceLogSum",
    "ReduceLogSumExp"};
_Static_assert(sizeof rop_names / sizeof rop_names[0] == R_COUNT, "names");

static enum rop rop_of(const struct qp_node *n)
{
    for (int i = 0; i < R_COUNT; i++)
        if (!strcmp(rop_names[i], n->op_type))
            return (enum rop)i;
    return R_MEAN;
}

static bool axes_from_input(const struct qp_node *n)
{
    return n->opset >= 18 || (rop_of(n) == R_SUM && n->opset >= 13);
}

/* reduced[d] for every dim; *noop when the input passes through. */
static enum qp_status reduce_axes(const struct qp_op_ctx *c, bool *reduced,
                                  bool *noop, struct qp_error *err)
{
    int nd = c->in[0]->ndim;
    int64_t axes[QP_MAX_DIMS];
    size_t na = 0;
    enum qp_status st;
    if (axes_from_input(c->n)) {
        const struct qp_tensor *t = qp_op_in(c, 1);
        if (t && (st = qp_op_read_ints(c, "axes", t, axes, QP_MAX_DIMS, &na, err)))
            return st;
    } else {
        const int64_t *a = qp_attr_ints(c->n, "axes", &na);
        if (na > QP_MAX_DIMS)
            return qp_op_fail(err, c, QP_E_FORMAT, "too many axes");
        if (na)
            memcpy(axes, a, na * sizeof *a);
    }
    *noop = na == 0 && qp_attr_int(c->n, "noop_with_empty_axes", 0);
    for (int d = 0; d < nd; d++)
        reduced[d] = na == 0;
    for (size_t i = 0; i < na; i++) {
        int ax;
        if ((st = qp_op_axis(c, "axis", axes[i], nd, &ax, err)))
            return st;
        reduced[ax] = true;
    }
    return QP_OK;
}

static enum qp_status reduce_infer(const struct qp_op_ctx *c,
                                   struct qp_tdesc *out, struct qp_error *err)
{
    bool red[QP_MAX_DIMS], noop;
    enum qp_status st = reduce_axes(c, red, &noop, err);
    if (st)
        return st;
    const struct qp_tensor *x = c->in[0];
    if (!qp_dtype_traits(x->dtype)->is_float && rop_of(c->n) == R_MEAN)
        return qp_op_fail(err, c, QP_E_UNSUPPORTED, "ReduceMean needs floats");
    out->dtype = x->dtype;
    if (noop) {
        qp_tdesc_of(x, out);
        return QP_OK;
    }
    bool keep = qp_attr_int(c->n, "keepdims", 1) != 0;
    out->ndim = 0;
    for (int d = 0; d < x->ndim; d++) {
        if (!red[d])
            out->shape[out->ndim++] = x->shape[d];
        else if (keep)
            out->shape[out->ndim++] = 1;
        else if (x->shape[d] == 0)
            return qp_op_fail(err, c, QP_E_SHAPE, "cannot reduce an empty axis");
    }
    return QP_OK;
}

static double fold(enum rop op, double acc, double v)
{
    switch (op) {
    case R_MAX: return v > acc || isnan(v) ? v : acc;
    case R_MIN: return v < acc || isnan(v) ? v : acc;
    case R_PROD: return acc * v;
    case R_SUMSQ:
    case R_L2: return acc + v * v;
    case R_L1: return acc + fabs(v);
    default: return acc + v;
    }
}

static double start(enum rop op)
{
    return op == R_MAX ? -INFINITY : op == R_MIN ? INFINITY : op == R_PROD ? 1.0 : 0.0;
}

static enum qp_status reduce_run(const struct qp_op_ctx *c,
                                 struct qp_tensor *const *out,
                                 struct qp_error *err)
{
    bool red[QP_MAX_DIMS], noop;
    enum qp_status st = reduce_axes(c, red, &noop, err);
    if (st)
        return st;
    const struct qp_tensor *x = c->in[0];
    enum rop op = rop_of(c->n);
    size_t nx = qp_tensor_numel(x), ny = qp_tensor_numel(out[0]);
    if (noop) {
        memcpy(out[0]->data, x->data, x->nbytes);
        return QP_OK;
    }
    double *acc = qp_op_scratch(c, 2 * (ny ? ny : 1) * sizeof(double));
    if (!acc)
        return qp_op_fail(err, c, QP_E_NOMEM, "out of memory");
    double *mx = acc + ny;
    /* output element strides for each input dim (0 when reduced) */
    int64_t ost[QP_MAX_DIMS];
    int64_t s = 1;
    for (int d = x->ndim - 1; d >= 0; d--) {
        ost[d] = red[d] ? 0 : s;
        s *= red[d] ? 1 : x->shape[d];
    }
    for (size_t o = 0; o < ny; o++) {
        acc[o] = start(op);
        mx[o] = -INFINITY;
    }
    for (int pass = op == R_LOGSUMEXP ? 0 : 1; pass < 2; pass++) {
        int64_t idx[QP_MAX_DIMS] = {0};
        size_t o = 0;
        for (size_t i = 0; i < nx; i++) {
            double v = qp_elem_get_f64(x->dtype, x->data, i);
            if (pass == 0)
                mx[o] = v > mx[o] ? v : mx[o];
            else if (op == R_LOGSUMEXP)
                acc[o] += exp(v - mx[o]);
            else
                acc[o] = fold(op, acc[o], v);
            for (int d = x->ndim - 1; d >= 0; d--) { /* odometer */
                o += (size_t)ost[d];
                if (++idx[d] < x->shape[d])
                    break;
                o -= (size_t)(ost[d] * x->shape[d]);
                idx[d] = 0;
            }
        }
    }
    size_t cnt = ny ? nx / ny : 0;
    for (size_t o = 0; o < ny; o++) {
        double v = acc[o];
        switch (op) {
        case R_MEAN: v = cnt ? v / (double)cnt : NAN; break;
        case R_L2: v = sqrt(v); break;
        case R_LOGSUM: v = log(v); break;
        case R_LOGSUMEXP: v = log(v) + mx[o]; break;
        default: break;
        }
        qp_elem_set_f64(out[0]->dtype, out[0]->data, o, v);
    }
    return QP_OK;
}

static const struct qp_attr_spec reduce_attrs[] = {
    {"axes", QP_ATTR_INTS}, {"keepdims", QP_ATTR_INT},
    {"noop_with_empty_axes", QP_ATTR_INT}, {NULL, 0}};

#define REDUCE(name) {"", name, 1, 2, 1, 1, 2u, false, false, reduce_attrs,    \
                      NULL, reduce_infer, reduce_run, 0, NULL, NULL, NULL}

const struct qp_op_def qp_ops_reduce[] = {
    REDUCE("ReduceMean"), REDUCE("ReduceSum"), REDUCE("ReduceMax"),
    REDUCE("ReduceMin"), REDUCE("ReduceProd"), REDUCE("ReduceSumSquare"),
    REDUCE("ReduceL1"), REDUCE("ReduceL2"), REDUCE("ReduceLogSum"),
    REDUCE("ReduceLogSumExp"),
    {NULL},
};
