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
 * refused: "'m.tflite': operator 5 (LSTM): operator not supported".
 * Float models run in float32 (TFLite's float kernels' formulas, summed in
 * order: close to TFLite's results, not bit-exact). */
#ifndef QP_MODEL_TFLITE_IMPORT_H
#define QP_MODEL_TFLITE_IMPORT_H

#include "formats/tflite.h"
#include "model/graph.h"
#include "model/op-tflite.h"

struct qp_tflite_opts {
    enum qp_tfl_flavor flavor; /* QP_TFL_MICRO (default) or QP_TFL_X86 */
    /* the float reference of a quantized model: every quantized tensor
     * becomes float32 (constants dequantized, s * (q - zp) per tensor or
     * channel, in double then rounded to float; activations computed in
     * float; QUANTIZE and DEQUANTIZE pass values through), so the model
     * runs in fp32 as far as its weights allow: the float answer of its
     * own quantized weights, to diff against the integer run */
    bool dequantize;
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

/* For a graph input v with feed_q: a float tensor *t fed to an integer
 * input is replaced by its quantization with v's parameters, round(x /
 * scale) (float division, half away from zero) + zero point, clamped to
 * v's dtype (TFLite Micro's AffineQuantize); an integer tensor of the
 * model's original input type fed to the float input of a dequantized
 * model by its dequantization; a tensor of the input's own integer type
 * without parameters gets the input's. Other tensors are left as they
 * are. */
enum qp_status qp_model_quantize_feed(const struct qp_value *v,
                                      struct qp_tensor **t,
                                      struct qp_error *err);

/* For planners (fake quantization, analyses): the input index of a TFLite
 * node's weight and bias (-1 when absent) and the weight's layout: "OHWI"
 * for CONV_2D and TRANSPOSE_CONV ([out, kh, kw, in]), "1HWO" for
 * DEPTHWISE_CONV_2D ([1, kh, kw, out]), "OI" for FULLY_CONNECTED; the
 * output channel is axis 0 but for depthwise (axis 3). False for nodes
 * without a weight (and for non-TFLite nodes). */
bool qp_tfl_node_weight(const struct qp_node *n, int *weight, int *bias,
                        const char **layout, int *out_axis);

#endif
