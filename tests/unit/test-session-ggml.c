/* tests/unit/test-session-ggml.c: ggml schemes through the session
 * (model/session.h): fake runs use ggml's values along the MatMul weight's
 * input axis, and neither the weight cache nor the memo confuses q4_1 with
 * w4g32z (same nominal bits, symmetry and groups). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/session.h"
#include "quant/ggml-quant.h"
#include "tests/test.h"
#include "tests/unit/test-graph-util.h"

#define IN 64
#define OUT 8

/* y = x[2, IN] @ W[IN, OUT] (ONNX MatMul: W is [in, out]). */
static struct qp_session *matmul_session(struct qp_test_ctx *ctx)
{
    struct qp_graph *g;
    struct qp_error err;
    if (qp_graph_new("mm", &g, &err))
        return NULL;
    struct qp_tensor *w = TF32("W", 2, SHAPE(IN, OUT), NULL);
    for (int i = 0; w && i < IN * OUT; i++)
        ((float *)w->data)[i] = (float)sin(0.61 * i) * (0.2f + (float)(i % 9) / 9);
    const char *mi[2] = {"x", "W"}, *mo[1] = {"y"};
    struct qp_session *s = NULL;
    if (!w || qp_graph_add_input(g, "x", QP_DTYPE_F32, 2, SHAPE(2, IN), &err) ||
        qp_graph_add_const(g, w, &err) ||
        qp_graph_add_node(g, "MatMul", "", 13, "mm", 2, mi, 1, mo, NULL, &err) ||
        qp_graph_add_output(g, "y", &err) || qp_graph_finalize(g, &err) ||
        qp_session_new(g, "mm", &s, &err)) {
        qp_test_failf(ctx, __FILE__, __LINE__, "%s", err.msg);
        return NULL;
    }
    return s;
}

static struct qp_tensor *run(struct qp_test_ctx *ctx, struct qp_session *s,
                             const char *scheme, struct qp_tensor *x,
                             struct qp_memo *m, bool record, size_t *nodes_run)
{
    struct qp_scheme sc;
    struct qp_error err;
    struct qp_splan *p = NULL;
    struct qp_tensor *y = NULL;
    struct qp_session_run_stats rs = {0};
    struct qp_session_cfg cfg = {.mode = QP_MODE_FAKE, .scheme = &sc,
                                 .flavor = QP_RQ_TFLITE_DOUBLE};
    struct qp_session_run_opts o = {.memo = m, .record = record,
                                    .no_fusion = record};
    const struct qp_tensor *feed[1] = {x};
    if (qp_scheme_parse(scheme, &sc, NULL, &err) ||
        qp_session_plan(s, &cfg, &p, &err) ||
        qp_session_run(s, p, feed, &o, &y, &rs, &err))
        qp_test_failf(ctx, __FILE__, __LINE__, "%s: %s", scheme, err.msg);
    qp_splan_free(p);
    if (nodes_run)
        *nodes_run = rs.nodes_run;
    return y;
}

QP_TEST(session_ggml_schemes_fake_runs)
{
    struct qp_session *s = matmul_session(ctx);
    REQUIRE(s);
    struct qp_tensor *x = TF32("x", 2, SHAPE(2, IN), NULL);
    REQUIRE(x);
    for (int i = 0; i < 2 * IN; i++)
        ((float *)x->data)[i] = (float)cos(0.3 * i);
    struct qp_memo *m;
    struct qp_error err;
    REQUIRE_OK(qp_memo_new(s, &m, &err), &err);
    size_t ran;
    struct qp_tensor *a = run(ctx, s, "q4_1", x, m, true, &ran);
    REQUIRE(a);
    CHECK_INT(ran, 1);
    /* the same plan again: from the memo */
    struct qp_tensor *a2 = run(ctx, s, "q4_1", x, m, false, &ran);
    REQUIRE(a2);
    CHECK_INT(ran, 0);
    CHECK(!memcmp(a->data, a2->data, a->nbytes));
    /* w4g32z has q4_1's nominal fields: computed anew, other values */
    struct qp_tensor *b = run(ctx, s, "w4g32z", x, m, false, &ran);
    REQUIRE(b);
    CHECK_INT(ran, 1);
    CHECK(memcmp(a->data, b->data, a->nbytes) != 0);
    CHECK_INT(qp_session_stats(s).weights_made, 2);
    /* q4_1's output is x @ (W quantized along its input axis, axis 0) */
    const struct qp_graph *g = qp_session_graph(s);
    const struct qp_tensor *w = g->values[qp_graph_find(g, "W")].konst;
    struct qp_tensor *wf;
    REQUIRE_OK(qp_ggml_fake_quantize(w, QP_GGML_Q4_1, QP_WLAYOUT_KERAS, &wf,
                                     &err), &err);
    for (int r = 0; r < 2; r++)
        for (int c = 0; c < OUT; c++) {
            double acc = 0;
            for (int k = 0; k < IN; k++)
                acc += (double)((float *)x->data)[r * IN + k] *
                       ((float *)wf->data)[k * OUT + c];
            CHECK_NEAR(((float *)a->data)[r * OUT + c], acc, 1e-4);
        }
    qp_tensor_free(wf);
    qp_tensor_free(a);
    qp_tensor_free(a2);
    qp_tensor_free(b);
    qp_tensor_free(x);
    qp_memo_free(m);
    qp_session_free(s);
}
