/* analysis/export-llm.h: a recipe for Llama-family checkpoints in the
 * configuration languages of llama.cpp and GPTQModel. Neither needs the
 * weights: the recipe decides every tensor by its name.
 *
 * Names. Recipes name tensors as Hugging Face checkpoints do
 * ("model.layers.3.mlp.down_proj.weight"); llama.cpp's GGUF names them as
 * its converter (convert_hf_to_gguf.py, gguf-py's tensor_mapping.py) maps
 * them for the Llama family (Llama, Mistral, Qwen2/3 share these):
 *   model.embed_tokens              token_embd
 *   lm_head                         output
 *   model.norm                      output_norm
 *   model.layers.N.input_layernorm  blk.N.attn_norm
 *   model.layers.N.post_attention_layernorm  blk.N.ffn_norm
 *   model.layers.N.self_attn.{q,k,v,o}_proj  blk.N.attn_{q,k,v,output}
 *   model.layers.N.self_attn.{q,k}_norm      blk.N.attn_{q,k}_norm
 *   model.layers.N.mlp.{gate,up,down}_proj   blk.N.ffn_{gate,up,down}
 * (".weight" / ".bias" kept). A rule may use either spelling: each tensor
 * is decided by the first rule matching one of its two names
 * (quant/recipe.h).
 *
 * llama-tensor-type: arguments for llama-quantize (tools/quantize/
 * quantize.cpp, src/llama-quant.cpp), one a line, to pass as
 * `llama-quantize $(cat OUT) in.gguf out.gguf TYPE`:
 *   --pure                          tensors no line names get TYPE as it
 *                                   is, not llama.cpp's k-quant mixtures
 *   --output-tensor-type T          output.weight (these two flags come
 *   --token-embedding-type T        before the patterns in llama.cpp)
 *   --tensor-type REGEX=T           one line per (tensor kind, type):
 *                                   ^blk\.(0|3|17)\.ffn_down\.weight$=q6_K
 * llama-quantize lowercases REGEX and matches it with std::regex_search
 * (first match in current llama.cpp, last in older ones): the regexes are
 * anchored and name exact layer sets, so each tensor matches exactly one,
 * whatever the order rule; they use no shell glob character, so $(cat OUT)
 * passes them unchanged. TYPE (the summary names it) is the most common
 * quantized type, because llama-quantize applies --tensor-type only when
 * its TYPE is a quantized one; tensors meant to stay float get "=f32"
 * lines. Types are ggml's names (q8_0, q4_0, q4_1, q5_0, q4_K, q6_K, f16,
 * f32). A scheme that is not a ggml type is refused naming the tensor and
 * the nearest type (qp_ggml_nearest). The layer count comes from MODEL (a
 * checkpoint folder, .safetensors or .gguf: its tensor names) or from
 * layers; with MODEL, rows that do not divide a type's block are reported
 * with llama.cpp's fallback.
 *
 * gptqmodel-dynamic: a JSON document GPTQModel's QuantizeConfig(**doc)
 * takes: bits, group_size (-1 for per channel), sym, desc_act from the
 * default, and `dynamic`, the recipe's weight rules in order as GPTQModel
 * reads them (gptqmodel/quantization/config.py, dynamic_get: the first
 * key whose regex re.match-es the module name wins; "-:" skips the module,
 * "+:" overrides bits / group_size / sym). Module names are the linear
 * layers' ("model.layers.0.mlp.down_proj"); a rule's glob becomes an
 * anchored regex over them (fnmatch's '*' and '?' as ".*" and ".", a
 * trailing ".weight" dropped). With MODEL, every regex is checked against
 * every module name to decide as the glob does. Refused: per-tensor
 * schemes (GPTQ has groups or channels), narrow or 5/6/7/16-bit weights,
 * ggml types. A default of "fp32" keeps GPTQModel's base config from the
 * first rule and ends `dynamic` with "-:.*" (skip the rest). */
#ifndef QP_ANALYSIS_EXPORT_LLM_H
#define QP_ANALYSIS_EXPORT_LLM_H

#include <stdbool.h>

#include "analysis/export.h"
#include "core/ggml-block.h"
#include "quant/scheme.h"

struct qp_export_llm_opts {
    const char *model;       /* a checkpoint, or NULL */
    const struct qp_recipe *recipe;
    const char *recipe_name;
    int layers;              /* without model: transformer blocks; 0 none */
    bool strict;
};

/* The llama.cpp name of Hugging Face tensor name hf into buf; false when
 * the name is not one of the table above. */
bool qp_llama_name_of(const char *hf, char *buf, size_t size);

/* The GGUF type of the weight called hf (llama.cpp's name ll) under
 * weight scheme ws: its ggml type for a ggml scheme, f32 when ws is NULL
 * (the weight stays float); QP_E_UNSUPPORTED for any other scheme, naming
 * the tensor, the scheme and the nearest ggml type (qp_ggml_nearest). */
enum qp_status qp_llama_ggml_type(const char *hf, const char *ll,
                                  const struct qp_wscheme *ws,
                                  enum qp_ggml_type *out, struct qp_error *err);

/* Writes the format to path. r (zeroed, or a result of an earlier call)
 * receives the unused rules (with a model), notes and the summary. */
enum qp_status qp_export_llama_tensor_type(const struct qp_export_llm_opts *o,
                                           const char *path,
                                           struct qp_export_result *r,
                                           struct qp_error *err);
enum qp_status qp_export_gptqmodel_dynamic(const struct qp_export_llm_opts *o,
                                           const char *path,
                                           struct qp_export_result *r,
                                           struct qp_error *err);

struct qp_json;
/* GPTQModel's bits, group_size (-1: per channel) and sym of ws into object
 * o; QP_E_UNSUPPORTED (naming `what` and the scheme) for what GPTQ
 * checkpoints cannot hold: per-tensor, narrow, ggml, other than 2, 3, 4
 * or 8 bits. */
enum qp_status qp_export_gptq_fields(const struct qp_wscheme *ws,
                                     const char *what, struct qp_json *o,
                                     struct qp_error *err);

#endif
