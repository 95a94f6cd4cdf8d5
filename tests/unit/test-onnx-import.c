/* Unit tests of model/onnx-import.c on models built byte by byte
 * (tests/unit/pbtest.h): If nodes with constant-foldable conditions are
 * inlined, dynamic ones refused, unsupported operators and opsets named,
 * initializers shadowing inputs, BatchNormalization folding on import. */
#include "model/onnx-import.h"
#include "tests/unit/test-exec-onnx.h"
#include "tests/unit/test-graph-util.h"

enum { M_IR = 1, M_GRAPH = 7, M_OPSET = 8 };
enum { G_NODE = 1, G_NAME = 2, G_INIT = 5, G_INPUT = 11, G_OUTPUT = 12 };
enum { N_INPUT = 1, N_OUTPUT = 2, N_NAME = 3, N_OP = 4, N_ATTR = 5 };
enum { A_NAME = 1, A_F = 2, A_I = 3, A_T = 5, A_G = 6, A_TYPE = 20 };

static void tensor_f32(struct pbe *e, unsigned field, const char *name,
                       const int64_t *dims, int nd, const float *v, size_t n)
{
    struct pbe t = {0};
    pbe_tensor_head(&t, dims, nd, 1, name);
    pbe_bytes(&t, 9, v, n * sizeof *v);
    pbe_msg(e, field, &t);
}

/* A tensor ValueInfoProto with fixed dims. */
static void value_f32(struct pbe *e, unsigned field, const char *name,
                      const int64_t *dims, int nd, int elem)
{
    pb_value(e, field, name, elem, dims, nd);
}

static void node(struct pbe *g, const char *op, const char *name, int nin,
                 const char *const *in, const char *out, struct pbe *attrs)
{
    struct pbe n = {0};
    for (int i = 0; i < nin; i++)
        pbe_str(&n, N_INPUT, in[i]);
    pbe_str(&n, N_OUTPUT, out);
    if (name)
        pbe_str(&n, N_NAME, name);
    pbe_str(&n, N_OP, op);
    if (attrs && attrs->n)
        pbe_raw(&n, attrs->p, attrs->n);
    free(attrs ? attrs->p : NULL);
    pbe_msg(g, G_NODE, &n);
}

/* A Constant node making name = v[n]. */
static void constant(struct pbe *g, const char *name, const float *v, int64_t n)
{
    struct pbe a = {0}, at = {0};
    pbe_str(&at, A_NAME, "value");
    tensor_f32(&at, A_T, NULL, &n, 1, v, (size_t)n);
    pbe_int(&at, A_TYPE, 4);
    pbe_msg(&a, N_ATTR, &at);
    node(g, "Constant", NULL, 0, NULL, name, &a);
}

static void graph_attr(struct pbe *attrs, const char *name, struct pbe *body)
{
    struct pbe at = {0};
    pbe_str(&at, A_NAME, name);
    pbe_msg(&at, A_G, body);
    pbe_int(&at, A_TYPE, 5);
    pbe_msg(attrs, N_ATTR, &at);
}

static struct pbe model(int opset, struct pbe *g)
{
    struct pbe m = {0}, o = {0};
    pbe_int(&m, M_IR, 8);
    pbe_str(&o, 1, "");
    pbe_int(&o, 2, opset);
    pbe_msg(&m, M_OPSET, &o);
    pbe_msg(&m, M_GRAPH, g);
    return m;
}

static enum qp_status import(struct pbe *m, const struct qp_import_opts *o,
                             struct qp_graph **g, struct qp_error *err)
{
    struct qp_onnx_model *om;
    enum qp_status st = qp_onnx_parse("m.onnx", m->p, m->n, NULL, NULL, &om, err);
    free(m->p);
    return st ? st : qp_model_from_onnx(om, o, g, err);
}

#define IN(...) ((const char *const[]){__VA_ARGS__})

/* y = If(cond, then: x + [10,20], else: x - x) with cond = Greater(c, k)
 * from a Constant and an initializer (or, dynamic, from input "flag"). */
static struct pbe if_model(bool dynamic)
{
    struct pbe g = {0}, then_g = {0}, else_g = {0}, attrs = {0};
    const float three = 3, one = 1, tv[2] = {10, 20};
    pbe_str(&g, G_NAME, "main");
    value_f32(&g, G_INPUT, "x", SHAPE(2), 1, 1);
    if (dynamic)
        value_f32(&g, G_INPUT, "flag", SHAPE(1), 1, 9);
    tensor_f32(&g, G_INIT, "k", SHAPE(1), 1, &one, 1);
    constant(&g, "c", &three, 1);
    node(&g, "Greater", "gt", 2, IN("c", "k"), "cond", NULL);
    pbe_str(&then_g, G_NAME, "then");
    constant(&then_g, "tc", tv, 2);
    node(&then_g, "Add", "then_add", 2, IN("x", "tc"), "tb", NULL);
    value_f32(&then_g, G_OUTPUT, "tb", SHAPE(2), 1, 1);
    pbe_str(&else_g, G_NAME, "else");
    node(&else_g, "Sub", "else_sub", 2, IN("x", "x"), "eb", NULL);
    value_f32(&else_g, G_OUTPUT, "eb", SHAPE(2), 1, 1);
    graph_attr(&attrs, "then_branch", &then_g);
    graph_attr(&attrs, "else_branch", &else_g);
    node(&g, "If", "branch", 1, IN(dynamic ? "flag" : "cond"), "y", &attrs);
    value_f32(&g, G_OUTPUT, "y", SHAPE(2), 1, 1);
    return model(13, &g);
}

QP_TEST(onnx_import_inlines_constant_if)
{
    struct qp_error err;
    struct qp_graph *g;
    struct pbe m = if_model(false);
    REQUIRE_OK(import(&m, NULL, &g, &err), &err);
    /* the If and the condition are gone: the then branch's Add and the
     * Identity naming its result 'y' remain */
    CHECK_INT(g->n_nodes, 2);
    for (int i = 0; i < g->n_nodes; i++)
        CHECK(strcmp(g->nodes[i].op_type, "If"));
    CHECK_INT(g->n_inputs, 1);
    struct qp_tensor *x = TF32("x", 1, SHAPE(2), VALS(1, 2));
    const struct qp_tensor *feed[1] = {x};
    struct qp_tensor *out[1];
    REQUIRE_OK(qp_exec_run(g, feed, 1, NULL, out, NULL, &err), &err);
    CHECK_STR(out[0]->name, "y");
    CHECK_TENSOR(out[0], 1, SHAPE(2), VALS(11, 22), 0);
    qp_tensor_free(out[0]);
    qp_tensor_free(x);
    qp_graph_free(g);
}

QP_TEST(onnx_import_refuses_dynamic_if_and_unknown_operators)
{
    struct qp_error err;
    struct qp_graph *g = NULL;
    struct pbe m = if_model(true);
    CHECK_FAILS(import(&m, NULL, &g, &err), QP_E_UNSUPPORTED, &err,
                "'m.onnx': node 'branch' (If): the condition is not a constant");
    CHECK(g == NULL);

    struct pbe gr = {0};
    value_f32(&gr, G_INPUT, "x", SHAPE(2), 1, 1);
    node(&gr, "FancyOp", "weird", 1, IN("x"), "y", NULL);
    value_f32(&gr, G_OUTPUT, "y", SHAPE(2), 1, 1);
    m = model(13, &gr);
    CHECK_FAILS(import(&m, NULL, &g, &err), QP_E_UNSUPPORTED, &err,
                "'m.onnx': node 'weird' (FancyOp): unsupported operator "
                "'FancyOp'");

    struct pbe g2 = {0};
    value_f32(&g2, G_INPUT, "x", SHAPE(2), 1, 1);
    node(&g2, "Relu", "r", 1, IN("x"), "y", NULL);
    value_f32(&g2, G_OUTPUT, "y", SHAPE(2), 1, 1);
    m = model(QP_ONNX_MAX_OPSET + 1, &g2);
    CHECK_FAILS(import(&m, NULL, &g, &err), QP_E_UNSUPPORTED, &err,
                "qprobe runs opsets 1 to");
}

QP_TEST(onnx_import_initializer_inputs_and_batchnorm)
{
    /* x -> Conv(w, b) -> BatchNormalization -> y; 'w' is also listed as a
     * graph input (an initializer with a default): it stays a constant */
    struct qp_error err;
    for (int keep = 0; keep < 2; keep++) {
        struct pbe gr = {0}, attrs = {0}, at = {0};
        const float w[2] = {2, -1}, b[2] = {1, 0.5f}, sc[2] = {1, 2};
        const float be[2] = {0, 1}, mu[2] = {3, -1}, va[2] = {4, 0.25f};
        value_f32(&gr, G_INPUT, "x", SHAPE(1, 1, 1, 2), 4, 1);
        value_f32(&gr, G_INPUT, "w", SHAPE(2, 1, 1, 1), 4, 1);
        tensor_f32(&gr, G_INIT, "w", SHAPE(2, 1, 1, 1), 4, w, 2);
        tensor_f32(&gr, G_INIT, "b", SHAPE(2), 1, b, 2);
        tensor_f32(&gr, G_INIT, "sc", SHAPE(2), 1, sc, 2);
        tensor_f32(&gr, G_INIT, "be", SHAPE(2), 1, be, 2);
        tensor_f32(&gr, G_INIT, "mu", SHAPE(2), 1, mu, 2);
        tensor_f32(&gr, G_INIT, "va", SHAPE(2), 1, va, 2);
        node(&gr, "Conv", "conv", 3, IN("x", "w", "b"), "c", NULL);
        pbe_str(&at, A_NAME, "epsilon");
        pbe_f32(&at, A_F, 0.0f);
        pbe_int(&at, A_TYPE, 1);
        pbe_msg(&attrs, N_ATTR, &at);
        node(&gr, "BatchNormalization", "bn", 5, IN("c", "sc", "be", "mu", "va"),
             "y", &attrs);
        value_f32(&gr, G_OUTPUT, "y", SHAPE(1, 2, 1, 2), 4, 1);
        struct pbe m = model(11, &gr);
        struct qp_import_opts o = {keep != 0, false};
        struct qp_graph *g;
        REQUIRE_OK(import(&m, &o, &g, &err), &err);
        CHECK_INT(g->n_inputs, 1);
        CHECK_INT(g->n_nodes, keep ? 2 : 1);
        struct qp_tensor *x = TF32("x", 4, SHAPE(1, 1, 1, 2), VALS(1, 2));
        const struct qp_tensor *feed[1] = {x};
        struct qp_tensor *out[1];
        REQUIRE_OK(qp_exec_run(g, feed, 1, NULL, out, NULL, &err), &err);
        /* as in test-graph.c: [0, 1] and [3, -1] */
        CHECK_TENSOR(out[0], 4, SHAPE(1, 2, 1, 2), VALS(0, 1, 3, -1), 1e-6);
        qp_tensor_free(out[0]);
        qp_tensor_free(x);
        qp_graph_free(g);
    }
}

QP_TEST(onnx_import_refuses_inputs_it_cannot_hold)
{
    struct qp_error err;
    struct qp_graph *g = NULL;
    /* a sequence input */
    struct pbe gr = {0}, vi = {0}, tp = {0}, seq = {0}, et = {0}, tt = {0};
    pbe_str(&vi, 1, "s");
    pbe_int(&tt, 1, 1);
    pbe_msg(&et, 1, &tt);     /* TypeProto.tensor_type */
    pbe_msg(&seq, 1, &et);    /* Sequence.elem_type */
    pbe_msg(&tp, 4, &seq);    /* TypeProto.sequence_type */
    pbe_msg(&vi, 2, &tp);
    pbe_msg(&gr, G_INPUT, &vi);
    node(&gr, "Identity", "id", 1, IN("s"), "y", NULL);
    value_f32(&gr, G_OUTPUT, "y", SHAPE(1), 1, 1);
    struct pbe m = model(13, &gr);
    CHECK_FAILS(import(&m, NULL, &g, &err), QP_E_UNSUPPORTED, &err,
                "'m.onnx': graph input 's' is not a tensor");
    /* a string input */
    struct pbe g2 = {0};
    value_f32(&g2, G_INPUT, "t", SHAPE(2), 1, 8);
    node(&g2, "Identity", "id", 1, IN("t"), "y", NULL);
    value_f32(&g2, G_OUTPUT, "y", SHAPE(2), 1, 8);
    m = model(13, &g2);
    CHECK_FAILS(import(&m, NULL, &g, &err), QP_E_UNSUPPORTED, &err,
                "graph input 't': ");
    /* more dims than a tensor holds */
    struct pbe g3 = {0};
    int64_t nine[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    value_f32(&g3, G_INPUT, "u", nine, 9, 1);
    node(&g3, "Relu", "r", 1, IN("u"), "y", NULL);
    value_f32(&g3, G_OUTPUT, "y", nine, 9, 1);
    m = model(13, &g3);
    CHECK_FAILS(import(&m, NULL, &g, &err), QP_E_UNSUPPORTED, &err,
                "graph input 'u' has 9 dims, at most 8 are supported");
    CHECK(g == NULL);
}
