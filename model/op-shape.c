/* model/op-shape.c: operators that change or produce shapes without
 * touching element values: Reshape, Flatten, Squeeze, Unsqueeze, Expand,
 * Shape, Size, ConstantOfShape, Range and Constant. Shape arithmetic
 * feeds on int64 tensors, which static inference computes for real. */
#include <math.h>
#include <string.h>

#include "model/op.h"

/* Copies the input's bytes: Reshape, Flatten, Squeeze, Unsqueeze keep
 * the element order. */
static enum qp_status copy_run(const struct qp_op_ctx *c,
                               struct qp_tensor *const *out,
                               struct qp_error *err)
{
    (void)err;
    memcpy(out[0]->data, c->in[0]->data, out[0]->nbytes);
    return QP_OK;
}

static enum qp_status too_many(const struct qp_op_ctx *c, struct qp_error *err)
{
    return qp_op_fail(err, c, QP_E_UNSUPPORTED, "result would have more than "
                      "%d dims", QP_MAX_DIMS);
}

/* ---- Reshape ----------------------------------------------------------- */

static enum qp_status reshape_infer(const struct qp_op_ctx *c,
                                    struct qp_tdesc *out, struct qp_error *err)
{
    const struct qp_tensor *x = c->in[0];
    int64_t sh[QP_MAX_DIMS];
    size_t n;
    enum qp_status st;
    if (c->n->opset < 5) {
        const int64_t *a = qp_attr_ints(c->n, "shape", &n);
        if (n > QP_MAX_DIMS)
            return too_many(c, err);
        memcpy(sh, a, n * sizeof *a);
    } else if (!qp_op_in(c, 1)) {
        return qp_op_fail(err, c, QP_E_FORMAT, "the shape input is missing");
    } else if ((st = qp_op_read_ints(c, "shape", c->in[1], sh, QP_MAX_DIMS, &n,
                                     err))) {
        return st;
    }
    bool allowzero = qp_attr_int(c->n, "allowzero", 0) != 0;
    int infer_at = -1;
    size_t known = 1, total = qp_tensor_numel(x);
    for (size_t i = 0; i < n; i++) {
        if (sh[i] == 0 && !allowzero) {
            if ((int)i >= x->ndim)
                return qp_op_fail(err, c, QP_E_SHAPE, "shape[%zu] is 0 but the "
                                  "input has only %d dims", i, x->ndim);
            sh[i] = x->shape[i];
        }
        if (sh[i] == -1) {
            if (infer_at >= 0)
                return qp_op_fail(err, c, QP_E_SHAPE, "shape has two -1");
            infer_at = (int)i;
            continue;
        }
        if (sh[i] < 0)
            return qp_op_fail(err, c, QP_E_SHAPE, "shape[%zu] is %lld", i,
                              (long long)sh[i]);
        known *= (size_t)sh[i];
    }
    if (infer_at >= 0) {
        if (known == 0 || total % known)
            return qp_op_fail(err, c, QP_E_SHAPE, "cannot infer -1: %zu "
                              "elements into blocks of %zu", total, known);
        sh[infer_at] = (int64_t)(total / known);
        known *= (size_t)sh[infer_at];
    }
    if (known != total) {
        char s0[128], s1[128];
        qp_shape_str(x->ndim, x->shape, s0, sizeof s0);
        qp_shape_str((int)n, sh, s1, sizeof s1);
        return qp_op_fail(err, c, QP_E_SHAPE, "cannot reshape %s to %s", s0, s1);
    }
    out->dtype = x->dtype;
    out->ndim = (int)n;
    memcpy(out->shape, sh, n * sizeof *sh);
    return QP_OK;
}

/* ---- Flatten ----------------------------------------------------------- */

static enum qp_status flatten_infer(const struct qp_op_ctx *c,
                                    struct qp_tdesc *out, struct qp_error *err)
{
    const struct qp_tensor *x = c->in[0];
    int64_t a = qp_attr_int(c->n, "axis", 1);
    if (a < 0)
        a += x->ndim;
    if (a < 0 || a > x->ndim)
        return qp_op_fail(err, c, QP_E_FORMAT, "axis %lld is out of range for "
                          "rank %d", (long long)qp_attr_int(c->n, "axis", 1),
                          x->ndim);
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < x->ndim; d++)
        *(d < a ? &outer : &inner) *= x->shape[d];
    *out = (struct qp_tdesc){x->dtype, 2, {outer, inner}};
    return QP_OK;
}

/* ---- Squeeze / Unsqueeze ------------------------------------------------ */

static enum qp_status read_axes(const struct qp_op_ctx *c, int64_t *axes,
                                size_t *n, struct qp_error *err)
{
    *n = 0;
    if (c->n->opset < 13) {
        const int64_t *a = qp_attr_ints(c->n, "axes", n);
        if (*n > QP_MAX_DIMS)
            return too_many(c, err);
        if (*n)
            memcpy(axes, a, *n * sizeof *a);
        return QP_OK;
    }
    const struct qp_tensor *t = qp_op_in(c, 1);
    return t ? qp_op_read_ints(c, "axes", t, axes, QP_MAX_DIMS, n, err) : QP_OK;
}

static enum qp_status squeeze_infer(const struct qp_op_ctx *c,
                                    struct qp_tdesc *out, struct qp_error *err)
{
    const struct qp_tensor *x = c->in[0];
    int64_t axes[QP_MAX_DIMS];
    size_t n;
    bool drop[QP_MAX_DIMS] = {false};
    enum qp_status st = read_axes(c, axes, &n, err);
    if (st)
        return st;
    for (size_t i = 0; i < n; i++) {
        int a;
        if ((st = qp_op_axis(c, "axis", axes[i], x->ndim, &a, err)))
            return st;
        if (x->shape[a] != 1)
            return qp_op_fail(err, c, QP_E_SHAPE, "cannot squeeze axis %d of "
                              "extent %lld", a, (long long)x->shape[a]);
        drop[a] = true;
    }
    out->dtype = x->dtype;
    out->ndim = 0;
    for (int d = 0; d < x->ndim; d++)
        if (!(n ? drop[d] : x->shape[d] == 1))
            out->shape[out->ndim++] = x->shape[d];
    return QP_OK;
}

static enum qp_status unsqueeze_infer(const struct qp_op_ctx *c,
                                      struct qp_tdesc *out,
                                      struct qp_error *err)
{
    const struct qp_tensor *x = c->in[0];
    int64_t axes[QP_MAX_DIMS];
    size_t n;
    bool ins[QP_MAX_DIMS] = {false};
    enum qp_status st = read_axes(c, axes, &n, err);
    if (st)
        return st;
    int nd = x->ndim + (int)n;
    if (nd > QP_MAX_DIMS)
        return too_many(c, err);
    for (size_t i = 0; i < n; i++) {
        int a;
        if ((st = qp_op_axis(c, "axis", axes[i], nd, &a, err)))
            return st;
        if (ins[a])
            return qp_op_fail(err, c, QP_E_FORMAT, "axis %d is repeated", a);
        ins[a] = true;
    }
    out->dtype = x->dtype;
    out->ndim = nd;
    for (int d = 0, k = 0; d < nd; d++)
        out->shape[d] = ins[d] ? 1 : x->shape[k++];
    return QP_OK;
}

/* ---- Expand ------------------------------------------------------------ */

static enum qp_status expand_infer(const struct qp_op_ctx *c,
                                   struct qp_tdesc *out, struct qp_error *err)
{
    int64_t sh[QP_MAX_DIMS];
    size_t n;
    enum qp_status st = qp_op_read_ints(c, "shape", c->in[1], sh, QP_MAX_DIMS,
                                        &n, err);
    if (st)
        return st;
    struct qp_tensor t = {0};
    t.ndim = (int)n;
    memcpy(t.shape, sh, n * sizeof *sh);
    const struct qp_tensor *ops[2] = {c->in[0], &t};
    if ((st = qp_op_broadcast(c, ops, 2, out, err)))
        return st;
    out->dtype = c->in[0]->dtype;
    return QP_OK;
}

/* n elements of es bytes at d, each the element at s: doubling copies */
static void fill_repeat(char *d, const char *s, size_t n, size_t es)
{
    size_t done = n ? es : 0, all = n * es;
    if (n)
        memcpy(d, s, es);
    for (; done < all; done *= 2)
        memcpy(d + done, d, done < all - done ? done : all - done);
}

/* A row of the output at a time: its input offset once (no division per
 * element), then one memcpy of a contiguous row or a fill of a broadcast
 * one; per element it took seconds on a 332-byte model expanding to 64M. */
static enum qp_status expand_run(const struct qp_op_ctx *c,
                                 struct qp_tensor *const *out,
                                 struct qp_error *err)
{
    (void)err;
    struct qp_tdesc od;
    struct qp_bcast b;
    qp_tdesc_of(out[0], &od);
    qp_bcast_init(&b, &od, c->in, 1);
    size_t es = qp_elem_size(od.dtype), n = b.inner;
    size_t rows = n ? b.total / n : 0;
    int64_t step = b.stride[0][b.nd - 1];
    for (size_t r = 0; r < rows; r++) {
        int64_t off;
        qp_bcast_row(&b, r, &off);
        char *d = (char *)out[0]->data + r * n * es;
        const char *s = (const char *)c->in[0]->data + (size_t)off * es;
        if (step == 1)
            memcpy(d, s, n * es);
        else
            fill_repeat(d, s, n, es);
    }
    return QP_OK;
}

/* ---- Shape, Size ------------------------------------------------------- */

static void shape_range(const struct qp_op_ctx *c, int64_t *s, int64_t *e)
{
    int64_t r = c->in[0]->ndim;
    *s = qp_attr_int(c->n, "start", 0);
    *e = qp_attr_int(c->n, "end", r);
    if (*s < 0)
        *s += r;
    if (*e < 0)
        *e += r;
    *s = *s < 0 ? 0 : *s > r ? r : *s;
    *e = *e < 0 ? 0 : *e > r ? r : *e;
    if (*e < *s)
        *e = *s;
}

static enum qp_status shape_infer(const struct qp_op_ctx *c,
                                  struct qp_tdesc *out, struct qp_error *err)
{
    (void)err;
    int64_t s, e;
    shape_range(c, &s, &e);
    *out = (struct qp_tdesc){QP_DTYPE_I64, 1, {e - s}};
    return QP_OK;
}

static enum qp_status shape_run(const struct qp_op_ctx *c,
                                struct qp_tensor *const *out,
                                struct qp_error *err)
{
    (void)err;
    int64_t s, e;
    shape_range(c, &s, &e);
    memcpy(out[0]->data, c->in[0]->shape + s, (size_t)(e - s) * sizeof(int64_t));
    return QP_OK;
}

static enum qp_status size_infer(const struct qp_op_ctx *c,
                                 struct qp_tdesc *out, struct qp_error *err)
{
    (void)c;
    (void)err;
    *out = (struct qp_tdesc){QP_DTYPE_I64, 0, {0}};
    return QP_OK;
}

static enum qp_status size_run(const struct qp_op_ctx *c,
                               struct qp_tensor *const *out,
                               struct qp_error *err)
{
    (void)err;
    *(int64_t *)out[0]->data = (int64_t)qp_tensor_numel(c->in[0]);
    return QP_OK;
}

/* ---- ConstantOfShape, Constant, Range ---------------------------------- */

static enum qp_status cos_infer(const struct qp_op_ctx *c,
                                struct qp_tdesc *out, struct qp_error *err)
{
    size_t n;
    enum qp_status st = qp_op_read_ints(c, "shape", c->in[0], out->shape,
                                        QP_MAX_DIMS, &n, err);
    if (st)
        return st;
    for (size_t i = 0; i < n; i++)
        if (out->shape[i] < 0)
            return qp_op_fail(err, c, QP_E_SHAPE, "negative dim in shape");
    const struct qp_attr *v = qp_node_attr(c->n, "value");
    if (v && (v->type != QP_ATTR_TENSOR || qp_tensor_numel(v->t) != 1 ||
              !qp_elem_size(v->t->dtype)))
        return qp_op_fail(err, c, QP_E_FORMAT, "value must be a one-element "
                          "tensor");
    out->ndim = (int)n;
    out->dtype = v ? v->t->dtype : QP_DTYPE_F32;
    return QP_OK;
}

static enum qp_status cos_run(const struct qp_op_ctx *c,
                              struct qp_tensor *const *out,
                              struct qp_error *err)
{
    (void)err;
    const struct qp_attr *v = qp_node_attr(c->n, "value");
    if (!v) { /* f32 zeros */
        memset(out[0]->data, 0, out[0]->nbytes);
        return QP_OK;
    }
    size_t es = qp_elem_size(out[0]->dtype), n = qp_tensor_numel(out[0]);
    for (size_t i = 0; i < n; i++)
        memcpy((char *)out[0]->data + i * es, v->t->data, es);
    return QP_OK;
}

static enum qp_status constant_attr(const struct qp_op_ctx *c,
                                    const struct qp_attr **a,
                                    struct qp_error *err)
{
    *a = NULL;
    for (int i = 0; i < c->n->n_attrs; i++) {
        const struct qp_attr *x = &c->n->attrs[i];
        if (!strncmp(x->name, "value", 5)) {
            if (*a)
                return qp_op_fail(err, c, QP_E_FORMAT, "more than one value");
            *a = x;
        }
    }
    if (!*a || strcmp((*a)->name, "value") || (*a)->type != QP_ATTR_TENSOR)
        return qp_op_fail(err, c, QP_E_UNSUPPORTED, "only a tensor 'value' "
                          "is supported");
    return QP_OK;
}

static enum qp_status constant_infer(const struct qp_op_ctx *c,
                                     struct qp_tdesc *out,
                                     struct qp_error *err)
{
    const struct qp_attr *a;
    enum qp_status st = constant_attr(c, &a, err);
    if (!st)
        qp_tdesc_of(a->t, out);
    return st;
}

static enum qp_status constant_run(const struct qp_op_ctx *c,
                                   struct qp_tensor *const *out,
                                   struct qp_error *err)
{
    const struct qp_attr *a;
    enum qp_status st = constant_attr(c, &a, err);
    if (!st)
        memcpy(out[0]->data, a->t->data, out[0]->nbytes);
    return st;
}

static enum qp_status range_infer(const struct qp_op_ctx *c,
                                  struct qp_tdesc *out, struct qp_error *err)
{
    enum qp_dtype dt = c->in[0]->dtype;
    for (int i = 0; i < 3; i++)
        if (c->in[i]->dtype != dt || qp_tensor_numel(c->in[i]) != 1)
            return qp_op_fail(err, c, QP_E_SHAPE, "start, limit and delta must "
                              "be scalars of one dtype");
    double s = qp_elem_get_f64(dt, c->in[0]->data, 0);
    double l = qp_elem_get_f64(dt, c->in[1]->data, 0);
    double d = qp_elem_get_f64(dt, c->in[2]->data, 0);
    if (d == 0)
        return qp_op_fail(err, c, QP_E_FORMAT, "delta is 0");
    double n = ceil((l - s) / d);
    if (!(n < 1e9))
        return qp_op_fail(err, c, QP_E_UNSUPPORTED, "too many elements");
    *out = (struct qp_tdesc){dt, 1, {n > 0 ? (int64_t)n : 0}};
    return QP_OK;
}

static enum qp_status range_run(const struct qp_op_ctx *c,
                                struct qp_tensor *const *out,
                                struct qp_error *err)
{
    (void)err;
    enum qp_dtype dt = c->in[0]->dtype;
    size_t n = qp_tensor_numel(out[0]);
    bool f = qp_dtype_traits(dt)->is_float;
    for (size_t i = 0; i < n; i++) {
        if (f)
            qp_elem_set_f64(dt, out[0]->data, i,
                            qp_elem_get_f64(dt, c->in[0]->data, 0) +
                                (double)i * qp_elem_get_f64(dt, c->in[2]->data, 0));
        else
            qp_elem_set_i64(dt, out[0]->data, i,
                            qp_elem_get_i64(dt, c->in[0]->data, 0) +
                                (int64_t)i * qp_elem_get_i64(dt, c->in[2]->data, 0));
    }
    return QP_OK;
}

/* If runs only inlined: model/onnx-import.c replaces it by a branch when
 * its condition folds to a constant. */
static enum qp_status if_infer(const struct qp_op_ctx *c, struct qp_tdesc *out,
                               struct qp_error *err)
{
    (void)out;
    return qp_op_fail(err, c, QP_E_UNSUPPORTED, "the condition is not a "
                      "constant; qprobe runs If only when its condition folds "
                      "to one");
}

static const struct qp_attr_spec reshape_attrs[] = {
    {"allowzero", QP_ATTR_INT}, {"shape", QP_ATTR_INTS}, {NULL, 0}};
static const struct qp_attr_spec axis_attrs[] = {
    {"axis", QP_ATTR_INT}, {"axes", QP_ATTR_INTS}, {NULL, 0}};
static const struct qp_attr_spec shape_attrs[] = {
    {"start", QP_ATTR_INT}, {"end", QP_ATTR_INT}, {NULL, 0}};
static const struct qp_attr_spec cos_attrs[] = {
    {"value", QP_ATTR_TENSOR}, {NULL, 0}};

const struct qp_op_def qp_ops_shape[] = {
    {"", "Reshape", 1, 2, 1, 1, 2u, false, false, reshape_attrs, NULL,
     reshape_infer, copy_run,
     QP_TRAIT_INT_PASS, qp_op_always, NULL, NULL},
    {"", "Flatten", 1, 1, 1, 1, 0, false, false, axis_attrs, NULL,
     flatten_infer, copy_run,
     QP_TRAIT_INT_PASS, qp_op_always, NULL, NULL},
    {"", "Squeeze", 1, 2, 1, 1, 2u, false, false, axis_attrs, NULL,
     squeeze_infer, copy_run,
     QP_TRAIT_INT_PASS, qp_op_always, NULL, NULL},
    {"", "Unsqueeze", 1, 2, 1, 1, 2u, false, false, axis_attrs, NULL,
     unsqueeze_infer, copy_run,
     QP_TRAIT_INT_PASS, qp_op_always, NULL, NULL},
    {"", "Expand", 2, 2, 1, 1, 2u, false, false, NULL, NULL, expand_infer,
     expand_run, 0, NULL, NULL, NULL},
    {"", "Shape", 1, 1, 1, 1, 0, true, false, shape_attrs, NULL, shape_infer,
     shape_run, 0, NULL, NULL, NULL},
    {"", "Size", 1, 1, 1, 1, 0, true, false, NULL, NULL, size_infer, size_run, 0, NULL, NULL, NULL},
    {"", "ConstantOfShape", 1, 1, 1, 1, 1u, false, false, cos_attrs, NULL,
     cos_infer, cos_run, 0, NULL, NULL, NULL},
    {"", "Constant", 0, 0, 1, 1, 0, false, false, NULL, NULL, constant_infer,
     constant_run, 0, NULL, NULL, NULL},
    {"", "Range", 3, 3, 1, 1, 7u, false, false, NULL, NULL, range_infer,
     range_run, 0, NULL, NULL, NULL},
    {"", "If", 1, 1, 1, QP_OP_MAX_IO, 0, false, true, NULL, NULL, if_infer,
     NULL, 0, NULL, NULL, NULL},
    {NULL},
};
