/* kernels/x86/convt-f32-avx512.c: transposed float convolution with
 * AVX-512 whose kernel equals its stride and has no padding (the
 * detector's upsampling ConvTranspose), for qp_conv_f32_avx512
 * (kernels/x86/conv-f32-avx512.c). */
#if defined(__x86_64__)
#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "core/parallel.h"
#include "kernels/ref/conv-geom.h"
#include "kernels/x86/convt-f32-avx512.h"

#define SPECIALIZED static inline __attribute__((always_inline))


/* ---- transposed: kernel == stride, no padding ----------------------------- */

/* Every output then takes one sum: y[oc][i*SH + a][j*SW + b] = bias[oc] +
 * sum_ic x[ic][i][j] w[ic][oc][a][b], a "1x1 convolution" per tap (a, b)
 * whose outputs interleave along W (SW is 1 or 2). Tiles of 4 output
 * channels x 2 input vectors x SW taps; the weights are first packed so a
 * tile's 4 x SW weights of one input channel are adjacent. */
#define TR_MR 4

struct tjob {
    const struct qp_conv_nd *g;
    int64_t H, W, KH, KW;
    size_t blocks;
    const float *x, *wp, *bias;
    float *y;
    const struct qp_conv_epilogue *epi;
};

static bool t_geo(const struct qp_conv_nd *g, struct tjob *j)
{
    struct qp_conv3 c;
    qp_conv3_from_geom(g, &c);
    if (g->groups != 1 || c.in[0] != 1 || c.k[0] != 1 || c.out[0] != 1)
        return false;
    for (int i = 1; i < 3; i++)
        if (c.k[i] != c.s[i] || c.d[i] != 1 || c.p[i] || c.pe[i] ||
            c.out[i] != c.in[i] * c.s[i])
            return false;
    if (c.k[2] != 1 && c.k[2] != 2)
        return false;
    j->H = c.in[1];
    j->W = c.in[2];
    j->KH = c.k[1];
    j->KW = c.k[2];
    j->blocks = (g->out_c + TR_MR - 1) / TR_MR;
    return true;
}

/* wp[((a * blocks + blk) * IC + ic) * TR_MR * KW + m * KW + b] =
 * w[ic][blk * TR_MR + m][a][b], 0 past the last channel. */
static void t_pack(const struct tjob *j, const float *w, float *wp)
{
    size_t ic_n = j->g->in_c, oc_n = j->g->out_c, kw = (size_t)j->KW;
    for (int64_t a = 0; a < j->KH; a++)
        for (size_t blk = 0; blk < j->blocks; blk++)
            for (size_t ic = 0; ic < ic_n; ic++)
                for (size_t m = 0; m < TR_MR; m++)
                    for (size_t b = 0; b < kw; b++) {
                        size_t oc = blk * TR_MR + m;
                        *wp++ = oc < oc_n ? w[((ic * oc_n + oc) * (size_t)j->KH +
                                               (size_t)a) * kw + b] : 0.0f;
                    }
}

#define TR_DECL(m) __m512 d##m##00 = _mm512_set1_ps(b4[m]), d##m##01 = d##m##00, \
                          d##m##10 = d##m##00, d##m##11 = d##m##00
#define TR_FMA(m)                                                              \
    do {                                                                       \
        __m512 w0 = _mm512_set1_ps(wk[m * kw]);                                \
        d##m##00 = _mm512_fmadd_ps(x0, w0, d##m##00);                          \
        d##m##10 = _mm512_fmadd_ps(x1, w0, d##m##10);                          \
        if (kw == 2) {                                                         \
            __m512 w1 = _mm512_set1_ps(wk[m * kw + 1]);                        \
            d##m##01 = _mm512_fmadd_ps(x0, w1, d##m##01);                      \
            d##m##11 = _mm512_fmadd_ps(x1, w1, d##m##11);                      \
        }                                                                      \
    } while (0)
#define TR_STORE(m)                                                            \
    do {                                                                       \
        if (m < mr) {                                                          \
            t_store(yr[m] + j0 * kw, d##m##00, d##m##01, n0, kw);              \
            t_store(yr[m] + (j0 + 16) * kw, d##m##10, d##m##11, n1, kw);       \
        }                                                                      \
    } while (0)

/* n (<= 16) outputs of tap b = 0 (and 1), interleaved when kw is 2. */
SPECIALIZED void t_store(float *y, __m512 v0, __m512 v1, int64_t n,
                         const int kw)
{
    if (n <= 0)
        return;
    if (kw == 1) {
        _mm512_mask_storeu_ps(y, (__mmask16)((1u << n) - 1), v0);
        return;
    }
    const __m512i lo = _mm512_set_epi32(23, 7, 22, 6, 21, 5, 20, 4, 19, 3,
                                        18, 2, 17, 1, 16, 0);
    const __m512i hi = _mm512_set_epi32(31, 15, 30, 14, 29, 13, 28, 12, 27,
                                        11, 26, 10, 25, 9, 24, 8);
    int64_t n2 = 2 * n;
    _mm512_mask_storeu_ps(y, (__mmask16)(n2 >= 16 ? 0xffff : (1u << n2) - 1),
                          _mm512_permutex2var_ps(v0, lo, v1));
    if (n2 > 16)
        _mm512_mask_storeu_ps(y + 16, (__mmask16)(n2 >= 32 ? 0xffff
                                                  : (1u << (n2 - 16)) - 1),
                              _mm512_permutex2var_ps(v0, hi, v1));
}

/* Input columns [j0, j0 + 32) of input row xr (channel planes hw apart)
 * through tap row a, output channels of block blk. */
SPECIALIZED void t_tile(const struct tjob *j, const float *xr, size_t hw,
                        const float *wk, const float *b4, float *const *yr,
                        int mr, int64_t j0, const int kw)
{
    TR_DECL(0); TR_DECL(1); TR_DECL(2); TR_DECL(3);
    int64_t n0 = j->W - j0 < 16 ? j->W - j0 : 16;
    int64_t n1 = j->W - j0 - 16 < 16 ? j->W - j0 - 16 : 16;
    __mmask16 m0 = (__mmask16)((1u << n0) - 1);
    __mmask16 m1 = n1 > 0 ? (__mmask16)((1u << n1) - 1) : 0;
    const float *xc = xr + j0;
    for (size_t ic = 0; ic < j->g->in_c; ic++, xc += hw, wk += TR_MR * kw) {
        __m512 x0 = _mm512_maskz_loadu_ps(m0, xc);
        __m512 x1 = _mm512_maskz_loadu_ps(m1, xc + 16);
        TR_FMA(0); TR_FMA(1); TR_FMA(2); TR_FMA(3);
    }
    TR_STORE(0); TR_STORE(1); TR_STORE(2); TR_STORE(3);
}

/* Output rows of one (image, input row): KH rows of KW * W columns. */
static void t_row(const struct tjob *j, size_t n, int64_t i)
{
    const struct qp_conv_nd *g = j->g;
    size_t hw = (size_t)(j->H * j->W), ow = (size_t)(j->W * j->KW);
    size_t ohw = hw * (size_t)(j->KH * j->KW);
    const float *xr = j->x + n * g->in_c * hw + (size_t)(i * j->W);
    for (int64_t a = 0; a < j->KH; a++) {
        size_t orow = (size_t)(i * j->KH + a) * ow;
        for (size_t blk = 0; blk < j->blocks; blk++) {
            size_t oc0 = blk * TR_MR;
            int mr = (int)(g->out_c - oc0 < TR_MR ? g->out_c - oc0 : TR_MR);
            float b4[TR_MR];
            float *yr[TR_MR];
            for (int m = 0; m < TR_MR; m++) {
                size_t oc = oc0 + (size_t)(m < mr ? m : 0);
                b4[m] = j->bias ? j->bias[oc] : 0.0f;
                yr[m] = j->y + (n * g->out_c + oc) * ohw + orow;
            }
            const float *wk = j->wp + ((size_t)a * j->blocks + blk) * g->in_c *
                                          TR_MR * (size_t)j->KW;
            for (int64_t j0 = 0; j0 < j->W; j0 += 32) {
                if (j->KW == 2)
                    t_tile(j, xr, hw, wk, b4, yr, mr, j0, 2);
                else
                    t_tile(j, xr, hw, wk, b4, yr, mr, j0, 1);
            }
        }
    }
    if (!j->epi)
        return;
    for (size_t oc = 0; oc < g->out_c; oc++) { /* the KH rows just made */
        size_t at = (n * g->out_c + oc) * ohw + (size_t)(i * j->KH) * ow;
        j->epi->fn(j->epi->ctx, at, at + (size_t)j->KH * ow);
    }
}

static void t_run(void *ctx, int t, int nt)
{
    const struct tjob *j = ctx;
    size_t rows = j->g->batch * (size_t)j->H, b, e;
    qp_parallel_split(rows, t, nt, 1, &b, &e);
    for (size_t r = b; r < e; r++)
        t_row(j, r / (size_t)j->H, (int64_t)(r % (size_t)j->H));
}

bool qp_convt_f32_avx512_supports(const struct qp_conv_nd *g, size_t *scratch)
{
    struct tjob j = {g, 0, 0, 0, 0, 0, NULL, NULL, NULL, NULL, NULL};
    if (!t_geo(g, &j))
        return false;
    *scratch = j.blocks * TR_MR * g->in_c * (size_t)(j.KH * j.KW);
    return true;
}

void qp_convt_f32_avx512_run(struct qp_pool *pool, const struct qp_conv_nd *g,
                             const float *x, const float *w, const float *bias,
                             float *y, float *scratch,
                             const struct qp_conv_epilogue *epi)
{
    struct tjob j = {g, 0, 0, 0, 0, 0, x, scratch, bias, y, epi};
    t_geo(g, &j);
    t_pack(&j, w, scratch);
    size_t work = g->batch * g->in_c * g->out_c * (size_t)(j.H * j.W * j.KH * j.KW);
    qp_pool_run(pool, t_run, &j, work < PAR_MIN_MACS ? 1 : 0);
}
#endif
