/* model/exec.h: runs a finalized graph.
 *
 * Nodes run in the graph's topological order. Each node's outputs are
 * allocated from the shapes its operator infers from the actual inputs
 * (so one graph runs any input size), and a value is freed as soon as its
 * last consumer ran, unless it is a graph output: peak memory follows the
 * live set, not the graph. Every graph input and node output whose name
 * matches the capture glob is handed to a callback before it can be freed.
 *
 * Modes other than fp32 plug in through hooks: a node may be run by the
 * hook instead of its float operator, and outputs may be rewritten (fake
 * quantization, observers) before capture and before consumers see them. */
#ifndef QP_MODEL_EXEC_H
#define QP_MODEL_EXEC_H

#include <stdbool.h>
#include <stddef.h>

#include "core/progress.h"
#include "core/tensor.h"
#include "model/graph.h"
#include "model/op.h"

struct qp_exec_span; /* model/exec-span.h */

struct qp_exec_hooks {
    /* Called before node runs. May compute the outputs itself: then it
     * stores new tensors (owned by the executor from then on) in out[k]
     * for every k with n->out[k] >= 0 and sets *done. */
    enum qp_status (*run_node)(void *ctx, const struct qp_op_ctx *c,
                               struct qp_tensor **out, bool *done,
                               struct qp_error *err);
    /* Called after node ran, before capture: may modify out[k] in place
     * or replace it (freeing the old tensor). out[k] is NULL for unused
     * optional outputs. */
    enum qp_status (*after_node)(void *ctx, const struct qp_op_ctx *c,
                                 struct qp_tensor **out, struct qp_error *err);
    /* Called for each graph input tensor before anything reads it, with
     * the same contract as after_node (the input itself is borrowed: a
     * hook that changes it must replace it with a new tensor). */
    enum qp_status (*on_input)(void *ctx, const struct qp_graph *g, int value,
                               struct qp_tensor **t, struct qp_error *err);
    /* Called before node c->node runs (before run_node) with the inputs
     * it is about to read (in[k], n->n_in entries): may replace entries
     * with tensors the hook keeps alive until its next call or the end of
     * the run (teacher forcing: feeding a layer reference inputs). */
    enum qp_status (*map_inputs)(void *ctx, const struct qp_op_ctx *c,
                                 const struct qp_tensor **in,
                                 struct qp_error *err);
    void *ctx;
    /* Optional: runs several nodes as one pass (the int mode's composed
     * lookup tables). Called while fusion is on and map_inputs and
     * after_node are NULL, before a node that is about to run (not
     * skipped): may run it and nodes after it as model/exec-span.h says,
     * and sets *done to how many ran (0: none; the node then runs alone
     * through run_node). */
    enum qp_status (*run_span)(void *ctx, struct qp_exec_span *s, int *done,
                               struct qp_error *err);
};

struct qp_exec_opts {
    /* fnmatch(3) glob on value names; NULL captures nothing, "*" all */
    const char *capture;
    /* receives captured tensors (borrowed: copy what must outlive the
     * call); value is the id in g->values */
    enum qp_status (*on_capture)(void *ctx, const struct qp_graph *g,
                                 int value, const struct qp_tensor *t,
                                 struct qp_error *err);
    void *capture_ctx;
    const struct qp_exec_hooks *hooks; /* NULL: plain fp32 */
    const struct qp_progress *progress;
    /* Reuse of an earlier run (model/session.h decides what): nodes with
     * skip[node] set (g->n_nodes entries; NULL: none) do not run; their
     * outputs are preset[value] (g->n_values entries, borrowed; NULL where
     * nothing reads or captures the value), published, captured and read
     * as if computed. A graph input with preset[value] set is not fed (its
     * hooks do not see it) but takes the preset tensor. */
    const bool *skip;
    struct qp_tensor *const *preset;
    /* Non-NULL: every value the run computed (owned tensors only: not
     * constants, borrowed inputs, presets or graph outputs, which go to
     * the caller) is handed over here instead of being freed, once nothing
     * reads it any more; fn takes ownership. Values that a fused pass
     * never materialized are not handed over. */
    void (*on_release)(void *ctx, const struct qp_graph *g, int value,
                       struct qp_tensor *t);
    void *release_ctx;
    /* handed to every operator as qp_op_ctx.state (model/op.h) */
    void *state;
    /* after the last node reading a constant that lies in a mapped file
     * ran, the constant's pages are released (core/mmap.h): a model whose
     * weights exceed memory runs with the resident set of a few layers
     * (the next run reads them from the file again) */
    bool release_consts;
    /* NULL, or buffers kept from the previous run that used them and
     * handed to the next (qp_exec_buffers_new) */
    struct qp_exec_buffers *buffers;
};

/* Activation buffers and scratch that runs hand on to the next run
 * (qp_exec_opts.buffers): without them every run starts with fresh
 * memory, whose pages the system faults in again (the C library returns
 * what a run freed when it ends). For callers that run graphs many times
 * (a session, a benchmark); one run at a time may use them. *out belongs
 * to the caller (qp_exec_buffers_free). */
struct qp_exec_buffers;
enum qp_status qp_exec_buffers_new(struct qp_exec_buffers **out,
                                   struct qp_error *err);
void qp_exec_buffers_free(struct qp_exec_buffers *b);

struct qp_exec_stats {
    size_t peak_bytes;   /* most bytes of activations + scratch alive */
    size_t nodes_run;
    size_t nodes_skipped; /* outputs taken from opts->preset */
};

/* Runs g on inputs[i] for g->inputs[i] (n_inputs must equal
 * g->n_inputs; tensors are borrowed). Dtypes must match the declared
 * ones, and declared dims (>= 0) the actual ones. outputs[k] receives a
 * new tensor for g->outputs[k] (the caller frees them); stats may be NULL.
 * On failure no output is returned and every intermediate is freed. */
enum qp_status qp_exec_run(const struct qp_graph *g,
                           const struct qp_tensor *const *inputs, int n_inputs,
                           const struct qp_exec_opts *opts,
                           struct qp_tensor **outputs,
                           struct qp_exec_stats *stats, struct qp_error *err);

/* The check qp_exec_run makes of graph input value v's tensor t: data,
 * the declared dtype and declared dims (>= 0). QP_E_SHAPE naming the
 * input and both shapes. */
enum qp_status qp_exec_check_input(const struct qp_graph *g, int v,
                                   const struct qp_tensor *t,
                                   struct qp_error *err);

/* Run-time choices beyond qp_exec_opts, for tests and benchmarks. */
struct qp_exec_tune {
    /* run every node alone: no fused elementwise passes (model/fuse.h),
     * whose results are bit-identical to this */
    bool no_fusion;
    /* NULL, or g->n_nodes entries to which each node's wall time is
     * added; a fused pass's time goes to its first node */
    double *node_seconds;
    /* NULL, or g->n_nodes entries receiving, for each node run, the
     * first node of the pass that ran it (itself when it ran alone) */
    int *node_pass;
};

/* qp_exec_run with tune (NULL: the defaults, as qp_exec_run). Fusion is
 * on by default; with hooks, the executor's own fusion is off (the modes
 * see every node) and only the hooks' run_span fuses. A fused pass never materializes values that only its own nodes
 * read, unless they are captured: captured values, graph outputs and
 * values read elsewhere are all still produced, with the same bits. */
enum qp_status qp_exec_run_tuned(const struct qp_graph *g,
                                 const struct qp_tensor *const *inputs,
                                 int n_inputs, const struct qp_exec_opts *opts,
                                 const struct qp_exec_tune *tune,
                                 struct qp_tensor **outputs,
                                 struct qp_exec_stats *stats,
                                 struct qp_error *err);

/* One node on given inputs (in[k] for n->in[k]; NULL when absent):
 * infers, allocates and runs. out[k] receives new tensors named after the
 * output values (NULL for absent outputs). scratch and pool may be NULL
 * (a private scratch; threads started per loop). For constant folding,
 * the quantized modes' hooks and tests. */
enum qp_status qp_exec_node(const struct qp_graph *g, int node,
                            const struct qp_tensor *const *in,
                            struct qp_scratch *scratch, struct qp_pool *pool,
                            struct qp_tensor **out, struct qp_error *err);

/* qp_exec_node with c's graph, node, scratch, pool and state: how a hook
 * runs the node's own operator on other inputs. */
enum qp_status qp_exec_node_as(const struct qp_op_ctx *c,
                               const struct qp_tensor *const *in,
                               struct qp_tensor **out, struct qp_error *err);

/* Scratch memory shared by the nodes of a run. */
struct qp_scratch {
    void *buf;
    size_t cap;
    void *run; /* the run's buffers (model/exec-run.h), NULL outside a run */
};
void qp_scratch_release(struct qp_scratch *s);

#endif
