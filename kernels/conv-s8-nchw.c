/* kernels/conv-s8-nchw.c: NCHW convolution as weights x packed columns
 * (kernels/conv-s8-nchw.h). */
#include "kernels/conv-s8-nchw.h"

#include <stdlib.h>
#include <string.h>

#include "core/parallel.h"
#include "kernels/gemm-s8-ukernel.h"
#include "kernels/kern-util.h"
#include "kernels/requant.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#define ALIGN 64
/* Panels of nr pixels packed per block. */
#define BLOCK_PANELS 4
/* Tile rows of a one-pixel output requantized in one call. */
#define ONE_PIXEL_ROWS 64
/* Multiply-accumulates a thread needs to pay for its start. */
#define MIN_THREAD_MACS (1 << 20)
/* Chunks of blocks per thread: threads claim them as they come free. */
#define CHUNKS_PER_THREAD 4

static size_t round_up(size_t x, size_t a)
{
    return (x + a - 1) / a * a;
}

bool qp_conv_s8_nchw_fits(const struct qp_conv_s8 *c,
                          const struct qp_gemm_s8_ukernel *uk)
{
    return uk && c->p.layout == QP_CONV_NCHW && c->p.groups == 1 && c->p.rq &&
           uk->a_elem == 1 && uk->b_elem == 1 && !uk->a_signed && uk->kr == 4 &&
           uk->nr % 16 == 0 && uk->nr <= 64 && c->kg > 0;
}

void qp_conv_s8_nchw_release(struct qp_conv_s8_nchw *d)
{
    free(d->a);
    free(d->r);
    free(d->cf);
    free(d->ones);
    free(d->col_lo);
    free(d->col_hi);
    memset(d, 0, sizeof *d);
}

enum qp_status qp_conv_s8_nchw_prepare(struct qp_conv_s8_nchw *d,
                                       const struct qp_conv_s8 *c,
                                       const struct qp_gemm_s8_ukernel *uk,
                                       struct qp_error *err)
{
    memset(d, 0, sizeof *d);
    size_t oc_n = c->p.out_c, mr = uk->mr;
    d->uk = uk;
    d->k = c->kg;
    d->kp = round_up(d->k, uk->kr);
    d->tiles = (oc_n + mr - 1) / mr;
    d->a = calloc(d->tiles * mr * d->kp, 1);
    d->r = malloc(oc_n * sizeof *d->r);
    d->cf = malloc(oc_n * sizeof *d->cf);
    d->ones = malloc(d->kp);
    size_t kw = c->p.geom.kernel_w;
    d->col_lo = malloc(kw * sizeof *d->col_lo);
    d->col_hi = malloc(kw * sizeof *d->col_hi);
    if (!d->a || !d->r || !d->cf || !d->ones || !d->col_lo || !d->col_hi) {
        qp_conv_s8_nchw_release(d);
        return qp_fail(err, QP_E_NOMEM, "conv: out of memory");
    }
    bool w_signed = c->p.filter_dtype == QP_DTYPE_I8;
    bool x_signed = c->p.in_dtype == QP_DTYPE_I8;
    uint8_t a_flip = w_signed ? 0x80 : 0;
    uint32_t alpha = w_signed ? 128 : 0, beta = x_signed ? 0 : (uint32_t)-128;
    uint32_t kk = (uint32_t)d->k, xzp = (uint32_t)c->p.input_zero_point;
    d->b_flip = x_signed ? 0 : 0x80;
    d->pad = (uint8_t)c->p.input_zero_point ^ d->b_flip;
    d->kbeta = kk * beta;
    for (size_t oc = 0; oc < oc_n; oc++) {
        const uint8_t *w = c->filter + oc * d->k;
        uint8_t *a = d->a + (oc / mr) * mr * d->kp + (oc % mr) * d->kp;
        uint32_t sw = 0, wzp = (uint32_t)c->filter_zp[oc];
        for (size_t k = 0; k < d->k; k++) {
            a[k] = w[k] ^ a_flip;
            sw += (uint32_t)qp_kern_load8(c->p.filter_dtype, w, k);
        }
        uint32_t bias = c->bias ? (uint32_t)c->bias[oc] : 0;
        d->r[oc] = (int32_t)(bias - (beta + xzp) * sw - kk * alpha * beta +
                             kk * xzp * wzp);
        d->cf[oc] = (int32_t)(0u - (alpha + wzp));
    }
    memset(d->ones, 1, d->kp);
    /* output columns reading inside the row: pad_left <= ox*sw + off <
     * pad_left + in_w, off = kx * dilation_w */
    const struct qp_conv_geom *g = &c->p.geom;
    size_t sw = g->stride_w, end = g->pad_left + g->in_w;
    for (size_t kx = 0; kx < kw; kx++) {
        size_t off = kx * g->dilation_w;
        size_t lo = off >= g->pad_left ? 0 : (g->pad_left - off + sw - 1) / sw;
        size_t hi = off >= end ? 0 : (end - off + sw - 1) / sw;
        hi = hi < c->out_w ? hi : c->out_w;
        d->col_lo[kx] = lo < hi ? lo : hi;
        d->col_hi[kx] = hi;
    }
    d->cf_same = true;
    for (size_t oc = 1; oc < oc_n; oc++)
        d->cf_same &= d->cf[oc] == d->cf[0];
    return QP_OK;
}

/* ---- packing the columns ------------------------------------------------ */

/* dst[i] = src[i * step] ^ flip for i < n. */
static void gather_row(const uint8_t *src, size_t step, uint8_t flip,
                       size_t n, uint8_t *dst)
{
    if (step == 1 && !flip) {
        memcpy(dst, src, n);
        return;
    }
    if (step == 1) {
        for (size_t i = 0; i < n; i++)
            dst[i] = src[i] ^ flip;
        return;
    }
    size_t i = 0;
#if defined(__SSE2__)
    if (step == 2) {
        /* the even bytes of 32: the low byte of each 16-bit lane, packed;
         * the last vector's odd byte past src[2 (n - 1)] is never read */
        const __m128i low = _mm_set1_epi16(0xFF), fv = _mm_set1_epi8((char)flip);
        for (; i + 16 < n; i += 16) {
            const __m128i *q = (const __m128i *)(const void *)(src + 2 * i);
            __m128i a = _mm_and_si128(_mm_loadu_si128(q), low);
            __m128i b = _mm_and_si128(_mm_loadu_si128(q + 1), low);
            _mm_storeu_si128((__m128i *)(void *)(dst + i),
                             _mm_xor_si128(_mm_packus_epi16(a, b), fv));
        }
        /* the last 16 from the 32 bytes ending at src[2 (n - 1)]: the
         * high byte of each 16-bit lane, overlapping what is done */
        if (i < n && n >= 17) {
            const __m128i *q = (const __m128i *)(const void *)(src + 2 * n - 33);
            __m128i a = _mm_srli_epi16(_mm_loadu_si128(q), 8);
            __m128i b = _mm_srli_epi16(_mm_loadu_si128(q + 1), 8);
            _mm_storeu_si128((__m128i *)(void *)(dst + n - 16),
                             _mm_xor_si128(_mm_packus_epi16(a, b), fv));
            return;
        }
    }
#endif
    for (; i < n; i++)
        dst[i] = src[i * step] ^ flip;
}

/* memset for the few padding bytes at a row's ends, without a call */
static inline void fill(uint8_t *d, uint8_t v, size_t n)
{
    if (n > 8) {
        memset(d, v, n);
        return;
    }
    for (size_t i = 0; i < n; i++)
        d[i] = v;
}

/* A run of a block's pixels inside one output row. */
struct piece {
    size_t j, oy, ox, len; /* offset in the block, output row, column, pixels */
};

/* Pixels [p0, p0 + n) of an output plane of width ow as pieces of rows
 * (at most n / ow + 2): the divisions once per block, not per row of the
 * im2col matrix. Returns their number. */
static size_t block_pieces(size_t ow, size_t p0, size_t n, struct piece *pc)
{
    size_t np = 0, oy = p0 / ow, ox = p0 % ow;
    for (size_t j = 0; j < n; np++, oy++, ox = 0) {
        size_t len = ow - ox < n - j ? ow - ox : n - j;
        pc[np] = (struct piece){j, oy, ox, len};
        j += len;
    }
    return np;
}

/* Row (ic, ky, kx) of the im2col matrix of image x for the block's
 * pixels (pieces pc[np]), as b bytes, into row. */
static void column_row(const struct qp_conv_s8 *c, const struct qp_conv_s8_nchw *d,
                       const uint8_t *x, size_t ic, size_t ky, size_t kx,
                       const struct piece *pc, size_t np, uint8_t *row)
{
    const struct qp_conv_geom *g = &c->p.geom;
    const uint8_t *plane = x + ic * g->in_h * g->in_w;
    size_t sw = g->stride_w, off = kx * g->dilation_w;
    size_t lo = d->col_lo[kx], hi = d->col_hi[kx];
    for (size_t q = 0; q < np; q++) {
        size_t ox = pc[q].ox, len = pc[q].len, iy;
        uint8_t *dst = row + pc[q].j;
        if (!qp_kern_tap(pc[q].oy, ky, g->stride_h, g->dilation_h, g->pad_top,
                         g->in_h, &iy)) {
            memset(dst, d->pad, len);
            continue;
        }
        size_t a = ox < lo ? lo : ox, b = ox + len < hi ? ox + len : hi;
        if (a >= b) {
            memset(dst, d->pad, len);
            continue;
        }
        fill(dst, d->pad, a - ox);
        gather_row(plane + iy * g->in_w + a * sw + off - g->pad_left, sw,
                   d->b_flip, b - a, dst + (a - ox));
        fill(dst + (b - ox), d->pad, ox + len - b);
    }
}

/* dst[j*4 + i] = r[i][j] for j < n: four rows of bytes interleaved into
 * the micro-kernel's groups of 4. */
static void interleave4(const uint8_t *const *r, size_t n, uint8_t *dst)
{
    size_t j = 0;
#if defined(__SSE2__)
    for (; j + 16 <= n; j += 16) {
        __m128i a = _mm_loadu_si128((const __m128i *)(const void *)(r[0] + j));
        __m128i b = _mm_loadu_si128((const __m128i *)(const void *)(r[1] + j));
        __m128i e = _mm_loadu_si128((const __m128i *)(const void *)(r[2] + j));
        __m128i f = _mm_loadu_si128((const __m128i *)(const void *)(r[3] + j));
        __m128i ab0 = _mm_unpacklo_epi8(a, b), ab1 = _mm_unpackhi_epi8(a, b);
        __m128i ef0 = _mm_unpacklo_epi8(e, f), ef1 = _mm_unpackhi_epi8(e, f);
        __m128i *o = (__m128i *)(void *)(dst + j * 4);
        _mm_storeu_si128(o, _mm_unpacklo_epi16(ab0, ef0));
        _mm_storeu_si128(o + 1, _mm_unpackhi_epi16(ab0, ef0));
        _mm_storeu_si128(o + 2, _mm_unpacklo_epi16(ab1, ef1));
        _mm_storeu_si128(o + 3, _mm_unpackhi_epi16(ab1, ef1));
    }
#endif
    for (; j < n; j++)
        for (size_t i = 0; i < 4; i++)
            dst[j * 4 + i] = r[i][j];
}

/* True when row k of every block is a plain run of the input plane: 1x1,
 * stride 1, no padding. */
static bool direct_rows(const struct qp_conv_s8 *c)
{
    const struct qp_conv_geom *g = &c->p.geom;
    return g->kernel_h == 1 && g->kernel_w == 1 && g->stride_h == 1 &&
           g->stride_w == 1 && !g->pad_top && !g->pad_left &&
           !g->pad_bottom && !g->pad_right;
}

/* Packs the columns of pixels [p0, p0 + n) (n <= BLOCK_PANELS * nr) into
 * panels [kp/4][nr][4], zero past n and past K. rows: scratch of
 * 4 * BLOCK_PANELS * nr bytes. */
static void pack_block(const struct qp_conv_s8 *c,
                       const struct qp_conv_s8_nchw *d, const uint8_t *x,
                       size_t p0, size_t n, uint8_t *panels, uint8_t *rows)
{
    size_t nr = d->uk->nr, w = BLOCK_PANELS * nr, np = (n + nr - 1) / nr;
    const struct qp_conv_geom *g = &c->p.geom;
    size_t plane = g->in_h * g->in_w;
    bool direct = direct_rows(c) && !d->b_flip;
    struct piece pc[BLOCK_PANELS * 64 + 2]; /* nr <= 64 */
    size_t npc = direct ? 0 : block_pieces(c->out_w, p0, n, pc);
    size_t ic = 0, ky = 0, kx = 0; /* of row k, kx fastest (OIHW order) */
    for (size_t k0 = 0; k0 < d->kp; k0 += 4) {
        const uint8_t *r[4];
        for (size_t i = 0; i < 4; i++) {
            size_t k = k0 + i;
            uint8_t *row = rows + i * w;
            if (k >= d->k) {
                memset(row, 0, w);
                r[i] = row;
                continue;
            }
            if (direct) {
                r[i] = x + k * plane + p0;
                continue;
            }
            column_row(c, d, x, ic, ky, kx, pc, npc, row);
            r[i] = row;
            if (++kx == g->kernel_w) {
                kx = 0;
                if (++ky == g->kernel_h) {
                    ky = 0;
                    ic++;
                }
            }
        }
        /* interleave: panel p, group k0/4: [nr][4] */
        for (size_t p = 0; p < np; p++) {
            uint8_t *dst = panels + (p * d->kp + k0) * nr;
            size_t j0 = p * nr, cnt = n - j0 < nr ? n - j0 : nr;
            const uint8_t *rp[4] = {r[0] + j0, r[1] + j0, r[2] + j0, r[3] + j0};
            interleave4(rp, cnt, dst);
            memset(dst + cnt * 4, 0, (nr - cnt) * 4);
        }
    }
}

/* ---- the run ------------------------------------------------------------ */

struct layout {
    size_t panels, rows, sb, cbuf, acc, total; /* byte offsets per thread */
};

static struct layout thread_layout(const struct qp_conv_s8_nchw *d)
{
    size_t nr = d->uk->nr, mr = d->uk->mr, w = BLOCK_PANELS * nr;
    struct layout l;
    l.panels = 0;
    l.rows = round_up(BLOCK_PANELS * d->kp * nr, ALIGN);
    l.sb = l.rows + round_up(4 * w, ALIGN);
    l.cbuf = l.sb + round_up(w * sizeof(int32_t), ALIGN);
    l.acc = l.cbuf + round_up(mr * w * sizeof(int32_t), ALIGN);
    l.total = l.acc + round_up(w * sizeof(int32_t), ALIGN);
    return l;
}

/* Blocks of pixels of a run of batch images. */
static size_t run_blocks(const struct qp_conv_s8 *c, size_t batch)
{
    size_t bw = BLOCK_PANELS * c->nchw->uk->nr;
    return batch * ((c->out_h * c->out_w + bw - 1) / bw);
}

int qp_conv_s8_nchw_threads(const struct qp_conv_s8 *c, size_t batch)
{
    double macs = (double)batch * c->out_h * c->out_w * c->p.out_c * c->kg;
    size_t blocks = run_blocks(c, batch);
    int nt = qp_parallel_threads_for(macs, MIN_THREAD_MACS, c->threads);
    return blocks < (size_t)nt ? (int)blocks : nt;
}

size_t qp_conv_s8_nchw_scratch(const struct qp_conv_s8 *c, size_t batch)
{
    return (size_t)qp_conv_s8_nchw_threads(c, batch) *
           thread_layout(c->nchw).total;
}

struct run_ctx {
    const struct qp_conv_s8 *c;
    const uint8_t *in;
    char *out;
    char *scratch;
    size_t batch, per_image; /* blocks */
};

#if defined(__SSE2__)
/* a * b per 32-bit lane, modulo 2^32 (SSE2 has no pmulld): the low
 * halves of the even and the odd lanes' 64-bit products. */
static inline __m128i mullo32(__m128i a, __m128i b)
{
    __m128i even = _mm_mul_epu32(a, b);
    __m128i odd = _mm_mul_epu32(_mm_srli_epi64(a, 32), _mm_srli_epi64(b, 32));
    return _mm_unpacklo_epi32(_mm_shuffle_epi32(even, _MM_SHUFFLE(0, 0, 2, 0)),
                              _mm_shuffle_epi32(odd, _MM_SHUFFLE(0, 0, 2, 0)));
}
#endif

/* c[j] += r + cf * sx[j] for j < n, modulo 2^32. */
static void add_terms(int32_t *c, size_t n, uint32_t r, uint32_t cf,
                      const int32_t *sx)
{
    size_t j = 0;
#if defined(__SSE2__)
    __m128i rv = _mm_set1_epi32((int32_t)r);
#endif
    if (cf) {
#if defined(__SSE2__)
        __m128i cv = _mm_set1_epi32((int32_t)cf);
        for (; j + 4 <= n; j += 4) {
            __m128i *p = (__m128i *)(void *)(c + j);
            __m128i s = _mm_loadu_si128((const __m128i *)(const void *)(sx + j));
            __m128i t = _mm_add_epi32(_mm_loadu_si128(p), rv);
            _mm_storeu_si128(p, _mm_add_epi32(t, mullo32(s, cv)));
        }
#endif
        for (; j < n; j++)
            c[j] = (int32_t)((uint32_t)c[j] + r + cf * (uint32_t)sx[j]);
        return;
    }
#if defined(__SSE2__)
    for (; j + 4 <= n; j += 4) {
        __m128i *p = (__m128i *)(void *)(c + j);
        _mm_storeu_si128(p, _mm_add_epi32(_mm_loadu_si128(p), rv));
    }
#endif
    for (; j < n; j++)
        c[j] = (int32_t)((uint32_t)c[j] + r);
}

/* Outputs [c0, c0 + rows) of a one-pixel image (rows <= ONE_PIXEL_ROWS)
 * from their accumulators col[rows]: one requantization call across the
 * channels rather than one per channel (the output is contiguous there). */
static void requant_column(const struct qp_rq *rq, size_t c0, size_t rows,
                           const int32_t *col, char *y)
{
    struct qp_rq v = qp_rq_slice(rq, c0, rows);
    qp_rq_apply_i32(&v, col, 1, rows, y);
}

/* One block: pixels [p0, p0 + n) of image b. */
static void run_block(const struct qp_conv_s8 *c, const uint8_t *x, char *y,
                      size_t p0, size_t n, char *s, const struct layout *l)
{
    const struct qp_conv_s8_nchw *d = c->nchw;
    const struct qp_gemm_s8_ukernel *uk = d->uk;
    size_t nr = uk->nr, mr = uk->mr, w = BLOCK_PANELS * nr;
    size_t np = (n + nr - 1) / nr, oc_n = c->p.out_c;
    size_t ohw = c->out_h * c->out_w, es = qp_kern_out_size(c->p.rq);
    uint8_t *panels = (uint8_t *)s + l->panels;
    int32_t *sb = (int32_t *)(void *)(s + l->sb);
    int32_t *cbuf = (int32_t *)(void *)(s + l->cbuf);
    int32_t *acc = (int32_t *)(void *)(s + l->acc);
    static const int32_t zeros[64];
    int32_t col[ONE_PIXEL_ROWS];
    pack_block(c, d, x, p0, n, panels, (uint8_t *)s + l->rows);
    /* Sx of every pixel: the panels times a row of ones, less K*beta; with
     * one C for all channels, C*Sx is every tile's initial value */
    for (size_t p = 0; p < np; p++)
        uk->tile1(d->kp, d->ones, panels + p * d->kp * nr, zeros, sb + p * nr,
                  w);
    uint32_t c0 = d->cf_same ? (uint32_t)d->cf[0] : 0;
    for (size_t j = 0; j < np * nr; j++) {
        sb[j] = (int32_t)((uint32_t)sb[j] - d->kbeta);
        acc[j] = (int32_t)(c0 * (uint32_t)sb[j]);
    }
    for (size_t t = 0; t < d->tiles; t++) {
        const uint8_t *a = d->a + t * mr * d->kp;
        for (size_t p = 0; p < np; p++)
            uk->tile(d->kp, a, panels + p * d->kp * nr, acc + p * nr,
                     cbuf + p * nr, w);
        size_t rows = oc_n - t * mr < mr ? oc_n - t * mr : mr;
        for (size_t r = 0; r < rows; r++) {
            size_t oc = t * mr + r;
            int32_t *cr = cbuf + r * w;
            add_terms(cr, n, (uint32_t)d->r[oc],
                      d->cf_same ? 0 : (uint32_t)d->cf[oc], sb);
            if (ohw > 1 || rows > ONE_PIXEL_ROWS)
                qp_rq_apply_plane(c->p.rq, oc, cr, n, y + (oc * ohw + p0) * es);
            else
                col[r] = cr[0];
        }
        if (ohw == 1 && rows <= ONE_PIXEL_ROWS)
            requant_column(c->p.rq, t * mr, rows, col, y + t * mr * es);
    }
}

/* Blocks [b0, b1) on thread t's scratch. */
static void run_chunk(void *arg, int t, size_t b0, size_t b1)
{
    const struct run_ctx *x = arg;
    const struct qp_conv_s8 *c = x->c;
    struct layout l = thread_layout(c->nchw);
    char *s = x->scratch + (size_t)t * l.total;
    size_t bw = BLOCK_PANELS * c->nchw->uk->nr, ohw = c->out_h * c->out_w;
    size_t in_img = c->p.in_c * c->p.geom.in_h * c->p.geom.in_w;
    size_t out_img = c->p.out_c * ohw * qp_kern_out_size(c->p.rq);
    for (size_t bi = b0; bi < b1; bi++) {
        size_t img = bi / x->per_image, p0 = bi % x->per_image * bw;
        size_t n = ohw - p0 < bw ? ohw - p0 : bw;
        run_block(c, x->in + img * in_img, x->out + img * out_img, p0, n, s, &l);
    }
}

void qp_conv_s8_nchw_run(const struct qp_conv_s8 *c, const uint8_t *input,
                         size_t batch, char *output, char *scratch)
{
    size_t bw = BLOCK_PANELS * c->nchw->uk->nr, ohw = c->out_h * c->out_w;
    struct run_ctx x = {c, input, output, scratch, batch, (ohw + bw - 1) / bw};
    if (ohw == 0)
        return;
    int nt = qp_conv_s8_nchw_threads(c, batch);
    size_t blocks = run_blocks(c, batch);
    size_t chunk = (blocks + (size_t)nt * CHUNKS_PER_THREAD - 1) /
                   ((size_t)nt * CHUNKS_PER_THREAD);
    qp_parallel_chunks(run_chunk, &x, blocks, chunk, nt);
}
