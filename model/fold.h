/* model/fold.h: import-time graph rewrites.
 *
 * qp_graph_fold_constants runs every node whose inputs are all constants
 * (except quantization nodes, which later modes need to see) and turns
 * its outputs into constants, so weight preprocessing (Transpose, Cast,
 * Reshape of initializers) happens once.
 *
 * qp_graph_fold_batchnorm folds an inference-mode BatchNormalization into
 * the Conv that feeds it, when the conv's weight and bias and the BN's
 * parameters are constants and nothing else reads the conv's output:
 *   a[c] = scale[c] / sqrt(var[c] + eps)
 *   W'[c,...] = W[c,...] * a[c],  B'[c] = (B[c] - mean[c]) * a[c] + bias[c]
 * computed in double and rounded once. The conv then writes the BN's
 * output value (its own output value disappears); the new weight and bias
 * constants are named "<W>:bn" and "<B>:bn" ("<conv output>:bias:bn" when
 * the conv had no bias). Both finalize the graph again. *folded (may be
 * NULL) receives the number of nodes removed. */
#ifndef QP_MODEL_FOLD_H
#define QP_MODEL_FOLD_H

#include "model/graph.h"

enum qp_status qp_graph_fold_constants(struct qp_graph *g, int *folded,
                                       struct qp_error *err);

enum qp_status qp_graph_fold_batchnorm(struct qp_graph *g, int *folded,
                                       struct qp_error *err);

#endif
