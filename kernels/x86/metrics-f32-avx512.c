/* kernels/x86/metrics-f32-avx512.c: the fused metrics pass, 16 pairs a step.
 *
 * Each step loads 16 floats of each side, masks out pairs where either is
 * NaN/Inf (counting them), widens both halves to double and updates the
 * five sums with FMAs and the two maxima; lanes are folded at the end. The
 * maxima are computed from the same doubles as the reference, so they are
 * identical to it; the sums differ only in the order of additions. */
#if defined(__x86_64__)
#include <immintrin.h>
#include <math.h>

#include "kernels/metrics-f32.h"

struct acc {
    __m512d s[QP_MS_COUNT][2]; /* [sum][low/high half] */
    __m512d maxe[2];
    __m512 maxr;
};

static inline __m512d hi_half(__m512 v)
{
    return _mm512_cvtps_pd(_mm256_castpd_ps(
        _mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
}

static inline void half(struct acc *a, int h, __m512d r, __m512d t,
                        __m512d absmask)
{
    __m512d e = _mm512_sub_pd(r, t);
    a->s[QP_MS_REF2][h] = _mm512_fmadd_pd(r, r, a->s[QP_MS_REF2][h]);
    a->s[QP_MS_TEST2][h] = _mm512_fmadd_pd(t, t, a->s[QP_MS_TEST2][h]);
    a->s[QP_MS_DOT][h] = _mm512_fmadd_pd(r, t, a->s[QP_MS_DOT][h]);
    a->s[QP_MS_ERR2][h] = _mm512_fmadd_pd(e, e, a->s[QP_MS_ERR2][h]);
    __m512d ae = _mm512_and_pd(e, absmask);
    a->s[QP_MS_ABS_ERR][h] = _mm512_add_pd(ae, a->s[QP_MS_ABS_ERR][h]);
    a->maxe[h] = _mm512_max_pd(a->maxe[h], ae);
}

static void add(struct qp_metrics_f32 *m, const float *ref,
                const float *test, size_t n)
{
    const __m512 absf = _mm512_castsi512_ps(_mm512_set1_epi32(0x7fffffff));
    const __m512d absd =
        _mm512_castsi512_pd(_mm512_set1_epi64(0x7fffffffffffffffLL));
    const __m512 inf = _mm512_set1_ps(INFINITY);
    struct acc a;
    for (int k = 0; k < QP_MS_COUNT; k++)
        a.s[k][0] = a.s[k][1] = _mm512_setzero_pd();
    a.maxe[0] = a.maxe[1] = _mm512_setzero_pd();
    a.maxr = _mm512_setzero_ps();
    uint64_t count = 0, nft = 0, nfr = 0;
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m512 r = _mm512_loadu_ps(ref + i), t = _mm512_loadu_ps(test + i);
        __m512 ra = _mm512_and_ps(r, absf);
        __mmask16 fr = _mm512_cmp_ps_mask(ra, inf, _CMP_LT_OQ);
        __mmask16 ft = _mm512_cmp_ps_mask(_mm512_and_ps(t, absf), inf,
                                          _CMP_LT_OQ);
        __mmask16 both = fr & ft;
        if (both == 0xffff) {
            count += 16;
        } else {
            count += (uint64_t)__builtin_popcount(both);
            nfr += 16 - (uint64_t)__builtin_popcount(fr);
            nft += 16 - (uint64_t)__builtin_popcount(ft);
            r = _mm512_maskz_mov_ps(both, r);
            t = _mm512_maskz_mov_ps(both, t);
            ra = _mm512_maskz_mov_ps(fr, ra);
        }
        a.maxr = _mm512_max_ps(a.maxr, ra);
        half(&a, 0, _mm512_cvtps_pd(_mm512_castps512_ps256(r)),
             _mm512_cvtps_pd(_mm512_castps512_ps256(t)), absd);
        half(&a, 1, hi_half(r), hi_half(t), absd);
    }
    double s[QP_MS_COUNT];
    for (int k = 0; k < QP_MS_COUNT; k++)
        s[k] = _mm512_reduce_add_pd(_mm512_add_pd(a.s[k][0], a.s[k][1]));
    double maxe = _mm512_reduce_max_pd(_mm512_max_pd(a.maxe[0], a.maxe[1]));
    double maxr = _mm512_reduce_max_ps(a.maxr);
    qp_metrics_f32_fold(m, count, nft, nfr, s, maxe, maxr);
    if (i < n)
        qp_metrics_f32_add_ref(m, ref + i, test + i, n - i);
}

const struct qp_metrics_f32_variant qp_metrics_f32_avx512 = {
    "avx512", QP_KERN_AVX512, add};
#else
/* not x86-64: nothing to build (ISO C wants a declaration) */
typedef int qp_metrics_avx512_unused;
#endif
