/* Unit tests of formats/onnx.c on models built byte by byte
 * (tests/unit/pbtest.h): every attribute type, subgraphs, Constant forms,
 * functions, value types, external data, memory, and every refusal. */
#include <stdlib.h>
#include <string.h>

#include "core/fileio.h"
#include "formats/dump.h"
#include "formats/onnx.h"
#include "tests/test.h"
#include "tests/unit/pbtest.h"

/* onnx.proto field numbers */
enum { M_IR = 1, M_PRODUCER = 2, M_PRODUCER_VERSION = 3, M_DOMAIN = 4,
       M_MODEL_VERSION = 5, M_GRAPH = 7, M_OPSET = 8, M_METADATA = 14,
       M_FUNCTIONS = 25 };
enum { G_NODE = 1, G_NAME = 2, G_INIT = 5, G_INPUT = 11, G_OUTPUT = 12,
       G_VALUE_INFO = 13, G_SPARSE_INIT = 15 };
enum { N_INPUT = 1, N_OUTPUT = 2, N_NAME = 3, N_OP = 4, N_ATTR = 5,
       N_DOMAIN = 7 };
enum { A_NAME = 1, A_F = 2, A_I = 3, A_S = 4, A_T = 5, A_G = 6, A_FLOATS = 7,
       A_INTS = 8, A_STRINGS = 9, A_TENSORS = 10, A_GRAPHS = 11, A_TP = 14,
       A_TYPE = 20, A_REF = 21, A_SPARSE = 22 };

/* ---- builders ------------------------------------------------------------ */

static void tensor_raw(struct pbe *e, unsigned field, const char *name,
                       int type, const int64_t *dims, int nd, const void *raw,
                       size_t len)
{
    struct pbe t = {0};
    pbe_tensor_head(&t, dims, nd, type, name);
    pbe_bytes(&t, 9, raw, len);
    pbe_msg(e, field, &t);
}

/* ValueInfoProto of a tensor; dims < 0 are symbolic "d<k>". */
static void value_tensor(struct pbe *e, unsigned field, const char *name,
                         int elem, const int64_t *dims, int nd)
{
    struct pbe vi = {0}, tp = {0}, tt = {0}, sh = {0};
    pbe_str(&vi, 1, name);
    pbe_int(&tt, 1, elem);
    for (int i = 0; i < nd; i++) {
        struct pbe d = {0};
        if (dims[i] >= 0) {
            pbe_int(&d, 1, dims[i]);
        } else {
            char p[16];
            snprintf(p, sizeof p, "d%d", i);
            pbe_str(&d, 2, p);
        }
        pbe_msg(&sh, 1, &d);
    }
    if (nd >= 0)
        pbe_msg(&tt, 2, &sh);
    pbe_msg(&tp, 1, &tt);
    pbe_msg(&vi, 2, &tp);
    pbe_msg(e, field, &vi);
}

static void attr_int(struct pbe *n, const char *name, int64_t v)
{
    struct pbe a = {0};
    pbe_str(&a, A_NAME, name);
    pbe_int(&a, A_I, v);
    pbe_int(&a, A_TYPE, 2);
    pbe_msg(n, N_ATTR, &a);
}

static void attr_float(struct pbe *n, const char *name, float v, int type)
{
    struct pbe a = {0};
    pbe_str(&a, A_NAME, name);
    pbe_f32(&a, A_F, v);
    pbe_int(&a, A_TYPE, type);
    pbe_msg(n, N_ATTR, &a);
}

/* Starts a NodeProto; inputs/outputs separated by ',' ("" entries kept). */
static struct pbe node_begin(const char *op, const char *name,
                             const char *ins, const char *outs)
{
    struct pbe n = {0};
    for (int side = 0; side < 2; side++) {
        const char *s = side ? outs : ins;
        while (s) {
            const char *comma = strchr(s, ',');
            size_t len = comma ? (size_t)(comma - s) : strlen(s);
            pbe_bytes(&n, side ? N_OUTPUT : N_INPUT, s, len);
            s = comma ? comma + 1 : NULL;
        }
    }
    if (name)
        pbe_str(&n, N_NAME, name);
    pbe_str(&n, N_OP, op);
    return n;
}

static struct pbe model_begin(void)
{
    struct pbe m = {0}, o = {0};
    pbe_int(&m, M_IR, 8);
    pbe_str(&o, 1, "");
    pbe_int(&o, 2, 13);
    pbe_msg(&m, M_OPSET, &o);
    return m;
}

static enum qp_status parse(const struct pbe *m, struct qp_onnx_model **out,
                            struct qp_error *err)
{
    return qp_onnx_parse("m.onnx", m->p, m->n, NULL, NULL, out, err);
}

/* ---- the full model -------------------------------------------------------- */

/* A model exercising every part of the tree. */
static struct pbe full_model(void)
{
    struct pbe m = {0}, g = {0}, n, a, sub, o;
    pbe_int(&m, M_IR, 8);
    pbe_str(&m, M_PRODUCER, "qp-test");
    pbe_str(&m, M_PRODUCER_VERSION, "1.0");
    pbe_str(&m, M_DOMAIN, "org.qprobe");
    pbe_int(&m, M_MODEL_VERSION, 7);
    o = (struct pbe){0};
    pbe_str(&o, 1, "ai.onnx");
    pbe_int(&o, 2, 13);
    pbe_msg(&m, M_OPSET, &o);
    pbe_str(&o, 1, "com.microsoft");
    pbe_int(&o, 2, 1);
    pbe_msg(&m, M_OPSET, &o);
    pbe_str(&o, 1, "author");
    pbe_str(&o, 2, "me");
    pbe_msg(&m, M_METADATA, &o);

    pbe_str(&g, G_NAME, "main");
    int64_t xd[4] = {-1, 3, 224, -1};
    value_tensor(&g, G_INPUT, "x", 1, xd, 4);
    value_tensor(&g, G_OUTPUT, "y", 1, NULL, -1);
    /* value_info: a sequence of int64 tensors */
    struct pbe vi = {0}, tp = {0}, seq = {0}, inner = {0}, tt = {0};
    pbe_str(&vi, 1, "s");
    pbe_int(&tt, 1, 7);
    pbe_msg(&inner, 1, &tt);
    pbe_msg(&seq, 1, &inner);
    pbe_msg(&tp, 4, &seq);
    pbe_msg(&vi, 2, &tp);
    pbe_msg(&g, G_VALUE_INFO, &vi);

    const float w[4] = {1, 2, 3, 4};
    int64_t wd[2] = {2, 2};
    tensor_raw(&g, G_INIT, "W", 1, wd, 2, w, sizeof w);
    struct pbe bt = {0};
    int64_t three = 3, bv[3] = {-1, 0, 1LL << 40};
    pbe_tensor_head(&bt, &three, 1, 7, "B");
    pbe_packed_varint(&bt, 7, bv, 3);
    pbe_msg(&g, G_INIT, &bt);

    /* Conv with an omitted optional input and every attribute type */
    n = node_begin("Conv", "c1", "x,W,", "y");
    attr_int(&n, "group", 1);
    attr_float(&n, "alpha", 0.5f, 1);
    a = (struct pbe){0};
    pbe_str(&a, A_NAME, "strides");
    const int64_t st[2] = {1, 2};
    pbe_packed_varint(&a, A_INTS, st, 2);
    pbe_int(&a, A_TYPE, 7);
    pbe_msg(&n, N_ATTR, &a);
    pbe_str(&a, A_NAME, "scales");
    const float fl[3] = {0.25f, -1, 8};
    pbe_packed_fixed(&a, A_FLOATS, fl, 3, 4);
    pbe_int(&a, A_TYPE, 6);
    pbe_msg(&n, N_ATTR, &a);
    pbe_str(&a, A_NAME, "auto_pad");
    pbe_str(&a, A_S, "SAME_UPPER");
    pbe_int(&a, A_TYPE, 3);
    pbe_msg(&n, N_ATTR, &a);
    pbe_str(&a, A_NAME, "names");
    pbe_str(&a, A_STRINGS, "a");
    pbe_bytes(&a, A_STRINGS, "b\0c", 3);
    pbe_int(&a, A_TYPE, 8);
    pbe_msg(&n, N_ATTR, &a);
    pbe_str(&a, A_NAME, "t");
    const uint8_t u8[3] = {7, 8, 9};
    tensor_raw(&a, A_T, "", 2, &three, 1, u8, 3);
    pbe_int(&a, A_TYPE, 4);
    pbe_msg(&n, N_ATTR, &a);
    pbe_str(&a, A_NAME, "ts");
    tensor_raw(&a, A_TENSORS, "t0", 1, NULL, 0, w, 4);
    tensor_raw(&a, A_TENSORS, "t1", 3, &three, 1, u8, 3);
    pbe_int(&a, A_TYPE, 9);
    pbe_msg(&n, N_ATTR, &a);
    pbe_str(&a, A_NAME, "ty"); /* TYPE_PROTO: optional<tensor(float)> */
    tp = (struct pbe){0};
    struct pbe opt = {0};
    tt = (struct pbe){0};
    inner = (struct pbe){0};
    pbe_int(&tt, 1, 1);
    pbe_msg(&inner, 1, &tt);
    pbe_msg(&opt, 1, &inner);
    pbe_msg(&tp, 9, &opt);
    pbe_msg(&a, A_TP, &tp);
    pbe_int(&a, A_TYPE, 13);
    pbe_msg(&n, N_ATTR, &a);
    pbe_str(&a, A_NAME, "untyped"); /* IR 1 style: no type field */
    pbe_int(&a, A_I, 5);
    pbe_msg(&n, N_ATTR, &a);
    pbe_msg(&g, G_NODE, &n);

    /* Constants of every form */
    n = node_begin("Constant", "k1", NULL, "k1_out");
    attr_float(&n, "value_float", 2.5f, 1);
    pbe_msg(&g, G_NODE, &n);
    n = node_begin("Constant", NULL, NULL, "k2_out");
    a = (struct pbe){0};
    pbe_str(&a, A_NAME, "value_ints");
    pbe_packed_varint(&a, A_INTS, bv, 3);
    pbe_int(&a, A_TYPE, 7);
    pbe_msg(&n, N_ATTR, &a);
    pbe_msg(&g, G_NODE, &n);
    n = node_begin("Constant", "k3", NULL, "k3_out");
    pbe_str(&a, A_NAME, "value");
    tensor_raw(&a, A_T, "ignored", 1, wd, 2, w, sizeof w);
    pbe_int(&a, A_TYPE, 4);
    pbe_msg(&n, N_ATTR, &a);
    pbe_msg(&g, G_NODE, &n);
    n = node_begin("Constant", "k4", NULL, "k4_out");
    attr_int(&n, "value_int", -3);
    pbe_msg(&g, G_NODE, &n);
    n = node_begin("Constant", "k5", NULL, "k5_out");
    pbe_str(&a, A_NAME, "value_floats");
    pbe_packed_fixed(&a, A_FLOATS, fl, 3, 4);
    pbe_int(&a, A_TYPE, 6);
    pbe_msg(&n, N_ATTR, &a);
    pbe_msg(&g, G_NODE, &n);

    /* If whose branches hold a Constant and an initializer, and a Loop
     * whose body nests another If */
    n = node_begin("If", "if1", "cond", "r");
    for (int b = 0; b < 2; b++) {
        sub = (struct pbe){0};
        pbe_str(&sub, G_NAME, b ? "else" : "then");
        struct pbe kn = node_begin("Constant", "kb", NULL, b ? "ke" : "kt");
        attr_float(&kn, "value_float", b ? -1.0f : 1.0f, 1);
        pbe_msg(&sub, G_NODE, &kn);
        tensor_raw(&sub, G_INIT, b ? "ie" : "it", 1, NULL, 0, w + b, 4);
        value_tensor(&sub, G_OUTPUT, b ? "ke" : "kt", 1, NULL, 0);
        pbe_str(&a, A_NAME, b ? "else_branch" : "then_branch");
        pbe_msg(&a, A_G, &sub);
        pbe_int(&a, A_TYPE, 5);
        pbe_msg(&n, N_ATTR, &a);
    }
    pbe_msg(&g, G_NODE, &n);
    n = node_begin("Loop", "loop", "M,,v0", "v1");
    sub = (struct pbe){0};
    pbe_str(&sub, G_NAME, "body");
    struct pbe inner_if = node_begin("If", "nested", "c", "z"), deep = {0};
    pbe_str(&deep, G_NAME, "deep");
    struct pbe dn = node_begin("Relu", "r", "q", "z");
    pbe_msg(&deep, G_NODE, &dn);
    pbe_str(&a, A_NAME, "then_branch");
    pbe_msg(&a, A_G, &deep);
    pbe_int(&a, A_TYPE, 5);
    pbe_msg(&inner_if, N_ATTR, &a);
    pbe_msg(&sub, G_NODE, &inner_if);
    pbe_str(&a, A_NAME, "body");
    pbe_msg(&a, A_GRAPHS, &sub); /* as a GRAPHS list of one */
    pbe_int(&a, A_TYPE, 10);
    pbe_msg(&n, N_ATTR, &a);
    pbe_msg(&g, G_NODE, &n);
    /* a node of another domain */
    n = node_begin("QuickGelu", "qg", "y", "out");
    pbe_str(&n, N_DOMAIN, "com.microsoft");
    pbe_msg(&g, G_NODE, &n);
    pbe_msg(&m, M_GRAPH, &g);

    /* a model-local function with an attribute reference */
    struct pbe f = {0};
    pbe_str(&f, 1, "MyFn");
    pbe_str(&f, 10, "custom");
    pbe_str(&f, 4, "a");
    pbe_str(&f, 5, "b");
    pbe_str(&f, 6, "alpha");
    n = node_begin("LeakyRelu", NULL, "a", "b");
    pbe_str(&a, A_NAME, "alpha");
    pbe_str(&a, A_REF, "alpha");
    pbe_int(&a, A_TYPE, 1);
    pbe_msg(&n, N_ATTR, &a);
    pbe_msg(&f, 7, &n);
    pbe_str(&o, 1, "");
    pbe_int(&o, 2, 16);
    pbe_msg(&f, 9, &o);
    pbe_msg(&m, M_FUNCTIONS, &f);
    return m;
}

QP_TEST(onnx_model_tree_from_every_part)
{
    struct qp_error err;
    struct pbe mb = full_model();
    struct qp_onnx_model *m;
    REQUIRE_OK(parse(&mb, &m, &err), &err);
    free(mb.p);
    CHECK_INT(m->ir_version, 8);
    CHECK_STR(m->producer_name, "qp-test");
    CHECK_STR(m->producer_version, "1.0");
    CHECK_STR(m->domain, "org.qprobe");
    CHECK_INT(m->model_version, 7);
    CHECK_INT(m->n_opsets, 2);
    CHECK_INT(qp_onnx_opset_version(m, ""), 13);
    CHECK_INT(qp_onnx_opset_version(m, "ai.onnx"), 13);
    CHECK_INT(qp_onnx_opset_version(m, "com.microsoft"), 1);
    CHECK_INT(qp_onnx_opset_version(m, "org.other"), -1);
    REQUIRE(m->n_metadata == 1);
    CHECK_STR(m->metadata[0].key, "author");
    CHECK_STR(m->metadata[0].value, "me");

    const struct qp_onnx_graph *g = m->graph;
    CHECK_STR(g->name, "main");
    /* inputs with symbolic and known dims; an output without a shape */
    REQUIRE(g->n_inputs == 1 && g->n_outputs == 1 && g->n_value_info == 1);
    const struct qp_onnx_valtype *xt = &g->inputs[0].type;
    CHECK_STR(g->inputs[0].name, "x");
    CHECK_INT(xt->kind, QP_ONNX_KIND_TENSOR);
    CHECK_INT(xt->elem_type, QP_ONNX_FLOAT);
    REQUIRE(xt->ndim == 4);
    CHECK_STR(xt->dims[0].param, "d0");
    CHECK_INT(xt->dims[0].value, -1);
    CHECK(xt->dims[1].value == 3 && xt->dims[1].param == NULL);
    CHECK_INT(xt->dims[2].value, 224);
    CHECK_STR(xt->dims[3].param, "d3");
    CHECK_INT(g->outputs[0].type.ndim, -1);
    const struct qp_onnx_valtype *st = &g->value_info[0].type;
    CHECK_INT(st->kind, QP_ONNX_KIND_SEQUENCE);
    REQUIRE(st->elem != NULL);
    CHECK_INT(st->elem->kind, QP_ONNX_KIND_TENSOR);
    CHECK_INT(st->elem->elem_type, QP_ONNX_INT64);

    /* initializers */
    REQUIRE(g->n_initializers == 2);
    const struct qp_tensor *W = qp_onnx_graph_initializer(g, "W");
    const struct qp_tensor *B = qp_onnx_graph_initializer(g, "B");
    REQUIRE(W && B);
    CHECK(W->dtype == QP_DTYPE_F32 && W->shape[0] == 2 && W->shape[1] == 2);
    CHECK(((float *)W->data)[3] == 4.0f);
    CHECK(B->dtype == QP_DTYPE_I64 && ((int64_t *)B->data)[2] == 1LL << 40);
    CHECK(qp_onnx_graph_initializer(g, "nope") == NULL);

    REQUIRE(g->n_nodes == 9);
    const struct qp_onnx_node *c = &g->nodes[0];
    CHECK_STR(c->name, "c1");
    CHECK(qp_onnx_node_is(c, "Conv"));
    REQUIRE(c->n_inputs == 3 && c->n_outputs == 1);
    CHECK_STR(c->inputs[1], "W");
    CHECK_STR(c->inputs[2], ""); /* the omitted bias keeps its place */
    CHECK(c->value == NULL);
    int64_t iv;
    float fv;
    const char *sv;
    const int64_t *ints;
    const float *floats;
    size_t cnt;
    CHECK_OK(qp_onnx_attr_int(c, "group", 0, &iv, &err), &err);
    CHECK_INT(iv, 1);
    CHECK_OK(qp_onnx_attr_int(c, "dilations_absent", 9, &iv, &err), &err);
    CHECK_INT(iv, 9);
    CHECK_OK(qp_onnx_attr_float(c, "alpha", 0, &fv, &err), &err);
    CHECK_NEAR(fv, 0.5, 0);
    CHECK_OK(qp_onnx_attr_string(c, "auto_pad", "NOTSET", &sv, &err), &err);
    CHECK_STR(sv, "SAME_UPPER");
    CHECK_OK(qp_onnx_attr_ints(c, "strides", &ints, &cnt, &err), &err);
    CHECK(cnt == 2 && ints[0] == 1 && ints[1] == 2);
    CHECK_OK(qp_onnx_attr_floats(c, "scales", &floats, &cnt, &err), &err);
    CHECK(cnt == 3 && floats[0] == 0.25f && floats[2] == 8.0f);
    CHECK_FAILS(qp_onnx_attr_int(c, "alpha", 0, &iv, &err), QP_E_FORMAT, &err,
                "node 'c1' (Conv): attribute 'alpha' is FLOAT, expected INT");
    const struct qp_onnx_attr *a = qp_onnx_attr_find(c, "names");
    REQUIRE(a && a->type == QP_ONNX_ATTR_STRINGS && a->n == 2);
    CHECK_STR(a->strings[0], "a");
    CHECK(a->string_lens[1] == 3 && !memcmp(a->strings[1], "b\0c", 3));
    a = qp_onnx_attr_find(c, "t");
    REQUIRE(a && a->type == QP_ONNX_ATTR_TENSOR && a->t);
    CHECK_STR(a->t->name, "t"); /* unnamed tensor: the attribute's name */
    CHECK(a->t->dtype == QP_DTYPE_U8 && ((uint8_t *)a->t->data)[2] == 9);
    a = qp_onnx_attr_find(c, "ts");
    REQUIRE(a && a->type == QP_ONNX_ATTR_TENSORS && a->n == 2);
    CHECK(a->tensors[0]->ndim == 0 && *(float *)a->tensors[0]->data == 1.0f);
    CHECK(a->tensors[1]->dtype == QP_DTYPE_I8);
    a = qp_onnx_attr_find(c, "ty");
    REQUIRE(a && a->type == QP_ONNX_ATTR_TYPE_PROTO && a->tp);
    CHECK_INT(a->tp->kind, QP_ONNX_KIND_OPTIONAL);
    CHECK(a->tp->elem && a->tp->elem->elem_type == QP_ONNX_FLOAT);
    a = qp_onnx_attr_find(c, "untyped");
    CHECK(a && a->type == QP_ONNX_ATTR_INT && a->i == 5);

    /* Constants: value tensors named by their outputs */
    const struct qp_tensor *k = g->nodes[1].value;
    REQUIRE(k);
    CHECK_STR(k->name, "k1_out");
    CHECK(k->dtype == QP_DTYPE_F32 && k->ndim == 0 && *(float *)k->data == 2.5f);
    k = g->nodes[2].value;
    REQUIRE(k);
    CHECK_STR(g->nodes[2].name, "");
    CHECK(k->dtype == QP_DTYPE_I64 && k->ndim == 1 && k->shape[0] == 3);
    CHECK(((int64_t *)k->data)[0] == -1 && ((int64_t *)k->data)[2] == 1LL << 40);
    k = g->nodes[3].value;
    REQUIRE(k);
    CHECK_STR(k->name, "k3_out");
    CHECK(k->shape[0] == 2 && ((float *)k->data)[1] == 2.0f);
    /* shares the attribute's memory */
    CHECK(k->data == qp_onnx_attr_find(&g->nodes[3], "value")->t->data);
    k = g->nodes[4].value;
    CHECK(k && k->dtype == QP_DTYPE_I64 && k->ndim == 0 &&
          *(int64_t *)k->data == -3);
    k = g->nodes[5].value;
    CHECK(k && k->shape[0] == 3 && ((float *)k->data)[1] == -1.0f);

    /* subgraphs */
    const struct qp_onnx_node *ifn = &g->nodes[6];
    const struct qp_onnx_attr *tb = qp_onnx_attr_find(ifn, "then_branch");
    const struct qp_onnx_attr *eb = qp_onnx_attr_find(ifn, "else_branch");
    REQUIRE(tb && tb->g && eb && eb->g);
    CHECK_STR(tb->g->name, "then");
    REQUIRE(tb->g->n_nodes == 1 && eb->g->n_nodes == 1);
    CHECK(*(float *)tb->g->nodes[0].value->data == 1.0f);
    CHECK(*(float *)eb->g->nodes[0].value->data == -1.0f);
    CHECK_STR(eb->g->nodes[0].value->name, "ke");
    REQUIRE(eb->g->n_initializers == 1);
    CHECK(*(float *)eb->g->initializers[0]->data == 2.0f);
    const struct qp_onnx_node *loop = &g->nodes[7];
    CHECK_STR(loop->inputs[1], "");
    a = qp_onnx_attr_find(loop, "body");
    REQUIRE(a && a->type == QP_ONNX_ATTR_GRAPHS && a->n == 1);
    const struct qp_onnx_graph *body = a->graphs[0];
    REQUIRE(body->n_nodes == 1);
    a = qp_onnx_attr_find(&body->nodes[0], "then_branch");
    REQUIRE(a && a->g && a->g->n_nodes == 1);
    CHECK_STR(a->g->name, "deep");
    CHECK(qp_onnx_node_is(&a->g->nodes[0], "Relu"));
    const struct qp_onnx_node *qg = &g->nodes[8];
    CHECK_STR(qg->domain, "com.microsoft");
    CHECK(!qp_onnx_node_is(qg, "QuickGelu"));

    /* the function */
    REQUIRE(m->n_functions == 1);
    const struct qp_onnx_function *f = &m->functions[0];
    CHECK_STR(f->name, "MyFn");
    CHECK_STR(f->domain, "custom");
    CHECK(f->n_inputs == 1 && f->n_attributes == 1 && f->n_opsets == 1);
    CHECK_STR(f->attributes[0], "alpha");
    CHECK_INT(f->opsets[0].version, 16);
    REQUIRE(f->n_nodes == 1 && f->nodes[0].n_attrs == 1);
    CHECK_STR(f->nodes[0].attrs[0].ref_attr_name, "alpha");
    CHECK(g->nodes[0].attrs[0].ref_attr_name == NULL);

    /* W, B, t, t0, t1, value; 4 Constants made from attributes; in the
     * If, 2 initializers and 2 Constants */
    CHECK_INT(m->stats.tensors, 14);
    CHECK_INT(m->stats.bytes_copied, 16 + 24 + 3 + 4 + 3 + 16 + 4 + 24 + 8 +
              12 + 4 + 4 + 4 + 4);
    CHECK_INT(m->stats.borrowed, 0); /* parsed from memory: all copied */
    qp_onnx_model_free(m);
}

/* Parses m and expects code and a message containing needle. */
#define CHECK_MODEL_FAILS(mb, code, needle)                                    \
    do {                                                                       \
        struct qp_onnx_model *m_ = NULL;                                       \
        CHECK_FAILS(parse(&(mb), &m_, &err), code, &err, needle);              \
        CHECK(m_ == NULL);                                                     \
        free((mb).p);                                                          \
    } while (0)

/* A model whose graph holds the given node (consumed). */
static struct pbe model_with_node(struct pbe *n)
{
    struct pbe m = model_begin(), g = {0};
    pbe_msg(&g, G_NODE, n);
    pbe_msg(&m, M_GRAPH, &g);
    return m;
}

QP_TEST(onnx_refuses_malformed_models)
{
    struct qp_error err;
    /* truncated: cut the full model in the middle */
    struct pbe full = full_model(), mb = {0};
    pbe_raw(&mb, full.p, full.n / 2);
    CHECK_MODEL_FAILS(mb, QP_E_FORMAT, "'m.onnx': not a valid ONNX model "
                      "protobuf: field length beyond the end of its message");
    free(full.p);
    /* no graph, or not a model at all (a .npy header) */
    mb = model_begin();
    CHECK_MODEL_FAILS(mb, QP_E_FORMAT, "'m.onnx': not an ONNX model: it has "
                      "no graph");
    mb = (struct pbe){0};
    pbe_raw(&mb, "\x93NUMPY\x01\x00", 8);
    CHECK_MODEL_FAILS(mb, QP_E_FORMAT, "not a valid ONNX model protobuf");

    /* initializers: unnamed, duplicated, wrong size, string, sparse */
    struct pbe g = {0};
    const float w[8] = {0};
    int64_t d24[2] = {2, 4}, one = 1;
    mb = model_begin();
    tensor_raw(&g, G_INIT, "", 1, &one, 1, w, 4);
    pbe_msg(&mb, M_GRAPH, &g);
    CHECK_MODEL_FAILS(mb, QP_E_FORMAT, "initializer 0 has no name");
    mb = model_begin();
    tensor_raw(&g, G_INIT, "w", 1, &one, 1, w, 4);
    tensor_raw(&g, G_INIT, "v", 1, &one, 1, w, 4);
    tensor_raw(&g, G_INIT, "w", 1, &one, 1, w, 4);
    pbe_msg(&mb, M_GRAPH, &g);
    CHECK_MODEL_FAILS(mb, QP_E_FORMAT, "initializer name 'w' appears twice");
    mb = model_begin();
    tensor_raw(&g, G_INIT, "w", 1, d24, 2, w, 12);
    pbe_msg(&mb, M_GRAPH, &g);
    CHECK_MODEL_FAILS(mb, QP_E_FORMAT, "'m.onnx': initializer 'w': raw_data "
                      "has 12 bytes, shape [2,4] f32 needs 32");
    mb = model_begin();
    struct pbe t = {0};
    pbe_tensor_head(&t, &one, 1, 8, "s");
    pbe_str(&t, 6, "text");
    pbe_msg(&g, G_INIT, &t);
    pbe_msg(&mb, M_GRAPH, &g);
    CHECK_MODEL_FAILS(mb, QP_E_UNSUPPORTED, "'m.onnx': initializer 's': ONNX "
                      "data type STRING (8) is not supported");
    mb = model_begin();
    struct pbe sp = {0};
    tensor_raw(&sp, 1, "vals", 1, &one, 1, w, 4);
    pbe_int(&sp, 3, 10);
    pbe_msg(&g, G_SPARSE_INIT, &sp);
    pbe_msg(&mb, M_GRAPH, &g);
    CHECK_MODEL_FAILS(mb, QP_E_UNSUPPORTED, "1 sparse initializers are not "
                      "supported");

    /* nodes and attributes */
    struct pbe n = node_begin("", "x", "a", "b");
    mb = model_with_node(&n);
    CHECK_MODEL_FAILS(mb, QP_E_FORMAT, "'m.onnx': node 'x' (?) has no op_type");
    n = node_begin("Relu", "r", "a", "b");
    struct pbe a = {0};
    pbe_int(&a, A_I, 1);
    pbe_int(&a, A_TYPE, 2);
    pbe_msg(&n, N_ATTR, &a);
    mb = model_with_node(&n);
    CHECK_MODEL_FAILS(mb, QP_E_FORMAT, "node 'r' (Relu): an attribute has no "
                      "name");
    n = node_begin("Relu", "r", "a", "b");
    pbe_str(&a, A_NAME, "odd");
    pbe_int(&a, A_TYPE, 99);
    pbe_msg(&n, N_ATTR, &a);
    mb = model_with_node(&n);
    CHECK_MODEL_FAILS(mb, QP_E_FORMAT, "node 'r' (Relu) attribute 'odd' has "
                      "unknown type 99");
    n = node_begin("Relu", "r", "a", "b");
    pbe_str(&a, A_NAME, "empty");
    pbe_msg(&n, N_ATTR, &a);
    mb = model_with_node(&n);
    CHECK_MODEL_FAILS(mb, QP_E_FORMAT, "attribute 'empty' has no type 0");

    /* Constant forms that are refused */
    n = node_begin("Constant", "k", NULL, "o");
    pbe_str(&a, A_NAME, "sparse_value");
    pbe_int(&a, A_TYPE, 11);
    pbe_msg(&n, N_ATTR, &a);
    mb = model_with_node(&n);
    CHECK_MODEL_FAILS(mb, QP_E_UNSUPPORTED, "node 'k' (Constant): sparse "
                      "values are not supported");
    n = node_begin("Constant", "k", NULL, "o");
    pbe_str(&a, A_NAME, "value_string");
    pbe_str(&a, A_S, "hi");
    pbe_int(&a, A_TYPE, 3);
    pbe_msg(&n, N_ATTR, &a);
    mb = model_with_node(&n);
    CHECK_MODEL_FAILS(mb, QP_E_UNSUPPORTED, "string values are not supported");
    n = node_begin("Constant", "k", NULL, "o");
    attr_float(&n, "value_float", 1, 1);
    attr_int(&n, "value_int", 1);
    mb = model_with_node(&n);
    CHECK_MODEL_FAILS(mb, QP_E_FORMAT, "needs exactly one value attribute, it "
                      "has 2");
    n = node_begin("Constant", "k", NULL, "o");
    attr_int(&n, "value_float", 1);
    mb = model_with_node(&n);
    CHECK_MODEL_FAILS(mb, QP_E_FORMAT, "attribute 'value_float' is INT, "
                      "expected FLOAT");
    n = node_begin("Constant", "k", NULL, "o,p");
    attr_int(&n, "value_int", 1);
    mb = model_with_node(&n);
    CHECK_MODEL_FAILS(mb, QP_E_FORMAT, "node 'k' (Constant) needs one named "
                      "output");

    /* an error inside a subgraph names the path to it */
    n = node_begin("If", "if1", "c", "y");
    struct pbe sub = {0};
    tensor_raw(&sub, G_INIT, "w2", 1, d24, 2, w, 8);
    pbe_str(&a, A_NAME, "then_branch");
    pbe_msg(&a, A_G, &sub);
    pbe_int(&a, A_TYPE, 5);
    pbe_msg(&n, N_ATTR, &a);
    mb = model_with_node(&n);
    CHECK_MODEL_FAILS(mb, QP_E_FORMAT, "'m.onnx': node 'if1' (If) attribute "
                      "'then_branch': initializer 'w2': raw_data has 8 bytes");
}

QP_TEST(onnx_refuses_nesting_beyond_the_limit)
{
    struct qp_error err;
    /* 40 nested If nodes: each level is graph -> node -> attribute -> graph
     * (3 messages), far beyond 64 */
    struct pbe g = {0};
    struct pbe r = node_begin("Relu", "r", "a", "b");
    pbe_msg(&g, G_NODE, &r);
    for (int i = 0; i < 40; i++) {
        struct pbe n = node_begin("If", "i", "c", "b"), a = {0}, outer = {0};
        pbe_str(&a, A_NAME, "then_branch");
        pbe_msg(&a, A_G, &g);
        pbe_int(&a, A_TYPE, 5);
        pbe_msg(&n, N_ATTR, &a);
        pbe_msg(&outer, G_NODE, &n);
        g = outer;
    }
    struct pbe mb = model_begin();
    pbe_msg(&mb, M_GRAPH, &g);
    CHECK_MODEL_FAILS(mb, QP_E_UNSUPPORTED, "'m.onnx': ONNX model nests "
                      "messages more than 64 levels deep");
}

QP_TEST(onnx_graph_given_twice_is_merged_in_order)
{
    /* protobuf merges a repeated singular message field: both graphs'
     * initializers must arrive with their own data */
    struct qp_error err;
    struct pbe mb = model_begin(), g = {0};
    const float a = 1.5f, b = -7.0f;
    tensor_raw(&g, G_INIT, "a", 1, NULL, 0, &a, 4);
    pbe_msg(&mb, M_GRAPH, &g);
    tensor_raw(&g, G_INIT, "b", 1, NULL, 0, &b, 4);
    pbe_msg(&mb, M_GRAPH, &g);
    struct qp_onnx_model *m;
    REQUIRE_OK(parse(&mb, &m, &err), &err);
    free(mb.p);
    REQUIRE(m->graph->n_initializers == 2);
    const struct qp_tensor *ta = qp_onnx_graph_initializer(m->graph, "a");
    const struct qp_tensor *tb = qp_onnx_graph_initializer(m->graph, "b");
    REQUIRE(ta && tb);
    CHECK(*(float *)ta->data == 1.5f && *(float *)tb->data == -7.0f);
    qp_onnx_model_free(m);
}

/* Writes a model with initializers "u" (u8 [3]) and "f" (f32 [2]) and, when
 * ext is non-NULL, "e" (f32 [4]) in external file ext at offset off. */
static char *write_model(struct qp_test_ctx *ctx, const char *ext,
                         const char *off)
{
    struct pbe mb = model_begin(), g = {0};
    int64_t three = 3, two = 2, four = 4;
    tensor_raw(&g, G_INIT, "u", 2, &three, 1, "\x05\x06\x07", 3);
    const float f[2] = {0.5f, -0.25f};
    tensor_raw(&g, G_INIT, "f", 1, &two, 1, f, sizeof f);
    if (ext) {
        struct pbe t = {0}, kv = {0};
        pbe_tensor_head(&t, &four, 1, 1, "e");
        pbe_str(&kv, 1, "location");
        pbe_str(&kv, 2, ext);
        pbe_msg(&t, 13, &kv);
        pbe_str(&kv, 1, "offset");
        pbe_str(&kv, 2, off);
        pbe_msg(&t, 13, &kv);
        pbe_int(&t, 14, 1);
        pbe_msg(&g, G_INIT, &t);
    }
    struct pbe n = node_begin("Constant", "k", NULL, "kv");
    attr_int(&n, "value_int", 42);
    pbe_msg(&g, G_NODE, &n);
    n = node_begin("Constant", "shadow", NULL, "u"); /* same name as "u" */
    attr_int(&n, "value_int", 0);
    pbe_msg(&g, G_NODE, &n);
    pbe_msg(&mb, M_GRAPH, &g);
    char *path = qp_test_path(ctx, "model.onnx");
    qp_test_write_file(path, mb.p, mb.n);
    free(mb.p);
    return path;
}

QP_TEST(onnx_external_data_and_memory)
{
    struct qp_error err;
    uint8_t bin[64] = {0};
    const float e[4] = {1, 2, 3, 4};
    memcpy(bin + 16, e, 16);
    char *bp = qp_test_path(ctx, "weights.bin");
    REQUIRE(qp_test_write_file(bp, bin, sizeof bin));
    char *path = write_model(ctx, "weights.bin", "16");
    struct qp_onnx_model *m;
    REQUIRE_OK(qp_onnx_load(path, &m, &err), &err);
    const struct qp_onnx_graph *g = m->graph;
    REQUIRE(g->n_initializers == 3);
    const struct qp_tensor *u = g->initializers[0], *x = g->initializers[2];
    /* 1-byte data is always aligned: borrowed from the model's mapping */
    CHECK(u->map != NULL && !u->owns_data);
    CHECK(((uint8_t *)u->data)[2] == 7);
    /* external, aligned: borrowed from the weights file's mapping */
    CHECK(x->map != NULL && x->map != u->map);
    CHECK(!memcmp(x->data, e, 16));
    CHECK_INT(m->stats.tensors, 5); /* 3 initializers, 2 Constants */
    CHECK(m->stats.borrowed >= 2);
    CHECK_INT(m->stats.bytes_borrowed + m->stats.bytes_copied,
              3 + 8 + 16 + 8 + 8);
    /* a borrowed tensor outlives the model */
    struct qp_tensor *keep;
    REQUIRE_OK(qp_tensor_wrap("keep", x->dtype, x->ndim, x->shape, x->data,
                              x->nbytes, x->map, &keep, &err), &err);
    qp_onnx_model_free(m);
    CHECK(((float *)keep->data)[3] == 4.0f);
    qp_tensor_free(keep);

    /* the model as a dump: initializers, then Constant values not
     * shadowing an initializer */
    struct qp_dump *d;
    REQUIRE_OK(qp_dump_open(path, QP_DUMP_AUTO, &d, &err), &err);
    CHECK_INT(d->format, QP_DUMP_ONNX);
    REQUIRE(qp_dump_count(d) == 4);
    CHECK_STR(qp_dump_entry(d, 0)->name, "u");
    CHECK_STR(qp_dump_entry(d, 1)->name, "f");
    CHECK_STR(qp_dump_entry(d, 2)->name, "e");
    CHECK_STR(qp_dump_entry(d, 3)->name, "kv");
    CHECK_INT(qp_dump_entry(d, 3)->dtype, QP_DTYPE_I64);
    struct qp_tensor *t;
    REQUIRE_OK(qp_dump_load(d, 3, &t, &err), &err);
    CHECK_INT(*(int64_t *)t->data, 42);
    qp_tensor_free(t);
    REQUIRE_OK(qp_dump_load(d, 1, &t, &err), &err);
    qp_dump_close(d);
    CHECK(((float *)t->data)[1] == -0.25f); /* the copy outlives the dump */
    qp_tensor_free(t);
    free(path);

    /* external data beyond the file, and escaping the model's folder */
    path = write_model(ctx, "weights.bin", "60");
    m = NULL;
    CHECK_FAILS(qp_onnx_load(path, &m, &err), QP_E_FORMAT, &err,
                "model.onnx': initializer 'e': external data 'weights.bin': "
                "offset 60 + length 16 is beyond the file (64 bytes)");
    free(path);
    path = write_model(ctx, "../weights.bin", "0");
    CHECK_FAILS(qp_onnx_load(path, &m, &err), QP_E_FORMAT, &err,
                "initializer 'e': external data location '../weights.bin' "
                "leaves the model's directory");
    CHECK(m == NULL);
    /* parsed from memory, external data has no directory */
    size_t len;
    char *buf;
    REQUIRE_OK(qp_read_file(path, 1 << 20, &buf, &len, &err), &err);
    CHECK_FAILS(qp_onnx_parse("mem", buf, len, NULL, NULL, &m, &err),
                QP_E_UNSUPPORTED, &err, "needs the file's directory");
    free(buf);
    free(path);
    free(bp);
    /* a missing file */
    CHECK_FAILS(qp_onnx_load("/nonexistent/m.onnx", &m, &err), QP_E_IO, &err,
                "'/nonexistent/m.onnx': cannot open");
}
