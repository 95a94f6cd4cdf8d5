/* quant/gptq-layer.c: one layer's GPTQ fed by a runtime
 * (quant/gptq-layer.h). */
#include "quant/gptq-layer.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/size.h"
#include "quant/pack.h"
#include "quant/rtn.h"

enum qp_status qp_gptq_layer_new(const char *name, size_t parts, size_t rows,
                                 size_t cols, struct qp_pool *pool,
                                 struct qp_gptq_layer **out,
                                 struct qp_error *err)
{
    *out = NULL;
    if (!name)
        name = "layer";
    if (!parts || !rows || !cols)
        return qp_fail(err, QP_E_INVAL, "layer '%s': %zu parts of [%zu, %zu]: "
                       "nothing to quantize", name, parts, rows, cols);
    struct qp_gptq_layer *l = calloc(1, sizeof *l);
    if (l) {
        l->name = strdup(name);
        l->h = calloc(parts, sizeof *l->h);
    }
    if (!l || !l->name || !l->h) {
        qp_gptq_layer_free(l);
        return qp_fail(err, QP_E_NOMEM, "layer '%s': out of memory", name);
    }
    l->parts = parts;
    l->rows = rows;
    l->cols = cols;
    char part[300];
    enum qp_status st = QP_OK;
    for (size_t p = 0; !st && p < parts; p++) {
        if (parts > 1)
            snprintf(part, sizeof part, "%s (group %zu)", name, p);
        st = qp_hessian_new(parts > 1 ? part : name, cols, pool, &l->h[p], err);
    }
    if (st) {
        qp_gptq_layer_free(l);
        return st;
    }
    *out = l;
    return QP_OK;
}

void qp_gptq_layer_free(struct qp_gptq_layer *l)
{
    if (!l)
        return;
    for (size_t p = 0; l->h && p < l->parts; p++)
        qp_hessian_free(l->h[p]);
    free(l->h);
    free(l->name);
    free(l);
}

enum qp_status qp_gptq_layer_rows(struct qp_gptq_layer *l,
                                  const struct qp_layer_rows *r,
                                  struct qp_error *err)
{
    if (r->part >= l->parts)
        return qp_fail(err, QP_E_INVAL, "layer '%s': part %zu of %zu", l->name,
                       r->part, l->parts);
    if (r->cols != l->cols)
        return qp_fail(err, QP_E_SHAPE, "layer '%s': inputs of %zu features, "
                       "the layer has %zu", l->name, r->cols, l->cols);
    struct qp_hessian *h = l->h[r->part];
    if (r->by_cols)
        return qp_hessian_add_cols(h, r->x, r->cols, r->rows, r->ld, err);
    if (r->ld == r->cols)
        return qp_hessian_add(h, r->x, r->rows, r->cols, err);
    /* strided rows: one at a time (runtimes give packed rows in practice) */
    enum qp_status st = QP_OK;
    for (size_t i = 0; !st && i < r->rows; i++)
        st = qp_hessian_add(h, r->x + i * r->ld, 1, r->cols, err);
    return st;
}

enum qp_status qp_gptq_layer_rows_cb(void *ctx, int layer,
                                     const struct qp_layer_rows *r,
                                     struct qp_error *err)
{
    struct qp_gptq_layer **layers = ctx;
    return layers[layer] ? qp_gptq_layer_rows(layers[layer], r, err) : QP_OK;
}

void qp_gptq_layer_sample(struct qp_gptq_layer *l)
{
    l->samples++;
}

/* ---- quantizing --------------------------------------------------------- */

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Every layer column appears once in colmap[vcols]. */
static enum qp_status check_view(const struct qp_gptq_layer *l,
                                 const struct qp_gptq_view *v,
                                 struct qp_error *err)
{
    if (!v->colmap)
        return v->vcols == l->cols
                   ? QP_OK
                   : qp_fail(err, QP_E_INVAL, "layer '%s': a view of %zu "
                             "columns needs a column map", l->name, v->vcols);
    unsigned char *seen = calloc(l->cols, 1);
    if (!seen)
        return qp_fail(err, QP_E_NOMEM, "layer '%s': out of memory", l->name);
    size_t n = 0;
    bool ok = true;
    for (size_t c = 0; ok && c < v->vcols; c++) {
        int64_t m = v->colmap[c];
        if (m < 0)
            continue;
        ok = (uint64_t)m < l->cols && !seen[m];
        if (ok) {
            seen[m] = 1;
            n++;
        }
    }
    free(seen);
    return ok && n == l->cols
               ? QP_OK
               : qp_fail(err, QP_E_INVAL, "layer '%s': the column map does not "
                         "hold each of its %zu columns once", l->name, l->cols);
}

/* The view's Hessian: H[map a][map b] for real columns, the mean diagonal
 * (dead columns as 1) on padding diagonals, 0 elsewhere. */
static enum qp_status view_hessian(const struct qp_hessian *h,
                                   const struct qp_gptq_view *v,
                                   struct qp_hessian **out, struct qp_error *err)
{
    size_t n = h->cols, vc = v->vcols;
    enum qp_status st = qp_hessian_check(h, err);
    if (!st)
        st = qp_hessian_new(h->name, vc, h->pool, out, err);
    if (st)
        return st;
    double sum = 0;
    for (size_t i = 0; i < n; i++) {
        float d = h->h[i * n + i];
        sum += d == 0 ? 1.0 : (double)d;
    }
    float mean = (float)(sum / (double)n);
    float *hv = (*out)->h;
    for (size_t a = 0; a < vc; a++) {
        int64_t ma = v->colmap[a];
        for (size_t b = 0; b <= a; b++) {
            int64_t mb = v->colmap[b];
            float x = 0;
            if (ma >= 0 && mb >= 0)
                x = ma >= mb ? h->h[(size_t)ma * n + (size_t)mb]
                             : h->h[(size_t)mb * n + (size_t)ma];
            else if (a == b)
                x = mean;
            hv[a * vc + b] = x;
        }
    }
    (*out)->tokens = h->tokens;
    return QP_OK;
}

/* Part p: GPTQ, its dequantized view, RTN's on the same grid, and the
 * traces of their output errors added to num[3]. */
static enum qp_status quantize_part(const struct qp_gptq_layer *l, size_t p,
                                    const float *w, const struct qp_gptq_view *v,
                                    const struct qp_gptq_opts *o,
                                    struct qp_gptq_layer_result *res,
                                    double *num, struct qp_error *err)
{
    size_t rows = l->rows, vc = v->vcols;
    struct qp_hessian *own = NULL;
    const struct qp_hessian *h = l->h[p];
    struct qp_tensor *wv = NULL, *qr = NULL;
    float *rtn = malloc(rows * vc * sizeof *rtn + 1);
    enum qp_status st = rtn ? QP_OK
                            : qp_fail(err, QP_E_NOMEM, "layer '%s': out of "
                                      "memory", l->name);
    if (!st && v->colmap && !(st = view_hessian(h, v, &own, err)))
        h = own;
    if (!st)
        st = qp_tensor_new(l->name, QP_DTYPE_F32, 2,
                           (const int64_t[]){(int64_t)rows, (int64_t)vc}, &wv,
                           err);
    if (!st) {
        memcpy(wv->data, w, rows * vc * sizeof(float));
        st = qp_gptq_quantize(wv, h, o, &res->part[p], err);
    }
    float *fake = res->fake + p * rows * vc;
    if (!st)
        st = qp_gptq_dequantize(res->part[p].q, res->part[p].g_idx, fake, err);
    struct qp_wscheme ws = *o->ws;
    ws.algo = QP_WALGO_RTN;
    ws.gptq = (struct qp_gptq_options){0};
    struct qp_wquant_opts ro = {o->round, QP_WLAYOUT_TORCH};
    if (!st && !(st = qp_rtn_quantize(wv, &ws, &ro, &qr, err)))
        qp_tensor_read_f32(qr, 0, rows * vc, rtn);
    double e[3];
    if (!st)
        st = qp_hessian_output_energy(h, w, rows,
                                      (const float *const[]){fake, rtn}, 2, e,
                                      err);
    for (int k = 0; !st && k < 3; k++)
        num[k] += e[k];
    qp_tensor_free(qr);
    qp_tensor_free(wv);
    qp_hessian_free(own);
    free(rtn);
    return st;
}

void qp_gptq_layer_result_release(struct qp_gptq_layer_result *res)
{
    for (size_t p = 0; res->part && p < res->parts; p++)
        qp_gptq_result_release(&res->part[p]);
    free(res->part);
    free(res->fake);
    memset(res, 0, sizeof *res);
}

enum qp_status qp_gptq_layer_quantize(const struct qp_gptq_layer *l,
                                      const float *w,
                                      const struct qp_gptq_view *v,
                                      const struct qp_gptq_opts *o,
                                      struct qp_gptq_layer_result *res,
                                      struct qp_error *err)
{
    double t0 = now();
    memset(res, 0, sizeof *res);
    enum qp_status st = check_view(l, v, err);
    size_t n;
    if (!st && (qp_size_mul(l->parts * l->rows, v->vcols, &n) ||
                n > SIZE_MAX / sizeof(float)))
        st = qp_fail(err, QP_E_OVERFLOW, "layer '%s': too large", l->name);
    if (st)
        return st;
    struct qp_gptq_opts po = *o;
    if (!po.name)
        po.name = l->name;
    res->parts = l->parts;
    res->rows = l->rows;
    res->vcols = v->vcols;
    res->part = calloc(l->parts, sizeof *res->part);
    res->fake = malloc(n * sizeof *res->fake + 1);
    if (!res->part || !res->fake)
        st = qp_fail(err, QP_E_NOMEM, "layer '%s': out of memory", l->name);
    double num[3] = {0, 0, 0};
    for (size_t p = 0; !st && p < l->parts; p++) {
        st = quantize_part(l, p, w + p * l->rows * v->vcols, v, &po, res, num,
                           err);
        if (st)
            break;
        const struct qp_gptq_result *r = &res->part[p];
        res->loss += r->loss;
        res->damp = r->damp > res->damp ? r->damp : res->damp;
        res->retries += r->retries;
        res->dead += r->dead;
        res->tokens = r->tokens;
    }
    if (st) {
        qp_gptq_layer_result_release(res);
        return st;
    }
    /* padding columns are never dead: their diagonal is the mean */
    res->few_tokens = res->tokens < l->cols;
    res->out_err = num[1] == 0 ? 0 : num[1] / num[0];
    res->rtn_out_err = num[2] == 0 ? 0 : num[2] / num[0];
    res->seconds = now() - t0;
    return QP_OK;
}

/* ---- reading a g_idx checkpoint ----------------------------------------- */

enum qp_status qp_gptq_gidx_dequantize(const struct qp_tensor *q,
                                       const struct qp_tensor *g_idx,
                                       enum qp_wlayout l, float *out,
                                       struct qp_error *err)
{
    const struct qp_qparams *qp = q->qp;
    int oa, ia;
    qp_wlayout_axes(l, q->ndim, &oa, &ia);
    bool io = q->ndim == 2 && oa == 1;
    if (!qp || qp->block_size < 1 || qp->axis != ia || !qp_dtype_is_int(q->dtype) ||
        !(oa == 0 || io) || !qp_dtype_is_int(g_idx->dtype))
        return qp_fail(err, QP_E_INVAL, "tensor '%s': g_idx needs an integer "
                       "tensor blocked along its input axis with the output "
                       "axis first (or [in, out])", q->name);
    size_t numel = qp_tensor_numel(q), outc = (size_t)q->shape[oa];
    size_t in = numel / outc, dim = (size_t)q->shape[ia];
    size_t nblk = (dim + (size_t)qp->block_size - 1) / (size_t)qp->block_size;
    size_t per = qp->count / outc, ng = qp_tensor_numel(g_idx);
    size_t parts = in ? ng / in : 0;
    if (qp->count % outc || per != nblk * (in / dim) || !parts || ng % in ||
        outc % parts)
        return qp_fail(err, QP_E_INVAL, "tensor '%s': %zu scales and a g_idx "
                       "of %zu entries do not fit its shape", q->name,
                       qp->count, ng);
    int32_t *v = malloc(in * sizeof *v + 1), *gi = malloc(ng * sizeof *gi + 1);
    if (!v || !gi) {
        free(v);
        free(gi);
        return qp_fail(err, QP_E_NOMEM, "tensor '%s': out of memory", q->name);
    }
    for (size_t k = 0; k < ng; k++) {
        float x; /* exact: scale counts are far below 2^24 */
        qp_tensor_read_f32(g_idx, k, 1, &x);
        gi[k] = x >= 0 && x < (float)per && x == floorf(x) ? (int32_t)x : -1;
    }
    enum qp_status st = QP_OK;
    for (size_t k = 0; !st && k < ng; k++)
        if (gi[k] < 0)
            st = qp_fail(err, QP_E_INVAL, "tensor '%s': g_idx[%zu] is not a "
                         "scale index below %zu", q->name, k, per);
    for (size_t o = 0; !st && o < outc; o++) {
        const int32_t *g = gi + o / (outc / parts) * in;
        if (io) { /* [in, out]: element (k, o) */
            for (size_t k = 0; k < in; k++) {
                int32_t x;
                qp_pack_load(q->dtype, q->data, k * outc + o, 1, &x);
                size_t s = (size_t)g[k] * outc + o;
                int64_t z = qp->zero_point ? qp->zero_point[s] : 0;
                out[k * outc + o] = (float)((int64_t)x - z) * qp->scale[s];
            }
            continue;
        }
        qp_pack_load(q->dtype, q->data, o * in, in, v);
        for (size_t e = 0; e < in; e++) {
            size_t s = o * per + (size_t)g[e];
            int64_t z = qp->zero_point ? qp->zero_point[s] : 0;
            out[o * in + e] = (float)((int64_t)v[e] - z) * qp->scale[s];
        }
    }
    free(v);
    free(gi);
    return st;
}
