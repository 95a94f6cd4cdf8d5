/* model/exec.c: the graph executor (model/exec.h). */
#include "model/exec.h"

#include <fnmatch.h>
#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "core/memlimit.h"
#include "core/parallel.h"
#include "model/exec-run.h"
#include "model/fuse.h"
#include "model/op-conv.h"

/* ---- buffers ------------------------------------------------------------- */

static void *cache_get(struct bufcache *c, size_t n)
{
    int best = -1;
    for (int i = 0; c && i < c->n; i++)
        if (c->cap[i] >= n && c->cap[i] / 2 <= n &&
            (best < 0 || c->cap[i] < c->cap[best]))
            best = i;
    if (best < 0)
        return NULL;
    void *p = c->p[best];
    c->bytes -= c->cap[best];
    c->n--;
    c->p[best] = c->p[c->n];
    c->cap[best] = c->cap[c->n];
    return p;
}

static void cache_drop_oldest(struct bufcache *c)
{
    free(c->p[0]);
    c->bytes -= c->cap[0];
    c->n--;
    memmove(c->p, c->p + 1, (size_t)c->n * sizeof c->p[0]);
    memmove(c->cap, c->cap + 1, (size_t)c->n * sizeof c->cap[0]);
}

/* Keeps p; live is the bytes of live activations, which bound the cache. */
static void cache_put(struct bufcache *c, void *p, size_t live)
{
    if (c->n == CACHE_SLOTS)
        cache_drop_oldest(c);
    c->p[c->n] = p;
    c->cap[c->n] = malloc_usable_size(p);
    c->bytes += c->cap[c->n++];
    size_t limit = live / 2 > CACHE_MIN_BYTES ? live / 2 : CACHE_MIN_BYTES;
    limit = limit > c->floor ? limit : c->floor;
    while (c->n && c->bytes > limit)
        cache_drop_oldest(c);
}

static void cache_release(struct bufcache *c)
{
    for (int i = 0; i < c->n; i++)
        free(c->p[i]);
    c->n = 0;
    c->bytes = 0;
}

enum qp_status qp_exec_buffers_new(struct qp_exec_buffers **out,
                                   struct qp_error *err)
{
    if (!(*out = calloc(1, sizeof **out)))
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    return QP_OK;
}

void qp_exec_buffers_free(struct qp_exec_buffers *b)
{
    if (!b)
        return;
    cache_release(&b->cache);
    qp_scratch_release(&b->scratch);
    free(b);
}

/* The run takes the buffers b kept (NULL: none). */
static void buffers_take(struct run *r, struct qp_exec_buffers *b)
{
    if (!b)
        return;
    r->cache = b->cache;
    r->cache.floor = b->floor;
    r->scratch.buf = b->scratch.buf;
    r->scratch.cap = b->scratch.cap;
    memset(&b->cache, 0, sizeof b->cache);
    memset(&b->scratch, 0, sizeof b->scratch);
}

/* The run's buffers go to b (or are freed without b). */
static void buffers_give(struct run *r, struct qp_exec_buffers *b)
{
    if (!b) {
        qp_scratch_release(&r->scratch);
        cache_release(&r->cache);
        return;
    }
    b->cache = r->cache;
    b->scratch.buf = r->scratch.buf;
    b->scratch.cap = r->scratch.cap;
    b->floor = r->peak_live / 2;
}

/* A fresh activation buffer of n bytes (free() releases it). One of
 * HUGE_MIN bytes or more is aligned to and rounded up to whole 2 MiB
 * pages and asks the kernel for transparent huge pages: such a buffer
 * comes from mmap, and faulting it in 4 KiB at a time on its first use
 * in a run was a tenth of the detector's forward. */
#define HUGE_PAGE ((size_t)2 << 20)
#define HUGE_MIN ((size_t)4 << 20)

static void *buffer_alloc(size_t n)
{
    void *p = NULL;
    if (n < HUGE_MIN || n > SIZE_MAX - HUGE_PAGE)
        return malloc(n);
    size_t len = (n + HUGE_PAGE - 1) / HUGE_PAGE * HUGE_PAGE;
    if (posix_memalign(&p, HUGE_PAGE, len))
        return NULL;
#ifdef MADV_HUGEPAGE
    madvise(p, len, MADV_HUGEPAGE); /* advice only: failure changes nothing */
#endif
    return p;
}

/* A tensor with uninitialized owned data (from the cache when it fits). */
enum qp_status qp_run_new_tensor(struct bufcache *c, const char *name,
                                 const struct qp_tdesc *d, struct qp_tensor **out,
                                 struct qp_error *err)
{
    enum qp_status st = qp_tensor_new_desc(name, d->dtype, d->ndim, d->shape, out,
                                           err);
    if (st)
        return st;
    struct qp_tensor *t = *out;
    size_t n = t->nbytes ? t->nbytes : 1;
    if ((st = qp_tensor_check_limit(t, n, err))) {
        qp_tensor_free(t);
        *out = NULL;
        return st;
    }
    t->data = cache_get(c, n);
    if (!t->data)
        t->data = buffer_alloc(n);
    if (!t->data) {
        qp_tensor_free(t);
        *out = NULL;
        return qp_fail(err, QP_E_NOMEM, "tensor '%s': cannot allocate %zu bytes",
                       name, n);
    }
    t->owns_data = true;
    return QP_OK;
}

/* Frees t, keeping its buffer in c when c is non-NULL (live: the bytes of
 * live activations). */
void qp_run_free_tensor(struct bufcache *c, struct qp_tensor *t, size_t live)
{
    if (c && t && t->owns_data && t->data && !t->map) {
        cache_put(c, t->data, live);
        t->data = NULL;
        t->owns_data = false;
    }
    qp_tensor_free(t);
}

void *qp_op_scratch(const struct qp_op_ctx *c, size_t bytes)
{
    struct qp_scratch *s = c->scratch;
    if (!s || qp_mem_check("scratch", bytes, NULL))
        return NULL; /* callers report it as out of memory */
    if (bytes > s->cap) {
        /* contents need not survive: free first to keep the peak low */
        free(s->buf);
        s->buf = malloc(bytes);
        s->cap = s->buf ? bytes : 0;
    }
    return s->buf;
}

enum qp_status qp_op_scratch_get(const struct qp_op_ctx *c, size_t bytes,
                                 void **out, struct qp_error *err)
{
    struct qp_error e;
    if (qp_mem_check("scratch", bytes, &e))
        return qp_op_fail(err, c, e.status, "%s", e.msg);
    if (!(*out = qp_op_scratch(c, bytes)))
        return qp_op_fail(err, c, QP_E_NOMEM, "cannot allocate %zu bytes of "
                          "scratch", bytes);
    return QP_OK;
}

/* The run of c, when c belongs to one. */
static struct run *ctx_run(const struct qp_op_ctx *c)
{
    return c->scratch ? c->scratch->run : NULL;
}

enum qp_status qp_op_new_tensor(const struct qp_op_ctx *c, const char *name,
                                const struct qp_tdesc *d,
                                struct qp_tensor **out, struct qp_error *err)
{
    struct run *r = ctx_run(c);
    return qp_run_new_tensor(r ? &r->cache : NULL, name, d, out, err);
}

void qp_op_free_tensor(const struct qp_op_ctx *c, struct qp_tensor *t)
{
    struct run *r = ctx_run(c);
    qp_run_free_tensor(r ? &r->cache : NULL, t, r ? r->live_bytes : 0);
}

void qp_scratch_release(struct qp_scratch *s)
{
    free(s->buf);
    s->buf = NULL;
    s->cap = 0;
}

const char *qp_run_value_name(const struct qp_graph *g, int v)
{
    return v >= 0 ? g->values[v].name : "";
}

/* Infers and allocates the outputs of node c->node into out[]. */
static enum qp_status alloc_outputs(const struct qp_op_ctx *c,
                                    struct bufcache *cache,
                                    struct qp_tensor **out,
                                    struct qp_error *err)
{
    const struct qp_node *n = c->n;
    struct qp_tdesc desc[QP_OP_MAX_IO];
    memset(desc, 0, sizeof desc);
    enum qp_status st = n->def->infer(c, desc, err);
    if (st)
        return st;
    for (int k = 0; k < n->n_out; k++) {
        if (!qp_elem_size(desc[k].dtype))
            return qp_op_fail(err, c, QP_E_UNSUPPORTED, "output %d would be "
                              "%s, which the runtime does not handle", k,
                              qp_dtype_name(desc[k].dtype));
        st = qp_run_new_tensor(cache, qp_run_value_name(c->g, n->out[k]), &desc[k], &out[k],
                        err);
        if (st)
            return qp_error_prefix(err, "%s: ", c->n->name);
    }
    return QP_OK;
}

static void free_outputs(struct qp_tensor **out, int n)
{
    for (int k = 0; k < n; k++) {
        qp_tensor_free(out[k]);
        out[k] = NULL;
    }
}

/* Runs node c->n into its allocated outputs, unless every output is empty:
 * then there is nothing to compute, and an operator must not loop over
 * the rows of an empty tensor whose other dims are huge ([2^31, 0]). */
static enum qp_status run_def(const struct qp_op_ctx *c, struct qp_tensor **out,
                              struct qp_error *err)
{
    bool empty = c->n->n_out > 0;
    for (int k = 0; k < c->n->n_out && empty; k++)
        empty = !qp_tensor_numel(out[k]);
    return empty ? QP_OK : c->n->def->run(c, out, err);
}

static enum qp_status check_input_data(const struct qp_op_ctx *c,
                                       struct qp_error *err)
{
    /* packed weights are for operators that take integer weights */
    bool qweight = c->n->def->traits & QP_TRAIT_QWEIGHT;
    bool packed = c->n->def->traits & QP_TRAIT_PACKED_IN;
    for (int k = 0; k < c->n_in; k++)
        if (c->in[k] && !qp_elem_size(c->in[k]->dtype) && !(qweight && k == 1) &&
            !(k != 1 && packed && (c->in[k]->dtype == QP_DTYPE_I4 ||
                                    c->in[k]->dtype == QP_DTYPE_U4)))
            return qp_op_fail(err, c, QP_E_UNSUPPORTED, "input %d is %s, which "
                              "the runtime does not handle", k,
                              qp_dtype_name(c->in[k]->dtype));
    return QP_OK;
}

/* Infers, allocates and runs the node of c on c->in. */
static enum qp_status exec_ctx(const struct qp_op_ctx *c, struct qp_tensor **out,
                               struct qp_error *err)
{
    const struct qp_node *n = c->n;
    for (int k = 0; k < n->n_out; k++)
        out[k] = NULL;
    enum qp_status st = check_input_data(c, err);
    struct run *r = ctx_run(c);
    if (!st)
        st = alloc_outputs(c, r ? &r->cache : NULL, out, err);
    if (!st)
        st = run_def(c, out, err);
    if (st)
        free_outputs(out, n->n_out);
    return st;
}

enum qp_status qp_exec_node(const struct qp_graph *g, int node,
                            const struct qp_tensor *const *in,
                            struct qp_scratch *scratch, struct qp_pool *pool,
                            struct qp_tensor **out, struct qp_error *err)
{
    const struct qp_node *n = &g->nodes[node];
    struct qp_scratch own = {0};
    struct qp_op_ctx c = {g, node, n, in, n->n_in, scratch ? scratch : &own,
                          pool, NULL};
    enum qp_status st = exec_ctx(&c, out, err);
    qp_scratch_release(&own);
    return st;
}

enum qp_status qp_exec_node_as(const struct qp_op_ctx *c,
                               const struct qp_tensor *const *in,
                               struct qp_tensor **out, struct qp_error *err)
{
    struct qp_op_ctx d = *c;
    d.in = in;
    d.n_in = c->n->n_in;
    return exec_ctx(&d, out, err);
}

/* ---- the run ----------------------------------------------------------- */

void qp_run_track_peak(struct run *r)
{
    size_t now = r->live_bytes + r->scratch.cap + r->cache.bytes;
    if (now > r->peak)
        r->peak = now;
    if (r->live_bytes > r->peak_live)
        r->peak_live = r->live_bytes;
}

static void drop(struct run *r, int v)
{
    const struct qp_exec_opts *o = r->opts;
    if (r->owned[v] && o && o->on_release) {
        r->live_bytes -= r->live[v]->nbytes;
        o->on_release(o->release_ctx, r->g, v, r->live[v]);
    } else if (r->owned[v]) {
        r->live_bytes -= r->live[v]->nbytes;
        qp_run_free_tensor(&r->cache, r->live[v], r->live_bytes);
    }
    r->live[v] = NULL;
    r->owned[v] = false;
}

static enum qp_status capture(struct run *r, int v, struct qp_error *err)
{
    const struct qp_exec_opts *o = r->opts;
    if (!o || !o->capture || !o->on_capture)
        return QP_OK;
    if (fnmatch(o->capture, r->g->values[v].name, 0) != 0)
        return QP_OK;
    return o->on_capture(o->capture_ctx, r->g, v, r->live[v], err);
}

enum qp_status qp_exec_check_input(const struct qp_graph *g, int v,
                                   const struct qp_tensor *t,
                                   struct qp_error *err)
{
    const struct qp_value *val = &g->values[v];
    char s0[128], s1[128];
    if (!t || !t->data)
        return qp_fail(err, QP_E_INVAL, "graph input '%s' has no data",
                       val->name);
    if (val->typed && t->dtype != val->dtype)
        return qp_fail(err, QP_E_SHAPE, "graph input '%s' is %s, the model "
                       "expects %s", val->name, qp_dtype_name(t->dtype),
                       qp_dtype_name(val->dtype));
    bool ok = !val->typed || t->ndim == val->ndim;
    for (int d = 0; ok && val->typed && d < val->ndim; d++)
        ok = val->shape[d] < 0 || val->shape[d] == t->shape[d];
    if (!ok) {
        qp_shape_str(t->ndim, t->shape, s0, sizeof s0);
        qp_shape_str(val->ndim, val->shape, s1, sizeof s1);
        return qp_fail(err, QP_E_SHAPE, "graph input '%s' has shape %s, the "
                       "model expects %s (-1: any)", val->name, s0, s1);
    }
    return QP_OK;
}

/* Stores a new value: accounts, captures, and frees it at once when
 * nothing will read it. */
enum qp_status qp_run_publish(struct run *r, int v, struct qp_tensor *t,
                              bool owned, struct qp_error *err)
{
    r->live[v] = t;
    r->owned[v] = owned;
    if (owned) {
        r->live_bytes += t->nbytes;
        qp_run_track_peak(r);
    }
    r->remaining[v] = r->g->values[v].n_consumers;
    enum qp_status st = capture(r, v, err);
    if (!st && r->remaining[v] == 0 && !r->g->values[v].is_output)
        drop(r, v);
    return st;
}

static enum qp_status feed_inputs(struct run *r,
                                  const struct qp_tensor *const *inputs,
                                  struct qp_error *err)
{
    const struct qp_graph *g = r->g;
    const struct qp_exec_hooks *h = r->opts ? r->opts->hooks : NULL;
    for (int i = 0; i < g->n_inputs; i++) {
        int v = g->inputs[i];
        enum qp_status st = qp_exec_check_input(g, v, inputs[i], err);
        if (st)
            return st;
        if (r->opts && r->opts->preset && r->opts->preset[v]) {
            if ((st = qp_run_publish(r, v, r->opts->preset[v], false, err)))
                return st;
            continue;
        }
        struct qp_tensor *t = (struct qp_tensor *)inputs[i];
        if (h && h->on_input) {
            struct qp_tensor *u = t;
            if ((st = h->on_input(h->ctx, g, v, &u, err)))
                return st;
            if (u != t) {
                if ((st = qp_run_publish(r, v, u, true, err)))
                    return st;
                continue;
            }
        }
        if ((st = qp_run_publish(r, v, t, false, err)))
            return st;
    }
    return QP_OK;
}

/* The mapped pages of constant v, when node is its last reader. */
static void release_const(const struct qp_graph *g, int v, int node)
{
    const struct qp_value *val = &g->values[v];
    const struct qp_tensor *t = val->konst;
    if (!t->map || !val->n_consumers || val->consumers[val->n_consumers - 1] != node)
        return;
    size_t off = (size_t)((const unsigned char *)t->data - t->map->data);
    qp_mmap_release_range(t->map, off, t->nbytes);
}

/* Counts node's read of each of its inputs; frees those whose last
 * consumer it was. */
void qp_run_release_inputs(struct run *r, int node)
{
    const struct qp_graph *g = r->g;
    const struct qp_node *n = &g->nodes[node];
    for (int k = 0; k < n->n_in; k++) {
        int v = n->in[k];
        if (v >= 0 && g->values[v].konst && r->opts && r->opts->release_consts)
            release_const(g, v, node);
        if (v < 0 || g->values[v].konst || !r->live[v])
            continue;
        bool first = true;
        for (int j = 0; j < k; j++)
            first &= n->in[j] != v;
        if (first && --r->remaining[v] == 0 && !g->values[v].is_output)
            drop(r, v);
    }
}

static enum qp_status run_one(struct run *r, int node, struct qp_error *err)
{
    const struct qp_graph *g = r->g;
    const struct qp_node *n = &g->nodes[node];
    const struct qp_exec_hooks *h = r->opts ? r->opts->hooks : NULL;
    const struct qp_tensor *in[QP_OP_MAX_IO];
    struct qp_tensor *out[QP_OP_MAX_IO];
    if (n->n_in > QP_OP_MAX_IO || n->n_out > QP_OP_MAX_IO)
        return qp_fail(err, QP_E_UNSUPPORTED, "node '%s': more than %d inputs "
                       "or outputs", n->name, QP_OP_MAX_IO);
    for (int k = 0; k < n->n_in; k++) {
        int v = n->in[k];
        in[k] = v < 0 ? NULL : g->values[v].konst ? g->values[v].konst
                                                  : r->live[v];
        if (v >= 0 && !in[k]) /* skipped producer without a preset */
            return qp_fail(err, QP_E_INVAL, "node '%s': input '%s' was not "
                           "computed", n->name, g->values[v].name);
    }
    struct qp_op_ctx c = {g, node, n, in, n->n_in, &r->scratch, r->pool,
                          r->opts ? r->opts->state : NULL};
    memset(out, 0, sizeof out);
    bool done = false;
    enum qp_status st = h && h->map_inputs ? h->map_inputs(h->ctx, &c, in, err)
                                           : QP_OK;
    if (!st)
        st = check_input_data(&c, err);
    if (!st && h && h->run_node)
        st = h->run_node(h->ctx, &c, out, &done, err);
    if (!st && !done) {
        st = alloc_outputs(&c, &r->cache, out, err);
        for (int k = 0; !st && k < n->n_out; k++)
            r->live_bytes += out[k]->nbytes;
        if (!st) {
            st = run_def(&c, out, err);
            qp_run_track_peak(r); /* outputs, inputs and scratch all alive */
        }
        for (int k = 0; k < n->n_out; k++)
            if (out[k])
                r->live_bytes -= out[k]->nbytes;
    }
    for (int k = 0; !st && k < n->n_out; k++)
        if (n->out[k] < 0) {
            qp_run_free_tensor(&r->cache, out[k], r->live_bytes);
            out[k] = NULL;
        }
    if (!st && h && h->after_node)
        st = h->after_node(h->ctx, &c, out, err);
    for (int k = 0; k < n->n_out; k++) {
        if (st || n->out[k] < 0) {
            qp_run_free_tensor(&r->cache, out[k], r->live_bytes);
            continue;
        }
        if (!out[k]) {
            st = qp_op_fail(err, &c, QP_E_INVAL, "output %d was not produced",
                            k);
            continue;
        }
        st = qp_run_publish(r, n->out[k], out[k], true, err);
    }
    if (st)
        return st;
    qp_run_release_inputs(r, node);
    return QP_OK;
}

/* ---- accounting --------------------------------------------------------- */

static double now_seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

void qp_run_account(struct run *r, const int *nodes, int n, double t0)
{
    const struct qp_exec_tune *t = r->tune;
    if (t && t->node_seconds)
        t->node_seconds[nodes[0]] += now_seconds() - t0;
    for (int k = 0; t && t->node_pass && k < n; k++)
        t->node_pass[nodes[k]] = nodes[0];
    r->ran += (size_t)n;
    const struct qp_progress *p = r->opts ? r->opts->progress : NULL;
    qp_progress_report(p, "run", r->ran, (uint64_t)r->g->n_nodes);
}

double qp_run_clock(const struct run *r)
{
    return r->tune && r->tune->node_seconds ? now_seconds() : 0;
}

enum qp_status qp_run_timed(struct run *r, int node, struct qp_error *err)
{
    double t0 = qp_run_clock(r);
    enum qp_status st = run_one(r, node, err);
    qp_run_account(r, &node, 1, t0);
    return st;
}

const struct qp_tensor *qp_run_value(void *ctx, int v)
{
    const struct run *r = ctx;
    return r->g->values[v].konst ? r->g->values[v].konst : r->live[v];
}

bool qp_run_captured(const struct run *r, int v)
{
    const struct qp_exec_opts *o = r->opts;
    return o && o->capture && o->on_capture &&
           fnmatch(o->capture, r->g->values[v].name, 0) == 0;
}

static bool skipped(const struct run *r, int node)
{
    return r->opts && r->opts->skip && r->opts->skip[node];
}

/* The first len nodes from order position i, cut before a skipped one. */
static int unskipped(const struct run *r, int i, int len)
{
    int k = 0;
    while (k < len && !skipped(r, r->g->order[i + k]))
        k++;
    return k;
}

/* A skipped node's outputs from the presets (borrowed). */
static enum qp_status publish_preset(struct run *r, int node,
                                     struct qp_error *err)
{
    const struct qp_node *n = &r->g->nodes[node];
    for (int k = 0; k < n->n_out; k++) {
        int v = n->out[k];
        struct qp_tensor *t = v >= 0 ? r->opts->preset[v] : NULL;
        enum qp_status st = t ? qp_run_publish(r, v, t, false, err) : QP_OK;
        if (st)
            return st;
    }
    qp_run_release_inputs(r, node);
    r->ran_skipped++;
    return QP_OK;
}

static enum qp_status collect_outputs(struct run *r, struct qp_tensor **outputs,
                                      struct qp_error *err)
{
    const struct qp_graph *g = r->g;
    for (int k = 0; k < g->n_outputs; k++) {
        int v = g->outputs[k];
        const struct qp_tensor *t = g->values[v].konst ? g->values[v].konst
                                                       : r->live[v];
        enum qp_status st;
        if (!t)
            return qp_fail(err, QP_E_INVAL, "graph output '%s' was not "
                           "computed", g->values[v].name);
        /* an output listed twice, a constant or a borrowed input is copied */
        bool dup = false;
        for (int j = 0; j < k; j++)
            dup |= g->outputs[j] == v;
        if (r->owned[v] && !dup) {
            outputs[k] = r->live[v];
            r->owned[v] = false;
            continue;
        }
        if ((st = qp_tensor_clone(t, &outputs[k], err)))
            return st;
    }
    return QP_OK;
}

enum qp_status qp_exec_run(const struct qp_graph *g,
                           const struct qp_tensor *const *inputs, int n_inputs,
                           const struct qp_exec_opts *opts,
                           struct qp_tensor **outputs,
                           struct qp_exec_stats *stats, struct qp_error *err)
{
    return qp_exec_run_tuned(g, inputs, n_inputs, opts, NULL, outputs, stats,
                             err);
}

enum qp_status qp_exec_run_tuned(const struct qp_graph *g,
                                 const struct qp_tensor *const *inputs,
                                 int n_inputs, const struct qp_exec_opts *opts,
                                 const struct qp_exec_tune *tune,
                                 struct qp_tensor **outputs,
                                 struct qp_exec_stats *stats,
                                 struct qp_error *err)
{
    if (!g->finalized)
        return qp_fail(err, QP_E_INVAL, "graph '%s' is not finalized", g->name);
    if (n_inputs != g->n_inputs)
        return qp_fail(err, QP_E_INVAL, "graph '%s' has %d inputs, %d given",
                       g->name, g->n_inputs, n_inputs);
    struct run r = {g, opts, NULL, NULL, NULL, 0, 0, 0, {0}, {{0}, {0}, 0, 0, 0},
                    qp_pool_new(0), tune, 0, 0};
    /* the workers stay awake between the passes of the run (their wake-up
     * on a core another process runs costs that process's time slice) */
    bool hold = qp_pool_threads(r.pool) > 1;
    if (hold)
        qp_parallel_hold();
    buffers_take(&r, opts ? opts->buffers : NULL);
    r.scratch.run = &r; /* hooks allocate from the run's buffers too */
    /* the modes' hooks see every node, or fuse through run_span */
    const struct qp_exec_hooks *h = opts ? opts->hooks : NULL;
    bool fuse = !(tune && tune->no_fusion) && !h;
    bool spans = !(tune && tune->no_fusion) && h && h->run_span &&
                 !h->map_inputs && !h->after_node;
    size_t nv = (size_t)(g->n_values ? g->n_values : 1);
    r.live = calloc(nv, sizeof *r.live);
    r.owned = calloc(nv, sizeof *r.owned);
    r.remaining = calloc(nv, sizeof *r.remaining);
    for (int k = 0; k < g->n_outputs; k++)
        outputs[k] = NULL;
    enum qp_status st = QP_OK;
    if (!r.live || !r.owned || !r.remaining)
        st = qp_fail(err, QP_E_NOMEM, "graph '%s': out of memory", g->name);
    if (!st)
        st = feed_inputs(&r, inputs, err);
    for (int i = 0; !st && i < g->n_nodes;) {
        int done = 0, len;
        if (skipped(&r, g->order[i])) {
            st = publish_preset(&r, g->order[i], err);
            i++;
            continue;
        }
        if (spans)
            st = qp_run_span(&r, i, &done, err);
        if (fuse && i + 1 < g->n_nodes && qp_op_is_conv(&g->nodes[g->order[i]]) &&
            (len = unskipped(&r, i + 1, qp_run_candidates(g, i + 1))) > 0)
            st = qp_run_conv_fused(&r, i, len, &done, err);
        if (!st && !done) {
            len = fuse ? unskipped(&r, i, qp_run_candidates(g, i)) : 0;
            done = 1;
            st = len > 1 ? qp_run_fused(&r, i, len, &done, err)
                         : qp_run_timed(&r, g->order[i], err);
        }
        i += done;
    }
    if (!st)
        st = collect_outputs(&r, outputs, err);
    if (st)
        for (int k = 0; k < g->n_outputs; k++) {
            qp_tensor_free(outputs[k]);
            outputs[k] = NULL;
        }
    for (int v = 0; r.live && v < g->n_values; v++)
        if (r.owned[v])
            drop(&r, v);
    if (stats) {
        stats->peak_bytes = r.peak;
        stats->nodes_run = r.ran;
        stats->nodes_skipped = r.ran_skipped;
    }
    buffers_give(&r, opts ? opts->buffers : NULL);
    if (hold)
        qp_parallel_unhold();
    qp_pool_free(r.pool);
    free(r.live);
    free(r.owned);
    free(r.remaining);
    return st;
}
