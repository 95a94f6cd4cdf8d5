/* kernels/conv-f32-gemm.c: float convolution and transposed convolution
 * by im2col / col2im and OpenBLAS sgemm, the path every geometry has (see
 * kernels/conv-f32.h). Everything is 3-D inside: 1-D and 2-D
 * geometries get leading spatial extents of 1.
 *
 * Shapes in comments: S = output positions (oD*oH*oW), K = IC/groups *
 * kernel volume, T = a tile of output (conv) or input (transpose)
 * positions. */
#include "kernels/conv-f32.h"

#include <string.h>

#include "core/parallel.h"
#include "kernels/blas.h"
#include "kernels/ref/conv-geom.h"

/* Scratch budget of the im2col / col2im tiles, in floats (8 MiB). */
#define TILE_FLOATS ((size_t)2 << 20)
/* Below this much work a parallel loop costs more than it saves. */
#define PAR_MIN_WORK ((size_t)1 << 16)

static bool is_pointwise(const struct qp_conv3 *c)
{
    for (int i = 0; i < 3; i++)
        if (c->k[i] != 1 || c->s[i] != 1 || c->p[i] != 0 ||
            c->out[i] != c->in[i])
            return false;
    return true;
}

static size_t conv_tile(const struct qp_conv_nd *g, const struct qp_conv3 *c)
{
    size_t k = g->in_c / g->groups * c->kvol;
    size_t t = k ? TILE_FLOATS / k : c->sout;
    if (t < 64)
        t = 64;
    return t < c->sout ? t : c->sout;
}

size_t qp_conv_f32_gemm_scratch_size(const struct qp_conv_nd *g)
{
    struct qp_conv3 c;
    qp_conv3_from_geom(g, &c);
    if (g->in_c == g->groups || is_pointwise(&c))
        return 0;
    return g->in_c / g->groups * c.kvol * conv_tile(g, &c);
}

/* ---- depthwise: one output plane at a time ----------------------------- */

struct dw_job {
    const struct qp_conv_nd *g;
    const struct qp_conv3 *c;
    const float *x, *w, *bias;
    float *y;
    const struct qp_conv_epilogue *epi;
};

/* y[OD,OH,OW] = bias + sum_k w[k] * x[input position of k] */
static void dw_plane(const struct qp_conv3 *c, const float *x, const float *w,
                     float bias, float *y)
{
    for (size_t i = 0; i < c->sout; i++)
        y[i] = bias;
    for (int64_t kd = 0; kd < c->k[0]; kd++)
        for (int64_t kh = 0; kh < c->k[1]; kh++)
            for (int64_t kw = 0; kw < c->k[2]; kw++) {
                float wv = w[(kd * c->k[1] + kh) * c->k[2] + kw];
                int64_t d0, d1, h0, h1, w0, w1;
                int64_t offd = kd * c->d[0] - c->p[0];
                int64_t offh = kh * c->d[1] - c->p[1];
                int64_t offw = kw * c->d[2] - c->p[2];
                qp_conv3_range(c->out[0], c->s[0], offd, c->in[0], &d0, &d1);
                qp_conv3_range(c->out[1], c->s[1], offh, c->in[1], &h0, &h1);
                qp_conv3_range(c->out[2], c->s[2], offw, c->in[2], &w0, &w1);
                for (int64_t od = d0; od < d1; od++)
                    for (int64_t oh = h0; oh < h1; oh++) {
                        int64_t id = od * c->s[0] + offd;
                        int64_t ih = oh * c->s[1] + offh;
                        /* xr[i] is x at input column i - offw (in range
                         * for every ow in [w0, w1)) */
                        const float *xr = x + (id * c->in[1] + ih) * c->in[2];
                        float *yr = y + (od * c->out[1] + oh) * c->out[2];
                        int64_t sw = c->s[2];
                        if (sw == 1)
                            for (int64_t ow = w0; ow < w1; ow++)
                                yr[ow] += wv * xr[ow + offw];
                        else
                            for (int64_t ow = w0; ow < w1; ow++)
                                yr[ow] += wv * xr[ow * sw + offw];
                    }
            }
}

/* Interior of one output row for kernel width KW and stride S (both
 * compile-time after inlining): yr[ow] += sum_kw w[kw] * xr[ow*S + kw]
 * for ow in [a, b), where every tap is inside the row. */
static inline void dw_row(float *yr, const float *xr, const float *w, int64_t a,
                          int64_t b, int64_t ofs, int KW, int S)
{
    for (int64_t ow = a; ow < b; ow++) {
        const float *xi = xr + ow * S + ofs;
        float acc = 0.0f;
        for (int kw = 0; kw < KW; kw++)
            acc += w[kw] * xi[kw];
        yr[ow] += acc;
    }
}

/* 2-D planes (no depth), dilation 1 along W: each output row takes a
 * whole kernel row per pass, with the common widths and strides
 * specialized; the taps that fall in the padding are handled apart at
 * the row ends. */
static void dw_plane2d(const struct qp_conv3 *c, const float *x, const float *w,
                       float bias, float *y)
{
    int64_t OW = c->out[2], W = c->in[2], S = c->s[2], P = c->p[2], KW = c->k[2];
    int64_t a, b; /* ow whose taps ow*S - P + [0, KW) are all in [0, W) */
    qp_conv3_range(OW, S, -P, W - KW + 1, &a, &b);
    for (int64_t oh = 0; oh < c->out[1]; oh++) {
        float *yr = y + oh * OW;
        for (int64_t ow = 0; ow < OW; ow++)
            yr[ow] = bias;
        for (int64_t kh = 0; kh < c->k[1]; kh++) {
            int64_t ih = oh * c->s[1] - c->p[1] + kh * c->d[1];
            if (ih < 0 || ih >= c->in[1])
                continue;
            const float *xr = x + ih * W, *wr = w + kh * KW;
            for (int64_t ow = 0; ow < OW; ow++) {
                if (ow == a && b > a)
                    ow = b; /* the interior comes below */
                if (ow >= OW)
                    break;
                for (int64_t kw = 0; kw < KW; kw++) {
                    int64_t iw = ow * S - P + kw;
                    if (iw >= 0 && iw < W)
                        yr[ow] += wr[kw] * xr[iw];
                }
            }
            if (a >= b)
                continue;
            if (KW == 3 && S == 1)
                dw_row(yr, xr, wr, a, b, -P, 3, 1);
            else if (KW == 3 && S == 2)
                dw_row(yr, xr, wr, a, b, -P, 3, 2);
            else if (KW == 5 && S == 1)
                dw_row(yr, xr, wr, a, b, -P, 5, 1);
            else if (KW == 5 && S == 2)
                dw_row(yr, xr, wr, a, b, -P, 5, 2);
            else
                dw_row(yr, xr, wr, a, b, -P, (int)KW, (int)S);
        }
    }
}

static void dw_run(void *ctx, int t, int nt)
{
    const struct dw_job *j = ctx;
    const struct qp_conv_nd *g = j->g;
    size_t planes = g->batch * g->out_c, b, e;
    size_t mult = g->out_c / g->groups; /* depth multiplier */
    qp_parallel_split(planes, t, nt, 1, &b, &e);
    for (size_t p = b; p < e; p++) {
        size_t n = p / g->out_c, oc = p % g->out_c, ic = oc / mult;
        const struct qp_conv3 *c = j->c;
        bool flat = c->in[0] == 1 && c->out[0] == 1 && c->k[0] == 1 && c->d[2] == 1;
        (flat ? dw_plane2d : dw_plane)(c, j->x + (n * g->in_c + ic) * c->sin,
                                       j->w + oc * c->kvol,
                                       j->bias ? j->bias[oc] : 0.0f,
                                       j->y + p * c->sout);
        if (j->epi)
            j->epi->fn(j->epi->ctx, p * c->sout, (p + 1) * c->sout);
    }
}

struct epi_job {
    const struct qp_conv_epilogue *epi;
    size_t n;
};

static void epi_run(void *ctx, int t, int nt)
{
    const struct epi_job *j = ctx;
    size_t b, e;
    qp_parallel_split(j->n, t, nt, 1024, &b, &e);
    if (b < e)
        j->epi->fn(j->epi->ctx, b, e);
}

static int threads_for(size_t work);

/* The epilogue (if any) over all n outputs, once they are final. */
static void run_epilogue(struct qp_pool *pool, const struct qp_conv_epilogue *epi,
                         size_t n)
{
    if (!epi)
        return;
    struct epi_job j = {epi, n};
    qp_pool_run(pool, epi_run, &j, threads_for(n));
}

/* ---- im2col ------------------------------------------------------------ */

/* Offsets (kernel tap k, flat over the kernel volume) added to
 * output*stride to get the input position, per axis. */
static void tap_offsets(const struct qp_conv3 *c, size_t k, int64_t off[3])
{
    int64_t kw = (int64_t)k % c->k[2], kh = (int64_t)k / c->k[2] % c->k[1];
    int64_t kd = (int64_t)k / (c->k[2] * c->k[1]);
    off[0] = kd * c->d[0] - c->p[0];
    off[1] = kh * c->d[1] - c->p[1];
    off[2] = kw * c->d[2] - c->p[2];
}

/* Walks positions [*p, end) of a [D, H, W] grid one W-row piece at a
 * time: the piece starts at (d, h, w0) and holds cnt positions. */
struct seg {
    int64_t d, h, w0, cnt;
};

static bool next_seg(const int64_t *grid, size_t *p, size_t end, struct seg *s)
{
    if (*p >= end)
        return false;
    size_t W = (size_t)grid[2], r = *p / W;
    s->w0 = (int64_t)(*p % W);
    s->h = (int64_t)(r % (size_t)grid[1]);
    s->d = (int64_t)(r / (size_t)grid[1]);
    s->cnt = (int64_t)W - s->w0;
    if ((size_t)s->cnt > end - *p)
        s->cnt = (int64_t)(end - *p);
    *p += (size_t)s->cnt;
    return true;
}

/* Row (channel plane xc, kernel tap offsets off) of the column matrix for
 * output positions [p0, p0 + n): row[t] = x at the position output p0+t
 * reads through that tap, 0 in the padding. */
static void im2col_row(const struct qp_conv3 *c, const float *xc,
                       const int64_t *off, size_t p0, size_t n, float *row)
{
    int64_t lo, hi, sw = c->s[2];
    qp_conv3_range(c->out[2], sw, off[2], c->in[2], &lo, &hi);
    size_t p = p0;
    struct seg s;
    while (next_seg(c->out, &p, p0 + n, &s)) {
        /* dst[j] is output column w0 + j */
        float *dst = row + (p - (size_t)s.cnt - p0);
        int64_t id = s.d * c->s[0] + off[0], ih = s.h * c->s[1] + off[1];
        int64_t a = s.w0, b = s.w0;
        if (id >= 0 && id < c->in[0] && ih >= 0 && ih < c->in[1]) {
            a = lo > s.w0 ? lo : s.w0;
            b = hi < s.w0 + s.cnt ? hi : s.w0 + s.cnt;
            if (a > b)
                a = b = s.w0;
            const float *xr = xc + (id * c->in[1] + ih) * c->in[2];
            if (sw == 1 && b > a)
                memcpy(dst + (a - s.w0), xr + a + off[2],
                       (size_t)(b - a) * sizeof *dst);
            else
                for (int64_t ow = a; ow < b; ow++)
                    dst[ow - s.w0] = xr[ow * sw + off[2]];
        }
        for (int64_t ow = s.w0; ow < a; ow++)
            dst[ow - s.w0] = 0.0f;
        for (int64_t ow = b; ow < s.w0 + s.cnt; ow++)
            dst[ow - s.w0] = 0.0f;
    }
}

struct i2c_job {
    const struct qp_conv3 *c;
    const float *x; /* [ICg, in...] */
    size_t rows, p0, n;
    float *col;     /* [rows, n] */
};

static void i2c_run(void *ctx, int t, int nt)
{
    const struct i2c_job *j = ctx;
    const struct qp_conv3 *c = j->c;
    size_t b, e;
    qp_parallel_split(j->rows, t, nt, 1, &b, &e);
    for (size_t r = b; r < e; r++) {
        int64_t off[3];
        tap_offsets(c, r % c->kvol, off);
        im2col_row(c, j->x + r / c->kvol * c->sin, off, j->p0, j->n,
                   j->col + r * j->n);
    }
}

static int threads_for(size_t work)
{
    return work < PAR_MIN_WORK ? 1 : 0;
}

void qp_conv_f32_im2col(struct qp_pool *pool, const struct qp_conv_nd *g,
                        const float *x, size_t n, size_t group, size_t p0,
                        size_t count, float *col)
{
    struct qp_conv3 c;
    qp_conv3_from_geom(g, &c);
    size_t icg = g->in_c / g->groups;
    struct i2c_job j = {&c, x + (n * g->in_c + group * icg) * c.sin,
                        icg * c.kvol, p0, count, col};
    qp_pool_run(pool, i2c_run, &j, threads_for(icg * c.kvol * count));
}


static void fill_bias(float *y, size_t channels, size_t plane,
                      const float *bias)
{
    for (size_t c = 0; c < channels; c++)
        for (size_t i = 0; i < plane; i++)
            y[c * plane + i] = bias ? bias[c] : 0.0f;
}

void qp_conv_f32_gemm(struct qp_pool *pool, const struct qp_conv_nd *g,
                     const float *x, const float *w, const float *bias,
                     float *y, float *scratch,
                     const struct qp_conv_epilogue *epi)
{
    struct qp_conv3 c;
    qp_conv3_from_geom(g, &c);
    size_t icg = g->in_c / g->groups, ocg = g->out_c / g->groups;
    if (icg == 1) {
        struct dw_job j = {g, &c, x, w, bias, y, epi};
        qp_pool_run(pool, dw_run, &j,
                        threads_for(g->batch * g->out_c * c.sout * c.kvol));
        return;
    }
    size_t kk = icg * c.kvol;
    bool pw = is_pointwise(&c);
    size_t tile = pw ? c.sout : conv_tile(g, &c);
    for (size_t n = 0; n < g->batch; n++) {
        float *yn = y + n * g->out_c * c.sout;
        fill_bias(yn, g->out_c, c.sout, bias);
        for (size_t gi = 0; gi < g->groups; gi++) {
            const float *xg = x + (n * g->in_c + gi * icg) * c.sin;
            const float *wg = w + gi * ocg * kk;
            float *yg = yn + gi * ocg * c.sout;
            if (pw) {
                /* yg[ocg, S] += wg[ocg, icg] . xg[icg, S] */
                qp_blas_sgemm(pool, false, false, ocg, c.sout, icg, 1.0f, wg, icg,
                              xg, c.sin, 1.0f, yg, c.sout);
                continue;
            }
            for (size_t p0 = 0; p0 < c.sout; p0 += tile) {
                size_t nt = c.sout - p0 < tile ? c.sout - p0 : tile;
                struct i2c_job j = {&c, xg, kk, p0, nt, scratch};
                qp_pool_run(pool, i2c_run, &j, threads_for(kk * nt));
                /* yg[ocg, p0:p0+nt] += wg[ocg, K] . col[K, nt] */
                qp_blas_sgemm(pool, false, false, ocg, nt, kk, 1.0f, wg, kk, scratch,
                              nt, 1.0f, yg + p0, c.sout);
            }
        }
    }
    run_epilogue(pool, epi, g->batch * g->out_c * c.sout);
}

/* ---- transposed convolution ------------------------------------------- */

static size_t convt_tile(const struct qp_conv_nd *g, const struct qp_conv3 *c)
{
    size_t rows = g->out_c / g->groups * c->kvol;
    size_t t = rows ? TILE_FLOATS / rows : c->sin;
    if (t < 64)
        t = 64;
    return t < c->sin ? t : c->sin;
}

size_t qp_conv_transpose_f32_gemm_scratch_size(const struct qp_conv_nd *g)
{
    struct qp_conv3 c;
    qp_conv3_from_geom(g, &c);
    return g->out_c / g->groups * c.kvol * convt_tile(g, &c);
}

/* Adds row (output channel plane yc, kernel tap offsets off) of the
 * column matrix for input positions [q0, q0 + n) into yc. */
static void col2im_row(const struct qp_conv3 *c, const float *row,
                       const int64_t *off, size_t q0, size_t n, float *yc)
{
    int64_t lo, hi, sw = c->s[2];
    qp_conv3_range(c->in[2], sw, off[2], c->out[2], &lo, &hi);
    size_t q = q0;
    struct seg s;
    while (next_seg(c->in, &q, q0 + n, &s)) {
        int64_t od = s.d * c->s[0] + off[0], oh = s.h * c->s[1] + off[1];
        if (od < 0 || od >= c->out[0] || oh < 0 || oh >= c->out[1])
            continue;
        /* src[j] is input column w0 + j */
        const float *src = row + (q - (size_t)s.cnt - q0);
        float *yr = yc + (od * c->out[1] + oh) * c->out[2];
        int64_t a = lo > s.w0 ? lo : s.w0, b = hi < s.w0 + s.cnt ? hi : s.w0 + s.cnt;
        for (int64_t iw = a; iw < b; iw++)
            yr[iw * sw + off[2]] += src[iw - s.w0];
    }
}

struct c2i_job {
    const struct qp_conv3 *c;
    const float *col; /* [ocg * kvol, n] */
    size_t ocg, q0, n;
    float *y;         /* [ocg, out...] */
};

static void c2i_run(void *ctx, int t, int nt)
{
    const struct c2i_job *j = ctx;
    const struct qp_conv3 *c = j->c;
    size_t b, e;
    /* split by output channel so no two threads add into one plane */
    qp_parallel_split(j->ocg, t, nt, 1, &b, &e);
    for (size_t oc = b; oc < e; oc++)
        for (size_t k = 0; k < c->kvol; k++) {
            int64_t off[3];
            tap_offsets(c, k, off);
            col2im_row(c, j->col + (oc * c->kvol + k) * j->n, off, j->q0, j->n,
                       j->y + oc * c->sout);
        }
}

void qp_conv_transpose_f32_gemm(struct qp_pool *pool,
                               const struct qp_conv_nd *g, const float *x,
                               const float *w, const float *bias, float *y,
                               float *scratch,
                               const struct qp_conv_epilogue *epi)
{
    struct qp_conv3 c;
    qp_conv3_from_geom(g, &c);
    size_t icg = g->in_c / g->groups, ocg = g->out_c / g->groups;
    size_t rows = ocg * c.kvol, tile = convt_tile(g, &c);
    for (size_t n = 0; n < g->batch; n++) {
        float *yn = y + n * g->out_c * c.sout;
        fill_bias(yn, g->out_c, c.sout, bias);
        for (size_t gi = 0; gi < g->groups; gi++) {
            const float *xg = x + (n * g->in_c + gi * icg) * c.sin;
            const float *wg = w + gi * icg * rows; /* [icg, rows] */
            float *yg = yn + gi * ocg * c.sout;
            for (size_t q0 = 0; q0 < c.sin; q0 += tile) {
                size_t nt = c.sin - q0 < tile ? c.sin - q0 : tile;
                /* col[rows, nt] = wg^T[rows, icg] . xg[icg, q0:q0+nt] */
                qp_blas_sgemm(pool, true, false, rows, nt, icg, 1.0f, wg, rows,
                              xg + q0, c.sin, 0.0f, scratch, nt);
                struct c2i_job j = {&c, scratch, ocg, q0, nt, yg};
                qp_pool_run(pool, c2i_run, &j, threads_for(rows * nt));
            }
        }
    }
    run_epilogue(pool, epi, g->batch * g->out_c * c.sout);
}
