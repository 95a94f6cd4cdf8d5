/* kernels/blas.h: qp_blas_sgemm against naive loops in double on odd
 * shapes (every transpose, strides wider than the rows, beta 0 over NaN,
 * the sgemv and threaded paths), on the OpenBLAS core this process runs
 * and, each in a child process, on every core qprobe may pick on this CPU;
 * and the choice of core (qp_blas_core_outgrown, qp_blas_wanted_core). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/parallel.h"
#include "kernels/blas.h"
#include "kernels/dispatch.h"
#include "tests/test.h"
#include "tests/unit/test-requant.h"

struct shape {
    size_t m, n, k;
    bool ta, tb;
    size_t pad; /* extra elements per stored row */
    float alpha, beta;
};

/* Fills x[rows * ld] with values in [-1, 1) (padding included). */
static void fill(float *x, size_t count, uint64_t *seed)
{
    for (size_t i = 0; i < count; i++)
        x[i] = (float)((int64_t)(test_rand(seed) >> 40) - (1 << 23)) * 0x1p-23f;
}

/* Runs one product on pool and checks every element of C against the
 * naive sum in double, within 1e-5 of the sum of the products' magnitudes
 * (plus |beta c|); returns the number of bad elements. */
static int check_shape(struct qp_test_ctx *ctx, struct qp_pool *pool,
                       const struct shape *s, uint64_t *seed)
{
    size_t ar = s->ta ? s->k : s->m, ac = s->ta ? s->m : s->k;
    size_t br = s->tb ? s->n : s->k, bc = s->tb ? s->k : s->n;
    size_t lda = ac + s->pad, ldb = bc + s->pad, ldc = s->n + s->pad;
    float *a = malloc((ar * lda + 1) * sizeof *a);
    float *b = malloc((br * ldb + 1) * sizeof *b);
    float *c = malloc((s->m * ldc + 1) * sizeof *c);
    float *c0 = malloc((s->m * ldc + 1) * sizeof *c0);
    if (!a || !b || !c || !c0) {
        qp_test_failf(ctx, __FILE__, __LINE__, "out of memory");
        free(a), free(b), free(c), free(c0);
        return 1;
    }
    fill(a, ar * lda, seed);
    fill(b, br * ldb, seed);
    fill(c0, s->m * ldc, seed);
    if (s->beta == 0.0f) /* beta 0 must not read C */
        for (size_t i = 0; i < s->m * ldc; i++)
            c0[i] = NAN;
    memcpy(c, c0, s->m * ldc * sizeof *c);
    qp_blas_sgemm(pool, s->ta, s->tb, s->m, s->n, s->k, s->alpha, a, lda, b,
                  ldb, s->beta, c, ldc);
    int bad = 0;
    for (size_t i = 0; i < s->m; i++)
        for (size_t j = 0; j < ldc; j++) {
            double got = c[i * ldc + j];
            if (j >= s->n) { /* padding is left alone */
                double was = c0[i * ldc + j];
                if (!(got == was || (isnan(got) && isnan(was))) && bad++ < 3)
                    qp_test_failf(ctx, __FILE__, __LINE__, "padding of C[%zu] "
                                  "written", i);
                continue;
            }
            double sum = 0, mag = 0;
            for (size_t p = 0; p < s->k; p++) {
                double x = s->ta ? a[p * lda + i] : a[i * lda + p];
                double y = s->tb ? b[j * ldb + p] : b[p * ldb + j];
                sum += x * y;
                mag += fabs(x * y);
            }
            double want = s->alpha * sum, tol = 1e-5 * (fabs(s->alpha) * mag + 1e-30);
            if (s->beta != 0.0f) {
                want += s->beta * (double)c0[i * ldc + j];
                tol += 1e-6 * fabs(s->beta * (double)c0[i * ldc + j]);
            }
            if (!(fabs(got - want) <= tol) && bad++ < 3)
                qp_test_failf(ctx, __FILE__, __LINE__,
                              "core %s: %zux%zux%zu ta %d tb %d: C[%zu][%zu] = "
                              "%.9g, want %.9g", qp_blas_core(), s->m, s->n,
                              s->k, s->ta, s->tb, i, j, got, want);
        }
    free(a), free(b), free(c), free(c0);
    return bad;
}

QP_TEST(blas_sgemm_matches_naive_loops)
{
    static const struct shape shapes[] = {
        {1, 1, 1, false, false, 0, 1.0f, 0.0f},
        {3, 5, 7, false, false, 0, 1.0f, 0.0f},
        {3, 5, 7, true, false, 2, -0.5f, 1.0f},
        {3, 5, 7, false, true, 1, 2.0f, 0.25f},
        {3, 5, 7, true, true, 3, 1.0f, -1.0f},
        {17, 1, 65, false, false, 1, 1.0f, 0.0f},  /* sgemv */
        {17, 1, 65, true, true, 2, 1.5f, 0.5f},    /* sgemv, transposed */
        {1, 33, 9, false, true, 0, 1.0f, 0.0f},
        {31, 47, 1, true, false, 5, 1.0f, 0.0f},   /* k = 1 */
        {65, 31, 129, false, true, 3, 1.0f, 0.0f},
        {127, 131, 129, false, false, 1, 1.0f, 0.0f}, /* threaded, by columns */
        {263, 7, 1201, true, false, 0, 1.0f, 2.0f},   /* threaded, by rows */
        {129, 257, 67, true, true, 4, -1.0f, 0.0f},
    };
    const char *want = getenv("QP_TEST_BLAS_CORE"); /* a child of the next test */
    if (want)
        CHECK(!strcasecmp(qp_blas_core(), want));
    uint64_t seed = 0x5eed5eedull;
    struct qp_pool *pool = qp_pool_new(3);
    REQUIRE(pool);
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        CHECK_INT(check_shape(ctx, pool, &shapes[i], &seed), 0);
        CHECK_INT(check_shape(ctx, NULL, &shapes[i], &seed), 0);
    }
    qp_pool_free(pool);
}

/* Runs this binary's blas_sgemm_matches_naive_loops with
 * OPENBLAS_CORETYPE=core; true when it passed on that core. */
static bool passes_on(struct qp_test_ctx *ctx, const char *core)
{
    char log[] = "/tmp/qp-blas-core-XXXXXX";
    int fd = mkstemp(log);
    if (fd < 0)
        return false;
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fd, 1);
        dup2(fd, 2);
        setenv("OPENBLAS_CORETYPE", core, 1);
        setenv("QP_TEST_BLAS_CORE", core, 1);
        unsetenv("QP_BLAS_REPLACED");
        char *args[] = {"qprobe-test", "blas_sgemm_matches_naive_loops", NULL};
        execv("/proc/self/exe", args);
        _exit(127);
    }
    int status = 0;
    bool ok = pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
              WEXITSTATUS(status) == 0;
    char out[4096] = "";
    ssize_t n = pread(fd, out, sizeof out - 1, 0);
    out[n > 0 ? n : 0] = '\0';
    ok = ok && strstr(out, "unit: 1 passed, 0 failed");
    if (!ok)
        qp_test_failf(ctx, __FILE__, __LINE__, "core %s:\n%s", core, out);
    close(fd);
    unlink(log);
    return ok;
}

QP_TEST(blas_sgemm_on_every_core_qprobe_may_pick)
{
    const char *cores[8];
    size_t n = qp_blas_candidate_cores(cores, 8);
    for (size_t i = 0; i < n; i++)
        passes_on(ctx, cores[i]);
#if defined(__x86_64__)
    CHECK(n >= 1 || !qp_kern_isa_available(QP_KERN_AVX2));
#endif
}

QP_TEST(blas_core_choice)
{
    /* Debian 0.3.21's fallback on CPUs it does not know */
    CHECK(qp_blas_core_outgrown("Prescott", "SkylakeX"));
    CHECK(qp_blas_core_outgrown("prescott", "Haswell"));
    CHECK(qp_blas_core_outgrown("Haswell", "SkylakeX"));
    CHECK(qp_blas_core_outgrown("Nehalem", "Sandybridge"));
    /* at least as new: the library's choice stays */
    CHECK(!qp_blas_core_outgrown("Cooperlake", "SkylakeX"));
    CHECK(!qp_blas_core_outgrown("SkylakeX", "SkylakeX"));
    CHECK(!qp_blas_core_outgrown("Zen", "Haswell"));
    CHECK(!qp_blas_core_outgrown("Excavator", "Zen"));
    /* names this table does not know: a newer library knows better */
    CHECK(!qp_blas_core_outgrown("GraniteRapids", "SkylakeX"));
    CHECK(!qp_blas_core_outgrown("Unknown", "SkylakeX"));
    CHECK(!qp_blas_core_outgrown(NULL, "SkylakeX"));
    CHECK(!qp_blas_core_outgrown("Prescott", NULL));
    /* the wanted core follows the instruction sets the kernels detect */
    const char *w = qp_blas_wanted_core();
#if defined(__x86_64__)
    if (qp_kern_isa_available(QP_KERN_AVX512))
        CHECK_STR(w, "SkylakeX");
    else if (qp_kern_isa_available(QP_KERN_AVX2))
        CHECK(w && (!strcmp(w, "Haswell") || !strcmp(w, "Zen")));
    /* and is one of the candidates the previous test checks */
    const char *cores[8];
    size_t n = qp_blas_candidate_cores(cores, 8);
    bool listed = false;
    for (size_t i = 0; w && i < n; i++)
        listed |= !strcmp(cores[i], w);
    CHECK(listed || !w);
#else
    CHECK(w == NULL);
#endif
    /* this process runs the wanted core unless the environment or the
     * library's own choice (at least as new) decided */
    if (w && !getenv("OPENBLAS_CORETYPE"))
        CHECK(!qp_blas_core_outgrown(qp_blas_core(), w));
    CHECK_CONTAINS(qp_blas_describe(), "core ");
}
