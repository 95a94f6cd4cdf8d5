/* kernels/x86/gemm-qd8-vnni.c: the 8da4w product with AVX-512 VNNI
 * (kernels/gemm-qd8-impl.h), the same floats as the reference.
 *
 * Layout: qp_qd8_pack16's (kernels/gemm-qd8-impl.h). vpdpbusd
 * multiplies these unsigned nibbles by the signed activation bytes; each
 * block's int32 sum then drops 8 * (the block's activation sum), which
 * leaves sum q * w exactly. The float steps run per column lane in the
 * reference's order (-ffp-contract=off: no fused multiply-add). */
#if defined(__x86_64__)
#include <immintrin.h>
#include <string.h>

#include "kernels/gemm-qd8-impl.h"

#define MR 8
#define UNROLL _Pragma("GCC unroll 8")

static inline __m512 bf16x16(const uint16_t *s)
{
    __m256i h = _mm256_loadu_si256((const __m256i *)s);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
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
    __mmask16 mask = (__mmask16)((1u << nj) - 1);
    __m512 ks = _mm512_maskz_loadu_ps(mask, b->ksum + j0);
    __m512 out[MR];
    const int8_t *q[MR];
    UNROLL
    for (size_t r = 0; r < MR; r++) {
        size_t rr = r < mr ? r0 + r : r0;
        q[r] = rows->q + rr * rows->kp;
        out[r] = _mm512_mul_ps(ks, _mm512_set1_ps((float)rows->p[rr].zp));
    }
    const __m512i nib = _mm512_set1_epi8(0x0f);
    size_t gch = b->group / 8;
    for (size_t g = 0; g < b->groups; g++) {
        size_t c0 = g * gch, c1 = c0 + gch < chunks ? c0 + gch : chunks;
        __m512i acc[MR];
        UNROLL
        for (size_t r = 0; r < MR; r++)
            acc[r] = _mm512_setzero_si512();
        for (size_t c = c0; c < c1; c++) {
            __m512i wv = _mm512_load_si512((const void *)(wp + c * 64));
            __m512i lo = _mm512_and_si512(wv, nib);
            __m512i hi = _mm512_and_si512(_mm512_srli_epi16(wv, 4), nib);
            UNROLL
            for (size_t r = 0; r < MR; r++) {
                int32_t a0, a1;
                memcpy(&a0, q[r] + 8 * c, 4);
                memcpy(&a1, q[r] + 8 * c + 4, 4);
                acc[r] = _mm512_dpbusd_epi32(acc[r], lo, _mm512_set1_epi32(a0));
                acc[r] = _mm512_dpbusd_epi32(acc[r], hi, _mm512_set1_epi32(a1));
            }
        }
        __m512 s = bf16x16(sp + g * QP_QD8_NR);
        UNROLL
        for (size_t r = 0; r < MR; r++) {
            size_t rr = r < mr ? r0 + r : r0;
            int32_t a8 = 8 * rows->asum[rr * b->groups + g];
            __m512i v = _mm512_sub_epi32(acc[r], _mm512_set1_epi32(a8));
            __m512 f = _mm512_mul_ps(_mm512_cvtepi32_ps(v), s);
            out[r] = _mm512_add_ps(out[r], f);
        }
    }
    __m512 bv = bias ? _mm512_maskz_loadu_ps(mask, bias + j0) : _mm512_setzero_ps();
    for (size_t r = 0; r < mr; r++) {
        size_t rr = r0 + r;
        __m512 v = _mm512_mul_ps(out[r], _mm512_set1_ps(rows->p[rr].scale));
        if (bias)
            v = _mm512_add_ps(v, bv);
        _mm512_mask_storeu_ps(y + rr * ldy + j0, mask, v);
    }
}

static void vnni_cols(const struct qp_qb4w *b, const struct qp_qd8_rows *rows,
                      size_t t0, size_t t1, const float *bias, float *y,
                      size_t ldy)
{
    qp_qd8_cols_by(b, rows, t0, t1, bias, y, ldy, MR, tile_rows);
}

const struct qp_qd8_variant qp_qd8_avx512vnni = {
    "avx512-vnni", QP_KERN_AVX512VNNI, qp_qd8_pack16, vnni_cols};
#endif
