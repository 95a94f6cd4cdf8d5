/* kernels/ref/pool-s8.c: TFLite's quantized average and max pooling, the
 * reference (kernels/pool-s8.h). */
#include "kernels/pool-s8.h"

#include "kernels/ref/ref-util.h"

static int32_t load(enum qp_dtype dt, const void *p, size_t i)
{
    return dt == QP_DTYPE_I16 ? ((const int16_t *)p)[i]
                              : qp_kern_load8(dt, p, i);
}

static void store(enum qp_dtype dt, void *p, size_t i, int32_t v)
{
    if (dt == QP_DTYPE_I16)
        ((int16_t *)p)[i] = (int16_t)v;
    else if (dt == QP_DTYPE_I8)
        ((int8_t *)p)[i] = (int8_t)v;
    else
        ((uint8_t *)p)[i] = (uint8_t)v;
}

/* The window of output position o along one axis: taps [*k0, *k1). */
static void window(size_t o, size_t stride, size_t pad, size_t kernel,
                   size_t in, size_t *k0, size_t *k1)
{
    size_t origin = o * stride; /* + pad: the window starts at origin - pad */
    *k0 = origin < pad ? pad - origin : 0;
    size_t room = in + pad > origin ? in + pad - origin : 0; /* in - start */
    *k1 = kernel < room ? kernel : room;
}

enum qp_status qp_pool_s8_check(const struct qp_pool_s8_params *p,
                                size_t *out_h, size_t *out_w,
                                struct qp_error *err)
{
    const struct qp_conv_geom *g = &p->geom;
    if ((unsigned)p->kind >= QP_POOL_KIND_COUNT)
        return qp_fail(err, QP_E_INVAL, "pool: unknown kind %d",
                       (int)p->kind);
    if (p->dtype != QP_DTYPE_I8 && p->dtype != QP_DTYPE_U8 &&
        p->dtype != QP_DTYPE_I16)
        return qp_fail(err, QP_E_INVAL, "pool: dtype %s is not int8, uint8 "
                       "or int16", qp_dtype_name(p->dtype));
    if (g->dilation_h != 1 || g->dilation_w != 1 || p->channels == 0)
        return qp_fail(err, QP_E_INVAL, "pool: needs dilation 1 and >= 1 "
                       "channel");
    const struct qp_dtype_traits *t = qp_dtype_traits(p->dtype);
    if (p->act_min > p->act_max || p->act_min < t->min || p->act_max > t->max)
        return qp_fail(err, QP_E_INVAL, "pool: activation range [%d, %d] is "
                       "empty or outside %s", (int)p->act_min,
                       (int)p->act_max, t->name);
    enum qp_status st = qp_conv_geom_out(g, "pool", out_h, out_w, err);
    if (st)
        return st;
    /* the last window along each axis is the emptiest */
    size_t k0, k1, j0, j1;
    window(*out_h - 1, g->stride_h, g->pad_top, g->kernel_h, g->in_h, &k0, &k1);
    window(*out_w - 1, g->stride_w, g->pad_left, g->kernel_w, g->in_w, &j0, &j1);
    size_t f0, f1, e0, e1;
    window(0, g->stride_h, g->pad_top, g->kernel_h, g->in_h, &f0, &f1);
    window(0, g->stride_w, g->pad_left, g->kernel_w, g->in_w, &e0, &e1);
    if (k0 >= k1 || j0 >= j1 || f0 >= f1 || e0 >= e1)
        return qp_fail(err, QP_E_INVAL, "pool: a %zux%zu window lies wholly "
                       "in the padding", g->kernel_h, g->kernel_w);
    return QP_OK;
}

void qp_pool_s8_ref(const struct qp_pool_s8_params *p, const void *input,
                    size_t batch, void *output)
{
    const struct qp_conv_geom *g = &p->geom;
    size_t oh, ow, c_n = p->channels;
    if (qp_pool_s8_check(p, &oh, &ow, NULL))
        return;
    for (size_t b = 0; b < batch; b++)
        for (size_t oy = 0; oy < oh; oy++)
            for (size_t ox = 0; ox < ow; ox++) {
                size_t ky0, ky1, kx0, kx1;
                window(oy, g->stride_h, g->pad_top, g->kernel_h, g->in_h,
                       &ky0, &ky1);
                window(ox, g->stride_w, g->pad_left, g->kernel_w, g->in_w,
                       &kx0, &kx1);
                for (size_t c = 0; c < c_n; c++) {
                    /* int64: TFLite's int32 sum where that cannot
                     * overflow (|v| < 2^15, fewer than 2^16 taps) */
                    int64_t sum = 0, count = 0;
                    int32_t max = INT32_MIN;
                    for (size_t ky = ky0; ky < ky1; ky++)
                        for (size_t kx = kx0; kx < kx1; kx++) {
                            /* the tap is inside the image by construction */
                            size_t iy = oy * g->stride_h + ky - g->pad_top;
                            size_t ix = ox * g->stride_w + kx - g->pad_left;
                            int32_t v = load(p->dtype, input,
                                             ((b * g->in_h + iy) * g->in_w +
                                              ix) * c_n + c);
                            sum += v;
                            max = v > max ? v : max;
                            count++;
                        }
                    int32_t o = max;
                    if (p->kind == QP_POOL_AVG) /* round half away from 0 */
                        o = (int32_t)(sum > 0 ? (sum + count / 2) / count
                                              : (sum - count / 2) / count);
                    o = o < p->act_min ? p->act_min
                                       : o > p->act_max ? p->act_max : o;
                    size_t i = ((b * oh + oy) * ow + ox) * c_n + c;
                    store(p->dtype, output, i, o);
                }
            }
}
