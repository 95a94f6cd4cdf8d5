/* kernels/pool-f32.c: max and average pooling (kernels/conv-f32.h),
 * one (n, c) plane per work item, planes split over threads. */
#include <math.h>

#include "core/parallel.h"
#include "kernels/conv-f32.h"
#include "kernels/ref/conv-geom.h"

struct pool_job {
    const struct qp_conv3 *c;
    size_t planes;
    const float *x;
    float *y;
    int64_t *idx;
    bool col_major, include_pad, is_max;
};

/* Flat index of spatial position (d, h, w) in a plane, row- or
 * column-major over the real spatial dims. */
static int64_t flat(const struct qp_conv3 *c, int64_t d, int64_t h, int64_t w,
                    bool col_major)
{
    if (!col_major)
        return (d * c->in[1] + h) * c->in[2] + w;
    return (w * c->in[1] + h) * c->in[0] + d;
}

static void pool_plane(const struct pool_job *j, size_t p)
{
    const struct qp_conv3 *c = j->c;
    const float *x = j->x + p * c->sin;
    float *y = j->y + p * c->sout;
    int64_t *ix = j->idx ? j->idx + p * c->sout : NULL;
    for (int64_t od = 0; od < c->out[0]; od++)
        for (int64_t oh = 0; oh < c->out[1]; oh++)
            for (int64_t ow = 0; ow < c->out[2]; ow++) {
                int64_t s0 = od * c->s[0] - c->p[0], s1 = oh * c->s[1] - c->p[1];
                int64_t s2 = ow * c->s[2] - c->p[2];
                float best = -INFINITY;
                int64_t arg = -1;
                double sum = 0.0;
                int64_t inside = 0, padded = 0;
                for (int64_t kd = 0; kd < c->k[0]; kd++) {
                    int64_t id = s0 + kd * c->d[0];
                    if (id < -c->p[0] || id >= c->in[0] + c->pe[0])
                        continue;
                    for (int64_t kh = 0; kh < c->k[1]; kh++) {
                        int64_t ih = s1 + kh * c->d[1];
                        if (ih < -c->p[1] || ih >= c->in[1] + c->pe[1])
                            continue;
                        for (int64_t kw = 0; kw < c->k[2]; kw++) {
                            int64_t iw = s2 + kw * c->d[2];
                            if (iw < -c->p[2] || iw >= c->in[2] + c->pe[2])
                                continue;
                            padded++;
                            if (id < 0 || id >= c->in[0] || ih < 0 ||
                                ih >= c->in[1] || iw < 0 || iw >= c->in[2])
                                continue;
                            float v = x[(id * c->in[1] + ih) * c->in[2] + iw];
                            inside++;
                            sum += v;
                            if (v > best || arg < 0) {
                                best = v;
                                arg = flat(c, id, ih, iw, j->col_major);
                            }
                        }
                    }
                }
                size_t o = (size_t)((od * c->out[1] + oh) * c->out[2] + ow);
                if (j->is_max) {
                    y[o] = best;
                    if (ix)
                        ix[o] = (int64_t)(p * c->sin) + (arg < 0 ? 0 : arg);
                } else {
                    int64_t div = j->include_pad ? padded : inside;
                    y[o] = div > 0 ? (float)(sum / (double)div) : 0.0f;
                }
            }
}

/* Positions k < n of a window starting at s (dilation d) that fall in
 * [lo, hi). */
static int64_t window_count(int64_t n, int64_t s, int64_t d, int64_t lo,
                            int64_t hi)
{
    int64_t a, b;
    qp_conv3_range(n, d, s - lo, hi - lo, &a, &b);
    return b - a;
}

/* pool_plane for 2-D (and 1-D) planes without indices: the same values
 * in the same order (max: the first position inside, then any greater;
 * average: the double sum in row-major window order), without the 3-D
 * index arithmetic per tap. */
static void pool_plane_2d(const struct pool_job *j, size_t p)
{
    const struct qp_conv3 *c = j->c;
    const float *x = j->x + p * c->sin;
    float *y = j->y + p * c->sout;
    int64_t H = c->in[1], W = c->in[2];
    /* outputs [i0, i1) have their whole window inside the row */
    int64_t i0, i1;
    qp_conv3_range(c->out[2], c->s[2], -c->p[2], W - (c->k[2] - 1) * c->d[2],
                   &i0, &i1);
    for (int64_t oh = 0; oh < c->out[1]; oh++) {
        int64_t s1 = oh * c->s[1] - c->p[1], kh0, kh1;
        qp_conv3_range(c->k[1], c->d[1], s1, H, &kh0, &kh1);
        int64_t ph = window_count(c->k[1], s1, c->d[1], -c->p[1], H + c->pe[1]);
        for (int64_t ow = 0; ow < c->out[2]; ow++) {
            int64_t s2 = ow * c->s[2] - c->p[2], kw0 = 0, kw1 = c->k[2];
            if (ow < i0 || ow >= i1)
                qp_conv3_range(c->k[2], c->d[2], s2, W, &kw0, &kw1);
            float *o = y + oh * c->out[2] + ow;
            if (j->is_max) {
                float best = -INFINITY;
                bool first = true;
                for (int64_t kh = kh0; kh < kh1; kh++) {
                    const float *xr = x + (s1 + kh * c->d[1]) * W + s2;
                    for (int64_t kw = kw0; kw < kw1; kw++) {
                        float v = xr[kw * c->d[2]];
                        if (v > best || first)
                            best = v;
                        first = false;
                    }
                }
                *o = best;
                continue;
            }
            double sum = 0.0;
            for (int64_t kh = kh0; kh < kh1; kh++) {
                const float *xr = x + (s1 + kh * c->d[1]) * W + s2;
                for (int64_t kw = kw0; kw < kw1; kw++)
                    sum += xr[kw * c->d[2]];
            }
            int64_t div = j->include_pad
                ? ph * window_count(c->k[2], s2, c->d[2], -c->p[2], W + c->pe[2])
                : (kh1 - kh0) * (kw1 - kw0);
            *o = div > 0 ? (float)(sum / (double)div) : 0.0f;
        }
    }
}

static void pool_run(void *ctx, int t, int nt)
{
    const struct pool_job *j = ctx;
    size_t b, e;
    bool flat2d = j->c->in[0] == 1 && j->c->k[0] == 1 && j->c->out[0] == 1 &&
                  !j->idx;
    qp_parallel_split(j->planes, t, nt, 1, &b, &e);
    for (size_t p = b; p < e; p++)
        (flat2d ? pool_plane_2d : pool_plane)(j, p);
}

static void pool(struct qp_pool *tp, const struct qp_conv_nd *g, const float *x, float *y,
                 int64_t *idx, bool col_major, bool include_pad, bool is_max)
{
    struct qp_conv3 c;
    qp_conv3_from_geom(g, &c);
    struct pool_job j = {&c, g->batch * g->in_c, x, y, idx, col_major,
                         include_pad, is_max};
    size_t work = j.planes * c.sout * c.kvol;
    qp_pool_run(tp, pool_run, &j, work < ((size_t)1 << 18) ? 1 : 0);
}

void qp_maxpool_f32(struct qp_pool *tp, const struct qp_conv_nd *g,
                    const float *x, float *y, int64_t *indices,
                    bool col_major_indices)
{
    pool(tp, g, x, y, indices, col_major_indices, false, true);
}

void qp_avgpool_f32(struct qp_pool *tp, const struct qp_conv_nd *g,
                    const float *x, float *y, bool count_include_pad)
{
    pool(tp, g, x, y, NULL, false, count_include_pad, false);
}
