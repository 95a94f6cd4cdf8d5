#include "quant/rtn.h"

#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "quant/clip.h"
#include "quant/ggml-quant.h"
#include "quant/pack.h"

/* Elements quantized into the int32 staging buffer before each store; a
 * multiple of 8 so every store of packed data starts on a byte. */
#define CHUNK 2048

/* One scale for the whole run. The rounding mode is hoisted out of the
 * loop so each loop vectorizes. */
static void run_const(const float *x, size_t n, float s, int32_t z, int32_t qmin,
                      int32_t qmax, enum qp_round r, int32_t *q)
{
    const float lo = (float)(qmin - z), hi = (float)(qmax - z);
    if (r == QP_ROUND_HALF_AWAY) {
        for (size_t k = 0; k < n; k++) {
            float v = x[k] / s;
            v = v < lo ? lo : v;
            v = v > hi ? hi : v;
            q[k] = qp_round_f32(v, QP_ROUND_HALF_AWAY) + z;
        }
    } else {
        for (size_t k = 0; k < n; k++) {
            float v = x[k] / s;
            v = v < lo ? lo : v;
            v = v > hi ? hi : v;
            q[k] = qp_round_f32(v, QP_ROUND_HALF_EVEN) + z;
        }
    }
}

/* Element k has scale s[k] and zero point z[k] (z may be NULL). */
static void run_vec(const float *x, size_t n, const float *s, const int32_t *z,
                    int32_t qmin, int32_t qmax, enum qp_round r, int32_t *q)
{
    for (size_t k = 0; k < n; k++)
        q[k] = qp_quantize_f32(x[k], s[k], z ? z[k] : 0, qmin, qmax, r);
}

void qp_rtn_apply(const float *x, const struct qp_qgeom *g, const float *scale,
                  const int32_t *zp, int32_t qmin, int32_t qmax,
                  enum qp_round r, enum qp_dtype dt, void *data)
{
    int32_t q[CHUNK];
    size_t filled = 0, base = 0;
    struct qp_qseg_iter it;
    struct qp_qseg s;
    qp_qseg_begin(&it, g);
    while (qp_qseg_next(&it, &s)) {
        size_t off = s.off, len = s.len, idx = s.idx;
        while (len) {
            size_t take = CHUNK - filled < len ? CHUNK - filled : len;
            if (s.vec)
                run_vec(x + off, take, scale + idx, zp ? zp + idx : NULL, qmin,
                        qmax, r, q + filled);
            else
                run_const(x + off, take, scale[idx], zp ? zp[idx] : 0, qmin,
                          qmax, r, q + filled);
            filled += take;
            off += take;
            len -= take;
            if (s.vec)
                idx += take;
            if (filled == CHUNK) {
                qp_pack_store(dt, q, CHUNK, data, base);
                base += CHUNK;
                filled = 0;
            }
        }
    }
    if (filled)
        qp_pack_store(dt, q, filled, data, base);
}

void qp_rtn_params(const struct qp_qformat *f, enum qp_round r,
                   const float *lo, const float *hi, size_t count,
                   float *scale, int32_t *zp)
{
    for (size_t i = 0; i < count; i++) {
        int32_t z;
        qp_qparams_from_range(f, r, lo[i], hi[i], &scale[i], &z);
        if (zp)
            zp[i] = z;
    }
}

/* f32 elements of w: borrowed when w is f32, else converted into *owned. */
static enum qp_status f32_view(const struct qp_tensor *w, const float **x,
                               float **owned, struct qp_error *err)
{
    *owned = NULL;
    if (w->dtype == QP_DTYPE_F32) {
        *x = w->data;
        return QP_OK;
    }
    size_t n = qp_tensor_numel(w);
    *owned = malloc(n * sizeof **owned + 1);
    if (!*owned)
        return qp_fail(err, QP_E_NOMEM, "tensor '%s': out of memory", w->name);
    qp_tensor_read_f32(w, 0, n, *owned);
    *x = *owned;
    return QP_OK;
}

enum qp_status qp_rtn_quantize(const struct qp_tensor *w,
                               const struct qp_wscheme *ws,
                               const struct qp_wquant_opts *o,
                               struct qp_tensor **out, struct qp_error *err)
{
    *out = NULL;
    if (ws->family == QP_WFAMILY_GGML)
        return qp_ggml_fake_quantize(w, ws->ggml, o->layout, out, err);
    if (!qp_dtype_traits(w->dtype)->is_float)
        return qp_fail(err, QP_E_UNSUPPORTED, "tensor '%s': only float tensors "
                       "can be quantized, this one is %s", w->name,
                       qp_dtype_name(w->dtype));
    if (ws->algo == QP_WALGO_GPTQ)
        return qp_fail(err, QP_E_UNSUPPORTED, "tensor '%s': GPTQ needs "
                       "calibration data run through the model "
                       "(model/gptq-graph.h), not rounding alone; use @rtn "
                       "or @mse here", w->name);
    if (!w->data)
        return qp_fail(err, QP_E_INVAL, "tensor '%s': no data", w->name);
    struct qp_qgeom g;
    enum qp_status st = qp_qgeom_init(&g, w->ndim, w->shape, ws->gran, ws->group,
                                      o->layout, err);
    if (st)
        return st;
    const float *x = NULL;
    float *owned, *lo = NULL, *hi = NULL, *scale = NULL;
    int32_t *zp = NULL;
    if ((st = f32_view(w, &x, &owned, err)))
        return st;
    lo = malloc(g.count * sizeof *lo + 1);
    hi = malloc(g.count * sizeof *hi + 1);
    scale = malloc(g.count * sizeof *scale + 1);
    if (ws->f.asym)
        zp = malloc(g.count * sizeof *zp + 1);
    if (!lo || !hi || !scale || (ws->f.asym && !zp)) {
        st = qp_fail(err, QP_E_NOMEM, "tensor '%s': out of memory", w->name);
        goto out;
    }
    char what[300];
    snprintf(what, sizeof what, "tensor '%s'", w->name);
    if ((st = qp_qgeom_minmax(&g, x, what, lo, hi, err)))
        goto out;
    if (ws->algo == QP_WALGO_MSE &&
        (st = qp_clip_mse(x, &g, &ws->f, o->round, NULL, lo, hi, err)))
        goto out;
    qp_rtn_params(&ws->f, o->round, lo, hi, g.count, scale, zp);
    int32_t qmin, qmax;
    qp_qformat_range(&ws->f, &qmin, &qmax);
    enum qp_dtype dt = qp_qformat_dtype(&ws->f);
    struct qp_tensor *t;
    if ((st = qp_tensor_new(w->name, dt, w->ndim, w->shape, &t, err)))
        goto out;
    qp_rtn_apply(x, &g, scale, zp, qmin, qmax, o->round, dt, t->data);
    st = qp_tensor_set_qparams(t, g.count, scale, zp, g.axis, g.block, err);
    if (!st && w->layout)
        st = qp_tensor_set_layout(t, w->layout, err);
    if (st)
        qp_tensor_free(t);
    else
        *out = t;
out:
    free(owned);
    free(lo);
    free(hi);
    free(scale);
    free(zp);
    return st;
}

bool qp_rtn_default_selected(const struct qp_tensor *t)
{
    return qp_dtype_traits(t->dtype)->is_float && (t->ndim == 2 || t->ndim == 4);
}

size_t qp_rtn_bytes(const struct qp_tensor *q)
{
    size_t bytes = q->nbytes, zb = 0;
    if (!q->qp)
        return bytes;
    /* zero points as the writers store them: the narrowest integer type */
    if (q->qp->zero_point &&
        !qp_dtype_bytes(qp_dtype_narrowest_int(q->qp->zero_point, q->qp->count),
                        q->qp->count, &zb))
        zb = SIZE_MAX / 2;
    return bytes + q->qp->count * sizeof(float) + zb;
}
