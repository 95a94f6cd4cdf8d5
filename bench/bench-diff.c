/* bench/bench-diff.c: qprobe diff throughput against memcpy of the same
 * bytes, in one process.
 *
 * Writes two npy-directory dumps of 16 f32 tensors x 64 MiB (1 GiB each,
 * QP_BENCH_MIB changes the tensor size) into a temporary folder under
 * $TMPDIR, then alternates, QP_BENCH_REPS (5) times:
 *   memcpy : the dumps' bytes, mapped with MAP_POPULATE (no page faults in
 *            the timing), copied by one plain memcpy into a reused 64 MiB
 *            buffer; this is the baseline of the ratios. Also once more
 *            without MAP_POPULATE, to show what the page faults cost;
 *   diff   : the whole diff as the CLI runs it: open both dumps, align,
 *            load, compare and release every pair (mmap page faults
 *            included), on all threads and on one.
 * Ratios are memcpy time / diff time within one repetition; the median is
 * reported. The files were just written, so they are in the page cache
 * (warm); QP_BENCH_COLD=1 adds one diff after dropping them from the page
 * cache, which measures the disk instead. Also the fused kernel alone on
 * data in memory, per variant, and the peak RSS growth of a diff (VmHWM
 * after resetting it). GB/s are 10^9 bytes per second of both dumps. */
#include <fcntl.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "analysis/diff.h"
#include "bench/bench.h"
#include "core/fileio.h"
#include "core/outfile.h"
#include "core/parallel.h"
#include "kernels/metrics-f32.h"

enum { NTENSORS = 16 };

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void die(const char *what, const struct qp_error *err)
{
    fprintf(stderr, "bench-diff: %s: %s\n", what, err ? err->msg : "failed");
    exit(1);
}

/* Writes the reference and test dumps (test = ref + small noise). */
static void make_dumps(const char *dir, size_t elems, char *paths[2])
{
    struct qp_error err;
    struct qp_dump_writer *w[2];
    int64_t shape[1] = {(int64_t)elems};
    for (int k = 0; k < 2; k++) {
        paths[k] = qp_path_join(dir, k ? "test" : "ref");
        if (qp_dump_writer_open(paths[k], QP_DUMP_NPY_DIR, &w[k], &err))
            die("open writer", &err);
    }
    struct qp_tensor *r, *t;
    if (qp_tensor_new("x", QP_DTYPE_F32, 1, shape, &r, &err) ||
        qp_tensor_new("x", QP_DTYPE_F32, 1, shape, &t, &err))
        die("allocate", &err);
    uint32_t s = 12345;
    for (int i = 0; i < NTENSORS; i++) {
        char name[32];
        snprintf(name, sizeof name, "layer%02d.out", i);
        float *x = r->data, *y = t->data;
        for (size_t j = 0; j < elems; j++) {
            s = s * 1664525u + 1013904223u;
            x[j] = (float)((int32_t)s >> 8) * 1e-6f;
            y[j] = x[j] + (float)((int32_t)(s * 2654435761u) >> 20) * 1e-6f;
        }
        if (qp_tensor_rename(r, name, &err) || qp_tensor_rename(t, name, &err) ||
            qp_dump_writer_add(w[0], r, &err) || qp_dump_writer_add(w[1], t, &err))
            die("write", &err);
    }
    qp_tensor_free(r);
    qp_tensor_free(t);
    for (int k = 0; k < 2; k++)
        if (qp_dump_writer_commit(w[k], &err))
            die("commit", &err);
}

/* The .npy files of a dump folder. */
static size_t list_files(const char *dir, char ***files)
{
    struct qp_error err;
    char **rel;
    size_t n;
    if (qp_dump_scan_dir(dir, ".npy", &rel, &n, &err))
        die("scan", &err);
    *files = malloc(n * sizeof **files);
    for (size_t i = 0; i < n; i++) {
        (*files)[i] = qp_path_join(dir, rel[i]);
        free(rel[i]);
    }
    free(rel);
    return n;
}

/* Seconds to memcpy every byte of the files into a reused buffer, the
 * mappings populated beforehand (no page faults timed) or not; *bytes the
 * total. */
static double time_memcpy(char **files, size_t n, unsigned char *buf,
                          size_t bufsize, bool populate, size_t *bytes)
{
    void *maps[2 * NTENSORS];
    size_t sizes[2 * NTENSORS];
    *bytes = 0;
    for (size_t i = 0; i < n; i++) {
        int fd = open(files[i], O_RDONLY);
        struct stat st;
        if (fd < 0 || fstat(fd, &st))
            die(files[i], NULL);
        sizes[i] = (size_t)st.st_size;
        maps[i] = mmap(NULL, sizes[i], PROT_READ,
                       MAP_PRIVATE | (populate ? MAP_POPULATE : 0), fd, 0);
        close(fd);
        if (maps[i] == MAP_FAILED)
            die("mmap", NULL);
        *bytes += sizes[i];
    }
    double t0 = now();
    for (size_t i = 0; i < n; i++)
        for (size_t off = 0; off < sizes[i]; off += bufsize) {
            size_t len = sizes[i] - off < bufsize ? sizes[i] - off : bufsize;
            memcpy(buf, (const unsigned char *)maps[i] + off, len);
            __asm__ volatile("" : : "r"(buf) : "memory");
        }
    double dt = now() - t0;
    for (size_t i = 0; i < n; i++)
        munmap(maps[i], sizes[i]);
    return dt;
}

static void reset_peak_rss(void)
{
    int fd = open("/proc/self/clear_refs", O_WRONLY);
    if (fd >= 0) {
        if (write(fd, "5", 1) != 1) { /* resets VmHWM to the current RSS */
        }
        close(fd);
    }
}

static long status_kib(const char *key)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long v = -1;
    size_t kl = strlen(key);
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, key, kl))
            v = strtol(line + kl, NULL, 10);
    if (f)
        fclose(f);
    return v;
}

/* Seconds for a whole diff on nthreads; checks every pair was compared. */
static double time_diff(char *paths[2], int nthreads, long *rss_growth_kib)
{
    char env[16];
    snprintf(env, sizeof env, "%d", nthreads);
    setenv("QP_THREADS", env, 1);
    reset_peak_rss();
    long rss0 = status_kib("VmRSS:");
    struct qp_error err;
    double t0 = now();
    struct qp_dump *r, *t;
    if (qp_dump_open(paths[0], QP_DUMP_AUTO, &r, &err) ||
        qp_dump_open(paths[1], QP_DUMP_AUTO, &t, &err))
        die("open dump", &err);
    const char *rn[NTENSORS], *tn[NTENSORS];
    for (size_t i = 0; i < NTENSORS; i++) {
        rn[i] = qp_dump_entry(r, i)->name;
        tn[i] = qp_dump_entry(t, i)->name;
    }
    struct qp_align al;
    struct qp_diff d;
    struct qp_diff_opts o = {0};
    if (qp_align_names(rn, NTENSORS, tn, NTENSORS, NULL, &al, &err) ||
        qp_diff_run(r, t, &al, &o, &d, &err))
        die("diff", &err);
    double dt = now() - t0;
    if (d.nrows != NTENSORS || !(qp_metrics_sqnr_db(&d.rows[0].m) > 20))
        die("diff compared the wrong thing", NULL);
    *rss_growth_kib = status_kib("VmHWM:") - rss0;
    qp_diff_release(&d);
    qp_align_release(&al);
    qp_dump_close(r);
    qp_dump_close(t);
    unsetenv("QP_THREADS");
    return dt;
}

static double median(double *v, int n)
{
    for (int i = 1; i < n; i++) /* insertion sort: n <= 16 */
        for (int j = i; j > 0 && v[j - 1] > v[j]; j--) {
            double t = v[j];
            v[j] = v[j - 1];
            v[j - 1] = t;
        }
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* The fused kernel alone over n pairs in memory, best of 3. */
static double time_kernel(qp_metrics_f32_fn k, const float *a, const float *b,
                          size_t n)
{
    double best = INFINITY;
    for (int rep = 0; rep < 3; rep++) {
        struct qp_metrics_f32 m = {0};
        double t0 = now();
        k(&m, a, b, n);
        double dt = now() - t0;
        best = dt < best ? dt : best;
        if (m.numel != n)
            die("kernel", NULL);
    }
    return best;
}

int main(int argc, char **argv)
{
    bench_start("bench-diff", argc, argv);
    const char *e = getenv("QP_BENCH_MIB");
    size_t mib = e && atoi(e) > 0 ? (size_t)atoi(e) : 64;
    e = getenv("QP_BENCH_REPS");
    int reps = e && atoi(e) > 0 ? atoi(e) : 5;
    size_t elems = mib << 18; /* MiB of f32 */
    const char *tmp = getenv("TMPDIR");
    char *dir = qp_path_join(tmp && *tmp ? tmp : "/tmp", "qp-bench-diff-XXXXXX");
    if (!mkdtemp(dir))
        die("mkdtemp", NULL);
    char *paths[2];
    double t0 = now();
    make_dumps(dir, elems, paths);
    double gen = now() - t0;
    char **files;
    size_t nfiles = list_files(paths[0], &files);
    char **tfiles;
    size_t ntf = list_files(paths[1], &tfiles);
    char *all[2 * NTENSORS];
    for (size_t i = 0; i < nfiles; i++)
        all[i] = files[i];
    for (size_t i = 0; i < ntf; i++)
        all[nfiles + i] = tfiles[i];
    size_t bufsize = (size_t)64 << 20;
    unsigned char *buf = malloc(bufsize);
    memset(buf, 1, bufsize);
    int threads = qp_parallel_threads();
    /* alternate the measurements; ratios are taken within a repetition,
     * where the machine's load is about the same */
    double best_cp = INFINITY, best_cpf = INFINITY, best_d = INFINITY,
           best_d1 = INFINITY, ratio[16], ratio1[16];
    size_t bytes = 0;
    long rss = 0, rss1 = 0;
    if (reps > 16)
        reps = 16;
    for (int rep = 0; rep < reps; rep++) {
        double c = time_memcpy(all, nfiles + ntf, buf, bufsize, true, &bytes);
        double cf = time_memcpy(all, nfiles + ntf, buf, bufsize, false, &bytes);
        double d = time_diff(paths, threads, &rss);
        double d1 = time_diff(paths, 1, &rss1);
        best_cp = c < best_cp ? c : best_cp;
        best_cpf = cf < best_cpf ? cf : best_cpf;
        best_d = d < best_d ? d : best_d;
        best_d1 = d1 < best_d1 ? d1 : best_d1;
        ratio[rep] = c / d;
        ratio1[rep] = c / d1;
    }
    double gb = (double)bytes / 1e9;
    printf("bench-diff: 2 dumps x %zu MiB (npy dirs, %d f32 tensors of %zu MiB "
           "each, written in %.1f s), files in the page cache (warm)\n",
           (bytes / 2) >> 20, NTENSORS, mib, gen);
    printf("bench-diff: memcpy 1 thread, pre-faulted  %6.2f GB/s  (%.2f GB in "
           "%.3f s, best of %d)\n", gb / best_cp, gb, best_cp, reps);
    printf("bench-diff: memcpy 1 thread, with faults  %6.2f GB/s  (mmap page "
           "faults of the same files)\n", gb / best_cpf);
    printf("bench-diff: qprobe diff %d threads         %6.2f GB/s  ratio %.2f of "
           "memcpy (median of %d; best %.2f; target >= 0.80)\n", threads,
           gb / best_d, median(ratio, reps), reps, best_cp / best_d);
    printf("bench-diff: qprobe diff 1 thread          %6.2f GB/s  ratio %.2f of "
           "memcpy (median of %d)\n", gb / best_d1, median(ratio1, reps), reps);
    printf("bench-diff: peak RSS growth during a diff: %.0f MiB (%d threads), "
           "%.0f MiB (1 thread); largest pair %zu MiB, dumps %zu MiB\n",
           (double)rss / 1024, threads, (double)rss1 / 1024, 2 * mib,
           (bytes >> 20));
    if (getenv("QP_BENCH_COLD")) {
        /* drop the files from the page cache and diff once from disk */
        for (size_t i = 0; i < nfiles + ntf; i++) {
            int fd = open(all[i], O_RDONLY);
            if (fd >= 0) {
                fdatasync(fd);
                posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
                close(fd);
            }
        }
        double d = time_diff(paths, threads, &rss);
        printf("bench-diff: qprobe diff %d threads, cold %6.2f GB/s  (files "
               "dropped from the page cache: the disk's speed)\n", threads,
               gb / d);
    }
    /* the kernel alone, per variant, on 2 x 64 MiB in memory */
    size_t kn = (size_t)16 << 20;
    float *a = malloc(kn * sizeof *a), *b = malloc(kn * sizeof *b);
    for (size_t i = 0; i < kn; i++) {
        a[i] = (float)(i % 1000) * 1e-3f;
        b[i] = a[i] + 1e-4f;
    }
    static const char *const variants[] = {"ref", "avx2", "avx512"};
    for (int v = 0; v < 3; v++) {
        qp_metrics_f32_fn k = qp_metrics_f32_by_name(variants[v]);
        if (!k)
            continue;
        double dt = time_kernel(k, a, b, kn);
        printf("bench-diff: kernel %-6s 1 thread   %6.2f GB/s  (2 x 64 MiB in "
               "memory)%s\n", variants[v], 2.0 * (double)kn * 4 / 1e9 / dt,
               !strcmp(variants[v], qp_metrics_variant()) ? "  <- chosen" : "");
    }
    free(a);
    free(b);
    free(buf);
    for (size_t i = 0; i < nfiles; i++)
        free(files[i]);
    for (size_t i = 0; i < ntf; i++)
        free(tfiles[i]);
    free(files);
    free(tfiles);
    qp_rmtree(dir);
    free(paths[0]);
    free(paths[1]);
    free(dir);
    return 0;
}
