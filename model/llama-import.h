/* model/llama-import.h: a Hugging Face Llama-family model folder as a graph.
 *
 * The folder holds config.json (model/llama-config.h) and the weights:
 * model.safetensors, or shards listed by model.safetensors.index.json, in
 * F32, F16 or BF16. Weights stay in the mapped files in their stored dtype
 * (the graph's constants borrow them; the operators convert tiles as they
 * multiply), so loading costs no memory beyond the mapping.
 *
 * The graph (operators of model/op-llm.h, plus ONNX Add for the residual
 * connections) takes "input_ids" (int32 or int64, [T] for one sequence or
 * [B, T] for a batch of equal-length sequences) and gives "lm_head", the
 * logits [.., T, vocab]. Values carry Hugging Face's module names, so a
 * capture aligns with PyTorch forward hooks without a map:
 *
 *   model.embed_tokens
 *   model.layers.N.input_layernorm
 *   model.layers.N.self_attn.{q,k,v}_proj        (before RoPE)
 *   model.layers.N.self_attn.attention           (attention output, o_proj's
 *                                                 input; no HF module)
 *   model.layers.N.self_attn.o_proj
 *   model.layers.N.attn_residual                 (x + o_proj; no HF module)
 *   model.layers.N.post_attention_layernorm
 *   model.layers.N.mlp.{gate,up}_proj
 *   model.layers.N.mlp.swiglu                    (silu(gate) * up, down_proj's
 *                                                 input; no HF module)
 *   model.layers.N.mlp.down_proj
 *   model.layers.N                               (residual stream after the block)
 *   model.norm
 *   lm_head
 *
 * Weights keep their checkpoint names (model.layers.N.self_attn.q_proj.weight,
 * ...), so recipes address layers as "*.down_proj" or "lm_head". The
 * rotary frequencies are the constant "model.rotary_emb.inv_freq". With
 * tie_word_embeddings the head reads the embedding table's bytes under the
 * name "lm_head.weight" (a second constant over the same mapped data), so
 * that the head and the embedding can get different schemes. */
#ifndef QP_MODEL_LLAMA_IMPORT_H
#define QP_MODEL_LLAMA_IMPORT_H

#include <stdbool.h>

#include "model/graph.h"
#include "model/llama-config.h"

/* True when path is a directory holding a config.json. */
bool qp_llama_is_model_dir(const char *path);

/* Loads the model folder dir. *g (finalized) belongs to the caller
 * (qp_graph_free); cfg (may be NULL) receives the config. Errors name the
 * folder or file: QP_E_UNSUPPORTED for another architecture or a weight
 * dtype other than F32/F16/BF16, QP_E_SHAPE for a tensor whose shape
 * differs from what config.json implies, QP_E_NOTFOUND for a missing
 * tensor, QP_E_IO for a missing shard, QP_E_FORMAT for malformed files or
 * tensors of layers the config does not have. */
enum qp_status qp_llama_load(const char *dir, struct qp_graph **g,
                             struct qp_llama_config *cfg, struct qp_error *err);

/* The graph's input and output names. */
#define QP_LLAMA_INPUT "input_ids"
#define QP_LLAMA_OUTPUT "lm_head"

#endif
