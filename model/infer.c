/* model/infer.c: static shape inference (model/infer.h). */
#include "model/infer.h"

#include <stdlib.h>
#include <string.h>

#include "model/exec.h"

/* A descriptor-only tensor for desc d (data NULL). */
static void desc_tensor(struct qp_tensor *t, const struct qp_tdesc *d)
{
    memset(t, 0, sizeof *t);
    t->name = "";
    t->dtype = d->dtype;
    t->ndim = d->ndim;
    memcpy(t->shape, d->shape, sizeof t->shape);
}

struct state {
    const struct qp_graph *g;
    struct qp_tdesc *descs;
    bool *known;
    struct qp_tensor **data;  /* computed small tensors (owned) */
    struct qp_tensor *stubs;  /* descriptor tensors per value */
};

/* Runs node i for real when all of its inputs have data (or only their
 * shapes matter) and its outputs are small. */
static enum qp_status maybe_compute(struct state *s, int i,
                                    const struct qp_tensor *const *in,
                                    bool all_data, struct qp_error *err)
{
    const struct qp_node *n = &s->g->nodes[i];
    size_t total = 0;
    for (int k = 0; k < n->n_out; k++)
        if (n->out[k] >= 0)
            total += qp_tdesc_numel(&s->descs[n->out[k]]);
    if (n->def->no_fold || total > QP_INFER_MAX_COMPUTE ||
        !(all_data || n->def->shape_only))
        return QP_OK;
    struct qp_tensor *out[QP_OP_MAX_IO];
    enum qp_status st = qp_exec_node(s->g, i, in, NULL, NULL, out, err);
    if (st)
        return st;
    for (int k = 0; k < n->n_out; k++) {
        if (n->out[k] >= 0)
            s->data[n->out[k]] = out[k];
        else
            qp_tensor_free(out[k]);
    }
    return QP_OK;
}

static enum qp_status infer_node(struct state *s, int i, struct qp_error *err)
{
    const struct qp_graph *g = s->g;
    const struct qp_node *n = &g->nodes[i];
    const struct qp_tensor *in[QP_OP_MAX_IO];
    bool all_data = true;
    for (int k = 0; k < n->n_in; k++) {
        int v = n->in[k];
        in[k] = NULL;
        if (v < 0)
            continue;
        if (!s->known[v])
            return QP_OK; /* unknown input: outputs stay unknown */
        if (g->values[v].konst)
            in[k] = g->values[v].konst;
        else if (s->data[v])
            in[k] = s->data[v];
        else {
            in[k] = &s->stubs[v];
            all_data = false;
            if (n->def->data_inputs & (1u << k))
                return QP_OK; /* needs data static inference lacks */
        }
    }
    struct qp_tdesc out[QP_OP_MAX_IO];
    memset(out, 0, sizeof out);
    struct qp_op_ctx c = {g, i, n, in, n->n_in, NULL, NULL, NULL};
    enum qp_status st = n->def->infer(&c, out, err);
    if (st)
        return st;
    for (int k = 0; k < n->n_out; k++) {
        int v = n->out[k];
        if (v < 0)
            continue;
        s->descs[v] = out[k];
        s->known[v] = true;
        desc_tensor(&s->stubs[v], &out[k]);
    }
    return maybe_compute(s, i, in, all_data, err);
}

enum qp_status qp_graph_infer(const struct qp_graph *g,
                              const struct qp_tdesc *inputs,
                              struct qp_tdesc *descs, bool *known,
                              struct qp_error *err)
{
    if (!g->finalized)
        return qp_fail(err, QP_E_INVAL, "graph '%s' is not finalized", g->name);
    size_t nv = (size_t)(g->n_values ? g->n_values : 1);
    struct state s = {g, descs, known, calloc(nv, sizeof *s.data),
                      calloc(nv, sizeof *s.stubs)};
    if (!s.data || !s.stubs) {
        free(s.data);
        free(s.stubs);
        return qp_fail(err, QP_E_NOMEM, "graph '%s': out of memory", g->name);
    }
    for (int v = 0; v < g->n_values; v++) {
        const struct qp_value *val = &g->values[v];
        known[v] = val->konst != NULL;
        if (val->konst)
            qp_tdesc_of(val->konst, &descs[v]);
    }
    for (int i = 0; i < g->n_inputs; i++) {
        int v = g->inputs[i];
        descs[v] = inputs[i];
        known[v] = true;
        desc_tensor(&s.stubs[v], &inputs[i]);
    }
    enum qp_status st = QP_OK;
    for (int i = 0; !st && i < g->n_nodes; i++)
        st = infer_node(&s, g->order[i], err);
    for (int v = 0; v < g->n_values; v++)
        qp_tensor_free(s.data[v]);
    free(s.data);
    free(s.stubs);
    return st;
}

/* ---- MAC counts ----------------------------------------------------------- */

static bool node_macs(const struct qp_graph *g, const struct qp_node *n,
                      const struct qp_tdesc *descs, const bool *known,
                      uint64_t *macs)
{
    *macs = 0;
    if (!n->def || !n->def->macs)
        return true;
    const struct qp_tdesc *in[QP_OP_MAX_IO];
    if (n->n_in > QP_OP_MAX_IO || n->n_out < 1 || n->out[0] < 0 ||
        !known[n->out[0]])
        return false;
    for (int k = 0; k < n->n_in; k++) {
        if (n->in[k] >= 0 && !known[n->in[k]])
            return false;
        in[k] = n->in[k] >= 0 ? &descs[n->in[k]] : NULL;
    }
    if (n->n_in < 2 || !in[0] || !in[1])
        return false;
    (void)g;
    *macs = n->def->macs(n, in, &descs[n->out[0]]);
    return true;
}

void qp_graph_node_macs(const struct qp_graph *g, const struct qp_tdesc *descs,
                        const bool *known, uint64_t *macs)
{
    for (int i = 0; i < g->n_nodes; i++)
        if (!node_macs(g, &g->nodes[i], descs, known, &macs[i]))
            macs[i] = 0;
}

uint64_t qp_graph_count_macs(const struct qp_graph *g,
                             const struct qp_tdesc *descs, const bool *known,
                             int *unknown)
{
    uint64_t total = 0;
    *unknown = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        uint64_t m;
        if (node_macs(g, &g->nodes[i], descs, known, &m))
            total += m;
        else
            (*unknown)++;
    }
    return total;
}
