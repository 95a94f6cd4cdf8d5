/* The int mode of models with their own quantization (model/qdq.c), on
 * QDQ and QLinear models built byte by byte (tests/unit/pbtest.h). The
 * cases sit on requantization ties, where the flavors part: the fp32 run
 * of a QDQ graph rounds the float result half to even (ONNX's
 * QuantizeLinear), TFLite's fixed-point arithmetic rounds half away from
 * zero, ONNX Runtime's float multiply half to even. */
#include "model/qdq.h"
#include "tests/unit/test-graph-util.h"
#include "tests/unit/test-qdq-model.h"

static void scalar_i8(struct pbe *g, const char *name, int8_t v)
{
    qm_scalar_q(g, name, T_I8, v);
}

static void value(struct pbe *g, unsigned field, const char *name, int elem,
                  int nd, const int64_t *dims)
{
    pb_value(g, field, name, elem, dims, nd);
}

static void node(struct pbe *g, const char *op, const char *ins, const char *out)
{
    qm_node(g, op, ins, out, NULL);
}

static struct qp_graph *load(struct qp_test_ctx *ctx, struct pbe *gr)
{
    struct pbe m;
    qm_model(gr, &m);
    struct qp_graph *g = qm_load(ctx, &m);
    free(m.p);
    return g;
}

/* y = DQ(Q(op(DQ(Q(x)), ...))) with op a 1x1 Conv of weight DQ(1), a
 * MatMul with the same weight, or an Add of DQ(Q(x)) and DQ(Q(x2)); the
 * output Q has scale 2, so sums of 5 land on the tie 2.5 */
static struct qp_graph *qdq_model(struct qp_test_ctx *ctx, const char *op)
{
    struct pbe g = {0};
    const int8_t one = 1;
    bool conv = !strcmp(op, "Conv"), add = !strcmp(op, "Add");
    int64_t xs[4] = {1, 1, 1, 3}, ws4[4] = {1, 1, 1, 1}, ws2[2] = {1, 1};
    int64_t col[2] = {3, 1}; /* MatMul: x [3,1] . w [1,1] */
    const int64_t *xd = conv ? xs : add ? xs + 2 : col;
    value(&g, G_INPUT, "x", 1, conv ? 4 : 2, xd);
    if (add)
        value(&g, G_INPUT, "x2", 1, 2, xs + 2);
    qm_scalar_f(&g, "s1", 1.0f);
    qm_scalar_f(&g, "s2", 2.0f);
    scalar_i8(&g, "z", 0);
    qm_init(&g, "wq", 3, conv ? 4 : 2, conv ? ws4 : ws2, &one, 1);
    node(&g, "QuantizeLinear", "x,s1,z", "xq");
    node(&g, "DequantizeLinear", "xq,s1,z", "xd");
    if (add) {
        node(&g, "QuantizeLinear", "x2,s1,z", "x2q");
        node(&g, "DequantizeLinear", "x2q,s1,z", "x2d");
        node(&g, "Add", "xd,x2d", "r");
    } else {
        node(&g, "DequantizeLinear", "wq,s1,z", "wd");
        node(&g, op, conv ? "xd,wd" : "xd,wd", "r");
    }
    node(&g, "QuantizeLinear", "r,s2,z", "rq");
    node(&g, "DequantizeLinear", "rq,s2,z", "y");
    value(&g, G_OUTPUT, "y", 1, conv ? 4 : 2, xd);
    return load(ctx, &g);
}

/* Runs g on x (and x2) in fp32 (f < 0) or the int mode of flavor f. */
static void run(struct qp_test_ctx *ctx, const struct qp_graph *g, int f,
                const struct qp_tensor *x, const struct qp_tensor *x2,
                const double *want, int *fused)
{
    struct qp_error err;
    struct qp_qdq *q = NULL;
    struct qp_exec_hooks h;
    struct qp_exec_opts o = {0};
    if (f >= 0) {
        REQUIRE_OK(qp_qdq_new(g, (enum qp_rq_flavor)f, &q, &err), &err);
        qp_qdq_hooks(q, &h);
        o.hooks = &h;
        *fused = qp_qdq_fused(q);
    }
    const struct qp_tensor *feed[2] = {x, x2};
    struct qp_tensor *out[1] = {NULL};
    CHECK_OK(qp_exec_run(g, feed, x2 ? 2 : 1, &o, out, NULL, &err), &err);
    if (out[0])
        CHECK_TENSOR(out[0], out[0]->ndim, out[0]->shape, want, 0);
    qp_tensor_free(out[0]);
    qp_qdq_free(q);
}

QP_TEST(qdq_conv_matmul_add_round_as_each_runtime)
{
    struct qp_tensor *x4 = TF32("x", 4, SHAPE(1, 1, 1, 3), VALS(5, -5, 3));
    struct qp_tensor *x2 = TF32("x", 2, SHAPE(3, 1), VALS(5, -5, 3));
    struct qp_tensor *a = TF32("x", 2, SHAPE(1, 3), VALS(2, -2, 1));
    struct qp_tensor *b = TF32("x2", 2, SHAPE(1, 3), VALS(3, -3, 2));
    /* sums 5, -5, 3 over the output scale 2: 2.5, -2.5, 1.5. Half to even
     * gives 2, -2, 2. TFLite's multiplier for 0.5 is (2^30, shift 0), and
     * SaturatingRoundingDoublingHighMul(a, 2^30) = (a*2^30 + nudge) / 2^31
     * with nudge 2^30 (a >= 0) or 1 - 2^30, truncated: 5 -> 6*2^30/2^31 =
     * 3, -5 -> (-6*2^30 + 1)/2^31 -> -2 (ties upward). TFLite's Add ends
     * instead in RoundingDivideByPOT(-2.5 * 2^19, 19): floor -3, remainder
     * 2^18 not above the threshold 2^18 - 1 + 1: -3 (ties away from zero).
     * y = 2 * q */
    const double even[3] = {4, -4, 4}, tflite[3] = {6, -4, 4};
    const double tflite_add[3] = {6, -6, 4};
    const char *ops[3] = {"Conv", "MatMul", "Add"};
    for (int k = 0; k < 3; k++) {
        struct qp_graph *g = qdq_model(ctx, ops[k]);
        REQUIRE(g);
        CHECK(qp_qdq_model(g));
        const struct qp_tensor *in = k == 0 ? x4 : k == 1 ? x2 : a;
        const struct qp_tensor *in2 = k == 2 ? b : NULL;
        int fused = -1;
        run(ctx, g, -1, in, in2, even, &fused);               /* fp32 */
        run(ctx, g, QP_RQ_TFLITE_DOUBLE, in, in2, k == 2 ? tflite_add : tflite,
            &fused);
        CHECK_INT(fused, 1);
        /* ONNX Runtime on x86 fuses no group with int8 activations:
         * DQ -> float -> Q, half to even here (model/qdq.c) */
        run(ctx, g, QP_RQ_ORT, in, in2, even, &fused);
        CHECK_INT(fused, 0);
        qp_graph_free(g);
    }
    qp_tensor_free(x4);
    qp_tensor_free(x2);
    qp_tensor_free(a);
    qp_tensor_free(b);
}

QP_TEST(qdq_qlinear_nodes_take_the_flavor)
{
    /* QLinearMatMul a [1,2] int8 (5, -5) x b [2,1] (1, 0), scales 1, 1,
     * out 2: acc 5 and -5 -> 2.5: onnx-ref (fp32 mode) 2, tflite 3 */
    struct pbe g = {0};
    const int8_t bw[2] = {1, 0};
    int64_t ad[2] = {1, 2}, bd[2] = {2, 1}, yd[2] = {1, 1};
    value(&g, G_INPUT, "a", 3, 2, ad);
    qm_init(&g, "b", 3, 2, bd, bw, 2);
    qm_scalar_f(&g, "s1", 1.0f);
    qm_scalar_f(&g, "s2", 2.0f);
    scalar_i8(&g, "z", 0);
    node(&g, "QLinearMatMul", "a,s1,z,b,s1,z,s2,z", "y");
    value(&g, G_OUTPUT, "y", 3, 2, yd);
    struct qp_graph *gr = load(ctx, &g);
    REQUIRE(gr);
    struct qp_tensor *a = tt("a", QP_DTYPE_I8, 2, SHAPE(1, 2), VALS(5, 0));
    int fused = -1;
    const double ref[1] = {2}, tfl[1] = {3};
    run(ctx, gr, -1, a, NULL, ref, &fused);
    run(ctx, gr, QP_RQ_TFLITE_DOUBLE, a, NULL, tfl, &fused);
    run(ctx, gr, QP_RQ_ONNX_REF, a, NULL, ref, &fused);
    qp_tensor_free(a);
    qp_graph_free(gr);
}

/* Defect: a per-channel DequantizeLinear with more than 4096 scales was
 * refused (a CTC head has 6625 channels, LLM heads 32k-256k). */
QP_TEST(qdq_dequantize_has_no_channel_cap)
{
    enum { CH = 70000 };
    struct qp_tensor *x = tt("x", QP_DTYPE_I8, 2, SHAPE(2, CH), NULL);
    struct qp_tensor *s = tt("s", QP_DTYPE_F32, 1, SHAPE(CH), NULL);
    struct qp_tensor *z = tt("z", QP_DTYPE_I8, 1, SHAPE(CH), NULL);
    REQUIRE(x && s && z);
    for (int i = 0; i < 2 * CH; i++)
        ((int8_t *)x->data)[i] = (int8_t)(i % 251 - 125);
    for (int c = 0; c < CH; c++) {
        ((float *)s->data)[c] = 0.5f + (float)(c % 7);
        ((int8_t *)z->data)[c] = (int8_t)(c % 5 - 2);
    }
    struct qp_tensor *ins[3] = {x, s, z};
    RUN1("DequantizeLinear", 13, 3, ins, qp_node_set_int(n, "axis", 1, &err));
    const float *y = o.out[0]->data;
    int bad = 0;
    for (int r = 0; r < 2; r++)
        for (int c = 0; c < CH; c++) {
            int i = r * CH + c;
            float want = (float)(((int8_t *)x->data)[i] - (c % 5 - 2)) *
                         (0.5f + (float)(c % 7));
            bad += y[i] != want;
        }
    CHECK_INT(bad, 0);
    one_end(&o);
}
