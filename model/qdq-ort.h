/* model/qdq-ort.h: the ONNX Runtime contrib operators that model/qdq.c
 * substitutes for DequantizeLinear -> op -> QuantizeLinear groups in the
 * `ort` flavor (kernels/qlinear-s8.h, kernels/softmax-s8.h), on 8-bit
 * tensors carrying their own parameters. Internal to model/. */
#ifndef QP_MODEL_QDQ_ORT_H
#define QP_MODEL_QDQ_ORT_H

#include "kernels/qlinear-s8.h"
#include "model/op.h"

enum qp_qdq_ort_op {
    QP_QDQ_ORT_ADD = 0,    /* QLinearAdd */
    QP_QDQ_ORT_MUL,        /* QLinearMul */
    QP_QDQ_ORT_AVGPOOL,    /* QLinearAveragePool */
    QP_QDQ_ORT_GAVGPOOL,   /* QLinearGlobalAveragePool */
    QP_QDQ_ORT_SOFTMAX,    /* QLinearSoftmax */
    QP_QDQ_ORT_SIGMOID,    /* QLinearSigmoid */
    QP_QDQ_ORT_LEAKY_RELU, /* QLinearLeakyRelu */
    QP_QDQ_ORT_COUNT
};

/* The op ONNX Runtime fuses node n into, or QP_QDQ_ORT_COUNT. */
enum qp_qdq_ort_op qp_qdq_ort_op_of(const struct qp_node *n);

/* The output shape of op on c's inputs (x, and x2 for the binary ops). */
enum qp_status qp_qdq_ort_shape(enum qp_qdq_ort_op op, const struct qp_op_ctx *c,
                                const struct qp_tensor *x,
                                const struct qp_tensor *x2, struct qp_tdesc *d,
                                struct qp_error *err);

/* y (8-bit, the shape above) = op(x [, x2]) with the given parameters;
 * c's node gives the attributes. */
enum qp_status qp_qdq_ort_run(enum qp_qdq_ort_op op, const struct qp_op_ctx *c,
                              const struct qp_tensor *x, struct qp_qlin_side sx,
                              const struct qp_tensor *x2, struct qp_qlin_side sx2,
                              struct qp_qlin_side sy, struct qp_tensor *y,
                              struct qp_error *err);

#endif
