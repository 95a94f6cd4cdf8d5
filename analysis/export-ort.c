/* analysis/export-ort.c: a recipe as quantize_static's arguments and
 * TensorQuantOverrides (analysis/export-ort.h). */
#include "analysis/export-ort.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/export-qdq.h"
#include "formats/json.h"
#include "model/qassign.h"

struct ctx {
    const struct qp_graph *g;
    const struct qp_qplan *p;      /* NULL: types only */
    const struct qp_qassign *a;
    struct qp_json *ov;            /* TensorQuantOverrides */
    size_t weights, acts, converts, float_outputs;
    struct qp_error *err;
};

static enum qp_status nomem(struct ctx *c)
{
    return qp_fail(c->err, QP_E_NOMEM, "out of memory");
}

/* The QuantType member of a format, or NULL when ONNX Runtime has none. */
static const char *quant_type(const struct qp_qformat *f)
{
    switch (f->bits) {
    case 4: return f->asym ? "QUInt4" : "QInt4";
    case 8: return f->asym ? "QUInt8" : "QInt8";
    case 16: return f->asym ? "QUInt16" : "QInt16";
    default: return NULL;
    }
}

static enum qp_status type_of(struct ctx *c, const struct qp_qformat *f,
                              const char *tensor, const char *scheme,
                              const char **out)
{
    if (!(*out = quant_type(f)))
        return qp_fail(c->err, QP_E_UNSUPPORTED, "tensor '%s': %s has %u bits; "
                       "onnxruntime's QuantType has 4, 8 and 16", tensor, scheme,
                       f->bits);
    return QP_OK;
}

static enum qp_status weight(struct ctx *c, int i)
{
    const struct qp_graph *g = c->g;
    const struct qp_wscheme *ws = &c->a->ws[i];
    char wn[512], sch[QP_SCHEME_MAX];
    qp_node_weight_name(g, i, wn, sizeof wn);
    struct qp_scheme s = {.w = *ws};
    qp_scheme_format(&s, sch, sizeof sch);
    if (ws->family != QP_WFAMILY_INT || ws->gran == QP_GRAN_GROUP)
        return qp_fail(c->err, QP_E_UNSUPPORTED, "tensor '%s': %s has no "
                       "TensorQuantOverrides form (per tensor or per channel "
                       "only)", wn, sch);
    const char *qt;
    enum qp_status st = type_of(c, &ws->f, wn, sch, &qt);
    if (st)
        return st;
    /* qprobe's scales only for the model's own tensor, not a folded one */
    const struct qp_qnode *q = c->p ? &c->p->n[i] : NULL;
    bool folded = strcmp(wn, g->values[g->nodes[i].in[1]].name) != 0;
    const struct qp_qparams *qp = q && q->wq && !folded ? q->w_q->qp : NULL;
    enum qp_wlayout layout;
    int oa, ia;
    qp_node_weighted(g, i, &layout);
    qp_wlayout_axes(layout, g->values[g->nodes[i].in[1]].konst->ndim, &oa, &ia);
    bool per_channel = ws->gran == QP_GRAN_CHANNEL;
    size_t n = qp ? qp->count : 1;
    struct qp_json *list = qp_json_add_array(c->ov, wn);
    for (size_t k = 0; list && k < n; k++) {
        struct qp_json *d = qp_json_add_object(list, NULL);
        bool ok = d && qp_json_add_str(d, "quant_type", qt);
        if (ok && k == 0 && per_channel)
            ok = qp_json_add_num(d, "axis", oa);
        if (ok && qp) {
            int32_t z = qp->zero_point ? qp->zero_point[k] : 0;
            ok = qp_json_add_num(d, "scale", qp->scale[k]) &&
                 qp_json_add_num(d, "zero_point", z);
        } else if (ok) {
            ok = qp_json_add_bool(d, "symmetric", !ws->f.asym);
        }
        if (!ok)
            list = NULL;
    }
    c->weights++;
    return list ? QP_OK : nomem(c);
}

/* The convert of value v (plan only): its consumers at one other type. */
static enum qp_status convert_of(struct ctx *c, int v, struct qp_json *d)
{
    const struct qp_value *val = &c->g->values[v];
    const struct qp_qval *to = NULL, *t;
    struct qp_json *cv = NULL, *recv = NULL;
    for (int k = 0; k < val->n_consumers; k++) {
        int i = val->consumers[k];
        if (!qp_export_needs_convert(c->p, i, v, &t))
            continue;
        char lab[256];
        const char *node = c->g->nodes[i].name;
        if (!node[0])
            return qp_fail(c->err, QP_E_UNSUPPORTED, "tensor '%s': %s needs a "
                           "converted copy, and recv_nodes needs node names",
                           val->name, qp_node_label(c->g, i, lab, sizeof lab));
        if (to && (to->dtype != t->dtype || to->as.f.bits != t->as.f.bits))
            return qp_fail(c->err, QP_E_UNSUPPORTED, "tensor '%s': its consumers "
                           "compute at two other types, and a TensorQuantOverrides "
                           "convert has one", val->name);
        if (!to) {
            to = t;
            if (!(cv = qp_json_add_object(d, "convert")) ||
                !qp_json_add_str(cv, "quant_type", quant_type(&t->as.f)) ||
                !(recv = qp_json_add_array(cv, "recv_nodes")))
                return nomem(c);
            float scale;
            int32_t zp;
            qp_export_convert_params(c->p, &c->p->v[v], to, &scale, &zp);
            if (!qp_json_add_num(cv, "scale", scale) ||
                !qp_json_add_num(cv, "zero_point", zp))
                return nomem(c);
        }
        if (!qp_json_add_str(recv, NULL, node))
            return nomem(c);
    }
    c->converts += to != NULL;
    return QP_OK;
}

/* A per-tensor override of value v: decided by a rule, or converted. */
static enum qp_status value(struct ctx *c, int v, bool decided)
{
    const char *name = c->g->values[v].name;
    const struct qp_ascheme *as = c->p ? &c->p->v[v].as : &c->a->as[v];
    bool quant = c->p ? c->p->v[v].quant : c->a->aq[v];
    if (!quant) {
        c->float_outputs += decided;
        return QP_OK;
    }
    char sch[QP_SCHEME_MAX];
    qp_ascheme_format(as, sch, sizeof sch);
    if (as->dynamic)
        return qp_fail(c->err, QP_E_UNSUPPORTED, "activation '%s': %s is dynamic, "
                       "which quantize_static does not do", name, sch);
    const char *qt;
    enum qp_status st = type_of(c, &as->f, name, sch, &qt);
    if (st)
        return st;
    struct qp_json *list = qp_json_add_array(c->ov, name);
    struct qp_json *d = list ? qp_json_add_object(list, NULL) : NULL;
    bool ok = d && qp_json_add_str(d, "quant_type", qt);
    if (ok && c->p)
        ok = qp_json_add_num(d, "scale", c->p->v[v].scale) &&
             qp_json_add_num(d, "zero_point", c->p->v[v].zp);
    else if (ok)
        ok = qp_json_add_bool(d, "symmetric", !as->f.asym);
    if (!ok)
        return nomem(c);
    c->acts += decided;
    return c->p ? convert_of(c, v, d) : QP_OK;
}

/* activation_type, weight_type and per_channel from the default. */
static enum qp_status defaults(struct ctx *c, const struct qp_recipe *r,
                               struct qp_json *root)
{
    if (!r->has_default || r->def.fp32)
        return QP_OK;
    const struct qp_scheme *s = &r->def.scheme;
    const char *wt = r->def.w_said && !r->def.w_float ? quant_type(&s->w.f) : NULL;
    if (wt && (!qp_json_add_str(root, "weight_type", wt) ||
               !qp_json_add_bool(root, "per_channel", s->w.gran == QP_GRAN_CHANNEL)))
        return nomem(c);
    const char *at = r->def.a_set ? quant_type(&s->a.f) : NULL;
    if (at && !qp_json_add_str(root, "activation_type", at))
        return nomem(c);
    return QP_OK;
}

static bool is_activation(const struct ctx *c, int v)
{
    const struct qp_value *val = &c->g->values[v];
    bool act = !val->konst && (val->producer >= 0 || val->is_input);
    return act && (!c->p || c->p->v[v].f32);
}

static enum qp_status build(struct ctx *c, const struct qp_recipe *r,
                            bool convert, struct qp_json *root)
{
    const struct qp_graph *g = c->g;
    struct qp_json *excl = NULL;
    enum qp_status st = defaults(c, r, root);
    if (!st && !(excl = qp_json_add_array(root, "nodes_to_exclude")))
        st = nomem(c);
    if (!st && !(c->ov = qp_json_add_object(root, "TensorQuantOverrides")))
        st = nomem(c);
    for (int i = 0; !st && i < g->n_nodes; i++) {
        if (!qp_node_weighted(g, i, NULL) || c->a->w_rule[i] < 0)
            continue;
        if (c->a->wq[i]) {
            st = weight(c, i);
            continue;
        }
        char lab[256];
        if (!g->nodes[i].name[0])
            st = qp_fail(c->err, QP_E_UNSUPPORTED, "%s stays float, and "
                         "nodes_to_exclude needs its name",
                         qp_node_label(g, i, lab, sizeof lab));
        else if (!qp_json_add_str(excl, NULL, g->nodes[i].name))
            st = nomem(c);
    }
    for (int v = 0; !st && v < g->n_values; v++) {
        if (!is_activation(c, v))
            continue;
        bool decided = c->a->a_rule[v] >= 0;
        bool conv = false;
        for (int k = 0; convert && c->p && !conv && k < g->values[v].n_consumers;
             k++) {
            const struct qp_qval *t;
            conv = qp_export_needs_convert(c->p, g->values[v].consumers[k], v, &t);
        }
        if (decided || conv)
            st = value(c, v, decided);
    }
    return st;
}

enum qp_status qp_export_ort_overrides(const struct qp_session *s,
                                       const struct qp_qplan *p,
                                       const struct qp_recipe *r, bool convert,
                                       const char *path, char *summary,
                                       size_t size, struct qp_error *err)
{
    const struct qp_graph *g = qp_session_graph(s);
    struct qp_qassign *a = NULL;
    struct ctx c = {.g = g, .p = p, .err = err};
    struct qp_json *root = qp_json_new_object();
    enum qp_status st = root ? qp_qassign_recipe(g, r, &a, NULL, err)
                             : qp_fail(err, QP_E_NOMEM, "out of memory");
    c.a = a;
    if (!st)
        st = build(&c, r, convert, root);
    if (!st)
        st = qp_json_save(path, root, true, err);
    if (!st)
        snprintf(summary, size, "%s: quantize_static arguments and "
                 "TensorQuantOverrides for %zu weights and %zu activations%s, "
                 "%zu converts%s%s", path, c.weights, c.acts,
                 p ? " with qprobe's scales" : " (types only: give --calib for "
                 "scales)", c.converts, c.float_outputs ? "; outputs kept float "
                 "by a rule have no override: " : "",
                 c.float_outputs ? "see nodes_to_exclude" : "");
    qp_json_free(root);
    qp_qassign_free(a);
    return st;
}
