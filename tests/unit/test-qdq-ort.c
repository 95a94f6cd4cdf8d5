/* The int mode of QDQ models in the `ort` flavor against ONNX Runtime
 * itself: the onnxruntime-node binary pinned in scripts/ort/ort.lock
 * (scripts/ort-setup.sh; needs node and, once, the npm registry: the test
 * fails, never skips, without them) runs the same model, with its graph
 * optimizations on, so it fuses the QDQ groups into its QLinear
 * operators. Two models (uint8 and int8 activations) put every fusion on
 * one input: Conv (per-channel weights, int32 bias), MatMul, Add and Mul
 * (same shape, per-channel and scalar broadcast), AveragePool (padding
 * with and without count_include_pad, and a whole-image kernel),
 * GlobalAveragePool, Softmax (last axis and axis 1), Sigmoid, LeakyRelu,
 * Concat of differently quantized inputs and MaxPool. Every output
 * (dequantized after its QuantizeLinear) must be bit for bit ONNX
 * Runtime's; the fp32 run of the same graph (no fusion) must differ on
 * some of them, or the test would show nothing. The int8 weights are
 * drawn from tests/unit/ort-cpu.h's range: 7-bit on x86 without VNNI,
 * where ONNX Runtime's uint8 kernels saturate 8-bit ones. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/npy.h"
#include "analysis/detect.h"
#include "model/qdq.h"
#include "model/session.h"
#include "tests/unit/kern-test.h"
#include "tests/unit/ort-cpu.h"
#include "tests/unit/test-qdq-model.h"

static const char *const outputs[] = {
    "conv", "mm", "add", "addc", "adds", "mul", "mulc", "ap0", "ap1", "ap2",
    "apg", "gap", "sm", "sm1", "sm2", "sig", "lr", "cat", "shs", "mp"};
enum { N_OUT = sizeof outputs / sizeof outputs[0] };

/* op -> Q(scale, zp) -> DQ -> output "name" */
static void tail(struct pbe *g, const char *name, const char *op, const char *ins,
                 const char *attrs, float scale, int type, int32_t zp)
{
    char r[64], s[64], z[64], q[64], in[256];
    snprintf(r, sizeof r, "%s_r", name);
    snprintf(s, sizeof s, "%s_s", name);
    snprintf(z, sizeof z, "%s_z", name);
    snprintf(q, sizeof q, "%s_q", name);
    qm_scalar_f(g, s, scale);
    qm_scalar_q(g, z, type, zp);
    qm_node(g, op, ins, r, attrs);
    snprintf(in, sizeof in, "%s,%s,%s", r, s, z);
    qm_node(g, "QuantizeLinear", in, q, NULL);
    snprintf(in, sizeof in, "%s,%s,%s", q, s, z);
    qm_node(g, "DequantizeLinear", in, name, NULL);
}

/* name = DQ(Q(x)) with scale and zero point initializers s, z: a pair of
 * the branch's own */
static const char *qx(struct pbe *g, const char *name, const char *sc,
                      const char *z)
{
    char q[64], in[256];
    snprintf(q, sizeof q, "%s_q", name);
    snprintf(in, sizeof in, "x,%s,%s", sc, z);
    qm_node(g, "QuantizeLinear", in, q, NULL);
    snprintf(in, sizeof in, "%s,%s,%s", q, sc, z);
    qm_node(g, "DequantizeLinear", in, name, NULL);
    return name;
}

/* A float graph output of unknown shape. */
static void output(struct pbe *g, const char *name)
{
    struct pbe vi = {0}, tp = {0}, tt = {0};
    pbe_str(&vi, 1, name);
    pbe_int(&tt, 1, T_F32);
    pbe_msg(&tp, 1, &tt);
    pbe_msg(&vi, 2, &tp);
    pbe_msg(g, G_OUTPUT, &vi);
}

/* The zoo on x [1, 8, 9, 10] for activations of type (T_U8 or T_I8). */
static void zoo(struct pbe *m, int type)
{
    struct pbe g = {0};
    bool u8 = type == T_U8;
    int32_t base = u8 ? 128 : 0;
    int64_t xd[4] = {1, 8, 9, 10};
    pb_value(&g, G_INPUT, "x", T_F32, xd, 4);
    qm_scalar_f(&g, "sx", 0.05f);
    qm_scalar_q(&g, "zx", type, base + 3);
    qm_scalar_f(&g, "sx2", 0.037f);
    qm_scalar_q(&g, "zx2", type, base - 5);
    /* every branch quantizes x itself (the Q -> DQ pair is its own, as
     * ONNX Runtime needs for its int8 -> uint8 conversion); "xd" is one DQ
     * shared by two branches */
    qm_node(&g, "QuantizeLinear", "x,sx,zx", "xq", NULL);
    qm_node(&g, "DequantizeLinear", "xq,sx,zx", "xd", NULL);
    /* conv weights [6, 8, 3, 3] int8 per channel, bias int32 on sx * ws */
    int8_t w[6 * 8 * 9];
    float ws[6];
    int32_t bias[6];
    uint64_t r = 5;
    for (size_t i = 0; i < sizeof w; i++)
        w[i] = (int8_t)kt_range(&r, ort_wmin(), ort_wmax());
    for (int c = 0; c < 6; c++) {
        ws[c] = 0.002f * (float)(c + 1);
        bias[c] = kt_range(&r, -3000, 3000);
    }
    int64_t wd[4] = {6, 8, 3, 3}, cd[1] = {6};
    qm_init(&g, "w", T_I8, 4, wd, w, sizeof w);
    qm_init(&g, "ws", T_F32, 1, cd, ws, sizeof ws);
    int8_t wz[6] = {0};
    qm_init(&g, "wz", T_I8, 1, cd, wz, sizeof wz);
    qm_node(&g, "DequantizeLinear", "w,ws,wz", "wd", "i:axis=0");
    float bs[6];
    for (int c = 0; c < 6; c++)
        bs[c] = 0.05f * ws[c];
    qm_init(&g, "b", T_I32, 1, cd, bias, sizeof bias);
    qm_init(&g, "bs", T_F32, 1, cd, bs, sizeof bs);
    int32_t bz[6] = {0};
    qm_init(&g, "bz", T_I32, 1, cd, bz, sizeof bz);
    qm_node(&g, "DequantizeLinear", "b,bs,bz", "bd", "i:axis=0");
    qx(&g, "x_conv", "sx", "zx");
    tail(&g, "conv", "Conv", "x_conv,wd,bd", "is:pads=1,1,1,1;is:strides=1,2", 0.02f,
         type, base - 7);
    /* matmul weight [10, 7] int8 per tensor */
    int8_t w2[70];
    for (int i = 0; i < 70; i++)
        w2[i] = (int8_t)kt_range(&r, ort_wmin(), ort_wmax());
    int64_t w2d[2] = {10, 7};
    qm_init(&g, "w2", T_I8, 2, w2d, w2, sizeof w2);
    qm_scalar_f(&g, "w2s", 0.004f);
    qm_scalar_q(&g, "w2z", T_I8, 0);
    qm_node(&g, "DequantizeLinear", "w2,w2s,w2z", "w2d", NULL);
    qx(&g, "x_mm", "sx", "zx");
    tail(&g, "mm", "MatMul", "x_mm,w2d", NULL, 0.03f, type, base + 1);
    /* binary operators, and their constants: [1, 8, 1, 1] and [1] */
    uint8_t cb[8], cs1 = (uint8_t)(base + 50);
    for (int i = 0; i < 8; i++)
        cb[i] = (uint8_t)(base + kt_range(&r, -100, 100));
    int64_t cbd[4] = {1, 8, 1, 1}, c1[1] = {1};
    qm_init(&g, "cb", type, 4, cbd, cb, 8);
    qm_init(&g, "cs", type, 1, c1, &cs1, 1);
    qm_scalar_f(&g, "scb", 0.021f);
    qm_scalar_q(&g, "zcb", type, base + 9);
    qm_node(&g, "DequantizeLinear", "cb,scb,zcb", "cbd", NULL);
    qm_node(&g, "DequantizeLinear", "cs,scb,zcb", "csd", NULL);
    qx(&g, "x_add", "sx", "zx");
    qx(&g, "x2_add", "sx2", "zx2");
    tail(&g, "add", "Add", "x_add,x2_add", NULL, 0.07f, type, base - 2);
    qx(&g, "x_addc", "sx", "zx");
    tail(&g, "addc", "Add", "x_addc,cbd", NULL, 0.06f, type, base + 4);
    qx(&g, "x_adds", "sx", "zx");
    tail(&g, "adds", "Add", "csd,x_adds", NULL, 0.06f, type, base + 4);
    qx(&g, "x_mul", "sx", "zx");
    qx(&g, "x2_mul", "sx2", "zx2");
    tail(&g, "mul", "Mul", "x_mul,x2_mul", NULL, 0.09f, type, base - 30);
    qx(&g, "x_mulc", "sx", "zx");
    tail(&g, "mulc", "Mul", "cbd,x_mulc", NULL, 0.03f, type, base + 6);
    /* pools */
    qx(&g, "x_ap0", "sx", "zx");
    tail(&g, "ap0", "AveragePool", "x_ap0",
         "is:kernel_shape=3,3;is:strides=2,2;is:pads=1,1,1,1", 0.011f, type,
         base + 2);
    qx(&g, "x_ap1", "sx", "zx");
    tail(&g, "ap1", "AveragePool", "x_ap1",
         "is:kernel_shape=3,3;is:strides=2,2;is:pads=1,1,1,1;i:count_include_pad=1",
         0.011f, type, base + 2);
    /* means of 4 codes on the input's grid: ties, which the zero point
     * added before rounding breaks otherwise than the float path */
    qx(&g, "x_ap2", "sx", "zx");
    tail(&g, "ap2", "AveragePool", "x_ap2", "is:kernel_shape=2,2;is:strides=2,2",
         0.05f, type, base + 3);
    qx(&g, "x_apg", "sx", "zx");
    tail(&g, "apg", "AveragePool", "x_apg", "is:kernel_shape=9,10", 0.004f, type,
         base + 1);
    qx(&g, "x_gap", "sx", "zx");
    tail(&g, "gap", "GlobalAveragePool", "x_gap", NULL, 0.004f, type, base - 1);
    /* softmax, sigmoid: 1/256 as quantizers choose; leaky relu */
    qx(&g, "x_sm", "sx", "zx");
    tail(&g, "sm", "Softmax", "x_sm", "i:axis=-1", 1.0f / 256, type, u8 ? 0 : -128);
    qx(&g, "x_sm1", "sx", "zx");
    tail(&g, "sm1", "Softmax", "x_sm1", "i:axis=1", 1.0f / 256, type, u8 ? 0 : -128);
    /* coarse input steps: the table's exponentials and the float path's
     * part ways */
    qm_scalar_f(&g, "sx3", 0.5f);
    qx(&g, "x_sm2", "sx3", "zx");
    tail(&g, "sm2", "Softmax", "x_sm2", "i:axis=-1", 1.0f / 256, type, u8 ? 0 : -128);
    qx(&g, "x_sig", "sx", "zx");
    tail(&g, "sig", "Sigmoid", "x_sig", NULL, 1.0f / 256, type, u8 ? 0 : -128);
    qx(&g, "x_lr", "sx", "zx");
    tail(&g, "lr", "LeakyRelu", "x_lr", "f:alpha=0.1", 0.031f, type, base - 20);
    qx(&g, "x_cat", "sx", "zx");
    qx(&g, "x2_cat", "sx2", "zx2");
    tail(&g, "cat", "Concat", "x_cat,x2_cat", "i:axis=1", 0.045f, type, base + 5);
    tail(&g, "shs", "Sigmoid", "xd", NULL, 1.0f / 256, type, u8 ? 0 : -128);
    qm_node(&g, "MaxPool", "xd", "mp_r", "is:kernel_shape=2,2;is:strides=2,2");
    qm_node(&g, "QuantizeLinear", "mp_r,sx,zx", "mp_q", NULL);
    qm_node(&g, "DequantizeLinear", "mp_q,sx,zx", "mp", NULL);
    for (int k = 0; k < N_OUT; k++)
        output(&g, outputs[k]);
    qm_model(&g, m);
}

/* The outputs of g in fp32 (f < 0) or the int mode of flavor f. */
static bool run_qprobe(struct qp_test_ctx *ctx, const struct qp_graph *g, int f,
                       const struct qp_tensor *x, struct qp_tensor **out,
                       int *fused)
{
    struct qp_error err;
    struct qp_qdq *q = NULL;
    struct qp_exec_hooks h;
    struct qp_exec_opts o = {0};
    if (f >= 0) {
        if (qp_qdq_new(g, (enum qp_rq_flavor)f, &q, &err))
            return false;
        qp_qdq_hooks(q, &h);
        o.hooks = &h;
        *fused = qp_qdq_fused(q);
    }
    const struct qp_tensor *feed[1] = {x};
    enum qp_status st = qp_exec_run(g, feed, 1, &o, out, NULL, &err);
    CHECK_OK(st, &err);
    qp_qdq_free(q);
    return !st;
}

/* Runs the model file through ONNX Runtime; out[k] from its npy files. */
static bool run_ort(struct qp_test_ctx *ctx, const char *model, const char *input,
                    const char *dir, struct qp_tensor **out)
{
    char cmd[4096], line[1024];
    FILE *p = popen("sh scripts/ort-setup.sh", "r");
    line[0] = '\0';
    if (p && !fgets(line, sizeof line, p))
        line[0] = '\0';
    int rc = p ? pclose(p) : -1;
    line[strcspn(line, "\n")] = '\0';
    if (rc || !line[0]) {
        qp_test_failf(ctx, __FILE__, __LINE__, "scripts/ort-setup.sh failed (status "
                      "%d; it needs node and, once, the npm registry)", rc);
        return false;
    }
    snprintf(cmd, sizeof cmd, "QP_ORT_DIR='%s' node scripts/ort-reference.js run "
             "--model '%s' --input '%s' -o '%s' >/dev/null", line, model, input, dir);
    if ((rc = system(cmd))) {
        qp_test_failf(ctx, __FILE__, __LINE__, "ONNX Runtime failed (status %d): %s",
                      rc, cmd);
        return false;
    }
    for (int k = 0; k < N_OUT; k++) {
        struct qp_error err;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s.npy", dir, outputs[k]);
        if (qp_fmt_npy_load(path, outputs[k], false, &out[k], &err)) {
            qp_test_failf(ctx, __FILE__, __LINE__, "%s", err.msg);
            return false;
        }
    }
    return true;
}

static bool same(const struct qp_tensor *a, const struct qp_tensor *b)
{
    if (!a || !b || a->ndim != b->ndim || a->dtype != b->dtype ||
        a->nbytes != b->nbytes)
        return false;
    for (int d = 0; d < a->ndim; d++)
        if (a->shape[d] != b->shape[d])
            return false;
    return !memcmp(a->data, b->data, a->nbytes);
}

/* qprobe detect on ONNX Runtime's outputs as the "device": the ort flavor
 * reproduces every one of them, and no other flavor does. */
static void check_detect(struct qp_test_ctx *ctx, const char *model,
                         const struct qp_tensor *x, const char *ort_dir)
{
    struct qp_error err;
    struct qp_session *s;
    struct qp_detect d;
    REQUIRE_OK(qp_session_open(model, NULL, &s, &err), &err);
    const struct qp_tensor *feed[1] = {x};
    struct qp_detect_opts o = {0};
    REQUIRE_OK(qp_detect_run(s, feed, ort_dir, &o, &d, &err), &err);
    const struct qp_detect_cand *best = &d.cand[d.order[0]];
    CHECK_STR(qp_rq_flavor_name(best->flavor), "ort");
    CHECK_INT(best->compared, N_OUT);
    CHECK_INT(best->exact, N_OUT);
    CHECK(d.cand[d.order[1]].exact < N_OUT);
    printf("detect on ONNX Runtime's outputs: %s exact on %zu of %zu; next %s on "
           "%zu\n", qp_rq_flavor_name(best->flavor), best->exact, best->compared,
           qp_rq_flavor_name(d.cand[d.order[1]].flavor), d.cand[d.order[1]].exact);
    qp_detect_release(&d);
    qp_session_free(s);
}

static void check_zoo(struct qp_test_ctx *ctx, int type)
{
    struct pbe m;
    zoo(&m, type);
    struct qp_graph *g = qm_load(ctx, &m);
    const char *tag = type == T_U8 ? "u8" : "i8";
    char model[512], input[512], dir[512];
    const char *tmp = qp_test_tmpdir(ctx);
    snprintf(model, sizeof model, "%s/zoo-%s.onnx", tmp, tag);
    snprintf(input, sizeof input, "%s/x-%s.npy", tmp, tag);
    snprintf(dir, sizeof dir, "%s/ort-%s", tmp, tag);
    struct qp_tensor *x = NULL, *ort[N_OUT] = {0}, *mine[N_OUT] = {0},
                     *fp[N_OUT] = {0};
    struct qp_error err;
    int64_t xs[4] = {1, 8, 9, 10};
    REQUIRE(g);
    REQUIRE(qp_test_write_file(model, m.p, m.n));
    REQUIRE_OK(qp_tensor_new("x", QP_DTYPE_F32, 4, xs, &x, &err), &err);
    uint64_t r = type == T_U8 ? 21 : 22;
    float *xv = x->data;
    for (int i = 0; i < 720; i++) /* about -6..6, some on ties of 0.05 */
        xv[i] = i % 7 == 0 ? 0.025f * (float)kt_range(&r, -240, 240)
                           : (float)kt_range(&r, -600000, 600000) * 1e-5f;
    REQUIRE_OK(qp_fmt_npy_save(input, x, &err), &err);
    int fused = -1, dummy;
    if (run_ort(ctx, model, input, dir, ort) &&
        run_qprobe(ctx, g, QP_RQ_ORT, x, mine, &fused) &&
        run_qprobe(ctx, g, -1, x, fp, &dummy)) {
        int bad = 0, differ = 0;
        for (int k = 0; k < N_OUT; k++) {
            /* known: ONNX Runtime's int8 average pooling rounds the ties
             * of ap2 upward, neither as its uint8 QLinearAveragePool nor
             * as the float path (not emulated; counted, not failed) */
            bool known = type == T_I8 && !strcmp(outputs[k], "ap2");
            if (known) {
                bad += !same(ort[k], mine[k]);
                continue;
            }
            if (!same(ort[k], mine[k])) {
                bad++;
                size_t first = 0, n = ort[k] && mine[k] && ort[k]->nbytes == mine[k]->nbytes
                                          ? qp_tensor_numel(ort[k]) : 0;
                while (first < n && ((float *)ort[k]->data)[first] ==
                                        ((float *)mine[k]->data)[first])
                    first++;
                qp_test_failf(ctx, __FILE__, __LINE__, "%s: '%s' differs from ONNX "
                              "Runtime (element %zu: %g, ONNX Runtime %g)", tag,
                              outputs[k], first,
                              first < n ? (double)((float *)mine[k]->data)[first] : 0.0,
                              first < n ? (double)((float *)ort[k]->data)[first] : 0.0);
            }
            differ += !same(ort[k], fp[k]);
        }
        /* uint8: every group but Concat and MaxPool, and the fusions
         * change results; int8: ONNX Runtime on x86 fuses none */
        CHECK_INT(fused, type == T_U8 ? 18 : 0);
        CHECK(type == T_U8 ? differ >= 5 : differ <= 1);
        printf("qdq %s: %d outputs bit for bit ONNX Runtime's (%d fused nodes); "
               "the unfused fp32 run differs on %d\n", tag, N_OUT - bad, fused,
               differ);
        if (type == T_U8)
            check_detect(ctx, model, x, dir);
    }
    for (int k = 0; k < N_OUT; k++) {
        qp_tensor_free(ort[k]);
        qp_tensor_free(mine[k]);
        qp_tensor_free(fp[k]);
    }
    qp_tensor_free(x);
    qp_graph_free(g);
    free(m.p);
}

QP_TEST(qdq_ort_fusions_match_onnxruntime_uint8)
{
    check_zoo(ctx, T_U8);
}

QP_TEST(qdq_ort_fusions_match_onnxruntime_int8)
{
    check_zoo(ctx, T_I8);
}
