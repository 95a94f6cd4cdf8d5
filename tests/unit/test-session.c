/* tests/unit/test-session.c: the session API (model/session.h): plans equal
 * to the stand-alone planner's, weights and observers made once, memo
 * reuse bit-identical to a fresh run with only the dirty nodes computed,
 * and teacher forcing. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/qassign.h"
#include "model/session.h"
#include "model/sink.h"
#include "tests/test.h"
#include "tests/unit/test-graph-util.h"

#define LAYERS 4
#define WIDTH 16

/* x[4,16] -> (MatMul W_i -> h_i -> Relu -> r_i) x LAYERS -> y = r_last;
 * a side branch s = Mul(x, x) -> out2 that no layer depends on. */
static struct qp_graph *chain(struct qp_test_ctx *ctx)
{
    struct qp_graph *g;
    struct qp_error err;
    if (qp_graph_new("chain", &g, &err))
        return NULL;
    bool ok = !qp_graph_add_input(g, "x", QP_DTYPE_F32, 2, SHAPE(4, WIDTH), &err);
    char prev[16] = "x";
    unsigned seed = 7;
    for (int l = 0; ok && l < LAYERS; l++) {
        char w[16], h[16], r[16];
        snprintf(w, sizeof w, "W%d", l);
        snprintf(h, sizeof h, "h%d", l);
        snprintf(r, sizeof r, "r%d", l);
        struct qp_tensor *wt = TF32(w, 2, SHAPE(WIDTH, WIDTH), NULL);
        for (int i = 0; wt && i < WIDTH * WIDTH; i++) {
            seed = seed * 1103515245u + 12345u;
            ((float *)wt->data)[i] = ((float)((seed >> 8) % 2001) - 1000.0f) / 4000.0f;
        }
        const char *mi[2] = {prev, w}, *mo[1] = {h}, *ri[1] = {h}, *ro[1] = {r};
        ok = wt && !qp_graph_add_const(g, wt, &err) &&
             !qp_graph_add_node(g, "MatMul", "", 13, h, 2, mi, 1, mo, NULL, &err) &&
             !qp_graph_add_node(g, "Relu", "", 13, r, 1, ri, 1, ro, NULL, &err);
        snprintf(prev, sizeof prev, "%s", r);
    }
    const char *si[2] = {"x", "x"}, *so[1] = {"s"};
    ok = ok && !qp_graph_add_node(g, "Mul", "", 13, "side", 2, si, 1, so, NULL, &err) &&
         !qp_graph_add_output(g, prev, &err) && !qp_graph_add_output(g, "s", &err) &&
         !qp_graph_finalize(g, &err);
    if (!ok) {
        qp_test_failf(ctx, __FILE__, __LINE__, "chain: %s", err.msg);
        qp_graph_free(g);
        return NULL;
    }
    return g;
}

static struct qp_tensor **input_set(unsigned seed)
{
    struct qp_tensor **feed = calloc(1, sizeof *feed);
    feed[0] = TF32("x", 2, SHAPE(4, WIDTH), NULL);
    for (int i = 0; i < 4 * WIDTH; i++) {
        seed = seed * 1103515245u + 12345u;
        ((float *)feed[0]->data)[i] = ((float)((seed >> 8) % 2001) - 1000.0f) / 500.0f;
    }
    return feed;
}

/* A session over the chain, calibrated on one input set. */
static struct qp_session *open_chain(struct qp_test_ctx *ctx)
{
    struct qp_error err;
    struct qp_session *s;
    struct qp_graph *g = chain(ctx);
    if (!g || qp_session_new(g, "chain", &s, &err))
        return NULL;
    if (qp_session_add_calib_feed(s, input_set(1), &err)) {
        qp_session_free(s);
        return NULL;
    }
    return s;
}

static bool same_bits(const struct qp_tensor *a, const struct qp_tensor *b)
{
    return a->dtype == b->dtype && a->nbytes == b->nbytes &&
           !memcmp(a->data, b->data, a->nbytes);
}

static int node_of(const struct qp_graph *g, const char *name)
{
    for (int i = 0; i < g->n_nodes; i++)
        if (!strcmp(g->nodes[i].name, name))
            return i;
    return -1;
}

QP_TEST(session_weights_quantized_once_and_calibration_reused)
{
    struct qp_error err;
    struct qp_session *s;
    struct qp_graph *g = chain(ctx);
    REQUIRE(g);
    REQUIRE_OK(qp_session_new(g, "chain", &s, &err), &err);
    REQUIRE_OK(qp_session_add_calib_feed(s, input_set(1), &err), &err);
    REQUIRE_OK(qp_session_add_calib_feed(s, input_set(2), &err), &err);
    struct qp_scheme a, b, c;
    REQUIRE_OK(qp_scheme_parse("w8c+a8t", &a, NULL, &err), &err);
    REQUIRE_OK(qp_scheme_parse("w4c+a8t", &b, NULL, &err), &err);
    REQUIRE_OK(qp_scheme_parse("w8c+a16t", &c, NULL, &err), &err);
    struct qp_splan *p1, *p2, *p3, *p4;
    struct qp_session_cfg cfg = {.mode = QP_MODE_FAKE, .scheme = &a,
        .flavor = QP_RQ_TFLITE_DOUBLE};
    REQUIRE_OK(qp_session_plan(s, &cfg, &p1, &err), &err);
    struct qp_session_stats st = qp_session_stats(s);
    CHECK_INT(st.calib_passes, 1);  /* one pass learns and feeds everything */
    CHECK_INT(st.weights_made, LAYERS);
    /* the same scheme again: no weight quantized, no calibration pass */
    REQUIRE_OK(qp_session_plan(s, &cfg, &p2, &err), &err);
    /* other weights, same activations: new weights only */
    cfg.scheme = &b;
    REQUIRE_OK(qp_session_plan(s, &cfg, &p3, &err), &err);
    /* other activation bits, same range method: nothing new either */
    cfg.scheme = &c;
    REQUIRE_OK(qp_session_plan(s, &cfg, &p4, &err), &err);
    st = qp_session_stats(s);
    CHECK_INT(st.calib_passes, 1);
    CHECK_INT(st.weights_made, 2 * LAYERS);
    CHECK_INT(st.weights_reused, 2 * LAYERS);
    /* 1 input + 2 values per layer + the side product are float activations */
    CHECK_INT(st.observers, 1 + 2 * LAYERS + 1);
    /* equal plans compute equal bits; the 16-bit plan's ranges are the
     * same minmax ranges, so its symmetric scale is finer by 32767 / 127 */
    const struct qp_qplan *q1 = qp_splan_qplan(p1), *q4 = qp_splan_qplan(p4);
    int r0 = qp_graph_find(qp_session_graph(s), "r0");
    REQUIRE(r0 >= 0 && q1->v[r0].quant && q4->v[r0].quant);
    CHECK_NEAR(q1->v[r0].scale / q4->v[r0].scale, 32767.0 / 127.0, 1e-4);
    qp_splan_free(p1);
    qp_splan_free(p2);
    qp_splan_free(p3);
    qp_splan_free(p4);
    qp_session_free(s);
}

/* Runs plan on feed with (or without) a memo; returns the outputs. */
static bool run_plan(struct qp_test_ctx *ctx, struct qp_session *s,
                     const struct qp_splan *p, struct qp_tensor **feed,
                     struct qp_memo *m, bool record, struct qp_tensor **out,
                     struct qp_session_run_stats *rs)
{
    struct qp_error err;
    struct qp_session_run_opts o = {.memo = m, .record = record,
                                    .no_fusion = record};
    enum qp_status st = qp_session_run(s, p, (const struct qp_tensor *const *)feed,
                                       &o, out, rs, &err);
    if (st)
        qp_test_failf(ctx, __FILE__, __LINE__, "run: %s", err.msg);
    return !st;
}

QP_TEST(session_memo_recomputes_only_what_depends_on_the_change)
{
    struct qp_error err;
    struct qp_session *s = open_chain(ctx);
    REQUIRE(s);
    const struct qp_graph *g = qp_session_graph(s);
    struct qp_tensor **feed = input_set(9);
    struct qp_memo *m;
    REQUIRE_OK(qp_memo_new(s, &m, &err), &err);
    struct qp_tensor *base[2], *ref[2], *got[2];
    struct qp_session_run_stats rs;
    REQUIRE(run_plan(ctx, s, NULL, feed, m, true, base, &rs));
    CHECK_INT(rs.nodes_run, g->n_nodes);
    CHECK(qp_memo_bytes(m) > 0);
    /* an fp32 run against the fp32 memo computes nothing */
    REQUIRE(run_plan(ctx, s, NULL, feed, m, false, got, &rs));
    CHECK_INT(rs.nodes_run, 0);
    CHECK(same_bits(got[0], base[0]) && same_bits(got[1], base[1]));
    qp_tensor_free(got[0]);
    qp_tensor_free(got[1]);
    struct qp_scheme w4;
    REQUIRE_OK(qp_scheme_parse("w4t+a8t", &w4, NULL, &err), &err);
    size_t total = 0;
    for (int l = 0; l < LAYERS; l++) {
        /* one-in: only layer l's weight and output quantized */
        struct qp_qassign *a;
        REQUIRE_OK(qp_qassign_new(g, &a, &err), &err);
        char name[16];
        snprintf(name, sizeof name, "h%d", l);
        int node = node_of(g, name);
        REQUIRE(node >= 0);
        a->wq[node] = true;
        a->ws[node] = w4.w;
        a->aq[g->nodes[node].out[0]] = true;
        a->as[g->nodes[node].out[0]] = w4.a;
        struct qp_session_cfg cfg = {.mode = QP_MODE_FAKE, .assign = a,
            .flavor = QP_RQ_TFLITE_DOUBLE};
        struct qp_splan *p;
        REQUIRE_OK(qp_session_plan(s, &cfg, &p, &err), &err);
        REQUIRE(run_plan(ctx, s, p, feed, NULL, false, ref, NULL));
        REQUIRE(run_plan(ctx, s, p, feed, m, false, got, &rs));
        /* bit-identical to the fresh run; the side branch and the layers
         * in front come from the memo: MatMul, Relu for each later layer */
        CHECK(same_bits(got[0], ref[0]) && same_bits(got[1], ref[1]));
        CHECK(!same_bits(got[0], base[0]));
        CHECK_INT(rs.nodes_run, 2 * (LAYERS - l));
        CHECK_INT(rs.nodes_reused, g->n_nodes - 2 * (LAYERS - l));
        total += rs.nodes_run;
        for (int k = 0; k < 2; k++) {
            qp_tensor_free(ref[k]);
            qp_tensor_free(got[k]);
        }
        qp_splan_free(p);
        qp_qassign_free(a);
    }
    /* a one-in sweep costs about half a forward pass per layer */
    CHECK_INT(total, 2 * LAYERS * (LAYERS + 1) / 2);
    /* other inputs: the memo is not used, and not changed */
    struct qp_tensor **other = input_set(10);
    REQUIRE(run_plan(ctx, s, NULL, other, m, false, got, &rs));
    CHECK_INT(rs.nodes_run, g->n_nodes);
    qp_tensor_free(got[0]);
    qp_tensor_free(got[1]);
    REQUIRE(run_plan(ctx, s, NULL, feed, m, false, got, &rs));
    CHECK_INT(rs.nodes_run, 0);
    qp_tensor_free(got[0]);
    qp_tensor_free(got[1]);
    qp_session_free_inputs(s, other);
    qp_tensor_free(base[0]);
    qp_tensor_free(base[1]);
    qp_memo_free(m);
    qp_session_free_inputs(s, feed);
    qp_session_free(s);
}

/* A memo recorded under a plan and reused by a plan that differs in one
 * late layer recomputes that layer onward only (the greedy recipe search
 * promotes one layer per step). */
QP_TEST(session_memo_follows_the_plan_it_recorded)
{
    struct qp_error err;
    struct qp_session *s = open_chain(ctx);
    REQUIRE(s);
    const struct qp_graph *g = qp_session_graph(s);
    struct qp_tensor **feed = input_set(5);
    struct qp_scheme u;
    REQUIRE_OK(qp_scheme_parse("w4c+a8t", &u, NULL, &err), &err);
    struct qp_qassign *a;
    REQUIRE_OK(qp_qassign_uniform(g, &u, &a, &err), &err);
    struct qp_session_cfg cfg = {.mode = QP_MODE_INT, .assign = a,
        .flavor = QP_RQ_TFLITE_DOUBLE};
    struct qp_splan *p, *p2;
    REQUIRE_OK(qp_session_plan(s, &cfg, &p, &err), &err);
    struct qp_memo *m;
    REQUIRE_OK(qp_memo_new(s, &m, &err), &err);
    struct qp_tensor *o1[2], *ref[2], *got[2];
    struct qp_session_run_stats rs;
    REQUIRE(run_plan(ctx, s, p, feed, m, true, o1, &rs));
    /* promote the last layer to float weights */
    int last = node_of(g, "h3");
    a->wq[last] = false;
    REQUIRE_OK(qp_session_plan(s, &cfg, &p2, &err), &err);
    REQUIRE(run_plan(ctx, s, p2, feed, NULL, false, ref, NULL));
    REQUIRE(run_plan(ctx, s, p2, feed, m, true, got, &rs));
    CHECK(same_bits(got[0], ref[0]) && same_bits(got[1], ref[1]));
    CHECK_INT(rs.nodes_run, 2);
    /* the memo now follows p2: running p2 again computes nothing */
    for (int k = 0; k < 2; k++)
        qp_tensor_free(got[k]);
    REQUIRE(run_plan(ctx, s, p2, feed, m, true, got, &rs));
    CHECK_INT(rs.nodes_run, 0);
    CHECK(same_bits(got[0], ref[0]));
    for (int k = 0; k < 2; k++) {
        qp_tensor_free(o1[k]);
        qp_tensor_free(ref[k]);
        qp_tensor_free(got[k]);
    }
    qp_memo_free(m);
    qp_splan_free(p);
    qp_splan_free(p2);
    qp_qassign_free(a);
    qp_session_free_inputs(s, feed);
    qp_session_free(s);
}

QP_TEST(session_activations_need_calibration_inputs)
{
    struct qp_error err;
    struct qp_session *s;
    struct qp_graph *g = chain(ctx);
    REQUIRE(g);
    REQUIRE_OK(qp_session_new(g, "chain.onnx", &s, &err), &err);
    struct qp_scheme sc;
    REQUIRE_OK(qp_scheme_parse("w8c+a8t", &sc, NULL, &err), &err);
    struct qp_session_cfg cfg = {.mode = QP_MODE_FAKE, .scheme = &sc,
        .flavor = QP_RQ_TFLITE_DOUBLE};
    struct qp_splan *p;
    CHECK_FAILS(qp_session_plan(s, &cfg, &p, &err), QP_E_INVAL, &err,
                "'chain.onnx': quantized activations need calibration inputs");
    /* weights only need none */
    REQUIRE_OK(qp_scheme_parse("w8c", &sc, NULL, &err), &err);
    REQUIRE_OK(qp_session_plan(s, &cfg, &p, &err), &err);
    qp_splan_free(p);
    qp_session_free(s);
}

struct keep_all {
    struct qp_tensor *t[64];
};

static enum qp_status keep_value(void *ctx, const struct qp_graph *g, int v,
                                 const struct qp_tensor *t, struct qp_error *err)
{
    struct keep_all *k = ctx;
    (void)g;
    if (v >= 64 || k->t[v])
        return QP_OK;
    return qp_tensor_clone(t, &k->t[v], err);
}

static void keep_release(struct keep_all *k)
{
    for (int v = 0; v < 64; v++)
        qp_tensor_free(k->t[v]);
}

/* Teacher forcing: each node reads the reference's values, so in fp32 it
 * reproduces the reference exactly, and under a plan a layer's output
 * depends on its own quantization alone. */
QP_TEST(session_local_runs_feed_every_node_the_reference)
{
    struct qp_error err;
    struct qp_session *s = open_chain(ctx);
    REQUIRE(s);
    const struct qp_graph *g = qp_session_graph(s);
    REQUIRE(g->n_values <= 64);
    struct qp_tensor **feed = input_set(3);
    /* the fp32 reference, as a dump on disk */
    char *path = qp_test_path(ctx, "ref.safetensors");
    struct qp_sink sink;
    struct qp_tensor *out[2];
    REQUIRE_OK(qp_sink_open(&sink, g, path, QP_DUMP_AUTO, &err), &err);
    struct qp_session_run_opts o = {.capture = "*", .on_capture = qp_sink_capture,
                                    .capture_ctx = &sink};
    REQUIRE_OK(qp_session_run(s, NULL, (const struct qp_tensor *const *)feed, &o,
                              out, NULL, &err), &err);
    REQUIRE_OK(qp_sink_commit(&sink, g, out, &err), &err);
    qp_sink_abort(&sink);
    qp_tensor_free(out[0]);
    qp_tensor_free(out[1]);
    struct qp_dump *ref;
    REQUIRE_OK(qp_dump_open(path, QP_DUMP_AUTO, &ref, &err), &err);
    /* fp32, teacher-forced from a perturbed input: still the reference,
     * because no node reads the graph input but through the dump */
    struct qp_tensor **other = input_set(4);
    struct keep_all fl = {{0}}, acc = {{0}}, loc = {{0}};
    o = (struct qp_session_run_opts){.capture = "*", .on_capture = keep_value,
                                     .capture_ctx = &fl, .local = ref};
    REQUIRE_OK(qp_session_run(s, NULL, (const struct qp_tensor *const *)other, &o,
                              out, NULL, &err), &err);
    qp_tensor_free(out[0]);
    qp_tensor_free(out[1]);
    char name[16];
    for (int l = 0; l < LAYERS; l++) {
        snprintf(name, sizeof name, "r%d", l);
        long e = qp_dump_find(ref, name);
        struct qp_tensor *rt;
        REQUIRE(e >= 0);
        REQUIRE_OK(qp_dump_load(ref, (size_t)e, &rt, &err), &err);
        CHECK(same_bits(fl.t[qp_graph_find(g, name)], rt));
        qp_tensor_free(rt);
    }
    /* fake: accumulated and teacher-forced runs of the same plan */
    struct qp_scheme sc;
    REQUIRE_OK(qp_scheme_parse("w3t+a4t", &sc, NULL, &err), &err);
    struct qp_session_cfg cfg = {.mode = QP_MODE_FAKE, .scheme = &sc,
        .flavor = QP_RQ_TFLITE_DOUBLE};
    struct qp_splan *p;
    REQUIRE_OK(qp_session_plan(s, &cfg, &p, &err), &err);
    o = (struct qp_session_run_opts){.capture = "*", .on_capture = keep_value,
                                     .capture_ctx = &acc};
    REQUIRE_OK(qp_session_run(s, p, (const struct qp_tensor *const *)feed, &o, out,
                              NULL, &err), &err);
    qp_tensor_free(out[0]);
    qp_tensor_free(out[1]);
    o.capture_ctx = &loc;
    o.local = ref;
    REQUIRE_OK(qp_session_run(s, p, (const struct qp_tensor *const *)feed, &o, out,
                              NULL, &err), &err);
    qp_tensor_free(out[0]);
    qp_tensor_free(out[1]);
    /* the first layer reads the same (quantized) input either way */
    int h0 = qp_graph_find(g, "h0"), h3 = qp_graph_find(g, "h3");
    CHECK(same_bits(loc.t[h0], acc.t[h0]));
    /* a deep layer reads the reference instead of inherited error */
    CHECK(!same_bits(loc.t[h3], acc.t[h3]));
    qp_splan_free(p);
    keep_release(&fl);
    keep_release(&acc);
    keep_release(&loc);
    qp_dump_close(ref);
    free(path);
    qp_session_free_inputs(s, other);
    qp_session_free_inputs(s, feed);
    qp_session_free(s);
}
