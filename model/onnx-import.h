/* model/onnx-import.h: the graph IR from an ONNX model (formats/onnx.h).
 *
 * Standard-domain opsets 1 to QP_ONNX_MAX_OPSET import; operators whose
 * semantics changed between opsets read their node's opset (Clip, Slice,
 * Softmax, Split, Squeeze, Unsqueeze, Pad, Resize, Reduce*). Weights are
 * the initializers and Constant node values, borrowed from the parsed model
 * (which the graph keeps alive, so memory mapped from the file stays
 * mapped rather than copied); external data comes the same way. Graph
 * inputs that have an initializer are constants (their default) and not
 * runtime inputs.
 *
 * After building, constant subgraphs fold (model/fold.h). An If node whose
 * condition folds to a constant is replaced by the nodes of the branch it
 * takes (their Constant nodes included), and folding runs again; an If
 * whose condition stays dynamic is refused. Conv + BatchNormalization pairs
 * fold unless keep_batchnorm. An operator qprobe does not run fails with
 * "node 'NAME' (OP): unsupported operator 'OP'". */
#ifndef QP_MODEL_ONNX_IMPORT_H
#define QP_MODEL_ONNX_IMPORT_H

#include <stdbool.h>

#include "formats/onnx.h"
#include "model/graph.h"

#define QP_ONNX_MAX_OPSET 21

struct qp_import_opts {
    bool keep_batchnorm; /* do not fold BatchNormalization into Conv */
    bool no_fold;        /* keep constant subgraphs (and BatchNorm) as given */
};

/* Builds a finalized graph from m; takes ownership of m (also on
 * failure). opts may be NULL (defaults: everything folds). */
enum qp_status qp_model_from_onnx(struct qp_onnx_model *m,
                                  const struct qp_import_opts *opts,
                                  struct qp_graph **out, struct qp_error *err);

/* qp_onnx_load then qp_model_from_onnx. Errors name the file. */
enum qp_status qp_model_load_onnx(const char *path,
                                  const struct qp_import_opts *opts,
                                  struct qp_graph **out, struct qp_error *err);

#endif
