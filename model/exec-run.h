/* model/exec-run.h: the state of one qp_exec_run and the helpers that
 * model/exec.c (node by node) and model/exec-fuse.c (fused passes)
 * share. Internal to model/. */
#ifndef QP_MODEL_EXEC_RUN_H
#define QP_MODEL_EXEC_RUN_H

#include "model/exec.h"

/* Freed activation buffers kept for reuse within one run: fresh large
 * allocations come from mmap and fault every page in again, and a graph
 * allocates and frees tensors of a few recurring sizes. A buffer is reused
 * for a request between half its capacity and its capacity. The cache
 * holds at most CACHE_SLOTS buffers and, beyond CACHE_MIN_BYTES, no more
 * than half the bytes of live activations (oldest dropped first), so the
 * peak stays within 1.5x the live set's. */
#define CACHE_SLOTS 64
#define CACHE_MIN_BYTES ((size_t)8 << 20)

struct bufcache {
    void *p[CACHE_SLOTS];
    size_t cap[CACHE_SLOTS];
    int n;
    size_t bytes; /* capacity held */
    size_t floor; /* held up to this much whatever the live bytes */
};

/* What a run hands the next one (qp_exec_opts.buffers): its freed
 * buffers and scratch, and half its peak of live activations (the next
 * run's cache floor, so that the buffers are still there when it needs
 * them: peak memory stays within 1.5x the larger run's live set). */
struct qp_exec_buffers {
    struct bufcache cache;
    struct qp_scratch scratch;
    size_t floor;
};

struct run {
    const struct qp_graph *g;
    const struct qp_exec_opts *opts;
    struct qp_tensor **live;   /* per value: tensor being computed with */
    bool *owned;               /* live[v] is ours to free */
    int *remaining;            /* consumers still to run */
    size_t live_bytes, peak;
    size_t peak_live;          /* most bytes of live activations */
    struct qp_scratch scratch;
    struct bufcache cache;
    struct qp_pool *pool;      /* threads shared by the nodes' loops */
    const struct qp_exec_tune *tune;
    size_t ran;                /* nodes run so far */
    size_t ran_skipped;        /* nodes whose outputs came from presets */
};

/* A tensor with uninitialized owned data (from the cache when it fits). */
enum qp_status qp_run_new_tensor(struct bufcache *c, const char *name,
                                 const struct qp_tdesc *d,
                                 struct qp_tensor **out, struct qp_error *err);

/* Frees t, keeping its buffer in c when c is non-NULL (live: the bytes of
 * live activations). */
void qp_run_free_tensor(struct bufcache *c, struct qp_tensor *t, size_t live);

/* The name of value v ("" for -1). */
const char *qp_run_value_name(const struct qp_graph *g, int v);

/* Raises the peak to the bytes now alive. */
void qp_run_track_peak(struct run *r);

/* Stores value v (owned: ours to free): accounts, captures, and frees it
 * at once when nothing will read it. */
enum qp_status qp_run_publish(struct run *r, int v, struct qp_tensor *t,
                              bool owned, struct qp_error *err);

/* Counts node's read of each of its inputs; frees those whose last
 * consumer it was. */
void qp_run_release_inputs(struct run *r, int node);

/* Runs node alone, accounted. */
enum qp_status qp_run_timed(struct run *r, int node, struct qp_error *err);

/* The clock for qp_run_account (0 when nobody asked for times). */
double qp_run_clock(const struct run *r);

/* Accounts nodes[0..n), run as one pass started at t0 by nodes[0]. */
void qp_run_account(struct run *r, const int *nodes, int n, double t0);

/* The tensor of value v now (a constant or live), or NULL
 * (qp_fuse_value_fn with a struct run). */
const struct qp_tensor *qp_run_value(void *ctx, int v);

/* True when value v is captured. */
bool qp_run_captured(const struct run *r, int v);

/* ---- model/exec-fuse.c --------------------------------------------------- */

/* Length of the run of fusion candidates starting at order position i
 * (at most QP_FUSE_MAX_NODES). */
int qp_run_candidates(const struct qp_graph *g, int i);

/* Runs the nodes at order positions [pos, pos + len), all fusion
 * candidates, or a prefix of them, in fused passes; *done receives how
 * many ran. */
enum qp_status qp_run_fused(struct run *r, int pos, int len, int *done,
                            struct qp_error *err);

/* When the node at order position pos is a Conv whose output feeds the
 * first pass of the len candidates after it: runs the Conv with that
 * pass as its epilogue, then the rest of the candidates' passes, and
 * sets *done to the nodes run. Otherwise runs nothing and sets *done to
 * 0. */
enum qp_status qp_run_conv_fused(struct run *r, int pos, int len, int *done,
                                 struct qp_error *err);

/* ---- model/exec-span.c --------------------------------------------------- */

/* Offers the hooks' run_span the nodes from order position pos (up to
 * the first skipped one); *done receives how many it ran (0: none). */
enum qp_status qp_run_span(struct run *r, int pos, int *done,
                           struct qp_error *err);

#endif
