/* kernels/ref/depthwise-s8.c: the reference depthwise convolution
 * (kernels/depthwise-s8.h), written as TFLite's DepthwiseConvPerChannel:
 * NHWC input, [1,KH,KW,OC] filter, output channel ic*dm + m. Sums are
 * modulo 2^32, in uint32_t. */
#include "kernels/depthwise-s8.h"
#include "kernels/ref/ref-util.h"

/* acc = bias[oc] + sum over the taps inside the image of
 * (in[..][oc / dm] - in_zp) * (f[0][ky][kx][oc] - f_zp[oc]) */
static uint32_t dw_point(const struct qp_dw_s8_params *p, const void *filter,
                         const void *input, size_t b, size_t oy, size_t ox,
                         size_t oc)
{
    const struct qp_conv_geom *g = &p->geom;
    size_t ic = oc / p->depth_multiplier, oc_n = p->in_c * p->depth_multiplier;
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
            size_t i = ((b * g->in_h + iy) * g->in_w + ix) * p->in_c + ic;
            size_t f = (ky * g->kernel_w + kx) * oc_n + oc;
            uint32_t v = (uint32_t)qp_kern_load8(p->in_dtype, input, i);
            uint32_t w = (uint32_t)qp_kern_load8(p->filter_dtype, filter, f);
            acc += (v - (uint32_t)p->input_zero_point) * (w - fzp);
        }
    }
    return acc;
}

void qp_dw_s8_ref(const struct qp_dw_s8_params *p, const void *filter,
                  const void *input, size_t batch, void *output)
{
    const struct qp_conv_geom *g = &p->geom;
    size_t oh, ow;
    if (qp_conv_geom_out(g, "depthwise", &oh, &ow, NULL))
        return;
    size_t oc_n = p->in_c * p->depth_multiplier;
    for (size_t b = 0; b < batch; b++)
        for (size_t oy = 0; oy < oh; oy++)
            for (size_t ox = 0; ox < ow; ox++)
                for (size_t oc = 0; oc < oc_n; oc++) {
                    uint32_t acc = dw_point(p, filter, input, b, oy, ox, oc);
                    size_t o = ((b * oh + oy) * ow + ox) * oc_n + oc;
                    qp_kern_store_out(p->rq, oc, (int32_t)acc, output, o);
                }
}
