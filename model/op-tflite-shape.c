/* model/op-tflite-shape.c: TFLite's operators that move values
 * (model/op-tflite.h): RESHAPE, SQUEEZE, PAD, CONCATENATION, TRANSPOSE and
 * STRIDED_SLICE, on any element type; quantized outputs keep the input's
 * parameters where TFLite requires them equal, CONCATENATION rescales as
 * TFLite's ConcatenationWithScaling does. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/op-tflite.h"

/* ---- gather-style moves: a table of source indices --------------------- */

/* Each output element copies input element src[i]; -1 writes the pad
 * value. */
struct gather {
    int64_t *src;
    size_t n;
    int64_t pad;    /* integer pad value (PAD: the output zero point) */
};

static void gather_free(void *p)
{
    struct gather *g = p;
    if (g)
        free(g->src);
    free(g);
}

static struct gather *gather_new(struct qp_tfl_node *s, size_t n)
{
    struct gather *g = calloc(1, sizeof *g);
    if (g && !(g->src = calloc(n ? n : 1, sizeof *g->src))) {
        free(g);
        g = NULL;
    }
    if (g) {
        g->n = n;
        s->impl = g;
        s->impl_free = gather_free;
    }
    return g;
}

static enum qp_status gather_run(const struct qp_op_ctx *c,
                                 const struct qp_tfl_node *s,
                                 struct qp_tensor *const *out,
                                 struct qp_error *err)
{
    (void)err;
    const struct gather *g = s->impl;
    size_t es = qp_elem_size(out[0]->dtype);
    const uint8_t *x = c->in[0]->data;
    uint8_t *y = out[0]->data;
    for (size_t i = 0; i < g->n; i++) {
        if (g->src[i] >= 0)
            memcpy(y + i * es, x + (size_t)g->src[i] * es, es);
        else if (qp_dtype_traits(out[0]->dtype)->is_float)
            qp_elem_set_f64(out[0]->dtype, y, i, 0.0);
        else
            qp_elem_set_i64(out[0]->dtype, y, i, g->pad);
    }
    return QP_OK;
}

static enum qp_status prep_reshape(struct qp_tfl_node *s,
                                   const struct qp_tfl_model *m,
                                   const struct qp_tfl_op *op,
                                   struct qp_error *err)
{
    if (qp_tdesc_numel(&s->in[0]) != qp_tdesc_numel(&s->out[0]))
        return qp_tfl_fail(err, m, op, QP_E_SHAPE, "input and output sizes "
                           "differ");
    return qp_tfl_same_q(s, m, op, 0, err);
}

static enum qp_status run_copy(const struct qp_op_ctx *c,
                               const struct qp_tfl_node *s,
                               struct qp_tensor *const *out,
                               struct qp_error *err)
{
    (void)s;
    (void)err;
    qp_tfl_copy(c, out);
    return QP_OK;
}

static enum qp_status prep_pad(struct qp_tfl_node *s,
                               const struct qp_tfl_model *m,
                               const struct qp_tfl_op *op, struct qp_error *err)
{
    int64_t pads[2 * QP_MAX_DIMS];
    size_t n;
    enum qp_status st = qp_tfl_const_ints(m, op, 1, pads, 2 * QP_MAX_DIMS, &n, err);
    const struct qp_tdesc *x = &s->in[0], *y = &s->out[0];
    if (st || (st = qp_tfl_same_q(s, m, op, 0, err)))
        return st;
    if (n != 2 * (size_t)x->ndim || y->ndim != x->ndim)
        return qp_tfl_fail(err, m, op, QP_E_SHAPE, "paddings do not match the "
                           "input's rank");
    for (int d = 0; d < x->ndim; d++)
        if (pads[2 * d] < 0 || pads[2 * d + 1] < 0 ||
            x->shape[d] + pads[2 * d] + pads[2 * d + 1] != y->shape[d])
            return qp_tfl_fail(err, m, op, QP_E_SHAPE, "paddings do not give "
                               "the output shape");
    struct gather *g = gather_new(s, qp_tdesc_numel(y));
    if (!g)
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    g->pad = s->qout[0].quant ? s->qout[0].zp : 0;
    if (op->n_in > 2 && op->in[2] >= 0) /* PADV2's constant value */
        return qp_tfl_fail(err, m, op, QP_E_UNSUPPORTED, "a pad value input");
    int64_t xs[QP_MAX_DIMS], co[QP_MAX_DIMS];
    qp_tfl_strides(x, xs);
    for (size_t i = 0; i < g->n; i++) {
        qp_tfl_coords(y, i, co);
        int64_t src = 0;
        for (int d = 0; d < y->ndim && src >= 0; d++) {
            int64_t c = co[d] - pads[2 * d];
            src = c < 0 || c >= x->shape[d] ? -1 : src + c * xs[d];
        }
        g->src[i] = src;
    }
    return QP_OK;
}

static enum qp_status prep_transpose(struct qp_tfl_node *s,
                                     const struct qp_tfl_model *m,
                                     const struct qp_tfl_op *op,
                                     struct qp_error *err)
{
    int64_t perm[QP_MAX_DIMS];
    size_t n;
    enum qp_status st = qp_tfl_const_ints(m, op, 1, perm, QP_MAX_DIMS, &n, err);
    const struct qp_tdesc *x = &s->in[0], *y = &s->out[0];
    if (st || (st = qp_tfl_same_q(s, m, op, 0, err)))
        return st;
    if (n != (size_t)x->ndim || y->ndim != x->ndim)
        return qp_tfl_fail(err, m, op, QP_E_SHAPE, "perm has %zu entries for "
                           "rank %d", n, x->ndim);
    for (size_t d = 0; d < n; d++)
        if (perm[d] < 0 || perm[d] >= x->ndim || x->shape[perm[d]] != y->shape[d])
            return qp_tfl_fail(err, m, op, QP_E_SHAPE, "perm does not give the "
                               "output shape");
    struct gather *g = gather_new(s, qp_tdesc_numel(y));
    if (!g)
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    int64_t xs[QP_MAX_DIMS], co[QP_MAX_DIMS];
    qp_tfl_strides(x, xs);
    for (size_t i = 0; i < g->n; i++) {
        qp_tfl_coords(y, i, co);
        int64_t src = 0;
        for (int d = 0; d < y->ndim; d++)
            src += co[d] * xs[perm[d]];
        g->src[i] = src;
    }
    return QP_OK;
}

static int64_t clamp64(int64_t v, int64_t lo, int64_t hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

/* TFLite's StartForAxis / StopForAxis. */
static void slice_axis(const struct qp_tfl_options *o, int axis, int64_t size,
                       int64_t begin, int64_t end, int64_t stride,
                       int64_t *start, int64_t *stop)
{
    int64_t b = begin, e = end;
    if (o->begin_mask & (1 << axis))
        b = stride > 0 ? INT32_MIN : INT32_MAX;
    if (b < 0)
        b += size;
    b = stride > 0 ? clamp64(b, 0, size) : clamp64(b, -1, size - 1);
    *start = b;
    if (o->shrink_axis_mask & (1 << axis)) {
        *stop = b + 1;
        return;
    }
    if (o->end_mask & (1 << axis))
        e = stride > 0 ? INT32_MAX : INT32_MIN;
    if (e < 0)
        e += size;
    *stop = stride > 0 ? clamp64(e, 0, size) : clamp64(e, -1, size - 1);
}

static enum qp_status prep_slice(struct qp_tfl_node *s,
                                 const struct qp_tfl_model *m,
                                 const struct qp_tfl_op *op,
                                 struct qp_error *err)
{
    int64_t b[QP_MAX_DIMS], e[QP_MAX_DIMS], st_[QP_MAX_DIMS];
    size_t nb = 0, ne = 0, ns = 0;
    const struct qp_tdesc *x = &s->in[0];
    enum qp_status st;
    if ((st = qp_tfl_const_ints(m, op, 1, b, QP_MAX_DIMS, &nb, err)) ||
        (st = qp_tfl_const_ints(m, op, 2, e, QP_MAX_DIMS, &ne, err)) ||
        (st = qp_tfl_const_ints(m, op, 3, st_, QP_MAX_DIMS, &ns, err)) ||
        (st = qp_tfl_same_q(s, m, op, 0, err)))
        return st;
    if (nb != (size_t)x->ndim || ne != nb || ns != nb)
        return qp_tfl_fail(err, m, op, QP_E_SHAPE, "begin, end and strides "
                           "must have one entry per input dim");
    if (s->opt.ellipsis_mask || s->opt.new_axis_mask)
        return qp_tfl_fail(err, m, op, QP_E_UNSUPPORTED, "ellipsis and new "
                           "axis masks");
    int64_t start[QP_MAX_DIMS], cnt[QP_MAX_DIMS], xs[QP_MAX_DIMS];
    size_t total = 1;
    for (int d = 0; d < x->ndim; d++) {
        int64_t stop;
        if (!st_[d])
            return qp_tfl_fail(err, m, op, QP_E_FORMAT, "stride 0");
        if (s->opt.offset)
            e[d] += b[d];
        slice_axis(&s->opt, d, x->shape[d], b[d], e[d], st_[d], &start[d],
                   &stop);
        int64_t span = st_[d] > 0 ? stop - start[d] : start[d] - stop;
        int64_t step = st_[d] > 0 ? st_[d] : -st_[d];
        cnt[d] = span > 0 ? (span + step - 1) / step : 0;
        total *= (size_t)cnt[d];
    }
    if (total != qp_tdesc_numel(&s->out[0]))
        return qp_tfl_fail(err, m, op, QP_E_SHAPE, "the slice has %zu "
                           "elements, the output %zu", total,
                           qp_tdesc_numel(&s->out[0]));
    struct gather *g = gather_new(s, total);
    if (!g)
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    qp_tfl_strides(x, xs);
    struct qp_tdesc it = {x->dtype, x->ndim, {0}};
    memcpy(it.shape, cnt, sizeof cnt);
    int64_t co[QP_MAX_DIMS];
    for (size_t i = 0; i < total; i++) {
        qp_tfl_coords(&it, i, co);
        int64_t src = 0;
        for (int d = 0; d < x->ndim; d++)
            src += (start[d] + co[d] * st_[d]) * xs[d];
        g->src[i] = src;
    }
    return QP_OK;
}

/* ---- CONCATENATION -------------------------------------------------------- */

struct concat {
    int axis;
    size_t outer, inner[QP_TFL_MAX_IO];  /* inner: dims from axis on */
    float scale[QP_TFL_MAX_IO];          /* in / out; 0: copy */
};

static enum qp_status prep_concat(struct qp_tfl_node *s,
                                  const struct qp_tfl_model *m,
                                  const struct qp_tfl_op *op,
                                  struct qp_error *err)
{
    const struct qp_tdesc *y = &s->out[0];
    int axis = s->opt.axis < 0 ? s->opt.axis + y->ndim : s->opt.axis;
    if (axis < 0 || axis >= y->ndim || s->n_in < 1)
        return qp_tfl_fail(err, m, op, QP_E_FORMAT, "axis %d for rank %d",
                           (int)s->opt.axis, y->ndim);
    struct concat *k = calloc(1, sizeof *k);
    if (!k)
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    s->impl = k;
    s->impl_free = free;
    k->axis = axis;
    k->outer = 1;
    for (int d = 0; d < axis; d++)
        k->outer *= (size_t)y->shape[d];
    int64_t sum = 0;
    for (int i = 0; i < s->n_in; i++) {
        const struct qp_tdesc *x = &s->in[i];
        if (x->dtype != y->dtype || x->ndim != y->ndim)
            return qp_tfl_fail(err, m, op, QP_E_SHAPE, "input %d differs in "
                               "type or rank", i);
        k->inner[i] = 1;
        for (int d = 0; d < x->ndim; d++) {
            if (d != axis && x->shape[d] != y->shape[d])
                return qp_tfl_fail(err, m, op, QP_E_SHAPE, "input %d differs "
                                   "from the output off axis %d", i, axis);
            if (d >= axis)
                k->inner[i] *= (size_t)x->shape[d];
        }
        sum += x->shape[axis];
        if (!qp_tfl_qp_equal(&s->qin[i], &s->qout[0]))
            k->scale[i] = s->qin[i].scale * (1.0f / s->qout[0].scale);
    }
    if (sum != y->shape[axis])
        return qp_tfl_fail(err, m, op, QP_E_SHAPE, "inputs do not add up to "
                           "the output along axis %d", axis);
    if (s->opt.act != QP_TFL_ACT_NONE)
        return qp_tfl_fail(err, m, op, QP_E_UNSUPPORTED, "fused activation");
    return QP_OK;
}

static enum qp_status run_concat(const struct qp_op_ctx *c,
                                 const struct qp_tfl_node *s,
                                 struct qp_tensor *const *out,
                                 struct qp_error *err)
{
    (void)err;
    const struct concat *k = s->impl;
    enum qp_dtype dt = out[0]->dtype;
    size_t es = qp_elem_size(dt), o = 0;
    uint8_t *y = out[0]->data;
    for (size_t b = 0; b < k->outer; b++)
        for (int i = 0; i < s->n_in; i++) {
            const uint8_t *x = (const uint8_t *)c->in[i]->data +
                               b * k->inner[i] * es;
            if (!k->scale[i]) {
                memcpy(y + o * es, x, k->inner[i] * es);
                o += k->inner[i];
                continue;
            }
            /* ConcatenationWithScaling */
            float bias = -(float)s->qin[i].zp * k->scale[i];
            for (size_t j = 0; j < k->inner[i]; j++, o++) {
                float v = (float)qp_tfl_get_int(dt, x, j) * k->scale[i] + bias;
                qp_tfl_put_clamped(dt, y, o, qp_tfl_round_code(v, s->qout[0].zp));
            }
        }
    return QP_OK;
}

const struct qp_tfl_impl qp_tfl_impls_shape[] = {
    {QP_TFL_RESHAPE, prep_reshape, run_copy},
    {QP_TFL_SQUEEZE, prep_reshape, run_copy},
    {QP_TFL_PAD, prep_pad, gather_run},
    {QP_TFL_TRANSPOSE, prep_transpose, gather_run},
    {QP_TFL_STRIDED_SLICE, prep_slice, gather_run},
    {QP_TFL_CONCATENATION, prep_concat, run_concat},
    {-1, NULL, NULL},
};
