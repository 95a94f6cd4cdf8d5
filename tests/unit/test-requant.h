/* tests/unit/test-requant.h: helpers shared by the requantization tests
 * (golden case folders under ../shared/golden/public, npy and case.json
 * access). Header-only, static inline. */
#ifndef QP_TESTS_UNIT_TEST_REQUANT_H
#define QP_TESTS_UNIT_TEST_REQUANT_H

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/fileio.h"
#include "formats/json.h"
#include "formats/npy.h"
#include "tests/test.h"

#define GOLDEN_MAX_CASES 256

/* Fills names[] with the sorted case_NNN folders of
 * <shared>/golden/public/<sub>, returns how many (0 with a failure
 * recorded when the folder is missing: golden data must be present). */
static inline int golden_cases(struct qp_test_ctx *ctx, const char *sub,
                               char names[][512], int max)
{
    const char *shared = qp_test_shared_dir();
    if (!shared) {
        qp_test_failf(ctx, __FILE__, __LINE__,
                      "golden data not found (QP_SHARED, ../shared, /work/shared)");
        return 0;
    }
    char dir[256];
    if ((size_t)snprintf(dir, sizeof dir, "%s/golden/public/%s", shared, sub) >= sizeof dir)
        return 0;
    DIR *d = opendir(dir);
    if (!d) {
        qp_test_failf(ctx, __FILE__, __LINE__, "golden folder '%s' missing", dir);
        return 0;
    }
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < max) {
        if (strncmp(e->d_name, "case_", 5))
            continue;
        if ((size_t)snprintf(names[n], 512, "%s/%s", dir, e->d_name) < 512)
            n++;
    }
    closedir(d);
    qsort(names, (size_t)n, 512, (int (*)(const void *, const void *))strcmp);
    if (n == 0)
        qp_test_failf(ctx, __FILE__, __LINE__, "no cases in '%s'", dir);
    return n;
}

/* Loads dir/name.npy (NULL with a failure recorded, unless optional). */
static inline struct qp_tensor *golden_npy(struct qp_test_ctx *ctx,
                                           const char *dir, const char *name,
                                           bool optional)
{
    char path[600];
    if ((size_t)snprintf(path, sizeof path, "%s/%s.npy", dir, name) >= sizeof path)
        return NULL;
    if (optional && access(path, F_OK) != 0)
        return NULL;
    struct qp_error err;
    struct qp_tensor *t = NULL;
    if (qp_fmt_npy_load(path, NULL, false, &t, &err) != QP_OK)
        qp_test_failf(ctx, __FILE__, __LINE__, "%s", err.msg);
    return t;
}

static inline struct qp_json *golden_json(struct qp_test_ctx *ctx,
                                          const char *dir)
{
    char path[600];
    if ((size_t)snprintf(path, sizeof path, "%s/case.json", dir) >= sizeof path)
        return NULL;
    struct qp_error err;
    struct qp_json *j = NULL;
    if (qp_json_load(path, &j, &err) != QP_OK)
        qp_test_failf(ctx, __FILE__, __LINE__, "%s", err.msg);
    return j;
}

/* A number member as int64 (failure recorded when missing). */
static inline int64_t golden_int(struct qp_test_ctx *ctx,
                                 const struct qp_json *j, const char *key)
{
    double v = 0;
    if (!qp_json_num(qp_json_get(j, key), &v))
        qp_test_failf(ctx, __FILE__, __LINE__, "case.json lacks number '%s'", key);
    return (int64_t)v;
}

static inline double golden_num(struct qp_test_ctx *ctx,
                                const struct qp_json *j, const char *key)
{
    double v = 0;
    if (!qp_json_num(qp_json_get(j, key), &v))
        qp_test_failf(ctx, __FILE__, __LINE__, "case.json lacks number '%s'", key);
    return v;
}

static inline const char *golden_str(struct qp_test_ctx *ctx,
                                     const struct qp_json *j, const char *key)
{
    const char *s = "";
    if (!qp_json_str(qp_json_get(j, key), &s))
        qp_test_failf(ctx, __FILE__, __LINE__, "case.json lacks string '%s'", key);
    return s;
}

/* Element i of an integer tensor as int64. */
static inline int64_t tensor_int(const struct qp_tensor *t, size_t i)
{
    switch (t->dtype) {
    case QP_DTYPE_I8: return ((const int8_t *)t->data)[i];
    case QP_DTYPE_U8: return ((const uint8_t *)t->data)[i];
    case QP_DTYPE_I16: return ((const int16_t *)t->data)[i];
    case QP_DTYPE_U16: return ((const uint16_t *)t->data)[i];
    case QP_DTYPE_I32: return ((const int32_t *)t->data)[i];
    case QP_DTYPE_I64: return ((const int64_t *)t->data)[i];
    default: return 0;
    }
}

/* xorshift64*: deterministic random numbers for the tests. */
static inline uint64_t test_rand(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * UINT64_C(2685821657736338717);
}

#endif
