/* model/qplan.c: planning the quantized modes: layer schemes, weights,
 * calibration, activation parameters, biases (model/qplan.h). The
 * execution hooks are in model/qexec.c. */
#include "model/qplan.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
 * parameters. */
static bool moves_values(const struct qp_node *n)
{
    static const char *const ops[] = {"Reshape", "Flatten", "Squeeze",
                                      "Unsqueeze", "Transpose", "Identity",
                                      "Dropout", "Slice", "Split", "Gather",
                                      "MaxPool"};
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        if (is_op(n, ops[i]))
            return true;
    return is_op(n, "Resize") &&
           !strcmp(qp_attr_str(n, "mode", "nearest"), "nearest");
}

/* ---- weights ---------------------------------------------------------- */

/* Weighted layers: the weight input's layout for per-channel scales. */
static bool weighted(const struct qp_graph *g, const struct qp_node *n,
                     enum qp_wlayout *layout)
{
    if (n->n_in < 2 || n->in[1] < 0)
        return false;
    const struct qp_tensor *w = g->values[n->in[1]].konst;
    if (!w || w->dtype != QP_DTYPE_F32 || w->ndim < 2)
        return false;
    /* the same rule as `qprobe quantize` on ONNX models: Conv OIHW,
     * ConvTranspose IOHW, MatMul [.., K, N], Gemm by transB */
    static const char *const ops[] = {"Conv", "ConvTranspose", "MatMul", "Gemm"};
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        if (is_op(n, ops[i]))
            return qp_wlayout_of_onnx_op(ops[i], qp_attr_int(n, "transB", 0) != 0,
                                         layout);
    return false;
}

/* The rule name of a weight: a BatchNorm-folded "W:bn" is "W". */
static void rule_name(const char *name, char *buf, size_t size)
{
    snprintf(buf, size, "%s", name);
    size_t n = strlen(buf);
    if (n > 3 && !strcmp(buf + n - 3, ":bn"))
        buf[n - 3] = '\0';
}

/* A weight of fewer than 8 bits (per tensor or per channel) unpacked to
 * int8 / uint8 with its parameters, as devices feed 4-bit weights to
 * 8-bit kernels: the same integers, so the products are exact. */
static enum qp_status unpack8(struct qp_tensor **w, struct qp_error *err)
{
    const struct qp_tensor *t = *w;
    enum qp_dtype dt = qp_dtype_traits(t->dtype)->is_signed ? QP_DTYPE_I8
                                                            : QP_DTYPE_U8;
    struct qp_tensor *u;
    enum qp_status st = qp_tensor_new(t->name, dt, t->ndim, t->shape, &u, err);
    if (st)
        return st;
    size_t n = qp_tensor_numel(t);
    for (size_t i = 0; i < n; i++) {
        int32_t v = qp_packed_get(t->dtype, t->data, i);
        if (dt == QP_DTYPE_I8)
            ((int8_t *)u->data)[i] = (int8_t)v;
        else
            ((uint8_t *)u->data)[i] = (uint8_t)v;
    }
    const struct qp_qparams *qp = t->qp;
    if ((st = qp_tensor_set_qparams(u, qp->count, qp->scale, qp->zero_point,
                                    qp->axis, qp->block_size, err))) {
        qp_tensor_free(u);
        return st;
    }
    qp_tensor_free(*w);
    *w = u;
    return QP_OK;
}

static enum qp_status quantize_weight(struct qp_qplan *p, int i,
                                      enum qp_wlayout layout,
                                      const struct qp_wscheme *ws,
                                      struct qp_error *err)
{
    const struct qp_graph *g = p->g;
    struct qp_qnode *q = &p->n[i];
    const struct qp_tensor *w = g->values[g->nodes[i].in[1]].konst;
    struct qp_wquant_opts o = {p->round, layout};
    enum qp_status st = qp_rtn_quantize(w, ws, &o, &q->w_q, err);
    if (!st)
        st = qp_tensor_new(w->name, QP_DTYPE_F32, w->ndim, w->shape, &q->w_fake,
                           err);
    if (st)
        return st;
    qp_tensor_read_f32(q->w_q, 0, qp_tensor_numel(w), q->w_fake->data);
    if (p->mode == QP_MODE_INT && ws->f.bits < 8 && ws->gran != QP_GRAN_GROUP &&
        (st = unpack8(&q->w_q, err)))
        return st;
    q->wq = true;
    q->ws = *ws;
    int oa, ia;
    qp_wlayout_axes(layout, w->ndim, &oa, &ia);
    q->out_c = oa >= 0 ? (size_t)w->shape[oa] : 1;
    return QP_OK;
}

/* The recipe rule matching weight name (NULL: none, or a scheme run). */
static const struct qp_recipe_rule *layer_rule(const struct qp_qplan_opts *o,
                                               const char *weight)
{
    if (o->scheme)
        return NULL;
    char name[512];
    rule_name(weight, name, sizeof name);
    return qp_recipe_lookup(o->recipe, name);
}

/* The weight scheme of a layer, or NULL when it stays float. */
static const struct qp_wscheme *layer_scheme(const struct qp_qplan_opts *o,
                                             const struct qp_recipe_rule *r)
{
    if (o->scheme)
        return &o->scheme->w;
    return r && !r->fp32 ? &r->scheme.w : NULL;
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
    if (moves_values(n) && !is_op(n, "Resize"))
        return QP_QK_PASS;
    return QP_QK_FLOAT;
}

/* Elementwise operators whose output element is a function of the input
 * elements at that position alone. */
static bool elementwise(const struct qp_node *n)
{
    static const char *const ops[] = {
        "Relu", "LeakyRelu", "Sigmoid", "HardSigmoid", "HardSwish", "Tanh",
        "Erf", "Gelu", "Elu", "Sqrt", "Exp", "Log", "Neg", "Abs", "Reciprocal",
        "Floor", "Ceil", "Clip", "Add", "Sub", "Mul", "Div", "Pow", "Max",
        "Min"};
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        if (is_op(n, ops[i]))
            return true;
    return false;
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
        qp_tensor_free(q->w_q);
        qp_tensor_free(q->w_fake);
        qp_tensor_free(q->b_fake);
        free(q->b_int);
        free(q->kernel_weight);
        free(q->lut);
        qp_rq_release(&q->rq);
        if (q->gemm_ready)
            qp_gemm_s8_release(&q->gemm);
        if (q->conv_ready)
            qp_conv_s8_release(&q->conv);
    }
    for (int v = 0; p->obs && v < g->n_values; v++)
        qp_observer_free(p->obs[v]);
    free(p->obs);
    free(p->v);
    free(p->n);
    free(p);
}

/* Weight rounding of a requantization flavor's runtime family. */
static enum qp_round flavor_round(enum qp_rq_flavor f)
{
    switch (f) {
    case QP_RQ_ONNX_REF:
    case QP_RQ_ORT:
    case QP_RQ_XNNPACK_FP32:
    case QP_RQ_XNNPACK_RNDNU: return QP_ROUND_HALF_EVEN;
    default: return QP_ROUND_HALF_AWAY;
    }
}

static enum qp_status check_int(const struct qp_qplan *p, struct qp_error *err)
{
    if (!p->has_acts)
        return qp_fail(err, QP_E_UNSUPPORTED, "int mode needs activations in "
                       "the scheme (e.g. w8c+a8t)");
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

enum qp_status qp_qplan_new(const struct qp_graph *g,
                            const struct qp_qplan_opts *o,
                            struct qp_qplan **out, struct qp_error *err)
{
    *out = NULL;
    if (!o->scheme == !o->recipe)
        return qp_fail(err, QP_E_INVAL, "quantized run: give a scheme or a "
                       "recipe");
    struct qp_qplan *p = calloc(1, sizeof *p);
    if (!p)
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    p->g = g;
    p->mode = o->mode;
    p->flavor = o->flavor;
    p->qa = qp_qa_for_requant(o->flavor);
    p->round = flavor_round(o->flavor);
    size_t nv = (size_t)(g->n_values ? g->n_values : 1);
    p->v = calloc(nv, sizeof *p->v);
    p->n = calloc((size_t)(g->n_nodes ? g->n_nodes : 1), sizeof *p->n);
    p->obs = calloc(nv, sizeof *p->obs);
    enum qp_status st = QP_OK;
    if (!p->v || !p->n || !p->obs)
        st = qp_fail(err, QP_E_NOMEM, "out of memory");
    const struct qp_scheme *acts_from =
        o->scheme ? o->scheme
                  : o->recipe->has_default && !o->recipe->def.fp32
                        ? &o->recipe->def.scheme : NULL;
    p->has_acts = acts_from && acts_from->has_acts;
    if (p->has_acts)
        p->acts = acts_from->a;
    for (int v = 0; p->v && v < g->n_values; v++) {
        p->v[v].has_as = p->has_acts;
        p->v[v].as = p->acts;
    }
    char lab[256];
    for (int i = 0; !st && i < g->n_nodes; i++) {
        enum qp_wlayout layout;
        const struct qp_node *n = &g->nodes[i];
        if (!weighted(g, n, &layout))
            continue;
        const struct qp_recipe_rule *r = layer_rule(o, g->values[n->in[1]].name);
        const struct qp_wscheme *ws = layer_scheme(o, r);
        if (r && n->n_out > 0 && n->out[0] >= 0 && (r->fp32 || r->scheme.has_acts)) {
            struct qp_qval *out = &p->v[n->out[0]];
            out->has_as = !r->fp32;
            if (!r->fp32)
                out->as = r->scheme.a;
            p->has_acts |= out->has_as;
        }
        if (ws && (st = quantize_weight(p, i, layout, ws, err)))
            qp_error_prefix(err, "%s: ", qp_node_label(g, i, lab, sizeof lab));
    }
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
    struct qp_exec_opts eo = {"*", observe, p, NULL, NULL};
    enum qp_status st = qp_exec_run(g, inputs, g->n_inputs, &eo, outs, NULL, err);
    for (int k = 0; k < g->n_outputs; k++)
        qp_tensor_free(outs[k]);
    free(outs);
    if (!st)
        p->calib_batches++;
    return st;
}

/* ---- finishing ------------------------------------------------------------ */

static enum qp_status act_params(struct qp_qplan *p, int v, struct qp_error *err)
{
    struct qp_qval *q = &p->v[v];
    float lo, hi;
    enum qp_status st = qp_observer_range(p->obs[v], &q->as.f, p->round, &lo,
                                          &hi, err);
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

enum qp_status qp_qplan_finish(struct qp_qplan *p, struct qp_error *err)
{
    const struct qp_graph *g = p->g;
    if (!p->calib_batches)
        return qp_fail(err, QP_E_INVAL, "the quantized modes need a "
                       "calibration run first");
    plan_values(p);
    enum qp_status st = p->mode == QP_MODE_INT ? check_int(p, err) : QP_OK;
    for (int v = 0; !st && v < g->n_values; v++) {
        if (!p->v[v].quant || p->v[v].inherited)
            continue;
        if (p->v[v].as.dynamic) { /* the format only; scales per row at run time */
            p->v[v].dtype = qp_qformat_dtype(&p->v[v].as.f);
            qp_qformat_range(&p->v[v].as.f, &p->v[v].qmin, &p->v[v].qmax);
            continue;
        }
        st = act_params(p, v, err);
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
