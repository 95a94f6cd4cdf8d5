/* analysis/export-ort.h: a recipe as the arguments of
 * onnxruntime.quantization.quantize_static.
 *
 * The document (JSON):
 *   { "activation_type": "QUInt8", "weight_type": "QInt8",
 *     "per_channel": true,          <- the recipe's default scheme
 *     "nodes_to_exclude": [...],    <- nodes of "fp32" rules
 *     "TensorQuantOverrides": { TENSOR: [ {...}, ... ], ... } }
 * TensorQuantOverrides follows onnxruntime/python/tools/quantization/
 * tensor_quant_overrides.py (TensorQuantOverridesHelper and its checks):
 * one list per tensor, a single dict for a per-tensor override and one
 * dict per channel (the first with "axis") for a per-channel weight; keys
 * "quant_type" (a QuantType name: QInt8, QUInt8, QInt16, QUInt16, QInt4,
 * QUInt4), "symmetric", "axis", and, when the plan has them (a model and
 * calibration inputs), "scale" and "zero_point" (which exclude
 * "symmetric", as that file requires), so that quantize_static uses
 * qprobe's parameters instead of calibrating its own. A weight folded
 * with a BatchNormalization (qprobe's "W:bn") gets its type only: its
 * scales belong to the folded tensor, which quantize_static does not see
 * under that name. Only tensors a recipe rule decides are listed; the
 * default goes to activation_type / weight_type / per_channel. With a
 * plan, a tensor whose consumers compute at another precision gets
 * {"convert": {"quant_type": ..., "recv_nodes": [...]}} as ONNX
 * Runtime's mixed-precision fixer writes them (analysis/export-qdq.h's
 * converts; at most one converted type per tensor, as ONNX Runtime
 * allows). QuantType values are strings in JSON: the Python snippet of
 * `qprobe export --help` turns them into QuantType members. */
#ifndef QP_ANALYSIS_EXPORT_ORT_H
#define QP_ANALYSIS_EXPORT_ORT_H

#include <stddef.h>

#include "model/session.h"

/* The document for recipe r over s's graph, with the parameters of plan p
 * when p is non-NULL (a fake-mode plan of r), written to path; a one-line
 * summary into summary. QP_E_UNSUPPORTED names a tensor whose scheme has
 * no QuantType, or a tensor that would need two converted types. */
enum qp_status qp_export_ort_overrides(const struct qp_session *s,
                                       const struct qp_qplan *p,
                                       const struct qp_recipe *r, bool convert,
                                       const char *path, char *summary,
                                       size_t size, struct qp_error *err);

#endif
