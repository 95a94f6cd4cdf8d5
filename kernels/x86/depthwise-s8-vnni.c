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

#define INLINE static inline __attribute__((always_inline))

/* The bytes p + t (t < 4) under pixel p < m of row + off, loaded with
 * mask lm, gathered into pixel p's lane (int8 + 128 when s). */
INLINE __m512i quads(const uint8_t *row, size_t off, __mmask32 lm, __m512i idx,
                     bool s)
{
    __m256i b = _mm256_maskz_loadu_epi8(lm, row + off);
    __m512i v = _mm512_permutexvar_epi8(idx, _mm512_castsi256_si512(b));
    return s ? _mm512_xor_si512(v, _mm512_set1_epi8((char)0x80)) : v;
}

/* The row loop for kh rows of `groups` quads of taps: constants in the
 * specialisations below, so the taps' weights stay in registers and a
 * vector whose bytes all lie inside the row loads them under one mask. */
#define MAX_QUADS 32
INLINE void rows_body(size_t n, size_t kh, size_t groups,
                      const uint8_t *const *rows, size_t len,
                      const int32_t *wq, bool s, int32_t init, int32_t *acc)
{
    uint8_t pat[64];
    for (int i = 0; i < 64; i++)
        pat[i] = (uint8_t)(i / 4 + i % 4); /* lane p, byte t: input p + t */
    const __m512i idx = _mm512_loadu_si512(pat);
    const __m512i a0 = _mm512_set1_epi32(init);
    /* the taps' weights, broadcast once (acc may alias wq as far as the
     * compiler knows: loads in the loop would stay there) */
    __m512i w[MAX_QUADS];
    bool held = kh * groups <= MAX_QUADS;
    for (size_t q = 0; held && q < kh * groups; q++)
        w[q] = _mm512_set1_epi32(wq[q]);
#define W(q) (held ? w[q] : _mm512_set1_epi32(wq[q]))
    /* pixels 16 at a time whose last quad's 19 bytes are in the row */
    size_t full = len >= 4 * (groups - 1) + 19 ? len - 4 * (groups - 1) - 19 + 1 : 0;
    size_t j = 0;
    for (; j + 16 <= n && j < full; j += 16) {
        __m512i a = a0;
        for (size_t y = 0; y < kh; y++)
            for (size_t g = 0; g < groups; g++)
                a = _mm512_dpbusd_epi32(a, quads(rows[y], j + 4 * g,
                                                 (__mmask32)0x7FFFF, idx, s),
                                        W(y * groups + g));
        _mm512_storeu_si512(acc + j, a);
    }
    for (; j < n; j += 16) {
        size_t m = n - j < 16 ? n - j : 16;
        __m512i a = a0;
        for (size_t y = 0; y < kh; y++)
            for (size_t g = 0; g < groups; g++) {
                /* bytes p + t for p < m, t < 4, inside the row */
                size_t off = j + 4 * g, need = m + 3;
                size_t have = len > off ? len - off : 0;
                need = need < have ? need : have;
                __mmask32 lm = (__mmask32)(((uint64_t)1 << need) - 1);
                a = _mm512_dpbusd_epi32(a, quads(rows[y], off, lm, idx, s),
                                        W(y * groups + g));
            }
        __mmask16 sm = (__mmask16)((1u << m) - 1);
        _mm512_mask_storeu_epi32(acc + j, sm, a);
    }
#undef W
}

#define ROWS(KH, G, S)                                                         \
    rows_body(n, KH, G, rows, len, wq, S, init, acc)

void qp_dw_s8_rows4(size_t n, size_t kh, size_t kw, const uint8_t *const *rows,
                    size_t len, const int32_t *wq, bool s, int32_t init,
                    int32_t *acc)
{
    size_t groups = (kw + 3) / 4;
    /* the usual kernels (3x3, 5x5, 7x7) with constant loops */
    if (kh == 3 && groups == 1)
        s ? ROWS(3, 1, true) : ROWS(3, 1, false);
    else if (kh == 5 && groups == 2)
        s ? ROWS(5, 2, true) : ROWS(5, 2, false);
    else if (kh == 7 && groups == 2)
        s ? ROWS(7, 2, true) : ROWS(7, 2, false);
    else /* any other: weights from wq where they do not fit registers */
        ROWS(kh, groups, s);
}
#endif
