/* The integer kernels against the ONNX backend node tests of Debian's
 * libonnx-testdata (/usr/share/libonnx-testdata/data/node/): MatMulInteger
 * and ConvInteger (int32 outputs), QLinearMatMul and QLinearConv
 * (requantized in the onnx-ref and ort flavors), on every instruction set.
 * The convolutions' attributes come from the test's model.onnx
 * (formats/onnx.h), inputs and expected outputs from its .pb files. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/onnx.h"
#include "formats/tensorproto.h"
#include "kernels/conv-s8.h"
#include "kernels/gemm-s8.h"
#include "tests/test.h"
#include "tests/unit/kern-test.h"

#define NODE_DIR "/usr/share/libonnx-testdata/data/node"
#define MAX_IN 9

struct node_test {
    struct qp_tensor *in[MAX_IN], *out;
    size_t n_in;
};

static void node_free(struct node_test *t)
{
    for (size_t i = 0; i < t->n_in; i++)
        qp_tensor_free(t->in[i]);
    qp_tensor_free(t->out);
}

/* Loads input_0.pb .. input_{n-1}.pb and output_0.pb of test_data_set_0. */
static bool node_load(struct qp_test_ctx *ctx, const char *name, size_t n,
                      struct node_test *t)
{
    memset(t, 0, sizeof *t);
    struct qp_error err;
    char path[512];
    for (size_t i = 0; i <= n; i++) {
        if (i < n)
            snprintf(path, sizeof path, NODE_DIR "/%s/test_data_set_0/"
                     "input_%zu.pb", name, i);
        else
            snprintf(path, sizeof path, NODE_DIR "/%s/test_data_set_0/"
                     "output_0.pb", name);
        if (qp_fmt_pb_load(path, i < n ? &t->in[i] : &t->out, &err)) {
            qp_test_failf(ctx, __FILE__, __LINE__, "%s", err.msg);
            return false;
        }
        t->n_in = i < n ? i + 1 : n;
    }
    return true;
}

/* A scalar or one-element tensor as int32 / float. */
static int32_t zp_of(const struct qp_tensor *t)
{
    float v;
    qp_tensor_read_f32(t, 0, 1, &v);
    return (int32_t)v;
}

static float f32_of(const struct qp_tensor *t)
{
    return ((const float *)t->data)[0];
}

/* [K, N] -> [N, K] bytes (ONNX MatMul's B to the GEMM's weights) */
static uint8_t *transpose_kn(const uint8_t *b, size_t k, size_t n)
{
    uint8_t *t = malloc(k * n);
    if (t)
        for (size_t i = 0; i < k; i++)
            for (size_t j = 0; j < n; j++)
                t[j * k + i] = b[i * n + j];
    return t;
}

/* batch x [m, k] x [k, n] (B batched like A when b_batched) through the
 * GEMM on every instruction set; compares with want. */
static void matmul_check(struct qp_test_ctx *ctx, const char *name,
                         const struct qp_tensor *a, const struct qp_tensor *b,
                         int32_t azp, int32_t bzp, const struct qp_rq *rq,
                         const struct qp_tensor *want)
{
    int nd = a->ndim;
    size_t m = (size_t)a->shape[nd - 2], k = (size_t)a->shape[nd - 1];
    size_t n = (size_t)b->shape[b->ndim - 1];
    size_t batch = nd == 3 ? (size_t)a->shape[0] : 1;
    size_t es = rq ? 1 : 4;
    enum qp_kern_isa isas[QP_KERN_ISA_COUNT];
    size_t nisa = kt_isas(isas);
    char *got = malloc(want->nbytes);
    REQUIRE(got && want->nbytes == batch * m * n * es);
    for (size_t i = 0; i < nisa; i++) {
        memset(got, 0x77, want->nbytes);
        for (size_t bi = 0; bi < batch; bi++) {
            uint8_t *bt = transpose_kn((const uint8_t *)b->data +
                                           (b->ndim == 3 ? bi * k * n : 0),
                                       k, n);
            struct qp_gemm_s8_params p = {
                .n = n, .k = k, .a_dtype = a->dtype, .b_dtype = b->dtype,
                .a_zero_point = azp, .b_zero_point = &bzp,
                .b_zero_points = 1, .rq = rq, .isa = isas[i]};
            struct qp_gemm_s8 g;
            struct qp_error err;
            REQUIRE(bt);
            REQUIRE_OK(qp_gemm_s8_prepare(&g, &p, bt, k, &err), &err);
            free(bt);
            void *s = malloc(qp_gemm_s8_scratch_size(&g, m) + 1);
            CHECK_OK(qp_gemm_s8_run(&g, (const uint8_t *)a->data + bi * m * k,
                                    m, k, got + bi * m * n * es, n, s, &err),
                     &err);
            free(s);
            qp_gemm_s8_release(&g);
        }
        if (memcmp(got, want->data, want->nbytes))
            qp_test_failf(ctx, __FILE__, __LINE__, "%s [%s%s%s] differs",
                          name, qp_kern_isa_name(isas[i]), rq ? ", " : "",
                          rq ? qp_rq_flavor_name(rq->flavor) : "");
    }
    free(got);
}

/* An INTS attribute of n values, or def when absent. */
static bool attr_ints(struct qp_test_ctx *ctx, const struct qp_onnx_node *nd,
                      const char *name, size_t n, int64_t def, size_t *out)
{
    const int64_t *v;
    size_t count;
    struct qp_error err;
    if (qp_onnx_attr_ints(nd, name, &v, &count, &err) ||
        (v && count != n)) {
        qp_test_failf(ctx, __FILE__, __LINE__, "attribute %s", name);
        return false;
    }
    for (size_t i = 0; i < n; i++)
        out[i] = (size_t)(v ? v[i] : def);
    return true;
}

/* The 2-D geometry and group of the model's single Conv-like node op. */
static bool conv_attrs(struct qp_test_ctx *ctx, const char *test,
                       const char *op, struct qp_conv_geom *g, size_t *groups)
{
    char path[512];
    struct qp_onnx_model *m = NULL;
    struct qp_error err;
    snprintf(path, sizeof path, NODE_DIR "/%s/model.onnx", test);
    if (qp_onnx_load(path, &m, &err)) {
        qp_test_failf(ctx, __FILE__, __LINE__, "%s", err.msg);
        return false;
    }
    const struct qp_onnx_node *nd = &m->graph->nodes[0];
    const char *auto_pad;
    int64_t group;
    size_t s[2], d[2], pads[4];
    bool ok = m->graph->n_nodes == 1 && qp_onnx_node_is(nd, op) &&
              !qp_onnx_attr_string(nd, "auto_pad", "NOTSET", &auto_pad,
                                   &err) &&
              !strcmp(auto_pad, "NOTSET") &&
              !qp_onnx_attr_int(nd, "group", 1, &group, &err) &&
              attr_ints(ctx, nd, "strides", 2, 1, s) &&
              attr_ints(ctx, nd, "dilations", 2, 1, d) &&
              attr_ints(ctx, nd, "pads", 4, 0, pads);
    if (ok) { /* pads: [top, left, bottom, right] */
        *g = (struct qp_conv_geom){0, 0, 0, 0, s[0], s[1], d[0], d[1],
                                   pads[0], pads[1], pads[2], pads[3]};
        *groups = (size_t)group;
    } else {
        qp_test_failf(ctx, __FILE__, __LINE__, "%s: not one %s node with "
                      "explicit padding", path, op);
    }
    qp_onnx_model_free(m);
    return ok;
}

/* NCHW conv of x [N, C, H, W] with w [OC, C/g, KH, KW], the attributes of
 * the test's model */
static void conv_check(struct qp_test_ctx *ctx, const char *name,
                       const char *op, const struct qp_tensor *x,
                       const struct qp_tensor *w, int32_t xzp, int32_t wzp,
                       const struct qp_rq *rq, const struct qp_tensor *want)
{
    const int64_t *xs = x->shape, *ws = w->shape;
    struct qp_conv_geom geom;
    size_t groups;
    REQUIRE(conv_attrs(ctx, name, op, &geom, &groups));
    geom.in_h = (size_t)xs[2];
    geom.in_w = (size_t)xs[3];
    geom.kernel_h = (size_t)ws[2];
    geom.kernel_w = (size_t)ws[3];
    struct qp_conv_s8_params p = {
        .layout = QP_CONV_NCHW, .geom = geom,
        .in_c = (size_t)xs[1], .out_c = (size_t)ws[0], .groups = groups,
        .in_dtype = x->dtype, .filter_dtype = w->dtype,
        .input_zero_point = xzp, .filter_zero_point = &wzp,
        .filter_zero_points = 1, .rq = rq};
    size_t oh, ow;
    struct qp_error gerr;
    REQUIRE_OK(qp_conv_geom_out(&p.geom, name, &oh, &ow, &gerr), &gerr);
    REQUIRE((size_t)xs[0] * p.out_c * oh * ow * (rq ? 1 : 4) == want->nbytes);
    enum qp_kern_isa isas[QP_KERN_ISA_COUNT];
    size_t nisa = kt_isas(isas);
    char *got = malloc(want->nbytes);
    REQUIRE(got);
    for (size_t i = 0; i < nisa; i++) {
        struct qp_conv_s8 c;
        struct qp_error err;
        p.isa = isas[i];
        REQUIRE_OK(qp_conv_s8_prepare(&c, &p, w->data, &err), &err);
        void *s = malloc(qp_conv_s8_scratch_size(&c, (size_t)xs[0]) + 1);
        memset(got, 0x77, want->nbytes);
        CHECK_OK(qp_conv_s8_run(&c, x->data, (size_t)xs[0], got, s, &err),
                 &err);
        if (memcmp(got, want->data, want->nbytes))
            qp_test_failf(ctx, __FILE__, __LINE__, "%s [%s%s%s] differs",
                          name, qp_kern_isa_name(isas[i]), rq ? ", " : "",
                          rq ? qp_rq_flavor_name(rq->flavor) : "");
        free(s);
        qp_conv_s8_release(&c);
    }
    free(got);
}

QP_TEST(onnx_node_matmulinteger)
{
    struct node_test t; /* A, B, a_zero_point, b_zero_point -> Y int32 */
    if (node_load(ctx, "test_matmulinteger", 4, &t))
        matmul_check(ctx, "test_matmulinteger", t.in[0], t.in[1],
                     zp_of(t.in[2]), zp_of(t.in[3]), NULL, t.out);
    node_free(&t);
}

QP_TEST(onnx_node_convinteger)
{
    static const char *const names[] = {"test_basic_convinteger",
                                        "test_convinteger_without_padding",
                                        "test_convinteger_with_padding"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        struct node_test t; /* x, w, x_zero_point -> y int32 */
        if (node_load(ctx, names[i], 3, &t))
            conv_check(ctx, names[i], "ConvInteger", t.in[0], t.in[1],
                       zp_of(t.in[2]), 0, NULL, t.out);
        node_free(&t);
    }
}

/* QLinear*: the requantization of both ONNX flavors */
static const enum qp_rq_flavor onnx_flavors[] = {QP_RQ_ONNX_REF, QP_RQ_ORT};

static bool qlinear_rq(struct qp_test_ctx *ctx, enum qp_rq_flavor f,
                       const struct qp_tensor *in_scale,
                       const struct qp_tensor *w_scale,
                       const struct qp_tensor *out_scale,
                       const struct qp_tensor *out_zp, struct qp_rq *rq)
{
    struct qp_error err;
    float ws = f32_of(w_scale);
    if (qp_rq_prepare_scales(rq, f, f32_of(in_scale), &ws, 1,
                             f32_of(out_scale), zp_of(out_zp), out_zp->dtype,
                             out_zp->dtype == QP_DTYPE_U8 ? 0 : -128,
                             out_zp->dtype == QP_DTYPE_U8 ? 255 : 127, &err)) {
        qp_test_failf(ctx, __FILE__, __LINE__, "%s", err.msg);
        return false;
    }
    return true;
}

QP_TEST(onnx_node_qlinearmatmul)
{
    static const char *const names[] = {"test_qlinearmatmul_2D",
                                        "test_qlinearmatmul_3D"};
    for (size_t i = 0; i < 2; i++) {
        /* a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp -> y */
        struct node_test t;
        if (!node_load(ctx, names[i], 8, &t)) {
            node_free(&t);
            continue;
        }
        for (size_t f = 0; f < 2; f++) {
            struct qp_rq rq;
            if (!qlinear_rq(ctx, onnx_flavors[f], t.in[1], t.in[4], t.in[6],
                            t.in[7], &rq))
                continue;
            matmul_check(ctx, names[i], t.in[0], t.in[3], zp_of(t.in[2]),
                         zp_of(t.in[5]), &rq, t.out);
            qp_rq_release(&rq);
        }
        node_free(&t);
    }
}

QP_TEST(onnx_node_qlinearconv)
{
    /* x, x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp -> y */
    struct node_test t;
    if (node_load(ctx, "test_qlinearconv", 8, &t))
        for (size_t f = 0; f < 2; f++) {
            struct qp_rq rq;
            if (!qlinear_rq(ctx, onnx_flavors[f], t.in[1], t.in[4], t.in[6],
                            t.in[7], &rq))
                continue;
            conv_check(ctx, "test_qlinearconv", "QLinearConv", t.in[0],
                       t.in[3], zp_of(t.in[2]), zp_of(t.in[5]), &rq, t.out);
            qp_rq_release(&rq);
        }
    node_free(&t);
}
