/* kernels/gemm-qd8-impl.h: the interface between the 8da4w driver
 * (kernels/gemm-qd8.c: row quantization, weight packing, threads) and its
 * variants: the reference (kernels/ref/gemm-qd8.c) and the AVX-512 VNNI
 * one (kernels/x86/gemm-qd8-vnni.c). Internal to kernels/. */
#ifndef QP_KERNELS_GEMM_QD8_IMPL_H
#define QP_KERNELS_GEMM_QD8_IMPL_H

#include "kernels/dispatch.h"
#include "kernels/gemm-qd8.h"

/* Columns per tile of the packed layout. */
#define QP_QD8_NR 16

/* The quantized rows a variant reads: row r is q[r * kp + i] (kp = k
 * rounded up to 8, zero beyond k), its parameters p[r] and, for the
 * packed layout, asum[r * groups + g] = the sum of its q over block g. */
struct qp_qd8_rows {
    const int8_t *q;
    size_t kp;
    const struct qp_qd8_params *p;
    const int32_t *asum;
    size_t m;
};

struct qp_qd8_variant {
    const char *name;
    enum qp_kern_isa isa;
    /* Packs b's weight for `cols` (NULL: reads b->w); returns the buffer
     * (malloc'd) or NULL when out of memory or b's shape is not one it
     * takes (then the reference runs). */
    void *(*pack)(const struct qp_qb4w *b);
    /* y[r * ldy + j] for r < rows->m and j in tiles [t0, t1) of
     * QP_QD8_NR columns (the last may be partial), steps 3-4 of
     * kernels/gemm-qd8.h. */
    void (*cols)(const struct qp_qb4w *b, const struct qp_qd8_rows *rows,
                 size_t t0, size_t t1, const float *bias, float *y,
                 size_t ldy);
};

/* The SIMD variants' layout of b's weight (malloc'd, 64-byte aligned), or
 * NULL when out of memory or b's blocks are not a multiple of 8 elements:
 * per tile t of QP_QD8_NR columns, per 8 elements c of k, 64 bytes, byte
 * 4l + u holding w[j][8c + u] + 8 in its low nibble and w[j][8c + 4 + u] + 8
 * in its high one (j = 16t + l; 8, weight 0, past k or n); then per tile
 * and block, 16 bf16 scales (1.0 past n). qp_qd8_tiles(b) tiles. */
void *qp_qd8_pack16(const struct qp_qb4w *b);
size_t qp_qd8_tiles(const struct qp_qb4w *b);

/* Tile t of b's packed layout: its weight bytes, its scales, its columns. */
static inline void qp_qd8_tile(const struct qp_qb4w *b, size_t t,
                               const uint8_t **w, const uint16_t **s, size_t *nj)
{
    size_t chunks = (b->k + 7) / 8, j0 = t * QP_QD8_NR;
    *w = (const uint8_t *)b->packed + t * chunks * 64;
    *s = (const uint16_t *)((const uint8_t *)b->packed +
                            qp_qd8_tiles(b) * chunks * 64) +
         t * b->groups * QP_QD8_NR;
    *nj = b->n - j0 < QP_QD8_NR ? b->n - j0 : QP_QD8_NR;
}

/* A SIMD variant's tile function: rows [r0, r0 + mr) of tile t. */
typedef void (*qp_qd8_tile_fn)(const struct qp_qb4w *b,
                               const struct qp_qd8_rows *rows, size_t t,
                               size_t r0, size_t mr, const float *bias,
                               float *y, size_t ldy);

/* The `cols` of a SIMD variant: tiles [t0, t1), rows in runs of mr. */
static inline void qp_qd8_cols_by(const struct qp_qb4w *b,
                                  const struct qp_qd8_rows *rows, size_t t0,
                                  size_t t1, const float *bias, float *y,
                                  size_t ldy, size_t mr, qp_qd8_tile_fn tile)
{
    for (size_t t = t0; t < t1; t++)
        for (size_t r0 = 0; r0 < rows->m; r0 += mr)
            tile(b, rows, t, r0, rows->m - r0 < mr ? rows->m - r0 : mr, bias,
                 y, ldy);
}

/* The reference (pack NULL). */
extern const struct qp_qd8_variant qp_qd8_ref;
#if defined(__x86_64__)
extern const struct qp_qd8_variant qp_qd8_avx512vnni;
extern const struct qp_qd8_variant qp_qd8_avx2;
#endif

/* qp_gemm_qd8 with variant v (its packed layout in b->packed, made by
 * v->pack; without one the reference runs): tests compare variants. */
void qp_gemm_qd8_run(const struct qp_qd8_variant *v, struct qp_pool *pool,
                     const struct qp_qb4w *b, const float *x, size_t ldx,
                     size_t m, const float *bias, float *y, size_t ldy,
                     void *scratch);

/* b's weight element (j, i) as an integer in [-8, 7]. */
static inline int32_t qp_qb4w_get(const struct qp_qb4w *b, size_t j, size_t i)
{
    size_t e = j * b->k + i;
    int32_t v = (b->w[e >> 1] >> ((e & 1) * 4)) & 15;
    return (v ^ 8) - 8;
}

/* A bf16 bit pattern as float (exact). */
static inline float qp_qd8_bf16(uint16_t h)
{
    union { uint32_t u; float f; } c = {(uint32_t)h << 16};
    return c.f;
}

#endif
