/* kernels/gemm-wq.c: GEMM against a weight decoded tile by tile
 * (kernels/gemm-wq.h). */
#include "kernels/gemm-wq.h"

#include <string.h>

#include "core/half.h"
#include "core/parallel.h"
#include "kernels/blas.h"
#include "kernels/dispatch.h"
#include "kernels/gemm-wq-impl.h"

/* A tile of W decoded at a time: TILE_N rows by TILE_K columns of float32
 * (256 KB: fits with OpenBLAS's packed copy in a 1 MB L2). */
#define TILE_N 256
#define TILE_K 256

/* Below this many multiply-adds one thread does the whole product. */
#define PAR_MIN_MACS ((size_t)1 << 21)

enum qp_status qp_wq_init(struct qp_wq *wq, const struct qp_tensor *w,
                          struct qp_error *err)
{
    memset(wq, 0, sizeof *wq);
    if (w->ndim != 2)
        return qp_fail(err, QP_E_UNSUPPORTED, "weight '%s': rank %d, a linear "
                       "weight is [out, in]", w->name, w->ndim);
    wq->t = w;
    wq->dtype = w->dtype;
    wq->n = (size_t)w->shape[0];
    wq->k = (size_t)w->shape[1];
    wq->data = w->data;
    const struct qp_qparams *q = w->qp;
    bool is_float = w->dtype == QP_DTYPE_F32 || w->dtype == QP_DTYPE_BF16 ||
                    w->dtype == QP_DTYPE_F16;
    if (is_float && !q)
        return QP_OK;
    if (!qp_dtype_is_int(w->dtype) || !q)
        return qp_fail(err, QP_E_UNSUPPORTED, "weight '%s': %s%s is not a "
                       "float32/bfloat16/float16 weight or an integer weight "
                       "with scales", w->name, qp_dtype_name(w->dtype),
                       q ? " with scales" : "");
    wq->scale = q->scale;
    wq->zp = q->zero_point;
    if (q->axis < 0 && q->count == 1) {
        wq->gran = QP_WQ_TENSOR;
    } else if (q->axis == 0 && !q->block_size && q->count == wq->n) {
        wq->gran = QP_WQ_ROW;
    } else if (q->axis == 1 && q->block_size > 0 && wq->k) {
        wq->group = (size_t)q->block_size;
        wq->groups = (wq->k + wq->group - 1) / wq->group;
        wq->gran = q->count == wq->n * wq->groups ? QP_WQ_GROUP : QP_WQ_GENERIC;
    } else {
        wq->gran = QP_WQ_GENERIC;
    }
    return QP_OK;
}

/* ---- decoding ------------------------------------------------------------ */

/* Elements [i0, i0 + ni) of row j as integers into q (int32). */
static void row_ints(const struct qp_wq *w, size_t j, size_t i0, size_t ni,
                     int32_t *q)
{
    size_t e = j * w->k + i0;
    switch (w->dtype) {
    case QP_DTYPE_I8: {
        const int8_t *p = (const int8_t *)w->data + e;
        for (size_t c = 0; c < ni; c++)
            q[c] = p[c];
        return;
    }
    case QP_DTYPE_U8: {
        const uint8_t *p = (const uint8_t *)w->data + e;
        for (size_t c = 0; c < ni; c++)
            q[c] = p[c];
        return;
    }
    case QP_DTYPE_I4:
    case QP_DTYPE_U4: {
        /* two per byte, low nibble first; signed values sign-extended */
        const uint8_t *p = w->data;
        int32_t off = w->dtype == QP_DTYPE_I4 ? 8 : 0;
        for (size_t c = 0; c < ni; c++, e++) {
            int32_t v = (p[e >> 1] >> ((e & 1) * 4)) & 15;
            q[c] = off ? ((v ^ 8) - 8) : v;
        }
        return;
    }
    default:
        for (size_t c = 0; c < ni; c++)
            q[c] = qp_packed_get(w->dtype, w->data, e + c);
        return;
    }
}

/* Row j, columns [i0, i0 + ni): a run sharing one scale. */
static void dequant_run(const struct qp_wq *w, size_t j, size_t i0, size_t ni,
                        float s, int32_t z, float *out)
{
    int32_t q[TILE_K];
    for (size_t c0 = 0; c0 < ni; c0 += TILE_K) {
        size_t len = ni - c0 < TILE_K ? ni - c0 : TILE_K;
        row_ints(w, j, i0 + c0, len, q);
        for (size_t c = 0; c < len; c++)
            out[c0 + c] = (float)(q[c] - z) * s;
    }
}

static void decode_row_ref(const struct qp_wq *w, size_t j, size_t i0, size_t ni,
                           float *out)
{
    size_t e = j * w->k + i0;
    switch (w->gran) {
    case QP_WQ_FLOAT:
        if (w->dtype == QP_DTYPE_F32) {
            memcpy(out, (const float *)w->data + e, ni * sizeof *out);
        } else if (w->dtype == QP_DTYPE_BF16) {
            const uint16_t *p = (const uint16_t *)w->data + e;
            for (size_t c = 0; c < ni; c++) {
                uint32_t u = (uint32_t)p[c] << 16;
                memcpy(&out[c], &u, sizeof u);
            }
        } else {
            const uint16_t *p = (const uint16_t *)w->data + e;
            for (size_t c = 0; c < ni; c++)
                out[c] = qp_f16_to_f32(p[c]);
        }
        return;
    case QP_WQ_TENSOR:
        dequant_run(w, j, i0, ni, w->scale[0], w->zp ? w->zp[0] : 0, out);
        return;
    case QP_WQ_ROW:
        dequant_run(w, j, i0, ni, w->scale[j], w->zp ? w->zp[j] : 0, out);
        return;
    case QP_WQ_GROUP:
        for (size_t c = 0; c < ni;) {
            size_t i = i0 + c, gi = i / w->group;
            size_t end = (gi + 1) * w->group;
            size_t len = (end < i0 + ni ? end : i0 + ni) - i;
            size_t si = j * w->groups + gi;
            dequant_run(w, j, i, len, w->scale[si], w->zp ? w->zp[si] : 0,
                        out + c);
            c += len;
        }
        return;
    default:
        qp_tensor_read_f32(w->t, e, ni, out);
        return;
    }
}

#if defined(__x86_64__)
/* The AVX-512 decoders when this CPU runs them and QP_KERNELS allows. */
static bool use_avx512(void)
{
    static int v = -1;
    if (v < 0)
        __atomic_store_n(&v, qp_kern_isa_allowed(QP_KERN_AVX512), __ATOMIC_RELAXED);
    return __atomic_load_n(&v, __ATOMIC_RELAXED) > 0;
}
#endif

void qp_wq_decode(const struct qp_wq *w, size_t j0, size_t nj, size_t i0,
                  size_t ni, float *out, size_t ldo)
{
#if defined(__x86_64__)
    if (use_avx512()) {
        for (size_t r = 0; r < nj; r++)
            if (!qp_wq_decode_row_avx512(w, j0 + r, i0, ni, out + r * ldo))
                decode_row_ref(w, j0 + r, i0, ni, out + r * ldo);
        return;
    }
#endif
    for (size_t r = 0; r < nj; r++)
        decode_row_ref(w, j0 + r, i0, ni, out + r * ldo);
}

/* ---- the product --------------------------------------------------------- */

size_t qp_gemm_wq_scratch_size(const struct qp_wq *w, size_t m, int threads)
{
    (void)m;
    if (w->gran == QP_WQ_FLOAT && w->dtype == QP_DTYPE_F32)
        return 0;
    return (size_t)(threads > 0 ? threads : 1) * TILE_N * TILE_K * sizeof(float);
}

struct wq_job {
    const struct qp_wq *w;
    struct qp_pool *serial;
    const float *x;
    size_t ldx, m;
    const float *bias;
    float *y;
    size_t ldy;
    float *scratch;
};

/* Rows [j0, j1) of W: y[:, j0:j1] tile by tile. */
static void wq_rows(const struct wq_job *jb, size_t j0, size_t j1, float *tile)
{
    const struct qp_wq *w = jb->w;
    for (size_t jt = j0; jt < j1; jt += TILE_N) {
        size_t nb = j1 - jt < TILE_N ? j1 - jt : TILE_N;
        for (size_t kt = 0; kt < w->k; kt += TILE_K) {
            size_t kb = w->k - kt < TILE_K ? w->k - kt : TILE_K;
            qp_wq_decode(w, jt, nb, kt, kb, tile, kb);
            if (jb->m == 1) /* one row (generation): tile . x, a gemv */
                qp_blas_sgemm(jb->serial, false, false, nb, 1, kb, 1.0f, tile,
                              kb, jb->x + kt, 1, kt ? 1.0f : 0.0f, jb->y + jt, 1);
            else
                qp_blas_sgemm(jb->serial, false, true, jb->m, nb, kb, 1.0f,
                              jb->x + kt, jb->ldx, tile, kb, kt ? 1.0f : 0.0f,
                              jb->y + jt, jb->ldy);
        }
        if (!w->k)
            for (size_t r = 0; r < jb->m; r++)
                memset(jb->y + r * jb->ldy + jt, 0, nb * sizeof(float));
    }
}

static void wq_part(void *ctx, int t, int nt)
{
    const struct wq_job *jb = ctx;
    size_t b, e;
    qp_parallel_split(jb->w->n, t, nt, 16, &b, &e);
    if (b < e)
        wq_rows(jb, b, e, jb->scratch + (size_t)t * TILE_N * TILE_K);
}

static void add_bias(const float *bias, size_t m, size_t n, float *y, size_t ldy)
{
    for (size_t r = 0; bias && r < m; r++)
        for (size_t j = 0; j < n; j++)
            y[r * ldy + j] += bias[j];
}

void qp_gemm_wq(struct qp_pool *pool, struct qp_pool *serial,
                const struct qp_wq *w, const float *x, size_t ldx, size_t m,
                const float *bias, float *y, size_t ldy, void *scratch)
{
    if (!m || !w->n)
        return;
    if (w->gran == QP_WQ_FLOAT && w->dtype == QP_DTYPE_F32) {
        qp_blas_sgemm(pool, false, true, m, w->n, w->k, 1.0f, x, ldx, w->data,
                      w->k, 0.0f, y, ldy);
        add_bias(bias, m, w->n, y, ldy);
        return;
    }
    struct wq_job jb = {w, serial, x, ldx, m, bias, y, ldy, scratch};
    int nt = pool ? qp_pool_threads(pool) : 1;
    if (m * w->n * (w->k ? w->k : 1) < PAR_MIN_MACS || w->n < 32)
        nt = 1;
    if (nt > 1)
        qp_pool_run(pool, wq_part, &jb, nt);
    else
        wq_rows(&jb, 0, w->n, jb.scratch);
    add_bias(bias, m, w->n, y, ldy);
}
