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
#include "tests/unit/planted-net.h"
#include "tests/unit/test-graph-util.h"

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
    struct qp_graph *g = qp_planted_net(ctx);
    REQUIRE(g);
    REQUIRE_OK(qp_session_new(g, "net", &s, &err), &err);
    for (unsigned k = 1; k <= 3; k++)
        REQUIRE_OK(qp_session_add_calib_feed(s, qp_planted_input(k), &err), &err);
    struct qp_tensor **sets[2] = {qp_planted_input(20), qp_planted_input(21)};
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
    CHECK_INT(res.units.u[w1].params, QP_PLANTED_W * QP_PLANTED_W);
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
