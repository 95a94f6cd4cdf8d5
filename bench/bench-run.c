/* bench/bench-run.c: the model runtime on the PP-OCRv4 detector,
 * recognizer and classifier (fetched by scripts/fetch-models.sh; run from
 * the repository root, as `make bench` does).
 *
 * For each model, in a child process of its own (so its peak RSS is its
 * own): the fp32 forward time per image (best of several runs after a
 * warm-up), and ONNX Runtime's time on the same model, input and number
 * of threads, measured just before and just after by bench/ort-time.js
 * (the better of the two; when node and the pinned onnxruntime-node of
 * scripts/ort-setup.sh are available): their ratio is the headline. Then the multiply-accumulates of the
 * Conv/ConvTranspose/MatMul/Gemm nodes from static shape inference, and
 * the time those FLOPs (2 per MAC) would take at the best sgemm speed of
 * the machine (qp_blas_sgemm, 512x512x512, same threads, on every OpenBLAS
 * core this CPU runs: bench/bench.h): efficiency = that ideal time / the
 * forward time. Then the int mode
 * (w8c+a8t, tflite requantization, calibrated on the same input) time per
 * image, and its ratio to fp32. Also the peak bytes of live activations
 * (the executor's own count) and the process's peak RSS (both modes).
 *
 * --profile adds, per model, the fp32 time per operator type and the
 * slowest nodes (a fused pass counts as one, under its first node: "Conv
 * + fused elementwise" for a Conv with its activation as epilogue), from
 * the executor's per-node clock (qp_exec_run_tuned); then the same for the
 * int mode, each operator type with the way the int mode runs it ([int]
 * kernels, [table] lookups, [pass] moves on the integers, [float] through
 * dequantize / float operator / quantize).
 * --no-fusion runs both modes node by node.
 *
 *   build/bench/bench-run [--profile] [--no-fusion] [MODEL.onnx N,C,H,W]...
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench/bench.h"
#include "core/parallel.h"
#include "formats/npy.h"
#include "kernels/blas.h"
#include "model/exec.h"
#include "model/fuse.h"
#include "model/infer.h"
#include "model/onnx-import.h"
#include "model/qplan.h"

static double now(void)
{
    return bench_now();
}

struct result {
    double ms, int_ms, gmacs, ideal_ms, gflops, ort_ms;
    double peak_act_mib;
    int unknown;
};

struct bench_opts {
    bool profile, no_fusion;
    char ort_dir[512]; /* "" when ONNX Runtime is not available */
    double sgemm_gflops; /* the machine's best 512^3 sgemm */
};

/* Best time per run of g on feed (hooks and tune may be NULL), after a
 * warm-up. */
static int best_time(const struct qp_graph *g, const struct qp_tensor *const *feed,
                     const struct qp_exec_hooks *h,
                     const struct qp_exec_tune *tune, double *best,
                     struct qp_exec_stats *st, struct qp_error *err)
{
    struct qp_tensor *outs[8] = {0};
    struct qp_exec_opts o = {.hooks = h};
    double spent = 0;
    *best = 1e9;
    /* runs hand their buffers on, as a session's do */
    if (qp_exec_buffers_new(&o.buffers, err))
        return 1;
    for (int run = 0; run < 12 && (run < 4 || spent < 3.0); run++) {
        double t0 = now();
        if (qp_exec_run_tuned(g, feed, 1, &o, tune, outs, st, err)) {
            qp_exec_buffers_free(o.buffers);
            return 1;
        }
        double t = now() - t0;
        spent += t;
        if (run > 0 && t < *best) /* the first run warms up */
            *best = t;
        for (int k = 0; k < g->n_outputs && k < 8; k++)
            qp_tensor_free(outs[k]);
    }
    qp_exec_buffers_free(o.buffers);
    return 0;
}

/* A finished int-mode plan of g: w8c+a8t, tflite, calibrated on feed
 * (*out: the caller frees it). */
static int int_plan(const struct qp_graph *g, const struct qp_tensor *const *feed,
                    struct qp_qplan **out, struct qp_error *err)
{
    struct qp_scheme sc;
    struct qp_qplan_opts o = {.mode = QP_MODE_INT, .scheme = &sc,
        .flavor = QP_RQ_TFLITE_DOUBLE};
    *out = NULL;
    if (!qp_scheme_parse("w8c+a8t", &sc, NULL, err) &&
        !qp_qplan_new(g, &o, out, err) && !qp_qplan_calibrate(*out, feed, err) &&
        !qp_qplan_finish(*out, err))
        return 0;
    qp_qplan_free(*out);
    *out = NULL;
    return 1;
}

/* ---- per-operator profile -------------------------------------------- */

#define PROFILE_RUNS 5
#define PROFILE_TOP 15

struct prof_row {
    char label[96];
    int nodes;
    double s;
};

/* Adds s to the row labelled label (made when new). */
static void prof_add(struct prof_row *rows, int *n, int max, const char *label,
                     int nodes, double s)
{
    int i = 0;
    while (i < *n && strcmp(rows[i].label, label))
        i++;
    if (i == *n) {
        if (*n == max)
            return;
        snprintf(rows[i].label, sizeof rows[i].label, "%s", label);
        rows[i].nodes = 0;
        rows[i].s = 0;
        (*n)++;
    }
    rows[i].nodes += nodes;
    rows[i].s += s;
}

static int by_time(const void *a, const void *b)
{
    double x = ((const struct prof_row *)a)->s, y = ((const struct prof_row *)b)->s;
    return x < y ? 1 : x > y ? -1 : 0;
}

/* "Conv p2o.Conv.3 -> [1,32,160,160]" or, for a fused pass, its nodes'
 * operators "Mul+Add+Clip (p2o.Mul.0 ...) -> [...]". */
static void pass_label(const struct qp_graph *g, const int *pass, int first,
                       const struct qp_tdesc *d, const bool *known, char *buf,
                       size_t size)
{
    const struct qp_node *n = &g->nodes[first];
    size_t o = 0;
    int members = 0;
    for (int i = 0; i < g->n_nodes && o + 16 < size / 2; i++)
        if (pass[i] == first)
            o += (size_t)snprintf(buf + o, size / 2 - o, "%s%s",
                                  members++ ? "+" : "", g->nodes[i].op_type);
    o += (size_t)snprintf(buf + o, size - o, " %s", n->name);
    int v = n->out[0];
    if (v >= 0 && known[v] && o + 8 < size) {
        char sh[64];
        qp_shape_str(d[v].ndim, d[v].shape, sh, sizeof sh);
        snprintf(buf + o, size - o, " -> %s", sh);
    }
}

/* How plan runs node i in the int mode ("" without a plan). */
static const char *int_way(const struct qp_qplan *plan, int i)
{
    static const char *const kinds[] = {" [float]", " [pass]", " [int]",
                                        " [int]", " [int]", " [int add]", " [8da4w]"};
    _Static_assert(sizeof kinds / sizeof kinds[0] == QP_QK_COUNT, "kinds");
    if (!plan)
        return "";
    const struct qp_qnode *q = &plan->n[i];
    if (q->kind == QP_QK_FLOAT && q->lut_ok)
        return " [table]";
    return (unsigned)q->kind < QP_QK_COUNT ? kinds[q->kind] : "";
}

/* Prints the time per operator type (fused passes as "fused elementwise";
 * with an int plan, each type with the way the int mode runs it) and the
 * slowest passes, averaged over PROFILE_RUNS, of g run with hooks h (NULL:
 * fp32). */
static int profile(const char *label, const struct qp_graph *g,
                   const struct qp_tensor *const *feed,
                   const struct qp_exec_hooks *h, const struct qp_qplan *plan,
                   const struct qp_exec_tune *base, const struct qp_tdesc *d,
                   const bool *known, struct qp_error *err)
{
    size_t nn = (size_t)g->n_nodes;
    double *sec = calloc(nn, sizeof *sec);
    int *pass = malloc(nn * sizeof *pass);
    struct prof_row *types = calloc(nn + 1, sizeof *types);
    struct prof_row *top = calloc(nn + 1, sizeof *top);
    int rc = 1, nt = 0, ntop = 0;
    if (!sec || !pass || !types || !top)
        goto out;
    struct qp_exec_tune t = {base->no_fusion, sec, pass};
    double best;
    for (size_t i = 0; i < nn; i++)
        pass[i] = -1;
    if (best_time(g, feed, h, &t, &best, NULL, err)) /* warm-up only */
        goto out;
    memset(sec, 0, nn * sizeof *sec);
    double total = 0;
    struct qp_tensor *outs[8] = {0};
    struct qp_exec_opts o = {.hooks = h};
    for (int r = 0; r < PROFILE_RUNS; r++) {
        double t0 = now();
        if (qp_exec_run_tuned(g, feed, 1, &o, &t, outs, NULL, err))
            goto out;
        total += now() - t0;
        for (int k = 0; k < g->n_outputs && k < 8; k++)
            qp_tensor_free(outs[k]);
    }
    double accounted = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        if (pass[i] != i)
            continue;
        int members = 0;
        for (int j = 0; j < g->n_nodes; j++)
            members += pass[j] == i;
        char cat[96];
        bool ew = qp_fuse_candidate(g, i);
        snprintf(cat, sizeof cat, "%s%s%s", members == 1 ? g->nodes[i].op_type
                 : ew ? "elementwise" : g->nodes[i].op_type, int_way(plan, i),
                 members > 1 ? " + fused elementwise" : "");
        prof_add(types, &nt, (int)nn, members > 1 && ew ? "fused elementwise"
                 : cat, members, sec[i]);
        pass_label(g, pass, i, d, known, top[ntop].label, sizeof top[ntop].label);
        top[ntop].nodes = members;
        top[ntop++].s = sec[i];
        accounted += sec[i];
    }
    qsort(types, (size_t)nt, sizeof *types, by_time);
    qsort(top, (size_t)ntop, sizeof *top, by_time);
    double per = 1e3 / PROFILE_RUNS;
    printf("%s profile: %.2f ms/run (%.2f ms in nodes), %d passes over %d "
           "nodes\n", label, total * per, accounted * per, ntop, g->n_nodes);
    for (int i = 0; i < nt; i++)
        printf("  %-24s %4d nodes %8.2f ms %5.1f%%\n", types[i].label,
               types[i].nodes, types[i].s * per, 100 * types[i].s / accounted);
    printf("  slowest:\n");
    for (int i = 0; i < ntop && i < PROFILE_TOP; i++)
        printf("  %8.2f ms  %s\n", top[i].s * per, top[i].label);
    rc = 0;
out:
    free(sec);
    free(pass);
    free(types);
    free(top);
    return rc;
}

/* ---- ONNX Runtime ------------------------------------------------------ */

/* ONNX Runtime's best time (ms) on model with the input in npy through
 * bench/ort-time.js; 0 when it cannot be measured. */
static double ort_time(const struct bench_opts *bo, const char *model,
                       const char *npy)
{
    char cmd[2048], line[256];
    double ms = 0;
    if (!bo->ort_dir[0])
        return 0;
    snprintf(cmd, sizeof cmd, "QP_ORT_DIR='%s' node bench/ort-time.js '%s' "
             "'%s' %d", bo->ort_dir, model, npy, qp_parallel_threads());
    FILE *p = popen(cmd, "r");
    while (p && fgets(line, sizeof line, p))
        if (sscanf(line, "ort_ms %lf", &ms) != 1)
            ms = 0;
    if (!p || pclose(p) != 0)
        ms = 0;
    return ms;
}

/* ---- one model ------------------------------------------------------- */

/* The synthetic input every run gets (values in [-1, 1)). */
static void fill_input(struct qp_tensor *x)
{
    size_t n = qp_tensor_numel(x);
    for (size_t i = 0; i < n; i++)
        ((float *)x->data)[i] = (float)((i * 2654435761u) % 1000) / 500.0f - 1.0f;
}

/* Saves the synthetic input of shape as npy (for ONNX Runtime). */
static bool save_input(const int64_t *shape, const char *npy)
{
    struct qp_tensor *x;
    struct qp_error err;
    if (qp_tensor_new("x", QP_DTYPE_F32, 4, shape, &x, &err))
        return false;
    fill_input(x);
    bool ok = !qp_fmt_npy_save(npy, x, &err);
    qp_tensor_free(x);
    return ok;
}

/* Times path on the synthetic input of the given shape. */
static int bench_model(const struct bench_opts *bo, const char *label,
                       const char *path, const int64_t *shape, struct result *r)
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
    struct qp_exec_tune tune = {bo->no_fusion, NULL, NULL};
    int rc = 1;
    if (!d || !known || qp_graph_infer(g, &in, d, known, &err) ||
        qp_tensor_new(g->values[g->inputs[0]].name, QP_DTYPE_F32, 4, in.shape, &x,
                      &err)) {
        fprintf(stderr, "bench-run: %s: %s\n", path, err.msg);
        goto out;
    }
    r->gmacs = (double)qp_graph_count_macs(g, d, known, &r->unknown) / 1e9;
    fill_input(x);
    const struct qp_tensor *feed[1] = {x};
    double best, best_int;
    struct qp_exec_stats st = {0};
    struct qp_qplan *plan = NULL;
    struct qp_exec_hooks h;
    char int_label[64];
    snprintf(int_label, sizeof int_label, "%s int", label);
    if (best_time(g, feed, NULL, &tune, &best, &st, &err) ||
        int_plan(g, feed, &plan, &err) ||
        (qp_qplan_hooks(plan, &h), best_time(g, feed, &h, &tune, &best_int, NULL,
                                             &err)) ||
        (bo->profile && (profile(label, g, feed, NULL, NULL, &tune, d, known, &err) ||
                         profile(int_label, g, feed, &h, plan, &tune, d, known,
                                 &err)))) {
        fprintf(stderr, "bench-run: %s: %s\n", path, err.msg);
        qp_qplan_free(plan);
        goto out;
    }
    qp_qplan_free(plan);
    r->gflops = bo->sgemm_gflops;
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

/* ONNX Runtime's best time per image on path and the synthetic input of
 * shape; 0 when unavailable. */
static double ort_best(const struct bench_opts *bo, const char *path,
                       const int64_t *shape)
{
    char dir[] = "/tmp/qprobe-bench-XXXXXX", npy[64];
    double ms = 0;
    if (!bo->ort_dir[0] || !mkdtemp(dir))
        return 0;
    snprintf(npy, sizeof npy, "%s/x.npy", dir);
    if (save_input(shape, npy))
        ms = ort_time(bo, path, npy) / (double)shape[0];
    remove(npy);
    rmdir(dir);
    return ms;
}

/* Runs one model in a child, with ONNX Runtime (in processes of its own)
 * just before and just after it: the better of the two is the baseline,
 * which a passing burst of load on the machine then spoils less. Prints
 * the model's line. */
static int child_run(const struct bench_opts *bo, const char *label,
                     const char *path, const int64_t *shape)
{
    int fd[2];
    double ort0 = ort_best(bo, path, shape);
    if (pipe(fd))
        return 1;
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        close(fd[0]);
        struct result r = {0};
        int rc = bench_model(bo, label, path, shape, &r);
        fflush(stdout);
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
    double ort1 = ort_best(bo, path, shape);
    r.ort_ms = ort0 > 0 && (ort1 <= 0 || ort0 < ort1) ? ort0 : ort1;
    char ort[96] = "ONNX Runtime not measured";
    if (r.ort_ms > 0)
        snprintf(ort, sizeof ort, "ONNX Runtime %.2f ms: qprobe/ORT %.2f",
                 r.ort_ms, r.ms / r.ort_ms);
    printf("%-4s [%lld,%lld,%lld,%lld] fp32 %8.2f ms/image | %s | %.3f GMAC "
           "conv+matmul -> %.2f ms at sgemm's %.1f GFLOP/s: efficiency %.2f | "
           "int %8.2f ms/image (%.2fx fp32) | peak activations %.1f MiB, peak "
           "RSS %.1f MiB%s\n",
           label, (long long)shape[0], (long long)shape[1], (long long)shape[2],
           (long long)shape[3], r.ms, ort, r.gmacs, r.ideal_ms, r.gflops,
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

/* The folder scripts/ort-setup.sh prints, when node and the pinned
 * onnxruntime-node are there (fetched once). */
static void find_ort(struct bench_opts *bo)
{
    bo->ort_dir[0] = '\0';
    if (system("command -v node >/dev/null 2>&1") != 0)
        return;
    FILE *p = popen("sh scripts/ort-setup.sh 2>/dev/null", "r");
    if (!p)
        return;
    if (!fgets(bo->ort_dir, sizeof bo->ort_dir, p))
        bo->ort_dir[0] = '\0';
    bo->ort_dir[strcspn(bo->ort_dir, "\n")] = '\0';
    if (pclose(p) != 0)
        bo->ort_dir[0] = '\0';
}

int main(int argc, char **argv)
{
    bench_start("bench-run", argc, argv);
    struct bench_opts bo = {false, false, "", 0};
    int a = 1;
    for (; a < argc && !strncmp(argv[a], "--", 2); a++) {
        if (!strcmp(argv[a], "--profile"))
            bo.profile = true;
        else if (!strcmp(argv[a], "--no-fusion"))
            bo.no_fusion = true;
        else {
            fprintf(stderr, "bench-run: unknown option '%s'\n", argv[a]);
            return 2;
        }
    }
    find_ort(&bo);
    printf("bench-run: %d threads; %s%s\n", qp_parallel_threads(),
           bo.ort_dir[0] ? "ONNX Runtime from " : "no ONNX "
           "Runtime (node or scripts/ort-setup.sh unavailable)", bo.ort_dir);
    struct bench_core cores[8];
    struct bench_mnk sq = {512, 512, 512};
    int bc, nc = bench_sgemm_cores(sq, qp_parallel_threads(), cores, 8, &bc);
    bench_print_cores("bench-run", sq, qp_parallel_threads(), cores, nc, bc);
    bo.sgemm_gflops = cores[bc].gflops;
    int fails = 0;
    if (argc - a >= 2) {
        for (int i = a; i + 1 < argc; i += 2) {
            int64_t shape[4];
            if (!parse_shape(argv[i + 1], shape)) {
                fprintf(stderr, "bench-run: bad shape '%s'\n", argv[i + 1]);
                return 2;
            }
            fails += child_run(&bo, "model", argv[i], shape);
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
    for (int k = 0; k < 3; k++)
        fails += child_run(&bo, labels[k], paths[k], shapes[k]);
    return fails ? 1 : 0;
}
