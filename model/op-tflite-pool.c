/* model/op-tflite-pool.c: TFLite's AVERAGE_POOL_2D, MAX_POOL_2D, MEAN and
 * SOFTMAX (model/op-tflite.h): the pools in kernels/pool-s8.h's integer
 * arithmetic (or float), MEAN as TFLite's reference_integer_ops::Mean for
 * 4-D spatial means and QuantizedMeanOrSum otherwise, SOFTMAX as TFLite
 * Micro's fixed-point kernel (tflite flavor) or TFLite's float table
 * (tflite-x86). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/fixedpoint.h"
#include "kernels/pool-s8.h"
#include "model/op-tflite.h"

/* ---- pooling -------------------------------------------------------------- */

static enum qp_status prep_pool(struct qp_tfl_node *s,
                                const struct qp_tfl_model *m,
                                const struct qp_tfl_op *op,
                                struct qp_error *err)
{
    const struct qp_tdesc *x = &s->in[0], *y = &s->out[0];
    if (x->ndim != 4 || y->ndim != 4)
        return qp_tfl_fail(err, m, op, QP_E_SHAPE, "expects 4-D tensors");
    enum qp_status st = qp_tfl_same_q(s, m, op, 0, err);
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
    enum qp_status st = qp_tfl_const_ints(m, op, 1, ax, QP_MAX_DIMS, &n, err);
    if (st)
        return st;
    if (x->dtype != s->out[0].dtype)
        return qp_tfl_fail(err, m, op, QP_E_UNSUPPORTED, "input %s, output %s",
                           qp_dtype_name(x->dtype),
                           qp_dtype_name(s->out[0].dtype));
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
    qp_tfl_strides(x, xs);
    for (size_t i = 0; i < nout; i++) {
        qp_tfl_coords(&keep, i, co);
        for (int d = 0; d < x->ndim; d++)
            k->src0[i] += co[d] * xs[d];
    }
    for (size_t i = 0; i < k->count; i++) {
        qp_tfl_coords(&red, i, co);
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
            sum += qp_tfl_get_int(dt, x, (size_t)(k->src0[i] + k->offs[j]));
        if (k->spatial) { /* reference_integer_ops::Mean */
            int32_t acc = (int32_t)(sum - n * s->qin[0].zp);
            acc = qp_rq_scale_fixed(QP_RQ_TFLITE_DOUBLE, acc, k->mult, k->shift);
            acc = acc > 0 ? (int32_t)((acc + n / 2) / n)
                          : (int32_t)((acc - n / 2) / n);
            qp_tfl_put_clamped(dt, out[0]->data, i, acc + s->qout[0].zp);
            continue;
        }
        /* QuantizedMeanOrSum: in float */
        float scale = s->qin[0].scale / s->qout[0].scale;
        float bias = -(float)s->qin[0].zp * scale;
        float mean = (float)sum / (float)k->count;
        qp_tfl_put_clamped(dt, out[0]->data, i,
                    qp_tfl_round_code(mean * scale + bias, s->qout[0].zp));
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
    if (x->dtype == QP_DTYPE_F32 && yt == QP_DTYPE_F32)
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
    /* QuantizeMultiplierGreaterThanOne checks that it is */
    if (!(real > 1.0))
        return qp_tfl_fail(err, m, op, QP_E_UNSUPPORTED, "beta %g times input "
                           "scale %g is too small for TFLite's integer softmax "
                           "(its multiplier must exceed 1)",
                           (double)s->opt.beta, (double)s->qin[0].scale);
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
        int32_t v = qp_tfl_get_int(xt, x, r * k->depth + c);
        maxv = v > maxv ? v : maxv;
    }
    int32_t sum = 0; /* Q12 */
    for (size_t c = 0; c < k->depth; c++) {
        int32_t diff = qp_tfl_get_int(xt, x, r * k->depth + c) - maxv;
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
        int32_t diff = qp_tfl_get_int(xt, x, i) - maxv;
        int32_t v = (int32_t)ot->min;
        if (diff >= k->diff_min) {
            int32_t scaled = qp_fx_srdhm(
                (int32_t)((uint32_t)diff << k->left_shift), k->mult);
            int32_t e = qp_fx_exp_neg(scaled, 5);
            int32_t u = qp_fx_rdbypot(qp_fx_srdhm(recip, e),
                                      bits + 31 - (int)ot->bits);
            v = u + (int32_t)ot->min;
        }
        qp_tfl_put_clamped(yt, y, i, v);
    }
}

/* TFLite's optimized (x86) quantized softmax: float table, float sums. */
static void softmax_table(const struct softmax *k, const struct qp_tfl_node *s,
                          enum qp_dtype xt, enum qp_dtype yt, const void *x,
                          void *y, size_t r)
{
    int32_t maxv = INT32_MIN;
    for (size_t c = 0; c < k->depth; c++) {
        int32_t v = qp_tfl_get_int(xt, x, r * k->depth + c);
        maxv = v > maxv ? v : maxv;
    }
    const float *tab = k->table + 255 - maxv;
    float sum = 0;
    for (size_t c = 0; c < k->depth; c++)
        sum += tab[qp_tfl_get_int(xt, x, r * k->depth + c)];
    float inv = 1.0f / (sum * s->qout[0].scale);
    for (size_t c = 0; c < k->depth; c++) {
        size_t i = r * k->depth + c;
        float p = tab[qp_tfl_get_int(xt, x, i)] * inv;
        /* (u8: TFLite adds 0.5 and truncates; p >= 0) */
        qp_tfl_put_clamped(yt, y, i,
                           yt == QP_DTYPE_U8
                               ? qp_tfl_round_code(floorf(p + 0.5f), s->qout[0].zp)
                               : qp_tfl_round_code(p, s->qout[0].zp));
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

const struct qp_tfl_impl qp_tfl_impls_pool[] = {
    {QP_TFL_AVERAGE_POOL_2D, prep_pool, run_pool},
    {QP_TFL_MAX_POOL_2D, prep_pool, run_pool},
    {QP_TFL_MEAN, prep_mean, run_mean},
    {QP_TFL_SOFTMAX, prep_softmax, run_softmax},
    {-1, NULL, NULL},
};
