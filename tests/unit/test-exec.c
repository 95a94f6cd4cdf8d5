/* Unit tests of model/exec.c: memory release after the last consumer
 * (peak bytes follow the live set, node by node and fused), capture by
 * glob, outputs, input checks, errors, and the mode hooks. */
#include <fnmatch.h>

#include "tests/unit/test-graph-util.h"

#define IN(...) ((const char *const[]){__VA_ARGS__})
#define NIN(...) (int)(sizeof(IN(__VA_ARGS__)) / sizeof(char *)), IN(__VA_ARGS__)

static void add(struct qp_test_ctx *ctx, struct qp_graph *g, const char *op,
                int n_in, const char *const *in, const char *out)
{
    struct qp_error err;
    const char *o[1] = {out};
    CHECK_OK(qp_graph_add_node(g, op, "", 13, out, n_in, in, 1, o, NULL, &err),
             &err);
}

/* x -> a -> b -> c -> y: Relu, Neg, Abs, Neg over [1000] f32 (4000 bytes
 * each), so y = -relu(x). */
static struct qp_graph *chain(struct qp_test_ctx *ctx)
{
    struct qp_graph *g;
    struct qp_error err;
    if (qp_graph_new("chain", &g, &err))
        return NULL;
    CHECK_OK(qp_graph_add_input(g, "x", QP_DTYPE_F32, 1, SHAPE(1000), &err), &err);
    add(ctx, g, "Relu", NIN("x"), "a");
    add(ctx, g, "Neg", NIN("a"), "b");
    add(ctx, g, "Abs", NIN("b"), "c");
    add(ctx, g, "Neg", NIN("c"), "y");
    CHECK_OK(qp_graph_add_output(g, "y", &err), &err);
    CHECK_OK(qp_graph_finalize(g, &err), &err);
    return g;
}

QP_TEST(exec_peak_memory_follows_the_live_set)
{
    struct qp_error err;
    struct qp_graph *g = chain(ctx);
    REQUIRE(g);
    double v[1000];
    for (int i = 0; i < 1000; i++)
        v[i] = i % 3 - 1;
    struct qp_tensor *x = TF32("x", 1, SHAPE(1000), v);
    const struct qp_tensor *feed[1] = {x};
    struct qp_tensor *out[1];
    struct qp_exec_stats st;
    const struct qp_exec_tune alone = {.no_fusion = true};
    REQUIRE_OK(qp_exec_run_tuned(g, feed, 1, NULL, &alone, out, &st, &err),
               &err);
    /* node by node, at most two activations alive at once (an input and
     * its output); the graph input is borrowed and not counted */
    CHECK_INT(st.peak_bytes, 2 * 4000);
    CHECK_INT(st.nodes_run, 4);
    for (int i = 0; i < 1000; i++)
        CHECK_NEAR(((float *)out[0]->data)[i], v[i] > 0 ? -v[i] : 0, 0);
    qp_tensor_free(out[0]);
    /* fused (the default), a, b and c never exist: only y is allocated */
    REQUIRE_OK(qp_exec_run(g, feed, 1, NULL, out, &st, &err), &err);
    CHECK_INT(st.peak_bytes, 4000);
    CHECK_INT(st.nodes_run, 4);
    for (int i = 0; i < 1000; i++)
        CHECK_NEAR(((float *)out[0]->data)[i], v[i] > 0 ? -v[i] : 0, 0);
    qp_tensor_free(out[0]);
    qp_tensor_free(x);
    qp_graph_free(g);
}

QP_TEST(exec_branches_free_after_the_last_reader)
{
    /* x -> a; a -> b; a -> c; y = b + c: while y is computed, b, c and y
     * are alive and a is already gone: 3 tensors */
    struct qp_graph *g;
    struct qp_error err;
    REQUIRE_OK(qp_graph_new("branch", &g, &err), &err);
    REQUIRE_OK(qp_graph_add_input(g, "x", QP_DTYPE_F32, 1, SHAPE(100), &err), &err);
    add(ctx, g, "Relu", NIN("x"), "a");
    add(ctx, g, "Neg", NIN("a"), "b");
    add(ctx, g, "Abs", NIN("a"), "c");
    add(ctx, g, "Add", NIN("b", "c"), "y");
    REQUIRE_OK(qp_graph_add_output(g, "y", &err), &err);
    REQUIRE_OK(qp_graph_finalize(g, &err), &err);
    struct qp_tensor *x = TF32("x", 1, SHAPE(100), NULL);
    for (int i = 0; i < 100; i++)
        ((float *)x->data)[i] = (float)(i - 50);
    const struct qp_tensor *feed[1] = {x};
    struct qp_tensor *out[1];
    struct qp_exec_stats st;
    const struct qp_exec_tune alone = {.no_fusion = true};
    REQUIRE_OK(qp_exec_run_tuned(g, feed, 1, NULL, &alone, out, &st, &err),
               &err);
    CHECK_INT(st.peak_bytes, 3 * 400);
    for (int i = 0; i < 100; i++)
        CHECK_NEAR(((float *)out[0]->data)[i], 0, 0); /* -r + |r| */
    qp_tensor_free(out[0]);
    /* fused: one pass, only y is allocated */
    REQUIRE_OK(qp_exec_run(g, feed, 1, NULL, out, &st, &err), &err);
    CHECK_INT(st.peak_bytes, 400);
    for (int i = 0; i < 100; i++)
        CHECK_NEAR(((float *)out[0]->data)[i], 0, 0);
    qp_tensor_free(out[0]);
    qp_tensor_free(x);
    qp_graph_free(g);
}

struct captured {
    char names[16][16];
    float first[16];
    int n;
};

static enum qp_status on_capture(void *ctx, const struct qp_graph *g, int v,
                                 const struct qp_tensor *t, struct qp_error *err)
{
    (void)err;
    struct captured *c = ctx;
    if (c->n < 16) {
        snprintf(c->names[c->n], sizeof c->names[c->n], "%s", g->values[v].name);
        c->first[c->n] = ((const float *)t->data)[0];
        c->n++;
    }
    return QP_OK;
}

QP_TEST(exec_captures_values_matching_the_glob)
{
    struct qp_error err;
    struct qp_graph *g = chain(ctx);
    REQUIRE(g);
    struct qp_tensor *x = TF32("x", 1, SHAPE(1000), NULL);
    ((float *)x->data)[0] = 5.0f;
    const struct qp_tensor *feed[1] = {x};
    struct qp_tensor *out[1];
    struct captured cap = {0};
    struct qp_exec_opts o = {.capture = "[abx]", .on_capture = on_capture,
        .capture_ctx = &cap};
    REQUIRE_OK(qp_exec_run(g, feed, 1, &o, out, NULL, &err), &err);
    CHECK_INT(cap.n, 3); /* the input, a and b in run order; not c, y */
    CHECK_STR(cap.names[0], "x");
    CHECK_STR(cap.names[1], "a");
    CHECK_STR(cap.names[2], "b");
    CHECK_NEAR(cap.first[0], 5, 0);
    CHECK_NEAR(cap.first[1], 5, 0);
    CHECK_NEAR(cap.first[2], -5, 0);
    qp_tensor_free(out[0]);
    cap.n = 0;
    o.capture = "*";
    REQUIRE_OK(qp_exec_run(g, feed, 1, &o, out, NULL, &err), &err);
    CHECK_INT(cap.n, 5);
    CHECK_STR(cap.names[4], "y");
    qp_tensor_free(out[0]);
    qp_tensor_free(x);
    qp_graph_free(g);
}

QP_TEST(exec_keeps_outputs_that_are_also_read)
{
    /* y1 is a graph output and the input of y2; an output listed twice and
     * a constant output are copies */
    struct qp_graph *g;
    struct qp_error err;
    REQUIRE_OK(qp_graph_new("t", &g, &err), &err);
    REQUIRE_OK(qp_graph_add_input(g, "x", QP_DTYPE_F32, 1, SHAPE(2), &err), &err);
    REQUIRE_OK(qp_graph_add_const(g, TF32("k", 1, SHAPE(1), VALS(7)), &err), &err);
    add(ctx, g, "Relu", NIN("x"), "y1");
    add(ctx, g, "Neg", NIN("y1"), "y2");
    REQUIRE_OK(qp_graph_add_output(g, "y1", &err), &err);
    REQUIRE_OK(qp_graph_add_output(g, "y2", &err), &err);
    REQUIRE_OK(qp_graph_add_output(g, "k", &err), &err);
    REQUIRE_OK(qp_graph_add_output(g, "x", &err), &err);
    REQUIRE_OK(qp_graph_finalize(g, &err), &err);
    struct qp_tensor *x = TF32("x", 1, SHAPE(2), VALS(-1, 3));
    const struct qp_tensor *feed[1] = {x};
    struct qp_tensor *out[4];
    REQUIRE_OK(qp_exec_run(g, feed, 1, NULL, out, NULL, &err), &err);
    CHECK_TENSOR(out[0], 1, SHAPE(2), VALS(0, 3), 0);
    CHECK_TENSOR(out[1], 1, SHAPE(2), VALS(0, -3), 0);
    CHECK_TENSOR(out[2], 1, SHAPE(1), VALS(7), 0);
    CHECK_TENSOR(out[3], 1, SHAPE(2), VALS(-1, 3), 0);
    CHECK(out[3] != x);
    for (int k = 0; k < 4; k++)
        qp_tensor_free(out[k]);
    qp_tensor_free(x);
    qp_graph_free(g);
}

QP_TEST(exec_reports_input_and_node_errors)
{
    struct qp_error err;
    struct qp_graph *g = chain(ctx);
    REQUIRE(g);
    struct qp_tensor *xi = TI64("x", 1, SHAPE(1000), NULL);
    const struct qp_tensor *feed[1] = {xi};
    struct qp_tensor *out[1] = {NULL};
    CHECK_FAILS(qp_exec_run(g, feed, 1, NULL, out, NULL, &err), QP_E_SHAPE, &err,
                "graph input 'x' is i64, the model expects f32");
    CHECK(out[0] == NULL);
    CHECK_FAILS(qp_exec_run(g, feed, 0, NULL, out, NULL, &err), QP_E_INVAL, &err,
                "has 1 inputs, 0 given");
    qp_tensor_free(xi);
    qp_graph_free(g);

    /* a failure mid-graph frees every intermediate (ASan checks) and
     * names the node */
    REQUIRE_OK(qp_graph_new("t", &g, &err), &err);
    REQUIRE_OK(qp_graph_add_input(g, "x", QP_DTYPE_F32, 1, SHAPE(6), &err), &err);
    REQUIRE_OK(qp_graph_add_const(g, TI64("s", 1, SHAPE(2), VALS(4, 2)), &err), &err);
    add(ctx, g, "Relu", NIN("x"), "a");
    add(ctx, g, "Reshape", NIN("a", "s"), "r");
    add(ctx, g, "Neg", NIN("a"), "y");
    REQUIRE_OK(qp_graph_add_output(g, "y", &err), &err);
    REQUIRE_OK(qp_graph_add_output(g, "r", &err), &err);
    REQUIRE_OK(qp_graph_finalize(g, &err), &err);
    struct qp_tensor *x = TF32("x", 1, SHAPE(6), NULL);
    const struct qp_tensor *feed2[1] = {x};
    struct qp_tensor *out2[2];
    CHECK_FAILS(qp_exec_run(g, feed2, 1, NULL, out2, NULL, &err), QP_E_SHAPE,
                &err, "node 'r' (Reshape): cannot reshape [6] to [4,2]");
    CHECK(out2[0] == NULL && out2[1] == NULL);
    qp_tensor_free(x);
    qp_graph_free(g);
}

/* Hooks: doubles every output of Relu nodes; runs Neg nodes itself as
 * "subtract 1" to show a hook replacing an operator. */
static enum qp_status hook_after(void *ctx, const struct qp_op_ctx *c,
                                 struct qp_tensor **out, struct qp_error *err)
{
    (void)err;
    int *calls = ctx;
    (*calls)++;
    if (!strcmp(c->n->op_type, "Relu"))
        for (size_t i = 0; i < qp_tensor_numel(out[0]); i++)
            ((float *)out[0]->data)[i] *= 2;
    return QP_OK;
}

static enum qp_status hook_run(void *ctx, const struct qp_op_ctx *c,
                               struct qp_tensor **out, bool *done,
                               struct qp_error *err)
{
    (void)ctx;
    if (strcmp(c->n->op_type, "Neg"))
        return QP_OK;
    enum qp_status st = qp_tensor_clone(c->in[0], &out[0], err);
    if (st)
        return st;
    for (size_t i = 0; i < qp_tensor_numel(out[0]); i++)
        ((float *)out[0]->data)[i] -= 1;
    *done = true;
    return QP_OK;
}

QP_TEST(exec_hooks_replace_and_rewrite_nodes)
{
    struct qp_error err;
    struct qp_graph *g = chain(ctx);
    REQUIRE(g);
    struct qp_tensor *x = TF32("x", 1, SHAPE(1000), NULL);
    ((float *)x->data)[0] = 3.0f;
    ((float *)x->data)[1] = -3.0f;
    const struct qp_tensor *feed[1] = {x};
    struct qp_tensor *out[1];
    int calls = 0;
    struct qp_exec_hooks h = {hook_run, hook_after, NULL, NULL, &calls, NULL};
    struct qp_exec_opts o = {.hooks = &h};
    REQUIRE_OK(qp_exec_run(g, feed, 1, &o, out, NULL, &err), &err);
    /* x=3: a = 2*relu(3) = 6, b = 6-1 = 5, c = |5| = 5, y = 4
     * x=-3: a = 0, b = -1, c = 1, y = 0 */
    CHECK_NEAR(((float *)out[0]->data)[0], 4, 0);
    CHECK_NEAR(((float *)out[0]->data)[1], 0, 0);
    CHECK_INT(calls, 4);
    qp_tensor_free(out[0]);
    qp_tensor_free(x);
    qp_graph_free(g);
}
