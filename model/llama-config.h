/* model/llama-config.h: the config.json of a Hugging Face Llama-family
 * model folder (Llama 2/3/3.1/3.2, SmolLM, Mistral, Qwen2/2.5), and the
 * rotary frequencies it implies.
 *
 * Read keys (transformers' names): architectures, model_type, hidden_size,
 * intermediate_size, num_hidden_layers, num_attention_heads,
 * num_key_value_heads (default: the head count), head_dim (default
 * hidden_size / heads), vocab_size, max_position_embeddings, rms_norm_eps,
 * rope_theta (default 10000), rope_scaling ({"rope_type" or legacy "type":
 * "default", "linear" with factor, "llama3" with factor, low_freq_factor,
 * high_freq_factor, original_max_position_embeddings}), tie_word_embeddings
 * (default false), attention_bias (llama: q/k/v/o biases), mlp_bias,
 * hidden_act (must be silu), bos_token_id, eos_token_id (a number or a
 * list: the first), torch_dtype, sliding_window (mistral; null or absent:
 * none), use_sliding_window (qwen2; true is refused). Qwen2 always has
 * q/k/v biases and no o_proj bias. Other architectures are refused naming
 * architectures and model_type. */
#ifndef QP_MODEL_LLAMA_CONFIG_H
#define QP_MODEL_LLAMA_CONFIG_H

#include <stdbool.h>
#include <stdint.h>

#include "core/dtype.h"
#include "core/status.h"

enum qp_llama_family {
    QP_LLAMA_LLAMA = 0, /* model_type llama (also SmolLM) */
    QP_LLAMA_MISTRAL,
    QP_LLAMA_QWEN2,
    QP_LLAMA_FAMILY_COUNT
};

enum qp_rope_type {
    QP_ROPE_DEFAULT = 0,
    QP_ROPE_LINEAR,
    QP_ROPE_LLAMA3,
    QP_ROPE_TYPE_COUNT
};

struct qp_llama_config {
    enum qp_llama_family family;
    char model_type[32];
    char arch[64];           /* architectures[0], or "" */
    int64_t hidden, intermediate, n_layers, n_heads, n_kv_heads, head_dim;
    int64_t vocab, max_pos;  /* max_pos 0 when the config does not say */
    double rms_eps, rope_theta;
    enum qp_rope_type rope;
    double rope_factor, rope_low, rope_high; /* llama3 / linear parameters */
    int64_t rope_orig_max;   /* llama3's original_max_position_embeddings */
    bool tie;                /* tie_word_embeddings */
    bool qkv_bias, o_bias, mlp_bias;
    int64_t bos_id, eos_id;  /* -1 when absent */
    int64_t sliding_window;  /* 0: none */
    enum qp_dtype dtype;     /* torch_dtype; QP_DTYPE_COUNT when absent */
};

/* Parses config.json text; `what` names it in messages ("'dir/config.json'").
 * QP_E_FORMAT for malformed JSON, missing or ill-typed keys, and sizes
 * that do not fit (heads not dividing, hidden not a multiple of heads
 * without head_dim, odd head_dim, sizes over 2^31); QP_E_UNSUPPORTED for
 * another architecture (naming architectures and model_type), another
 * rope_scaling type, another hidden_act or a sliding window Qwen2 uses. */
enum qp_status qp_llama_config_parse(const char *text, const char *what,
                                     struct qp_llama_config *cfg,
                                     struct qp_error *err);

/* Reads and parses path (a config.json file). */
enum qp_status qp_llama_config_load(const char *path,
                                    struct qp_llama_config *cfg,
                                    struct qp_error *err);

/* The rotary inverse frequencies, out[head_dim / 2], as transformers
 * computes them in float32 (model.rotary_emb.inv_freq): 1 / theta^(2i/d)
 * with torch's float32 operation order, then the rope_scaling rule. */
void qp_llama_inv_freq(const struct qp_llama_config *cfg, float *out);

/* "llama", "mistral", "qwen2". */
const char *qp_llama_family_name(enum qp_llama_family f);

#endif
