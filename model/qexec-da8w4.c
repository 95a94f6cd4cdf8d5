/* model/qexec-da8w4.c: the int mode's 8da4w plan (model/qexec-da8w4.h). */
#include "model/qexec-da8w4.h"

#include <stdlib.h>
#include <string.h>

#include "kernels/gemm-qd8.h"
#include "model/op-llm.h"

bool qp_da8w4_plan(const struct qp_qplan *p)
{
    for (int v = 0; v < p->g->n_values; v++)
        if (p->v[v].quant && p->v[v].as.dynamic)
            return true;
    return false;
}

static bool is_linear(const struct qp_node *n)
{
    return !strcmp(n->domain, QP_LLM_DOMAIN) && !strcmp(n->op_type, "Linear");
}

/* An int4 group-wise symmetric weight. */
static bool qb4w_scheme(const struct qp_qnode *q)
{
    return q->wq && q->ws.family == QP_WFAMILY_INT && q->ws.f.bits == 4 &&
           !q->ws.f.asym && q->ws.gran == QP_GRAN_GROUP &&
           q->w_q->dtype == QP_DTYPE_I4;
}

enum qp_status qp_da8w4_resolve(struct qp_qplan *p, struct qp_error *err)
{
    const struct qp_graph *g = p->g;
    char lab[256];
    for (int v = 0; v < g->n_values; v++) {
        const struct qp_qval *q = &p->v[v];
        if (q->quant && (!q->as.dynamic || q->as.f.bits != 8 || !q->as.f.asym)) {
            char as[QP_SCHEME_MAX];
            qp_ascheme_format(&q->as, as, sizeof as);
            return qp_fail(err, QP_E_UNSUPPORTED, "activation '%s': the int "
                           "mode's 8da4w path runs 8-bit asymmetric dynamic "
                           "activations ('a8dz') throughout, not '%s'",
                           g->values[v].name, as);
        }
    }
    for (int i = 0; i < g->n_nodes; i++) {
        const struct qp_node *n = &g->nodes[i];
        struct qp_qnode *q = &p->n[i];
        q->kind = QP_QK_FLOAT;
        q->lut_ok = false;
        if (!q->wq)
            continue;
        if (!(n->def->traits & QP_TRAIT_QWEIGHT))
            return qp_fail(err, QP_E_UNSUPPORTED, "%s: the int mode's 8da4w "
                           "path runs LLM linear layers (and weight-only "
                           "embeddings); use --mode fake",
                           qp_node_label(g, i, lab, sizeof lab));
        bool in_q = n->n_in > 0 && n->in[0] >= 0 && p->v[n->in[0]].quant;
        if (!is_linear(n) || !in_q)
            continue; /* weight-only (an embedding table) */
        if (!qb4w_scheme(q))
            return qp_fail(err, QP_E_UNSUPPORTED, "%s: 8da4w runs int4 "
                           "group-wise symmetric weights (w4gN) under dynamic "
                           "activations, not w%u%s; give the layer a weight-"
                           "only scheme or fp32 in the recipe",
                           qp_node_label(g, i, lab, sizeof lab), q->ws.f.bits,
                           q->ws.gran == QP_GRAN_GROUP ? (q->ws.f.asym ? "gNz" : "gN")
                           : q->ws.gran == QP_GRAN_CHANNEL ? "c" : "t");
        q->kind = QP_QK_DA8W4;
    }
    /* the activations are float between the layers, as in ExecuTorch: the
     * kernels quantize their inputs themselves */
    for (int v = 0; v < g->n_values; v++) {
        p->v[v].quant = false;
        p->v[v].inherited = false;
    }
    return QP_OK;
}

enum qp_status qp_da8w4_prepare(struct qp_qplan *p, int i, struct qp_error *err)
{
    struct qp_qnode *q = &p->n[i];
    struct qp_wq wq;
    enum qp_status st = qp_wq_init(&wq, q->w_q, err);
    if (st)
        return st;
    q->qb4w = calloc(1, sizeof *q->qb4w);
    if (!q->qb4w)
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    st = qp_qb4w_init(q->qb4w, &wq, err);
    if (st) {
        free(q->qb4w);
        q->qb4w = NULL;
    }
    return st;
}

enum qp_status qp_da8w4_run(const struct qp_qplan *p, const struct qp_op_ctx *c,
                            struct qp_tensor **out, struct qp_error *err)
{
    const struct qp_qnode *q = &p->n[c->node];
    const struct qp_qb4w *b = q->qb4w;
    const struct qp_tensor *x = c->in[0], *bt = qp_op_in(c, 2);
    struct qp_tdesc d;
    enum qp_status st = qp_llm_linear_infer(c, &d, err);
    if (st || (st = qp_op_new_tensor(c, c->g->values[c->n->out[0]].name, &d,
                                     &out[0], err)))
        return st;
    size_t rows = b->k ? qp_tensor_numel(x) / b->k : 0;
    size_t need = qp_gemm_qd8_scratch_size(b, rows);
    size_t bias_at = (need + 63) / 64 * 64;
    char *scratch = qp_op_scratch(c, bias_at + (bt ? b->n : 1) * sizeof(float));
    if (!scratch) {
        qp_op_free_tensor(c, out[0]);
        out[0] = NULL;
        return qp_op_fail(err, c, QP_E_NOMEM, "out of memory");
    }
    float *bias = NULL;
    if (bt) {
        bias = (float *)(scratch + bias_at);
        qp_llm_read_vec(bt, bias, b->n);
    }
    qp_gemm_qd8(c->pool, b, x->data, b->k, rows, bias, out[0]->data, b->n,
                scratch);
    return QP_OK;
}
