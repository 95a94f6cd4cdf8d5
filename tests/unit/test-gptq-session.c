/* tests/unit/test-gptq-session.c: '@gptq' through the session
 * (model/session.h) on the model of gptq-graph-util.h: GPTQ weights made
 * once per scheme and calibration set and reused across plans, made anew
 * for other calibration inputs or another quantization upstream
 * (sequential mode), recipes mixing GPTQ and RTN, the int mode, refusals,
 * and the checkpoint of quantize read back equal to the session's
 * weights. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "formats/dump.h"
#include "model/gptq-view.h"
#include "quant/ckpt.h"
#include "quant/gptq-layer.h"
#include "quant/recipe.h"
#include "tests/test.h"
#include "tests/unit/gptq-graph-util.h"

static int made(const struct gg_log *l)
{
    return l->made[GG_A] + l->made[GG_B] + l->made[GG_C] + l->made[GG_D];
}

QP_TEST(gptq_session_reuses_weights_across_plans_not_across_calibration)
{
    char *path = gg_model(ctx);
    struct qp_session *s = gg_session(ctx, path, 2);
    REQUIRE(s);
    struct gg_log log;
    gg_log_attach(&log, s, false);
    struct qp_splan *p1 = gg_plan(ctx, s, "w4g3@gptq", QP_MODE_FAKE);
    REQUIRE(p1);
    CHECK_INT(made(&log), 4);
    /* the same weights again, other activations, another scheme between */
    struct qp_splan *p2 = gg_plan(ctx, s, "w4c@gptq", QP_MODE_FAKE);
    struct qp_splan *p3 = gg_plan(ctx, s, "w4g3@gptq+a8t", QP_MODE_FAKE);
    REQUIRE(p2 && p3);
    CHECK_INT(made(&log), 8);
    for (int l = 0; l < GG_LAYERS; l++) {
        CHECK(gg_fake(p3, l) == gg_fake(p1, l));
        CHECK(!gg_same(gg_fake(p2, l), gg_fake(p1, l)));
    }
    /* equal plans run alike, so a memo may be reused between them */
    const struct qp_graph *g = qp_session_graph(s);
    for (int l = 0; l < GG_LAYERS; l++) {
        int i = gg_node(g, l);
        uint64_t a = qp_qplan_node_sig(qp_splan_qplan(p1), i);
        CHECK(a != 0 && a != qp_qplan_node_sig(qp_splan_qplan(p2), i));
    }
    /* a third calibration set: every GPTQ weight is made again, and the
     * nodes' signatures change with them (no stale memo) */
    struct qp_error err;
    REQUIRE_OK(qp_session_add_calib_feed(s, gg_input(3, false), &err), &err);
    struct qp_splan *p4 = gg_plan(ctx, s, "w4g3@gptq", QP_MODE_FAKE);
    REQUIRE(p4);
    CHECK_INT(made(&log), 12);
    for (int l = 0; l < GG_LAYERS; l++) {
        int i = gg_node(g, l);
        CHECK(!gg_same(gg_fake(p4, l), gg_fake(p1, l)));
        CHECK(qp_qplan_node_sig(qp_splan_qplan(p4), i) !=
              qp_qplan_node_sig(qp_splan_qplan(p1), i));
    }
    qp_splan_free(p1);
    qp_splan_free(p2);
    qp_splan_free(p3);
    qp_splan_free(p4);
    qp_session_free(s);
    free(path);
}

/* A recipe: default w4g3@gptq, layer C rounded to nearest at 8 bits. */
static struct qp_splan *recipe_plan(struct qp_test_ctx *ctx, struct qp_session *s)
{
    struct qp_error err;
    struct qp_recipe *r;
    const char *text = "{\"qprobe_recipe\": 1, \"default\": \"w4g3@gptq\", "
                       "\"layers\": {\"WC\": \"w8c\"}}";
    if (qp_recipe_parse(text, "'r.json'", &r, &err)) {
        qp_test_failf(ctx, __FILE__, __LINE__, "recipe: %s", err.msg);
        return NULL;
    }
    struct qp_session_cfg cfg = {.mode = QP_MODE_FAKE, .recipe = r,
                                 .flavor = QP_RQ_TFLITE_DOUBLE};
    struct qp_splan *p = NULL;
    if (qp_session_plan(s, &cfg, &p, &err))
        qp_test_failf(ctx, __FILE__, __LINE__, "plan: %s", err.msg);
    qp_recipe_free(r);
    return p;
}

QP_TEST(gptq_session_recipe_mixes_rtn_and_sequential_context)
{
    char *path = gg_model(ctx);
    for (int fp32 = 0; fp32 < 2; fp32++) {
        struct qp_session *s = gg_session(ctx, path, 2);
        REQUIRE(s);
        struct gg_log log;
        gg_log_attach(&log, s, fp32);
        struct qp_splan *u = gg_plan(ctx, s, "w4g3@gptq", QP_MODE_FAKE);
        struct qp_splan *r = recipe_plan(ctx, s);
        struct qp_splan *c8 = gg_plan(ctx, s, "w8c", QP_MODE_FAKE);
        REQUIRE(u && r && c8);
        /* C is RTN w8c, the cache's own */
        CHECK(gg_fake(r, GG_C) == gg_fake(c8, GG_C));
        /* A and B see the same inputs in both plans: the same weights */
        CHECK(gg_fake(r, GG_A) == gg_fake(u, GG_A));
        CHECK(gg_fake(r, GG_B) == gg_fake(u, GG_B));
        /* D's inputs come through C: another weight in sequential mode,
         * the same one with the float model's inputs */
        if (fp32)
            CHECK(gg_fake(r, GG_D) == gg_fake(u, GG_D));
        else
            CHECK(!gg_same(gg_fake(r, GG_D), gg_fake(u, GG_D)));
        CHECK_INT(log.made[GG_D], fp32 ? 1 : 2);
        CHECK_INT(log.made[GG_C], 1);
        qp_splan_free(u);
        qp_splan_free(r);
        qp_splan_free(c8);
        qp_session_free(s);
    }
    free(path);
}

QP_TEST(gptq_session_int_mode_runs_the_same_integers)
{
    char *path = gg_model(ctx);
    struct qp_session *s = gg_session(ctx, path, 2);
    REQUIRE(s);
    struct gg_log log;
    gg_log_attach(&log, s, false);
    struct qp_splan *f = gg_plan(ctx, s, "w4c@gptq+a8t", QP_MODE_FAKE);
    struct qp_splan *n = gg_plan(ctx, s, "w4c@gptq+a8t", QP_MODE_INT);
    REQUIRE(f && n);
    CHECK_INT(made(&log), 4);
    const struct qp_graph *g = qp_session_graph(s);
    for (int l = 0; l < GG_LAYERS; l++) {
        int i = gg_node(g, l);
        const struct qp_tensor *a = qp_splan_qplan(f)->n[i].w_q;
        const struct qp_tensor *b = qp_splan_qplan(n)->n[i].w_q;
        REQUIRE(b->dtype == QP_DTYPE_I8 && a->dtype == QP_DTYPE_I4);
        bool same = true;
        for (size_t k = 0; k < qp_tensor_numel(a); k++)
            same &= qp_packed_get(a->dtype, a->data, k) == ((const int8_t *)b->data)[k];
        CHECK(same);
        CHECK(!memcmp(a->qp->scale, b->qp->scale, a->qp->count * sizeof(float)));
    }
    struct qp_tensor *out[1] = {NULL};
    struct qp_error err;
    CHECK_OK(qp_session_run(s, n, (const struct qp_tensor *const *)
                            qp_session_calib_set(s, 0), NULL, out, NULL, &err),
             &err);
    qp_tensor_free(out[0]);
    qp_splan_free(f);
    qp_splan_free(n);
    qp_session_free(s);
    free(path);
}

QP_TEST(gptq_session_refusals_and_warnings)
{
    char *path = gg_model(ctx);
    struct qp_error err;
    struct qp_scheme sc;
    REQUIRE_OK(qp_scheme_parse("w4g3@gptq", &sc, NULL, &err), &err);
    struct qp_session_cfg cfg = {.mode = QP_MODE_FAKE, .scheme = &sc,
                                 .flavor = QP_RQ_TFLITE_DOUBLE};
    struct qp_splan *p = NULL;
    /* no calibration inputs */
    struct qp_session *s = gg_session(ctx, path, 0);
    REQUIRE(s);
    CHECK_FAILS(qp_session_plan(s, &cfg, &p, &err), QP_E_INVAL, &err,
                "GPTQ needs calibration inputs");
    /* NaN reaching the first layer: named, with the input's number */
    REQUIRE_OK(qp_session_add_calib_feed(s, gg_input(1, false), &err), &err);
    REQUIRE_OK(qp_session_add_calib_feed(s, gg_input(2, true), &err), &err);
    CHECK_FAILS(qp_session_plan(s, &cfg, &p, &err), QP_E_INVAL, &err,
                "calibration input 2: layer 'WA': calibration input row");
    CHECK_CONTAINS(err.msg, "is nan");
    qp_session_free(s);
    /* a calibration input of the wrong shape, named */
    s = gg_session(ctx, path, 0);
    REQUIRE(s);
    char *bad = qp_test_path(ctx, "bad.npy");
    struct qp_tensor *t = NULL;
    REQUIRE_OK(qp_tensor_new("x", QP_DTYPE_F32, 4, (const int64_t[]){2, 3, 6, 6},
                             &t, &err), &err);
    memset(t->data, 0, t->nbytes);
    struct qp_dump_writer *w;
    REQUIRE_OK(qp_dump_writer_open(bad, QP_DUMP_NPY, &w, &err), &err);
    CHECK_OK(qp_dump_writer_add(w, t, &err), &err);
    CHECK_OK(qp_dump_writer_commit(w, &err), &err);
    qp_tensor_free(t);
    CHECK_FAILS(qp_session_add_calib(s, bad, NULL, &err), QP_E_SHAPE, &err,
                "bad.npy': tensor 'bad' has shape [2,3,6,6], the model's "
                "input 'x' is [2,4,6,6]");
    free(bad);
    /* few rows for a layer's width: a warning (few_tokens), not an error;
     * a group wider than the input axis is the channel */
    struct qp_tensor **one = gg_input(4, false);
    REQUIRE_OK(qp_session_add_calib_feed(s, one, &err), &err);
    struct gg_log log;
    gg_log_attach(&log, s, false);
    struct qp_splan *wide = gg_plan(ctx, s, "w4g64@gptq", QP_MODE_FAKE);
    struct qp_splan *chan = gg_plan(ctx, s, "w4c@gptq", QP_MODE_FAKE);
    REQUIRE(wide && chan);
    for (int l = 0; l < GG_LAYERS; l++)
        CHECK(gg_same(gg_fake(wide, l), gg_fake(chan, l)));
    CHECK(!log.few_tokens[GG_A] && !log.few_tokens[GG_D]);
    qp_splan_free(wide);
    qp_splan_free(chan);
    qp_session_free(s);
    free(path);
}

/* The calibrated callback of the checkpoint: the session's weights by
 * weight name. */
struct byname {
    const struct qp_graph *g;
    const struct qp_wquant **w;
};

static bool calibrated(void *ctx, const char *name, struct qp_ckpt_calibrated *out)
{
    const struct byname *b = ctx;
    for (int i = 0; i < b->g->n_nodes; i++)
        if (b->w[i] && !strcmp(b->g->values[b->g->nodes[i].in[1]].name, name)) {
            *out = (struct qp_ckpt_calibrated){b->w[i]->q, b->w[i]->fake,
                                               b->w[i]->g_idx};
            return true;
        }
    return false;
}

QP_TEST(gptq_session_checkpoint_round_trips_to_the_plans_weights)
{
    char *path = gg_model(ctx), *out = qp_test_path(ctx, "q.safetensors");
    const char *scheme = "w4g3z@gptq:act";
    struct qp_error err;
    struct qp_scheme sc;
    REQUIRE_OK(qp_scheme_parse(scheme, &sc, NULL, &err), &err);
    /* the checkpoint, as quantize makes it */
    struct qp_session *s = gg_session(ctx, path, 2);
    REQUIRE(s);
    const struct qp_graph *g = qp_session_graph(s);
    struct qp_qassign *a, *ga;
    const struct qp_wquant *w[16] = {0};
    REQUIRE(g->n_nodes <= 16);
    REQUIRE_OK(qp_qassign_uniform(g, &sc, &a, &err), &err);
    REQUIRE_OK(qp_session_gptq_assign(s, a, &ga, &err), &err);
    REQUIRE_OK(qp_session_gptq(s, ga, QP_ROUND_HALF_AWAY, NULL, w, &err), &err);
    struct byname b = {g, w};
    struct qp_ckpt_opts o = {.scheme = &sc, .calibrated = calibrated,
                             .calibrated_ctx = &b};
    struct qp_dump *in;
    struct qp_dump_writer *wr;
    struct qp_ckpt_result res;
    REQUIRE_OK(qp_dump_open(path, QP_DUMP_AUTO, &in, &err), &err);
    REQUIRE_OK(qp_dump_writer_open(out, QP_DUMP_AUTO, &wr, &err), &err);
    CHECK_OK(qp_ckpt_check(in, wr->format, out, &o, &err), &err);
    CHECK_OK(qp_ckpt_quantize(in, wr, &o, NULL, NULL, &res, &err), &err);
    CHECK_INT(res.calibrated, 4);
    CHECK_INT(res.rtn_fallback, 0);
    CHECK_OK(qp_dump_writer_commit(wr, &err), &err);
    qp_ckpt_result_release(&res);
    qp_dump_close(in);
    qp_qassign_free(a);
    qp_qassign_free(ga);
    qp_session_free(s);
    /* read back against a fresh session's fake plan */
    s = gg_session(ctx, path, 2);
    REQUIRE(s);
    g = qp_session_graph(s);
    struct qp_splan *p = gg_plan(ctx, s, scheme, QP_MODE_FAKE);
    REQUIRE(p);
    struct qp_dump *d;
    REQUIRE_OK(qp_dump_open(out, QP_DUMP_AUTO, &d, &err), &err);
    static const char *const names[GG_LAYERS] = {"WA", "WB", "WC", "WD"};
    int with_gidx = 0;
    for (int l = 0; l < GG_LAYERS; l++) {
        char gname[32];
        snprintf(gname, sizeof gname, "%s.g_idx", names[l]);
        long e = qp_dump_find(d, names[l]), ge = qp_dump_find(d, gname);
        REQUIRE(e >= 0);
        struct qp_tensor *q = NULL, *gi = NULL;
        REQUIRE_OK(qp_dump_load(d, (size_t)e, &q, &err), &err);
        if (ge >= 0)
            CHECK_OK(qp_dump_load(d, (size_t)ge, &gi, &err), &err);
        with_gidx += gi != NULL;
        enum qp_wlayout lay;
        qp_node_weighted(g, gg_node(g, l), &lay);
        const struct qp_tensor *f = gg_fake(p, l);
        float *v = malloc(f->nbytes);
        if (gi)
            CHECK_OK(qp_gptq_gidx_dequantize(q, gi, lay, v, &err), &err);
        else
            qp_tensor_read_f32(q, 0, qp_tensor_numel(q), v);
        if (memcmp(v, f->data, f->nbytes))
            qp_test_failf(ctx, __FILE__, __LINE__, "%s read back differs from "
                          "the plan's weight", names[l]);
        free(v);
        qp_tensor_free(q);
        qp_tensor_free(gi);
    }
    CHECK(with_gidx >= 3); /* act-order with groups moved columns */
    qp_dump_close(d);
    qp_splan_free(p);
    qp_session_free(s);
    free(path);
    free(out);
}
