/* model/op-tflite-conv.c: CONV_2D, DEPTHWISE_CONV_2D, FULLY_CONNECTED and
 * TRANSPOSE_CONV (model/op-tflite.h).
 *
 * 8-bit activations run in qprobe's integer kernels (kernels/conv-s8.h,
 * depthwise-s8.h, gemm-s8.h) with TFLite's parameters: input offset =
 * -input zero point, weights int8 per channel (zero point 0) or uint8 per
 * tensor (legacy, with its zero point), int32 bias, per-channel
 * multipliers from QuantizeMultiplier of
 *   (double)in_scale * (double)w_scale[c] / (double)out_scale
 * (PopulateConvolutionQuantizationParams) — except the legacy uint8 convs
 * and every FULLY_CONNECTED, whose single multiplier comes from
 * GetQuantizedConvolutionMultipler: (double)(float)(in_scale * w_scale) /
 * out_scale. The requantization is tflite-double (TFLite Micro and
 * TFLite's reference kernels); in the x86 flavor CONV_2D and
 * FULLY_CONNECTED compute int32 accumulators and scale them with ruy's
 * rounding (qp_tfl_ruy_scale), as TFLite's x86 build does through
 * cpu_backend_gemm.
 *
 * 16x8 (int16 activations, int8 weights, int64 or int32 bias) and
 * TRANSPOSE_CONV follow TFLite's reference loops (int64 accumulators for
 * 16-bit, MultiplyByQuantizedMultiplier's int64 form: tflite-int64-double).
 * Float tensors run the same loops in float. */
#include <stdlib.h>
#include <string.h>

#include "kernels/conv-f32.h"
#include "kernels/conv-s8.h"
#include "kernels/depthwise-s8.h"
#include "kernels/gemm-s8.h"
#include "model/op-tflite.h"

enum kind { K_CONV, K_DW, K_FC, K_TCONV };

struct conv {
    enum kind kind;
    enum qp_dtype xt, wt;           /* input and weight dtypes */
    bool wide, flt, ruy;            /* int16 activations; float; x86 ruy */
    size_t n, h, w, ic, oh, ow, oc, kh, kw, dm, batch;
    size_t sh, sw, dh, dw;
    int64_t pt, pl;
    int32_t x_zp, out_zp;
    void *weights;                  /* owned copy (wide/float/tconv paths) */
    int32_t *w_zp;                  /* [oc] */
    int64_t *bias;                  /* [oc] (int64 for every path) */
    float *fbias;
    int32_t *mult, *shift;          /* [oc] */
    int32_t *ruy_left, *ruy_shift;  /* [oc] the x86 epilogue's shifts */
    int64_t *ruy_add;               /* [oc] and rounding terms */
    struct qp_rq rq;
    struct qp_conv_s8 k_conv;
    struct qp_dw_s8 k_dw;
    struct qp_gemm_s8 k_gemm;
    bool have_conv, have_dw, have_gemm;
    /* float CONV_2D / DEPTHWISE_CONV_2D / FULLY_CONNECTED through
     * kernels/conv-f32.h (channels first): weights in OIHW */
    bool f32k;
    struct qp_conv_nd fg;
    float *fw;
};

static void conv_free(void *p)
{
    struct conv *k = p;
    if (!k)
        return;
    if (k->have_conv)
        qp_conv_s8_release(&k->k_conv);
    if (k->have_dw)
        qp_dw_s8_release(&k->k_dw);
    if (k->have_gemm)
        qp_gemm_s8_release(&k->k_gemm);
    qp_rq_release(&k->rq);
    free(k->weights);
    free(k->fw);
    free(k->w_zp);
    free(k->bias);
    free(k->fbias);
    free(k->mult);
    free(k->shift);
    free(k->ruy_left);
    free(k->ruy_shift);
    free(k->ruy_add);
    free(k);
}

/* Reads the bias tensor (int32, int64 or float) into k's arrays. */
static enum qp_status read_bias(struct conv *k, const struct qp_tfl_model *m,
                                const struct qp_tfl_op *op, int bi,
                                struct qp_error *err)
{
    k->bias = calloc(k->oc, sizeof *k->bias);
    k->fbias = calloc(k->oc, sizeof *k->fbias);
    if (!k->bias || !k->fbias)
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    if (bi < 0 || bi >= op->n_in || op->in[bi] < 0)
        return QP_OK;
    const struct qp_tfl_tensor *b = &m->tensors[op->in[bi]];
    if (!b->data || qp_tfl_tensor_numel(b) != k->oc)
        return qp_tfl_fail(err, m, op, QP_E_UNSUPPORTED, "bias '%s' must be a "
                           "constant of %zu values", b->name, k->oc);
    for (size_t c = 0; c < k->oc; c++) {
        if (b->dtype == QP_DTYPE_I32) {
            int32_t v;
            memcpy(&v, b->data + 4 * c, 4);
            k->bias[c] = v;
        } else if (b->dtype == QP_DTYPE_I64) {
            memcpy(&k->bias[c], b->data + 8 * c, 8);
        } else if (b->dtype == QP_DTYPE_F32) {
            memcpy(&k->fbias[c], b->data + 4 * c, 4);
        } else {
            return qp_tfl_fail(err, m, op, QP_E_UNSUPPORTED, "bias '%s' is %s",
                               b->name, qp_dtype_name(b->dtype));
        }
    }
    return QP_OK;
}

/* Multipliers, shifts and the requantization of k (quantized paths). */
static enum qp_status requant(struct conv *k, struct qp_tfl_node *s,
                              const struct qp_tfl_model *m,
                              const struct qp_tfl_op *op,
                              const struct qp_tfl_tensor *w,
                              struct qp_error *err)
{
    const struct qp_tfl_qp *qx = &s->qin[k->kind == K_TCONV ? 2 : 0];
    const struct qp_tfl_qp *qy = &s->qout[0];
    if (!qx->quant || !qy->quant || !w->q.count)
        return qp_tfl_fail(err, m, op, QP_E_UNSUPPORTED, "mixed float and "
                           "quantized tensors (hybrid models are not "
                           "supported)");
    size_t nw = w->q.count;
    if (nw != 1 && nw != k->oc)
        return qp_tfl_fail(err, m, op, QP_E_UNSUPPORTED, "weight '%s' has %zu "
                           "scales for %zu output channels", w->name, nw, k->oc);
    k->mult = calloc(k->oc, sizeof *k->mult);
    k->shift = calloc(k->oc, sizeof *k->shift);
    k->w_zp = calloc(k->oc, sizeof *k->w_zp);
    float *ws = calloc(k->oc, sizeof *ws);
    enum qp_status st = QP_OK;
    if (!k->mult || !k->shift || !k->w_zp || !ws)
        st = qp_fail(err, QP_E_NOMEM, "out of memory");
    for (size_t c = 0; !st && c < k->oc; c++) {
        ws[c] = w->q.scale[nw == 1 ? 0 : c];
        int64_t z = w->q.zero_point[nw == 1 ? 0 : c];
        if (z < qp_dtype_traits(k->wt)->min || z > qp_dtype_traits(k->wt)->max)
            st = qp_tfl_fail(err, m, op, QP_E_FORMAT, "weight '%s': zero "
                             "point %lld outside %s", w->name, (long long)z,
                             qp_dtype_name(k->wt));
        k->w_zp[c] = (int32_t)z;
    }
    bool legacy = (k->kind == K_FC && nw == 1) || k->xt == QP_DTYPE_U8;
    enum qp_rq_flavor f = k->wide ? QP_RQ_TFLITE_INT64_DOUBLE
                                  : QP_RQ_TFLITE_DOUBLE;
    if (!st)
        st = qp_rq_derive_per_channel(f, legacy ? QP_RQ_PRODUCT_LEGACY_FLOAT
                                                : QP_RQ_PRODUCT_DOUBLE,
                                      qx->scale, ws, k->oc, qy->scale, k->mult,
                                      k->shift, err);
    free(ws);
    if (!st)
        st = qp_rq_prepare_fixed(&k->rq, f, k->mult, k->shift, k->oc, qy->zp,
                                 s->out[0].dtype, s->act_min, s->act_max, err);
    if (st)
        return qp_error_prefix(err, "'%s': operator %d: ", m->path, s->index);
    k->x_zp = qx->zp;
    k->out_zp = qy->zp;
    return QP_OK;
}

static void pack_oihw(const struct conv *k, const float *w, float *fw);

/* Elements of k's weight (oc x kh x kw x ic, one input channel for
 * depthwise). */
static size_t weight_count(const struct conv *k)
{
    return k->oc * (k->kind == K_DW ? 1 : k->ic) * k->kh * k->kw;
}

/* The float path on kernels/conv-f32.h: geometry, and the weights from
 * OHWI / [1,H,W,O] / [O,I] to OIHW. */
static enum qp_status prepare_f32(struct conv *k, struct qp_error *err)
{
    struct qp_conv_nd *g = &k->fg;
    size_t nw = weight_count(k);
    memset(g, 0, sizeof *g);
    g->nsp = 2;
    g->batch = k->n;
    g->in_c = k->ic;
    g->out_c = k->oc;
    g->groups = k->kind == K_DW ? k->ic : 1;
    g->in[0] = (int64_t)k->h;
    g->in[1] = (int64_t)k->w;
    g->out[0] = (int64_t)k->oh;
    g->out[1] = (int64_t)k->ow;
    g->kernel[0] = (int64_t)k->kh;
    g->kernel[1] = (int64_t)k->kw;
    g->stride[0] = (int64_t)(k->kind == K_FC ? 1 : k->sh);
    g->stride[1] = (int64_t)(k->kind == K_FC ? 1 : k->sw);
    g->dilation[0] = (int64_t)(k->kind == K_FC ? 1 : k->dh);
    g->dilation[1] = (int64_t)(k->kind == K_FC ? 1 : k->dw);
    g->pad[0] = k->pt;
    g->pad[1] = k->pl;
    for (int d = 0; d < 2; d++) {
        int64_t span = (g->out[d] - 1) * g->stride[d] +
                       (g->kernel[d] - 1) * g->dilation[d] + 1;
        int64_t end = span - g->in[d] - g->pad[d];
        g->pad_end[d] = end > 0 ? end : 0;
    }
    if (!(k->fw = malloc((nw ? nw : 1) * sizeof *k->fw)))
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    pack_oihw(k, k->weights, k->fw);
    k->f32k = true;
    return QP_OK;
}

/* Float weights w in the model's layout (OHWI / [1,H,W,O] / [O,I]) into
 * fw in OIHW, as kernels/conv-f32.h reads them. */
static void pack_oihw(const struct conv *k, const float *w, float *fw)
{
    size_t wic = k->kind == K_DW ? 1 : k->ic;
    for (size_t oc = 0; oc < k->oc; oc++)
        for (size_t ic = 0; ic < wic; ic++)
            for (size_t ky = 0; ky < k->kh; ky++)
                for (size_t kx = 0; kx < k->kw; kx++) {
                    size_t src = k->kind == K_DW
                                     ? (ky * k->kw + kx) * k->oc + oc
                                     : ((oc * k->kh + ky) * k->kw + kx) * wic + ic;
                    fw[((oc * wic + ic) * k->kh + ky) * k->kw + kx] = w[src];
                }
}

/* n images of hw pixels x c channels: NHWC <-> NCHW. */
static void to_nchw(const float *x, size_t n, size_t hw, size_t c, float *y)
{
    for (size_t b = 0; b < n; b++)
        for (size_t p = 0; p < hw; p++)
            for (size_t ch = 0; ch < c; ch++)
                y[(b * c + ch) * hw + p] = x[(b * hw + p) * c + ch];
}

static void to_nhwc(const float *x, size_t n, size_t hw, size_t c, int act,
                    float *y)
{
    for (size_t b = 0; b < n; b++)
        for (size_t p = 0; p < hw; p++)
            for (size_t ch = 0; ch < c; ch++)
                y[(b * hw + p) * c + ch] =
                    qp_tfl_act_f32(act, x[(b * c + ch) * hw + p]);
}

/* w: NULL for the prepared weights, else weights in the model's layout
 * (packed here); b: the bias [oc]. */
static enum qp_status run_f32(const struct qp_op_ctx *c, const struct conv *k,
                              int act, const float *x, const float *w,
                              const float *b, float *y, struct qp_error *err)
{
    size_t hw = k->h * k->w, ohw = k->oh * k->ow;
    size_t nx = k->n * hw * k->ic, ny = k->n * ohw * k->oc;
    size_t ns = qp_conv_f32_scratch_size(&k->fg), nw = w ? weight_count(k) : 0;
    float *buf = qp_op_scratch(c, (nx + ny + ns + nw + 16) * sizeof(float));
    if (!buf)
        return qp_op_fail(err, c, QP_E_NOMEM, "out of memory");
    bool flat = k->kind == K_FC || (hw == 1 && ohw == 1);
    float *xc = flat ? (float *)x : buf, *yc = buf + nx, *fw = k->fw;
    if (!flat)
        to_nchw(x, k->n, hw, k->ic, xc);
    if (w)
        pack_oihw(k, w, fw = yc + ny + ns);
    qp_conv_f32(c->pool, &k->fg, xc, fw, b, yc, yc + ny, NULL);
    to_nhwc(yc, k->n, ohw, k->oc, act, y);
    return QP_OK;
}

/* The x86 epilogue's per-channel terms (ruy_epilogue). */
static enum qp_status ruy_params(struct conv *k, struct qp_error *err)
{
    k->ruy_left = calloc(k->oc, sizeof *k->ruy_left);
    k->ruy_shift = calloc(k->oc, sizeof *k->ruy_shift);
    k->ruy_add = calloc(k->oc, sizeof *k->ruy_add);
    if (!k->ruy_left || !k->ruy_shift || !k->ruy_add)
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    for (size_t c = 0; c < k->oc; c++) {
        int32_t sh = k->shift[c];
        int right = sh < 0 ? -sh : 0;
        k->ruy_left[c] = sh > 0 ? sh : 0;
        k->ruy_shift[c] = 31 + right;
        k->ruy_add[c] = ((int64_t)1 << 30) +
                        (right ? (int64_t)1 << (30 + right) : 0);
    }
    return QP_OK;
}

/* The 8-bit kernels (int8 or uint8 activations and weights). */
static enum qp_status prepare_kernels(struct conv *k, const void *wdata,
                                      struct qp_error *err)
{
    const struct qp_rq *rq = k->ruy ? NULL : &k->rq;
    struct qp_conv_geom g = {k->h, k->w, k->kh, k->kw, k->sh, k->sw, k->dh,
                             k->dw, (size_t)k->pt, (size_t)k->pl, 0, 0};
    /* bottom/right padding so the kernels' output size is TFLite's */
    size_t span_h = (k->oh - 1) * k->sh + (k->kh - 1) * k->dh + 1;
    size_t span_w = (k->ow - 1) * k->sw + (k->kw - 1) * k->dw + 1;
    g.pad_bottom = span_h > k->h + g.pad_top ? span_h - k->h - g.pad_top : 0;
    g.pad_right = span_w > k->w + g.pad_left ? span_w - k->w - g.pad_left : 0;
    int32_t *b32 = calloc(k->oc, sizeof *b32);
    if (!b32)
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    for (size_t c = 0; c < k->oc; c++)
        b32[c] = (int32_t)k->bias[c];
    enum qp_status st;
    if (k->kind == K_CONV) {
        struct qp_conv_s8_params p = {
            QP_CONV_NHWC, g, k->ic, k->oc, 1, k->xt, k->wt, k->x_zp, k->w_zp,
            k->oc, b32, rq, QP_KERN_AUTO, 0};
        st = qp_conv_s8_prepare(&k->k_conv, &p, wdata, err);
        k->have_conv = !st;
    } else if (k->kind == K_DW) {
        struct qp_dw_s8_params p = {g, k->ic, k->dm, k->xt, k->wt, k->x_zp,
                                    k->w_zp, k->oc, b32, rq, QP_KERN_AUTO, 0};
        st = qp_dw_s8_prepare(&k->k_dw, &p, wdata, err);
        k->have_dw = !st;
    } else {
        struct qp_gemm_s8_params p = {k->oc, k->ic, k->xt, k->wt, k->x_zp,
                                      k->w_zp, k->oc, b32, rq, QP_KERN_AUTO, 0};
        st = qp_gemm_s8_prepare(&k->k_gemm, &p, wdata, k->ic, err);
        k->have_gemm = !st;
    }
    free(b32);
    return st;
}

static enum qp_status prepare(struct qp_tfl_node *s, const struct qp_tfl_model *m,
                              const struct qp_tfl_op *op, struct qp_error *err)
{
    enum kind kind = op->builtin == QP_TFL_CONV_2D ? K_CONV
                   : op->builtin == QP_TFL_DEPTHWISE_CONV_2D ? K_DW
                   : op->builtin == QP_TFL_FULLY_CONNECTED ? K_FC : K_TCONV;
    int xi = kind == K_TCONV ? 2 : 0, wi = 1, bi = kind == K_TCONV ? 3 : 2;
    if (op->n_in <= (xi > wi ? xi : wi))
        return qp_tfl_fail(err, m, op, QP_E_FORMAT, "needs an input and a "
                           "weight");
    const struct qp_tfl_tensor *x = &m->tensors[op->in[xi]];
    const struct qp_tfl_tensor *w = &m->tensors[op->in[wi]];
    const struct qp_tdesc *y = &s->out[0];
    if (!w->data)
        return qp_tfl_fail(err, m, op, QP_E_UNSUPPORTED, "weight '%s' is not "
                           "a constant", w->name);
    struct conv *k = calloc(1, sizeof *k);
    if (!k)
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    s->impl = k;
    s->impl_free = conv_free;
    k->kind = kind;
    k->xt = x->dtype;
    k->wt = w->dtype;
    k->flt = x->dtype == QP_DTYPE_F32;
    k->wide = x->dtype == QP_DTYPE_I16;
    bool ok8 = (k->xt == QP_DTYPE_I8 && k->wt == QP_DTYPE_I8) ||
               (k->xt == QP_DTYPE_U8 && k->wt == QP_DTYPE_U8);
    if (!ok8 && !(k->wide && k->wt == QP_DTYPE_I8) &&
        !(k->flt && k->wt == QP_DTYPE_F32))
        return qp_tfl_fail(err, m, op, QP_E_UNSUPPORTED, "input %s with "
                           "weights %s", qp_dtype_name(k->xt),
                           qp_dtype_name(k->wt));
    if (y->dtype != k->xt)
        return qp_tfl_fail(err, m, op, QP_E_UNSUPPORTED, "input %s, output %s",
                           qp_dtype_name(k->xt), qp_dtype_name(y->dtype));
    if (kind == K_FC) {
        if (w->ndim != 2 || s->opt.weights_format != 0)
            return qp_tfl_fail(err, m, op, QP_E_UNSUPPORTED, "weights must be "
                               "[out, in] in the default format");
        k->oc = (size_t)w->shape[0];
        k->ic = (size_t)w->shape[1];
        size_t nx = 1;
        for (int d = 0; d < x->ndim; d++)
            nx *= (size_t)x->shape[d];
        if (!k->ic || nx % k->ic)
            return qp_tfl_fail(err, m, op, QP_E_SHAPE, "input of %zu values "
                               "for %zu weights per output", nx, k->ic);
        k->batch = nx / k->ic;
        if (qp_tdesc_numel(y) != k->batch * k->oc)
            return qp_tfl_fail(err, m, op, QP_E_SHAPE, "output of %zu values "
                               "for %zu x %zu", qp_tdesc_numel(y), k->batch,
                               k->oc);
        k->h = k->w = k->oh = k->ow = k->kh = k->kw = 1;
        k->n = k->batch;
    } else {
        const struct qp_tdesc *img = kind == K_TCONV ? y : &s->in[xi];
        if (x->ndim != 4 || w->ndim != 4 || y->ndim != 4)
            return qp_tfl_fail(err, m, op, QP_E_SHAPE, "expects 4-D input, "
                               "weights and output");
        k->n = (size_t)x->shape[0];
        k->h = (size_t)x->shape[1];
        k->w = (size_t)x->shape[2];
        k->ic = (size_t)x->shape[3];
        k->kh = (size_t)w->shape[1];
        k->kw = (size_t)w->shape[2];
        k->oc = kind == K_DW ? (size_t)w->shape[3] : (size_t)w->shape[0];
        k->sh = (size_t)s->opt.stride_h;
        k->sw = (size_t)s->opt.stride_w;
        k->dh = kind == K_TCONV ? 1 : (size_t)s->opt.dilation_h;
        k->dw = kind == K_TCONV ? 1 : (size_t)s->opt.dilation_w;
        if (s->opt.stride_h < 1 || s->opt.stride_w < 1 || k->dh < 1 ||
            k->dw < 1 || s->opt.dilation_h < 1 || s->opt.dilation_w < 1)
            return qp_tfl_fail(err, m, op, QP_E_FORMAT, "strides and "
                               "dilations must be >= 1");
        int64_t pe, oh, ow;
        /* TRANSPOSE_CONV: padding from the output size */
        oh = qp_tfl_pad(s->opt.padding, img->shape[1], (int64_t)k->kh,
                        (int64_t)k->sh, (int64_t)k->dh, &k->pt, &pe);
        ow = qp_tfl_pad(s->opt.padding, img->shape[2], (int64_t)k->kw,
                        (int64_t)k->sw, (int64_t)k->dw, &k->pl, &pe);
        k->oh = (size_t)y->shape[1];
        k->ow = (size_t)y->shape[2];
        if (!k->oh || !k->ow || !k->h || !k->w || !k->kh || !k->kw)
            return qp_tfl_fail(err, m, op, QP_E_SHAPE, "an empty image or "
                               "window");
        bool fits = kind == K_TCONV ? oh == x->shape[1] && ow == x->shape[2]
                                    : (size_t)oh == k->oh && (size_t)ow == k->ow;
        size_t wic = kind == K_DW ? 1 : (size_t)w->shape[3];
        if (kind == K_DW && w->shape[0] != 1)
            return qp_tfl_fail(err, m, op, QP_E_SHAPE, "depthwise weights "
                               "must be [1, H, W, C]");
        if (!fits || (size_t)y->shape[3] != k->oc ||
            (kind == K_DW ? k->oc % k->ic : wic != k->ic) ||
            (size_t)y->shape[0] != k->n)
            return qp_tfl_fail(err, m, op, QP_E_SHAPE, "input, weight and "
                               "output shapes do not agree");
        k->dm = kind == K_DW ? k->oc / k->ic : 1;
    }
    if (!k->flt) {
        if (!s->qout[0].quant)
            return qp_tfl_fail(err, m, op, QP_E_UNSUPPORTED, "output is not "
                               "quantized");
        if (qp_tfl_act_range(s, s->opt.act, y->dtype, &s->qout[0], err))
            return qp_error_prefix(err, "'%s': ", m->path);
    }
    enum qp_status st = read_bias(k, m, op, bi, err);
    if (st)
        return st;
    size_t wbytes = w->nbytes;
    if (!(k->weights = malloc(wbytes ? wbytes : 1)))
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    memcpy(k->weights, w->data, wbytes);
    if (k->flt)
        return kind == K_TCONV ? QP_OK : prepare_f32(k, err);
    if ((st = requant(k, s, m, op, w, err)))
        return st;
    if (ok8 && kind != K_TCONV) {
        k->ruy = s->flavor == QP_TFL_X86 && (kind == K_CONV || kind == K_FC);
        if (k->ruy && (st = ruy_params(k, err)))
            return st;
        st = prepare_kernels(k, k->weights, err);
        if (st)
            return qp_error_prefix(err, "'%s': operator %d: ", m->path,
                                   s->index);
    }
    return QP_OK;
}

/* ---- the reference loops (16x8, transpose conv, float) --------------------- */

static int64_t load_x(const struct conv *k, const void *x, size_t i)
{
    switch (k->xt) {
    case QP_DTYPE_I8: return ((const int8_t *)x)[i] - k->x_zp;
    case QP_DTYPE_U8: return ((const uint8_t *)x)[i] - k->x_zp;
    default: return ((const int16_t *)x)[i]; /* symmetric int16 */
    }
}

static int64_t load_w(const struct conv *k, size_t i, size_t oc)
{
    if (k->wt == QP_DTYPE_U8)
        return ((const uint8_t *)k->weights)[i] - k->w_zp[oc];
    return ((const int8_t *)k->weights)[i] - (k->w_zp ? k->w_zp[oc] : 0);
}

/* Accumulators of a direct convolution (CONV_2D, DEPTHWISE_CONV_2D,
 * FULLY_CONNECTED) into acc [n][oh][ow][oc]: int64 or, when facc, float
 * with weights fw and bias fb. */
static void direct(const struct conv *k, const void *x, int64_t *acc,
                   float *facc, const float *fw, const float *fb)
{
    size_t wic = k->kind == K_DW ? 1 : k->ic;
    for (size_t b = 0; b < k->n; b++)
        for (size_t oy = 0; oy < k->oh; oy++)
            for (size_t ox = 0; ox < k->ow; ox++)
                for (size_t oc = 0; oc < k->oc; oc++) {
                    int64_t a = 0;
                    double fa = 0;
                    for (size_t ky = 0; ky < k->kh; ky++) {
                        int64_t iy = (int64_t)(oy * k->sh + ky * k->dh) - k->pt;
                        if (iy < 0 || iy >= (int64_t)k->h)
                            continue;
                        for (size_t kx = 0; kx < k->kw; kx++) {
                            int64_t ix = (int64_t)(ox * k->sw + kx * k->dw) - k->pl;
                            if (ix < 0 || ix >= (int64_t)k->w)
                                continue;
                            size_t pix = ((b * k->h + (size_t)iy) * k->w +
                                          (size_t)ix) * k->ic;
                            if (k->kind == K_DW) {
                                size_t xi = pix + oc / k->dm;
                                size_t wi = (ky * k->kw + kx) * k->oc + oc;
                                if (facc)
                                    fa += ((const float *)x)[xi] * fw[wi];
                                else
                                    a += load_x(k, x, xi) * load_w(k, wi, oc);
                                continue;
                            }
                            size_t wrow = ((oc * k->kh + ky) * k->kw + kx) * wic;
                            for (size_t ic = 0; ic < k->ic; ic++) {
                                if (facc)
                                    fa += ((const float *)x)[pix + ic] *
                                          fw[wrow + ic];
                                else
                                    a += load_x(k, x, pix + ic) *
                                         load_w(k, wrow + ic, oc);
                            }
                        }
                    }
                    size_t o = ((b * k->oh + oy) * k->ow + ox) * k->oc + oc;
                    if (facc)
                        facc[o] = (float)fa + fb[oc];
                    else
                        acc[o] = a + k->bias[oc];
                }
}

/* TFLite's scatter form of TRANSPOSE_CONV (reference_integer_ops::
 * TransposeConv): every input pixel adds its products to the outputs its
 * window covers; the bias is added afterwards. */
static void transposed(const struct conv *k, const void *x, int64_t *acc,
                       float *facc, const float *fw, const float *fb)
{
    size_t total = k->n * k->oh * k->ow * k->oc;
    for (size_t i = 0; i < total; i++) {
        if (facc)
            facc[i] = 0;
        else
            acc[i] = 0;
    }
    for (size_t b = 0; b < k->n; b++)
        for (size_t iy = 0; iy < k->h; iy++)
            for (size_t ix = 0; ix < k->w; ix++)
                for (size_t ic = 0; ic < k->ic; ic++) {
                    size_t xi = ((b * k->h + iy) * k->w + ix) * k->ic + ic;
                    int64_t xv = facc ? 0 : load_x(k, x, xi);
                    float fx = facc ? ((const float *)x)[xi] : 0;
                    for (size_t ky = 0; ky < k->kh; ky++) {
                        int64_t oy = (int64_t)(iy * k->sh + ky) - k->pt;
                        if (oy < 0 || oy >= (int64_t)k->oh)
                            continue;
                        for (size_t kx = 0; kx < k->kw; kx++) {
                            int64_t ox = (int64_t)(ix * k->sw + kx) - k->pl;
                            if (ox < 0 || ox >= (int64_t)k->ow)
                                continue;
                            size_t o = ((b * k->oh + (size_t)oy) * k->ow +
                                        (size_t)ox) * k->oc;
                            for (size_t oc = 0; oc < k->oc; oc++) {
                                size_t wi = ((oc * k->kh + ky) * k->kw + kx) *
                                            k->ic + ic;
                                if (facc)
                                    facc[o + oc] += fx * fw[wi];
                                else
                                    acc[o + oc] += xv * load_w(k, wi, oc);
                            }
                        }
                    }
                }
    for (size_t i = 0; i < total; i++) {
        if (facc)
            facc[i] += fb[i % k->oc];
        else
            acc[i] += k->bias[i % k->oc];
    }
}

/* The x86 flavor's requantization of rows x oc int32 accumulators:
 * qp_tfl_ruy_scale in one step, zero point, fused-activation clamp,
 * narrowed to the input's 8-bit type. ruy's two roundings, (x'M + 2^30)
 * >> 31 then (h + 2^(r-1)) >> r, are one floor division: floor((floor(a /
 * 2^31) + c) / 2^r) = floor((a + c 2^31) / 2^(31+r)) for integers, so
 * v = (x'M + 2^30 + 2^(30+r)) >> (31 + r), where the overflow guard of
 * ruy gives the same 2^(31-r) (tests/unit/test-tflite-reader.c compares
 * the two on random values). */
static void ruy_epilogue(const struct conv *k, const struct qp_tfl_node *s,
                         const int32_t *acc, size_t rows, void *out)
{
    size_t oc = k->oc;
    const int64_t lo = s->act_min, hi = s->act_max, zp = k->out_zp;
    /* locals: the byte stores below may alias anything */
    const int32_t *restrict left = k->ruy_left, *restrict sh = k->ruy_shift,
                            *restrict mult = k->mult;
    const int64_t *restrict add = k->ruy_add;
    uint8_t *restrict y = out;
    for (size_t r = 0; r < rows; r++) {
        const int32_t *restrict a = acc + r * oc;
        uint8_t *restrict yr = y + r * oc;
        for (size_t c = 0; c < oc; c++) {
            int32_t xs = (int32_t)((uint32_t)a[c] << left[c]);
            int64_t v = (((int64_t)xs * mult[c] + add[c]) >> sh[c]) + zp;
            v = v < lo ? lo : v > hi ? hi : v;
            yr[c] = (uint8_t)v; /* int8 or uint8: the low byte */
        }
    }
}

/* Input k when it is not the graph's own constant (NULL otherwise or when
 * absent): what a planner hands in place of the prepared weight or bias. */
static const struct qp_tensor *given(const struct qp_op_ctx *c, int k)
{
    const struct qp_tensor *t = qp_op_in(c, k);
    if (!t || k >= c->n->n_in || c->n->in[k] < 0)
        return NULL;
    return t == c->g->values[c->n->in[k]].konst ? NULL : t;
}

static enum qp_status run(const struct qp_op_ctx *c, const struct qp_tfl_node *s,
                          struct qp_tensor *const *out, struct qp_error *err)
{
    const struct conv *k = s->impl;
    const void *x = c->in[k->kind == K_TCONV ? 2 : 0]->data;
    size_t total = qp_tensor_numel(out[0]);
    if (k->have_conv || k->have_dw || k->have_gemm) {
        void *dst = out[0]->data;
        size_t sz = k->have_conv ? qp_conv_s8_scratch_size(&k->k_conv, k->n)
                  : k->have_dw ? qp_dw_s8_scratch_size(&k->k_dw, k->n)
                               : qp_gemm_s8_scratch_size(&k->k_gemm, k->batch);
        size_t accb = k->ruy ? total * sizeof(int32_t) : 0;
        uint8_t *scratch = qp_op_scratch(c, sz + accb + 64);
        if (!scratch)
            return qp_op_fail(err, c, QP_E_NOMEM, "out of memory");
        int32_t *acc = (int32_t *)(void *)(scratch + ((sz + 63) & ~(size_t)63));
        if (k->ruy)
            dst = acc;
        enum qp_status st =
            k->have_conv ? qp_conv_s8_run(&k->k_conv, x, k->n, dst, scratch, err)
            : k->have_dw ? qp_dw_s8_run(&k->k_dw, x, k->n, dst, scratch, err)
            : qp_gemm_s8_run(&k->k_gemm, x, k->batch, k->ic, dst, k->oc,
                             scratch, err);
        if (st || !k->ruy)
            return st;
        ruy_epilogue(k, s, acc, total / k->oc, out[0]->data);
        return QP_OK;
    }
    /* float weights and bias: the model's, or a planner's in their place
     * (fake quantization); tfl_run checked their types and shapes */
    const float *fw = NULL, *fb = k->fbias;
    const struct qp_tensor *tw = given(c, 1);
    const struct qp_tensor *tb = given(c, k->kind == K_TCONV ? 3 : 2);
    if (k->flt && tw)
        fw = tw->data;
    if (k->flt && tb)
        fb = tb->data;
    if (k->f32k)
        return run_f32(c, k, s->opt.act, x, fw, fb, out[0]->data, err);
    if (!fw)
        fw = k->weights;
    void *buf = qp_op_scratch(c, total * (k->flt ? sizeof(float)
                                                 : sizeof(int64_t)));
    if (!buf)
        return qp_op_fail(err, c, QP_E_NOMEM, "out of memory");
    int64_t *acc = k->flt ? NULL : buf;
    float *facc = k->flt ? buf : NULL;
    if (k->kind == K_TCONV)
        transposed(k, x, acc, facc, fw, fb);
    else
        direct(k, x, acc, facc, fw, fb);
    if (k->flt) {
        for (size_t i = 0; i < total; i++)
            ((float *)out[0]->data)[i] = qp_tfl_act_f32(s->opt.act, facc[i]);
        return QP_OK;
    }
    qp_rq_apply_i64(&k->rq, acc, total / k->oc, k->oc, out[0]->data);
    return QP_OK;
}

const struct qp_tfl_impl qp_tfl_impls_conv[] = {
    {QP_TFL_CONV_2D, prepare, run},
    {QP_TFL_DEPTHWISE_CONV_2D, prepare, run},
    {QP_TFL_FULLY_CONNECTED, prepare, run},
    {QP_TFL_TRANSPOSE_CONV, prepare, run},
    {-1, NULL, NULL},
};
