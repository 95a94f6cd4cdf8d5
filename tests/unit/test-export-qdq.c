/* Unit tests of analysis/export-qdq.c: the QDQ ONNX export of a plan.
 * On a small model written here (Conv + BN folded, Relu, residual Add,
 * pooling, MatMul + bias, Softmax), every tensor of the exported model is
 * checked against the plan it came from (weights, scales, zero points,
 * axes, int32 biases and their scales, activation pairs and names, graph
 * output names, opset); the exported model's fp32 run must compute what
 * qprobe's fake mode computes on the original (uint8, int8, int4 weights,
 * mixed 16-bit without converts); converts appear exactly at precision
 * boundaries; every refusal names its tensor and leaves no file; and an
 * opset-9 model's attribute forms become opset-13 inputs that run the
 * same. tests/unit/test-export-ort.c runs the exports in ONNX Runtime. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/export-qdq.h"
#include "model/onnx-import.h"
#include "tests/test.h"
#include "tests/unit/export-test-util.h"

static const struct qp_onnx_node *find_node(const struct qp_onnx_graph *g,
                                            const char *name)
{
    for (size_t i = 0; i < g->n_nodes; i++)
        if (!strcmp(g->nodes[i].name, name))
            return &g->nodes[i];
    return NULL;
}

static int count_op(const struct qp_onnx_graph *g, const char *op)
{
    int n = 0;
    for (size_t i = 0; i < g->n_nodes; i++)
        n += !strcmp(g->nodes[i].op_type, op);
    return n;
}

struct fixture {
    char model[1024], calib[1024], input[1024];
};

static bool setup(struct qp_test_ctx *ctx, struct fixture *f, int opset)
{
    snprintf(f->model, sizeof f->model, "%s/small.onnx", qp_test_tmpdir(ctx));
    snprintf(f->calib, sizeof f->calib, "%s/calib", qp_test_tmpdir(ctx));
    snprintf(f->input, sizeof f->input, "%s/x/in0.npy", qp_test_tmpdir(ctx));
    char xdir[1024];
    snprintf(xdir, sizeof xdir, "%s/x", qp_test_tmpdir(ctx));
    return ex_model(ctx, f->model, opset) && ex_inputs(ctx, f->calib, 3, 11) &&
           ex_inputs(ctx, xdir, 1, 99);
}

/* The output of s under plan (NULL: fp32) on the input file. */
static struct qp_tensor *run(struct qp_test_ctx *ctx, struct qp_session *s,
                             const struct qp_splan *plan, const char *input)
{
    struct qp_error err;
    struct qp_tensor **feed, *y = NULL;
    const char *spec[1] = {input};
    if (qp_session_load_inputs(s, spec, 1, &feed, &err)) {
        qp_test_failf(ctx, __FILE__, __LINE__, "%s", err.msg);
        return NULL;
    }
    struct qp_session_run_opts o = {0};
    if (qp_session_run(s, plan, (const struct qp_tensor *const *)feed, &o, &y,
                       NULL, &err))
        qp_test_failf(ctx, __FILE__, __LINE__, "run: %s", err.msg);
    qp_session_free_inputs(s, feed);
    return y;
}

static bool same_bytes(const struct qp_tensor *a, const struct qp_tensor *b)
{
    return a && b && a->nbytes == b->nbytes && !memcmp(a->data, b->data, a->nbytes);
}

/* Exports scheme / recipe of the small model to out; the fp32 run of the
 * export against the fake run of the original. */
static void check_fake_equal(struct qp_test_ctx *ctx, const struct fixture *f,
                             const char *scheme, const char *recipe, bool convert,
                             const char *out, struct qp_export_qdq_stats *st)
{
    struct qp_error err;
    struct qp_session *s, *s2;
    struct qp_recipe *r;
    struct qp_splan *plan;
    REQUIRE(ex_plan(ctx, f->model, f->calib, scheme, recipe, &s, &r, &plan));
    struct qp_export_qdq_opts o = {.convert = convert};
    CHECK_OK(qp_export_qdq(s, qp_splan_qplan(plan), out, &o, st, &err), &err);
    struct qp_tensor *fake = run(ctx, s, plan, f->input);
    REQUIRE_OK(qp_session_open(out, NULL, &s2, &err), &err);
    struct qp_tensor *y = run(ctx, s2, NULL, f->input);
    CHECK(same_bytes(fake, y));
    if (fake && y && !same_bytes(fake, y))
        qp_test_failf(ctx, __FILE__, __LINE__, "%s: y[0] %g, fake %g",
                      scheme ? scheme : "recipe", (double)((float *)y->data)[0],
                      (double)((float *)fake->data)[0]);
    qp_tensor_free(fake);
    qp_tensor_free(y);
    qp_session_free(s2);
    qp_splan_free(plan);
    qp_recipe_free(r);
    qp_session_free(s);
}

QP_TEST(export_qdq_places_quantize_static_tensors)
{
    struct fixture f;
    REQUIRE(setup(ctx, &f, 11));
    struct qp_error err;
    struct qp_session *s;
    struct qp_recipe *r;
    struct qp_splan *plan;
    REQUIRE(ex_plan(ctx, f.model, f.calib, "w8c+a8tz", NULL, &s, &r, &plan));
    const struct qp_qplan *p = qp_splan_qplan(plan);
    const struct qp_graph *g = qp_session_graph(s);
    struct qp_onnx_model *m;
    struct qp_export_qdq_stats st;
    struct qp_export_qdq_opts o = {.convert = true, .note = "scheme w8c+a8tz"};
    REQUIRE_OK(qp_export_qdq_build(s, p, &o, &m, &st, &err), &err);
    const struct qp_onnx_graph *tg = m->graph;
    CHECK_INT(st.opset, 13); /* per-channel axis from an opset-11 model */
    CHECK_INT(qp_onnx_opset_version(m, ""), 13);
    CHECK(m->ir_version >= 7);
    CHECK_STR(m->producer_name, "qprobe");
    CHECK_INT(st.weights, 3);  /* conv1, conv2 (BN folded), mm */
    CHECK_INT(st.biases, 2);   /* conv1's, and the one BN folding makes */
    /* x, c1, r1, n2, a1, p, f, m, b, y: every float activation */
    CHECK_INT(st.activations, 10);
    CHECK_INT(st.converts, 0);
    CHECK_INT(count_op(tg, "QuantizeLinear"), 10);
    CHECK_INT(count_op(tg, "DequantizeLinear"), 10 + 3 + 2);
    for (int i = 0; i < g->n_nodes; i++) {
        const struct qp_qnode *q = &p->n[i];
        if (!q->wq)
            continue;
        const char *wname = g->values[g->nodes[i].in[1]].name;
        char nm[512];
        snprintf(nm, sizeof nm, "%s_quantized", wname);
        const struct qp_tensor *w = qp_onnx_graph_initializer(tg, nm);
        REQUIRE(w);
        CHECK_INT(w->dtype, QP_DTYPE_I8);
        CHECK(w->nbytes == q->w_q->nbytes && !memcmp(w->data, q->w_q->data, w->nbytes));
        snprintf(nm, sizeof nm, "%s_scale", wname);
        const struct qp_tensor *sc = qp_onnx_graph_initializer(tg, nm);
        REQUIRE(sc);
        CHECK_INT(qp_tensor_numel(sc), q->out_c);
        CHECK(!memcmp(sc->data, q->w_q->qp->scale, q->out_c * sizeof(float)));
        snprintf(nm, sizeof nm, "%s_zero_point", wname);
        const struct qp_tensor *zp = qp_onnx_graph_initializer(tg, nm);
        REQUIRE(zp);
        CHECK_INT(zp->dtype, QP_DTYPE_I8);
        snprintf(nm, sizeof nm, "%s_DequantizeLinear", wname);
        const struct qp_onnx_node *dq = find_node(tg, nm);
        REQUIRE(dq);
        int64_t axis = -5;
        CHECK_OK(qp_onnx_attr_int(dq, "axis", -5, &axis, &err), &err);
        /* Conv [O, I, kh, kw] along 0, MatMul [K, N] along 1 */
        CHECK_INT(axis, !strcmp(g->nodes[i].op_type, "MatMul") ? 1 : 0);
        if (!q->b_int || g->nodes[i].n_in < 3) /* MatMul: no bias input */
            continue;
        const char *bname = g->values[g->nodes[i].in[2]].name;
        snprintf(nm, sizeof nm, "%s_quantized", bname);
        const struct qp_tensor *b = qp_onnx_graph_initializer(tg, nm);
        REQUIRE(b);
        CHECK_INT(b->dtype, QP_DTYPE_I32);
        CHECK(!memcmp(b->data, q->b_int, q->out_c * sizeof(int32_t)));
        snprintf(nm, sizeof nm, "%s_quantized_scale", bname);
        const struct qp_tensor *bs = qp_onnx_graph_initializer(tg, nm);
        REQUIRE(bs);
        float s_in = p->v[g->nodes[i].in[0]].scale;
        for (size_t c = 0; c < q->out_c; c++) /* float32, as quantize_static */
            CHECK(((const float *)bs->data)[c] == s_in * q->w_q->qp->scale[c]);
    }
    /* activation pairs: names, the plan's parameters, uint8 for 'z' */
    int pairs = 0;
    for (int v = 0; v < g->n_values; v++) {
        if (!p->v[v].quant)
            continue;
        const char *name = g->values[v].name;
        char nm[512];
        snprintf(nm, sizeof nm, "%s_QuantizeLinear", name);
        const struct qp_onnx_node *qn = find_node(tg, nm);
        REQUIRE(qn);
        pairs++;
        snprintf(nm, sizeof nm, "%s_scale", name);
        CHECK_STR(qn->inputs[1], nm);
        const struct qp_tensor *sc = qp_onnx_graph_initializer(tg, nm);
        const struct qp_tensor *zp = qp_onnx_graph_initializer(tg, qn->inputs[2]);
        REQUIRE(sc && zp);
        CHECK(*(const float *)sc->data == p->v[v].scale);
        CHECK_INT(zp->dtype, QP_DTYPE_U8);
        CHECK_INT(*(const uint8_t *)zp->data, p->v[v].zp);
        snprintf(nm, sizeof nm, "%s_QuantizeLinear_Output", name);
        CHECK_STR(qn->outputs[0], nm);
        snprintf(nm, sizeof nm, "%s_DequantizeLinear", name);
        const struct qp_onnx_node *dn = find_node(tg, nm);
        REQUIRE(dn);
        bool out = g->values[v].is_output;
        snprintf(nm, sizeof nm, out ? "%s" : "%s_DequantizeLinear_Output", name);
        CHECK_STR(dn->outputs[0], nm);
        snprintf(nm, sizeof nm, out ? "%s_QuantizeLinear_Input" : "%s", name);
        CHECK_STR(qn->inputs[0], nm);
    }
    CHECK_INT(pairs, 10);
    /* consumers read the DQ outputs: the MatMul reads f's and the weight's */
    const struct qp_onnx_node *mm = find_node(tg, "mm");
    REQUIRE(mm);
    CHECK_STR(mm->inputs[0], "f_DequantizeLinear_Output");
    CHECK_STR(mm->inputs[1], "fc.w_DequantizeLinear_Output");
    CHECK_STR(tg->outputs[0].name, "y");
    CHECK_STR(tg->outputs[0].type.dims[0].param, "N");
    CHECK_STR(tg->inputs[0].type.dims[0].param, "N");
    CHECK(qp_onnx_graph_initializer(tg, "fc.w") == NULL); /* only its integers */
    qp_onnx_model_free(m);
    qp_splan_free(plan);
    qp_session_free(s);
}

QP_TEST(export_qdq_fp32_run_is_the_fake_mode)
{
    struct fixture f;
    REQUIRE(setup(ctx, &f, 11));
    struct qp_export_qdq_stats st;
    char out[1024];
    static const char *const schemes[] = {"w8c+a8tz", "w8c+a8t", "w8t+a8tz",
                                          "w8cz+a8tz", "w4c+a8tz", "w8c+a16tz",
                                          "w8c", "w7c+a8tz", "w5c+a8tz"};
    for (size_t k = 0; k < sizeof schemes / sizeof schemes[0]; k++) {
        snprintf(out, sizeof out, "%s/e%zu.onnx", qp_test_tmpdir(ctx), k);
        check_fake_equal(ctx, &f, schemes[k], NULL, true, out, &st);
        bool wide = strstr(schemes[k], "w4") || strstr(schemes[k], "a16");
        CHECK_INT(st.opset, wide ? 21 : strstr(schemes[k], "w8t") ? 11 : 13);
        CHECK_INT(st.activations, strchr(schemes[k], '+') ? 10 : 0);
        /* int8 weights on uint8 inputs: 8 bits reach +-127, 7 only 64 */
        bool wide8 = !strcmp(schemes[k], "w8c+a8tz") || !strcmp(schemes[k], "w8t+a8tz");
        CHECK_INT(st.u8s8_wide, wide8 ? st.weights : 0);
    }
    /* int4 weights are packed INT4 initializers */
    struct qp_error err;
    struct qp_onnx_model *m;
    snprintf(out, sizeof out, "%s/e4.onnx", qp_test_tmpdir(ctx));
    REQUIRE_OK(qp_onnx_load(out, &m, &err), &err);
    const struct qp_tensor *w = qp_onnx_graph_initializer(m->graph, "conv1.w_quantized");
    const struct qp_tensor *z = qp_onnx_graph_initializer(m->graph, "conv1.w_zero_point");
    REQUIRE(w && z);
    CHECK_INT(w->dtype, QP_DTYPE_I4);
    CHECK_INT(w->nbytes, 6 * 4 * 9 / 2);
    CHECK_INT(z->dtype, QP_DTYPE_I4);
    qp_onnx_model_free(m);
    /* 7-bit weights are INT8 initializers on [-64, 63] (ONNX Runtime's
     * reduce_range), each channel's largest at 63 steps */
    snprintf(out, sizeof out, "%s/e7.onnx", qp_test_tmpdir(ctx));
    REQUIRE_OK(qp_onnx_load(out, &m, &err), &err);
    w = qp_onnx_graph_initializer(m->graph, "conv1.w_quantized");
    REQUIRE(w);
    CHECK_INT(w->dtype, QP_DTYPE_I8);
    CHECK_INT(w->nbytes, 6 * 4 * 9);
    int lo = 0, hi = 0;
    for (size_t i = 0; w->dtype == QP_DTYPE_I8 && i < w->nbytes; i++) {
        int v = ((const int8_t *)w->data)[i];
        lo = v < lo ? v : lo;
        hi = v > hi ? v : hi;
    }
    CHECK(lo >= -64);
    CHECK_INT(lo < -hi ? -lo : hi, 63);
    qp_onnx_model_free(m);
}

QP_TEST(export_qdq_converts_at_precision_boundaries)
{
    struct fixture f;
    REQUIRE(setup(ctx, &f, 11));
    /* conv2 (BN folded) computes at 16 bits: its input r1 (8-bit) is
     * converted up for it; its output n2 is read by add1 (8-bit) through a
     * convert down; r1 also feeds add1 at its own 8 bits */
    const char *recipe = "{\"qprobe_recipe\": 1, \"default\": \"w8c+a8tz\", "
                         "\"layers\": {\"conv2.w\": \"w8c+a16tz\"}}";
    char out[1024];
    struct qp_export_qdq_stats st;
    snprintf(out, sizeof out, "%s/mix.onnx", qp_test_tmpdir(ctx));
    struct qp_error err;
    struct qp_session *s;
    struct qp_recipe *r;
    struct qp_splan *plan;
    REQUIRE(ex_plan(ctx, f.model, f.calib, NULL, recipe, &s, &r, &plan));
    struct qp_export_qdq_opts o = {.convert = true};
    struct qp_onnx_model *m;
    REQUIRE_OK(qp_export_qdq_build(s, qp_splan_qplan(plan), &o, &m, &st, &err), &err);
    CHECK_INT(st.converts, 2);
    CHECK_INT(st.opset, 21);
    const struct qp_onnx_node *up = find_node(m->graph, "r1_convert_QuantizeLinear");
    const struct qp_onnx_node *down = find_node(m->graph, "n2_convert_QuantizeLinear");
    REQUIRE(up && down);
    CHECK_STR(up->inputs[0], "r1_DequantizeLinear_Output");
    const struct qp_tensor *uz = qp_onnx_graph_initializer(m->graph, up->inputs[2]);
    const struct qp_tensor *dz = qp_onnx_graph_initializer(m->graph, down->inputs[2]);
    REQUIRE(uz && dz);
    CHECK_INT(uz->dtype, QP_DTYPE_U16);
    CHECK_INT(dz->dtype, QP_DTYPE_U8);
    /* the up-convert covers r1's 8-bit range at 16 bits: 257 steps a step */
    const struct qp_qplan *p = qp_splan_qplan(plan);
    int r1 = qp_graph_find(qp_session_graph(s), "r1");
    const struct qp_tensor *us = qp_onnx_graph_initializer(m->graph, up->inputs[1]);
    REQUIRE(r1 >= 0 && us);
    CHECK_NEAR(*(const float *)us->data * 257.0f, p->v[r1].scale, 1e-6 * p->v[r1].scale);
    /* conv2 reads the converted copy, add1 r1's own */
    CHECK_STR(find_node(m->graph, "add1")->inputs[1], "r1_DequantizeLinear_Output");
    CHECK_STR(find_node(m->graph, "add1")->inputs[0],
              "n2_convert_DequantizeLinear_Output");
    qp_onnx_model_free(m);
    qp_splan_free(plan);
    qp_recipe_free(r);
    qp_session_free(s);
    /* without converts the export is exactly the fake mode */
    check_fake_equal(ctx, &f, NULL, recipe, false, out, &st);
    CHECK_INT(st.converts, 0);
}

/* One refused export: the message names the tensor; no file appears. */
static void refused(struct qp_test_ctx *ctx, const struct fixture *f,
                    const char *scheme, const char *recipe, const char *needle)
{
    struct qp_error err;
    struct qp_session *s;
    struct qp_recipe *r;
    struct qp_splan *plan;
    char out[1024];
    snprintf(out, sizeof out, "%s/refused.onnx", qp_test_tmpdir(ctx));
    REQUIRE(ex_plan(ctx, f->model, f->calib, scheme, recipe, &s, &r, &plan));
    CHECK_FAILS(qp_export_qdq(s, qp_splan_qplan(plan), out, NULL, NULL, &err),
                QP_E_UNSUPPORTED, &err, needle);
    struct stat sb;
    CHECK(stat(out, &sb) != 0);
    qp_splan_free(plan);
    qp_recipe_free(r);
    qp_session_free(s);
}

QP_TEST(export_qdq_refuses_what_onnx_cannot_hold)
{
    struct fixture f;
    REQUIRE(setup(ctx, &f, 11));
    refused(ctx, &f, "w3c+a8tz", NULL, "tensor 'conv1.w': w3c has 3-bit weights; "
            "ONNX's smallest integer type has 4");
    refused(ctx, &f, "w4g16+a8tz", NULL, "tensor 'conv1.w': w4g16 is group-wise");
    refused(ctx, &f, "w8c+a8d", NULL, "activation 'x': a8d is dynamic");
    refused(ctx, &f, "w8c+a4tz", NULL, "activation 'x': a4tz has 4 bits");
    refused(ctx, &f, "w8c+a8tn", NULL, "activation 'x': a8tn is narrow range");
    /* a model that is already QDQ */
    struct qp_error err;
    struct qp_session *s, *s2;
    struct qp_recipe *r;
    struct qp_splan *plan, *plan2;
    char q[1024];
    snprintf(q, sizeof q, "%s/q.onnx", qp_test_tmpdir(ctx));
    REQUIRE(ex_plan(ctx, f.model, f.calib, "w8c+a8tz", NULL, &s, &r, &plan));
    REQUIRE_OK(qp_export_qdq(s, qp_splan_qplan(plan), q, NULL, NULL, &err), &err);
    REQUIRE(ex_plan(ctx, q, f.calib, "w8c+a8tz", NULL, &s2, &r, &plan2));
    CHECK_FAILS(qp_export_qdq(s2, qp_splan_qplan(plan2), q, NULL, NULL, &err),
                QP_E_UNSUPPORTED, &err, "already carries its own quantization");
    qp_splan_free(plan2);
    qp_session_free(s2);
    qp_splan_free(plan);
    qp_session_free(s);
}

QP_TEST(export_qdq_external_data)
{
    struct fixture f;
    REQUIRE(setup(ctx, &f, 13));
    struct qp_error err;
    struct qp_session *s, *s2;
    struct qp_recipe *r;
    struct qp_splan *plan;
    REQUIRE(ex_plan(ctx, f.model, f.calib, "w8c+a8tz", NULL, &s, &r, &plan));
    char out[1024];
    snprintf(out, sizeof out, "%s/ext.onnx", qp_test_tmpdir(ctx));
    struct qp_export_qdq_opts o = {.convert = true,
                                   .save = {.external = true, .ext_min = 20}};
    struct qp_export_qdq_stats st;
    REQUIRE_OK(qp_export_qdq(s, qp_splan_qplan(plan), out, &o, &st, &err), &err);
    CHECK(st.save.external);
    /* conv1.w_quantized (216 bytes) and the scales and biases of 24 */
    CHECK(st.save.external_tensors >= 2);
    CHECK(st.save.external_bytes >= 4096 + 24);
    struct qp_tensor *fake = run(ctx, s, plan, f.input);
    REQUIRE_OK(qp_session_open(out, NULL, &s2, &err), &err);
    struct qp_tensor *y = run(ctx, s2, NULL, f.input);
    CHECK(same_bytes(fake, y));
    qp_tensor_free(fake);
    qp_tensor_free(y);
    qp_session_free(s2);
    qp_splan_free(plan);
    qp_session_free(s);
}

/* An opset-9 model whose Clip, Slice, Squeeze / Unsqueeze, ReduceMean and
 * Softmax use the attribute forms: exported at opset 13, with constant
 * inputs, it runs as the fake mode of the original. */
QP_TEST(export_qdq_upgrades_opset_9_nodes)
{
    struct qp_error err;
    struct qp_onnx_model *m;
    char model[1024], calib[1024], xdir[1024], input[1024], out[1024];
    const char *tmp = qp_test_tmpdir(ctx);
    snprintf(model, sizeof model, "%s/old.onnx", tmp);
    snprintf(calib, sizeof calib, "%s/calib", tmp);
    snprintf(xdir, sizeof xdir, "%s/x", tmp);
    snprintf(input, sizeof input, "%s/x/in0.npy", tmp);
    snprintf(out, sizeof out, "%s/new.onnx", tmp);
    REQUIRE_OK(qp_onnx_model_new(4, 9, "old", &m, &err), &err);
    struct qp_onnx_graph *g = m->graph;
    struct qp_onnx_dim xd[4] = {{1, NULL}, {4, NULL}, {8, NULL}, {8, NULL}};
    int64_t w1[4] = {6, 4, 3, 3}, starts[1] = {1}, ends[1] = {7}, axes2[1] = {2};
    int64_t ax23[2] = {2, 3}, ax0[1] = {0};
    struct qp_onnx_node *n;
    bool ok = !qp_onnx_graph_add_value(g, QP_ONNX_LIST_INPUT, "x", 1, 4, xd, &err) &&
              ex_init(g, "w", 4, w1, 0.4f, 1, 0, &err) &&
              ex_node(g, "Conv", "conv", "x,w", "c", NULL, &err) &&
              ex_node(g, "Clip", "clip", "c", "k", &n, &err) &&
              !qp_onnx_node_add_float(n, "min", -0.5f, &err) &&
              !qp_onnx_node_add_float(n, "max", 1.5f, &err) &&
              ex_node(g, "Slice", "slice", "k", "s", &n, &err) &&
              !qp_onnx_node_add_ints(n, "starts", starts, 1, &err) &&
              !qp_onnx_node_add_ints(n, "ends", ends, 1, &err) &&
              !qp_onnx_node_add_ints(n, "axes", axes2, 1, &err) &&
              ex_node(g, "ReduceMean", "mean", "s", "r", &n, &err) &&
              !qp_onnx_node_add_ints(n, "axes", ax23, 2, &err) &&
              ex_node(g, "Squeeze", "sq", "r", "q", &n, &err) &&
              !qp_onnx_node_add_ints(n, "axes", ax23, 2, &err) &&
              ex_node(g, "Softmax", "sm", "q", "p", &n, &err) &&
              ex_node(g, "Unsqueeze", "unsq", "p", "y", &n, &err) &&
              !qp_onnx_node_add_ints(n, "axes", ax0, 1, &err) &&
              !qp_onnx_graph_add_value(g, QP_ONNX_LIST_OUTPUT, "y", 1, -1, NULL, &err) &&
              !qp_onnx_save(m, model, NULL, NULL, &err);
    qp_onnx_model_free(m);
    REQUIRE_OK(!ok, &err);
    REQUIRE(ex_inputs(ctx, calib, 2, 5) && ex_inputs(ctx, xdir, 1, 6));
    struct qp_session *s, *s2;
    struct qp_recipe *r;
    struct qp_splan *plan;
    REQUIRE(ex_plan(ctx, model, calib, "w8c+a8tz", NULL, &s, &r, &plan));
    struct qp_export_qdq_stats st;
    REQUIRE_OK(qp_export_qdq(s, qp_splan_qplan(plan), out, NULL, &st, &err), &err);
    CHECK_INT(st.opset, 13);
    REQUIRE_OK(qp_onnx_load(out, &m, &err), &err);
    const struct qp_onnx_node *clip = find_node(m->graph, "clip");
    const struct qp_onnx_node *slice = find_node(m->graph, "slice");
    const struct qp_onnx_node *sq = find_node(m->graph, "sq");
    REQUIRE(clip && slice && sq);
    CHECK_INT(clip->n_inputs, 3);
    CHECK_INT(clip->n_attrs, 0);
    const struct qp_tensor *lo = qp_onnx_graph_initializer(m->graph, clip->inputs[1]);
    REQUIRE(lo);
    CHECK(*(const float *)lo->data == -0.5f);
    CHECK_INT(slice->n_inputs, 4);
    const struct qp_tensor *ax = qp_onnx_graph_initializer(m->graph, slice->inputs[3]);
    REQUIRE(ax);
    CHECK_INT(((const int64_t *)ax->data)[0], 2);
    CHECK_INT(sq->n_inputs, 2);
    CHECK_INT(sq->n_attrs, 0);
    qp_onnx_model_free(m);
    struct qp_tensor *fake = run(ctx, s, plan, input);
    REQUIRE_OK(qp_session_open(out, NULL, &s2, &err), &err);
    struct qp_tensor *y = run(ctx, s2, NULL, input);
    CHECK(same_bytes(fake, y));
    CHECK(y && y->ndim == 3 && y->shape[0] == 1 && y->shape[1] == 1 && y->shape[2] == 6);
    qp_tensor_free(fake);
    qp_tensor_free(y);
    qp_session_free(s2);
    qp_splan_free(plan);
    qp_session_free(s);
    /* weights only, without calibration inputs: the ranks the Softmax
     * conversion needs come from the declared input shapes */
    REQUIRE(ex_plan(ctx, model, NULL, "w8c", NULL, &s, &r, &plan));
    REQUIRE_OK(qp_export_qdq(s, qp_splan_qplan(plan), out, NULL, &st, &err), &err);
    CHECK_INT(st.activations, 0);
    CHECK_INT(st.weights, 1);
    fake = run(ctx, s, plan, input);
    REQUIRE_OK(qp_session_open(out, NULL, &s2, &err), &err);
    y = run(ctx, s2, NULL, input);
    CHECK(same_bytes(fake, y));
    qp_tensor_free(fake);
    qp_tensor_free(y);
    qp_session_free(s2);
    qp_splan_free(plan);
    qp_session_free(s);
}
