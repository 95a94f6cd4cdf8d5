/* model/op-norm.c: Softmax and LogSoftmax (both the opset < 13
 * "flatten to 2-D at axis" form and the per-axis form), and the
 * normalizations: LayerNormalization, BatchNormalization (inference and
 * training mode), InstanceNormalization. f32; statistics in double. */
#include <math.h>
#include <string.h>

#include "kernels/eltwise-f32.h"
#include "model/op.h"

static enum qp_status f32_same_infer(const struct qp_op_ctx *c,
                                     struct qp_tdesc *out, struct qp_error *err)
{
    for (int i = 0; i < c->n_in; i++) {
        enum qp_status st = qp_op_want_f32(c, i, err);
        if (st)
            return st;
    }
    qp_tdesc_of(c->in[0], &out[0]);
    return QP_OK;
}

/* ---- Softmax / LogSoftmax ---------------------------------------------- */

struct smax {
    size_t outer, len, inner;
    bool log;
    const float *x;
    float *y;
};

/* Rows of contiguous elements (inner 1), SMAX_ROWS at a time: the same
 * operations as smax_range's loop in the same order per row, the
 * exponentials by the dispatch table's exp_shifted and the rows' double
 * sums interleaved (one sum's additions wait on each other, not on the
 * other rows'). */
#define SMAX_ROWS 8

static void smax_rows(const struct smax *s, size_t b, size_t e)
{
    const struct qp_ew_f32 *k = qp_ew_f32();
    size_t len = s->len;
    for (size_t r0 = b; r0 < e; r0 += SMAX_ROWS) {
        size_t nr = e - r0 < SMAX_ROWS ? e - r0 : SMAX_ROWS;
        double sum[SMAX_ROWS] = {0};
        for (size_t j = 0; j < nr; j++) {
            const float *x = s->x + (r0 + j) * len;
            float m = -INFINITY;
            for (size_t i = 0; i < len; i++)
                m = x[i] > m ? x[i] : m;
            k->exp_shifted(x, m, s->y + (r0 + j) * len, len);
        }
        const float *y = s->y + r0 * len;
        for (size_t i = 0; i < len; i++)
            for (size_t j = 0; j < nr; j++)
                sum[j] += y[j * len + i];
        for (size_t j = 0; j < nr; j++) {
            float inv = (float)(1.0 / sum[j]), *yr = s->y + (r0 + j) * len;
            for (size_t i = 0; i < len; i++)
                yr[i] *= inv;
        }
    }
}

static void smax_range(void *ctx, size_t b, size_t e)
{
    const struct smax *s = ctx;
    if (s->inner == 1 && !s->log) {
        smax_rows(s, b, e);
        return;
    }
    for (size_t r = b; r < e; r++) {
        size_t o = r / s->inner, i = r % s->inner;
        const float *x = s->x + o * s->len * s->inner + i;
        float *y = s->y + o * s->len * s->inner + i;
        size_t st = s->inner;
        float m = -INFINITY;
        for (size_t k = 0; k < s->len; k++)
            m = x[k * st] > m ? x[k * st] : m;
        double sum = 0.0;
        for (size_t k = 0; k < s->len; k++) {
            float ev = expf(x[k * st] - m);
            if (!s->log)
                y[k * st] = ev;
            sum += ev;
        }
        if (s->log) {
            float ls = (float)log(sum);
            for (size_t k = 0; k < s->len; k++)
                y[k * st] = x[k * st] - m - ls;
        } else {
            float inv = (float)(1.0 / sum);
            for (size_t k = 0; k < s->len; k++)
                y[k * st] *= inv;
        }
    }
}

static enum qp_status softmax_run(const struct qp_op_ctx *c,
                                  struct qp_tensor *const *out,
                                  struct qp_error *err)
{
    const struct qp_tensor *x = c->in[0];
    bool legacy = c->n->opset < 13;
    int axis;
    enum qp_status st = qp_op_axis(c, "axis", qp_attr_int(c->n, "axis",
                                   legacy ? 1 : -1), x->ndim ? x->ndim : 1,
                                   &axis, err);
    if (st)
        return st;
    struct smax s = {1, 1, 1, strcmp(c->n->op_type, "LogSoftmax") == 0,
                     x->data, out[0]->data};
    for (int d = 0; d < x->ndim; d++) {
        size_t v = (size_t)x->shape[d];
        if (d < axis)
            s.outer *= v;
        else if (d == axis || legacy)
            s.len *= v;
        else
            s.inner *= v;
    }
    qp_op_parallel_items(c, s.outer * s.inner, qp_op_par_items(s.len),
                         smax_range, &s);
    return QP_OK;
}

/* Mean and (population) variance of v[0..n) in double. */
static void mean_var(const float *v, size_t n, double *mean, double *var)
{
    double m = 0.0, s = 0.0;
    for (size_t i = 0; i < n; i++)
        m += v[i];
    m /= (double)n;
    for (size_t i = 0; i < n; i++)
        s += (v[i] - m) * (v[i] - m);
    *mean = m;
    *var = s / (double)n;
}

/* ---- LayerNormalization ------------------------------------------------ */

static enum qp_status ln_infer(const struct qp_op_ctx *c, struct qp_tdesc *out,
                               struct qp_error *err)
{
    enum qp_status st = f32_same_infer(c, out, err);
    int axis;
    if (st || (st = qp_op_axis(c, "axis", qp_attr_int(c->n, "axis", -1),
                               c->in[0]->ndim, &axis, err)))
        return st;
    for (int k = 1; k < c->n->n_out; k++) {
        out[k] = out[0];
        for (int d = axis; d < out[k].ndim; d++)
            out[k].shape[d] = 1;
    }
    return QP_OK;
}

static enum qp_status ln_run(const struct qp_op_ctx *c,
                             struct qp_tensor *const *out, struct qp_error *err)
{
    const struct qp_tensor *x = c->in[0], *scale = c->in[1], *bias = qp_op_in(c, 2);
    int axis;
    enum qp_status st = qp_op_axis(c, "axis", qp_attr_int(c->n, "axis", -1),
                                   x->ndim, &axis, err);
    if (st)
        return st;
    double eps = qp_attr_float(c->n, "epsilon", 1e-5f);
    struct qp_tdesc nd = {QP_DTYPE_F32, x->ndim - axis, {0}};
    memcpy(nd.shape, x->shape + axis, (size_t)nd.ndim * sizeof(int64_t));
    struct qp_bcast bs, bb;
    const struct qp_tensor *ops[2] = {scale, bias ? bias : scale};
    if ((st = qp_op_broadcasts_to(c, "scale", scale, &nd, err)) ||
        (bias && (st = qp_op_broadcasts_to(c, "bias", bias, &nd, err))))
        return st;
    qp_bcast_init(&bs, &nd, &ops[0], 1);
    qp_bcast_init(&bb, &nd, &ops[1], 1);
    size_t len = qp_tdesc_numel(&nd), rows = len ? qp_tensor_numel(x) / len : 0;
    /* scale and bias expanded to the normalized shape once */
    float *sb = qp_op_scratch(c, 2 * (len ? len : 1) * sizeof(float));
    if (!sb)
        return qp_op_fail(err, c, QP_E_NOMEM, "out of memory");
    for (size_t i = 0; i < len; i++) {
        int64_t os, ob;
        qp_bcast_at(&bs, i, &os);
        qp_bcast_at(&bb, i, &ob);
        sb[i] = ((const float *)scale->data)[os];
        sb[len + i] = bias ? ((const float *)bias->data)[ob] : 0.0f;
    }
    const float *xs = x->data;
    float *ys = out[0]->data;
    float *mean_o = c->n->n_out > 1 && out[1] ? out[1]->data : NULL;
    float *inv_o = c->n->n_out > 2 && out[2] ? out[2]->data : NULL;
    for (size_t r = 0; r < rows; r++) {
        const float *v = xs + r * len;
        double m, var;
        mean_var(v, len, &m, &var);
        double inv = 1.0 / sqrt(var + eps);
        for (size_t i = 0; i < len; i++)
            ys[r * len + i] = (float)((v[i] - m) * inv) * sb[i] + sb[len + i];
        if (mean_o)
            mean_o[r] = (float)m;
        if (inv_o)
            inv_o[r] = (float)inv;
    }
    return QP_OK;
}

/* ---- BatchNormalization ------------------------------------------------ */

static enum qp_status bn_infer(const struct qp_op_ctx *c, struct qp_tdesc *out,
                               struct qp_error *err)
{
    enum qp_status st = f32_same_infer(c, out, err);
    if (st)
        return st;
    const struct qp_tensor *x = c->in[0];
    if (x->ndim < 2)
        return qp_op_fail(err, c, QP_E_SHAPE, "input rank %d; at least 2 is "
                          "needed", x->ndim);
    for (int i = 1; i < 5; i++)
        if (qp_tensor_numel(c->in[i]) != (size_t)x->shape[1])
            return qp_op_fail(err, c, QP_E_SHAPE, "input %d must have %lld "
                              "values (one per channel)", i,
                              (long long)x->shape[1]);
    for (int k = 1; k < c->n->n_out; k++)
        qp_tdesc_of(c->in[k + 2], &out[k]); /* running mean, running var */
    return QP_OK;
}

struct bn_job {
    const struct qp_op_ctx *c;
    struct qp_tensor *const *out;
    size_t n, ch, area;
};

/* Channels [kb, ke): statistics (training mode) and y = x a + b0. */
static void bn_channels(void *ctx, size_t kb, size_t ke)
{
    const struct bn_job *j = ctx;
    const struct qp_op_ctx *c = j->c;
    struct qp_tensor *const *out = j->out;
    const float *scale = c->in[1]->data, *bias = c->in[2]->data;
    const float *mean = c->in[3]->data, *var = c->in[4]->data;
    double eps = qp_attr_float(c->n, "epsilon", 1e-5f);
    float mom = qp_attr_float(c->n, "momentum", 0.9f);
    bool train = qp_attr_int(c->n, "training_mode", 0) != 0;
    size_t n = j->n, ch = j->ch, area = j->area;
    const float *xs = c->in[0]->data;
    float *ys = out[0]->data;
    for (size_t k = kb; k < ke; k++) {
        double m = mean[k], v = var[k];
        if (!train) /* running statistics pass through */
            for (int o = 1; o < c->n->n_out && o < 3; o++)
                if (out[o])
                    ((float *)out[o]->data)[k] = o == 1 ? mean[k] : var[k];
        if (train) {
            double s = 0.0, s2 = 0.0;
            for (size_t b = 0; b < n; b++)
                for (size_t i = 0; i < area; i++)
                    s += xs[(b * ch + k) * area + i];
            double cnt = (double)(n * area);
            m = s / cnt;
            for (size_t b = 0; b < n; b++)
                for (size_t i = 0; i < area; i++) {
                    double d = xs[(b * ch + k) * area + i] - m;
                    s2 += d * d;
                }
            v = s2 / cnt;
            if (c->n->n_out > 1 && out[1])
                ((float *)out[1]->data)[k] = (float)(mean[k] * mom + m * (1 - mom));
            if (c->n->n_out > 2 && out[2])
                ((float *)out[2]->data)[k] = (float)(var[k] * mom + v * (1 - mom));
        }
        float a = (float)(scale[k] / sqrt(v + eps));
        float b0 = (float)(bias[k] - m * a);
        for (size_t b = 0; b < n; b++) {
            const float *xp = xs + (b * ch + k) * area;
            float *yp = ys + (b * ch + k) * area;
            for (size_t i = 0; i < area; i++)
                yp[i] = xp[i] * a + b0;
        }
    }
}

static enum qp_status bn_run(const struct qp_op_ctx *c,
                             struct qp_tensor *const *out, struct qp_error *err)
{
    (void)err;
    const struct qp_tensor *x = c->in[0];
    size_t n = (size_t)x->shape[0], ch = (size_t)x->shape[1];
    struct bn_job j = {c, out, n, ch, n && ch ? qp_tensor_numel(x) / (n * ch) : 0};
    /* each channel is computed the same way on any thread */
    qp_op_parallel_items(c, ch, qp_op_par_items(n * j.area), bn_channels, &j);
    return QP_OK;
}

/* ---- InstanceNormalization --------------------------------------------- */

static enum qp_status in_run(const struct qp_op_ctx *c,
                             struct qp_tensor *const *out, struct qp_error *err)
{
    const struct qp_tensor *x = c->in[0];
    if (x->ndim < 3 || qp_tensor_numel(c->in[1]) != (size_t)x->shape[1] ||
        qp_tensor_numel(c->in[2]) != (size_t)x->shape[1])
        return qp_op_fail(err, c, QP_E_SHAPE, "needs [N,C,...] input and C "
                          "scales and biases");
    double eps = qp_attr_float(c->n, "epsilon", 1e-5f);
    size_t ch = (size_t)x->shape[1], planes = (size_t)x->shape[0] * ch;
    size_t area = planes ? qp_tensor_numel(x) / planes : 0;
    const float *xs = x->data, *sc = c->in[1]->data, *bi = c->in[2]->data;
    float *ys = out[0]->data;
    for (size_t p = 0; p < planes; p++) {
        const float *v = xs + p * area;
        double m, var;
        mean_var(v, area, &m, &var);
        double a = sc[p % ch] / sqrt(var + eps);
        for (size_t i = 0; i < area; i++)
            ys[p * area + i] = (float)((v[i] - m) * a + bi[p % ch]);
    }
    return QP_OK;
}

static const struct qp_attr_spec axis_attrs[] = {
    {"axis", QP_ATTR_INT}, {"epsilon", QP_ATTR_FLOAT},
    {"stash_type", QP_ATTR_INT}, {NULL, 0}};
static const struct qp_attr_spec bn_attrs[] = {
    {"epsilon", QP_ATTR_FLOAT}, {"momentum", QP_ATTR_FLOAT},
    {"training_mode", QP_ATTR_INT}, {NULL, 0}};

const struct qp_op_def qp_ops_norm[] = {
    {"", "Softmax", 1, 1, 1, 1, 0, false, false, axis_attrs, NULL,
     f32_same_infer, softmax_run, 0, NULL, NULL, NULL},
    {"", "LogSoftmax", 1, 1, 1, 1, 0, false, false, axis_attrs, NULL,
     f32_same_infer, softmax_run, 0, NULL, NULL, NULL},
    {"", "LayerNormalization", 2, 3, 1, 3, 0, false, false, axis_attrs, NULL,
     ln_infer, ln_run, 0, NULL, NULL, NULL},
    {"", "BatchNormalization", 5, 5, 1, 3, 0, false, false, bn_attrs, NULL,
     bn_infer, bn_run, 0, NULL, NULL, NULL},
    {"", "InstanceNormalization", 3, 3, 1, 1, 0, false, false, axis_attrs,
     NULL, f32_same_infer, in_run, 0, NULL, NULL, NULL},
    {NULL},
};
