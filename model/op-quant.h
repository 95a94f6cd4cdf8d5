/* model/op-quant.h: the integer convolution and matrix product behind
 * QLinearConv, QLinearMatMul, ConvInteger and MatMulInteger, with every
 * quantity explicit, for the int mode of QDQ models (model/qdq.c), which
 * runs them in another requantization flavor than ONNX's reference. */
#ifndef QP_MODEL_OP_QUANT_H
#define QP_MODEL_OP_QUANT_H

#include "kernels/requant.h"
#include "model/op.h"

struct qp_qlin {
    const struct qp_tensor *x, *w; /* 8-bit. conv: x [N,C,(H,)W], w [OC,C/g,..];
                                      matmul: x [..,M,K], w [..,K,N] */
    const int32_t *bias;           /* [out channels] or NULL */
    int32_t x_zp;
    const int32_t *w_zp;           /* NULL: 0; else n_wzp (1 or channels) */
    size_t n_wzp;
    const struct qp_rq *rq;        /* NULL: int32 accumulators out */
};

/* Output shapes (dtype left to the caller). */
enum qp_status qp_qlin_conv_shape(const struct qp_op_ctx *c,
                                  const struct qp_tensor *x,
                                  const struct qp_tensor *w, struct qp_tdesc *out,
                                  struct qp_error *err);
enum qp_status qp_qlin_matmul_shape(const struct qp_op_ctx *c,
                                    const struct qp_tensor *a,
                                    const struct qp_tensor *b,
                                    struct qp_tdesc *out, struct qp_error *err);

/* y (allocated with the shape above and the rq's dtype, or int32) from q;
 * a convolution reads its attributes (Conv's) from c's node. */
enum qp_status qp_qlin_conv(const struct qp_op_ctx *c, const struct qp_qlin *q,
                            struct qp_tensor *y, struct qp_error *err);
enum qp_status qp_qlin_matmul(const struct qp_op_ctx *c, const struct qp_qlin *q,
                              struct qp_tensor *y, struct qp_error *err);

/* A QLinearConv / QLinearMatMul / ConvInteger / MatMulInteger node on its
 * inputs with the QLinear forms requantized in flavor f. */
enum qp_status qp_qlin_node_run(const struct qp_op_ctx *c, enum qp_rq_flavor f,
                                struct qp_tensor *const *out,
                                struct qp_error *err);

/* y = a + b the way TFLite's integer Add computes it (kernels/add-s8.h,
 * parameters derived as TFLite does, left shift 20), a and b (8-bit, one
 * dtype with y) broadcast to y's shape, each with its scale and zero
 * point. *done is false (and nothing written) when flavor f has no
 * integer add (the float flavors: their runtimes add dequantized values). */
struct qp_qside {
    float scale;
    int32_t zp;
};
enum qp_status qp_qadd(const struct qp_op_ctx *c, enum qp_rq_flavor f,
                       const struct qp_tensor *a, struct qp_qside qa,
                       const struct qp_tensor *b, struct qp_qside qb,
                       struct qp_qside qy, struct qp_tensor *y, bool *done,
                       struct qp_error *err);

/* t's bytes (1-byte elements) broadcast to shape d, into dst
 * (qp_tdesc_numel(d) bytes). */
void qp_spread8(const struct qp_tensor *t, const struct qp_tdesc *d,
                uint8_t *dst);

#endif
