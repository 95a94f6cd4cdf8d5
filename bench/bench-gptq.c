/* bench/bench-gptq.c: GPTQ on one [4096, 4096] layer with 128 x 2048
 * calibration tokens, w4g128, as the acceptance case.
 *
 *   hessian : the streamed accumulation (qp_hessian_add, 128 batches of
 *             2048 tokens; the inputs are generated batch by batch outside
 *             the timing), in GFLOP/s counting the SYRK's n(n+1)k, as a
 *             ratio of OpenBLAS's own sgemm and ssyrk on one batch's shape
 *             ([2048, 4096]^T [2048, 4096]) with as many threads, measured
 *             in the same process (goal >= 0.8)
 *   quantize: qp_gptq_quantize's time against its FLOP count (SPOTRF +
 *             STRTRI n^3/3 each, the lazy-batch GEMMs and the in-block
 *             updates) at that sgemm speed
 *   error   : the output reconstruction error on the calibration inputs,
 *             GPTQ and RTN on the same grid, and the reference's loss
 *   rss     : the run's peak resident set (getrusage)
 *
 * The inputs are a deterministic function of their index (splitmix64
 * hashes, see input()), cheap to regenerate in another program, so a run
 * of another GPTQ implementation can use the same X and W.
 *
 *   build/bench/bench-gptq [ROWS COLS BATCHES [SCHEME [even]]]
 * (defaults 4096 4096 128 w4g128@gptq; "even" rounds half to even) */
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "kernels/blas.h"
#include "quant/gptq.h"
#include "quant/hessian.h"
#include "quant/rtn.h"

#define TOKENS 2048 /* per batch (one sequence) */

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* CPU seconds of the whole process (all threads): robust to a busy
 * machine where wall time is not. */
static double cpu(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static inline uint64_t mix(uint64_t z)
{
    z = (z + 1) * 0x9E3779B97F4A7C15ull;
    z ^= z >> 30;
    z *= 0xBF58476D1CE4E5B9ull;
    z ^= z >> 27;
    z *= 0x94D049BB133111EBull;
    z ^= z >> 31;
    return z;
}

/* Uniform in [-0.5, 0.5), exactly representable. */
static inline float unif(uint64_t i)
{
    return (float)(mix(i) >> 40) * 0x1p-24f - 0.5f;
}

#define SEED_X 0x1000000000000ull
#define SEED_W 0x2000000000000ull

/* Rows [g0, g0 + n) of X [*, cols]: x_j = s_j (u_j + 0.5 u_{j-1} + 0.8 v)
 * with u, v uniform per (token, column) and per token, s_j in [0.25,
 * 2.25) a fixed pseudo-random spread over the columns. */
static void input(float *x, size_t g0, size_t n, size_t cols)
{
    for (size_t t = 0; t < n; t++) {
        uint64_t base = SEED_X + (g0 + t) * (cols + 1);
        float v = 0.8f * unif(base + cols), prev = 0;
        float *row = x + t * cols;
        for (size_t j = 0; j < cols; j++) {
            float u = unif(base + j);
            float s = 0.25f + (float)((j * 2654435761u) % 4096u) / 2048.0f;
            row[j] = s * (u + 0.5f * prev + v);
            prev = u;
        }
    }
}

/* W [rows, cols]: 0.04 (u1 + u2 + u3). */
static void weight(float *w, size_t rows, size_t cols)
{
    size_t n = rows * cols;
    for (size_t i = 0; i < n; i++)
        w[i] = 0.04f * (unif(SEED_W + 3 * i) + unif(SEED_W + 3 * i + 1) +
                        unif(SEED_W + 3 * i + 2));
}

static double peak_rss_mb(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_maxrss / 1024.0;
}

/* Best of reps runs of OpenBLAS's own sgemm (full X^T X) and ssyrk on x
 * [k, n], with its own nt threads; GFLOP/s in *gemm, *syrk. */
static void baseline(const float *x, size_t n, size_t k, int nt, float *c,
                     double *gemm, double *syrk)
{
    openblas_set_num_threads(nt);
    double tg = 1e30, ts = 1e30;
    for (int r = 0; r < 3; r++) {
        double t0 = now();
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)n, (int)n,
                    (int)k, 1.0f, x, (int)n, x, (int)n, 0.0f, c, (int)n);
        double t1 = now();
        cblas_ssyrk(CblasRowMajor, CblasLower, CblasTrans, (int)n, (int)k, 1.0f,
                    x, (int)n, 0.0f, c, (int)n);
        double t2 = now();
        tg = t1 - t0 < tg ? t1 - t0 : tg;
        ts = t2 - t1 < ts ? t2 - t1 : ts;
    }
    *gemm = 2.0 * n * n * k / tg / 1e9;
    *syrk = (double)n * (n + 1) * k / ts / 1e9;
    openblas_set_num_threads(1);
}

/* GPTQ's FLOPs after the Hessian: factorization and the column loop. */
static double quant_flops(size_t rows, size_t cols, size_t blk)
{
    double n = (double)cols, f = 2 * n * n * n / 3;
    for (size_t i1 = 0; i1 < cols; i1 += blk) {
        size_t i2 = i1 + blk < cols ? i1 + blk : cols, b = i2 - i1;
        f += 2.0 * rows * b * (cols - i2);  /* lazy batch */
        f += (double)rows * b * (b - 1);    /* in-block updates */
    }
    return f;
}

int main(int argc, char **argv)
{
    size_t rows = argc > 3 ? (size_t)atoll(argv[1]) : 4096;
    size_t cols = argc > 3 ? (size_t)atoll(argv[2]) : 4096;
    size_t batches = argc > 3 ? (size_t)atoll(argv[3]) : 128;
    const char *scheme = argc > 4 ? argv[4] : "w4g128@gptq";
    enum qp_round rnd = argc > 5 && !strcmp(argv[5], "even") ?
                        QP_ROUND_HALF_EVEN : QP_ROUND_HALF_AWAY;
    struct qp_scheme sc;
    struct qp_error err;
    if (!rows || !cols || !batches || qp_scheme_parse(scheme, &sc, NULL, &err)) {
        fprintf(stderr, "usage: bench-gptq [ROWS COLS BATCHES [SCHEME [even]]]\n");
        return 2;
    }
    int nt = qp_blas_threads();
    float *x = malloc(TOKENS * cols * sizeof *x), *c = malloc(cols * cols * 4);
    int64_t shape[2] = {(int64_t)rows, (int64_t)cols};
    struct qp_tensor *w;
    struct qp_hessian *h;
    if (!x || !c || qp_tensor_new("layer.weight", QP_DTYPE_F32, 2, shape, &w, &err) ||
        qp_hessian_new("layer", cols, NULL, &h, &err)) {
        fprintf(stderr, "bench-gptq: out of memory\n");
        return 1;
    }
    printf("bench-gptq: W [%zu, %zu], %zu x %d tokens, %s (%s), %d threads, "
           "%s\n", rows, cols, batches, TOKENS, scheme, qp_round_name(rnd), nt,
           qp_blas_describe());
    input(x, 0, TOKENS, cols);
    double g_gemm, g_syrk;
    baseline(x, cols, TOKENS, nt, c, &g_gemm, &g_syrk);
    free(c);

    double th = 0, tgen = 0, ch = 0, tbest = 1e30;
    for (size_t b = 0; b < batches; b++) {
        double t0 = now();
        if (b)
            input(x, b * TOKENS, TOKENS, cols);
        double t1 = now(), c1 = cpu();
        if (qp_hessian_add(h, x, TOKENS, cols, &err)) {
            fprintf(stderr, "bench-gptq: %s\n", err.msg);
            return 1;
        }
        double tb = now() - t1;
        th += tb;
        tbest = tb < tbest ? tb : tbest;
        ch += cpu() - c1;
        tgen += t1 - t0;
    }
    /* the baselines again: on a busy machine the best of both is the
     * fairest measure of each one's own speed */
    double g2_gemm, g2_syrk;
    if ((c = malloc(cols * cols * 4))) {
        baseline(x, cols, TOKENS, nt, c, &g2_gemm, &g2_syrk);
        free(c);
        g_gemm = g2_gemm > g_gemm ? g2_gemm : g_gemm;
        g_syrk = g2_syrk > g_syrk ? g2_syrk : g_syrk;
    }
    free(x);
    double hflops = (double)cols * (cols + 1) * TOKENS * (double)batches;
    double g_h = hflops / th / 1e9;
    double g_hb = (double)cols * (cols + 1) * TOKENS / tbest / 1e9;
    printf("  openblas sgemm   %7.1f GFLOP/s (X^T X of one batch, %d threads)\n",
           g_gemm, nt);
    printf("  openblas ssyrk   %7.1f GFLOP/s\n", g_syrk);
    printf("  hessian          %7.2f s  %7.1f GFLOP/s  = %.2f x sgemm, %.2f x "
           "ssyrk (%.1f CPU s; inputs generated in %.1f s, not counted)\n", th,
           g_h, g_h / g_gemm, g_h / g_syrk, ch, tgen);
    printf("  best batch       %7.1f GFLOP/s  = %.2f x sgemm, %.2f x ssyrk (the "
           "baselines are the best of 6 runs, before and after)\n", g_hb,
           g_hb / g_gemm, g_hb / g_syrk);
    printf("  ratio hessian/sgemm %.2f overall, %.2f best batch (goal >= 0.8); "
           "as a GEMM accumulation (the reference's X^T X) it would take "
           "%.2f s\n", g_h / g_gemm, g_hb / g_gemm, 2 * hflops / g_gemm / 1e9);

    weight(w->data, rows, cols);
    struct qp_gptq_opts o = {&sc.w, rnd, NULL, NULL};
    struct qp_gptq_result res;
    double cq = cpu();
    if (qp_gptq_quantize(w, h, &o, &res, &err)) {
        fprintf(stderr, "bench-gptq: %s\n", err.msg);
        return 1;
    }
    cq = cpu() - cq;
    double rss_q = peak_rss_mb();
    size_t blk = sc.w.gptq.block ? (size_t)sc.w.gptq.block : QP_GPTQ_BLOCK_DEFAULT;
    double qf = quant_flops(rows, cols, blk < cols ? blk : cols);
    double at_gemm = qf / (g_gemm * 1e9);
    printf("  quantize         %7.2f s  (%.1f GFLOP; %.2f s at sgemm speed: "
           "ratio %.2f; %.1f CPU s) damp %g retries %d\n", res.seconds, qf / 1e9,
           at_gemm, res.seconds / at_gemm, cq, res.damp, res.retries);
    printf("  total            %7.2f s  (hessian + quantize; %.1f CPU s)\n",
           th + res.seconds, ch + cq);
    /* the goal: 5x faster than the reference's 38 s (2 threads);
     * the bound is the SYRK's FLOPs at the best BLAS-3 rate of this run */
    double blas = g_gemm > g_syrk ? g_gemm : g_syrk, goal = 38.0 / 5;
    printf("  ratio total/reference %.2f (reference 38 s, goal <= 0.20); the "
           "hessian's %.2f TFLOP alone take %.2f s at this run's best BLAS-3 "
           "rate (%.1f GFLOP/s) = %.2f x the goal's %.1f s\n",
           (th + res.seconds) / 38.0, hflops / 1e12, hflops / blas / 1e9, blas,
           hflops / blas / 1e9 / goal, goal);

    /* errors: GPTQ and RTN on the same grid */
    float *dg = malloc(rows * cols * sizeof *dg);
    struct qp_tensor *rq;
    struct qp_wquant_opts ro = {rnd, QP_WLAYOUT_TORCH};
    struct qp_wscheme rs = sc.w;
    rs.algo = QP_WALGO_RTN;
    rs.gptq = (struct qp_gptq_options){0};
    if (!dg || qp_gptq_dequantize(res.q, res.g_idx, dg, &err) ||
        qp_rtn_quantize(w, &rs, &ro, &rq, &err)) {
        fprintf(stderr, "bench-gptq: %s\n", dg ? err.msg : "out of memory");
        return 1;
    }
    double loss = res.loss;
    qp_gptq_result_release(&res);
    float *dr = malloc(rows * cols * sizeof *dr);
    if (!dr)
        return 1;
    qp_tensor_read_f32(rq, 0, rows * cols, dr);
    qp_tensor_free(rq);
    const float *what[2] = {dg, dr};
    double rel[2];
    double t0 = now();
    if (qp_hessian_output_error(h, w->data, rows, what, 2, rel, &err)) {
        fprintf(stderr, "bench-gptq: %s\n", err.msg);
        return 1;
    }
    printf("  output error     gptq %.6g  rtn %.6g  (ratio %.3f; %.1f s from H)\n",
           rel[0], rel[1], rel[0] / rel[1], now() - t0);
    printf("  loss             %.6g (reference's \"error\": x %d tokens per "
           "sequence = %.6g)\n", loss, TOKENS, loss * TOKENS);
    printf("  peak rss         %7.1f MB after quantize, %.1f MB at the end\n",
           rss_q, peak_rss_mb());
    free(dg);
    free(dr);
    qp_hessian_free(h);
    qp_tensor_free(w);
    return 0;
}
