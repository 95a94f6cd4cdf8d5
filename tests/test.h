/* tests/test.h: a small test framework.
 *
 * QP_TEST(name) { ... } defines and registers a test. Checks record a
 * failure and go on; REQUIRE_* return from the test. The runner
 * (tests/test.c) runs every test, or those whose name contains one of its
 * arguments, and ends with the line "N passed, N failed" that CI reads. */
#ifndef QP_TESTS_TEST_H
#define QP_TESTS_TEST_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

struct qp_test_ctx {
    const char *name;
    int failures;
    char *tmpdir; /* created on first qp_test_tmpdir, removed after the test */
};

typedef void (*qp_test_fn)(struct qp_test_ctx *ctx);
void qp_test_register(const char *name, const char *file, qp_test_fn fn);
void qp_test_failf(struct qp_test_ctx *ctx, const char *file, int line,
                   const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* A fresh temporary directory for this test (removed afterwards). */
const char *qp_test_tmpdir(struct qp_test_ctx *ctx);
/* malloc'd path "tmpdir/name". */
char *qp_test_path(struct qp_test_ctx *ctx, const char *name);
/* Writes len bytes to path; false on failure. */
bool qp_test_write_file(const char *path, const void *data, size_t len);
/* The shared folder holding golden/ (QP_SHARED, ../shared, /work/shared);
 * NULL when none exists. */
const char *qp_test_shared_dir(void);
/* The project's own golden folder, tests/golden (QP_ROOT/tests/golden, or
 * relative to the current directory: tests run from the repository root);
 * NULL when it is not found. */
const char *qp_test_golden_dir(void);

#define QP_TEST(fn)                                                            \
    static void fn(struct qp_test_ctx *ctx);                                   \
    __attribute__((constructor)) static void fn##_register(void)               \
    {                                                                          \
        qp_test_register(#fn, __FILE__, fn);                                   \
    }                                                                          \
    static void fn(struct qp_test_ctx *ctx)

#define CHECK(cond)                                                            \
    do {                                                                       \
        if (!(cond))                                                           \
            qp_test_failf(ctx, __FILE__, __LINE__, "CHECK(%s)", #cond);        \
    } while (0)

#define REQUIRE(cond)                                                          \
    do {                                                                       \
        if (!(cond)) {                                                         \
            qp_test_failf(ctx, __FILE__, __LINE__, "REQUIRE(%s)", #cond);      \
            return;                                                            \
        }                                                                      \
    } while (0)

#define CHECK_INT(a, b)                                                        \
    do {                                                                       \
        long long a_ = (long long)(a), b_ = (long long)(b);                    \
        if (a_ != b_)                                                          \
            qp_test_failf(ctx, __FILE__, __LINE__, "%s == %lld, expected %lld", \
                          #a, a_, b_);                                         \
    } while (0)

#define CHECK_STR(a, b)                                                        \
    do {                                                                       \
        const char *a_ = (a), *b_ = (b);                                       \
        if (!a_ || !b_ || strcmp(a_, b_))                                      \
            qp_test_failf(ctx, __FILE__, __LINE__, "%s == \"%s\", expected \"%s\"", \
                          #a, a_ ? a_ : "(null)", b_ ? b_ : "(null)");         \
    } while (0)

#define CHECK_CONTAINS(hay, needle)                                            \
    do {                                                                       \
        const char *h_ = (hay), *n_ = (needle);                                \
        if (!h_ || !strstr(h_, n_))                                            \
            qp_test_failf(ctx, __FILE__, __LINE__,                             \
                          "%s == \"%s\" does not contain \"%s\"", #hay,        \
                          h_ ? h_ : "(null)", n_);                             \
    } while (0)

/* |a - b| <= tol; NaN only equals NaN, inf only the same inf. */
#define CHECK_NEAR(a, b, tol)                                                  \
    do {                                                                       \
        double a_ = (double)(a), b_ = (double)(b);                             \
        bool ok_ = (isnan(a_) && isnan(b_)) || a_ == b_ ||                     \
                   fabs(a_ - b_) <= (double)(tol);                             \
        if (!ok_)                                                              \
            qp_test_failf(ctx, __FILE__, __LINE__,                             \
                          "%s == %.17g, expected %.17g (tol %g)", #a, a_, b_,  \
                          (double)(tol));                                      \
    } while (0)

/* Checks a qp_status is QP_OK and shows the error message if not. */
#define CHECK_OK(expr, errp)                                                   \
    do {                                                                       \
        int st_ = (int)(expr);                                                 \
        if (st_ != 0)                                                          \
            qp_test_failf(ctx, __FILE__, __LINE__, "%s failed: %s", #expr,     \
                          (errp)->msg);                                        \
    } while (0)

#define REQUIRE_OK(expr, errp)                                                 \
    do {                                                                       \
        int st_ = (int)(expr);                                                 \
        if (st_ != 0) {                                                        \
            qp_test_failf(ctx, __FILE__, __LINE__, "%s failed: %s", #expr,     \
                          (errp)->msg);                                        \
            return;                                                            \
        }                                                                      \
    } while (0)

/* Checks expr fails with status code and a message containing needle. */
#define CHECK_FAILS(expr, code, errp, needle)                                  \
    do {                                                                       \
        int st_ = (int)(expr);                                                 \
        if (st_ != (int)(code))                                                \
            qp_test_failf(ctx, __FILE__, __LINE__,                             \
                          "%s returned %d, expected %d (%s)", #expr, st_,      \
                          (int)(code), (errp)->msg);                           \
        else if (!strstr((errp)->msg, (needle)))                               \
            qp_test_failf(ctx, __FILE__, __LINE__,                             \
                          "%s: message \"%s\" lacks \"%s\"", #expr,            \
                          (errp)->msg, (needle));                              \
    } while (0)

#endif
