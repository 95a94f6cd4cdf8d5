/* kernels/depthwise-s8-nchw.c: depthwise convolution on NCHW planes
 * (kernels/depthwise-s8-nchw.h). */
#include "kernels/depthwise-s8-nchw.h"

#include <stdlib.h>
#include <string.h>

#include "core/parallel.h"
#include "kernels/depthwise-s8-ukernel.h"
#include "kernels/kern-util.h"

#define ALIGN 64
/* Where planes pay here (below: the NHWC kernel is faster): fewer
 * channels than NCHW_MAX_CHANNELS or planes of NCHW_MIN_AREA pixels, and
 * at least NCHW_MIN_ROWS output rows (measured on PP-OCR's shapes). */
#define NCHW_MAX_CHANNELS 64
#define NCHW_MIN_AREA 2048
#define NCHW_MIN_ROWS 8
/* With the variant's row kernel (no weights repeated along rows): output
 * rows of ROW_MIN_WIDTH pixels and planes of ROW_MIN_ROWS rows; with the
 * VNNI rows (qp_dw_s8_rows4), planes of any height (the classifier's
 * 200 channels of 2 x 96, 5x5: 35 us on the NHWC kernel, 24-30 here). */
#define ROW_MIN_WIDTH 64
#define ROW_MIN_ROWS 3
/* Multiply-accumulates a thread needs to pay for its start. */
#define MIN_THREAD_MACS (1 << 17)
/* Chunks of planes per thread: threads claim them as they come free. */
#define CHUNKS_PER_THREAD 4

static size_t round_up(size_t x, size_t a)
{
    return (x + a - 1) / a * a;
}

/* True when the VNNI rows (qp_dw_s8_rows4) may run dw: this CPU has
 * them, QP_KERNELS and dw's own choice allow AVX-512 VNNI, and taps are
 * consecutive along rows. */
static bool rows4_ok(const struct qp_dw_s8 *dw)
{
#if defined(__x86_64__)
    enum qp_kern_isa isa = dw->p.isa;
    return (isa == QP_KERN_AUTO || isa == QP_KERN_AVX512VNNI) &&
           dw->uk->isa == QP_KERN_AVX512 && dw->p.geom.dilation_w == 1 &&
           qp_kern_isa_allowed(QP_KERN_AVX512VNNI) && qp_dw_s8_rows4_available();
#else
    (void)dw;
    return false;
#endif
}

bool qp_dw_s8_nchw_fits(const struct qp_dw_s8 *dw)
{
    int32_t zp = dw->p.input_zero_point;
    bool fits = dw->p.in_dtype == QP_DTYPE_I8 ? zp >= -128 && zp <= 127
                                              : zp >= 0 && zp <= 255;
    /* with many channels on small planes the NHWC kernel's vectors are
     * full and its per-pixel setup small, while each plane here repeats
     * its weights along a row: the NHWC kernel is faster there,
     * transposes included (measured on PP-OCR's shapes) */
    size_t area = dw->out_h * dw->out_w;
    if (!dw->uk || !dw->p.rq || !dw->out_w || !fits || /* padding is zp */
        dw->p.geom.stride_w != 1)
        return false;
    if (dw->uk->row) /* rows of a few vectors at least */
        return dw->out_w >= ROW_MIN_WIDTH &&
               (dw->out_h >= ROW_MIN_ROWS || rows4_ok(dw));
    return dw->out_h >= NCHW_MIN_ROWS &&
           (dw->out_c < NCHW_MAX_CHANNELS || area >= NCHW_MIN_AREA);
}

/* Per thread: the padded plane, gathered tap rows (stride > 1), the
 * taps' weights repeated along a row, the row's bias and accumulators,
 * and the tap pointers. */
struct layout {
    size_t pw, ph;                          /* padded plane */
    size_t plane, rows, wrep, init, acc, xp, wp, total; /* offsets */
};

static struct layout thread_layout(const struct qp_dw_s8 *dw)
{
    const struct qp_conv_geom *g = &dw->p.geom;
    size_t taps = g->kernel_h * g->kernel_w, ow = dw->out_w;
    struct layout l;
    l.pw = g->in_w + g->pad_left + g->pad_right;
    l.ph = g->in_h + g->pad_top + g->pad_bottom;
    l.plane = 0;
    l.rows = round_up(l.pw * l.ph, ALIGN);
    l.wrep = l.rows + (g->stride_w > 1 ? round_up(taps * ow, ALIGN) : 0);
    l.init = l.wrep + round_up(taps * ow * sizeof(int32_t), ALIGN);
    l.acc = l.init + round_up(ow * sizeof(int32_t), ALIGN);
    /* a whole plane of accumulators: one requantization call per plane */
    l.xp = l.acc + round_up(dw->out_h * ow * sizeof(int32_t), ALIGN);
    l.wp = l.xp + round_up(taps * sizeof(void *), ALIGN);
    l.total = l.wp + round_up(taps * sizeof(void *), ALIGN);
    return l;
}

static int run_threads(const struct qp_dw_s8 *dw, size_t batch)
{
    const struct qp_conv_geom *g = &dw->p.geom;
    double macs = (double)batch * dw->out_h * dw->out_w * dw->out_c *
                  g->kernel_h * g->kernel_w;
    size_t planes = batch * dw->out_c;
    int nt = qp_parallel_threads_for(macs, MIN_THREAD_MACS, dw->threads);
    return planes < (size_t)nt ? (int)planes : nt;
}

size_t qp_dw_s8_nchw_scratch(const struct qp_dw_s8 *dw, size_t batch)
{
    return (size_t)run_threads(dw, batch) * thread_layout(dw).total;
}

/* The padded copy of plane x (H x W) into dst (ph x pw). */
static void pad_plane(const struct qp_dw_s8 *dw, const struct layout *l,
                      const uint8_t *x, uint8_t *dst)
{
    const struct qp_conv_geom *g = &dw->p.geom;
    uint8_t zp = (uint8_t)dw->p.input_zero_point;
    memset(dst, zp, g->pad_top * l->pw);
    for (size_t y = 0; y < g->in_h; y++) {
        uint8_t *d = dst + (g->pad_top + y) * l->pw;
        memset(d, zp, g->pad_left);
        memcpy(d + g->pad_left, x + y * g->in_w, g->in_w);
        memset(d + g->pad_left + g->in_w, zp, g->pad_right);
    }
    memset(dst + (g->pad_top + g->in_h) * l->pw, zp, g->pad_bottom * l->pw);
}

/* The int32 words of a channel's taps packed for qp_dw_s8_rows4: four
 * taps of a kernel row a word. */
static size_t tap_words(const struct qp_conv_geom *g)
{
    return g->kernel_h * ((g->kernel_w + 3) / 4);
}

/* Channel oc's taps as int8 packed four to an int32 per kernel row
 * (qp_dw_s8_rows4) into wq, and their sum; false when a weight (its zero
 * point subtracted) is not an int8. */
static bool pack_taps(const struct qp_dw_s8 *dw, size_t oc, int32_t *wq,
                      uint32_t *sum)
{
    const struct qp_conv_geom *g = &dw->p.geom;
    size_t groups = (g->kernel_w + 3) / 4;
    *sum = 0;
    for (size_t ky = 0; ky < g->kernel_h; ky++)
        for (size_t q = 0; q < groups; q++) {
            uint32_t word = 0;
            for (size_t t = 0; t < 4 && 4 * q + t < g->kernel_w; t++) {
                int32_t w = dw->w[(ky * g->kernel_w + 4 * q + t) * dw->out_c + oc];
                if (w < -128 || w > 127)
                    return false;
                word |= (uint32_t)(uint8_t)(int8_t)w << (8 * t);
                *sum += (uint32_t)w;
            }
            wq[ky * groups + q] = (int32_t)word;
        }
    return true;
}

bool qp_dw_s8_nchw_prepare(struct qp_dw_s8 *dw)
{
    const struct qp_conv_geom *g = &dw->p.geom;
    if (!dw->p.rq || !rows4_ok(dw))
        return true;
    size_t nq = tap_words(g), taps = g->kernel_h * g->kernel_w;
    dw->rows4_w = malloc(dw->out_c * nq * sizeof *dw->rows4_w + 1);
    dw->rows4_init = malloc(dw->out_c * sizeof *dw->rows4_init + 1);
    dw->rows4_ok = malloc(dw->out_c + 1);
    if (!dw->rows4_w || !dw->rows4_init || !dw->rows4_ok)
        return false;
    bool sgn = dw->p.in_dtype == QP_DTYPE_I8;
    for (size_t oc = 0; oc < dw->out_c; oc++) {
        /* sum (x - zp) w = sum x w - zp sum w; int8 input enters as
         * int8 + 128: 128 * sum w less */
        uint32_t start = (uint32_t)dw->bias[oc], wsum;
        for (size_t t = 0; t < taps; t++)
            start -= (uint32_t)dw->p.input_zero_point *
                     (uint32_t)dw->w[t * dw->out_c + oc];
        dw->rows4_ok[oc] = pack_taps(dw, oc, dw->rows4_w + oc * nq, &wsum);
        dw->rows4_init[oc] = (int32_t)(start - (sgn ? 128u * wsum : 0));
    }
    return true;
}

/* Output plane oc of one image from its padded input plane. */
static void run_plane(const struct qp_dw_s8 *dw, const struct layout *l,
                      size_t oc, const uint8_t *pp, char *y, char *s, bool r4)
{
    const struct qp_conv_geom *g = &dw->p.geom;
    size_t taps = g->kernel_h * g->kernel_w, ow = dw->out_w;
    uint8_t *rows = (uint8_t *)s + l->rows;
    int32_t *wrep = (int32_t *)(void *)(s + l->wrep);
    int32_t *init = (int32_t *)(void *)(s + l->init);
    int32_t *acc = (int32_t *)(void *)(s + l->acc);
    const uint8_t **xp = (const uint8_t **)(void *)(s + l->xp);
    const int32_t **wp = (const int32_t **)(void *)(s + l->wp);
    bool sgn = dw->p.in_dtype == QP_DTYPE_I8;
    if (r4 && dw->rows4_ok[oc]) { /* taps packed by qp_dw_s8_nchw_prepare */
        size_t nq = tap_words(g);
        for (size_t oy = 0; oy < dw->out_h; oy++) {
            for (size_t ky = 0; ky < g->kernel_h; ky++)
                xp[ky] = pp + (oy * g->stride_h + ky * g->dilation_h) * l->pw;
            qp_dw_s8_rows4(ow, g->kernel_h, g->kernel_w, xp, l->pw,
                           dw->rows4_w + oc * nq, sgn, dw->rows4_init[oc],
                           acc + oy * ow);
        }
        qp_rq_apply_plane(dw->p.rq, oc, acc, dw->out_h * ow, y);
        return;
    }
    /* the row kernel takes the taps' weights and folds the zero point
     * into its start, sum (x - zp) w = sum x w - zp sum w; the pixel
     * kernel wants them repeated along the row */
    uint32_t start = (uint32_t)dw->bias[oc];
    bool by_row = dw->uk->row != NULL;
    for (size_t t = 0; t < taps; t++) {
        int32_t w = dw->w[t * dw->out_c + oc];
        start -= (uint32_t)dw->p.input_zero_point * (uint32_t)w;
        if (by_row) {
            wrep[t] = w;
            continue;
        }
        for (size_t j = 0; j < ow; j++)
            wrep[t * ow + j] = w;
        wp[t] = wrep + t * ow;
    }
    for (size_t j = 0; !by_row && j < ow; j++)
        init[j] = dw->bias[oc];
    for (size_t oy = 0; oy < dw->out_h; oy++) {
        for (size_t ky = 0; ky < g->kernel_h; ky++) {
            const uint8_t *r = pp + (oy * g->stride_h + ky * g->dilation_h) * l->pw;
            for (size_t kx = 0; kx < g->kernel_w; kx++) {
                size_t t = ky * g->kernel_w + kx, x0 = kx * g->dilation_w;
                if (g->stride_w == 1) {
                    xp[t] = r + x0;
                    continue;
                }
                uint8_t *d = rows + t * ow;
                for (size_t j = 0; j < ow; j++)
                    d[j] = r[x0 + j * g->stride_w];
                xp[t] = d;
            }
        }
        if (by_row)
            dw->uk->row(ow, taps, xp, wrep, sgn, (int32_t)start, acc + oy * ow);
        else
            dw->uk->pixel(ow, taps, xp, wp, sgn, dw->p.input_zero_point, init,
                          acc + oy * ow);
    }
    qp_rq_apply_plane(dw->p.rq, oc, acc, dw->out_h * ow, y);
}

struct run_ctx {
    const struct qp_dw_s8 *dw;
    const uint8_t *in;
    char *out;
    char *scratch;
    size_t batch;
    bool r4; /* rows4_ok */
};

/* Output planes [p0, p1) (of all images) on thread t's scratch. */
static void run_chunk(void *arg, int t, size_t p0, size_t p1)
{
    const struct run_ctx *x = arg;
    const struct qp_dw_s8 *dw = x->dw;
    const struct qp_conv_geom *g = &dw->p.geom;
    struct layout l = thread_layout(dw);
    char *s = x->scratch + (size_t)t * l.total;
    size_t ohw = dw->out_h * dw->out_w, hw = g->in_h * g->in_w;
    size_t es = qp_kern_out_size(dw->p.rq), dm = dw->p.depth_multiplier;
    size_t last = SIZE_MAX;
    for (size_t p = p0; p < p1; p++) {
        size_t b = p / dw->out_c, oc = p % dw->out_c;
        size_t src = b * dw->p.in_c + oc / dm; /* input plane */
        if (src != last)
            pad_plane(dw, &l, x->in + src * hw, (uint8_t *)s + l.plane);
        last = src;
        run_plane(dw, &l, oc, (const uint8_t *)s + l.plane,
                  x->out + p * ohw * es, s, x->r4);
    }
}

void qp_dw_s8_nchw_run(const struct qp_dw_s8 *dw, const uint8_t *input,
                       size_t batch, char *output, char *scratch)
{
    struct run_ctx x = {dw, input, output, scratch, batch,
                        rows4_ok(dw) && dw->rows4_ok};
    if (dw->out_h * dw->out_w == 0)
        return;
    /* chunks of planes that start on a new input plane where they can (a
     * depth multiplier shares one padded plane among its outputs) */
    int nt = run_threads(dw, batch);
    size_t planes = batch * dw->out_c, dm = dw->p.depth_multiplier;
    size_t chunk = (planes + (size_t)nt * CHUNKS_PER_THREAD - 1) /
                   ((size_t)nt * CHUNKS_PER_THREAD);
    chunk = (chunk + dm - 1) / dm * dm;
    qp_parallel_chunks(run_chunk, &x, planes, chunk, nt);
}
