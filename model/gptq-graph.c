/* model/gptq-graph.c: GPTQ over a graph's layers, node by node over the
 * calibration inputs (model/gptq-graph.h). */
#include "model/gptq-graph.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/hash.h"
#include "core/parallel.h"
#include "kernels/conv-f32.h"
#include "model/exec.h"
#include "model/gptq-view.h"
#include "model/op-conv.h"
#include "model/op.h"

/* ---- capture ------------------------------------------------------------ */

/* Floats of im2col tile a Hessian update takes at once (8 MiB). */
#define TILE_FLOATS ((size_t)2 << 20)

static bool is_op(const struct qp_node *n, const char *op)
{
    return !n->domain[0] && !strcmp(n->op_type, op);
}

static bool pointwise(const struct qp_conv_nd *g)
{
    for (int i = 0; i < g->nsp; i++)
        if (g->kernel[i] != 1 || g->stride[i] != 1 || g->pad[i] != 0 ||
            g->out[i] != g->in[i])
            return false;
    return true;
}

static enum qp_status conv_rows(const struct qp_op_ctx *c, qp_gptq_rows_fn fn,
                                void *ctx, int layer, float **scratch,
                                size_t *cap, struct qp_error *err)
{
    struct qp_conv_nd cg;
    enum qp_status st = qp_op_conv_geom(c, &cg, err);
    if (st)
        return st;
    size_t kvol = 1, sout = 1, sin = 1;
    for (int i = 0; i < cg.nsp; i++) {
        kvol *= (size_t)cg.kernel[i];
        sout *= (size_t)cg.out[i];
        sin *= (size_t)cg.in[i];
    }
    size_t icg = cg.in_c / cg.groups, kk = icg * kvol;
    bool pw = pointwise(&cg);
    size_t tile = TILE_FLOATS / kk;
    tile = tile < 64 ? 64 : tile < sout ? tile : sout;
    if (!pw && *cap < kk * tile) {
        free(*scratch);
        *cap = 0;
        if (!(*scratch = malloc(kk * tile * sizeof **scratch)))
            return qp_fail(err, QP_E_NOMEM, "out of memory for an im2col tile "
                           "of %zu x %zu", kk, tile);
        *cap = kk * tile;
    }
    const float *x = c->in[0]->data;
    for (size_t n = 0; !st && n < cg.batch; n++)
        for (size_t p = 0; !st && p < cg.groups; p++) {
            if (pw) { /* the input planes are the im2col matrix */
                struct qp_layer_rows r = {p, x + (n * cg.in_c + p * icg) * sin,
                                          sout, kk, sin, true};
                st = fn(ctx, layer, &r, err);
                continue;
            }
            for (size_t p0 = 0; !st && p0 < sout; p0 += tile) {
                size_t nt = sout - p0 < tile ? sout - p0 : tile;
                qp_conv_f32_im2col(c->pool, &cg, x, n, p, p0, nt, *scratch);
                struct qp_layer_rows r = {p, *scratch, nt, kk, nt, true};
                st = fn(ctx, layer, &r, err);
            }
        }
    return st;
}

enum qp_status qp_gptq_node_rows(const struct qp_graph *g, int node,
                                 const struct qp_tensor *x, qp_gptq_rows_fn fn,
                                 void *ctx, int layer, struct qp_pool *pool,
                                 float **scratch, size_t *scratch_cap,
                                 struct qp_error *err)
{
    const struct qp_node *n = &g->nodes[node];
    const struct qp_tensor *w = g->values[n->in[1]].konst;
    char lab[256];
    if (x->dtype != QP_DTYPE_F32 || !x->ndim)
        return qp_fail(err, QP_E_UNSUPPORTED, "%s: GPTQ needs a float input "
                       "of rank 1 or more, this one is %s of rank %d",
                       qp_node_label(g, node, lab, sizeof lab),
                       qp_dtype_name(x->dtype), x->ndim);
    if (is_op(n, "Conv")) {
        const struct qp_tensor *in[3] = {x, w, NULL};
        struct qp_op_ctx c = {g, node, n, in, 2, NULL, pool, NULL};
        float *own = NULL;
        size_t cap = 0;
        enum qp_status st = conv_rows(&c, fn, ctx, layer, scratch ? scratch : &own,
                                      scratch ? scratch_cap : &cap, err);
        free(own);
        return st;
    }
    bool ta = is_op(n, "Gemm") && qp_attr_int(n, "transA", 0);
    size_t numel = qp_tensor_numel(x);
    size_t k = ta ? (size_t)x->shape[0] : (size_t)x->shape[x->ndim - 1];
    if ((is_op(n, "Gemm") && x->ndim != 2) || !k)
        return qp_fail(err, QP_E_SHAPE, "%s: an input of rank %d",
                       qp_node_label(g, node, lab, sizeof lab), x->ndim);
    struct qp_layer_rows r = {0, x->data, numel / k, k, ta ? numel / k : k, ta};
    return fn(ctx, layer, &r, err);
}

/* ---- keys --------------------------------------------------------------- */

static bool gptq_node(const struct qp_graph *g, const struct qp_qassign *a, int i)
{
    return a->wq[i] && a->ws[i].algo == QP_WALGO_GPTQ &&
           qp_node_weighted(g, i, NULL) &&
           qp_gview_capable(g, i, &a->ws[i], NULL, 0);
}

enum qp_status qp_gptq_graph_keys(const struct qp_graph *g,
                                  const struct qp_qassign *a, enum qp_round r,
                                  bool fp32_inputs, uint64_t calib,
                                  uint64_t *key, struct qp_error *err)
{
    /* a Merkle hash: each value's stands for every weight scheme upstream */
    uint64_t *vh = calloc((size_t)g->n_values + 1, sizeof *vh);
    if (!vh)
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    uint64_t base = qp_hash_u64(qp_hash_u64(QP_HASH_INIT, calib), fp32_inputs);
    for (int k = 0; k < g->n_inputs; k++)
        vh[g->inputs[k]] = qp_hash_u64(QP_HASH_INIT, (uint64_t)k + 1);
    for (int oi = 0; oi < g->n_nodes; oi++) {
        int i = g->order[oi];
        const struct qp_node *n = &g->nodes[i];
        enum qp_wlayout l;
        key[i] = 0;
        if (gptq_node(g, a, i)) {
            key[i] = qp_hash_u64(base, fp32_inputs ? 0 : vh[n->in[0]]);
            key[i] += !key[i];
        }
        uint64_t h = qp_hash_u64(QP_HASH_INIT, (uint64_t)i);
        if (a->wq[i] && qp_node_weighted(g, i, &l))
            h = qp_hash_u64(qp_wscheme_hash(qp_hash_u64(h, r), &a->ws[i]), l);
        for (int k = 0; k < n->n_in; k++)
            if (n->in[k] >= 0 && !g->values[n->in[k]].konst)
                h = qp_hash_u64(h, vh[n->in[k]]);
        for (int k = 0; k < n->n_out; k++)
            if (n->out[k] >= 0)
                vh[n->out[k]] = qp_hash_u64(h, (uint64_t)k);
    }
    free(vh);
    return QP_OK;
}

/* ---- the run ------------------------------------------------------------ */

struct wave {
    const struct qp_graph *g;
    const struct qp_gptq_graph_opts *o;
    size_t ns, nv;
    struct qp_tensor **val; /* [ns * nv] */
    bool *owned;            /* [ns * nv] */
    int *left;              /* [nv] reads still to come */
    bool *todo, *run;       /* [n_nodes] */
    size_t ntodo, done;
    struct qp_pool *pool;
    struct qp_scratch scratch;
    float *col;
    size_t col_cap;
};

static struct qp_wquant_opts wopts(const struct wave *w, int i)
{
    enum qp_wlayout l = QP_WLAYOUT_TORCH;
    qp_node_weighted(w->g, i, &l);
    return (struct qp_wquant_opts){w->o->round, l};
}

static const struct qp_wquant *cached(const struct wave *w, int i)
{
    struct qp_wquant_opts wo = wopts(w, i);
    return qp_wcache_find(w->o->wcache, w->g->nodes[i].in[1], &w->o->assign->ws[i],
                          &wo, w->o->key[i]);
}

static void drop(struct wave *w, size_t s, int v)
{
    size_t k = s * w->nv + (size_t)v;
    if (w->owned[k])
        qp_tensor_free(w->val[k]);
    w->val[k] = NULL;
    w->owned[k] = false;
}

/* Which nodes run and which layers are made; reads per value. */
static enum qp_status plan(struct wave *w, struct qp_error *err)
{
    const struct qp_graph *g = w->g;
    const struct qp_qassign *a = w->o->assign;
    bool *need = calloc(w->nv + 1, sizeof *need);
    if (!need)
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    for (int i = 0; i < g->n_nodes; i++) {
        w->todo[i] = w->o->key[i] && gptq_node(g, a, i) && !cached(w, i);
        w->ntodo += w->todo[i];
    }
    for (int oi = g->n_nodes - 1; oi >= 0; oi--) {
        int i = g->order[oi];
        const struct qp_node *n = &g->nodes[i];
        for (int k = 0; !w->run[i] && k < n->n_out; k++)
            w->run[i] = n->out[k] >= 0 && need[n->out[k]];
        for (int k = 0; (w->run[i] || w->todo[i]) && k < n->n_in; k++)
            if (n->in[k] >= 0 && !g->values[n->in[k]].konst)
                need[n->in[k]] = true;
    }
    for (int i = 0; i < g->n_nodes; i++) {
        const struct qp_node *n = &g->nodes[i];
        for (int k = 0; (w->run[i] || w->todo[i]) && k < n->n_in; k++) {
            bool first = n->in[k] >= 0;
            for (int j = 0; first && j < k; j++)
                first = n->in[j] != n->in[k];
            if (first)
                w->left[n->in[k]]++;
        }
    }
    free(need);
    return QP_OK;
}

/* Node i on every set; its outputs kept where someone reads them. */
static enum qp_status run_node(struct wave *w, int i, struct qp_error *err)
{
    const struct qp_graph *g = w->g;
    const struct qp_node *n = &g->nodes[i];
    const struct qp_tensor *wt = NULL;
    enum qp_wlayout l;
    enum qp_status st = QP_OK;
    if (!w->o->fp32_inputs && w->o->assign->wq[i] && qp_node_weighted(g, i, &l)) {
        const struct qp_wquant *wq = w->o->key[i] ? cached(w, i) : NULL;
        struct qp_wquant_opts wo = wopts(w, i);
        if (!wq && (st = qp_wcache_get(w->o->wcache, g, n->in[1],
                                       &w->o->assign->ws[i], &wo, false, &wq,
                                       err)))
            return st;
        /* an operator that takes integer weights reads them (an LLM's
         * float copy would be four times their size) unless a g_idx says
         * their parameters do not describe them */
        if (n->def->traits & QP_TRAIT_QWEIGHT && !wq->g_idx)
            wt = wq->q;
        else if ((st = qp_wcache_fake(w->o->wcache, wq, &wt, err)))
            return st;
    }
    const struct qp_tensor *in[QP_OP_MAX_IO];
    struct qp_tensor *out[QP_OP_MAX_IO];
    if (n->n_in > QP_OP_MAX_IO || n->n_out > QP_OP_MAX_IO)
        return qp_fail(err, QP_E_UNSUPPORTED, "node '%s': too many inputs or "
                       "outputs", n->name);
    for (size_t s = 0; !st && s < w->ns; s++) {
        for (int k = 0; k < n->n_in; k++) {
            int v = n->in[k];
            in[k] = v < 0 ? NULL : g->values[v].konst ? g->values[v].konst
                                                      : w->val[s * w->nv + v];
        }
        if (wt)
            in[1] = wt;
        if ((st = qp_exec_node(g, i, in, &w->scratch, w->pool, out, err))) {
            qp_error_prefix(err, "calibration input %zu: ", s + 1);
            break;
        }
        for (int k = 0; k < n->n_out; k++) {
            int v = n->out[k];
            if (v >= 0 && w->left[v] > 0) {
                w->val[s * w->nv + v] = out[k];
                w->owned[s * w->nv + v] = true;
            } else {
                qp_tensor_free(out[k]);
            }
        }
    }
    return st;
}

/* The reads of node i are done: values nobody reads any more are freed. */
static void release_inputs(struct wave *w, int i)
{
    const struct qp_node *n = &w->g->nodes[i];
    for (int k = 0; k < n->n_in; k++) {
        int v = n->in[k];
        bool first = v >= 0 && !w->g->values[v].konst;
        for (int j = 0; first && j < k; j++)
            first = n->in[j] != v;
        if (first && --w->left[v] == 0)
            for (size_t s = 0; s < w->ns; s++)
                drop(w, s, v);
    }
}

/* Captures layer i's inputs from every set and quantizes it. */
static enum qp_status make_layer(struct wave *w, int i, struct qp_error *err)
{
    const struct qp_graph *g = w->g;
    const struct qp_wscheme *ws = &w->o->assign->ws[i];
    struct qp_wquant_opts wo = wopts(w, i);
    char name[256];
    qp_node_weight_name(g, i, name, sizeof name);
    struct qp_gview v;
    struct qp_gptq_layer *layer = NULL;
    struct qp_gptq_layer_result res = {0};
    struct qp_wquant q = {0};
    float *wv = NULL;
    enum qp_status st = qp_gview_init(&v, g, i, ws, wo.layout, err);
    if (!st)
        st = qp_gptq_layer_new(name, v.parts, v.rows, v.cols, w->pool, &layer,
                               err);
    for (size_t s = 0; !st && s < w->ns; s++) {
        const struct qp_tensor *x = w->val[s * w->nv + g->nodes[i].in[0]];
        struct qp_gptq_layer *one[1] = {layer};
        if ((st = qp_gptq_node_rows(g, i, x, qp_gptq_layer_rows_cb, one, 0,
                                    w->pool, &w->col, &w->col_cap, err)))
            qp_error_prefix(err, "calibration input %zu: ", s + 1);
        qp_gptq_layer_sample(layer);
    }
    if (!st && !(wv = qp_gview_weights(&v)))
        st = qp_fail(err, QP_E_NOMEM, "layer '%s': out of memory", name);
    struct qp_gptq_view view = {v.vcols, v.colmap};
    struct qp_gptq_opts go = {&v.ws, w->o->round, name, w->pool};
    if (!st)
        st = qp_gptq_layer_quantize(layer, wv, &view, &go, &res, err);
    if (!st)
        st = qp_gview_assemble(&v, &res, &q, err);
    if (!st)
        st = qp_wcache_put(w->o->wcache, g->nodes[i].in[1], ws, &wo, w->o->key[i],
                           &q, err);
    if (!st && w->o->on_layer) {
        struct qp_gptq_graph_layer gl = {i, name, v.rows * v.parts, v.cols,
                                         v.parts, layer->samples, &res};
        st = w->o->on_layer(w->o->layer_ctx, &gl, err);
    }
    qp_progress_report(w->o->progress, "gptq", ++w->done, w->ntodo);
    qp_gptq_layer_result_release(&res);
    qp_gptq_layer_free(layer);
    qp_gview_release(&v);
    free(wv);
    return st;
}

static void wave_release(struct wave *w)
{
    for (size_t s = 0; w->val && s < w->ns; s++)
        for (size_t v = 0; v < w->nv; v++)
            drop(w, s, (int)v);
    free(w->val);
    free(w->owned);
    free(w->left);
    free(w->todo);
    free(w->run);
    free(w->col);
    qp_scratch_release(&w->scratch);
    qp_pool_free(w->pool);
}

enum qp_status qp_gptq_graph_run(const struct qp_graph *g,
                                 const struct qp_gptq_graph_opts *o,
                                 size_t *made, struct qp_error *err)
{
    if (made)
        *made = 0;
    struct wave w = {g, o, o->ncalib, (size_t)g->n_values, .pool = NULL};
    size_t nn = (size_t)g->n_nodes + 1;
    w.val = calloc(w.ns * w.nv + 1, sizeof *w.val);
    w.owned = calloc(w.ns * w.nv + 1, sizeof *w.owned);
    w.left = calloc(w.nv + 1, sizeof *w.left);
    w.todo = calloc(nn, sizeof *w.todo);
    w.run = calloc(nn, sizeof *w.run);
    enum qp_status st = w.val && w.owned && w.left && w.todo && w.run
                            ? plan(&w, err)
                            : qp_fail(err, QP_E_NOMEM, "out of memory");
    if (!st && w.ntodo && !w.ns)
        st = qp_fail(err, QP_E_INVAL, "GPTQ needs calibration inputs (--calib)");
    if (st || !w.ntodo) {
        wave_release(&w);
        return st;
    }
    for (size_t s = 0; !st && s < w.ns; s++)
        for (int k = 0; !st && k < g->n_inputs; k++) {
            int v = g->inputs[k];
            if ((st = qp_exec_check_input(g, v, o->calib[s][k], err)))
                qp_error_prefix(err, "calibration input %zu: ", s + 1);
            w.val[s * w.nv + (size_t)v] = o->calib[s][k];
        }
    w.pool = qp_pool_new(0);
    for (int oi = 0; !st && oi < g->n_nodes && w.done < w.ntodo; oi++) {
        int i = g->order[oi];
        if (w.todo[i])
            st = make_layer(&w, i, err);
        if (!st && w.run[i])
            st = run_node(&w, i, err);
        if (w.todo[i] || w.run[i])
            release_inputs(&w, i);
    }
    if (made && !st)
        *made = w.done;
    wave_release(&w);
    return st;
}
