/* model/tflite-import.c: TFLite model -> graph IR (model/tflite-import.h). */
#include "model/tflite-import.h"

#include <stdlib.h>
#include <string.h>

#include "kernels/quantize-act.h"

/* Declares graph input ti with its dtype, shape and quantization. */
static enum qp_status add_input(struct qp_graph *g, const struct qp_tfl_model *m,
                                int ti, struct qp_error *err)
{
    const struct qp_tfl_tensor *t = &m->tensors[ti];
    const char *name = qp_tfl_tensor_name(m, (size_t)ti);
    enum qp_status st = qp_graph_add_input(g, name, t->dtype, t->ndim, t->shape,
                                           err);
    if (st || !t->q.count || !qp_dtype_is_int(t->dtype))
        return st;
    struct qp_tensor *q;
    if ((st = qp_tfl_tensor_new(m, (size_t)ti, &q, err)))
        return st;
    g->values[qp_graph_find(g, name)].feed_q = q;
    return QP_OK;
}

static enum qp_status build(struct qp_graph *g, const struct qp_tfl_model *m,
                            enum qp_tfl_flavor flavor, struct qp_error *err)
{
    size_t nt = m->n_tensors;
    bool *produced = calloc(nt ? nt : 1, 1), *added = calloc(nt ? nt : 1, 1);
    enum qp_status st = QP_OK;
    if (!produced || !added)
        st = qp_fail(err, QP_E_NOMEM, "out of memory");
    for (size_t i = 0; !st && i < m->n_ops; i++)
        for (int k = 0; k < m->ops[i].n_out; k++)
            if (m->ops[i].out[k] >= 0)
                produced[m->ops[i].out[k]] = true;
    for (int i = 0; !st && i < m->n_inputs; i++) {
        added[m->inputs[i]] = true;
        st = add_input(g, m, m->inputs[i], err);
    }
    for (size_t i = 0; !st && i < m->n_ops; i++) {
        const struct qp_tfl_op *op = &m->ops[i];
        struct qp_tfl_node *s;
        if ((st = qp_tfl_node_new(m, i, flavor, &s, err)))
            break;
        const char *in[QP_TFL_MAX_IO], *out[QP_TFL_MAX_IO];
        for (int k = 0; k < op->n_in && !st; k++) {
            int ti = op->in[k];
            in[k] = ti < 0 ? "" : qp_tfl_tensor_name(m, (size_t)ti);
            if (ti < 0 || added[ti] || produced[ti])
                continue;
            const struct qp_tfl_tensor *t = &m->tensors[ti];
            if (t->is_variable || !t->data) {
                st = qp_tfl_fail(err, m, op, QP_E_UNSUPPORTED, "input '%s' is "
                                 "%s", t->name, t->is_variable
                                 ? "a variable" : "neither a graph input, a "
                                 "constant nor an operator output");
                break;
            }
            struct qp_tensor *c;
            if (!(st = qp_tfl_tensor_new(m, (size_t)ti, &c, err)))
                st = qp_graph_add_const(g, c, err);
            added[ti] = true;
        }
        for (int k = 0; k < op->n_out; k++)
            out[k] = qp_tfl_tensor_name(m, (size_t)op->out[k]);
        const char *opname = qp_tfl_op_name(op->builtin);
        int id;
        if (!st)
            st = qp_graph_add_node(g, opname, "tflite",
                                   m->opcodes[op->opcode].version, out[0],
                                   op->n_in, in, op->n_out, out, &id, err);
        if (st) {
            qp_tfl_node_free(s);
            break;
        }
        g->nodes[id].state = s;
        g->nodes[id].state_free = qp_tfl_node_free;
        st = qp_node_set_int(&g->nodes[id], "tflite_index", (int64_t)i, err);
    }
    for (int i = 0; !st && i < m->n_outputs; i++)
        st = qp_graph_add_output(g, qp_tfl_tensor_name(m, (size_t)m->outputs[i]),
                                 err);
    free(produced);
    free(added);
    return st ? st : qp_graph_finalize(g, err);
}

enum qp_status qp_model_from_tflite(const struct qp_tfl_model *m,
                                    const struct qp_tflite_opts *opts,
                                    struct qp_graph **out,
                                    struct qp_error *err)
{
    *out = NULL;
    struct qp_graph *g;
    enum qp_status st = qp_graph_new(m->path, &g, err);
    if (st)
        return st;
    st = build(g, m, opts ? opts->flavor : QP_TFL_MICRO, err);
    if (st) {
        if (strncmp(err->msg, "'", 1))
            qp_error_prefix(err, "'%s': ", m->path);
        qp_graph_free(g);
        return st;
    }
    *out = g;
    return QP_OK;
}

enum qp_status qp_model_load_tflite(const char *path,
                                    const struct qp_tflite_opts *opts,
                                    struct qp_graph **out,
                                    struct qp_error *err)
{
    struct qp_tfl_model *m;
    *out = NULL;
    enum qp_status st = qp_tfl_load(path, &m, err);
    if (st)
        return st;
    st = qp_model_from_tflite(m, opts, out, err);
    qp_tfl_model_free(m);
    return st;
}

enum qp_status qp_model_quantize_feed(const struct qp_value *v,
                                      struct qp_tensor **t,
                                      struct qp_error *err)
{
    struct qp_tensor *x = *t, *y;
    const struct qp_tensor *q = v->feed_q;
    if (!q || !q->qp || !qp_dtype_traits(x->dtype)->is_float ||
        !qp_dtype_is_int(v->dtype))
        return QP_OK;
    if (q->qp->count != 1)
        return qp_fail(err, QP_E_UNSUPPORTED, "input '%s' is quantized per "
                       "channel; give it as %s", v->name,
                       qp_dtype_name(v->dtype));
    enum qp_status st = qp_tensor_new(x->name, v->dtype, x->ndim, x->shape, &y,
                                      err);
    if (st)
        return st;
    const struct qp_dtype_traits *tr = qp_dtype_traits(v->dtype);
    float scale = q->qp->scale[0];
    int32_t zp = q->qp->zero_point ? q->qp->zero_point[0] : 0;
    size_t n = qp_tensor_numel(x);
    for (size_t i = 0; i < n; i++) {
        float f;
        qp_tensor_read_f32(x, i, 1, &f);
        qp_elem_set_i64(v->dtype, y->data, i,
                        qp_qa_quantize_one(QP_QA_TFLITE, f, scale, zp,
                                           (int32_t)tr->min, (int32_t)tr->max));
    }
    if ((st = qp_tensor_set_qparams(y, 1, &scale, &zp, -1, 0, err))) {
        qp_tensor_free(y);
        return st;
    }
    qp_tensor_free(x);
    *t = y;
    return QP_OK;
}
