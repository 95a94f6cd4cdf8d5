/* model/tflite-import.c: TFLite model -> graph IR (model/tflite-import.h). */
#include "model/tflite-import.h"

#include <stdlib.h>
#include <string.h>

#include "kernels/quantize-act.h"

/* A dequantized view of a model (qp_tflite_opts.dequantize): its own
 * tensor array with float32 types and data, the rest borrowed. */
struct dq_model {
    struct qp_tfl_model m;
    float **data; /* per tensor, owned (NULL when not replaced) */
    size_t n;
};

static void dq_free(void *p)
{
    struct dq_model *d = p;
    if (!d)
        return;
    for (size_t i = 0; i < d->n; i++)
        free(d->data[i]);
    free(d->data);
    free(d->m.tensors);
    free(d);
}

/* s * (q - zp) of element i of t (channel along t->q.dim). */
static float dequant_at(const struct qp_tfl_tensor *t, size_t i, size_t inner)
{
    size_t c = 0;
    if (t->q.count > 1)
        c = (i / inner) % (size_t)t->shape[t->q.dim];
    int64_t q = qp_elem_get_i64(t->dtype, t->data, i);
    return (float)((double)t->q.scale[c] *
                   ((double)q - (double)t->q.zero_point[c]));
}

static enum qp_status dequantize_model(const struct qp_tfl_model *m,
                                       struct dq_model **out,
                                       struct qp_error *err)
{
    struct dq_model *d = calloc(1, sizeof *d);
    *out = d;
    if (!d)
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    d->m = *m;
    d->n = m->n_tensors;
    d->m.tensors = calloc(d->n ? d->n : 1, sizeof *d->m.tensors);
    d->data = calloc(d->n ? d->n : 1, sizeof *d->data);
    if (!d->m.tensors || !d->data)
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    for (size_t i = 0; i < d->n; i++) {
        struct qp_tfl_tensor *t = &d->m.tensors[i];
        *t = m->tensors[i];
        if (!t->q.count || !qp_dtype_is_int(t->dtype) || t->sparse)
            continue; /* sparse tensors are refused by the operators */
        size_t n = qp_tfl_tensor_numel(t), inner = 1;
        for (int k = t->q.dim + 1; t->q.count > 1 && k < t->ndim; k++)
            inner *= (size_t)t->shape[k];
        if (t->data) {
            if (!(d->data[i] = malloc((n ? n : 1) * sizeof(float))))
                return qp_fail(err, QP_E_NOMEM, "out of memory");
            for (size_t k = 0; k < n; k++)
                d->data[i][k] = dequant_at(&m->tensors[i], k, inner);
            t->data = (const uint8_t *)d->data[i];
            t->nbytes = n * sizeof(float);
        }
        t->dtype = QP_DTYPE_F32;
        t->type = QP_TFL_FLOAT32;
        t->q.count = 0;
    }
    return QP_OK;
}

/* Declares graph input ti with its dtype, shape and quantization (orig:
 * the model before dequantization). */
static enum qp_status add_input(struct qp_graph *g, const struct qp_tfl_model *m,
                                const struct qp_tfl_model *orig, int ti,
                                struct qp_error *err)
{
    const struct qp_tfl_tensor *t = &m->tensors[ti], *o = &orig->tensors[ti];
    const char *name = qp_tfl_tensor_name(m, (size_t)ti);
    enum qp_status st = qp_graph_add_input(g, name, t->dtype, t->ndim, t->shape,
                                           err);
    if (st || !o->q.count || !qp_dtype_is_int(o->dtype))
        return st;
    struct qp_tensor *q;
    if ((st = qp_tfl_tensor_new(orig, (size_t)ti, &q, err)))
        return st;
    g->values[qp_graph_find(g, name)].feed_q = q;
    return QP_OK;
}

static enum qp_status build(struct qp_graph *g, const struct qp_tfl_model *m,
                            const struct qp_tfl_model *orig,
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
        st = add_input(g, m, orig, m->inputs[i], err);
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
    const struct qp_tfl_model *use = m;
    if (opts && opts->dequantize) {
        struct dq_model *d;
        st = dequantize_model(m, &d, err);
        if (st || (st = qp_graph_keep(g, d, dq_free, err))) {
            if (st)
                dq_free(d);
            qp_graph_free(g);
            return st;
        }
        use = &d->m;
    }
    st = build(g, use, m, opts ? opts->flavor : QP_TFL_MICRO, err);
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
    if (!q || !q->qp)
        return QP_OK;
    bool quantize = qp_dtype_traits(x->dtype)->is_float &&
                    qp_dtype_is_int(v->dtype);
    bool dequantize = v->dtype == QP_DTYPE_F32 && x->dtype == q->dtype;
    if (x->dtype == v->dtype && !x->qp && q->qp->count == 1)
        /* the model's own integers: they carry its parameters from here */
        return qp_tensor_set_qparams(x, 1, q->qp->scale, q->qp->zero_point,
                                     -1, 0, err);
    if (!quantize && !dequantize)
        return QP_OK;
    if (q->qp->count != 1)
        return qp_fail(err, QP_E_UNSUPPORTED, "input '%s' is quantized per "
                       "channel", v->name);
    enum qp_status st = qp_tensor_new(x->name, v->dtype, x->ndim, x->shape, &y,
                                      err);
    if (st)
        return st;
    const struct qp_dtype_traits *tr = qp_dtype_traits(v->dtype);
    float scale = q->qp->scale[0];
    int32_t zp = q->qp->zero_point ? q->qp->zero_point[0] : 0;
    size_t n = qp_tensor_numel(x);
    for (size_t i = 0; i < n; i++) {
        if (dequantize) {
            int64_t iv = qp_elem_get_i64(x->dtype, x->data, i);
            ((float *)y->data)[i] = (float)((double)scale * (double)(iv - zp));
            continue;
        }
        float f;
        qp_tensor_read_f32(x, i, 1, &f);
        qp_elem_set_i64(v->dtype, y->data, i,
                        qp_qa_quantize_one(QP_QA_TFLITE, f, scale, zp,
                                           (int32_t)tr->min, (int32_t)tr->max));
    }
    if (quantize && (st = qp_tensor_set_qparams(y, 1, &scale, &zp, -1, 0, err))) {
        qp_tensor_free(y);
        return st;
    }
    qp_tensor_free(x);
    *t = y;
    return QP_OK;
}

bool qp_tfl_node_weight(const struct qp_node *n, int *weight, int *bias,
                        const char **layout, int *out_axis)
{
    const struct qp_tfl_node *s = n->state;
    if (!s || !n->domain || strcmp(n->domain, "tflite"))
        return false;
    *out_axis = 0;
    switch (s->builtin) {
    case QP_TFL_CONV_2D: *layout = "OHWI"; *weight = 1; *bias = 2; break;
    case QP_TFL_DEPTHWISE_CONV_2D:
        *layout = "1HWO"; *weight = 1; *bias = 2; *out_axis = 3; break;
    case QP_TFL_FULLY_CONNECTED: *layout = "OI"; *weight = 1; *bias = 2; break;
    case QP_TFL_TRANSPOSE_CONV: *layout = "OHWI"; *weight = 1; *bias = 3; break;
    default: return false;
    }
    if (*bias >= n->n_in || n->in[*bias] < 0)
        *bias = -1;
    return true;
}
