/* model/session-gptq.c: GPTQ weights of a session's plans
 * (model/session.h, model/gptq-graph.h). */
#include "model/session-impl.h"

#include <stdlib.h>
#include <string.h>

#include "core/hash.h"
#include "model/gptq-view.h"

void qp_session_set_gptq(struct qp_session *s,
                         const struct qp_session_gptq_opts *o)
{
    s->gptq = o ? *o : (struct qp_session_gptq_opts){0};
}

/* A hash of every calibration set, in order. */
static uint64_t calib_hash(struct qp_session *s)
{
    if (!s->calib_hashed) {
        uint64_t h = qp_hash_u64(QP_HASH_INIT, s->ncalib);
        for (size_t i = 0; i < s->ncalib; i++)
            h = qp_hash_u64(h, qp_session_feed_hash(
                                   s->g, (const struct qp_tensor *const *)s->calib[i]));
        s->calib_hash = h;
        s->calib_hashed = true;
    }
    return s->calib_hash;
}

enum qp_status qp_session_gptq_assign(struct qp_session *s,
                                      const struct qp_qassign *a,
                                      struct qp_qassign **out,
                                      struct qp_error *err)
{
    enum qp_status st = qp_qassign_clone(a, out, err);
    char why[128];
    for (int i = 0; !st && i < s->g->n_nodes; i++) {
        struct qp_wscheme *ws = &(*out)->ws[i];
        if (!(*out)->wq[i] || ws->algo != QP_WALGO_GPTQ ||
            (qp_node_weighted(s->g, i, NULL) &&
             qp_gview_capable(s->g, i, ws, why, sizeof why)))
            continue;
        ws->algo = QP_WALGO_RTN;
        ws->gptq = (struct qp_gptq_options){0};
        if (s->gptq.on_fallback)
            s->gptq.on_fallback(s->gptq.ctx, i, why);
    }
    return st;
}

enum qp_status qp_session_gptq(struct qp_session *s, const struct qp_qassign *a,
                               enum qp_round r, uint64_t *key,
                               const struct qp_wquant **w,
                               struct qp_error *err)
{
    const struct qp_graph *g = s->g;
    uint64_t *k = key ? key : calloc((size_t)g->n_nodes + 1, sizeof *k);
    if (!k)
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    enum qp_status st = qp_gptq_graph_keys(g, a, r, s->gptq.fp32_inputs,
                                           calib_hash(s), k, err);
    struct qp_gptq_graph_opts o = {
        a, k, r, s->gptq.fp32_inputs, s->wc,
        (struct qp_tensor *const *const *)s->calib, s->ncalib,
        s->gptq.progress, s->gptq.on_layer, s->gptq.ctx};
    if (!st)
        st = qp_gptq_graph_run(g, &o, NULL, err);
    for (int i = 0; w && !st && i < g->n_nodes; i++) {
        enum qp_wlayout l = QP_WLAYOUT_TORCH;
        qp_node_weighted(g, i, &l);
        struct qp_wquant_opts wo = {r, l};
        w[i] = k[i] ? qp_wcache_find(s->wc, g->nodes[i].in[1], &a->ws[i], &wo,
                                     k[i])
                    : NULL;
    }
    if (k != key)
        free(k);
    return st;
}

bool qp_session_gptq_any(const struct qp_qassign *a)
{
    for (int i = 0; i < a->n_nodes; i++)
        if (a->wq[i] && a->ws[i].algo == QP_WALGO_GPTQ)
            return true;
    return false;
}
