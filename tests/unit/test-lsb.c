/* tests/unit/test-lsb.c: errors in steps of the test tensor's scale
 * (analysis/lsb.h), hand-computed. */
#include <math.h>

#include "analysis/lsb.h"
#include "tests/test.h"
#include "tests/unit/test-graph-util.h"

QP_TEST(lsb_per_channel_steps_and_mismatches)
{
    struct qp_error err;
    /* test: int8 [2, 3], axis 1 scales {0.5, 0.25, 2}, zero points 0 */
    struct qp_tensor *t = tt("t", QP_DTYPE_I8, 2, SHAPE(2, 3), VALS(2, 4, 1, -2, 0, 3));
    float sc[3] = {0.5f, 0.25f, 2.0f};
    REQUIRE_OK(qp_tensor_set_qparams(t, 3, sc, NULL, 1, 0, &err), &err);
    /* dequantized: 1, 1, 2, -1, 0, 6; the reference is off by
     * 0.2, 0.1, 3, 0, 0.125, -1 -> in steps 0.4, 0.4, 1.5, 0, 0.5, 0.5 */
    struct qp_tensor *r = TF32("r", 2, SHAPE(2, 3), VALS(1.2, 1.1, 5, -1, 0.125, 5));
    struct qp_lsb l;
    REQUIRE_OK(qp_lsb_tensors(r, t, &l, &err), &err);
    CHECK(l.valid);
    CHECK_INT(l.n, 6);
    CHECK_NEAR(qp_lsb_mae(&l), (0.4 + 0.4 + 1.5 + 0 + 0.5 + 0.5) / 6, 1e-6);
    CHECK_NEAR(l.max, 1.5, 1e-6);
    CHECK_NEAR(qp_lsb_rmse(&l),
               sqrt((0.16 + 0.16 + 2.25 + 0 + 0.25 + 0.25) / 6), 1e-6);
    /* only the 1.5-step element is beyond half a step */
    CHECK_INT(l.mismatches, 1);
    /* an integer reference with the same parameters: codes compared */
    struct qp_tensor *c = tt("c", QP_DTYPE_I8, 2, SHAPE(2, 3), VALS(2, 4, 1, -2, 1, 3));
    REQUIRE_OK(qp_tensor_set_qparams(c, 3, sc, NULL, 1, 0, &err), &err);
    REQUIRE_OK(qp_lsb_tensors(c, t, &l, &err), &err);
    CHECK_INT(l.mismatches, 1);
    CHECK_NEAR(l.max, 1, 1e-6); /* one code apart */
    /* a float test tensor: not applicable */
    REQUIRE_OK(qp_lsb_tensors(t, r, &l, &err), &err);
    CHECK(!l.valid);
    CHECK(isnan(qp_lsb_mae(&l)));
    qp_tensor_free(t);
    qp_tensor_free(r);
    qp_tensor_free(c);
}

QP_TEST(lsb_blocked_scales_follow_the_block)
{
    struct qp_error err;
    /* [2, 4] blocked along axis 1 by 2: scales [2, 2] = {1, 2; 4, 8} */
    struct qp_tensor *t = tt("t", QP_DTYPE_I8, 2, SHAPE(2, 4),
                             VALS(1, 1, 1, 1, 1, 1, 1, 1));
    float sc[4] = {1, 2, 4, 8};
    REQUIRE_OK(qp_tensor_set_qparams(t, 4, sc, NULL, 1, 2, &err), &err);
    /* every reference element one unit above: 1, 1, 0.5, 0.5 steps on row
     * 0; 0.25, 0.25, 0.125, 0.125 on row 1 */
    struct qp_tensor *r = TF32("r", 2, SHAPE(2, 4), VALS(2, 2, 3, 3, 5, 5, 9, 9));
    struct qp_lsb l;
    REQUIRE_OK(qp_lsb_tensors(r, t, &l, &err), &err);
    CHECK_NEAR(l.max, 1, 1e-6);
    CHECK_NEAR(qp_lsb_mae(&l), (1 + 1 + 0.5 + 0.5 + 0.25 + 0.25 + 0.125 + 0.125) / 8,
               1e-6);
    CHECK_INT(l.mismatches, 2);
    qp_tensor_free(t);
    qp_tensor_free(r);
}
