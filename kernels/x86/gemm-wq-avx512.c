/* kernels/x86/gemm-wq-avx512.c: AVX-512 row decoders for the
 * weight-decoding GEMM (kernels/gemm-wq-impl.h): bfloat16 and float16
 * widened exactly, int8/uint8 and packed int4/uint4 as (float)(q - z) * s,
 * the floats of the portable decoder. */
#if defined(__x86_64__)
#include <immintrin.h>
#include <string.h>

#include "kernels/gemm-wq-impl.h"

static void bf16_run(const uint16_t *p, size_t n, float *out)
{
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m256i h = _mm256_loadu_si256((const __m256i *)(p + i));
        _mm512_storeu_ps(out + i, _mm512_castsi512_ps(
                                      _mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16)));
    }
    if (i < n) {
        __mmask16 m = (__mmask16)((1u << (n - i)) - 1);
        __m256i h = _mm256_maskz_loadu_epi16(m, p + i);
        _mm512_mask_storeu_ps(out + i, m, _mm512_castsi512_ps(
                                  _mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16)));
    }
}

static void f16_run(const uint16_t *p, size_t n, float *out)
{
    size_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm512_storeu_ps(out + i, _mm512_cvtph_ps(
                                      _mm256_loadu_si256((const __m256i *)(p + i))));
    if (i < n) {
        __mmask16 m = (__mmask16)((1u << (n - i)) - 1);
        _mm512_mask_storeu_ps(out + i, m,
                              _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, p + i)));
    }
}

/* 16 int32 codes minus z, times s */
static inline __m512 scale16(__m512i q, __m512i z, __m512 s)
{
    return _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(q, z)), s);
}

static void i8_run(const void *data, bool is_signed, size_t e, size_t n, float s,
                   int32_t z, float *out)
{
    const uint8_t *p = (const uint8_t *)data + e;
    __m512i vz = _mm512_set1_epi32(z);
    __m512 vs = _mm512_set1_ps(s);
    for (size_t i = 0; i < n; i += 16) {
        size_t len = n - i < 16 ? n - i : 16;
        __mmask16 m = (__mmask16)((1u << len) - 1);
        __m128i b = _mm_maskz_loadu_epi8(m, p + i);
        __m512i q = is_signed ? _mm512_cvtepi8_epi32(b) : _mm512_cvtepu8_epi32(b);
        _mm512_mask_storeu_ps(out + i, m, scale16(q, vz, vs));
    }
}

/* Packed 4-bit codes from element e (two per byte, low nibble first). */
static void i4_run(const void *data, bool is_signed, size_t e, size_t n, float s,
                   int32_t z, float *out)
{
    const uint8_t *p = data;
    __m512i vz = _mm512_set1_epi32(z), eight = _mm512_set1_epi32(8);
    __m512 vs = _mm512_set1_ps(s);
    size_t i = 0;
    for (; i < n && (e + i) % 2; i++) { /* to a byte boundary */
        int32_t v = (p[(e + i) >> 1] >> 4) & 15;
        out[i] = (float)((is_signed ? (v ^ 8) - 8 : v) - z) * s;
    }
    const __m128i low = _mm_set1_epi8(15);
    for (; i + 32 <= n; i += 32) {
        __m128i b = _mm_loadu_si128((const __m128i *)(p + ((e + i) >> 1)));
        __m128i lo = _mm_and_si128(b, low);
        __m128i hi = _mm_and_si128(_mm_srli_epi16(b, 4), low);
        __m512i q0 = _mm512_cvtepu8_epi32(_mm_unpacklo_epi8(lo, hi));
        __m512i q1 = _mm512_cvtepu8_epi32(_mm_unpackhi_epi8(lo, hi));
        if (is_signed) {
            q0 = _mm512_sub_epi32(_mm512_xor_si512(q0, eight), eight);
            q1 = _mm512_sub_epi32(_mm512_xor_si512(q1, eight), eight);
        }
        _mm512_storeu_ps(out + i, scale16(q0, vz, vs));
        _mm512_storeu_ps(out + i + 16, scale16(q1, vz, vs));
    }
    for (; i < n; i++) {
        size_t k = e + i;
        int32_t v = (p[k >> 1] >> ((k & 1) * 4)) & 15;
        out[i] = (float)((is_signed ? (v ^ 8) - 8 : v) - z) * s;
    }
}

/* A run of integers sharing one scale; false for other dtypes. */
static bool int_run(const struct qp_wq *w, size_t e, size_t n, float s, int32_t z,
                    float *out)
{
    switch (w->dtype) {
    case QP_DTYPE_I8: i8_run(w->data, true, e, n, s, z, out); return true;
    case QP_DTYPE_U8: i8_run(w->data, false, e, n, s, z, out); return true;
    case QP_DTYPE_I4: i4_run(w->data, true, e, n, s, z, out); return true;
    case QP_DTYPE_U4: i4_run(w->data, false, e, n, s, z, out); return true;
    default: return false;
    }
}

static bool int_dtype(enum qp_dtype dt)
{
    return dt == QP_DTYPE_I8 || dt == QP_DTYPE_U8 || dt == QP_DTYPE_I4 ||
           dt == QP_DTYPE_U4;
}

bool qp_wq_decode_row_avx512(const struct qp_wq *w, size_t j, size_t i0,
                             size_t ni, float *out)
{
    size_t e = j * w->k + i0;
    switch (w->gran) {
    case QP_WQ_FLOAT:
        if (w->dtype == QP_DTYPE_BF16)
            bf16_run((const uint16_t *)w->data + e, ni, out);
        else if (w->dtype == QP_DTYPE_F16)
            f16_run((const uint16_t *)w->data + e, ni, out);
        else
            memcpy(out, (const float *)w->data + e, ni * sizeof *out);
        return true;
    case QP_WQ_TENSOR:
    case QP_WQ_ROW: {
        size_t si = w->gran == QP_WQ_ROW ? j : 0;
        return int_run(w, e, ni, w->scale[si], w->zp ? w->zp[si] : 0, out);
    }
    case QP_WQ_GROUP:
        if (!int_dtype(w->dtype))
            return false;
        for (size_t c = 0; c < ni;) {
            size_t i = i0 + c, gi = i / w->group, end = (gi + 1) * w->group;
            size_t len = (end < i0 + ni ? end : i0 + ni) - i;
            size_t si = j * w->groups + gi;
            int_run(w, e + c, len, w->scale[si], w->zp ? w->zp[si] : 0, out + c);
            c += len;
        }
        return true;
    default:
        return false;
    }
}
#endif
