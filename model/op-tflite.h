/* model/op-tflite.h: TFLite's operators in qprobe's graph IR (domain
 * "tflite", operator names TFLite's: "CONV_2D", ...), shared by
 * model/tflite-import.c and the operator files model/op-tflite-*.c.
 *
 * A node is prepared once, at import, from the model (formats/tflite.h):
 * its options, the quantization of every input and output, the output
 * descriptors (TFLite's shapes are static) and what its computation needs
 * (requantization multipliers and shifts derived as the runtime derives
 * them, packed weights). The state hangs on the node (qp_node.state), so
 * the plain executor runs a TFLite graph: layouts are TFLite's (NHWC;
 * weights OHWI for CONV_2D, [1,H,W,C] for DEPTHWISE_CONV_2D, [out,in] for
 * FULLY_CONNECTED, [out,H,W,in] for TRANSPOSE_CONV), integer tensors carry
 * their scale and zero point, and outputs get theirs. The four weighted
 * operators tell planners their float weight's layout (the weight_layout
 * trait), and their float kernels compute with the weight and bias they
 * are handed when those are not the graph's own constants (fake
 * quantization's dequantized weights), so a float model is quantized by
 * qprobe as an ONNX model of the same graph is.
 *
 * Arithmetic follows the flavor named at import:
 *   QP_TFL_MICRO  TFLite Micro's reference kernels (= TFLite's reference
 *                 kernels): MultiplyByQuantizedMultiplier with gemmlowp's
 *                 double rounding (SaturatingRoundingDoublingHighMul, then
 *                 RoundingDivideByPOT: ties away from zero).
 *                 Softmax, logistic and tanh of int8 in gemmlowp's fixed
 *                 point (TFLite Micro's kernels).
 *   QP_TFL_X86    TFLite's builtin x86-64 kernels (2.9, no XNNPACK): as
 *                 above except where TFLite runs ruy (CONV_2D and
 *                 FULLY_CONNECTED with 8-bit activations), whose x86
 *                 kernels round the final shift half up where gemmlowp's
 *                 RoundingDivideByPOT rounds half away from zero ("ruy
 *                 rounding", qp_tfl_ruy_scale; the high multiply rounds
 *                 alike), and the 8-bit SOFTMAX, LOGISTIC and TANH, which
 *                 TFLite's optimized kernels compute through float lookup
 *                 tables. The two flavors differ only on negative exact
 *                 ties of those convolutions (by one step) and, rarely, on
 *                 those three functions.
 * Why a flavor of the importer and not a kernels/requant.h flavor: the x86
 * difference is which kernel TFLite picks per operator (ruy for two, the
 * reference elsewhere, tables for three), not one requantization rule. */
#ifndef QP_MODEL_OP_TFLITE_H
#define QP_MODEL_OP_TFLITE_H

#include "formats/tflite.h"
#include "kernels/requant.h"
#include "model/op.h"

enum qp_tfl_flavor {
    QP_TFL_MICRO = 0, /* "tflite" (also "tflite-micro", "tflite-double") */
    QP_TFL_X86,       /* "tflite-x86" */
    QP_TFL_FLAVOR_COUNT
};

const char *qp_tfl_flavor_name(enum qp_tfl_flavor f);
bool qp_tfl_flavor_from_name(const char *name, enum qp_tfl_flavor *out);

#define QP_TFL_MAX_IO 8

/* Quantization of one activation (per tensor), or none. */
struct qp_tfl_qp {
    bool quant;
    float scale;
    int32_t zp;
};

struct qp_tfl_impl;

/* A node's prepared state. */
struct qp_tfl_node {
    const struct qp_tfl_impl *def;
    int32_t builtin;
    int index;                       /* operator index in subgraph 0 */
    enum qp_tfl_flavor flavor;
    struct qp_tfl_options opt;
    int n_in, n_out;
    struct qp_tdesc in[QP_TFL_MAX_IO];   /* as the model declares them */
    struct qp_tfl_qp qin[QP_TFL_MAX_IO];
    struct qp_tdesc out[QP_TFL_MAX_IO];
    struct qp_tfl_qp qout[QP_TFL_MAX_IO];
    int32_t act_min, act_max;        /* output clamp (fused activation) */
    void *impl;                      /* the operator's own data */
    void (*impl_free)(void *impl);
};

/* What an operator implementation provides (model/op-tflite-*.c). */
struct qp_tfl_impl {
    int32_t builtin;
    /* fills s->impl from the model (m, operator op; constant inputs are
     * m->tensors[op->in[k]].data); s's descriptors are set */
    enum qp_status (*prepare)(struct qp_tfl_node *s,
                              const struct qp_tfl_model *m,
                              const struct qp_tfl_op *op, struct qp_error *err);
    /* out[k] allocated with s->out[k]; quantization parameters are attached
     * by the caller */
    enum qp_status (*run)(const struct qp_op_ctx *c,
                          const struct qp_tfl_node *s,
                          struct qp_tensor *const *out, struct qp_error *err);
};

/* The implementation of builtin, or NULL when qprobe does not run it. */
const struct qp_tfl_impl *qp_tfl_impl_find(int32_t builtin);

/* Prepares a new state for operator op_index of m (s belongs to the
 * caller: qp_tfl_node_free). Errors name the operator. */
enum qp_status qp_tfl_node_new(const struct qp_tfl_model *m, size_t op_index,
                               enum qp_tfl_flavor flavor,
                               struct qp_tfl_node **out, struct qp_error *err);
void qp_tfl_node_free(void *s);

/* qp_fail naming the operator: "'model': operator 3 (CONV_2D): ...". */
enum qp_status qp_tfl_fail(struct qp_error *err, const struct qp_tfl_model *m,
                           const struct qp_tfl_op *op, enum qp_status st,
                           const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* ---- helpers for the operator files ------------------------------------- */

/* TFLite's padding for one spatial axis (ComputePaddingHeightWidth):
 * SAME (0) or VALID (1); returns the output size (0 when the window does
 * not fit, or the stride or dilation is not positive) and the leading
 * padding in *pad, the trailing in *pad_end. */
int64_t qp_tfl_pad(int padding, int64_t in, int64_t k, int64_t stride,
                   int64_t dilation, int64_t *pad, int64_t *pad_end);

/* The output clamp of a fused activation (CalculateActivationRangeQuantized)
 * for an output of dtype dt with parameters q, into s->act_min/act_max;
 * dtype range when q is not quantized. */
enum qp_status qp_tfl_act_range(struct qp_tfl_node *s, int act,
                                enum qp_dtype dt, const struct qp_tfl_qp *q,
                                struct qp_error *err);

/* The scaling step of ruy's x86 kernels (AVX2 / AVX-512) for shift in
 * TFLite's convention: x' = x << max(shift, 0) (int32), high =
 * (x' * M + 2^30) >> 31 in int64 (half up), then for r = max(-shift, 0) >
 * 0, (high + 2^(r-1)) >> r (half up; results that would pass 2^31 - 1
 * give 2^(31-r), as ruy's overflow guard). */
int32_t qp_tfl_ruy_scale(int32_t x, int32_t multiplier, int32_t shift);

/* QP_E_SHAPE naming the operator unless input k and output 0 have the same
 * shape (element types may differ). */
enum qp_status qp_tfl_same_shape(const struct qp_tfl_node *s,
                                 const struct qp_tfl_model *m,
                                 const struct qp_tfl_op *op, int k,
                                 struct qp_error *err);

/* A fused activation on a float value (NONE, RELU, RELU_N1_TO_1, RELU6). */
float qp_tfl_act_f32(int act, float v);

/* Copies input 0 into out[0] (same bytes; shapes may differ). */
void qp_tfl_copy(const struct qp_op_ctx *c, struct qp_tensor *const *out);

/* Integer element i of an 8/16/32-bit tensor; the store clamped to dt's
 * range. */
int32_t qp_tfl_get_int(enum qp_dtype dt, const void *p, size_t i);
void qp_tfl_put_clamped(enum qp_dtype dt, void *p, size_t i, int32_t v);

/* roundf(v) + zp as an int32_t for a later clamp to a quantized type:
 * v (a real value over a tiny output scale can exceed int32) is saturated
 * to +-2^20 first, beyond every 8/16-bit code, and a NaN is -2^20. */
int32_t qp_tfl_round_code(float v, int32_t zp);

/* Constant input k of op (int32 or int64, at most max values) into vals;
 * QP_E_UNSUPPORTED naming the input when it is not such a constant. */
enum qp_status qp_tfl_const_ints(const struct qp_tfl_model *m,
                                 const struct qp_tfl_op *op, int k,
                                 int64_t *vals, size_t max, size_t *n,
                                 struct qp_error *err);

/* Same quantization (both none, or equal scale and zero point). */
bool qp_tfl_qp_equal(const struct qp_tfl_qp *a, const struct qp_tfl_qp *b);

/* QP_E_UNSUPPORTED unless input k and output 0 have the same type and
 * quantization (operators that only move values). */
enum qp_status qp_tfl_same_q(const struct qp_tfl_node *s,
                             const struct qp_tfl_model *m,
                             const struct qp_tfl_op *op, int k,
                             struct qp_error *err);

/* Row-major element strides of d; the coordinates of element i. */
void qp_tfl_strides(const struct qp_tdesc *d, int64_t *st);
void qp_tfl_coords(const struct qp_tdesc *d, size_t i, int64_t *co);

/* The implementations (each file's table ends with builtin -1). */
extern const struct qp_tfl_impl qp_tfl_impls_conv[];
extern const struct qp_tfl_impl qp_tfl_impls_elem[];
extern const struct qp_tfl_impl qp_tfl_impls_shape[];
extern const struct qp_tfl_impl qp_tfl_impls_pool[];

#endif
