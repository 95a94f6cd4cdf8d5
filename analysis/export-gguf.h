/* analysis/export-gguf.h: a Hugging Face Llama-family folder as a GGUF v3
 * file llama.cpp loads (`qprobe export DIR --scheme S | --recipe R --to
 * gguf -o OUT.gguf`), its weights in the ggml types the scheme or recipe
 * decides, quantized by ggml's reference code (quant/ggml-quant.h).
 *
 * What is written, as llama.cpp's convert_hf_to_gguf.py writes a
 * LlamaForCausalLM / MistralForCausalLM checkpoint (architecture "llama"):
 *   general.architecture "llama", general.name (the folder's name),
 *   general.quantization_version 2;
 *   llama.context_length (max_position_embeddings, 2048 when absent),
 *   embedding_length, block_count, feed_forward_length,
 *   attention.head_count, attention.head_count_kv,
 *   attention.layer_norm_rms_epsilon, attention.key_length and
 *   value_length (head_dim), rope.dimension_count (head_dim),
 *   rope.freq_base, vocab_size; rope_scaling "linear" as
 *   rope.scaling.type "linear" + rope.scaling.factor, "llama3" as the
 *   tensor rope_freqs.weight (F32, head_dim / 2 frequency divisors computed
 *   in double from factor, low/high_freq_factor and
 *   original_max_position_embeddings, as the converter does);
 *   tokenizer.ggml.model ("gpt2" for byte-level BPE with
 *   tokenizer.ggml.merges "left right"; "llama" for SentencePiece-style BPE
 *   with tokenizer.ggml.scores), tokenizer.ggml.pre (formats/tokenizer.h's
 *   name), tokens and token_type for every id below the embedding's rows
 *   (ids the tokenizer lacks as "[PADn]", type unused),
 *   bos/eos/unknown/padding_token_id when the tokenizer has them,
 *   add_bos_token / add_eos_token.
 * Tensors: llama.cpp's names (analysis/export-llm.h's map) with ne = the
 * torch shape reversed; norms (and rope_freqs) F32; the q_proj / k_proj
 * rows permuted per head from Hugging Face's rotate-half order to ggml's
 * interleaved rope order (row h*d + 2i + j takes row h*d + j*d/2 + i, with
 * the key-value head count for k_proj), which leaves each row's blocks
 * unchanged. A tied head is token_embd alone when the head gets the
 * embedding's type; otherwise output.weight is written too.
 *
 * Types: each weight gets the ggml type of its scheme (q8_0, q4_0, q4_1,
 * q5_0, q4_k, q6_k), or float_type (f32, f16 or bf16) when it stays float.
 * A row that does not divide into the type's blocks gets llama.cpp's
 * fallback type (qp_ggml_fallback), reported in the result's notes. Other
 * weight schemes are refused naming the tensor and the nearest ggml type;
 * so are activation schemes (GGUF holds weights only), other families
 * (qwen2) and biases. The file appears only when complete. */
#ifndef QP_ANALYSIS_EXPORT_GGUF_H
#define QP_ANALYSIS_EXPORT_GGUF_H

#include "analysis/export.h"
#include "core/ggml-block.h"
#include "model/graph.h"
#include "model/llama-config.h"
#include "model/qassign.h"

struct qp_export_gguf_in {
    const char *dir;                 /* the model folder (tokenizer, name) */
    const struct qp_graph *g;        /* qp_llama_load's graph of dir */
    const struct qp_llama_config *cfg;
    const struct qp_qassign *a;      /* the weights' schemes over g */
    enum qp_ggml_type float_type;    /* F32, F16 or BF16 */
    const char *out;
};

/* Writes in->out. r receives notes (fallbacks) and the summary. Errors:
 * QP_E_UNSUPPORTED as above, QP_E_INVAL for non-finite weights or a block
 * scale beyond fp16, tokenizer errors naming its file, QP_E_IO for the
 * output. */
enum qp_status qp_export_gguf(const struct qp_export_gguf_in *in,
                              struct qp_export_result *r, struct qp_error *err);

#endif
