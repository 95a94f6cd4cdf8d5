/* bench/bench-llm.c: LLM prefill on synthetic Llama-shaped checkpoints
 * (random BF16 weights of the real shapes):
 *
 *   - fp32 prefill of the 1B-shaped model on 512 tokens: tokens/s, and its
 *     Linear layers' matmul FLOP rate against OpenBLAS sgemm on the same
 *     shapes (float32 weights, the same threads), measured in the same
 *     process, alternating, best of two;
 *   - the weight-only w4g128 int mode and ExecuTorch's 8da4w int mode
 *     (kernels/gemm-qd8.h) against fp32 (tokens/s ratios);
 *   - peak RSS of a process running the 1B prefill, against 1.15 x the
 *     BF16 file + 1 GB, and of one running the 8B-shaped model on one
 *     512-token chunk, against 8 GB (each run in a child process, its own
 *     ru_maxrss).
 *
 *   build/bench/bench-llm [DIR_1B [DIR_8B]]
 *
 * The folders default to $QP_BENCH_LLM_1B / $QP_BENCH_LLM_8B, else
 * data/cache/synth-llama-1b and data/cache/synth-llama-8b, written from
 * bench/configs/ on first use (2.5 and 16 GB; cached, never committed).
 * A folder given as "-" is skipped. The lines "ratio ..." are the
 * summary. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/parallel.h"
#include "kernels/blas.h"
#include "kernels/gemm-wq.h"
#include "kernels/startup.h"
#include "model/exec.h"
#include "model/llm.h"
#include "model/synth-llama.h"
#include "quant/scheme.h"

#define TOKENS 512

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static const char *model_dir(int argc, char **argv, int i, const char *env,
                             const char *def)
{
    const char *e = getenv(env);
    return argc > i ? argv[i] : e && *e ? e : def;
}

/* The model folder dir, generated from bench/configs/<config> when absent
 * (model/synth-llama.h: random BF16 weights, seed 1; cached). */
static bool have(const char *dir, const char *what, const char *config)
{
    struct stat st;
    char p[4096], cfg[4096];
    if (!strcmp(dir, "-")) {
        printf("%s: skipped (\"-\")\n", what);
        return false;
    }
    snprintf(p, sizeof p, "%s/config.json", dir);
    if (stat(p, &st) == 0)
        return true;
    snprintf(cfg, sizeof cfg, "bench/configs/%s", config);
    printf("%s: writing a synthetic checkpoint from %s into %s\n", what, cfg, dir);
    fflush(stdout);
    struct qp_synth_opts o = qp_synth_opts_default();
    struct qp_error err;
    double t0 = now();
    if (qp_synth_llama_write(cfg, dir, &o, &err)) {
        printf("%s: skipped: %s\n", what, err.msg);
        return false;
    }
    printf("  written in %.0f s\n", now() - t0);
    return true;
}

static int32_t *token_ids(int64_t vocab)
{
    int32_t *ids = malloc(TOKENS * sizeof *ids);
    uint32_t s = 12345;
    for (int i = 0; ids && i < TOKENS; i++) {
        s = s * 1664525u + 1013904223u;
        ids[i] = (int32_t)((s >> 8) % (uint32_t)vocab);
    }
    return ids;
}

/* ---- matmul efficiency -------------------------------------------------------- */

struct shape {
    size_t n, k;
    int count;
    double linear_s, sgemm_s; /* best times of all `count` layers */
    const struct qp_tensor *w; /* the first layer's weight */
    double kern_s, kern_sgemm_s; /* one product alone, best, alternating */
};

/* One fp32 pass with per-node times; the Linear nodes' times by shape. */
static int timed_pass(struct qp_llm *m, const struct qp_tensor *x, bool first,
                      struct shape *sh, int *nsh, double *total,
                      struct qp_error *err)
{
    const struct qp_graph *g = qp_session_graph(m->s);
    double *ns = calloc((size_t)g->n_nodes, sizeof *ns);
    double lin[64] = {0};
    struct qp_exec_tune tune = {false, ns, NULL};
    struct qp_tensor *out = NULL;
    const struct qp_tensor *feed[1] = {x};
    double t0 = now();
    enum qp_status st = qp_exec_run_tuned(g, feed, 1, NULL, &tune, &out, NULL, err);
    *total = now() - t0;
    qp_tensor_free(out);
    for (int i = 0; !st && i < g->n_nodes; i++) {
        const struct qp_node *n = &g->nodes[i];
        if (strcmp(n->op_type, "Linear"))
            continue;
        const struct qp_tensor *w = g->values[n->in[1]].konst;
        int k;
        for (k = 0; k < *nsh; k++)
            if (sh[k].n == (size_t)w->shape[0] && sh[k].k == (size_t)w->shape[1])
                break;
        if (k == *nsh && k < 64) {
            sh[k] = (struct shape){(size_t)w->shape[0], (size_t)w->shape[1], 0, 1e30,
                                   1e30, w, 1e30, 1e30};
            (*nsh)++;
        }
        if (k < 64) {
            lin[k] += ns[i];
            sh[k].count += first;
        }
    }
    for (int k = 0; k < *nsh; k++)
        if (lin[k] > 0 && lin[k] < sh[k].linear_s)
            sh[k].linear_s = lin[k];
    free(ns);
    return st ? 1 : 0;
}

/* sgemm of [TOKENS, k] x [n, k]^T with float32 weights, count times. */
static void sgemm_shape(struct shape *s)
{
    float *x = malloc((size_t)TOKENS * s->k * sizeof *x);
    float *w = malloc(s->n * s->k * sizeof *w);
    float *y = malloc((size_t)TOKENS * s->n * sizeof *y);
    if (!x || !w || !y) {
        free(x), free(w), free(y);
        return;
    }
    for (size_t i = 0; i < (size_t)TOKENS * s->k; i++)
        x[i] = (float)(i % 13) * 0.01f;
    for (size_t i = 0; i < s->n * s->k; i++)
        w[i] = (float)(i % 7) * 0.01f;
    struct qp_pool *pool = qp_pool_new(0);
    double t0 = now();
    for (int c = 0; c < s->count; c++)
        qp_blas_sgemm(pool, false, true, TOKENS, s->n, s->k, 1.0f, x, s->k, w, s->k,
                      0.0f, y, s->n);
    double t = now() - t0;
    if (t < s->sgemm_s)
        s->sgemm_s = t;
    qp_pool_free(pool);
    free(x), free(w), free(y);
}

/* The Linear kernel alone on the layer's own (mapped) weight, alternating
 * with sgemm on a float32 copy, best of REPS each. */
#define REPS 3
static void kernel_alone(struct shape *s)
{
    struct qp_wq wq;
    struct qp_error err;
    float *x = malloc((size_t)TOKENS * s->k * sizeof *x);
    float *w = malloc(s->n * s->k * sizeof *w);
    float *y = malloc((size_t)TOKENS * s->n * sizeof *y);
    struct qp_pool *pool = qp_pool_new(0), *serial = qp_pool_new(1);
    void *scratch = NULL;
    if (x && w && y && !qp_wq_init(&wq, s->w, &err))
        scratch = malloc(qp_gemm_wq_scratch_size(&wq, TOKENS,
                                                  qp_pool_threads(pool)) + 64);
    for (int r = 0; scratch && r < REPS; r++) {
        if (!r) {
            for (size_t i = 0; i < (size_t)TOKENS * s->k; i++)
                x[i] = (float)((int)(i % 13) - 6) * 0.1f;
            qp_tensor_read_f32(s->w, 0, s->n * s->k, w);
        }
        double t0 = now();
        qp_gemm_wq(pool, serial, &wq, x, s->k, TOKENS, NULL, y, s->n, scratch);
        double t1 = now();
        qp_blas_sgemm(pool, false, true, TOKENS, s->n, s->k, 1.0f, x, s->k, w, s->k,
                      0.0f, y, s->n);
        double t2 = now();
        s->kern_s = t1 - t0 < s->kern_s ? t1 - t0 : s->kern_s;
        s->kern_sgemm_s = t2 - t1 < s->kern_sgemm_s ? t2 - t1 : s->kern_sgemm_s;
    }
    free(scratch);
    qp_pool_free(pool);
    qp_pool_free(serial);
    free(x), free(w), free(y);
}

/* The int mode of scheme against fp32, passes alternating (the load of a
 * shared machine moves): the tokens/s ratio, or -1 after an error. The
 * plan calibrates on the first 64 tokens (dynamic activations only need
 * to know which values are float). */
static double int_ratio(struct qp_llm *m, const int32_t *ids, const char *scheme)
{
    struct qp_scheme s;
    struct qp_splan *plan;
    struct qp_error err;
    struct qp_session_cfg cfg = {.mode = QP_MODE_INT, .scheme = &s,
                                 .flavor = QP_RQ_TFLITE_DOUBLE};
    double t0 = now(), t;
    if (qp_scheme_parse(scheme, &s, NULL, &err) ||
        qp_llm_plan(m, &cfg, s.has_acts ? ids : NULL, s.has_acts ? 64 : 0, 64,
                    1, NULL, &plan, &err)) {
        fprintf(stderr, "bench-llm: %s\n", err.msg);
        return -1;
    }
    printf("  %s plan (weights quantized and prepared) in %.1f s\n", scheme,
           now() - t0);
    double bq = 1e30, bf = 1e30;
    for (int r = 0; r < 2 * REPS; r++) {
        struct qp_tensor *out;
        struct qp_llm_pass p = {.plan = r % 2 ? plan : NULL};
        t0 = now();
        if (qp_llm_forward(m, &p, ids, 0, TOKENS, &out, &err)) {
            fprintf(stderr, "bench-llm: %s\n", err.msg);
            qp_splan_free(plan);
            return -1;
        }
        t = now() - t0;
        double *b = r % 2 ? &bq : &bf;
        *b = t < *b ? t : *b;
        qp_tensor_free(out);
    }
    printf("%s int prefill %d tokens: %.2f s, %.1f tokens/s (fp32 alternating: "
           "%.2f s)\n", scheme, TOKENS, bq, TOKENS / bq, bf);
    qp_splan_free(plan);
    return bf / bq;
}

static int prefill(const char *dir)
{
    struct qp_llm *m;
    struct qp_error err;
    if (qp_llm_open(dir, &m, &err)) {
        fprintf(stderr, "bench-llm: %s\n", err.msg);
        return 1;
    }
    int32_t *ids = token_ids(m->vocab);
    struct qp_tensor *x;
    if (!ids || qp_llm_feed(ids, 0, TOKENS, &x, &err))
        return 1;
    struct shape sh[64];
    int nsh = 0;
    double best = 1e30, t;
    for (int r = 0; r < REPS; r++) {
        if (timed_pass(m, x, r == 0, sh, &nsh, &t, &err)) {
            fprintf(stderr, "bench-llm: %s\n", err.msg);
            return 1;
        }
        best = t < best ? t : best;
        for (int k = 0; k < nsh; k++)
            sgemm_shape(&sh[k]);
    }
    double flops = 0, lin = 0, sg = 0, ka = 0, ks = 0;
    for (int k = 0; k < nsh; k++) {
        double f = 2.0 * TOKENS * (double)sh[k].n * (double)sh[k].k * sh[k].count;
        kernel_alone(&sh[k]);
        flops += f;
        lin += sh[k].linear_s;
        sg += sh[k].sgemm_s;
        ka += sh[k].kern_s * sh[k].count;
        ks += sh[k].kern_sgemm_s * sh[k].count;
        printf("  linear %6zu x %-6zu x%-3d  in the pass %6.1f GFLOP/s, sgemm %6.1f"
               "; alone %6.1f, sgemm %6.1f\n", sh[k].n, sh[k].k, sh[k].count,
               f / sh[k].linear_s / 1e9, f / sh[k].sgemm_s / 1e9,
               f / sh[k].count / sh[k].kern_s / 1e9,
               f / sh[k].count / sh[k].kern_sgemm_s / 1e9);
    }
    printf("fp32 prefill %d tokens: %.2f s, %.1f tokens/s; linear layers %.1f "
           "GFLOP/s (%.0f%% of the pass), sgemm %.1f GFLOP/s\n", TOKENS, best,
           TOKENS / best, flops / lin / 1e9, 100 * lin / best, flops / sg / 1e9);
    printf("ratio linear/sgemm %.2f (in the pass; target >= 0.70)\n", sg / lin);
    printf("ratio linear-alone/sgemm %.2f (each product alone, alternating with "
           "sgemm)\n", ks / ka);
    /* the weight-only w4g128 int mode, then ExecuTorch's 8da4w */
    double r4 = int_ratio(m, ids, "w4g128");
    if (r4 > 0)
        printf("ratio w4g128-int/fp32 tokens/s %.2f (the reference weight-only "
               "path; target >= 1.0)\n", r4);
    double r8 = int_ratio(m, ids, "8da4w");
    if (r8 > 0)
        printf("ratio 8da4w-int/fp32 tokens/s %.2f (int8 dynamic rows x int4 "
               "groups of 32, kernels/gemm-qd8.h, %s; target >= 1.5)\n", r8,
               strstr(qp_kern_describe(), "gemm-qd8="));
    if (r4 <= 0 || r8 <= 0)
        return 1;
    qp_tensor_free(x);
    free(ids);
    qp_llm_free(m);
    return 0;
}

/* ---- peak memory ------------------------------------------------------------------ */

/* One 512-token fp32 pass in a child process; its peak RSS in bytes. */
static int child_rss(const char *dir, double *rss, double *seconds)
{
    pid_t pid = fork();
    if (pid == 0) {
        struct qp_llm *m;
        struct qp_error err;
        struct qp_tensor *out;
        if (qp_llm_open(dir, &m, &err) ||
            qp_llm_forward(m, NULL, token_ids(m->vocab), 0, TOKENS, &out, &err)) {
            fprintf(stderr, "bench-llm: %s\n", err.msg);
            _exit(1);
        }
        _exit(0);
    }
    int status;
    struct rusage ru;
    double t0 = now();
    if (pid < 0 || wait4(pid, &status, 0, &ru) != pid || !WIFEXITED(status) ||
        WEXITSTATUS(status))
        return 1;
    *seconds = now() - t0;
    *rss = (double)ru.ru_maxrss * 1024.0;
    return 0;
}

static double weights_bytes(const char *dir)
{
    char p[4096];
    struct stat st;
    double total = 0;
    snprintf(p, sizeof p, "%s/model.safetensors", dir);
    if (stat(p, &st) == 0)
        return (double)st.st_size;
    for (int i = 1; i < 100; i++) /* shards model-0000i-of-0000N */
        for (int n = i; n < 100; n++) {
            snprintf(p, sizeof p, "%s/model-%05d-of-%05d.safetensors", dir, i, n);
            if (stat(p, &st) == 0) {
                total += (double)st.st_size;
                break;
            }
        }
    return total;
}

int main(int argc, char **argv)
{
    struct qp_error err;
    if (qp_kern_startup(argv, &err)) {
        fprintf(stderr, "bench-llm: %s\n", err.msg);
        return 2;
    }
    const char *d1 = model_dir(argc, argv, 1, "QP_BENCH_LLM_1B",
                               "data/cache/synth-llama-1b");
    const char *d8 = model_dir(argc, argv, 2, "QP_BENCH_LLM_8B",
                               "data/cache/synth-llama-8b");
    printf("%s; %d threads\n", qp_blas_describe(), qp_parallel_threads());
    int rc = 0;
    double rss, secs;
    /* peak RSS first, from children forked before this process has run a
     * model: a child forked later starts with the pages its parent still
     * holds, which ru_maxrss would count */
    bool b1 = have(d1, "1B-shaped", "llama-3.2-1b.json");
    if (b1) {
        double file = weights_bytes(d1), limit = 1.15 * file + 1e9;
        if (!child_rss(d1, &rss, &secs))
            printf("ratio 1B-peak-rss/limit %.2f (peak %.2f GB, BF16 file %.2f GB, "
                   "limit 1.15 x file + 1 GB = %.2f GB; %.1f s)\n", rss / limit,
                   rss / 1e9, file / 1e9, limit / 1e9, secs);
        else
            rc = 1;
    }
    if (have(d8, "8B-shaped", "llama-3.1-8b.json")) {
        if (!child_rss(d8, &rss, &secs))
            printf("ratio 8B-peak-rss/8GB %.2f (peak %.2f GB, weights %.2f GB, one "
                   "%d-token chunk in %.0f s)\n", rss / 8e9, rss / 1e9,
                   weights_bytes(d8) / 1e9, TOKENS, secs);
        else
            rc = 1;
    }
    if (b1)
        rc |= prefill(d1);
    return rc;
}
