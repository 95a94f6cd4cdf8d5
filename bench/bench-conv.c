/* bench/bench-conv.c: the float convolution's SIMD variant (direct, no
 * im2col; kernels/conv-f32-ukernel.h) against the reference (depthwise
 * loops, im2col + OpenBLAS sgemm; for the transposed convolutions, sgemm
 * + col2im) on the layer shapes of the PP-OCRv4 detector and recognizer, same threads, same process: the time of each
 * (best of interleaved runs) and their ratio. The variant is only worth
 * running where the ratio is below 1; `qprobe --version` names it.
 *
 *   build/bench/bench-conv [FILTER]   (FILTER: a substring of the names)
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/bench.h"
#include "core/parallel.h"
#include "kernels/conv-f32.h"

struct shape {
    const char *name;
    int ic, oc, groups, h, w, k, s, p;
    bool transpose;
};

static const struct shape shapes[] = {
    {"det conv0 3x3/2 3->16 640", 3, 16, 1, 640, 640, 3, 2, 1, false},
    {"det dw 3x3 16 320", 16, 16, 16, 320, 320, 3, 1, 1, false},
    {"det 1x1 16->32 320", 16, 32, 1, 320, 320, 1, 1, 0, false},
    {"det dw 3x3/2 32 320", 32, 32, 32, 320, 320, 3, 2, 1, false},
    {"det 1x1 32->48 160", 32, 48, 1, 160, 160, 1, 1, 0, false},
    {"det 1x1 48->48 160", 48, 48, 1, 160, 160, 1, 1, 0, false},
    {"det dw 5x5 192 40", 192, 192, 192, 40, 40, 5, 1, 2, false},
    {"det 1x1 192->192 40", 192, 192, 1, 40, 40, 1, 1, 0, false},
    {"det 1x1 384->384 20", 384, 384, 1, 20, 20, 1, 1, 0, false},
    {"det 1x1 12->96 160", 12, 96, 1, 160, 160, 1, 1, 0, false},
    {"det head 3x3 96->24 160", 96, 24, 1, 160, 160, 3, 1, 1, false},
    {"det head 3x3 96->24 80", 96, 24, 1, 80, 80, 3, 1, 1, false},
    {"rec conv0 3x3/2 3->16", 3, 16, 1, 48, 320, 3, 2, 1, false},
    {"rec 1x1 32->64 24x160", 32, 64, 1, 24, 160, 1, 1, 0, false},
    {"rec 1x1 128->128 12x160", 128, 128, 1, 12, 160, 1, 1, 0, false},
    {"rec 1x1 240->240 12x80", 240, 240, 1, 12, 80, 1, 1, 0, false},
    {"rec 1x1 480->480 6x80", 480, 480, 1, 6, 80, 1, 1, 0, false},
    {"rec 1x1 480->480 3x80", 480, 480, 1, 3, 80, 1, 1, 0, false},
    {"rec dw 5x5 240 12x80", 240, 240, 240, 12, 80, 5, 1, 2, false},
    {"rec dw 3x3 128 12x160", 128, 128, 128, 12, 160, 3, 1, 1, false},
    {"det convT 2x2/2 24->24 160", 24, 24, 1, 160, 160, 2, 2, 0, true},
    {"det convT 2x2/2 24->1 320", 24, 1, 1, 320, 320, 2, 2, 0, true},
};

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void fill(float *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (float)((i * 2654435761u + seed) % 2001) / 1000.0f - 1.0f;
}

int main(int argc, char **argv)
{
    bench_start("bench-conv", argc, argv);
    const char *filter = argc > 1 ? argv[1] : "";
    struct qp_pool *pool = qp_pool_new(0);
    printf("bench-conv: %d threads; SIMD variant vs reference (im2col + "
           "OpenBLAS, depthwise loops)\n", qp_parallel_threads());
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        const struct shape *s = &shapes[i];
        if (!strstr(s->name, filter))
            continue;
        struct qp_conv_nd g = {2, 1, (size_t)s->ic, (size_t)s->oc, (size_t)s->groups,
                               {s->h, s->w}, {0}, {s->k, s->k}, {s->s, s->s},
                               {1, 1}, {s->p, s->p}, {s->p, s->p}};
        for (int d = 0; d < 2; d++)
            g.out[d] = s->transpose ? (g.in[d] - 1) * s->s + s->k - 2 * s->p
                                    : (g.in[d] + 2 * s->p - s->k) / s->s + 1;
        size_t nx = (size_t)s->ic * (size_t)(s->h * s->w);
        size_t nw = (size_t)s->oc * (size_t)(s->ic / s->groups) * (size_t)(s->k * s->k);
        size_t ny = (size_t)s->oc * (size_t)(g.out[0] * g.out[1]);
        size_t ns = s->transpose ? qp_conv_transpose_f32_gemm_scratch_size(&g)
                                 : qp_conv_f32_gemm_scratch_size(&g);
        size_t nv = s->transpose ? qp_conv_transpose_f32_scratch_size(&g)
                                 : qp_conv_f32_scratch_size(&g);
        float *x = malloc(nx * 4), *w = malloc(nw * 4), *b = malloc((size_t)s->oc * 4);
        float *y = malloc(ny * 4), *sc = malloc((ns > nv ? ns : nv) * 4 + 4);
        if (!x || !w || !b || !y || !sc)
            return 1;
        fill(x, nx, 1);
        fill(w, nw, 2);
        fill(b, (size_t)s->oc, 3);
        double best[2] = {1e9, 1e9};
        /* transposed: every input through every tap */
        double macs = s->transpose ? (double)nx * (double)(nw / (size_t)s->ic)
                                   : (double)ny * (double)(nw / (size_t)s->oc);
        int reps = macs > 1e8 ? 8 : macs > 1e7 ? 30 : 200;
        for (int r = 0; r < reps; r++)
            for (int v = 0; v < 2; v++) {
                double t0 = now();
                if (s->transpose && v == 0)
                    qp_conv_transpose_f32_gemm(pool, &g, x, w, b, y, sc, NULL);
                else if (s->transpose)
                    qp_conv_transpose_f32(pool, &g, x, w, b, y, sc, NULL);
                else if (v == 0)
                    qp_conv_f32_gemm(pool, &g, x, w, b, y, sc, NULL);
                else
                    qp_conv_f32(pool, &g, x, w, b, y, sc, NULL);
                double t = now() - t0;
                if (t < best[v])
                    best[v] = t;
            }
        printf("%-28s %6.1f MMAC  ref %8.3f ms  %-6s %8.3f ms  ratio %.2f\n",
               s->name, macs / 1e6, best[0] * 1e3,
               s->transpose ? qp_conv_transpose_f32_path(&g) : qp_conv_f32_path(&g),
               best[1] * 1e3, best[1] / best[0]);
        free(x);
        free(w);
        free(b);
        free(y);
        free(sc);
    }
    qp_pool_free(pool);
    return 0;
}
