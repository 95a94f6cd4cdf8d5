/* kernels/blas.c: OpenBLAS behind qp_blas_* (see kernels/blas.h).
 *
 * Threading: OpenBLAS's own pool spins (sched_yield) between calls, which
 * on a small machine shared with other work, or beside qprobe's own
 * parallel loops, costs more than it gains. So OpenBLAS runs one thread
 * per call and large products are split here into column (or row) blocks
 * over core/parallel.h threads, each calling the single-threaded sgemm
 * (OpenBLAS built with USE_THREAD is safe to call concurrently). */
#include "kernels/blas.h"

#include <cblas.h>
#if defined(__x86_64__)
#include <cpuid.h>
#endif
#include <lapacke.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "core/parallel.h"

/* OpenBLAS's pool is started when the library loads; its threads spin
 * for a while after each call. This export (what OpenBLAS's own fork
 * handler calls) stops them; with one thread set, OpenBLAS never starts
 * them again (a forked child inherits the setting). Done once: the
 * shutdown costs tens of microseconds even when there is nothing to stop,
 * which small products would pay on every call. */
int blas_thread_shutdown_(void);

static void openblas_one_thread(void)
{
    openblas_set_num_threads(1);
    blas_thread_shutdown_();
}

static pthread_once_t one_thread_once = PTHREAD_ONCE_INIT;

static void single_threaded_openblas(void)
{
    pthread_once(&one_thread_once, openblas_one_thread);
}

/* OpenBLAS runs one thread, except inside a LAPACK call, which sets its
 * own thread count: products hold this lock shared, LAPACK exclusively,
 * so no product ever runs while OpenBLAS is multi-threaded. */
static pthread_rwlock_t threads_lock = PTHREAD_RWLOCK_INITIALIZER;

static void openblas_enter(void)
{
    single_threaded_openblas();
    pthread_rwlock_rdlock(&threads_lock);
}

static void openblas_leave(void)
{
    pthread_rwlock_unlock(&threads_lock);
}

/* Below this many multiply-adds one thread is faster. */
#define PAR_MIN_MACS ((size_t)1 << 21)

struct gemm {
    bool ta, tb;
    size_t m, n, k;
    float alpha, beta;
    const float *a, *b;
    size_t lda, ldb, ldc;
    float *c;
    bool split_n;
    /* blocks of columns (split_n) or rows, handed to whichever share asks
     * first: a share that starts late takes fewer */
    struct qp_claim claim;
    size_t block;
};

static void sgemm1(bool ta, bool tb, size_t m, size_t n, size_t k, float alpha,
                   const float *a, size_t lda, const float *b, size_t ldb,
                   float beta, float *c, size_t ldc)
{
    /* a matrix-vector product: OpenBLAS's sgemm pays a fixed cost of
     * microseconds for its buffers, sgemv does not */
    if (n == 1) {
        /* c[:, 0] = alpha op(A) b[:, 0] + beta c[:, 0]; b's column has
         * stride ldb (or 1 when B is stored transposed). beta 0 must not
         * read c (it may hold NaN): c is zeroed and added to instead. */
        if (beta == 0.0f) {
            for (size_t i = 0; i < m; i++)
                c[i * ldc] = 0.0f;
            beta = 1.0f;
        }
        cblas_sgemv(CblasRowMajor, ta ? CblasTrans : CblasNoTrans,
                    (blasint)(ta ? k : m), (blasint)(ta ? m : k), alpha, a,
                    (blasint)(lda > (ta ? m : k) ? lda : (ta ? m : k)), b,
                    (blasint)(tb ? 1 : ldb), beta, c, (blasint)ldc);
        return;
    }
    /* cblas requires leading dimensions >= the stored row length even
     * where a dimension is 1 (any stride is then equivalent) */
    size_t la = ta ? m : k, lb = tb ? k : n;
    if (lda < la)
        lda = la;
    if (ldb < lb)
        ldb = lb;
    if (ldc < n)
        ldc = n;
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans,
                tb ? CblasTrans : CblasNoTrans, (blasint)m, (blasint)n,
                (blasint)k, alpha, a, (blasint)lda, b, (blasint)ldb, beta, c,
                (blasint)ldc);
}

/* Columns (split_n) or rows [b, e) of C, clipped to its size. */
static void gemm_block(const struct gemm *g, size_t b, size_t e)
{
    if (g->split_n) {
        /* columns [b, e) of op(B) and C */
        if (e > g->n)
            e = g->n;
        if (b < e)
            sgemm1(g->ta, g->tb, g->m, e - b, g->k, g->alpha, g->a, g->lda,
                   g->tb ? g->b + b * g->ldb : g->b + b, g->ldb, g->beta,
                   g->c + b, g->ldc);
    } else {
        /* rows [b, e) of op(A) and C */
        if (e > g->m)
            e = g->m;
        if (b < e)
            sgemm1(g->ta, g->tb, e - b, g->n, g->k, g->alpha,
                   g->ta ? g->a + b : g->a + b * g->lda, g->lda, g->b, g->ldb,
                   g->beta, g->c + b * g->ldc, g->ldc);
    }
}

static void gemm_part(void *ctx, int t, int nt)
{
    struct gemm *g = ctx;
    size_t bb, be;
    (void)t;
    (void)nt;
    while (qp_claim_next(&g->claim, &bb, &be))
        gemm_block(g, bb * g->block, be * g->block);
}


void qp_blas_sgemm(struct qp_pool *pool, bool trans_a, bool trans_b, size_t m,
                   size_t n, size_t k,
                   float alpha, const float *a, size_t lda, const float *b,
                   size_t ldb, float beta, float *c, size_t ldc)
{
    if (m == 0 || n == 0)
        return;
    if (k == 0) {
        for (size_t i = 0; i < m; i++)
            for (size_t j = 0; j < n; j++)
                c[i * ldc + j] = beta == 0.0f ? 0.0f : beta * c[i * ldc + j];
        return;
    }
    openblas_enter();
    int nt = qp_pool_threads(pool);
    if (nt <= 1 || m * n * k < PAR_MIN_MACS || (n < 32 && m < 8)) {
        sgemm1(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    } else {
        struct gemm g = {trans_a, trans_b, m, n, k, alpha, beta, a, b,
                         lda, ldb, ldc, c, n >= 32 * (size_t)nt, {0}, 0};
        /* about three blocks a thread, of 16 columns or 4 rows at least */
        size_t len = g.split_n ? n : m, align = g.split_n ? 16 : 4;
        size_t parts = 3 * (size_t)nt;
        g.block = ((len + parts - 1) / parts + align - 1) / align * align;
        qp_claim_init(&g.claim, (len + g.block - 1) / g.block, 1);
        qp_pool_run(pool, gemm_part, &g, nt);
    }
    openblas_leave();
}

/* ---- the core OpenBLAS runs on -------------------------------------------- */

/* OpenBLAS's x86-64 cores (driver/others/dynamic.c) by the newest
 * instruction set their kernels use: 1 SSE, 2 AVX, 3 AVX2 + FMA, 4
 * AVX-512. */
static const struct {
    const char *name;
    int level;
} cores[] = {
    {"Katmai", 1}, {"Coppermine", 1}, {"Northwood", 1}, {"Prescott", 1},
    {"Banias", 1}, {"Atom", 1}, {"Core2", 1}, {"Penryn", 1},
    {"Dunnington", 1}, {"Nehalem", 1}, {"Athlon", 1}, {"Opteron", 1},
    {"Opteron_SSE3", 1}, {"Barcelona", 1}, {"Nano", 1}, {"Bobcat", 1},
    {"Sandybridge", 2}, {"Bulldozer", 2}, {"Piledriver", 2},
    {"Steamroller", 2}, {"Haswell", 3}, {"Excavator", 3}, {"Zen", 3},
    {"SkylakeX", 4}, {"Cooperlake", 4}, {"SapphireRapids", 4},
};

/* The level of a core name, 0 when unknown. */
static int core_level(const char *name)
{
    for (size_t i = 0; name && i < sizeof cores / sizeof cores[0]; i++)
        if (!strcasecmp(name, cores[i].name))
            return cores[i].level;
    return 0;
}

bool qp_blas_core_outgrown(const char *lib_core, const char *want)
{
    int have = core_level(lib_core), need = core_level(want);
    return have > 0 && need > have;
}

#if defined(__x86_64__)
static bool cpu_is_amd(void)
{
    unsigned a, b, c, d;
    if (!__get_cpuid(0, &a, &b, &c, &d))
        return false;
    /* "AuthenticAMD" / "HygonGenuine": ebx holds the first four bytes */
    return !memcmp(&b, "Auth", 4) || !memcmp(&b, "Hygo", 4);
}

static int cpu_level(void)
{
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
        __builtin_cpu_supports("avx512cd"))
        return 4;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        return 3;
    return __builtin_cpu_supports("avx") ? 2 : 1;
}
#endif

const char *qp_blas_wanted_core(void)
{
#if defined(__x86_64__)
    switch (cpu_level()) {
    case 4: return "SkylakeX";
    case 3: return cpu_is_amd() ? "Zen" : "Haswell";
    case 2: return "Sandybridge";
    default: return NULL;
    }
#else
    return NULL;
#endif
}

size_t qp_blas_candidate_cores(const char **names, size_t max)
{
    size_t n = 0;
#if defined(__x86_64__)
    static const char *const by_level[] = {"SkylakeX", "Haswell", "Zen",
                                           "Sandybridge"};
    int level = cpu_level();
    for (size_t i = 0; i < sizeof by_level / sizeof by_level[0] && n < max; i++)
        if (core_level(by_level[i]) <= level)
            names[n++] = by_level[i];
#else
    (void)names;
    (void)max;
#endif
    return n;
}

const char *qp_blas_core(void)
{
    return openblas_get_corename();
}

void qp_blas_startup(char **argv)
{
    if (getenv("OPENBLAS_CORETYPE"))
        return; /* the user's or the machine's (or ours, after the exec) */
    const char *lib = getenv("QP_BLAS_ASSUME_CORE");
    if (!lib || !*lib)
        lib = openblas_get_corename();
    const char *want = qp_blas_wanted_core();
    if (!want || !strstr(openblas_get_config(), "DYNAMIC_ARCH") ||
        !qp_blas_core_outgrown(lib, want))
        return;
    if (!setenv("QP_BLAS_REPLACED", lib, 1) &&
        !setenv("OPENBLAS_CORETYPE", want, 1))
        execv("/proc/self/exe", argv);
    unsetenv("OPENBLAS_CORETYPE"); /* no exec: the library's choice stays */
    unsetenv("QP_BLAS_REPLACED");
}

static char description[512];
static pthread_once_t describe_once = PTHREAD_ONCE_INIT;

static void describe(void)
{
    const char *set = getenv("OPENBLAS_CORETYPE");
    const char *replaced = getenv("QP_BLAS_REPLACED");
    char why[160];
    if (set && replaced)
        snprintf(why, sizeof why, "OPENBLAS_CORETYPE=%s set by qprobe: "
                 "OpenBLAS chose %s, older than this CPU", set, replaced);
    else if (set)
        snprintf(why, sizeof why, "OPENBLAS_CORETYPE=%s from the environment",
                 set);
    else
        snprintf(why, sizeof why, "OpenBLAS's own choice for this CPU");
    snprintf(description, sizeof description, "blas: %s; core %s (%s)",
             openblas_get_config(), openblas_get_corename(), why);
}

int qp_blas_threads(void)
{
    return qp_parallel_threads();
}

const char *qp_blas_describe(void)
{
    pthread_once(&describe_once, describe);
    return description;
}

/* ---- SYRK, SYMM -------------------------------------------------------- */

struct syrk {
    size_t n, k, lda, ldc;
    float alpha, beta;
    const float *a;
    float *c;
    bool rows; /* A is [n, k] and C = A A^T (else A [k, n], C = A^T A) */
};

/* Row ranges [r(t), r(t+1)) of the lower triangle with r(t) = n sqrt(t/nt)
 * hold equal areas; boundaries rounded to 16 rows. */
static size_t syrk_bound(size_t n, int t, int nt)
{
    if (t >= nt)
        return n;
    size_t r = (size_t)((double)n * sqrt((double)t / nt));
    r -= r % 16;
    return r < n ? r : n;
}

static void syrk_rows(const struct syrk *s, size_t r0, size_t r1)
{
    if (r0 >= r1)
        return;
    /* C[r0:r1, 0:r0] = alpha A[:, r0:r1]^T A[:, 0:r0] + beta C (or with
     * the rows of A) */
    const float *ar = s->rows ? s->a + r0 * s->lda : s->a + r0;
    if (r0)
        sgemm1(!s->rows, s->rows, r1 - r0, r0, s->k, s->alpha, ar, s->lda,
               s->a, s->lda, s->beta, s->c + r0 * s->ldc, s->ldc);
    size_t want = s->rows ? s->k : r1 - r0;
    size_t lda = s->lda < want ? want : s->lda;
    size_t ldc = s->ldc < r1 - r0 ? r1 - r0 : s->ldc;
    cblas_ssyrk(CblasRowMajor, CblasLower, s->rows ? CblasNoTrans : CblasTrans,
                (blasint)(r1 - r0), (blasint)s->k, s->alpha, ar, (blasint)lda,
                s->beta, s->c + r0 * s->ldc + r0, (blasint)ldc);
}

static void syrk_part(void *ctx, int t, int nt)
{
    const struct syrk *s = ctx;
    syrk_rows(s, syrk_bound(s->n, t, nt), syrk_bound(s->n, t + 1, nt));
}

static void syrk_run(struct qp_pool *pool, size_t n, size_t k, float alpha,
                     const float *a, size_t lda, float beta, float *c,
                     size_t ldc, bool rows)
{
    if (n == 0)
        return;
    if (k == 0) {
        for (size_t i = 0; i < n; i++)
            for (size_t j = 0; j <= i; j++)
                c[i * ldc + j] = beta == 0.0f ? 0.0f : beta * c[i * ldc + j];
        return;
    }
    openblas_enter();
    struct syrk s = {n, k, lda, ldc, alpha, beta, a, c, rows};
    int nt = qp_pool_threads(pool);
    if (nt <= 1 || n * n / 2 * k < PAR_MIN_MACS || n < 64)
        syrk_rows(&s, 0, n);
    else
        qp_pool_run(pool, syrk_part, &s, nt);
    openblas_leave();
}

void qp_blas_ssyrk_lower(struct qp_pool *pool, size_t n, size_t k, float alpha,
                         const float *a, size_t lda, float beta, float *c,
                         size_t ldc)
{
    syrk_run(pool, n, k, alpha, a, lda, beta, c, ldc, false);
}

void qp_blas_ssyrk_lower_rows(struct qp_pool *pool, size_t n, size_t k,
                              float alpha, const float *a, size_t lda,
                              float beta, float *c, size_t ldc)
{
    syrk_run(pool, n, k, alpha, a, lda, beta, c, ldc, true);
}

struct symm {
    size_t m, n, lds, ldb, ldc;
    float alpha, beta;
    const float *s, *b;
    float *c;
};

static void symm_part(void *ctx, int t, int nt)
{
    const struct symm *p = ctx;
    size_t b, e;
    qp_parallel_split(p->m, t, nt, 4, &b, &e);
    if (b >= e)
        return;
    cblas_ssymm(CblasRowMajor, CblasRight, CblasLower, (blasint)(e - b),
                (blasint)p->n, p->alpha, p->s, (blasint)p->lds,
                p->b + b * p->ldb, (blasint)p->ldb, p->beta, p->c + b * p->ldc,
                (blasint)p->ldc);
}

void qp_blas_ssymm_right_lower(struct qp_pool *pool, size_t m, size_t n,
                               float alpha, const float *s, size_t lds,
                               const float *b, size_t ldb, float beta, float *c,
                               size_t ldc)
{
    if (m == 0 || n == 0)
        return;
    openblas_enter();
    struct symm p = {m, n, lds < n ? n : lds, ldb < n ? n : ldb,
                     ldc < n ? n : ldc, alpha, beta, s, b, c};
    int nt = qp_pool_threads(pool);
    if (nt <= 1 || m * n * n < PAR_MIN_MACS || m < 8)
        nt = 1;
    qp_pool_run(pool, symm_part, &p, nt);
    openblas_leave();
}

/* ---- LAPACK ------------------------------------------------------------ */

/* A LAPACK call on nt threads of OpenBLAS's own (its LAPACK is parallel
 * inside), with every product shut out meanwhile; back to one thread and
 * its spinning workers stopped afterwards. */
static void lapack_begin(int nt)
{
    single_threaded_openblas();
    pthread_rwlock_wrlock(&threads_lock);
    if (nt > 1)
        openblas_set_num_threads(nt);
}

static void lapack_end(int nt)
{
    if (nt > 1) {
        openblas_set_num_threads(1);
        blas_thread_shutdown_();
    }
    pthread_rwlock_unlock(&threads_lock);
}

/* Below this order one thread is faster. */
#define LAPACK_PAR_MIN 512

/* A row-major lower triangle is the column-major upper triangle of the
 * same memory, and a symmetric matrix is its own transpose: LAPACK's
 * column-major 'U' routines compute on it what the row-major 'L' ones
 * would (A = U^T U with U^T = L), without LAPACKE's transposing copy; and
 * the inverse of that U = L^T is (L^-1)^T. */
static int lapack_lower(struct qp_pool *pool, size_t n, float *a, size_t lda,
                        bool inverse)
{
    if (n == 0)
        return 0;
    int nt = n < LAPACK_PAR_MIN ? 1 : qp_pool_threads(pool);
    lapack_int ln = (lapack_int)n, la = (lapack_int)(lda < n ? n : lda);
    lapack_begin(nt);
    int info = inverse
                   ? LAPACKE_strtri_work(LAPACK_COL_MAJOR, 'U', 'N', ln, a, la)
                   : LAPACKE_spotrf_work(LAPACK_COL_MAJOR, 'U', ln, a, la);
    lapack_end(nt);
    return info;
}

int qp_lapack_spotrf_lower(struct qp_pool *pool, size_t n, float *a,
                           size_t lda)
{
    return lapack_lower(pool, n, a, lda, false);
}

int qp_lapack_strtri_lower(struct qp_pool *pool, size_t n, float *a,
                           size_t lda)
{
    return lapack_lower(pool, n, a, lda, true);
}
