/* Operator tests: shape and layout operators (Reshape, Flatten, Squeeze,
 * Unsqueeze, Shape, Transpose, Concat, Slice, Split, Gather, Pad, Expand,
 * Tile, Where) and Resize, with hand-computed values. */
#include "tests/unit/test-graph-util.h"

static struct qp_tensor *iota(const char *name, int nd, const int64_t *sh)
{
    struct qp_tensor *t = TF32(name, nd, sh, NULL);
    for (size_t i = 0; t && i < qp_tensor_numel(t); i++)
        ((float *)t->data)[i] = (float)i;
    return t;
}

QP_TEST(ops_reshape_family)
{
    {
        /* 0 copies the input dim, -1 is inferred */
        struct qp_tensor *in[2] = {iota("x", 3, SHAPE(2, 3, 4)),
                                   TI64("s", 1, SHAPE(2), VALS(0, -1))};
        RUN("Reshape", 14, 2, in, 1, (void)0);
        CHECK_INT(o.out[0]->ndim, 2);
        CHECK_INT(o.out[0]->shape[1], 12);
        one_end(&o);
    }
    {
        struct qp_tensor *in[2] = {iota("x", 1, SHAPE(6)),
                                   TI64("s", 1, SHAPE(2), VALS(-1, -1))};
        RUN_FAILS("Reshape", 14, 2, in, (void)0, QP_E_SHAPE, "shape has two -1");
        one_end(&o);
    }
    {
        struct qp_tensor *in[1] = {iota("x", 4, SHAPE(2, 3, 4, 5))};
        RUN("Flatten", 13, 1, in, 1, qp_node_set_int(n, "axis", -2, &err));
        CHECK_INT(o.out[0]->shape[0], 6);
        CHECK_INT(o.out[0]->shape[1], 20);
        one_end(&o);
    }
    {
        struct qp_tensor *in[1] = {iota("x", 4, SHAPE(1, 3, 1, 2))};
        RUN("Squeeze", 11, 1, in, 1, (void)0); /* no axes: every 1 */
        CHECK_TENSOR(o.out[0], 2, SHAPE(3, 2), VALS(0, 1, 2, 3, 4, 5), 0);
        one_end(&o);
    }
    {
        struct qp_tensor *in[2] = {iota("x", 2, SHAPE(3, 2)),
                                   TI64("a", 1, SHAPE(2), VALS(-1, 0))};
        RUN("Unsqueeze", 13, 2, in, 1, (void)0);
        int64_t want[4] = {1, 3, 2, 1};
        CHECK_INT(o.out[0]->ndim, 4);
        for (int d = 0; d < 4 && o.out[0]->ndim == 4; d++)
            CHECK_INT(o.out[0]->shape[d], want[d]);
        one_end(&o);
    }
    {
        struct qp_tensor *in[1] = {iota("x", 3, SHAPE(2, 3, 4))};
        RUN("Shape", 15, 1, in, 1, qp_node_set_int(n, "start", -2, &err));
        CHECK_INT(o.out[0]->dtype, QP_DTYPE_I64);
        CHECK_TENSOR(o.out[0], 1, SHAPE(2), VALS(3, 4), 0);
        one_end(&o);
    }
}

QP_TEST(ops_transpose_concat_split)
{
    {
        struct qp_tensor *in[1] = {iota("x", 3, SHAPE(2, 3, 2))};
        RUN("Transpose", 13, 1, in, 1,
            qp_node_set_ints(n, "perm", SHAPE(1, 2, 0), 3, &err));
        /* out[i][j][k] = x[k][i][j] */
        CHECK_TENSOR(o.out[0], 3, SHAPE(3, 2, 2),
                     VALS(0, 6, 1, 7, 2, 8, 3, 9, 4, 10, 5, 11), 0);
        one_end(&o);
    }
    {
        struct qp_tensor *in[2] = {iota("a", 2, SHAPE(2, 1)), iota("b", 2, SHAPE(2, 2))};
        RUN("Concat", 13, 2, in, 1, qp_node_set_int(n, "axis", -1, &err));
        CHECK_TENSOR(o.out[0], 2, SHAPE(2, 3), VALS(0, 0, 1, 1, 2, 3), 0);
        one_end(&o);
    }
    {
        struct qp_tensor *in[2] = {iota("x", 2, SHAPE(2, 5)),
                                   TI64("s", 1, SHAPE(2), VALS(2, 3))};
        RUN("Split", 13, 2, in, 2, qp_node_set_int(n, "axis", 1, &err));
        CHECK_TENSOR(o.out[0], 2, SHAPE(2, 2), VALS(0, 1, 5, 6), 0);
        CHECK_TENSOR(o.out[1], 2, SHAPE(2, 3), VALS(2, 3, 4, 7, 8, 9), 0);
        one_end(&o);
    }
    {
        struct qp_tensor *in[2] = {iota("x", 1, SHAPE(5)),
                                   TI64("s", 1, SHAPE(2), VALS(2, 2))};
        struct one_node o;
        struct qp_error err;
        REQUIRE(one_begin(&o, "Split", 13, 2, in, 2, &err));
        CHECK_FAILS(one_run(&o, &err), QP_E_SHAPE, &err,
                    "split sizes add up to 4, the axis has 5");
        one_end(&o);
    }
}

QP_TEST(ops_slice_clamps_and_steps)
{
    {
        /* opset 13: starts/ends/axes/steps inputs, negative step, sentinels */
        struct qp_tensor *in[5] = {iota("x", 2, SHAPE(3, 4)),
                                   TI64("s", 1, SHAPE(2), VALS(-1, 1)),
                                   TI64("e", 1, SHAPE(2), VALS(-1e18, 1e18)),
                                   TI64("a", 1, SHAPE(2), VALS(1, 0)),
                                   TI64("p", 1, SHAPE(2), VALS(-2, 1))};
        RUN("Slice", 13, 5, in, 1, (void)0);
        /* rows 1..2, cols 3,1 */
        CHECK_TENSOR(o.out[0], 2, SHAPE(2, 2), VALS(7, 5, 11, 9), 0);
        one_end(&o);
    }
    {
        /* opset 9: attributes */
        struct qp_tensor *in[1] = {TI64("x", 1, SHAPE(4), VALS(10, 20, 30, 40))};
        RUN("Slice", 9, 1, in, 1,
            (qp_node_set_ints(n, "starts", SHAPE(1), 1, &err),
             qp_node_set_ints(n, "ends", SHAPE(100), 1, &err),
             qp_node_set_ints(n, "axes", SHAPE(0), 1, &err)));
        CHECK_TENSOR(o.out[0], 1, SHAPE(3), VALS(20, 30, 40), 0);
        one_end(&o);
    }
}

QP_TEST(ops_gather_pad_expand_tile_where)
{
    {
        struct qp_tensor *in[2] = {iota("x", 2, SHAPE(3, 2)),
                                   TI64("i", 2, SHAPE(2, 1), VALS(-1, 0))};
        RUN("Gather", 13, 2, in, 1, (void)0);
        CHECK_TENSOR(o.out[0], 3, SHAPE(2, 1, 2), VALS(4, 5, 0, 1), 0);
        one_end(&o);
    }
    {
        struct qp_tensor *in[2] = {iota("x", 1, SHAPE(3)), TI64("i", 0, NULL, VALS(3))};
        RUN_FAILS("Gather", 13, 2, in, (void)0, QP_E_SHAPE,
                  "index 3 is out of range for an axis of 3");
        one_end(&o);
    }
    const char *modes[3] = {"constant", "reflect", "edge"};
    const double want[3][7] = {{9, 9, 0, 1, 2, 9, 9},
                               {2, 1, 0, 1, 2, 1, 0},
                               {0, 0, 0, 1, 2, 2, 2}};
    for (int m = 0; m < 3; m++) {
        struct qp_tensor *in[3] = {iota("x", 1, SHAPE(3)),
                                   TI64("p", 1, SHAPE(2), VALS(2, 2)),
                                   TF32("v", 0, NULL, VALS(9))};
        RUN("Pad", 13, 3, in, 1, qp_node_set_string(n, "mode", modes[m], &err));
        CHECK_TENSOR(o.out[0], 1, SHAPE(7), want[m], 0);
        one_end(&o);
    }
    {
        /* negative pads crop */
        struct qp_tensor *in[2] = {iota("x", 2, SHAPE(2, 3)),
                                   TI64("p", 1, SHAPE(4), VALS(0, -1, 0, 1))};
        RUN("Pad", 13, 2, in, 1, (void)0);
        CHECK_TENSOR(o.out[0], 2, SHAPE(2, 3), VALS(1, 2, 0, 4, 5, 0), 0);
        one_end(&o);
    }
    {
        struct qp_tensor *in[2] = {iota("x", 2, SHAPE(2, 1)),
                                   TI64("s", 1, SHAPE(3), VALS(2, 1, 3))};
        RUN("Expand", 13, 2, in, 1, (void)0);
        CHECK_TENSOR(o.out[0], 3, SHAPE(2, 2, 3),
                     VALS(0, 0, 0, 1, 1, 1, 0, 0, 0, 1, 1, 1), 0);
        one_end(&o);
    }
    {
        /* rows copied whole: the outer dims broadcast, the last is the input's */
        struct qp_tensor *in[2] = {iota("x", 1, SHAPE(3)),
                                   TI64("s", 1, SHAPE(3), VALS(2, 2, 3))};
        RUN("Expand", 13, 2, in, 1, (void)0);
        CHECK_TENSOR(o.out[0], 3, SHAPE(2, 2, 3),
                     VALS(0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2), 0);
        one_end(&o);
    }
    {
        /* a row of 5 filled from one element (copies of 1, 2 and 1 after it) */
        struct qp_tensor *in[2] = {iota("x", 2, SHAPE(2, 1)),
                                   TI64("s", 1, SHAPE(2), VALS(2, 5))};
        RUN("Expand", 13, 2, in, 1, (void)0);
        CHECK_TENSOR(o.out[0], 2, SHAPE(2, 5), VALS(0, 0, 0, 0, 0, 1, 1, 1, 1, 1), 0);
        one_end(&o);
    }
    {
        struct qp_tensor *in[2] = {iota("x", 2, SHAPE(1, 2)),
                                   TI64("r", 1, SHAPE(2), VALS(2, 2))};
        RUN("Tile", 13, 2, in, 1, (void)0);
        CHECK_TENSOR(o.out[0], 2, SHAPE(2, 4), VALS(0, 1, 0, 1, 0, 1, 0, 1), 0);
        one_end(&o);
    }
    {
        struct qp_tensor *in[3] = {tt("c", QP_DTYPE_BOOL, 1, SHAPE(2), VALS(1, 0)),
                                   TF32("a", 2, SHAPE(2, 1), VALS(1, 2)),
                                   TF32("b", 0, NULL, VALS(-1))};
        RUN("Where", 16, 3, in, 1, (void)0);
        CHECK_TENSOR(o.out[0], 2, SHAPE(2, 2), VALS(1, -1, 2, -1), 0);
        one_end(&o);
    }
    {
        /* three operands broadcasting on different dims of a 2x2x3 output */
        struct qp_tensor *in[3] = {tt("c", QP_DTYPE_BOOL, 3, SHAPE(2, 1, 3),
                                      VALS(1, 0, 1, 0, 1, 1)),
                                   TF32("a", 1, SHAPE(3), VALS(10, 20, 30)),
                                   TF32("b", 3, SHAPE(2, 2, 1), VALS(-1, -2, -3, -4))};
        RUN("Where", 16, 3, in, 1, (void)0);
        CHECK_TENSOR(o.out[0], 3, SHAPE(2, 2, 3),
                     VALS(10, -1, 30, 10, -2, 30, -3, 20, 30, -4, 20, 30), 0);
        one_end(&o);
    }
}

QP_TEST(ops_resize_modes)
{
    {
        /* the PP-OCR detector's form: nearest, asymmetric, floor, x2 */
        struct qp_tensor *in[3] = {TF32("x", 4, SHAPE(1, 1, 2, 2), VALS(1, 2, 3, 4)),
                                   TF32("roi", 1, SHAPE(0), NULL),
                                   TF32("s", 1, SHAPE(4), VALS(1, 1, 2, 2))};
        RUN("Resize", 11, 3, in, 1,
            (qp_node_set_string(n, "coordinate_transformation_mode", "asymmetric",
                                &err),
             qp_node_set_string(n, "nearest_mode", "floor", &err)));
        CHECK_TENSOR(o.out[0], 4, SHAPE(1, 1, 4, 4),
                     VALS(1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4), 0);
        one_end(&o);
    }
    {
        /* an output larger than the machine's memory (2^20 x 2^20 floats =
         * 4 TiB) is refused with its size, before any allocation (libFuzzer
         * found ASan aborting on the request) */
        struct qp_tensor *in[3] = {TF32("x", 4, SHAPE(1, 1, 2, 2), VALS(1, 2, 3, 4)),
                                   TF32("roi", 1, SHAPE(0), NULL),
                                   TF32("s", 1, SHAPE(4), VALS(1, 1, 524288, 524288))};
        RUN_FAILS("Resize", 11, 3, in, (void)0, QP_E_NOMEM,
                  "needs 4.4e+03 GB (4398046511104 bytes), more than this machine's");
        one_end(&o);
    }
    {
        /* linear, half_pixel, 2 -> 4: source coords -0.25, 0.25, 0.75, 1.25
         * clamped to [0,1] */
        struct qp_tensor *in[3] = {TF32("x", 3, SHAPE(1, 1, 2), VALS(0, 4)), NULL,
                                   TF32("s", 1, SHAPE(3), VALS(1, 1, 2))};
        RUN("Resize", 13, 3, in, 1, qp_node_set_string(n, "mode", "linear", &err));
        CHECK_TENSOR(o.out[0], 3, SHAPE(1, 1, 4), VALS(0, 1, 3, 4), 1e-6);
        one_end(&o);
    }
    {
        /* align_corners with sizes: 2 -> 3 gives the midpoint */
        struct qp_tensor *in[4] = {TF32("x", 2, SHAPE(1, 2), VALS(0, 4)), NULL, NULL,
                                   TI64("sz", 1, SHAPE(2), VALS(1, 3))};
        RUN("Resize", 13, 4, in, 1,
            (qp_node_set_string(n, "mode", "linear", &err),
             qp_node_set_string(n, "coordinate_transformation_mode",
                                "align_corners", &err)));
        CHECK_TENSOR(o.out[0], 2, SHAPE(1, 3), VALS(0, 2, 4), 1e-6);
        one_end(&o);
    }
    {
        /* round_prefer_ceil on ties: half_pixel 4 -> 2 gives coords 0.5
         * and 2.5: ceil picks 1 and 3 */
        struct qp_tensor *in[3] = {TF32("x", 1, SHAPE(4), VALS(10, 11, 12, 13)), NULL,
                                   TF32("s", 1, SHAPE(1), VALS(0.5))};
        RUN("Resize", 13, 3, in, 1,
            qp_node_set_string(n, "nearest_mode", "round_prefer_ceil", &err));
        CHECK_TENSOR(o.out[0], 1, SHAPE(2), VALS(11, 13), 0);
        one_end(&o);
    }
}
