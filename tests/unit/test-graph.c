/* Unit tests of model/graph.c, model/infer.c and model/fold.c: building,
 * checking and ordering graphs, static shape inference, constant and
 * BatchNormalization folding. */
#include "model/fold.h"
#include "model/infer.h"
#include "tests/unit/test-graph-util.h"

static int node(struct qp_graph *g, const char *op, const char *name,
                int n_in, const char *const *in, int n_out,
                const char *const *out)
{
    int id = -1;
    struct qp_error err;
    if (qp_graph_add_node(g, op, "", 13, name, n_in, in, n_out, out, &id, &err))
        return -1;
    return id;
}

#define IN(...) ((const char *const[]){__VA_ARGS__})
#define NIN(...) (int)(sizeof(IN(__VA_ARGS__)) / sizeof(char *)), IN(__VA_ARGS__)

QP_TEST(graph_orders_nodes_and_links_consumers)
{
    struct qp_graph *g;
    struct qp_error err;
    REQUIRE_OK(qp_graph_new("t", &g, &err), &err);
    REQUIRE_OK(qp_graph_add_input(g, "x", QP_DTYPE_F32, 1, SHAPE(3), &err), &err);
    /* added consumer first: the order must still put the producer first */
    int add = node(g, "Add", "add", NIN("r", "x"), NIN("y"));
    int relu = node(g, "Relu", "relu", NIN("x"), NIN("r"));
    REQUIRE(add >= 0 && relu >= 0);
    REQUIRE_OK(qp_graph_add_output(g, "y", &err), &err);
    REQUIRE_OK(qp_graph_finalize(g, &err), &err);
    CHECK_INT(g->order[0], relu);
    CHECK_INT(g->order[1], add);
    int x = qp_graph_find(g, "x"), r = qp_graph_find(g, "r");
    CHECK_INT(g->values[x].n_consumers, 2);
    CHECK_INT(g->values[x].consumers[0], relu); /* topological order */
    CHECK_INT(g->values[x].consumers[1], add);
    CHECK_INT(g->values[r].producer, relu);
    CHECK_INT(g->values[r].n_consumers, 1);

    const struct qp_tensor *feed[1] = {TF32("x", 1, SHAPE(3), VALS(-1, 2, -3))};
    struct qp_tensor *out[1];
    REQUIRE_OK(qp_exec_run(g, feed, 1, NULL, out, NULL, &err), &err);
    CHECK_TENSOR(out[0], 1, SHAPE(3), VALS(-1, 4, -3), 0);
    qp_tensor_free(out[0]);
    qp_tensor_free((struct qp_tensor *)feed[0]);
    qp_graph_free(g);
}

/* Builds a graph from one node and expects finalize to fail. */
static void expect_bad(struct qp_test_ctx *ctx, const char *op, int n_in,
                       const char *const *in, enum qp_status code,
                       const char *needle, void (*tweak)(struct qp_node *))
{
    struct qp_graph *g;
    struct qp_error err;
    REQUIRE_OK(qp_graph_new("t", &g, &err), &err);
    REQUIRE_OK(qp_graph_add_input(g, "x", QP_DTYPE_F32, 1, SHAPE(3), &err), &err);
    int id = node(g, op, "bad", n_in, in, NIN("y"));
    REQUIRE(id >= 0);
    if (tweak)
        tweak(&g->nodes[id]);
    CHECK_FAILS(qp_graph_finalize(g, &err), code, &err, needle);
    qp_graph_free(g);
}

static void float_group(struct qp_node *n)
{
    struct qp_error err;
    qp_node_set_float(n, "group", 2.0f, &err);
}

QP_TEST(graph_rejects_bad_graphs_naming_the_node)
{
    expect_bad(ctx, "FooBar", NIN("x"), QP_E_UNSUPPORTED,
               "node 'bad' (FooBar): unsupported operator 'FooBar'", NULL);
    expect_bad(ctx, "Relu", NIN("nope"), QP_E_FORMAT,
               "node 'bad' (Relu): input 'nope' is not defined", NULL);
    expect_bad(ctx, "Add", NIN("x"), QP_E_FORMAT,
               "node 'bad' (Add): 1 inputs, expected 2 to 2", NULL);
    expect_bad(ctx, "Conv", NIN("x", "x"), QP_E_FORMAT,
               "node 'bad' (Conv): attribute 'group' is float, expected int",
               float_group);
    expect_bad(ctx, "Conv", NIN("x", ""), QP_E_FORMAT,
               "node 'bad' (Conv): input 1 is required", NULL);
}

QP_TEST(graph_rejects_cycles_and_double_definitions)
{
    struct qp_graph *g;
    struct qp_error err;
    REQUIRE_OK(qp_graph_new("t", &g, &err), &err);
    REQUIRE(node(g, "Relu", "a", NIN("q"), NIN("p")) >= 0);
    REQUIRE(node(g, "Relu", "b", NIN("p"), NIN("q")) >= 0);
    CHECK_FAILS(qp_graph_finalize(g, &err), QP_E_FORMAT, &err, "has a cycle");
    CHECK_FAILS(qp_graph_add_node(g, "Relu", "", 13, "c", NIN("p"), NIN("q"),
                                  NULL, &err),
                QP_E_FORMAT, &err, "output 'q' is already defined");
    struct qp_tensor *k = TF32("p", 1, SHAPE(1), VALS(1));
    CHECK_FAILS(qp_graph_add_const(g, k, &err), QP_E_FORMAT, &err,
                "'p' is defined twice");
    qp_graph_free(g);
}

QP_TEST(graph_infer_resolves_shape_arithmetic)
{
    /* x [2,3,4] -> Shape -> Gather(0) -> Unsqueeze -> Concat([-1]) ->
     * Reshape(x) : [2, 12]; the Shape chain is computed statically */
    struct qp_graph *g;
    struct qp_error err;
    REQUIRE_OK(qp_graph_new("t", &g, &err), &err);
    REQUIRE_OK(qp_graph_add_input(g, "x", QP_DTYPE_F32, 3, SHAPE(-1, 3, 4), &err),
               &err);
    REQUIRE_OK(qp_graph_add_const(g, TI64("zero", 0, NULL, VALS(0)), &err), &err);
    REQUIRE_OK(qp_graph_add_const(g, TI64("ax", 1, SHAPE(1), VALS(0)), &err), &err);
    REQUIRE_OK(qp_graph_add_const(g, TI64("m1", 1, SHAPE(1), VALS(-1)), &err), &err);
    REQUIRE(node(g, "Shape", "s", NIN("x"), NIN("sh")) >= 0);
    REQUIRE(node(g, "Gather", "g", NIN("sh", "zero"), NIN("n")) >= 0);
    REQUIRE(node(g, "Unsqueeze", "u", NIN("n", "ax"), NIN("n1")) >= 0);
    int cat = node(g, "Concat", "c", NIN("n1", "m1"), NIN("tgt"));
    REQUIRE(cat >= 0);
    REQUIRE_OK(qp_node_set_int(&g->nodes[cat], "axis", 0, &err), &err);
    REQUIRE(node(g, "Reshape", "r", NIN("x", "tgt"), NIN("y")) >= 0);
    REQUIRE(node(g, "Relu", "a", NIN("y"), NIN("z")) >= 0);
    REQUIRE_OK(qp_graph_add_output(g, "z", &err), &err);
    REQUIRE_OK(qp_graph_finalize(g, &err), &err);

    struct qp_tdesc in = {QP_DTYPE_F32, 3, {2, 3, 4}};
    struct qp_tdesc *d = calloc((size_t)g->n_values, sizeof *d);
    bool *known = calloc((size_t)g->n_values, 1);
    REQUIRE_OK(qp_graph_infer(g, &in, d, known, &err), &err);
    int z = qp_graph_find(g, "z"), sh = qp_graph_find(g, "sh");
    CHECK(known[z]);
    CHECK_INT(d[z].ndim, 2);
    CHECK_INT(d[z].shape[0], 2);
    CHECK_INT(d[z].shape[1], 12);
    CHECK_INT(d[sh].dtype, QP_DTYPE_I64);
    CHECK_INT(d[sh].shape[0], 3);

    /* a wrong declared shape is refused at run time, naming the input */
    struct qp_tensor *bad = TF32("x", 3, SHAPE(2, 4, 4), NULL);
    const struct qp_tensor *feed[1] = {bad};
    struct qp_tensor *out[1];
    CHECK_FAILS(qp_exec_run(g, feed, 1, NULL, out, NULL, &err), QP_E_SHAPE, &err,
                "graph input 'x' has shape [2,4,4], the model expects [-1,3,4]");
    qp_tensor_free(bad);
    free(d);
    free(known);
    qp_graph_free(g);
}

QP_TEST(graph_infer_leaves_data_dependent_shapes_unknown)
{
    /* Reshape to a shape computed from activations (Relu of a float input
     * cast to int64) cannot be known statically */
    struct qp_graph *g;
    struct qp_error err;
    REQUIRE_OK(qp_graph_new("t", &g, &err), &err);
    REQUIRE_OK(qp_graph_add_input(g, "x", QP_DTYPE_F32, 1, SHAPE(6), &err), &err);
    REQUIRE_OK(qp_graph_add_input(g, "s", QP_DTYPE_F32, 1, SHAPE(2), &err), &err);
    REQUIRE(node(g, "Cast", "c", NIN("s"), NIN("si")) >= 0);
    REQUIRE_OK(qp_node_set_int(&g->nodes[0], "to", 7, &err), &err);
    REQUIRE(node(g, "Reshape", "r", NIN("x", "si"), NIN("y")) >= 0);
    REQUIRE_OK(qp_graph_add_output(g, "y", &err), &err);
    REQUIRE_OK(qp_graph_finalize(g, &err), &err);
    struct qp_tdesc in[2] = {{QP_DTYPE_F32, 1, {6}}, {QP_DTYPE_F32, 1, {2}}};
    struct qp_tdesc d[8];
    bool known[8];
    REQUIRE(g->n_values <= 8);
    REQUIRE_OK(qp_graph_infer(g, in, d, known, &err), &err);
    CHECK(known[qp_graph_find(g, "si")]);
    CHECK(!known[qp_graph_find(g, "y")]);
    /* at run time it resolves */
    struct qp_tensor *x = TF32("x", 1, SHAPE(6), VALS(1, 2, 3, 4, 5, 6));
    struct qp_tensor *s = TF32("s", 1, SHAPE(2), VALS(3, 2));
    const struct qp_tensor *feed[2] = {x, s};
    struct qp_tensor *out[1];
    REQUIRE_OK(qp_exec_run(g, feed, 2, NULL, out, NULL, &err), &err);
    CHECK_TENSOR(out[0], 2, SHAPE(3, 2), VALS(1, 2, 3, 4, 5, 6), 0);
    qp_tensor_free(out[0]);
    qp_tensor_free(x);
    qp_tensor_free(s);
    qp_graph_free(g);
}

QP_TEST(graph_folds_constant_subgraphs)
{
    /* y = x . Transpose(w): the transpose of the constant runs once */
    struct qp_graph *g;
    struct qp_error err;
    REQUIRE_OK(qp_graph_new("t", &g, &err), &err);
    REQUIRE_OK(qp_graph_add_input(g, "x", QP_DTYPE_F32, 2, SHAPE(1, 3), &err), &err);
    REQUIRE_OK(qp_graph_add_const(g, TF32("w", 2, SHAPE(2, 3),
                                          VALS(1, 2, 3, 4, 5, 6)), &err), &err);
    REQUIRE(node(g, "Transpose", "t", NIN("w"), NIN("wt")) >= 0);
    REQUIRE(node(g, "MatMul", "mm", NIN("x", "wt"), NIN("y")) >= 0);
    REQUIRE_OK(qp_graph_add_output(g, "y", &err), &err);
    REQUIRE_OK(qp_graph_finalize(g, &err), &err);
    int folded = -1;
    REQUIRE_OK(qp_graph_fold_constants(g, &folded, &err), &err);
    CHECK_INT(folded, 1);
    CHECK_INT(g->n_nodes, 1);
    CHECK_STR(g->nodes[0].op_type, "MatMul");
    int wt = qp_graph_find(g, "wt");
    REQUIRE(wt >= 0 && g->values[wt].konst);
    CHECK_TENSOR(g->values[wt].konst, 2, SHAPE(3, 2), VALS(1, 4, 2, 5, 3, 6), 0);
    CHECK_INT(qp_graph_find(g, "w"), -1); /* unused now: dropped */
    struct qp_tensor *x = TF32("x", 2, SHAPE(1, 3), VALS(1, 0, -1));
    const struct qp_tensor *feed[1] = {x};
    struct qp_tensor *out[1];
    REQUIRE_OK(qp_exec_run(g, feed, 1, NULL, out, NULL, &err), &err);
    CHECK_TENSOR(out[0], 2, SHAPE(1, 2), VALS(1 - 3, 4 - 6), 0);
    qp_tensor_free(out[0]);
    qp_tensor_free(x);
    qp_graph_free(g);
}

static struct qp_graph *conv_bn_graph(struct qp_test_ctx *ctx, bool with_bias)
{
    struct qp_graph *g;
    struct qp_error err;
    if (qp_graph_new("t", &g, &err))
        return NULL;
    CHECK_OK(qp_graph_add_input(g, "x", QP_DTYPE_F32, 4, SHAPE(1, 1, 1, 2), &err),
             &err);
    CHECK_OK(qp_graph_add_const(g, TF32("w", 4, SHAPE(2, 1, 1, 1), VALS(2, -1)),
                                &err), &err);
    if (with_bias)
        CHECK_OK(qp_graph_add_const(g, TF32("b", 1, SHAPE(2), VALS(1, 0.5)), &err),
                 &err);
    CHECK_OK(qp_graph_add_const(g, TF32("sc", 1, SHAPE(2), VALS(1, 2)), &err), &err);
    CHECK_OK(qp_graph_add_const(g, TF32("be", 1, SHAPE(2), VALS(0, 1)), &err), &err);
    CHECK_OK(qp_graph_add_const(g, TF32("mu", 1, SHAPE(2), VALS(3, -1)), &err), &err);
    CHECK_OK(qp_graph_add_const(g, TF32("va", 1, SHAPE(2), VALS(4, 0.25)), &err),
             &err);
    if (with_bias)
        node(g, "Conv", "conv", NIN("x", "w", "b"), NIN("c"));
    else
        node(g, "Conv", "conv", NIN("x", "w"), NIN("c"));
    int bn = node(g, "BatchNormalization", "bn", NIN("c", "sc", "be", "mu", "va"),
                  NIN("y"));
    CHECK_OK(qp_node_set_float(&g->nodes[bn], "epsilon", 0.0f, &err), &err);
    CHECK_OK(qp_graph_add_output(g, "y", &err), &err);
    CHECK_OK(qp_graph_finalize(g, &err), &err);
    return g;
}

QP_TEST(graph_folds_batchnorm_into_conv)
{
    /* a = scale/sqrt(var) = [0.5, 4]; W' = W*a = [1, -4];
     * B' = (B - mean)*a + beta = [(1-3)*0.5, (0.5+1)*4+1] = [-1, 7];
     * x = [1, 2]: y0 = x - 1 = [0, 1], y1 = -4x + 7 = [3, -1] */
    struct qp_error err;
    for (int with_bias = 0; with_bias < 2; with_bias++) {
        struct qp_graph *g = conv_bn_graph(ctx, with_bias);
        REQUIRE(g);
        struct qp_tensor *x = TF32("x", 4, SHAPE(1, 1, 1, 2), VALS(1, 2));
        const struct qp_tensor *feed[1] = {x};
        struct qp_tensor *before[1], *after[1];
        REQUIRE_OK(qp_exec_run(g, feed, 1, NULL, before, NULL, &err), &err);
        int folded = 0;
        REQUIRE_OK(qp_graph_fold_batchnorm(g, &folded, &err), &err);
        CHECK_INT(folded, 1);
        CHECK_INT(g->n_nodes, 1);
        int w = qp_graph_find(g, "w:bn");
        int b = qp_graph_find(g, with_bias ? "b:bn" : "c:bias:bn");
        REQUIRE(w >= 0 && b >= 0);
        CHECK_TENSOR(g->values[w].konst, 4, SHAPE(2, 1, 1, 1), VALS(1, -4), 0);
        double b0 = with_bias ? -1 : -1.5, b1 = with_bias ? 7 : 5;
        CHECK_TENSOR(g->values[b].konst, 1, SHAPE(2), VALS(b0, b1), 0);
        CHECK_INT(qp_graph_find(g, "c"), -1);
        REQUIRE_OK(qp_exec_run(g, feed, 1, NULL, after, NULL, &err), &err);
        if (with_bias)
            CHECK_TENSOR(after[0], 4, SHAPE(1, 2, 1, 2), VALS(0, 1, 3, -1), 0);
        CHECK_TENSOR(after[0], 4, SHAPE(1, 2, 1, 2),
                     ((const float *)before[0]->data), 1e-6);
        qp_tensor_free(before[0]);
        qp_tensor_free(after[0]);
        qp_tensor_free(x);
        qp_graph_free(g);
    }
}

QP_TEST(graph_keeps_batchnorm_when_conv_output_is_shared)
{
    struct qp_error err;
    struct qp_graph *g = conv_bn_graph(ctx, true);
    REQUIRE(g);
    /* a second reader of the conv output blocks the fold */
    g->finalized = false;
    REQUIRE_OK(qp_graph_add_output(g, "c", &err), &err);
    REQUIRE_OK(qp_graph_finalize(g, &err), &err);
    int folded = -1;
    REQUIRE_OK(qp_graph_fold_batchnorm(g, &folded, &err), &err);
    CHECK_INT(folded, 0);
    CHECK_INT(g->n_nodes, 2);
    qp_graph_free(g);
}

QP_TEST(graph_counts_macs_from_inferred_shapes)
{
    /* Conv x[1,2,5,5] * w[4,2,3,3], pads 1: 4*5*5 outputs of 2*3*3 MACs
     * = 1800; MatMul of its flattening [1,100] by [100,3]: 300 */
    struct qp_graph *g;
    struct qp_error err;
    REQUIRE_OK(qp_graph_new("t", &g, &err), &err);
    REQUIRE_OK(qp_graph_add_input(g, "x", QP_DTYPE_F32, 4, SHAPE(1, 2, 5, 5), &err),
               &err);
    REQUIRE_OK(qp_graph_add_const(g, TF32("w", 4, SHAPE(4, 2, 3, 3), NULL), &err),
               &err);
    REQUIRE_OK(qp_graph_add_const(g, TF32("m", 2, SHAPE(100, 3), NULL), &err), &err);
    int conv = node(g, "Conv", "c", NIN("x", "w"), NIN("y"));
    REQUIRE(conv >= 0);
    REQUIRE_OK(qp_node_set_ints(&g->nodes[conv], "pads", SHAPE(1, 1, 1, 1), 4, &err),
               &err);
    REQUIRE(node(g, "Flatten", "f", NIN("y"), NIN("yf")) >= 0);
    REQUIRE(node(g, "MatMul", "mm", NIN("yf", "m"), NIN("z")) >= 0);
    REQUIRE_OK(qp_graph_add_output(g, "z", &err), &err);
    REQUIRE_OK(qp_graph_finalize(g, &err), &err);
    struct qp_tdesc in = {QP_DTYPE_F32, 4, {1, 2, 5, 5}};
    struct qp_tdesc d[16];
    bool known[16];
    REQUIRE(g->n_values <= 16);
    REQUIRE_OK(qp_graph_infer(g, &in, d, known, &err), &err);
    int unknown = -1;
    CHECK_INT(qp_graph_count_macs(g, d, known, &unknown), 1800 + 300);
    CHECK_INT(unknown, 0);
    qp_graph_free(g);
}
