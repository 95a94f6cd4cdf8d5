/* model/wlayout.h: which axis of each weight is the output channel, read
 * from the model's graph: the operator that reads a tensor as its weight
 * says (the weight_layout trait of model/op.h: Conv OIHW, ConvTranspose
 * IOHW, MatMul [in, out], Gemm by transB). PaddlePaddle exports MatMul
 * weights as [in, out], so a per-channel scheme that assumed [out, in]
 * would scale the wrong axis. */
#ifndef QP_MODEL_WLAYOUT_H
#define QP_MODEL_WLAYOUT_H

#include "core/strmap.h"
#include "model/graph.h"

/* For every weighted node of g: its weight's value name -> layout (enum
 * qp_wlayout) in *out (initialized by the caller). A weight read in two
 * layouts is left out. */
enum qp_status qp_graph_weight_layouts(const struct qp_graph *g,
                                       struct qp_strmap *out,
                                       struct qp_error *err);

/* The same from the ONNX model at path, imported as it is (no folding, so
 * names are the file's). */
enum qp_status qp_onnx_weight_layouts(const char *path, struct qp_strmap *out,
                                      struct qp_error *err);

#endif
