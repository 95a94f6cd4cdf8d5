/* analysis/export-qdq.c: a plan as a QDQ ONNX model (analysis/export-qdq.h). */
#include "analysis/export-qdq.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/export-opset.h"
#include "formats/tensorproto.h"
#include "model/infer.h"
#include "model/onnx-import.h"
#include "quant/qparams.h"
#include "quant/scheme.h"

/* A converted copy of value v at another activation format. */
struct convert {
    int v;
    enum qp_dtype dtype;
    float scale;
    int32_t zp;
    const char *name; /* its DequantizeLinear's output */
};

struct ctx {
    const struct qp_graph *g;
    const struct qp_qplan *p;
    const struct qp_export_qdq_opts *o;
    const struct qp_onnx_model *orig; /* value types, metadata */
    struct qp_onnx_model *m;
    struct qp_onnx_graph *tg;
    struct qp_export_names nm;
    struct qp_export_qdq_stats st;
    int target;
    int *rank;                /* [n_values], -1 unknown */
    const char **dq;          /* [n_values] the name consumers read */
    bool *konst_done;         /* [n_values] float initializer written */
    const char **wdq;         /* [n_nodes] the weight's DQ output */
    struct convert *cv;
    size_t ncv;
    struct qp_error *err;
};

static enum qp_status nomem(struct ctx *c)
{
    return qp_fail(c->err, QP_E_NOMEM, "out of memory exporting '%s'", c->g->name);
}

/* 8 and 16 bits: the activation types ONNX Runtime's QuantizeLinear and
 * qprobe's runtime both take (int4 activations are not written). */
static bool activation_bits_ok(unsigned bits)
{
    return bits == 8 || bits == 16;
}

/* ---- checks ---------------------------------------------------------------- */

static enum qp_status check_weight(struct ctx *c, int i)
{
    const struct qp_qnode *q = &c->p->n[i];
    const struct qp_graph *g = c->g;
    char wn[512], sch[QP_SCHEME_MAX];
    qp_node_weight_name(g, i, wn, sizeof wn);
    struct qp_scheme s = {.w = q->ws};
    qp_scheme_format(&s, sch, sizeof sch);
    if (q->ws.family != QP_WFAMILY_INT)
        return qp_fail(c->err, QP_E_UNSUPPORTED, "tensor '%s': %s is a ggml block "
                       "type, which ONNX has no form for (export it with --to "
                       "gguf, or use w8c / w4c)", wn, sch);
    if (q->ws.gran == QP_GRAN_GROUP)
        return qp_fail(c->err, QP_E_UNSUPPORTED, "tensor '%s': %s is group-wise: "
                       "opset 21's blocked DequantizeLinear would hold it, which "
                       "this export does not write yet (use w%uc)", wn, sch,
                       q->ws.f.bits);
    /* 5- to 7-bit weights lie in int8 (as ONNX Runtime's reduce_range
     * weights: w7c is its [-64, 63]); 2 and 3 bits have no ONNX type */
    enum qp_dtype dt = q->w_q->dtype;
    if (q->ws.f.bits < 4)
        return qp_fail(c->err, QP_E_UNSUPPORTED, "tensor '%s': %s has %u-bit "
                       "weights; ONNX's smallest integer type has 4 (use w4c)",
                       wn, sch, q->ws.f.bits);
    if (qp_fmt_onnx_type_of(dt) == QP_ONNX_UNDEFINED || !q->w_q->qp)
        return qp_fail(c->err, QP_E_UNSUPPORTED, "tensor '%s': its quantized form "
                       "is %s", wn, qp_dtype_name(dt));
    return QP_OK;
}

static enum qp_status check_value(struct ctx *c, int v)
{
    const struct qp_qval *q = &c->p->v[v];
    char as[QP_SCHEME_MAX];
    qp_ascheme_format(&q->as, as, sizeof as);
    const char *name = c->g->values[v].name;
    if (q->as.dynamic)
        return qp_fail(c->err, QP_E_UNSUPPORTED, "activation '%s': %s is dynamic "
                       "(per-token ranges at run time), which QuantizeLinear "
                       "with constant parameters cannot express (use a%ut or "
                       "a%utz)", name, as, q->as.f.bits, q->as.f.bits);
    if (!activation_bits_ok(q->as.f.bits))
        return qp_fail(c->err, QP_E_UNSUPPORTED, "activation '%s': %s has %u bits; "
                       "exported activations have 8 or 16", name, as,
                       q->as.f.bits);
    if (q->as.f.narrow)
        return qp_fail(c->err, QP_E_UNSUPPORTED, "activation '%s': %s is narrow "
                       "range, but QuantizeLinear saturates to its type's whole "
                       "range", name, as);
    return QP_OK;
}

/* The opset the plan's tensors need, after the checks. */
static enum qp_status check_plan(struct ctx *c, int *need)
{
    const struct qp_graph *g = c->g;
    *need = 10;
    for (int i = 0; i < g->n_nodes; i++) {
        const struct qp_qnode *q = &c->p->n[i];
        if (!q->wq)
            continue;
        enum qp_status st = check_weight(c, i);
        if (st)
            return st;
        if (q->w_q->qp->count > 1) /* and the bias with it */
            *need = *need > 13 ? *need : 13;
        if (q->w_q->dtype != QP_DTYPE_I8 && q->w_q->dtype != QP_DTYPE_U8)
            *need = 21;
    }
    for (int v = 0; v < g->n_values; v++) {
        if (!c->p->v[v].quant)
            continue;
        enum qp_status st = check_value(c, v);
        if (st)
            return st;
        if (c->p->v[v].as.f.bits != 8)
            *need = 21;
    }
    return QP_OK;
}

/* ---- tensors --------------------------------------------------------------- */

/* A scalar (count 1) or 1-D tensor of count values of dtype dt from
 * int32 values (zero points) or floats (scales). */
static enum qp_status param(struct ctx *c, const char *base, enum qp_dtype dt,
                            size_t count, const float *f, const int32_t *z,
                            const char **name)
{
    struct qp_tensor *t;
    int64_t n = (int64_t)count;
    enum qp_status st = qp_tensor_new(base, dt, count > 1, &n, &t, c->err);
    if (st)
        return st;
    for (size_t i = 0; i < count; i++) {
        if (dt == QP_DTYPE_F32)
            ((float *)t->data)[i] = f[i];
        else if (dt == QP_DTYPE_I4 || dt == QP_DTYPE_U4)
            qp_packed_set(dt, t->data, i, z ? z[i] : 0);
        else
            qp_elem_set_i64(dt, t->data, i, z ? z[i] : 0);
    }
    return qp_export_add_const(&c->nm, c->tg, base, t, name, c->err);
}

/* A node with new names for itself and, unless given, its output. */
static enum qp_status add_node(struct ctx *c, const char *op, const char *node_base,
                               const char *const *in, size_t n_in,
                               const char *out, struct qp_onnx_node **node)
{
    char nn[1024];
    enum qp_status st = qp_export_name(&c->nm, node_base, nn, sizeof nn, c->err);
    const char *outs[1] = {out};
    if (!st)
        st = qp_onnx_graph_add_node(c->tg, op, "", nn, in, n_in, outs, 1, node,
                                    c->err);
    return st;
}

/* QuantizeLinear(x) -> DequantizeLinear with scale/zp (per tensor) named
 * after base; *dq_out gets the DequantizeLinear's output (dq_name when
 * given, else a new name). */
static enum qp_status qdq_pair(struct ctx *c, const char *x, const char *base,
                               enum qp_dtype dt, float scale, int32_t zp,
                               const char *dq_name, const char **dq_out)
{
    char b[1024], qout[1024], dout[1024];
    const char *sn, *zn;
    enum qp_status st;
    snprintf(b, sizeof b, "%s_scale", base);
    if ((st = param(c, b, QP_DTYPE_F32, 1, &scale, NULL, &sn)))
        return st;
    snprintf(b, sizeof b, "%s_zero_point", base);
    if ((st = param(c, b, dt, 1, NULL, &zp, &zn)))
        return st;
    snprintf(b, sizeof b, "%s_QuantizeLinear_Output", base);
    if ((st = qp_export_name(&c->nm, b, qout, sizeof qout, c->err)))
        return st;
    snprintf(b, sizeof b, "%s_DequantizeLinear_Output", base);
    if (!dq_name && (st = qp_export_name(&c->nm, b, dout, sizeof dout, c->err)))
        return st;
    struct qp_onnx_node *qn, *dn;
    const char *qin[3] = {x, sn, zn}, *din[3] = {qout, sn, zn};
    snprintf(b, sizeof b, "%s_QuantizeLinear", base);
    if ((st = add_node(c, "QuantizeLinear", b, qin, 3, qout, &qn)))
        return st;
    snprintf(b, sizeof b, "%s_DequantizeLinear", base);
    if ((st = add_node(c, "DequantizeLinear", b, din, 3, dq_name ? dq_name : dout,
                       &dn)))
        return st;
    *dq_out = dn->outputs[0];
    return QP_OK;
}

/* The float constant value v as an initializer (once), by its name. */
static enum qp_status float_const(struct ctx *c, int v)
{
    if (c->konst_done[v])
        return QP_OK;
    const struct qp_tensor *k = c->g->values[v].konst;
    struct qp_tensor *t;
    enum qp_status st = qp_tensor_wrap(c->g->values[v].name, k->dtype, k->ndim,
                                       k->shape, k->data, k->nbytes, NULL, &t,
                                       c->err);
    if (!st)
        st = qp_onnx_graph_add_initializer(c->tg, t, c->err);
    c->konst_done[v] = !st;
    return st;
}

/* A DequantizeLinear of constant integers q (borrowed data, as wrapped
 * by the caller; taken): initializers Q (q's name), S and Z from names
 * (the scales, count of them, and zero points of dtype zdt, NULL zeros),
 * axis when count > 1, its output named after `base`; *out its name. */
struct dq_names {
    const char *q, *s, *z, *base;
};
static enum qp_status const_dq(struct ctx *c, struct qp_tensor *q,
                               const struct dq_names *nm, size_t count,
                               const float *scale, enum qp_dtype zdt,
                               const int32_t *zp, int axis, const char **out)
{
    char b[1024], dout[1024];
    const char *qn, *sn, *zn;
    enum qp_status st = qp_export_add_const(&c->nm, c->tg, nm->q, q, &qn, c->err);
    if (!st)
        st = param(c, nm->s, QP_DTYPE_F32, count, scale, NULL, &sn);
    if (!st)
        st = param(c, nm->z, zdt, count, NULL, zp, &zn);
    snprintf(b, sizeof b, "%s_DequantizeLinear_Output", nm->base);
    if (!st)
        st = qp_export_name(&c->nm, b, dout, sizeof dout, c->err);
    struct qp_onnx_node *dn = NULL;
    const char *in[3] = {qn, sn, zn};
    snprintf(b, sizeof b, "%s_DequantizeLinear", nm->base);
    if (!st)
        st = add_node(c, "DequantizeLinear", b, in, 3, dout, &dn);
    if (!st && count > 1)
        st = qp_onnx_node_add_int(dn, "axis", axis, c->err);
    if (!st)
        *out = dn->outputs[0];
    return st;
}

/* Node i's int8 weights read uint8 activations and hold a value beyond
 * +-64: two such products ONNX Runtime's x86 kernels without VNNI may add
 * into a saturated int16 (see qp_export_qdq_stats.u8s8_wide). */
static bool u8s8_wide(const struct ctx *c, int i)
{
    const struct qp_tensor *w = c->p->n[i].w_q;
    const struct qp_qval *x = &c->p->v[c->g->nodes[i].in[0]];
    if (w->dtype != QP_DTYPE_I8 || !x->quant || x->dtype != QP_DTYPE_U8)
        return false;
    const int8_t *v = w->data;
    for (size_t k = 0; k < w->nbytes; k++)
        if (v[k] > 64 || v[k] < -64)
            return true;
    return false;
}

/* Weight DQ of node i: W_quantized, W_scale, W_zero_point (per axis). */
static enum qp_status weight_dq(struct ctx *c, int i)
{
    const struct qp_qnode *q = &c->p->n[i];
    for (int j = 0; j < i; j++) /* one weight, one scheme: one DQ */
        if (c->wdq[j] && c->p->n[j].w_q == q->w_q) {
            c->wdq[i] = c->wdq[j];
            return QP_OK;
        }
    const struct qp_qparams *qp = q->w_q->qp;
    const char *wname = c->g->values[c->g->nodes[i].in[1]].name;
    char qn[1024], sn[1024], zn[1024];
    snprintf(qn, sizeof qn, "%s_quantized", wname);
    snprintf(sn, sizeof sn, "%s_scale", wname);
    snprintf(zn, sizeof zn, "%s_zero_point", wname);
    struct dq_names names = {qn, sn, zn, wname};
    struct qp_tensor *t;
    enum qp_status st = qp_tensor_wrap(qn, q->w_q->dtype, q->w_q->ndim,
                                       q->w_q->shape, q->w_q->data,
                                       q->w_q->nbytes, NULL, &t, c->err);
    if (!st)
        st = const_dq(c, t, &names, qp->count, qp->scale, q->w_q->dtype,
                      qp->zero_point, qp->axis, &c->wdq[i]);
    c->st.weights += !st;
    c->st.u8s8_wide += !st && u8s8_wide(c, i);
    return st;
}

/* Bias DQ of node i (input 2 present, the plan's int32 grid) with scale
 * float32(s_in * s_w[c]), as quantize_static computes it. */
static enum qp_status bias_dq(struct ctx *c, int i, const char **out)
{
    const struct qp_qnode *q = &c->p->n[i];
    const struct qp_qparams *wp = q->w_q->qp;
    const struct qp_node *n = &c->g->nodes[i];
    const char *bname = c->g->values[n->in[2]].name;
    float s_in = c->p->v[n->in[0]].scale;
    size_t count = wp->count > 1 ? q->out_c : 1;
    float *sc = malloc(count * sizeof *sc);
    if (!sc)
        return nomem(c);
    for (size_t k = 0; k < count; k++)
        sc[k] = s_in * wp->scale[wp->count == 1 ? 0 : k];
    char qn[1024], sn[1024], zn[1024];
    snprintf(qn, sizeof qn, "%s_quantized", bname);
    snprintf(sn, sizeof sn, "%s_quantized_scale", bname);
    snprintf(zn, sizeof zn, "%s_quantized_zero_point", bname);
    struct dq_names names = {qn, sn, zn, bname};
    struct qp_tensor *t;
    int64_t oc = (int64_t)q->out_c;
    enum qp_status st = qp_tensor_wrap(qn, QP_DTYPE_I32, 1, &oc, q->b_int,
                                       q->out_c * sizeof *q->b_int, NULL, &t,
                                       c->err);
    if (!st)
        st = const_dq(c, t, &names, count, sc, QP_DTYPE_I32, NULL, 0, out);
    free(sc);
    c->st.biases += !st;
    return st;
}

/* ---- activations --------------------------------------------------------- */

const struct qp_qval *qp_export_node_format(const struct qp_qplan *p, int i)
{
    const struct qp_node *n = &p->g->nodes[i];
    for (int k = 0; k < n->n_out; k++) {
        int v = n->out[k];
        if (v >= 0 && p->v[v].quant && !p->v[v].inherited)
            return &p->v[v];
    }
    return NULL;
}

bool qp_export_needs_convert(const struct qp_qplan *p, int i, int v,
                             const struct qp_qval **to)
{
    const struct qp_qval *q = &p->v[v], *f = qp_export_node_format(p, i);
    *to = f;
    return q->quant && f && (f->dtype != q->dtype || f->as.f.bits != q->as.f.bits);
}

void qp_export_convert_params(const struct qp_qplan *p, const struct qp_qval *v,
                              const struct qp_qval *to, float *scale, int32_t *zp)
{
    float lo = v->scale * (float)(v->qmin - v->zp);
    float hi = v->scale * (float)(v->qmax - v->zp);
    qp_qparams_from_range(&to->as.f, p->round, lo, hi, scale, zp);
}

/* The name node i reads quantized value v under: its DQ, or a converted
 * copy at the node's own format. */
static enum qp_status act_input(struct ctx *c, int i, int v, const char **name)
{
    const struct qp_qval *f;
    *name = c->dq[v];
    if (!c->o->convert || !qp_export_needs_convert(c->p, i, v, &f))
        return QP_OK;
    float scale;
    int32_t zp;
    qp_export_convert_params(c->p, &c->p->v[v], f, &scale, &zp);
    for (size_t k = 0; k < c->ncv; k++) {
        const struct convert *x = &c->cv[k];
        if (x->v == v && x->dtype == f->dtype && x->scale == scale && x->zp == zp) {
            *name = x->name;
            return QP_OK;
        }
    }
    struct convert *cv = realloc(c->cv, (c->ncv + 1) * sizeof *cv);
    if (!cv)
        return nomem(c);
    c->cv = cv;
    char base[1024];
    snprintf(base, sizeof base, "%s_convert", c->g->values[v].name);
    enum qp_status st = qdq_pair(c, c->dq[v], base, f->dtype, scale, zp, NULL, name);
    if (st)
        return st;
    c->cv[c->ncv++] = (struct convert){v, f->dtype, scale, zp, *name};
    c->st.converts++;
    return QP_OK;
}

/* The Q -> DQ pair of quantized value v, whose producer wrote `produced`. */
static enum qp_status act_pair(struct ctx *c, int v, const char *produced)
{
    const struct qp_value *val = &c->g->values[v];
    const struct qp_qval *q = &c->p->v[v];
    if (!val->n_consumers && !val->is_output)
        return QP_OK;
    enum qp_status st = qdq_pair(c, produced, val->name, q->dtype, q->scale, q->zp,
                                 val->is_output ? val->name : NULL, &c->dq[v]);
    if (!st)
        c->st.activations++;
    return st;
}

/* ---- nodes ----------------------------------------------------------------- */

static enum qp_status write_node(struct ctx *c, int i)
{
    const struct qp_graph *g = c->g;
    const struct qp_node *n = &g->nodes[i];
    const struct qp_qnode *q = &c->p->n[i];
    const char *in[QP_OP_MAX_IO], *out[QP_OP_MAX_IO];
    char outbuf[QP_OP_MAX_IO][1024];
    enum qp_status st = QP_OK;
    if (n->n_in > QP_OP_MAX_IO || n->n_out > QP_OP_MAX_IO)
        return qp_fail(c->err, QP_E_UNSUPPORTED, "node '%s': too many inputs",
                       n->name);
    for (int k = 0; !st && k < n->n_in; k++) {
        int v = n->in[k];
        in[k] = "";
        if (v < 0)
            continue;
        if (k == 1 && q->wq) {
            st = weight_dq(c, i);
            in[k] = c->wdq[i];
        } else if (k == 2 && q->wq && q->b_int) {
            st = bias_dq(c, i, &in[k]);
        } else if (g->values[v].konst) {
            st = float_const(c, v);
            in[k] = g->values[v].name;
        } else if (c->p->v[v].quant && c->dq[v]) {
            st = act_input(c, i, v, &in[k]);
        } else {
            in[k] = g->values[v].name;
        }
    }
    for (int k = 0; !st && k < n->n_out; k++) {
        int v = n->out[k];
        out[k] = v < 0 ? "" : g->values[v].name;
        if (v >= 0 && c->p->v[v].quant && g->values[v].is_output) {
            char b[1024];
            snprintf(b, sizeof b, "%s_QuantizeLinear_Input", g->values[v].name);
            st = qp_export_name(&c->nm, b, outbuf[k], sizeof outbuf[k], c->err);
            out[k] = outbuf[k];
        }
    }
    int r0 = n->n_in > 0 && n->in[0] >= 0 ? c->rank[n->in[0]] : -1;
    if (!st)
        st = qp_export_node(g, i, in, n->n_in, out, n->n_out, c->target, r0,
                            &c->nm, c->tg, c->err);
    c->st.nodes++;
    for (int k = 0; !st && k < n->n_out; k++) {
        int v = n->out[k];
        if (v >= 0 && c->p->v[v].quant) {
            /* the written node's output names live in the tree */
            const char *produced = c->tg->nodes[c->tg->n_nodes - 1].outputs[k];
            st = act_pair(c, v, produced);
        }
    }
    return st;
}

/* ---- the model --------------------------------------------------------------- */

static int ir_for_opset(int opset)
{
    static const int ir[22] = {3, 3, 3, 3, 3, 3, 3, 3, 3, 4, 5, 6, 7, 7, 7, 8, 8,
                               8, 8, 9, 9, 10};
    return opset >= 21 ? 10 : ir[opset > 0 ? opset : 0];
}

static const struct qp_onnx_value *orig_value(const struct qp_onnx_value *v,
                                              size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(v[i].name, name))
            return &v[i];
    return NULL;
}

/* Graph input or output v, typed as in the original model when it has it. */
static enum qp_status add_io(struct ctx *c, int v, enum qp_onnx_value_list list)
{
    const struct qp_onnx_graph *og = c->orig->graph;
    const char *name = c->g->values[v].name;
    const struct qp_onnx_value *ov =
        list == QP_ONNX_LIST_INPUT ? orig_value(og->inputs, og->n_inputs, name)
                                   : orig_value(og->outputs, og->n_outputs, name);
    struct qp_onnx_graph *tg = c->tg;
    if (ov) {
        enum qp_status st = qp_onnx_graph_add_value(tg, list, name, 0, -1, NULL,
                                                    c->err);
        struct qp_onnx_value *nv = list == QP_ONNX_LIST_INPUT
                                       ? &tg->inputs[tg->n_inputs - 1]
                                       : &tg->outputs[tg->n_outputs - 1];
        return st ? st : qp_onnx_valtype_copy(&ov->type, &nv->type, c->err);
    }
    const struct qp_value *val = &c->g->values[v];
    struct qp_onnx_dim d[QP_MAX_DIMS];
    for (int k = 0; val->typed && k < val->ndim; k++)
        d[k] = (struct qp_onnx_dim){val->shape[k], NULL};
    return qp_onnx_graph_add_value(tg, list, name,
                                   val->typed ? (int32_t)qp_fmt_onnx_type_of(val->dtype)
                                              : QP_ONNX_FLOAT,
                                   val->typed ? val->ndim : -1, d, c->err);
}

/* Ranks of every value, for the operators whose form depends on it: from
 * the first calibration set's shapes, or without one from the declared
 * input shapes, an unknown dim taken as 1 for the first (the batch) and
 * 64 for the others (a rank does not depend on them). */
static void ranks(struct ctx *c, const struct qp_session *s)
{
    const struct qp_graph *g = c->g;
    for (int v = 0; v < g->n_values; v++)
        c->rank[v] = g->values[v].typed ? g->values[v].ndim : -1;
    struct qp_tensor *const *set = qp_session_calib_set(s, 0);
    struct qp_tdesc *in = calloc((size_t)g->n_inputs + 1, sizeof *in);
    struct qp_tdesc *d = calloc((size_t)g->n_values + 1, sizeof *d);
    bool *known = calloc((size_t)g->n_values + 1, sizeof *known);
    struct qp_error e;
    bool shapes = in != NULL;
    for (int k = 0; in && k < g->n_inputs; k++) {
        const struct qp_value *iv = &g->values[g->inputs[k]];
        if (set) {
            qp_tdesc_of(set[k], &in[k]);
            continue;
        }
        shapes &= iv->typed && iv->ndim >= 0;
        in[k].dtype = iv->dtype;
        in[k].ndim = iv->typed ? iv->ndim : 0;
        for (int a = 0; a < in[k].ndim; a++)
            in[k].shape[a] = iv->shape[a] >= 0 ? iv->shape[a] : a ? 64 : 1;
    }
    if (shapes && d && known) {
        if (!qp_graph_infer(g, in, d, known, &e))
            for (int v = 0; v < g->n_values; v++)
                if (known[v])
                    c->rank[v] = d[v].ndim;
    }
    free(in);
    free(d);
    free(known);
}

static enum qp_status model_head(struct ctx *c, int opset)
{
    const struct qp_onnx_model *om = c->orig;
    int64_t ir = ir_for_opset(opset);
    enum qp_status st = qp_onnx_model_new(ir > om->ir_version ? ir : om->ir_version,
                                          opset, om->graph->name, &c->m, c->err);
    if (st)
        return st;
    c->tg = c->m->graph;
    free(c->m->producer_name);
    free(c->m->producer_version);
    c->m->producer_name = strdup("qprobe");
    c->m->producer_version = strdup("0.1.0");
    if (!c->m->producer_name || !c->m->producer_version)
        return nomem(c);
    for (size_t k = 0; !st && k < om->n_opsets; k++)
        if (!qp_onnx_domain_is_default(om->opsets[k].domain))
            st = qp_onnx_model_set_opset(c->m, om->opsets[k].domain,
                                         om->opsets[k].version, c->err);
    for (size_t k = 0; !st && k < om->n_metadata; k++)
        st = qp_onnx_model_add_meta(c->m, om->metadata[k].key,
                                    om->metadata[k].value, c->err);
    if (!st && c->o->note)
        st = qp_onnx_model_add_meta(c->m, "qprobe.plan", c->o->note, c->err);
    return st;
}

static enum qp_status build(struct ctx *c, const struct qp_session *s)
{
    const struct qp_graph *g = c->g;
    int need;
    if (qp_session_own_quant(s))
        return qp_fail(c->err, QP_E_UNSUPPORTED, "'%s' already carries its own "
                       "quantization (QuantizeLinear / DequantizeLinear or QLinear "
                       "nodes): export the float model", g->name);
    if (c->p->mode != QP_MODE_FAKE || !c->p->finished)
        return qp_fail(c->err, QP_E_INVAL, "a QDQ export needs a finished "
                       "fake-mode plan");
    enum qp_status st = check_plan(c, &need);
    if (st)
        return st;
    int64_t own = qp_onnx_opset_version(c->orig, "");
    c->target = own > need ? (int)own : need;
    if (c->target > QP_ONNX_MAX_OPSET)
        return qp_fail(c->err, QP_E_UNSUPPORTED, "'%s' imports opset %d; qprobe "
                       "writes up to %d", g->name, c->target, QP_ONNX_MAX_OPSET);
    c->st.opset = c->target;
    if ((st = model_head(c, c->target)) ||
        (st = qp_export_names_init(&c->nm, g, c->err)))
        return st;
    c->rank = calloc((size_t)g->n_values + 1, sizeof *c->rank);
    c->dq = calloc((size_t)g->n_values + 1, sizeof *c->dq);
    c->konst_done = calloc((size_t)g->n_values + 1, sizeof *c->konst_done);
    c->wdq = calloc((size_t)g->n_nodes + 1, sizeof *c->wdq);
    if (!c->rank || !c->dq || !c->konst_done || !c->wdq)
        return nomem(c);
    ranks(c, s);
    for (int k = 0; !st && k < g->n_inputs; k++) {
        int v = g->inputs[k];
        st = add_io(c, v, QP_ONNX_LIST_INPUT);
        if (!st && c->p->v[v].quant)
            st = act_pair(c, v, g->values[v].name);
    }
    for (int oi = 0; !st && oi < g->n_nodes; oi++)
        st = write_node(c, g->order[oi]);
    for (int k = 0; !st && k < g->n_outputs; k++)
        st = add_io(c, g->outputs[k], QP_ONNX_LIST_OUTPUT);
    return st;
}

enum qp_status qp_export_qdq_build(const struct qp_session *s,
                                   const struct qp_qplan *p,
                                   const struct qp_export_qdq_opts *o,
                                   struct qp_onnx_model **out,
                                   struct qp_export_qdq_stats *stats,
                                   struct qp_error *err)
{
    *out = NULL;
    struct qp_export_qdq_opts def = {.convert = true};
    struct ctx c = {.g = qp_session_graph(s), .p = p, .o = o ? o : &def, .err = err};
    struct qp_onnx_model *orig = NULL;
    enum qp_status st = qp_onnx_load(qp_session_path(s), &orig, err);
    c.orig = orig;
    if (!st)
        st = build(&c, s);
    qp_export_names_release(&c.nm);
    free(c.rank);
    free(c.dq);
    free(c.konst_done);
    free(c.wdq);
    free(c.cv);
    qp_onnx_model_free(orig);
    if (st) {
        qp_onnx_model_free(c.m);
        return st;
    }
    if (stats)
        *stats = c.st;
    *out = c.m;
    return QP_OK;
}

enum qp_status qp_export_qdq(const struct qp_session *s,
                             const struct qp_qplan *p, const char *path,
                             const struct qp_export_qdq_opts *o,
                             struct qp_export_qdq_stats *stats,
                             struct qp_error *err)
{
    struct qp_onnx_model *m;
    struct qp_export_qdq_stats st0;
    enum qp_status st = qp_export_qdq_build(s, p, o, &m, &st0, err);
    if (st)
        return st;
    st = qp_onnx_save(m, path, o ? &o->save : NULL, &st0.save, err);
    qp_onnx_model_free(m);
    if (!st && stats)
        *stats = st0;
    return st;
}
