/* core/ggml-block.h: ggml's tensor types as GGUF stores them: the type
 * table, the on-disk block structs, and decoding blocks to f32.
 *
 * The quantizers that produce these blocks are in quant/ggml-quant.h; the
 * decoding lives here so that formats/ (the GGUF reader) can dequantize
 * without depending on quant/. Semantics were checked against ggml's
 * reference code (src/ggml-quants.c, src/ggml-common.h) at ggml-org/ggml
 * commit d99724f2b141fed9e1a9f402213506c081433465 (tests/golden/ggml/).
 *
 * Block formats (all fields little-endian; "fp16" is IEEE binary16):
 *
 *   q8_0  32 values, 34 bytes: fp16 d; int8 qs[32].          x = d * q
 *   q4_0  32 values, 18 bytes: fp16 d; qs[16]: value j in the low nibble of
 *         byte j, value j + 16 in its high nibble.          x = d * (q - 8)
 *   q4_1  32 values, 20 bytes: fp16 d, m; qs[16] as q4_0.    x = d * q + m
 *   q5_0  32 values, 22 bytes: fp16 d; qh[4] (bit j of the little-endian
 *         u32 is bit 4 of value j); qs[16] low nibbles as q4_0.
 *                                                          x = d * (q - 16)
 *   q4_K  256 values in 8 sub-blocks of 32, 144 bytes: fp16 d, dmin;
 *         scales[12]: 6-bit scale sc_j and min m_j per sub-block (j < 4:
 *         sc = scales[j] & 63, m = scales[j + 4] & 63; j >= 4: low 4 bits in
 *         scales[j + 4] (sc low nibble, m high nibble), top 2 bits in bits
 *         6-7 of scales[j - 4] (sc) and scales[j] (m)); qs[128]: 4-bit
 *         values, each 32 bytes holding sub-block 2i in the low nibbles and
 *         2i + 1 in the high ones.       x = (d * sc_j) * q - (dmin * m_j)
 *   q6_K  256 values in 16 sub-blocks of 16, 210 bytes: ql[128] (low 4
 *         bits), qh[64] (high 2 bits), int8 scales[16], fp16 d (last).
 *         Per half of 128 values: value l (l < 32) + 32k takes its low
 *         nibble from ql[l + 32 (k & 1)] (k < 2: low nibble, else high) and
 *         its high bits from bits 2k..2k+1 of qh[l].
 *                                               x = d * scale_j * (q - 32)
 *
 * Every decoder evaluates exactly ggml's expressions in ggml's order (e.g.
 * q4_1's x0*d + m, q6_K's d * sc * q), so this file is built with
 * -ffp-contract=off (mk/ggml.mk): a fused multiply-add would round
 * differently from ggml's plain build. */
#ifndef QP_CORE_GGML_BLOCK_H
#define QP_CORE_GGML_BLOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/dtype.h"

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
               "ggml blocks are stored as little-endian structs");

/* The ggml types qprobe reads and writes. Only grows; QP_GGML_TYPE_COUNT
 * ends it and the table in core/ggml-block.c has a _Static_assert. The
 * value is not ggml's id (see qp_ggml_type_info()->id). */
enum qp_ggml_type {
    QP_GGML_F32 = 0,
    QP_GGML_F16,
    QP_GGML_BF16,
    QP_GGML_Q8_0,
    QP_GGML_Q4_0,
    QP_GGML_Q4_1,
    QP_GGML_Q5_0,
    QP_GGML_Q4_K,
    QP_GGML_Q6_K,
    QP_GGML_I8,
    QP_GGML_I16,
    QP_GGML_I32,
    QP_GGML_I64,
    QP_GGML_F64,
    QP_GGML_TYPE_COUNT
};

struct qp_ggml_type_info {
    const char *name;     /* ggml_type_name(): "f32", "q4_0", "q4_K", ... */
    const char *scheme;   /* qprobe scheme name ("q4_k"), NULL if none */
    uint32_t id;          /* value in ggml.h's enum ggml_type (GGUF's) */
    int64_t block;        /* elements per block (1 for plain types) */
    size_t block_bytes;   /* bytes per block */
    enum qp_dtype dtype;  /* plain types: the qprobe dtype of an element;
                           * block types: QP_DTYPE_COUNT */
    unsigned bits;        /* nominal bits per weight (4 for q4_K) */
};

/* Table entry of t (t < QP_GGML_TYPE_COUNT). */
const struct qp_ggml_type_info *qp_ggml_type_info(enum qp_ggml_type t);

/* The qprobe type of ggml id `id`; false when qprobe does not handle it. */
bool qp_ggml_type_from_id(uint32_t id, enum qp_ggml_type *out);

/* ggml's name of any id of ggml.h's enum ggml_type (also the types qprobe
 * does not handle, e.g. 13 -> "q5_K"); NULL for ids ggml does not define. */
const char *qp_ggml_id_name(uint32_t id);

/* Bytes of n elements of type t: false when n is negative, not a multiple
 * of the block size, or the size overflows. */
bool qp_ggml_row_bytes(enum qp_ggml_type t, int64_t n, size_t *out);

/* A tensor's data in a ggml type, as GGUF holds it: ne in ggml order
 * (ne[0] innermost: a torch [out, in] weight has ne = {in, out}), the
 * blocks (or plain elements) of every row in order. */
#define QP_GGML_MAX_DIMS 8
struct qp_ggml_data {
    enum qp_ggml_type type;
    int ndim;                    /* 1..QP_GGML_MAX_DIMS */
    int64_t ne[QP_GGML_MAX_DIMS];
    void *data;                  /* nbytes; owned by whoever filled it */
    size_t nbytes;
};

/* ---- block structs (ggml-common.h's layouts) ---------------------------- */

#define QP_QK8_0 32
#define QP_QK4_0 32
#define QP_QK4_1 32
#define QP_QK5_0 32
#define QP_QK_K 256
#define QP_K_SCALE_SIZE 12

struct qp_block_q8_0 {
    uint16_t d;              /* fp16 delta */
    int8_t qs[QP_QK8_0];
};
_Static_assert(sizeof(struct qp_block_q8_0) == 2 + QP_QK8_0, "q8_0 block");

struct qp_block_q4_0 {
    uint16_t d;
    uint8_t qs[QP_QK4_0 / 2];
};
_Static_assert(sizeof(struct qp_block_q4_0) == 2 + QP_QK4_0 / 2, "q4_0 block");

struct qp_block_q4_1 {
    uint16_t d;              /* fp16 delta */
    uint16_t m;              /* fp16 min */
    uint8_t qs[QP_QK4_1 / 2];
};
_Static_assert(sizeof(struct qp_block_q4_1) == 4 + QP_QK4_1 / 2, "q4_1 block");

struct qp_block_q5_0 {
    uint16_t d;
    uint8_t qh[4];           /* bit 4 of each value, as a little-endian u32 */
    uint8_t qs[QP_QK5_0 / 2];
};
_Static_assert(sizeof(struct qp_block_q5_0) == 6 + QP_QK5_0 / 2, "q5_0 block");

struct qp_block_q4_K {
    uint16_t d;              /* fp16 scale of the 6-bit scales */
    uint16_t dmin;           /* fp16 scale of the 6-bit mins */
    uint8_t scales[QP_K_SCALE_SIZE];
    uint8_t qs[QP_QK_K / 2];
};
_Static_assert(sizeof(struct qp_block_q4_K) == 4 + QP_K_SCALE_SIZE + QP_QK_K / 2,
               "q4_K block");

struct qp_block_q6_K {
    uint8_t ql[QP_QK_K / 2];
    uint8_t qh[QP_QK_K / 4];
    int8_t scales[QP_QK_K / 16];
    uint16_t d;
};
_Static_assert(sizeof(struct qp_block_q6_K) == 2 + QP_QK_K / 16 + 3 * QP_QK_K / 4,
               "q6_K block");

/* ---- decoding ------------------------------------------------------------ */

/* ggml's dequantize_row_<t>: n values (a multiple of the block size) from
 * n / block blocks at `blocks` (any alignment) into y[n]. */
void qp_ggml_dequantize_row_q8_0(const void *blocks, float *y, int64_t n);
void qp_ggml_dequantize_row_q4_0(const void *blocks, float *y, int64_t n);
void qp_ggml_dequantize_row_q4_1(const void *blocks, float *y, int64_t n);
void qp_ggml_dequantize_row_q5_0(const void *blocks, float *y, int64_t n);
void qp_ggml_dequantize_row_q4_K(const void *blocks, float *y, int64_t n);
void qp_ggml_dequantize_row_q6_K(const void *blocks, float *y, int64_t n);

/* Any type of the table: block types as above, plain types converted
 * exactly (f16/bf16 widened, integers and f64 converted to the nearest
 * f32). n must be a multiple of the block size. */
void qp_ggml_dequantize_row(enum qp_ggml_type t, const void *data, float *y,
                            int64_t n);

#endif
