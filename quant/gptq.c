#include "quant/gptq.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/half.h"
#include "core/parallel.h"
#include "core/size.h"
#include "kernels/blas.h"
#include "quant/clip.h"
#include "quant/pack.h"
#include "quant/rtn.h"

/* Everything the column loop reads, set up by qp_gptq_quantize. Columns
 * are numbered in quantization order c; perm[c] is the original column. */
struct gptq {
    size_t rows, cols;
    struct qp_qformat f;
    enum qp_round r;
    int32_t qmin, qmax;
    const struct qp_clip_grid *grid; /* 'mse', else NULL (min/max) */
    bool half;         /* 'half': scales rounded to float16 */
    size_t group;      /* refit groups: G, else 0 (parameters fixed) */
    size_t rstride;    /* parameters of (o, c): o * rstride + colgrp[c] */
    int32_t *colgrp;   /* [cols] */
    float *scale;      /* [count] */
    int32_t *zp;       /* [count], NULL when symmetric */
    float *w;          /* [rows, cols] weights, error-compensated */
    float *u;          /* [cols, cols] U in the upper triangle */
    float *e;          /* [rows, i2 - i1] scaled errors of the block */
    uint16_t *stage;   /* [rows, cols] q - qmin */
    double *loss;      /* [rows] sum of (w - q)^2 / U_cc^2 */
    size_t i1, i2;     /* the block being quantized */
};

/* 'half': each scale to the nearest float16 (ties to even), kept positive
 * and finite (the smallest subnormal, the largest normal), so that the
 * grid is the one a GPTQ checkpoint's fp16 scales give. */
static void half_scales(float *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        float h = qp_f16_to_f32(qp_f32_to_f16(s[i]));
        s[i] = h > 65504.0f ? 65504.0f : h > 0 ? h : 0x1p-24f;
    }
}

/* Refits the parameters of row o's group starting at column c0 on the
 * row's current (error-compensated) weights. */
static void fit_group(const struct gptq *g, size_t o, size_t c0)
{
    size_t n = g->cols - c0 < g->group ? g->cols - c0 : g->group;
    const float *x = g->w + o * g->cols + c0;
    float lo = x[0], hi = x[0];
    for (size_t k = 1; k < n; k++) {
        lo = x[k] < lo ? x[k] : lo;
        hi = x[k] > hi ? x[k] : hi;
    }
    if (g->grid)
        qp_clip_search(x, n, &g->f, g->r, g->grid, &lo, &hi);
    size_t k = o * g->rstride + (size_t)g->colgrp[c0];
    qp_rtn_params(&g->f, g->r, &lo, &hi, 1, &g->scale[k],
                  g->zp ? &g->zp[k] : NULL);
    if (g->half)
        half_scales(&g->scale[k], 1);
}

/* Quantizes column c of row o (its weight already error-compensated) and
 * returns the scaled error (w - q) / U_cc. */
static float quantize_one(const struct gptq *g, size_t o, size_t c,
                          double *loss)
{
    float *w = g->w + o * g->cols;
    if (g->group && c % g->group == 0)
        fit_group(g, o, c);
    size_t k = o * g->rstride + (size_t)g->colgrp[c];
    float s = g->scale[k], x = w[c], d = g->u[c * g->cols + c];
    int32_t z = g->zp ? g->zp[k] : 0;
    int32_t q = qp_quantize_f32(x, s, z, g->qmin, g->qmax, g->r);
    float qd = (float)(q - z) * s, ec = (x - qd) / d;
    g->stage[o * g->cols + c] = (uint16_t)(q - g->qmin);
    *loss += (double)ec * ec;
    g->e[o * (g->i2 - g->i1) + c - g->i1] = ec;
    return ec;
}

/* Rows quantized together: their columns are independent chains, so the
 * latency of one quantization hides behind the others', and each U row
 * loaded serves NR rows. */
#define NR 4

/* Columns [i1, i2) of rows [b, e): quantize each column, spread its error
 * onto the block's later columns, keep the scaled errors for the GEMM. */
static void block_rows(void *ctx, int t, int nt)
{
    const struct gptq *g = ctx;
    size_t b, e, cols = g->cols, i2 = g->i2;
    qp_parallel_split(g->rows, t, nt, 1, &b, &e);
    for (size_t o = b; o < e; o += NR) {
        size_t nr = e - o < NR ? e - o : NR;
        double loss[NR] = {0};
        float *w0 = g->w + o * cols;
        for (size_t c = g->i1; c < i2; c++) {
            float ec[NR];
            for (size_t r = 0; r < nr; r++)
                ec[r] = quantize_one(g, o + r, c, &loss[r]);
            const float *restrict uc = g->u + c * cols;
            if (nr == NR) {
                float *restrict a = w0, *restrict b1 = w0 + cols;
                float *restrict b2 = b1 + cols, *restrict b3 = b2 + cols;
                for (size_t j = c + 1; j < i2; j++) {
                    float u = uc[j];
                    a[j] -= ec[0] * u;
                    b1[j] -= ec[1] * u;
                    b2[j] -= ec[2] * u;
                    b3[j] -= ec[3] * u;
                }
            } else {
                for (size_t r = 0; r < nr; r++) {
                    float *restrict w = w0 + r * cols;
                    for (size_t j = c + 1; j < i2; j++)
                        w[j] -= ec[r] * uc[j];
                }
            }
        }
        for (size_t r = 0; r < nr; r++)
            g->loss[o + r] += loss[r];
    }
}

/* The end of the block starting at i1: blk columns, cut before the start
 * of a refit group that would straddle the end (so every group starting
 * inside a block lies in it, and one starting a block sees all updates). */
static size_t block_end(size_t i1, size_t blk, size_t cols, size_t group)
{
    size_t i2 = cols - i1 < blk ? cols : i1 + blk;
    if (group && i2 < cols) {
        size_t s = (i2 - 1) / group * group; /* last group start < i2 */
        if (s > i1 && s + group > i2)
            i2 = s;
    }
    return i2;
}

static void run_blocks(struct gptq *g, size_t blk, struct qp_pool *pool)
{
    int nt = g->rows >= 16 ? 0 : 1;
    for (size_t i1 = 0, i2; i1 < g->cols; i1 = i2) {
        i2 = block_end(i1, blk, g->cols, g->group);
        g->i1 = i1;
        g->i2 = i2;
        qp_pool_run(pool, block_rows, g, nt);
        /* the lazy batch: W[:, i2:] -= E U[i1:i2, i2:] */
        if (i2 < g->cols)
            qp_blas_sgemm(pool, false, false, g->rows, g->cols - i2, i2 - i1,
                          -1.0f, g->e, i2 - i1, g->u + i1 * g->cols + i2,
                          g->cols, 1.0f, g->w + i2, g->cols);
    }
}

/* ---- set-up ------------------------------------------------------------ */

struct keyed {
    double d;
    size_t i;
};

/* Decreasing d, then increasing index: a stable descending order. */
static int by_desc(const void *pa, const void *pb)
{
    const struct keyed *a = pa, *b = pb;
    if (a->d != b->d)
        return a->d > b->d ? -1 : 1;
    return a->i < b->i ? -1 : a->i > b->i;
}

/* perm gets the quantization order (decreasing diag when act, else the
 * identity), and the return value is mean(diag) summed in decreasing
 * order (so it does not depend on the column order); NAN when out of
 * memory. */
static double order_columns(const double *diag, size_t n, bool act,
                            size_t *perm)
{
    struct keyed *k = malloc(n * sizeof *k + 1);
    if (!k)
        return NAN;
    for (size_t i = 0; i < n; i++)
        k[i] = (struct keyed){diag[i], i};
    qsort(k, n, sizeof *k, by_desc);
    double sum = 0;
    for (size_t i = 0; i < n; i++) {
        sum += k[i].d;
        perm[i] = act ? k[i].i : i;
    }
    free(k);
    return sum / (double)n;
}

/* The strict upper triangle of f = the strict lower triangle of h
 * transposed (in tiles, so both sides stream), making row a of the
 * symmetric H readable from two rows: h[a][b] for b <= a, f[a][b] above. */
static void mirror_into_upper(float *f, const float *h, size_t n)
{
    enum { TB = 64 };
    for (size_t i0 = 0; i0 < n; i0 += TB)
        for (size_t j0 = 0; j0 <= i0; j0 += TB) {
            size_t i1 = n - i0 < TB ? n : i0 + TB;
            for (size_t i = i0; i < i1; i++) {
                size_t j1 = j0 + TB < i ? j0 + TB : i;
                for (size_t j = j0; j < j1; j++)
                    f[j * n + i] = h[i * n + j];
            }
        }
}

/* Row-major lower triangle of F = J P^T H P J + damp I, where P is the
 * column order: F[i][j] = H[perm[n-1-i]][perm[n-1-j]] with diag H from
 * diag (dead columns 1), read from h's lower triangle and the mirror in
 * f's upper one (mirror_into_upper), which it leaves intact. */
static void build_reversed(float *f, const float *h, const double *diag,
                           const size_t *perm, size_t n, float damp)
{
    for (size_t i = 0; i < n; i++) {
        size_t a = perm[n - 1 - i];
        const float *lo = h + a * n, *up = f + a * n;
        float *fi = f + i * n;
        for (size_t j = 0; j < i; j++) {
            size_t b = perm[n - 1 - j];
            fi[j] = b <= a ? lo[b] : up[b];
        }
        fi[i] = (float)diag[a] + damp;
    }
}

/* The lower triangle of f holds L^-1 of J H J = L L^T; writes U = J L^-1 J
 * into the upper triangle (element (i, j) goes to (n-1-i, n-1-j)) and
 * checks it: false when an entry is not finite or U_ii <= 0. */
static bool reverse_into_upper(float *f, size_t n)
{
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < i; j++)
            f[(n - 1 - i) * n + (n - 1 - j)] = f[i * n + j];
    for (size_t i = 0; i < n / 2; i++) {
        float t = f[i * n + i];
        f[i * n + i] = f[(n - 1 - i) * n + (n - 1 - i)];
        f[(n - 1 - i) * n + (n - 1 - i)] = t;
    }
    float poison = 0;
    for (size_t i = 0; i < n; i++) {
        if (!(f[i * n + i] > 0))
            return false;
        for (size_t j = i; j < n; j++)
            poison += f[i * n + j] * 0.0f;
    }
    return poison == 0;
}

/* U for H with dampening from *damp up, doubling up to 1 on failure. */
static enum qp_status factor(float *u, const struct qp_hessian *h,
                             const double *diag, const size_t *perm,
                             double mean, struct qp_pool *pool, double *damp,
                             int *retries, const char *name,
                             struct qp_error *err)
{
    size_t n = h->cols;
    for (*retries = 0;; ++*retries) {
        mirror_into_upper(u, h->h, n);
        build_reversed(u, h->h, diag, perm, n, (float)(*damp * mean));
        if (!qp_lapack_spotrf_lower(pool, n, u, n) &&
            !qp_lapack_strtri_lower(pool, n, u, n) && reverse_into_upper(u, n))
            return QP_OK;
        if (*damp >= 1)
            return qp_fail(err, QP_E_INVAL, "layer '%s': the Hessian is not "
                           "positive definite even with dampening 1 x mean "
                           "diagonal (%d tries)", name, *retries + 1);
        *damp = *damp * 2 < 1 ? *damp * 2 : 1;
    }
}

/* Non-finite entries: the first of x[0..n) as an index, or SIZE_MAX. */
static size_t first_nonfinite(const float *x, size_t n)
{
    float poison = 0;
    for (size_t i = 0; i < n; i++)
        poison += x[i] * 0.0f;
    if (poison == 0)
        return SIZE_MAX;
    for (size_t i = 0; i < n; i++)
        if (!isfinite(x[i]))
            return i;
    return SIZE_MAX;
}

static enum qp_status check_inputs(const struct qp_tensor *w,
                                   const struct qp_hessian *h,
                                   const struct qp_gptq_opts *o,
                                   const char *name, struct qp_error *err)
{
    const struct qp_wscheme *ws = o->ws;
    if (!qp_dtype_traits(w->dtype)->is_float || w->ndim != 2)
        return qp_fail(err, QP_E_UNSUPPORTED, "layer '%s': GPTQ takes a 2-D "
                       "float weight [out, in], this one is %s of rank %d",
                       name, qp_dtype_name(w->dtype), w->ndim);
    if (!w->data || w->shape[0] < 1 || w->shape[1] < 1)
        return qp_fail(err, QP_E_INVAL, "layer '%s': empty weight", name);
    if ((size_t)w->shape[1] != h->cols)
        return qp_fail(err, QP_E_SHAPE, "layer '%s': the weight has %lld "
                       "input columns, the Hessian %zu", name,
                       (long long)w->shape[1], h->cols);
    if (ws->gptq.static_groups && ws->gran != QP_GRAN_GROUP)
        return qp_fail(err, QP_E_INVAL, "layer '%s': static groups need "
                       "group-wise weights", name);
    if (ws->gptq.damp < 0 || ws->gptq.damp >= 1 || ws->gptq.block < 0)
        return qp_fail(err, QP_E_INVAL, "layer '%s': dampening %g must be in "
                       "(0, 1) and the block size positive", name,
                       ws->gptq.damp);
    enum qp_status st = qp_hessian_check(h, err);
    if (st)
        return st;
    size_t n = h->cols, bad = SIZE_MAX;
    for (size_t i = 0; i < n && bad == SIZE_MAX; i++)
        if ((bad = first_nonfinite(h->h + i * n, i + 1)) != SIZE_MAX)
            bad += i * n;
    if (bad != SIZE_MAX)
        return qp_fail(err, QP_E_INVAL, "layer '%s': the Hessian entry (%zu, "
                       "%zu) is not finite", name, bad / n, bad % n);
    return QP_OK;
}

/* Fixed parameters (per-tensor, per-channel, static groups) from the
 * whole weight, exactly as qp_rtn_quantize computes them. */
static enum qp_status fixed_params(const struct gptq *g,
                                   const struct qp_qgeom *geo,
                                   const char *what, struct qp_error *err)
{
    float *lo = malloc(geo->count * sizeof *lo + 1);
    float *hi = malloc(geo->count * sizeof *hi + 1);
    enum qp_status st = QP_OK;
    if (!lo || !hi)
        st = qp_fail(err, QP_E_NOMEM, "%s: out of memory", what);
    if (!st)
        st = qp_qgeom_minmax(geo, g->w, what, lo, hi, err);
    if (!st && g->grid)
        st = qp_clip_mse(g->w, geo, &g->f, g->r, g->grid, lo, hi, err);
    if (!st)
        qp_rtn_params(&g->f, g->r, lo, hi, geo->count, g->scale, g->zp);
    if (!st && g->half)
        half_scales(g->scale, geo->count);
    free(lo);
    free(hi);
    return st;
}

/* Elements per packing chunk: a multiple of 8, so every chunk starts on a
 * byte of packed data and threads never share a byte. */
#define CHUNK 2048

struct store {
    const struct gptq *g;
    const size_t *inv;
    struct qp_tensor *t;
};

/* Chunks of the integers in the original column order, packed. */
static void store_part(void *ctx, int t, int nt)
{
    const struct store *s = ctx;
    const struct gptq *g = s->g;
    size_t total = g->rows * g->cols, b, e;
    qp_parallel_split((total + CHUNK - 1) / CHUNK, t, nt, 1, &b, &e);
    int32_t q[CHUNK];
    for (size_t k = b; k < e; k++) {
        size_t base = k * CHUNK, n = total - base < CHUNK ? total - base : CHUNK;
        size_t o = base / g->cols, i = base % g->cols;
        for (size_t m = 0; m < n; m++) {
            q[m] = (int32_t)g->stage[o * g->cols + s->inv[i]] + g->qmin;
            if (++i == g->cols) {
                i = 0;
                o++;
            }
        }
        qp_pack_store(s->t->dtype, q, n, s->t->data, base);
    }
}

static void store(const struct gptq *g, const size_t *inv, struct qp_tensor *t,
                  struct qp_pool *pool)
{
    struct store s = {g, inv, t};
    qp_pool_run(pool, store_part, &s, g->rows * g->cols > 8 * CHUNK ? 0 : 1);
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Allocations of one run, freed together. */
struct bufs {
    struct gptq g;
    double *diag;
    size_t *perm, *inv;
    float *row;
};

static void bufs_free(struct bufs *b)
{
    free(b->g.colgrp);
    free(b->g.scale);
    free(b->g.zp);
    free(b->g.w);
    free(b->g.u);
    free(b->g.e);
    free(b->g.stage);
    free(b->g.loss);
    free(b->diag);
    free(b->perm);
    free(b->inv);
    free(b->row);
}

static enum qp_status bufs_alloc(struct bufs *b, size_t count, size_t blk,
                                 bool asym, const char *name,
                                 struct qp_error *err)
{
    size_t rows = b->g.rows, cols = b->g.cols, rc, cc, rb;
    if (qp_size_mul(rows, cols, &rc) || qp_size_mul(cols, cols, &cc) ||
        qp_size_mul(rows, blk, &rb) || cc > SIZE_MAX / sizeof(float))
        return qp_fail(err, QP_E_OVERFLOW, "layer '%s': too large", name);
    b->g.colgrp = malloc(cols * sizeof *b->g.colgrp);
    b->g.scale = malloc(count * sizeof *b->g.scale);
    b->g.zp = asym ? malloc(count * sizeof *b->g.zp) : NULL;
    b->g.w = malloc(rc * sizeof *b->g.w);
    b->g.u = malloc(cc * sizeof *b->g.u);
    b->g.e = malloc(rb * sizeof *b->g.e);
    b->g.stage = malloc(rc * sizeof *b->g.stage);
    b->g.loss = calloc(rows, sizeof *b->g.loss);
    b->diag = malloc(cols * sizeof *b->diag);
    b->perm = malloc(cols * sizeof *b->perm);
    b->inv = malloc(cols * sizeof *b->inv);
    b->row = malloc(cols * sizeof *b->row);
    if (!b->g.colgrp || !b->g.scale || (asym && !b->g.zp) || !b->g.w ||
        !b->g.u || !b->g.e || !b->g.stage || !b->g.loss || !b->diag ||
        !b->perm || !b->inv || !b->row)
        return qp_fail(err, QP_E_NOMEM, "layer '%s': out of memory for GPTQ "
                       "([%zu, %zu])", name, rows, cols);
    return QP_OK;
}

/* Dead columns, the column order, the parameter indexing and (for act-order
 * with groups) g_idx; W's columns are permuted in place. */
static enum qp_status arrange(struct bufs *b, const struct qp_hessian *h,
                              const struct qp_qgeom *geo,
                              const struct qp_wscheme *ws, const char *what,
                              double *mean, struct qp_gptq_result *res,
                              struct qp_error *err)
{
    struct gptq *g = &b->g;
    size_t rows = g->rows, cols = g->cols;
    for (size_t i = 0; i < cols; i++) {
        b->diag[i] = h->h[i * cols + i];
        if (b->diag[i] == 0) {
            b->diag[i] = 1;
            res->dead++;
            for (size_t o = 0; o < rows; o++)
                g->w[o * cols + i] = 0;
        }
    }
    bool act = ws->gptq.act_order;
    *mean = order_columns(b->diag, cols, act, b->perm);
    if (isnan(*mean))
        return qp_fail(err, QP_E_NOMEM, "%s: out of memory", what);
    for (size_t c = 0; c < cols; c++)
        b->inv[b->perm[c]] = c;
    bool groups = geo->block > 0;
    if (geo->axis >= 0 && !groups)
        g->rstride = 1;
    else if (groups)
        g->rstride = geo->nblk;
    if (groups && !ws->gptq.static_groups)
        g->group = (size_t)geo->block;
    enum qp_status st = QP_OK;
    if (!g->group)
        st = fixed_params(g, geo, what, err);
    if (st)
        return st;
    size_t gs = groups ? (size_t)geo->block : cols;
    for (size_t c = 0; c < cols; c++)
        g->colgrp[c] = (int32_t)(g->group ? c / gs
                                 : groups ? b->perm[c] / gs : 0);
    if (act && groups) {
        res->g_idx = malloc(cols * sizeof *res->g_idx);
        if (!res->g_idx)
            return qp_fail(err, QP_E_NOMEM, "%s: out of memory", what);
        res->g_idx_trivial = true;
        for (size_t c = 0; c < cols; c++) {
            res->g_idx[b->perm[c]] = g->colgrp[c];
            res->g_idx_trivial &= (size_t)g->colgrp[c] == b->perm[c] / gs;
        }
    } else {
        res->g_idx_trivial = true;
    }
    if (act)
        for (size_t o = 0; o < rows; o++) {
            float *r = g->w + o * cols;
            for (size_t c = 0; c < cols; c++)
                b->row[c] = r[b->perm[c]];
            memcpy(r, b->row, cols * sizeof *r);
        }
    return QP_OK;
}

enum qp_status qp_gptq_quantize(const struct qp_tensor *w,
                                const struct qp_hessian *h,
                                const struct qp_gptq_opts *o,
                                struct qp_gptq_result *res,
                                struct qp_error *err)
{
    double t0 = now();
    memset(res, 0, sizeof *res);
    const struct qp_wscheme *ws = o->ws;
    const char *name = o->name ? o->name : w->name;
    enum qp_status st = check_inputs(w, h, o, name, err);
    if (st)
        return st;
    struct qp_qgeom geo;
    if ((st = qp_qgeom_init(&geo, 2, w->shape, ws->gran, ws->group,
                            QP_WLAYOUT_TORCH, err)))
        return st;
    struct bufs b;
    memset(&b, 0, sizeof b);
    struct gptq *g = &b.g;
    g->rows = (size_t)w->shape[0];
    g->cols = (size_t)w->shape[1];
    g->f = ws->f;
    g->r = o->round;
    qp_qformat_range(&g->f, &g->qmin, &g->qmax);
    if (ws->gptq.mse || ws->algo == QP_WALGO_MSE)
        g->grid = &qp_clip_grid_gptq;
    g->half = ws->gptq.half_scales;
    size_t blk = ws->gptq.block ? (size_t)ws->gptq.block : QP_GPTQ_BLOCK_DEFAULT;
    blk = blk < g->cols ? blk : g->cols;
    char what[300];
    snprintf(what, sizeof what, "layer '%s': weight", name);
    struct qp_tensor *t = NULL;
    double mean;
    if ((st = bufs_alloc(&b, geo.count, blk, g->f.asym, name, err)))
        goto out;
    qp_tensor_read_f32(w, 0, g->rows * g->cols, g->w);
    size_t bad = first_nonfinite(g->w, g->rows * g->cols);
    if (bad != SIZE_MAX) {
        st = qp_fail(err, QP_E_INVAL, "%s: element [%zu, %zu] is not finite",
                     what, bad / g->cols, bad % g->cols);
        goto out;
    }
    if ((st = arrange(&b, h, &geo, ws, what, &mean, res, err)))
        goto out;
    res->damp = ws->gptq.damp ? ws->gptq.damp : QP_GPTQ_DAMP_DEFAULT;
    if ((st = factor(g->u, h, b.diag, b.perm, mean, o->pool, &res->damp,
                     &res->retries, name, err)))
        goto out;
    run_blocks(g, blk, o->pool);
    if ((st = qp_tensor_new(w->name, qp_qformat_dtype(&g->f), 2, w->shape, &t,
                            err)))
        goto out;
    store(g, b.inv, t, o->pool);
    if ((st = qp_tensor_set_qparams(t, geo.count, g->scale, g->zp, geo.axis,
                                    geo.block, err)))
        goto out;
    for (size_t r = 0; r < g->rows; r++)
        res->loss += 0.5 * g->loss[r];
    res->q = t;
    t = NULL;
    res->tokens = h->tokens;
    res->few_tokens = h->tokens < g->cols;
out:
    qp_tensor_free(t);
    bufs_free(&b);
    if (st)
        qp_gptq_result_release(res);
    else
        res->seconds = now() - t0;
    return st;
}

void qp_gptq_result_release(struct qp_gptq_result *res)
{
    qp_tensor_free(res->q);
    free(res->g_idx);
    memset(res, 0, sizeof *res);
}

enum qp_status qp_gptq_dequantize(const struct qp_tensor *q,
                                  const int32_t *g_idx, float *out,
                                  struct qp_error *err)
{
    if (!g_idx) {
        qp_tensor_read_f32(q, 0, qp_tensor_numel(q), out);
        return QP_OK;
    }
    const struct qp_qparams *p = q->qp;
    if (q->ndim != 2 || !p || p->axis != 1 || p->block_size < 1 ||
        !qp_dtype_is_int(q->dtype))
        return qp_fail(err, QP_E_INVAL, "tensor '%s': g_idx needs a 2-D "
                       "integer tensor with groups along axis 1", q->name);
    size_t rows = (size_t)q->shape[0], cols = (size_t)q->shape[1];
    size_t nblk = (cols + (size_t)p->block_size - 1) / (size_t)p->block_size;
    if (p->count != rows * nblk)
        return qp_fail(err, QP_E_INVAL, "tensor '%s': %zu scales, groups of "
                       "%lld need %zu", q->name, p->count,
                       (long long)p->block_size, rows * nblk);
    for (size_t i = 0; i < cols; i++)
        if (g_idx[i] < 0 || (size_t)g_idx[i] >= nblk)
            return qp_fail(err, QP_E_INVAL, "tensor '%s': g_idx[%zu] = %d, "
                           "expected 0..%zu", q->name, i, g_idx[i], nblk - 1);
    int32_t *v = malloc(cols * sizeof *v);
    if (!v)
        return qp_fail(err, QP_E_NOMEM, "tensor '%s': out of memory", q->name);
    for (size_t o = 0; o < rows; o++) {
        qp_pack_load(q->dtype, q->data, o * cols, cols, v);
        for (size_t i = 0; i < cols; i++) {
            size_t k = o * nblk + (size_t)g_idx[i];
            int64_t z = p->zero_point ? p->zero_point[k] : 0;
            out[o * cols + i] = (float)((int64_t)v[i] - z) * p->scale[k];
        }
    }
    free(v);
    return QP_OK;
}
