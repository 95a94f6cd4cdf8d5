/* kernels/ref/quantize-act-impl.h: what the activation quantizer's
 * variants share (internal to kernels/; users include
 * kernels/quantize-act.h). SIMD rows handle whole vectors and may hand a
 * tail to the reference rows below. */
#ifndef QP_KERNELS_REF_QUANTIZE_ACT_IMPL_H
#define QP_KERNELS_REF_QUANTIZE_ACT_IMPL_H

#include "kernels/quantize-act.h"

typedef void (*qp_qa_row_fn)(enum qp_qa_flavor f, const float *x, size_t n,
                             float scale, int32_t zp, int32_t qmin,
                             int32_t qmax, enum qp_dtype dt, void *out);
typedef void (*qp_qa_fake_fn)(enum qp_qa_flavor f, const float *x, size_t n,
                              float scale, int32_t zp, int32_t qmin,
                              int32_t qmax, float *y);

void qp_qa_row_ref(enum qp_qa_flavor f, const float *x, size_t n, float scale,
                   int32_t zp, int32_t qmin, int32_t qmax, enum qp_dtype dt,
                   void *out);
void qp_qa_fake_ref(enum qp_qa_flavor f, const float *x, size_t n, float scale,
                    int32_t zp, int32_t qmin, int32_t qmax, float *y);

/* Stores v (already inside dt's range) as element i of out. */
static inline void qp_qa_store(enum qp_dtype dt, void *out, size_t i, int32_t v)
{
    switch (dt) {
    case QP_DTYPE_I8: ((int8_t *)out)[i] = (int8_t)v; break;
    case QP_DTYPE_U8: ((uint8_t *)out)[i] = (uint8_t)v; break;
    case QP_DTYPE_I16: ((int16_t *)out)[i] = (int16_t)v; break;
    case QP_DTYPE_U16: ((uint16_t *)out)[i] = (uint16_t)v; break;
    default: ((int32_t *)out)[i] = v; break;
    }
}

/* Bytes per element of the dtypes the rows write. */
static inline size_t qp_qa_size(enum qp_dtype dt)
{
    return dt == QP_DTYPE_I8 || dt == QP_DTYPE_U8 ? 1
         : dt == QP_DTYPE_I32 ? 4 : 2;
}

/* The SIMD rows' dispatch on the flavor: call (using F) with F a constant,
 * so each flavor's loop is straight-line (pytorch and xnnpack share one
 * arithmetic). */
#define QP_QA_BY_FLAVOR(call)                                                        \
    switch (f) {                                                               \
    case QP_QA_ONNX: { const enum qp_qa_flavor F = QP_QA_ONNX; call; } break;  \
    case QP_QA_PYTORCH:                                                        \
    case QP_QA_XNNPACK: { const enum qp_qa_flavor F = QP_QA_XNNPACK; call; } break; \
    default: { const enum qp_qa_flavor F = QP_QA_TFLITE; call; } break;        \
    }

#if defined(__x86_64__) || defined(__i386__)
void qp_qa_row_avx2(enum qp_qa_flavor f, const float *x, size_t n, float scale,
                    int32_t zp, int32_t qmin, int32_t qmax, enum qp_dtype dt,
                    void *out);
void qp_qa_fake_avx2(enum qp_qa_flavor f, const float *x, size_t n,
                     float scale, int32_t zp, int32_t qmin, int32_t qmax,
                     float *y);
void qp_qa_row_avx512(enum qp_qa_flavor f, const float *x, size_t n,
                      float scale, int32_t zp, int32_t qmin, int32_t qmax,
                      enum qp_dtype dt, void *out);
void qp_qa_fake_avx512(enum qp_qa_flavor f, const float *x, size_t n,
                       float scale, int32_t zp, int32_t qmin, int32_t qmax,
                       float *y);
#endif

#endif
