/* kernels/depthwise-s8.c: the depthwise driver around the SIMD pixel
 * kernels (kernels/depthwise-s8.h). The filter is prepared once as int32
 * (f - f_zp) per tap; a run walks output rows (shared among threads), for
 * every output pixel gathers the taps that fall inside the image and has
 * the pixel kernel sum them over all channels, then requantizes the row.
 * A depth multiplier > 1 first expands the input so that channel oc holds
 * input channel oc / dm. The arithmetic to reproduce is
 * kernels/ref/depthwise-s8.c. */
#include "kernels/depthwise-s8.h"

#include <stdlib.h>
#include <string.h>

#include "core/parallel.h"
#include "core/size.h"
#include "kernels/depthwise-s8-nchw.h"
#include "kernels/depthwise-s8-ukernel.h"
#include "kernels/kern-util.h"

#define ALIGN 64

static size_t round_up(size_t x, size_t a)
{
    return (x + a - 1) / a * a;
}

void qp_dw_s8_release(struct qp_dw_s8 *dw)
{
    free(dw->filter);
    free(dw->bias);
    free(dw->filter_zp);
    free(dw->w);
    free(dw->rows4_w);
    free(dw->rows4_init);
    free(dw->rows4_ok);
    memset(dw, 0, sizeof *dw);
}

const char *qp_dw_s8_variant(const struct qp_dw_s8 *dw)
{
    return dw->uk ? dw->uk->name : "ref";
}

enum qp_status qp_dw_s8_prepare(struct qp_dw_s8 *dw,
                                const struct qp_dw_s8_params *p,
                                const void *filter, struct qp_error *err)
{
    memset(dw, 0, sizeof *dw);
    size_t oc_n, taps, wbytes;
    if (p->in_c == 0 || p->depth_multiplier == 0 ||
        qp_size_mul(p->in_c, p->depth_multiplier, &oc_n))
        return qp_fail(err, QP_E_INVAL, "depthwise: %zu channels x depth "
                       "multiplier %zu is not a channel count", p->in_c,
                       p->depth_multiplier);
    enum qp_status st = qp_kern_check_quant(
        "depthwise", p->in_dtype, p->filter_dtype, p->filter_zero_point,
        p->filter_zero_points, oc_n, p->rq, p->isa, err);
    if (!st)
        st = qp_conv_geom_out(&p->geom, "depthwise", &dw->out_h, &dw->out_w,
                              err);
    if (st)
        return st;
    if (qp_size_mul(p->geom.kernel_h, p->geom.kernel_w, &taps) ||
        qp_size_mul(taps, oc_n, &taps) ||
        qp_size_mul(taps, sizeof(int32_t), &wbytes))
        return qp_fail(err, QP_E_OVERFLOW, "depthwise: filter size overflows");
    bool ok;
    dw->uk = qp_kern_depthwise_s8(p->isa, &ok);
    if (!ok)
        return qp_fail(err, QP_E_UNSUPPORTED, "depthwise: instruction set "
                       "'%s' is not available on this machine",
                       qp_kern_isa_name(p->isa));
    dw->p = *p;
    dw->out_c = oc_n;
    dw->threads = p->threads > 0 ? p->threads : qp_parallel_threads();
    if (p->rq)
        dw->rq = *p->rq;
    dw->p.rq = p->rq ? &dw->rq : NULL;
    dw->filter_zp = qp_kern_expand_zp(p->filter_zero_point,
                                      p->filter_zero_points, oc_n);
    dw->bias = p->bias ? qp_kern_dup_i32(p->bias, oc_n)
                       : calloc(oc_n, sizeof *dw->bias);
    dw->filter = malloc(taps);
    if (dw->uk)
        dw->w = malloc(wbytes);
    if (!dw->filter_zp || !dw->bias || !dw->filter || (dw->uk && !dw->w)) {
        qp_dw_s8_release(dw);
        return qp_fail(err, QP_E_NOMEM, "depthwise: out of memory");
    }
    memcpy(dw->filter, filter, taps);
    dw->p.filter_zero_point = dw->filter_zp;
    dw->p.filter_zero_points = oc_n;
    dw->p.bias = dw->bias;
    if (dw->uk)
        for (size_t i = 0; i < taps; i++)
            dw->w[i] = (int32_t)((uint32_t)qp_kern_load8(p->filter_dtype,
                                                         filter, i) -
                                 (uint32_t)dw->filter_zp[i % oc_n]);
    if (dw->uk && !qp_dw_s8_nchw_prepare(dw)) {
        qp_dw_s8_release(dw);
        return qp_fail(err, QP_E_NOMEM, "depthwise: out of memory");
    }
    return QP_OK;
}

/* Scratch: [expanded input when dm > 1] then per thread an int32 row
 * [OW][OC] and two tap pointer arrays. */
static size_t expand_bytes(const struct qp_dw_s8 *dw, size_t batch)
{
    size_t n;
    if (!dw->uk || dw->p.depth_multiplier == 1)
        return 0;
    if (qp_size_mul(batch, dw->p.geom.in_h, &n) ||
        qp_size_mul(n, dw->p.geom.in_w, &n) ||
        qp_size_mul(n, dw->out_c, &n) || n > SIZE_MAX / 2)
        return SIZE_MAX / 2; /* no allocation will succeed */
    return round_up(n, ALIGN);
}

static size_t thread_bytes(const struct qp_dw_s8 *dw)
{
    size_t taps = dw->p.geom.kernel_h * dw->p.geom.kernel_w;
    return round_up(dw->out_w * dw->out_c * sizeof(int32_t), ALIGN) +
           round_up(taps * (sizeof(void *) * 2), ALIGN);
}

/* Multiply-accumulates a thread needs to pay for its start. */
#define MIN_THREAD_MACS (1 << 17)

static int run_threads(const struct qp_dw_s8 *dw, size_t batch)
{
    double macs = (double)batch * dw->out_h * dw->out_w * dw->out_c *
                  dw->p.geom.kernel_h * dw->p.geom.kernel_w;
    size_t rows = batch * dw->out_h;
    int nt = qp_parallel_threads_for(macs, MIN_THREAD_MACS, dw->threads);
    return rows < (size_t)nt ? (int)rows : nt;
}

size_t qp_dw_s8_scratch_size(const struct qp_dw_s8 *dw, size_t batch)
{
    if (!dw->uk)
        return 0;
    return ALIGN + expand_bytes(dw, batch) +
           (size_t)run_threads(dw, batch) * thread_bytes(dw);
}

struct run_ctx {
    const struct qp_dw_s8 *dw;
    const uint8_t *in; /* [N][H][W][OC] after expansion, else [N][H][W][IC] */
    size_t in_c;       /* channels of in */
    char *out;
    char *scratch;     /* per-thread areas */
    size_t rows;       /* batch * OH */
};

/* Output rows [r0, r1) (of all images) on thread t's scratch. */
static void run_rows(void *arg, int t, size_t r0, size_t r1)
{
    const struct run_ctx *x = arg;
    const struct qp_dw_s8 *dw = x->dw;
    const struct qp_conv_geom *g = &dw->p.geom;
    size_t oc_n = dw->out_c, es = qp_kern_out_size(dw->p.rq);
    char *s = x->scratch + (size_t)t * thread_bytes(dw);
    int32_t *acc = (int32_t *)s;
    const uint8_t **xp = (const uint8_t **)(s + round_up(
        dw->out_w * oc_n * sizeof(int32_t), ALIGN));
    const int32_t **wp = (const int32_t **)(xp + g->kernel_h * g->kernel_w);
    bool sgn = dw->p.in_dtype == QP_DTYPE_I8;
    for (size_t r = r0; r < r1; r++) {
        size_t b = r / dw->out_h, oy = r % dw->out_h;
        for (size_t ox = 0; ox < dw->out_w; ox++) {
            size_t taps = 0;
            for (size_t ky = 0; ky < g->kernel_h; ky++) {
                size_t iy, ix;
                if (!qp_kern_tap(oy, ky, g->stride_h, g->dilation_h,
                                 g->pad_top, g->in_h, &iy))
                    continue;
                for (size_t kx = 0; kx < g->kernel_w; kx++) {
                    if (!qp_kern_tap(ox, kx, g->stride_w, g->dilation_w,
                                     g->pad_left, g->in_w, &ix))
                        continue;
                    xp[taps] = x->in + ((b * g->in_h + iy) * g->in_w + ix) *
                                           x->in_c;
                    wp[taps] = dw->w + (ky * g->kernel_w + kx) * oc_n;
                    taps++;
                }
            }
            dw->uk->pixel(oc_n, taps, xp, wp, sgn, dw->p.input_zero_point,
                          dw->bias, acc + ox * oc_n);
        }
        qp_kern_requant_rows(dw->p.rq, acc, oc_n, dw->out_w, oc_n,
                             x->out + r * dw->out_w * oc_n * es, oc_n);
    }
}

enum qp_status qp_dw_s8_run(const struct qp_dw_s8 *dw, const void *input,
                            size_t batch, void *output, void *scratch,
                            struct qp_error *err)
{
    if (batch == 0)
        return QP_OK;
    if (!dw->uk) {
        qp_dw_s8_ref(&dw->p, dw->filter, input, batch, output);
        return QP_OK;
    }
    if (!scratch)
        return qp_fail(err, QP_E_INVAL, "depthwise: no scratch (needs %zu "
                       "bytes)", qp_dw_s8_scratch_size(dw, batch));
    char *s = (char *)(((uintptr_t)scratch + ALIGN - 1) &
                       ~(uintptr_t)(ALIGN - 1));
    struct run_ctx x = {dw, input, dw->p.in_c, output, s + expand_bytes(dw, batch),
                        batch * dw->out_h};
    if (dw->p.depth_multiplier > 1) { /* channel oc holds input oc / dm */
        uint8_t *e = (uint8_t *)s;
        size_t pixels = batch * dw->p.geom.in_h * dw->p.geom.in_w;
        size_t dm = dw->p.depth_multiplier;
        for (size_t i = 0; i < pixels; i++)
            for (size_t oc = 0; oc < dw->out_c; oc++)
                e[i * dw->out_c + oc] = x.in[i * dw->p.in_c + oc / dm];
        x.in = e;
        x.in_c = dw->out_c;
    }
    int nt = run_threads(dw, batch);
    size_t chunk = (x.rows + (size_t)nt * 4 - 1) / ((size_t)nt * 4);
    qp_parallel_chunks(run_rows, &x, x.rows, chunk, nt); /* 4 per thread */
    return QP_OK;
}
