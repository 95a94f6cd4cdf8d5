/* kernels/ref/ref-util.h: element loads and stores by dtype, zero-point
 * arrays and tap coordinates, shared by the integer references and the
 * kernels built on them (kernels/kern-util.h includes this). Internal to
 * kernels/; static inline, calling only the reference requantization. */
#ifndef QP_KERNELS_REF_REF_UTIL_H
#define QP_KERNELS_REF_REF_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/dtype.h"
#include "kernels/requant.h"

/* Entry j of a zero-point array of `count` values: none (NULL or 0 values)
 * is 0, one value is per tensor, otherwise per channel. */
static inline int32_t qp_kern_zp(const int32_t *zp, size_t count, size_t j)
{
    if (!zp || count == 0)
        return 0;
    return count == 1 ? zp[0] : zp[j];
}

/* Element i of an int8 (QP_DTYPE_I8) or uint8 array. */
static inline int32_t qp_kern_load8(enum qp_dtype dt, const void *p, size_t i)
{
    return dt == QP_DTYPE_I8 ? (int32_t)((const int8_t *)p)[i]
                             : (int32_t)((const uint8_t *)p)[i];
}

/* The input coordinate o*stride + k*dilation - pad of output position o's
 * kernel tap k, in *i; false when the tap falls in the padding (outside
 * [0, in)), where it contributes nothing. */
static inline bool qp_kern_tap(size_t o, size_t k, size_t stride,
                               size_t dilation, size_t pad, size_t in,
                               size_t *i)
{
    size_t p = o * stride + k * dilation;
    if (p < pad || p - pad >= in)
        return false;
    *i = p - pad;
    return true;
}

/* Bytes per output element: rq's out_dtype, or int32 without rq. */
static inline size_t qp_kern_out_size(const struct qp_rq *rq)
{
    if (!rq)
        return 4;
    return rq->out_dtype == QP_DTYPE_I16 ? 2 : 1;
}

/* Stores v (already in range) as element i of out, of rq's out_dtype. */
static inline void qp_kern_store(const struct qp_rq *rq, void *out, size_t i,
                                 int32_t v)
{
    if (!rq)
        ((int32_t *)out)[i] = v;
    else if (rq->out_dtype == QP_DTYPE_I8)
        ((int8_t *)out)[i] = (int8_t)v;
    else if (rq->out_dtype == QP_DTYPE_U8)
        ((uint8_t *)out)[i] = (uint8_t)v;
    else
        ((int16_t *)out)[i] = (int16_t)v;
}

/* Element i of out = the accumulator of channel c requantized by rq (the
 * reference, one value at a time), or acc itself without rq. */
static inline void qp_kern_store_out(const struct qp_rq *rq, size_t c,
                                     int32_t acc, void *out, size_t i)
{
    qp_kern_store(rq, out, i, rq ? qp_rq_one(rq, c, acc) : acc);
}

#endif
