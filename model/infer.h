/* model/infer.h: static shape inference.
 *
 * Given concrete dtypes and shapes for the graph inputs, infers every
 * value's dtype and shape by running each operator's infer in topological
 * order. Small integer tensors on the way (Shape -> Gather -> Concat ->
 * Reshape chains, at most QP_INFER_MAX_COMPUTE elements) are computed for
 * real, so shapes that depend on them resolve too. A value whose shape
 * depends on other data (a dynamic Reshape target computed from
 * activations) stays unknown, and so does everything downstream of it. */
#ifndef QP_MODEL_INFER_H
#define QP_MODEL_INFER_H

#include <stdbool.h>
#include <stdint.h>

#include "model/graph.h"
#include "model/op.h"

#define QP_INFER_MAX_COMPUTE 4096

/* inputs[i] describes g->inputs[i]. descs and known have g->n_values
 * entries; known[v] tells whether descs[v] was inferred. Shape errors
 * (incompatible shapes for these inputs) fail naming the node. */
enum qp_status qp_graph_infer(const struct qp_graph *g,
                              const struct qp_tdesc *inputs,
                              struct qp_tdesc *descs, bool *known,
                              struct qp_error *err);

/* Multiply-accumulates of the nodes whose operator counts them (the
 * macs trait of model/op.h: Conv, ConvTranspose, MatMul, Gemm, ...) with
 * known shapes (descs/known from qp_graph_infer); *unknown counts the
 * nodes of those operators whose shapes were not known. */
/* The same per node into macs[g->n_nodes] (0 where unknown or none). */
void qp_graph_node_macs(const struct qp_graph *g, const struct qp_tdesc *descs,
                        const bool *known, uint64_t *macs);

uint64_t qp_graph_count_macs(const struct qp_graph *g,
                             const struct qp_tdesc *descs, const bool *known,
                             int *unknown);

#endif
