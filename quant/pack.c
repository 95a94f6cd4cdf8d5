#include "quant/pack.h"

#include "core/tensor.h"

size_t qp_pack_align(enum qp_dtype dt)
{
    return qp_dtype_is_packed(dt) ? 8 : 1;
}

/* 8 elements of b bits into b bytes (little-endian bit stream). */
static void pack8(const int32_t *q, unsigned b, unsigned char *p)
{
    uint32_t m = (1u << b) - 1;
    uint32_t lo = 0, hi = 0; /* elements 0-3 and 4-7: 4*b <= 16 bits each */
    for (unsigned k = 0; k < 4; k++) {
        lo |= ((uint32_t)q[k] & m) << (k * b);
        hi |= ((uint32_t)q[k + 4] & m) << (k * b);
    }
    uint32_t w = lo | hi << (4 * b);
    for (unsigned k = 0; k < b; k++)
        p[k] = (unsigned char)(w >> (8 * k));
}

void qp_pack_store(enum qp_dtype dt, const int32_t *q, size_t n, void *data,
                   size_t start)
{
    switch (dt) {
    case QP_DTYPE_I8: {
        int8_t *o = (int8_t *)data + start;
        for (size_t k = 0; k < n; k++)
            o[k] = (int8_t)q[k];
        return;
    }
    case QP_DTYPE_U8: {
        uint8_t *o = (uint8_t *)data + start;
        for (size_t k = 0; k < n; k++)
            o[k] = (uint8_t)q[k];
        return;
    }
    case QP_DTYPE_I16: {
        int16_t *o = (int16_t *)data + start;
        for (size_t k = 0; k < n; k++)
            o[k] = (int16_t)q[k];
        return;
    }
    case QP_DTYPE_U16: {
        uint16_t *o = (uint16_t *)data + start;
        for (size_t k = 0; k < n; k++)
            o[k] = (uint16_t)q[k];
        return;
    }
    case QP_DTYPE_I4:
    case QP_DTYPE_U4: {
        unsigned char *o = (unsigned char *)data + start / 2;
        size_t k = 0;
        for (; k + 2 <= n; k += 2)
            o[k / 2] = (unsigned char)((q[k] & 15) | (q[k + 1] & 15) << 4);
        if (k < n)
            o[k / 2] = (unsigned char)(q[k] & 15);
        return;
    }
    default: {
        unsigned b = qp_dtype_traits(dt)->bits;
        unsigned char *o = (unsigned char *)data + start / 8 * b;
        size_t k = 0;
        for (; k + 8 <= n; k += 8)
            pack8(q + k, b, o + k / 8 * b);
        if (k < n) {
            int32_t tail[8] = {0};
            for (size_t j = k; j < n; j++)
                tail[j - k] = q[j];
            unsigned char bytes[8];
            pack8(tail, b, bytes);
            size_t used = ((n - k) * b + 7) / 8;
            for (size_t j = 0; j < used; j++)
                o[k / 8 * b + j] = bytes[j];
        }
        return;
    }
    }
}

void qp_pack_load(enum qp_dtype dt, const void *data, size_t start, size_t n,
                  int32_t *q)
{
    switch (dt) {
    case QP_DTYPE_I8:
        for (size_t k = 0; k < n; k++)
            q[k] = ((const int8_t *)data)[start + k];
        return;
    case QP_DTYPE_U8:
        for (size_t k = 0; k < n; k++)
            q[k] = ((const uint8_t *)data)[start + k];
        return;
    case QP_DTYPE_I16:
        for (size_t k = 0; k < n; k++)
            q[k] = ((const int16_t *)data)[start + k];
        return;
    case QP_DTYPE_U16:
        for (size_t k = 0; k < n; k++)
            q[k] = ((const uint16_t *)data)[start + k];
        return;
    default:
        for (size_t k = 0; k < n; k++)
            q[k] = qp_packed_get(dt, data, start + k);
        return;
    }
}
