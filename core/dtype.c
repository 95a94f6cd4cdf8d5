#include "core/dtype.h"

#include <strings.h>

#include "core/size.h"

static const struct qp_dtype_traits traits[] = {
    [QP_DTYPE_F32] = {"f32", 32, true, true, 0, 0},
    [QP_DTYPE_F16] = {"f16", 16, true, true, 0, 0},
    [QP_DTYPE_BF16] = {"bf16", 16, true, true, 0, 0},
    [QP_DTYPE_F64] = {"f64", 64, true, true, 0, 0},
    [QP_DTYPE_I8] = {"i8", 8, false, true, INT8_MIN, INT8_MAX},
    [QP_DTYPE_U8] = {"u8", 8, false, false, 0, UINT8_MAX},
    [QP_DTYPE_I16] = {"i16", 16, false, true, INT16_MIN, INT16_MAX},
    [QP_DTYPE_U16] = {"u16", 16, false, false, 0, UINT16_MAX},
    [QP_DTYPE_I32] = {"i32", 32, false, true, INT32_MIN, INT32_MAX},
    [QP_DTYPE_U32] = {"u32", 32, false, false, 0, UINT32_MAX},
    [QP_DTYPE_I64] = {"i64", 64, false, true, INT64_MIN, INT64_MAX},
    [QP_DTYPE_U64] = {"u64", 64, false, false, 0, INT64_MAX},
    [QP_DTYPE_I4] = {"i4", 4, false, true, -8, 7},
    [QP_DTYPE_U4] = {"u4", 4, false, false, 0, 15},
    [QP_DTYPE_BOOL] = {"bool", 8, false, false, 0, 1},
    [QP_DTYPE_F8E4M3] = {"f8e4m3", 8, true, true, 0, 0},
    [QP_DTYPE_F8E5M2] = {"f8e5m2", 8, true, true, 0, 0},
    [QP_DTYPE_I2] = {"i2", 2, false, true, -2, 1},
    [QP_DTYPE_U2] = {"u2", 2, false, false, 0, 3},
    [QP_DTYPE_I3] = {"i3", 3, false, true, -4, 3},
    [QP_DTYPE_U3] = {"u3", 3, false, false, 0, 7},
};
_Static_assert(sizeof traits / sizeof traits[0] == QP_DTYPE_COUNT,
               "traits must cover every dtype");

const struct qp_dtype_traits *qp_dtype_traits(enum qp_dtype dtype)
{
    return &traits[dtype];
}

static const struct {
    const char *name;
    enum qp_dtype dtype;
} aliases[] = {
    {"float32", QP_DTYPE_F32},  {"float", QP_DTYPE_F32},   {"fp32", QP_DTYPE_F32},
    {"float16", QP_DTYPE_F16},  {"half", QP_DTYPE_F16},    {"fp16", QP_DTYPE_F16},
    {"bfloat16", QP_DTYPE_BF16}, {"float64", QP_DTYPE_F64}, {"double", QP_DTYPE_F64},
    {"fp64", QP_DTYPE_F64},     {"int8", QP_DTYPE_I8},     {"uint8", QP_DTYPE_U8},
    {"int16", QP_DTYPE_I16},    {"uint16", QP_DTYPE_U16},  {"int32", QP_DTYPE_I32},
    {"uint32", QP_DTYPE_U32},   {"int64", QP_DTYPE_I64},   {"uint64", QP_DTYPE_U64},
    {"int4", QP_DTYPE_I4},      {"uint4", QP_DTYPE_U4},    {"boolean", QP_DTYPE_BOOL},
    {"float8_e4m3fn", QP_DTYPE_F8E4M3}, {"f8_e4m3", QP_DTYPE_F8E4M3},
    {"float8_e5m2", QP_DTYPE_F8E5M2},   {"f8_e5m2", QP_DTYPE_F8E5M2},
};

bool qp_dtype_from_name(const char *name, enum qp_dtype *out)
{
    for (int d = 0; d < QP_DTYPE_COUNT; d++) {
        if (strcasecmp(name, traits[d].name) == 0) {
            *out = (enum qp_dtype)d;
            return true;
        }
    }
    for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++) {
        if (strcasecmp(name, aliases[i].name) == 0) {
            *out = aliases[i].dtype;
            return true;
        }
    }
    return false;
}

bool qp_dtype_bytes(enum qp_dtype dtype, size_t numel, size_t *out)
{
    unsigned bits = traits[dtype].bits;
    if (bits < 8) { /* ceil(numel * bits / 8) without overflow */
        size_t q = numel / 8, r = numel % 8;
        if (qp_size_mul(q, bits, out))
            return false;
        return !qp_size_add(*out, (r * bits + 7) / 8, out);
    }
    return !qp_size_mul(numel, bits / 8, out);
}

enum qp_dtype qp_dtype_narrowest_int(const int32_t *v, size_t n)
{
    int32_t lo = 0, hi = 0;
    for (size_t i = 0; i < n; i++) {
        lo = v[i] < lo ? v[i] : lo;
        hi = v[i] > hi ? v[i] : hi;
    }
    if (lo >= 0 && hi <= 255)
        return QP_DTYPE_U8;
    if (lo >= -128 && hi <= 127)
        return QP_DTYPE_I8;
    if (lo >= 0 && hi <= 65535)
        return QP_DTYPE_U16;
    if (lo >= -32768 && hi <= 32767)
        return QP_DTYPE_I16;
    return QP_DTYPE_I32;
}
