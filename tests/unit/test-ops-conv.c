/* Operator tests: Conv, ConvTranspose, MatMul, Gemm, pooling. Hand-computed
 * cases, then random geometries against a naive loop written here in
 * double precision (an independent oracle for the im2col / depthwise /
 * col2im paths). */
#include <math.h>

#include "tests/unit/test-graph-util.h"

QP_TEST(ops_conv_hand_computed)
{
    struct qp_error err;
    struct one_node o;
    /* 3x3 input 1..9, 2x2 ones kernel: window sums */
    struct qp_tensor *in[3] = {
        TF32("x", 4, SHAPE(1, 1, 3, 3), VALS(1, 2, 3, 4, 5, 6, 7, 8, 9)),
        TF32("w", 4, SHAPE(1, 1, 2, 2), VALS(1, 1, 1, 1)), NULL};
    REQUIRE(one_begin(&o, "Conv", 11, 2, in, 1, &err));
    REQUIRE_OK(one_run(&o, &err), &err);
    CHECK_TENSOR(o.out[0], 4, SHAPE(1, 1, 2, 2), VALS(12, 16, 24, 28), 0);
    one_end(&o);

    /* pads 1, stride 2: windows at -1 and 1 */
    struct qp_tensor *in2[2] = {
        TF32("x", 4, SHAPE(1, 1, 3, 3), VALS(1, 2, 3, 4, 5, 6, 7, 8, 9)),
        TF32("w", 4, SHAPE(1, 1, 2, 2), VALS(1, 1, 1, 1))};
    struct qp_node *n = one_begin(&o, "Conv", 11, 2, in2, 1, &err);
    REQUIRE(n);
    REQUIRE_OK(qp_node_set_ints(n, "pads", SHAPE(1, 1, 1, 1), 4, &err), &err);
    REQUIRE_OK(qp_node_set_ints(n, "strides", SHAPE(2, 2), 2, &err), &err);
    REQUIRE_OK(one_run(&o, &err), &err);
    CHECK_TENSOR(o.out[0], 4, SHAPE(1, 1, 2, 2), VALS(1, 5, 11, 28), 0);
    one_end(&o);

    /* two input channels (the im2col path): ch1 is all ones and its
     * kernel picks the top-left tap times 10 */
    struct qp_tensor *in3[3] = {
        TF32("x", 4, SHAPE(1, 2, 3, 3),
             VALS(1, 2, 3, 4, 5, 6, 7, 8, 9, 1, 1, 1, 1, 1, 1, 1, 1, 1)),
        TF32("w", 4, SHAPE(1, 2, 2, 2), VALS(1, 1, 1, 1, 10, 0, 0, 0)),
        TF32("b", 1, SHAPE(1), VALS(0.5))};
    REQUIRE(one_begin(&o, "Conv", 11, 3, in3, 1, &err));
    REQUIRE_OK(one_run(&o, &err), &err);
    CHECK_TENSOR(o.out[0], 4, SHAPE(1, 1, 2, 2), VALS(22.5, 26.5, 34.5, 38.5), 0);
    one_end(&o);

    /* depthwise with bias: per-channel scale */
    struct qp_tensor *in4[3] = {
        TF32("x", 4, SHAPE(1, 2, 2, 2), VALS(1, 2, 3, 4, 5, 6, 7, 8)),
        TF32("w", 4, SHAPE(2, 1, 1, 1), VALS(2, -1)),
        TF32("b", 1, SHAPE(2), VALS(1, 0))};
    n = one_begin(&o, "Conv", 11, 3, in4, 1, &err);
    REQUIRE(n);
    REQUIRE_OK(qp_node_set_int(n, "group", 2, &err), &err);
    REQUIRE_OK(one_run(&o, &err), &err);
    CHECK_TENSOR(o.out[0], 4, SHAPE(1, 2, 2, 2), VALS(3, 5, 7, 9, -5, -6, -7, -8),
                 0);
    one_end(&o);

    /* SAME_UPPER, stride 2 on 4 wide: out 2, total pad 1 at the end */
    struct qp_tensor *in5[2] = {TF32("x", 3, SHAPE(1, 1, 4), VALS(1, 2, 3, 4)),
                                TF32("w", 3, SHAPE(1, 1, 3), VALS(1, 1, 1))};
    n = one_begin(&o, "Conv", 11, 2, in5, 1, &err);
    REQUIRE(n);
    REQUIRE_OK(qp_node_set_string(n, "auto_pad", "SAME_UPPER", &err), &err);
    REQUIRE_OK(qp_node_set_ints(n, "strides", SHAPE(2), 1, &err), &err);
    REQUIRE_OK(one_run(&o, &err), &err);
    CHECK_TENSOR(o.out[0], 3, SHAPE(1, 1, 2), VALS(6, 7), 0);
    one_end(&o);
}

QP_TEST(ops_conv_transpose_hand_computed)
{
    struct qp_error err;
    struct one_node o;
    /* stride 2, kernel [1,1]: each input repeated twice */
    struct qp_tensor *in[2] = {TF32("x", 3, SHAPE(1, 1, 3), VALS(1, 2, 3)),
                               TF32("w", 3, SHAPE(1, 1, 2), VALS(1, 1))};
    struct qp_node *n = one_begin(&o, "ConvTranspose", 11, 2, in, 1, &err);
    REQUIRE(n);
    REQUIRE_OK(qp_node_set_ints(n, "strides", SHAPE(2), 1, &err), &err);
    REQUIRE_OK(one_run(&o, &err), &err);
    CHECK_TENSOR(o.out[0], 3, SHAPE(1, 1, 6), VALS(1, 1, 2, 2, 3, 3), 0);
    one_end(&o);
    /* stride 1: overlapping taps add up, with bias */
    struct qp_tensor *in2[3] = {TF32("x", 3, SHAPE(1, 1, 3), VALS(1, 2, 3)),
                                TF32("w", 3, SHAPE(1, 1, 2), VALS(1, 1)),
                                TF32("b", 1, SHAPE(1), VALS(10))};
    REQUIRE(one_begin(&o, "ConvTranspose", 11, 3, in2, 1, &err));
    REQUIRE_OK(one_run(&o, &err), &err);
    CHECK_TENSOR(o.out[0], 3, SHAPE(1, 1, 4), VALS(11, 13, 15, 13), 0);
    one_end(&o);
}

/* ---- random geometries against a naive oracle -------------------------- */

static uint64_t rng_state;
static double urand(void)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(rng_state >> 11) / 9007199254740992.0 * 2.0 - 1.0;
}

struct geo {
    int nsp;
    int64_t n, ic, oc, g, in[3], k[3], s[3], d[3], pb[3], pe[3], out[3];
};

/* y[n][oc][o...] = b[oc] + sum x[n][g*icg+c][o*s - pb + k*d] w[oc][c][k] */
static void naive_conv(const struct geo *q, const float *x, const float *w,
                       const float *b, double *y)
{
    int64_t icg = q->ic / q->g, ocg = q->oc / q->g;
    int64_t in[3] = {1, 1, 1}, k[3] = {1, 1, 1}, s[3] = {1, 1, 1}, d[3] = {1, 1, 1};
    int64_t pb[3] = {0, 0, 0}, out[3] = {1, 1, 1};
    int lead = 3 - q->nsp;
    for (int i = 0; i < q->nsp; i++) {
        in[lead + i] = q->in[i];
        k[lead + i] = q->k[i];
        s[lead + i] = q->s[i];
        d[lead + i] = q->d[i];
        pb[lead + i] = q->pb[i];
        out[lead + i] = q->out[i];
    }
    int64_t sin = in[0] * in[1] * in[2], kv = k[0] * k[1] * k[2];
    int64_t so = out[0] * out[1] * out[2];
    for (int64_t n = 0; n < q->n; n++)
        for (int64_t oc = 0; oc < q->oc; oc++)
            for (int64_t p = 0; p < so; p++) {
                int64_t o2 = p % out[2], o1 = p / out[2] % out[1], o0 = p / out[2] / out[1];
                double acc = b ? b[oc] : 0;
                int64_t gi = oc / ocg;
                for (int64_t c = 0; c < icg; c++)
                    for (int64_t kk = 0; kk < kv; kk++) {
                        int64_t k2 = kk % k[2], k1 = kk / k[2] % k[1], k0 = kk / k[2] / k[1];
                        int64_t i0 = o0 * s[0] - pb[0] + k0 * d[0];
                        int64_t i1 = o1 * s[1] - pb[1] + k1 * d[1];
                        int64_t i2 = o2 * s[2] - pb[2] + k2 * d[2];
                        if (i0 < 0 || i0 >= in[0] || i1 < 0 || i1 >= in[1] ||
                            i2 < 0 || i2 >= in[2])
                            continue;
                        acc += (double)x[((n * q->ic + gi * icg + c) * sin) +
                                         (i0 * in[1] + i1) * in[2] + i2] *
                               w[(oc * icg + c) * kv + kk];
                    }
                y[(n * q->oc + oc) * so + p] = acc;
            }
}

static struct qp_tensor *rand_tensor(const char *name, int nd, const int64_t *sh)
{
    struct qp_tensor *t = TF32(name, nd, sh, NULL);
    for (size_t i = 0; t && i < qp_tensor_numel(t); i++)
        ((float *)t->data)[i] = (float)urand();
    return t;
}

static void random_geo(struct geo *q, int trial)
{
    q->nsp = 1 + trial % 3;
    q->n = 1 + trial % 2;
    q->g = trial % 4 == 0 ? 1 : trial % 4 == 1 ? 2 : 1;
    q->ic = q->g * (1 + (int64_t)((urand() + 1) * 2));
    q->oc = q->g * (1 + (int64_t)((urand() + 1) * 2));
    if (trial % 5 == 3) { /* depthwise with a multiplier */
        q->g = q->ic = 3;
        q->oc = 6;
    }
    for (int i = 0; i < q->nsp; i++) {
        q->k[i] = 1 + (int64_t)((urand() + 1) * 1.5);
        q->s[i] = 1 + (int64_t)((urand() + 1) * 1);
        q->d[i] = 1 + (trial % 7 == 2);
        q->pb[i] = (int64_t)((urand() + 1) * 1.5);
        q->pe[i] = (int64_t)((urand() + 1) * 1.5);
        int64_t span = (q->k[i] - 1) * q->d[i] + 1;
        q->in[i] = span + (int64_t)((urand() + 1) * (q->nsp == 3 ? 2 : 5));
        q->out[i] = (q->in[i] + q->pb[i] + q->pe[i] - span) / q->s[i] + 1;
    }
}

QP_TEST(ops_conv_matches_naive_loops)
{
    rng_state = 12345;
    struct qp_error err;
    for (int trial = 0; trial < 60; trial++) {
        struct geo q;
        random_geo(&q, trial);
        int64_t xs[5] = {q.n, q.ic}, ws[5] = {q.oc, q.ic / q.g};
        int64_t pads[6], str[3], dil[3];
        for (int i = 0; i < q.nsp; i++) {
            xs[2 + i] = q.in[i];
            ws[2 + i] = q.k[i];
            pads[i] = q.pb[i];
            pads[q.nsp + i] = q.pe[i];
            str[i] = q.s[i];
            dil[i] = q.d[i];
        }
        struct qp_tensor *x = rand_tensor("x", 2 + q.nsp, xs);
        struct qp_tensor *w = rand_tensor("w", 2 + q.nsp, ws);
        struct qp_tensor *b = trial % 2 ? rand_tensor("b", 1, &q.oc) : NULL;
        size_t ny = (size_t)(q.n * q.oc);
        for (int i = 0; i < q.nsp; i++)
            ny *= (size_t)q.out[i];
        double *ref = malloc(ny * sizeof *ref);
        naive_conv(&q, x->data, w->data, b ? b->data : NULL, ref);
        struct one_node o;
        struct qp_tensor *in[3] = {x, w, b};
        struct qp_node *n = one_begin(&o, "Conv", 11, b ? 3 : 2, in, 1, &err);
        REQUIRE(n);
        qp_node_set_ints(n, "pads", pads, (size_t)(2 * q.nsp), &err);
        qp_node_set_ints(n, "strides", str, (size_t)q.nsp, &err);
        qp_node_set_ints(n, "dilations", dil, (size_t)q.nsp, &err);
        qp_node_set_int(n, "group", q.g, &err);
        CHECK_OK(one_run(&o, &err), &err);
        if (o.out[0]) {
            CHECK_INT(qp_tensor_numel(o.out[0]), ny);
            for (size_t i = 0; i < ny && i < qp_tensor_numel(o.out[0]); i++)
                CHECK_NEAR(((float *)o.out[0]->data)[i], ref[i], 1e-4);
        }
        one_end(&o);
        free(ref);
    }
}

/* ConvTranspose is the adjoint of Conv: <convT(y), x> = <y, conv(x)> for
 * the same weight and geometry with out = the conv's input size. */
QP_TEST(ops_conv_transpose_is_the_adjoint_of_conv)
{
    rng_state = 777;
    struct qp_error err;
    for (int trial = 0; trial < 40; trial++) {
        struct geo q;
        random_geo(&q, trial);
        /* conv: x [n, ic, in] -> y [n, oc, out]; convT: y -> [n, ic, in]
         * with weight [oc, ic/g, k] read as [IC'=oc, OC'/g=ic/g, k] */
        int64_t xs[5] = {q.n, q.ic}, ws[5] = {q.oc, q.ic / q.g}, ys[5] = {q.n, q.oc};
        int64_t pads[6], str[3], dil[3];
        for (int i = 0; i < q.nsp; i++) {
            xs[2 + i] = q.in[i];
            ws[2 + i] = q.k[i];
            ys[2 + i] = q.out[i];
            pads[i] = q.pb[i];
            pads[q.nsp + i] = q.pe[i];
            str[i] = q.s[i];
            dil[i] = q.d[i];
        }
        struct qp_tensor *x = rand_tensor("x", 2 + q.nsp, xs);
        struct qp_tensor *w = rand_tensor("w", 2 + q.nsp, ws);
        struct qp_tensor *y = rand_tensor("y", 2 + q.nsp, ys);
        size_t nx = qp_tensor_numel(x), ny = qp_tensor_numel(y);
        double *cx = malloc(ny * sizeof *cx);
        naive_conv(&q, x->data, w->data, NULL, cx);
        double lhs = 0, rhs = 0;
        for (size_t i = 0; i < ny; i++)
            rhs += ((float *)y->data)[i] * cx[i];
        struct qp_tensor *wc;
        REQUIRE_OK(qp_tensor_clone(w, &wc, &err), &err);
        struct one_node o;
        struct qp_tensor *in[2] = {y, wc};
        struct qp_node *n = one_begin(&o, "ConvTranspose", 11, 2, in, 1, &err);
        REQUIRE(n);
        qp_node_set_ints(n, "pads", pads, (size_t)(2 * q.nsp), &err);
        qp_node_set_ints(n, "strides", str, (size_t)q.nsp, &err);
        qp_node_set_ints(n, "dilations", dil, (size_t)q.nsp, &err);
        qp_node_set_int(n, "group", q.g, &err);
        /* the conv's input size back: out = s*(in-1) + span - pads + opad */
        int64_t opad[3];
        for (int i = 0; i < q.nsp; i++) {
            int64_t full = q.s[i] * (q.out[i] - 1) + (q.k[i] - 1) * q.d[i] + 1;
            opad[i] = q.in[i] - (full - q.pb[i] - q.pe[i]);
        }
        bool ok = true;
        for (int i = 0; i < q.nsp; i++)
            ok &= opad[i] >= 0 && opad[i] < q.s[i];
        CHECK(ok);
        qp_node_set_ints(n, "output_padding", opad, (size_t)q.nsp, &err);
        if (ok) {
            CHECK_OK(one_run(&o, &err), &err);
            if (o.out[0]) {
                CHECK_INT(qp_tensor_numel(o.out[0]), nx);
                for (size_t i = 0; i < nx && i < qp_tensor_numel(o.out[0]); i++)
                    lhs += ((float *)o.out[0]->data)[i] * ((float *)x->data)[i];
                CHECK_NEAR(lhs, rhs, 1e-3 * (1 + fabs(rhs)));
            }
        }
        one_end(&o);
        qp_tensor_free(x);
        qp_tensor_free(w);
        free(cx);
    }
}

QP_TEST(ops_matmul_and_gemm)
{
    struct qp_error err;
    struct one_node o;
    /* batch-broadcast MatMul: A [2,1,2,3] x B [2,3,1] -> [2,2,2,1] */
    struct qp_tensor *in[2] = {
        TF32("a", 4, SHAPE(2, 1, 2, 3), VALS(1, 2, 3, 4, 5, 6, -1, 0, 1, 2, 2, 2)),
        TF32("b", 3, SHAPE(2, 3, 1), VALS(1, 1, 1, 1, 0, -1))};
    REQUIRE(one_begin(&o, "MatMul", 13, 2, in, 1, &err));
    REQUIRE_OK(one_run(&o, &err), &err);
    CHECK_TENSOR(o.out[0], 4, SHAPE(2, 2, 2, 1),
                 VALS(6, 15, -2, -2, 0, 6, -2, 0), 0);
    one_end(&o);
    /* 1-D promotion: [3] x [3,2] -> [2] */
    struct qp_tensor *in2[2] = {TF32("a", 1, SHAPE(3), VALS(1, 2, 3)),
                                TF32("b", 2, SHAPE(3, 2), VALS(1, 0, 0, 1, 1, 1))};
    REQUIRE(one_begin(&o, "MatMul", 13, 2, in2, 1, &err));
    REQUIRE_OK(one_run(&o, &err), &err);
    CHECK_TENSOR(o.out[0], 1, SHAPE(2), VALS(4, 5), 0);
    one_end(&o);
    /* Gemm: alpha A^T B + beta C with C a row vector */
    struct qp_tensor *in3[3] = {
        TF32("a", 2, SHAPE(2, 2), VALS(1, 2, 3, 4)),
        TF32("b", 2, SHAPE(2, 2), VALS(1, 0, 0, 1)),
        TF32("c", 1, SHAPE(2), VALS(10, 20))};
    struct qp_node *n = one_begin(&o, "Gemm", 13, 3, in3, 1, &err);
    REQUIRE(n);
    qp_node_set_int(n, "transA", 1, &err);
    qp_node_set_float(n, "alpha", 2.0f, &err);
    qp_node_set_float(n, "beta", 0.5f, &err);
    REQUIRE_OK(one_run(&o, &err), &err);
    /* A^T = [[1,3],[2,4]] */
    CHECK_TENSOR(o.out[0], 2, SHAPE(2, 2), VALS(2 + 5, 6 + 10, 4 + 5, 8 + 10), 0);
    one_end(&o);
    struct qp_tensor *in4[2] = {TF32("a", 2, SHAPE(2, 3), NULL),
                                TF32("b", 2, SHAPE(2, 3), NULL)};
    REQUIRE(one_begin(&o, "MatMul", 13, 2, in4, 1, &err));
    CHECK_FAILS(one_run(&o, &err), QP_E_SHAPE, &err,
                "node 'n0' (MatMul): cannot multiply [2,3] by [2,3]");
    one_end(&o);
}

QP_TEST(ops_pooling_hand_computed)
{
    struct qp_error err;
    struct one_node o;
    double v[16];
    for (int i = 0; i < 16; i++)
        v[i] = i + 1;
    struct qp_tensor *in[1] = {TF32("x", 4, SHAPE(1, 1, 4, 4), v)};
    struct qp_node *n = one_begin(&o, "MaxPool", 12, 1, in, 2, &err);
    REQUIRE(n);
    qp_node_set_ints(n, "kernel_shape", SHAPE(2, 2), 2, &err);
    qp_node_set_ints(n, "strides", SHAPE(2, 2), 2, &err);
    REQUIRE_OK(one_run(&o, &err), &err);
    CHECK_TENSOR(o.out[0], 4, SHAPE(1, 1, 2, 2), VALS(6, 8, 14, 16), 0);
    CHECK_TENSOR(o.out[1], 4, SHAPE(1, 1, 2, 2), VALS(5, 7, 13, 15), 0);
    one_end(&o);

    /* 3x3 average with pad 1 on a 2x2 input [1,2;3,4]: every window holds
     * all four values: 10/4 without padding counted, 10/9 with */
    for (int inc = 0; inc < 2; inc++) {
        struct qp_tensor *in2[1] = {TF32("x", 4, SHAPE(1, 1, 2, 2), VALS(1, 2, 3, 4))};
        n = one_begin(&o, "AveragePool", 11, 1, in2, 1, &err);
        REQUIRE(n);
        qp_node_set_ints(n, "kernel_shape", SHAPE(3, 3), 2, &err);
        qp_node_set_ints(n, "pads", SHAPE(1, 1, 1, 1), 4, &err);
        qp_node_set_int(n, "count_include_pad", inc, &err);
        REQUIRE_OK(one_run(&o, &err), &err);
        double e = inc ? 10.0 / 9 : 2.5;
        CHECK_TENSOR(o.out[0], 4, SHAPE(1, 1, 2, 2), VALS(e, e, e, e), 1e-6);
        one_end(&o);
    }
    /* ceil_mode: 5 wide, kernel 2, stride 2: 3 windows, the last holds 5 */
    struct qp_tensor *in3[1] = {TF32("x", 3, SHAPE(1, 1, 5), VALS(1, 2, 3, 4, 5))};
    n = one_begin(&o, "AveragePool", 11, 1, in3, 1, &err);
    REQUIRE(n);
    qp_node_set_ints(n, "kernel_shape", SHAPE(2), 1, &err);
    qp_node_set_ints(n, "strides", SHAPE(2), 1, &err);
    qp_node_set_int(n, "ceil_mode", 1, &err);
    REQUIRE_OK(one_run(&o, &err), &err);
    CHECK_TENSOR(o.out[0], 3, SHAPE(1, 1, 3), VALS(1.5, 3.5, 5), 1e-6);
    one_end(&o);

    struct qp_tensor *in4[1] = {TF32("x", 4, SHAPE(1, 2, 1, 2), VALS(1, 2, -4, 8))};
    REQUIRE(one_begin(&o, "GlobalAveragePool", 1, 1, in4, 1, &err));
    REQUIRE_OK(one_run(&o, &err), &err);
    CHECK_TENSOR(o.out[0], 4, SHAPE(1, 2, 1, 1), VALS(1.5, 2), 0);
    one_end(&o);
}

/* MaxPool whose windows all lie inside the input takes a direct path
 * (model/op-pool.c; 2x2 windows at stride 2 one of their own): the same
 * bits as the general one, which a second output (indices) still takes,
 * on floats with NaN, signed zeros and ties, and on int8 and uint8
 * codes. */
QP_TEST(ops_maxpool_direct_matches_general)
{
    static const enum qp_dtype dts[] = {QP_DTYPE_F32, QP_DTYPE_I8, QP_DTYPE_U8};
    /* kernel, strides, dilations (h, w); the output's extents */
    static const int64_t geo[2][8] = {{3, 2, 2, 3, 1, 2, 4, 3},
                                      {2, 2, 2, 2, 1, 1, 4, 5}};
    for (size_t d = 0; d < 2 * sizeof dts / sizeof *dts; d++) {
        const int64_t *gm = geo[d / (sizeof dts / sizeof *dts)];
        struct qp_tensor *y[2] = {NULL, NULL};
        for (int general = 0; general < 2; general++) {
            struct qp_error err;
            struct one_node o;
            struct qp_tensor *x;
            REQUIRE_OK(qp_tensor_new("x", dts[d % 3], 4, SHAPE(2, 3, 9, 11), &x, &err),
                       &err);
            for (size_t i = 0; i < qp_tensor_numel(x); i++) {
                unsigned h = (unsigned)((i * 2654435761u) >> 7);
                int v = (int)(h % 7) - 5; /* mostly <= 0: many ties at 0 */
                bool neg = i / 11 % 3 == 2; /* never a window's first row */
                if (dts[d % 3] == QP_DTYPE_F32)
                    ((float *)x->data)[i] = i % 13 == 0 ? NAN
                                            : v <= 0 ? (neg ? -0.0f : 0.0f)
                                                     : (float)v;
                else
                    ((uint8_t *)x->data)[i] = (uint8_t)(h % 251);
            }
            struct qp_tensor *in[1] = {x};
            struct qp_node *n = one_begin(&o, "MaxPool", 12, 1, in, 1 + general,
                                          &err);
            REQUIRE(n);
            qp_node_set_ints(n, "kernel_shape", SHAPE(gm[0], gm[1]), 2, &err);
            qp_node_set_ints(n, "strides", SHAPE(gm[2], gm[3]), 2, &err);
            qp_node_set_ints(n, "dilations", SHAPE(gm[4], gm[5]), 2, &err);
            REQUIRE_OK(one_run(&o, &err), &err);
            REQUIRE_OK(qp_tensor_clone(o.out[0], &y[general], &err), &err);
            one_end(&o);
        }
        CHECK(y[0]->nbytes == y[1]->nbytes &&
              !memcmp(y[0]->data, y[1]->data, y[0]->nbytes));
        CHECK_INT(y[0]->shape[2], gm[6]);
        CHECK_INT(y[0]->shape[3], gm[7]);
        qp_tensor_free(y[0]);
        qp_tensor_free(y[1]);
    }
}
