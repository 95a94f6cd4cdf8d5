/* bench/bench.h: what every benchmark's main() does first, and the sgemm
 * baseline the benchmarks compare against (header-only: each benchmark is
 * one file).
 *
 * The baseline is the best sgemm of this machine: qp_blas_sgemm (what
 * qprobe's fp32 paths run) timed on every OpenBLAS core qprobe may pick
 * that this CPU runs, and on the library's own choice. A core can only be
 * chosen before OpenBLAS loads, so each one is timed in a child process
 * (this program re-executed with OPENBLAS_CORETYPE set and the hidden
 * first argument --sgemm-child), the core in use in this process. */
#ifndef QP_BENCH_BENCH_H
#define QP_BENCH_BENCH_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/parallel.h"
#include "kernels/blas.h"
#include "kernels/dispatch.h"
#include "kernels/startup.h"

static inline double bench_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* The sizes of the baseline product: A [m, k] times B^T, B stored [n, k]
 * (the layout of the int8 GEMM's packed weights and of a Linear layer). */
struct bench_mnk {
    size_t m, n, k;
};

/* GFLOP/s of qp_blas_sgemm on s with `threads` threads, best of 9 after a
 * warm-up; 0 when out of memory. */
static inline double bench_sgemm(struct bench_mnk s, int threads)
{
    struct qp_pool *pool = qp_pool_new(threads);
    float *a = malloc(s.m * s.k * 4), *b = malloc(s.n * s.k * 4);
    float *c = malloc(s.m * s.n * 4);
    double best = 1e30;
    for (size_t i = 0; a && i < s.m * s.k; i++)
        a[i] = (float)(i % 7) * 0.1f;
    for (size_t i = 0; b && i < s.n * s.k; i++)
        b[i] = (float)(i % 5) * 0.2f;
    for (int r = 0; a && b && c && pool && r < 10; r++) {
        double t0 = bench_now();
        qp_blas_sgemm(pool, false, true, s.m, s.n, s.k, 1.0f, a, s.k, b, s.k,
                      0.0f, c, s.n);
        double t = bench_now() - t0;
        if (r && t < best) /* run 0 warms up */
            best = t;
    }
    free(a);
    free(b);
    free(c);
    qp_pool_free(pool);
    return best < 1e30 ? 2.0 * (double)s.m * (double)s.n * (double)s.k / best * 1e-9
                       : 0;
}

struct bench_core {
    char name[32];
    double gflops;
    bool current; /* the core of this process (qprobe's pick) */
    bool library; /* what OpenBLAS alone picked on this CPU */
};

/* bench_sgemm(s, threads) in a child re-executed with
 * OPENBLAS_CORETYPE=core; 0 when it failed. */
static inline double bench_sgemm_child(const char *core, struct bench_mnk s,
                                       int threads)
{
    int fd[2];
    if (pipe(fd))
        return 0;
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        char ms[24], ns[24], ks[24], ts[16];
        snprintf(ms, sizeof ms, "%zu", s.m);
        snprintf(ns, sizeof ns, "%zu", s.n);
        snprintf(ks, sizeof ks, "%zu", s.k);
        snprintf(ts, sizeof ts, "%d", threads);
        dup2(fd[1], 1);
        close(fd[0]);
        setenv("OPENBLAS_CORETYPE", core, 1);
        unsetenv("QP_BLAS_REPLACED");
        char *args[] = {"bench", "--sgemm-child", ms, ns, ks, ts, NULL};
        execv("/proc/self/exe", args);
        _exit(127);
    }
    close(fd[1]);
    char out[128] = "";
    ssize_t got = pid > 0 ? read(fd[0], out, sizeof out - 1) : -1;
    close(fd[0]);
    int status = 0;
    if (pid > 0)
        waitpid(pid, &status, 0);
    char name[32];
    double g = 0;
    if (got <= 0 || !WIFEXITED(status) || WEXITSTATUS(status) ||
        sscanf(out, "%31s %lf", name, &g) != 2 || strcasecmp(name, core))
        return 0; /* failed, or the library did not take the core */
    return g;
}

/* Times sgemm on every core (see the top of this file) into cores[] (at
 * most max; the library's own choice is forced by name, which OpenBLAS
 * 0.3.21 cannot do for Cooperlake: then only the current core stands for
 * it). Returns how many; *best the index of the fastest. */
static inline int bench_sgemm_cores(struct bench_mnk s, int threads,
                                    struct bench_core *cores, int max,
                                    int *best)
{
    const char *names[8];
    int nn = (int)qp_blas_candidate_cores(names, 7);
    const char *lib = getenv("QP_BLAS_REPLACED"); /* when qprobe switched */
    if (lib && nn < 8)
        names[nn++] = lib;
    const char *cur = qp_blas_core();
    int nc = 0;
    if (max < 1)
        return 0;
    snprintf(cores[nc].name, sizeof cores[0].name, "%s", cur);
    cores[nc].gflops = bench_sgemm(s, threads);
    cores[nc].current = true;
    cores[nc].library = !lib && !getenv("OPENBLAS_CORETYPE");
    nc++;
    for (int i = 0; i < nn && nc < max; i++) {
        if (!strcasecmp(names[i], cur))
            continue;
        snprintf(cores[nc].name, sizeof cores[0].name, "%s", names[i]);
        cores[nc].gflops = bench_sgemm_child(names[i], s, threads);
        cores[nc].current = false;
        cores[nc].library = lib && !strcasecmp(names[i], lib);
        nc++;
    }
    *best = 0;
    for (int i = 1; i < nc; i++)
        if (cores[i].gflops > cores[*best].gflops)
            *best = i;
    return nc;
}

/* One line: the sgemm of every core, the current and the library's
 * marked. */
static inline void bench_print_cores(const char *name, struct bench_mnk s,
                                     int threads,
                                     const struct bench_core *cores, int nc,
                                     int best)
{
    printf("%s: sgemm %zux%zux%zu on %d thread%s by OpenBLAS core:", name,
           s.m, s.n, s.k, threads, threads > 1 ? "s" : "");
    for (int i = 0; i < nc; i++) {
        const char *who = cores[i].current && cores[i].library
                              ? " (qprobe's, OpenBLAS's own choice)"
                          : cores[i].current ? " (qprobe's)"
                          : cores[i].library ? " (OpenBLAS's own choice)" : "";
        printf("%s %s %.1f GFLOP/s%s", i ? "," : "", cores[i].name,
               cores[i].gflops, who);
    }
    printf("; best %s\n", cores[best].name);
}

/* kernels/startup.h as the CLI does it (so the benchmark measures the
 * kernels qprobe runs: the BLAS on this CPU's core, QP_KERNELS and
 * QP_THREADS checked), then two lines naming the kernels and the BLAS.
 * Exits 2 with the message on a malformed variable. As a child of
 * bench_sgemm_child (--sgemm-child M N K THREADS) prints "CORE GFLOPS"
 * and exits. */
static inline void bench_start(const char *name, int argc, char **argv)
{
    struct qp_error err;
    if (qp_kern_startup(argv, &err)) {
        fprintf(stderr, "%s: %s\n", name, err.msg);
        exit(2);
    }
    if (argc == 6 && !strcmp(argv[1], "--sgemm-child")) {
        struct bench_mnk s = {strtoul(argv[2], NULL, 10),
                              strtoul(argv[3], NULL, 10),
                              strtoul(argv[4], NULL, 10)};
        double g = bench_sgemm(s, atoi(argv[5]));
        printf("%s %.3f\n", qp_blas_core(), g);
        exit(g > 0 ? 0 : 1);
    }
    printf("%s: %s\n%s: %s\n", name, qp_kern_describe(), name,
           qp_blas_describe());
}

#endif
