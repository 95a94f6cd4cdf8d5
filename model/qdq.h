/* model/qdq.h: the int mode of a model that carries its own quantization
 * (QuantizeLinear / DequantizeLinear nodes around float operators, or
 * QLinearConv / QLinearMatMul), run with its own parameters the way ONNX
 * Runtime's CPU provider fuses it (DESIGN.md §3), in a chosen
 * requantization flavor:
 *
 *   DQ(x) -> Conv(DQ(w) [, bias]) -> Q    an integer convolution (1-D/2-D)
 *   DQ(x) -> MatMul(DQ(w) or DQ(y)) -> Q  an integer matrix product
 *   DQ(a) + DQ(b) -> Q                    TFLite's integer add (fixed-point
 *                                          flavors)
 *   QLinearConv, QLinearMatMul            requantized in the flavor instead
 *                                          of ONNX's reference rule
 *
 * In the `ort` flavor the groups and their arithmetic are ONNX Runtime's
 * own (1.20, x86-64 with AVX2/FMA; model/qdq-ort.h, kernels/qlinear-s8.h,
 * kernels/softmax-s8.h), checked bit for bit against the pinned
 * onnxruntime-node: Conv and MatMul (a Conv's bias only as DQ of int32),
 * Add and Mul (QLinearAdd / QLinearMul), AveragePool and
 * GlobalAveragePool, Softmax (its lookup table of exponentials), Sigmoid
 * and LeakyRelu (lookup tables), each only with uint8 activations of one
 * type in and out: ONNX Runtime on x86 leaves groups with int8 activations
 * in float (DQ -> op -> Q), and so does this mode. Concat, MaxPool and the
 * operators that move values need no fusion: their float path gives ONNX
 * Runtime's integers.
 *
 * DQ and Q have per-tensor constant parameters (per-channel for the
 * weight's DQ); a bias is DQ of an int32 constant (ORT's convention) or,
 * outside `ort`, a float constant (rounded to the int32 grid of x_scale *
 * w_scale). The fused node's output is the integer result dequantized
 * with the Q's parameters, so the Q after it gives back exactly those
 * integers and every other node runs as in fp32 (Q and DQ included). */
#ifndef QP_MODEL_QDQ_H
#define QP_MODEL_QDQ_H

#include "kernels/requant.h"
#include "model/exec.h"

/* True when g has QuantizeLinear, DequantizeLinear or QLinear nodes. */
bool qp_qdq_model(const struct qp_graph *g);

struct qp_qdq;

/* Finds the fusable patterns of g (borrowed; must outlive the result).
 * *out belongs to the caller (qp_qdq_free). */
enum qp_status qp_qdq_new(const struct qp_graph *g, enum qp_rq_flavor f,
                          struct qp_qdq **out, struct qp_error *err);
void qp_qdq_free(struct qp_qdq *q);

/* Nodes the int mode runs fused (integer kernels). */
int qp_qdq_fused(const struct qp_qdq *q);

void qp_qdq_hooks(struct qp_qdq *q, struct qp_exec_hooks *h);

#endif
