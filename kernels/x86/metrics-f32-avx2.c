/* kernels/x86/metrics-f32-avx2.c: the fused metrics pass, 8 pairs a step.
 *
 * The AVX2 twin of metrics-f32-avx512.c: pairs with a NaN/Inf on either side
 * are zeroed (and counted) through compare masks, both halves are widened
 * to double, the five sums use FMAs and the maxima the same doubles as the
 * reference. */
#if defined(__x86_64__)
#include <immintrin.h>
#include <math.h>

#include "kernels/metrics-f32.h"

struct acc {
    __m256d s[QP_MS_COUNT][2]; /* [sum][low/high half] */
    __m256d maxe[2];
    __m256 maxr;
};

static inline void half(struct acc *a, int h, __m256d r, __m256d t,
                        __m256d absmask)
{
    __m256d e = _mm256_sub_pd(r, t);
    a->s[QP_MS_REF2][h] = _mm256_fmadd_pd(r, r, a->s[QP_MS_REF2][h]);
    a->s[QP_MS_TEST2][h] = _mm256_fmadd_pd(t, t, a->s[QP_MS_TEST2][h]);
    a->s[QP_MS_DOT][h] = _mm256_fmadd_pd(r, t, a->s[QP_MS_DOT][h]);
    a->s[QP_MS_ERR2][h] = _mm256_fmadd_pd(e, e, a->s[QP_MS_ERR2][h]);
    __m256d ae = _mm256_and_pd(e, absmask);
    a->s[QP_MS_ABS_ERR][h] = _mm256_add_pd(ae, a->s[QP_MS_ABS_ERR][h]);
    a->maxe[h] = _mm256_max_pd(a->maxe[h], ae);
}

static inline double hsum(__m256d v)
{
    __m128d s = _mm_add_pd(_mm256_castpd256_pd128(v), _mm256_extractf128_pd(v, 1));
    return _mm_cvtsd_f64(_mm_add_sd(s, _mm_unpackhi_pd(s, s)));
}

static inline double hmax(__m256d v)
{
    __m128d s = _mm_max_pd(_mm256_castpd256_pd128(v), _mm256_extractf128_pd(v, 1));
    return _mm_cvtsd_f64(_mm_max_sd(s, _mm_unpackhi_pd(s, s)));
}

static void add(struct qp_metrics_f32 *m, const float *ref,
                const float *test, size_t n)
{
    const __m256 absf = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    const __m256d absd =
        _mm256_castsi256_pd(_mm256_set1_epi64x(0x7fffffffffffffffLL));
    const __m256 inf = _mm256_set1_ps(INFINITY);
    struct acc a;
    for (int k = 0; k < QP_MS_COUNT; k++)
        a.s[k][0] = a.s[k][1] = _mm256_setzero_pd();
    a.maxe[0] = a.maxe[1] = _mm256_setzero_pd();
    a.maxr = _mm256_setzero_ps();
    uint64_t count = 0, nft = 0, nfr = 0;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 r = _mm256_loadu_ps(ref + i), t = _mm256_loadu_ps(test + i);
        __m256 ra = _mm256_and_ps(r, absf);
        __m256 fr = _mm256_cmp_ps(ra, inf, _CMP_LT_OQ);
        __m256 ft = _mm256_cmp_ps(_mm256_and_ps(t, absf), inf, _CMP_LT_OQ);
        __m256 both = _mm256_and_ps(fr, ft);
        int mb = _mm256_movemask_ps(both);
        if (mb == 0xff) {
            count += 8;
        } else {
            count += (uint64_t)__builtin_popcount((unsigned)mb);
            nfr += 8 - (uint64_t)__builtin_popcount((unsigned)_mm256_movemask_ps(fr));
            nft += 8 - (uint64_t)__builtin_popcount((unsigned)_mm256_movemask_ps(ft));
            r = _mm256_and_ps(r, both);
            t = _mm256_and_ps(t, both);
            ra = _mm256_and_ps(ra, fr);
        }
        a.maxr = _mm256_max_ps(a.maxr, ra);
        half(&a, 0, _mm256_cvtps_pd(_mm256_castps256_ps128(r)),
             _mm256_cvtps_pd(_mm256_castps256_ps128(t)), absd);
        half(&a, 1, _mm256_cvtps_pd(_mm256_extractf128_ps(r, 1)),
             _mm256_cvtps_pd(_mm256_extractf128_ps(t, 1)), absd);
    }
    double s[QP_MS_COUNT];
    for (int k = 0; k < QP_MS_COUNT; k++)
        s[k] = hsum(_mm256_add_pd(a.s[k][0], a.s[k][1]));
    double maxe = hmax(_mm256_max_pd(a.maxe[0], a.maxe[1]));
    __m256d mr = _mm256_max_pd(_mm256_cvtps_pd(_mm256_castps256_ps128(a.maxr)),
                               _mm256_cvtps_pd(_mm256_extractf128_ps(a.maxr, 1)));
    double maxr = hmax(mr);
    qp_metrics_f32_fold(m, count, nft, nfr, s, maxe, maxr);
    if (i < n)
        qp_metrics_f32_add_ref(m, ref + i, test + i, n - i);
}

const struct qp_metrics_f32_variant qp_metrics_f32_avx2 = {"avx2", QP_KERN_AVX2,
                                                           add};
#else
/* not x86-64: nothing to build (ISO C wants a declaration) */
typedef int qp_metrics_avx2_unused;
#endif
