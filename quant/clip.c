#include "quant/clip.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/parallel.h"

const struct qp_clip_grid qp_clip_grid_mse = {2.0, QP_CLIP_STEPS + 1};
const struct qp_clip_grid qp_clip_grid_gptq = {2.4, QP_CLIP_STEPS};

double qp_clip_sse(const float *x, size_t n, const struct qp_qformat *f,
                   enum qp_round r, float lo, float hi)
{
    int32_t qmin, qmax, z;
    float s;
    qp_qformat_range(f, &qmin, &qmax);
    qp_qparams_from_range(f, r, lo, hi, &s, &z);
    double sse = 0;
    for (size_t k = 0; k < n; k++) {
        int32_t q = qp_quantize_f32(x[k], s, z, qmin, qmax, r);
        double e = (double)x[k] - (double)((float)(q - z) * s);
        sse += e * e;
    }
    return sse;
}

static float bits_f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* a^p for a >= 0 as 2^(p log2 a): log2 from the exponent and an atanh
 * series of the mantissa in [sqrt(1/2), sqrt(2)), 2^y from the integer
 * part and a Taylor polynomial around 0.5 of the fraction; relative error
 * about 2e-7 * (1 + |p log2 a|). Subnormal a gives 0. Branch-free, so the
 * loops calling it vectorize. */
static inline float pow_pos(float a, float p)
{
    uint32_t u;
    memcpy(&u, &a, sizeof u);
    int ex = (int)(u >> 23) - 127;
    float m = bits_f32((u & 0x7fffffu) | 0x3f800000u); /* [1, 2) */
    int big = m > 1.41421356f;
    m = big ? 0.5f * m : m;
    ex += big;
    float t = (m - 1.0f) / (m + 1.0f), t2 = t * t;
    float ln = 2.0f * t *
               (1.0f + t2 * (1.0f / 3 + t2 * (1.0f / 5 + t2 * (1.0f / 7 +
                                                              t2 / 9))));
    float y = p * ((float)ex + ln * 1.44269504f);
    y = y < -125.0f ? -125.0f : y > 127.0f ? 127.0f : y;
    float fl = (float)(int)y;
    fl = fl > y ? fl - 1.0f : fl;        /* floor */
    float f = (y - fl - 0.5f) * 0.693147181f; /* ln 2 * (frac - 0.5) */
    float e = 1.0f + f * (1.0f + f * (0.5f + f * (1.0f / 6 + f * (1.0f / 24 +
                                         f * (1.0f / 120 + f / 720)))));
    float r = e * 1.41421356f * bits_f32((uint32_t)((int)fl + 127) << 23);
    return u >= 0x00800000u ? r : 0.0f;
}

double qp_clip_err(const float *x, size_t n, const struct qp_qformat *f,
                   enum qp_round r, float lo, float hi, double norm)
{
    if (norm == 2.0)
        return qp_clip_sse(x, n, f, r, lo, hi);
    int32_t qmin, qmax, z;
    float s, p = (float)(norm - 2.0);
    qp_qformat_range(f, &qmin, &qmax);
    qp_qparams_from_range(f, r, lo, hi, &s, &z);
    double sum = 0;
    for (size_t k = 0; k < n; k++) {
        int32_t q = qp_quantize_f32(x[k], s, z, qmin, qmax, r);
        float e = x[k] - (float)(q - z) * s, a = e < 0 ? -e : e;
        sum += (double)(e * e * pow_pos(a, p));
    }
    return sum;
}

void qp_clip_search(const float *x, size_t n, const struct qp_qformat *f,
                    enum qp_round r, const struct qp_clip_grid *grid,
                    float *lo, float *hi)
{
    float l = *lo, h = *hi;
    double best = qp_clip_err(x, n, f, r, l, h, grid->norm);
    for (int k = 1; k < grid->steps && best > 0; k++) {
        float a = 1.0f - (float)k / QP_CLIP_GRID;
        double e = qp_clip_err(x, n, f, r, a * l, a * h, grid->norm);
        if (e < best) {
            best = e;
            *lo = a * l;
            *hi = a * h;
        }
    }
}

struct search {
    const float *buf;      /* members of each index, contiguous */
    const size_t *start;   /* [count + 1] offsets into buf */
    size_t count;
    const struct qp_qformat *f;
    enum qp_round r;
    const struct qp_clip_grid *grid;
    float *lo, *hi;
};

static void search_range(void *ctx, int t, int nthreads)
{
    struct search *s = ctx;
    size_t b, e;
    qp_parallel_split(s->count, t, nthreads, 1, &b, &e);
    for (size_t i = b; i < e; i++)
        qp_clip_search(s->buf + s->start[i], s->start[i + 1] - s->start[i],
                       s->f, s->r, s->grid, &s->lo[i], &s->hi[i]);
}

enum qp_status qp_clip_mse(const float *x, const struct qp_qgeom *g,
                           const struct qp_qformat *f, enum qp_round r,
                           const struct qp_clip_grid *grid, float *lo,
                           float *hi, struct qp_error *err)
{
    size_t numel = g->outer * g->dim * g->inner;
    float *buf = malloc(numel * sizeof *buf + 1);
    size_t *start = malloc((g->count + 1) * sizeof *start);
    size_t *fill = malloc(g->count * sizeof *fill + 1);
    if (!buf || !start || !fill) {
        free(buf);
        free(start);
        free(fill);
        return qp_fail(err, QP_E_NOMEM, "out of memory for the clipping search");
    }
    /* gather the members of every scale index next to each other */
    start[0] = 0;
    for (size_t i = 0; i < g->count; i++) {
        start[i + 1] = start[i] + qp_qgeom_members(g, i);
        fill[i] = start[i];
    }
    struct qp_qseg_iter it;
    struct qp_qseg sg;
    qp_qseg_begin(&it, g);
    while (qp_qseg_next(&it, &sg)) {
        const float *p = x + sg.off;
        if (sg.vec) {
            for (size_t k = 0; k < sg.len; k++)
                buf[fill[sg.idx + k]++] = p[k];
        } else {
            float *d = buf + fill[sg.idx];
            for (size_t k = 0; k < sg.len; k++)
                d[k] = p[k];
            fill[sg.idx] += sg.len;
        }
    }
    struct search s = {buf, start, g->count, f, r,
                       grid ? grid : &qp_clip_grid_mse, lo, hi};
    qp_parallel_run(search_range, &s, g->count > 1 ? 0 : 1);
    free(buf);
    free(start);
    free(fill);
    return QP_OK;
}
