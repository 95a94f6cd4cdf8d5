/* tests/unit/test-gptq-graph.c: GPTQ over a model's layers
 * (model/gptq-graph.h) on the small model of gptq-graph-util.h: the
 * output error it reports is the reconstruction error of the layer on
 * the inputs the quantized model computes (recomputed here by running
 * the layer), never above RTN's on the same grid; identity-like inputs
 * give RTN; act-order's g_idx reads back and equals a direct GPTQ of the
 * same inputs; static groups give RTN's scales. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/exec.h"
#include "quant/gptq-layer.h"
#include "quant/pack.h"
#include "quant/rtn.h"
#include "tests/test.h"
#include "tests/unit/gptq-graph-util.h"
#include "tests/unit/gptq-test-util.h"
#include "tests/unit/test-graph-util.h"

#define SETS 3

static const char *const layer_input[GG_LAYERS] = {"x", "ar", "bt", "cf"};

/* The inputs of every layer in every calibration set, as a run of plan p
 * (NULL: fp32) computes them. */
struct inputs {
    struct qp_tensor *x[GG_LAYERS][SETS];
    int set;
};

static enum qp_status keep_input(void *ctx, const struct qp_graph *g, int v,
                                 const struct qp_tensor *t, struct qp_error *err)
{
    struct inputs *in = ctx;
    for (int l = 0; l < GG_LAYERS; l++)
        if (!strcmp(g->values[v].name, layer_input[l]))
            return qp_tensor_clone(t, &in->x[l][in->set], err);
    return QP_OK;
}

static bool capture_inputs(struct qp_test_ctx *ctx, struct qp_session *s,
                           const struct qp_splan *p, struct inputs *in)
{
    struct qp_error err;
    const struct qp_graph *g = qp_session_graph(s);
    memset(in, 0, sizeof *in);
    struct qp_session_run_opts ro = {.capture = "*", .on_capture = keep_input,
                                     .capture_ctx = in, .no_fusion = true};
    for (in->set = 0; in->set < SETS; in->set++) {
        struct qp_tensor *out[1] = {NULL};
        enum qp_status st = qp_session_run(s, p, (const struct qp_tensor *const *)
                                           qp_session_calib_set(s, (size_t)in->set),
                                           &ro, out, NULL, &err);
        qp_tensor_free(out[0]);
        if (st) {
            qp_test_failf(ctx, __FILE__, __LINE__, "run: %s", err.msg);
            return false;
        }
    }
    (void)g;
    return true;
}

static void inputs_free(struct inputs *in)
{
    for (int l = 0; l < GG_LAYERS; l++)
        for (int k = 0; k < SETS; k++)
            qp_tensor_free(in->x[l][k]);
}

/* ||layer(X, W) - layer(X, What)||^2 / ||layer(X, W)||^2 over the sets,
 * running the node itself on the captured inputs. */
static double reconstruction(const struct qp_graph *g, int node,
                             struct qp_tensor *const *x,
                             const struct qp_tensor *what)
{
    const struct qp_tensor *w = g->values[g->nodes[node].in[1]].konst;
    double num = 0, den = 0;
    struct qp_error err;
    for (int k = 0; k < SETS; k++) {
        const struct qp_tensor *in[2] = {x[k], w}, *inq[2] = {x[k], what};
        struct qp_tensor *y[1] = {NULL}, *yq[1] = {NULL};
        if (qp_exec_node(g, node, in, NULL, NULL, y, &err) ||
            qp_exec_node(g, node, inq, NULL, NULL, yq, &err))
            return NAN;
        const float *a = y[0]->data, *b = yq[0]->data;
        for (size_t i = 0; i < qp_tensor_numel(y[0]); i++) {
            num += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
            den += (double)a[i] * a[i];
        }
        qp_tensor_free(y[0]);
        qp_tensor_free(yq[0]);
    }
    return num / den;
}

/* RTN of layer l's weight on the grid of scheme string s, as the plan
 * would round it (half away, the graph's layout). */
static struct qp_tensor *rtn_of(const struct qp_graph *g, int l, const char *s)
{
    int i = gg_node(g, l);
    enum qp_wlayout lay;
    qp_node_weighted(g, i, &lay);
    struct qp_wscheme ws = gt_scheme(s);
    ws.algo = QP_WALGO_RTN;
    ws.gptq = (struct qp_gptq_options){0};
    struct qp_wquant_opts o = {QP_ROUND_HALF_AWAY, lay};
    struct qp_tensor *q = NULL;
    struct qp_error err;
    qp_rtn_quantize(g->values[g->nodes[i].in[1]].konst, &ws, &o, &q, &err);
    return q;
}

static struct qp_tensor *dequant(const struct qp_tensor *q)
{
    struct qp_tensor *f = NULL;
    struct qp_error err;
    if (q && !qp_tensor_new(q->name, QP_DTYPE_F32, q->ndim, q->shape, &f, &err))
        qp_tensor_read_f32(q, 0, qp_tensor_numel(q), f->data);
    return f;
}

QP_TEST(gptq_graph_out_err_is_the_reconstruction_on_sequential_inputs)
{
    char *path = gg_model(ctx);
    for (int fp32 = 0; fp32 < 2; fp32++) {
        struct qp_session *s = gg_session(ctx, path, SETS);
        REQUIRE(s);
        struct gg_log log;
        gg_log_attach(&log, s, fp32);
        struct qp_splan *p = gg_plan(ctx, s, "w4g3@gptq", QP_MODE_FAKE);
        struct inputs in;
        /* sequential: the inputs the weight-quantized model computes;
         * fp32 inputs: the float model's */
        if (p && capture_inputs(ctx, s, fp32 ? NULL : p, &in)) {
            const struct qp_graph *g = qp_session_graph(s);
            for (int l = 0; l < GG_LAYERS; l++) {
                CHECK_INT(log.made[l], 1);
                double e = reconstruction(g, gg_node(g, l), in.x[l], gg_fake(p, l));
                CHECK_NEAR(log.out_err[l], e, 1e-4 * e);
                struct qp_tensor *rq = rtn_of(g, l, "w4g3"), *rf = dequant(rq);
                double er = reconstruction(g, gg_node(g, l), in.x[l], rf);
                CHECK_NEAR(log.rtn_out_err[l], er, 1e-4 * er);
                if (!(log.out_err[l] < log.rtn_out_err[l]))
                    qp_test_failf(ctx, __FILE__, __LINE__, "layer %d: %g vs RTN %g",
                                  l, log.out_err[l], log.rtn_out_err[l]);
                qp_tensor_free(rq);
                qp_tensor_free(rf);
            }
            inputs_free(&in);
        }
        qp_splan_free(p);
        qp_session_free(s);
    }
    free(path);
}

QP_TEST(gptq_graph_error_never_exceeds_rtn_on_the_calibration_data)
{
    static const char *const schemes[] = {
        "w4g3@gptq", "w3c@gptq", "w4g4z@gptq:act", "w2g5@gptq:act,static",
        "w4g64@gptq", "w8c@gptq:blk2", "w3g2z@gptq:mse"};
    char *path = gg_model(ctx);
    struct qp_session *s = gg_session(ctx, path, SETS);
    REQUIRE(s);
    struct gg_log log;
    gg_log_attach(&log, s, false);
    for (size_t k = 0; k < sizeof schemes / sizeof schemes[0]; k++) {
        struct qp_splan *p = gg_plan(ctx, s, schemes[k], QP_MODE_FAKE);
        for (int l = 0; p && l < GG_LAYERS; l++) {
            if (!(log.out_err[l] <= log.rtn_out_err[l]))
                qp_test_failf(ctx, __FILE__, __LINE__, "%s layer %d: GPTQ %g, "
                              "RTN %g", schemes[k], l, log.out_err[l],
                              log.rtn_out_err[l]);
            CHECK(log.out_err[l] > 0 && isfinite(log.out_err[l]));
        }
        qp_splan_free(p);
    }
    qp_session_free(s);
    free(path);
}

/* x [K, K] -> MatMul W1 [K, 6]; x2 [1, K, 1, K] -> Conv W2 [6, K, 1, 1]:
 * with x = diag(d) and x2's positions one-hot, both Hessians are
 * diagonal. */
#define K 12
static struct qp_session *diagonal_session(struct qp_test_ctx *ctx)
{
    struct qp_graph *g;
    struct qp_error err;
    uint64_t seed = 5;
    if (qp_graph_new("diag", &g, &err))
        return NULL;
    struct qp_tensor *w1 = TF32("W1", 2, SHAPE(K, 6), NULL);
    struct qp_tensor *w2 = TF32("W2", 4, SHAPE(6, K, 1, 1), NULL);
    for (int i = 0; i < 6 * K; i++) {
        ((float *)w1->data)[i] = (float)gt_normal(&seed);
        ((float *)w2->data)[i] = (float)gt_normal(&seed);
    }
    const char *mi[2] = {"x", "W1"}, *mo[1] = {"y1"}, *ci[2] = {"x2", "W2"},
               *co[1] = {"y2"};
    bool ok = !qp_graph_add_input(g, "x", QP_DTYPE_F32, 2, SHAPE(K, K), &err) &&
              !qp_graph_add_input(g, "x2", QP_DTYPE_F32, 4, SHAPE(1, K, 1, K), &err) &&
              !qp_graph_add_const(g, w1, &err) && !qp_graph_add_const(g, w2, &err) &&
              !qp_graph_add_node(g, "MatMul", "", 13, "mm", 2, mi, 1, mo, NULL, &err) &&
              !qp_graph_add_node(g, "Conv", "", 13, "conv", 2, ci, 1, co, NULL, &err) &&
              !qp_graph_add_output(g, "y1", &err) && !qp_graph_add_output(g, "y2", &err) &&
              !qp_graph_finalize(g, &err);
    struct qp_session *s = NULL;
    if (!ok || qp_session_new(g, "diag", &s, &err)) {
        qp_test_failf(ctx, __FILE__, __LINE__, "graph: %s", err.msg);
        return NULL;
    }
    struct qp_tensor **feed = calloc(2, sizeof *feed);
    feed[0] = TF32("x", 2, SHAPE(K, K), NULL);
    feed[1] = TF32("x2", 4, SHAPE(1, K, 1, K), NULL);
    memset(feed[0]->data, 0, feed[0]->nbytes);
    memset(feed[1]->data, 0, feed[1]->nbytes);
    for (int i = 0; i < K; i++) {
        ((float *)feed[0]->data)[i * K + i] = 0.5f + (float)((i * 7) % K);
        ((float *)feed[1]->data)[i * K + i] = 1.0f;
    }
    if (qp_session_add_calib_feed(s, feed, &err)) {
        qp_session_free(s);
        return NULL;
    }
    return s;
}

QP_TEST(gptq_graph_identity_like_inputs_give_rtn)
{
    /* refit groups on weights no error reaches are RTN's groups; act-order
     * without groups only reorders independent columns */
    static const char *const schemes[] = {"w4g4@gptq", "w3c@gptq:act",
                                          "w4g5z@gptq:act,static", "w2t@gptq"};
    struct qp_session *s = diagonal_session(ctx);
    REQUIRE(s);
    const struct qp_graph *g = qp_session_graph(s);
    for (size_t k = 0; k < sizeof schemes / sizeof schemes[0]; k++) {
        struct qp_splan *p = gg_plan(ctx, s, schemes[k], QP_MODE_FAKE);
        for (int i = 0; p && i < g->n_nodes; i++) {
            enum qp_wlayout lay;
            REQUIRE(qp_node_weighted(g, i, &lay));
            struct qp_wscheme ws = gt_scheme(schemes[k]);
            ws.algo = QP_WALGO_RTN;
            ws.gptq = (struct qp_gptq_options){0};
            struct qp_wquant_opts o = {QP_ROUND_HALF_AWAY, lay};
            struct qp_tensor *q = NULL, *f;
            struct qp_error err;
            REQUIRE_OK(qp_rtn_quantize(g->values[g->nodes[i].in[1]].konst, &ws,
                                       &o, &q, &err), &err);
            f = dequant(q);
            if (!gg_same(qp_splan_qplan(p)->n[i].w_fake, f))
                qp_test_failf(ctx, __FILE__, __LINE__, "%s: node %d differs "
                              "from RTN", schemes[k], i);
            qp_tensor_free(q);
            qp_tensor_free(f);
        }
        qp_splan_free(p);
    }
    qp_session_free(s);
}

/* GPTQ of layer l's 2-D weight [rows, cols] (transposed for [K, N]) run
 * directly on a Hessian made here from the captured inputs. */
static bool direct(struct qp_test_ctx *ctx, const struct qp_graph *g, int l,
                   struct qp_tensor *const *x, const char *scheme,
                   struct qp_gptq_result *res)
{
    const struct qp_tensor *w = g->values[g->nodes[gg_node(g, l)].in[1]].konst;
    bool t = l == GG_C;
    size_t rows = (size_t)w->shape[t ? 1 : 0], cols = (size_t)w->shape[t ? 0 : 1];
    struct qp_tensor *w2 = TF32("w", 2, SHAPE((int64_t)rows, (int64_t)cols), NULL);
    for (size_t r = 0; r < rows; r++)
        for (size_t c = 0; c < cols; c++)
            ((float *)w2->data)[r * cols + c] =
                ((const float *)w->data)[t ? c * rows + r : r * cols + c];
    struct qp_hessian *h = NULL;
    struct qp_error err;
    enum qp_status st = qp_hessian_new("direct", cols, NULL, &h, &err);
    for (int k = 0; !st && k < SETS; k++)
        st = qp_hessian_add(h, x[k]->data, qp_tensor_numel(x[k]) / cols, cols, &err);
    struct qp_wscheme ws = gt_scheme(scheme);
    struct qp_gptq_opts o = {&ws, QP_ROUND_HALF_AWAY, "direct", NULL};
    if (!st)
        st = qp_gptq_quantize(w2, h, &o, res, &err);
    if (st)
        qp_test_failf(ctx, __FILE__, __LINE__, "direct GPTQ: %s", err.msg);
    qp_hessian_free(h);
    qp_tensor_free(w2);
    return !st;
}

QP_TEST(gptq_graph_act_order_gidx_unpermutes_and_reads_back)
{
    char *path = gg_model(ctx);
    struct qp_session *s = gg_session(ctx, path, SETS);
    REQUIRE(s);
    struct gg_log log;
    gg_log_attach(&log, s, true);
    const char *scheme = "w4g3@gptq:act";
    struct qp_splan *p = gg_plan(ctx, s, scheme, QP_MODE_FAKE);
    struct inputs in;
    REQUIRE(p && capture_inputs(ctx, s, NULL, &in));
    const struct qp_graph *g = qp_session_graph(s);
    const struct qp_qplan *q = qp_splan_qplan(p);
    struct qp_error err;
    /* the weights with their g_idx, as the cache holds them */
    const struct qp_wquant *w[16] = {0};
    struct qp_qassign *a;
    struct qp_scheme sc;
    REQUIRE(g->n_nodes <= 16);
    REQUIRE_OK(qp_scheme_parse(scheme, &sc, NULL, &err), &err);
    REQUIRE_OK(qp_qassign_uniform(g, &sc, &a, &err), &err);
    REQUIRE_OK(qp_session_gptq(s, a, QP_ROUND_HALF_AWAY, NULL, w, &err), &err);
    qp_qassign_free(a);
    for (int m = 0; m < GG_LAYERS; m++)
        CHECK_INT(log.made[m], 1); /* found in the cache, not made again */
    for (int l = 0; l < GG_LAYERS; l++) {
        int i = gg_node(g, l);
        const struct qp_tensor *wq = q->n[i].w_q, *wf = q->n[i].w_fake;
        enum qp_wlayout lay;
        qp_node_weighted(g, i, &lay);
        REQUIRE(w[i] && w[i]->q == wq && w[i]->g_idx);
        float *dq = malloc(qp_tensor_numel(wq) * sizeof *dq);
        REQUIRE_OK(qp_gptq_gidx_dequantize(wq, w[i]->g_idx, lay, dq, &err), &err);
        CHECK(!memcmp(dq, wf->data, wf->nbytes));
        /* act-order moved columns across groups: q's own parameters are
         * not the reading */
        struct qp_tensor *own = dequant(wq);
        CHECK(memcmp(own->data, wf->data, wf->nbytes) != 0);
        qp_tensor_free(own);
        free(dq);
        if (l < GG_C)
            continue;
        /* the linear layers against GPTQ run directly on the same rows */
        struct qp_gptq_result r;
        REQUIRE(direct(ctx, g, l, in.x[l], scheme, &r));
        size_t rows = (size_t)r.q->shape[0], cols = (size_t)r.q->shape[1];
        bool same = true;
        for (size_t o = 0; o < rows; o++)
            for (size_t c = 0; c < cols; c++) {
                int32_t a1, b1;
                qp_pack_load(r.q->dtype, r.q->data, o * cols + c, 1, &a1);
                qp_pack_load(wq->dtype, wq->data,
                             l == GG_C ? c * rows + o : o * cols + c, 1, &b1);
                same &= a1 == b1;
            }
        CHECK(same);
        for (size_t c = 0; c < cols; c++)
            CHECK_INT(((const int32_t *)w[i]->g_idx->data)[c], r.g_idx[c]);
        qp_gptq_result_release(&r);
    }
    inputs_free(&in);
    qp_splan_free(p);
    qp_session_free(s);
    free(path);
}

QP_TEST(gptq_graph_static_groups_give_rtns_scales)
{
    static const char *const schemes[] = {"w4g3@gptq:static",
                                          "w4g3z@gptq:act,static"};
    char *path = gg_model(ctx);
    struct qp_session *s = gg_session(ctx, path, SETS);
    REQUIRE(s);
    const struct qp_graph *g = qp_session_graph(s);
    for (int k = 0; k < 2; k++) {
        struct qp_splan *p = gg_plan(ctx, s, schemes[k], QP_MODE_FAKE);
        for (int l = 0; p && l < GG_LAYERS; l++) {
            const struct qp_qparams *a = qp_splan_qplan(p)->n[gg_node(g, l)].w_q->qp;
            struct qp_tensor *r = rtn_of(g, l, k ? "w4g3z" : "w4g3");
            const struct qp_qparams *b = r->qp;
            CHECK(a->count == b->count && a->axis == b->axis &&
                  a->block_size == b->block_size);
            CHECK(a->count == b->count &&
                  !memcmp(a->scale, b->scale, a->count * sizeof *a->scale));
            CHECK(!b->zero_point || (a->zero_point &&
                  !memcmp(a->zero_point, b->zero_point,
                          a->count * sizeof *a->zero_point)));
            qp_tensor_free(r);
        }
        qp_splan_free(p);
    }
    qp_session_free(s);
    free(path);
}
