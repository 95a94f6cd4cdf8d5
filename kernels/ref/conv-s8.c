/* kernels/ref/conv-s8.c: the reference 2-D convolution, the specification
 * the GEMM and depthwise paths are tested against (kernels/conv-s8.h).
 * One loop nest serves both layouts: only the index arithmetic differs.
 * Sums are modulo 2^32, in uint32_t. */
#include "kernels/conv-s8.h"
#include "kernels/ref/ref-util.h"

/* Element offsets of the three tensors for one layout. */
struct conv_index {
    enum qp_conv_layout layout;
    size_t h, w, c;        /* input image */
    size_t oh, ow, oc;     /* output image */
    size_t kh, kw, icg;    /* filter */
};

static size_t in_at(const struct conv_index *x, size_t b, size_t y, size_t xx,
                    size_t c)
{
    if (x->layout == QP_CONV_NHWC)
        return ((b * x->h + y) * x->w + xx) * x->c + c;
    return ((b * x->c + c) * x->h + y) * x->w + xx;
}

static size_t out_at(const struct conv_index *x, size_t b, size_t y,
                     size_t xx, size_t c)
{
    if (x->layout == QP_CONV_NHWC)
        return ((b * x->oh + y) * x->ow + xx) * x->oc + c;
    return ((b * x->oc + c) * x->oh + y) * x->ow + xx;
}

static size_t filter_at(const struct conv_index *x, size_t oc, size_t ky,
                        size_t kx, size_t ic)
{
    if (x->layout == QP_CONV_NHWC) /* OHWI */
        return ((oc * x->kh + ky) * x->kw + kx) * x->icg + ic;
    return ((oc * x->icg + ic) * x->kh + ky) * x->kw + kx; /* OIHW */
}

/* acc = bias[oc] + sum over the taps inside the image of
 * (in - in_zp) * (f - f_zp[oc]), for output pixel (b, oy, ox) */
static uint32_t conv_point(const struct qp_conv_s8_params *p,
                           const struct conv_index *x, const void *filter,
                           const void *input, size_t b, size_t oy, size_t ox,
                           size_t oc)
{
    const struct qp_conv_geom *g = &p->geom;
    size_t group = oc / (p->out_c / p->groups);
    uint32_t fzp = (uint32_t)qp_kern_zp(p->filter_zero_point,
                                        p->filter_zero_points, oc);
    uint32_t acc = p->bias ? (uint32_t)p->bias[oc] : 0;
    for (size_t ky = 0; ky < g->kernel_h; ky++) {
        size_t iy, ix; /* taps in the padding add nothing */
        if (!qp_kern_tap(oy, ky, g->stride_h, g->dilation_h, g->pad_top,
                         g->in_h, &iy))
            continue;
        for (size_t kx = 0; kx < g->kernel_w; kx++) {
            if (!qp_kern_tap(ox, kx, g->stride_w, g->dilation_w, g->pad_left,
                             g->in_w, &ix))
                continue;
            for (size_t ic = 0; ic < x->icg; ic++) {
                size_t c = group * x->icg + ic;
                uint32_t v = (uint32_t)qp_kern_load8(p->in_dtype, input,
                                                     in_at(x, b, iy, ix, c));
                uint32_t w = (uint32_t)qp_kern_load8(
                    p->filter_dtype, filter, filter_at(x, oc, ky, kx, ic));
                acc += (v - (uint32_t)p->input_zero_point) * (w - fzp);
            }
        }
    }
    return acc;
}

void qp_conv_s8_ref(const struct qp_conv_s8_params *p, const void *filter,
                    const void *input, size_t batch, void *output)
{
    const struct qp_conv_geom *g = &p->geom;
    size_t oh, ow;
    if (qp_conv_geom_out(g, "conv", &oh, &ow, NULL))
        return;
    struct conv_index x = {p->layout, g->in_h, g->in_w, p->in_c,
                           oh, ow, p->out_c, g->kernel_h, g->kernel_w,
                           p->in_c / p->groups};
    for (size_t b = 0; b < batch; b++)
        for (size_t oy = 0; oy < oh; oy++)
            for (size_t ox = 0; ox < ow; ox++)
                for (size_t oc = 0; oc < p->out_c; oc++) {
                    uint32_t acc = conv_point(p, &x, filter, input, b, oy, ox,
                                              oc);
                    qp_kern_store_out(p->rq, oc, (int32_t)acc, output,
                                      out_at(&x, b, oy, ox, oc));
                }
}
