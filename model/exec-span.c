/* model/exec-span.c: spans of nodes run by a mode's hook as one pass
 * (model/exec-span.h). */
#include "model/exec-span.h"

#include "model/exec-run.h"

/* Nodes one span may cover. */
#define SPAN_MAX 64

const struct qp_tensor *qp_exec_span_value(const struct qp_exec_span *s, int v)
{
    return v < 0 ? NULL : qp_run_value(s->run, v);
}

bool qp_exec_span_needed(const struct qp_exec_span *s, int v, int n)
{
    const struct run *r = s->run;
    const struct qp_value *val = &s->g->values[v];
    if (val->is_output || val->n_consumers == 0 || qp_run_captured(r, v))
        return true;
    for (int c = 0; c < val->n_consumers; c++) {
        int k = 0;
        while (k < n && s->g->order[s->pos + k] != val->consumers[c])
            k++;
        if (k == n)
            return true;
    }
    return false;
}

enum qp_status qp_exec_span_tensor(struct qp_exec_span *s, int v,
                                   enum qp_dtype dtype, int ndim,
                                   const int64_t *shape,
                                   struct qp_tensor **out,
                                   struct qp_error *err)
{
    struct run *r = s->run;
    struct qp_tdesc d = {dtype, ndim, {0}};
    for (int k = 0; k < ndim && k < QP_MAX_DIMS; k++)
        d.shape[k] = shape[k];
    return qp_run_new_tensor(&r->cache, qp_run_value_name(s->g, v), &d, out,
                             err);
}

void qp_exec_span_free(struct qp_exec_span *s, struct qp_tensor *t)
{
    struct run *r = s->run;
    qp_run_free_tensor(&r->cache, t, r->live_bytes);
}

enum qp_status qp_exec_span_publish(struct qp_exec_span *s, int node,
                                    struct qp_tensor **out,
                                    struct qp_error *err)
{
    struct run *r = s->run;
    const struct qp_node *n = &s->g->nodes[node];
    enum qp_status st = QP_OK;
    for (int k = 0; k < n->n_out; k++) {
        if (!out[k])
            continue;
        if (st || n->out[k] < 0)
            qp_exec_span_free(s, out[k]);
        else
            st = qp_run_publish(r, n->out[k], out[k], true, err);
        out[k] = NULL;
    }
    if (!st)
        qp_run_release_inputs(r, node);
    return st;
}

void qp_exec_span_account(struct qp_exec_span *s, int n)
{
    qp_run_account(s->run, s->g->order + s->pos, n, s->t0);
}

enum qp_status qp_run_span(struct run *r, int pos, int *done,
                           struct qp_error *err)
{
    const struct qp_graph *g = r->g;
    const struct qp_exec_hooks *h = r->opts->hooks;
    const bool *skip = r->opts->skip;
    int len = 0;
    while (pos + len < g->n_nodes && len < SPAN_MAX &&
           !(skip && skip[g->order[pos + len]]))
        len++;
    struct qp_exec_span s = {g, pos, len, &r->scratch, r->pool, r->opts->state,
                             r, qp_run_clock(r)};
    *done = 0;
    if (len == 0)
        return QP_OK;
    enum qp_status st = h->run_span(h->ctx, &s, done, err);
    qp_run_track_peak(r);
    return st;
}
