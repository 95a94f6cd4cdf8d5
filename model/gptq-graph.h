/* model/gptq-graph.h: GPTQ over the weighted layers of a graph (ONNX
 * Conv, MatMul, Gemm; an LLM's Linear), fed by runs of the graph over
 * calibration inputs.
 *
 * Capture. qp_gptq_node_rows turns a layer's input tensor into the rows
 * its Hessian needs and hands them to a qp_gptq_rows_fn (the
 * model-agnostic callback of quant/gptq-layer.h): MatMul's and Linear's
 * A [..., K] as its rows, Gemm's A (transposed under transA), a Conv's input through
 * im2col (kernels/conv-f32.h) one tile of output positions at a time, per
 * group. Nothing is kept: the Hessians grow batch by batch.
 *
 * Order. qp_gptq_graph_run walks the graph in topological order, node by
 * node over all calibration inputs at once (the live values of every
 * input set are kept, as the executor keeps one run's: freed after their
 * last reader, so memory is the calibration sets times the live
 * activations of one run, plus one layer's Hessians). At each layer to
 * quantize it captures the layer's inputs from every set, runs GPTQ, and
 * then runs the layer, in sequential mode (the default, as the reference
 * IST-DASLab/gptq) with its quantized weight, so that the inputs of every
 * later layer are computed with the earlier layers already quantized
 * (GPTQ layers with their GPTQ weights, the others with theirs: a recipe
 * may mix them); with fp32_inputs every layer sees the float model's
 * inputs. Activations stay float during calibration (weight-only GPTQ,
 * as the reference). Nodes that lead to no layer still to quantize are
 * not run. In an LLM's block this is the reference's true-sequential
 * order: q/k/v (which read the same input, so none waits for another),
 * then o_proj on the attention of the quantized q/k/v, then gate/up, then
 * down_proj on the SwiGLU of the quantized gate/up, each block on the
 * outputs of the quantized blocks before it.
 *
 * Results go to the weight cache (model/wcache.h) under a key
 * (qp_gptq_graph_keys) that stands for the calibration inputs and, in
 * sequential mode, for the quantization of everything upstream of the
 * layer: a plan asking for the same gets the same weights, a different
 * calibration set or upstream change makes new ones. */
#ifndef QP_MODEL_GPTQ_GRAPH_H
#define QP_MODEL_GPTQ_GRAPH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/progress.h"
#include "model/graph.h"
#include "model/qassign.h"
#include "model/wcache.h"
#include "quant/gptq-layer.h"

struct qp_pool;

/* Hands the rows node `node` (a capable Conv, MatMul, Gemm or Linear)
 * reads from its input x (f32) to fn as layer `layer`, parts numbered by
 * convolution group. scratch (may be NULL) receives a reusable im2col buffer (free it
 * with free()). Errors name the layer; x non-float is QP_E_UNSUPPORTED. */
enum qp_status qp_gptq_node_rows(const struct qp_graph *g, int node,
                                 const struct qp_tensor *x, qp_gptq_rows_fn fn,
                                 void *ctx, int layer, struct qp_pool *pool,
                                 float **scratch, size_t *scratch_cap,
                                 struct qp_error *err);

/* Cache keys for the GPTQ layers of assignment a (a->wq and algo GPTQ,
 * capable: model/gptq-view.h), 0 for every other node: key[n_nodes].
 * calib identifies the calibration inputs (e.g. a hash of their bytes);
 * r is the weights' rounding (the layout of each weight comes from the
 * graph). In sequential mode a layer's key also covers the scheme,
 * rounding and layout of every quantized weight upstream of it. */
enum qp_status qp_gptq_graph_keys(const struct qp_graph *g,
                                  const struct qp_qassign *a, enum qp_round r,
                                  bool fp32_inputs, uint64_t calib,
                                  uint64_t *key, struct qp_error *err);

/* One quantized layer, for the --report log. */
struct qp_gptq_graph_layer {
    int node;
    const char *name;       /* the weight's rule name (model/qassign.h) */
    size_t rows, cols;      /* outputs and input features (per group) */
    size_t parts;           /* convolution groups quantized apart */
    uint64_t samples;       /* calibration inputs */
    const struct qp_gptq_layer_result *res;
};

struct qp_gptq_graph_opts {
    const struct qp_qassign *assign;
    const uint64_t *key;     /* [n_nodes] qp_gptq_graph_keys */
    enum qp_round round;
    bool fp32_inputs;
    struct qp_wcache *wcache; /* results go here; sequential runs take the
                               * other layers' weights from here */
    struct qp_tensor *const *const *calib; /* [ncalib] input sets */
    size_t ncalib;
    const struct qp_progress *progress;   /* "gptq", layers done / to do */
    /* called after each layer is quantized (may be NULL) */
    enum qp_status (*on_layer)(void *ctx, const struct qp_gptq_graph_layer *l,
                               struct qp_error *err);
    void *layer_ctx;
};

/* Makes every GPTQ weight of o->assign (key non-zero) that o->wcache does
 * not hold yet. *made (may be NULL) counts them. Needs at least one
 * calibration set. Errors name the layer and, for a calibration input
 * that breaks it (NaN or Inf reaching a layer), the input's number. */
enum qp_status qp_gptq_graph_run(const struct qp_graph *g,
                                 const struct qp_gptq_graph_opts *o,
                                 size_t *made, struct qp_error *err);

#endif
