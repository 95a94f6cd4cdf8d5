/* tests/unit/test-tflite-ops-oracle.c: every TFLite operator qprobe runs,
 * as a one-operator model written by tests/unit/tflite-build.h on random
 * inputs, against TensorFlow Lite 2.9 itself (build/tflite-oracle on the
 * library scripts/tflite-setup.sh fetches once from the npm registry):
 * bit for bit in the tflite-x86 flavor, and in the tflite flavor too where
 * TFLite Micro's arithmetic is the same (all but the table-driven 8-bit
 * LOGISTIC / TANH / SOFTMAX and ruy's rounding of negative ties, which
 * the random data here may or may not meet); float models within 1e-5
 * (relative: TFLite runs them through its XNNPACK delegate). Skipped with a message when the oracle
 * is unavailable (no network the first time, or not x86-64/arm64 Linux). */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/half.h"
#include "formats/dump.h"
#include "formats/npy.h"
#include "model/exec.h"
#include "model/tflite-import.h"
#include "tests/test.h"
#include "tests/unit/tflite-build.h"

enum { I8 = 9, U8 = 3, F32 = 0, I32 = 2, I16 = 7, I64 = 4 };

struct opcase {
    const char *name;
    int32_t opcode;
    uint8_t opt_type;
    int n_opt;
    int32_t opt[8];
    int8_t kind[8];               /* 0 int32, 1 byte, 2 float (bits) */
    int n_in;
    struct tb_tensor t[5];        /* inputs then the output (t[n_in]) */
    const void *data[4];          /* constant inputs' data, or NULL */
    size_t len[4];
    bool micro_exact;
    double tol;                   /* float output: relative tolerance */
};

#define T(name, type, nd, ...) {name, type, nd, __VA_ARGS__}
#define Q(s, z) 1, {s}, {z}, -1, 0
#define NOQ 0, {0}, {0}, -1, 0

static const int32_t perm[4] = {0, 3, 1, 2};
static const int32_t pads[8] = {0, 0, 1, 2, 0, 1, 0, 0};
static const int32_t sl_b[4] = {0, 1, 0, 0}, sl_e[4] = {1, 4, 4, 8},
                     sl_s[4] = {1, 2, 1, 3};
static const int32_t ax12[2] = {1, 2}, ax3[1] = {3};
static const int32_t shape2[2] = {8, 16};
static int8_t conv_w[8 * 3 * 3 * 8], dw_w[3 * 3 * 16], fc_w[10 * 128],
    tc_w[8 * 3 * 3 * 8];
static int32_t conv_b[8], dw_b[16], fc_b[10], tc_b[8];
static int64_t dw_b64[16], fc_b64[10];
static const int32_t tc_shape[4] = {1, 8, 8, 8};
static float f_w[4 * 3 * 3 * 8], f_b[4];
static uint16_t f16[8];

static uint32_t lcg(uint32_t *s)
{
    *s = *s * 1664525u + 1013904223u;
    return *s >> 8;
}

static void fill_consts(void)
{
    uint32_t s = 7;
    for (size_t i = 0; i < sizeof conv_w; i++)
        conv_w[i] = (int8_t)(lcg(&s) % 255 - 127);
    for (size_t i = 0; i < sizeof dw_w; i++)
        dw_w[i] = (int8_t)(lcg(&s) % 255 - 127);
    for (size_t i = 0; i < sizeof fc_w; i++)
        fc_w[i] = (int8_t)(lcg(&s) % 255 - 127);
    for (size_t i = 0; i < sizeof tc_w; i++)
        tc_w[i] = (int8_t)(lcg(&s) % 255 - 127);
    for (int i = 0; i < 16; i++) {
        conv_b[i % 8] = (int32_t)(lcg(&s) % 4001) - 2000;
        dw_b[i] = (int32_t)(lcg(&s) % 4001) - 2000;
    }
    for (int i = 0; i < 10; i++)
        fc_b[i] = (int32_t)(lcg(&s) % 4001) - 2000;
    for (int i = 0; i < 16; i++)
        dw_b64[i] = (int64_t)(lcg(&s) % 400001) - 200000;
    for (int i = 0; i < 10; i++)
        fc_b64[i] = (int64_t)(lcg(&s) % 400001) - 200000;
    for (int i = 0; i < 8; i++)
        tc_b[i] = (int32_t)(lcg(&s) % 4001) - 2000;
    for (size_t i = 0; i < sizeof f_w / sizeof *f_w; i++)
        f_w[i] = (float)((int)(lcg(&s) % 2001) - 1000) / 1000.0f;
    for (int i = 0; i < 4; i++)
        f_b[i] = (float)((int)(lcg(&s) % 201) - 100) / 100.0f;
    for (int i = 0; i < 8; i++)
        f16[i] = qp_f32_to_f16((float)((int)(lcg(&s) % 2001) - 1000) / 7.0f);
}

#define X4 4, {1, 4, 4, 8}
static const struct opcase cases[] = {
    {"add_bcast_relu", 0, 11, 1, {1}, {1}, 2,
     {T("a", I8, X4, 0, Q(0.05f, 3)), T("b", I8, 1, {8}, 0, Q(0.1f, -2)),
      T("y", I8, X4, 0, Q(0.12f, 1))}, {0}, {0}, true, 0},
    {"sub", 41, 28, 1, {0}, {1}, 2,
     {T("a", I8, X4, 0, Q(0.05f, 3)), T("b", I8, X4, 0, Q(0.07f, -2)),
      T("y", I8, X4, 0, Q(0.09f, 1))}, {0}, {0}, true, 0},
    {"mul", 18, 21, 1, {0}, {1}, 2,
     {T("a", I8, X4, 0, Q(0.05f, 3)), T("b", I8, X4, 0, Q(0.07f, -2)),
      T("y", I8, X4, 0, Q(0.02f, 1))}, {0}, {0}, true, 0},
    {"logistic", 14, 0, 0, {0}, {0}, 1,
     {T("x", I8, X4, 0, Q(0.1f, 5)), T("y", I8, X4, 0, Q(1.0f / 256, -128))},
     {0}, {0}, false, 0},
    {"tanh", 28, 0, 0, {0}, {0}, 1,
     {T("x", I8, X4, 0, Q(0.05f, 5)), T("y", I8, X4, 0, Q(1.0f / 128, 0))},
     {0}, {0}, false, 0},
    {"hard_swish", 117, 0, 0, {0}, {0}, 1,
     {T("x", I8, X4, 0, Q(0.05f, -3)), T("y", I8, X4, 0, Q(0.04f, -10))},
     {0}, {0}, true, 0},
    {"leaky_relu", 98, 75, 1, {0x3e4ccccd /* 0.2f */}, {2}, 1,
     {T("x", I8, X4, 0, Q(0.05f, -3)), T("y", I8, X4, 0, Q(0.04f, 2))},
     {0}, {0}, true, 0},
    {"relu", 19, 0, 0, {0}, {0}, 1,
     {T("x", I8, X4, 0, Q(0.05f, -3)), T("y", I8, X4, 0, Q(0.03f, -128))},
     {0}, {0}, true, 0},
    {"relu6", 21, 0, 0, {0}, {0}, 1,
     {T("x", I8, X4, 0, Q(0.05f, -3)), T("y", I8, X4, 0, Q(0.03f, -128))},
     {0}, {0}, true, 0},
    {"max_pool", 17, 5, 6, {0, 2, 2, 2, 2, 0}, {1, 0, 0, 0, 0, 1}, 1,
     {T("x", I8, X4, 0, Q(0.05f, -3)),
      T("y", I8, 4, {1, 2, 2, 8}, 0, Q(0.05f, -3))}, {0}, {0}, true, 0},
    {"avg_pool_relu6", 1, 5, 6, {0, 1, 1, 3, 3, 3}, {1, 0, 0, 0, 0, 1}, 1,
     {T("x", I8, X4, 0, Q(0.05f, -3)), T("y", I8, X4, 0, Q(0.05f, -3))},
     {0}, {0}, true, 0},
    {"mean_spatial", 40, 27, 1, {1}, {1}, 2,
     {T("x", I8, X4, 0, Q(0.05f, -3)), T("axes", I32, 1, {2}, 1, NOQ),
      T("y", I8, 4, {1, 1, 1, 8}, 0, Q(0.03f, 4))}, {NULL, ax12}, {0, 8},
     true, 0},
    {"mean_channels", 40, 27, 1, {0}, {1}, 2,
     {T("x", I8, X4, 0, Q(0.05f, -3)), T("axes", I32, 1, {1}, 1, NOQ),
      T("y", I8, 3, {1, 4, 4}, 0, Q(0.03f, 4))}, {NULL, ax3}, {0, 4},
     true, 0},
    {"concat", 2, 10, 2, {3, 0}, {0, 1}, 2,
     {T("a", I8, X4, 0, Q(0.05f, 3)), T("b", I8, X4, 0, Q(0.05f, 3)),
      T("y", I8, 4, {1, 4, 4, 16}, 0, Q(0.05f, 3))}, {0}, {0}, true, 0},
    {"concat_uint8_rescale", 2, 10, 2, {3, 0}, {0, 1}, 2,
     {T("a", U8, X4, 0, Q(0.05f, 128)), T("b", U8, X4, 0, Q(0.08f, 100)),
      T("y", U8, 4, {1, 4, 4, 16}, 0, Q(0.07f, 120))}, {0}, {0}, true, 0},
    {"transpose", 39, 26, 0, {0}, {0}, 2,
     {T("x", I8, X4, 0, Q(0.05f, 3)), T("perm", I32, 1, {4}, 1, NOQ),
      T("y", I8, 4, {1, 8, 4, 4}, 0, Q(0.05f, 3))}, {NULL, perm}, {0, 16},
     true, 0},
    {"pad", 34, 22, 0, {0}, {0}, 2,
     {T("x", I8, X4, 0, Q(0.05f, 3)), T("pads", I32, 2, {4, 2}, 1, NOQ),
      T("y", I8, 4, {1, 7, 5, 8}, 0, Q(0.05f, 3))}, {NULL, pads}, {0, 32},
     true, 0},
    {"strided_slice", 45, 32, 5, {0, 8, 0, 0, 0}, {0}, 4,
     {T("x", I8, X4, 0, Q(0.05f, 3)), T("b", I32, 1, {4}, 1, NOQ),
      T("e", I32, 1, {4}, 2, NOQ), T("s", I32, 1, {4}, 3, NOQ),
      T("y", I8, 4, {1, 2, 4, 3}, 0, Q(0.05f, 3))}, {NULL, sl_b, sl_e, sl_s},
     {0, 16, 16, 16}, true, 0},
    {"requantize", 114, 0, 0, {0}, {0}, 1,
     {T("x", I8, X4, 0, Q(0.05f, 3)), T("y", I8, X4, 0, Q(0.07f, -5))},
     {0}, {0}, true, 0},
    {"softmax", 25, 9, 1, {0x3f800000 /* beta 1.0f */}, {2}, 1,
     {T("x", I8, 2, {8, 16}, 0, Q(0.1f, 2)),
      T("y", I8, 2, {8, 16}, 0, Q(1.0f / 256, -128))}, {0}, {0}, false, 0},
    {"reshape", 22, 17, 0, {0}, {0}, 2,
     {T("x", I8, X4, 0, Q(0.05f, 3)), T("shape", I32, 1, {2}, 1, NOQ),
      T("y", I8, 2, {8, 16}, 0, Q(0.05f, 3))}, {NULL, shape2}, {0, 8}, true, 0},
    {"conv_stride2_same_pc", 3, 1, 4, {0, 2, 2, 0}, {1, 0, 0, 1}, 3,
     {T("x", I8, X4, 0, Q(0.05f, 3)),
      T("w", I8, 4, {8, 3, 3, 8}, 1, Q(0.01f, 0)),
      T("b", I32, 1, {8}, 2, Q(0.0005f, 0)),
      T("y", I8, 4, {1, 2, 2, 8}, 0, Q(0.3f, -4))},
     {NULL, conv_w, conv_b}, {0, sizeof conv_w, sizeof conv_b}, false, 0},
    {"depthwise_dm2_dilated", 4, 2, 7, {1, 1, 1, 2, 0, 2, 2},
     {1, 0, 0, 0, 1, 0, 0}, 3,
     {T("x", I8, X4, 0, Q(0.05f, 3)),
      T("w", I8, 4, {1, 3, 3, 16}, 1, 1, {0.02f}, {0}, -1, 3),
      T("b", I32, 1, {16}, 2, 1, {0.001f}, {0}, -1, 0),
      T("y", I8, 4, {1, 0, 0, 16}, 0, Q(0.2f, 2))},
     {NULL, dw_w, dw_b}, {0, sizeof dw_w, sizeof dw_b}, true, 0},
    {"fully_connected", 9, 8, 1, {0}, {1}, 3,
     {T("x", I8, 2, {1, 128}, 0, Q(0.05f, 3)),
      T("w", I8, 2, {10, 128}, 1, Q(0.01f, 0)),
      T("b", I32, 1, {10}, 2, Q(0.0005f, 0)),
      T("y", I8, 2, {1, 10}, 0, Q(0.4f, -1))},
     {NULL, fc_w, fc_b}, {0, sizeof fc_w, sizeof fc_b}, false, 0},
    {"transpose_conv", 67, 49, 3, {0, 2, 2}, {1, 0, 0}, 4,
     {T("shape", I32, 1, {4}, 1, NOQ),
      T("w", I8, 4, {8, 3, 3, 8}, 2, Q(0.02f, 0)),
      T("x", I8, X4, 0, Q(0.05f, 3)),
      T("b", I32, 1, {8}, 3, Q(0.001f, 0)),
      T("y", I8, 4, {1, 8, 8, 8}, 0, Q(0.2f, -3))},
     {tc_shape, tc_w, NULL, tc_b}, {16, sizeof tc_w, 0, sizeof tc_b}, true, 0},
    /* 16x8: int16 activations (zero point 0), int8 weights, int64 bias */
    {"fully_connected_16x8", 9, 8, 1, {0}, {1}, 3,
     {T("x", I16, 2, {1, 128}, 0, Q(0.001f, 0)),
      T("w", I8, 2, {10, 128}, 1, Q(0.01f, 0)),
      T("b", I64, 1, {10}, 2, Q(0.00001f, 0)),
      T("y", I16, 2, {1, 10}, 0, Q(0.004f, 0))},
     {NULL, fc_w, fc_b64}, {0, sizeof fc_w, sizeof fc_b64}, true, 0},
    {"depthwise_16x8", 4, 2, 7, {0, 1, 1, 2, 1, 1, 1}, {1, 0, 0, 0, 1, 0, 0}, 3,
     {T("x", I16, X4, 0, Q(0.001f, 0)),
      T("w", I8, 4, {1, 3, 3, 16}, 1, 1, {0.02f}, {0}, -1, 3),
      T("b", I64, 1, {16}, 2, Q(0.00002f, 0)),
      T("y", I16, 4, {1, 4, 4, 16}, 0, Q(0.003f, 0))},
     {NULL, dw_w, dw_b64}, {0, sizeof dw_w, sizeof dw_b64}, true, 0},
    {"add_16x8_general", 0, 11, 2, {0, 0}, {1, 1}, 2,
     {T("a", I16, X4, 0, Q(0.0011f, 0)), T("b", I16, 1, {8}, 0, Q(0.0007f, 0)),
      T("y", I16, X4, 0, Q(0.0013f, 0))}, {0}, {0}, true, 0},
    {"mul_16x8", 18, 21, 1, {0}, {1}, 2,
     {T("a", I16, X4, 0, Q(0.001f, 0)), T("b", I16, X4, 0, Q(0.002f, 0)),
      T("y", I16, X4, 0, Q(0.0005f, 0))}, {0}, {0}, true, 0},
    {"avg_pool_16", 1, 5, 6, {0, 2, 2, 2, 2, 0}, {1, 0, 0, 0, 0, 1}, 1,
     {T("x", I16, X4, 0, Q(0.001f, 0)),
      T("y", I16, 4, {1, 2, 2, 8}, 0, Q(0.001f, 0))}, {0}, {0}, true, 0},
    /* float models (TFLite may run them through XNNPACK: not bit-exact) */
    {"float_conv_relu", 3, 1, 4, {1, 1, 1, 1}, {1, 0, 0, 1}, 3,
     {T("x", F32, X4, 0, NOQ), T("w", F32, 4, {4, 3, 3, 8}, 1, NOQ),
      T("b", F32, 1, {4}, 2, NOQ), T("y", F32, 4, {1, 2, 2, 4}, 0, NOQ)},
     {NULL, f_w, f_b}, {0, sizeof f_w, sizeof f_b}, true, 1e-5},
    {"float_depthwise_dm2", 4, 2, 7, {0, 2, 2, 2, 1, 1, 1},
     {1, 0, 0, 0, 1, 0, 0}, 3,
     {T("x", F32, X4, 0, NOQ), T("w", F32, 4, {1, 3, 3, 16}, 1, NOQ),
      T("b", F32, 1, {16}, 2, NOQ), T("y", F32, 4, {1, 2, 2, 16}, 0, NOQ)},
     {NULL, f_w, f_w + 144}, {0, 144 * sizeof(float), 16 * sizeof(float)},
     true, 1e-5},
    {"float_fully_connected", 9, 8, 1, {3}, {1}, 3,
     {T("x", F32, 2, {1, 72}, 0, NOQ), T("w", F32, 2, {4, 72}, 1, NOQ),
      T("b", F32, 1, {4}, 2, NOQ), T("y", F32, 2, {1, 4}, 0, NOQ)},
     {NULL, f_w, f_b}, {0, sizeof f_w, sizeof f_b}, true, 1e-5},
    {"float_add_relu6", 0, 11, 1, {3}, {1}, 2,
     {T("a", F32, X4, 0, NOQ), T("b", F32, 1, {8}, 0, NOQ),
      T("y", F32, X4, 0, NOQ)}, {0}, {0}, true, 1e-6},
    {"float_avg_pool", 1, 5, 6, {0, 1, 1, 3, 3, 0}, {1, 0, 0, 0, 0, 1}, 1,
     {T("x", F32, X4, 0, NOQ), T("y", F32, X4, 0, NOQ)}, {0}, {0}, true, 1e-6},
    {"float_softmax", 25, 9, 1, {0x3f800000}, {2}, 1,
     {T("x", F32, 2, {8, 16}, 0, NOQ), T("y", F32, 2, {8, 16}, 0, NOQ)},
     {0}, {0}, true, 1e-5},
    {"dequantize_int8", 6, 0, 0, {0}, {0}, 1,
     {T("x", I8, X4, 0, Q(0.05f, 3)), T("y", F32, X4, 0, NOQ)}, {0}, {0},
     true, 1e-7},
    {"quantize_float_int8", 114, 0, 0, {0}, {0}, 1,
     {T("x", F32, X4, 0, NOQ), T("y", I8, X4, 0, Q(0.03f, -7))}, {0}, {0},
     true, 0},
    {"dequantize_float16_weights", 6, 0, 0, {0}, {0}, 1,
     {T("w", 1, 1, {8}, 1, NOQ), T("y", F32, 1, {8}, 0, NOQ)}, {f16}, {16},
     true, 1e-7},
    {"float_logistic", 14, 0, 0, {0}, {0}, 1,
     {T("x", F32, X4, 0, NOQ), T("y", F32, X4, 0, NOQ)}, {0}, {0}, true, 1e-6},
};
#undef X4

static uint8_t *build(const struct opcase *c, size_t *len)
{
    struct tb_model m;
    memset(&m, 0, sizeof m);
    m.n_tensors = c->n_in + 1;
    for (int i = 0; i <= c->n_in; i++)
        m.t[i] = c->t[i];
    m.n_buffers = 1;
    for (int i = 0; i < c->n_in; i++)
        if (c->data[i]) {
            m.t[i].buffer = (uint32_t)m.n_buffers;
            m.buf[m.n_buffers] = c->data[i];
            m.buf_len[m.n_buffers++] = c->len[i];
        } else {
            m.t[i].buffer = 0;
            m.inputs[m.n_inputs++] = i;
        }
    m.n_opcodes = 1;
    m.opcode[0] = c->opcode;
    m.n_ops = 1;
    struct tb_op *o = &m.op[0];
    o->n_in = c->n_in;
    for (int i = 0; i < c->n_in; i++)
        o->in[i] = i;
    o->n_out = 1;
    o->out[0] = c->n_in;
    o->opt_type = c->opt_type;
    o->n_opt = c->n_opt;
    memcpy(o->opt_i32, c->opt, sizeof o->opt_i32);
    memcpy(o->opt_kind, c->kind, sizeof o->opt_kind);
    m.n_outputs = 1;
    m.outputs[0] = c->n_in;
    return tb_write(&m, len);
}

static const char *oracle_lib(void)
{
    static char lib[1024];
    static int state; /* 0 unknown, 1 ok, 2 missing */
    if (!state) {
        state = 2;
        FILE *p = popen("sh scripts/tflite-setup.sh 2>/dev/null", "r");
        if (p && fgets(lib, sizeof lib, p)) {
            lib[strcspn(lib, "\n")] = '\0';
            state = lib[0] && !access("build/tflite-oracle", X_OK) ? 1 : 2;
        }
        if (p)
            pclose(p);
    }
    return state == 1 ? lib : NULL;
}

/* Runs case c in TFLite (dumped to dir/tfl) and in qprobe (flavor f);
 * returns how many output elements differ (-1 on failure). */
static long compare(struct qp_test_ctx *ctx, const struct opcase *c,
                    const char *dir, enum qp_tfl_flavor f, bool run_oracle)
{
    char model[512], cmd[4096], in[4][512], out[512];
    struct qp_error err;
    size_t len;
    uint8_t *b = build(c, &len);
    snprintf(model, sizeof model, "%s/%s.tflite", dir, c->name);
    bool ok = qp_test_write_file(model, b, len);
    free(b);
    struct qp_graph *g = NULL;
    struct qp_tflite_opts o = {f, false};
    if (!ok || qp_model_load_tflite(model, &o, &g, &err)) {
        qp_test_failf(ctx, __FILE__, __LINE__, "%s: %s", c->name,
                      ok ? err.msg : "write");
        return -1;
    }
    struct qp_tensor *feed[4] = {0}, *y = NULL;
    uint32_t seed = 12345;
    int n = g->n_inputs;
    snprintf(cmd, sizeof cmd, "build/tflite-oracle '%s' '%s' --dump '%s/tfl' ",
             oracle_lib(), model, dir);
    for (int k = 0; k < n; k++) {
        const struct qp_value *v = &g->values[g->inputs[k]];
        qp_tensor_new(v->name, v->dtype, v->ndim, v->shape, &feed[k], &err);
        for (size_t i = 0; v->dtype == QP_DTYPE_F32 &&
                           i < qp_tensor_numel(feed[k]); i++)
            ((float *)feed[k]->data)[i] =
                (float)((int)(lcg(&seed) % 2001) - 1000) / 250.0f;
        for (size_t i = 0; v->dtype != QP_DTYPE_F32 &&
                           i < qp_tensor_numel(feed[k]); i++)
            qp_elem_set_i64(v->dtype, feed[k]->data, i,
                            v->dtype == QP_DTYPE_U8 ? (int64_t)(lcg(&seed) % 256)
                            : v->dtype == QP_DTYPE_I16
                                ? (int64_t)(lcg(&seed) % 65536) - 32768
                                : (int64_t)(lcg(&seed) % 256) - 128);
        snprintf(in[k], sizeof in[k], "%s/in%d.npy", dir, k);
        qp_fmt_npy_save(in[k], feed[k], &err);
        strncat(cmd, in[k], sizeof cmd - strlen(cmd) - 2);
        strncat(cmd, " ", sizeof cmd - strlen(cmd) - 1);
    }
    strncat(cmd, ">/dev/null 2>&1", sizeof cmd - strlen(cmd) - 1);
    long bad = -1;
    if (run_oracle && system(cmd) != 0) {
        qp_test_failf(ctx, __FILE__, __LINE__, "%s: TFLite failed (%s)",
                      c->name, cmd);
    } else if (qp_exec_run(g, (const struct qp_tensor *const *)feed, n, NULL,
                           &y, NULL, &err)) {
        qp_test_failf(ctx, __FILE__, __LINE__, "%s: %s", c->name, err.msg);
    } else {
        snprintf(out, sizeof out, "%s/tfl/%s.npy", dir, "y");
        struct qp_tensor *r;
        if (qp_fmt_npy_load(out, NULL, false, &r, &err)) {
            qp_test_failf(ctx, __FILE__, __LINE__, "%s: %s", c->name, err.msg);
        } else {
            bad = 0;
            if (r->nbytes != y->nbytes || r->dtype != y->dtype)
                bad = (long)qp_tensor_numel(y);
            else if (y->dtype == QP_DTYPE_F32)
                for (size_t i = 0; i < qp_tensor_numel(y); i++) {
                    double a = ((float *)y->data)[i], e = ((float *)r->data)[i];
                    double m = fabs(e) > 1 ? fabs(e) : 1;
                    bad += !(fabs(a - e) <= c->tol * m);
                }
            else
                for (size_t i = 0; i < qp_tensor_numel(y); i++)
                    bad += qp_elem_get_i64(y->dtype, y->data, i) !=
                           qp_elem_get_i64(r->dtype, r->data, i);
            qp_tensor_free(r);
        }
    }
    for (int k = 0; k < 4; k++)
        qp_tensor_free(feed[k]);
    qp_tensor_free(y);
    qp_graph_free(g);
    return bad;
}

QP_TEST(tflite_each_operator_matches_tflite)
{
    if (!oracle_lib()) {
        printf("  (skipped: TFLite's C library is unavailable: "
               "scripts/tflite-setup.sh)\n");
        return;
    }
    fill_consts();
    int exact = 0, micro = 0, floats = 0;
    size_t nc = sizeof cases / sizeof cases[0];
    for (size_t i = 0; i < nc; i++) {
        struct opcase c = cases[i];
        if (!strcmp(c.name, "depthwise_dm2_dilated")) {
            /* a 3x3 kernel dilated 2 spans 5 > 4: SAME padding */
            c.t[3].shape[1] = c.t[3].shape[2] = 4;
            c.opt[0] = 0;
        }
        if (!strcmp(c.name, "conv_stride2_same_pc")) {
            /* per channel: 8 weight scales, biases on their grids */
            c.t[1].nq = c.t[2].nq = 8;
            for (int k = 0; k < 8; k++) {
                c.t[1].scale[k] = 0.01f * (float)(1 + k % 3);
                c.t[2].scale[k] = 0.05f * c.t[1].scale[k];
                c.t[1].zp[k] = c.t[2].zp[k] = 0;
            }
        }
        char dir[512];
        snprintf(dir, sizeof dir, "%s/%s", qp_test_tmpdir(ctx), c.name);
        REQUIRE(mkdir(dir, 0755) == 0);
        long x86 = compare(ctx, &c, dir, QP_TFL_X86, true);
        long tflm = compare(ctx, &c, dir, QP_TFL_MICRO, false);
        if (x86)
            qp_test_failf(ctx, __FILE__, __LINE__, "%s: %ld elements differ "
                          "from TFLite (tflite-x86)", c.name, x86);
        exact += x86 == 0 && !c.tol;
        floats += x86 == 0 && c.tol;
        if (c.micro_exact && tflm)
            qp_test_failf(ctx, __FILE__, __LINE__, "%s: %ld elements differ "
                          "(tflite)", c.name, tflm);
        micro += tflm == 0 && !c.tol;
        printf("  %-24s tflite-x86 %s, tflite %ld differ%s\n", c.name,
               x86 == 0 ? "exact" : "DIFFERS", tflm,
               c.tol ? " (float, within tolerance)" : "");
    }
    printf("  %d integer cases bit-exact with TFLite 2.9 (tflite-x86), %d in "
           "the tflite flavor; %d float cases within tolerance; of %zu\n",
           exact, micro, floats, nc);
}

/* TFLite Micro's fixed-point int8 LOGISTIC and TANH (gemmlowp's functions
 * on a Q4 input) against the float functions on every input code: within
 * one step of the output grid, and the same as TFLite's float table on
 * almost every code. Needs no oracle. */
QP_TEST(tflite_micro_logistic_tanh_fixed_point)
{
    for (int op = 0; op < 2; op++) {
        const struct opcase *c = &cases[op ? 4 : 3];
        size_t len;
        uint8_t *b = build(c, &len);
        char *path = qp_test_path(ctx, op ? "tanh.tflite" : "logistic.tflite");
        REQUIRE(qp_test_write_file(path, b, len));
        free(b);
        int8_t y[2][256];
        struct qp_error err;
        for (int f = 0; f < 2; f++) {
            struct qp_graph *g;
            struct qp_tflite_opts o = {f, false};
            REQUIRE_OK(qp_model_load_tflite(path, &o, &g, &err), &err);
            /* 256 codes as a [1,4,4,8] batch of two */
            for (int half = 0; half < 2; half++) {
                struct qp_tensor *x, *out = NULL;
                int64_t shape[4] = {1, 4, 4, 8};
                REQUIRE_OK(qp_tensor_new("x", QP_DTYPE_I8, 4, shape, &x, &err),
                           &err);
                for (int i = 0; i < 128; i++)
                    ((int8_t *)x->data)[i] = (int8_t)(half * 128 + i - 128);
                CHECK_OK(qp_exec_run(g, (const struct qp_tensor *const *)&x, 1,
                                     NULL, &out, NULL, &err), &err);
                if (out)
                    memcpy(&y[f][half * 128], out->data, 128);
                qp_tensor_free(out);
                qp_tensor_free(x);
            }
            qp_graph_free(g);
        }
        int same = 0;
        for (int i = 0; i < 256; i++) {
            double v = 0.1 * (i - 128 - 5) * (op ? 0.5 : 1); /* input scale */
            double t = op ? tanh(v) * 128 : 1 / (1 + exp(-v)) * 256 - 128;
            t = t > 127 ? 127 : t;
            CHECK(fabs(y[QP_TFL_MICRO][i] - t) <= 1.0);
            same += y[0][i] == y[1][i];
        }
        CHECK(same >= 240);
        printf("  %s: TFLite Micro's fixed point equals TFLite's table on %d "
               "of 256 codes\n", op ? "tanh" : "logistic", same);
        free(path);
    }
}
