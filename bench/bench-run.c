/* bench/bench-run.c: the model runtime on the PP-OCRv4 detector,
 * recognizer and classifier (fetched by scripts/fetch-models.sh; run from
 * the repository root, as `make bench` does).
 *
 * For each model, in a child process of its own (so its peak RSS is its
 * own): the fp32 forward time per image (best of several runs after a
 * warm-up), the multiply-accumulates of its Conv/ConvTranspose/MatMul/Gemm
 * nodes from static shape inference, and the time those FLOPs (2 per MAC)
 * would take at the sgemm speed measured in the same process just before
 * (qp_blas_sgemm, 512x512x512, same threads): efficiency = that ideal time
 * / the forward time. Then the int mode (w8c+a8t, tflite requantization,
 * calibrated on the same input) time per image, and its ratio to fp32.
 * Also the peak bytes of live activations (the executor's own count) and
 * the process's peak RSS (both modes).
 *
 *   build/bench/bench-run [MODEL.onnx N,C,H,W]...
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/parallel.h"
#include "kernels/blas.h"
#include "model/exec.h"
#include "model/infer.h"
#include "model/onnx-import.h"
#include "model/qplan.h"

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* GFLOP/s of a 512^3 sgemm on the threads the runtime uses, best of 7. */
static double sgemm_gflops(void)
{
    struct qp_pool *pool = qp_pool_new(0);
    size_t n = 512;
    float *a = malloc(n * n * 4), *b = malloc(n * n * 4), *c = malloc(n * n * 4);
    if (!a || !b || !c)
        return 0;
    for (size_t i = 0; i < n * n; i++) {
        a[i] = (float)(i % 7) * 0.1f;
        b[i] = (float)(i % 5) * 0.2f;
    }
    double best = 1e9;
    for (int r = 0; r < 7; r++) {
        double t0 = now();
        qp_blas_sgemm(pool, false, false, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n);
        double t = now() - t0;
        best = t < best ? t : best;
    }
    free(a);
    free(b);
    free(c);
    qp_pool_free(pool);
    return 2.0 * (double)(n * n * n) / best / 1e9;
}

struct result {
    double ms, int_ms, gmacs, ideal_ms, gflops;
    double peak_act_mib;
    int unknown;
};

/* Best time per run of g on feed (hooks may be NULL), after a warm-up. */
static int best_time(const struct qp_graph *g, const struct qp_tensor *const *feed,
                     const struct qp_exec_hooks *h, double *best,
                     struct qp_exec_stats *st, struct qp_error *err)
{
    struct qp_tensor *outs[8] = {0};
    struct qp_exec_opts o = {NULL, NULL, NULL, h, NULL};
    double spent = 0;
    *best = 1e9;
    for (int run = 0; run < 12 && (run < 4 || spent < 3.0); run++) {
        double t0 = now();
        if (qp_exec_run(g, feed, 1, &o, outs, st, err))
            return 1;
        double t = now() - t0;
        spent += t;
        if (run > 0 && t < *best) /* the first run warms up */
            *best = t;
        for (int k = 0; k < g->n_outputs && k < 8; k++)
            qp_tensor_free(outs[k]);
    }
    return 0;
}

/* The int mode's best time: w8c+a8t, tflite, calibrated on feed. */
static int int_time(const struct qp_graph *g, const struct qp_tensor *const *feed,
                    double *best, struct qp_error *err)
{
    struct qp_scheme sc;
    struct qp_qplan *p = NULL;
    struct qp_qplan_opts o = {QP_MODE_INT, &sc, NULL, QP_RQ_TFLITE_DOUBLE};
    struct qp_exec_hooks h;
    int rc = 1;
    if (!qp_scheme_parse("w8c+a8t", &sc, NULL, err) &&
        !qp_qplan_new(g, &o, &p, err) && !qp_qplan_calibrate(p, feed, err) &&
        !qp_qplan_finish(p, err)) {
        qp_qplan_hooks(p, &h);
        rc = best_time(g, feed, &h, best, NULL, err);
    }
    qp_qplan_free(p);
    return rc;
}

static int bench_model(const char *path, const int64_t *shape, struct result *r)
{
    struct qp_error err;
    struct qp_graph *g;
    if (qp_model_load_onnx(path, NULL, &g, &err)) {
        fprintf(stderr, "bench-run: %s\n", err.msg);
        return 1;
    }
    if (g->n_inputs != 1) {
        fprintf(stderr, "bench-run: %s: one input expected\n", path);
        qp_graph_free(g);
        return 1;
    }
    struct qp_tdesc in = {QP_DTYPE_F32, 4, {shape[0], shape[1], shape[2], shape[3]}};
    struct qp_tdesc *d = calloc((size_t)g->n_values, sizeof *d);
    bool *known = calloc((size_t)g->n_values, 1);
    struct qp_tensor *x = NULL;
    int rc = 1;
    if (!d || !known || qp_graph_infer(g, &in, d, known, &err) ||
        qp_tensor_new(g->values[g->inputs[0]].name, QP_DTYPE_F32, 4, in.shape, &x,
                      &err)) {
        fprintf(stderr, "bench-run: %s: %s\n", path, err.msg);
        goto out;
    }
    r->gmacs = (double)qp_graph_count_macs(g, d, known, &r->unknown) / 1e9;
    for (size_t i = 0; i < qp_tensor_numel(x); i++)
        ((float *)x->data)[i] = (float)((i * 2654435761u) % 1000) / 500.0f - 1.0f;
    const struct qp_tensor *feed[1] = {x};
    double best, best_int;
    struct qp_exec_stats st = {0};
    if (best_time(g, feed, NULL, &best, &st, &err) ||
        int_time(g, feed, &best_int, &err)) {
        fprintf(stderr, "bench-run: %s: %s\n", path, err.msg);
        goto out;
    }
    r->gflops = sgemm_gflops();
    r->ms = best * 1e3 / (double)shape[0];
    r->int_ms = best_int * 1e3 / (double)shape[0];
    r->ideal_ms = 2.0 * r->gmacs / r->gflops * 1e3 / (double)shape[0];
    r->peak_act_mib = (double)st.peak_bytes / (1 << 20);
    rc = 0;
out:
    qp_tensor_free(x);
    free(d);
    free(known);
    qp_graph_free(g);
    return rc;
}

/* Runs one model in a child; prints its line. */
static int child_run(const char *label, const char *path, const int64_t *shape)
{
    int fd[2];
    if (pipe(fd))
        return 1;
    pid_t pid = fork();
    if (pid == 0) {
        close(fd[0]);
        struct result r = {0};
        int rc = bench_model(path, shape, &r);
        if (write(fd[1], &r, sizeof r) != (ssize_t)sizeof r)
            rc = 1;
        _exit(rc);
    }
    close(fd[1]);
    struct result r;
    ssize_t got = read(fd[0], &r, sizeof r);
    close(fd[0]);
    int status;
    struct rusage ru;
    if (pid < 0 || wait4(pid, &status, 0, &ru) < 0 || !WIFEXITED(status) ||
        WEXITSTATUS(status) || got != (ssize_t)sizeof r) {
        printf("%-4s FAILED\n", label);
        return 1;
    }
    printf("%-4s [%lld,%lld,%lld,%lld] fp32 %8.2f ms/image | %.3f GMAC conv+matmul "
           "-> %.2f ms at sgemm's %.1f GFLOP/s | efficiency %.2f | int %8.2f "
           "ms/image (%.2fx fp32) | peak activations %.1f MiB, peak RSS %.1f "
           "MiB%s\n",
           label, (long long)shape[0], (long long)shape[1], (long long)shape[2],
           (long long)shape[3], r.ms, r.gmacs, r.ideal_ms, r.gflops,
           r.ideal_ms / r.ms, r.int_ms, r.int_ms / r.ms, r.peak_act_mib,
           (double)ru.ru_maxrss / 1024, r.unknown ? " (some shapes unknown)" : "");
    return 0;
}

static bool parse_shape(const char *s, int64_t *shape)
{
    return sscanf(s, "%lld,%lld,%lld,%lld", (long long *)&shape[0],
                  (long long *)&shape[1], (long long *)&shape[2],
                  (long long *)&shape[3]) == 4;
}

int main(int argc, char **argv)
{
    printf("bench-run: %d threads; OpenBLAS %s\n", qp_parallel_threads(),
           qp_blas_describe());
    fflush(stdout);
    int fails = 0;
    if (argc > 2) {
        for (int i = 1; i + 1 < argc; i += 2) {
            int64_t shape[4];
            if (!parse_shape(argv[i + 1], shape)) {
                fprintf(stderr, "bench-run: bad shape '%s'\n", argv[i + 1]);
                return 2;
            }
            fails += child_run("model", argv[i], shape);
        }
        return fails ? 1 : 0;
    }
    FILE *p = popen("sh scripts/fetch-models.sh ppocr-v4", "r");
    char line[512], paths[3][512] = {{0}};
    static const char *const keys[3] = {"_det_", "_rec_", "_cls_"};
    static const char *const labels[3] = {"det", "rec", "cls"};
    static const int64_t shapes[3][4] = {{1, 3, 640, 640}, {1, 3, 48, 320},
                                         {1, 3, 48, 192}};
    while (p && fgets(line, sizeof line, p)) {
        line[strcspn(line, "\n")] = '\0';
        for (int k = 0; k < 3; k++)
            if (strstr(line, keys[k]))
                snprintf(paths[k], sizeof paths[k], "%s", line);
    }
    if (!p || pclose(p) != 0 || !paths[0][0] || !paths[1][0] || !paths[2][0]) {
        fprintf(stderr, "bench-run: scripts/fetch-models.sh ppocr-v4 failed "
                "(run from the repository root)\n");
        return 1;
    }
    for (int k = 0; k < 3; k++) {
        fflush(stdout);
        fails += child_run(labels[k], paths[k], shapes[k]);
    }
    return fails ? 1 : 0;
}
