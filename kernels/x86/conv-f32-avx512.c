/* kernels/x86/conv-f32-avx512.c: direct float convolution with AVX-512
 * (kernels/conv-f32-ukernel.h), straight from the NCHW tensors.
 *
 * Output columns go 16 to a vector. The input a vector of outputs reads
 * through one kernel tap is a row segment at stride 1, or the even lanes
 * of two segments at stride 2; masked loads read zeros in the padding, so
 * no padded copy and no im2col are made. The masks and offsets of a group
 * of column vectors depend only on the tap's column (a "column plan"),
 * and are computed once for every row the group covers.
 *
 *  - Depthwise (IC/groups == 1): one channel plane at a time, row band
 *    by row band across the column groups (their plans made once per
 *    call), four interior rows x up to 4 vectors at once (independent
 *    sums), border rows one at a time, the tap weights broadcast.
 *  - Otherwise: tiles of 8 output channels x up to 3 vectors (24 sums in
 *    registers); for each input channel and tap, the vectors are loaded
 *    once and multiplied by 8 broadcast weights (packed per call into
 *    [tap][input channel][8] on layers of 1024+ output positions). A 1x1
 *    convolution with stride 1 and no padding is one long row per plane.
 *
 * Work is split over the pool in units of (image, group, block of output
 * channels, band of rows or columns) sized so a unit's input stays in L2;
 * a unit copies its input into the thread's scratch, with planes a
 * stride apart that does not alias in L1 (see struct band_in), unless it
 * is whole planes that do not alias (read in place), and the
 * epilogue runs on a unit's output as soon as it is done. Every output
 * is the same multiply-adds in the same order whatever the tiling. Strides
 * along W other than 1 and 2, kernels wider than 16, and 3-D convolutions
 * are left to the GEMM path. Transposed convolutions whose kernel equals
 * their stride: kernels/x86/convt-f32-avx512.c. */
#if defined(__x86_64__)
#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "core/parallel.h"
#include "kernels/conv-f32-ukernel.h"
#include "kernels/ref/conv-geom.h"
#include "kernels/x86/convt-f32-avx512.h"

#define MR 8            /* output channels of a tile */
#define NV 3            /* vectors of a tile */
#define DW_NV 4         /* vectors of a depthwise step */
#define KW_MAX 16
#define L2_BUDGET ((size_t)256 << 10) /* input bytes a unit should touch */

/* A plane as the kernels see it: 2-D, rows of W. */
struct geo {
    int64_t H, W, OH, OW, KH, KW, SH, SW, DH, DW, PH, PW;
};

static bool to_geo(const struct qp_conv_nd *g, struct geo *q)
{
    struct qp_conv3 c;
    qp_conv3_from_geom(g, &c);
    if (c.in[0] != 1 || c.out[0] != 1 || c.k[0] != 1)
        return false; /* 3-D */
    *q = (struct geo){c.in[1], c.in[2], c.out[1], c.out[2], c.k[1], c.k[2],
                      c.s[1],  c.s[2],  c.d[1],   c.d[2],   c.p[1], c.p[2]};
    if (q->KW > KW_MAX || (q->SW != 1 && q->SW != 2))
        return false;
    bool pointwise = q->KH == 1 && q->KW == 1 && q->SH == 1 && q->SW == 1 &&
                     q->PH == 0 && q->PW == 0 && q->OH == q->H && q->OW == q->W;
    if (pointwise) { /* one row of H*W */
        q->W = q->OW = q->H * q->W;
        q->H = q->OH = 1;
    }
    return true;
}

/* ---- column plans --------------------------------------------------------- */

/* Lanes j < n (n <= 16) with 0 <= base + j < len. */
static inline __mmask16 span_mask(int64_t base, int64_t len, int64_t n)
{
    int64_t lo = base < 0 ? -base : 0, hi = len - base;
    if (hi > n)
        hi = n;
    if (lo >= hi)
        return 0;
    return (__mmask16)(((1u << hi) - 1) & ~((1u << lo) - 1));
}

/* Up to DW_NV vectors of output columns from ow0, for every tap column:
 * the input offset of lane 0 and the masks of the one (stride 1) or two
 * (stride 2) input vectors; store masks of the output vectors. */
struct colplan {
    int nv;
    int64_t off[KW_MAX][DW_NV];
    __mmask16 m0[KW_MAX][DW_NV], m1[KW_MAX][DW_NV];
    __mmask16 store[DW_NV];
};

static void colplan_init(struct colplan *cp, const struct geo *q, int64_t ow0,
                         int max_nv)
{
    int64_t left = q->OW - ow0;
    cp->nv = (int)((left + 15) / 16 < max_nv ? (left + 15) / 16 : max_nv);
    for (int v = 0; v < cp->nv; v++) {
        int64_t n = left - 16 * v < 16 ? left - 16 * v : 16;
        cp->store[v] = (__mmask16)((1u << n) - 1);
        for (int64_t kw = 0; kw < q->KW; kw++) {
            int64_t base = (ow0 + 16 * v) * q->SW + kw * q->DW - q->PW;
            int64_t span = q->SW == 1 ? n : 2 * n - 1; /* inputs read */
            cp->off[kw][v] = base;
            cp->m0[kw][v] = span_mask(base, q->W, span < 16 ? span : 16);
            cp->m1[kw][v] = span > 16 ? span_mask(base + 16, q->W, span - 16) : 0;
        }
    }
}

/* The input vector of tap column kw for output vector v of row xr. */
/* The kernels below are instantiated per (vectors, stride) constant pair:
 * always inlined, so each copy is specialized. */
#define SPECIALIZED static inline __attribute__((always_inline))

SPECIALIZED __m512 cp_load(const struct colplan *cp, const float *xr, int kw,
                             int v, const int s2)
{
    const float *p = xr + cp->off[kw][v];
    __m512 lo = _mm512_maskz_loadu_ps(cp->m0[kw][v], p);
    if (!s2)
        return lo;
    const __m512i even = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14,
                                          12, 10, 8, 6, 4, 2, 0);
    __m512 hi = _mm512_maskz_loadu_ps(cp->m1[kw][v], p + 16);
    return _mm512_permutex2var_ps(lo, even, hi);
}

/* [*lo, *hi): kernel rows whose input row for output row oh is inside. */
static inline void tap_rows(const struct geo *q, int64_t oh, int64_t *lo,
                            int64_t *hi)
{
    qp_conv3_range(q->KH, q->DH, oh * q->SH - q->PH, q->H, lo, hi);
}

/* ---- depthwise -------------------------------------------------------------- */

/* Output row oh of a plane, the columns of cp (nv vectors). The sums are
 * named variables, not an array: GCC keeps an array of vectors in memory
 * across a loop nest. */
SPECIALIZED void dw_row(const struct geo *q, const struct colplan *cp,
                          const float *x, const float *w, float bias, float *yr,
                          int64_t oh, int64_t ow0, const int nv, const int s2)
{
    __m512 a0 = _mm512_set1_ps(bias), a1 = a0, a2 = a0, a3 = a0;
    int64_t k0, k1;
    tap_rows(q, oh, &k0, &k1);
    for (int64_t kh = k0; kh < k1; kh++) {
        const float *xr = x + (oh * q->SH - q->PH + kh * q->DH) * q->W;
        for (int kw = 0; kw < q->KW; kw++) {
            __m512 wv = _mm512_set1_ps(w[kh * q->KW + kw]);
            a0 = _mm512_fmadd_ps(cp_load(cp, xr, kw, 0, s2), wv, a0);
            if (nv > 1)
                a1 = _mm512_fmadd_ps(cp_load(cp, xr, kw, 1, s2), wv, a1);
            if (nv > 2)
                a2 = _mm512_fmadd_ps(cp_load(cp, xr, kw, 2, s2), wv, a2);
            if (nv > 3)
                a3 = _mm512_fmadd_ps(cp_load(cp, xr, kw, 3, s2), wv, a3);
        }
    }
    _mm512_mask_storeu_ps(yr + ow0, cp->store[0], a0);
    if (nv > 1)
        _mm512_mask_storeu_ps(yr + ow0 + 16, cp->store[1], a1);
    if (nv > 2)
        _mm512_mask_storeu_ps(yr + ow0 + 32, cp->store[2], a2);
    if (nv > 3)
        _mm512_mask_storeu_ps(yr + ow0 + 48, cp->store[3], a3);
}

/* Four output rows oh..oh+3 at once, every tap row of each inside the
 * plane: 4 x nv independent sums (one row's nv sums alone wait on the
 * multiply-add latency), each the same multiply-adds in the same order
 * as dw_row's, so the same bits. */
#define DW_NR 4
#define R_DECL(j) __m512 a##j##0 = b0, a##j##1 = b0, a##j##2 = b0, a##j##3 = b0
#define R_FMA(j)                                                               \
    do {                                                                       \
        const float *xr = x + ((oh + j) * q->SH - q->PH + kh * q->DH) * q->W;  \
        a##j##0 = _mm512_fmadd_ps(cp_load(cp, xr, kw, 0, s2), wv, a##j##0);    \
        if (nv > 1)                                                            \
            a##j##1 = _mm512_fmadd_ps(cp_load(cp, xr, kw, 1, s2), wv, a##j##1); \
        if (nv > 2)                                                            \
            a##j##2 = _mm512_fmadd_ps(cp_load(cp, xr, kw, 2, s2), wv, a##j##2); \
        if (nv > 3)                                                            \
            a##j##3 = _mm512_fmadd_ps(cp_load(cp, xr, kw, 3, s2), wv, a##j##3); \
    } while (0)
#define R_STORE(j)                                                             \
    do {                                                                       \
        float *yr = y + (oh + j) * q->OW + ow0;                                \
        _mm512_mask_storeu_ps(yr, cp->store[0], a##j##0);                      \
        if (nv > 1)                                                            \
            _mm512_mask_storeu_ps(yr + 16, cp->store[1], a##j##1);             \
        if (nv > 2)                                                            \
            _mm512_mask_storeu_ps(yr + 32, cp->store[2], a##j##2);             \
        if (nv > 3)                                                            \
            _mm512_mask_storeu_ps(yr + 48, cp->store[3], a##j##3);             \
    } while (0)

SPECIALIZED void dw_rows4(const struct geo *q, const struct colplan *cp,
                          const float *x, const float *w, float bias, float *y,
                          int64_t oh, int64_t ow0, const int nv, const int s2)
{
    __m512 b0 = _mm512_set1_ps(bias);
    R_DECL(0); R_DECL(1); R_DECL(2); R_DECL(3);
    for (int64_t kh = 0; kh < q->KH; kh++)
        for (int kw = 0; kw < q->KW; kw++) {
            __m512 wv = _mm512_set1_ps(w[kh * q->KW + kw]);
            R_FMA(0); R_FMA(1); R_FMA(2); R_FMA(3);
        }
    R_STORE(0); R_STORE(1); R_STORE(2); R_STORE(3);
}

/* Column plans a depthwise call makes once for all its planes (a plane
 * of at most DW_PLANS * 16 * DW_NV columns; wider ones make them per
 * plane). */
#define DW_PLANS 16

/* dw_rows4 when four, else dw_row, for constant nv and s2. */
SPECIALIZED void dw_rows(const struct geo *q, const struct colplan *cp,
                         const float *x, const float *w, float bias, float *y,
                         int64_t oh, int64_t ow0, bool four, const int nv,
                         const int s2)
{
    if (four)
        dw_rows4(q, cp, x, w, bias, y, oh, ow0, nv, s2);
    else
        dw_row(q, cp, x, w, bias, y + oh * q->OW, oh, ow0, nv, s2);
}

/* Output rows from oh of the columns of cp (ow0 its first): four when
 * they are all in [ia, ib) (every tap row inside), else one. Returns the
 * rows done. */
static int dw_step(const struct geo *q, const struct colplan *cp,
                   const float *x, const float *w, float bias, float *y,
                   int64_t oh, int64_t ow0, int64_t ia, int64_t ib)
{
    bool s2 = q->SW == 2, f = oh >= ia && oh + DW_NR <= ib;
    switch (cp->nv * 2 + s2) {
    case 8: dw_rows(q, cp, x, w, bias, y, oh, ow0, f, 4, 0); break;
    case 9: dw_rows(q, cp, x, w, bias, y, oh, ow0, f, 4, 1); break;
    case 6: dw_rows(q, cp, x, w, bias, y, oh, ow0, f, 3, 0); break;
    case 7: dw_rows(q, cp, x, w, bias, y, oh, ow0, f, 3, 1); break;
    case 4: dw_rows(q, cp, x, w, bias, y, oh, ow0, f, 2, 0); break;
    case 5: dw_rows(q, cp, x, w, bias, y, oh, ow0, f, 2, 1); break;
    case 2: dw_rows(q, cp, x, w, bias, y, oh, ow0, f, 1, 0); break;
    default: dw_rows(q, cp, x, w, bias, y, oh, ow0, f, 1, 1); break;
    }
    return f ? DW_NR : 1;
}

/* One plane; plans: the column plans of its column groups (16 * DW_NV
 * columns each), or NULL to make them here. With plans the plane goes
 * row band by row band across all its columns (input and output stream
 * through once); without, column group by column group. */
static void dw_plane(const struct geo *q, const struct colplan *plans,
                     const float *x, const float *w, float bias, float *y)
{
    int64_t ia, ib; /* output rows whose every tap row is inside */
    qp_conv3_range(q->OH, q->SH, -q->PH, q->H - (q->KH - 1) * q->DH, &ia, &ib);
    int64_t groups = (q->OW + 16 * DW_NV - 1) / (16 * DW_NV);
    if (plans) {
        for (int64_t oh = 0; oh < q->OH;) {
            int done = 1;
            for (int64_t gi = 0; gi < groups; gi++)
                done = dw_step(q, &plans[gi], x, w, bias, y, oh,
                               gi * 16 * DW_NV, ia, ib);
            oh += done;
        }
        return;
    }
    struct colplan own;
    for (int64_t gi = 0; gi < groups; gi++) {
        colplan_init(&own, q, gi * 16 * DW_NV, DW_NV);
        for (int64_t oh = 0; oh < q->OH;)
            oh += dw_step(q, &own, x, w, bias, y, oh, gi * 16 * DW_NV, ia, ib);
    }
}

struct job {
    const struct qp_conv_nd *g;
    struct geo q;
    const float *x, *w, *bias;
    float *y;
    const struct qp_conv_epilogue *epi;
    /* direct: units = batch * groups * chunks * bands */
    size_t chunks, chunk_blocks, bands, band;
    float *scratch;    /* per_thread floats for each thread */
    size_t per_thread;
    size_t blocks;     /* blocks of MR output channels per group */
    const float *wp;   /* packed weights (pack_weights), or NULL */
    /* units (planes for depthwise) go to whichever share asks first */
    struct qp_claim *claim;
};

static void dw_run(void *ctx, int t, int nt)
{
    const struct job *j = ctx;
    const struct qp_conv_nd *g = j->g;
    size_t planes = g->batch * g->out_c, b, e, mult = g->out_c / g->groups;
    size_t sin = (size_t)(j->q.H * j->q.W), sout = (size_t)(j->q.OH * j->q.OW);
    size_t kvol = (size_t)(j->q.KH * j->q.KW);
    (void)t;
    (void)nt;
    struct colplan plans[DW_PLANS];
    int64_t groups = (j->q.OW + 16 * DW_NV - 1) / (16 * DW_NV);
    bool shared = groups <= DW_PLANS && planes > 1;
    for (int64_t gi = 0; shared && gi < groups; gi++)
        colplan_init(&plans[gi], &j->q, gi * 16 * DW_NV, DW_NV);
    while (qp_claim_next(j->claim, &b, &e))
        for (size_t p = b; p < e; p++) {
            size_t n = p / g->out_c, oc = p % g->out_c;
            dw_plane(&j->q, shared ? plans : NULL,
                     j->x + (n * g->in_c + oc / mult) * sin,
                     j->w + oc * kvol, j->bias ? j->bias[oc] : 0.0f,
                     j->y + p * sout);
            if (j->epi)
                j->epi->fn(j->epi->ctx, p * sout, (p + 1) * sout);
        }
}

/* ---- the rest: 8 channels x 3 vectors ------------------------------------ */

/* Sums of tile row m (output channel) over its nv vectors. */
#define T_DECL(m) __m512 c##m##0 = _mm512_set1_ps(b8[m]), c##m##1 = c##m##0, \
                         c##m##2 = c##m##0
#define T_FMA(m)                                                               \
    do {                                                                       \
        __m512 wv = _mm512_set1_ps(wp ? wp[pk + m] : wr[m][k]);                \
        c##m##0 = _mm512_fmadd_ps(x0, wv, c##m##0);                            \
        if (nv > 1)                                                            \
            c##m##1 = _mm512_fmadd_ps(x1, wv, c##m##1);                        \
        if (nv > 2)                                                            \
            c##m##2 = _mm512_fmadd_ps(x2, wv, c##m##2);                        \
    } while (0)
#define T_STORE(m)                                                             \
    do {                                                                       \
        if (m < mr) {                                                          \
            _mm512_mask_storeu_ps(yr[m] + ow0, cp->store[0], c##m##0);         \
            if (nv > 1)                                                        \
                _mm512_mask_storeu_ps(yr[m] + ow0 + 16, cp->store[1], c##m##1); \
            if (nv > 2)                                                        \
                _mm512_mask_storeu_ps(yr[m] + ow0 + 32, cp->store[2], c##m##2); \
        }                                                                      \
    } while (0)

/* A unit's input, copied: rows [r0, r0 + rows) and columns [c0, c0 +
 * pitch) of every input channel of the group, planes ps floats apart
 * (not a multiple of 4 KiB: channels a power-of-two plane apart would
 * all map to the same L1 sets, and a tile reads them all at once). */
struct band_in {
    const float *p;
    size_t ps;
    int64_t pitch, r0, c0;
};

/* One tile: output channels of weight rows wr[0..MR) (rows past the
 * block's end repeat its last one and are not stored), or when wp is not
 * NULL the same weights packed (see pack_weights), output row oh,
 * the nv vectors of cp over the input x; yr[m]: output row oh of channel
 * m. The 24 sums are named variables (see dw_row); the input channel
 * loop is innermost, so they stay in registers across it. */
SPECIALIZED void tile(const struct geo *q, size_t icg,
                        const struct colplan *cp, const struct band_in *x,
                        const float *const *wr, const float *wp,
                        const float *b8, float *const *yr, int mr, int64_t oh,
                        int64_t ow0, const int nv, const int s2)
{
    T_DECL(0); T_DECL(1); T_DECL(2); T_DECL(3);
    T_DECL(4); T_DECL(5); T_DECL(6); T_DECL(7);
    int64_t k0, k1, kk = q->KH * q->KW;
    tap_rows(q, oh, &k0, &k1);
    size_t hw = x->ps;
    for (int64_t kh = k0; kh < k1; kh++) {
        /* column iw of input row ih is at xr[iw] */
        const float *xr = x->p + (oh * q->SH - q->PH + kh * q->DH - x->r0) *
                                     x->pitch - x->c0;
        for (int kw = 0; kw < q->KW; kw++) {
            const float *xc = xr;
            int64_t k = kh * q->KW + kw;
            size_t pk = (size_t)k * icg * MR;
            for (size_t ic = 0; ic < icg; ic++, xc += hw, k += kk, pk += MR) {
                __m512 x0 = cp_load(cp, xc, kw, 0, s2), x1 = x0, x2 = x0;
                if (nv > 1)
                    x1 = cp_load(cp, xc, kw, 1, s2);
                if (nv > 2)
                    x2 = cp_load(cp, xc, kw, 2, s2);
                T_FMA(0); T_FMA(1); T_FMA(2); T_FMA(3);
                T_FMA(4); T_FMA(5); T_FMA(6); T_FMA(7);
            }
        }
    }
    T_STORE(0); T_STORE(1); T_STORE(2); T_STORE(3);
    T_STORE(4); T_STORE(5); T_STORE(6); T_STORE(7);
}

/* [*lo, *hi): the input indices outputs [o0, o1) read along an axis. */
static void input_span(int64_t o0, int64_t o1, int64_t s, int64_t k, int64_t d,
                       int64_t p, int64_t len, int64_t *lo, int64_t *hi)
{
    *lo = o0 * s - p;
    *hi = (o1 - 1) * s - p + (k - 1) * d + 1;
    if (*lo < 0)
        *lo = 0;
    if (*hi > len)
        *hi = len;
    if (*hi < *lo)
        *hi = *lo;
}

/* Plane stride for rows x pitch floats: 64-byte aligned, not a multiple
 * of 4 KiB. */
static size_t plane_stride(int64_t rows, int64_t pitch)
{
    size_t ps = ((size_t)(rows * pitch) + 15) / 16 * 16;
    return ps % 1024 == 0 ? ps + 16 : ps;
}

/* Copies the unit's input (rows [r0, r1), columns [c0, c1) of the
 * output) of the icg channels at x into buf. When that input is the
 * whole of every plane and the planes are not a multiple of 4 KiB apart,
 * *b reads x itself: the copy would be the same layout (a small layer's
 * input is in cache already, and copying it was a tenth of its time). */
static void copy_band(const struct geo *q, size_t icg, const float *x,
                      int64_t r0, int64_t r1, int64_t c0, int64_t c1,
                      float *buf, struct band_in *b)
{
    int64_t h0, h1, w0, w1;
    input_span(r0, r1, q->SH, q->KH, q->DH, q->PH, q->H, &h0, &h1);
    input_span(c0, c1, q->SW, q->KW, q->DW, q->PW, q->W, &w0, &w1);
    size_t hw = (size_t)(q->H * q->W);
    if (h0 == 0 && h1 == q->H && w0 == 0 && w1 == q->W && hw % 1024 != 0) {
        *b = (struct band_in){x, hw, q->W, 0, 0};
        return;
    }
    *b = (struct band_in){buf, plane_stride(h1 - h0, w1 - w0), w1 - w0, h0, w0};
    for (size_t ic = 0; ic < icg; ic++)
        for (int64_t h = h0; h < h1; h++)
            memcpy(buf + ic * b->ps + (size_t)((h - h0) * b->pitch),
                   x + ic * hw + (size_t)(h * q->W + w0),
                   (size_t)(w1 - w0) * sizeof *buf);
}

/* Unit u of the direct convolution; buf: this thread's scratch. */
static void direct_unit(const struct job *j, size_t u, float *buf)
{
    const struct qp_conv_nd *g = j->g;
    const struct geo *q = &j->q;
    size_t icg = g->in_c / g->groups, ocg = g->out_c / g->groups;
    size_t kvol = icg * (size_t)(q->KH * q->KW);
    size_t sin = (size_t)(q->H * q->W), sout = (size_t)(q->OH * q->OW);
    size_t band = u % j->bands, chunk = u / j->bands % j->chunks;
    size_t gi = u / j->bands / j->chunks % g->groups;
    size_t n = u / j->bands / j->chunks / g->groups;
    /* rows [r0, r1) and columns [c0, c1) of the plane */
    bool by_rows = q->OH > 1;
    int64_t r0 = 0, r1 = 1, c0 = 0, c1 = q->OW;
    if (by_rows) {
        r0 = (int64_t)(band * j->band);
        r1 = r0 + (int64_t)j->band < q->OH ? r0 + (int64_t)j->band : q->OH;
    } else {
        c0 = (int64_t)(band * j->band);
        c1 = c0 + (int64_t)j->band < q->OW ? c0 + (int64_t)j->band : q->OW;
    }
    size_t oc_lo = chunk * j->chunk_blocks * MR;
    size_t oc_hi = oc_lo + j->chunk_blocks * MR < ocg ? oc_lo + j->chunk_blocks * MR
                                                    : ocg;
    struct band_in x;
    copy_band(q, icg, j->x + (n * g->in_c + gi * icg) * sin, r0, r1, c0, c1,
              buf, &x);
    size_t ybase = (n * g->out_c + gi * ocg) * sout;
    struct colplan cp;
    for (int64_t ow0 = c0; ow0 < c1; ow0 += 16 * cp.nv) {
        /* bands are multiples of 16 * NV columns: a plan ends at c1. When
         * one vector would be left over, the last four go as two and two
         * (a lone vector's tile loads 8 weights for 8 multiply-adds). */
        int64_t vecs = (c1 - ow0 + 15) / 16;
        colplan_init(&cp, q, ow0, vecs == 4 ? 2 : NV);
        for (size_t oc0 = oc_lo; oc0 < oc_hi; oc0 += MR) {
            int mr = (int)(oc_hi - oc0 < MR ? oc_hi - oc0 : MR);
            const float *wr[MR];
            const float *wp = j->wp ? j->wp + (gi * j->blocks + oc0 / MR) * kvol * MR
                                    : NULL;
            float b8[MR];
            for (int m = 0; m < MR; m++) {
                size_t oc = gi * ocg + oc0 + (size_t)(m < mr ? m : mr - 1);
                wr[m] = j->w + oc * kvol;
                b8[m] = j->bias ? j->bias[oc] : 0.0f;
            }
            for (int64_t oh = r0; oh < r1; oh++) {
                float *yr[MR];
                for (int m = 0; m < MR; m++)
                    yr[m] = j->y + ybase + (oc0 + (size_t)(m < mr ? m : 0)) * sout +
                            (size_t)(oh * q->OW);
                bool s2 = q->SW == 2;
                switch (cp.nv * 2 + s2) {
                case 6: tile(q, icg, &cp, &x, wr, wp, b8, yr, mr, oh, ow0, 3, 0); break;
                case 7: tile(q, icg, &cp, &x, wr, wp, b8, yr, mr, oh, ow0, 3, 1); break;
                case 4: tile(q, icg, &cp, &x, wr, wp, b8, yr, mr, oh, ow0, 2, 0); break;
                case 5: tile(q, icg, &cp, &x, wr, wp, b8, yr, mr, oh, ow0, 2, 1); break;
                case 2: tile(q, icg, &cp, &x, wr, wp, b8, yr, mr, oh, ow0, 1, 0); break;
                default: tile(q, icg, &cp, &x, wr, wp, b8, yr, mr, oh, ow0, 1, 1); break;
                }
            }
        }
    }
    if (!j->epi)
        return;
    for (size_t oc = oc_lo; oc < oc_hi; oc++) {
        size_t at = ybase + oc * sout + (size_t)(r0 * q->OW);
        j->epi->fn(j->epi->ctx, at + (size_t)c0,
                   at + (size_t)((r1 - r0 - 1) * q->OW + c1));
    }
}

static void direct_run(void *ctx, int t, int nt)
{
    const struct job *j = ctx;
    size_t b, e;
    (void)nt;
    while (qp_claim_next(j->claim, &b, &e))
        for (size_t u = b; u < e; u++)
            direct_unit(j, u, j->scratch + (size_t)t * j->per_thread);
}

/* Bands of rows (of columns for one-row outputs) whose input fits
 * L2_BUDGET; *per_thread: floats of the largest band's copy. */
static void plan_bands(const struct qp_conv_nd *g, const struct geo *q,
                       size_t *band, size_t *bands, size_t *per_thread)
{
    size_t icg = g->in_c / g->groups;
    int64_t h0, h1, w0, w1;
    if (q->OH > 1) {
        size_t row_bytes = icg * (size_t)q->W * sizeof(float);
        size_t rows = L2_BUDGET / (row_bytes ? row_bytes : 1);
        int64_t b = ((int64_t)rows - q->KH) / q->SH + 1;
        *band = b < 1 ? 1 : b > q->OH ? (size_t)q->OH : (size_t)b;
        *bands = ((size_t)q->OH + *band - 1) / *band;
        /* the most rows a band reads, all columns */
        input_span(0, (int64_t)*band, q->SH, q->KH, q->DH, 0, q->H, &h0, &h1);
        w0 = 0;
        w1 = q->W;
    } else {
        size_t cols = L2_BUDGET / (icg * sizeof(float) * (size_t)q->SW);
        cols = cols / (16 * NV) * (16 * NV);
        *band = cols < 16 * NV ? 16 * NV : cols;
        *bands = ((size_t)q->OW + *band - 1) / *band;
        input_span(0, 1, q->SH, q->KH, q->DH, 0, q->H, &h0, &h1);
        input_span(0, (int64_t)*band, q->SW, q->KW, q->DW, 0, q->W, &w0, &w1);
    }
    *per_thread = icg * plane_stride(h1 - h0, w1 - w0) + 16;
}

/* Bands and channel chunks: enough units to share. */
static void plan_units(struct job *j, int nthreads)
{
    const struct qp_conv_nd *g = j->g;
    size_t ocg = g->out_c / g->groups;
    size_t blocks = (ocg + MR - 1) / MR;
    plan_bands(g, &j->q, &j->band, &j->bands, &j->per_thread);
    size_t units = g->batch * g->groups * j->bands;
    j->chunks = 1;
    while (units * j->chunks < 4 * (size_t)nthreads && j->chunks < blocks)
        j->chunks++;
    j->chunk_blocks = (blocks + j->chunks - 1) / j->chunks;
    j->chunks = (blocks + j->chunk_blocks - 1) / j->chunk_blocks;
}

/* ---- packed weights --------------------------------------------------------- */

/* Output positions from which a call packs its weights: then the packing
 * (a copy of the weights) is under a thousandth of the multiply-adds,
 * and the tiles read one 32-byte line of weights per input channel and
 * tap instead of eight rows far apart that the input band evicts. */
#define PACK_MIN_POSITIONS 1024

/* Floats of packed weights for g (0 when it does not pack). */
static size_t packed_size(const struct qp_conv_nd *g, const struct geo *q)
{
    size_t icg = g->in_c / g->groups, ocg = g->out_c / g->groups;
    if (icg <= 1 || (size_t)(q->OH * q->OW) < PACK_MIN_POSITIONS)
        return 0;
    return g->groups * ((ocg + MR - 1) / MR) * MR * icg * (size_t)(q->KH * q->KW);
}

/* Packs w [OC, icg, KH, KW] into wp: per group and block of MR output
 * channels, [tap][input channel][MR] (tap = kh * KW + kw), rows past a
 * block's end repeating its last channel, as tile reads them. */
static void pack_weights(const struct qp_conv_nd *g, const struct geo *q,
                         const float *w, float *wp)
{
    size_t icg = g->in_c / g->groups, ocg = g->out_c / g->groups;
    size_t taps = (size_t)(q->KH * q->KW), kvol = icg * taps;
    size_t blocks = (ocg + MR - 1) / MR;
    for (size_t gi = 0; gi < g->groups; gi++)
        for (size_t b = 0; b < blocks; b++) {
            float *dst = wp + (gi * blocks + b) * kvol * MR;
            size_t mr = ocg - b * MR < MR ? ocg - b * MR : MR;
            for (size_t m = 0; m < MR; m++) {
                const float *src = w + (gi * ocg + b * MR + (m < mr ? m : mr - 1)) * kvol;
                for (size_t t = 0; t < taps; t++)
                    for (size_t ic = 0; ic < icg; ic++)
                        dst[(t * icg + ic) * MR + m] = src[ic * taps + t];
            }
        }
}

/* ---- the variant ----------------------------------------------------------- */

/* Items a share claims at a time: about an eighth of a share, so a share
 * that starts late leaves little for the others to wait on. */
static size_t claim_step(size_t items, int nthreads)
{
    size_t s = items / (8 * (size_t)(nthreads > 0 ? nthreads : 1));
    return s ? s : 1;
}

/* Threads the scratch is sized for. */
static int scratch_threads(void)
{
    return qp_parallel_threads();
}

static bool supports(const struct qp_conv_nd *g, size_t *scratch)
{
    struct geo q;
    *scratch = 0;
    if (g->groups < 1 || !to_geo(g, &q))
        return false;
    if (g->in_c / g->groups > 1) {
        size_t band, bands, per_thread;
        plan_bands(g, &q, &band, &bands, &per_thread);
        *scratch = per_thread * (size_t)scratch_threads() + packed_size(g, &q);
    }
    return true;
}

static void run(struct qp_pool *pool, const struct qp_conv_nd *g, const float *x,
                const float *w, const float *bias, float *y, float *scratch,
                const struct qp_conv_epilogue *epi)
{
    struct qp_claim claim;
    struct job j = {g, {0}, x, w, bias, y, epi, 0, 0, 0, 0, scratch, 0, 0, NULL,
                    &claim};
    to_geo(g, &j.q);
    size_t icg = g->in_c / g->groups;
    size_t work = g->batch * g->out_c * (size_t)(j.q.OH * j.q.OW) * icg *
                  (size_t)(j.q.KH * j.q.KW);
    int nt = work < PAR_MIN_MACS ? 1 : qp_pool_threads(pool);
    if (icg == 1) {
        size_t planes = g->batch * g->out_c;
        qp_claim_init(&claim, planes, claim_step(planes, nt));
        qp_pool_run(pool, dw_run, &j, nt);
        return;
    }
    if (nt > scratch_threads()) /* the scratch holds that many copies */
        nt = scratch_threads();
    plan_units(&j, nt);
    j.blocks = (g->out_c / g->groups + MR - 1) / MR;
    if (packed_size(g, &j.q)) {
        float *wp = scratch + j.per_thread * (size_t)scratch_threads();
        pack_weights(g, &j.q, w, wp);
        j.wp = wp;
    }
    size_t units = g->batch * g->groups * j.chunks * j.bands;
    qp_claim_init(&claim, units, claim_step(units, nt));
    qp_pool_run(pool, direct_run, &j, nt);
}

const struct qp_conv_f32_variant qp_conv_f32_avx512 = {
    .name = "avx512",
    .isa = QP_KERN_AVX512,
    .supports = supports,
    .run = run,
    .supports_transpose = qp_convt_f32_avx512_supports,
    .run_transpose = qp_convt_f32_avx512_run,
};
#endif
