/* kernels/x86/lut-s8-avx512.c: byte lookup tables with AVX-512 VBMI
 * (built with -mavx512vbmi, mk/intmode.mk; called only on a CPU that has
 * it): vpermi2b looks 64 indices up in 128 entries; the index's top bit
 * picks between the two halves. Masked tails. Pair tables (65536
 * entries) by 32-bit gathers: index i = a * 256 + b reads the aligned
 * word at i & ~3 (never past the table) and keeps byte i & 3. Table
 * sums: the table less its minimum in NB byte planes (NB the bytes its
 * range needs), each looked up as above; vpsadbw adds a plane's 64 bytes
 * into 8 64-bit lanes, and the planes' totals, shifted into place, give
 * the sum modulo 2^64. */
#if defined(__x86_64__)
#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

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

#define INLINE static inline __attribute__((always_inline))

/* The table as slope * (k ^ flip) + low + the NB byte planes bp[NB][256]:
 * a table linear in the code (the int8 codes' byte index with its top bit
 * flipped) leaves a residual of a byte or two, so few lookups. */
struct split {
    uint64_t slope, low;
    uint8_t flip;
    int nb;
    uint8_t bp[8][256];
};

/* Residual d[] of table less slope * (k ^ flip), less its minimum (*low):
 * the bytes its range needs. */
static int residual(const int64_t *table, uint64_t slope, uint8_t flip,
                    __m512i d[32], uint64_t *low)
{
    const __m512i step = _mm512_set_epi64(7, 6, 5, 4, 3, 2, 1, 0);
    const __m512i vf = _mm512_set1_epi64(flip), vs = _mm512_set1_epi64((int64_t)slope);
    __m512i vmin = _mm512_set1_epi64(INT64_MAX);
    for (int k = 0; k < 32; k++) {
        __m512i code = _mm512_xor_si512(
            _mm512_add_epi64(_mm512_set1_epi64(8 * k), step), vf);
        d[k] = _mm512_sub_epi64(_mm512_loadu_si512(table + 8 * k),
                                _mm512_mullo_epi64(code, vs));
        vmin = _mm512_min_epi64(vmin, d[k]);
    }
    *low = (uint64_t)_mm512_reduce_min_epi64(vmin);
    const __m512i vl = _mm512_set1_epi64((int64_t)*low);
    __m512i range = _mm512_setzero_si512();
    for (int k = 0; k < 32; k++) {
        d[k] = _mm512_sub_epi64(d[k], vl);
        range = _mm512_or_si512(range, d[k]);
    }
    uint64_t r = (uint64_t)_mm512_reduce_or_epi64(range);
    int nb = 0;
    while (nb < 8 && r >> (8 * nb))
        nb++;
    return nb;
}

/* The split with the fewest byte planes: no slope, or the slope between
 * the ends of the codes in either order. */
static void split_table(const int64_t *table, struct split *sp)
{
    __m512i d[32], best[32];
    sp->nb = 9;
    for (int c = 0; c < 3; c++) {
        uint8_t flip = c == 2 ? 0x80 : 0;
        /* any slope gives the same sums (modulo 2^64), only its residual's
         * bytes differ */
        int64_t rise = (int64_t)((uint64_t)table[255 ^ flip] - (uint64_t)table[flip]);
        uint64_t slope = c == 0 ? 0 : (uint64_t)(rise / 255);
        uint64_t low;
        int nb = residual(table, slope, flip, d, &low);
        if (nb < sp->nb) {
            sp->nb = nb;
            sp->slope = slope;
            sp->flip = flip;
            sp->low = low;
            memcpy(best, d, sizeof best);
        }
    }
    for (int j = 0; j < sp->nb; j++)
        for (int k = 0; k < 32; k++)
            _mm_storel_epi64((__m128i *)(sp->bp[j] + 8 * k),
                             _mm512_cvtepi64_epi8(
                                 _mm512_srli_epi64(best[k], 8 * (unsigned)j)));
}

/* The sum of v's lanes modulo 2^64 (_mm512_reduce_add_epi64 adds them as
 * signed: undefined where they wrap) */
INLINE uint64_t hsum64(__m512i v)
{
    __m256i h = _mm256_add_epi64(_mm512_castsi512_si256(v),
                                 _mm512_extracti64x4_epi64(v, 1));
    __m128i q = _mm_add_epi64(_mm256_castsi256_si128(h),
                              _mm256_extracti128_si256(h, 1));
    return (uint64_t)_mm_cvtsi128_si64(q) + (uint64_t)_mm_extract_epi64(q, 1);
}

/* s[p] = the plane's sum of the split table, modulo 2^64. */
INLINE void sum_planes(const struct split *sp, const uint8_t *x, size_t area,
                       size_t planes, uint64_t *s, const int nb)
{
    __m512i t[8][4];
    for (int j = 0; j < nb; j++)
        for (int q = 0; q < 4; q++)
            t[j][q] = _mm512_loadu_si512(sp->bp[j] + 64 * q);
    const __m512i zero = _mm512_setzero_si512();
    const __m512i flip = _mm512_set1_epi8((char)sp->flip);
    for (size_t p = 0; p < planes; p++, x += area) {
        __m512i acc[8], codes = zero;
        for (int j = 0; j < nb; j++)
            acc[j] = zero;
        for (size_t i = 0; i < area; i += 64) {
            __mmask64 m = area - i >= 64 ? ~(__mmask64)0
                                         : ((__mmask64)1 << (area - i)) - 1;
            __m512i idx = _mm512_maskz_loadu_epi8(m, x + i);
            /* lanes past the plane (index 0 after the load) add 0 */
            codes = _mm512_add_epi64(codes, _mm512_sad_epu8(
                        _mm512_maskz_mov_epi8(m, _mm512_xor_si512(idx, flip)), zero));
            __mmask64 top = _mm512_movepi8_mask(idx);
            for (int j = 0; j < nb; j++) {
                __m512i lo = _mm512_permutex2var_epi8(t[j][0], idx, t[j][1]);
                __m512i hi = _mm512_permutex2var_epi8(t[j][2], idx, t[j][3]);
                __m512i r = _mm512_maskz_mov_epi8(m, _mm512_mask_blend_epi8(top, lo, hi));
                acc[j] = _mm512_add_epi64(acc[j], _mm512_sad_epu8(r, zero));
            }
        }
        /* lane by lane modulo 2^64, then one horizontal sum */
        __m512i v = _mm512_mullo_epi64(codes, _mm512_set1_epi64((int64_t)sp->slope));
        for (int j = 0; j < nb; j++)
            v = _mm512_add_epi64(v, _mm512_slli_epi64(acc[j], 8 * (unsigned)j));
        s[p] = hsum64(v) + sp->low * (uint64_t)area;
    }
}

void qp_lutsum_planes_vbmi(const int64_t *table, const uint8_t *x,
                           size_t area, size_t planes, int64_t *s);

void qp_lutsum_planes_vbmi(const int64_t *table, const uint8_t *x,
                           size_t area, size_t planes, int64_t *s)
{
    struct split sp;
    split_table(table, &sp);
    uint64_t *u = (uint64_t *)s;
    switch (sp.nb) {
    case 0: sum_planes(&sp, x, area, planes, u, 0); break;
    case 1: sum_planes(&sp, x, area, planes, u, 1); break;
    case 2: sum_planes(&sp, x, area, planes, u, 2); break;
    case 3: sum_planes(&sp, x, area, planes, u, 3); break;
    case 4: sum_planes(&sp, x, area, planes, u, 4); break;
    case 5: sum_planes(&sp, x, area, planes, u, 5); break;
    case 6: sum_planes(&sp, x, area, planes, u, 6); break;
    case 7: sum_planes(&sp, x, area, planes, u, 7); break;
    default: sum_planes(&sp, x, area, planes, u, 8); break;
    }
}
#endif
