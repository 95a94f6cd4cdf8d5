/* kernels/maxpool-s8.c: 2x2 max pooling of 8-bit row pairs
 * (kernels/pool-s8.h). */
#include "kernels/pool-s8.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

void qp_maxpool2x2_8(const uint8_t *r0, const uint8_t *r1, size_t ow,
                     bool is_signed, uint8_t *y)
{
    size_t i = 0;
#if defined(__SSE2__)
    /* int8 as uint8 with the top bit flipped: the same order; the column
     * pairs as the two bytes of 16-bit lanes, both in 0..255 there */
    const __m128i f = _mm_set1_epi8(is_signed ? (char)0x80 : 0);
    const __m128i low = _mm_set1_epi16(0xFF);
    for (; i + 16 <= ow; i += 16) {
        const __m128i *a = (const __m128i *)(const void *)(r0 + 2 * i);
        const __m128i *b = (const __m128i *)(const void *)(r1 + 2 * i);
        __m128i m0 = _mm_max_epu8(_mm_xor_si128(_mm_loadu_si128(a), f),
                                  _mm_xor_si128(_mm_loadu_si128(b), f));
        __m128i m1 = _mm_max_epu8(_mm_xor_si128(_mm_loadu_si128(a + 1), f),
                                  _mm_xor_si128(_mm_loadu_si128(b + 1), f));
        __m128i e0 = _mm_max_epi16(_mm_and_si128(m0, low), _mm_srli_epi16(m0, 8));
        __m128i e1 = _mm_max_epi16(_mm_and_si128(m1, low), _mm_srli_epi16(m1, 8));
        _mm_storeu_si128((__m128i *)(void *)(y + i),
                         _mm_xor_si128(_mm_packus_epi16(e0, e1), f));
    }
#endif
    uint8_t flip = is_signed ? 0x80 : 0;
    for (; i < ow; i++) {
        uint8_t m = (uint8_t)(r0[2 * i] ^ flip);
        uint8_t v[3] = {(uint8_t)(r0[2 * i + 1] ^ flip), (uint8_t)(r1[2 * i] ^ flip),
                        (uint8_t)(r1[2 * i + 1] ^ flip)};
        for (int k = 0; k < 3; k++)
            m = v[k] > m ? v[k] : m;
        y[i] = m ^ flip;
    }
}
