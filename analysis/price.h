/* analysis/price.h: what a plan costs on a device, from its parameters
 * alone (no run): the bytes of its weights, their count, BitOps and
 * precision transitions. The recipe search prices its states this way and
 * every sweep row carries these columns.
 *
 *   bytes        every weighted node's weight (model/qassign.h
 *                qp_node_weighted) as `qprobe quantize` writes it: data,
 *                scales, zero points (qp_rtn_bytes of the quantized form);
 *                4 bytes an element for a weight left float
 *   params       elements of those weights
 *   bitops       per weighted node MACs x weight bits x input activation
 *                bits, 32 for a float side
 *   transitions  nodes whose first input and first output carry different
 *                precisions (mixed precision can split an NPU's
 *                partitions) */
#ifndef QP_ANALYSIS_PRICE_H
#define QP_ANALYSIS_PRICE_H

#include <stddef.h>
#include <stdint.h>

#include "model/graph.h"
#include "model/qplan.h"

struct qp_price {
    size_t bytes, params;
    double bitops;
    size_t transitions;
};

/* Prices plan p of graph g (NULL: everything fp32). macs (g->n_nodes
 * entries, qp_session_node_macs) may be NULL: bitops is then 0. */
void qp_price_plan(const struct qp_graph *g, const struct qp_qplan *p,
                   const uint64_t *macs, struct qp_price *out);

#endif
