/* tests/unit/onnx-testdata.h: reading Debian's libonnx-testdata node tests
 * (a build dependency, so tests fail rather than skip without it). */
#ifndef QP_TESTS_ONNX_TESTDATA_H
#define QP_TESTS_ONNX_TESTDATA_H

#include <dirent.h>
#include <stdio.h>
#include <string.h>

#include "formats/onnx.h"
#include "formats/tensorproto.h"
#include "tests/test.h"

#define NODE_DIR "/usr/share/libonnx-testdata/data/node"

/* The next node test of d (opendir(NODE_DIR)): its name, with the path of
 * its model.onnx in path; NULL at the end. */
static inline const char *node_test_next(DIR *d, char *path, size_t size)
{
    struct dirent *de;
    while ((de = readdir(d)))
        if (!strncmp(de->d_name, "test_", 5)) {
            snprintf(path, size, NODE_DIR "/%s/model.onnx", de->d_name);
            return de->d_name;
        }
    return NULL;
}

/* Input/output `file` ("input_0.pb") of node test `test`, or NULL after
 * recording a failure. */
static inline struct qp_tensor *node_pb(struct qp_test_ctx *ctx,
                                        const char *test, const char *file)
{
    char path[512];
    snprintf(path, sizeof path, NODE_DIR "/%s/test_data_set_0/%s", test, file);
    struct qp_error err;
    struct qp_tensor *t = NULL;
    if (qp_fmt_pb_load(path, &t, &err))
        qp_test_failf(ctx, __FILE__, __LINE__, "%s", err.msg);
    return t;
}

/* The model of node test `test`, or NULL after recording a failure. */
static inline struct qp_onnx_model *node_model(struct qp_test_ctx *ctx,
                                               const char *test)
{
    char path[512];
    snprintf(path, sizeof path, NODE_DIR "/%s/model.onnx", test);
    struct qp_error err;
    struct qp_onnx_model *m = NULL;
    if (qp_onnx_load(path, &m, &err))
        qp_test_failf(ctx, __FILE__, __LINE__, "%s", err.msg);
    return m;
}

#endif
