/* tests/test.c: the unit-test runner. */
#include "tests/test.h"

#include <stdarg.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/fileio.h"
#include "core/outfile.h"
#include "kernels/startup.h"

struct entry {
    const char *name, *file;
    qp_test_fn fn;
};

static struct entry *tests;
static size_t ntests, cap;

void qp_test_register(const char *name, const char *file, qp_test_fn fn)
{
    if (ntests == cap) {
        cap = cap ? 2 * cap : 256;
        tests = realloc(tests, cap * sizeof *tests);
        if (!tests)
            abort();
    }
    tests[ntests++] = (struct entry){name, file, fn};
}

void qp_test_failf(struct qp_test_ctx *ctx, const char *file, int line,
                   const char *fmt, ...)
{
    if (ctx->failures < 20) {
        va_list ap;
        va_start(ap, fmt);
        fprintf(stderr, "  %s:%d: %s: ", file, line, ctx->name);
        vfprintf(stderr, fmt, ap);
        fputc('\n', stderr);
        va_end(ap);
    }
    ctx->failures++;
}

const char *qp_test_tmpdir(struct qp_test_ctx *ctx)
{
    if (!ctx->tmpdir) {
        const char *base = getenv("TMPDIR");
        char tmpl[512];
        snprintf(tmpl, sizeof tmpl, "%s/qp-test-XXXXXX", base ? base : "/tmp");
        char *d = mkdtemp(tmpl);
        if (!d)
            abort();
        ctx->tmpdir = strdup(d);
    }
    return ctx->tmpdir;
}

char *qp_test_path(struct qp_test_ctx *ctx, const char *name)
{
    return qp_path_join(qp_test_tmpdir(ctx), name);
}

bool qp_test_write_file(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return false;
    bool ok = fwrite(data, 1, len, f) == len;
    return fclose(f) == 0 && ok;
}

const char *qp_test_shared_dir(void)
{
    static const char *const candidates[] = {"../shared", "/work/shared"};
    const char *e = getenv("QP_SHARED");
    if (e && qp_is_dir(e))
        return e;
    for (size_t i = 0; i < sizeof candidates / sizeof candidates[0]; i++) {
        char p[512];
        snprintf(p, sizeof p, "%s/golden", candidates[i]);
        if (qp_is_dir(p))
            return candidates[i];
    }
    return NULL;
}

const char *qp_test_golden_dir(void)
{
    static char path[512];
    const char *root = getenv("QP_ROOT");
    snprintf(path, sizeof path, "%s%stests/golden", root ? root : "",
             root ? "/" : "");
    return qp_is_dir(path) ? path : NULL;
}

static bool selected(const char *name, int argc, char **argv)
{
    if (argc < 2)
        return true;
    for (int i = 1; i < argc; i++)
        if (strstr(name, argv[i]))
            return true;
    return false;
}

int main(int argc, char **argv)
{
    struct qp_error err;
    if (qp_kern_startup(argv, &err)) {
        fprintf(stderr, "qprobe-test: %s\n", err.msg);
        return 2;
    }
    int passed = 0, failed = 0;
    for (size_t i = 0; i < ntests; i++) {
        if (!selected(tests[i].name, argc, argv))
            continue;
        struct qp_test_ctx ctx = {tests[i].name, 0, NULL};
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        tests[i].fn(&ctx);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        double ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 +
                    (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
        if (ctx.tmpdir) {
            qp_rmtree(ctx.tmpdir);
            free(ctx.tmpdir);
        }
        if (ctx.failures) {
            failed++;
            fprintf(stderr, "FAIL %s (%s, %d failed checks)\n", tests[i].name,
                    tests[i].file, ctx.failures);
        } else {
            passed++;
            if (getenv("QP_TEST_VERBOSE"))
                fprintf(stderr, "ok   %s (%.0f ms)\n", tests[i].name, ms);
        }
    }
    free(tests);
    printf("unit: %d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
