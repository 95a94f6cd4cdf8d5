/* analysis/export-opset.c: graph IR nodes written at a newer ONNX opset
 * (analysis/export-opset.h). */
#include "analysis/export-opset.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/op.h"

/* ---- names ------------------------------------------------------------------ */

enum qp_status qp_export_names_init(struct qp_export_names *nm,
                                    const struct qp_graph *g,
                                    struct qp_error *err)
{
    qp_strmap_init(&nm->used);
    for (int v = 0; v < g->n_values; v++) {
        enum qp_status st = qp_strmap_put(&nm->used, g->values[v].name, 0, NULL,
                                          err);
        if (st)
            return st;
    }
    return QP_OK;
}

void qp_export_names_release(struct qp_export_names *nm)
{
    qp_strmap_release(&nm->used);
}

enum qp_status qp_export_name(struct qp_export_names *nm, const char *base,
                              char *buf, size_t size, struct qp_error *err)
{
    size_t v;
    int n = snprintf(buf, size, "%s", base);
    for (unsigned k = 1; n >= 0 && (size_t)n < size &&
                         qp_strmap_get(&nm->used, buf, &v); k++)
        n = snprintf(buf, size, "%s_%u", base, k);
    if (n < 0 || (size_t)n >= size)
        return qp_fail(err, QP_E_INVAL, "name '%.64s...' is too long", base);
    return qp_strmap_put(&nm->used, buf, 0, NULL, err);
}

enum qp_status qp_export_add_const(struct qp_export_names *nm,
                                   struct qp_onnx_graph *tg, const char *base,
                                   struct qp_tensor *t, const char **name,
                                   struct qp_error *err)
{
    char buf[1024];
    enum qp_status st = qp_export_name(nm, base, buf, sizeof buf, err);
    if (!st)
        st = qp_tensor_rename(t, buf, err);
    if (st) {
        qp_tensor_free(t);
        return st;
    }
    if (name)
        *name = t->name;
    return qp_onnx_graph_add_initializer(tg, t, err);
}

/* ---- attributes ---------------------------------------------------------------- */

static bool is_op(const struct qp_node *n, const char *op)
{
    return !n->domain[0] && !strcmp(n->op_type, op);
}

static enum qp_status copy_attr(const struct qp_attr *a, struct qp_onnx_node *o,
                                struct qp_error *err)
{
    struct qp_tensor *t;
    enum qp_status st;
    switch (a->type) {
    case QP_ATTR_INT: return qp_onnx_node_add_int(o, a->name, a->i, err);
    case QP_ATTR_FLOAT: return qp_onnx_node_add_float(o, a->name, a->f, err);
    case QP_ATTR_STRING:
        return qp_onnx_node_add_string(o, a->name, a->s, strlen(a->s), err);
    case QP_ATTR_INTS: return qp_onnx_node_add_ints(o, a->name, a->ints, a->count, err);
    case QP_ATTR_FLOATS:
        return qp_onnx_node_add_floats(o, a->name, a->floats, a->count, err);
    case QP_ATTR_STRINGS:
        return qp_onnx_node_add_strings(o, a->name, (const char *const *)a->strings,
                                        a->count, err);
    case QP_ATTR_TENSOR: /* borrowed: the graph outlives the written tree */
        st = qp_tensor_wrap(a->t->name, a->t->dtype, a->t->ndim, a->t->shape,
                            a->t->data, a->t->nbytes, NULL, &t, err);
        return st ? st : qp_onnx_node_add_tensor(o, a->name, t, err);
    default:
        return qp_fail(err, QP_E_UNSUPPORTED, "attribute '%s' has no ONNX type",
                       a->name);
    }
}

/* A new 1-D int64 (or scalar float) constant from values. */
static enum qp_status ints_const(struct qp_export_names *nm, struct qp_onnx_graph *tg,
                                 const char *base, const int64_t *v, size_t n,
                                 const char **name, struct qp_error *err)
{
    struct qp_tensor *t;
    int64_t len = (int64_t)n;
    enum qp_status st = qp_tensor_new(base, QP_DTYPE_I64, 1, &len, &t, err);
    if (st)
        return st;
    if (n)
        memcpy(t->data, v, n * sizeof *v);
    return qp_export_add_const(nm, tg, base, t, name, err);
}

static enum qp_status float_const(struct qp_export_names *nm,
                                  struct qp_onnx_graph *tg, const char *base,
                                  float v, const char **name,
                                  struct qp_error *err)
{
    struct qp_tensor *t;
    enum qp_status st = qp_tensor_new(base, QP_DTYPE_F32, 0, NULL, &t, err);
    if (st)
        return st;
    *(float *)t->data = v;
    return qp_export_add_const(nm, tg, base, t, name, err);
}

/* ---- conversions -------------------------------------------------------------- */

/* What one node becomes: its inputs (appended names), the attributes it
 * loses, and the attributes it gains. */
struct conv {
    const char *in[QP_OP_MAX_IO];
    int n_in;
    const char *drop[4];
    int n_drop;
    int64_t num_outputs;  /* > 0: add Split's num_outputs */
    int64_t concat_axis;  /* >= 0: add Concat's axis */
    int64_t softmax_axis; /* >= 0: replace Softmax's axis */
};

/* Input name k of the node, "" beyond the given ones. */
static void keep_inputs(struct conv *cv, const char *const *in, int n_in, int upto)
{
    for (int k = 0; k < n_in && k < upto; k++)
        cv->in[cv->n_in++] = in[k];
}

static void drop(struct conv *cv, const char *name)
{
    cv->drop[cv->n_drop++] = name;
}

/* attr (ints) as a new constant input appended to cv; "" when absent. */
static enum qp_status attr_input(const struct qp_node *n, const char *attr,
                                 const char *suffix, struct conv *cv,
                                 struct qp_export_names *nm,
                                 struct qp_onnx_graph *tg, struct qp_error *err)
{
    size_t count;
    const int64_t *v = qp_attr_ints(n, attr, &count);
    drop(cv, attr);
    if (!v) {
        cv->in[cv->n_in++] = "";
        return QP_OK;
    }
    char base[600];
    snprintf(base, sizeof base, "%s_%s", n->name[0] ? n->name : n->op_type, suffix);
    return ints_const(nm, tg, base, v, count, &cv->in[cv->n_in++], err);
}

/* Trailing "" inputs are omitted. */
static void trim(struct conv *cv)
{
    while (cv->n_in > 0 && !cv->in[cv->n_in - 1][0])
        cv->n_in--;
}

static bool reduce_op(const struct qp_node *n, int *axes_input_opset)
{
    static const char *const ops[] = {
        "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceSumSquare",
        "ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp"};
    if (is_op(n, "ReduceSum")) {
        *axes_input_opset = 13;
        return true;
    }
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        if (is_op(n, ops[i])) {
            *axes_input_opset = 18;
            return true;
        }
    return false;
}

static enum qp_status refuse(const struct qp_graph *g, int i, int target,
                             const char *why, struct qp_error *err)
{
    char lab[256];
    return qp_fail(err, QP_E_UNSUPPORTED, "%s at opset %d has no form at opset "
                   "%d: %s", qp_node_label(g, i, lab, sizeof lab),
                   g->nodes[i].opset, target, why);
}

/* Fills cv for node i going from its opset to target. */
static enum qp_status plan(const struct qp_graph *g, int i, const char *const *in,
                           int n_in, int target, int rank0, struct conv *cv,
                           struct qp_export_names *nm, struct qp_onnx_graph *tg,
                           struct qp_error *err)
{
    const struct qp_node *n = &g->nodes[i];
    int o = n->opset, thr;
    keep_inputs(cv, in, n_in, QP_OP_MAX_IO);
    cv->num_outputs = cv->concat_axis = cv->softmax_axis = -1;
    if (o >= target || n->domain[0])
        return QP_OK;
    if (qp_node_attr(n, "consumed_inputs"))
        return refuse(g, i, target, "it has the consumed_inputs attribute of "
                      "opset 5", err);
    if (qp_node_attr(n, "broadcast")) {
        if (qp_node_attr(n, "axis") && !is_op(n, "Concat"))
            return refuse(g, i, target, "legacy broadcasting along an axis", err);
        drop(cv, "broadcast");
    }
    char base[600];
    const char *who = n->name[0] ? n->name : n->op_type;
    if (is_op(n, "Clip") && o < 11 && target >= 11) {
        cv->n_in = 0;
        keep_inputs(cv, in, n_in, 1);
        drop(cv, "min");
        drop(cv, "max");
        const char *bound[2] = {"min", "max"};
        for (int k = 0; k < 2; k++) {
            const struct qp_attr *a = qp_node_attr(n, bound[k]);
            snprintf(base, sizeof base, "%s_%s", who, bound[k]);
            enum qp_status st = a ? float_const(nm, tg, base, a->f,
                                                &cv->in[cv->n_in], err)
                                  : QP_OK;
            if (!a)
                cv->in[cv->n_in] = "";
            cv->n_in++;
            if (st)
                return st;
        }
        trim(cv);
    } else if (is_op(n, "Slice") && o < 10 && target >= 10) {
        cv->n_in = 1;
        enum qp_status st;
        if ((st = attr_input(n, "starts", "starts", cv, nm, tg, err)) ||
            (st = attr_input(n, "ends", "ends", cv, nm, tg, err)) ||
            (st = attr_input(n, "axes", "axes", cv, nm, tg, err)))
            return st;
        trim(cv);
    } else if ((is_op(n, "Squeeze") || is_op(n, "Unsqueeze")) && o < 13 &&
               target >= 13) {
        cv->n_in = 1;
        enum qp_status st = attr_input(n, "axes", "axes", cv, nm, tg, err);
        if (st)
            return st;
        trim(cv);
    } else if (reduce_op(n, &thr) && o < thr && target >= thr) {
        cv->n_in = 1;
        enum qp_status st = attr_input(n, "axes", "axes", cv, nm, tg, err);
        if (st)
            return st;
        trim(cv);
    } else if (is_op(n, "Split")) {
        if (o < 13 && target >= 13) {
            cv->n_in = 1;
            enum qp_status st = attr_input(n, "split", "split", cv, nm, tg, err);
            if (st)
                return st;
            trim(cv);
        }
        if (target >= 18 && (cv->n_in < 2 || !cv->in[1][0]) &&
            !qp_node_attr(n, "num_outputs"))
            cv->num_outputs = n->n_out;
    } else if (is_op(n, "Pad") && o < 11 && target >= 11) {
        cv->n_in = 1;
        enum qp_status st = attr_input(n, "pads", "pads", cv, nm, tg, err);
        const struct qp_attr *v = qp_node_attr(n, "value");
        drop(cv, "value");
        if (!st && v) {
            snprintf(base, sizeof base, "%s_value", who);
            st = float_const(nm, tg, base, v->f, &cv->in[cv->n_in++], err);
        }
        if (st)
            return st;
    } else if (is_op(n, "Reshape") && o < 5) {
        cv->n_in = 1;
        enum qp_status st = attr_input(n, "shape", "shape", cv, nm, tg, err);
        if (st)
            return st;
    } else if ((is_op(n, "Softmax") || is_op(n, "LogSoftmax")) && o < 13 &&
               target >= 13) {
        int64_t a = qp_attr_int(n, "axis", 1);
        if (rank0 < 0)
            return refuse(g, i, target, "the rank of its input is unknown, so "
                          "whether its flattened axis is the last one is too",
                          err);
        if (a < 0)
            a += rank0;
        if (a != rank0 - 1)
            return refuse(g, i, target, "before 13 it normalizes over the input "
                          "flattened from its axis on, which is not one axis",
                          err);
        cv->softmax_axis = a;
    } else if (is_op(n, "Dropout")) {
        if (target >= 12)
            drop(cv, "ratio");
        drop(cv, "is_test");
    } else if (is_op(n, "BatchNormalization")) {
        if (qp_attr_int(n, "spatial", 1) != 1)
            return refuse(g, i, target, "spatial = 0", err);
        drop(cv, "spatial");
        drop(cv, "is_test");
    } else if (is_op(n, "Concat") && !qp_node_attr(n, "axis")) {
        cv->concat_axis = 1;
    } else if (is_op(n, "Resize") && o == 10 && target >= 11) {
        return refuse(g, i, target, "opset 11 changed Resize's coordinate "
                      "rules", err);
    } else if (is_op(n, "Upsample") && target >= 10) {
        return refuse(g, i, target, "Upsample was removed at opset 10", err);
    } else if (is_op(n, "Cast")) {
        const struct qp_attr *to = qp_node_attr(n, "to");
        if (to && to->type == QP_ATTR_STRING)
            return refuse(g, i, target, "its 'to' is a type name (opset 1)", err);
    }
    return QP_OK;
}

enum qp_status qp_export_node(const struct qp_graph *g, int i,
                              const char *const *in, int n_in,
                              const char *const *out, int n_out, int target,
                              int rank0, struct qp_export_names *nm,
                              struct qp_onnx_graph *tg, struct qp_error *err)
{
    const struct qp_node *n = &g->nodes[i];
    struct conv cv = {0};
    if (n_in > QP_OP_MAX_IO)
        return qp_fail(err, QP_E_UNSUPPORTED, "node '%s' has %d inputs", n->name,
                       n_in);
    enum qp_status st = plan(g, i, in, n_in, target, rank0, &cv, nm, tg, err);
    struct qp_onnx_node *o = NULL;
    if (!st)
        st = qp_onnx_graph_add_node(tg, n->op_type, n->domain, n->name, cv.in,
                                    (size_t)cv.n_in, out, (size_t)n_out, &o, err);
    for (int k = 0; !st && k < n->n_attrs; k++) {
        const struct qp_attr *a = &n->attrs[k];
        bool dropped = false;
        for (int d = 0; d < cv.n_drop; d++)
            dropped |= !strcmp(cv.drop[d], a->name);
        if (cv.softmax_axis >= 0 && !strcmp(a->name, "axis"))
            dropped = true;
        if (!dropped)
            st = copy_attr(a, o, err);
    }
    if (!st && cv.num_outputs > 0)
        st = qp_onnx_node_add_int(o, "num_outputs", cv.num_outputs, err);
    if (!st && cv.concat_axis >= 0)
        st = qp_onnx_node_add_int(o, "axis", cv.concat_axis, err);
    if (!st && cv.softmax_axis >= 0)
        st = qp_onnx_node_add_int(o, "axis", cv.softmax_axis, err);
    return st;
}
