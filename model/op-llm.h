/* model/op-llm.h: the operators of LLM graphs (model/llama-import.h builds
 * them), in the "qprobe" domain. Internal to model/: op-llm.c holds the
 * table (qp_ops_llm, model/op.h) and the small operators; Linear and
 * Attention live in their own files and export their functions here.
 *
 *   Embedding(ids, table)       ids int32/int64 [...], table [vocab, hidden]
 *                               -> [..., hidden] f32: the rows of ids
 *   RMSNorm(x, w) epsilon       x [..., h], w [h] -> w * (x / sqrt(mean(x^2)
 *                               + eps)), Hugging Face's LlamaRMSNorm
 *   Linear(x, W, b?)            x [..., in], W [out, in] -> x W^T (+ b)
 *   SwiGLU(gate, up)            silu(gate) * up, elementwise
 *   Attention(q, k, v, inv_freq) num_heads, num_kv_heads, layer, window:
 *                               RoPE (rotate-half) on q and k, grouped-query
 *                               causal softmax attention, per sequence of
 *                               [T, F] or [B, T, F]; with a KV cache in
 *                               qp_op_ctx.state (model/kvcache.h)
 *
 * Tables (Embedding) and weights (Linear) may be float32, bfloat16, float16
 * or integer tensors with quantization parameters (kernels/gemm-wq.h):
 * both have the QP_TRAIT_QWEIGHT trait. */
#ifndef QP_MODEL_OP_LLM_H
#define QP_MODEL_OP_LLM_H

#include "model/op.h"

#define QP_LLM_DOMAIN "qprobe"

/* Linear (model/op-llm-linear.c). */
enum qp_status qp_llm_linear_infer(const struct qp_op_ctx *c,
                                   struct qp_tdesc *out, struct qp_error *err);
enum qp_status qp_llm_linear_run(const struct qp_op_ctx *c,
                                 struct qp_tensor *const *out,
                                 struct qp_error *err);
uint64_t qp_llm_linear_macs(const struct qp_node *n,
                            const struct qp_tdesc *const *in,
                            const struct qp_tdesc *out);

/* Attention (model/op-llm-attn.c). */
extern const struct qp_attr_spec qp_llm_attn_attrs[];
enum qp_status qp_llm_attn_check(const struct qp_op_ctx *c, struct qp_error *err);
enum qp_status qp_llm_attn_infer(const struct qp_op_ctx *c, struct qp_tdesc *out,
                                 struct qp_error *err);
enum qp_status qp_llm_attn_run(const struct qp_op_ctx *c,
                               struct qp_tensor *const *out,
                               struct qp_error *err);
uint64_t qp_llm_attn_macs(const struct qp_node *n,
                          const struct qp_tdesc *const *in,
                          const struct qp_tdesc *out);

/* Rows of a [..., F] descriptor (the product of every dim but the last;
 * 1 for rank 1). */
size_t qp_llm_rows(const struct qp_tdesc *d);

/* A 1-D float tensor of any float dtype read as f32 into out[n]. */
void qp_llm_read_vec(const struct qp_tensor *t, float *out, size_t n);

#endif
