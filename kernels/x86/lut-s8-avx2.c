/* kernels/x86/lut-s8-avx2.c: byte lookup tables with AVX2, for CPUs
 * without VBMI (called only on a CPU that has AVX2). vpshufb looks 32
 * indices up in 16 entries and gives 0 where an index has its top bit set.
 * The table is cut into 16 rows of 16 entries, R_k = table[16k .. 16k+15],
 * and stored as differences D_0 = R_0, D_k = R_k ^ R_(k-1) (k < 8), and
 * the same for the upper half (D_8 = R_8, D_k = R_k ^ R_(k-1) for k > 8).
 *
 * Lower half, x < 128: step k looks x - 16k up in D_k, the subtraction
 * saturating as signed bytes. x - 16k >= -112 never saturates; its top bit
 * is clear exactly when x >= 16k, and its low nibble is x's. So the steps
 * k <= x / 16 contribute, and their XOR telescopes to R_(x/16)[x & 15] =
 * table[x]. An x >= 128 is negative as a signed byte and stays negative
 * (saturating): it contributes nothing. The upper half runs the same on x
 * with its top bit flipped, with D_8 .. D_15, so only x >= 128 contribute;
 * the result is the XOR of both halves. 16 lookups, 14 subtractions and
 * 16 XORs for 32 bytes, 64 bytes a step; the tail goes through a 64-byte
 * buffer (y may be x). */
#if defined(__x86_64__)
#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define INLINE static inline __attribute__((always_inline))

void qp_lut8_apply_avx2(const uint8_t *table, const uint8_t *x, size_t n,
                        uint8_t *y);

/* table[x] for the 32 bytes of *a and of *b, from the difference rows
 * d[16]; the two share each row */
INLINE void look64(const __m256i *d, __m256i *a, __m256i *b)
{
    const __m256i sixteen = _mm256_set1_epi8(16), top = _mm256_set1_epi8(-128);
    __m256i la = *a, ha = _mm256_xor_si256(la, top);
    __m256i lb = *b, hb = _mm256_xor_si256(lb, top);
    __m256i ra = _mm256_xor_si256(_mm256_shuffle_epi8(d[0], la),
                                  _mm256_shuffle_epi8(d[8], ha));
    __m256i rb = _mm256_xor_si256(_mm256_shuffle_epi8(d[0], lb),
                                  _mm256_shuffle_epi8(d[8], hb));
    for (int k = 1; k < 8; k++) {
        la = _mm256_subs_epi8(la, sixteen);
        ha = _mm256_subs_epi8(ha, sixteen);
        lb = _mm256_subs_epi8(lb, sixteen);
        hb = _mm256_subs_epi8(hb, sixteen);
        __m256i dl = d[k], dh = d[8 + k];
        ra = _mm256_xor_si256(ra, _mm256_xor_si256(_mm256_shuffle_epi8(dl, la),
                                                   _mm256_shuffle_epi8(dh, ha)));
        rb = _mm256_xor_si256(rb, _mm256_xor_si256(_mm256_shuffle_epi8(dl, lb),
                                                   _mm256_shuffle_epi8(dh, hb)));
    }
    *a = ra;
    *b = rb;
}

/* y[0..63] = table[x[0..63]] (y may be x) */
INLINE void step64(const __m256i *d, const uint8_t *x, uint8_t *y)
{
    __m256i a = _mm256_loadu_si256((const __m256i *)x);
    __m256i b = _mm256_loadu_si256((const __m256i *)(x + 32));
    look64(d, &a, &b);
    _mm256_storeu_si256((__m256i *)y, a);
    _mm256_storeu_si256((__m256i *)(y + 32), b);
}

void qp_lut8_apply_avx2(const uint8_t *table, const uint8_t *x, size_t n,
                        uint8_t *y)
{
    __m256i d[16];
    for (int k = 0; k < 16; k++) {
        __m128i r = _mm_loadu_si128((const __m128i *)(table + 16 * k));
        if (k % 8)
            r = _mm_xor_si128(r, _mm_loadu_si128((const __m128i *)(table + 16 * k - 16)));
        d[k] = _mm256_broadcastsi128_si256(r);
    }
    size_t i = 0;
    for (; i + 64 <= n; i += 64)
        step64(d, x + i, y + i);
    if (i < n) { /* the last 1..63 bytes through a zeroed buffer */
        uint8_t buf[64] = {0};
        memcpy(buf, x + i, n - i);
        step64(d, buf, buf);
        memcpy(y + i, buf, n - i);
    }
}
#endif
