/* model/qexec-int.h: integer computations of nodes that the int mode
 * (model/qplan.h) otherwise runs in float (dequantize the inputs, run the
 * float operator, quantize the output), with exactly that result:
 *
 *   GlobalAveragePool  each plane's mean is a sum in double of dequantized
 *                      codes, which is exact (every term is a multiple of
 *                      the ulp of the smallest nonzero one, and planes of
 *                      at most 2^20 elements keep the sums below 2^53 of
 *                      them), so it equals the sum over a histogram of the
 *                      codes: one read of the bytes, no float tensor;
 *   Resize (nearest)   moves values: the operator on the codes, then one
 *   Concat             256-entry table quantize(dequantize(code)) per
 *                      input (skipped when it is the identity).
 *
 * Used by the fused passes (model/qexec-fuse.c); the node-by-node run
 * (qp_qplan_run_int) keeps the float way. Internal to model/. */
#ifndef QP_MODEL_QEXEC_INT_H
#define QP_MODEL_QEXEC_INT_H

#include <stdbool.h>

#include "model/qplan.h"

/* True when node i of p has an integer computation above and c's inputs
 * (its node's, as the int mode carries them) suit it. */
bool qp_qint_ok(const struct qp_qplan *p, const struct qp_op_ctx *c);

/* Runs c's node that way: out[0] receives its new output (from c's
 * run's buffers), quantized as the plan says. */
enum qp_status qp_qint_run(struct qp_qplan *p, const struct qp_op_ctx *c,
                           struct qp_tensor **out, struct qp_error *err);

#endif
