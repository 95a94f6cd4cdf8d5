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
 * and, for a node that already runs as a table of two quantized inputs,
 * a faster walk when one input holds one code per block of 64 or more
 * output elements (x * se[c]): each block is one row of the node's table
 * (of its transpose, kept in the plan, when that input is the table's
 * low byte) applied to the other input, the same bytes as the
 * element-by-element lookups.
 *
 * Used by the fused passes (model/qexec-fuse.c); the node-by-node run
 * (qp_qplan_run_int) keeps the float way. Internal to model/. */
#ifndef QP_MODEL_QEXEC_INT_H
#define QP_MODEL_QEXEC_INT_H

#include <stdbool.h>

#include "model/qplan.h"

/* Per-channel tables. An Add, Sub, Mul or Div of one quantized input and
 * a float constant that varies along one axis only (a bias [C, 1, 1]),
 * and an inference BatchNormalization (axis 1), compute each output
 * element from its input's code and its index along that axis alone, by
 * arithmetic that gives the same bits wherever the element lies: a table
 * of 256 codes per index (the operator run on every code of every
 * channel, quantized) replaces dequantize, float operator, quantize.
 * qp_qint_channel_ok tells whether c's node is such a node (its quantized
 * input is c->in[*qin], a tensor or a descriptor, of the output's shape);
 * *axis and *channels say along what. */
bool qp_qint_channel_ok(const struct qp_qplan *p, const struct qp_op_ctx *c,
                        int *qin, int *axis, size_t *channels);

/* The node's table [channels][256] (built on first use with c's scratch
 * and pool, kept in the plan's node as its lookup table). */
enum qp_status qp_qint_channel_table(struct qp_qplan *p,
                                     const struct qp_op_ctx *c, int qin,
                                     int axis, size_t channels,
                                     const uint8_t **table,
                                     struct qp_error *err);

/* fn(ctx, begin, end) over [0, n) on c's threads when n is large: at
 * least min_per_thread items a thread (qp_parallel_threads_for), in
 * chunks (about four a thread, multiples of align items: 64 for bytes,
 * whole cache lines; 1 for planes or rows) claimed by whichever thread is
 * free (qp_parallel_chunks, a hot run). fn's result must depend on its
 * range alone. The int mode's passes over elements, planes and rows. */
void qp_qint_parallel_for(const struct qp_op_ctx *c, size_t n,
                          size_t min_per_thread, size_t align,
                          void (*fn)(void *ctx, size_t begin, size_t end),
                          void *ctx);

/* The pair table of an Add that a fixed-point flavor runs on the
 * integers: qp_qadd, the integer add itself, on every pair of codes
 * (index a * 256 + b), kept in the plan's node as its lookup table. Its
 * output element depends on the two input bytes alone, so the table
 * gives the add's bytes on any tensors, built once per plan instead of
 * the add's own tables at every run. *done false (nothing built) when c's
 * node is no such Add (both inputs quantized, 8-bit) or qp_qadd declines:
 * the float operator's table is then the node's (model/qexec.c). */
enum qp_status qp_qint_add_table(struct qp_qplan *p, const struct qp_op_ctx *c,
                                 bool *done, struct qp_error *err);

/* True when node i of p has an integer computation above and c's inputs
 * (its node's, as the int mode carries them) suit it. */
bool qp_qint_ok(const struct qp_qplan *p, const struct qp_op_ctx *c);

/* Runs c's node that way: out[0] receives its new output (from c's
 * run's buffers), quantized as the plan says. */
enum qp_status qp_qint_run(struct qp_qplan *p, const struct qp_op_ctx *c,
                           struct qp_tensor **out, struct qp_error *err);

#endif
