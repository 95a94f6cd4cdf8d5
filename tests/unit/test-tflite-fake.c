/* tests/unit/test-tflite-fake.c: a float .tflite quantized by qprobe (the
 * weight layouts of model/op-tflite.c, the weights handed to the kernels
 * of model/op-tflite-conv.c). The model, written by tests/unit/
 * tflite-build.h: x [1,5,5,3] -> CONV_2D (OHWI [4,3,3,3]) -> c [1,3,3,4]
 * -> DEPTHWISE_CONV_2D ([1,2,2,4]) -> d [1,2,2,4] -> FULLY_CONNECTED
 * ([3,16]) -> y [1,3]; c, d and y are all graph outputs. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/qassign.h"
#include "model/session.h"
#include "quant/rtn.h"
#include "tests/test.h"
#include "tests/unit/tflite-build.h"

enum { NCW = 4 * 3 * 3 * 3, NDW = 2 * 2 * 4, NFW = 3 * 16 };

struct weights {
    float cw[NCW], cb[4], dw[NDW], db[4], fw[NFW], fb[3];
};

static float lcg_f(uint32_t *s)
{
    *s = *s * 1664525u + 1013904223u;
    return (float)((*s >> 8) % 2001) / 1000.0f - 1.0f;
}

/* Weights whose output channels differ in range (per-channel scales
 * differ from the per-tensor one and from any other axis's). */
static void make_weights(struct weights *w)
{
    uint32_t s = 7;
    for (int i = 0; i < NCW; i++)
        w->cw[i] = lcg_f(&s) * (float)(1 + i / 27); /* channel = i / 27 */
    for (int i = 0; i < NDW; i++)
        w->dw[i] = lcg_f(&s) * (float)(1 + 3 * (i % 4)); /* channel = i % 4 */
    for (int i = 0; i < NFW; i++)
        w->fw[i] = lcg_f(&s) * (float)(1 + 2 * (i / 16));
    for (int i = 0; i < 4; i++)
        w->cb[i] = w->db[i] = 0.1f * (float)i - 0.2f;
    for (int i = 0; i < 3; i++)
        w->fb[i] = 0.05f * (float)i;
}

static void write_model(const char *path, const struct weights *w)
{
    struct tb_model m;
    memset(&m, 0, sizeof m);
    m.n_tensors = 10;
    const struct tb_tensor none = {0};
    const char *names[10] = {"x", "cw", "cb", "c", "dw", "db", "d", "fw",
                             "fb", "y"};
    const int nd[10] = {4, 4, 1, 4, 4, 1, 4, 2, 1, 2};
    const int32_t shapes[10][4] = {{1, 5, 5, 3}, {4, 3, 3, 3}, {4},
                                   {1, 3, 3, 4}, {1, 2, 2, 4}, {4},
                                   {1, 2, 2, 4}, {3, 16}, {3}, {1, 3}};
    const uint32_t buf[10] = {0, 1, 2, 0, 3, 4, 0, 5, 6, 0};
    for (int i = 0; i < 10; i++) {
        m.t[i] = none;
        m.t[i].name = names[i];
        m.t[i].type = 0; /* FLOAT32 */
        m.t[i].ndim = nd[i];
        memcpy(m.t[i].shape, shapes[i], sizeof shapes[i]);
        m.t[i].buffer = buf[i];
    }
    const float *data[7] = {NULL, w->cw, w->cb, w->dw, w->db, w->fw, w->fb};
    const size_t len[7] = {0, sizeof w->cw, sizeof w->cb, sizeof w->dw,
                           sizeof w->db, sizeof w->fw, sizeof w->fb};
    m.n_buffers = 7;
    for (int i = 1; i < 7; i++) {
        m.buf[i] = (const uint8_t *)data[i];
        m.buf_len[i] = len[i];
    }
    m.n_opcodes = 3;
    m.opcode[0] = 3; /* CONV_2D */
    m.opcode[1] = 4; /* DEPTHWISE_CONV_2D */
    m.opcode[2] = 9; /* FULLY_CONNECTED */
    m.n_ops = 3;
    /* VALID, stride 1, no activation (dilation 1, depth multiplier 1) */
    m.op[0] = (struct tb_op){0, 3, 1, {0, 1, 2}, {3}, 1, 4, {1, 1, 1, 0},
                             {1, 0, 0, 1}};
    m.op[1] = (struct tb_op){1, 3, 1, {3, 4, 5}, {6}, 2, 7,
                             {1, 1, 1, 1, 0, 1, 1}, {1, 0, 0, 0, 1, 0, 0}};
    m.op[2] = (struct tb_op){2, 3, 1, {6, 7, 8}, {9}, 8, 1, {0}, {1}};
    m.n_inputs = 1;
    m.inputs[0] = 0;
    m.n_outputs = 3;
    m.outputs[0] = 3;
    m.outputs[1] = 6;
    m.outputs[2] = 9;
    size_t n;
    uint8_t *b = tb_write(&m, &n);
    if (!qp_test_write_file(path, b, n))
        abort();
    free(b);
}

/* w (n floats) quantized with scheme s as an ONNX Conv/Gemm weight of
 * shape torch (output channel first, QP_WLAYOUT_TORCH), dequantized, in
 * place; the caller moves the values between the layouts. */
static enum qp_status quantize_torch(float *w, int nd, const int64_t *torch,
                                     const struct qp_wscheme *s,
                                     struct qp_error *err)
{
    struct qp_tensor *t, *q = NULL;
    enum qp_status st = qp_tensor_new("w", QP_DTYPE_F32, nd, torch, &t, err);
    if (st)
        return st;
    size_t n = qp_tensor_numel(t);
    memcpy(t->data, w, n * sizeof *w);
    struct qp_wquant_opts o = {QP_ROUND_HALF_AWAY, QP_WLAYOUT_TORCH};
    if (!(st = qp_rtn_quantize(t, s, &o, &q, err)))
        qp_tensor_read_f32(q, 0, n, w);
    qp_tensor_free(q);
    qp_tensor_free(t);
    return st;
}

/* The reference: every weight quantized per output channel as the same
 * layer of an ONNX graph would be (OIHW; depthwise [C,1,H,W]; Gemm
 * [out,in]), written back in TFLite's layouts. */
static enum qp_status reference(struct weights *w, const struct qp_wscheme *s,
                                struct qp_error *err)
{
    float t[NCW];
    /* CONV_2D OHWI [4,3,3,3] <-> OIHW */
    for (int o = 0; o < 4; o++)
        for (int y = 0; y < 3; y++)
            for (int x = 0; x < 3; x++)
                for (int i = 0; i < 3; i++)
                    t[((o * 3 + i) * 3 + y) * 3 + x] =
                        w->cw[((o * 3 + y) * 3 + x) * 3 + i];
    enum qp_status st = quantize_torch(t, 4, (int64_t[]){4, 3, 3, 3}, s, err);
    for (int o = 0; !st && o < 4; o++)
        for (int y = 0; y < 3; y++)
            for (int x = 0; x < 3; x++)
                for (int i = 0; i < 3; i++)
                    w->cw[((o * 3 + y) * 3 + x) * 3 + i] =
                        t[((o * 3 + i) * 3 + y) * 3 + x];
    /* DEPTHWISE [1,2,2,4] <-> [4,1,2,2] */
    for (int p = 0; !st && p < 4; p++)
        for (int c = 0; c < 4; c++)
            t[c * 4 + p] = w->dw[p * 4 + c];
    if (!st)
        st = quantize_torch(t, 4, (int64_t[]){4, 1, 2, 2}, s, err);
    for (int p = 0; !st && p < 4; p++)
        for (int c = 0; c < 4; c++)
            w->dw[p * 4 + c] = t[c * 4 + p];
    if (!st)
        st = quantize_torch(w->fw, 2, (int64_t[]){3, 16}, s, err);
    return st;
}

static struct qp_tensor *input(struct qp_test_ctx *ctx, uint32_t seed)
{
    struct qp_tensor *x;
    struct qp_error err;
    if (qp_tensor_new("x", QP_DTYPE_F32, 4, (int64_t[]){1, 5, 5, 3}, &x,
                      &err)) {
        qp_test_failf(ctx, __FILE__, __LINE__, "%s", err.msg);
        return NULL;
    }
    for (int i = 0; i < 75; i++)
        ((float *)x->data)[i] = lcg_f(&seed);
    return x;
}

/* The three outputs of the model at path on x: fp32 (scheme NULL) or in
 * mode under scheme, calibrated on x. */
static enum qp_status run_model(const char *path, const char *scheme,
                                enum qp_run_mode mode, struct qp_tensor *x,
                                struct qp_tensor **y, struct qp_error *err)
{
    struct qp_session *s;
    struct qp_splan *p = NULL;
    struct qp_scheme sc;
    enum qp_status st = qp_session_open(path, NULL, &s, err);
    if (st)
        return st;
    struct qp_tensor **calib = calloc(1, sizeof *calib);
    if (!calib || qp_tensor_clone(x, &calib[0], err))
        st = QP_E_NOMEM;
    if (!st)
        st = qp_session_add_calib_feed(s, calib, err);
    if (!st && scheme && !(st = qp_scheme_parse(scheme, &sc, NULL, err))) {
        struct qp_session_cfg cfg = {.mode = mode, .scheme = &sc};
        st = qp_session_plan(s, &cfg, &p, err);
    }
    struct qp_session_run_opts ro = {0};
    if (!st)
        st = qp_session_run(s, p, (const struct qp_tensor *const *)&x, &ro, y,
                            NULL, err);
    qp_splan_free(p);
    qp_session_free(s);
    return st;
}

static void free3(struct qp_tensor **y)
{
    for (int k = 0; k < 3; k++)
        qp_tensor_free(y[k]);
}

static double max_diff(const struct qp_tensor *a, const struct qp_tensor *b)
{
    size_t n = qp_tensor_numel(a);
    double m = n == qp_tensor_numel(b) ? 0 : INFINITY;
    for (size_t i = 0; m < INFINITY && i < n; i++) {
        double d = fabs((double)((const float *)a->data)[i] -
                        (double)((const float *)b->data)[i]);
        m = d > m || d != d ? (d != d ? INFINITY : d) : m;
    }
    return m;
}

/* The planners see the three weights, with the output channel on the
 * right axis (first; last for the depthwise [1,H,W,C]). */
QP_TEST(tflite_float_weights_have_layouts)
{
    struct weights w;
    make_weights(&w);
    char *path = qp_test_path(ctx, "a.tflite");
    write_model(path, &w);
    struct qp_session *s;
    struct qp_error err;
    REQUIRE_OK(qp_session_open(path, NULL, &s, &err), &err);
    const struct qp_graph *g = qp_session_graph(s);
    enum qp_wlayout l[3] = {QP_WLAYOUT_COUNT, QP_WLAYOUT_COUNT,
                            QP_WLAYOUT_COUNT};
    REQUIRE(g->n_nodes == 3);
    for (int i = 0; i < 3; i++)
        CHECK(qp_node_weighted(g, i, &l[i]));
    CHECK_INT(l[0], QP_WLAYOUT_TFLITE);
    CHECK_INT(l[1], QP_WLAYOUT_KERAS);
    CHECK_INT(l[2], QP_WLAYOUT_TFLITE);
    CHECK(!qp_session_own_quant(s));
    qp_session_free(s);
    free(path);
}

/* Fake w4c equals, tensor for tensor and bit for bit, the fp32 run of the
 * model whose weights were quantized per output channel as ONNX's OIHW /
 * [out,in] layers are; the weights really changed (the fp32 run of the
 * original is far from both), and per tensor gives other values. */
QP_TEST(tflite_fake_mode_quantizes_float_weights_per_channel)
{
    struct weights w, r;
    make_weights(&w);
    r = w;
    struct qp_error err;
    struct qp_scheme sc;
    REQUIRE_OK(qp_scheme_parse("w4c", &sc, NULL, &err), &err);
    REQUIRE_OK(reference(&r, &sc.w, &err), &err);
    char *pa = qp_test_path(ctx, "a.tflite"), *pr = qp_test_path(ctx, "r.tflite");
    write_model(pa, &w);
    write_model(pr, &r);
    struct qp_tensor *x = input(ctx, 11);
    REQUIRE(x);
    struct qp_tensor *fake[3] = {0}, *ref[3] = {0}, *f32[3] = {0},
                     *wt[3] = {0};
    CHECK_OK(run_model(pa, "w4c", QP_MODE_FAKE, x, fake, &err), &err);
    CHECK_OK(run_model(pr, NULL, QP_MODE_FP32, x, ref, &err), &err);
    CHECK_OK(run_model(pa, NULL, QP_MODE_FP32, x, f32, &err), &err);
    CHECK_OK(run_model(pa, "w4t", QP_MODE_FAKE, x, wt, &err), &err);
    for (int k = 0; k < 3 && fake[k] && ref[k] && f32[k] && wt[k]; k++) {
        CHECK_NEAR(max_diff(fake[k], ref[k]), 0, 0);
        CHECK(max_diff(fake[k], f32[k]) > 1e-3);
        CHECK(max_diff(fake[k], wt[k]) > 1e-3);
    }
    free3(fake);
    free3(ref);
    free3(f32);
    free3(wt);
    qp_tensor_free(x);
    free(pa);
    free(pr);
}

/* Weights and activations (w8c+a8t) in the fake and int modes: the plan
 * path of an ONNX model; close to fp32 (8 bits) but not equal. */
QP_TEST(tflite_float_model_runs_fake_and_int_with_activations)
{
    struct weights w;
    make_weights(&w);
    char *pa = qp_test_path(ctx, "a.tflite");
    write_model(pa, &w);
    struct qp_tensor *x = input(ctx, 5);
    REQUIRE(x);
    struct qp_error err;
    struct qp_tensor *f32[3] = {0}, *fake[3] = {0}, *in[3] = {0};
    CHECK_OK(run_model(pa, NULL, QP_MODE_FP32, x, f32, &err), &err);
    CHECK_OK(run_model(pa, "w8c+a8t", QP_MODE_FAKE, x, fake, &err), &err);
    CHECK_OK(run_model(pa, "w8c+a8t", QP_MODE_INT, x, in, &err), &err);
    for (int k = 0; k < 3 && f32[k] && fake[k] && in[k]; k++) {
        double range = 0;
        for (size_t i = 0; i < qp_tensor_numel(f32[k]); i++)
            range = fmax(range, fabs(((float *)f32[k]->data)[i]));
        double e = max_diff(fake[k], f32[k]);
        CHECK(e > 0 && e < 0.05 * range);
        /* the int mode hands back integers: compare dequantized */
        struct qp_tensor *dq;
        REQUIRE_OK(qp_tensor_new("y", QP_DTYPE_F32, in[k]->ndim, in[k]->shape,
                                 &dq, &err), &err);
        qp_tensor_read_f32(in[k], 0, qp_tensor_numel(in[k]), dq->data);
        double ei = max_diff(dq, f32[k]);
        CHECK(ei > 0 && ei < 0.05 * range);
        qp_tensor_free(dq);
    }
    free3(f32);
    free3(fake);
    free3(in);
    qp_tensor_free(x);
    free(pa);
}
