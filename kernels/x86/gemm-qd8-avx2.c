/* kernels/x86/gemm-qd8-avx2.c: the 8da4w product with AVX2
 * (kernels/gemm-qd8-impl.h), the same floats as the reference, for CPUs
 * without AVX-512 VNNI. The layout is qp_qd8_pack16's; each 16-column tile
 * is two halves of 8 columns (32 bytes per 8 elements of k). vpmaddubsw
 * multiplies the unsigned nibbles (weight + 8, at most 15) by the signed
 * codes and adds pairs (|sum| <= 2 * 15 * 128: no saturation); vpmaddwd
 * by ones adds the pairs of each column: vpdpbusd's sums, exactly. The
 * block's code sum times 8 is taken off, then the float steps run per
 * column in the reference's order (-ffp-contract=off). */
#if defined(__x86_64__)
#include <immintrin.h>
#include <string.h>

#include "kernels/gemm-qd8-impl.h"

#define MR 2
#define UNROLL _Pragma("GCC unroll 4")

static inline __m256 bf16x8(const uint16_t *s)
{
    __m128i h = _mm_loadu_si128((const __m128i *)s);
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

/* sum over 4 consecutive bytes per 32-bit lane of u8 w times s8 a */
static inline __m256i dot4(__m256i w, __m256i a, __m256i ones)
{
    return _mm256_madd_epi16(_mm256_maddubs_epi16(w, a), ones);
}

/* Rows [r0, r0 + mr) (mr <= MR) of tile t. */
static void tile_rows(const struct qp_qb4w *b, const struct qp_qd8_rows *rows,
                      size_t t, size_t r0, size_t mr, const float *bias,
                      float *y, size_t ldy)
{
    size_t chunks = (b->k + 7) / 8, j0 = t * QP_QD8_NR, nj;
    const uint8_t *wp;
    const uint16_t *sp;
    qp_qd8_tile(b, t, &wp, &sp, &nj);
    float ksum[QP_QD8_NR] = {0}, bv[QP_QD8_NR] = {0};
    memcpy(ksum, b->ksum + j0, nj * sizeof *ksum);
    if (bias)
        memcpy(bv, bias + j0, nj * sizeof *bv);
    __m256 out[MR][2];
    const int8_t *q[MR];
    UNROLL
    for (size_t r = 0; r < MR; r++) {
        size_t rr = r < mr ? r0 + r : r0;
        q[r] = rows->q + rr * rows->kp;
        __m256 z = _mm256_set1_ps((float)rows->p[rr].zp);
        out[r][0] = _mm256_mul_ps(_mm256_loadu_ps(ksum), z);
        out[r][1] = _mm256_mul_ps(_mm256_loadu_ps(ksum + 8), z);
    }
    const __m256i nib = _mm256_set1_epi8(0x0f), ones = _mm256_set1_epi16(1);
    size_t gch = b->group / 8;
    for (size_t g = 0; g < b->groups; g++) {
        size_t c0 = g * gch, c1 = c0 + gch < chunks ? c0 + gch : chunks;
        __m256i acc[MR][2];
        UNROLL
        for (size_t r = 0; r < MR; r++)
            acc[r][0] = acc[r][1] = _mm256_setzero_si256();
        for (size_t c = c0; c < c1; c++) {
            __m256i w0 = _mm256_load_si256((const __m256i *)(wp + c * 64));
            __m256i w1 = _mm256_load_si256((const __m256i *)(wp + c * 64 + 32));
            __m256i lo0 = _mm256_and_si256(w0, nib), lo1 = _mm256_and_si256(w1, nib);
            __m256i hi0 = _mm256_and_si256(_mm256_srli_epi16(w0, 4), nib);
            __m256i hi1 = _mm256_and_si256(_mm256_srli_epi16(w1, 4), nib);
            UNROLL
            for (size_t r = 0; r < MR; r++) {
                int32_t a0, a1;
                memcpy(&a0, q[r] + 8 * c, 4);
                memcpy(&a1, q[r] + 8 * c + 4, 4);
                __m256i va0 = _mm256_set1_epi32(a0), va1 = _mm256_set1_epi32(a1);
                acc[r][0] = _mm256_add_epi32(acc[r][0], dot4(lo0, va0, ones));
                acc[r][1] = _mm256_add_epi32(acc[r][1], dot4(lo1, va0, ones));
                acc[r][0] = _mm256_add_epi32(acc[r][0], dot4(hi0, va1, ones));
                acc[r][1] = _mm256_add_epi32(acc[r][1], dot4(hi1, va1, ones));
            }
        }
        __m256 s0 = bf16x8(sp + g * QP_QD8_NR), s1 = bf16x8(sp + g * QP_QD8_NR + 8);
        UNROLL
        for (size_t r = 0; r < MR; r++) {
            size_t rr = r < mr ? r0 + r : r0;
            __m256i a8 = _mm256_set1_epi32(8 * rows->asum[rr * b->groups + g]);
            __m256 f0 = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(acc[r][0], a8)), s0);
            __m256 f1 = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(acc[r][1], a8)), s1);
            out[r][0] = _mm256_add_ps(out[r][0], f0);
            out[r][1] = _mm256_add_ps(out[r][1], f1);
        }
    }
    for (size_t r = 0; r < mr; r++) {
        size_t rr = r0 + r;
        __m256 sx = _mm256_set1_ps(rows->p[rr].scale);
        float v[QP_QD8_NR];
        __m256 v0 = _mm256_mul_ps(out[r][0], sx), v1 = _mm256_mul_ps(out[r][1], sx);
        if (bias) {
            v0 = _mm256_add_ps(v0, _mm256_loadu_ps(bv));
            v1 = _mm256_add_ps(v1, _mm256_loadu_ps(bv + 8));
        }
        _mm256_storeu_ps(v, v0);
        _mm256_storeu_ps(v + 8, v1);
        memcpy(y + rr * ldy + j0, v, nj * sizeof *v);
    }
}

static void avx2_cols(const struct qp_qb4w *b, const struct qp_qd8_rows *rows,
                      size_t t0, size_t t1, const float *bias, float *y,
                      size_t ldy)
{
    qp_qd8_cols_by(b, rows, t0, t1, bias, y, ldy, MR, tile_rows);
}

const struct qp_qd8_variant qp_qd8_avx2 = {"avx2", QP_KERN_AVX2, qp_qd8_pack16,
                                           avx2_cols};
#endif
