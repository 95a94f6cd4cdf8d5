/* analysis/export-qdq.h: a session's plan as a QDQ ONNX model, the form
 * onnxruntime.quantization.quantize_static writes and ONNX Runtime, QNN,
 * TensorRT and OpenVINO load.
 *
 * The model is the session's graph (Conv + BatchNormalization folded as
 * qprobe runs it, constant subgraphs folded), written at the opset the
 * parameters need (analysis/export-opset.h converts the nodes):
 *   the model's own, at least 10 (QuantizeLinear); 13 when a weight or a
 *   bias is per channel (axis); 21 when a tensor is 4- or 16-bit.
 * What the plan quantizes becomes, with quantize_static's names
 * (onnxruntime/python/tools/quantization: qdq_quantizer.py,
 * quant_utils.py's suffixes):
 *   weights   an integer initializer W_quantized (int8 / uint8 for 5 to
 *             8 bits: w7c is ONNX Runtime's reduce_range [-64, 63], whose
 *             uint8 x int8 sums cannot saturate on x86 without VNNI;
 *             int4 / uint4 packed for 4, int16 / uint16 for 16)
 *             with W_scale and W_zero_point (per tensor, or per output
 *             channel with axis: Conv 0, MatMul 1, Gemm by transB,
 *             ConvTranspose 1) and a DequantizeLinear W_DequantizeLinear
 *             making W_DequantizeLinear_Output; no QuantizeLinear (the
 *             default of quantize_static);
 *   biases    of a layer whose input is quantized: an int32 initializer
 *             B_quantized, the plan's integers (qprobe rounds bias / (s_in
 *             * s_w[c]) half away from zero), with scale
 *             float32(s_in * s_w[c]) and zero point 0, through a
 *             DequantizeLinear (axis 0 when per channel);
 *   activations  every value the plan quantizes (graph inputs and node
 *             outputs calibration saw as float, moved values with their
 *             input's parameters) gets one QuantizeLinear T_QuantizeLinear
 *             -> T_QuantizeLinear_Output -> DequantizeLinear
 *             T_DequantizeLinear -> T_DequantizeLinear_Output after its
 *             producer, which every consumer reads (a graph output keeps
 *             its name: the producer writes T_QuantizeLinear_Input and
 *             the DequantizeLinear writes T), with scale T_scale and zero
 *             point T_zero_point of the calibrated parameters (uint8 for
 *             'z' schemes, int8, int16 / uint16 for 16 bits).
 * So the fp32 run of the exported model computes what qprobe's fake mode
 * computes on the original (the same weights, biases on the same grid,
 * the same activation quantizer: ONNX's x / s rounded half to even), and
 * ONNX Runtime fuses DequantizeLinear -> op -> QuantizeLinear groups into
 * its integer operators, which qprobe's `run --mode int --requant ort`
 * reproduces (model/qdq.h).
 *
 * Mixed precision (a recipe): with convert, a consumer that computes at
 * another activation type than a value it reads (its own quantized output
 * has another type) reads a converted copy, T -> Q -> DQ ->
 * T_convert_QuantizeLinear -> T_convert_DequantizeLinear, whose
 * parameters cover the value's own quantized range at the consumer's
 * format: ONNX Runtime's "convert" overrides (tensor_quant_overrides.py)
 * as its MixedPrecisionTensorQuantOverridesFixer places them, so each
 * operator sees one type in and out. Without convert, every consumer
 * reads the value at its own precision, which is exactly qprobe's fake
 * mode (the default there).
 *
 * Refused, naming the tensor: weight schemes ONNX has no type for (2 and 3
 * bits; ggml block types), group-wise weights (opset 21's blocked
 * DequantizeLinear is not written), dynamic or narrow-range activations,
 * activations of other than 8 or 16 bits, models that carry their own
 * quantization, and nodes that have no form at the opset needed. */
#ifndef QP_ANALYSIS_EXPORT_QDQ_H
#define QP_ANALYSIS_EXPORT_QDQ_H

#include <stdbool.h>
#include <stddef.h>

#include "formats/onnx-write.h"
#include "model/session.h"

struct qp_export_qdq_opts {
    bool convert;          /* DQ -> Q converts at precision boundaries */
    const char *note;      /* what made the plan (metadata "qprobe.plan") */
    struct qp_onnx_save_opts save;
};

struct qp_export_qdq_stats {
    int opset;             /* the exported model's */
    size_t weights;        /* weights quantized */
    size_t biases;         /* int32 biases */
    size_t activations;    /* activation QuantizeLinear -> DequantizeLinear pairs */
    size_t converts;       /* converted copies */
    size_t nodes;          /* nodes written */
    /* weights in int8 beyond +-64 that read uint8 activations: ONNX
     * Runtime on x86 without VNNI (AVX2, AVX-512 BW) multiplies them with
     * vpmaddubsw, which adds two adjacent products into an int16 with
     * saturation, so its integers there may differ from the exact sums
     * (`run --mode int --requant ort`); 7-bit weights cannot saturate */
    size_t u8s8_wide;
    struct qp_onnx_save_stats save;
};

/* The ONNX tree of plan p (fake mode, the ort flavor's rounding, finished)
 * over the graph of session s (the model at qp_session_path(s), whose
 * value types, opset imports and metadata are kept). *out belongs to the
 * caller (qp_onnx_model_free); it borrows the plan's and the graph's
 * tensors, so it must be freed before them. stats may be NULL. */
enum qp_status qp_export_qdq_build(const struct qp_session *s,
                                   const struct qp_qplan *p,
                                   const struct qp_export_qdq_opts *o,
                                   struct qp_onnx_model **out,
                                   struct qp_export_qdq_stats *stats,
                                   struct qp_error *err);

/* The activation format node i of p's graph computes at: its first own
 * (not inherited) quantized output's, or NULL (a float node, or one that
 * only moves values). */
const struct qp_qval *qp_export_node_format(const struct qp_qplan *p, int i);

/* True when node i, reading quantized value v, computes at another
 * activation type (storage dtype or bits): with converts it reads a copy
 * at *to (its node format). */
bool qp_export_needs_convert(const struct qp_qplan *p, int i, int v,
                             const struct qp_qval **to);

/* The parameters of v's converted copy at format `to`: the same real
 * range as v's own quantized grid, [s (qmin - zp), s (qmax - zp)], at the
 * new format, zero point rounded as p rounds. */
void qp_export_convert_params(const struct qp_qplan *p, const struct qp_qval *v,
                              const struct qp_qval *to, float *scale,
                              int32_t *zp);

/* qp_export_qdq_build, then qp_onnx_save to path (atomically; external
 * data per o->save). */
enum qp_status qp_export_qdq(const struct qp_session *s,
                             const struct qp_qplan *p, const char *path,
                             const struct qp_export_qdq_opts *o,
                             struct qp_export_qdq_stats *stats,
                             struct qp_error *err);

#endif
