/* kernels/ref/quantize-act.c: float -> integer activation quantization per
 * runtime, one value and one row at a time (the reference the SIMD rows
 * are tested against), and dequantization (kernels/quantize-act.h). */
#include <float.h>
#include <math.h>
#include <string.h>
#include <strings.h>

#include "kernels/ref/quantize-act-impl.h"
#include "kernels/ref/round-impl.h"

#if FLT_EVAL_METHOD != 0
#error "quantize-act: float arithmetic must be evaluated in its own type"
#endif

static const char *const names[] = {
    [QP_QA_ONNX] = "onnx",
    [QP_QA_PYTORCH] = "pytorch",
    [QP_QA_XNNPACK] = "xnnpack",
    [QP_QA_TFLITE] = "tflite",
};
_Static_assert(sizeof names / sizeof names[0] == QP_QA_COUNT,
               "a name for every activation quantizer");

const char *qp_qa_flavor_name(enum qp_qa_flavor f)
{
    return (unsigned)f < QP_QA_COUNT ? names[f] : "?";
}

bool qp_qa_flavor_from_name(const char *name, enum qp_qa_flavor *out)
{
    for (int f = 0; f < QP_QA_COUNT; f++)
        if (!strcasecmp(name, names[f])) {
            *out = (enum qp_qa_flavor)f;
            return true;
        }
    if (!strcasecmp(name, "ort")) {
        *out = QP_QA_ONNX;
        return true;
    }
    return false;
}

enum qp_qa_flavor qp_qa_for_requant(enum qp_rq_flavor f)
{
    switch (f) {
    case QP_RQ_XNNPACK_FP32:
    case QP_RQ_XNNPACK_RNDNU:
        return QP_QA_XNNPACK;
    case QP_RQ_ONNX_REF:
    case QP_RQ_ORT:
        return QP_QA_ONNX;
    default:
        return QP_QA_TFLITE;
    }
}

int32_t qp_qa_quantize_one(enum qp_qa_flavor f, float x, float scale,
                           int32_t zp, int32_t qmin, int32_t qmax)
{
    if (isnan(x))
        return qmin;
    float y;
    if (f == QP_QA_PYTORCH || f == QP_QA_XNNPACK) {
        float inv = 1.0f / scale;
        y = x * inv;
    } else {
        y = x / scale;
    }
    /* 0 * (1 / a subnormal scale) = 0 * inf is NaN too */
    if (isnan(y))
        return qmin;
    /* the runtimes round, add the zero point, then clamp (or clamp in
     * float first, as XNNPACK and MLAS do): the same for integer bounds,
     * and clamping first keeps the conversion below in range */
    float lo = (float)((int64_t)qmin - zp), hi = (float)((int64_t)qmax - zp);
    y = y < lo ? lo : y > hi ? hi : y;
    float r = f == QP_QA_TFLITE ? roundf(y) : qp_round_even_f(y);
    int64_t q = (int64_t)r + zp;
    return (int32_t)(q < qmin ? qmin : q > qmax ? qmax : q);
}

/* ---- rows ---------------------------------------------------------------- */

void qp_qa_row_ref(enum qp_qa_flavor f, const float *x, size_t n, float scale,
                   int32_t zp, int32_t qmin, int32_t qmax, enum qp_dtype dt,
                   void *out)
{
    for (size_t i = 0; i < n; i++)
        qp_qa_store(dt, out, i, qp_qa_quantize_one(f, x[i], scale, zp, qmin, qmax));
}

void qp_qa_fake_ref(enum qp_qa_flavor f, const float *x, size_t n, float scale,
                    int32_t zp, int32_t qmin, int32_t qmax, float *y)
{
    float z = (float)zp;
    for (size_t i = 0; i < n; i++)
        y[i] = ((float)qp_qa_quantize_one(f, x[i], scale, zp, qmin, qmax) - z) *
               scale;
}

/* (float)v rounds int32 values beyond 2^24, as numpy's astype(float32) */
#define DEQUANTIZE_LOOP(T)                                                     \
    for (size_t i = 0; i < n; i++)                                             \
        out[i] = ((float)((const T *)q)[i] - z) * scale

void qp_qa_dequantize_row(const void *q, enum qp_dtype dtype, size_t n,
                          float scale, int32_t zp, float *out)
{
    float z = (float)zp;
    switch (dtype) {
    case QP_DTYPE_I8: DEQUANTIZE_LOOP(int8_t); break;
    case QP_DTYPE_U8: DEQUANTIZE_LOOP(uint8_t); break;
    case QP_DTYPE_I16: DEQUANTIZE_LOOP(int16_t); break;
    case QP_DTYPE_U16: DEQUANTIZE_LOOP(uint16_t); break;
    default: DEQUANTIZE_LOOP(int32_t); break;
    }
}
