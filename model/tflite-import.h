/* model/tflite-import.h: the graph IR from a TFLite model
 * (formats/tflite.h), run by the plain executor (model/exec.h).
 *
 * Subgraph 0 becomes a graph in the "tflite" operator domain
 * (model/op-tflite.h): one node per operator, named after its first
 * output, with TFLite's layouts (NHWC) and attributes (the operator
 * index "tflite_index", the builtin "version"); values are the TFLite
 * tensors under their names (empty or repeated names get the reader's
 * aliases), constants are the tensors with buffer data (weights and
 * biases with their quantization parameters, borrowed from the file
 * mapping when aligned). Graph inputs are the subgraph's inputs, typed as
 * the model declares them; a quantized input also records its parameters
 * (qp_value.feed_q) so a float feed is quantized as TFLite's QUANTIZE
 * would (qp_model_quantize_feed). Every node is prepared at import for
 * the flavor asked: requantization parameters derived as the runtime
 * derives them, weights packed. An operator qprobe does not run is
 * refused: "'m.tflite': operator 5 (LSTM): operator not supported". */
#ifndef QP_MODEL_TFLITE_IMPORT_H
#define QP_MODEL_TFLITE_IMPORT_H

#include "formats/tflite.h"
#include "model/graph.h"
#include "model/op-tflite.h"

struct qp_tflite_opts {
    enum qp_tfl_flavor flavor; /* QP_TFL_MICRO (default) or QP_TFL_X86 */
};

/* Builds a finalized graph from m (borrowed; the graph keeps what it
 * needs). opts may be NULL (defaults). *out belongs to the caller. */
enum qp_status qp_model_from_tflite(const struct qp_tfl_model *m,
                                    const struct qp_tflite_opts *opts,
                                    struct qp_graph **out,
                                    struct qp_error *err);

/* qp_tfl_load then qp_model_from_tflite. Errors name the file. */
enum qp_status qp_model_load_tflite(const char *path,
                                    const struct qp_tflite_opts *opts,
                                    struct qp_graph **out,
                                    struct qp_error *err);

/* For a graph input v with feed_q and a float tensor *t: replaces *t by
 * its quantization with v's parameters, round(x / scale) (float division,
 * half away from zero) + zero point, clamped to v's dtype (TFLite Micro's
 * AffineQuantize). Other tensors are left as they are. */
enum qp_status qp_model_quantize_feed(const struct qp_value *v,
                                      struct qp_tensor **t,
                                      struct qp_error *err);

#endif
