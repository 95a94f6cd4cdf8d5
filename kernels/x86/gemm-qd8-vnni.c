/* kernels/x86/gemm-qd8-vnni.c: the 8da4w product with AVX-512 VNNI
 * (kernels/gemm-qd8-impl.h), the same floats as the reference.
 *
 * Layout: per tile of 16 columns, per 8 elements of k, 64 bytes: byte
 * 4l + u holds w[j][8c + u] + 8 in its low nibble and w[j][8c + 4 + u] + 8
 * in its high nibble (j = 16t + l; 8, i.e. weight 0, past k or n). vpdpbusd
 * multiplies these unsigned nibbles by the signed activation bytes; each
 * block's int32 sum then drops 8 * (the block's activation sum), which
 * leaves sum q * w exactly. The float steps run per column lane in the
 * reference's order (-ffp-contract=off: no fused multiply-add). Blocks
 * must hold a multiple of 8 elements (else pack declines). */
#if defined(__x86_64__)
#include <immintrin.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/gemm-qd8-impl.h"

#define MR 8
#define UNROLL _Pragma("GCC unroll 8")

/* packed: tiles x (kp / 8) x 64 bytes of nibbles, then tiles x groups x 16
 * bf16 scales */
static size_t tiles_of(const struct qp_qb4w *b)
{
    return (b->n + QP_QD8_NR - 1) / QP_QD8_NR;
}

static void *vnni_pack(const struct qp_qb4w *b)
{
    if (b->group % 8 || !b->k)
        return NULL;
    size_t tiles = tiles_of(b), chunks = (b->k + 7) / 8;
    size_t wbytes = tiles * chunks * 64;
    size_t sbytes = tiles * b->groups * QP_QD8_NR * sizeof(uint16_t);
    uint8_t *p = aligned_alloc(64, (wbytes + sbytes + 63) / 64 * 64);
    if (!p)
        return NULL;
    for (size_t t = 0; t < tiles; t++)
        for (size_t c = 0; c < chunks; c++) {
            uint8_t *o = p + (t * chunks + c) * 64;
            for (size_t l = 0; l < QP_QD8_NR; l++)
                for (size_t u = 0; u < 4; u++) {
                    size_t j = t * QP_QD8_NR + l, i0 = 8 * c + u, i1 = i0 + 4;
                    int32_t lo = j < b->n && i0 < b->k ? qp_qb4w_get(b, j, i0) : 0;
                    int32_t hi = j < b->n && i1 < b->k ? qp_qb4w_get(b, j, i1) : 0;
                    o[4 * l + u] = (uint8_t)((lo + 8) | (hi + 8) << 4);
                }
        }
    uint16_t *s = (uint16_t *)(p + wbytes);
    for (size_t t = 0; t < tiles; t++)
        for (size_t g = 0; g < b->groups; g++)
            for (size_t l = 0; l < QP_QD8_NR; l++) {
                size_t j = t * QP_QD8_NR + l;
                s[(t * b->groups + g) * QP_QD8_NR + l] =
                    j < b->n ? b->scale[j * b->groups + g] : 0x3f80;
            }
    return p;
}

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
    size_t chunks = (b->k + 7) / 8, j0 = t * QP_QD8_NR;
    const uint8_t *wp = (const uint8_t *)b->packed + t * chunks * 64;
    const uint16_t *sp = (const uint16_t *)((const uint8_t *)b->packed +
                                            tiles_of(b) * chunks * 64) +
                         t * b->groups * QP_QD8_NR;
    size_t nj = b->n - j0 < QP_QD8_NR ? b->n - j0 : QP_QD8_NR;
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
    for (size_t t = t0; t < t1; t++)
        for (size_t r0 = 0; r0 < rows->m; r0 += MR)
            tile_rows(b, rows, t, r0, rows->m - r0 < MR ? rows->m - r0 : MR,
                      bias, y, ldy);
}

const struct qp_qd8_variant qp_qd8_avx512vnni = {
    "avx512-vnni", QP_KERN_AVX512VNNI, vnni_pack, vnni_cols};
#endif
