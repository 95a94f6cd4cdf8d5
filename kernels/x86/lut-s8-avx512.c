/* kernels/x86/lut-s8-avx512.c: byte lookup tables with AVX-512 VBMI
 * (built with -mavx512vbmi, mk/intmode.mk; called only on a CPU that has
 * it): vpermi2b looks 64 indices up in 128 entries; the index's top bit
 * picks between the two halves. Masked tails. Pair tables (65536
 * entries) by 32-bit gathers: index i = a * 256 + b reads the aligned
 * word at i & ~3 (never past the table) and keeps byte i & 3. */
#if defined(__x86_64__)
#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>

void qp_lut8_apply_vbmi(const uint8_t *table, const uint8_t *x, size_t n,
                        uint8_t *y);

void qp_lut8_apply_vbmi(const uint8_t *table, const uint8_t *x, size_t n,
                        uint8_t *y)
{
    __m512i t0 = _mm512_loadu_si512(table), t1 = _mm512_loadu_si512(table + 64);
    __m512i t2 = _mm512_loadu_si512(table + 128), t3 = _mm512_loadu_si512(table + 192);
    for (size_t i = 0; i < n; i += 64) {
        __mmask64 m = n - i >= 64 ? ~(__mmask64)0 : ((__mmask64)1 << (n - i)) - 1;
        __m512i idx = _mm512_maskz_loadu_epi8(m, x + i);
        __m512i lo = _mm512_permutex2var_epi8(t0, idx, t1);
        __m512i hi = _mm512_permutex2var_epi8(t2, idx, t3);
        __m512i r = _mm512_mask_blend_epi8(_mm512_movepi8_mask(idx), lo, hi);
        _mm512_mask_storeu_epi8(y + i, m, r);
    }
}

void qp_lut16_apply_avx512(const uint8_t *table, const uint8_t *a,
                           const uint8_t *b, size_t n, uint8_t *y);

void qp_lut16_apply_avx512(const uint8_t *table, const uint8_t *a,
                           const uint8_t *b, size_t n, uint8_t *y)
{
    const __m512i three = _mm512_set1_epi32(3), ff = _mm512_set1_epi32(0xFF);
    for (size_t i = 0; i < n; i += 16) {
        __mmask16 m = n - i >= 16 ? (__mmask16)0xFFFF
                                  : (__mmask16)((1u << (n - i)) - 1);
        __m512i va = _mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(m, a + i));
        __m512i vb = _mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(m, b + i));
        __m512i idx = _mm512_or_si512(_mm512_slli_epi32(va, 8), vb);
        __m512i w = _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), m,
                                                _mm512_andnot_si512(three, idx),
                                                table, 1);
        __m512i sh = _mm512_slli_epi32(_mm512_and_si512(idx, three), 3);
        __m512i r = _mm512_and_si512(_mm512_srlv_epi32(w, sh), ff);
        _mm_mask_storeu_epi8(y + i, m, _mm512_cvtepi32_epi8(r));
    }
}
#endif
