/* model/session-run.c: runs of a session, memos and teacher forcing
 * (model/session.h).
 *
 * Reuse. A memo holds the values of one run, each node's signature under
 * that run's plan (qp_qplan_node_sig) and a hash of the inputs. A new run
 * on the same inputs marks a node dirty when its signature differs or an
 * input comes from a dirty node (or is a graph input quantized
 * differently); then, walking the order backwards, a node must run when
 * it is dirty, or when an output that a running node, the capture or the
 * graph's outputs need is not in the memo. Every other node is skipped
 * and its outputs are the memo's (borrowed). The memo then takes the new
 * values (the executor hands them over instead of freeing them). */
#include "model/session-impl.h"

#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/hash.h"
#include "model/qdq.h"

/* ---- memos -------------------------------------------------------------------- */

enum qp_status qp_memo_new(const struct qp_session *s, struct qp_memo **out,
                           struct qp_error *err)
{
    const struct qp_graph *g = s->g;
    struct qp_memo *m = calloc(1, sizeof *m);
    if (m) {
        m->g = g;
        m->sig = calloc((size_t)g->n_nodes + 1, sizeof *m->sig);
        m->in_sig = calloc((size_t)g->n_values + 1, sizeof *m->in_sig);
        m->vals = calloc((size_t)g->n_values + 1, sizeof *m->vals);
    }
    if (!m || !m->sig || !m->in_sig || !m->vals) {
        qp_memo_free(m);
        *out = NULL;
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    }
    *out = m;
    return QP_OK;
}

static void memo_drop(struct qp_memo *m, int v)
{
    if (m->vals[v]) {
        m->bytes -= m->vals[v]->nbytes;
        qp_tensor_free(m->vals[v]);
        m->vals[v] = NULL;
    }
}

static void memo_clear(struct qp_memo *m)
{
    for (int v = 0; v < m->g->n_values; v++)
        memo_drop(m, v);
    m->valid = false;
}

void qp_memo_free(struct qp_memo *m)
{
    if (!m)
        return;
    if (m->vals)
        memo_clear(m);
    free(m->sig);
    free(m->in_sig);
    free(m->vals);
    free(m);
}

size_t qp_memo_bytes(const struct qp_memo *m)
{
    return m->bytes;
}

const struct qp_tensor *qp_memo_value(const struct qp_memo *m, int v)
{
    return v >= 0 && v < m->g->n_values ? m->vals[v] : NULL;
}

static void memo_keep(void *ctx, const struct qp_graph *g, int v,
                      struct qp_tensor *t)
{
    struct qp_memo *m = ctx;
    (void)g;
    memo_drop(m, v);
    m->vals[v] = t;
    m->bytes += t->nbytes;
}

uint64_t qp_session_feed_hash(const struct qp_graph *g,
                              const struct qp_tensor *const *feed)
{
    uint64_t h = QP_HASH_INIT;
    for (int i = 0; i < g->n_inputs; i++) {
        const struct qp_tensor *t = feed[i];
        h = (h ^ (uint64_t)t->dtype) * 0x100000001b3ull;
        for (int d = 0; d < t->ndim; d++)
            h = (h ^ (uint64_t)t->shape[d]) * 0x100000001b3ull;
        h = qp_hash_bytes(h, t->data, t->nbytes);
    }
    return h;
}

/* ---- deciding what runs ---------------------------------------------------------- */

struct reuse {
    bool *skip;                 /* [n_nodes] */
    struct qp_tensor **preset;  /* [n_values], borrowed from the memo */
    uint64_t *sig;              /* [n_nodes] this run's */
    uint64_t *in_sig;           /* [n_values] */
};

static void reuse_release(struct reuse *r)
{
    free(r->skip);
    free(r->preset);
    free(r->sig);
    free(r->in_sig);
}

static bool captured(const struct qp_session_run_opts *o, const char *name)
{
    return o && o->capture && o->on_capture && !fnmatch(o->capture, name, 0);
}

static enum qp_status reuse_plan(const struct qp_graph *g, const struct qp_memo *m,
                                 const struct qp_qplan *qp, bool valid,
                                 const struct qp_session_run_opts *o,
                                 struct reuse *r, struct qp_error *err)
{
    size_t nn = (size_t)g->n_nodes + 1, nv = (size_t)g->n_values + 1;
    r->skip = calloc(nn, sizeof *r->skip);
    r->preset = calloc(nv, sizeof *r->preset);
    r->sig = calloc(nn, sizeof *r->sig);
    r->in_sig = calloc(nv, sizeof *r->in_sig);
    bool *dirty_v = calloc(nv, sizeof *dirty_v), *need = calloc(nv, sizeof *need);
    bool *runs = calloc(nn, sizeof *runs);
    if (!r->skip || !r->preset || !r->sig || !r->in_sig || !dirty_v || !need ||
        !runs) {
        free(dirty_v);
        free(need);
        free(runs);
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    }
    for (int i = 0; i < g->n_nodes; i++)
        r->sig[i] = qp_qplan_node_sig(qp, i);
    for (int k = 0; k < g->n_inputs; k++) {
        int v = g->inputs[k];
        r->in_sig[v] = qp_qplan_input_sig(qp, v);
        dirty_v[v] = !valid || r->in_sig[v] != m->in_sig[v] || !m->vals[v];
        if (!dirty_v[v])
            r->preset[v] = m->vals[v];
    }
    /* forwards: dirty nodes */
    for (int oi = 0; oi < g->n_nodes; oi++) {
        int i = g->order[oi];
        const struct qp_node *n = &g->nodes[i];
        bool dirty = !valid || r->sig[i] != m->sig[i];
        for (int k = 0; !dirty && k < n->n_in; k++)
            dirty = n->in[k] >= 0 && dirty_v[n->in[k]];
        for (int k = 0; k < n->n_out; k++)
            if (n->out[k] >= 0)
                dirty_v[n->out[k]] = dirty;
        runs[i] = dirty;
    }
    /* backwards: what must be computed because it is needed and missing */
    for (int v = 0; v < g->n_values; v++)
        need[v] = g->values[v].is_output || captured(o, g->values[v].name);
    for (int oi = g->n_nodes - 1; oi >= 0; oi--) {
        int i = g->order[oi];
        const struct qp_node *n = &g->nodes[i];
        for (int k = 0; !runs[i] && k < n->n_out; k++)
            runs[i] = n->out[k] >= 0 && need[n->out[k]] && !m->vals[n->out[k]];
        if (runs[i]) {
            for (int k = 0; k < n->n_in; k++)
                if (n->in[k] >= 0)
                    need[n->in[k]] = true;
        } else {
            r->skip[i] = true;
            for (int k = 0; k < n->n_out; k++)
                if (n->out[k] >= 0)
                    r->preset[n->out[k]] = m->vals[n->out[k]];
        }
    }
    /* a graph input someone needs but the memo cannot give is fed */
    for (int k = 0; k < g->n_inputs; k++) {
        int v = g->inputs[k];
        if (r->preset[v] && dirty_v[v])
            r->preset[v] = NULL;
    }
    free(dirty_v);
    free(need);
    free(runs);
    return QP_OK;
}

/* ---- teacher forcing --------------------------------------------------------------- */

struct local {
    const struct qp_exec_hooks *inner; /* the plan's hooks, or NULL */
    const struct qp_qplan *q;          /* NULL: fp32 or a QDQ plan */
    struct qp_dump *dump;              /* the reference: a dump, */
    const struct qp_memo *memo;        /* or a memo of the same graph */
    struct qp_tensor *held[QP_OP_MAX_IO];
    int nheld;
};

static void local_drop(struct local *l)
{
    for (int k = 0; k < l->nheld; k++)
        qp_tensor_free(l->held[k]);
    l->nheld = 0;
}

/* The reference tensor of value v as the plan represents it. */
static enum qp_status local_value(struct local *l, const struct qp_graph *g, int v,
                                  const struct qp_tensor *live,
                                  struct qp_tensor **out, struct qp_error *err)
{
    *out = NULL;
    struct qp_tensor *ref = NULL;
    enum qp_status st = QP_OK;
    if (l->memo) {
        if (!l->memo->vals[v])
            return QP_OK;
        st = qp_tensor_clone(l->memo->vals[v], &ref, err);
    } else {
        long e = qp_dump_find(l->dump, g->values[v].name);
        if (e < 0)
            return QP_OK;
        st = qp_dump_load(l->dump, (size_t)e, &ref, err);
    }
    if (st)
        return st;
    struct qp_tensor *f = NULL;
    if (!qp_shape_equal(ref->ndim, ref->shape, live->ndim, live->shape)) {
        char a[128], b[128];
        qp_shape_str(ref->ndim, ref->shape, a, sizeof a);
        qp_shape_str(live->ndim, live->shape, b, sizeof b);
        st = qp_fail(err, QP_E_SHAPE, "'%s': tensor '%s' is %s, the run has %s",
                     l->dump ? l->dump->path : "reference", g->values[v].name, a,
                     b);
    } else if (!(st = qp_tensor_new(g->values[v].name, QP_DTYPE_F32, ref->ndim,
                                    ref->shape, &f, err))) {
        qp_tensor_read_f32(ref, 0, qp_tensor_numel(ref), f->data);
    }
    qp_tensor_free(ref);
    if (!st && l->q)
        st = qp_qplan_represent(l->q, v, f, out, err);
    else if (!st)
        *out = f, f = NULL;
    qp_tensor_free(f);
    return st;
}

static enum qp_status local_inputs(void *ctx, const struct qp_op_ctx *c,
                                   const struct qp_tensor **in,
                                   struct qp_error *err)
{
    struct local *l = ctx;
    local_drop(l);
    const struct qp_graph *g = c->g;
    for (int k = 0; k < c->n->n_in; k++) {
        int v = c->n->in[k];
        if (v < 0 || g->values[v].konst || !in[k])
            continue;
        bool fl = in[k]->dtype == QP_DTYPE_F32 || (in[k]->qp && l->q);
        if (!fl)
            continue;
        struct qp_tensor *t;
        enum qp_status st = local_value(l, g, v, in[k], &t, err);
        if (st)
            return st;
        if (t) {
            l->held[l->nheld++] = t;
            in[k] = t;
        }
    }
    const struct qp_exec_hooks *h = l->inner;
    return h && h->map_inputs ? h->map_inputs(h->ctx, c, in, err) : QP_OK;
}

static enum qp_status local_run_node(void *ctx, const struct qp_op_ctx *c,
                                     struct qp_tensor **out, bool *done,
                                     struct qp_error *err)
{
    const struct local *l = ctx;
    const struct qp_exec_hooks *h = l->inner;
    return h && h->run_node ? h->run_node(h->ctx, c, out, done, err) : QP_OK;
}

static enum qp_status local_after(void *ctx, const struct qp_op_ctx *c,
                                  struct qp_tensor **out, struct qp_error *err)
{
    const struct local *l = ctx;
    const struct qp_exec_hooks *h = l->inner;
    return h && h->after_node ? h->after_node(h->ctx, c, out, err) : QP_OK;
}

static enum qp_status local_on_input(void *ctx, const struct qp_graph *g, int v,
                                     struct qp_tensor **t, struct qp_error *err)
{
    const struct local *l = ctx;
    const struct qp_exec_hooks *h = l->inner;
    return h && h->on_input ? h->on_input(h->ctx, g, v, t, err) : QP_OK;
}

/* ---- the run ------------------------------------------------------------------------ */

static double now_seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* The memo gets copies of what the executor does not hand over: graph
 * inputs fed as they are, and the graph outputs (returned to the caller). */
static enum qp_status memo_finish(struct qp_memo *m, const struct qp_graph *g,
                                  const struct qp_tensor *const *feed,
                                  struct qp_tensor **outputs,
                                  const struct reuse *r, uint64_t hash,
                                  struct qp_error *err)
{
    enum qp_status st = QP_OK;
    for (int k = 0; !st && k < g->n_inputs; k++) {
        int v = g->inputs[k];
        struct qp_tensor *c;
        if (!m->vals[v] && !(st = qp_tensor_clone(feed[k], &c, err)))
            memo_keep(m, g, v, c);
    }
    for (int k = 0; !st && k < g->n_outputs; k++) {
        int v = g->outputs[k];
        struct qp_tensor *c;
        if (g->values[v].konst || (r->preset[v] && m->vals[v] == r->preset[v]))
            continue;
        if (!(st = qp_tensor_clone(outputs[k], &c, err)))
            memo_keep(m, g, v, c);
    }
    if (st) {
        memo_clear(m);
        return st;
    }
    memcpy(m->sig, r->sig, (size_t)g->n_nodes * sizeof *m->sig);
    memcpy(m->in_sig, r->in_sig, (size_t)g->n_values * sizeof *m->in_sig);
    m->feed_hash = hash;
    m->valid = true;
    return QP_OK;
}

/* The caller's capture callback, noting whether it failed: its errors are
 * about where the values go, the run's others about the model. */
struct capture_thru {
    enum qp_status (*fn)(void *ctx, const struct qp_graph *g, int value,
                         const struct qp_tensor *t, struct qp_error *err);
    void *ctx;
    bool failed;
};

static enum qp_status capture_thru(void *ctx, const struct qp_graph *g,
                                   int value, const struct qp_tensor *t,
                                   struct qp_error *err)
{
    struct capture_thru *c = ctx;
    enum qp_status st = c->fn(c->ctx, g, value, t, err);
    c->failed |= st != QP_OK;
    return st;
}

enum qp_status qp_session_run(struct qp_session *s, const struct qp_splan *plan,
                              const struct qp_tensor *const *feed,
                              const struct qp_session_run_opts *o,
                              struct qp_tensor **outputs,
                              struct qp_session_run_stats *stats,
                              struct qp_error *err)
{
    const struct qp_graph *g = s->g;
    struct qp_session_run_opts none = {0};
    if (!o)
        o = &none;
    struct qp_exec_hooks ph, lh;
    const struct qp_exec_hooks *hooks = NULL;
    if (plan && plan->q) {
        qp_qplan_hooks(plan->q, &ph);
        hooks = &ph;
    } else if (plan && plan->qdq) {
        qp_qdq_hooks(plan->qdq, &ph);
        hooks = &ph;
    }
    struct local l = {hooks, plan ? plan->q : NULL, o->local, o->local_memo,
                      {0}, 0};
    if (o->local || o->local_memo) {
        if (o->memo)
            return qp_fail(err, QP_E_INVAL, "a teacher-forced run is not "
                           "memoized");
        lh = (struct qp_exec_hooks){local_run_node, local_after, local_on_input,
                                    local_inputs, &l, NULL};
        hooks = &lh;
    }
    struct reuse r = {0};
    struct qp_memo *m = o->memo;
    uint64_t hash = m ? qp_session_feed_hash(g, feed) : 0;
    bool valid = m && m->valid && m->feed_hash == hash;
    bool record = m && o->record;
    enum qp_status st = QP_OK;
    if (m && !valid && !record)
        m = NULL; /* nothing to reuse, nothing to keep */
    if (m) {
        if (!valid)
            memo_clear(m);
        st = reuse_plan(g, m, plan ? plan->q : NULL, valid, o, &r, err);
        /* the values that are about to be recomputed leave the memo now:
         * a fused pass may not materialize them again */
        for (int i = 0; record && !st && i < g->n_nodes; i++)
            for (int k = 0; !r.skip[i] && k < g->nodes[i].n_out; k++)
                if (g->nodes[i].out[k] >= 0)
                    memo_drop(m, g->nodes[i].out[k]);
        for (int k = 0; record && !st && k < g->n_inputs; k++)
            if (!r.preset[g->inputs[k]])
                memo_drop(m, g->inputs[k]);
    }
    struct capture_thru cap = {o->on_capture, o->capture_ctx, false};
    struct qp_exec_opts eo = {o->capture, o->on_capture ? capture_thru : NULL,
                              &cap, hooks,
                              o->progress, m ? r.skip : NULL,
                              m ? r.preset : NULL, record ? memo_keep : NULL, m,
                              o->state, o->release_weights, s->buf};
    struct qp_exec_tune tune = {o->no_fusion, NULL, NULL};
    struct qp_exec_stats es = {0};
    double t0 = now_seconds();
    if (!st && (st = qp_exec_run_tuned(g, feed, g->n_inputs, &eo, &tune,
                                       outputs, &es, err)) && !cap.failed)
        qp_error_in_file(err, s->path); /* a node of the model failed */
    double t1 = now_seconds();
    local_drop(&l);
    if (!st && record)
        st = memo_finish(m, g, feed, outputs, &r, hash, err);
    else if (st && record)
        memo_clear(m);
    reuse_release(&r);
    s->stats.runs++;
    s->stats.nodes_run += es.nodes_run;
    s->stats.nodes_reused += es.nodes_skipped;
    if (stats) {
        stats->seconds = t1 - t0;
        stats->peak_bytes = es.peak_bytes;
        stats->nodes_run = es.nodes_run;
        stats->nodes_reused = es.nodes_skipped;
    }
    if (st)
        for (int k = 0; k < g->n_outputs; k++) {
            qp_tensor_free(outputs[k]);
            outputs[k] = NULL;
        }
    return st;
}
