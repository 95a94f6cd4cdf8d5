/* kernels/x86/quantize-act-avx2.c: the activation quantizer's rows with
 * AVX2, 8 values at a time, bit-identical to kernels/ref/quantize-act.c
 * (tests/unit/test-quantize-act-simd.c compares them). Tails (n % 32 for
 * the narrowed stores, n % 8 otherwise) run the reference.
 *
 * Every step is exact or rounds as the reference does: the division or
 * the multiplication by the float reciprocal is IEEE; vmaxps(y, lo) gives
 * lo for a NaN y; the clamp bounds are integers, so rounding after the
 * clamp stays inside them; y - trunc(y) is exact, which makes round half
 * away from zero exact too. */
#include "kernels/ref/quantize-act-impl.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

#define INLINE static inline __attribute__((always_inline))

struct consts {
    __m256 s, inv, lo, hi;
    __m256i z;
};

INLINE void consts_init(struct consts *k, float scale, int32_t zp,
                        int32_t qmin, int32_t qmax)
{
    k->s = _mm256_set1_ps(scale);
    k->inv = _mm256_set1_ps(1.0f / scale);
    k->lo = _mm256_set1_ps((float)((int64_t)qmin - zp));
    k->hi = _mm256_set1_ps((float)((int64_t)qmax - zp));
    k->z = _mm256_set1_epi32(zp);
}

/* round(clamp(x / s)) as floats: q - zp */
INLINE __m256 step(enum qp_qa_flavor f, const struct consts *k, __m256 x)
{
    bool mul = f == QP_QA_PYTORCH || f == QP_QA_XNNPACK;
    __m256 y = mul ? _mm256_mul_ps(x, k->inv) : _mm256_div_ps(x, k->s);
    y = _mm256_min_ps(_mm256_max_ps(y, k->lo), k->hi);
    if (f != QP_QA_TFLITE)
        return _mm256_round_ps(y, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m256 sign = _mm256_set1_ps(-0.0f);
    __m256 t = _mm256_round_ps(y, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    __m256 d = _mm256_andnot_ps(sign, _mm256_sub_ps(y, t));
    __m256 up = _mm256_cmp_ps(d, _mm256_set1_ps(0.5f), _CMP_GE_OQ);
    __m256 one = _mm256_or_ps(_mm256_and_ps(y, sign), _mm256_set1_ps(1.0f));
    return _mm256_add_ps(t, _mm256_and_ps(up, one));
}

INLINE __m256i quant(enum qp_qa_flavor f, const struct consts *k, const float *x)
{
    return _mm256_add_epi32(_mm256_cvtps_epi32(step(f, k, _mm256_loadu_ps(x))),
                            k->z);
}

/* 32 values narrowed to bytes in order (they are inside the dtype) */
INLINE void store8(enum qp_dtype dt, void *out, __m256i a, __m256i b, __m256i c,
                   __m256i d)
{
    __m256i ab = _mm256_packs_epi32(a, b), cd = _mm256_packs_epi32(c, d);
    __m256i v = dt == QP_DTYPE_I8 ? _mm256_packs_epi16(ab, cd)
                                  : _mm256_packus_epi16(ab, cd);
    v = _mm256_permutevar8x32_epi32(v, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
    _mm256_storeu_si256((__m256i *)out, v);
}

INLINE void store16(enum qp_dtype dt, void *out, __m256i a, __m256i b)
{
    __m256i v = dt == QP_DTYPE_I16 ? _mm256_packs_epi32(a, b)
                                   : _mm256_packus_epi32(a, b);
    _mm256_storeu_si256((__m256i *)out, _mm256_permute4x64_epi64(v, 0xD8));
}

INLINE void row(enum qp_qa_flavor f, const float *x, size_t n, float scale,
                int32_t zp, int32_t qmin, int32_t qmax, enum qp_dtype dt,
                void *out)
{
    struct consts k;
    consts_init(&k, scale, zp, qmin, qmax);
    size_t i = 0;
    if (dt == QP_DTYPE_I8 || dt == QP_DTYPE_U8) {
        for (; i + 32 <= n; i += 32)
            store8(dt, (char *)out + i, quant(f, &k, x + i), quant(f, &k, x + i + 8),
                   quant(f, &k, x + i + 16), quant(f, &k, x + i + 24));
    } else if (dt == QP_DTYPE_I16 || dt == QP_DTYPE_U16) {
        for (; i + 16 <= n; i += 16)
            store16(dt, (int16_t *)out + i, quant(f, &k, x + i),
                    quant(f, &k, x + i + 8));
    } else {
        for (; i + 8 <= n; i += 8)
            _mm256_storeu_si256((__m256i *)((int32_t *)out + i), quant(f, &k, x + i));
    }
    if (i < n)
        qp_qa_row_ref(f, x + i, n - i, scale, zp, qmin, qmax, dt,
                      (char *)out + i * qp_qa_size(dt));
}

INLINE void fake(enum qp_qa_flavor f, const float *x, size_t n, float scale,
                 int32_t zp, int32_t qmin, int32_t qmax, float *y)
{
    struct consts k;
    consts_init(&k, scale, zp, qmin, qmax);
    size_t i = 0;
    /* ((float)q - (float)zp) is the rounded value itself (exact: |q| and
     * |zp| are far below 2^24), + 0 turning a rounded -0 into the +0 the
     * subtraction gives */
    const __m256 zero = _mm256_setzero_ps();
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_add_ps(step(f, &k, _mm256_loadu_ps(x + i)),
                                                            zero),
                                              k.s));
    if (i < n)
        qp_qa_fake_ref(f, x + i, n - i, scale, zp, qmin, qmax, y + i);
}


void qp_qa_row_avx2(enum qp_qa_flavor f, const float *x, size_t n, float scale,
                    int32_t zp, int32_t qmin, int32_t qmax, enum qp_dtype dt,
                    void *out)
{
    QP_QA_BY_FLAVOR(row(F, x, n, scale, zp, qmin, qmax, dt, out))
}

void qp_qa_fake_avx2(enum qp_qa_flavor f, const float *x, size_t n,
                     float scale, int32_t zp, int32_t qmin, int32_t qmax,
                     float *y)
{
    QP_QA_BY_FLAVOR(fake(F, x, n, scale, zp, qmin, qmax, y))
}

#endif
