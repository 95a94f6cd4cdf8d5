/* model/op-tflite-shape.c: TFLite's operators that move, pool or
 * normalize values (model/op-tflite.h): RESHAPE, SQUEEZE, PAD,
 * CONCATENATION, TRANSPOSE, STRIDED_SLICE, AVERAGE_POOL_2D, MAX_POOL_2D,
 * MEAN and SOFTMAX, on any element type (quantized outputs keep the
 * input's parameters where TFLite requires them equal) and the pools,
 * MEAN and SOFTMAX with TFLite's integer arithmetic. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/fixedpoint.h"
#include "kernels/pool-s8.h"
#include "model/op-tflite.h"

/* Integer element i of a tensor of dt (8/16/32-bit). */
static int32_t get_int(enum qp_dtype dt, const void *p, size_t i)
{
    return (int32_t)qp_elem_get_i64(dt, p, i);
}

static void put_clamped(enum qp_dtype dt, void *p, size_t i, int32_t v)
{
    const struct qp_dtype_traits *tr = qp_dtype_traits(dt);
    v = v < tr->min ? (int32_t)tr->min : v > tr->max ? (int32_t)tr->max : v;
    qp_elem_set_i64(dt, p, i, v);
}

/* A constant int32/int64 input into vals (at most QP_MAX_DIMS * 2). */
static enum qp_status const_ints(const struct qp_tfl_model *m,
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

static bool same_q(const struct qp_tfl_qp *a, const struct qp_tfl_qp *b)
{
    return a->quant == b->quant && (!a->quant ||
                                    (a->scale == b->scale && a->zp == b->zp));
}

static enum qp_status need_same_q(const struct qp_tfl_node *s,
                                  const struct qp_tfl_model *m,
                                  const struct qp_tfl_op *op, int k,
                                  struct qp_error *err)
{
    if (s->in[k].dtype != s->out[0].dtype || !same_q(&s->qin[k], &s->qout[0]))
        return qp_tfl_fail(err, m, op, QP_E_UNSUPPORTED, "input %d and the "
                           "output differ in type or quantization", k);
    return QP_OK;
}

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

static void strides_of(const struct qp_tdesc *d, int64_t *st)
{
    int64_t s = 1;
    for (int i = d->ndim - 1; i >= 0; i--) {
        st[i] = s;
        s *= d->shape[i];
    }
}

/* Output index i as coordinates of d. */
static void coords(const struct qp_tdesc *d, size_t i, int64_t *co)
{
    for (int k = d->ndim - 1; k >= 0; k--) {
        co[k] = (int64_t)(i % (size_t)d->shape[k]);
        i /= (size_t)d->shape[k];
    }
}

static enum qp_status prep_reshape(struct qp_tfl_node *s,
                                   const struct qp_tfl_model *m,
                                   const struct qp_tfl_op *op,
                                   struct qp_error *err)
{
    if (qp_tdesc_numel(&s->in[0]) != qp_tdesc_numel(&s->out[0]))
        return qp_tfl_fail(err, m, op, QP_E_SHAPE, "input and output sizes "
                           "differ");
    return need_same_q(s, m, op, 0, err);
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
    enum qp_status st = const_ints(m, op, 1, pads, 2 * QP_MAX_DIMS, &n, err);
    const struct qp_tdesc *x = &s->in[0], *y = &s->out[0];
    if (st || (st = need_same_q(s, m, op, 0, err)))
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
    strides_of(x, xs);
    for (size_t i = 0; i < g->n; i++) {
        coords(y, i, co);
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
    enum qp_status st = const_ints(m, op, 1, perm, QP_MAX_DIMS, &n, err);
    const struct qp_tdesc *x = &s->in[0], *y = &s->out[0];
    if (st || (st = need_same_q(s, m, op, 0, err)))
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
    strides_of(x, xs);
    for (size_t i = 0; i < g->n; i++) {
        coords(y, i, co);
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
    if ((st = const_ints(m, op, 1, b, QP_MAX_DIMS, &nb, err)) ||
        (st = const_ints(m, op, 2, e, QP_MAX_DIMS, &ne, err)) ||
        (st = const_ints(m, op, 3, st_, QP_MAX_DIMS, &ns, err)) ||
        (st = need_same_q(s, m, op, 0, err)))
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
    strides_of(x, xs);
    struct qp_tdesc it = {x->dtype, x->ndim, {0}};
    memcpy(it.shape, cnt, sizeof cnt);
    int64_t co[QP_MAX_DIMS];
    for (size_t i = 0; i < total; i++) {
        coords(&it, i, co);
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
        if (!same_q(&s->qin[i], &s->qout[0]))
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
                float v = (float)get_int(dt, x, j) * k->scale[i] + bias;
                put_clamped(dt, y, o, (int32_t)roundf(v) + s->qout[0].zp);
            }
        }
    return QP_OK;
}

/* ---- pooling -------------------------------------------------------------- */

static enum qp_status prep_pool(struct qp_tfl_node *s,
                                const struct qp_tfl_model *m,
                                const struct qp_tfl_op *op,
                                struct qp_error *err)
{
    const struct qp_tdesc *x = &s->in[0], *y = &s->out[0];
    if (x->ndim != 4 || y->ndim != 4)
        return qp_tfl_fail(err, m, op, QP_E_SHAPE, "expects 4-D tensors");
    enum qp_status st = need_same_q(s, m, op, 0, err);
    if (st)
        return st;
    struct qp_pool_s8_params *p = calloc(1, sizeof *p);
    if (!p)
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    s->impl = p;
    s->impl_free = free;
    int64_t pt, pb, pl, pr;
    int64_t oh = qp_tfl_pad(s->opt.padding, x->shape[1], s->opt.filter_h,
                            s->opt.stride_h, 1, &pt, &pb);
    int64_t ow = qp_tfl_pad(s->opt.padding, x->shape[2], s->opt.filter_w,
                            s->opt.stride_w, 1, &pl, &pr);
    if (s->opt.filter_h < 1 || s->opt.filter_w < 1 || s->opt.stride_h < 1 ||
        s->opt.stride_w < 1 || oh != y->shape[1] || ow != y->shape[2] ||
        x->shape[0] != y->shape[0] || x->shape[3] != y->shape[3])
        return qp_tfl_fail(err, m, op, QP_E_SHAPE, "window and output size do "
                           "not agree");
    p->kind = op->builtin == QP_TFL_MAX_POOL_2D ? QP_POOL_MAX : QP_POOL_AVG;
    p->geom = (struct qp_conv_geom){
        (size_t)x->shape[1], (size_t)x->shape[2], (size_t)s->opt.filter_h,
        (size_t)s->opt.filter_w, (size_t)s->opt.stride_h,
        (size_t)s->opt.stride_w, 1, 1, (size_t)pt, (size_t)pl, (size_t)pb,
        (size_t)pr};
    p->channels = (size_t)x->shape[3];
    p->dtype = x->dtype;
    if (x->dtype == QP_DTYPE_F32)
        return QP_OK; /* pool_f32 */
    if ((st = qp_tfl_act_range(s, s->opt.act, y->dtype, &s->qout[0], err)))
        return qp_error_prefix(err, "'%s': ", m->path);
    p->act_min = s->act_min;
    p->act_max = s->act_max;
    size_t h, w;
    if ((st = qp_pool_s8_check(p, &h, &w, err)))
        return qp_error_prefix(err, "'%s': operator %d: ", m->path, s->index);
    return QP_OK;
}

/* TFLite's float pooling: the window clipped to the image, then the
 * fused activation. */
static void pool_f32(const struct qp_pool_s8_params *p, int act, const float *x,
                     size_t batch, size_t oh, size_t ow, float *y)
{
    const struct qp_conv_geom *g = &p->geom;
    size_t c = p->channels;
    for (size_t b = 0; b < batch; b++)
        for (size_t oy = 0; oy < oh; oy++)
            for (size_t ox = 0; ox < ow; ox++)
                for (size_t ch = 0; ch < c; ch++) {
                    float acc = p->kind == QP_POOL_MAX ? -INFINITY : 0;
                    size_t n = 0;
                    for (size_t ky = 0; ky < g->kernel_h; ky++) {
                        int64_t iy = (int64_t)(oy * g->stride_h + ky) -
                                     (int64_t)g->pad_top;
                        if (iy < 0 || iy >= (int64_t)g->in_h)
                            continue;
                        for (size_t kx = 0; kx < g->kernel_w; kx++) {
                            int64_t ix = (int64_t)(ox * g->stride_w + kx) -
                                         (int64_t)g->pad_left;
                            if (ix < 0 || ix >= (int64_t)g->in_w)
                                continue;
                            float v = x[((b * g->in_h + (size_t)iy) * g->in_w +
                                         (size_t)ix) * c + ch];
                            acc = p->kind == QP_POOL_MAX ? (v > acc ? v : acc)
                                                         : acc + v;
                            n++;
                        }
                    }
                    if (p->kind == QP_POOL_AVG)
                        acc = n ? acc / (float)n : 0;
                    y[((b * oh + oy) * ow + ox) * c + ch] =
                        qp_tfl_act_f32(act, acc);
                }
}

static enum qp_status run_pool(const struct qp_op_ctx *c,
                               const struct qp_tfl_node *s,
                               struct qp_tensor *const *out,
                               struct qp_error *err)
{
    (void)err;
    if (c->in[0]->dtype == QP_DTYPE_F32)
        pool_f32(s->impl, s->opt.act, c->in[0]->data, (size_t)s->in[0].shape[0],
                 (size_t)s->out[0].shape[1], (size_t)s->out[0].shape[2],
                 out[0]->data);
    else
        qp_pool_s8_ref(s->impl, c->in[0]->data, (size_t)s->in[0].shape[0],
                       out[0]->data);
    return QP_OK;
}

/* ---- MEAN ----------------------------------------------------------------- */

struct mean {
    bool axis[QP_MAX_DIMS];
    size_t count;            /* elements averaged per output */
    bool spatial;            /* 4-D over axes 1 and 2: the integer path */
    int32_t mult, shift;
    int64_t *src0;           /* per output: its first input element */
    int64_t *offs;           /* [count]: offsets of the averaged elements */
};

static void mean_free(void *p)
{
    struct mean *k = p;
    if (k) {
        free(k->src0);
        free(k->offs);
    }
    free(k);
}

static enum qp_status prep_mean(struct qp_tfl_node *s,
                                const struct qp_tfl_model *m,
                                const struct qp_tfl_op *op,
                                struct qp_error *err)
{
    int64_t ax[QP_MAX_DIMS];
    size_t n;
    const struct qp_tdesc *x = &s->in[0];
    enum qp_status st = const_ints(m, op, 1, ax, QP_MAX_DIMS, &n, err);
    if (st)
        return st;
    struct mean *k = calloc(1, sizeof *k);
    if (!k)
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    s->impl = k;
    s->impl_free = mean_free;
    for (size_t i = 0; i < n; i++) {
        int64_t a = ax[i] < 0 ? ax[i] + x->ndim : ax[i];
        if (a < 0 || a >= x->ndim)
            return qp_tfl_fail(err, m, op, QP_E_FORMAT, "axis %lld",
                               (long long)ax[i]);
        k->axis[a] = true;
    }
    struct qp_tdesc red = *x, keep = *x;
    k->count = 1;
    for (int d = 0; d < x->ndim; d++) {
        if (k->axis[d]) {
            k->count *= (size_t)x->shape[d];
            keep.shape[d] = 1;
        } else {
            red.shape[d] = 1;
        }
    }
    size_t nout = qp_tdesc_numel(&keep);
    if (nout != qp_tdesc_numel(&s->out[0]) || !k->count)
        return qp_tfl_fail(err, m, op, QP_E_SHAPE, "the output does not match "
                           "the reduction");
    k->src0 = calloc(nout, sizeof *k->src0);
    k->offs = calloc(k->count, sizeof *k->offs);
    if (!k->src0 || !k->offs)
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    int64_t xs[QP_MAX_DIMS], co[QP_MAX_DIMS];
    strides_of(x, xs);
    for (size_t i = 0; i < nout; i++) {
        coords(&keep, i, co);
        for (int d = 0; d < x->ndim; d++)
            k->src0[i] += co[d] * xs[d];
    }
    for (size_t i = 0; i < k->count; i++) {
        coords(&red, i, co);
        for (int d = 0; d < x->ndim; d++)
            k->offs[i] += co[d] * xs[d];
    }
    if (x->dtype == QP_DTYPE_F32)
        return QP_OK;
    if (!s->qin[0].quant || !s->qout[0].quant)
        return qp_tfl_fail(err, m, op, QP_E_UNSUPPORTED, "unquantized integer "
                           "MEAN");
    k->spatial = x->ndim == 4 && n == 2 && k->axis[1] && k->axis[2];
    if (k->spatial) {
        double real = (double)s->qin[0].scale / (double)s->qout[0].scale;
        qp_rq_quantize_multiplier(QP_RQ_TFLITE_DOUBLE, real, &k->mult,
                                  &k->shift);
    }
    return QP_OK;
}

static enum qp_status run_mean(const struct qp_op_ctx *c,
                               const struct qp_tfl_node *s,
                               struct qp_tensor *const *out,
                               struct qp_error *err)
{
    (void)err;
    const struct mean *k = s->impl;
    enum qp_dtype dt = out[0]->dtype;
    const void *x = c->in[0]->data;
    size_t nout = qp_tensor_numel(out[0]);
    int64_t n = (int64_t)k->count;
    for (size_t i = 0; i < nout; i++) {
        if (dt == QP_DTYPE_F32) {
            float sum = 0;
            for (size_t j = 0; j < k->count; j++)
                sum += ((const float *)x)[k->src0[i] + k->offs[j]];
            ((float *)out[0]->data)[i] = sum / (float)k->count;
            continue;
        }
        int64_t sum = 0;
        for (size_t j = 0; j < k->count; j++)
            sum += get_int(dt, x, (size_t)(k->src0[i] + k->offs[j]));
        if (k->spatial) { /* reference_integer_ops::Mean */
            int32_t acc = (int32_t)(sum - n * s->qin[0].zp);
            acc = qp_rq_scale_fixed(QP_RQ_TFLITE_DOUBLE, acc, k->mult, k->shift);
            acc = acc > 0 ? (int32_t)((acc + n / 2) / n)
                          : (int32_t)((acc - n / 2) / n);
            put_clamped(dt, out[0]->data, i, acc + s->qout[0].zp);
            continue;
        }
        /* QuantizedMeanOrSum: in float */
        float scale = s->qin[0].scale / s->qout[0].scale;
        float bias = -(float)s->qin[0].zp * scale;
        float mean = (float)sum / (float)k->count;
        put_clamped(dt, out[0]->data, i,
                    (int32_t)roundf(mean * scale + bias) + s->qout[0].zp);
    }
    return QP_OK;
}

/* ---- SOFTMAX -------------------------------------------------------------- */

struct softmax {
    size_t rows, depth;
    int32_t mult, left_shift, diff_min; /* the fixed-point reference */
    float table[256];                   /* x86: exp(-scale * beta * (255-i)) */
};

static enum qp_status prep_softmax(struct qp_tfl_node *s,
                                   const struct qp_tfl_model *m,
                                   const struct qp_tfl_op *op,
                                   struct qp_error *err)
{
    const struct qp_tdesc *x = &s->in[0];
    enum qp_dtype yt = s->out[0].dtype;
    struct softmax *k = calloc(1, sizeof *k);
    enum qp_status st;
    if (!k)
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    s->impl = k;
    s->impl_free = free;
    if (x->ndim < 1)
        return qp_tfl_fail(err, m, op, QP_E_SHAPE, "a scalar input");
    if ((st = qp_tfl_same_shape(s, m, op, 0, err)))
        return st;
    k->depth = (size_t)x->shape[x->ndim - 1];
    k->rows = k->depth ? qp_tdesc_numel(x) / k->depth : 0;
    if (x->dtype == QP_DTYPE_F32)
        return QP_OK;
    if ((x->dtype != QP_DTYPE_I8 && x->dtype != QP_DTYPE_U8) ||
        (yt != x->dtype && yt != QP_DTYPE_I16) || !s->qin[0].quant ||
        !s->qout[0].quant)
        return qp_tfl_fail(err, m, op, QP_E_UNSUPPORTED, "%s input, %s output",
                           qp_dtype_name(x->dtype), qp_dtype_name(yt));
    /* PreprocessSoftmaxScaling with 5 integer bits of the scaled diff */
    double real = (double)s->opt.beta * (double)s->qin[0].scale *
                  (double)(1 << 26);
    if (real > (double)INT32_MAX)
        real = (double)INT32_MAX;
    qp_rq_quantize_multiplier(QP_RQ_TFLITE_DOUBLE, real, &k->mult,
                              &k->left_shift);
    /* CalculateInputRadius(5, left_shift) */
    double radius = 31.0 * (double)(1 << 26) / (double)((int64_t)1 << k->left_shift);
    k->diff_min = -(int32_t)floor(radius);
    float scale = -s->qin[0].scale * s->opt.beta;
    for (int v = 0; v <= 255; v++)
        k->table[255 - v] = expf(scale * (float)v);
    return QP_OK;
}

static void softmax_fixed(const struct softmax *k, enum qp_dtype xt,
                          enum qp_dtype yt, const void *x, void *y, size_t r)
{
    const struct qp_dtype_traits *ot = qp_dtype_traits(yt);
    int32_t maxv = INT32_MIN;
    for (size_t c = 0; c < k->depth; c++) {
        int32_t v = get_int(xt, x, r * k->depth + c);
        maxv = v > maxv ? v : maxv;
    }
    int32_t sum = 0; /* Q12 */
    for (size_t c = 0; c < k->depth; c++) {
        int32_t diff = get_int(xt, x, r * k->depth + c) - maxv;
        if (diff < k->diff_min)
            continue;
        int32_t scaled = qp_fx_srdhm((int32_t)((uint32_t)diff << k->left_shift),
                                     k->mult);
        sum = qp_fx_add(sum, qp_fx_rescale(qp_fx_exp_neg(scaled, 5), 0, 12));
    }
    int bits;
    int32_t recip = qp_fx_reciprocal(sum, 12, &bits);
    for (size_t c = 0; c < k->depth; c++) {
        size_t i = r * k->depth + c;
        int32_t diff = get_int(xt, x, i) - maxv;
        int32_t v = (int32_t)ot->min;
        if (diff >= k->diff_min) {
            int32_t scaled = qp_fx_srdhm(
                (int32_t)((uint32_t)diff << k->left_shift), k->mult);
            int32_t e = qp_fx_exp_neg(scaled, 5);
            int32_t u = qp_fx_rdbypot(qp_fx_srdhm(recip, e),
                                      bits + 31 - (int)ot->bits);
            v = u + (int32_t)ot->min;
        }
        put_clamped(yt, y, i, v);
    }
}

/* TFLite's optimized (x86) quantized softmax: float table, float sums. */
static void softmax_table(const struct softmax *k, const struct qp_tfl_node *s,
                          enum qp_dtype xt, enum qp_dtype yt, const void *x,
                          void *y, size_t r)
{
    int32_t maxv = INT32_MIN;
    for (size_t c = 0; c < k->depth; c++) {
        int32_t v = get_int(xt, x, r * k->depth + c);
        maxv = v > maxv ? v : maxv;
    }
    const float *tab = k->table + 255 - maxv;
    float sum = 0;
    for (size_t c = 0; c < k->depth; c++)
        sum += tab[get_int(xt, x, r * k->depth + c)];
    float inv = 1.0f / (sum * s->qout[0].scale);
    for (size_t c = 0; c < k->depth; c++) {
        size_t i = r * k->depth + c;
        float p = tab[get_int(xt, x, i)] * inv;
        int32_t q = yt == QP_DTYPE_U8 ? (int32_t)(p + 0.5f)
                                      : (int32_t)roundf(p);
        put_clamped(yt, y, i, q + s->qout[0].zp);
    }
}

static enum qp_status run_softmax(const struct qp_op_ctx *c,
                                  const struct qp_tfl_node *s,
                                  struct qp_tensor *const *out,
                                  struct qp_error *err)
{
    (void)err;
    const struct softmax *k = s->impl;
    const void *x = c->in[0]->data;
    enum qp_dtype xt = c->in[0]->dtype, yt = out[0]->dtype;
    for (size_t r = 0; r < k->rows; r++) {
        if (xt == QP_DTYPE_F32) {
            const float *xr = (const float *)x + r * k->depth;
            float *yr = (float *)out[0]->data + r * k->depth, mx = -INFINITY,
                  sum = 0;
            for (size_t j = 0; j < k->depth; j++)
                mx = xr[j] > mx ? xr[j] : mx;
            for (size_t j = 0; j < k->depth; j++)
                sum += yr[j] = expf((xr[j] - mx) * s->opt.beta);
            for (size_t j = 0; j < k->depth; j++)
                yr[j] /= sum;
        } else if (s->flavor == QP_TFL_X86 && yt == xt) {
            softmax_table(k, s, xt, yt, x, out[0]->data, r);
        } else {
            softmax_fixed(k, xt, yt, x, out[0]->data, r);
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
    {QP_TFL_AVERAGE_POOL_2D, prep_pool, run_pool},
    {QP_TFL_MAX_POOL_2D, prep_pool, run_pool},
    {QP_TFL_MEAN, prep_mean, run_mean},
    {QP_TFL_SOFTMAX, prep_softmax, run_softmax},
    {-1, NULL, NULL},
};
