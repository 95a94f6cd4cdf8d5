/* kernels/x86/quantize-act-avx512.c: the activation quantizer's rows with
 * AVX-512, 16 values at a time and masked tails, bit-identical to
 * kernels/ref/quantize-act.c (tests/unit/test-quantize-act-simd.c). The
 * arithmetic is kernels/x86/quantize-act-avx2.c's (exactness argued there);
 * the narrowing stores truncate values already inside the dtype. */
#include "kernels/ref/quantize-act-impl.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

#define INLINE static inline __attribute__((always_inline))

struct consts {
    __m512 s, inv, lo, hi;
    __m512i z;
};

INLINE void consts_init(struct consts *k, float scale, int32_t zp,
                        int32_t qmin, int32_t qmax)
{
    k->s = _mm512_set1_ps(scale);
    k->inv = _mm512_set1_ps(1.0f / scale);
    k->lo = _mm512_set1_ps((float)((int64_t)qmin - zp));
    k->hi = _mm512_set1_ps((float)((int64_t)qmax - zp));
    k->z = _mm512_set1_epi32(zp);
}

INLINE __m512 step(enum qp_qa_flavor f, const struct consts *k, __m512 x)
{
    bool mul = f == QP_QA_PYTORCH || f == QP_QA_XNNPACK;
    __m512 y = mul ? _mm512_mul_ps(x, k->inv) : _mm512_div_ps(x, k->s);
    y = _mm512_min_ps(_mm512_max_ps(y, k->lo), k->hi); /* NaN -> lo */
    if (f != QP_QA_TFLITE)
        return _mm512_roundscale_ps(y, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m512 sign = _mm512_set1_ps(-0.0f);
    __m512 t = _mm512_roundscale_ps(y, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    __m512 d = _mm512_andnot_ps(sign, _mm512_sub_ps(y, t));
    __mmask16 up = _mm512_cmp_ps_mask(d, _mm512_set1_ps(0.5f), _CMP_GE_OQ);
    __m512 one = _mm512_or_ps(_mm512_and_ps(y, sign), _mm512_set1_ps(1.0f));
    return _mm512_mask_add_ps(t, up, t, one);
}

INLINE void row(enum qp_qa_flavor f, const float *x, size_t n, float scale,
                int32_t zp, int32_t qmin, int32_t qmax, enum qp_dtype dt,
                void *out)
{
    struct consts k;
    consts_init(&k, scale, zp, qmin, qmax);
    for (size_t i = 0; i < n; i += 16) {
        __mmask16 m = n - i >= 16 ? 0xFFFF : (__mmask16)((1u << (n - i)) - 1);
        __m512 v = step(f, &k, _mm512_maskz_loadu_ps(m, x + i));
        __m512i q = _mm512_add_epi32(_mm512_cvtps_epi32(v), k.z);
        if (dt == QP_DTYPE_I8 || dt == QP_DTYPE_U8)
            _mm512_mask_cvtepi32_storeu_epi8((char *)out + i, m, q);
        else if (dt == QP_DTYPE_I16 || dt == QP_DTYPE_U16)
            _mm512_mask_cvtepi32_storeu_epi16((int16_t *)out + i, m, q);
        else
            _mm512_mask_storeu_epi32((int32_t *)out + i, m, q);
    }
}

INLINE void fake(enum qp_qa_flavor f, const float *x, size_t n, float scale,
                 int32_t zp, int32_t qmin, int32_t qmax, float *y)
{
    struct consts k;
    consts_init(&k, scale, zp, qmin, qmax);
    for (size_t i = 0; i < n; i += 16) {
        __mmask16 m = n - i >= 16 ? 0xFFFF : (__mmask16)((1u << (n - i)) - 1);
        __m512 v = step(f, &k, _mm512_maskz_loadu_ps(m, x + i));
        /* + 0: the +0 that (float)q - (float)zp gives for a rounded -0 */
        v = _mm512_add_ps(v, _mm512_setzero_ps());
        _mm512_mask_storeu_ps(y + i, m, _mm512_mul_ps(v, k.s));
    }
}


void qp_qa_row_avx512(enum qp_qa_flavor f, const float *x, size_t n,
                      float scale, int32_t zp, int32_t qmin, int32_t qmax,
                      enum qp_dtype dt, void *out)
{
    QP_QA_BY_FLAVOR(row(F, x, n, scale, zp, qmin, qmax, dt, out))
}

void qp_qa_fake_avx512(enum qp_qa_flavor f, const float *x, size_t n,
                       float scale, int32_t zp, int32_t qmin, int32_t qmax,
                       float *y)
{
    QP_QA_BY_FLAVOR(fake(F, x, n, scale, zp, qmin, qmax, y))
}

#endif
