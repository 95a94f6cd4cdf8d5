/* model/synth-llama.h: synthetic Llama-family checkpoints from a Hugging
 * Face config.json, for benchmarks and scale tests (build/bench/synth-llama;
 * never committed). Random weights, streamed to disk tensor by tensor in
 * chunks, so an 8B-shaped model (16 GB BF16) is written with a few MB of
 * memory.
 *
 * The folder holds a verbatim copy of config.json, the weights as
 * model.safetensors or, with K > 1 shards, model-0000i-of-0000K.safetensors
 * plus model.safetensors.index.json ({"metadata": {"total_size": bytes},
 * "weight_map": {name: shard}}), and tokenizer files when asked. Tensors
 * carry HF's names and shapes (out x in for linear layers):
 *   model.embed_tokens.weight            [vocab, hidden]
 *   model.layers.N.self_attn.{q,k,v,o}_proj.weight (+ .bias on q/k/v for
 *     qwen2; on q/k/v/o for attention_bias true)
 *   model.layers.N.mlp.{gate,up,down}_proj.weight (+ .bias for mlp_bias)
 *   model.layers.N.{input,post_attention}_layernorm.weight  [hidden]
 *   model.norm.weight, lm_head.weight (unless tie_word_embeddings)
 *
 * Values (element i of a tensor depends only on the seed, the tensor's
 * name and i, so sharding and thread count never change them):
 *   embeddings       normal, std 0.02
 *   linear weights   normal, std 1/sqrt(in_features)
 *   biases           normal, std 0.02
 *   norm weights     1 + normal(std 0.02)
 * and outliers in every layer N with N % 4 == 1 ("outlier layers"), so
 * that quantization is not trivial: in mlp.down_proj.weight
 * QP_SYNTH_OUTLIERS(in) evenly spaced input columns are scaled by
 * QP_SYNTH_OUTLIER_SCALE, and in post_attention_layernorm.weight
 * QP_SYNTH_OUTLIERS(hidden) evenly spaced channels hold
 * QP_SYNTH_OUTLIER_NORM (+ the same small noise). */
#ifndef QP_MODEL_SYNTH_LLAMA_H
#define QP_MODEL_SYNTH_LLAMA_H

#include <stdint.h>

#include "core/dtype.h"
#include "core/progress.h"
#include "core/status.h"

#define QP_SYNTH_OUTLIERS(n) ((n) / 512 > 2 ? (n) / 512 : 2)
#define QP_SYNTH_OUTLIER_SCALE 16.0
#define QP_SYNTH_OUTLIER_NORM 8.0

struct qp_synth_opts {
    uint64_t seed;
    int shards;            /* 1: one file; K > 1: K shards and an index */
    enum qp_dtype dtype;   /* BF16, F16 or F32; QP_DTYPE_COUNT: the
                              config's torch_dtype, else BF16 */
    const char *tokenizer; /* NULL, a tokenizer.json (copied as such), or a
                              folder whose tokenizer.json (required),
                              tokenizer_config.json and
                              generation_config.json are copied */
    int threads;           /* <= 0: qp_parallel_threads() */
    const struct qp_progress *progress; /* bytes written, label "synth" */
};

/* Options with seed 1, one shard, the config's dtype, no tokenizer. */
struct qp_synth_opts qp_synth_opts_default(void);

/* Writes the checkpoint of config_path (model_type llama, mistral or
 * qwen2; hidden_size, intermediate_size, num_hidden_layers,
 * num_attention_heads, vocab_size required; num_key_value_heads, head_dim,
 * tie_word_embeddings, attention_bias, mlp_bias, torch_dtype optional) into
 * the folder outdir, which appears whole or not at all (an existing folder
 * is replaced). QP_E_FORMAT / QP_E_UNSUPPORTED name the config and the key;
 * QP_E_INVAL for bad options (shards < 1 or more shards than tensors, a
 * dtype other than BF16/F16/F32); QP_E_IO names the file. */
enum qp_status qp_synth_llama_write(const char *config_path, const char *outdir,
                                    const struct qp_synth_opts *opts,
                                    struct qp_error *err);

/* What qp_synth_llama_write would write, without writing it: the number
 * of tensors and their total data bytes (the index's total_size). The
 * same errors for the config and options. */
enum qp_status qp_synth_llama_size(const char *config_path,
                                   const struct qp_synth_opts *opts,
                                   size_t *tensors, uint64_t *bytes,
                                   struct qp_error *err);

#endif
