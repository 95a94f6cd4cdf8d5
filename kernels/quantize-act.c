/* kernels/quantize-act.c: the activation quantizer's whole-tensor entry
 * points, the rows on the variant the dispatch table chose
 * (kernels/dispatch.c) and ONNX DynamicQuantizeLinear
 * (kernels/quantize-act.h). */
#include <float.h>
#include <math.h>

#include "kernels/dispatch.h"
#include "kernels/ref/quantize-act-impl.h"
#include "kernels/ref/round-impl.h"

#if FLT_EVAL_METHOD != 0
#error "quantize-act: float arithmetic must be evaluated in its own type"
#endif

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

const char *qp_qa_variant(void)
{
    return qp_rq_isa_name(qp_kern_table()->quantize_act);
}

void qp_qa_quantize_row_isa(enum qp_rq_isa isa, enum qp_qa_flavor f,
                            const float *x, size_t n, float scale, int32_t zp,
                            int32_t qmin, int32_t qmax,
                            enum qp_dtype out_dtype, void *out)
{
    qp_qa_row_fn fn = qp_qa_row_ref;
#if defined(__x86_64__)
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
#if defined(__x86_64__)
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
    qp_qa_quantize_row_isa(qp_kern_table()->quantize_act, f, x, n, scale, zp, qmin, qmax,
                           out_dtype, out);
}

void qp_qa_fake_row(enum qp_qa_flavor f, const float *x, size_t n,
                    float scale, int32_t zp, int32_t qmin, int32_t qmax,
                    float *y)
{
    qp_qa_fake_row_isa(qp_kern_table()->quantize_act, f, x, n, scale, zp, qmin, qmax, y);
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
