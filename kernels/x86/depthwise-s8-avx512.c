/* kernels/x86/depthwise-s8-avx512.c: one depthwise output pixel with
 * AVX-512 (kernels/depthwise-s8-ukernel.h): 16 channels per zmm, the last
 * partial vector masked, inputs widened to int32, vpmulld + vpaddd (exact
 * modulo 2^32, like the reference). */
#if defined(__x86_64__)
#include <immintrin.h>

#include "kernels/depthwise-s8-ukernel.h"

static void pixel(size_t n, size_t taps, const uint8_t *const *x,
                  const int32_t *const *w, bool s, int32_t zp,
                  const int32_t *init, int32_t *acc)
{
    const __m512i z = _mm512_set1_epi32(zp);
    for (size_t c = 0; c < n; c += 16) {
        __mmask16 m = n - c >= 16 ? (__mmask16)0xffff
                                  : (__mmask16)((1u << (n - c)) - 1);
        __m512i a = _mm512_maskz_loadu_epi32(m, init + c);
        for (size_t t = 0; t < taps; t++) {
            __m128i b = _mm_maskz_loadu_epi8(m, x[t] + c);
            __m512i v = s ? _mm512_cvtepi8_epi32(b) : _mm512_cvtepu8_epi32(b);
            __m512i f = _mm512_maskz_loadu_epi32(m, w[t] + c);
            a = _mm512_add_epi32(a, _mm512_mullo_epi32(_mm512_sub_epi32(v, z),
                                                       f));
        }
        _mm512_mask_storeu_epi32(acc + c, m, a);
    }
}

/* 16 pixels per zmm, the last partial vector masked; the tap weights
 * broadcast. */
static void row(size_t n, size_t taps, const uint8_t *const *x,
                const int32_t *w, bool s, int32_t init, int32_t *acc)
{
    const __m512i a0 = _mm512_set1_epi32(init);
    for (size_t j = 0; j < n; j += 16) {
        __mmask16 m = n - j >= 16 ? (__mmask16)0xffff
                                  : (__mmask16)((1u << (n - j)) - 1);
        __m512i a = a0;
        for (size_t t = 0; t < taps; t++) {
            __m128i b = _mm_maskz_loadu_epi8(m, x[t] + j);
            __m512i v = s ? _mm512_cvtepi8_epi32(b) : _mm512_cvtepu8_epi32(b);
            a = _mm512_add_epi32(a, _mm512_mullo_epi32(v, _mm512_set1_epi32(w[t])));
        }
        _mm512_mask_storeu_epi32(acc + j, m, a);
    }
}

const struct qp_dw_s8_ukernel qp_dw_s8_avx512 = {
    .name = "avx512",
    .isa = QP_KERN_AVX512,
    .pixel = pixel,
    .row = row,
};
#endif
