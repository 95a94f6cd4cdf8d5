/* model/op-conv.c: Conv and ConvTranspose (1 to 3 spatial dims, groups,
 * dilations, explicit or automatic padding), f32 through
 * kernels/conv-f32.h. The ONNX rules for padding and output sizes live
 * here, shared with pooling through model/op-conv.h. */
#include "model/op-conv.h"

#include <string.h>

#include "kernels/conv-f32.h"

static const struct qp_attr_spec conv_attrs[] = {
    {"auto_pad", QP_ATTR_STRING},   {"dilations", QP_ATTR_INTS},
    {"group", QP_ATTR_INT},         {"kernel_shape", QP_ATTR_INTS},
    {"pads", QP_ATTR_INTS},         {"strides", QP_ATTR_INTS},
    {"output_padding", QP_ATTR_INTS}, {"output_shape", QP_ATTR_INTS},
    {NULL, 0}};

static enum qp_status ints_attr(const struct qp_op_ctx *c, const char *name,
                                size_t want, int64_t def, int64_t min,
                                int64_t *out, struct qp_error *err)
{
    size_t n;
    const int64_t *v = qp_attr_ints(c->n, name, &n);
    if (v && n != want)
        return qp_op_fail(err, c, QP_E_FORMAT, "'%s' has %zu values, expected "
                          "%zu", name, n, want);
    for (size_t i = 0; i < want; i++) {
        out[i] = v ? v[i] : def;
        if (out[i] < min)
            return qp_op_fail(err, c, QP_E_FORMAT, "'%s' value %lld is below "
                              "%lld", name, (long long)out[i], (long long)min);
    }
    return QP_OK;
}

enum qp_status qp_window_geom(const struct qp_op_ctx *c, const int64_t *in,
                              int nsp, const int64_t *kernel,
                              enum qp_window_kind kind,
                              struct qp_conv_nd *g, struct qp_error *err)
{
    enum qp_status st;
    g->nsp = nsp;
    memcpy(g->kernel, kernel, (size_t)nsp * sizeof *kernel);
    int64_t pads[2 * QP_CONV_MAX_SPATIAL];
    if ((st = ints_attr(c, "strides", (size_t)nsp, 1, 1, g->stride, err)) ||
        (st = ints_attr(c, "dilations", (size_t)nsp, 1, 1, g->dilation, err)) ||
        (st = ints_attr(c, "pads", (size_t)(2 * nsp), 0, 0, pads, err)))
        return st;
    const char *ap = qp_attr_str(c->n, "auto_pad", "NOTSET");
    bool same_upper = !strcmp(ap, "SAME_UPPER"), same_lower = !strcmp(ap, "SAME_LOWER");
    bool valid = !strcmp(ap, "VALID");
    if (!same_upper && !same_lower && !valid && strcmp(ap, "NOTSET"))
        return qp_op_fail(err, c, QP_E_FORMAT, "unknown auto_pad '%s'", ap);
    bool ceil_mode = kind == QP_WINDOW_POOL && qp_attr_int(c->n, "ceil_mode", 0);
    memcpy(g->in, in, (size_t)nsp * sizeof *in);
    for (int i = 0; i < nsp; i++) {
        int64_t span = (kernel[i] - 1) * g->dilation[i] + 1;
        int64_t s = g->stride[i];
        if (same_upper || same_lower) {
            int64_t out = (in[i] + s - 1) / s;
            int64_t total = (out - 1) * s + span - in[i];
            if (total < 0)
                total = 0;
            g->pad[i] = same_upper ? total / 2 : total - total / 2;
            g->pad_end[i] = total - g->pad[i];
            g->out[i] = out;
            continue;
        }
        g->pad[i] = valid ? 0 : pads[i];
        g->pad_end[i] = valid ? 0 : pads[i + nsp];
        int64_t room = in[i] + g->pad[i] + g->pad_end[i] - span;
        if (room < 0)
            return qp_op_fail(err, c, QP_E_SHAPE, "window %lld (dilated) is "
                              "larger than the padded input %lld on spatial "
                              "axis %d", (long long)span,
                              (long long)(in[i] + g->pad[i] + g->pad_end[i]), i);
        g->out[i] = (ceil_mode ? (room + s - 1) / s : room / s) + 1;
    }
    return QP_OK;
}

void qp_conv_nd_to_s8(const struct qp_conv_nd *nd, struct qp_conv_geom *g)
{
    int h = nd->nsp == 2 ? 0 : -1, w = nd->nsp - 1; /* -1: extent 1 */
    *g = (struct qp_conv_geom){
        (size_t)(h < 0 ? 1 : nd->in[h]),       (size_t)nd->in[w],
        (size_t)(h < 0 ? 1 : nd->kernel[h]),   (size_t)nd->kernel[w],
        (size_t)(h < 0 ? 1 : nd->stride[h]),   (size_t)nd->stride[w],
        (size_t)(h < 0 ? 1 : nd->dilation[h]), (size_t)nd->dilation[w],
        (size_t)(h < 0 ? 0 : nd->pad[h]),      (size_t)nd->pad[w],
        (size_t)(h < 0 ? 0 : nd->pad_end[h]),  (size_t)nd->pad_end[w]};
}

/* Spatial rank and kernel shape from the attribute or the weight. */
static enum qp_status conv_kernel(const struct qp_op_ctx *c, int *nsp,
                                  int64_t *kernel, struct qp_error *err)
{
    const struct qp_tensor *x = c->in[0], *w = c->in[1];
    if (x->ndim < 3 || x->ndim > 2 + QP_CONV_MAX_SPATIAL)
        return qp_op_fail(err, c, QP_E_UNSUPPORTED, "input rank %d; 1 to %d "
                          "spatial dims are supported", x->ndim,
                          QP_CONV_MAX_SPATIAL);
    if (w->ndim != x->ndim)
        return qp_op_fail(err, c, QP_E_SHAPE, "weight rank %d differs from the "
                          "input rank %d", w->ndim, x->ndim);
    *nsp = x->ndim - 2;
    size_t n;
    const int64_t *ks = qp_attr_ints(c->n, "kernel_shape", &n);
    for (int i = 0; i < *nsp; i++) {
        kernel[i] = w->shape[2 + i];
        if (ks && (n != (size_t)*nsp || ks[i] != kernel[i]))
            return qp_op_fail(err, c, QP_E_SHAPE, "kernel_shape disagrees with "
                              "the weight's shape");
    }
    return QP_OK;
}

enum qp_status qp_op_conv_geom(const struct qp_op_ctx *c, struct qp_conv_nd *g,
                               struct qp_error *err)
{
    int nsp;
    int64_t kernel[QP_CONV_MAX_SPATIAL];
    enum qp_status st;
    if ((st = qp_op_want_f32(c, 0, err)) || (st = qp_op_want_f32(c, 1, err)) ||
        (st = qp_op_want_f32(c, 2, err)) || (st = conv_kernel(c, &nsp, kernel, err)))
        return st;
    const struct qp_tensor *x = c->in[0], *w = c->in[1], *b = qp_op_in(c, 2);
    int64_t groups = qp_attr_int(c->n, "group", 1);
    int64_t ic = x->shape[1], oc = w->shape[0];
    if (groups < 1 || ic % groups || oc % groups || w->shape[1] * groups != ic)
        return qp_op_fail(err, c, QP_E_SHAPE, "%lld input channels, weight "
                          "[%lld,%lld,...] and group %lld do not agree",
                          (long long)ic, (long long)oc, (long long)w->shape[1],
                          (long long)groups);
    if (b && (b->ndim != 1 || b->shape[0] != oc))
        return qp_op_fail(err, c, QP_E_SHAPE, "bias must have %lld values",
                          (long long)oc);
    g->batch = (size_t)x->shape[0];
    g->in_c = (size_t)ic;
    g->out_c = (size_t)oc;
    g->groups = (size_t)groups;
    return qp_window_geom(c, x->shape + 2, nsp, kernel, QP_WINDOW_CONV, g, err);
}

static void geom_desc(const struct qp_conv_nd *g, size_t channels,
                      struct qp_tdesc *out)
{
    out->dtype = QP_DTYPE_F32;
    out->ndim = 2 + g->nsp;
    out->shape[0] = (int64_t)g->batch;
    out->shape[1] = (int64_t)channels;
    for (int i = 0; i < g->nsp; i++)
        out->shape[2 + i] = g->out[i];
}

/* ---- ConvTranspose ----------------------------------------------------- */

static enum qp_status convt_geom(const struct qp_op_ctx *c,
                                 struct qp_conv_nd *g, struct qp_error *err)
{
    int nsp;
    int64_t kernel[QP_CONV_MAX_SPATIAL], opad[QP_CONV_MAX_SPATIAL];
    int64_t pads[2 * QP_CONV_MAX_SPATIAL];
    enum qp_status st;
    if ((st = qp_op_want_f32(c, 0, err)) || (st = qp_op_want_f32(c, 1, err)) ||
        (st = qp_op_want_f32(c, 2, err)) || (st = conv_kernel(c, &nsp, kernel, err)))
        return st;
    const struct qp_tensor *x = c->in[0], *w = c->in[1], *b = qp_op_in(c, 2);
    int64_t groups = qp_attr_int(c->n, "group", 1);
    int64_t ic = x->shape[1], oc = w->shape[1] * groups;
    if (groups < 1 || ic % groups || w->shape[0] != ic)
        return qp_op_fail(err, c, QP_E_SHAPE, "%lld input channels, weight "
                          "[%lld,%lld,...] and group %lld do not agree",
                          (long long)ic, (long long)w->shape[0],
                          (long long)w->shape[1], (long long)groups);
    if (b && (b->ndim != 1 || b->shape[0] != oc))
        return qp_op_fail(err, c, QP_E_SHAPE, "bias must have %lld values",
                          (long long)oc);
    g->nsp = nsp;
    g->batch = (size_t)x->shape[0];
    g->in_c = (size_t)ic;
    g->out_c = (size_t)oc;
    g->groups = (size_t)groups;
    memcpy(g->kernel, kernel, sizeof kernel);
    memcpy(g->in, x->shape + 2, (size_t)nsp * sizeof(int64_t));
    if ((st = ints_attr(c, "strides", (size_t)nsp, 1, 1, g->stride, err)) ||
        (st = ints_attr(c, "dilations", (size_t)nsp, 1, 1, g->dilation, err)) ||
        (st = ints_attr(c, "pads", (size_t)(2 * nsp), 0, 0, pads, err)) ||
        (st = ints_attr(c, "output_padding", (size_t)nsp, 0, 0, opad, err)))
        return st;
    size_t nos;
    const int64_t *os = qp_attr_ints(c->n, "output_shape", &nos);
    if (os && nos != (size_t)nsp && nos != (size_t)nsp + 2)
        return qp_op_fail(err, c, QP_E_FORMAT, "output_shape has %zu values",
                          nos);
    if (os && nos == (size_t)nsp + 2)
        os += 2;
    const char *ap = qp_attr_str(c->n, "auto_pad", "NOTSET");
    bool same = !strncmp(ap, "SAME_", 5), upper = !strcmp(ap, "SAME_UPPER");
    for (int i = 0; i < nsp; i++) {
        int64_t span = (kernel[i] - 1) * g->dilation[i] + 1;
        int64_t full = g->stride[i] * (g->in[i] - 1) + opad[i] + span;
        if (os || same) {
            int64_t out = os ? os[i] : g->in[i] * g->stride[i];
            int64_t total = full - out;
            if (total < 0)
                total = 0;
            /* ONNX: SAME_UPPER puts the odd unit at the end, anything
             * else (SAME_LOWER, explicit output_shape) at the start */
            g->pad[i] = upper ? total / 2 : total - total / 2;
            g->pad_end[i] = total - g->pad[i];
            g->out[i] = out;
        } else {
            bool valid = !strcmp(ap, "VALID");
            g->pad[i] = valid ? 0 : pads[i];
            g->pad_end[i] = valid ? 0 : pads[i + nsp];
            g->out[i] = full - g->pad[i] - g->pad_end[i];
        }
        if (g->out[i] < 0)
            return qp_op_fail(err, c, QP_E_SHAPE, "negative output size on "
                              "spatial axis %d", i);
    }
    return QP_OK;
}

/* ---- both ---------------------------------------------------------------- */

static bool is_transpose(const struct qp_op_ctx *c)
{
    return !strcmp(c->n->op_type, "ConvTranspose");
}

static enum qp_status any_geom(const struct qp_op_ctx *c, struct qp_conv_nd *g,
                               struct qp_error *err)
{
    return is_transpose(c) ? convt_geom(c, g, err) : qp_op_conv_geom(c, g, err);
}

static enum qp_status conv_infer(const struct qp_op_ctx *c,
                                 struct qp_tdesc *out, struct qp_error *err)
{
    struct qp_conv_nd g;
    enum qp_status st = any_geom(c, &g, err);
    if (!st)
        geom_desc(&g, g.out_c, out);
    return st;
}

static enum qp_status conv_run_into(const struct qp_op_ctx *c,
                                     struct qp_tensor *y,
                                     const struct qp_conv_epilogue *epi,
                                     struct qp_error *err)
{
    struct qp_conv_nd g;
    enum qp_status st = any_geom(c, &g, err);
    if (st)
        return st;
    bool t = is_transpose(c);
    size_t need = t ? qp_conv_transpose_f32_scratch_size(&g)
                    : qp_conv_f32_scratch_size(&g);
    float *scratch = qp_op_scratch(c, (need ? need : 1) * sizeof(float));
    if (!scratch)
        return qp_op_fail(err, c, QP_E_NOMEM, "cannot allocate %zu bytes of "
                          "scratch", need * sizeof(float));
    const struct qp_tensor *b = qp_op_in(c, 2);
    if (t)
        qp_conv_transpose_f32(c->pool, &g, c->in[0]->data, c->in[1]->data,
                              b ? b->data : NULL, y->data, scratch, epi);
    else
        qp_conv_f32(c->pool, &g, c->in[0]->data, c->in[1]->data,
                    b ? b->data : NULL, y->data, scratch, epi);
    return QP_OK;
}

static enum qp_status conv_run(const struct qp_op_ctx *c,
                               struct qp_tensor *const *out,
                               struct qp_error *err)
{
    return conv_run_into(c, out[0], NULL, err);
}

bool qp_op_is_conv(const struct qp_node *n)
{
    return n->def && n->def->run == conv_run;
}

enum qp_status qp_op_conv_run(const struct qp_op_ctx *c, struct qp_tensor *y,
                              const struct qp_conv_epilogue *epi,
                              struct qp_error *err)
{
    return conv_run_into(c, y, epi, err);
}

/* Conv weights are [O, I/group, k...], ConvTranspose's [I, O/group, k...]. */
static bool conv_layout(const struct qp_node *n, enum qp_wlayout *out)
{
    (void)n;
    *out = QP_WLAYOUT_TORCH;
    return true;
}

static bool convt_layout(const struct qp_node *n, enum qp_wlayout *out)
{
    (void)n;
    *out = QP_WLAYOUT_IO;
    return true;
}

/* Every output element: I/group x kernel volume. */
static uint64_t conv_macs(const struct qp_node *n, const struct qp_tdesc *const *in,
                          const struct qp_tdesc *out)
{
    (void)n;
    return qp_tdesc_dims(out, 0, out->ndim) * qp_tdesc_dims(in[1], 1, in[1]->ndim);
}

/* Every input element: O/group x kernel volume. */
static uint64_t convt_macs(const struct qp_node *n, const struct qp_tdesc *const *in,
                           const struct qp_tdesc *out)
{
    (void)n;
    (void)out;
    return qp_tdesc_dims(in[0], 0, in[0]->ndim) *
           qp_tdesc_dims(in[1], 1, in[1]->ndim);
}

const struct qp_op_def qp_ops_conv[] = {
    {"", "Conv", 2, 3, 1, 1, 0, false, false, conv_attrs, NULL, conv_infer,
     conv_run, 0, NULL, conv_layout, conv_macs},
    {"", "ConvTranspose", 2, 3, 1, 1, 0, false, false, conv_attrs, NULL,
     conv_infer, conv_run, 0, NULL, convt_layout, convt_macs},
    {NULL},
};
