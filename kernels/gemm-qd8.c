/* kernels/gemm-qd8.c: the 8da4w driver (kernels/gemm-qd8.h): weight
 * preparation (bf16 block scales, XNNPACK's ksum, the variant's packed
 * layout), row quantization, columns split over threads. */
#include "kernels/gemm-qd8.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/half.h"
#include "core/parallel.h"
#include "kernels/gemm-qd8-impl.h"

/* The variant the dispatch table chose (the reference when QP_KERNELS
 * says so or the CPU has no VNNI). */
static const struct qp_qd8_variant *variant(void)
{
    const struct qp_qd8_variant *v = qp_kern_table()->gemm_qd8;
    return v ? v : &qp_qd8_ref;
}

enum qp_status qp_qb4w_init(struct qp_qb4w *b, const struct qp_wq *wq,
                            struct qp_error *err)
{
    memset(b, 0, sizeof *b);
    const char *name = wq->t ? wq->t->name : "?";
    if (wq->dtype != QP_DTYPE_I4 || wq->gran != QP_WQ_GROUP)
        return qp_fail(err, QP_E_UNSUPPORTED, "weight '%s': 8da4w takes int4 "
                       "group-wise weights (e.g. w4g32), not %s%s", name,
                       qp_dtype_name(wq->dtype),
                       wq->gran == QP_WQ_GROUP ? "" : " without groups");
    for (size_t i = 0; wq->zp && i < wq->n * wq->groups; i++)
        if (wq->zp[i])
            return qp_fail(err, QP_E_UNSUPPORTED, "weight '%s': 8da4w weights "
                           "are symmetric (zero point 0), block %zu has %d",
                           name, i, (int)wq->zp[i]);
    b->n = wq->n;
    b->k = wq->k;
    b->group = wq->group;
    b->groups = wq->groups;
    b->w = wq->data;
    b->xnnpack_shape = b->k % b->group == 0 && b->group % 32 == 0;
    size_t ns = b->n * b->groups;
    b->scale = malloc((ns ? ns : 1) * sizeof *b->scale);
    b->ksum = malloc((b->n ? b->n : 1) * sizeof *b->ksum);
    if (!b->scale || !b->ksum) {
        qp_qb4w_release(b);
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    }
    for (size_t i = 0; i < ns; i++) {
        b->scale[i] = qp_f32_to_bf16(wq->scale[i]);
        float s = qp_qd8_bf16(b->scale[i]);
        if (!(s > 0.0f) || !isnormal(s)) {
            enum qp_status st = qp_fail(err, QP_E_UNSUPPORTED, "weight '%s': "
                                        "block scale %g of row %zu block %zu is "
                                        "not a positive normal bfloat16, which "
                                        "XNNPACK refuses", name,
                                        (double)wq->scale[i], i / b->groups,
                                        i % b->groups);
            qp_qb4w_release(b);
            return st;
        }
    }
    /* step 3: pairs in order, each pair's sum times its block's scale */
    for (size_t j = 0; j < b->n; j++) {
        float ks = 0.0f;
        const uint8_t *row = b->w + j * b->k / 2; /* when k is even */
        for (size_t i = 0; i < b->k; i += 2) {
            int32_t s2;
            if (b->k % 2 == 0) /* the pair is one byte */
                s2 = (((row[i / 2] & 15) ^ 8) - 8) + (((row[i / 2] >> 4) ^ 8) - 8);
            else
                s2 = qp_qb4w_get(b, j, i) +
                     (i + 1 < b->k ? qp_qb4w_get(b, j, i + 1) : 0);
            float t = (float)s2;
            t *= qp_qd8_bf16(b->scale[j * b->groups + i / b->group]);
            ks -= t;
        }
        b->ksum[j] = ks;
    }
    const struct qp_qd8_variant *v = variant();
    b->packed = v->pack ? v->pack(b) : NULL;
    return QP_OK;
}

void qp_qb4w_release(struct qp_qb4w *b)
{
    free(b->scale);
    free(b->ksum);
    free(b->packed);
    b->scale = NULL;
    b->ksum = NULL;
    b->packed = NULL;
}

/* packed: tiles x (kp / 8) x 64 bytes of nibbles, then tiles x groups x 16
 * bf16 scales */
size_t qp_qd8_tiles(const struct qp_qb4w *b)
{
    return (b->n + QP_QD8_NR - 1) / QP_QD8_NR;
}

void *qp_qd8_pack16(const struct qp_qb4w *b)
{
    if (b->group % 8 || !b->k)
        return NULL;
    size_t tiles = qp_qd8_tiles(b), chunks = (b->k + 7) / 8;
    size_t wbytes = tiles * chunks * 64;
    size_t sbytes = tiles * b->groups * QP_QD8_NR * sizeof(uint16_t);
    uint8_t *p = aligned_alloc(64, (wbytes + sbytes + 63) / 64 * 64);
    if (!p)
        return NULL;
    for (size_t t = 0; t < tiles; t++)
        for (size_t c = 0; c < chunks; c++) {
            uint8_t *o = p + (t * chunks + c) * 64;
            for (size_t l = 0; l < QP_QD8_NR; l++) {
                size_t j = t * QP_QD8_NR + l;
                if (j < b->n && b->k % 8 == 0) { /* 4 whole bytes */
                    uint32_t x;
                    memcpy(&x, b->w + (j * b->k + 8 * c) / 2, 4);
                    x ^= 0x88888888u; /* two's complement nibble + 8 */
                    o[4 * l + 0] = (uint8_t)((x & 0xf) | (x >> 16 & 0xf) << 4);
                    o[4 * l + 1] = (uint8_t)((x >> 4 & 0xf) | (x >> 16 & 0xf0));
                    o[4 * l + 2] = (uint8_t)((x >> 8 & 0xf) | (x >> 24 & 0xf) << 4);
                    o[4 * l + 3] = (uint8_t)((x >> 12 & 0xf) | (x >> 24 & 0xf0));
                    continue;
                }
                for (size_t u = 0; u < 4; u++) {
                    size_t i0 = 8 * c + u, i1 = i0 + 4;
                    int32_t lo = j < b->n && i0 < b->k ? qp_qb4w_get(b, j, i0) : 0;
                    int32_t hi = j < b->n && i1 < b->k ? qp_qb4w_get(b, j, i1) : 0;
                    o[4 * l + u] = (uint8_t)((lo + 8) | (hi + 8) << 4);
                }
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

static size_t kp_of(const struct qp_qb4w *b)
{
    return (b->k + 7) / 8 * 8;
}

static size_t up64(size_t n)
{
    return (n + 63) / 64 * 64;
}

size_t qp_gemm_qd8_scratch_size(const struct qp_qb4w *b, size_t m)
{
    return up64(m * kp_of(b)) + up64(m * sizeof(struct qp_qd8_params)) +
           up64(m * b->groups * sizeof(int32_t));
}

struct quant_job {
    const struct qp_qb4w *b;
    const float *x;
    size_t ldx, m;
    int8_t *q;
    size_t kp;
    struct qp_qd8_params *p;
    int32_t *asum;
};

/* Step 1 for rows of thread t's share, and each block's sum of codes. */
static void quant_part(void *ctx, int t, int nt)
{
    const struct quant_job *j = ctx;
    const struct qp_qb4w *b = j->b;
    size_t r0, r1;
    qp_parallel_split(j->m, t, nt, 1, &r0, &r1);
    for (size_t r = r0; r < r1; r++) {
        int8_t *qr = j->q + r * j->kp;
        if (b->k)
            qp_qd8_quantize_row(j->x + r * j->ldx, b->k, &j->p[r], qr);
        else
            qp_qd8_params_from_range(0.0f, 0.0f, &j->p[r]);
        memset(qr + b->k, 0, j->kp - b->k);
        for (size_t g = 0; g < b->groups; g++) {
            size_t i1 = (g + 1) * b->group < b->k ? (g + 1) * b->group : b->k;
            int32_t a = 0;
            for (size_t i = g * b->group; i < i1; i++)
                a += qr[i];
            j->asum[r * b->groups + g] = a;
        }
    }
}

struct qd8_job {
    const struct qp_qb4w *b;
    const struct qp_qd8_variant *v;
    struct qp_qd8_rows rows;
    const float *bias;
    float *y;
    size_t ldy;
};

static void qd8_part(void *ctx, int t, int nt)
{
    const struct qd8_job *jb = ctx;
    size_t tiles = (jb->b->n + QP_QD8_NR - 1) / QP_QD8_NR, t0, t1;
    qp_parallel_split(tiles, t, nt, 1, &t0, &t1);
    if (t0 < t1)
        jb->v->cols(jb->b, &jb->rows, t0, t1, jb->bias, jb->y, jb->ldy);
}

void qp_gemm_qd8_run(const struct qp_qd8_variant *v, struct qp_pool *pool,
                     const struct qp_qb4w *b, const float *x, size_t ldx,
                     size_t m, const float *bias, float *y, size_t ldy,
                     void *scratch)
{
    if (!m || !b->n)
        return;
    size_t kp = kp_of(b);
    char *s = scratch;
    int8_t *q = (int8_t *)s;
    struct qp_qd8_params *p = (struct qp_qd8_params *)(s + up64(m * kp));
    int32_t *asum = (int32_t *)((char *)p + up64(m * sizeof *p));
    struct quant_job qj = {b, x, ldx, m, q, kp, p, asum};
    int nt = pool ? qp_pool_threads(pool) : 1;
    if (m * b->n * (b->k ? b->k : 1) < ((size_t)1 << 20))
        nt = 1;
    if (nt > 1 && m > 1)
        qp_pool_run(pool, quant_part, &qj, nt);
    else
        quant_part(&qj, 0, 1);
    if (v->pack && !b->packed)
        v = &qp_qd8_ref;
    struct qd8_job jb = {b, v, {q, kp, p, asum, m}, bias, y, ldy};
    if (nt > 1)
        qp_pool_run(pool, qd8_part, &jb, nt);
    else
        qd8_part(&jb, 0, 1);
}

void qp_gemm_qd8(struct qp_pool *pool, const struct qp_qb4w *b, const float *x,
                 size_t ldx, size_t m, const float *bias, float *y, size_t ldy,
                 void *scratch)
{
    qp_gemm_qd8_run(b->packed ? variant() : &qp_qd8_ref, pool, b, x, ldx, m,
                    bias, y, ldy, scratch);
}
