/* tests/unit/test-recipe-search.c: the recipe search on the planted-outlier
 * network (tests/unit/planted-net.h), where the layer to promote is known
 * by construction: it meets a target the uniform base misses by promoting
 * W1, never spends past a budget, reports states a fresh run reproduces,
 * and its recipe JSON reads back into the assignment it searched. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/recipe-search.h"
#include "formats/json.h"
#include "model/session.h"
#include "tests/test.h"
#include "tests/unit/planted-net.h"

struct fixture {
    struct qp_session *s;
    struct qp_tensor **eval[2];
    struct qp_scheme base;
    struct qp_level promote[2];
};

static bool setup(struct qp_test_ctx *ctx, struct fixture *f)
{
    struct qp_error err;
    struct qp_graph *g = qp_planted_net(ctx);
    if (!g || qp_session_new(g, "net", &f->s, &err))
        return false;
    for (unsigned k = 1; k <= 3; k++)
        if (qp_session_add_calib_feed(f->s, qp_planted_input(k), &err))
            return false;
    f->eval[0] = qp_planted_input(20);
    f->eval[1] = qp_planted_input(21);
    f->promote[1].fp32 = true;
    return !qp_scheme_parse("w4t+a8t", &f->base, NULL, &err) &&
           !qp_scheme_parse("w8c+a8t", &f->promote[0].s, NULL, &err);
}

static void teardown(struct fixture *f)
{
    for (int k = 0; k < 2; k++)
        qp_session_free_inputs(f->s, f->eval[k]);
    qp_session_free(f->s);
}

static struct qp_rsearch_opts opts(const struct fixture *f, enum qp_rtarget t,
                                   double value)
{
    return (struct qp_rsearch_opts){.mode = QP_MODE_FAKE, .base = &f->base,
        .promote = f->promote, .npromote = 2, .flavor = QP_RQ_TFLITE_DOUBLE,
        .target = t, .value = value};
}

static long unit_of(const struct qp_rsearch_result *r, const char *name)
{
    for (size_t i = 0; i < r->units.n; i++)
        if (!strcmp(r->units.u[i].name, name))
            return (long)i;
    return -1;
}

/* Output SQNR of assignment a on the evaluation sets, from fresh runs. */
static double fresh_sqnr(struct fixture *f, const struct qp_qassign *a,
                         struct qp_error *err)
{
    struct qp_session_cfg cfg = {.mode = QP_MODE_FAKE, .assign = a,
                                 .flavor = QP_RQ_TFLITE_DOUBLE};
    struct qp_splan *p;
    if (qp_session_plan(f->s, &cfg, &p, err))
        return NAN;
    struct qp_outcome oc;
    qp_outcome_init(&oc);
    bool ok = true;
    for (int k = 0; k < 2; k++) {
        struct qp_tensor *ref[1] = {0}, *got[1] = {0};
        const struct qp_tensor *const *in = (const struct qp_tensor *const *)f->eval[k];
        if (qp_session_run(f->s, NULL, in, NULL, ref, NULL, err) ||
            qp_session_run(f->s, p, in, NULL, got, NULL, err) ||
            qp_outcome_add(&oc, ref[0], got[0], err))
            ok = false;
        qp_tensor_free(ref[0]);
        qp_tensor_free(got[0]);
    }
    qp_splan_free(p);
    return ok ? qp_outcome_sqnr(&oc) : NAN;
}

QP_TEST(recipe_search_promotes_the_planted_layer_to_meet_the_target)
{
    struct qp_error err;
    struct fixture f = {0};
    REQUIRE(setup(ctx, &f));
    /* the uniform base first, to set a target it misses by 10 dB */
    struct qp_rsearch_opts o = opts(&f, QP_RT_SQNR, 1e6);
    struct qp_rsearch_result res;
    o.value = -1e6; /* met at the start: nothing searched */
    REQUIRE_OK(qp_recipe_search(f.s, f.eval, 2, &o, &res, &err), &err);
    CHECK_INT(res.nsteps, 1);
    double base = res.steps[0].at.calib_sqnr;
    size_t base_bytes = res.steps[0].at.bytes;
    REQUIRE(isfinite(base));
    qp_rsearch_release(&res);

    o.value = base + 10;
    REQUIRE_OK(qp_recipe_search(f.s, f.eval, 2, &o, &res, &err), &err);
    const struct qp_rstate *end = &res.steps[res.nsteps - 1].at;
    CHECK(res.reached_calib);
    CHECK(end->calib_sqnr >= base + 10);
    /* W1's per-tensor grid is what the outlier ruins: it is promoted, and
     * promoted first among the weights */
    long w1 = unit_of(&res, "W1");
    REQUIRE(w1 >= 0);
    CHECK(res.level[w1] > 0);
    size_t k = 1;
    while (k < res.nsteps && res.steps[k].kind != QP_STEP_PROMOTE)
        k++; /* bulk steps (free promotions) */
    REQUIRE(k < res.nsteps);
    CHECK_STR(res.units.u[res.steps[k].unit].name, "W1");
    /* fewer bytes than every layer at the first promotion level */
    CHECK(end->bytes < res.bytes_fp32);
    size_t all8 = 0;
    for (size_t u = 0; u < res.units.n; u++)
        all8 += res.units.u[u].params; /* 8 bits per weight at least */
    CHECK(end->bytes > base_bytes);
    CHECK(end->bytes < all8 + base_bytes);
    /* the reported evaluation SQNR is what a fresh run of the final
     * assignment gives (the memos did not change the answer) */
    double fresh = fresh_sqnr(&f, res.assign, &err);
    CHECK_NEAR(end->eval_sqnr, fresh, 1e-9);
    /* the recipe JSON reads back into the same assignment */
    struct qp_recipe *r, *back;
    struct qp_json *doc;
    REQUIRE_OK(qp_rsearch_recipe(qp_session_graph(f.s), &res, &o, &r, &err), &err);
    REQUIRE_OK(qp_recipe_to_json(r, &doc, &err), &err);
    char *text = qp_json_print(doc, true);
    REQUIRE(text);
    REQUIRE_OK(qp_recipe_parse(text, "'r.json'", &back, &err), &err);
    struct qp_qassign *a;
    REQUIRE_OK(qp_qassign_recipe(qp_session_graph(f.s), back, &a, NULL, &err), &err);
    const struct qp_qassign *want = res.assign;
    int wdiff = 0, adiff = 0;
    for (int i = 0; i < a->n_nodes; i++)
        wdiff += a->wq[i] != want->wq[i] ||
                 (a->wq[i] && !qp_wscheme_equal(&a->ws[i], &want->ws[i]));
    for (int v = 0; v < a->n_values; v++)
        adiff += a->aq[v] != want->aq[v] ||
                 (a->aq[v] && (a->as[v].f.bits != want->as[v].f.bits ||
                               a->as[v].f.asym != want->as[v].f.asym ||
                               a->as[v].range != want->as[v].range));
    CHECK_INT(wdiff, 0);
    CHECK_INT(adiff, 0);
    CHECK_NEAR(fresh_sqnr(&f, a, &err), fresh, 1e-9);
    qp_qassign_free(a);
    free(text);
    qp_json_free(doc);
    qp_recipe_free(back);
    qp_recipe_free(r);
    qp_rsearch_release(&res);
    teardown(&f);
}

QP_TEST(recipe_search_never_spends_past_the_budget)
{
    struct qp_error err;
    struct fixture f = {0};
    REQUIRE(setup(ctx, &f));
    struct qp_rsearch_opts o = opts(&f, QP_RT_SQNR, -1e6);
    struct qp_rsearch_result res;
    REQUIRE_OK(qp_recipe_search(f.s, f.eval, 2, &o, &res, &err), &err);
    struct qp_rstate base = res.steps[0].at;
    qp_rsearch_release(&res);
    /* room for one layer at 8 bits per channel, not for two */
    size_t one = QP_PLANTED_W * QP_PLANTED_W + 4 * QP_PLANTED_W;
    o = opts(&f, QP_RT_BYTES, (double)(base.bytes + one));
    for (int m = 0; m < 2; m++) {
        o.binary = m == 1;
        REQUIRE_OK(qp_recipe_search(f.s, f.eval, 2, &o, &res, &err), &err);
        for (size_t k = 0; k < res.nsteps; k++)
            if (res.steps[k].kind != QP_STEP_PROBE)
                CHECK(res.steps[k].at.bytes <= base.bytes + one);
        const struct qp_rstate *end = &res.steps[res.nsteps - 1].at;
        CHECK(end->bytes <= base.bytes + one);
        CHECK(end->calib_sqnr > base.calib_sqnr + 6);
        long w1 = unit_of(&res, "W1");
        REQUIRE(w1 >= 0);
        CHECK(res.level[w1] > 0); /* the one layer worth the bytes */
        qp_rsearch_release(&res);
    }
    teardown(&f);
}

QP_TEST(recipe_search_undoes_the_free_promotions_the_target_does_not_need)
{
    struct qp_error err;
    struct fixture f = {0};
    REQUIRE(setup(ctx, &f));
    /* 4-bit activations, weights fine: every promotion is free */
    REQUIRE_OK(qp_scheme_parse("w8c+a4t", &f.base, NULL, &err), &err);
    struct qp_rsearch_opts o = opts(&f, QP_RT_SQNR, -1e6);
    o.npromote = 1;
    struct qp_rsearch_result res;
    REQUIRE_OK(qp_recipe_search(f.s, f.eval, 2, &o, &res, &err), &err);
    double base = res.steps[0].at.calib_sqnr;
    qp_rsearch_release(&res);
    o.value = base + 6;
    REQUIRE_OK(qp_recipe_search(f.s, f.eval, 2, &o, &res, &err), &err);
    /* all six units at once (the base misses by far), then the ones the
     * target does not need undone: it still holds, at fewer BitOps */
    REQUIRE(res.nsteps == 3);
    CHECK(res.steps[1].kind == QP_STEP_BULK);
    CHECK_INT(res.steps[1].count, res.units.n);
    CHECK(res.steps[2].kind == QP_STEP_REVERT);
    size_t undone = res.steps[2].count, promoted = 0;
    CHECK(undone >= 1 && undone < res.units.n);
    for (size_t u = 0; u < res.units.n; u++)
        promoted += res.level[u] > 0;
    CHECK_INT(promoted, res.units.n - undone);
    const struct qp_rstate *end = &res.steps[2].at;
    CHECK(res.reached_calib && end->calib_sqnr >= base + 6);
    CHECK(end->calib_sqnr < res.steps[1].at.calib_sqnr);
    CHECK(end->bitops < res.steps[1].at.bitops);
    CHECK_NEAR(end->eval_sqnr, fresh_sqnr(&f, res.assign, &err), 1e-9);
    qp_rsearch_release(&res);
    teardown(&f);
}
