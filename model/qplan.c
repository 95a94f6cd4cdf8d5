/* model/qplan.c: planning the quantized modes: layer schemes, weights,
 * calibration, activation parameters, biases (model/qplan.h). The
 * execution hooks are in model/qexec.c. */
#include "model/qplan.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/hash.h"
#include "model/qexec-da8w4.h"
#include "model/qexec-fuse.h"
#include "quant/qparams.h"
#include "quant/rtn.h"

const char *qp_run_mode_name(enum qp_run_mode m)
{
    static const char *const names[] = {"fp32", "fake", "int"};
    _Static_assert(sizeof names / sizeof names[0] == QP_MODE_COUNT, "modes");
    return (unsigned)m < QP_MODE_COUNT ? names[m] : "?";
}

bool qp_run_mode_from_name(const char *name, enum qp_run_mode *out)
{
    for (int m = 0; m < QP_MODE_COUNT; m++)
        if (!strcmp(name, qp_run_mode_name((enum qp_run_mode)m))) {
            *out = (enum qp_run_mode)m;
            return true;
        }
    return false;
}

static bool is_op(const struct qp_node *n, const char *op)
{
    return !n->domain[0] && !strcmp(n->op_type, op);
}

/* Operators whose output values are input 0's, moved: they keep its
 * parameters (the moves_values trait). */
static bool moves_values(const struct qp_node *n)
{
    return n->def && n->def->moves_values && n->def->moves_values(n);
}

/* ---- weights ---------------------------------------------------------- */

static enum qp_status quantize_weight(struct qp_qplan *p, int i,
                                      enum qp_wlayout layout,
                                      const struct qp_wscheme *ws, uint64_t key,
                                      struct qp_error *err)
{
    const struct qp_graph *g = p->g;
    struct qp_qnode *q = &p->n[i];
    int wv = g->nodes[i].in[1];
    const struct qp_tensor *w = g->values[wv].konst;
    struct qp_wquant_opts o = {p->round, layout};
    const struct qp_wquant *wq;
    enum qp_status st = qp_wcache_get_keyed(p->wcache, g, wv, ws, &o, key,
                                            p->mode == QP_MODE_INT, &wq, err);
    if (st)
        return st;
    q->w_q = wq->q;
    q->wkey = key;
    /* an operator that dequantizes its integer weight itself gets no float
     * copy (model/op.h's QP_TRAIT_QWEIGHT), unless the integers' own
     * parameters do not describe it (a GPTQ weight with a g_idx) */
    q->w_fake = NULL;
    if ((wq->g_idx || !(g->nodes[i].def->traits & QP_TRAIT_QWEIGHT)) &&
        (st = qp_wcache_fake(p->wcache, wq, &q->w_fake, err)))
        return st;
    q->wq = true;
    q->ws = *ws;
    int oa, ia;
    qp_wlayout_axes(layout, w->ndim, &oa, &ia);
    q->out_c = oa >= 0 ? (size_t)w->shape[oa] : 1;
    return QP_OK;
}

/* ---- node kinds and values --------------------------------------------- */

/* 8-bit (or narrower, unpacked) per-tensor or per-channel weights */
static bool int_weights(const struct qp_qnode *q)
{
    return q->wq && q->ws.f.bits <= 8 && q->ws.gran != QP_GRAN_GROUP &&
           (q->w_q->dtype == QP_DTYPE_I8 || q->w_q->dtype == QP_DTYPE_U8);
}

/* The int mode's way for node i; v[] of its inputs must be set. */
static enum qp_qkind node_kind(const struct qp_qplan *p, int i)
{
    const struct qp_graph *g = p->g;
    const struct qp_node *n = &g->nodes[i];
    const struct qp_qnode *q = &p->n[i];
    bool in0 = n->n_in > 0 && n->in[0] >= 0 && p->v[n->in[0]].quant;
    bool in1 = n->n_in > 1 && n->in[1] >= 0 && p->v[n->in[1]].quant;
    bool out0 = n->n_out > 0 && n->out[0] >= 0 && p->v[n->out[0]].has_as &&
                p->v[n->out[0]].f32;
    if (!in0)
        return QP_QK_FLOAT;
    int wrank = q->wq ? q->w_q->ndim : 0;
    if (out0 && is_op(n, "Conv") && int_weights(q) && (wrank == 4 || wrank == 3))
        return QP_QK_CONV;
    if (out0 && is_op(n, "MatMul") && ((int_weights(q) && wrank == 2) || in1))
        return QP_QK_MATMUL;
    const struct qp_tensor *cc = n->n_in > 2 && n->in[2] >= 0
                                     ? g->values[n->in[2]].konst : NULL;
    bool bias_ok = n->n_in < 3 || n->in[2] < 0 ||
                   (cc && (qp_tensor_numel(cc) == q->out_c ||
                           qp_tensor_numel(cc) == 1) && cc->ndim <= 1);
    if (out0 && is_op(n, "Gemm") && int_weights(q) && bias_ok &&
        qp_attr_float(n, "alpha", 1.0f) == 1.0f &&
        qp_attr_float(n, "beta", 1.0f) == 1.0f)
        return QP_QK_GEMM;
    if (out0 && is_op(n, "Add") && in1)
        return QP_QK_ADD;
    if (moves_values(n) && (n->def->traits & QP_TRAIT_INT_PASS))
        return QP_QK_PASS;
    return QP_QK_FLOAT;
}

/* Elementwise operators whose output element is a function of the input
 * elements at that position alone (the elementwise trait). */
static bool elementwise(const struct qp_node *n)
{
    return n->def && (n->def->traits & QP_TRAIT_ELEMENTWISE);
}

/* Node i can run as a lookup table: elementwise, one output, one or two
 * quantized inputs, every other input absent or a scalar float constant.
 * v[] of its inputs must be set. */
static bool lut_ok(const struct qp_qplan *p, int i)
{
    const struct qp_graph *g = p->g;
    const struct qp_node *n = &g->nodes[i];
    if (!elementwise(n) || n->n_out != 1 || n->out[0] < 0 ||
        !p->v[n->out[0]].has_as || !p->v[n->out[0]].f32 || p->n[i].wq)
        return false;
    int quant = 0;
    for (int k = 0; k < n->n_in; k++) {
        int v = n->in[k];
        const struct qp_tensor *t = v >= 0 ? g->values[v].konst : NULL;
        if (v < 0)
            continue;
        if (p->v[v].quant)
            quant++;
        else if (!t || t->dtype != QP_DTYPE_F32 || qp_tensor_numel(t) != 1)
            return false;
    }
    return quant == 1 || quant == 2;
}

static bool activation(const struct qp_graph *g, int v)
{
    const struct qp_value *val = &g->values[v];
    return !val->konst && (val->producer >= 0 || val->is_input);
}

/* Marks the quantized activations (the float ones calibration saw) in
 * topological order, with the values PASS-like nodes inherit, and each
 * node's int-mode kind. */
static void plan_values(struct qp_qplan *p)
{
    const struct qp_graph *g = p->g;
    for (int k = 0; k < g->n_inputs; k++) {
        int v = g->inputs[k];
        p->v[v].quant = p->v[v].has_as && p->v[v].f32;
    }
    for (int oi = 0; oi < g->n_nodes; oi++) {
        int i = g->order[oi];
        const struct qp_node *n = &g->nodes[i];
        bool inherit = moves_values(n) && n->n_in > 0 && n->in[0] >= 0 &&
                       p->v[n->in[0]].quant;
        p->n[i].kind = node_kind(p, i);
        p->n[i].lut_ok = lut_ok(p, i);
        for (int k = 0; k < n->n_out; k++) {
            int v = n->out[k];
            if (v < 0)
                continue;
            p->v[v].quant = p->v[v].has_as && p->v[v].f32 && activation(g, v);
            p->v[v].inherited = p->v[v].quant && inherit && k == 0;
        }
    }
}

/* ---- creation ------------------------------------------------------------- */

void qp_qplan_free(struct qp_qplan *p)
{
    if (!p)
        return;
    const struct qp_graph *g = p->g;
    for (int i = 0; p->n && i < g->n_nodes; i++) {
        struct qp_qnode *q = &p->n[i];
        qp_tensor_free(q->b_fake);
        free(q->b_int);
        free(q->kernel_weight);
        free(q->lut);
        free(q->gap_in);
        qp_rq_release(&q->rq);
        if (q->gemm_ready)
            qp_gemm_s8_release(&q->gemm);
        if (q->conv_ready)
            qp_conv_s8_release(&q->conv);
        if (q->qb4w)
            qp_qb4w_release(q->qb4w);
        free(q->qb4w);
    }
    for (int v = 0; p->obs && v < g->n_values; v++)
        qp_observer_free(p->obs[v]);
    free(p->obs);
    qp_qfuse_cache_free(p->fuse);
    qp_wcache_free(p->own_wcache);
    free(p->v);
    free(p->n);
    free(p);
}

enum qp_round qp_qplan_weight_round(enum qp_rq_flavor f)
{
    switch (f) {
    case QP_RQ_ONNX_REF:
    case QP_RQ_ORT:
    case QP_RQ_XNNPACK_FP32:
    case QP_RQ_XNNPACK_RNDNU: return QP_ROUND_HALF_EVEN;
    default: return QP_ROUND_HALF_AWAY;
    }
}

/* Weight-only int mode: every quantized weight belongs to an operator that
 * takes integer weights (QP_TRAIT_QWEIGHT: LLM linear layers, which
 * dequantize inside the product, kernels/gemm-wq.h). */
static enum qp_status check_weight_only(const struct qp_qplan *p,
                                        struct qp_error *err)
{
    int taken = 0;
    for (int i = 0; i < p->g->n_nodes; i++) {
        if (p->n[i].wq && !(p->g->nodes[i].def->traits & QP_TRAIT_QWEIGHT))
            taken = -1;
        else if (p->n[i].wq && taken >= 0)
            taken++;
    }
    if (taken <= 0)
        return qp_fail(err, QP_E_UNSUPPORTED, "int mode needs activations in the "
                       "scheme (e.g. w8c+a8t)");
    return QP_OK;
}

static enum qp_status check_int(const struct qp_qplan *p, struct qp_error *err)
{
    if (!p->has_acts)
        return check_weight_only(p, err);
    for (int v = 0; v < p->g->n_values; v++) {
        const struct qp_qval *q = &p->v[v];
        if (q->quant && (q->as.f.bits != 8 || q->as.dynamic))
            return qp_fail(err, QP_E_UNSUPPORTED, "activation '%s': int mode runs "
                           "8-bit static per-tensor activations ('a8t' or "
                           "'a8tz')", p->g->values[v].name);
    }
    char lab[256];
    for (int i = 0; i < p->g->n_nodes; i++) {
        const struct qp_qnode *q = &p->n[i];
        if (q->wq && !int_weights(q))
            return qp_fail(err, QP_E_UNSUPPORTED, "%s: int mode runs per-tensor "
                           "or per-channel weights of 2 to 8 bits (narrower ones "
                           "unpacked to int8, as devices run them), not %s w%u: "
                           "%s; use --mode fake",
                           qp_node_label(p->g, i, lab, sizeof lab),
                           q->ws.gran == QP_GRAN_GROUP ? "group-wise" : "these",
                           q->ws.f.bits,
                           q->ws.gran == QP_GRAN_GROUP
                               ? "group-wise weights need a scale per group of "
                                 "the reduction, which the integer kernels "
                                 "(one scale per output channel) do not have"
                               : "the integer kernels take 8-bit weights");
    }
    return QP_OK;
}

/* The plan's assignment: the given one, or one resolved from the scheme
 * or recipe (then owned by *own). */
static enum qp_status plan_assign(const struct qp_graph *g,
                                  const struct qp_qplan_opts *o,
                                  const struct qp_qassign **a,
                                  struct qp_qassign **own, struct qp_error *err)
{
    *own = NULL;
    *a = o->assign;
    if ((o->assign != NULL) + (o->scheme != NULL) + (o->recipe != NULL) != 1)
        return qp_fail(err, QP_E_INVAL, "quantized run: give one of a scheme, a "
                       "recipe or an assignment");
    if (o->assign)
        return QP_OK;
    enum qp_status st = o->scheme ? qp_qassign_uniform(g, o->scheme, own, err)
                                  : qp_qassign_recipe(g, o->recipe, own, NULL, err);
    *a = *own;
    return st;
}

enum qp_status qp_qplan_new(const struct qp_graph *g,
                            const struct qp_qplan_opts *o,
                            struct qp_qplan **out, struct qp_error *err)
{
    *out = NULL;
    const struct qp_qassign *a;
    struct qp_qassign *own;
    enum qp_status st = plan_assign(g, o, &a, &own, err);
    if (st)
        return st;
    struct qp_qplan *p = calloc(1, sizeof *p);
    if (!p) {
        qp_qassign_free(own);
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    }
    p->g = g;
    p->mode = o->mode;
    p->flavor = o->flavor;
    p->qa = o->qa_given ? o->qa : qp_qa_for_requant(o->flavor);
    p->round = qp_qplan_weight_round(o->flavor);
    p->wcache = o->wcache;
    size_t nv = (size_t)(g->n_values ? g->n_values : 1);
    p->v = calloc(nv, sizeof *p->v);
    p->n = calloc((size_t)(g->n_nodes ? g->n_nodes : 1), sizeof *p->n);
    p->obs = calloc(nv, sizeof *p->obs);
    if (!p->v || !p->n || !p->obs)
        st = qp_fail(err, QP_E_NOMEM, "out of memory");
    if (!st && !p->wcache && !(st = qp_wcache_new(&p->own_wcache, err)))
        p->wcache = p->own_wcache;
    for (int v = 0; !st && v < g->n_values; v++) {
        p->v[v].has_as = a->aq[v];
        p->v[v].as = a->as[v];
        p->has_acts |= a->aq[v];
    }
    char lab[256];
    for (int i = 0; !st && i < g->n_nodes; i++) {
        enum qp_wlayout layout;
        if (!a->wq[i] || !qp_node_weighted(g, i, &layout))
            continue;
        if ((st = quantize_weight(p, i, layout, &a->ws[i],
                                  o->wkey ? o->wkey[i] : 0, err)))
            qp_error_prefix(err, "%s: ", qp_node_label(g, i, lab, sizeof lab));
    }
    qp_qassign_free(own);
    if (st) {
        qp_qplan_free(p);
        return st;
    }
    *out = p;
    return QP_OK;
}

/* ---- calibration ---------------------------------------------------------- */

/* Every float activation gets an observer the first time it is seen. */
static enum qp_status observe(void *ctx, const struct qp_graph *g, int v,
                              const struct qp_tensor *t, struct qp_error *err)
{
    struct qp_qplan *p = ctx;
    if (t->dtype != QP_DTYPE_F32 || !activation(g, v))
        return QP_OK;
    p->v[v].f32 = true;
    if (!p->v[v].has_as || p->v[v].as.dynamic) /* dynamic: ranges at run time */
        return QP_OK;
    if (!p->obs[v]) {
        struct qp_observer_opts oo = qp_observer_opts_from_scheme(&p->v[v].as);
        enum qp_status st = qp_observer_new(&oo, &p->obs[v], err);
        if (st)
            return st;
    }
    return qp_observer_add(p->obs[v], t->data, qp_tensor_numel(t), err);
}

enum qp_status qp_qplan_calibrate(struct qp_qplan *p,
                                  const struct qp_tensor *const *inputs,
                                  struct qp_error *err)
{
    const struct qp_graph *g = p->g;
    struct qp_tensor **outs = calloc((size_t)(g->n_outputs ? g->n_outputs : 1),
                                     sizeof *outs);
    if (!outs)
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    struct qp_exec_opts eo = {.capture = "*", .on_capture = observe,
        .capture_ctx = p};
    enum qp_status st = qp_exec_run(g, inputs, g->n_inputs, &eo, outs, NULL, err);
    for (int k = 0; k < g->n_outputs; k++)
        qp_tensor_free(outs[k]);
    free(outs);
    if (!st)
        p->calib_batches++;
    return st;
}

/* ---- finishing ------------------------------------------------------------ */

/* The observers' range of value v (the standalone plan's range source). */
static enum qp_status observed_range(void *ctx, int v, const struct qp_qval *q,
                                     enum qp_round r, float *lo, float *hi,
                                     struct qp_error *err)
{
    struct qp_qplan *p = ctx;
    if (!p->obs[v])
        return qp_fail(err, QP_E_INVAL, "no calibration data reached it");
    return qp_observer_range(p->obs[v], &q->as.f, r, lo, hi, err);
}

static enum qp_status act_params(struct qp_qplan *p, int v, qp_qplan_range_fn fn,
                                 void *ctx, struct qp_error *err)
{
    struct qp_qval *q = &p->v[v];
    float lo, hi;
    enum qp_status st = fn(ctx, v, q, p->round, &lo, &hi, err);
    if (st)
        return qp_error_prefix(err, "activation '%s': ", p->g->values[v].name);
    qp_qparams_from_range(&q->as.f, p->round, lo, hi, &q->scale, &q->zp);
    q->dtype = qp_qformat_dtype(&q->as.f);
    qp_qformat_range(&q->as.f, &q->qmin, &q->qmax);
    return QP_OK;
}

/* Bias of weighted node i on the int32 grid of in_scale * w_scale[c]. */
static enum qp_status round_bias(struct qp_qplan *p, int i, struct qp_error *err)
{
    const struct qp_graph *g = p->g;
    const struct qp_node *n = &g->nodes[i];
    struct qp_qnode *q = &p->n[i];
    int bi = n->n_in > 2 ? n->in[2] : -1;
    const struct qp_tensor *b = bi >= 0 ? g->values[bi].konst : NULL;
    if (!q->wq || n->in[0] < 0 || !p->v[n->in[0]].quant || p->v[n->in[0]].as.dynamic)
        return QP_OK;
    if (q->ws.gran == QP_GRAN_GROUP) /* no scale per output channel: float */
        return QP_OK;
    if (bi >= 0 && (!b || b->dtype != QP_DTYPE_F32 ||
                    (qp_tensor_numel(b) != q->out_c && qp_tensor_numel(b) != 1)))
        return QP_OK; /* a bias the kernels do not take: left in float */
    const struct qp_qparams *wp = q->w_q->qp;
    q->b_int = calloc(q->out_c, sizeof *q->b_int);
    if (!q->b_int)
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    int64_t shape[1] = {(int64_t)q->out_c};
    enum qp_status st = qp_tensor_new(b ? b->name : "bias", QP_DTYPE_F32, 1, shape,
                                      &q->b_fake, err);
    if (st)
        return st;
    double s_in = p->v[n->in[0]].scale;
    for (size_t c = 0; c < q->out_c; c++) {
        double s = s_in * wp->scale[wp->count == 1 ? 0 : c];
        double bv = b ? ((const float *)b->data)[qp_tensor_numel(b) == 1 ? 0 : c] : 0;
        double r = round(bv / s); /* half away from zero, as TFLite */
        if (r > INT32_MAX || r < INT32_MIN)
            r = r > 0 ? INT32_MAX : INT32_MIN;
        q->b_int[c] = (int32_t)r;
        ((float *)q->b_fake->data)[c] = (float)(r * s);
    }
    return QP_OK;
}

enum qp_status qp_qplan_resolve(struct qp_qplan *p, const bool *f32,
                                struct qp_error *err)
{
    const struct qp_graph *g = p->g;
    if (f32) {
        for (int v = 0; v < g->n_values; v++)
            p->v[v].f32 = f32[v];
    } else if (!p->calib_batches) {
        return qp_fail(err, QP_E_INVAL, "the quantized modes need a "
                       "calibration run first");
    }
    plan_values(p);
    p->resolved = true;
    p->da8w4 = p->mode == QP_MODE_INT && qp_da8w4_plan(p);
    if (p->da8w4)
        return qp_da8w4_resolve(p, err);
    return p->mode == QP_MODE_INT ? check_int(p, err) : QP_OK;
}

bool qp_qplan_needs_range(const struct qp_qplan *p, int v)
{
    const struct qp_qval *q = &p->v[v];
    return p->resolved && q->quant && !q->inherited && !q->as.dynamic;
}

enum qp_status qp_qplan_finish_ranges(struct qp_qplan *p, qp_qplan_range_fn fn,
                                      void *ctx, struct qp_error *err)
{
    const struct qp_graph *g = p->g;
    if (!p->resolved)
        return qp_fail(err, QP_E_INVAL, "plan not resolved");
    enum qp_status st = QP_OK;
    for (int v = 0; !st && v < g->n_values; v++) {
        if (!p->v[v].quant || p->v[v].inherited)
            continue;
        if (p->v[v].as.dynamic) { /* the format only; scales per row at run time */
            p->v[v].dtype = qp_qformat_dtype(&p->v[v].as.f);
            qp_qformat_range(&p->v[v].as.f, &p->v[v].qmin, &p->v[v].qmax);
            continue;
        }
        st = act_params(p, v, fn, ctx, err);
    }
    /* inherited parameters, in topological order */
    for (int oi = 0; !st && oi < g->n_nodes; oi++) {
        const struct qp_node *n = &g->nodes[g->order[oi]];
        for (int k = 0; k < n->n_out; k++) {
            int v = n->out[k];
            if (v < 0 || !p->v[v].inherited)
                continue;
            struct qp_qval keep = p->v[n->in[0]];
            keep.inherited = true;
            p->v[v] = keep;
        }
    }
    for (int i = 0; !st && i < g->n_nodes; i++)
        st = round_bias(p, i, err);
    if (!st && p->mode == QP_MODE_INT)
        st = qp_qplan_prepare_int(p, err);
    if (!st)
        p->finished = true;
    return st;
}

enum qp_status qp_qplan_finish(struct qp_qplan *p, struct qp_error *err)
{
    enum qp_status st = qp_qplan_resolve(p, NULL, err);
    return st ? st : qp_qplan_finish_ranges(p, observed_range, p, err);
}

/* ---- signatures ----------------------------------------------------------- */

static uint64_t mix(uint64_t h, uint64_t v)
{
    return qp_hash_u64(h, v);
}

static uint64_t float_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static uint64_t qval_sig(uint64_t h, const struct qp_qval *q)
{
    h = mix(h, (uint64_t)q->quant | (uint64_t)q->inherited << 1 |
                   (uint64_t)q->as.dynamic << 2);
    if (!q->quant)
        return h;
    h = mix(h, float_bits(q->scale));
    h = mix(h, (uint64_t)(uint32_t)q->zp);
    h = mix(h, (uint64_t)q->dtype);
    h = mix(h, (uint64_t)(uint32_t)q->qmin << 32 | (uint32_t)q->qmax);
    h = mix(h, (uint64_t)q->as.f.bits | (uint64_t)q->as.f.asym << 8 |
                   (uint64_t)q->as.f.narrow << 9);
    return h;
}

static uint64_t mode_sig(const struct qp_qplan *p)
{
    uint64_t h = mix(QP_HASH_INIT, (uint64_t)p->mode);
    h = mix(h, (uint64_t)p->flavor);
    h = mix(h, (uint64_t)p->qa);
    return mix(h, (uint64_t)p->round);
}

uint64_t qp_qplan_node_sig(const struct qp_qplan *p, int node)
{
    if (!p)
        return 0;
    const struct qp_node *n = &p->g->nodes[node];
    const struct qp_qnode *q = &p->n[node];
    bool any = q->wq;
    for (int k = 0; !any && k < n->n_out; k++)
        any = n->out[k] >= 0 && p->v[n->out[k]].quant;
    if (!any) /* runs as the float operator does */
        return 0;
    uint64_t h = mode_sig(p);
    h = mix(h, (uint64_t)q->kind | (uint64_t)q->lut_ok << 8);
    if (q->wq)
        h = mix(qp_wscheme_hash(h, &q->ws), q->wkey);
    for (int k = 0; k < n->n_out; k++)
        if (n->out[k] >= 0)
            h = qval_sig(h, &p->v[n->out[k]]);
    return h ? h : 1;
}

uint64_t qp_qplan_input_sig(const struct qp_qplan *p, int value)
{
    if (!p || !p->v[value].quant)
        return 0;
    uint64_t h = qval_sig(mode_sig(p), &p->v[value]);
    return h ? h : 1;
}
