/* Fused elementwise passes on the real PP-OCRv4 detector, recognizer and
 * classifier: fused (the default) and node by node, the outputs are the
 * same bits, and so are the values captured by a glob in both runs (the
 * activations' outputs, each the end of a fused pass); most of the
 * models' elementwise nodes must actually have been fused. */
#include <stdlib.h>

#include "model/exec.h"
#include "model/onnx-import.h"
#include "tests/test.h"
#include "tests/unit/ppocr-models.h"

struct caps {
    char names[512][96];
    struct qp_tensor *t[512];
    int n;
};

static enum qp_status keep(void *ctx, const struct qp_graph *g, int v,
                           const struct qp_tensor *t, struct qp_error *err)
{
    (void)g;
    (void)v;
    struct caps *c = ctx;
    if (c->n == 512)
        return QP_OK;
    snprintf(c->names[c->n], sizeof c->names[c->n], "%s", t->name);
    return qp_tensor_clone(t, &c->t[c->n++], err);
}

static bool same_bits(const struct qp_tensor *a, const struct qp_tensor *b)
{
    return a && b && a->nbytes == b->nbytes && a->ndim == b->ndim &&
           !memcmp(a->data, b->data, a->nbytes);
}

/* Runs path on input x both ways; returns how many nodes ran fused into
 * a pass started by another node, or -1 on failure. */
static int compare(struct qp_test_ctx *ctx, const char *path,
                   const int64_t *shape, const char *glob, int *n_caps)
{
    struct qp_error err;
    struct qp_graph *g;
    struct qp_tensor *x = NULL, *out[2][4] = {{0}};
    static struct caps caps[2];
    int fused = -1;
    if (qp_model_load_onnx(path, NULL, &g, &err)) {
        qp_test_failf(ctx, __FILE__, __LINE__, "%s", err.msg);
        return -1;
    }
    int *pass = calloc((size_t)g->n_nodes, sizeof *pass);
    if (!pass || g->n_outputs > 4 ||
        qp_tensor_new(g->values[g->inputs[0]].name, QP_DTYPE_F32, 4, shape, &x,
                      &err))
        goto out;
    float *xp = x->data;
    for (size_t i = 0; i < qp_tensor_numel(x); i++)
        xp[i] = (float)((i * 2654435761u) % 2001) / 1000.0f - 1.0f;
    const struct qp_tensor *feed[1] = {x};
    for (int r = 0; r < 2; r++) {
        struct qp_exec_tune t = {r == 0, NULL, pass};
        struct qp_exec_opts o = {.capture = glob, .on_capture = keep,
            .capture_ctx = &caps[r]};
        caps[r].n = 0;
        if (qp_exec_run_tuned(g, feed, 1, &o, &t, out[r], NULL, &err)) {
            qp_test_failf(ctx, __FILE__, __LINE__, "%s: %s", path, err.msg);
            goto out;
        }
    }
    for (int k = 0; k < g->n_outputs; k++)
        CHECK(same_bits(out[0][k], out[1][k]));
    CHECK_INT(caps[1].n, caps[0].n);
    for (int i = 0; i < caps[0].n && i < caps[1].n; i++) {
        CHECK_STR(caps[1].names[i], caps[0].names[i]);
        if (!same_bits(caps[0].t[i], caps[1].t[i]))
            qp_test_failf(ctx, __FILE__, __LINE__, "%s: captured '%s' differs",
                          path, caps[0].names[i]);
    }
    *n_caps = caps[0].n;
    fused = 0;
    for (int i = 0; i < g->n_nodes; i++)
        fused += pass[i] != i;
out:
    for (int r = 0; r < 2; r++) {
        for (int k = 0; k < 4; k++)
            qp_tensor_free(out[r][k]);
        for (int i = 0; i < caps[r].n; i++)
            qp_tensor_free(caps[r].t[i]);
        caps[r].n = 0;
    }
    free(pass);
    qp_tensor_free(x);
    qp_graph_free(g);
    return fused;
}

QP_TEST(fuse_ppocr_models_bit_identical)
{
    char paths[PPOCR_COUNT][512];
    REQUIRE(ppocr_paths(ctx, paths));
    static const int64_t shapes[PPOCR_COUNT][4] = {
        {1, 3, 160, 224}, {1, 3, 48, 160}, {2, 3, 48, 192}};
    /* PaddlePaddle names the activations' outputs hardswish_N.tmp_0,
     * swish_N.tmp_0, relu_N.tmp_0 ... */
    static const char *const globs[PPOCR_COUNT] = {"hardswish_*", "*swish_*",
                                                   "relu_*"};
    /* elementwise nodes the detector, recognizer and classifier have: at
     * least these many must run inside another node's pass */
    static const int min_fused[PPOCR_COUNT] = {140, 190, 45};
    for (int k = 0; k < PPOCR_COUNT; k++) {
        int n_caps = 0;
        int fused = compare(ctx, paths[k], shapes[k], globs[k], &n_caps);
        if (fused < min_fused[k])
            qp_test_failf(ctx, __FILE__, __LINE__, "%s: %d nodes fused, "
                          "expected at least %d", paths[k], fused, min_fused[k]);
        if (n_caps < 5)
            qp_test_failf(ctx, __FILE__, __LINE__, "%s: only %d values "
                          "captured by '%s'", paths[k], n_caps, globs[k]);
    }
}
