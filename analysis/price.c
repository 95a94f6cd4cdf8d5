/* analysis/price.c: a plan's prices (analysis/price.h). */
#include "analysis/price.h"

#include "model/qassign.h"
#include "quant/rtn.h"

static unsigned value_bits(const struct qp_qplan *p, int v)
{
    return p && v >= 0 && p->v[v].quant ? p->v[v].as.f.bits : 32;
}

void qp_price_plan(const struct qp_graph *g, const struct qp_qplan *p,
                   const uint64_t *macs, struct qp_price *out)
{
    *out = (struct qp_price){0};
    for (int i = 0; i < g->n_nodes; i++) {
        const struct qp_node *n = &g->nodes[i];
        if (qp_node_weighted(g, i, NULL)) {
            const struct qp_tensor *w = g->values[n->in[1]].konst;
            bool wq = p && p->n[i].wq;
            size_t numel = qp_tensor_numel(w);
            out->params += numel;
            out->bytes += wq ? qp_rtn_bytes(p->n[i].w_q) : numel * 4;
            unsigned wb = wq ? p->n[i].ws.f.bits : 32;
            if (macs)
                out->bitops += (double)macs[i] * wb * value_bits(p, n->in[0]);
        }
        /* a node whose input and output precisions differ */
        if (n->n_in && n->in[0] >= 0 && n->n_out && n->out[0] >= 0 &&
            !g->values[n->in[0]].konst &&
            value_bits(p, n->in[0]) != value_bits(p, n->out[0]))
            out->transitions++;
    }
}
