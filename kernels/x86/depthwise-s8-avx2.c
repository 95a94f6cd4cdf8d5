/* kernels/x86/depthwise-s8-avx2.c: one depthwise output pixel with AVX2
 * (kernels/depthwise-s8-ukernel.h): 8 channels per ymm, inputs widened to
 * int32, vpmulld + vpaddd (exact modulo 2^32, like the reference). */
#if defined(__x86_64__)
#include <immintrin.h>
#include <string.h>

#include "kernels/depthwise-s8-ukernel.h"

static __m256i load8(const uint8_t *p, bool s)
{
    __m128i v = _mm_loadl_epi64((const __m128i *)p);
    return s ? _mm256_cvtepi8_epi32(v) : _mm256_cvtepu8_epi32(v);
}

static void pixel(size_t n, size_t taps, const uint8_t *const *x,
                  const int32_t *const *w, bool s, int32_t zp,
                  const int32_t *init, int32_t *acc)
{
    const __m256i z = _mm256_set1_epi32(zp);
    size_t c = 0;
    for (; c + 8 <= n; c += 8) {
        __m256i a = _mm256_loadu_si256((const __m256i *)(init + c));
        for (size_t t = 0; t < taps; t++) {
            __m256i v = _mm256_sub_epi32(load8(x[t] + c, s), z);
            __m256i f = _mm256_loadu_si256((const __m256i *)(w[t] + c));
            a = _mm256_add_epi32(a, _mm256_mullo_epi32(v, f));
        }
        _mm256_storeu_si256((__m256i *)(acc + c), a);
    }
    qp_dw_s8_pixel_tail(c, n, taps, x, w, s, zp, init, acc);
}

/* 8 pixels per ymm; the tap weights broadcast. */
static void row(size_t n, size_t taps, const uint8_t *const *x,
                const int32_t *w, bool s, int32_t init, int32_t *acc)
{
    size_t j = 0;
    for (; j + 8 <= n; j += 8) {
        __m256i a = _mm256_set1_epi32(init);
        for (size_t t = 0; t < taps; t++)
            a = _mm256_add_epi32(a, _mm256_mullo_epi32(load8(x[t] + j, s),
                                                       _mm256_set1_epi32(w[t])));
        _mm256_storeu_si256((__m256i *)(acc + j), a);
    }
    qp_dw_s8_row_tail(j, n, taps, x, w, s, init, acc);
}

const struct qp_dw_s8_ukernel qp_dw_s8_avx2 = {
    .name = "avx2",
    .isa = QP_KERN_AVX2,
    .pixel = pixel,
    .row = row,
};
#endif
