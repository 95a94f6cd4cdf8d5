/* model/fold.c: constant folding and Conv+BatchNormalization folding
 * (model/fold.h). */
#include "model/fold.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/exec.h"

static enum qp_status oom(struct qp_error *err)
{
    return qp_fail(err, QP_E_NOMEM, "graph: out of memory");
}

enum qp_status qp_graph_fold_constants(struct qp_graph *g, int *folded,
                                       struct qp_error *err)
{
    bool *dead = calloc((size_t)(g->n_nodes ? g->n_nodes : 1), 1);
    if (!dead)
        return oom(err);
    int count = 0;
    enum qp_status st = QP_OK;
    for (int oi = 0; !st && oi < g->n_nodes; oi++) {
        int i = g->order[oi];
        struct qp_node *n = &g->nodes[i];
        bool all_const = !n->def->no_fold;
        const struct qp_tensor *in[QP_OP_MAX_IO];
        for (int k = 0; all_const && k < n->n_in; k++) {
            int v = n->in[k];
            in[k] = v >= 0 ? g->values[v].konst : NULL;
            all_const = v < 0 || in[k];
        }
        if (!all_const)
            continue;
        struct qp_tensor *out[QP_OP_MAX_IO];
        if ((st = qp_exec_node(g, i, in, NULL, NULL, out, err)))
            break;
        for (int k = 0; k < n->n_out; k++) {
            int v = n->out[k];
            if (v < 0) {
                qp_tensor_free(out[k]);
                continue;
            }
            if (!st)
                st = qp_graph_set_const(g, v, out[k], err);
            else
                qp_tensor_free(out[k]);
        }
        dead[i] = true;
        count++;
    }
    if (!st && count)
        st = qp_graph_compact(g, dead, err);
    free(dead);
    if (folded)
        *folded = st ? 0 : count;
    return st;
}

/* ---- Conv + BatchNormalization ---------------------------------------- */

static const struct qp_tensor *const_f32(const struct qp_graph *g, int v,
                                         size_t numel)
{
    if (v < 0)
        return NULL;
    const struct qp_tensor *t = g->values[v].konst;
    if (!t || t->dtype != QP_DTYPE_F32 || (numel && qp_tensor_numel(t) != numel))
        return NULL;
    return t;
}

/* The Conv node feeding BN node b when the pair can fold, else -1. */
static int foldable_conv(const struct qp_graph *g, int b)
{
    const struct qp_node *bn = &g->nodes[b];
    if (strcmp(bn->op_type, "BatchNormalization") || bn->domain[0] ||
        qp_node_attr(bn, "training_mode") || bn->n_in != 5)
        return -1;
    for (int k = 1; k < bn->n_out; k++)
        if (bn->out[k] >= 0)
            return -1;
    int x = bn->in[0];
    const struct qp_value *xv = &g->values[x];
    if (xv->producer < 0 || xv->is_output || xv->n_consumers != 1)
        return -1;
    int ci = xv->producer;
    const struct qp_node *cv = &g->nodes[ci];
    if (strcmp(cv->op_type, "Conv") || cv->domain[0] || cv->n_in < 2)
        return -1;
    const struct qp_tensor *w = const_f32(g, cv->in[1], 0);
    if (!w || w->ndim < 3)
        return -1;
    size_t oc = (size_t)w->shape[0];
    if (cv->n_in > 2 && cv->in[2] >= 0 && !const_f32(g, cv->in[2], oc))
        return -1;
    for (int k = 1; k < 5; k++)
        if (!const_f32(g, bn->in[k], oc))
            return -1;
    return ci;
}

static enum qp_status new_const(struct qp_graph *g, const char *base,
                                const char *suffix, const struct qp_tensor *like,
                                int64_t n, struct qp_tensor **t, int *id,
                                struct qp_error *err)
{
    char name[1024];
    snprintf(name, sizeof name, "%s%s", base, suffix);
    enum qp_status st;
    int64_t shape1[1] = {n};
    if (like)
        st = qp_tensor_new(name, QP_DTYPE_F32, like->ndim, like->shape, t, err);
    else
        st = qp_tensor_new(name, QP_DTYPE_F32, 1, shape1, t, err);
    if (st)
        return st;
    for (int k = 2;; k++) { /* a unique name */
        if (qp_graph_find(g, (*t)->name) < 0)
            break;
        snprintf(name, sizeof name, "%s%s%d", base, suffix, k);
        if ((st = qp_tensor_rename(*t, name, err))) {
            qp_tensor_free(*t);
            return st;
        }
    }
    if ((st = qp_graph_value(g, (*t)->name, id, err))) {
        qp_tensor_free(*t);
        return st;
    }
    return qp_graph_set_const(g, *id, *t, err);
}

static enum qp_status fold_pair(struct qp_graph *g, int ci, int b,
                                struct qp_error *err)
{
    struct qp_node *cv = &g->nodes[ci];
    const struct qp_node *bn = &g->nodes[b];
    int win = cv->in[1], bin = cv->n_in > 2 ? cv->in[2] : -1;
    const struct qp_tensor *w = g->values[win].konst;
    const struct qp_tensor *bias = bin >= 0 ? g->values[bin].konst : NULL;
    const float *scale = g->values[bn->in[1]].konst->data;
    const float *beta = g->values[bn->in[2]].konst->data;
    const float *mean = g->values[bn->in[3]].konst->data;
    const float *var = g->values[bn->in[4]].konst->data;
    double eps = qp_attr_float(bn, "epsilon", 1e-5f);
    int64_t oc = w->shape[0];
    size_t per = qp_tensor_numel(w) / (size_t)oc;
    /* names before g->values may move */
    char wname[512], bname[512];
    snprintf(wname, sizeof wname, "%s", g->values[win].name);
    if (bin >= 0)
        snprintf(bname, sizeof bname, "%s", g->values[bin].name);
    else
        snprintf(bname, sizeof bname, "%s:bias", g->values[cv->out[0]].name);
    struct qp_tensor *nw, *nb;
    int wid, bid;
    enum qp_status st = new_const(g, wname, ":bn", w, 0, &nw, &wid, err);
    if (st || (st = new_const(g, bname, ":bn", NULL, oc, &nb, &bid, err)))
        return st;
    /* re-read: adding values may have moved g->values */
    w = g->values[win].konst;
    bias = bin >= 0 ? g->values[bin].konst : NULL;
    const float *ws = w->data, *bs = bias ? bias->data : NULL;
    float *wd = nw->data, *bd = nb->data;
    for (int64_t c = 0; c < oc; c++) {
        double a = scale[c] / sqrt((double)var[c] + eps);
        for (size_t i = 0; i < per; i++)
            wd[(size_t)c * per + i] = (float)(ws[(size_t)c * per + i] * a);
        bd[c] = (float)(((bs ? bs[c] : 0.0) - mean[c]) * a + beta[c]);
    }
    if (cv->n_in < 3) {
        int *in = realloc(cv->in, 3 * sizeof *in);
        if (!in)
            return oom(err);
        cv->in = in;
        cv->n_in = 3;
    }
    cv->in[1] = wid;
    cv->in[2] = bid;
    int old = cv->out[0], y = bn->out[0];
    cv->out[0] = y;
    g->values[y].producer = ci;
    g->values[old].producer = -1;
    return QP_OK;
}

enum qp_status qp_graph_fold_batchnorm(struct qp_graph *g, int *folded,
                                       struct qp_error *err)
{
    bool *dead = calloc((size_t)(g->n_nodes ? g->n_nodes : 1), 1);
    if (!dead)
        return oom(err);
    int count = 0;
    enum qp_status st = QP_OK;
    for (int b = 0; !st && b < g->n_nodes; b++) {
        int ci = foldable_conv(g, b);
        if (ci < 0 || dead[ci])
            continue;
        if (!(st = fold_pair(g, ci, b, err))) {
            dead[b] = true;
            count++;
        }
    }
    if (!st && count)
        st = qp_graph_compact(g, dead, err);
    free(dead);
    if (folded)
        *folded = st ? 0 : count;
    return st;
}
