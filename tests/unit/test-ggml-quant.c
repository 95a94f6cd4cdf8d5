/* tests/unit/test-ggml-quant.c: ggml's block types against the vectors
 * captured from ggml's own reference code (tests/golden/ggml/README.md):
 * every vector's blocks byte for byte, its dequantized floats bit for bit,
 * and the type table against ggml's. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/fileio.h"
#include "core/half.h"
#include "quant/ggml-kquant.h"
#include "quant/ggml-quant.h"
#include "tests/test.h"

#define GOLDEN "tests/golden/ggml/"
#define MAX_VECS 64

struct vec {
    uint32_t kind, n;
    const float *x;
};

struct inputs {
    char *buf;
    size_t len;
    struct vec v[MAX_VECS];
    uint32_t count;
};

static uint32_t rd32(const char *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

/* Reads inputs.bin: "QPGGIN01", u32 count, then per vector u32 kind,
 * u32 n, n f32. */
static bool load_inputs(struct qp_test_ctx *ctx, struct inputs *in)
{
    struct qp_error err;
    if (qp_read_file(GOLDEN "inputs.bin", 1 << 22, &in->buf, &in->len, &err)) {
        qp_test_failf(ctx, __FILE__, __LINE__, "%s", err.msg);
        return false;
    }
    if (in->len < 12 || memcmp(in->buf, "QPGGIN01", 8))
        return false;
    in->count = rd32(in->buf + 8);
    size_t off = 12;
    for (uint32_t i = 0; i < in->count && i < MAX_VECS; i++) {
        if (off + 8 > in->len)
            return false;
        in->v[i].kind = rd32(in->buf + off);
        in->v[i].n = rd32(in->buf + off + 4);
        in->v[i].x = (const float *)(in->buf + off + 8); /* 4-aligned */
        off += 8 + 4 * (size_t)in->v[i].n;
        if (off > in->len)
            return false;
    }
    return off == in->len && in->count <= MAX_VECS;
}

/* Checks every vector of tests/golden/ggml/<file>: "QPGGQ001", u32 ggml id,
 * u32 count, then per vector u32 n, the block bytes, n dequantized f32. */
static void check_type(struct qp_test_ctx *ctx, enum qp_ggml_type t,
                       const char *file)
{
    struct inputs in = {0};
    REQUIRE(load_inputs(ctx, &in));
    char path[128], *buf = NULL;
    size_t len = 0;
    struct qp_error err;
    snprintf(path, sizeof path, GOLDEN "%s", file);
    REQUIRE_OK(qp_read_file(path, 1 << 22, &buf, &len, &err), &err);
    const struct qp_ggml_type_info *ti = qp_ggml_type_info(t);
    REQUIRE(len >= 16 && !memcmp(buf, "QPGGQ001", 8));
    CHECK_INT(rd32(buf + 8), ti->id);
    REQUIRE(rd32(buf + 12) == in.count);
    size_t off = 16;
    int bad_bytes = 0, bad_floats = 0, total_blocks = 0;
    for (uint32_t v = 0; v < in.count; v++) {
        REQUIRE(off + 4 <= len);
        uint32_t n = rd32(buf + off);
        REQUIRE(n == in.v[v].n);
        size_t nb;
        REQUIRE(qp_ggml_row_bytes(t, n, &nb));
        REQUIRE(off + 4 + nb + 4 * (size_t)n <= len);
        const unsigned char *want = (const unsigned char *)buf + off + 4;
        const char *want_y = buf + off + 4 + nb;
        unsigned char *got = malloc(nb);
        float *y = malloc(4 * (size_t)n);
        REQUIRE(got && y);
        memset(got, 0xa5, nb);
        REQUIRE(qp_ggml_quantize_row(t, in.v[v].x, got, n));
        for (size_t b = 0; b < nb / ti->block_bytes; b++) {
            total_blocks++;
            if (memcmp(got + b * ti->block_bytes, want + b * ti->block_bytes,
                       ti->block_bytes) && bad_bytes++ < 3)
                qp_test_failf(ctx, __FILE__, __LINE__, "%s vector %u (kind "
                              "%u) block %zu differs from ggml's", ti->name, v,
                              in.v[v].kind, b);
        }
        /* decode ggml's blocks (not ours), so a decoder bug cannot hide
         * behind a quantizer bug */
        qp_ggml_dequantize_row(t, want, y, n);
        for (uint32_t k = 0; k < n; k++) {
            uint32_t a, e;
            memcpy(&a, &y[k], 4);
            memcpy(&e, want_y + 4 * (size_t)k, 4);
            if (a != e && bad_floats++ < 3)
                qp_test_failf(ctx, __FILE__, __LINE__, "%s vector %u value %u: "
                              "dequantized %08x, ggml %08x", ti->name, v, k, a, e);
        }
        free(got);
        free(y);
        off += 4 + nb + 4 * (size_t)n;
    }
    CHECK(off == len);
    CHECK_INT(bad_bytes, 0);
    CHECK_INT(bad_floats, 0);
    CHECK(total_blocks >= 8704 / (int)ti->block);
    free(buf);
    free(in.buf);
}

QP_TEST(ggml_q8_0_matches_ggml) { check_type(ctx, QP_GGML_Q8_0, "q8_0.bin"); }
QP_TEST(ggml_q4_0_matches_ggml) { check_type(ctx, QP_GGML_Q4_0, "q4_0.bin"); }
QP_TEST(ggml_q4_1_matches_ggml) { check_type(ctx, QP_GGML_Q4_1, "q4_1.bin"); }
QP_TEST(ggml_q5_0_matches_ggml) { check_type(ctx, QP_GGML_Q5_0, "q5_0.bin"); }
QP_TEST(ggml_q4_k_matches_ggml) { check_type(ctx, QP_GGML_Q4_K, "q4_k.bin"); }
QP_TEST(ggml_q6_k_matches_ggml) { check_type(ctx, QP_GGML_Q6_K, "q6_k.bin"); }

/* The table agrees with ggml's ggml_type_name / ggml_blck_size /
 * ggml_type_size (types.tsv, written by the same oracle), and every ggml
 * id's name is known. */
QP_TEST(ggml_type_table_matches_ggml)
{
    char *buf = NULL;
    size_t len = 0;
    struct qp_error err;
    REQUIRE_OK(qp_read_file(GOLDEN "types.tsv", 1 << 16, &buf, &len, &err), &err);
    int rows = 0, ours = 0;
    char *save = NULL;
    for (char *line = strtok_r(buf, "\n", &save); line;
         line = strtok_r(NULL, "\n", &save)) {
        unsigned id;
        char name[32];
        long long blck;
        size_t size;
        if (sscanf(line, "%u\t%31s\t%lld\t%zu", &id, name, &blck, &size) != 4)
            continue;
        rows++;
        CHECK_STR(qp_ggml_id_name(id), name);
        enum qp_ggml_type t;
        if (!qp_ggml_type_from_id(id, &t))
            continue;
        ours++;
        const struct qp_ggml_type_info *ti = qp_ggml_type_info(t);
        CHECK_STR(ti->name, name);
        CHECK_INT(ti->block, blck);
        CHECK_INT(ti->block_bytes, size);
    }
    CHECK_INT(rows, 35);
    CHECK_INT(ours, QP_GGML_TYPE_COUNT);
    CHECK(qp_ggml_id_name(4) == NULL);
    CHECK(qp_ggml_id_name(43) == NULL);
    free(buf);
}

/* Hand-computed blocks, so the format is pinned without the oracle too. */
QP_TEST(ggml_q4_0_block_by_hand)
{
    float x[32];
    /* max magnitude -8 first: d = 1, id = 1; q = min(15, trunc(x + 8.5)) */
    for (int j = 0; j < 32; j++)
        x[j] = (float)(j % 17) - 8.0f;
    x[0] = -8.0f;
    x[1] = 8.0f;   /* 16.5 -> 16 -> clamped 15 */
    x[2] = 0.5f;   /* 9.0 exactly: the tie rounds up, q = 9 */
    x[3] = -0.5f;  /* 8.0: q = 8 */
    x[16] = 7.49f; /* 15.99 -> 15 */
    unsigned char b[18];
    qp_ggml_quantize_row_q4_0_ref(x, b, 32);
    CHECK_INT(b[0] | (b[1] << 8), 0x3c00); /* fp16 1.0 */
    CHECK_INT(b[2] & 0xF, 0);              /* x[0] = -8 */
    CHECK_INT(b[3] & 0xF, 15);
    CHECK_INT(b[4] & 0xF, 9);
    CHECK_INT(b[5] & 0xF, 8);
    CHECK_INT(b[2] >> 4, 15);              /* x[16] */
    float y[32];
    qp_ggml_dequantize_row_q4_0(b, y, 32);
    CHECK(y[0] == -8.0f && y[1] == 7.0f && y[2] == 1.0f && y[3] == 0.0f);
}

QP_TEST(ggml_q5_0_high_bits_by_hand)
{
    float x[32] = {0};
    x[0] = -16.0f; /* d = 1: q = trunc(x + 16.5) */
    x[5] = 15.0f;  /* 31.5 -> 31: high bit set (bit 5 of qh) */
    x[20] = 3.0f;  /* 19: high bit set, bit 20 */
    x[7] = -1.0f;  /* 15: high bit clear */
    unsigned char b[22];
    qp_ggml_quantize_row_q5_0_ref(x, b, 32);
    uint32_t qh;
    memcpy(&qh, b + 2, 4);
    /* zeros quantize to 16 (high bit set) except x[0] = 0 and x[7] = 15 */
    CHECK_INT(qh, 0xffffffffu & ~1u & ~(1u << 7));
    CHECK_INT(b[6 + 5] & 0xF, 15);
    CHECK_INT(b[6 + 4] >> 4, 3); /* x[20]: 19 & 15 */
    float y[32];
    qp_ggml_dequantize_row_q5_0(b, y, 32);
    CHECK(y[0] == -16.0f && y[5] == 15.0f && y[20] == 3.0f && y[7] == -1.0f &&
          y[9] == 0.0f);
}

/* A q6_K super-block of zeros is all-zero bytes, and q4_K decodes the
 * 6-bit scale layout for j >= 4 (top bits in bytes 0..7). */
QP_TEST(ggml_k_blocks_by_hand)
{
    float x[256] = {0};
    unsigned char b6[210], b4[144];
    memset(b6, 0x5a, sizeof b6);
    qp_ggml_quantize_row_q6_K_ref(x, b6, 256);
    int nonzero = 0;
    for (size_t i = 0; i < sizeof b6; i++)
        nonzero += b6[i] != 0;
    CHECK_INT(nonzero, 0);
    memset(b4, 0, sizeof b4);
    b4[0] = 0x00, b4[1] = 0x3c; /* d = 1 */
    b4[2] = 0x00, b4[3] = 0x38; /* dmin = 0.5 */
    /* sub-block 5: sc = 0x23 (low 3 in scales[9], top 2 in scales[1]),
     * m = 0x12 (low 2 in scales[9] high nibble, top 1 in scales[5]) */
    b4[4 + 9] = 0x23;
    b4[4 + 1] = 2 << 6;
    b4[4 + 5] = 1 << 6;
    b4[16 + 64 + 10] = 0x70; /* sub-block 5, value 10: q = 7 */
    float y[256];
    qp_ggml_dequantize_row_q4_K(b4, y, 256);
    CHECK(y[5 * 32 + 10] == 35.0f * 7 - 0.5f * 18);
    CHECK(y[5 * 32 + 11] == -0.5f * 18);
}

QP_TEST(ggml_fallback_and_row_check)
{
    CHECK_INT(qp_ggml_fallback(QP_GGML_Q4_K, 96), QP_GGML_Q5_0);
    CHECK_INT(qp_ggml_fallback(QP_GGML_Q6_K, 96), QP_GGML_Q8_0);
    CHECK_INT(qp_ggml_fallback(QP_GGML_Q4_K, 100), QP_GGML_F16);
    CHECK_INT(qp_ggml_fallback(QP_GGML_Q4_0, 48), QP_GGML_F16);
    CHECK_INT(qp_ggml_fallback(QP_GGML_Q4_K, 512), QP_GGML_Q4_K);
    struct qp_error err;
    CHECK_OK(qp_ggml_check_row(QP_GGML_Q4_K, 512, 1, "tensor 'w'", &err), &err);
    CHECK_FAILS(qp_ggml_check_row(QP_GGML_Q4_K, 96, 1, "tensor 'w'", &err),
                QP_E_SHAPE, &err, "tensor 'w': rows of 96 values (axis 1) are "
                "not a multiple of q4_K's block of 256; llama.cpp falls back "
                "to q5_0");
    CHECK_FAILS(qp_ggml_check_row(QP_GGML_Q8_0, 20, 0, "tensor 'b'", &err),
                QP_E_SHAPE, &err, "would store it as f16");
    size_t bytes = 0;
    int64_t shape[2] = {3, 512};
    CHECK(qp_ggml_weight_bytes(QP_GGML_Q4_K, 2, shape, QP_WLAYOUT_TORCH, &bytes));
    CHECK_INT(bytes, 3 * 2 * 144);
    CHECK(qp_ggml_weight_bytes(QP_GGML_Q8_0, 2, shape, QP_WLAYOUT_TORCH, &bytes));
    CHECK_INT(bytes, 3 * 16 * 34);
    /* keras [in, out]: rows of 3 along axis 0 do not divide */
    CHECK(!qp_ggml_weight_bytes(QP_GGML_Q8_0, 2, shape, QP_WLAYOUT_KERAS, &bytes));
}
