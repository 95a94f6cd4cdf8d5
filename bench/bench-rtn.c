/* bench/bench-rtn.c: round-to-nearest weight quantization throughput, in
 * GB/s of FP32 input, single thread, for w8c and w4g128 on a [4096, 4096]
 * weight; each compared with memcpy of the same bytes measured in the same
 * process (ratio = rtn / memcpy, robust to machine noise).
 *
 *   full : qp_rtn_quantize (min/max pass, scales, quantize, pack, alloc)
 *   apply: qp_rtn_apply alone (the quantize-and-pack pass)
 *
 * Usage: bench-rtn [ROWS COLS [REPEATS]]. Prints one line per case. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/bench.h"
#include "quant/rtn.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Best time of reps runs of memcpy(dst, src, n). */
static double time_memcpy(void *dst, const void *src, size_t n, int reps)
{
    double best = 1e30;
    for (int r = 0; r < reps; r++) {
        double t0 = now();
        memcpy(dst, src, n);
        double t = now() - t0;
        best = t < best ? t : best;
        ((volatile char *)dst)[r % n] = 0;
    }
    return best;
}

struct bcase {
    const char *name;
    struct qp_wscheme ws;
};

int main(int argc, char **argv)
{
    bench_start("bench-rtn", argc, argv);
    int64_t rows = argc > 2 ? atoll(argv[1]) : 4096;
    int64_t cols = argc > 2 ? atoll(argv[2]) : 4096;
    int reps = argc > 3 ? atoi(argv[3]) : 5;
    if (rows < 1 || cols < 1 || reps < 1) {
        fprintf(stderr, "usage: bench-rtn [ROWS COLS [REPEATS]]\n");
        return 2;
    }
    setenv("QP_THREADS", "1", 1);
    int64_t shape[2] = {rows, cols};
    struct qp_tensor *w;
    struct qp_error err;
    if (qp_tensor_new("w", QP_DTYPE_F32, 2, shape, &w, &err)) {
        fprintf(stderr, "bench-rtn: %s\n", err.msg);
        return 1;
    }
    size_t n = qp_tensor_numel(w), bytes = n * sizeof(float);
    float *x = w->data;
    uint64_t s = 88172645463325252ull;
    for (size_t i = 0; i < n; i++) {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        x[i] = (float)((double)(s >> 11) * 0x1p-53 - 0.5) * 0.1f;
    }
    void *dst = malloc(bytes);
    if (!dst)
        return 1;
    memset(dst, 1, bytes);
    double base = time_memcpy(dst, x, bytes, reps);
    double gbs_base = (double)bytes / base / 1e9;
    printf("bench-rtn: [%lld, %lld] f32 (%.1f MB), single thread, best of %d\n",
           (long long)rows, (long long)cols, (double)bytes / 1e6, reps);
    printf("  memcpy           %7.2f GB/s (baseline)\n", gbs_base);
    static const struct bcase cases[] = {
        {"w8c", {.f = {8, false, false}, .gran = QP_GRAN_CHANNEL}},
        {"w4g128",
         {.f = {4, false, false}, .gran = QP_GRAN_GROUP, .group = 128}},
    };
    struct qp_wquant_opts o = {QP_ROUND_HALF_AWAY, QP_WLAYOUT_TORCH};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        double full = 1e30, apply = 1e30;
        for (int r = 0; r < reps; r++) {
            struct qp_tensor *q;
            double t0 = now();
            if (qp_rtn_quantize(w, &cases[c].ws, &o, &q, &err)) {
                fprintf(stderr, "bench-rtn: %s\n", err.msg);
                return 1;
            }
            double t1 = now();
            /* the quantize-and-pack pass alone, with q's own parameters */
            struct qp_qgeom g;
            qp_qgeom_init(&g, 2, shape, cases[c].ws.gran, cases[c].ws.group,
                          o.layout, NULL);
            int32_t qmin, qmax;
            qp_qformat_range(&cases[c].ws.f, &qmin, &qmax);
            double t2 = now();
            qp_rtn_apply(x, &g, q->qp->scale, q->qp->zero_point, qmin, qmax,
                         o.round, q->dtype, q->data);
            double t3 = now();
            full = t1 - t0 < full ? t1 - t0 : full;
            apply = t3 - t2 < apply ? t3 - t2 : apply;
            qp_tensor_free(q);
        }
        double gf = (double)bytes / full / 1e9, ga = (double)bytes / apply / 1e9;
        printf("  rtn %-7s full  %7.2f GB/s  ratio %.2f of memcpy\n",
               cases[c].name, gf, gf / gbs_base);
        printf("  rtn %-7s apply %7.2f GB/s  ratio %.2f of memcpy\n",
               cases[c].name, ga, ga / gbs_base);
    }
    free(dst);
    qp_tensor_free(w);
    return 0;
}
