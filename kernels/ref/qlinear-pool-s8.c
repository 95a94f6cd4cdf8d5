/* kernels/ref/qlinear-pool-s8.c: ONNX Runtime's QLinearAveragePool and
 * QLinearGlobalAveragePool (kernels/qlinear-s8.h). */
#include "kernels/qlinear-s8.h"

#include <math.h>

#include "kernels/ref/ref-util.h"
#include "kernels/ref/requant-impl.h"
#include "kernels/ref/round-impl.h"

#if FLT_EVAL_METHOD != 0
#error "qlinear-pool: float arithmetic must be evaluated in its own type"
#endif

enum qp_status qp_qlin_gavgpool_ref(enum qp_dtype dt, const void *x,
                                    size_t planes, size_t count,
                                    struct qp_qlin_side sx,
                                    struct qp_qlin_side sy, void *y,
                                    struct qp_error *err)
{
    if (count >= 0x1000000)
        return qp_fail(err, QP_E_INVAL, "global average pool: %zu elements "
                       "per channel (ONNX Runtime takes fewer than 2^24)", count);
    float s = sx.scale / (sy.scale * (float)count);
    if (!(s >= 0x1.0p-32f && s < 256.0f))
        return qp_fail(err, QP_E_INVAL, "global average pool: scale %g outside "
                       "ONNX Runtime's range [2^-32, 256)", (double)s);
    const struct qp_dtype_traits *t = qp_dtype_traits(dt);
    struct qp_rq rq;
    double sd = s;
    enum qp_status st = qp_rq_prepare_float(&rq, QP_RQ_ORT, &sd, 1, sy.zp, dt,
                                            (int32_t)t->min, (int32_t)t->max, err);
    if (st)
        return st;
    int32_t bias = -sx.zp * (int32_t)count;
    for (size_t p0 = 0; p0 < planes; p0 += 256) {
        int32_t acc[256];
        size_t m = planes - p0 < 256 ? planes - p0 : 256;
        for (size_t k = 0; k < m; k++) {
            uint32_t sum = (uint32_t)bias; /* int32 arithmetic */
            for (size_t i = 0; i < count; i++)
                sum += (uint32_t)qp_kern_load8(dt, x, (p0 + k) * count + i);
            acc[k] = (int32_t)sum;
        }
        qp_rq_row_ref(&rq, 0, false, acc, m, (uint8_t *)y + p0);
    }
    qp_rq_release(&rq);
    return QP_OK;
}

enum qp_status qp_qlin_avgpool_ref(const struct qp_qlin_pool *p,
                                   const void *x, size_t planes, void *y,
                                   struct qp_error *err)
{
    const struct qp_conv_geom *g = &p->geom;
    size_t hw = g->in_h * g->in_w;
    if (g->kernel_h == g->in_h && g->kernel_w == g->in_w && !g->pad_top &&
        !g->pad_left && !g->pad_bottom && !g->pad_right)
        return qp_qlin_gavgpool_ref(p->dt, x, planes, hw, p->x, p->y, y, err);
    const struct qp_dtype_traits *t = qp_dtype_traits(p->dt);
    float lut[256]; /* x_scale * (x - x_zp) of every byte */
    for (int b = 0; b < 256; b++) {
        uint8_t byte = (uint8_t)b;
        lut[b] = p->x.scale * (float)(qp_kern_load8(p->dt, &byte, 0) - p->x.zp);
    }
    const uint8_t *in = x;
    uint8_t *out = y;
    for (size_t c = 0; c < planes; c++)
        for (size_t oy = 0; oy < p->out_h; oy++) {
            int64_t h0 = (int64_t)(oy * g->stride_h) - (int64_t)g->pad_top;
            int64_t h1 = h0 + (int64_t)g->kernel_h;
            h1 = h1 < (int64_t)g->in_h ? h1 : (int64_t)g->in_h;
            h0 = h0 > 0 ? h0 : 0;
            for (size_t ox = 0; ox < p->out_w; ox++) {
                int64_t w0 = (int64_t)(ox * g->stride_w) - (int64_t)g->pad_left;
                int64_t w1 = w0 + (int64_t)g->kernel_w;
                w1 = w1 < (int64_t)g->in_w ? w1 : (int64_t)g->in_w;
                w0 = w0 > 0 ? w0 : 0;
                float sum = 0.0f;
                for (int64_t h = h0; h < h1; h++)
                    for (int64_t w = w0; w < w1; w++)
                        sum += lut[in[c * hw + (size_t)h * g->in_w + (size_t)w]];
                int64_t count = p->count_include_pad
                                    ? (int64_t)(g->kernel_h * g->kernel_w)
                                    : (h1 - h0) * (w1 - w0);
                sum /= (float)count;
                float v = qp_round_even_f(sum / p->y.scale + (float)p->y.zp);
                /* static_cast<int32_t> as x86 does it (INT32_MIN when out
                 * of range), then the clamp */
                int32_t q = v >= -2147483648.0f && v < 2147483648.0f
                                ? (int32_t)v : INT32_MIN;
                q = q < t->min ? (int32_t)t->min : q > t->max ? (int32_t)t->max : q;
                size_t o = (c * p->out_h + oy) * p->out_w + ox;
                if (p->dt == QP_DTYPE_I8)
                    ((int8_t *)out)[o] = (int8_t)q;
                else
                    out[o] = (uint8_t)q;
            }
        }
    return QP_OK;
}
