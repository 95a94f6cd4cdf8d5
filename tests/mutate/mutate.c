/* tests/mutate/mutate.c: build/qp-mutate QPROBE ROOT [-n RUNS] [-s SEED]
 * [-j JOBS] [-t SECONDS] [-m MIB] [-k]
 *
 * The CLI mutation test (tests/mutate/mutate.h). Writes valid inputs of
 * every format, checks that each command accepts them, then runs RUNS
 * (default 1500, or QP_MUTATE_RUNS) commands on mutated copies, JOBS at a
 * time (default 2), each in its own folder with a time limit (alarm, -t,
 * default 20 s) and an address-space limit (RLIMIT_AS 4 GiB; not under
 * ASan, which reserves terabytes) and QP_MAX_ALLOC=256M. A run fails when
 * qprobe dies of a signal (SIGALRM: a hang), exits other than 0 or 1,
 * peaks above -m MiB resident (default 1024), fails without naming the
 * mutated file or with an allocation failure (the limit was not checked
 * first), or leaves anything in its folder but its input and, after
 * success, its outputs. Prints counts and "mutate: N passed, N failed";
 * failing folders are kept and named. Deterministic for a SEED: run i
 * mutates with a generator seeded from (SEED, i). */
#include <errno.h>
#include <dirent.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/fileio.h"
#include "core/outfile.h"
#include "tests/mutate/mutate.h"

#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif
#ifndef UNDER_ASAN
#define UNDER_ASAN 0
#endif

enum { F_CRASH, F_HANG, F_EXIT, F_MEMORY, F_UNNAMED, F_LEFTOVER, F_COUNT };
static const char *const fail_names[F_COUNT] = {
    "crashes", "hangs", "bad exit codes", "over memory", "unnamed errors",
    "leftovers"};

struct opts {
    const char *qprobe, *root;
    long runs, seed, jobs, secs, mem_mib;
    bool keep;
};

struct run {
    long idx;
    pid_t pid;
    char dir[700], target[800]; /* its folder; the mutated file in it */
    char *argv[24];
    char what[160];
    int nargs;
};

struct tally {
    long runs, passed, exit0, exit1, by_cmd[5], fails[F_COUNT];
};


/* Copies src to dst, a file or (depth-first) a folder. */
static int copy_tree(const char *src, const char *dst)
{
    if (qp_is_dir(src)) {
        if (mkdir(dst, 0755) != 0)
            return -1;
        DIR *d = opendir(src);
        int st = d ? 0 : -1;
        for (struct dirent *e; d && !st && (e = readdir(d));) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
                continue;
            char *a = qp_path_join(src, e->d_name), *b = qp_path_join(dst, e->d_name);
            st = a && b ? copy_tree(a, b) : -1;
            free(a);
            free(b);
        }
        if (d)
            closedir(d);
        return st;
    }
    return mut_copy_file(src, dst);
}

/* Mutates file path in place; in a folder, one of its files (a .json for
 * text layouts when there is one). */
static int mutate_path(struct mut_rng *r, const char *path, bool dir,
                       enum mut_layout layout, char *what, size_t ws)
{
    char file[4096];
    snprintf(file, sizeof file, "%s", path);
    if (dir) {
        DIR *d = opendir(path);
        char names[64][256];
        int n = 0;
        for (struct dirent *e; d && n < 64 && (e = readdir(d));)
            if (e->d_name[0] != '.' || mut_below(r, 4) == 0)
                if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
                    snprintf(names[n++], sizeof names[0], "%s", e->d_name);
        if (d)
            closedir(d);
        if (!n)
            return -1;
        int pick = (int)mut_below(r, (size_t)n);
        snprintf(file, sizeof file, "%s/%s", path, names[pick]);
        layout = qp_str_ends_with(names[pick], ".json") ? MUT_TEXT
               : qp_str_ends_with(names[pick], ".npy")  ? MUT_NPY
                                                        : MUT_BINARY;
    }
    char *bytes;
    size_t len;
    struct qp_error err;
    if (qp_read_file(file, (size_t)1 << 28, &bytes, &len, &err))
        return -1;
    struct mut_buf b = {(uint8_t *)bytes, len};
    int rounds = 1 + (int)mut_below(r, 3), st = 0;
    size_t at = 0;
    for (int k = 0; k < rounds && !st; k++) {
        char one[96];
        st = mut_apply(r, &b, layout, one, sizeof one) ? 0 : -1;
        int w = snprintf(what + at, ws - at, "%s%s", k ? "; " : "", one);
        at += w > 0 && (size_t)w < ws - at ? (size_t)w : 0;
    }
    FILE *f = st ? NULL : fopen(file, "wb");
    if (!f || fwrite(b.p, 1, b.n, f) != b.n)
        st = -1;
    if (f && fclose(f) != 0)
        st = -1;
    free(b.p);
    return st;
}

static void arg(struct run *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void arg(struct run *r, const char *fmt, ...)
{
    char buf[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    r->argv[r->nargs++] = strdup(buf);
    r->argv[r->nargs] = NULL;
}

/* The command of run r on target t, mutated (m: r->target) or not (m:
 * its base copy); variant picks among the target's commands. */
static int build_cmd(struct run *r, const struct opts *o, const char *base,
                     const struct mut_target *t, const char *m, size_t variant)
{
    r->nargs = 0;
    arg(r, "%s", o->qprobe);
    int cmd = 4;
    switch (t->kind) {
    case KIND_DUMP:
        switch (variant % 6) {
        case 0: arg(r, "inspect"); arg(r, "%s", m); cmd = 0; break;
        case 1: arg(r, "diff"); arg(r, "%s/%s", base, t->name); arg(r, "%s", m);
                cmd = 1; break;
        case 2: arg(r, "diff"); arg(r, "%s", m); arg(r, "%s/%s", base, t->name);
                arg(r, "--csv"); arg(r, "out.csv"); cmd = 1; break;
        case 3: arg(r, "quantize"); arg(r, "%s", m); arg(r, "--scheme");
                arg(r, "w4g8z"); arg(r, "-o"); arg(r, "out.safetensors");
                arg(r, "--report"); arg(r, "out-r.csv"); cmd = 2; break;
        case 4: arg(r, "quantize"); arg(r, "%s", m); arg(r, "--scheme");
                arg(r, "w8cz"); arg(r, "--fake"); arg(r, "-o"); arg(r, "out.h5");
                cmd = 2; break;
        default: arg(r, "inspect"); arg(r, "%s", m); arg(r, "--csv");
                 arg(r, "out.csv"); cmd = 0; break;
        }
        break;
    case KIND_RECIPE:
        arg(r, "quantize"); arg(r, "%s/t.safetensors", base); arg(r, "--recipe");
        arg(r, "%s", m); arg(r, "-o"); arg(r, "out.npz"); cmd = 2;
        break;
    case KIND_MAP:
        arg(r, "diff"); arg(r, "%s/t.h5", base); arg(r, "%s/traw", base);
        arg(r, "--map"); arg(r, "%s", m); arg(r, "--csv"); arg(r, "out.csv");
        cmd = 1;
        break;
    case KIND_MODEL:
        switch (variant % 4) {
        case 0: arg(r, "run"); arg(r, "%s", m); arg(r, "--input");
                arg(r, "%s/%s", base, t->model); arg(r, "--dump");
                arg(r, "out.npz"); cmd = 3; break;
        case 1: arg(r, "run"); arg(r, "%s", m); arg(r, "--input");
                arg(r, "%s/%s", base, t->model); arg(r, "--mode"); arg(r, "fake");
                arg(r, "--scheme"); arg(r, "w8c"); arg(r, "--dump"); arg(r, "out");
                cmd = 3; break;
        case 2: arg(r, "inspect"); arg(r, "%s", m); cmd = 0; break;
        default: arg(r, "quantize"); arg(r, "%s", m); arg(r, "--scheme");
                 arg(r, "w8c"); arg(r, "-o"); arg(r, "out.safetensors"); cmd = 2;
        }
        break;
    case KIND_INPUT:
        arg(r, "run"); arg(r, "%s/%s", base, t->model); arg(r, "--input");
        arg(r, "%s", m); arg(r, "--dump"); arg(r, variant % 2 ? "out.h5" : "out/");
        cmd = 3;
        break;
    }
    return cmd;
}

/* The environment of every run: limits and a TMPDIR inside its folder. */
static void child_env(const char *dir)
{
    setenv("QP_MAX_ALLOC", "256M", 1);
    setenv("QP_THREADS", "1", 1);
    setenv("OPENBLAS_NUM_THREADS", "1", 1);
    setenv("TMPDIR", dir, 1);
    const char *a = getenv("ASAN_OPTIONS");
    char buf[2048];
    snprintf(buf, sizeof buf, "%s%sexitcode=86", a ? a : "", a && *a ? ":" : "");
    setenv("ASAN_OPTIONS", buf, 1);
    const char *u = getenv("UBSAN_OPTIONS");
    snprintf(buf, sizeof buf, "%s%sexitcode=86", u ? u : "", u && *u ? ":" : "");
    setenv("UBSAN_OPTIONS", buf, 1);
}

static pid_t start(struct run *r, const struct opts *o)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid != 0)
        return pid;
    if (chdir(r->dir) != 0)
        _exit(120);
    child_env(r->dir);
    if (!freopen("stdout.txt", "w", stdout) || !freopen("stderr.txt", "w", stderr))
        _exit(121);
    if (!UNDER_ASAN) {
        struct rlimit as = {(rlim_t)4 << 30, (rlim_t)4 << 30};
        setrlimit(RLIMIT_AS, &as);
    }
    struct rlimit core = {0, 0};
    setrlimit(RLIMIT_CORE, &core);
    alarm((unsigned)o->secs);
    execv(r->argv[0], r->argv);
    _exit(127);
}

/* Why run r failed (its status and peak RSS), or -1 when it passed. */
static int judge(const struct run *r, int status, long maxrss_kib,
                 const struct opts *o, char *why, size_t ws)
{
    char *err = NULL;
    char path[800];
    snprintf(path, sizeof path, "%s/stderr.txt", r->dir);
    struct qp_error e;
    if (qp_read_file(path, 1 << 20, &err, NULL, &e))
        err = strdup("");
    int f = -1;
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    if (WIFSIGNALED(status)) {
        f = WTERMSIG(status) == SIGALRM ? F_HANG : F_CRASH;
        snprintf(why, ws, "killed by signal %d%s", WTERMSIG(status),
                 f == F_HANG ? " (time limit)" : "");
    } else if (code != 0 && code != 1) {
        f = code == 86 ? F_CRASH : F_EXIT;
        snprintf(why, ws, "exit %d%s", code, code == 86 ? " (sanitizer)" : "");
    } else if (maxrss_kib > o->mem_mib * 1024) {
        f = F_MEMORY;
        snprintf(why, ws, "peak resident %ld MiB", maxrss_kib / 1024);
    } else if (code == 1 && (strstr(err, "out of memory") ||
                             strstr(err, "cannot allocate"))) {
        f = F_MEMORY;
        snprintf(why, ws, "an allocation failed before any limit refused it");
    } else if (code == 1 && (!strstr(err, "qprobe: error: ") ||
                             !strstr(err, r->target))) {
        f = F_UNNAMED;
        snprintf(why, ws, "the error does not name '%s'", r->target);
    }
    DIR *d = f < 0 ? opendir(r->dir) : NULL;
    const char *base = strrchr(r->target, '/') + 1;
    for (struct dirent *x; d && (x = readdir(d));) {
        const char *n = x->d_name;
        if (!strcmp(n, ".") || !strcmp(n, "..") || !strcmp(n, base) ||
            !strcmp(n, "stdout.txt") || !strcmp(n, "stderr.txt") ||
            (code == 0 && !strncmp(n, "out", 3)))
            continue;
        f = F_LEFTOVER;
        snprintf(why, ws, "left '%s' behind (exit %d)", n, code);
        break;
    }
    if (d)
        closedir(d);
    if (f >= 0 && *err) {
        size_t len = strlen(why);
        snprintf(why + len, ws - len, "; stderr: %.300s", err);
    }
    free(err);
    return f;
}

static void free_args(struct run *r)
{
    for (int i = 0; i < r->nargs; i++)
        free(r->argv[i]);
    r->nargs = 0;
}

/* Runs the unmutated command of every target's every variant: they must
 * all succeed, or the test measures nothing. */
static int check_bases(const struct opts *o, const char *work, const char *base,
                       const struct mut_target *t, int nt)
{
    int bad = 0;
    static const size_t variants[] = {[KIND_DUMP] = 6, [KIND_RECIPE] = 1,
                                      [KIND_MAP] = 1, [KIND_MODEL] = 4,
                                      [KIND_INPUT] = 2};
    for (int i = 0; i < nt; i++)
        for (size_t v = 0; v < variants[t[i].kind]; v++) {
            struct run r = {.idx = -1};
            snprintf(r.dir, sizeof r.dir, "%.500s/check", work);
            snprintf(r.target, sizeof r.target, "%.600s/%.31s", r.dir, t[i].name);
            char src[900];
            snprintf(src, sizeof src, "%.600s/%.31s", base, t[i].name);
            if (mkdir(r.dir, 0755) || copy_tree(src, r.target))
                return -1;
            build_cmd(&r, o, base, &t[i], r.target, v);
            pid_t pid = start(&r, o);
            int status;
            waitpid(pid, &status, 0);
            if (!WIFEXITED(status) || WEXITSTATUS(status)) {
                char err[800];
                snprintf(err, sizeof err, "%s/stderr.txt", r.dir);
                fprintf(stderr, "qp-mutate: the valid %s fails:", t[i].name);
                for (int k = 0; k < r.nargs; k++)
                    fprintf(stderr, " %s", r.argv[k]);
                fprintf(stderr, "\n");
                char *text;
                struct qp_error e;
                if (!qp_read_file(err, 1 << 16, &text, NULL, &e)) {
                    fprintf(stderr, "%s", text);
                    free(text);
                }
                bad++;
            }
            free_args(&r);
            qp_rmtree(r.dir);
        }
    return bad ? -1 : 0;
}

static int parse_opts(int argc, char **argv, struct opts *o)
{
    const char *e = getenv("QP_MUTATE_RUNS");
    *o = (struct opts){NULL, NULL, e ? atol(e) : (UNDER_ASAN ? 300 : 1500), 1, 2,
                       UNDER_ASAN ? 60 : 20, UNDER_ASAN ? 2048 : 1024, false};
    int c;
    while ((c = getopt(argc, argv, "n:s:j:t:m:k")) != -1) {
        long v = optarg ? atol(optarg) : 0;
        switch (c) {
        case 'n': o->runs = v; break;
        case 's': o->seed = v; break;
        case 'j': o->jobs = v > 0 ? v : 1; break;
        case 't': o->secs = v > 0 ? v : 1; break;
        case 'm': o->mem_mib = v > 0 ? v : 1; break;
        case 'k': o->keep = true; break;
        default: return -1;
        }
    }
    if (argc - optind != 2)
        return -1;
    o->qprobe = argv[optind];
    o->root = argv[optind + 1];
    return o->qprobe[0] == '/' ? 0 : -1; /* runs chdir */
}

/* Prepares run idx: its folder, mutated copy and command. */
static int prepare(struct run *r, long idx, const struct opts *o, const char *work,
                   const char *base, const struct mut_target *t, int nt,
                   struct tally *tl)
{
    struct mut_rng g = {(uint64_t)o->seed * 0x9E3779B97F4A7C15ull +
                        (uint64_t)idx * 0xBF58476D1CE4E5B9ull + 1};
    for (int k = 0; k < 4; k++)
        mut_next(&g);
    const struct mut_target *tg = &t[mut_below(&g, (size_t)nt)];
    memset(r, 0, sizeof *r);
    r->idx = idx;
    snprintf(r->dir, sizeof r->dir, "%s/r%ld", work, idx);
    snprintf(r->target, sizeof r->target, "%s/m-%s", r->dir, tg->name);
    char src[900];
    snprintf(src, sizeof src, "%s/%s", base, tg->name);
    if (mkdir(r->dir, 0755) || copy_tree(src, r->target) ||
        mutate_path(&g, r->target, tg->dir, tg->layout, r->what, sizeof r->what))
        return -1;
    tl->by_cmd[build_cmd(r, o, base, tg, r->target, mut_below(&g, 12))]++;
    return 0;
}

static void finish(struct run *r, int status, long maxrss, const struct opts *o,
                   const char *work, struct tally *tl)
{
    char why[1024];
    int f = judge(r, status, maxrss, o, why, sizeof why);
    tl->runs++;
    if (WIFEXITED(status))
        tl->exit0 += WEXITSTATUS(status) == 0, tl->exit1 += WEXITSTATUS(status) == 1;
    if (f < 0) {
        tl->passed++;
        qp_rmtree(r->dir);
    } else {
        tl->fails[f]++;
        char kept[800];
        snprintf(kept, sizeof kept, "%s/fail-%ld", work, r->idx);
        rename(r->dir, kept);
        fprintf(stderr, "FAIL mutate run %ld (%s; %s):", r->idx, fail_names[f],
                r->what);
        for (int k = 0; k < r->nargs; k++)
            fprintf(stderr, " %s", r->argv[k]);
        fprintf(stderr, "\n    %s\n    kept in %s\n", why, kept);
    }
    free_args(r);
}

int main(int argc, char **argv)
{
    struct opts o;
    if (parse_opts(argc, argv, &o)) {
        fprintf(stderr, "usage: qp-mutate /abs/path/to/qprobe ROOT [-n RUNS] "
                        "[-s SEED] [-j JOBS] [-t SECONDS] [-m MIB] [-k]\n");
        return 2;
    }
    const char *tmp = getenv("TMPDIR");
    char work[512];
    snprintf(work, sizeof work, "%.480s/qp-mutate-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    char base[600];
    struct mut_target t[MUT_MAX_TARGETS];
    int nt;
    if (!mkdtemp(work) || (snprintf(base, sizeof base, "%s/base", work),
                           mkdir(base, 0755)) ||
        (nt = mut_inputs(base, o.root, t)) < 0 || check_bases(&o, work, base, t, nt)) {
        fprintf(stderr, "qp-mutate: setup failed (in %s)\n", work);
        printf("mutate: 0 passed, 1 failed\n");
        return 1;
    }
    struct tally tl = {0};
    struct run *slots = calloc((size_t)o.jobs, sizeof *slots);
    long next = 0, live = 0;
    time_t t0 = time(NULL);
    while (next < o.runs || live) {
        for (long j = 0; j < o.jobs && next < o.runs; j++) {
            if (slots[j].pid)
                continue;
            if (prepare(&slots[j], next, &o, work, base, t, nt, &tl)) {
                fprintf(stderr, "qp-mutate: cannot prepare run %ld\n", next);
                return 1;
            }
            next++;
            slots[j].pid = start(&slots[j], &o);
            live++;
        }
        int status;
        struct rusage ru;
        pid_t pid = wait4(-1, &status, 0, &ru);
        if (pid < 0 && errno == EINTR)
            continue;
        for (long j = 0; pid > 0 && j < o.jobs; j++)
            if (slots[j].pid == pid) {
                finish(&slots[j], status, ru.ru_maxrss, &o, work, &tl);
                slots[j].pid = 0;
                live--;
            }
    }
    long failed = tl.runs - tl.passed;
    printf("mutate: %ld runs on %d valid inputs (inspect %ld, diff %ld, quantize "
           "%ld, run %ld), seed %ld, %lds: exit 0 x%ld, exit 1 x%ld;",
           tl.runs, nt, tl.by_cmd[0], tl.by_cmd[1], tl.by_cmd[2], tl.by_cmd[3],
           o.seed, (long)(time(NULL) - t0), tl.exit0, tl.exit1);
    for (int f = 0; f < F_COUNT; f++)
        printf("%s %ld %s", f ? "," : "", tl.fails[f], fail_names[f]);
    printf("\nmutate: %ld passed, %ld failed\n", tl.passed, failed);
    free(slots);
    if (!failed && !o.keep)
        qp_rmtree(work);
    else
        fprintf(stderr, "qp-mutate: inputs and failing runs kept in %s\n", work);
    return failed ? 1 : 0;
}
