/* bench/bench-gemm.c: int8 GEMM speed, M = N = K = 1024 with per-channel
 * requantization, beside OpenBLAS sgemm and XNNPACK's qs8 fully-connected
 * (and its per-channel qc8 1x1 convolution) on the same shape, measured in
 * the same process with 1 and 2 threads. Prints GOP/s (2*M*N*K / s, best
 * of several runs) and the ratios; the line "ratio ..." is the summary.
 *
 *   build/bench/bench-gemm [M N K]
 */
#include <cblas.h>
#include <pthreadpool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <xnnpack.h>

#include "kernels/gemm-s8.h"

#define REPS 7

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* best wall time of REPS calls after one warm-up */
#define BEST(seconds, stmt)                                                    \
    do {                                                                       \
        stmt;                                                                  \
        seconds = 1e30;                                                        \
        for (int r_ = 0; r_ < REPS; r_++) {                                    \
            double t0_ = now();                                                \
            stmt;                                                              \
            double t_ = now() - t0_;                                           \
            if (t_ < seconds)                                                  \
                seconds = t_;                                                  \
        }                                                                      \
    } while (0)

struct problem {
    size_t m, n, k;
    int8_t *a, *b, *c;
    int32_t *bias, *mult, *shift;
    float *fa, *fb, *fc, *wscale;
    double ops;
};

static uint64_t rng = 88172645463325252ull;
static uint32_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)rng;
}

static int problem_init(struct problem *p, size_t m, size_t n, size_t k)
{
    p->m = m, p->n = n, p->k = k;
    p->ops = 2.0 * (double)m * (double)n * (double)k;
    p->a = malloc(m * k);
    p->b = malloc(n * k);
    p->c = malloc(m * n * 4);
    p->bias = malloc(n * 4);
    p->mult = malloc(n * 4);
    p->shift = malloc(n * 4);
    p->wscale = malloc(n * 4);
    p->fa = malloc(m * k * 4);
    p->fb = malloc(n * k * 4);
    p->fc = malloc(m * n * 4);
    if (!p->a || !p->b || !p->c || !p->bias || !p->mult || !p->shift ||
        !p->wscale || !p->fa || !p->fb || !p->fc)
        return -1;
    for (size_t i = 0; i < m * k; i++)
        p->fa[i] = p->a[i] = (int8_t)next();
    for (size_t i = 0; i < n * k; i++)
        p->fb[i] = p->b[i] = (int8_t)next();
    for (size_t j = 0; j < n; j++) {
        p->bias[j] = (int32_t)(next() % 20000) - 10000;
        p->wscale[j] = 0.001f + (float)(next() % 1000) * 1e-5f;
        /* effective scales around 2^-13: outputs spread over int8 */
        p->mult[j] = (int32_t)((1u << 30) + next() % (1u << 30));
        p->shift[j] = -12 - (int32_t)(next() % 2);
    }
    return 0;
}

/* qprobe's gemm with one flavor (rq NULL: int32 output); GOP/s */
static double run_qp(const struct problem *p, const struct qp_rq *rq,
                     int threads, const char **variant)
{
    struct qp_gemm_s8_params gp = {
        .n = p->n, .k = p->k, .a_dtype = QP_DTYPE_I8, .b_dtype = QP_DTYPE_I8,
        .a_zero_point = -3, .bias = p->bias, .rq = rq, .threads = threads};
    struct qp_gemm_s8 g;
    struct qp_error err;
    if (qp_gemm_s8_prepare(&g, &gp, p->b, p->k, &err)) {
        fprintf(stderr, "bench-gemm: %s\n", err.msg);
        exit(1);
    }
    void *s = malloc(qp_gemm_s8_scratch_size(&g, p->m) + 1);
    double t;
    BEST(t, qp_gemm_s8_run(&g, p->a, p->m, p->k, p->c, p->n, s, &err));
    *variant = qp_gemm_s8_variant(&g);
    free(s);
    qp_gemm_s8_release(&g);
    return p->ops / t * 1e-9;
}

static double run_sgemm(const struct problem *p, int threads)
{
    openblas_set_num_threads(threads);
    double t;
    BEST(t, cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)p->m,
                        (int)p->n, (int)p->k, 1.0f, p->fa, (int)p->k, p->fb,
                        (int)p->k, 0.0f, p->fc, (int)p->n));
    return p->ops / t * 1e-9;
}

/* XNNPACK: qs8 fully connected (per-tensor scale) or qc8 1x1 convolution
 * (per-channel), as a [m, k] x [n, k]^T product */
static double run_xnnpack(const struct problem *p, int threads,
                          bool per_channel)
{
    pthreadpool_t pool = threads > 1 ? pthreadpool_create((size_t)threads)
                                     : NULL;
    xnn_operator_t op = NULL;
    enum xnn_status st;
    if (per_channel)
        st = xnn_create_convolution2d_nhwc_qc8(
            0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, p->k, p->n, p->k, p->n, -3,
            0.02f, p->wscale, p->b, p->bias, 0, 8.0f, -128, 127, 0, &op);
    else
        st = xnn_create_fully_connected_nc_qs8(
            p->k, p->n, p->k, p->n, -3, 0.02f, 0.004f, p->b, p->bias, 0,
            8.0f, -128, 127, 0, &op);
    if (st == xnn_status_success)
        st = per_channel
                 ? xnn_setup_convolution2d_nhwc_qc8(op, 1, p->m, 1, p->a,
                                                    p->c, pool)
                 : xnn_setup_fully_connected_nc_qs8(op, p->m, p->a, p->c,
                                                    pool);
    if (st != xnn_status_success) {
        fprintf(stderr, "bench-gemm: XNNPACK operator failed (%d)\n", st);
        exit(1);
    }
    double t;
    BEST(t, xnn_run_operator(op, pool));
    xnn_delete_operator(op);
    if (pool)
        pthreadpool_destroy(pool);
    return p->ops / t * 1e-9;
}

int main(int argc, char **argv)
{
    size_t m = 1024, n = 1024, k = 1024;
    if (argc == 4) {
        m = strtoul(argv[1], NULL, 10);
        n = strtoul(argv[2], NULL, 10);
        k = strtoul(argv[3], NULL, 10);
    }
    struct problem p;
    if (!m || !n || !k || problem_init(&p, m, n, k) ||
        xnn_initialize(NULL) != xnn_status_success) {
        fprintf(stderr, "bench-gemm: setup failed\n");
        return 1;
    }
    static const enum qp_rq_flavor flavors[] = {
        QP_RQ_TFLITE_DOUBLE, QP_RQ_TFLITE_SINGLE, QP_RQ_GEMMLOWP,
        QP_RQ_XNNPACK_FP32, QP_RQ_ORT};
    enum { NF = sizeof flavors / sizeof flavors[0] };
    printf("bench-gemm: int8 GEMM M=%zu N=%zu K=%zu, per-channel "
           "requantization; %s\n", m, n, k, qp_kern_describe());
    double best_qp[3] = {0}, sg[3], xq[3], xc[3];
    const char *best_flavor[3] = {0}, *variant = "";
    for (int th = 1; th <= 2; th++) {
        sg[th] = run_sgemm(&p, th);
        xq[th] = run_xnnpack(&p, th, false);
        xc[th] = run_xnnpack(&p, th, true);
        printf("\n%d thread%s\n", th, th > 1 ? "s" : "");
        printf("  %-40s %8.1f GFLOP/s\n", "OpenBLAS sgemm", sg[th]);
        printf("  %-40s %8.1f GOP/s\n", "XNNPACK qs8 fully-connected", xq[th]);
        printf("  %-40s %8.1f GOP/s\n", "XNNPACK qc8 1x1 conv (per-channel)",
               xc[th]);
        printf("  %-40s %8.1f GOP/s\n", "qprobe gemm-s8, int32 out (bound)",
               run_qp(&p, NULL, th, &variant));
        for (int f = 0; f < NF; f++) {
            struct qp_rq rq;
            struct qp_error err;
            enum qp_status st;
            if (qp_rq_flavor_fixed(flavors[f]))
                st = qp_rq_prepare_fixed(&rq, flavors[f], p.mult, p.shift, n,
                                         5, QP_DTYPE_I8, -128, 127, &err);
            else
                st = qp_rq_prepare_scales(&rq, flavors[f], 0.02f, p.wscale, n,
                                          8.0f, 5, QP_DTYPE_I8, -128, 127,
                                          &err);
            if (st) {
                fprintf(stderr, "bench-gemm: %s\n", err.msg);
                return 1;
            }
            double g = run_qp(&p, &rq, th, &variant);
            char label[80];
            snprintf(label, sizeof label, "qprobe %s, %s", variant,
                     qp_rq_flavor_name(flavors[f]));
            printf("  %-40s %8.1f GOP/s  (%.2fx sgemm, %.2fx XNNPACK)\n",
                   label, g, g / sg[th], g / xq[th]);
            if (g > best_qp[th]) {
                best_qp[th] = g;
                best_flavor[th] = qp_rq_flavor_name(flavors[f]);
            }
            qp_rq_release(&rq);
        }
    }
    printf("\nratio 2 threads: qprobe %s %.1f GOP/s = %.2fx sgemm, %.2fx "
           "XNNPACK qs8 fc, %.2fx XNNPACK qc8 conv\n", best_flavor[2],
           best_qp[2], best_qp[2] / sg[2], best_qp[2] / xq[2],
           best_qp[2] / xc[2]);
    printf("ratio 1 thread:  qprobe %s %.1f GOP/s = %.2fx sgemm, %.2fx "
           "XNNPACK qs8 fc, %.2fx XNNPACK qc8 conv\n", best_flavor[1],
           best_qp[1], best_qp[1] / sg[1], best_qp[1] / xq[1],
           best_qp[1] / xc[1]);
    return 0;
}
