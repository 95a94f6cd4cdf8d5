/* model/gptq-view.c: GPTQ views of ONNX weights and the way back
 * (model/gptq-view.h). */
#include "model/gptq-view.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/op-llm.h"
#include "model/op.h"
#include "quant/pack.h"

static bool is_op(const struct qp_node *n, const char *op)
{
    return !n->domain[0] && !strcmp(n->op_type, op);
}

bool qp_gview_llm_linear(const struct qp_node *n)
{
    return !strcmp(n->domain, QP_LLM_DOMAIN) && !strcmp(n->op_type, "Linear");
}

bool qp_gview_capable(const struct qp_graph *g, int i,
                      const struct qp_wscheme *ws, char *buf, size_t size)
{
    const struct qp_node *n = &g->nodes[i];
    bool conv = is_op(n, "Conv"), mm = is_op(n, "MatMul") || is_op(n, "Gemm") ||
                                        qp_gview_llm_linear(n);
    const struct qp_value *wv = n->n_in > 1 && n->in[1] >= 0
                                    ? &g->values[n->in[1]] : NULL;
    const struct qp_tensor *w = wv ? wv->konst : NULL;
    const char *why = NULL;
    char tmp[96];
    if (!conv && !mm)
        why = "GPTQ takes Conv, MatMul, Gemm and Linear weights";
    else if (!w || !qp_dtype_traits(w->dtype)->is_float)
        why = "its weight is not a float constant";
    else if (mm && w->ndim != 2)
        why = "a MatMul weight of rank above 2";
    else if (conv && w->ndim < 3)
        why = "a Conv weight of rank below 3";
    else if (n->in[0] < 0 || g->values[n->in[0]].konst)
        why = "its input is a constant";
    else if (wv->n_consumers > 1) {
        snprintf(tmp, sizeof tmp, "its weight is read by %d layers",
                 wv->n_consumers);
        why = tmp;
    } else if (conv && ws->gran == QP_GRAN_TENSOR && qp_attr_int(n, "group", 1) > 1)
        why = "one per-tensor scale across a grouped convolution's groups";
    if (why && buf)
        snprintf(buf, size, "%s", why);
    return !why;
}

void qp_gview_release(struct qp_gview *v)
{
    free(v->colmap);
    memset(v, 0, sizeof *v);
}

enum qp_status qp_gview_init(struct qp_gview *v, const struct qp_graph *g,
                             int i, const struct qp_wscheme *ws,
                             enum qp_wlayout l, struct qp_error *err)
{
    memset(v, 0, sizeof *v);
    const struct qp_node *n = &g->nodes[i];
    const struct qp_tensor *w = g->values[n->in[1]].konst;
    v->w = w;
    v->layout = l;
    enum qp_status st = qp_qgeom_init(&v->geo, w->ndim, w->shape, ws->gran,
                                      ws->group, l, err);
    if (st)
        return st;
    int oa, ia;
    qp_wlayout_axes(l, w->ndim, &oa, &ia);
    v->ws = *ws;
    v->ws.group = 0;
    if (v->geo.count == 1)
        v->ws.gran = QP_GRAN_TENSOR;
    else if (v->geo.block == 0)
        v->ws.gran = QP_GRAN_CHANNEL;
    else {
        v->ws.gran = QP_GRAN_GROUP;
        v->ws.group = v->geo.block;
    }
    if (v->ws.gran != QP_GRAN_GROUP) /* fixed parameters anyway */
        v->ws.gptq.static_groups = false;
    size_t gsz = (size_t)v->ws.group;
    v->parts = 1;
    v->kvol = 1;
    if (is_op(n, "Conv")) {
        if (oa != 0 || ia != 1)
            return qp_fail(err, QP_E_UNSUPPORTED, "'%s': a Conv weight in the "
                           "%s layout", w->name, qp_wlayout_name(l));
        v->kind = QP_GVIEW_CONV;
        v->parts = (size_t)qp_attr_int(n, "group", 1);
        for (int d = 2; d < w->ndim; d++)
            v->kvol *= (size_t)w->shape[d];
        v->ic = (size_t)w->shape[1];
        v->rows = (size_t)w->shape[0] / v->parts;
        v->cols = v->ic * v->kvol;
    } else {
        v->kind = oa == 0 ? QP_GVIEW_ROWS : QP_GVIEW_COLS;
        v->rows = (size_t)w->shape[oa];
        v->cols = (size_t)w->shape[ia];
        v->ic = v->cols;
    }
    v->nb = gsz ? (v->ic + gsz - 1) / gsz : 1;
    v->icp = v->ic;
    v->vcols = v->cols;
    v->tapmajor = v->kind == QP_GVIEW_CONV && gsz && v->kvol > 1;
    if (!v->tapmajor)
        return QP_OK;
    v->icp = v->nb * gsz;
    v->vcols = v->kvol * v->icp;
    v->colmap = malloc(v->vcols * sizeof *v->colmap);
    if (!v->colmap)
        return qp_fail(err, QP_E_NOMEM, "'%s': out of memory", w->name);
    for (size_t t = 0; t < v->kvol; t++)
        for (size_t c = 0; c < v->icp; c++)
            v->colmap[t * v->icp + c] =
                c < v->ic ? (int64_t)(c * v->kvol + t) : -1;
    return QP_OK;
}

/* The element of the weight behind view column c of output o, or -1 for
 * padding. */
static int64_t element(const struct qp_gview *v, size_t o, size_t c)
{
    switch (v->kind) {
    case QP_GVIEW_ROWS: return (int64_t)(o * v->cols + c);
    case QP_GVIEW_COLS: return (int64_t)(c * v->rows + o);
    default: break;
    }
    size_t nc = c;
    if (v->tapmajor) {
        size_t t = c / v->icp, i = c % v->icp;
        if (i >= v->ic)
            return -1;
        nc = i * v->kvol + t;
    }
    return (int64_t)(o * v->cols + nc);
}

/* The layer column (im2col order) of view column c, or -1. */
static int64_t natural(const struct qp_gview *v, size_t c)
{
    return v->colmap ? v->colmap[c] : (int64_t)c;
}

float *qp_gview_weights(const struct qp_gview *v)
{
    size_t numel = qp_tensor_numel(v->w), total = v->parts * v->rows * v->vcols;
    float *w = malloc(numel * sizeof *w + 1), *out = calloc(total + 1, sizeof *out);
    if (!w || !out) {
        free(w);
        free(out);
        return NULL;
    }
    qp_tensor_read_f32(v->w, 0, numel, w);
    for (size_t o = 0; o < v->parts * v->rows; o++)
        for (size_t c = 0; c < v->vcols; c++) {
            int64_t e = element(v, o, c);
            if (e >= 0)
                out[o * v->vcols + c] = w[e];
        }
    free(w);
    return out;
}

/* The weight's scale index of view scale j of output o. */
static size_t scale_index(const struct qp_gview *v, size_t o, size_t j)
{
    switch (v->ws.gran) {
    case QP_GRAN_TENSOR: return 0;
    case QP_GRAN_CHANNEL: return o;
    default: break;
    }
    if (v->kind == QP_GVIEW_ROWS)
        return o * v->nb + j;
    if (v->kind == QP_GVIEW_COLS)
        return j * v->rows + o;
    size_t t = j / v->nb, b = j % v->nb; /* tap-major groups */
    return (o * v->nb + b) * v->kvol + t;
}

/* g_idx's value for view group j: its index among one channel's scales. */
static int32_t gidx_value(const struct qp_gview *v, int32_t j)
{
    if (v->kind != QP_GVIEW_CONV)
        return j;
    size_t t = (size_t)j / v->nb, b = (size_t)j % v->nb;
    return (int32_t)(b * v->kvol + t);
}

static enum qp_status assemble_params(const struct qp_gview *v,
                                      const struct qp_gptq_layer_result *res,
                                      float *scale, int32_t *zp,
                                      struct qp_error *err)
{
    size_t per = v->ws.gran == QP_GRAN_TENSOR ? 1
                 : v->ws.gran == QP_GRAN_CHANNEL
                     ? v->rows
                     : v->rows * (v->tapmajor ? v->kvol * v->nb : v->nb);
    for (size_t p = 0; p < v->parts; p++) {
        const struct qp_qparams *qp = res->part[p].q->qp;
        if (!qp || qp->count != per || (zp && !qp->zero_point))
            return qp_fail(err, QP_E_INVAL, "'%s': GPTQ gave %zu parameters "
                           "for a part, expected %zu", v->w->name,
                           qp ? qp->count : 0, per);
        for (size_t k = 0; k < per; k++) {
            size_t o = p * v->rows + (v->ws.gran == QP_GRAN_TENSOR ? 0
                                      : v->ws.gran == QP_GRAN_CHANNEL
                                          ? k : k / (per / v->rows));
            size_t j = v->ws.gran == QP_GRAN_GROUP ? k % (per / v->rows) : 0;
            size_t s = scale_index(v, o, j);
            scale[s] = qp->scale[k];
            if (zp)
                zp[s] = qp->zero_point[k];
        }
    }
    return QP_OK;
}

/* The g_idx tensor, or NULL (*out) when every part kept its groups. */
static enum qp_status assemble_gidx(const struct qp_gview *v,
                                    const struct qp_gptq_layer_result *res,
                                    struct qp_tensor **out, struct qp_error *err)
{
    *out = NULL;
    bool any = false;
    for (size_t p = 0; p < v->parts; p++)
        any |= res->part[p].g_idx && !res->part[p].g_idx_trivial;
    if (!any)
        return QP_OK;
    int64_t shape[QP_MAX_DIMS];
    int nd = 0;
    if (v->parts > 1)
        shape[nd++] = (int64_t)v->parts;
    if (v->kind == QP_GVIEW_CONV)
        for (int d = 1; d < v->w->ndim; d++)
            shape[nd++] = v->w->shape[d];
    else
        shape[nd++] = (int64_t)v->cols;
    size_t len = strlen(v->w->name) + sizeof ".g_idx";
    char *name = malloc(len);
    if (!name)
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    snprintf(name, len, "%s.g_idx", v->w->name);
    enum qp_status st = qp_tensor_new(name, QP_DTYPE_I32, nd, shape, out, err);
    free(name);
    if (st)
        return st;
    int32_t *gi = (*out)->data;
    size_t gsz = (size_t)v->ws.group;
    for (size_t p = 0; p < v->parts; p++) {
        const int32_t *g = res->part[p].g_idx;
        for (size_t c = 0; c < v->vcols; c++) {
            int64_t nc = natural(v, c);
            if (nc >= 0)
                gi[p * v->cols + (size_t)nc] =
                    gidx_value(v, g ? g[c] : (int32_t)(c / gsz));
        }
    }
    return QP_OK;
}

enum qp_status qp_gview_assemble(const struct qp_gview *v,
                                 const struct qp_gptq_layer_result *res,
                                 struct qp_wquant *out, struct qp_error *err)
{
    *out = (struct qp_wquant){0};
    const struct qp_tensor *w = v->w;
    size_t numel = qp_tensor_numel(w), count = v->geo.count;
    bool asym = v->ws.f.asym;
    int32_t *q = malloc(numel * sizeof *q + 1), *row = malloc(v->vcols * sizeof *row + 1);
    float *scale = malloc(count * sizeof *scale + 1);
    int32_t *zp = asym ? malloc(count * sizeof *zp + 1) : NULL;
    enum qp_dtype dt = qp_qformat_dtype(&v->ws.f);
    enum qp_status st = q && row && scale && (!asym || zp)
                            ? QP_OK
                            : qp_fail(err, QP_E_NOMEM, "'%s': out of memory",
                                      w->name);
    if (!st)
        st = qp_tensor_new(w->name, QP_DTYPE_F32, w->ndim, w->shape, &out->fake,
                           err);
    for (size_t p = 0; !st && p < v->parts; p++)
        for (size_t r = 0; r < v->rows; r++) {
            size_t o = p * v->rows + r;
            qp_pack_load(res->part[p].q->dtype, res->part[p].q->data,
                         r * v->vcols, v->vcols, row);
            const float *f = res->fake + o * v->vcols;
            for (size_t c = 0; c < v->vcols; c++) {
                int64_t e = element(v, o, c);
                if (e < 0)
                    continue;
                q[e] = row[c];
                ((float *)out->fake->data)[e] = f[c];
            }
        }
    if (!st)
        st = assemble_params(v, res, scale, zp, err);
    if (!st)
        st = qp_tensor_new(w->name, dt, w->ndim, w->shape, &out->q, err);
    if (!st) {
        qp_pack_store(dt, q, numel, out->q->data, 0);
        st = qp_tensor_set_qparams(out->q, count, scale, zp, v->geo.axis,
                                   v->geo.block, err);
    }
    if (!st && w->layout)
        st = qp_tensor_set_layout(out->q, w->layout, err);
    if (!st)
        st = assemble_gidx(v, res, &out->g_idx, err);
    if (st) {
        qp_tensor_free(out->q);
        qp_tensor_free(out->fake);
        qp_tensor_free(out->g_idx);
        *out = (struct qp_wquant){0};
    }
    free(q);
    free(row);
    free(scale);
    free(zp);
    return st;
}
