/* tests/unit/test-sensitivity.c: sensitivity on a graph whose answer is
 * known by construction: a layer with a planted weight outlier ranks first
 * and says so; the layer after it, fully quantized, inherits the error. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/sens-report.h"
#include "analysis/sensitivity.h"
#include "model/session.h"
#include "tests/test.h"
#include "tests/unit/test-graph-util.h"

#define W 24

/* x[8,W] -> MatMul W0 -> Relu -> MatMul W1 -> Relu -> MatMul W2 -> y; W1
 * holds one weight 200x the others, on the row that reads r0's column 0,
 * which W0 keeps at zero: the outlier adds nothing to the output but sets
 * W1's per-tensor grid. */
static struct qp_graph *net(struct qp_test_ctx *ctx)
{
    struct qp_graph *g;
    struct qp_error err;
    if (qp_graph_new("net", &g, &err))
        return NULL;
    bool ok = !qp_graph_add_input(g, "x", QP_DTYPE_F32, 2, SHAPE(8, W), &err);
    const char *prev = "x";
    static const char *const wn[] = {"W0", "W1", "W2"}, *hn[] = {"h0", "h1", "y"},
                             *rn[] = {"r0", "r1", NULL};
    unsigned seed = 11;
    for (int l = 0; ok && l < 3; l++) {
        struct qp_tensor *w = TF32(wn[l], 2, SHAPE(W, W), NULL);
        for (int i = 0; w && i < W * W; i++) {
            seed = seed * 1103515245u + 12345u;
            ((float *)w->data)[i] = ((float)((seed >> 8) % 2001) - 1000.0f) / 3000.0f;
        }
        if (w && l == 0) /* column 0 of h0 (and so of r0) is zero */
            for (int i = 0; i < W; i++)
                ((float *)w->data)[i * W] = 0.0f;
        if (w && l == 1)
            ((float *)w->data)[5] = 66.0f; /* row 0: the planted outlier */
        const char *mi[2] = {prev, wn[l]}, *mo[1] = {hn[l]};
        ok = w && !qp_graph_add_const(g, w, &err) &&
             !qp_graph_add_node(g, "MatMul", "", 13, hn[l], 2, mi, 1, mo, NULL,
                                &err);
        if (ok && rn[l]) {
            const char *ri[1] = {hn[l]}, *ro[1] = {rn[l]};
            ok = !qp_graph_add_node(g, "Relu", "", 13, rn[l], 1, ri, 1, ro, NULL,
                                    &err);
        }
        prev = rn[l] ? rn[l] : hn[l];
    }
    ok = ok && !qp_graph_add_output(g, "y", &err) && !qp_graph_finalize(g, &err);
    if (!ok) {
        qp_test_failf(ctx, __FILE__, __LINE__, "net: %s", err.msg);
        qp_graph_free(g);
        return NULL;
    }
    return g;
}

static struct qp_tensor **input(unsigned seed)
{
    struct qp_tensor **feed = calloc(1, sizeof *feed);
    feed[0] = TF32("x", 2, SHAPE(8, W), NULL);
    for (int i = 0; i < 8 * W; i++) {
        seed = seed * 1103515245u + 12345u;
        ((float *)feed[0]->data)[i] = ((float)((seed >> 8) % 2001) - 1000.0f) / 1000.0f;
    }
    return feed;
}

static long unit_of(const struct qp_sens_result *r, const char *name)
{
    for (size_t i = 0; i < r->units.n; i++)
        if (!strcmp(r->units.u[i].name, name))
            return (long)i;
    return -1;
}

QP_TEST(sensitivity_finds_the_planted_outlier_and_the_inheritor)
{
    struct qp_error err;
    struct qp_session *s;
    struct qp_graph *g = net(ctx);
    REQUIRE(g);
    REQUIRE_OK(qp_session_new(g, "net", &s, &err), &err);
    for (unsigned k = 1; k <= 3; k++)
        REQUIRE_OK(qp_session_add_calib_feed(s, input(k), &err), &err);
    struct qp_tensor **sets[2] = {input(20), input(21)};
    struct qp_scheme sc;
    REQUIRE_OK(qp_scheme_parse("w4t+a8t", &sc, NULL, &err), &err);
    struct qp_sens_opts o = {QP_MODE_FAKE, &sc, QP_RQ_TFLITE_DOUBLE, false, NULL,
                             0, QP_SENS_IN | QP_SENS_OUT,
                             1u << QP_SP_W | 1u << QP_SP_A | 1u << QP_SP_WA, 0,
                             NULL};
    struct qp_sens_result res;
    REQUIRE_OK(qp_sensitivity(s, sets, 2, &o, &res, &err), &err);
    /* units: the input, three weighted layers, two Relu outputs */
    CHECK_INT(res.units.n, 6);
    long w0 = unit_of(&res, "W0"), w1 = unit_of(&res, "W1"), w2 = unit_of(&res, "W2");
    REQUIRE(w0 >= 0 && w1 >= 0 && w2 >= 0 && unit_of(&res, "r0") >= 0 &&
            unit_of(&res, "x") >= 0);
    CHECK_INT(res.units.u[w1].params, W * W);
    /* W1's 4-bit per-tensor grid is set by the outlier: its one-in weight
     * damage is the worst and it ranks first */
    size_t *order;
    REQUIRE_OK(qp_sens_order(&res, &order, &err), &err);
    CHECK_STR(res.units.u[order[0]].name, "W1");
    CHECK(res.rows[w1].in[QP_SP_W].sqnr < res.rows[w0].in[QP_SP_W].sqnr - 10);
    CHECK(res.rows[w1].in[QP_SP_W].sqnr < res.rows[w2].in[QP_SP_W].sqnr - 10);
    CHECK(res.rows[w1].w_kurtosis > 100);
    CHECK(strstr(res.rows[w1].hint, "weights:") != NULL);
    CHECK(strstr(res.rows[w1].hint, "outliers") != NULL);
    /* one-out: keeping W1 float recovers most of the output */
    CHECK(res.rows[w1].out[QP_SP_W].sqnr > res.all.sqnr + 10);
    /* W2 fed W1's damaged output: on its own fine, accumulated not */
    CHECK(res.rows[w2].accum_sqnr < res.rows[w2].local_sqnr - 6);
    CHECK(strstr(res.rows[w2].hint, "inherits error") != NULL);
    /* the first layer reads the same input either way */
    CHECK_NEAR(res.rows[w0].accum_sqnr, res.rows[w0].local_sqnr, 1e-9);
    /* the one-in weight score equals a fresh run with only W1 quantized */
    struct qp_qassign *a;
    REQUIRE_OK(qp_qassign_new(qp_session_graph(s), &a, &err), &err);
    a->wq[res.units.u[w1].nodes[0]] = true;
    a->ws[res.units.u[w1].nodes[0]] = sc.w;
    struct qp_session_cfg cfg = {.mode = QP_MODE_FAKE, .assign = a,
        .flavor = QP_RQ_TFLITE_DOUBLE};
    struct qp_splan *p;
    REQUIRE_OK(qp_session_plan(s, &cfg, &p, &err), &err);
    struct qp_outcome oc;
    qp_outcome_init(&oc);
    for (int k = 0; k < 2; k++) {
        struct qp_tensor *ref[1], *got[1];
        REQUIRE_OK(qp_session_run(s, NULL, (const struct qp_tensor *const *)sets[k],
                                  NULL, ref, NULL, &err), &err);
        REQUIRE_OK(qp_session_run(s, p, (const struct qp_tensor *const *)sets[k],
                                  NULL, got, NULL, &err), &err);
        REQUIRE_OK(qp_outcome_add(&oc, ref[0], got[0], &err), &err);
        qp_tensor_free(ref[0]);
        qp_tensor_free(got[0]);
    }
    CHECK_NEAR(res.rows[w1].in[QP_SP_W].sqnr, qp_outcome_sqnr(&oc), 1e-9);
    /* one-in over 3 weighted layers: each run recomputes its layer onward */
    CHECK(res.passes > 0 && res.passes < (double)res.runs);
    qp_splan_free(p);
    qp_qassign_free(a);
    free(order);
    qp_sens_release(&res);
    for (int k = 0; k < 2; k++)
        qp_session_free_inputs(s, sets[k]);
    qp_session_free(s);
}
