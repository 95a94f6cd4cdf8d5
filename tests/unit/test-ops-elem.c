/* Operator tests: elementwise binary and unary operators, Cast, Clip,
 * Softmax, normalizations and reductions, with hand-computed values. */
#include <math.h>

#include "tests/unit/test-graph-util.h"

QP_TEST(ops_binary_broadcast_and_dtypes)
{
    {
        /* [2,3] + [3] row broadcast, and [2,1] column broadcast for Mul */
        struct qp_tensor *in[2] = {TF32("a", 2, SHAPE(2, 3), VALS(1, 2, 3, 4, 5, 6)),
                                   TF32("b", 1, SHAPE(3), VALS(10, 20, 30))};
        RUN1("Add", 14, 2, in, (void)0);
        CHECK_TENSOR(o.out[0], 2, SHAPE(2, 3), VALS(11, 22, 33, 14, 25, 36), 0);
        one_end(&o);
    }
    {
        struct qp_tensor *in[2] = {TF32("a", 2, SHAPE(2, 1), VALS(2, -1)),
                                   TF32("b", 2, SHAPE(1, 3), VALS(1, 2, 3))};
        RUN1("Mul", 14, 2, in, (void)0);
        CHECK_TENSOR(o.out[0], 2, SHAPE(2, 3), VALS(2, 4, 6, -1, -2, -3), 0);
        one_end(&o);
    }
    {
        struct qp_tensor *in[2] = {TF32("a", 1, SHAPE(3), VALS(1, -8, 9)),
                                   TF32("b", 0, NULL, VALS(2))};
        RUN1("Div", 14, 2, in, (void)0);
        CHECK_TENSOR(o.out[0], 1, SHAPE(3), VALS(0.5, -4, 4.5), 0);
        one_end(&o);
    }
    {
        /* uint8 wraps, int division truncates, x/0 is 0 */
        struct qp_tensor *in[2] = {tt("a", QP_DTYPE_U8, 1, SHAPE(3), VALS(250, 7, 9)),
                                   tt("b", QP_DTYPE_U8, 1, SHAPE(3), VALS(10, 2, 0))};
        RUN1("Add", 14, 2, in, (void)0);
        CHECK_INT(o.out[0]->dtype, QP_DTYPE_U8);
        CHECK_TENSOR(o.out[0], 1, SHAPE(3), VALS(4, 9, 9), 0);
        one_end(&o);
    }
    {
        struct qp_tensor *in[2] = {TI64("a", 1, SHAPE(3), VALS(-7, 7, 9)),
                                   TI64("b", 1, SHAPE(3), VALS(2, 2, 0))};
        RUN1("Div", 14, 2, in, (void)0);
        CHECK_TENSOR(o.out[0], 1, SHAPE(3), VALS(-3, 3, 0), 0);
        one_end(&o);
    }
    {
        /* Pow keeps the base's dtype; int ** int is exact */
        struct qp_tensor *in[2] = {TI64("a", 1, SHAPE(2), VALS(3, -2)),
                                   TI64("b", 1, SHAPE(2), VALS(39, 3))};
        RUN1("Pow", 15, 2, in, (void)0);
        CHECK_INT(((int64_t *)o.out[0]->data)[0], 4052555153018976267ll);
        CHECK_INT(((int64_t *)o.out[0]->data)[1], -8);
        one_end(&o);
    }
    {
        struct qp_tensor *in[2] = {TF32("a", 1, SHAPE(2), VALS(2, 9)),
                                   tt("b", QP_DTYPE_I32, 1, SHAPE(2), VALS(3, 0))};
        RUN1("Pow", 15, 2, in, (void)0);
        CHECK_INT(o.out[0]->dtype, QP_DTYPE_F32);
        CHECK_TENSOR(o.out[0], 1, SHAPE(2), VALS(8, 1), 0);
        one_end(&o);
    }
    {
        struct qp_tensor *in[2] = {TF32("a", 1, SHAPE(3), VALS(1, 5, 3)),
                                   TF32("b", 1, SHAPE(1), VALS(3))};
        RUN1("Less", 9, 2, in, (void)0);
        CHECK_INT(o.out[0]->dtype, QP_DTYPE_BOOL);
        CHECK_TENSOR(o.out[0], 1, SHAPE(3), VALS(1, 0, 0), 0);
        one_end(&o);
    }
    {
        struct qp_tensor *in[2] = {TF32("a", 1, SHAPE(2), VALS(1, 2)),
                                   TF32("b", 1, SHAPE(3), VALS(1, 2, 3))};
        RUN_FAILS("Sub", 14, 2, in, (void)0, QP_E_SHAPE,
                   "node 'n0' (Sub): shapes [2] and [3] do not broadcast");
        one_end(&o);
    }
}

QP_TEST(ops_binary_large_parallel_matches_serial)
{
    /* big enough to split across threads, with a per-channel broadcast */
    int64_t c = 7, hw = 50000;
    struct qp_tensor *a = TF32("a", 3, SHAPE(1, c, hw), NULL);
    struct qp_tensor *b = TF32("b", 3, SHAPE(1, c, 1), NULL);
    for (int64_t i = 0; i < c * hw; i++)
        ((float *)a->data)[i] = (float)(i % 1000) * 0.5f;
    for (int64_t i = 0; i < c; i++)
        ((float *)b->data)[i] = (float)i;
    struct qp_tensor *in[2] = {a, b};
    RUN1("Sub", 14, 2, in, (void)0);
    REQUIRE(o.out[0]);
    int bad = 0;
    for (int64_t i = 0; i < c * hw; i++)
        bad += ((float *)o.out[0]->data)[i] != (float)(i % 1000) * 0.5f - (float)(i / hw);
    CHECK_INT(bad, 0);
    one_end(&o);
}

QP_TEST(ops_activations)
{
    struct {
        const char *op;
        double x, y;
    } cases[] = {
        {"Relu", -2, 0},        {"Relu", 3, 3},
        {"LeakyRelu", -2, -0.02}, {"Sigmoid", 0, 0.5},
        {"Sigmoid", 2, 1 / (1 + exp(-2.0))},
        {"HardSigmoid", 1, 0.7}, {"HardSigmoid", 4, 1}, {"HardSigmoid", -4, 0},
        {"HardSwish", 1, 1 * (1.0 / 6 + 0.5)}, {"HardSwish", -4, 0},
        {"HardSwish", 4, 4},     {"Tanh", 0.5, tanh(0.5)},
        {"Erf", 0.5, erf(0.5)},  {"Gelu", 1, 0.5 * (1 + erf(1 / sqrt(2.0)))},
        {"Sqrt", 2.25, 1.5},     {"Exp", 1, exp(1.0)}, {"Neg", 2, -2},
        {"Abs", -3, 3},          {"Reciprocal", 4, 0.25}, {"Floor", -1.5, -2},
        {"Ceil", -1.5, -1},      {"Elu", -1, exp(-1.0) - 1}, {"Log", 1, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct qp_tensor *in[1] = {TF32("x", 1, SHAPE(1), VALS(cases[i].x))};
        RUN1(cases[i].op, 14, 1, in, (void)0);
        if (o.out[0])
            CHECK_NEAR(((float *)o.out[0]->data)[0], cases[i].y, 1e-6);
        else
            qp_test_failf(ctx, __FILE__, __LINE__, "%s", cases[i].op);
        one_end(&o);
    }
}

QP_TEST(ops_clip_forms)
{
    {
        /* opset 6: attributes */
        struct qp_tensor *in[1] = {TF32("x", 1, SHAPE(3), VALS(-5, 0.5, 5))};
        RUN1("Clip", 6, 1, in, (qp_node_set_float(n, "min", -1, &err),
                                qp_node_set_float(n, "max", 1, &err)));
        CHECK_TENSOR(o.out[0], 1, SHAPE(3), VALS(-1, 0.5, 1), 0);
        one_end(&o);
    }
    {
        /* opset 13: inputs; a missing min leaves the low side open */
        struct qp_tensor *in[3] = {TF32("x", 1, SHAPE(3), VALS(-5, 0.5, 5)), NULL,
                                   TF32("hi", 0, NULL, VALS(6))};
        RUN1("Clip", 13, 3, in, (void)0);
        CHECK_TENSOR(o.out[0], 1, SHAPE(3), VALS(-5, 0.5, 5), 0);
        one_end(&o);
    }
    {
        struct qp_tensor *in[3] = {tt("x", QP_DTYPE_I8, 1, SHAPE(3), VALS(-100, 3, 100)),
                                   tt("lo", QP_DTYPE_I8, 0, NULL, VALS(-10)),
                                   tt("hi", QP_DTYPE_I8, 0, NULL, VALS(10))};
        RUN1("Clip", 13, 3, in, (void)0);
        CHECK_TENSOR(o.out[0], 1, SHAPE(3), VALS(-10, 3, 10), 0);
        one_end(&o);
    }
}

QP_TEST(ops_cast)
{
    struct qp_tensor *in[1] = {TF32("x", 1, SHAPE(4), VALS(-2.7, 2.7, 300, 0))};
    RUN1("Cast", 13, 1, in, qp_node_set_int(n, "to", 3, &err)); /* int8 */
    CHECK_INT(o.out[0]->dtype, QP_DTYPE_I8);
    CHECK_TENSOR(o.out[0], 1, SHAPE(4), VALS(-2, 2, 127, 0), 0);
    one_end(&o);
    struct qp_tensor *in2[1] = {TI64("x", 1, SHAPE(2), VALS(3, -1))};
    {
        RUN1("Cast", 13, 1, in2, qp_node_set_int(n, "to", 10, &err)); /* f16 */
        CHECK_INT(o.out[0]->dtype, QP_DTYPE_F16);
        CHECK_INT(((uint16_t *)o.out[0]->data)[0], 0x4200);
        CHECK_INT(((uint16_t *)o.out[0]->data)[1], 0xbc00);
        one_end(&o);
    }
    struct qp_tensor *in3[1] = {TF32("x", 1, SHAPE(1), VALS(1))};
    {
        RUN_FAILS("Cast", 13, 1, in3, qp_node_set_int(n, "to", 8, &err),
                   QP_E_UNSUPPORTED, "cannot cast to ONNX data type 8");
        one_end(&o);
    }
}

QP_TEST(ops_softmax_axis_semantics)
{
    /* opset 13: along the last axis only */
    double e1 = exp(1.0), e2 = exp(2.0);
    struct qp_tensor *in[1] = {TF32("x", 2, SHAPE(2, 2), VALS(0, 1, 0, 2))};
    {
        RUN1("Softmax", 13, 1, in, (void)0);
        CHECK_TENSOR(o.out[0], 2, SHAPE(2, 2),
                     VALS(1 / (1 + e1), e1 / (1 + e1), 1 / (1 + e2), e2 / (1 + e2)),
                     1e-6);
        one_end(&o);
    }
    /* opset 11, axis 0: the whole [2,2] is one row */
    struct qp_tensor *in2[1] = {TF32("x", 2, SHAPE(2, 2), VALS(0, 1, 0, 2))};
    {
        RUN1("Softmax", 11, 1, in2, qp_node_set_int(n, "axis", 0, &err));
        double s = 2 + e1 + e2;
        CHECK_TENSOR(o.out[0], 2, SHAPE(2, 2), VALS(1 / s, e1 / s, 1 / s, e2 / s),
                     1e-6);
        one_end(&o);
    }
    /* opset 13, axis 0 of [2,2]: along columns */
    struct qp_tensor *in3[1] = {TF32("x", 2, SHAPE(2, 2), VALS(0, 1, 0, 2))};
    {
        RUN1("Softmax", 13, 1, in3, qp_node_set_int(n, "axis", 0, &err));
        CHECK_TENSOR(o.out[0], 2, SHAPE(2, 2),
                     VALS(0.5, e1 / (e1 + e2), 0.5, e2 / (e1 + e2)), 1e-6);
        one_end(&o);
    }
}

QP_TEST(ops_normalizations)
{
    {
        /* LayerNorm over the last axis: rows [1,2,3] and [0,3,6] both
         * normalize to [-r, 0, r] with r = sqrt(3/2) */
        struct qp_tensor *in[3] = {TF32("x", 2, SHAPE(2, 3), VALS(1, 2, 3, 0, 3, 6)),
                                   TF32("s", 1, SHAPE(3), VALS(1, 2, 1)),
                                   TF32("b", 1, SHAPE(3), VALS(0, 0, 1))};
        RUN1("LayerNormalization", 17, 3, in,
             qp_node_set_float(n, "epsilon", 0, &err));
        double r = sqrt(1.5);
        CHECK_TENSOR(o.out[0], 2, SHAPE(2, 3), VALS(-r, 0, r + 1, -r, 0, r + 1),
                     1e-5);
        one_end(&o);
    }
    {
        /* BatchNorm standalone: (x - mean)/sqrt(var+eps)*scale + bias */
        struct qp_tensor *in[5] = {TF32("x", 4, SHAPE(1, 2, 1, 2), VALS(1, 3, 5, 7)),
                                   TF32("s", 1, SHAPE(2), VALS(2, 1)),
                                   TF32("b", 1, SHAPE(2), VALS(0, 1)),
                                   TF32("m", 1, SHAPE(2), VALS(1, 5)),
                                   TF32("v", 1, SHAPE(2), VALS(4, 1))};
        RUN1("BatchNormalization", 15, 5, in,
             qp_node_set_float(n, "epsilon", 0, &err));
        CHECK_TENSOR(o.out[0], 4, SHAPE(1, 2, 1, 2), VALS(0, 2, 1, 3), 1e-6);
        one_end(&o);
    }
    {
        struct qp_tensor *in[1] = {TF32("x", 3, SHAPE(2, 2, 2),
                                        VALS(1, 2, 3, 4, 5, 6, 7, 8))};
        RUN1("ReduceMean", 13, 1, in,
             qp_node_set_ints(n, "axes", SHAPE(-1, 0), 2, &err));
        /* mean over axes 0 and 2, keepdims: [1,2,1] */
        CHECK_TENSOR(o.out[0], 3, SHAPE(1, 2, 1), VALS(3.5, 5.5), 1e-6);
        one_end(&o);
    }
    {
        struct qp_tensor *in[2] = {TF32("x", 2, SHAPE(2, 2), VALS(1, -2, 3, 4)),
                                   TI64("ax", 1, SHAPE(1), VALS(1))};
        RUN1("ReduceSum", 13, 2, in, qp_node_set_int(n, "keepdims", 0, &err));
        CHECK_TENSOR(o.out[0], 1, SHAPE(2), VALS(-1, 7), 0);
        one_end(&o);
    }
    {
        struct qp_tensor *in[1] = {TF32("x", 2, SHAPE(2, 2), VALS(1, -2, 3, 4))};
        RUN1("ReduceMax", 13, 1, in, qp_node_set_int(n, "keepdims", 0, &err));
        CHECK_TENSOR(o.out[0], 0, SHAPE(0), VALS(4), 0);
        one_end(&o);
    }
}

QP_TEST(ops_quantize_dequantize_linear)
{
    {
        /* ONNX rounds half to even: 0.5 -> 0, 1.5 -> 2, 2.5 -> 2; then the
         * zero point, and saturation */
        struct qp_tensor *in[3] = {
            TF32("x", 1, SHAPE(5), VALS(0.5, 1.5, 2.5, -0.5, 1000)),
            TF32("s", 0, NULL, VALS(1)), tt("z", QP_DTYPE_I8, 0, NULL, VALS(3))};
        RUN1("QuantizeLinear", 13, 3, in, (void)0);
        CHECK_INT(o.out[0]->dtype, QP_DTYPE_I8);
        CHECK_TENSOR(o.out[0], 1, SHAPE(5), VALS(3, 5, 5, 3, 127), 0);
        one_end(&o);
    }
    {
        /* per axis 1: scales 2 and 0.5, zero points 1 and -1 */
        struct qp_tensor *in[3] = {
            tt("x", QP_DTYPE_I8, 2, SHAPE(2, 2), VALS(1, 3, -1, 5)),
            TF32("s", 1, SHAPE(2), VALS(2, 0.5)),
            tt("z", QP_DTYPE_I8, 1, SHAPE(2), VALS(1, -1))};
        RUN1("DequantizeLinear", 13, 3, in, (void)0);
        CHECK_TENSOR(o.out[0], 2, SHAPE(2, 2), VALS(0, 2, -4, 3), 0);
        one_end(&o);
    }
}
