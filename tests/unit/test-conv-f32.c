/* Unit tests of the float convolution (kernels/conv-f32.h): the
 * reference and every SIMD variant this machine runs against naive loops
 * in double over many geometries (depthwise with and without a depth
 * multiplier, grouped, pointwise, strides 1 to 3, dilations, asymmetric
 * padding, odd widths, channel counts off the register tiles, 1-D), each
 * output within 1e-5 of the sum of the magnitudes of its products (the
 * variants sum in another order, with fused multiply-adds); the same for
 * the transposed convolution; and the epilogue: called once per output
 * element, after the element is final. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/parallel.h"
#include "kernels/conv-f32-ukernel.h"
#include "tests/test.h"
#include "tests/unit/kern-test.h"

struct cshape {
    int nsp;
    size_t batch, ic, oc, groups;
    int64_t h, w, kh, kw, sh, sw, dh, dw, pt, pl, pb, pr;
};

static bool make_geom(const struct cshape *s, struct qp_conv_nd *g)
{
    memset(g, 0, sizeof *g);
    g->nsp = s->nsp;
    g->batch = s->batch;
    g->in_c = s->ic;
    g->out_c = s->oc;
    g->groups = s->groups;
    int64_t in[2] = {s->h, s->w}, k[2] = {s->kh, s->kw}, st[2] = {s->sh, s->sw};
    int64_t d[2] = {s->dh, s->dw}, p0[2] = {s->pt, s->pl}, p1[2] = {s->pb, s->pr};
    int first = s->nsp == 1; /* 1-D: the W axis only */
    for (int i = first; i < 2; i++) {
        int j = i - first;
        g->in[j] = in[i];
        g->kernel[j] = k[i];
        g->stride[j] = st[i];
        g->dilation[j] = d[i];
        g->pad[j] = p0[i];
        g->pad_end[j] = p1[i];
        int64_t room = in[i] + p0[i] + p1[i] - (k[i] - 1) * d[i] - 1;
        if (room < 0)
            return false;
        g->out[j] = room / st[i] + 1;
    }
    return true;
}

/* y (double) and the sums of |w x| + |b| by direct loops. */
static void naive(const struct cshape *s, const struct qp_conv_nd *g,
                  const float *x, const float *w, const float *b, double *y,
                  double *mag)
{
    int64_t oh = s->nsp == 1 ? 1 : g->out[0], ow = g->out[s->nsp - 1];
    int64_t h = s->nsp == 1 ? 1 : s->h;
    size_t icg = s->ic / s->groups, ocg = s->oc / s->groups;
    size_t i = 0;
    for (size_t n = 0; n < s->batch; n++)
        for (size_t oc = 0; oc < s->oc; oc++)
            for (int64_t r = 0; r < oh; r++)
                for (int64_t c = 0; c < ow; c++, i++) {
                    double acc = b ? b[oc] : 0, m = b ? fabs(b[oc]) : 0;
                    size_t gi = oc / ocg;
                    for (size_t ic = 0; ic < icg; ic++)
                        for (int64_t kh = 0; kh < (s->nsp == 1 ? 1 : s->kh); kh++)
                            for (int64_t kw = 0; kw < s->kw; kw++) {
                                int64_t ih = s->nsp == 1 ? 0 : r * s->sh + kh * s->dh - s->pt;
                                int64_t iw = c * s->sw + kw * s->dw - s->pl;
                                if (ih < 0 || ih >= h || iw < 0 || iw >= s->w)
                                    continue;
                                double xv = x[((n * s->ic + gi * icg + ic) * (size_t)h +
                                               (size_t)ih) * (size_t)s->w + (size_t)iw];
                                double wv = w[((oc * icg + ic) * (size_t)(s->nsp == 1 ? 1 : s->kh) +
                                               (size_t)kh) * (size_t)s->kw + (size_t)kw];
                                acc += xv * wv;
                                m += fabs(xv * wv);
                            }
                    y[i] = acc;
                    mag[i] = m;
                }
}

struct epi_check {
    int *hits;
    const float *y;
    float *copy; /* y as the epilogue saw it */
};

static void epi_fn(void *ctx, size_t b, size_t e)
{
    struct epi_check *c = ctx;
    for (size_t i = b; i < e; i++) {
        __atomic_fetch_add(&c->hits[i], 1, __ATOMIC_RELAXED);
        c->copy[i] = c->y[i];
    }
}

/* Runs s through the reference and every available variant (epilogue
 * on) and checks each against the naive loops; returns the number of
 * variant runs that supported it. */
static int check_shape(struct qp_test_ctx *ctx, const struct cshape *s,
                       uint64_t seed)
{
    struct qp_conv_nd g;
    if (!make_geom(s, &g))
        return 0;
    size_t icg = s->ic / s->groups;
    int64_t hh = s->nsp == 1 ? 1 : s->h, kh = s->nsp == 1 ? 1 : s->kh;
    size_t nx = s->batch * s->ic * (size_t)(hh * s->w);
    size_t nw = s->oc * icg * (size_t)(kh * s->kw);
    size_t plane = (size_t)(s->nsp == 1 ? g.out[0] : g.out[0] * g.out[1]);
    size_t ny = s->batch * s->oc * plane;
    float *x = malloc(nx * 4), *w = malloc(nw * 4), *b = malloc(s->oc * 4);
    float *y = malloc(ny * 4), *copy = malloc(ny * 4);
    double *want = malloc(ny * 8), *mag = malloc(ny * 8);
    int *hits = calloc(ny, sizeof *hits);
    size_t ns = qp_conv_f32_gemm_scratch_size(&g);
    float *scratch = malloc((ns + 1) * 4);
    int supported = 0;
    if (!x || !w || !b || !y || !copy || !want || !mag || !hits || !scratch)
        goto out;
    for (size_t i = 0; i < nx; i++)
        x[i] = (float)kt_range(&seed, -1000, 1000) / 256.0f;
    for (size_t i = 0; i < nw; i++)
        w[i] = (float)kt_range(&seed, -1000, 1000) / 512.0f;
    for (size_t i = 0; i < s->oc; i++)
        b[i] = (float)kt_range(&seed, -100, 100) / 64.0f;
    naive(s, &g, x, w, b, want, mag);
    struct qp_pool *pool = qp_pool_new(2);
    const struct qp_conv_f32_variant *vars[2] = {NULL, NULL};
#if defined(__x86_64__)
    if (qp_kern_isa_available(QP_KERN_AVX512))
        vars[1] = &qp_conv_f32_avx512;
#endif
    for (int v = 0; v < 2; v++) {
        size_t need = 0;
        if (v > 0 && (!vars[v] || !vars[v]->supports(&g, &need)))
            continue;
        float *sc = v == 0 ? scratch : malloc((need + 1) * 4);
        struct epi_check ec = {hits, y, copy};
        struct qp_conv_epilogue epi = {epi_fn, &ec};
        memset(hits, 0, ny * sizeof *hits);
        memset(y, 0xff, ny * 4); /* NaN: every element must be written */
        if (v == 0)
            qp_conv_f32_gemm(pool, &g, x, w, b, y, sc, &epi);
        else
            vars[v]->run(pool, &g, x, w, b, y, sc, &epi);
        if (v > 0) {
            free(sc);
            supported++;
        }
        int bad = 0, badhits = 0;
        for (size_t i = 0; i < ny; i++) {
            bad += !(fabs(y[i] - want[i]) <= 1e-5 * mag[i] + 1e-30);
            badhits += hits[i] != 1 || memcmp(&copy[i], &y[i], 4) != 0;
        }
        if (bad || badhits)
            qp_test_failf(ctx, __FILE__, __LINE__, "%s: shape n%zu ic%zu oc%zu "
                          "g%zu %lldx%lld k%lldx%lld s%lld,%lld d%lld,%lld p%lld,"
                          "%lld,%lld,%lld nsp%d: %d outputs off, %d epilogue "
                          "misses", v ? vars[v]->name : "ref", s->batch, s->ic,
                          s->oc, s->groups, (long long)s->h, (long long)s->w,
                          (long long)s->kh, (long long)s->kw, (long long)s->sh,
                          (long long)s->sw, (long long)s->dh, (long long)s->dw,
                          (long long)s->pt, (long long)s->pl, (long long)s->pb,
                          (long long)s->pr, s->nsp, bad, badhits);
    }
    qp_pool_free(pool);
out:
    free(x);
    free(w);
    free(b);
    free(y);
    free(copy);
    free(want);
    free(mag);
    free(hits);
    free(scratch);
    return supported;
}

QP_TEST(conv_f32_hand_computed)
{
    /* x 1x1x3x3 = 1..9, w 1x1x2x2 = [[1,0],[0,-1]], bias 0.5, pad 1 on
     * the left/top only, stride 2: out 2x2 at (-1,-1), (-1,1), (1,-1),
     * (1,1): y = x[r][c] * 1 + x[r+1][c+1] * -1 + 0.5 */
    struct cshape s = {2, 1, 1, 1, 1, 3, 3, 2, 2, 2, 2, 1, 1, 1, 1, 0, 0};
    struct qp_conv_nd g;
    REQUIRE(make_geom(&s, &g));
    CHECK_INT(g.out[0], 2);
    CHECK_INT(g.out[1], 2);
    const float x[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9}, w[4] = {1, 0, 0, -1};
    const float b[1] = {0.5f};
    float y[4], sc[64];
    REQUIRE(qp_conv_f32_scratch_size(&g) <= 64);
    qp_conv_f32(NULL, &g, x, w, b, y, sc, NULL);
    /* (-1,-1): only x[0][0] through w[1][1]: -1 + .5; (-1,1): x[0][2]
     * through w[1][1]: -3 + .5; (1,-1): -x[2][0] = -7 + .5; (1,1):
     * x[1][1] - x[2][2] = 5 - 9 + .5 */
    CHECK_NEAR(y[0], -0.5, 0);
    CHECK_NEAR(y[1], -2.5, 0);
    CHECK_NEAR(y[2], -6.5, 0);
    CHECK_NEAR(y[3], -3.5, 0);
}

QP_TEST(conv_f32_variants_match_naive_loops)
{
    static const struct cshape fixed[] = {
        /* the PP-OCR patterns, reduced */
        {2, 1, 3, 16, 1, 33, 47, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1},
        {2, 1, 16, 16, 16, 20, 37, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},
        {2, 1, 32, 32, 32, 20, 37, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1},
        {2, 1, 24, 24, 24, 9, 11, 5, 5, 1, 1, 1, 1, 2, 2, 2, 2},
        {2, 2, 16, 40, 1, 7, 29, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0},
        {2, 1, 96, 24, 1, 10, 21, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},
        {2, 1, 60, 12, 1, 1, 40, 1, 3, 1, 1, 1, 1, 0, 1, 0, 1},
        /* depth multiplier 2, grouped, strides 3 (the reference), dilation */
        {2, 1, 4, 8, 4, 11, 13, 3, 3, 1, 2, 1, 1, 1, 0, 2, 1},
        {2, 2, 6, 10, 2, 9, 17, 3, 2, 2, 1, 2, 1, 0, 1, 1, 0},
        {2, 1, 5, 7, 1, 13, 35, 3, 3, 3, 3, 1, 1, 1, 1, 1, 1},
        {2, 1, 5, 9, 1, 12, 40, 3, 3, 1, 1, 2, 3, 2, 3, 2, 3},
        /* a row narrower than a vector, one wider than a tile, 1x1 with
         * stride 2, 1-D */
        {2, 1, 3, 5, 1, 4, 1, 3, 1, 1, 1, 1, 1, 1, 0, 1, 0},
        {2, 1, 9, 17, 1, 3, 130, 1, 3, 1, 2, 1, 1, 0, 1, 0, 0},
        {2, 1, 8, 8, 1, 9, 33, 1, 1, 2, 2, 1, 1, 0, 0, 0, 0},
        {1, 2, 6, 9, 3, 1, 50, 1, 5, 1, 2, 1, 2, 0, 3, 0, 2},
        /* inputs the SIMD variant copies rather than reads in place: more
         * than its L2 budget (bands of rows; of columns for one output
         * row), and planes of 1024 floats (4 KiB apart) */
        {2, 1, 72, 20, 1, 40, 70, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},
        {2, 1, 40, 9, 1, 1, 1700, 1, 3, 1, 2, 1, 1, 0, 1, 0, 1},
        {2, 1, 8, 11, 1, 32, 32, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1},
        /* layers of 1024 output positions or more pack their weights:
         * grouped with blocks of 5 channels, 1x1 with 13, strided 5x5 */
        {2, 2, 6, 10, 2, 40, 37, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},
        {2, 1, 19, 13, 1, 33, 40, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0},
        {2, 1, 7, 17, 1, 70, 70, 5, 5, 2, 2, 1, 1, 2, 2, 2, 2},
        /* 1x1 over more than one chunk of 64 input channels (the sums
         * stored and carried on), plain and with stride 2 */
        {2, 1, 150, 20, 1, 7, 33, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0},
        {2, 1, 130, 9, 1, 9, 21, 1, 1, 2, 2, 1, 1, 0, 0, 0, 0},
        /* depthwise with dilated rows, stride 2 along W only: four rows
         * at a time in the interior, one at a time at the borders */
        {2, 1, 6, 6, 6, 17, 40, 3, 3, 1, 2, 2, 1, 2, 1, 2, 1},
        /* depthwise rows wider than the column plans made once per call */
        {2, 1, 3, 3, 3, 3, 1100, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},
    };
    int supported = 0, total = 0;
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++, total++)
        supported += check_shape(ctx, &fixed[i], 100 + i);
    /* and random geometries */
    uint64_t seed = 42;
    for (int r = 0; r < 60; r++, total++) {
        struct cshape s;
        s.nsp = kt_range(&seed, 0, 5) == 0 ? 1 : 2;
        s.batch = (size_t)kt_range(&seed, 1, 2);
        int kind = kt_range(&seed, 0, 2); /* depthwise, grouped, plain */
        s.groups = kind == 2 ? 1 : (size_t)kt_range(&seed, 1, 6);
        size_t icg = kind == 0 ? 1 : (size_t)kt_range(&seed, 1, 19);
        size_t ocg = (size_t)kt_range(&seed, 1, kind == 0 ? 2 : 21);
        s.ic = s.groups * icg;
        s.oc = s.groups * ocg;
        s.h = kt_range(&seed, 1, 14);
        s.w = kt_range(&seed, 1, 70);
        s.kh = kt_range(&seed, 1, 4);
        s.kw = kt_range(&seed, 1, 5);
        s.sh = kt_range(&seed, 1, 2);
        s.sw = kt_range(&seed, 1, 3);
        s.dh = kt_range(&seed, 1, 2);
        s.dw = kt_range(&seed, 1, 2);
        s.pt = kt_range(&seed, 0, 2);
        s.pl = kt_range(&seed, 0, 3);
        s.pb = kt_range(&seed, 0, 2);
        s.pr = kt_range(&seed, 0, 2);
        supported += check_shape(ctx, &s, seed);
    }
#if defined(__x86_64__)
    /* most shapes are for the AVX-512 variant (not stride 3) */
    if (qp_kern_isa_available(QP_KERN_AVX512))
        CHECK(supported > total / 2);
#endif
}

/* ---- transposed ---------------------------------------------------------- */

/* y [N, OC, OH, OW] of a transposed convolution by scattering every
 * input through every tap, in double, with the sums of |w x| + |b|. */
static void naive_t(const struct qp_conv_nd *g, const float *x, const float *w,
                    const float *b, double *y, double *mag)
{
    int64_t H = g->in[0], W = g->in[1], OH = g->out[0], OW = g->out[1];
    int64_t KH = g->kernel[0], KW = g->kernel[1];
    size_t icg = g->in_c / g->groups, ocg = g->out_c / g->groups;
    size_t plane = (size_t)(OH * OW);
    for (size_t n = 0; n < g->batch; n++)
        for (size_t oc = 0; oc < g->out_c; oc++)
            for (size_t i = 0; i < plane; i++) {
                y[(n * g->out_c + oc) * plane + i] = b ? b[oc] : 0;
                mag[(n * g->out_c + oc) * plane + i] = b ? fabs(b[oc]) : 0;
            }
    for (size_t n = 0; n < g->batch; n++)
        for (size_t ic = 0; ic < g->in_c; ic++)
            for (int64_t i = 0; i < H; i++)
                for (int64_t j = 0; j < W; j++)
                    for (size_t o = 0; o < ocg; o++)
                        for (int64_t a = 0; a < KH; a++)
                            for (int64_t c = 0; c < KW; c++) {
                                int64_t oh = i * g->stride[0] + a * g->dilation[0] - g->pad[0];
                                int64_t ow = j * g->stride[1] + c * g->dilation[1] - g->pad[1];
                                if (oh < 0 || oh >= OH || ow < 0 || ow >= OW)
                                    continue;
                                size_t oc = ic / icg * ocg + o;
                                double v = (double)x[((n * g->in_c + ic) * (size_t)H +
                                                      (size_t)i) * (size_t)W + (size_t)j] *
                                           w[((ic * ocg + o) * (size_t)KH + (size_t)a) *
                                             (size_t)KW + (size_t)c];
                                size_t at = (n * g->out_c + oc) * plane +
                                            (size_t)(oh * OW + ow);
                                y[at] += v;
                                mag[at] += fabs(v);
                            }
}

QP_TEST(conv_f32_transpose_variants_match_naive_loops)
{
    /* batch, ic, oc, groups, h, w, k, s, pad: kernel == stride (the SIMD
     * path: 2x2/2, 1x1, 3x3/3 is the reference's), odd channel counts
     * and widths off the vectors, then overlapping and padded ones */
    static const int64_t cases[][9] = {
        {1, 24, 24, 1, 5, 40, 2, 2, 0}, {2, 5, 7, 1, 3, 37, 2, 2, 0},
        {1, 24, 1, 1, 4, 33, 2, 2, 0},  {1, 6, 9, 1, 4, 17, 1, 1, 0},
        {1, 4, 6, 1, 3, 10, 3, 3, 0},   {1, 4, 6, 2, 5, 9, 3, 2, 1},
        {1, 3, 5, 1, 6, 20, 4, 2, 1},
    };
    uint64_t seed = 7;
    int simd = 0;
    struct qp_pool *pool = qp_pool_new(2);
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const int64_t *c = cases[k];
        struct qp_conv_nd g = {2, (size_t)c[0], (size_t)c[1], (size_t)c[2],
                               (size_t)c[3], {c[4], c[5]}, {0}, {c[6], c[6]},
                               {c[7], c[7]}, {1, 1}, {c[8], c[8]}, {c[8], c[8]}};
        for (int d = 0; d < 2; d++)
            g.out[d] = (g.in[d] - 1) * g.stride[d] + g.kernel[d] - 2 * c[8];
        size_t icg = g.in_c / g.groups, ocg = g.out_c / g.groups;
        size_t nx = g.batch * g.in_c * (size_t)(c[4] * c[5]);
        size_t nw = g.in_c * ocg * (size_t)(c[6] * c[6]);
        size_t ny = g.batch * g.out_c * (size_t)(g.out[0] * g.out[1]);
        (void)icg;
        float *x = malloc(nx * 4), *w = malloc(nw * 4), *b = malloc(g.out_c * 4);
        float *y = malloc(ny * 4), *copy = malloc(ny * 4);
        double *want = malloc(ny * 8), *mag = malloc(ny * 8);
        int *hits = calloc(ny, sizeof *hits);
        size_t ns = qp_conv_transpose_f32_gemm_scratch_size(&g), nv = 0;
        const struct qp_conv_f32_variant *v = NULL;
#if defined(__x86_64__)
        if (qp_kern_isa_available(QP_KERN_AVX512) &&
            qp_conv_f32_avx512.supports_transpose(&g, &nv))
            v = &qp_conv_f32_avx512;
#endif
        float *sc = malloc(((ns > nv ? ns : nv) + 1) * 4);
        REQUIRE(x && w && b && y && copy && want && mag && hits && sc);
        for (size_t i = 0; i < nx; i++)
            x[i] = (float)kt_range(&seed, -1000, 1000) / 256.0f;
        for (size_t i = 0; i < nw; i++)
            w[i] = (float)kt_range(&seed, -1000, 1000) / 512.0f;
        for (size_t i = 0; i < g.out_c; i++)
            b[i] = (float)kt_range(&seed, -100, 100) / 64.0f;
        naive_t(&g, x, w, b, want, mag);
        for (int pass = 0; pass < (v ? 2 : 1); pass++) {
            struct epi_check ec = {hits, y, copy};
            struct qp_conv_epilogue epi = {epi_fn, &ec};
            memset(hits, 0, ny * sizeof *hits);
            memset(y, 0xff, ny * 4);
            if (pass == 0)
                qp_conv_transpose_f32_gemm(pool, &g, x, w, b, y, sc, &epi);
            else
                v->run_transpose(pool, &g, x, w, b, y, sc, &epi);
            simd += pass;
            int bad = 0, badhits = 0;
            for (size_t i = 0; i < ny; i++) {
                bad += !(fabs(y[i] - want[i]) <= 1e-5 * mag[i] + 1e-30);
                badhits += hits[i] != 1 || memcmp(&copy[i], &y[i], 4) != 0;
            }
            if (bad || badhits)
                qp_test_failf(ctx, __FILE__, __LINE__, "%s: transposed case %zu: "
                              "%d outputs off, %d epilogue misses",
                              pass ? v->name : "ref", k, bad, badhits);
        }
        free(x);
        free(w);
        free(b);
        free(y);
        free(copy);
        free(want);
        free(mag);
        free(hits);
        free(sc);
    }
    qp_pool_free(pool);
#if defined(__x86_64__)
    if (qp_kern_isa_available(QP_KERN_AVX512))
        CHECK_INT(simd, 4); /* the four kernel == stride cases */
#endif
}
