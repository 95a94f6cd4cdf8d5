#include "quant/clip.h"

#include <stdlib.h>

#include "core/parallel.h"

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

struct search {
    const float *buf;      /* members of each index, contiguous */
    const size_t *start;   /* [count + 1] offsets into buf */
    size_t count;
    const struct qp_qformat *f;
    enum qp_round r;
    float *lo, *hi;
};

static void search_range(void *ctx, int t, int nthreads)
{
    struct search *s = ctx;
    size_t b, e;
    qp_parallel_split(s->count, t, nthreads, 1, &b, &e);
    for (size_t i = b; i < e; i++) {
        const float *x = s->buf + s->start[i];
        size_t n = s->start[i + 1] - s->start[i];
        float lo = s->lo[i], hi = s->hi[i], blo = lo, bhi = hi;
        double best = qp_clip_sse(x, n, s->f, s->r, lo, hi);
        for (int k = 1; k <= QP_CLIP_STEPS && best > 0; k++) {
            float a = 1.0f - (float)k / QP_CLIP_GRID;
            double sse = qp_clip_sse(x, n, s->f, s->r, a * lo, a * hi);
            if (sse < best) {
                best = sse;
                blo = a * lo;
                bhi = a * hi;
            }
        }
        s->lo[i] = blo;
        s->hi[i] = bhi;
    }
}

enum qp_status qp_clip_mse(const float *x, const struct qp_qgeom *g,
                           const struct qp_qformat *f, enum qp_round r,
                           float *lo, float *hi, struct qp_error *err)
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
    struct search s = {buf, start, g->count, f, r, lo, hi};
    qp_parallel_run(search_range, &s, g->count > 1 ? 0 : 1);
    free(buf);
    free(start);
    free(fill);
    return QP_OK;
}
