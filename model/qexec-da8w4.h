/* model/qexec-da8w4.h: the int mode's 8da4w plan, ExecuTorch's XNNPACK
 * path for LLM linear layers: a scheme of int4 group-wise symmetric
 * weights and 8-bit asymmetric dynamic activations (`w4g32+a8dz`, alias
 * `8da4w`) runs every Linear (qprobe domain) of int4 group-wise weights on
 * kernels/gemm-qd8.h, which quantizes its float input per row inside the
 * product; every other value stays float, as in ExecuTorch (norms,
 * attention, SwiGLU, the residual stream); embeddings and other weights
 * the recipe quantizes run weight-only (model/op.h's QP_TRAIT_QWEIGHT).
 * Internal to model/. */
#ifndef QP_MODEL_QEXEC_DA8W4_H
#define QP_MODEL_QEXEC_DA8W4_H

#include "model/qplan.h"

/* True when the plan's quantized activations are dynamic (its int mode is
 * the 8da4w plan). */
bool qp_da8w4_plan(const struct qp_qplan *p);

/* Marks the 8da4w nodes (QP_QK_DA8W4) and leaves every value float;
 * QP_E_UNSUPPORTED naming the value or layer for what the plan cannot run
 * (static activations beside dynamic ones, activations other than 8-bit
 * asymmetric, a layer of quantized input whose weight is not int4
 * group-wise symmetric, a weighted operator that does not take integer
 * weights). Called by qp_qplan_resolve in the int mode. */
enum qp_status qp_da8w4_resolve(struct qp_qplan *p, struct qp_error *err);

/* Prepares node i's weight for kernels/gemm-qd8.h (q->qb4w). */
enum qp_status qp_da8w4_prepare(struct qp_qplan *p, int i, struct qp_error *err);

/* Runs 8da4w node c: out[0] a new float tensor. */
enum qp_status qp_da8w4_run(const struct qp_qplan *p, const struct qp_op_ctx *c,
                            struct qp_tensor **out, struct qp_error *err);

#endif
