/* bench/bench-tflite.c: qprobe's TFLite runtime against TensorFlow Lite
 * 2.9 itself (its builtin x86 kernels, no XNNPACK: the int8/uint8 models
 * have no float tensor, so TFLite applies no default delegate) on
 * person_detect (int8, 96x96x1) and the uint8 MobileNet v1 0.25 (128x128x3)
 * of ../shared/tflite, run from the repository root as `make bench` does.
 *
 * Per model: qprobe's time per inference (the plain executor on the
 * imported graph, tflite-x86 flavor: the arithmetic of the runtime it is
 * compared with; median of N runs after a warm-up) and TFLite's (the
 * median of N invokes by build/tflite-oracle on the same model, input and
 * thread count, measured just before and just after qprobe's, the better
 * of the two), and their ratio. Threads: qp_parallel_threads() for both
 * (QP_THREADS sets it). Skipped with a message when the shared folder or
 * the TFLite library (scripts/tflite-setup.sh) is missing.
 *
 *   build/bench/bench-tflite [RUNS]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/fileio.h"
#include "core/parallel.h"
#include "formats/npy.h"
#include "model/exec.h"
#include "model/tflite-import.h"

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static const char *shared_tflite(void)
{
    static char buf[512];
    const char *cands[] = {getenv("QP_SHARED"), "../shared", "/work/shared"};
    for (size_t i = 0; i < 3; i++) {
        if (!cands[i])
            continue;
        snprintf(buf, sizeof buf, "%s/tflite/models", cands[i]);
        if (qp_is_dir(buf)) {
            snprintf(buf, sizeof buf, "%s/tflite", cands[i]);
            return buf;
        }
    }
    return NULL;
}

/* The first line of a command's output, or "" */
static void first_line(const char *cmd, char *out, size_t size)
{
    out[0] = '\0';
    FILE *p = popen(cmd, "r");
    if (!p)
        return;
    if (fgets(out, (int)size, p))
        out[strcspn(out, "\n")] = '\0';
    pclose(p);
}

/* TFLite's median invoke time, or -1. */
static double tflite_ms(const char *lib, const char *model, const char *input,
                        int runs, int threads)
{
    char cmd[2048], line[256];
    snprintf(cmd, sizeof cmd, "build/tflite-oracle '%s' '%s' --time %d "
             "--threads %d '%s' 2>/dev/null | grep '^invoke'", lib, model, runs,
             threads, input);
    first_line(cmd, line, sizeof line);
    double ms;
    return sscanf(line, "invoke: %lf ms", &ms) == 1 ? ms : -1;
}

static double qprobe_ms(const char *model, const char *input, int runs)
{
    struct qp_error err;
    struct qp_graph *g;
    struct qp_tensor *x, *out[4] = {0};
    struct qp_tflite_opts o = {QP_TFL_X86, false};
    if (qp_model_load_tflite(model, &o, &g, &err) ||
        qp_fmt_npy_load(input, NULL, false, &x, &err)) {
        fprintf(stderr, "bench-tflite: %s\n", err.msg);
        return -1;
    }
    double *ms = calloc((size_t)runs + 1, sizeof *ms);
    for (int r = -1; r < runs; r++) {
        double t0 = now_ms();
        if (qp_exec_run(g, (const struct qp_tensor *const *)&x, 1, NULL, out,
                        NULL, &err)) {
            fprintf(stderr, "bench-tflite: %s\n", err.msg);
            break;
        }
        if (r >= 0)
            ms[r] = now_ms() - t0;
        for (int k = 0; k < 4; k++) {
            qp_tensor_free(out[k]);
            out[k] = NULL;
        }
    }
    qsort(ms, (size_t)runs, sizeof *ms, cmp_double);
    double med = ms[runs / 2];
    free(ms);
    qp_tensor_free(x);
    qp_graph_free(g);
    return med;
}

int main(int argc, char **argv)
{
    int runs = argc > 1 ? atoi(argv[1]) : 200;
    if (runs < 1)
        runs = 1;
    const char *dir = shared_tflite();
    if (!dir) {
        printf("bench-tflite: skipped (no shared folder with tflite/)\n");
        return 0;
    }
    char lib[1024];
    first_line("sh scripts/tflite-setup.sh 2>/dev/null", lib, sizeof lib);
    int threads = qp_parallel_threads();
    static const struct { const char *model, *input; } cases[] = {
        {"person_detect.tflite", "person_detect_person.npy"},
        {"mobilenet_v1_0.25_128_quant.tflite", "mobilenet_v1_0.25_128_bird.npy"},
    };
    printf("TFLite models, per inference, %d thread%s, median of %d runs "
           "(qprobe: tflite-x86 flavor)\n", threads, threads == 1 ? "" : "s",
           runs);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char model[1024], input[1024];
        snprintf(model, sizeof model, "%s/models/%s", dir, cases[i].model);
        snprintf(input, sizeof input, "%s/inputs/%s", dir, cases[i].input);
        double t1 = lib[0] ? tflite_ms(lib, model, input, runs, threads) : -1;
        double q = qprobe_ms(model, input, runs);
        double t2 = lib[0] ? tflite_ms(lib, model, input, runs, threads) : -1;
        double t = t1 < 0 ? t2 : t2 < 0 || t1 < t2 ? t1 : t2;
        if (t > 0 && q > 0)
            printf("  %-36s qprobe %8.3f ms   TFLite 2.9 %8.3f ms   "
                   "qprobe/TFLite %.2fx\n", cases[i].model, q, t, q / t);
        else
            printf("  %-36s qprobe %8.3f ms   TFLite unavailable "
                   "(scripts/tflite-setup.sh)\n", cases[i].model, q);
    }
    return 0;
}
