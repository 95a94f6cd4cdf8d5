/* kernels/ref/conv-geom.c: convolution and pooling geometry: the integer
 * kernels' output size (kernels/conv-s8.h) and the 3-D form of the float
 * kernels' geometry (kernels/ref/conv-geom.h). */
#include "kernels/ref/conv-geom.h"

#include "core/size.h"
#include "kernels/conv-s8.h"

enum qp_status qp_conv_geom_out(const struct qp_conv_geom *g, const char *what,
                                size_t *out_h, size_t *out_w,
                                struct qp_error *err)
{
    if (!g->in_h || !g->in_w || !g->kernel_h || !g->kernel_w)
        return qp_fail(err, QP_E_INVAL, "%s: input %zux%zu and kernel %zux%zu "
                       "must not be empty", what, g->in_h, g->in_w,
                       g->kernel_h, g->kernel_w);
    if (!g->stride_h || !g->stride_w || !g->dilation_h || !g->dilation_w)
        return qp_fail(err, QP_E_INVAL, "%s: stride %zu,%zu and dilation "
                       "%zu,%zu must be >= 1", what, g->stride_h, g->stride_w,
                       g->dilation_h, g->dilation_w);
    size_t eh, ew, ph, pw;
    if (qp_size_mul(g->dilation_h, g->kernel_h - 1, &eh) ||
        qp_size_mul(g->dilation_w, g->kernel_w - 1, &ew) ||
        qp_size_add(g->in_h, g->pad_top, &ph) ||
        qp_size_add(ph, g->pad_bottom, &ph) ||
        qp_size_add(g->in_w, g->pad_left, &pw) ||
        qp_size_add(pw, g->pad_right, &pw))
        return qp_fail(err, QP_E_OVERFLOW, "%s: padded size overflows", what);
    if (eh + 1 > ph || ew + 1 > pw)
        return qp_fail(err, QP_E_INVAL, "%s: dilated kernel %zux%zu is larger "
                       "than the padded input %zux%zu", what, eh + 1, ew + 1,
                       ph, pw);
    *out_h = (ph - eh - 1) / g->stride_h + 1;
    *out_w = (pw - ew - 1) / g->stride_w + 1;
    return QP_OK;
}

void qp_conv3_from_geom(const struct qp_conv_nd *g, struct qp_conv3 *c)
{
    int lead = QP_CONV_MAX_SPATIAL - g->nsp;
    for (int i = 0; i < QP_CONV_MAX_SPATIAL; i++) {
        int j = i - lead;
        bool real = j >= 0;
        c->in[i] = real ? g->in[j] : 1;
        c->out[i] = real ? g->out[j] : 1;
        c->k[i] = real ? g->kernel[j] : 1;
        c->s[i] = real ? g->stride[j] : 1;
        c->d[i] = real ? g->dilation[j] : 1;
        c->p[i] = real ? g->pad[j] : 0;
        c->pe[i] = real ? g->pad_end[j] : 0;
    }
    c->sin = (size_t)(c->in[0] * c->in[1] * c->in[2]);
    c->sout = (size_t)(c->out[0] * c->out[1] * c->out[2]);
    c->kvol = (size_t)(c->k[0] * c->k[1] * c->k[2]);
}

void qp_conv3_range(int64_t n, int64_t s, int64_t off, int64_t len,
                    int64_t *lo, int64_t *hi)
{
    /* i in [0, n) with 0 <= i*s + off < len */
    int64_t a = off >= 0 ? 0 : (-off + s - 1) / s;
    int64_t b = len - 1 - off < 0 ? 0 : (len - 1 - off) / s + 1;
    if (b > n)
        b = n;
    if (a > b)
        a = b;
    *lo = a;
    *hi = b;
}
