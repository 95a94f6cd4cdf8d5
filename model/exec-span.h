/* model/exec-span.h: how a mode's hook runs several nodes as one pass
 * (qp_exec_hooks.run_span, model/exec.h), e.g. the int mode's chains of
 * lookup tables composed into one table (model/qexec-fuse.c).
 *
 * The executor offers a span at order position pos: the nodes at
 * positions [pos, pos + len) are about to run and none of them is
 * skipped. The hook runs a prefix of them, computing their outputs with
 * the span's values and buffers, then publishes each node's outputs in
 * order (qp_exec_span_publish), which captures them, hands them to the
 * nodes after the span and releases each node's inputs as if it had run
 * alone. A node's output may stay unmaterialized (NULL) only when no node
 * after the span reads it, it is not captured and not a graph output:
 * the hook checks that (qp_exec_span_needed). Internal to model/. */
#ifndef QP_MODEL_EXEC_SPAN_H
#define QP_MODEL_EXEC_SPAN_H

#include <stdbool.h>

#include "model/exec.h"

struct qp_exec_span {
    const struct qp_graph *g;
    int pos;                    /* order position of the first node */
    int len;                    /* nodes from pos the span may run */
    struct qp_scratch *scratch; /* the run's, as in qp_op_ctx */
    struct qp_pool *pool;
    void *state;
    void *run;                  /* private to model/exec-span.c */
    double t0;                  /* when the span started (accounting) */
};

/* The tensor of value v now: a constant, a live value or a published
 * one; NULL when it does not exist (not computed yet, or never
 * materialized). */
const struct qp_tensor *qp_exec_span_value(const struct qp_exec_span *s, int v);

/* True when value v must exist as a tensor once the nodes at order
 * positions [pos, pos + n) ran: it is captured, a graph output, read by
 * a node outside those positions, or read by nobody (published and
 * dropped at once, as the executor does). */
bool qp_exec_span_needed(const struct qp_exec_span *s, int v, int n);

/* A new tensor for value v (named after it), of dtype and shape[ndim],
 * its data uninitialized, from the run's buffers. *out belongs to the
 * caller until published (qp_exec_span_publish) or freed
 * (qp_exec_span_free). */
enum qp_status qp_exec_span_tensor(struct qp_exec_span *s, int v,
                                   enum qp_dtype dtype, int ndim,
                                   const int64_t *shape,
                                   struct qp_tensor **out,
                                   struct qp_error *err);

/* Frees t (NULL: nothing), keeping its buffer for the run. */
void qp_exec_span_free(struct qp_exec_span *s, struct qp_tensor *t);

/* Publishes the outputs of node (out[k] for n->out[k], owned tensors the
 * executor takes, NULL where not materialized), then counts the node's
 * reads of its inputs. Call once per node of the span, in order, after
 * every node of the span is computed. On failure out[] is freed. */
enum qp_status qp_exec_span_publish(struct qp_exec_span *s, int node,
                                    struct qp_tensor **out,
                                    struct qp_error *err);

/* Accounts the nodes at positions [pos, pos + n) as one pass (time,
 * progress, tune->node_pass). */
void qp_exec_span_account(struct qp_exec_span *s, int n);

#endif
