#include "core/ggml-block.h"

#include <string.h>

#include "core/half.h"
#include "core/size.h"

static const struct qp_ggml_type_info types[] = {
    [QP_GGML_F32] = {"f32", NULL, 0, 1, 4, QP_DTYPE_F32, 32},
    [QP_GGML_F16] = {"f16", NULL, 1, 1, 2, QP_DTYPE_F16, 16},
    [QP_GGML_BF16] = {"bf16", NULL, 30, 1, 2, QP_DTYPE_BF16, 16},
    [QP_GGML_Q8_0] = {"q8_0", "q8_0", 8, QP_QK8_0,
                      sizeof(struct qp_block_q8_0), QP_DTYPE_COUNT, 8},
    [QP_GGML_Q4_0] = {"q4_0", "q4_0", 2, QP_QK4_0,
                      sizeof(struct qp_block_q4_0), QP_DTYPE_COUNT, 4},
    [QP_GGML_Q4_1] = {"q4_1", "q4_1", 3, QP_QK4_1,
                      sizeof(struct qp_block_q4_1), QP_DTYPE_COUNT, 4},
    [QP_GGML_Q5_0] = {"q5_0", "q5_0", 6, QP_QK5_0,
                      sizeof(struct qp_block_q5_0), QP_DTYPE_COUNT, 5},
    [QP_GGML_Q4_K] = {"q4_K", "q4_k", 12, QP_QK_K,
                      sizeof(struct qp_block_q4_K), QP_DTYPE_COUNT, 4},
    [QP_GGML_Q6_K] = {"q6_K", "q6_k", 14, QP_QK_K,
                      sizeof(struct qp_block_q6_K), QP_DTYPE_COUNT, 6},
    [QP_GGML_I8] = {"i8", NULL, 24, 1, 1, QP_DTYPE_I8, 8},
    [QP_GGML_I16] = {"i16", NULL, 25, 1, 2, QP_DTYPE_I16, 16},
    [QP_GGML_I32] = {"i32", NULL, 26, 1, 4, QP_DTYPE_I32, 32},
    [QP_GGML_I64] = {"i64", NULL, 27, 1, 8, QP_DTYPE_I64, 64},
    [QP_GGML_F64] = {"f64", NULL, 28, 1, 8, QP_DTYPE_F64, 64},
};
_Static_assert(sizeof types / sizeof types[0] == QP_GGML_TYPE_COUNT,
               "types must cover every ggml type");

/* ggml.h's enum ggml_type at the commit above (gaps are removed types). */
static const char *const id_names[] = {
    "f32", "f16", "q4_0", "q4_1", NULL, NULL, "q5_0", "q5_1", "q8_0", "q8_1",
    "q2_K", "q3_K", "q4_K", "q5_K", "q6_K", "q8_K", "iq2_xxs", "iq2_xs",
    "iq3_xxs", "iq1_s", "iq4_nl", "iq3_s", "iq2_s", "iq4_xs", "i8", "i16",
    "i32", "i64", "f64", "iq1_m", "bf16", NULL, NULL, NULL, "tq1_0", "tq2_0",
    NULL, NULL, NULL, "mxfp4", "nvfp4", "q1_0", "q2_0",
};

const struct qp_ggml_type_info *qp_ggml_type_info(enum qp_ggml_type t)
{
    return &types[t];
}

bool qp_ggml_type_from_id(uint32_t id, enum qp_ggml_type *out)
{
    for (int t = 0; t < QP_GGML_TYPE_COUNT; t++)
        if (types[t].id == id) {
            *out = (enum qp_ggml_type)t;
            return true;
        }
    return false;
}

const char *qp_ggml_id_name(uint32_t id)
{
    return id < sizeof id_names / sizeof id_names[0] ? id_names[id] : NULL;
}

bool qp_ggml_row_bytes(enum qp_ggml_type t, int64_t n, size_t *out)
{
    const struct qp_ggml_type_info *ti = &types[t];
    if (n < 0 || n % ti->block)
        return false;
    return !qp_size_mul((size_t)(n / ti->block), ti->block_bytes, out);
}

/* ---- decoding: each loop is ggml's, expression for expression ------------ */

void qp_ggml_dequantize_row_q8_0(const void *blocks, float *y, int64_t n)
{
    const unsigned char *p = blocks;
    for (int64_t i = 0; i < n / QP_QK8_0; i++) {
        struct qp_block_q8_0 b;
        memcpy(&b, p + i * sizeof b, sizeof b);
        const float d = qp_f16_to_f32(b.d);
        for (int j = 0; j < QP_QK8_0; j++)
            y[i * QP_QK8_0 + j] = b.qs[j] * d;
    }
}

/* The 32 integer levels of a q4_0 / q4_1 / q5_0 block: nibble j (low of
 * byte j, then high of byte j - 16), bit j of qh as bit 4, minus offset. */
static void levels32(const uint8_t *qs, uint32_t qh, int offset, int *q)
{
    for (int j = 0; j < 16; j++) {
        const uint8_t xh0 = ((qh >> j) << 4) & 0x10;
        const uint8_t xh1 = (qh >> (j + 12)) & 0x10;
        q[j] = ((qs[j] & 0x0F) | xh0) - offset;
        q[j + 16] = ((qs[j] >> 4) | xh1) - offset;
    }
}

void qp_ggml_dequantize_row_q4_0(const void *blocks, float *y, int64_t n)
{
    const unsigned char *p = blocks;
    for (int64_t i = 0; i < n / QP_QK4_0; i++, y += QP_QK4_0) {
        struct qp_block_q4_0 b;
        memcpy(&b, p + i * sizeof b, sizeof b);
        const float d = qp_f16_to_f32(b.d);
        int q[32];
        levels32(b.qs, 0, 8, q);
        for (int j = 0; j < QP_QK4_0; j++)
            y[j] = q[j] * d;
    }
}

void qp_ggml_dequantize_row_q4_1(const void *blocks, float *y, int64_t n)
{
    const unsigned char *p = blocks;
    for (int64_t i = 0; i < n / QP_QK4_1; i++, y += QP_QK4_1) {
        struct qp_block_q4_1 b;
        memcpy(&b, p + i * sizeof b, sizeof b);
        const float d = qp_f16_to_f32(b.d);
        const float m = qp_f16_to_f32(b.m);
        int q[32];
        levels32(b.qs, 0, 0, q);
        for (int j = 0; j < QP_QK4_1; j++)
            y[j] = q[j] * d + m;
    }
}

void qp_ggml_dequantize_row_q5_0(const void *blocks, float *y, int64_t n)
{
    const unsigned char *p = blocks;
    for (int64_t i = 0; i < n / QP_QK5_0; i++, y += QP_QK5_0) {
        struct qp_block_q5_0 b;
        memcpy(&b, p + i * sizeof b, sizeof b);
        const float d = qp_f16_to_f32(b.d);
        uint32_t qh;
        memcpy(&qh, b.qh, sizeof qh);
        int q[32];
        levels32(b.qs, qh, 16, q);
        for (int j = 0; j < QP_QK5_0; j++)
            y[j] = q[j] * d;
    }
}

/* Sub-block j's 6-bit scale and min of a q4_K block (ggml's
 * get_scale_min_k4). */
static void scale_min_k4(int j, const uint8_t *q, uint8_t *d, uint8_t *m)
{
    if (j < 4) {
        *d = q[j] & 63;
        *m = q[j + 4] & 63;
    } else {
        *d = (uint8_t)((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
        *m = (uint8_t)((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
    }
}

void qp_ggml_dequantize_row_q4_K(const void *blocks, float *y, int64_t n)
{
    const unsigned char *p = blocks;
    for (int64_t i = 0; i < n / QP_QK_K; i++) {
        struct qp_block_q4_K b;
        memcpy(&b, p + i * sizeof b, sizeof b);
        const uint8_t *q = b.qs;
        const float d = qp_f16_to_f32(b.d);
        const float min = qp_f16_to_f32(b.dmin);
        int is = 0;
        uint8_t sc, m;
        for (int j = 0; j < QP_QK_K; j += 64) {
            scale_min_k4(is + 0, b.scales, &sc, &m);
            const float d1 = d * sc, m1 = min * m;
            scale_min_k4(is + 1, b.scales, &sc, &m);
            const float d2 = d * sc, m2 = min * m;
            for (int l = 0; l < 32; l++)
                *y++ = d1 * (q[l] & 0xF) - m1;
            for (int l = 0; l < 32; l++)
                *y++ = d2 * (q[l] >> 4) - m2;
            q += 32;
            is += 2;
        }
    }
}

void qp_ggml_dequantize_row_q6_K(const void *blocks, float *y, int64_t n)
{
    const unsigned char *p = blocks;
    for (int64_t i = 0; i < n / QP_QK_K; i++) {
        struct qp_block_q6_K b;
        memcpy(&b, p + i * sizeof b, sizeof b);
        const float d = qp_f16_to_f32(b.d);
        const uint8_t *ql = b.ql, *qh = b.qh;
        const int8_t *sc = b.scales;
        for (int h = 0; h < QP_QK_K; h += 128) {
            for (int l = 0; l < 32; l++) {
                int is = l / 16;
                const int8_t q1 = (int8_t)((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
                const int8_t q2 = (int8_t)((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
                const int8_t q3 = (int8_t)((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
                const int8_t q4 = (int8_t)((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
                y[l + 0] = d * sc[is + 0] * q1;
                y[l + 32] = d * sc[is + 2] * q2;
                y[l + 64] = d * sc[is + 4] * q3;
                y[l + 96] = d * sc[is + 6] * q4;
            }
            y += 128;
            ql += 64;
            qh += 32;
            sc += 8;
        }
    }
}

/* Plain element types, element by element (any alignment). */
static void plain_row(enum qp_ggml_type t, const unsigned char *p, float *y,
                      int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        const unsigned char *e = p + (size_t)i * types[t].block_bytes;
        union {
            float f;
            double d;
            uint16_t h;
            int8_t i8;
            int16_t i16;
            int32_t i32;
            int64_t i64;
        } u;
        memcpy(&u, e, types[t].block_bytes);
        switch (t) {
        case QP_GGML_F32: y[i] = u.f; break;
        case QP_GGML_F16: y[i] = qp_f16_to_f32(u.h); break;
        case QP_GGML_BF16: y[i] = qp_bf16_to_f32(u.h); break;
        case QP_GGML_I8: y[i] = (float)u.i8; break;
        case QP_GGML_I16: y[i] = (float)u.i16; break;
        case QP_GGML_I32: y[i] = (float)u.i32; break;
        case QP_GGML_I64: y[i] = (float)u.i64; break;
        case QP_GGML_F64: y[i] = (float)u.d; break;
        default: y[i] = 0; break;
        }
    }
}

void qp_ggml_dequantize_row(enum qp_ggml_type t, const void *data, float *y,
                            int64_t n)
{
    switch (t) {
    case QP_GGML_Q8_0: qp_ggml_dequantize_row_q8_0(data, y, n); break;
    case QP_GGML_Q4_0: qp_ggml_dequantize_row_q4_0(data, y, n); break;
    case QP_GGML_Q4_1: qp_ggml_dequantize_row_q4_1(data, y, n); break;
    case QP_GGML_Q5_0: qp_ggml_dequantize_row_q5_0(data, y, n); break;
    case QP_GGML_Q4_K: qp_ggml_dequantize_row_q4_K(data, y, n); break;
    case QP_GGML_Q6_K: qp_ggml_dequantize_row_q6_K(data, y, n); break;
    default: plain_row(t, data, y, n); break;
    }
}
