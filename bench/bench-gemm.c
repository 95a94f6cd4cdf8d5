/* bench/bench-gemm.c: int8 GEMM speed, M = N = K = 1024 with per-channel
 * requantization, beside OpenBLAS sgemm (qp_blas_sgemm, as qprobe's fp32
 * paths run it) and XNNPACK's qs8 fully-connected (and its per-channel qc8
 * 1x1 convolution) on the same shape, measured in the same process with 2
 * and 1 threads, each contender prepared once and timed in two passes
 * (best time). Prints GOP/s (2*M*N*K / s) and the ratios; the lines
 * "ratio ..." are the summary (the fastest requantizing flavor). Ratios
 * "x sgemm" are against the best sgemm of the machine: the same product
 * also timed on every OpenBLAS core this CPU runs (bench/bench.h), whose
 * speeds the line "sgemm ... by OpenBLAS core" lists.
 *
 *   build/bench/bench-gemm [M N K]
 */
#include <pthreadpool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <xnnpack.h>

#include "bench/bench.h"
#include "core/parallel.h"
#include "kernels/gemm-s8.h"

#define REPS 9
#define MAX_RUNS 12

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

/* One contender: run() does the whole product once. */
struct run {
    char label[64];
    void (*fn)(struct run *r);
    const struct problem *p;
    int threads;
    struct qp_gemm_s8 g;   /* qprobe */
    struct qp_rq rq;
    void *scratch;
    xnn_operator_t op;     /* XNNPACK */
    pthreadpool_t pool;
    struct qp_pool *qpool; /* sgemm */
    double best;           /* seconds */
};

static void run_sgemm(struct run *r)
{
    const struct problem *p = r->p;
    qp_blas_sgemm(r->qpool, false, true, p->m, p->n, p->k, 1.0f, p->fa, p->k,
                  p->fb, p->k, 0.0f, p->fc, p->n);
}

static void run_xnn(struct run *r)
{
    xnn_run_operator(r->op, r->pool);
}

static void run_qp(struct run *r)
{
    const struct problem *p = r->p;
    qp_gemm_s8_run(&r->g, p->a, p->m, p->k, p->c, p->n, r->scratch, NULL);
}

static void die(const char *what)
{
    fprintf(stderr, "bench-gemm: %s\n", what);
    exit(1);
}

/* XNNPACK: qs8 fully connected (per-tensor scale) or qc8 1x1 convolution
 * (per-channel), as a [m, k] x [n, k]^T product */
static void add_xnn(struct run *r, bool per_channel)
{
    const struct problem *p = r->p;
    r->pool = r->threads > 1 ? pthreadpool_create((size_t)r->threads) : NULL;
    enum xnn_status st;
    if (per_channel)
        st = xnn_create_convolution2d_nhwc_qc8(
            0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, p->k, p->n, p->k, p->n, -3,
            0.02f, p->wscale, p->b, p->bias, 0, 8.0f, -128, 127, 0, &r->op);
    else
        st = xnn_create_fully_connected_nc_qs8(
            p->k, p->n, p->k, p->n, -3, 0.02f, 0.004f, p->b, p->bias, 0,
            8.0f, -128, 127, 0, &r->op);
    if (st == xnn_status_success)
        st = per_channel
                 ? xnn_setup_convolution2d_nhwc_qc8(r->op, 1, p->m, 1, p->a,
                                                    p->c, r->pool)
                 : xnn_setup_fully_connected_nc_qs8(r->op, p->m, p->a, p->c,
                                                    r->pool);
    if (st != xnn_status_success)
        die("XNNPACK operator failed");
    snprintf(r->label, sizeof r->label, "XNNPACK %s",
             per_channel ? "qc8 1x1 conv (per-channel)"
                         : "qs8 fully-connected");
    r->fn = run_xnn;
}

/* qprobe's gemm in flavor f (f == QP_RQ_COUNT: int32 output) */
static void add_qp(struct run *r, enum qp_rq_flavor f)
{
    const struct problem *p = r->p;
    struct qp_error err;
    enum qp_status st = QP_OK;
    if (f != QP_RQ_COUNT && qp_rq_flavor_fixed(f))
        st = qp_rq_prepare_fixed(&r->rq, f, p->mult, p->shift, p->n, 5,
                                 QP_DTYPE_I8, -128, 127, &err);
    else if (f != QP_RQ_COUNT)
        st = qp_rq_prepare_scales(&r->rq, f, 0.02f, p->wscale, p->n, 8.0f, 5,
                                  QP_DTYPE_I8, -128, 127, &err);
    struct qp_gemm_s8_params gp = {
        .n = p->n, .k = p->k, .a_dtype = QP_DTYPE_I8, .b_dtype = QP_DTYPE_I8,
        .a_zero_point = -3, .bias = p->bias,
        .rq = f == QP_RQ_COUNT ? NULL : &r->rq, .threads = r->threads};
    if (st || qp_gemm_s8_prepare(&r->g, &gp, p->b, p->k, &err))
        die(err.msg);
    r->scratch = malloc(qp_gemm_s8_scratch_size(&r->g, p->m) + 1);
    if (!r->scratch)
        die("out of memory");
    snprintf(r->label, sizeof r->label, "qprobe %s, %s",
             qp_gemm_s8_variant(&r->g),
             f == QP_RQ_COUNT ? "int32 out (bound)" : qp_rq_flavor_name(f));
    r->fn = run_qp;
}

static void release(struct run *r)
{
    qp_pool_free(r->qpool);
    if (r->op)
        xnn_delete_operator(r->op);
    if (r->pool)
        pthreadpool_destroy(r->pool);
    if (r->fn == run_qp) {
        qp_gemm_s8_release(&r->g);
        qp_rq_release(&r->rq);
        free(r->scratch);
    }
}

/* Runs each contender REPS times in a row after a warm-up, twice over
 * (so that a burst of load from other processes does not decide alone),
 * keeping the best time. A pause before each contender lets the previous
 * one's worker threads (OpenBLAS and pthreadpool spin after a run) go
 * idle instead of competing for the cores. */
static void race(struct run *runs, int n)
{
    for (int i = 0; i < n; i++)
        runs[i].best = 1e30;
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < n; i++) {
            nanosleep(&(struct timespec){0, 200000000}, NULL);
            runs[i].fn(&runs[i]);
            for (int rep = 0; rep < REPS; rep++) {
                double t0 = bench_now();
                runs[i].fn(&runs[i]);
                double t = bench_now() - t0;
                if (t < runs[i].best)
                    runs[i].best = t;
            }
        }
}

int main(int argc, char **argv)
{
    bench_start("bench-gemm", argc, argv);
    size_t m = 1024, n = 1024, k = 1024;
    if (argc == 4) {
        m = strtoul(argv[1], NULL, 10);
        n = strtoul(argv[2], NULL, 10);
        k = strtoul(argv[3], NULL, 10);
    }
    struct problem p;
    if (!m || !n || !k || problem_init(&p, m, n, k) ||
        xnn_initialize(NULL) != xnn_status_success)
        die("setup failed");
    static const enum qp_rq_flavor flavors[] = {
        QP_RQ_COUNT, QP_RQ_TFLITE_DOUBLE, QP_RQ_TFLITE_SINGLE,
        QP_RQ_GEMMLOWP, QP_RQ_XNNPACK_FP32, QP_RQ_ORT};
    enum { NF = sizeof flavors / sizeof flavors[0], FIRST_QP = 3 };
    printf("bench-gemm: int8 GEMM M=%zu N=%zu K=%zu, per-channel "
           "requantization\n", m, n, k);
    for (int th = 2; th >= 1; th--) {
        struct bench_core cores[8];
        int bc, nc = bench_sgemm_cores((struct bench_mnk){m, n, k}, th, cores,
                                       8, &bc);
        struct run runs[MAX_RUNS] = {0};
        int nr = 0;
        runs[nr] = (struct run){.fn = run_sgemm, .p = &p, .threads = th,
                                .qpool = qp_pool_new(th)};
        snprintf(runs[nr++].label, sizeof runs[0].label, "OpenBLAS sgemm (%s)",
                 qp_blas_core());
        for (int pc = 0; pc < 2; pc++) {
            runs[nr] = (struct run){.p = &p, .threads = th};
            add_xnn(&runs[nr++], pc);
        }
        for (int f = 0; f < NF; f++) {
            runs[nr] = (struct run){.p = &p, .threads = th};
            add_qp(&runs[nr++], flavors[f]);
        }
        race(runs, nr);
        /* the best sgemm: this process's (just raced) or another core's */
        double sg = p.ops / runs[0].best * 1e-9;
        const char *sg_core = qp_blas_core();
        if (cores[bc].gflops > sg) {
            sg = cores[bc].gflops;
            sg_core = cores[bc].name;
        }
        double xq = p.ops / runs[1].best * 1e-9;
        double xc = p.ops / runs[2].best * 1e-9;
        int best = FIRST_QP + 1; /* fastest requantizing flavor */
        printf("\n%d thread%s\n", th, th > 1 ? "s" : "");
        bench_print_cores("bench-gemm", (struct bench_mnk){m, n, k}, th, cores,
                          nc, bc);
        for (int i = 0; i < nr; i++) {
            double g = p.ops / runs[i].best * 1e-9;
            printf("  %-40s %8.1f %s", runs[i].label, g,
                   i ? "GOP/s" : "GFLOP/s");
            if (i >= FIRST_QP)
                printf("  (%.2fx sgemm, %.2fx XNNPACK fc)", g / sg, g / xq);
            printf("\n");
            if (i > FIRST_QP && runs[i].best < runs[best].best)
                best = i;
        }
        double g = p.ops / runs[best].best * 1e-9;
        printf("ratio %d thread%s: %s %.1f GOP/s = %.2fx sgemm (best: %s "
               "%.1f GFLOP/s), %.2fx XNNPACK qs8 fc, %.2fx XNNPACK qc8 conv\n",
               th, th > 1 ? "s" : "", runs[best].label, g, g / sg, sg_core, sg,
               g / xq, g / xc);
        for (int i = 0; i < nr; i++)
            release(&runs[i]);
    }
    return 0;
}
