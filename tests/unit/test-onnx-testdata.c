/* The ONNX model reader on Debian's libonnx-testdata: every node test's
 * model.onnx parses, and its graph (nodes with their inputs, outputs and
 * attributes, subgraphs included; graph inputs and outputs) equals an
 * independent decoding of the wire format (tests/unit/pbtest.h); then a
 * few models whose values can be checked by hand against their expected
 * outputs. */
#include <dirent.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fileio.h"
#include "formats/onnx.h"
#include "tests/test.h"
#include "tests/unit/onnx-testdata.h"
#include "tests/unit/pbtest.h"


/* A growing text buffer. */
struct text {
    char *s;
    size_t n, cap;
};

static void put(struct text *t, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void put(struct text *t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (t->n + (size_t)k + 1 > t->cap) {
        t->cap = (t->n + (size_t)k + 1) * 2;
        t->s = realloc(t->s, t->cap);
    }
    va_start(ap, fmt);
    vsnprintf(t->s + t->n, (size_t)k + 1, fmt, ap);
    va_end(ap);
    t->n += (size_t)k;
}

/* ---- the graph as text, from the wire ------------------------------------- */

static void wire_graph(struct text *t, struct pbr g, int *nodes);

static void wire_str(struct text *t, const struct pbf *f)
{
    put(t, "%.*s", (int)(f->body.end - f->body.p), (const char *)f->body.p);
}

/* "name:type" plus "{graph}" for each subgraph of an AttributeProto. */
static void wire_attr(struct text *t, struct pbr a, int *nodes)
{
    struct pbf f;
    bool ok;
    struct pbr r = a;
    while (pbr_next(&r, &f, &ok))
        if (f.field == 1 && f.wt == 2)
            wire_str(t, &f);
    r = a;
    while (pbr_next(&r, &f, &ok))
        if (f.field == 20 && f.wt == 0)
            put(t, ":%d", (int)f.v);
    r = a;
    while (pbr_next(&r, &f, &ok))
        if ((f.field == 6 || f.field == 11) && f.wt == 2)
            wire_graph(t, f.body, nodes);
    put(t, ";");
}

/* op|domain|name|in,..|out,..|attrs */
static void wire_node(struct text *t, struct pbr n, int *nodes)
{
    static const unsigned order[] = {4, 7, 3, 1, 2};
    struct pbf f;
    bool ok;
    (*nodes)++;
    for (int k = 0; k < 5; k++) {
        struct pbr r = n;
        while (pbr_next(&r, &f, &ok))
            if (f.field == order[k] && f.wt == 2) {
                wire_str(t, &f);
                if (k >= 3)
                    put(t, ",");
            }
        put(t, "|");
    }
    struct pbr r = n;
    while (pbr_next(&r, &f, &ok))
        if (f.field == 5 && f.wt == 2)
            wire_attr(t, f.body, nodes);
    put(t, "\n");
}

/* elem type and dims of a ValueInfoProto: "name:type[d,d,]" */
static void wire_value(struct text *t, struct pbr v)
{
    struct pbf f, g, h, k, m;
    bool ok;
    struct pbr r = v;
    while (pbr_next(&r, &f, &ok))
        if (f.field == 1 && f.wt == 2)
            wire_str(t, &f);
    r = v;
    while (pbr_next(&r, &f, &ok)) {
        if (f.field != 2 || f.wt != 2)
            continue;
        struct pbr tp = f.body;
        while (pbr_next(&tp, &g, &ok)) {
            if (g.field != 1 || g.wt != 2)
                continue;
            struct pbr tt = g.body;
            while (pbr_next(&tt, &h, &ok)) {
                if (h.field == 1 && h.wt == 0)
                    put(t, ":%d", (int)h.v);
                if (h.field != 2 || h.wt != 2)
                    continue;
                put(t, "[");
                struct pbr sh = h.body;
                while (pbr_next(&sh, &k, &ok)) {
                    struct pbr d = k.body;
                    while (pbr_next(&d, &m, &ok)) {
                        if (m.field == 1 && m.wt == 0)
                            put(t, "%lld", (long long)m.v);
                        if (m.field == 2 && m.wt == 2)
                            wire_str(t, &m);
                    }
                    put(t, ",");
                }
                put(t, "]");
            }
        }
    }
    put(t, " ");
}

static void wire_graph(struct text *t, struct pbr g, int *nodes)
{
    struct pbf f;
    bool ok;
    put(t, "{in ");
    for (unsigned field = 11; field <= 12; field++) {
        struct pbr r = g;
        while (pbr_next(&r, &f, &ok))
            if (f.field == field && f.wt == 2)
                wire_value(t, f.body);
        put(t, field == 11 ? "out " : "\n");
    }
    struct pbr r = g;
    while (pbr_next(&r, &f, &ok))
        if (f.field == 1 && f.wt == 2)
            wire_node(t, f.body, nodes);
    put(t, "}");
}

/* ---- the same text from the parsed tree ------------------------------------ */

static void tree_graph(struct text *t, const struct qp_onnx_graph *g);

static void tree_value(struct text *t, const struct qp_onnx_value *v)
{
    put(t, "%s", v->name);
    if (v->type.kind == QP_ONNX_KIND_TENSOR) {
        if (v->type.elem_type)
            put(t, ":%d", (int)v->type.elem_type);
        if (v->type.ndim >= 0) {
            put(t, "[");
            for (int i = 0; i < v->type.ndim; i++) {
                if (v->type.dims[i].param)
                    put(t, "%s", v->type.dims[i].param);
                else if (v->type.dims[i].value >= 0)
                    put(t, "%lld", (long long)v->type.dims[i].value);
                put(t, ",");
            }
            put(t, "]");
        }
    }
    put(t, " ");
}

static void tree_graph(struct text *t, const struct qp_onnx_graph *g)
{
    put(t, "{in ");
    for (size_t i = 0; i < g->n_inputs; i++)
        tree_value(t, &g->inputs[i]);
    put(t, "out ");
    for (size_t i = 0; i < g->n_outputs; i++)
        tree_value(t, &g->outputs[i]);
    put(t, "\n");
    for (size_t i = 0; i < g->n_nodes; i++) {
        const struct qp_onnx_node *n = &g->nodes[i];
        put(t, "%s|%s|%s|", n->op_type, n->domain, n->name);
        for (size_t k = 0; k < n->n_inputs; k++)
            put(t, "%s,", n->inputs[k]);
        put(t, "|");
        for (size_t k = 0; k < n->n_outputs; k++)
            put(t, "%s,", n->outputs[k]);
        put(t, "|");
        for (size_t k = 0; k < n->n_attrs; k++) {
            const struct qp_onnx_attr *a = &n->attrs[k];
            put(t, "%s:%d", a->name, (int)a->type);
            if (a->g)
                tree_graph(t, a->g);
            for (size_t j = 0; a->graphs && j < a->n; j++)
                tree_graph(t, a->graphs[j]);
            put(t, ";");
        }
        put(t, "\n");
    }
    put(t, "}");
}

struct census {
    size_t nodes, attrs, consts, subgraphs;
};

static void count(const struct qp_onnx_graph *g, struct census *c)
{
    for (size_t i = 0; i < g->n_nodes; i++) {
        c->nodes++;
        c->consts += g->nodes[i].value != NULL;
        for (size_t k = 0; k < g->nodes[i].n_attrs; k++) {
            const struct qp_onnx_attr *a = &g->nodes[i].attrs[k];
            c->attrs++;
            if (a->g) {
                c->subgraphs++;
                count(a->g, c);
            }
            for (size_t j = 0; a->graphs && j < a->n; j++) {
                c->subgraphs++;
                count(a->graphs[j], c);
            }
        }
    }
}

QP_TEST(onnx_every_node_test_model_matches_its_wire_decoding)
{
    DIR *dir = opendir(NODE_DIR);
    REQUIRE(dir != NULL);
    struct census c = {0};
    int models = 0, mismatched = 0, wire_nodes = 0;
    char path[512];
    const char *test;
    while ((test = node_test_next(dir, path, sizeof path))) {
        struct qp_error err;
        struct qp_onnx_model *m;
        if (qp_onnx_load(path, &m, &err)) {
            qp_test_failf(ctx, __FILE__, __LINE__, "%s", err.msg);
            continue;
        }
        models++;
        count(m->graph, &c);
        char *buf;
        size_t len;
        REQUIRE_OK(qp_read_file(path, 1 << 26, &buf, &len, &err), &err);
        struct pbr r = {(const uint8_t *)buf, (const uint8_t *)buf + len};
        struct pbf f;
        bool ok = true;
        struct text want = {0}, got = {0};
        while (pbr_next(&r, &f, &ok))
            if (f.field == 7 && f.wt == 2)
                wire_graph(&want, f.body, &wire_nodes);
        tree_graph(&got, m->graph);
        if (!ok || !want.s || !got.s || strcmp(want.s, got.s)) {
            if (mismatched++ < 3)
                qp_test_failf(ctx, __FILE__, __LINE__, "%s: parsed\n%s\nwire\n%s",
                              test, got.s, want.s);
        }
        free(want.s);
        free(got.s);
        free(buf);
        qp_onnx_model_free(m);
    }
    closedir(dir);
    printf("  libonnx-testdata: %d node test models parsed, %zu nodes (%zu "
           "subgraphs), %zu attributes, %zu Constant values; %d differ from "
           "their wire decoding\n", models, c.nodes, c.subgraphs, c.attrs,
           c.consts, mismatched);
    CHECK_INT(models, 932);
    CHECK_INT(mismatched, 0);
    CHECK_INT((size_t)wire_nodes, c.nodes);
    CHECK(c.subgraphs > 20 && c.consts > 20);
}

/* ---- values checked by hand ------------------------------------------------- */



QP_TEST(onnx_node_test_constant_and_if_values)
{
    /* a Constant's value is the test's expected output */
    struct qp_onnx_model *m = node_model(ctx, "test_constant");
    struct qp_tensor *y = node_pb(ctx, "test_constant", "output_0.pb");
    REQUIRE(m && y && m->graph->n_nodes == 1);
    const struct qp_tensor *v = m->graph->nodes[0].value;
    REQUIRE(v);
    CHECK_STR(v->name, "values");
    CHECK(v->dtype == QP_DTYPE_F32 && v->shape[0] == 5 && v->shape[1] == 5);
    CHECK(v->nbytes == y->nbytes && !memcmp(v->data, y->data, v->nbytes));
    qp_onnx_model_free(m);
    qp_tensor_free(y);

    /* If: cond is true, the result is the then_branch's Constant */
    m = node_model(ctx, "test_if");
    struct qp_tensor *cond = node_pb(ctx, "test_if", "input_0.pb");
    y = node_pb(ctx, "test_if", "output_0.pb");
    REQUIRE(m && cond && y);
    CHECK(cond->dtype == QP_DTYPE_BOOL && *(uint8_t *)cond->data == 1);
    const struct qp_onnx_node *n = &m->graph->nodes[0];
    REQUIRE(qp_onnx_node_is(n, "If"));
    const struct qp_onnx_attr *tb = qp_onnx_attr_find(n, "then_branch");
    const struct qp_onnx_attr *eb = qp_onnx_attr_find(n, "else_branch");
    REQUIRE(tb && tb->g && tb->g->n_nodes == 1 && eb && eb->g &&
            eb->g->n_nodes == 1);
    const struct qp_tensor *then = tb->g->nodes[0].value;
    const struct qp_tensor *els = eb->g->nodes[0].value;
    REQUIRE(then && els && qp_tensor_numel(then) == 5);
    CHECK(then->nbytes == y->nbytes && !memcmp(then->data, y->data, y->nbytes));
    for (int i = 0; i < 5; i++) /* the else branch counts down */
        CHECK(((float *)els->data)[i] == 5.0f - (float)i);
    qp_onnx_model_free(m);
    qp_tensor_free(cond);
    qp_tensor_free(y);
}

QP_TEST(onnx_node_test_conv_attributes_by_hand)
{
    /* y = conv(x [1,1,7,5], W [1,1,3,3]) with the model's kernel_shape,
     * pads and strides, computed naively here */
    const char *t = "test_conv_with_strides_padding";
    struct qp_onnx_model *m = node_model(ctx, t);
    struct qp_tensor *x = node_pb(ctx, t, "input_0.pb");
    struct qp_tensor *w = node_pb(ctx, t, "input_1.pb");
    struct qp_tensor *y = node_pb(ctx, t, "output_0.pb");
    REQUIRE(m && x && w && y);
    const struct qp_onnx_node *n = &m->graph->nodes[0];
    REQUIRE(qp_onnx_node_is(n, "Conv"));
    struct qp_error err;
    const int64_t *ks, *pads, *strides;
    size_t nk, np, ns;
    REQUIRE_OK(qp_onnx_attr_ints(n, "kernel_shape", &ks, &nk, &err), &err);
    REQUIRE_OK(qp_onnx_attr_ints(n, "pads", &pads, &np, &err), &err);
    REQUIRE_OK(qp_onnx_attr_ints(n, "strides", &strides, &ns, &err), &err);
    REQUIRE(nk == 2 && np == 4 && ns == 2);
    CHECK(ks[0] == 3 && ks[1] == 3 && strides[0] == 2 && pads[0] == 1);
    int64_t H = x->shape[2], W = x->shape[3];
    int64_t OH = (H + pads[0] + pads[2] - ks[0]) / strides[0] + 1;
    int64_t OW = (W + pads[1] + pads[3] - ks[1]) / strides[1] + 1;
    REQUIRE(y->shape[2] == OH && y->shape[3] == OW);
    const float *xv = x->data, *wv = w->data, *yv = y->data;
    for (int64_t oy = 0; oy < OH; oy++)
        for (int64_t ox = 0; ox < OW; ox++) {
            float s = 0;
            for (int64_t ky = 0; ky < ks[0]; ky++)
                for (int64_t kx = 0; kx < ks[1]; kx++) {
                    int64_t iy = oy * strides[0] - pads[0] + ky;
                    int64_t ix = ox * strides[1] - pads[1] + kx;
                    if (iy >= 0 && iy < H && ix >= 0 && ix < W)
                        s += xv[iy * W + ix] * wv[ky * ks[1] + kx];
                }
            CHECK_NEAR(yv[oy * OW + ox], s, 1e-4);
        }
    CHECK_NEAR(yv[0], 12.0, 0); /* 0 + 1 + 5 + 6 */
    qp_onnx_model_free(m);
    qp_tensor_free(x);
    qp_tensor_free(w);
    qp_tensor_free(y);
}

QP_TEST(onnx_node_test_loop_body_by_hand)
{
    /* Loop 5 times: y += x[i] with x the body's Constant; the scan output
     * holds the partial sums */
    const char *t = "test_loop11";
    struct qp_onnx_model *m = node_model(ctx, t);
    struct qp_tensor *trip = node_pb(ctx, t, "input_0.pb");
    struct qp_tensor *y0 = node_pb(ctx, t, "input_2.pb");
    struct qp_tensor *scan = node_pb(ctx, t, "output_1.pb");
    REQUIRE(m && trip && y0 && scan);
    const struct qp_onnx_attr *body = qp_onnx_attr_find(&m->graph->nodes[0],
                                                         "body");
    REQUIRE(body && body->g);
    const struct qp_tensor *xs = NULL;
    for (size_t i = 0; i < body->g->n_nodes; i++)
        if (body->g->nodes[i].value &&
            !strcmp(body->g->nodes[i].value->name, "x"))
            xs = body->g->nodes[i].value;
    REQUIRE(xs && xs->dtype == QP_DTYPE_F32);
    int64_t n = *(int64_t *)trip->data;
    REQUIRE(n == 5 && qp_tensor_numel(scan) == 5);
    float acc = *(float *)y0->data;
    for (int64_t i = 0; i < n; i++) {
        acc += ((float *)xs->data)[i];
        CHECK_NEAR(((float *)scan->data)[i], acc, 0);
    }
    CHECK_NEAR(acc, 13.0, 0);
    qp_onnx_model_free(m);
    qp_tensor_free(trip);
    qp_tensor_free(y0);
    qp_tensor_free(scan);
}
