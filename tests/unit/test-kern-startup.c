/* The checks every program makes at start (kernels/startup.h): QP_KERNELS
 * (qp_kern_init) and QP_THREADS (qp_parallel_check_env) refuse malformed
 * values with a message naming the variable, accept the documented ones;
 * and the one line describing the dispatch table names every family. */
#include <stdlib.h>
#include <string.h>

#include "core/parallel.h"
#include "kernels/dispatch.h"
#include "tests/test.h"

/* Sets (or, for NULL, unsets) name; returns the old value (malloc'd or
 * NULL) for restore. */
static char *swap_env(const char *name, const char *value)
{
    const char *old = getenv(name);
    char *saved = old ? strdup(old) : NULL;
    if (value)
        setenv(name, value, 1);
    else
        unsetenv(name);
    return saved;
}

static void restore_env(const char *name, char *saved)
{
    if (saved)
        setenv(name, saved, 1);
    else
        unsetenv(name);
    free(saved);
}

QP_TEST(kern_init_refuses_a_malformed_qp_kernels)
{
    static const char *const bad[] = {
        "bogus", "REF", "avx", "avx512 ", "sse2",
#if defined(__x86_64__)
        "neon", "neon-dot", /* another architecture's sets */
#else
        "avx2", "avx512",
#endif
    };
    static const char *const good[] = {
        "", "ref", "auto",
#if defined(__x86_64__)
        "avx2", "avx-vnni", "avx512", "avx512-vnni",
#elif defined(__aarch64__)
        "neon", "neon-dot",
#endif
    };
    char *saved = swap_env("QP_KERNELS", NULL);
    struct qp_error err;
    CHECK_OK(qp_kern_init(&err), &err);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        setenv("QP_KERNELS", bad[i], 1);
        CHECK_FAILS(qp_kern_init(&err), QP_E_INVAL, &err, "QP_KERNELS='");
        CHECK_CONTAINS(err.msg, bad[i]);
        CHECK_CONTAINS(err.msg, "use one of: ref, auto");
    }
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        setenv("QP_KERNELS", good[i], 1);
        CHECK_OK(qp_kern_init(&err), &err);
    }
    restore_env("QP_KERNELS", saved);
}

QP_TEST(parallel_check_env_refuses_a_malformed_qp_threads)
{
    static const char *const bad[] = {"0", "-1", "257", "1000000000000",
                                      "4x", " 4", "two", "+3", "2.0"};
    static const char *const good[] = {"", "1", "2", "16", "256"};
    char *saved = swap_env("QP_THREADS", NULL);
    struct qp_error err;
    CHECK_OK(qp_parallel_check_env(&err), &err);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        setenv("QP_THREADS", bad[i], 1);
        CHECK_FAILS(qp_parallel_check_env(&err), QP_E_INVAL, &err,
                    "QP_THREADS='");
        CHECK_CONTAINS(err.msg, "from 1 to 256");
        /* library code that was not told falls back to the CPUs */
        CHECK(qp_parallel_threads() >= 1);
    }
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        setenv("QP_THREADS", good[i], 1);
        CHECK_OK(qp_parallel_check_env(&err), &err);
        if (*good[i])
            CHECK_INT(qp_parallel_threads(), atoi(good[i]));
    }
    restore_env("QP_THREADS", saved);
}

QP_TEST(kern_describe_names_every_family)
{
    static const char *const families[] = {
        "kernels: gemm-s8=", " depthwise-s8=", " requant=", " quantize-act=",
        " lut8=", " eltwise-f32=", " conv-f32=", " metrics=", " gemm-qd8="};
    const char *d = qp_kern_describe();
    for (size_t i = 0; i < sizeof families / sizeof families[0]; i++)
        CHECK_CONTAINS(d, families[i]);
    /* and the table's choices are the ones described */
    const struct qp_kern_table *t = qp_kern_table();
    CHECK_CONTAINS(d, qp_rq_isa_name(t->requant));
    const char *env = getenv("QP_KERNELS");
    if (env && !strcmp(env, "ref")) {
        CHECK(!t->gemm_s8 && !t->depthwise_s8 && !t->lut8 && !t->metrics_f32 &&
              !t->eltwise_f32 && !t->conv_f32);
        CHECK_INT(t->requant, QP_RQ_ISA_REF);
        CHECK_INT(t->quantize_act, QP_RQ_ISA_REF);
    }
}
