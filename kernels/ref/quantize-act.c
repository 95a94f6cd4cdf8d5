/* kernels/ref/quantize-act.c: float -> integer activation quantization per
 * runtime, dequantization and ONNX DynamicQuantizeLinear. */
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

/* Checks the dtype (i8, u8, i16, u16, and i32 when allow_i32), the
 * scales and zero points; fills the dtype's range. */
static enum qp_status check_params(const char *verb, enum qp_dtype dt,
                                   bool allow_i32, size_t channels,
                                   const float *scale, const int32_t *zp,
                                   int32_t *lo, int32_t *hi,
                                   struct qp_error *err)
{
    if (dt != QP_DTYPE_I8 && dt != QP_DTYPE_U8 && dt != QP_DTYPE_I16 &&
        dt != QP_DTYPE_U16 && !(allow_i32 && dt == QP_DTYPE_I32))
        return qp_fail(err, QP_E_INVAL, "cannot %s %s: i8, u8, i16, u16%s",
                       verb, qp_dtype_name(dt), allow_i32 ? " or i32" : "");
    *lo = (int32_t)qp_dtype_traits(dt)->min;
    *hi = (int32_t)qp_dtype_traits(dt)->max;
    for (size_t c = 0; c < channels; c++) {
        if (!(scale[c] > 0.0f) || !isfinite(scale[c]))
            return qp_fail(err, QP_E_INVAL,
                           "scale[%zu] = %g must be finite and > 0", c,
                           (double)scale[c]);
        if (zp && (zp[c] < *lo || zp[c] > *hi))
            return qp_fail(err, QP_E_INVAL,
                           "zero point[%zu] = %d is outside the %s range "
                           "[%d, %d]",
                           c, zp[c], qp_dtype_name(dt), *lo, *hi);
    }
    return QP_OK;
}

enum qp_status qp_qa_quantize(enum qp_qa_flavor f, const float *x, size_t outer,
                              size_t channels, size_t inner,
                              const float *scale, const int32_t *zp,
                              enum qp_dtype out_dtype, void *out,
                              struct qp_error *err)
{
    int32_t lo, hi;
    enum qp_status st = check_params("quantize to", out_dtype, false, channels,
                                     scale, zp, &lo, &hi, err);
    if (st != QP_OK)
        return st;
    size_t es = qp_qa_size(out_dtype);
    for (size_t o = 0; o < outer; o++)
        for (size_t c = 0; c < channels; c++) {
            size_t at = (o * channels + c) * inner;
            qp_qa_quantize_row(f, x + at, inner, scale[c], zp ? zp[c] : 0, lo,
                               hi, out_dtype, (char *)out + at * es);
        }
    return QP_OK;
}

enum qp_status qp_qa_dequantize(const void *q, enum qp_dtype dtype,
                                size_t outer, size_t channels, size_t inner,
                                const float *scale, const int32_t *zp,
                                float *out, struct qp_error *err)
{
    int32_t lo, hi;
    enum qp_status st = check_params("dequantize", dtype, true, channels,
                                     scale, zp, &lo, &hi, err);
    if (st != QP_OK)
        return st;
    size_t es = qp_qa_size(dtype);
    for (size_t o = 0; o < outer; o++)
        for (size_t c = 0; c < channels; c++) {
            size_t at = (o * channels + c) * inner;
            qp_qa_dequantize_row((const char *)q + at * es, dtype, inner,
                                 scale[c], zp ? zp[c] : 0, out + at);
        }
    return QP_OK;
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

/* True for the instruction sets with SIMD rows here (x86 only so far). */
static bool has_rows(enum qp_rq_isa isa)
{
#if defined(__x86_64__) || defined(__i386__)
    return isa == QP_RQ_ISA_AVX512 || isa == QP_RQ_ISA_AVX2;
#else
    (void)isa;
    return false;
#endif
}

/* The variant requantization chose (kernels/requant.h): the same
 * instruction sets and the same QP_KERNELS cap; the reference where this
 * file has no rows for it (e.g. NEON). */
static enum qp_rq_isa chosen_isa(void)
{
    const char *name = qp_rq_variant();
    for (int isa = QP_RQ_ISA_COUNT - 1; isa > QP_RQ_ISA_REF; isa--)
        if (!strcmp(name, qp_rq_isa_name((enum qp_rq_isa)isa)))
            return has_rows((enum qp_rq_isa)isa) ? (enum qp_rq_isa)isa
                                                 : QP_RQ_ISA_REF;
    return QP_RQ_ISA_REF;
}

const char *qp_qa_variant(void)
{
    return qp_rq_isa_name(chosen_isa());
}

void qp_qa_quantize_row_isa(enum qp_rq_isa isa, enum qp_qa_flavor f,
                            const float *x, size_t n, float scale, int32_t zp,
                            int32_t qmin, int32_t qmax,
                            enum qp_dtype out_dtype, void *out)
{
    qp_qa_row_fn fn = qp_qa_row_ref;
#if defined(__x86_64__) || defined(__i386__)
    if (isa == QP_RQ_ISA_AVX512)
        fn = qp_qa_row_avx512;
    else if (isa == QP_RQ_ISA_AVX2)
        fn = qp_qa_row_avx2;
#else
    (void)isa;
#endif
    fn(f, x, n, scale, zp, qmin, qmax, out_dtype, out);
}

void qp_qa_fake_row_isa(enum qp_rq_isa isa, enum qp_qa_flavor f,
                        const float *x, size_t n, float scale, int32_t zp,
                        int32_t qmin, int32_t qmax, float *y)
{
    qp_qa_fake_fn fn = qp_qa_fake_ref;
#if defined(__x86_64__) || defined(__i386__)
    if (isa == QP_RQ_ISA_AVX512)
        fn = qp_qa_fake_avx512;
    else if (isa == QP_RQ_ISA_AVX2)
        fn = qp_qa_fake_avx2;
#else
    (void)isa;
#endif
    fn(f, x, n, scale, zp, qmin, qmax, y);
}

void qp_qa_quantize_row(enum qp_qa_flavor f, const float *x, size_t n,
                        float scale, int32_t zp, int32_t qmin, int32_t qmax,
                        enum qp_dtype out_dtype, void *out)
{
    qp_qa_quantize_row_isa(chosen_isa(), f, x, n, scale, zp, qmin, qmax,
                           out_dtype, out);
}

void qp_qa_fake_row(enum qp_qa_flavor f, const float *x, size_t n,
                    float scale, int32_t zp, int32_t qmin, int32_t qmax,
                    float *y)
{
    qp_qa_fake_row_isa(chosen_isa(), f, x, n, scale, zp, qmin, qmax, y);
}

void qp_qa_dynamic_u8(const float *x, size_t n, float *scale, uint8_t *zp,
                      uint8_t *out)
{
    float maxx = 0.0f, minx = 0.0f;
    for (size_t i = 0; i < n; i++) {
        if (x[i] > maxx)
            maxx = x[i];
        if (x[i] < minx)
            minx = x[i];
    }
    /* float32 throughout, as the reference's np.float32 arithmetic */
    float s = maxx == minx ? 1.0f : (maxx - minx) / 255.0f;
    float initial = 0.0f - minx / s;
    float z = initial < 0.0f ? 0.0f : initial > 255.0f ? 255.0f : initial;
    z = qp_round_even_f(z);
    *scale = s;
    *zp = (uint8_t)z;
    qp_qa_quantize_row(QP_QA_ONNX, x, n, s, (int32_t)z, 0, 255, QP_DTYPE_U8, out);
}
