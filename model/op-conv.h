/* model/op-conv.h: the ONNX window geometry (strides, dilations, pads,
 * auto_pad, ceil_mode) that Conv and the pooling operators share. */
#ifndef QP_MODEL_OP_CONV_H
#define QP_MODEL_OP_CONV_H

#include "kernels/conv-f32.h"
#include "kernels/conv-s8.h"
#include "model/op.h"

enum qp_window_kind { QP_WINDOW_CONV, QP_WINDOW_POOL };

/* Fills g's spatial fields (nsp, in, out, kernel, stride, dilation, pad,
 * pad_end) from the node's attributes for input extents in[nsp]:
 * auto_pad SAME_UPPER / SAME_LOWER / VALID / NOTSET with pads, and for
 * pooling ceil_mode. Batch and channels are left to the caller. */
enum qp_status qp_window_geom(const struct qp_op_ctx *c, const int64_t *in,
                              int nsp, const int64_t *kernel,
                              enum qp_window_kind kind,
                              struct qp_conv_nd *g, struct qp_error *err);

/* The whole geometry of Conv node c (not ConvTranspose) on its inputs
 * c->in (x, w, optional bias: float, shapes checked): batch, channels,
 * groups and the window. Errors name the node. */
enum qp_status qp_op_conv_geom(const struct qp_op_ctx *c, struct qp_conv_nd *g,
                               struct qp_error *err);

/* True when node n is an ONNX Conv or ConvTranspose. */
bool qp_op_is_conv(const struct qp_node *n);

/* Runs Conv or ConvTranspose node c (f32; its inputs in c->in) into y,
 * allocated with the shape its infer gives, handing every finished range
 * of y to epi (NULL: none) as kernels/conv-f32.h describes. */
enum qp_status qp_op_conv_run(const struct qp_op_ctx *c, struct qp_tensor *y,
                              const struct qp_conv_epilogue *epi,
                              struct qp_error *err);

/* The 1-D or 2-D geometry nd as kernels/conv-s8.h's (1-D: height 1). */
void qp_conv_nd_to_s8(const struct qp_conv_nd *nd, struct qp_conv_geom *g);

#endif
