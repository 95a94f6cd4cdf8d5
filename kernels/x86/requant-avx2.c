/* kernels/x86/requant-avx2.c: AVX2 requantization, 8 accumulators at a
 * time, bit-identical to kernels/ref/requant.c (tests/unit/
 * test-requant-simd.c compares them on random and adversarial inputs).
 *
 * Covered: tflite-double, cmsis-nn-double, gemmlowp, tflite-single,
 * cmsis-nn-single, xnnpack-fp32, ort, xnnpack-rndnu, onnx-ref. The int64
 * flavors run the reference. Tails (n % 8) run the reference too. */
#include "kernels/ref/requant-impl.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

#define INLINE static inline __attribute__((always_inline))

bool qp_rq_avx2_covers(enum qp_rq_flavor f)
{
    return !qp_rq_flavor_acc64(f) && (unsigned)f < QP_RQ_COUNT;
}

/* High 32 bits of the 64-bit lanes of even (products of lanes 0, 2, ...)
 * and odd (lanes 1, 3, ...), back in lane order. */
INLINE __m256i high32(__m256i even, __m256i odd)
{
    return _mm256_blend_epi32(_mm256_srli_epi64(even, 32), odd, 0xAA);
}

/* Low 32 bits, back in lane order. */
INLINE __m256i low32(__m256i even, __m256i odd)
{
    return _mm256_blend_epi32(even, _mm256_slli_epi64(odd, 32), 0xAA);
}

/* Signed 64-bit x >> t (t in [0, 63] per lane) without vpsravq: bias to
 * unsigned, shift logically, remove the bias 2^(63 - t) (exact). */
INLINE __m256i sra64(__m256i x, __m256i t)
{
    const __m256i sign = _mm256_set1_epi64x(INT64_MIN);
    const __m256i one = _mm256_set1_epi64x(1);
    __m256i u = _mm256_srlv_epi64(_mm256_xor_si256(x, sign), t);
    __m256i bias = _mm256_sllv_epi64(one, _mm256_sub_epi64(_mm256_set1_epi64x(63), t));
    return _mm256_sub_epi64(u, bias);
}

/* x << l per lane, saturated to int32 where it overflows (l in [0, 31]). */
INLINE __m256i shl_sat(__m256i x, __m256i l)
{
    __m256i xs = _mm256_sllv_epi32(x, l);
    __m256i ok = _mm256_cmpeq_epi32(_mm256_srav_epi32(xs, l), x);
    __m256i sat = _mm256_xor_si256(_mm256_srai_epi32(x, 31), _mm256_set1_epi32(INT32_MAX));
    return _mm256_blendv_epi8(sat, xs, ok);
}

/* tflite-double (sat_left 0, sat_mul 1), cmsis-nn-double (0, 0),
 * gemmlowp (1, 1): see scale_double/high_mul/div_pot in the reference.
 * no_left: every shift is <= 0 (no left shift to make). */
INLINE __m256i scale_double(__m256i x, __m256i m, __m256i sh, bool sat_left,
                             bool sat_mul, bool no_left)
{
    const __m256i zero = _mm256_setzero_si256();
    __m256i right, xs = x;
    if (no_left) {
        right = _mm256_sub_epi32(zero, sh);
    } else {
        __m256i left = _mm256_max_epi32(sh, zero);
        right = _mm256_max_epi32(_mm256_sub_epi32(zero, sh), zero);
        xs = sat_left ? shl_sat(x, left) : _mm256_sllv_epi32(x, left);
    }
    /* floor((a*b + 2^30) / 2^31) = bits 31..62 of p = a*b + 2^30 (|a*b| <=
     * 2^62: no overflow): the even lanes' p shifted right by 31 (logically:
     * only the low 32 bits are kept), the odd lanes' doubled, whose high
     * half they are. For INT32_MIN^2 that is INT32_MIN, what CMSIS-NN's
     * no_sat product wraps to; gemmlowp and TFLite saturate it below. */
    const __m256i q30 = _mm256_set1_epi64x(INT64_C(1) << 30);
    __m256i pe = _mm256_add_epi64(_mm256_mul_epi32(xs, m), q30);
    __m256i po = _mm256_mul_epi32(_mm256_srli_epi64(xs, 32), _mm256_srli_epi64(m, 32));
    po = _mm256_add_epi64(po, q30);
    __m256i h = _mm256_blend_epi32(_mm256_srli_epi64(pe, 31), _mm256_add_epi64(po, po), 0xAA);
    if (sat_mul) {
        const __m256i min = _mm256_set1_epi32(INT32_MIN);
        __m256i both = _mm256_and_si256(_mm256_cmpeq_epi32(xs, min), _mm256_cmpeq_epi32(m, min));
        h = _mm256_blendv_epi8(h, _mm256_set1_epi32(INT32_MAX), both);
    }
    /* RoundingDivideByPOT, half away from zero: |h| + 2^(right-1) (unsigned,
     * at most 2^31 + 2^30) shifted, with h's sign put back (vpsignd; h = 0
     * gives 0 either way) */
    __m256i bias = _mm256_srli_epi32(_mm256_sllv_epi32(_mm256_set1_epi32(1), right), 1);
    __m256i q = _mm256_srlv_epi32(_mm256_add_epi32(_mm256_abs_epi32(h), bias), right);
    return _mm256_sign_epi32(q, h);
}

/* tflite-single and cmsis-nn-single (scale_single in the reference). */
INLINE __m256i scale_single(__m256i x, __m256i m, __m256i sh)
{
    const __m256i lo_mask = _mm256_set1_epi64x(0xFFFFFFFF);
    const __m256i one = _mm256_set1_epi64x(1);
    __m256i total = _mm256_sub_epi32(_mm256_set1_epi32(31), sh); /* [1, 62] */
    __m256i te = _mm256_and_si256(total, lo_mask);
    __m256i to = _mm256_srli_epi64(total, 32);
    __m256i pe = _mm256_mul_epi32(x, m);
    __m256i po = _mm256_mul_epi32(_mm256_srli_epi64(x, 32), _mm256_srli_epi64(m, 32));
    /* (p + 2^(t-1)) >> t, |p| <= 2^62: no overflow; narrowed mod 2^32 */
    pe = _mm256_add_epi64(pe, _mm256_sllv_epi64(one, _mm256_sub_epi64(te, one)));
    po = _mm256_add_epi64(po, _mm256_sllv_epi64(one, _mm256_sub_epi64(to, one)));
    return low32(sra64(pe, te), sra64(po, to));
}

/* xnnpack-rndnu (scale_rndnu in the reference). */
INLINE __m256i scale_rndnu(__m256i x, __m256i m, __m256i sh)
{
    const __m256i one = _mm256_set1_epi32(1);
    __m256i xs = _mm256_sub_epi32(_mm256_setzero_si256(), sh);
    __m256i post = _mm256_max_epi32(xs, one);
    __m256i pre = _mm256_sub_epi32(post, xs);
    __m256i xp = shl_sat(x, pre);
    /* floor(x' * M / 2^31) = high 32 bits of 2 x' M (|x' M| < 2^62) */
    __m256i pe = _mm256_mul_epi32(xp, m);
    __m256i po = _mm256_mul_epi32(_mm256_srli_epi64(xp, 32), _mm256_srli_epi64(m, 32));
    __m256i h = high32(_mm256_add_epi64(pe, pe), _mm256_add_epi64(po, po));
    __m256i bit = _mm256_and_si256(_mm256_srav_epi32(h, _mm256_sub_epi32(post, one)), one);
    return _mm256_add_epi32(_mm256_srav_epi32(h, post), bit);
}

struct params {
    __m256i zp, qmin, qmax;
    __m256 lo, hi;          /* float clamp, qmin - zp and qmax - zp */
    __m256d dlo, dhi, dzp;  /* onnx-ref */
};

INLINE void params_init(struct params *p, const struct qp_rq *rq)
{
    p->zp = _mm256_set1_epi32(rq->zero_point);
    p->qmin = _mm256_set1_epi32(rq->qmin);
    p->qmax = _mm256_set1_epi32(rq->qmax);
    p->lo = _mm256_set1_ps((float)(rq->qmin - rq->zero_point));
    p->hi = _mm256_set1_ps((float)(rq->qmax - rq->zero_point));
    p->dlo = _mm256_set1_pd(rq->qmin);
    p->dhi = _mm256_set1_pd(rq->qmax);
    p->dzp = _mm256_set1_pd(rq->zero_point);
}

INLINE __m256i v_load(const int32_t *a)
{
    return _mm256_loadu_si256((const __m256i *)a);
}

INLINE __m256i v_loadi(const int32_t *a, size_t k, bool per)
{
    return per ? v_load(a + k) : _mm256_set1_epi32(a[k]);
}

INLINE __m256i v_add(__m256i a, __m256i b)
{
    return _mm256_add_epi32(a, b);
}

INLINE __m256i clamp(__m256i v, const struct params *p)
{
    return _mm256_min_epi32(_mm256_max_epi32(v, p->qmin), p->qmax);
}

/* xnnpack-fp32 / ort: float(x) * scale, clamp, cvtps2dq (round half to
 * even, default MXCSR), + zp */
INLINE __m256i requant_float(__m256i x, const float *sc, size_t k, bool per,
                             const struct params *p)
{
    __m256 s = per ? _mm256_loadu_ps(sc + k) : _mm256_set1_ps(sc[k]);
    __m256 f = _mm256_mul_ps(_mm256_cvtepi32_ps(x), s);
    f = _mm256_min_ps(_mm256_max_ps(f, p->lo), p->hi);
    return _mm256_add_epi32(_mm256_cvtps_epi32(f), p->zp);
}

/* onnx-ref: double product + zp, clip, round half to even */
INLINE __m128i requant_double4(__m128i x, __m256d s, const struct params *p)
{
    __m256d d = _mm256_add_pd(_mm256_mul_pd(_mm256_cvtepi32_pd(x), s), p->dzp);
    d = _mm256_min_pd(_mm256_max_pd(d, p->dlo), p->dhi);
    d = _mm256_round_pd(d, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    return _mm256_cvtpd_epi32(d);
}

INLINE __m256i requant_onnx(__m256i x, const double *sc, size_t k, bool per,
                            const struct params *p)
{
    __m256d s0 = per ? _mm256_loadu_pd(sc + k) : _mm256_set1_pd(sc[k]);
    __m256d s1 = per ? _mm256_loadu_pd(sc + k + 4) : s0;
    __m128i lo = requant_double4(_mm256_castsi256_si128(x), s0, p);
    __m128i hi = requant_double4(_mm256_extracti128_si256(x, 1), s1, p);
    return _mm256_set_m128i(hi, lo);
}

/* v is clamped inside the output dtype: the saturating packs are exact. */
INLINE void store(enum qp_dtype dt, void *out, size_t i, __m256i v)
{
    __m128i w = _mm_packs_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    if (dt == QP_DTYPE_I16)
        _mm_storeu_si128((__m128i *)((int16_t *)out + i), w);
    else if (dt == QP_DTYPE_I8)
        _mm_storel_epi64((__m128i *)((int8_t *)out + i), _mm_packs_epi16(w, w));
    else
        _mm_storel_epi64((__m128i *)((uint8_t *)out + i), _mm_packus_epi16(w, w));
}

#define VI __m256i
#define LANES 8
#define ROW_FN qp_rq_row_avx2
#include "kernels/x86/requant-simd-row.h"
#endif
