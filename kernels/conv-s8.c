/* kernels/conv-s8.c: the convolution driver (kernels/conv-s8.h). Three
 * ways to compute the same bytes as kernels/ref/conv-s8.c:
 *
 *   depthwise  groups == IC with one input channel per group: the
 *              depthwise kernel (kernels/depthwise-s8.c)
 *   gemm       otherwise, when a GEMM micro-kernel is available and the
 *              input zero point is a value of the input dtype: per group,
 *              im2col of a block of output pixels ([pixels][KH*KW*IC/g],
 *              padded taps filled with the zero point, so they contribute
 *              (zp - zp) * w = 0 exactly as a skipped tap) times the
 *              group's packed OHWI filter; 1x1 stride-1 unpadded
 *              convolutions read the NHWC input as the GEMM's A directly
 *   nchw       NCHW with one group, on the 1-byte micro-kernels: the
 *              weights times packed input columns, straight from NCHW to
 *              NCHW (kernels/conv-s8-nchw.h); NCHW depthwise runs the
 *              depthwise pixel kernel along rows of each plane
 *              (kernels/depthwise-s8-nchw.h)
 *   ref        the reference, when none applies
 *
 * NCHW runs the same paths on an NHWC copy of the input (and an OHWI copy
 * of the filter) and transposes the output back. */
#include "kernels/conv-s8.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/parallel.h"
#include "core/size.h"
#include "kernels/conv-s8-nchw.h"
#include "kernels/depthwise-s8-nchw.h"
#include "kernels/depthwise-s8.h"
#include "kernels/gemm-s8-ukernel.h"
#include "kernels/gemm-s8.h"
#include "kernels/kern-util.h"

enum { CONV_REF = 0, CONV_GEMM, CONV_DEPTHWISE, CONV_NCHW };

#define ALIGN 64

static size_t round_up(size_t x, size_t a)
{
    return (x + a - 1) / a * a;
}

static char *align_ptr(void *p)
{
    return (char *)(((uintptr_t)p + ALIGN - 1) & ~(uintptr_t)(ALIGN - 1));
}

void qp_conv_s8_release(struct qp_conv_s8 *c)
{
    if (c->gemm)
        for (size_t i = 0; i < c->p.groups; i++)
            qp_gemm_s8_release(&c->gemm[i]);
    free(c->gemm);
    if (c->dw)
        qp_dw_s8_release(c->dw);
    free(c->dw);
    if (c->nchw)
        qp_conv_s8_nchw_release(c->nchw);
    free(c->nchw);
    free(c->filter);
    free(c->bias);
    free(c->filter_zp);
    memset(c, 0, sizeof *c);
}

const char *qp_conv_s8_variant(const struct qp_conv_s8 *c, char *buf,
                               size_t size)
{
    if (c->mode == CONV_GEMM)
        snprintf(buf, size, "gemm/%s", qp_gemm_s8_variant(&c->gemm[0]));
    else if (c->mode == CONV_DEPTHWISE)
        snprintf(buf, size, "depthwise/%s", qp_dw_s8_variant(c->dw));
    else if (c->mode == CONV_NCHW)
        snprintf(buf, size, "nchw/%s", c->nchw->uk->name);
    else
        snprintf(buf, size, "ref");
    return buf;
}

static bool zp_fits(enum qp_dtype dt, int32_t zp)
{
    return dt == QP_DTYPE_I8 ? zp >= -128 && zp <= 127 : zp >= 0 && zp <= 255;
}

/* 1x1, stride 1, no padding, one group: the NHWC input is the GEMM's A */
static bool conv_direct(const struct qp_conv_s8 *c)
{
    const struct qp_conv_geom *g = &c->p.geom;
    return c->p.groups == 1 && g->kernel_h == 1 && g->kernel_w == 1 &&
           g->stride_h == 1 && g->stride_w == 1 && !g->pad_top &&
           !g->pad_left && !g->pad_bottom && !g->pad_right;
}

static enum qp_status prepare_depthwise(struct qp_conv_s8 *c,
                                        struct qp_error *err)
{
    /* OHWI [OC][KH][KW][1] and OIHW [OC][1][KH][KW] are both [OC][taps];
     * the depthwise kernel wants [taps][OC] */
    size_t taps = c->p.geom.kernel_h * c->p.geom.kernel_w, oc_n = c->p.out_c;
    uint8_t *f = malloc(taps * oc_n);
    c->dw = calloc(1, sizeof *c->dw);
    if (!f || !c->dw) {
        free(f);
        return qp_fail(err, QP_E_NOMEM, "conv: out of memory");
    }
    for (size_t oc = 0; oc < oc_n; oc++)
        for (size_t t = 0; t < taps; t++)
            f[t * oc_n + oc] = c->filter[oc * taps + t];
    struct qp_dw_s8_params d = {
        .geom = c->p.geom, .in_c = c->p.in_c, .depth_multiplier = c->ocg,
        .in_dtype = c->p.in_dtype, .filter_dtype = c->p.filter_dtype,
        .input_zero_point = c->p.input_zero_point,
        .filter_zero_point = c->filter_zp, .filter_zero_points = oc_n,
        .bias = c->bias, .rq = c->p.rq, .isa = c->p.isa,
        .threads = c->threads};
    enum qp_status st = qp_dw_s8_prepare(c->dw, &d, f, err);
    free(f);
    if (st) {
        free(c->dw);
        c->dw = NULL;
    }
    return st;
}

static enum qp_status prepare_gemm(struct qp_conv_s8 *c, struct qp_error *err)
{
    size_t taps = c->p.geom.kernel_h * c->p.geom.kernel_w;
    const uint8_t *f = c->filter;
    uint8_t *ohwi = NULL;
    if (c->p.layout == QP_CONV_NCHW) { /* OIHW -> OHWI */
        ohwi = malloc(c->p.out_c * c->kg);
        if (!ohwi)
            return qp_fail(err, QP_E_NOMEM, "conv: out of memory");
        for (size_t oc = 0; oc < c->p.out_c; oc++)
            for (size_t ic = 0; ic < c->icg; ic++)
                for (size_t t = 0; t < taps; t++)
                    ohwi[oc * c->kg + t * c->icg + ic] =
                        f[oc * c->kg + ic * taps + t];
        f = ohwi;
    }
    enum qp_status st = QP_OK;
    c->gemm = calloc(c->p.groups, sizeof *c->gemm);
    if (!c->gemm)
        st = qp_fail(err, QP_E_NOMEM, "conv: out of memory");
    for (size_t gi = 0; !st && gi < c->p.groups; gi++) {
        size_t o0 = gi * c->ocg;
        struct qp_rq slice;
        if (c->p.rq)
            slice = qp_rq_slice(c->p.rq, o0, c->ocg);
        struct qp_gemm_s8_params gp = {
            .n = c->ocg, .k = c->kg, .a_dtype = c->p.in_dtype,
            .b_dtype = c->p.filter_dtype,
            .a_zero_point = c->p.input_zero_point,
            .b_zero_point = c->filter_zp + o0, .b_zero_points = c->ocg,
            .bias = c->bias ? c->bias + o0 : NULL,
            .rq = c->p.rq ? &slice : NULL, .isa = c->p.isa, .threads = 1};
        st = qp_gemm_s8_prepare(&c->gemm[gi], &gp, f + o0 * c->kg, c->kg, err);
    }
    free(ohwi);
    if (!st)
        c->rows = c->gemm[0].mb;
    return st;
}

enum qp_status qp_conv_s8_prepare(struct qp_conv_s8 *c,
                                  const struct qp_conv_s8_params *p,
                                  const void *filter, struct qp_error *err)
{
    memset(c, 0, sizeof *c);
    if ((unsigned)p->layout >= QP_CONV_LAYOUT_COUNT)
        return qp_fail(err, QP_E_INVAL, "conv: unknown layout %d",
                       (int)p->layout);
    if (!p->in_c || !p->out_c || !p->groups || p->in_c % p->groups ||
        p->out_c % p->groups)
        return qp_fail(err, QP_E_INVAL, "conv: %zu groups must divide %zu "
                       "input and %zu output channels", p->groups, p->in_c,
                       p->out_c);
    enum qp_status st = qp_kern_check_quant(
        "conv", p->in_dtype, p->filter_dtype, p->filter_zero_point,
        p->filter_zero_points, p->out_c, p->rq, p->isa, err);
    if (!st)
        st = qp_conv_geom_out(&p->geom, "conv", &c->out_h, &c->out_w, err);
    if (st)
        return st;
    c->icg = p->in_c / p->groups;
    c->ocg = p->out_c / p->groups;
    size_t fbytes;
    if (qp_size_mul(p->geom.kernel_h, p->geom.kernel_w, &c->kg) ||
        qp_size_mul(c->kg, c->icg, &c->kg) ||
        qp_size_mul(c->kg, p->out_c, &fbytes))
        return qp_fail(err, QP_E_OVERFLOW, "conv: filter size overflows");
    bool ok;
    const struct qp_gemm_s8_ukernel *uk = qp_kern_gemm_s8(p->isa, &ok);
    if (!ok)
        return qp_fail(err, QP_E_UNSUPPORTED, "conv: instruction set '%s' is "
                       "not available on this machine",
                       qp_kern_isa_name(p->isa));
    const struct qp_dw_s8_ukernel *dwk = qp_kern_depthwise_s8(p->isa, &ok);

    c->p = *p;
    c->threads = p->threads > 0 ? p->threads : qp_parallel_threads();
    if (p->rq)
        c->rq = *p->rq;
    c->p.rq = p->rq ? &c->rq : NULL;
    c->filter = malloc(fbytes);
    c->filter_zp = qp_kern_expand_zp(p->filter_zero_point,
                                     p->filter_zero_points, p->out_c);
    c->bias = qp_kern_dup_i32(p->bias, p->out_c);
    if (!c->filter || !c->filter_zp || (p->bias && !c->bias)) {
        qp_conv_s8_release(c);
        return qp_fail(err, QP_E_NOMEM, "conv: out of memory");
    }
    memcpy(c->filter, filter, fbytes);
    c->p.filter_zero_point = c->filter_zp;
    c->p.filter_zero_points = p->out_c;
    c->p.bias = c->bias;

    if (c->icg == 1 && p->groups == p->in_c && dwk) {
        c->mode = CONV_DEPTHWISE;
        st = prepare_depthwise(c, err);
    } else if (qp_conv_s8_nchw_fits(c, uk) &&
               zp_fits(p->in_dtype, p->input_zero_point)) {
        c->mode = CONV_NCHW;
        if (!(c->nchw = malloc(sizeof *c->nchw)))
            st = qp_fail(err, QP_E_NOMEM, "conv: out of memory");
        else if ((st = qp_conv_s8_nchw_prepare(c->nchw, c, uk, err))) {
            free(c->nchw);
            c->nchw = NULL;
        }
    } else if (uk && zp_fits(p->in_dtype, p->input_zero_point)) {
        c->mode = CONV_GEMM;
        st = prepare_gemm(c, err);
    }
    if (st)
        qp_conv_s8_release(c);
    return st;
}

/* ---- run ------------------------------------------------------------- */

static size_t out_size(const struct qp_conv_s8 *c)
{
    return qp_kern_out_size(c->p.rq);
}

/* NCHW copies: [input NHWC][output NHWC], per batch */
static size_t nchw_bytes(const struct qp_conv_s8 *c, size_t batch)
{
    if (c->p.layout != QP_CONV_NCHW)
        return 0;
    return round_up(batch * c->p.geom.in_h * c->p.geom.in_w * c->p.in_c,
                    ALIGN) +
           round_up(batch * c->out_h * c->out_w * c->p.out_c * out_size(c),
                    ALIGN);
}

static size_t thread_bytes(const struct qp_conv_s8 *c)
{
    size_t im2col = conv_direct(c) ? 0 : round_up(c->rows * c->kg, ALIGN);
    return im2col + round_up(qp_gemm_s8_thread_scratch(&c->gemm[0]), ALIGN);
}

static int run_threads(const struct qp_conv_s8 *c, size_t batch)
{
    double macs = (double)batch * c->out_h * c->out_w * c->p.out_c * c->kg;
    size_t pixels = batch * c->out_h * c->out_w;
    size_t mr = c->gemm[0].uk->mr; /* threads share whole tiles of pixels */
    if (c->threads <= 1 || macs < (1 << 21) || pixels < 2 * mr)
        return 1;
    return pixels / mr < (size_t)c->threads ? (int)(pixels / mr) : c->threads;
}

/* Depthwise on NCHW planes without transposes (kernels/depthwise-s8-nchw.h). */
static bool dw_nchw(const struct qp_conv_s8 *c)
{
    return c->mode == CONV_DEPTHWISE && c->p.layout == QP_CONV_NCHW &&
           qp_dw_s8_nchw_fits(c->dw);
}

size_t qp_conv_s8_scratch_size(const struct qp_conv_s8 *c, size_t batch)
{
    if (c->mode == CONV_REF)
        return 0;
    if (c->mode == CONV_NCHW)
        return ALIGN + qp_conv_s8_nchw_scratch(c, batch);
    if (dw_nchw(c))
        return ALIGN + qp_dw_s8_nchw_scratch(c->dw, batch);
    size_t s = ALIGN + nchw_bytes(c, batch);
    if (c->mode == CONV_DEPTHWISE)
        return s + qp_dw_s8_scratch_size(c->dw, batch);
    return s + (size_t)run_threads(c, batch) * thread_bytes(c);
}

/* d[0..n) = s[0..n) (v: the byte to fill with, s NULL): the channel
 * counts of first layers (1 to 4) and of narrow ones (8, 16) as
 * fixed-size moves, where a libc call per tap cost more than the bytes it
 * moved */
static inline void put_taps(uint8_t *d, const uint8_t *s, uint8_t v, size_t n)
{
    switch (n) {
    case 1: *d = s ? *s : v; return;
    case 2: if (s) memcpy(d, s, 2); else memset(d, v, 2); return;
    case 3: if (s) memcpy(d, s, 3); else memset(d, v, 3); return;
    case 4: if (s) memcpy(d, s, 4); else memset(d, v, 4); return;
    case 8: if (s) memcpy(d, s, 8); else memset(d, v, 8); return;
    case 16: if (s) memcpy(d, s, 16); else memset(d, v, 16); return;
    default: if (s) memcpy(d, s, n); else memset(d, v, n);
    }
}

/* Rows [r0, r0+n) of the im2col matrix of group gi: [n][KH][KW][IC/g],
 * filled a run of pixels of one output row at a time, tap by tap. */
static void im2col(const struct qp_conv_s8 *c, const uint8_t *in, size_t gi,
                   size_t r0, size_t n, uint8_t *dst)
{
    const struct qp_conv_geom *g = &c->p.geom;
    uint8_t zp = (uint8_t)c->p.input_zero_point;
    size_t icg = c->icg, kg = c->kg, ow = c->out_w;
    for (size_t r = 0; r < n;) {
        size_t pix = r0 + r, ox0 = pix % ow, row = pix / ow;
        size_t oy = row % c->out_h, b = row / c->out_h;
        size_t m = ow - ox0 < n - r ? ow - ox0 : n - r;
        const uint8_t *img = in + b * g->in_h * g->in_w * c->p.in_c + gi * icg;
        uint8_t *d0 = dst + r * kg;
        for (size_t ky = 0; ky < g->kernel_h; ky++) {
            size_t iy = 0;
            bool yin = qp_kern_tap(oy, ky, g->stride_h, g->dilation_h,
                                   g->pad_top, g->in_h, &iy);
            const uint8_t *line = img + iy * g->in_w * c->p.in_c;
            for (size_t kx = 0; kx < g->kernel_w; kx++) {
                uint8_t *d = d0 + (ky * g->kernel_w + kx) * icg;
                for (size_t j = 0; j < m; j++, d += kg) {
                    size_t ix;
                    /* padding: (zp - zp) * w adds nothing */
                    bool in_ = yin && qp_kern_tap(ox0 + j, kx, g->stride_w,
                                                  g->dilation_w, g->pad_left,
                                                  g->in_w, &ix);
                    put_taps(d, in_ ? line + ix * c->p.in_c : NULL, zp, icg);
                }
            }
        }
        r += m;
    }
}

struct run_ctx {
    const struct qp_conv_s8 *c;
    const uint8_t *in; /* NHWC */
    char *out;         /* NHWC */
    char *scratch;     /* per-thread areas */
    size_t pixels;
};

static void run_share(void *arg, int t, int nt)
{
    const struct run_ctx *x = arg;
    const struct qp_conv_s8 *c = x->c;
    size_t es = out_size(c), oc_n = c->p.out_c;
    char *s = x->scratch + (size_t)t * thread_bytes(c);
    bool direct = conv_direct(c);
    uint8_t *cols = (uint8_t *)s;
    void *gs = s + (direct ? 0 : round_up(c->rows * c->kg, ALIGN));
    size_t p0, p1;
    qp_parallel_split(x->pixels, t, nt, c->gemm[0].uk->mr, &p0, &p1);
    for (size_t r = p0; r < p1; r += c->rows) {
        size_t n = p1 - r < c->rows ? p1 - r : c->rows;
        if (direct) {
            qp_gemm_s8_rows(&c->gemm[0], x->in + r * c->p.in_c, n, c->p.in_c,
                            x->out + r * oc_n * es, oc_n, gs);
            continue;
        }
        for (size_t gi = 0; gi < c->p.groups; gi++) {
            im2col(c, x->in, gi, r, n, cols);
            qp_gemm_s8_rows(&c->gemm[gi], cols, n, c->kg,
                            x->out + (r * oc_n + gi * c->ocg) * es, oc_n, gs);
        }
    }
}

/* [rows][cols] -> [cols][rows] of T in tiles that stay in L1 */
#define TRANSPOSE_TILED(T)                                                     \
    do {                                                                       \
        const T *s_ = (const T *)src;                                          \
        T *d_ = (T *)dst;                                                      \
        for (size_t i0 = 0; i0 < rows; i0 += TILE)                             \
            for (size_t j0 = 0; j0 < cols; j0 += TILE) {                       \
                size_t i1 = i0 + TILE < rows ? i0 + TILE : rows;               \
                size_t j1 = j0 + TILE < cols ? j0 + TILE : cols;               \
                for (size_t j = j0; j < j1; j++)                               \
                    for (size_t i = i0; i < i1; i++)                           \
                        d_[j * rows + i] = s_[i * cols + j];                   \
            }                                                                  \
    } while (0)

enum { TILE = 32 };

#if defined(__SSE2__)
#include <emmintrin.h>

/* 16x16 bytes: rows of src (stride ss) become columns of dst (stride ds),
 * by four rounds of interleaving. */
static void transpose16(const uint8_t *src, size_t ss, uint8_t *dst, size_t ds)
{
    __m128i r[16], t[16];
    for (int i = 0; i < 16; i++)
        r[i] = _mm_loadu_si128((const __m128i *)(src + (size_t)i * ss));
    for (int i = 0; i < 8; i++) {
        t[i] = _mm_unpacklo_epi8(r[2 * i], r[2 * i + 1]);
        t[i + 8] = _mm_unpackhi_epi8(r[2 * i], r[2 * i + 1]);
    }
    for (int i = 0; i < 8; i++) {
        r[i] = _mm_unpacklo_epi16(t[2 * i], t[2 * i + 1]);
        r[i + 8] = _mm_unpackhi_epi16(t[2 * i], t[2 * i + 1]);
    }
    for (int i = 0; i < 8; i++) {
        t[i] = _mm_unpacklo_epi32(r[2 * i], r[2 * i + 1]);
        t[i + 8] = _mm_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
    }
    for (int i = 0; i < 8; i++) {
        r[i] = _mm_unpacklo_epi64(t[2 * i], t[2 * i + 1]);
        r[i + 8] = _mm_unpackhi_epi64(t[2 * i], t[2 * i + 1]);
    }
    /* r[k] now holds column c(k) of the block, c = bit-reversal-like order */
    static const int col[16] = {0, 8, 4, 12, 2, 10, 6, 14,
                                1, 9, 5, 13, 3, 11, 7, 15};
    for (int k = 0; k < 16; k++)
        _mm_storeu_si128((__m128i *)(dst + (size_t)col[k] * ds), r[k]);
}
#endif

/* d[j * ds + i] = s[i * ss + j] for i < rows, j < cols. */
static void transpose_u8(const uint8_t *s, size_t ss, uint8_t *d, size_t ds,
                         size_t rows, size_t cols)
{
    size_t i0 = 0, j0 = 0;
#if defined(__SSE2__)
    for (i0 = 0; i0 + 16 <= rows; i0 += 16)
        for (j0 = 0; j0 + 16 <= cols; j0 += 16)
            transpose16(s + i0 * ss + j0, ss, d + j0 * ds + i0, ds);
    /* the edges: columns past the last block, then rows past it */
    size_t jb = cols / 16 * 16, ib = rows / 16 * 16;
    for (size_t i = 0; i < ib; i++)
        for (size_t j = jb; j < cols; j++)
            d[j * ds + i] = s[i * ss + j];
    i0 = ib;
#endif
    (void)j0;
    for (size_t i = i0; i < rows; i++)
        for (size_t j = 0; j < cols; j++)
            d[j * ds + i] = s[i * ss + j];
}

struct transpose_job {
    const uint8_t *src;
    uint8_t *dst;
    size_t rows, cols, blocks; /* blocks of 16 columns per image */
};

/* Column blocks [b0, b1) (of all images) of a byte transpose. */
static void transpose_chunk(void *arg, int t, size_t b0, size_t b1)
{
    const struct transpose_job *j = arg;
    (void)t;
    for (size_t bi = b0; bi < b1;) {
        size_t img = bi / j->blocks, k = bi % j->blocks;
        size_t k1 = k + (b1 - bi) < j->blocks ? k + (b1 - bi) : j->blocks;
        size_t c0 = k * 16, c1 = k1 * 16 < j->cols ? k1 * 16 : j->cols;
        size_t n = j->rows * j->cols;
        transpose_u8(j->src + img * n + c0, j->cols, j->dst + img * n + c0 * j->rows,
                     j->rows, j->rows, c1 - c0);
        bi += k1 - k;
    }
}

/* Bytes a thread needs to pay for its start in a transpose. */
#define TRANSPOSE_THREAD_BYTES (1 << 16)

static void transpose2d(const char *src, char *dst, size_t rows, size_t cols,
                        size_t es)
{
    if (es == 1)
        transpose_u8((const uint8_t *)src, cols, (uint8_t *)dst, rows, rows,
                     cols);
    else if (es == 2)
        TRANSPOSE_TILED(uint16_t);
    else
        TRANSPOSE_TILED(uint32_t);
}

/* [b][c][hw] <-> [b][hw][c], elements of es (1, 2 or 4) bytes; bytes on
 * up to `threads` threads, in chunks of 16 columns */
static void transpose(const char *src, char *dst, size_t batch, size_t rows,
                      size_t cols, size_t es, int threads)
{
    if (es == 1) {
        size_t blocks = (cols + 15) / 16;
        struct transpose_job j = {(const uint8_t *)src, (uint8_t *)dst, rows,
                                  cols, blocks};
        int nt = qp_parallel_threads_for((double)batch * rows * cols,
                                         TRANSPOSE_THREAD_BYTES, threads);
        qp_parallel_chunks(transpose_chunk, &j, batch * blocks,
                           (batch * blocks + (size_t)nt * 4 - 1) / ((size_t)nt * 4),
                           nt);
        return;
    }
    for (size_t b = 0; b < batch; b++)
        transpose2d(src + b * rows * cols * es, dst + b * rows * cols * es, rows,
                    cols, es);
}

enum qp_status qp_conv_s8_run(const struct qp_conv_s8 *c, const void *input,
                              size_t batch, void *output, void *scratch,
                              struct qp_error *err)
{
    if (batch == 0)
        return QP_OK;
    if (c->mode == CONV_REF) {
        qp_conv_s8_ref(&c->p, c->filter, input, batch, output);
        return QP_OK;
    }
    if (!scratch)
        return qp_fail(err, QP_E_INVAL, "conv: no scratch (needs %zu bytes)",
                       qp_conv_s8_scratch_size(c, batch));
    char *s = align_ptr(scratch);
    if (c->mode == CONV_NCHW) {
        qp_conv_s8_nchw_run(c, input, batch, output, s);
        return QP_OK;
    }
    if (dw_nchw(c)) {
        qp_dw_s8_nchw_run(c->dw, input, batch, output, s);
        return QP_OK;
    }
    const uint8_t *in = input;
    char *out = output;
    size_t hw = c->p.geom.in_h * c->p.geom.in_w, ohw = c->out_h * c->out_w;
    if (c->p.layout == QP_CONV_NCHW) {
        transpose(input, s, batch, c->p.in_c, hw, 1, c->threads);
        in = (const uint8_t *)s;
        out = s + round_up(batch * hw * c->p.in_c, ALIGN);
        s += nchw_bytes(c, batch);
    }
    enum qp_status st = QP_OK;
    if (c->mode == CONV_DEPTHWISE) {
        st = qp_dw_s8_run(c->dw, in, batch, out, s, err);
    } else {
        struct run_ctx x = {c, in, out, s, batch * ohw};
        qp_parallel_run(run_share, &x, run_threads(c, batch));
    }
    if (!st && c->p.layout == QP_CONV_NCHW)
        transpose(out, output, batch, ohw, c->p.out_c, out_size(c), c->threads);
    return st;
}
