/* kernels/gemm-s8.c: the GEMM driver around the SIMD micro-kernels:
 * packing, blocking, threads and the requantization epilogue. The
 * arithmetic it must reproduce is kernels/ref/gemm-s8.c.
 *
 * The micro-kernels compute sum_k a_u * b_s with a_u unsigned and b_s
 * signed bytes (VNNI's vpdpbusd), or with a_u signed too (a_signed: NEON's
 * SDOT). With
 *   a_u = a + ca   (unsigned a_u: ca = 128 for int8 A: a ^ 0x80, 0 for
 *                   uint8 A; signed a_u: ca = 0 for int8 A, -128 for
 *                   uint8 A: a ^ 0x80)
 *   b_s = b - cb   (cb = 128 for uint8 B: b ^ 0x80; 0 for int8 B)
 *   alpha = -ca - a_zp,   beta[n] = cb - b_zp[n]
 * the reference sum is, modulo 2^32,
 *   bias + sum (a - a_zp)(b - b_zp) = bias + sum (a_u + alpha)(b_s + beta)
 *     = sum a_u b_s                                   (micro-kernel)
 *     + bias + alpha sum_k b_s + k alpha beta          (colterm[n], prepare)
 *     + beta sum_k a_u                                 (per row; only when
 *                                                       some beta != 0)
 * Every identity holds in the ring of integers modulo 2^32, so the result
 * is bit-identical to the reference even where int32 sums wrap.
 *
 * Blocking: a thread takes rows in blocks of mb (a multiple of the tile
 * height mr), packs them once, then for every panel of nr columns runs the
 * tiles of the block against that panel (the panel stays in L1/L2 while
 * the block's rows pass over it) into an int32 band [mb][npad], which is
 * requantized row by row while it is still in cache. */
#include "kernels/gemm-s8.h"

#include <stdlib.h>
#include <string.h>

#include "core/parallel.h"
#include "core/size.h"
#include "kernels/gemm-s8-ukernel.h"
#include "kernels/kern-util.h"

#define ALIGN 64
/* int32 band per thread, bytes: rows * npad * 4 stays about this size */
#define BAND_BYTES (96 * 1024)
/* a tile with at most this many valid rows runs the one-row kernel per
 * row: the full tile would spend its time on rows that are padding */
#define FEW_ROWS 2
/* below this many multiply-adds a second thread costs more than it saves */
#define MIN_PARALLEL_MACS (1u << 21)

static size_t round_up(size_t x, size_t a)
{
    return (x + a - 1) / a * a;
}

static void *align_ptr(void *p)
{
    return (void *)(((uintptr_t)p + ALIGN - 1) & ~(uintptr_t)(ALIGN - 1));
}

/* The top-bit flip that turns A of dtype a_dtype into the micro-kernel's
 * packed A: int8 into unsigned, or uint8 into signed (a_signed). */
static uint8_t a_flip(const struct qp_gemm_s8_ukernel *uk,
                      enum qp_dtype a_dtype)
{
    return (a_dtype == QP_DTYPE_I8) != (uk->a_signed != 0) ? 0x80 : 0;
}

/* Packed A byte v as the micro-kernel reads it (a_u above). */
static int32_t a_value(const struct qp_gemm_s8_ukernel *uk, uint8_t v)
{
    return uk->a_signed ? (int8_t)v : v;
}

void qp_gemm_s8_release(struct qp_gemm_s8 *g)
{
    free(g->b);
    free(g->bias);
    free(g->b_zero_point);
    free(g->bpack);
    free(g->colterm);
    free(g->beta);
    memset(g, 0, sizeof *g);
}

const char *qp_gemm_s8_variant(const struct qp_gemm_s8 *g)
{
    return g->uk ? g->uk->name : "ref";
}

/* Packs B [n][k] into panels [npad/nr][kp/kr][nr][kr] of signed values
 * b ^ flip (s8 or s16), zero beyond n and k. */
static void pack_b(struct qp_gemm_s8 *g, const uint8_t *b, size_t ldb)
{
    const struct qp_gemm_s8_ukernel *uk = g->uk;
    uint8_t flip = g->b_dtype == QP_DTYPE_U8 ? 0x80 : 0;
    size_t groups = g->kp / uk->kr;
    for (size_t j = 0; j < g->npad; j++) {
        size_t panel = j / uk->nr, col = j % uk->nr;
        for (size_t kk = 0; kk < g->kp; kk++) {
            int32_t v = 0;
            if (j < g->n && kk < g->k)
                v = (int8_t)(b[j * ldb + kk] ^ flip);
            size_t e = ((panel * groups + kk / uk->kr) * uk->nr + col) *
                           uk->kr + kk % uk->kr;
            if (uk->b_elem == 1)
                ((int8_t *)g->bpack)[e] = (int8_t)v;
            else
                ((int16_t *)g->bpack)[e] = (int16_t)v;
        }
    }
}

static enum qp_status prepare_ukernel(struct qp_gemm_s8 *g,
                                      const struct qp_gemm_s8_params *p,
                                      const uint8_t *b, size_t ldb,
                                      const int32_t *bzp, struct qp_error *err)
{
    const struct qp_gemm_s8_ukernel *uk = g->uk;
    g->kp = round_up(p->k, uk->kr);
    g->npad = round_up(p->n, uk->nr);
    size_t bytes;
    if (qp_size_mul(g->npad, g->kp, &bytes) ||
        qp_size_mul(bytes, uk->b_elem, &bytes))
        return qp_fail(err, QP_E_OVERFLOW, "gemm: packed weights of %zu x "
                       "%zu overflow", p->n, p->k);
    g->bpack = aligned_alloc(ALIGN, round_up(bytes, ALIGN));
    g->colterm = calloc(g->npad, sizeof *g->colterm);
    if (!g->bpack || !g->colterm)
        return qp_fail(err, QP_E_NOMEM, "gemm: out of memory packing %zu "
                       "bytes of weights", bytes);
    pack_b(g, b, ldb);

    /* ca = a_u - a, the same for every byte: its value at a = 0 */
    uint32_t ca = (uint32_t)a_value(uk, a_flip(uk, p->a_dtype));
    uint32_t cb = p->b_dtype == QP_DTYPE_U8 ? 128 : 0;
    uint8_t flip = p->b_dtype == QP_DTYPE_U8 ? 0x80 : 0;
    uint32_t alpha = 0u - ca - (uint32_t)p->a_zero_point;
    bool any_beta = false;
    for (size_t j = 0; j < p->n; j++)
        any_beta |= (cb - (uint32_t)bzp[j]) != 0;
    if (any_beta && !(g->beta = malloc(p->n * sizeof *g->beta)))
        return qp_fail(err, QP_E_NOMEM, "gemm: out of memory");
    for (size_t j = 0; j < p->n; j++) {
        uint32_t beta = cb - (uint32_t)bzp[j], bsum = 0;
        for (size_t kk = 0; kk < p->k; kk++)
            bsum += (uint32_t)(int32_t)(int8_t)(b[j * ldb + kk] ^ flip);
        uint32_t t = p->bias ? (uint32_t)p->bias[j] : 0;
        t += alpha * bsum + (uint32_t)p->k * alpha * beta;
        g->colterm[j] = (int32_t)t;
        if (g->beta)
            g->beta[j] = (int32_t)beta;
    }
    /* rows per block: an int32 band of about BAND_BYTES */
    size_t mb = BAND_BYTES / (g->npad * sizeof(int32_t));
    mb = mb / uk->mr * uk->mr;
    if (mb < uk->mr)
        mb = uk->mr;
    if (mb > 32 * (size_t)uk->mr)
        mb = 32 * (size_t)uk->mr;
    g->mb = mb;
    return QP_OK;
}

enum qp_status qp_gemm_s8_prepare(struct qp_gemm_s8 *g,
                                  const struct qp_gemm_s8_params *p,
                                  const void *b, size_t ldb,
                                  struct qp_error *err)
{
    memset(g, 0, sizeof *g);
    enum qp_status st = qp_kern_check_quant(
        "gemm", p->a_dtype, p->b_dtype, p->b_zero_point, p->b_zero_points,
        p->n, p->rq, p->isa, err);
    if (st)
        return st;
    if (p->n == 0 || p->k == 0)
        return qp_fail(err, QP_E_INVAL, "gemm: n and k must be >= 1 "
                       "(n %zu, k %zu)", p->n, p->k);
    if (ldb < p->k)
        return qp_fail(err, QP_E_INVAL, "gemm: weight row stride %zu < k %zu",
                       ldb, p->k);
    bool ok;
    g->uk = qp_kern_gemm_s8(p->isa, &ok);
    if (!ok)
        return qp_fail(err, QP_E_UNSUPPORTED, "gemm: instruction set '%s' is "
                       "not available on this machine",
                       qp_kern_isa_name(p->isa));
    g->n = p->n;
    g->k = p->k;
    g->a_dtype = p->a_dtype;
    g->b_dtype = p->b_dtype;
    g->a_zero_point = p->a_zero_point;
    g->has_rq = p->rq != NULL;
    if (p->rq)
        g->rq = *p->rq;
    g->threads = p->threads > 0 ? p->threads : qp_parallel_threads();

    size_t nk;
    if (qp_size_mul(p->n, p->k, &nk))
        return qp_fail(err, QP_E_OVERFLOW, "gemm: %zu x %zu weights overflow",
                       p->n, p->k);
    g->b_zero_point = qp_kern_expand_zp(p->b_zero_point, p->b_zero_points,
                                        p->n);
    g->bias = qp_kern_dup_i32(p->bias, p->n);
    if (!g->b_zero_point || (p->bias && !g->bias)) {
        qp_gemm_s8_release(g);
        return qp_fail(err, QP_E_NOMEM, "gemm: out of memory");
    }

    if (g->uk) {
        st = prepare_ukernel(g, p, b, ldb, g->b_zero_point, err);
    } else {
        g->kp = p->k;
        g->npad = p->n;
        g->b = malloc(nk);
        if (!g->b)
            st = qp_fail(err, QP_E_NOMEM, "gemm: out of memory copying %zu "
                         "bytes of weights", nk);
        else
            for (size_t j = 0; j < p->n; j++)
                memcpy(g->b + j * p->k, (const uint8_t *)b + j * ldb, p->k);
    }
    if (st)
        qp_gemm_s8_release(g);
    return st;
}

/* The reference's view of a prepared gemm. */
static struct qp_gemm_s8_params ref_params(const struct qp_gemm_s8 *g)
{
    return (struct qp_gemm_s8_params){
        .n = g->n, .k = g->k, .a_dtype = g->a_dtype, .b_dtype = g->b_dtype,
        .a_zero_point = g->a_zero_point, .b_zero_point = g->b_zero_point,
        .b_zero_points = g->n, .bias = g->bias,
        .rq = g->has_rq ? &g->rq : NULL, .isa = QP_KERN_REF};
}

size_t qp_gemm_s8_thread_scratch(const struct qp_gemm_s8 *g)
{
    if (!g->uk)
        return 0;
    size_t apack = round_up(g->mb * g->kp * g->uk->a_elem, ALIGN);
    size_t band = round_up(g->mb * g->npad * sizeof(int32_t), ALIGN);
    size_t rowsum = g->beta ? round_up(g->mb * sizeof(int32_t), ALIGN) : 0;
    return apack + band + rowsum;
}

/* Packs rows [0, valid) of A (a ^ flip, u8 or s8 as uk->a_signed says)
 * into [mr][kp] elements of a_elem bytes, zero beyond valid rows and
 * beyond k. */
static void pack_a(const struct qp_gemm_s8 *g, const uint8_t *a, size_t lda,
                   size_t valid, void *dst)
{
    const struct qp_gemm_s8_ukernel *uk = g->uk;
    uint8_t flip = a_flip(uk, g->a_dtype);
    size_t k = g->k, kp = g->kp;
    if (uk->a_elem == 1) {
        uint64_t f8 = 0x0101010101010101ull * flip;
        for (size_t r = 0; r < uk->mr; r++) {
            uint8_t *d = (uint8_t *)dst + r * kp;
            if (r >= valid) {
                memset(d, 0, kp);
                continue;
            }
            const uint8_t *s = a + r * lda;
            size_t kk = 0;
            for (; kk + 8 <= k; kk += 8) {
                uint64_t w;
                memcpy(&w, s + kk, 8);
                w ^= f8;
                memcpy(d + kk, &w, 8);
            }
            for (; kk < k; kk++)
                d[kk] = s[kk] ^ flip;
            memset(d + k, 0, kp - k);
        }
    } else { /* widened: straight loops the compiler vectorizes */
        for (size_t r = 0; r < uk->mr; r++) {
            uint16_t *d = (uint16_t *)dst + r * kp;
            const uint8_t *s = a + r * lda;
            size_t kv = r < valid ? k : 0;
            if (uk->a_signed)
                for (size_t kk = 0; kk < kv; kk++)
                    d[kk] = (uint16_t)(int16_t)(int8_t)(s[kk] ^ flip);
            else
                for (size_t kk = 0; kk < kv; kk++)
                    d[kk] = (uint16_t)(s[kk] ^ flip);
            memset(d + kv, 0, (kp - kv) * sizeof *d);
        }
    }
}

/* sum_k a_u[k] of one packed row of A, modulo 2^32. */
static uint32_t row_sum(const struct qp_gemm_s8_ukernel *uk, const void *pa,
                        size_t k)
{
    uint32_t s = 0;
    if (uk->a_elem == 2) {
        const uint16_t *p = pa;
        for (size_t kk = 0; kk < k; kk++)
            s += uk->a_signed ? (uint32_t)(int32_t)(int16_t)p[kk] : p[kk];
    } else if (uk->a_signed) {
        for (size_t kk = 0; kk < k; kk++)
            s += (uint32_t)(int32_t)((const int8_t *)pa)[kk];
    } else {
        for (size_t kk = 0; kk < k; kk++)
            s += ((const uint8_t *)pa)[kk];
    }
    return s;
}

/* Rows [0, m) of A, column panels [p0, p1), on one thread. The output
 * columns are [p0*nr, min(p1*nr, n)). */
static void block_rows(const struct qp_gemm_s8 *g, const uint8_t *a,
                       size_t m, size_t lda, void *c, size_t ldc, size_t p0,
                       size_t p1, void *scratch)
{
    const struct qp_gemm_s8_ukernel *uk = g->uk;
    size_t mr = uk->mr, nr = uk->nr;
    size_t es = qp_kern_out_size(g->has_rq ? &g->rq : NULL);
    size_t row_a = g->kp * uk->a_elem, tile_a = mr * row_a;
    size_t panel_b = nr * g->kp * uk->b_elem;
    uint8_t *apack = align_ptr(scratch);
    int32_t *band = (int32_t *)(apack + round_up(g->mb * g->kp * uk->a_elem,
                                                 ALIGN));
    int32_t *rowsum = (int32_t *)((char *)band +
                                  round_up(g->mb * g->npad * 4, ALIGN));
    size_t c0 = p0 * nr, c1 = p1 * nr < g->n ? p1 * nr : g->n;
    struct qp_rq rq;
    if (g->has_rq)
        rq = qp_rq_slice(&g->rq, c0, c1 - c0);

    for (size_t m0 = 0; m0 < m; m0 += g->mb) {
        size_t rows = m - m0 < g->mb ? m - m0 : g->mb;
        size_t tiles = (rows + mr - 1) / mr;
        for (size_t t = 0; t < tiles; t++) {
            size_t valid = rows - t * mr < mr ? rows - t * mr : mr;
            pack_a(g, a + (m0 + t * mr) * lda, lda, valid, apack + t * tile_a);
        }
        for (size_t p = p0; p < p1; p++)
            for (size_t t = 0; t < tiles; t++) {
                const char *bp = (const char *)g->bpack + p * panel_b;
                int32_t *cp = band + t * mr * g->npad + p * nr;
                size_t valid = rows - t * mr;
                if (valid > FEW_ROWS) {
                    uk->tile(g->kp, apack + t * tile_a, bp, g->colterm + p * nr,
                             cp, g->npad);
                    continue;
                }
                for (size_t r = 0; r < valid; r++) /* few rows: one by one */
                    uk->tile1(g->kp, apack + t * tile_a + r * row_a, bp,
                              g->colterm + p * nr, cp + r * g->npad, g->npad);
            }
        if (g->beta) { /* + beta[n] * sum_k a_u[m][k] */
            for (size_t r = 0; r < rows; r++)
                rowsum[r] = (int32_t)row_sum(
                    uk, apack + (r / mr) * tile_a + (r % mr) * row_a, g->k);
            for (size_t r = 0; r < rows; r++)
                for (size_t j = c0; j < c1; j++)
                    band[r * g->npad + j] =
                        (int32_t)((uint32_t)band[r * g->npad + j] +
                                  (uint32_t)g->beta[j] * (uint32_t)rowsum[r]);
        }
        qp_kern_requant_rows(g->has_rq ? &rq : NULL, band + c0, g->npad, rows,
                             c1 - c0, (char *)c + (m0 * ldc + c0) * es, ldc);
    }
}

void qp_gemm_s8_rows(const struct qp_gemm_s8 *g, const void *a, size_t m,
                     size_t lda, void *c, size_t ldc, void *scratch)
{
    if (!g->uk) {
        struct qp_gemm_s8_params p = ref_params(g);
        qp_gemm_s8_ref(&p, g->b, g->k, a, m, lda, c, ldc);
        return;
    }
    block_rows(g, a, m, lda, c, ldc, 0, g->npad / g->uk->nr, scratch);
}

static int run_threads(const struct qp_gemm_s8 *g, size_t m)
{
    double macs = (double)m * (double)g->n * (double)g->k;
    if (g->threads <= 1 || macs < MIN_PARALLEL_MACS)
        return 1;
    return g->threads;
}

size_t qp_gemm_s8_scratch_size(const struct qp_gemm_s8 *g, size_t m)
{
    size_t per = qp_gemm_s8_thread_scratch(g);
    if (per == 0)
        return 0;
    return ALIGN + (size_t)run_threads(g, m) * round_up(per, ALIGN);
}

struct run_ctx {
    const struct qp_gemm_s8 *g;
    const uint8_t *a;
    size_t m, lda, ldc;
    char *c;
    char *scratch;
    size_t per;
    int split_rows;
};

static void run_share(void *arg, int t, int nt)
{
    struct run_ctx *x = arg;
    const struct qp_gemm_s8 *g = x->g;
    size_t es = qp_kern_out_size(g->has_rq ? &g->rq : NULL);
    size_t b, e;
    if (!g->uk) {
        qp_parallel_split(x->m, t, nt, 1, &b, &e);
        struct qp_gemm_s8_params p = ref_params(g);
        qp_gemm_s8_ref(&p, g->b, g->k, x->a + b * x->lda, e - b, x->lda,
                       x->c + b * x->ldc * es, x->ldc);
        return;
    }
    void *s = x->scratch + (size_t)t * x->per;
    if (x->split_rows) {
        qp_parallel_split(x->m, t, nt, g->uk->mr, &b, &e);
        if (b < e)
            block_rows(g, x->a + b * x->lda, e - b, x->lda,
                       x->c + b * x->ldc * es, x->ldc, 0,
                       g->npad / g->uk->nr, s);
    } else {
        qp_parallel_split(g->npad / g->uk->nr, t, nt, 1, &b, &e);
        if (b < e)
            block_rows(g, x->a, x->m, x->lda, x->c, x->ldc, b, e, s);
    }
}

enum qp_status qp_gemm_s8_run(const struct qp_gemm_s8 *g, const void *a,
                              size_t m, size_t lda, void *c, size_t ldc,
                              void *scratch, struct qp_error *err)
{
    if (lda < g->k || ldc < g->n)
        return qp_fail(err, QP_E_INVAL, "gemm: row strides lda %zu, ldc %zu "
                       "below k %zu, n %zu", lda, ldc, g->k, g->n);
    if (m == 0)
        return QP_OK;
    size_t per = round_up(qp_gemm_s8_thread_scratch(g), ALIGN);
    if (per && !scratch)
        return qp_fail(err, QP_E_INVAL, "gemm: no scratch (needs %zu bytes)",
                       qp_gemm_s8_scratch_size(g, m));
    int nt = run_threads(g, m);
    struct run_ctx x = {g, a, m, lda, ldc, c, per ? align_ptr(scratch) : NULL,
                        per, 1};
    if (g->uk) {
        size_t panels = g->npad / g->uk->nr;
        /* too few rows to share: share the column panels instead */
        if (m < (size_t)nt * 2 * g->uk->mr && panels >= (size_t)nt)
            x.split_rows = 0;
        else if (m < (size_t)nt * g->uk->mr)
            nt = 1;
    }
    qp_parallel_run(run_share, &x, nt);
    return QP_OK;
}
