/* kernels/x86/depthwise-s8-avx2.c: one depthwise output pixel with AVX2
 * (kernels/depthwise-s8-ukernel.h): 8 channels per ymm, inputs widened to
 * int32, vpmulld + vpaddd (exact modulo 2^32, like the reference); rows of
 * a plane 16 pixels at a time with vpmaddwd on pairs of taps where the
 * weights are int16 (as they are but for out-of-range zero points). */
#if defined(__x86_64__)
#include <immintrin.h>
#include <stdint.h>
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

/* 16 input bytes widened to int16. */
static __m256i load16(const uint8_t *p, bool s)
{
    __m128i v = _mm_loadu_si128((const __m128i *)p);
    return s ? _mm256_cvtepi8_epi16(v) : _mm256_cvtepu8_epi16(v);
}

/* Every tap weight an int16: then two taps' products (|x| <= 255, so
 * each below 2^23) sum exactly in one vpmaddwd lane. */
static bool taps_fit16(const int32_t *w, size_t taps)
{
    for (size_t t = 0; t < taps; t++)
        if (w[t] < INT16_MIN || w[t] > INT16_MAX)
            return false;
    return true;
}

/* The weights of taps t and t + 1 (0: none) as the int16 pair vpmaddwd
 * multiplies x[t], x[t + 1] by. */
static __m256i pair(int32_t lo, int32_t hi)
{
    return _mm256_set1_epi32((int32_t)((uint32_t)(uint16_t)lo |
                                       (uint32_t)(uint16_t)hi << 16));
}

/* 8 pixels per ymm from pixel j on, the tap weights broadcast (vpmulld,
 * any int32 weight). */
static void row32(size_t j, size_t n, size_t taps, const uint8_t *const *x,
                  const int32_t *w, bool s, int32_t init, int32_t *acc)
{
    for (; j + 8 <= n; j += 8) {
        __m256i a = _mm256_set1_epi32(init);
        for (size_t t = 0; t < taps; t++)
            a = _mm256_add_epi32(a, _mm256_mullo_epi32(load8(x[t] + j, s),
                                                       _mm256_set1_epi32(w[t])));
        _mm256_storeu_si256((__m256i *)(acc + j), a);
    }
    qp_dw_s8_row_tail(j, n, taps, x, w, s, init, acc);
}

/* 16 pixels per step when the weights are int16: two taps at a time,
 * their inputs interleaved per pixel, one vpmaddwd (exact: the same sums
 * as vpmulld) where vpmulld took one tap; the rest by row32. */
static void row(size_t n, size_t taps, const uint8_t *const *x,
                const int32_t *w, bool s, int32_t init, int32_t *acc)
{
    size_t j = 0;
    if (taps_fit16(w, taps))
        for (; j + 16 <= n; j += 16) {
            /* lo: pixels 0-3 and 8-11, hi: 4-7 and 12-15 (unpack works
             * in 128-bit halves) */
            __m256i lo = _mm256_set1_epi32(init), hi = lo;
            for (size_t t = 0; t < taps; t += 2) {
                bool two = t + 1 < taps;
                __m256i a = load16(x[t] + j, s);
                __m256i b = two ? load16(x[t + 1] + j, s) : _mm256_setzero_si256();
                __m256i wp = pair(w[t], two ? w[t + 1] : 0);
                __m256i plo = _mm256_unpacklo_epi16(a, b);
                __m256i phi = _mm256_unpackhi_epi16(a, b);
                lo = _mm256_add_epi32(lo, _mm256_madd_epi16(plo, wp));
                hi = _mm256_add_epi32(hi, _mm256_madd_epi16(phi, wp));
            }
            _mm256_storeu_si256((__m256i *)(acc + j),
                                _mm256_permute2x128_si256(lo, hi, 0x20));
            _mm256_storeu_si256((__m256i *)(acc + j + 8),
                                _mm256_permute2x128_si256(lo, hi, 0x31));
        }
    row32(j, n, taps, x, w, s, init, acc);
}

const struct qp_dw_s8_ukernel qp_dw_s8_avx2 = {
    .name = "avx2",
    .isa = QP_KERN_AVX2,
    .pixel = pixel,
    .row = row,
};
#endif
