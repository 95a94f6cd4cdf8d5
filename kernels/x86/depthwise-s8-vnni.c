/* kernels/x86/depthwise-s8-vnni.c: the depthwise row of an NCHW plane
 * with AVX-512 VNNI and VBMI (kernels/depthwise-s8-ukernel.h): for 16
 * output pixels, four horizontal taps at a time are one vpdpbusd: the
 * row's bytes p..p+3 under pixel p gathered into its 32-bit lane (one
 * vpermb of a 19-byte load), times the four taps' weights (int8) in every
 * lane. Exact modulo 2^32 (vpdpbusd, not the saturating vpdpbusds), like
 * the reference. */
#if defined(__x86_64__)
#include <immintrin.h>

#include "kernels/depthwise-s8-ukernel.h"

bool qp_dw_s8_rows4_available(void)
{
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vnni") &&
           __builtin_cpu_supports("avx512vbmi");
}

void qp_dw_s8_rows4(size_t n, size_t kh, size_t kw, const uint8_t *const *rows,
                    size_t len, const int32_t *wq, bool s, int32_t init,
                    int32_t *acc)
{
    uint8_t pat[64];
    for (int i = 0; i < 64; i++)
        pat[i] = (uint8_t)(i / 4 + i % 4); /* lane p, byte t: input p + t */
    const __m512i idx = _mm512_loadu_si512(pat);
    const __m512i flip = _mm512_set1_epi8((char)0x80);
    const __m512i a0 = _mm512_set1_epi32(init);
    size_t groups = (kw + 3) / 4;
    for (size_t j = 0; j < n; j += 16) {
        size_t m = n - j < 16 ? n - j : 16;
        __m512i a = a0;
        for (size_t y = 0; y < kh; y++)
            for (size_t g = 0; g < groups; g++) {
                /* bytes p + t for p < m, t < 4, inside the row */
                size_t off = j + 4 * g, need = m + 3;
                size_t have = len > off ? len - off : 0;
                need = need < have ? need : have;
                __mmask32 lm = (__mmask32)(((uint64_t)1 << need) - 1);
                __m256i b = _mm256_maskz_loadu_epi8(lm, rows[y] + off);
                __m512i v = _mm512_permutexvar_epi8(idx, _mm512_castsi256_si512(b));
                if (s)
                    v = _mm512_xor_si512(v, flip); /* int8 + 128 as uint8 */
                a = _mm512_dpbusd_epi32(a, v, _mm512_set1_epi32(wq[y * groups + g]));
            }
        __mmask16 sm = (__mmask16)((1u << m) - 1);
        _mm512_mask_storeu_epi32(acc + j, sm, a);
    }
}
#endif
