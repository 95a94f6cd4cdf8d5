/* kernels/x86/requant-avx512.c: AVX-512 (F, BW, VL, DQ) requantization, 16
 * accumulators at a time, bit-identical to kernels/ref/requant.c. Same
 * flavors and arithmetic as requant-avx2.c, with native 64-bit arithmetic
 * shifts and mask registers. Tails (n % 16) run the reference, except a
 * single channel's (a plane's), which runs masked. */
#include "kernels/ref/requant-impl.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

#define INLINE static inline __attribute__((always_inline))

bool qp_rq_avx512_covers(enum qp_rq_flavor f)
{
    return !qp_rq_flavor_acc64(f) && (unsigned)f < QP_RQ_COUNT;
}

#define ODD 0xAAAA /* the odd 32-bit lanes */

/* 64-bit lane products of the even and odd 32-bit lanes */
INLINE void mul_pairs(__m512i a, __m512i b, __m512i *even, __m512i *odd)
{
    *even = _mm512_mul_epi32(a, b);
    *odd = _mm512_mul_epi32(_mm512_srli_epi64(a, 32), _mm512_srli_epi64(b, 32));
}

INLINE __m512i high32(__m512i even, __m512i odd)
{
    return _mm512_mask_blend_epi32(ODD, _mm512_srli_epi64(even, 32), odd);
}

INLINE __m512i low32(__m512i even, __m512i odd)
{
    return _mm512_mask_blend_epi32(ODD, even, _mm512_slli_epi64(odd, 32));
}

/* x << l per lane, saturated to int32 where it overflows */
INLINE __m512i shl_sat(__m512i x, __m512i l)
{
    __m512i xs = _mm512_sllv_epi32(x, l);
    __mmask16 ok = _mm512_cmpeq_epi32_mask(_mm512_srav_epi32(xs, l), x);
    __m512i sat = _mm512_xor_si512(_mm512_srai_epi32(x, 31), _mm512_set1_epi32(INT32_MAX));
    return _mm512_mask_blend_epi32(ok, sat, xs);
}

/* See scale_double in requant-avx2.c and the reference. Here the even
 * lanes' high product is (p + 2^30) >> 31, one arithmetic 64-bit shift,
 * and the rounding division by 2^right is |h| + 2^(right-1) shifted
 * (unsigned: at most 2^31 + 2^30), negated back where h < 0: the same
 * round-half-away-from-zero as the reference's remainder and threshold. */
INLINE __m512i scale_double(__m512i x, __m512i m, __m512i sh, bool sat_left,
                              bool sat_mul, bool no_left)
{
    const __m512i zero = _mm512_setzero_si512();
    const __m512i one = _mm512_set1_epi32(1);
    __m512i right, xs = x;
    if (no_left) { /* every shift <= 0 */
        right = _mm512_sub_epi32(zero, sh);
    } else {
        __m512i left = _mm512_max_epi32(sh, zero);
        right = _mm512_max_epi32(_mm512_sub_epi32(zero, sh), zero);
        xs = sat_left ? shl_sat(x, left) : _mm512_sllv_epi32(x, left);
    }
    __m512i pe, po;
    mul_pairs(xs, m, &pe, &po);
    const __m512i q30 = _mm512_set1_epi64(INT64_C(1) << 30);
    const __m512i half = _mm512_set1_epi64(INT64_C(1) << 31);
    __m512i he = _mm512_srai_epi64(_mm512_add_epi64(pe, q30), 31);
    __m512i ho = _mm512_add_epi64(_mm512_add_epi64(po, po), half);
    __m512i h = _mm512_mask_blend_epi32(ODD, he, ho);
    if (sat_mul) {
        const __m512i min = _mm512_set1_epi32(INT32_MIN);
        __mmask16 both = _mm512_cmpeq_epi32_mask(xs, min) & _mm512_cmpeq_epi32_mask(m, min);
        h = _mm512_mask_mov_epi32(h, both, _mm512_set1_epi32(INT32_MAX));
    }
    __m512i bias = _mm512_srli_epi32(_mm512_sllv_epi32(one, right), 1);
    __m512i q = _mm512_srlv_epi32(_mm512_add_epi32(_mm512_abs_epi32(h), bias), right);
    return _mm512_mask_sub_epi32(q, _mm512_cmplt_epi32_mask(h, zero), zero, q);
}

/* (p + 2^(t-1)) >> t in int64, narrowed mod 2^32 (scale_single in the
 * reference) */
INLINE __m512i scale_single(__m512i x, __m512i m, __m512i sh)
{
    const __m512i lo_mask = _mm512_set1_epi64(0xFFFFFFFF);
    const __m512i one = _mm512_set1_epi64(1);
    __m512i total = _mm512_sub_epi32(_mm512_set1_epi32(31), sh);
    __m512i te = _mm512_and_si512(total, lo_mask);
    __m512i to = _mm512_srli_epi64(total, 32);
    __m512i pe, po;
    mul_pairs(x, m, &pe, &po);
    pe = _mm512_add_epi64(pe, _mm512_sllv_epi64(one, _mm512_sub_epi64(te, one)));
    po = _mm512_add_epi64(po, _mm512_sllv_epi64(one, _mm512_sub_epi64(to, one)));
    return low32(_mm512_srav_epi64(pe, te), _mm512_srav_epi64(po, to));
}

INLINE __m512i scale_rndnu(__m512i x, __m512i m, __m512i sh)
{
    const __m512i one = _mm512_set1_epi32(1);
    __m512i xs = _mm512_sub_epi32(_mm512_setzero_si512(), sh);
    __m512i post = _mm512_max_epi32(xs, one);
    __m512i xp = shl_sat(x, _mm512_sub_epi32(post, xs));
    __m512i pe, po;
    mul_pairs(xp, m, &pe, &po);
    __m512i h = high32(_mm512_add_epi64(pe, pe), _mm512_add_epi64(po, po));
    __m512i bit = _mm512_and_si512(_mm512_srav_epi32(h, _mm512_sub_epi32(post, one)), one);
    return _mm512_add_epi32(_mm512_srav_epi32(h, post), bit);
}

struct params {
    __m512i zp, qmin, qmax;
    __m512 lo, hi;
    __m512d dlo, dhi, dzp;
};

INLINE void params_init(struct params *p, const struct qp_rq *rq)
{
    p->zp = _mm512_set1_epi32(rq->zero_point);
    p->qmin = _mm512_set1_epi32(rq->qmin);
    p->qmax = _mm512_set1_epi32(rq->qmax);
    p->lo = _mm512_set1_ps((float)(rq->qmin - rq->zero_point));
    p->hi = _mm512_set1_ps((float)(rq->qmax - rq->zero_point));
    p->dlo = _mm512_set1_pd(rq->qmin);
    p->dhi = _mm512_set1_pd(rq->qmax);
    p->dzp = _mm512_set1_pd(rq->zero_point);
}

INLINE __m512i v_load(const int32_t *a)
{
    return _mm512_loadu_si512(a);
}

INLINE __m512i v_loadi(const int32_t *a, size_t k, bool per)
{
    return per ? v_load(a + k) : _mm512_set1_epi32(a[k]);
}

INLINE __m512i v_add(__m512i a, __m512i b)
{
    return _mm512_add_epi32(a, b);
}

INLINE __m512i clamp(__m512i v, const struct params *p)
{
    return _mm512_min_epi32(_mm512_max_epi32(v, p->qmin), p->qmax);
}

INLINE __m512i requant_float(__m512i x, const float *sc, size_t k, bool per,
                             const struct params *p)
{
    __m512 s = per ? _mm512_loadu_ps(sc + k) : _mm512_set1_ps(sc[k]);
    __m512 f = _mm512_mul_ps(_mm512_cvtepi32_ps(x), s);
    f = _mm512_min_ps(_mm512_max_ps(f, p->lo), p->hi);
    return _mm512_add_epi32(_mm512_cvtps_epi32(f), p->zp);
}

INLINE __m256i requant_double8(__m256i x, __m512d s, const struct params *p)
{
    __m512d d = _mm512_add_pd(_mm512_mul_pd(_mm512_cvtepi32_pd(x), s), p->dzp);
    d = _mm512_min_pd(_mm512_max_pd(d, p->dlo), p->dhi);
    d = _mm512_roundscale_pd(d, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    return _mm512_cvtpd_epi32(d);
}

INLINE __m512i requant_onnx(__m512i x, const double *sc, size_t k, bool per,
                            const struct params *p)
{
    __m512d s0 = per ? _mm512_loadu_pd(sc + k) : _mm512_set1_pd(sc[k]);
    __m512d s1 = per ? _mm512_loadu_pd(sc + k + 8) : s0;
    __m256i lo = requant_double8(_mm512_castsi512_si256(x), s0, p);
    __m256i hi = requant_double8(_mm512_extracti64x4_epi64(x, 1), s1, p);
    return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
}

/* v is clamped inside the output dtype: the narrowing is exact. */
INLINE void store(enum qp_dtype dt, void *out, size_t i, __m512i v)
{
    if (dt == QP_DTYPE_I16)
        _mm256_storeu_si256((__m256i *)((int16_t *)out + i), _mm512_cvtsepi32_epi16(v));
    else if (dt == QP_DTYPE_I8)
        _mm_storeu_si128((__m128i *)((int8_t *)out + i), _mm512_cvtsepi32_epi8(v));
    else
        _mm_storeu_si128((__m128i *)((uint8_t *)out + i), _mm512_cvtusepi32_epi8(v));
}

/* The first r < 16 lanes (store_tail: of a plane's tail). */
INLINE __m512i v_load_tail(const int32_t *a, size_t r)
{
    return _mm512_maskz_loadu_epi32((__mmask16)((1u << r) - 1), a);
}

INLINE void store_tail(enum qp_dtype dt, void *out, size_t i, size_t r, __m512i v)
{
    __mmask16 m = (__mmask16)((1u << r) - 1);
    if (dt == QP_DTYPE_I16)
        _mm512_mask_cvtsepi32_storeu_epi16((int16_t *)out + i, m, v);
    else if (dt == QP_DTYPE_I8)
        _mm512_mask_cvtsepi32_storeu_epi8((int8_t *)out + i, m, v);
    else
        _mm512_mask_cvtusepi32_storeu_epi8((uint8_t *)out + i, m, v);
}

#define V_TAIL
#define VI __m512i
#define LANES 16
#define ROW_FN qp_rq_row_avx512
#include "kernels/x86/requant-simd-row.h"
#endif
