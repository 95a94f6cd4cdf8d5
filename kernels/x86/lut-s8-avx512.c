/* kernels/x86/lut-s8-avx512.c: byte lookup tables with AVX-512 VBMI
 * (built with -mavx512vbmi, mk/intmode.mk; called only on a CPU that has
 * it): vpermi2b looks 64 indices up in 128 entries; the index's top bit
 * picks between the two halves. Masked tails. */
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
#endif
