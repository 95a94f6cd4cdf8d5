/* core/dtype.h: element types and their traits.
 *
 * The enum only grows; QP_DTYPE_COUNT ends it and every table indexed by it
 * has a _Static_assert next to it.
 *
 * Packed types (2, 3 and 4 bits) store element k in bits [k*b, k*b + b) of
 * a little-endian bit stream: for 4 bits, element 2k is the low nibble and
 * 2k+1 the high nibble of byte k (the order ONNX, GGUF and PyTorch's packed
 * int4 use); 3-bit elements may straddle a byte boundary. The last byte is
 * zero-padded. */
#ifndef QP_CORE_DTYPE_H
#define QP_CORE_DTYPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum qp_dtype {
    QP_DTYPE_F32 = 0,
    QP_DTYPE_F16,
    QP_DTYPE_BF16,
    QP_DTYPE_F64,
    QP_DTYPE_I8,
    QP_DTYPE_U8,
    QP_DTYPE_I16,
    QP_DTYPE_U16,
    QP_DTYPE_I32,
    QP_DTYPE_U32,
    QP_DTYPE_I64,
    QP_DTYPE_U64,
    QP_DTYPE_I4,     /* packed, two per byte, low nibble first, signed */
    QP_DTYPE_U4,     /* packed, two per byte, low nibble first */
    QP_DTYPE_BOOL,   /* one byte, 0 or 1 */
    QP_DTYPE_F8E4M3, /* float8 e4m3fn: no infinities, 0x7f/0xff are NaN */
    QP_DTYPE_F8E5M2, /* float8 e5m2: IEEE-like */
    QP_DTYPE_I2,     /* packed, four per byte, signed */
    QP_DTYPE_U2,
    QP_DTYPE_I3,     /* packed bit stream, signed */
    QP_DTYPE_U3,
    QP_DTYPE_COUNT
};

struct qp_dtype_traits {
    const char *name;   /* canonical lower-case name: "f32", "i8", ... */
    unsigned bits;      /* bits per element (2, 3, 4 for packed types) */
    bool is_float;
    bool is_signed;     /* integer types: two's complement */
    int64_t min, max;   /* integer types: representable range */
};

/* Traits of dtype; dtype must be < QP_DTYPE_COUNT. */
const struct qp_dtype_traits *qp_dtype_traits(enum qp_dtype dtype);

static inline const char *qp_dtype_name(enum qp_dtype dtype)
{
    return qp_dtype_traits(dtype)->name;
}

static inline bool qp_dtype_is_int(enum qp_dtype dtype)
{
    return !qp_dtype_traits(dtype)->is_float && dtype != QP_DTYPE_BOOL;
}

/* Looks up a dtype by name. Accepts the canonical names and common aliases
 * ("float32", "float", "fp32", "int8", "uint8", "float16", "half",
 * "bfloat16", "double", "int4", "bool", ...), case-insensitive.
 * Returns false when the name is unknown. */
bool qp_dtype_from_name(const char *name, enum qp_dtype *out);

static inline bool qp_dtype_is_packed(enum qp_dtype dtype)
{
    return qp_dtype_traits(dtype)->bits < 8;
}

/* Bytes needed to store numel elements; false on overflow. */
bool qp_dtype_bytes(enum qp_dtype dtype, size_t numel, size_t *out);

/* The narrowest of u8, i8, u16, i16, i32 holding every v[0..n) (u8 for
 * n == 0): how zero points are stored. */
enum qp_dtype qp_dtype_narrowest_int(const int32_t *v, size_t n);

#endif
