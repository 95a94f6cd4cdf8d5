/* tests/unit/test-tflite-reader.c: the TFLite reader (formats/tflite.h,
 * formats/flatbuf.h) on models written by tests/unit/tflite-build.h: what
 * it reads, each malformed case it refuses (with the message), the edits
 * for the oracle, the dump listing, and a one-operator model run in both
 * flavors where they differ on a negative tie. */
#include <stdlib.h>
#include <string.h>

#include "formats/dump.h"
#include "formats/flatbuf.h"
#include "formats/tflite.h"
#include "model/exec.h"
#include "model/tflite-import.h"
#include "tests/test.h"
#include "tests/unit/tflite-build.h"

static const int8_t fc_w[8] = {1, 2, 3, 4, -1, -2, -3, -4};
static const int32_t fc_b[2] = {10, -24};
static const int32_t fc_shape[2] = {2, 4};

/* in int8 [1,4] (0.5, -1) x w int8 [2,4] (0.25) + b int32 [2] -> out int8
 * [1,2] (1.0, 3): FULLY_CONNECTED, no activation. */
static void base_fc(struct tb_model *m)
{
    memset(m, 0, sizeof *m);
    m->n_tensors = 4;
    m->t[0] = (struct tb_tensor){"in", 9, 2, {1, 4}, 0, 1, {0.5f}, {-1}, -1, 0};
    m->t[1] = (struct tb_tensor){"w", 9, 2, {2, 4}, 1, 1, {0.25f}, {0}, -1, 0};
    m->t[2] = (struct tb_tensor){"b", 2, 1, {2}, 2, 1, {0.125f}, {0}, -1, 0};
    m->t[3] = (struct tb_tensor){"out", 9, 2, {1, 2}, 0, 1, {1.0f}, {3}, -1, 0};
    (void)fc_shape;
    m->n_buffers = 3;
    m->buf[1] = (const uint8_t *)fc_w;
    m->buf_len[1] = 8;
    m->buf[2] = (const uint8_t *)fc_b;
    m->buf_len[2] = 8;
    m->n_opcodes = 1;
    m->opcode[0] = 9; /* FULLY_CONNECTED */
    m->n_ops = 1;
    m->op[0] = (struct tb_op){0, 3, 1, {0, 1, 2}, {3}, 8, 1, {0}, {1}};
    m->n_inputs = m->n_outputs = 1;
    m->inputs[0] = 0;
    m->outputs[0] = 3;
}

/* Tensor t quantized along dim with a second scale s1. */
static void two_scales(struct tb_tensor *t, float s1, int32_t dim)
{
    t->nq = 2;
    t->scale[1] = s1;
    t->qdim = dim;
}

static enum qp_status parse(const uint8_t *b, size_t n, struct qp_tfl_model **m,
                            struct qp_error *err)
{
    return qp_tfl_parse("t.tflite", b, n, NULL, m, err);
}

/* The graph of the model in b[0..len) with opts (NULL when it fails: the
 * failure is recorded). */
static struct qp_graph *graph_of(struct qp_test_ctx *ctx, const uint8_t *b,
                                 size_t len, const struct qp_tflite_opts *o)
{
    struct qp_tfl_model *m;
    struct qp_graph *g = NULL;
    struct qp_error err;
    if (qp_tfl_parse("t.tflite", b, len, NULL, &m, &err) ||
        qp_model_from_tflite(m, o, &g, &err)) {
        qp_test_failf(ctx, __FILE__, __LINE__, "%s", err.msg);
        g = NULL;
    }
    qp_tfl_model_free(m);
    return g;
}

QP_TEST(tflite_reader_reads_a_model)
{
    struct tb_model tm;
    base_fc(&tm);
    size_t len;
    uint8_t *b = tb_write(&tm, &len);
    struct qp_tfl_model *m;
    struct qp_error err;
    REQUIRE_OK(parse(b, len, &m, &err), &err);
    CHECK_INT(m->n_tensors, 4);
    CHECK_INT(m->n_ops, 1);
    CHECK_INT(m->ops[0].builtin, QP_TFL_FULLY_CONNECTED);
    CHECK_INT(m->ops[0].n_in, 3);
    CHECK_INT(m->ops[0].options_type, 8);
    CHECK_STR(m->tensors[1].name, "w");
    CHECK_INT(m->tensors[1].dtype, QP_DTYPE_I8);
    CHECK_INT(m->tensors[1].shape[1], 4);
    CHECK_INT(m->tensors[1].nbytes, 8);
    CHECK(m->tensors[1].data && !memcmp(m->tensors[1].data, fc_w, 8));
    CHECK(m->tensors[0].data == NULL);
    CHECK_INT(m->tensors[0].q.count, 1);
    CHECK_NEAR(m->tensors[0].q.scale[0], 0.5, 0);
    CHECK_INT(m->tensors[0].q.zero_point[0], -1);
    CHECK_INT(m->inputs[0], 0);
    CHECK_INT(m->outputs[0], 3);
    CHECK_INT(m->n_notes, 0);
    CHECK_STR(qp_tfl_op_name(4), "DEPTHWISE_CONV_2D");
    CHECK_STR(qp_tfl_op_name(161), "RIGHT_SHIFT");
    CHECK(qp_tfl_op_name(162) == NULL);
    qp_tfl_model_free(m);
    free(b);
}

/* Builds base_fc changed by fn, parses, expects status and a message. */
#define MALFORMED(name, change, code, needle)                                  \
    QP_TEST(name)                                                              \
    {                                                                          \
        struct tb_model tm;                                                    \
        base_fc(&tm);                                                          \
        size_t len;                                                            \
        struct tb_model *m_ = &tm;                                             \
        (void)m_;                                                              \
        change;                                                                \
        uint8_t *b = tb_write(&tm, &len);                                      \
        struct qp_tfl_model *m = NULL;                                         \
        struct qp_error err;                                                   \
        CHECK_FAILS(parse(b, len, &m, &err), code, &err, needle);              \
        CHECK_CONTAINS(err.msg, "'t.tflite'");                                 \
        CHECK(m == NULL);                                                      \
        free(b);                                                               \
    }

MALFORMED(tflite_malformed_identifier, tm.ident = "TFL2", QP_E_FORMAT,
          "file identifier is \"TFL2\", expected \"TFL3\"")
MALFORMED(tflite_malformed_version, tm.version = 2, QP_E_UNSUPPORTED,
          "schema version 2")
MALFORMED(tflite_malformed_rank, (tm.t[3].ndim = 9), QP_E_UNSUPPORTED,
          "tensor 3: shape has rank 9")
MALFORMED(tflite_malformed_negative_dim, tm.t[3].shape[0] = -2, QP_E_FORMAT,
          "tensor 3: shape dim 0 is -2")
MALFORMED(tflite_malformed_buffer_index, tm.t[1].buffer = 99, QP_E_FORMAT,
          "tensor 1 'w': buffer 99 of 3")
MALFORMED(tflite_malformed_opcode_index, tm.op[0].opcode = 5, QP_E_FORMAT,
          "operator 0: opcode index 5 of 1")
MALFORMED(tflite_malformed_tensor_index, tm.op[0].in[1] = 42, QP_E_FORMAT,
          "operator 0 inputs: entry 1 is 42, outside [-1, 4)")
MALFORMED(tflite_malformed_graph_output, tm.outputs[0] = 4, QP_E_FORMAT,
          "subgraph 0 outputs: entry 0 is 4")
MALFORMED(tflite_malformed_buffer_size, tm.buf_len[1] = 7, QP_E_FORMAT,
          "tensor 1 'w': buffer 1 holds 7 bytes, its shape [2,4] of INT8 needs 8")
MALFORMED(tflite_malformed_string_type, tm.t[0].type = 5, QP_E_UNSUPPORTED,
          "tensor 0 'in': unsupported type STRING")
MALFORMED(tflite_malformed_unknown_type, tm.t[0].type = 99, QP_E_FORMAT,
          "tensor 0 'in': unknown type 99")
MALFORMED(tflite_malformed_zero_points, tm.t[1].nzp = 2, QP_E_FORMAT,
          "tensor 1 'w': 1 scales but 2 zero points")
MALFORMED(tflite_malformed_quant_dim, two_scales(&tm.t[1], 0.5f, 3),
          QP_E_FORMAT, "quantized_dimension 3 is out of range for rank 2")
MALFORMED(tflite_malformed_scale_count,
          (tm.t[1].nq = 3, tm.t[1].qdim = 0), QP_E_FORMAT,
          "3 scales along dimension 0 of size 2")
MALFORMED(tflite_malformed_large_buffer,
          (tm.buf_offset[1] = 1 << 20, tm.buf_len[1] = 8), QP_E_FORMAT,
          "buffer 1: 8 bytes at offset 1048576 run past the end")
MALFORMED(tflite_malformed_options_type, tm.op[0].opt_type = 1, QP_E_FORMAT,
          "operator 0 (FULLY_CONNECTED): builtin options of type 1, expected 8")

/* Damage to the written bytes, for offsets and lengths. */
QP_TEST(tflite_malformed_bytes)
{
    struct tb_model tm;
    base_fc(&tm);
    size_t len;
    struct qp_tfl_model *m = NULL;
    struct qp_error err;
    uint8_t *b = tb_write(&tm, &len);
    /* every truncation is refused */
    for (size_t n = 0; n < len; n++) {
        int st = parse(b, n, &m, &err);
        if (st == QP_OK) {
            qp_test_failf(ctx, __FILE__, __LINE__, "a %zu-byte prefix of %zu "
                          "parsed", n, len);
            qp_tfl_model_free(m);
            break;
        }
    }
    CHECK_FAILS(parse(b, 3, &m, &err), QP_E_FORMAT, &err,
                "3 bytes is too short for a FlatBuffer");
    /* the tensors vector claims 2^31 - 1 entries */
    uint8_t *c = malloc(len);
    REQUIRE(c);
    memcpy(c, b, len);
    fbb_put32(&(struct fbb){c, len, len}, tm.pos_tensors_vec, 0x7fffffff);
    CHECK_FAILS(parse(c, len, &m, &err), QP_E_FORMAT, &err,
                "more than the file holds");
    CHECK_CONTAINS(err.msg, "subgraph 0");
    /* a name without its NUL */
    memcpy(c, b, len);
    c[tm.pos_name[2] + 4 + strlen("b")] = 'x';
    CHECK_FAILS(parse(c, len, &m, &err), QP_E_FORMAT, &err, "no NUL terminator");
    CHECK_CONTAINS(err.msg, "tensor 2");
    /* the root offset past the end; a vtable before the file */
    memcpy(c, b, len);
    fbb_put32(&(struct fbb){c, len, len}, 0, (uint32_t)len + 8);
    CHECK_FAILS(parse(c, len, &m, &err), QP_E_FORMAT, &err, "past the end");
    memcpy(c, b, len);
    size_t root = qp_fb_le32(b);
    fbb_put32(&(struct fbb){c, len, len}, root, 0x40000000);
    CHECK_FAILS(parse(c, len, &m, &err), QP_E_FORMAT, &err, "outside the file");
    free(c);
    free(b);
}

/* A chain of tables nested deeper than QP_FB_MAX_DEPTH is refused. */
QP_TEST(tflite_flatbuf_depth_limit)
{
    struct fbb f = {0};
    fbb_begin(&f, "TEST");
    size_t prev = fbb_table(&f, 1);
    fbb_root(&f, prev);
    for (int i = 0; i < QP_FB_MAX_DEPTH + 5; i++) {
        size_t t = fbb_table(&f, 1);
        fbb_ref(&f, prev, 0, t);
        prev = t;
    }
    struct qp_fb fb = {f.b, f.n};
    struct qp_fb_table t;
    struct qp_error err;
    REQUIRE_OK(qp_fb_root(&fb, "TEST", &t, &err), &err);
    enum qp_status st = QP_OK;
    int depth = 0;
    bool present = true;
    while (!st && present) {
        st = qp_fb_table(&fb, &t, 0, &present, &t, &err);
        depth += !st && present;
    }
    CHECK_INT(st, QP_E_FORMAT);
    CHECK_CONTAINS(err.msg, "nested deeper than 64 levels");
    CHECK_INT(depth, QP_FB_MAX_DEPTH - 1);
    free(f.b);
}

/* TFLite Micro's 1-D bias with quantized_dimension 3: read as 0 with a
 * note; the oracle edit sets the field to 0. Large-model buffers are read
 * from after the FlatBuffer. */
QP_TEST(tflite_reader_tolerates_bias_dim_and_reads_large_buffers)
{
    struct tb_model tm;
    base_fc(&tm);
    two_scales(&tm.t[2], 0.25f, 3);
    size_t len;
    uint8_t *b = tb_write(&tm, &len);
    /* the weights stored after the FlatBuffer, at an offset of their own */
    size_t at = (len + 15) & ~(size_t)15;
    tm.buf_offset[1] = at;
    free(b);
    b = tb_write(&tm, &len);
    REQUIRE(len <= at);
    uint8_t *big = calloc(1, at + 8);
    REQUIRE(big);
    memcpy(big, b, len);
    memcpy(big + at, fc_w, 8);
    struct qp_tfl_model *m;
    struct qp_error err;
    REQUIRE_OK(parse(big, at + 8, &m, &err), &err);
    CHECK_INT(m->n_notes, 1);
    CHECK_CONTAINS(m->notes[0], "tensor 2 'b': quantized_dimension 3 on a 1-D "
                   "tensor, read as 0");
    CHECK_INT(m->tensors[2].q.dim, 0);
    CHECK_INT(m->tensors[2].q.file_dim, 3);
    CHECK(m->tensors[1].data == big + at);
    size_t changed;
    REQUIRE_OK(qp_tfl_fix_quant_dims(m, big, at + 8, &changed, &err), &err);
    CHECK_INT(changed, 1);
    qp_tfl_model_free(m);
    REQUIRE_OK(parse(big, at + 8, &m, &err), &err);
    CHECK_INT(m->n_notes, 0);
    CHECK_INT(m->tensors[2].q.file_dim, 0);
    /* every tensor made an output: the new vector follows the data */
    int outs[3] = {3, 1, 0};
    uint8_t *e;
    size_t elen;
    REQUIRE_OK(qp_tfl_with_outputs(m, outs, 3, &e, &elen, &err), &err);
    qp_tfl_model_free(m);
    REQUIRE_OK(parse(e, elen, &m, &err), &err);
    CHECK_INT(m->n_outputs, 3);
    CHECK_INT(m->outputs[1], 1);
    CHECK(m->tensors[1].data && !memcmp(m->tensors[1].data, fc_w, 8));
    qp_tfl_model_free(m);
    free(e);
    free(big);
    free(b);
}

QP_TEST(tflite_dump_lists_weights_with_parameters)
{
    struct tb_model tm;
    base_fc(&tm);
    two_scales(&tm.t[1], 0.5f, 0);
    size_t len;
    uint8_t *b = tb_write(&tm, &len);
    char *path = qp_test_path(ctx, "m.tflite");
    REQUIRE(qp_test_write_file(path, b, len));
    struct qp_dump *d;
    struct qp_error err;
    REQUIRE_OK(qp_dump_open(path, QP_DUMP_AUTO, &d, &err), &err);
    CHECK_INT(qp_dump_count(d), 2);
    const struct qp_tensor *w = qp_dump_entry(d, 0);
    CHECK_STR(w->name, "w");
    REQUIRE(w->qp);
    CHECK_INT(w->qp->axis, 0);
    CHECK_INT(w->qp->count, 2);
    CHECK_NEAR(w->qp->scale[1], 0.5, 0);
    struct qp_tensor *t;
    REQUIRE_OK(qp_dump_load(d, 1, &t, &err), &err);
    CHECK_STR(t->name, "b");
    CHECK_INT(((int32_t *)t->data)[1], -24);
    qp_tensor_free(t);
    qp_dump_close(d);
    free(path);
    free(b);
}

/* Runs the FC: acc = bias + sum (x + 1) * w, scaled by 0.5 * 0.25 / 1. */
static void run_fc(struct qp_test_ctx *ctx, const uint8_t *b, size_t len,
                   enum qp_tfl_flavor f, const int8_t *x, int8_t *y)
{
    struct qp_error err;
    struct qp_tflite_opts o = {f, false};
    struct qp_graph *g = graph_of(ctx, b, len, &o);
    REQUIRE(g);
    struct qp_tensor *in, *out = NULL;
    int64_t shape[2] = {1, 4};
    REQUIRE_OK(qp_tensor_new("in", QP_DTYPE_I8, 2, shape, &in, &err), &err);
    memcpy(in->data, x, 4);
    CHECK_OK(qp_exec_run(g, (const struct qp_tensor *const *)&in, 1, NULL, &out,
                         NULL, &err), &err);
    if (out) {
        memcpy(y, out->data, 2);
        REQUIRE(out->qp);
        CHECK_INT(out->qp->zero_point[0], 3);
    }
    qp_tensor_free(out);
    qp_tensor_free(in);
    qp_graph_free(g);
}

QP_TEST(tflite_fc_negative_tie_per_flavor)
{
    struct tb_model tm;
    base_fc(&tm);
    size_t len;
    uint8_t *b = tb_write(&tm, &len);
    const int8_t x[4] = {1, 5, -3, 8}; /* x + 1 = 2, 6, -2, 9 */
    int8_t y[2];
    /* acc0 = 10 + 44 = 54 -> 6.75 -> 7; acc1 = -24 - 44 = -68 -> -8.5:
     * TFLite Micro rounds half away from zero (-9), TFLite's x86 kernels
     * (ruy) half up (-8) */
    run_fc(ctx, b, len, QP_TFL_MICRO, x, y);
    CHECK_INT(y[0], 10);
    CHECK_INT(y[1], -6);
    run_fc(ctx, b, len, QP_TFL_X86, x, y);
    CHECK_INT(y[0], 10);
    CHECK_INT(y[1], -5);
    /* with a fused RELU the negative tie is clamped away in both */
    base_fc(&tm);
    tm.op[0].opt_i32[0] = 1;
    free(b);
    b = tb_write(&tm, &len);
    run_fc(ctx, b, len, QP_TFL_MICRO, x, y);
    CHECK_INT(y[1], 3);
    run_fc(ctx, b, len, QP_TFL_X86, x, y);
    CHECK_INT(y[1], 3);
    free(b);
}

QP_TEST(tflite_unsupported_operator_is_named)
{
    struct tb_model tm;
    base_fc(&tm);
    tm.opcode[0] = 16; /* LSTM */
    tm.op[0].opt_type = 0;
    size_t len;
    uint8_t *b = tb_write(&tm, &len);
    struct qp_tfl_model *m;
    struct qp_graph *g;
    struct qp_error err;
    REQUIRE_OK(parse(b, len, &m, &err), &err);
    CHECK_FAILS(qp_model_from_tflite(m, NULL, &g, &err), QP_E_UNSUPPORTED, &err,
                "'t.tflite': operator 0 (LSTM): operator not supported");
    qp_tfl_model_free(m);
    free(b);
}

QP_TEST(tflite_float_feed_is_quantized)
{
    struct tb_model tm;
    base_fc(&tm);
    size_t len;
    uint8_t *b = tb_write(&tm, &len);
    struct qp_error err;
    struct qp_graph *g = graph_of(ctx, b, len, NULL);
    REQUIRE(g);
    const struct qp_value *v = &g->values[g->inputs[0]];
    REQUIRE(v->feed_q);
    struct qp_tensor *x;
    int64_t shape[2] = {1, 4};
    REQUIRE_OK(qp_tensor_new("in", QP_DTYPE_F32, 2, shape, &x, &err), &err);
    /* q = round(x / 0.5) - 1, half away from zero, clamped */
    const float f[4] = {1.25f, -0.75f, 100.0f, 0.0f};
    memcpy(x->data, f, sizeof f);
    REQUIRE_OK(qp_model_quantize_feed(v, &x, &err), &err);
    CHECK_INT(x->dtype, QP_DTYPE_I8);
    const int8_t *q = x->data;
    CHECK_INT(q[0], 2);   /* 2.5 -> 3, - 1 */
    CHECK_INT(q[1], -3);  /* -1.5 -> -2, - 1 */
    CHECK_INT(q[2], 127);
    CHECK_INT(q[3], -1);
    qp_tensor_free(x);
    qp_graph_free(g);
    free(b);
}

/* Writes the fuzz seeds (tests/fuzz/seeds/tflite/) when QP_TFL_SEEDS names
 * a folder; otherwise does nothing. */
QP_TEST(tflite_write_fuzz_seeds)
{
    const char *dir = getenv("QP_TFL_SEEDS");
    if (!dir)
        return;
    struct tb_model tm;
    size_t len;
    char path[512];
    for (int k = 0; k < 3; k++) {
        base_fc(&tm);
        if (k == 1) { /* per-channel weights, a bias with dimension 3 */
            two_scales(&tm.t[1], 0.5f, 0);
            two_scales(&tm.t[2], 0.25f, 3);
        }
        if (k == 2) /* a RELU after the FC */
            tm.op[0].opt_i32[0] = 1;
        uint8_t *b = tb_write(&tm, &len);
        snprintf(path, sizeof path, "%s/fc%d-tflite.seed", dir, k);
        CHECK(qp_test_write_file(path, b, len));
        snprintf(path, sizeof path, "%s/fc%d-cut-tflite.seed", dir, k);
        CHECK(qp_test_write_file(path, b, len * 2 / 3));
        free(b);
    }
}

/* The float reference of the quantized FC: dequantized weights and bias,
 * float activations: y = ((x - zp) * 0.5) . (w * 0.25) + b * 0.125. */
QP_TEST(tflite_dequantized_reference_runs_in_float)
{
    struct tb_model tm;
    base_fc(&tm);
    size_t len;
    uint8_t *b = tb_write(&tm, &len);
    struct qp_error err;
    struct qp_tflite_opts o = {QP_TFL_MICRO, true};
    struct qp_graph *g = graph_of(ctx, b, len, &o);
    REQUIRE(g);
    const struct qp_value *v = &g->values[g->inputs[0]];
    CHECK_INT(v->dtype, QP_DTYPE_F32);
    /* the int8 feed is dequantized with the input's parameters */
    struct qp_tensor *x, *y = NULL;
    int64_t shape[2] = {1, 4};
    REQUIRE_OK(qp_tensor_new("in", QP_DTYPE_I8, 2, shape, &x, &err), &err);
    const int8_t q[4] = {1, 5, -3, 8};
    memcpy(x->data, q, 4);
    REQUIRE_OK(qp_model_quantize_feed(v, &x, &err), &err);
    CHECK_INT(x->dtype, QP_DTYPE_F32);
    CHECK_NEAR(((float *)x->data)[3], 4.5, 0);
    CHECK_OK(qp_exec_run(g, (const struct qp_tensor *const *)&x, 1, NULL, &y,
                         NULL, &err), &err);
    if (y) {
        /* 54 * 0.125 = 6.75 and -68 * 0.125 = -8.5, unrounded */
        CHECK_INT(y->dtype, QP_DTYPE_F32);
        CHECK_NEAR(((float *)y->data)[0], 6.75, 1e-6);
        CHECK_NEAR(((float *)y->data)[1], -8.5, 1e-6);
        CHECK(y->qp == NULL);
    }
    /* what a planner reads: the weight is input 1, [out, in] */
    int w, bi, axis;
    const char *layout;
    REQUIRE(qp_tfl_node_weight(&g->nodes[0], &w, &bi, &layout, &axis));
    CHECK_INT(w, 1);
    CHECK_INT(bi, 2);
    CHECK_STR(layout, "OI");
    CHECK_INT(axis, 0);
    qp_tensor_free(y);
    qp_tensor_free(x);
    qp_graph_free(g);
    free(b);
}

/* ruy's two half-up roundings (qp_tfl_ruy_scale, written as ruy's x86
 * kernels do) equal the single floor division the conv epilogue uses,
 * (x'M + 2^30 + 2^(30+r)) >> (31 + r), on random and extreme values. */
QP_TEST(tflite_ruy_rounding_is_one_division)
{
    uint32_t seed = 99;
    long bad = 0;
    for (int i = 0; i < 1000000; i++) {
        seed = seed * 1664525u + 1013904223u;
        int32_t x = (int32_t)seed;
        seed = seed * 1664525u + 1013904223u;
        int32_t m = (int32_t)(seed >> 1) | (1 << 30); /* [2^30, 2^31) */
        seed = seed * 1664525u + 1013904223u;
        int32_t sh = (int32_t)(seed % 40) - 31;       /* [-31, 8] */
        if (i < 4) { /* the extremes */
            x = i & 1 ? INT32_MIN : INT32_MAX;
            m = i & 2 ? INT32_MAX : 1 << 30;
        }
        int left = sh > 0 ? sh : 0, right = sh < 0 ? -sh : 0;
        int32_t xs = (int32_t)((uint32_t)x << left);
        int64_t add = ((int64_t)1 << 30) + (right ? (int64_t)1 << (30 + right) : 0);
        int32_t one = (int32_t)(((int64_t)xs * m + add) >> (31 + right));
        bad += one != qp_tfl_ruy_scale(x, m, sh);
    }
    CHECK_INT(bad, 0);
    /* and they differ from gemmlowp's rounding exactly on negative ties:
     * -34 / 4 = -8.5 -> -8 (ruy), -9 (TFLite Micro) */
    CHECK_INT(qp_tfl_ruy_scale(-68, 1 << 30, -2), -8);
    CHECK_INT(qp_rq_scale_fixed(QP_RQ_TFLITE_DOUBLE, -68, 1 << 30, -2), -9);
    CHECK_INT(qp_tfl_ruy_scale(68, 1 << 30, -2), 9);
    CHECK_INT(qp_rq_scale_fixed(QP_RQ_TFLITE_DOUBLE, 68, 1 << 30, -2), 9);
}
