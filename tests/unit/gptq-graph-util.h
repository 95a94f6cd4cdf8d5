/* tests/unit/gptq-graph-util.h: a small ONNX model with every kind of
 * layer GPTQ runs on (a padded conv whose channels a group size does not
 * divide, a grouped conv, a MatMul [K, N] and a Gemm with transB), its
 * calibration inputs, and the GPTQ log of a session, for the GPTQ
 * pipeline's tests (test-gptq-graph.c, test-gptq-session.c).
 *
 *   x [2,4,6,6] -> Conv A (WA [12,4,3,3], pads 1) -> Relu
 *     -> Conv B (WB [12,6,3,3], group 2, pads 1) -> Relu
 *     -> Transpose (0,2,3,1) -> MatMul C (WC [12,10]) -> Relu
 *     -> Reshape [-1,10] -> Gemm D (WD [7,10], transB) -> y [72,7] */
#ifndef QP_TESTS_GPTQ_GRAPH_UTIL_H
#define QP_TESTS_GPTQ_GRAPH_UTIL_H

#include <stdbool.h>
#include <stddef.h>

#include "model/session.h"
#include "tests/test.h"

enum { GG_A, GG_B, GG_C, GG_D, GG_LAYERS };

/* Writes the model to the test's temporary folder; the path is malloc'd
 * (NULL on failure, recorded in ctx). */
char *gg_model(struct qp_test_ctx *ctx);

/* One calibration set x [2,4,6,6] (correlated channels of spread
 * scales) from seed; with a NaN at one element when nan. Owned by the
 * caller (a session takes it). */
struct qp_tensor **gg_input(unsigned seed, bool nan);

/* A session over the model with n calibration sets (seeds 1..n). */
struct qp_session *gg_session(struct qp_test_ctx *ctx, const char *path,
                              int n);

/* The node of layer l (GG_A ..) in g, by its weight's name. */
int gg_node(const struct qp_graph *g, int l);

/* The GPTQ log of a session: per node, the last figures and how many
 * times it was made. */
struct gg_log {
    const struct qp_graph *g;
    int made[GG_LAYERS];
    double out_err[GG_LAYERS], rtn_out_err[GG_LAYERS];
    bool few_tokens[GG_LAYERS];
    int fallbacks;
};

/* Wires s's GPTQ options to log (fp32_inputs as given). */
void gg_log_attach(struct gg_log *log, struct qp_session *s, bool fp32_inputs);

/* A fake-mode plan of scheme string s (weights rounded half away, as the
 * tflite flavor does); NULL on failure (recorded). */
struct qp_splan *gg_plan(struct qp_test_ctx *ctx, struct qp_session *s,
                         const char *scheme, enum qp_run_mode mode);

/* The plan's dequantized weight of layer l. */
const struct qp_tensor *gg_fake(const struct qp_splan *p, int l);

/* Bitwise equality of two tensors' data. */
bool gg_same(const struct qp_tensor *a, const struct qp_tensor *b);

#endif
