/* model/qexec-fuse.h: the int mode's fused passes (model/qplan.h), run
 * through the executor's spans (model/exec-span.h).
 *
 * Lookup-table chains. The int mode runs an elementwise node of one or
 * two quantized inputs (other inputs scalar constants) as a table of its
 * float operator on every input code. A run of such nodes, consecutive in
 * the order, whose quantized inputs all come from one value s (directly
 * or through earlier nodes of the run) computes, at every position, a
 * function of s's code there alone: each node's table composed with the
 * tables before it gives a 256-entry table from s's code to its own
 * output code. A fused pass reads s once and writes, through those
 * composed tables, only the outputs that must exist (captured, graph
 * outputs, read after the run); the others are never materialized. The
 * bytes are the node-by-node run's: the composed table holds exactly the
 * codes the chain of tables gives.
 *
 * The node making s (a Conv, a MatMul, an integer Add, any node with one
 * quantized output) runs first in the same span, as it runs alone; when s
 * itself need not exist, the last table is applied in place in its
 * buffer. Internal to model/. */
#ifndef QP_MODEL_QEXEC_FUSE_H
#define QP_MODEL_QEXEC_FUSE_H

#include "model/exec-span.h"
#include "model/qplan.h"

/* qp_exec_hooks.run_span of the int mode (ctx: the struct qp_qplan):
 * runs the lookup-table chain at the span's start with the node before
 * it, as above; *done = 0 when there is none. */
enum qp_status qp_qfuse_run_span(void *ctx, struct qp_exec_span *s, int *done,
                                 struct qp_error *err);

/* Composed tables of chains already run, by the chain's first node:
 * a chain's tables depend only on the plan and its members, and a
 * shorter chain from the same node (a span cut by skipped nodes) is a
 * prefix of a longer one. Owned by the plan (struct qp_qplan.fuse). */
struct qp_qfuse_cache;
void qp_qfuse_cache_free(struct qp_qfuse_cache *c);

/* Pair table t (65536 entries, index a * 256 + b) of node transposed
 * (index b * 256 + a), made once and kept in the plan's cache. */
enum qp_status qp_qfuse_transposed(struct qp_qplan *p, int node,
                                   const uint8_t *t, const uint8_t **tt,
                                   struct qp_error *err);

/* The lookup table of node c->node (model/qexec.c; built from c's inputs,
 * whose quantized ones need only dtype and qparams, on first use):
 * 256 entries, or 65536 for two quantized inputs (index a * 256 + b). */
enum qp_status qp_qplan_lut(struct qp_qplan *p, const struct qp_op_ctx *c,
                            const uint8_t **table, struct qp_error *err);

#endif
