/* analysis/export-gptq.h: --to gptq: a Hugging Face Llama-family folder
 * quantized by GPTQ on calibration tokens and written as AutoGPTQ and
 * GPTQModel write a checkpoint (their "gptq" checkpoint format, the one
 * both load; GPTQModel calls the other "gptq_v2").
 *
 * What is quantized: the Linear layers of the decoder blocks
 * (model.layers.N.*), by the scheme's GPTQ with its options and with
 * 'half' added: the scales are rounded to float16 while GPTQ runs, so the
 * integers and the fp16 scales the checkpoint stores are the weights GPTQ
 * compensated for. The embedding, the head and the norms stay as stored
 * (AutoGPTQ's default: lm_head not quantized), and run float while the
 * Hessians are gathered. Calibration: the tokens of o->calib (ids or
 * text, model/llm.h), at most 16 sequences of 512.
 *
 * OUT is a folder (it appears when complete):
 *   model.safetensors     every tensor of the folder's checkpoint, but for
 *                         each quantized PREFIX.weight [out, in]:
 *     PREFIX.qweight  I32 [in / P, out]   P = 32 / bits input rows per
 *                                         word, row r*P + k at bits * k
 *     PREFIX.qzeros   I32 [groups, out / P]  zero point - 1 (the format's
 *                                         offset), P outputs per word alike
 *     PREFIX.scales   F16 [groups, out]
 *     PREFIX.g_idx    I32 [in]            each input row's group: i / G, or
 *                                         act-order's (desc_act)
 *   metadata {"format": "pt"}; symmetric weights use the unsigned grid with
 *   zero point 2^(bits-1), as AutoGPTQ's symmetric quantizer does, so
 *     W[o, i] = scales[g, o] * (q[i, o] - (qzeros[g, o] + 1)), g = g_idx[i]
 *   is the value qprobe's fake mode gives for the scheme with ':half'.
 *   quantize_config.json  bits, group_size, sym, desc_act, static_groups,
 *                         damp_percent, true_sequential, quant_method,
 *                         checkpoint_format
 *   config.json           the folder's, with quantization_config (the same)
 *   tokenizer.json, tokenizer_config.json, generation_config.json,
 *   special_tokens_map.json: copied when the folder has them.
 *
 * Refused, naming the reason: a model that is not a folder, a recipe,
 * a scheme without '@gptq', what GPTQ checkpoints cannot hold
 * (analysis/export-llm.h qp_export_gptq_fields; 3 bits: not packed here),
 * widths that do not fill whole words, an asymmetric zero point of 0 (the
 * format's offset has no code for it), no calibration tokens. */
#ifndef QP_ANALYSIS_EXPORT_GPTQ_H
#define QP_ANALYSIS_EXPORT_GPTQ_H

#include "analysis/export.h"

/* Writes o->model's GPTQ checkpoint to the folder o->out (o->scheme,
 * o->calib); r receives the summary and notes. */
enum qp_status qp_export_gptq(const struct qp_export_opts *o,
                              struct qp_export_result *r, struct qp_error *err);

#endif
