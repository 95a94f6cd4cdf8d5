/* tests/unit/planted-net.h: a three-layer network whose sensitivities are
 * known by construction, for the sensitivity and recipe-search tests.
 *
 * x[8,24] -> MatMul W0 -> Relu r0 -> MatMul W1 -> Relu r1 -> MatMul W2 -> y.
 * W1 holds one weight 200x the others (66.0), on the row that reads r0's
 * column 0, which W0 keeps at zero: the outlier adds nothing to the output
 * but sets W1's per-tensor grid, so W1 is the layer a per-tensor scheme
 * damages most. */
#ifndef QP_TESTS_PLANTED_NET_H
#define QP_TESTS_PLANTED_NET_H

#include "model/graph.h"
#include "tests/test.h"

#define QP_PLANTED_W 24

/* The finalized graph, or NULL (a test failure recorded on ctx). */
struct qp_graph *qp_planted_net(struct qp_test_ctx *ctx);

/* One input set ([1] tensors: x, values in [-1, 1] from seed); the caller
 * owns it (a session takes it with qp_session_add_calib_feed). */
struct qp_tensor **qp_planted_input(unsigned seed);

#endif
