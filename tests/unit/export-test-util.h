/* tests/unit/export-test-util.h: what the export tests share: a small
 * float ONNX model written with formats/onnx-write.h (Conv + BN + Relu,
 * a 1x1 Conv, a residual Add, GlobalAveragePool, Flatten, MatMul + bias,
 * Softmax: every kind of tensor an export writes), calibration inputs,
 * sessions and plans over it, and ONNX Runtime runs through
 * scripts/ort-reference.js (the pinned onnxruntime-node; the test fails,
 * never skips, without node). */
#ifndef QP_TESTS_EXPORT_TEST_UTIL_H
#define QP_TESTS_EXPORT_TEST_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "formats/npy.h"
#include "formats/onnx-write.h"
#include "model/session.h"
#include "quant/recipe.h"
#include "tests/test.h"

/* A deterministic value in [-1, 1). */
static inline float ex_rand(uint32_t *s)
{
    *s = *s * 1664525u + 1013904223u;
    return (float)(*s >> 8) / (float)(1u << 23) - 1.0f;
}

static inline bool ex_init(struct qp_onnx_graph *g, const char *name, int nd,
                           const int64_t *shape, float scale, uint32_t seed,
                           float offset, struct qp_error *err)
{
    struct qp_tensor *t;
    if (qp_tensor_new(name, QP_DTYPE_F32, nd, shape, &t, err))
        return false;
    for (size_t i = 0; i < qp_tensor_numel(t); i++)
        ((float *)t->data)[i] = offset + scale * ex_rand(&seed);
    return !qp_onnx_graph_add_initializer(g, t, err);
}

static inline bool ex_node(struct qp_onnx_graph *g, const char *op, const char *name,
                           const char *ins, const char *out, struct qp_onnx_node **n,
                           struct qp_error *err)
{
    const char *in[8];
    char buf[256];
    size_t k = 0;
    snprintf(buf, sizeof buf, "%s", ins);
    for (char *p = buf, *comma; p && k < 8; p = comma ? comma + 1 : NULL) {
        comma = strchr(p, ',');
        if (comma)
            *comma = '\0';
        in[k++] = p;
    }
    const char *outs[1] = {out};
    return !qp_onnx_graph_add_node(g, op, "", name, in, k, outs, 1, n, err);
}

/* The small model at tmpdir/name (opset `opset`, x [1, 4, 8, 8] -> y
 * [1, 5]); false after a failed check. */
static inline bool ex_model(struct qp_test_ctx *ctx, const char *path, int opset)
{
    struct qp_error err;
    struct qp_onnx_model *m;
    if (qp_onnx_model_new(opset >= 13 ? 7 : 6, opset, "small", &m, &err)) {
        qp_test_failf(ctx, __FILE__, __LINE__, "%s", err.msg);
        return false;
    }
    struct qp_onnx_graph *g = m->graph;
    struct qp_onnx_dim xd[4] = {{-1, "N"}, {4, NULL}, {8, NULL}, {8, NULL}};
    struct qp_onnx_dim yd[2] = {{-1, "N"}, {5, NULL}};
    int64_t w1[4] = {6, 4, 3, 3}, c6[1] = {6}, w2[4] = {6, 6, 1, 1};
    int64_t w3[2] = {6, 5}, c5[1] = {5};
    struct qp_onnx_node *n;
    int64_t pads[4] = {1, 1, 1, 1};
    bool ok = !qp_onnx_graph_add_value(g, QP_ONNX_LIST_INPUT, "x", 1, 4, xd, &err) &&
              ex_init(g, "conv1.w", 4, w1, 0.4f, 1, 0, &err) &&
              ex_init(g, "conv1.b", 1, c6, 0.2f, 2, 0, &err) &&
              ex_init(g, "conv2.w", 4, w2, 0.5f, 3, 0, &err) &&
              ex_init(g, "bn.scale", 1, c6, 0.3f, 4, 1.0f, &err) &&
              ex_init(g, "bn.bias", 1, c6, 0.1f, 5, 0, &err) &&
              ex_init(g, "bn.mean", 1, c6, 0.1f, 6, 0, &err) &&
              ex_init(g, "bn.var", 1, c6, 0.2f, 7, 1.0f, &err) &&
              ex_init(g, "fc.w", 2, w3, 0.6f, 8, 0, &err) &&
              ex_init(g, "fc.b", 1, c5, 0.1f, 9, 0, &err) &&
              ex_node(g, "Conv", "conv1", "x,conv1.w,conv1.b", "c1", &n, &err) &&
              !qp_onnx_node_add_ints(n, "pads", pads, 4, &err) &&
              ex_node(g, "Relu", "relu1", "c1", "r1", NULL, &err) &&
              ex_node(g, "Conv", "conv2", "r1,conv2.w", "c2", NULL, &err) &&
              ex_node(g, "BatchNormalization", "bn", "c2,bn.scale,bn.bias,bn.mean,bn.var",
                      "n2", NULL, &err) &&
              ex_node(g, "Add", "add1", "n2,r1", "a1", NULL, &err) &&
              ex_node(g, "GlobalAveragePool", "gap", "a1", "p", NULL, &err) &&
              ex_node(g, "Flatten", "flat", "p", "f", NULL, &err) &&
              ex_node(g, "MatMul", "mm", "f,fc.w", "m", NULL, &err) &&
              ex_node(g, "Add", "addb", "m,fc.b", "b", NULL, &err) &&
              ex_node(g, "Softmax", "sm", "b", "y", &n, &err) &&
              !qp_onnx_node_add_int(n, "axis", 1, &err) &&
              !qp_onnx_graph_add_value(g, QP_ONNX_LIST_OUTPUT, "y", 1, 2, yd, &err) &&
              !qp_onnx_save(m, path, NULL, NULL, &err);
    qp_onnx_model_free(m);
    if (!ok)
        qp_test_failf(ctx, __FILE__, __LINE__, "small model: %s", err.msg);
    return ok;
}

/* n inputs x [1, 4, 8, 8] into dir/in<k>.npy (dir created); seed s. */
static inline bool ex_inputs(struct qp_test_ctx *ctx, const char *dir, int n,
                             uint32_t s)
{
    struct qp_error err;
    mkdir(dir, 0755);
    for (int k = 0; k < n; k++) {
        int64_t shape[4] = {1, 4, 8, 8};
        struct qp_tensor *x;
        if (qp_tensor_new("x", QP_DTYPE_F32, 4, shape, &x, &err))
            return false;
        for (size_t i = 0; i < qp_tensor_numel(x); i++)
            ((float *)x->data)[i] = 2.0f * ex_rand(&s);
        char path[1100];
        snprintf(path, sizeof path, "%.1000s/in%d.npy", dir, k);
        enum qp_status st = qp_fmt_npy_save(path, x, &err);
        qp_tensor_free(x);
        if (st) {
            qp_test_failf(ctx, __FILE__, __LINE__, "%s", err.msg);
            return false;
        }
    }
    return true;
}

/* A session on model with the calibration folder, and a fake-mode plan of
 * the ort flavor for scheme (or recipe text). */
static inline bool ex_plan(struct qp_test_ctx *ctx, const char *model,
                           const char *calib, const char *scheme,
                           const char *recipe_json, struct qp_session **s,
                           struct qp_recipe **r, struct qp_splan **plan)
{
    struct qp_error err;
    struct qp_scheme sc;
    *r = NULL;
    *plan = NULL;
    if (qp_session_open(model, NULL, s, &err) ||
        (calib && qp_session_add_calib(*s, calib, NULL, &err)) ||
        (scheme && qp_scheme_parse(scheme, &sc, NULL, &err)) ||
        (recipe_json && qp_recipe_parse(recipe_json, "'recipe'", r, &err))) {
        qp_test_failf(ctx, __FILE__, __LINE__, "%s", err.msg);
        return false;
    }
    struct qp_session_cfg cfg = {.mode = QP_MODE_FAKE, .scheme = scheme ? &sc : NULL,
                                 .recipe = *r, .flavor = QP_RQ_ORT,
                                 .flavor_given = true};
    if (qp_session_plan(*s, &cfg, plan, &err)) {
        qp_test_failf(ctx, __FILE__, __LINE__, "plan: %s", err.msg);
        return false;
    }
    return true;
}

/* ONNX Runtime runs model on input, writing the model's outputs and the
 * values named by the .npy files of names_from (may be NULL) to out. */
static inline bool ex_ort(struct qp_test_ctx *ctx, const char *model,
                          const char *input, const char *names_from,
                          const char *out)
{
    char cmd[4096], line[1024] = "";
    FILE *p = popen("sh scripts/ort-setup.sh", "r");
    if (p && !fgets(line, sizeof line, p))
        line[0] = '\0';
    int rc = p ? pclose(p) : -1;
    line[strcspn(line, "\n")] = '\0';
    if (rc || !line[0]) {
        qp_test_failf(ctx, __FILE__, __LINE__, "scripts/ort-setup.sh failed "
                      "(status %d; it needs node and, once, the npm registry)", rc);
        return false;
    }
    snprintf(cmd, sizeof cmd, "QP_ORT_DIR='%s' node scripts/ort-reference.js run "
             "--model '%s' --input '%s' %s%s%s -o '%s' >/dev/null", line, model,
             input, names_from ? "--names-from '" : "--names ''",
             names_from ? names_from : "", names_from ? "'" : "", out);
    if ((rc = system(cmd))) {
        qp_test_failf(ctx, __FILE__, __LINE__, "ONNX Runtime failed (status %d): "
                      "%s", rc, cmd);
        return false;
    }
    return true;
}

#endif
