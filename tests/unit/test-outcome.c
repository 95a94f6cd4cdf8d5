/* tests/unit/test-outcome.c: the next-token perplexity of an outcome
 * against values computed by hand: only llama.cpp's scored rows (the
 * second half of each sequence, T/2 .. T-2) count, each predicting the
 * token after it. */
#include <math.h>

#include "analysis/outcome.h"
#include "tests/test.h"
#include "tests/unit/test-graph-util.h"

/* -log softmax(row)[k] of a 3-logit row, in double. */
static double nll3(const double *row, int k)
{
    double s = exp(row[0]) + exp(row[1]) + exp(row[2]);
    return log(s) - row[k];
}

QP_TEST(outcome_scores_next_token_perplexity_on_the_second_half)
{
    struct qp_error err;
    /* two sequences of T = 4 tokens, vocabulary 3: rows 2 (predicting
     * token 3) are the only scored ones */
    static const double ids[] = {0, 1, 2, 1, 2, 2, 0, 0};
    static const double ref[] = {9, 9, 9, 9, 9, 9, 0.5, 2.0, -1.0, 9, 9, 9,
                                 9, 9, 9, 9, 9, 9, 1.0, 0.0, 3.0, 9, 9, 9};
    static const double test[] = {0, 0, 0, 0, 0, 0, 0.0, 1.0, 0.5, 0, 0, 0,
                                  0, 0, 0, 0, 0, 0, 2.0, 2.0, 0.0, 0, 0, 0};
    struct qp_tensor *ti = tt("input_ids", QP_DTYPE_I32, 2, SHAPE(2, 4), ids);
    struct qp_tensor *tr = TF32("logits", 3, SHAPE(2, 4, 3), ref);
    struct qp_tensor *tq = TF32("logits", 3, SHAPE(2, 4, 3), test);
    REQUIRE(ti && tr && tq);
    CHECK(qp_outcome_tokens_apply(ti, tq));
    CHECK(!qp_outcome_tokens_apply(tr, tq)); /* float "ids" */
    struct qp_outcome o;
    qp_outcome_init(&o);
    REQUIRE_OK(qp_outcome_add_tokens(&o, ti, tr, tq, &err), &err);
    CHECK_INT(o.nll_rows, 2);
    double nr = (nll3(ref + 6, 1) + nll3(ref + 18, 0)) / 2;
    double nq = (nll3(test + 6, 1) + nll3(test + 18, 0)) / 2;
    CHECK_NEAR(qp_outcome_ppl(&o), exp(nq), 1e-5);
    CHECK_NEAR(qp_outcome_ppl_delta(&o), exp(nq) - exp(nr), 1e-5);
    /* a token outside the logits is refused */
    ((int32_t *)ti->data)[3] = 3;
    CHECK(qp_outcome_add_tokens(&o, ti, tr, tq, &err) == QP_E_INVAL);
    /* no scored rows: NaN, never a pass */
    struct qp_outcome e;
    qp_outcome_init(&e);
    CHECK(isnan(qp_outcome_ppl_delta(&e)));
    qp_tensor_free(ti);
    qp_tensor_free(tr);
    qp_tensor_free(tq);
}
