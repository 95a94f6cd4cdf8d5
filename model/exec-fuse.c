/* model/exec-fuse.c: the executor's fused passes (model/fuse.h): runs of
 * elementwise nodes, and a Conv with the pass that reads its output as
 * its epilogue (the pass runs on each part of the Conv's output as soon
 * as the kernel finishes it, while it is in cache). */
#include <string.h>

#include "model/exec-run.h"
#include "model/fuse.h"
#include "model/op-conv.h"


/* The capture glob, when anything is captured. */
static const char *glob(const struct run *r)
{
    const struct qp_exec_opts *o = r->opts;
    return o && o->on_capture ? o->capture : NULL;
}

/* Allocates the exported outputs of segment s into out[] (counted as
 * live). */
static enum qp_status seg_alloc(struct run *r, const struct qp_fuse_plan *p,
                                int s, struct qp_tensor **out,
                                struct qp_error *err)
{
    const struct qp_graph *g = r->g;
    for (int k = 0; k < p->seg_count[s]; k++) {
        const struct qp_fuse_member *m = &p->m[p->seg_first[s] + k];
        if (!m->exported)
            continue;
        const char *name = qp_run_value_name(g, g->nodes[m->node].out[0]);
        enum qp_status st = qp_run_new_tensor(&r->cache, name, &m->desc,
                                              &out[k], err);
        if (st)
            return st;
        r->live_bytes += out[k]->nbytes;
    }
    return QP_OK;
}

/* After segment s ran (st: how it went): publishes its exported outputs
 * (or frees them on failure) and releases its nodes' inputs. */
static enum qp_status seg_finish(struct run *r, const struct qp_fuse_plan *p,
                                 int s, struct qp_tensor **out,
                                 enum qp_status st, struct qp_error *err)
{
    const struct qp_graph *g = r->g;
    int first = p->seg_first[s], cnt = p->seg_count[s];
    for (int k = 0; k < cnt; k++)
        if (out[k])
            r->live_bytes -= out[k]->nbytes;
    for (int k = 0; k < cnt; k++) {
        if (!out[k])
            continue;
        if (st)
            qp_run_free_tensor(&r->cache, out[k], r->live_bytes);
        else
            st = qp_run_publish(r, g->nodes[p->m[first + k].node].out[0],
                                out[k], true, err);
    }
    for (int k = 0; !st && k < cnt; k++)
        qp_run_release_inputs(r, p->m[first + k].node);
    return st;
}

/* Segment s of p, of more than one node: its exported outputs are
 * allocated, computed in one pass and published; then its inputs are
 * released as if each node had run. */
static enum qp_status run_segment(struct run *r, const struct qp_fuse_plan *p,
                                  int s, struct qp_error *err)
{
    struct qp_tensor *out[QP_FUSE_MAX_NODES] = {0};
    int nodes[QP_FUSE_MAX_NODES];
    double t0 = qp_run_clock(r);
    enum qp_status st = seg_alloc(r, p, s, out, err);
    if (!st) {
        qp_fuse_run(r->g, p, s, qp_run_value, r, out, r->pool);
        qp_run_track_peak(r);
    }
    if ((st = seg_finish(r, p, s, out, st, err)))
        return st;
    for (int k = 0; k < p->seg_count[s]; k++)
        nodes[k] = p->m[p->seg_first[s] + k].node;
    qp_run_account(r, nodes, p->seg_count[s], t0);
    return QP_OK;
}

/* Segments from..n_seg of p, each fused or alone. */
static enum qp_status run_segments(struct run *r, const struct qp_fuse_plan *p,
                                   int from, struct qp_error *err)
{
    for (int s = from; s < p->n_seg; s++) {
        enum qp_status st = p->seg_count[s] == 1
            ? qp_run_timed(r, p->m[p->seg_first[s]].node, err)
            : run_segment(r, p, s, err);
        if (st)
            return st;
    }
    return QP_OK;
}

/* Runs nodes at order positions [pos, pos + len), all fusion candidates,
 * or a prefix of them; *done receives how many ran. */
enum qp_status qp_run_fused(struct run *r, int pos, int len, int *done,
                                struct qp_error *err)
{
    const struct qp_graph *g = r->g;
    struct qp_fuse_plan p;
    if (qp_fuse_plan(g, g->order + pos, len, qp_run_value, r, glob(r), &p) == 0) {
        *done = 1;
        return qp_run_timed(r, g->order[pos], err);
    }
    *done = p.n;
    return run_segments(r, &p, 0, err);
}

/* Length of the run of fusion candidates starting at order position i. */
int qp_run_candidates(const struct qp_graph *g, int i)
{
    int len = 0;
    while (i + len < g->n_nodes && len < QP_FUSE_MAX_NODES &&
           qp_fuse_candidate(g, g->order[i + len]))
        len++;
    return len;
}


/* ---- a Conv and the pass after it --------------------------------------- */

/* The run's values, with the Conv's output (v) as t: a descriptor while
 * planning, its buffer while running. */
struct head {
    struct run *r;
    int v;
    const struct qp_tensor *t;
};

static const struct qp_tensor *head_value(void *ctx, int v)
{
    const struct head *h = ctx;
    return v == h->v ? h->t : qp_run_value(h->r, v);
}

static void head_epilogue(void *ctx, size_t begin, size_t end)
{
    qp_fuse_pass_range(ctx, begin, end);
}

/* True when a node of segment 0 reads v, and only segment 0 does (then v
 * need not exist as a tensor unless captured or an output). */
static void head_readers(const struct qp_graph *g, const struct qp_fuse_plan *p,
                         int v, bool *read, bool *only)
{
    const struct qp_value *val = &g->values[v];
    *read = false;
    *only = !val->is_output;
    for (int c = 0; c < val->n_consumers; c++) {
        int k = 0;
        while (k < p->n && p->m[k].node != val->consumers[c])
            k++;
        bool in0 = k < p->n && p->m[k].seg == 0;
        *read |= in0;
        *only &= in0;
    }
}

enum qp_status qp_run_conv_fused(struct run *r, int pos, int len, int *done,
                                 struct qp_error *err)
{
    const struct qp_graph *g = r->g;
    int node = g->order[pos];
    const struct qp_node *n = &g->nodes[node];
    *done = 0;
    if (!qp_op_is_conv(n) || n->n_in > 3 || n->n_out != 1 || n->out[0] < 0)
        return QP_OK;
    const struct qp_tensor *in[3] = {NULL, NULL, NULL};
    for (int k = 0; k < n->n_in; k++)
        if (n->in[k] >= 0 && !(in[k] = qp_run_value(r, n->in[k])))
            return QP_OK;
    struct qp_op_ctx c = {g, node, n, in, n->n_in, &r->scratch, r->pool,
                          r->opts ? r->opts->state : NULL};
    struct qp_tdesc d;
    if (!in[0] || in[0]->dtype != QP_DTYPE_F32 || n->def->infer(&c, &d, NULL))
        return QP_OK;
    int v = n->out[0];
    struct qp_tensor view;
    memset(&view, 0, sizeof view);
    view.dtype = d.dtype;
    view.ndim = d.ndim;
    memcpy(view.shape, d.shape, sizeof view.shape);
    struct head h = {r, v, &view};
    struct qp_fuse_plan p;
    bool read, only;
    if (qp_fuse_plan(g, g->order + pos + 1, len, head_value, &h, glob(r), &p) == 0)
        return QP_OK;
    head_readers(g, &p, v, &read, &only);
    if (!read || !qp_tdesc_equal(&p.m[0].desc, &d))
        return QP_OK;
    bool internal = only && !qp_run_captured(r, v);
    /* the Conv writes into the pass's last output when nothing else needs
     * its own (the pass then works in place), else into its tensor */
    double t0 = qp_run_clock(r);
    struct qp_tensor *out[QP_FUSE_MAX_NODES] = {0}, *y = NULL;
    enum qp_status st = seg_alloc(r, &p, 0, out, err);
    if (!st && !internal) {
        st = qp_run_new_tensor(&r->cache, qp_run_value_name(g, v), &d, &y, err);
        if (!st)
            r->live_bytes += y->nbytes;
    }
    if (!st) {
        struct qp_tensor *buf = internal ? out[p.seg_count[0] - 1] : y;
        struct qp_fuse_pass pass;
        h.t = buf;
        qp_fuse_prepare(g, &p, 0, head_value, &h, out, &pass);
        struct qp_conv_epilogue epi = {head_epilogue, &pass};
        st = qp_op_conv_run(&c, buf, &epi, err);
        qp_run_track_peak(r);
    }
    if (y) {
        r->live_bytes -= y->nbytes;
        if (st)
            qp_run_free_tensor(&r->cache, y, r->live_bytes);
        else
            st = qp_run_publish(r, v, y, true, err);
    }
    if (!st)
        qp_run_release_inputs(r, node);
    if ((st = seg_finish(r, &p, 0, out, st, err)))
        return st;
    int nodes[QP_FUSE_MAX_NODES + 1] = {node};
    for (int k = 0; k < p.seg_count[0]; k++)
        nodes[1 + k] = p.m[k].node;
    qp_run_account(r, nodes, 1 + p.seg_count[0], t0);
    *done = 1 + p.n;
    return run_segments(r, &p, 1, err);
}
