/* kernels/x86/eltwise-f32-avx512.c: the elementwise loops of
 * kernels/eltwise-f32.h compiled for AVX-512 (16 floats a vector): the
 * reference's source, so the reference's bits; and exp_shifted, which
 * computes the C library's expf itself, 8 lanes at a time. */
#if defined(__x86_64__)
#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>

/* ---- glibc's expf, vectorized ----
 *
 * glibc 2.28 and later (sysdeps/ieee754/flt-32/e_expf.c; its FMA build on
 * x86-64), in double: x * 32/ln2 = k + r with k rounded to nearest (by
 * adding 1.5 * 2^52) and r = fma(32/ln2, x, -k); 2^(k/32) is a table
 * entry T[k % 32] (2^(i/32), rounded to double, less i << 47 so that adding
 * k << 47 also sets the exponent) and 2^(r/32) the cubic
 * fma(fma(c0, r, c1), r*r, fma(c2, r, 1)); the product rounds to float
 * once. Below log(2^-150) the result is 0, above log(2^128) infinity, a
 * NaN gives x + x. Checked against expf on every float (test-softmax.c
 * checks the inputs that tell the FMA form from the plain one). */
#define EXP_INVLN2N (0x1.71547652b82fep+0 * 32)
#define EXP_SHIFT 0x1.8p+52
#define EXP_C0 (0x1.c6af84b912394p-5 / (32.0 * 32 * 32))
#define EXP_C1 (0x1.ebfce50fac4f3p-3 / (32.0 * 32))
#define EXP_C2 (0x1.62e42ff0c52d6p-1 / 32)

/* T[i] as above: asuint64(2^(i/32)) - (i << 47), from exp2l */
static const uint64_t exp_table[32] = {
    0x3ff0000000000000, 0x3fefd9b0d3158574, 0x3fefb5586cf9890f,
    0x3fef9301d0125b51, 0x3fef72b83c7d517b, 0x3fef54873168b9aa,
    0x3fef387a6e756238, 0x3fef1e9df51fdee1, 0x3fef06fe0a31b715,
    0x3feef1a7373aa9cb, 0x3feedea64c123422, 0x3feece086061892d,
    0x3feebfdad5362a27, 0x3feeb42b569d4f82, 0x3feeab07dd485429,
    0x3feea47eb03a5585, 0x3feea09e667f3bcd, 0x3fee9f75e8ec5f74,
    0x3feea11473eb0187, 0x3feea589994cce13, 0x3feeace5422aa0db,
    0x3feeb737b0cdc5e5, 0x3feec49182a3f090, 0x3feed503b23e255d,
    0x3feee89f995ad3ad, 0x3feeff76f2fb5e47, 0x3fef199bdd85529c,
    0x3fef3720dcef9069, 0x3fef5818dcfba487, 0x3fef7c97337b9b5f,
    0x3fefa4afa2a490da, 0x3fefd0765b6e4540,
};

/* expf of 8 floats */
static inline __m256 expf8(__m256 x, const __m512d *tab)
{
    const __m512d shift = _mm512_set1_pd(EXP_SHIFT);
    const __m512d invln2n = _mm512_set1_pd(EXP_INVLN2N);
    __m512d xd = _mm512_cvtps_pd(x);
    __m512d kd = _mm512_add_pd(_mm512_mul_pd(invln2n, xd), shift);
    __m512i ki = _mm512_castpd_si512(kd);
    kd = _mm512_sub_pd(kd, shift);
    __m512d r = _mm512_fmsub_pd(invln2n, xd, kd);
    /* T[k % 32]: bits 0-3 pick among 16 entries, bit 4 which 16 */
    __m512d t0 = _mm512_permutex2var_pd(tab[0], ki, tab[1]);
    __m512d t1 = _mm512_permutex2var_pd(tab[2], ki, tab[3]);
    __mmask8 upper = _mm512_test_epi64_mask(ki, _mm512_set1_epi64(16));
    __m512i t = _mm512_castpd_si512(_mm512_mask_blend_pd(upper, t0, t1));
    __m512d s = _mm512_castsi512_pd(_mm512_add_epi64(t, _mm512_slli_epi64(ki, 47)));
    __m512d p = _mm512_fmadd_pd(_mm512_set1_pd(EXP_C0), r, _mm512_set1_pd(EXP_C1));
    __m512d y = _mm512_fmadd_pd(_mm512_set1_pd(EXP_C2), r, _mm512_set1_pd(1.0));
    y = _mm512_fmadd_pd(p, _mm512_mul_pd(r, r), y);
    __m256 e = _mm512_cvtpd_ps(_mm512_mul_pd(y, s));
    __mmask8 over = _mm256_cmp_ps_mask(x, _mm256_set1_ps(0x1.62e42ep6f), _CMP_GT_OQ);
    __mmask8 under = _mm256_cmp_ps_mask(x, _mm256_set1_ps(-0x1.9fe368p6f), _CMP_LT_OQ);
    __mmask8 nan = _mm256_cmp_ps_mask(x, x, _CMP_UNORD_Q);
    e = _mm256_mask_mov_ps(e, over, _mm256_set1_ps(__builtin_inff()));
    e = _mm256_mask_mov_ps(e, under, _mm256_setzero_ps());
    return _mm256_mask_mov_ps(e, nan, _mm256_add_ps(x, x));
}

static void exp_shifted_avx512(const float *x, float m, float *y, size_t n)
{
    __m512d tab[4];
    for (int i = 0; i < 4; i++)
        tab[i] = _mm512_castsi512_pd(_mm512_loadu_si512(exp_table + 8 * i));
    __m256 mv = _mm256_set1_ps(m);
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(y + i, expf8(_mm256_sub_ps(_mm256_loadu_ps(x + i), mv), tab));
    if (i < n) {
        __mmask8 k = (__mmask8)((1u << (n - i)) - 1);
        __m256 v = _mm256_sub_ps(_mm256_maskz_loadu_ps(k, x + i), mv);
        _mm256_mask_storeu_ps(y + i, k, expf8(v, tab));
    }
}

#define EW_EXP_SHIFTED exp_shifted_avx512
#define EW_VARIANT qp_ew_f32_avx512
#define EW_NAME "avx512"
#include "kernels/eltwise-f32-body.h"
#endif
