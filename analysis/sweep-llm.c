/* analysis/sweep-llm.c: the language-model sweep backend's slot
 * (analysis/sweep-backend.h).
 *
 * What it will do, once the Llama runtime (model/llm.h, analysis/llm-eval.h)
 * is in the build:
 *   open     load the folder once (qp_llm over one session), tokenize
 *            src->text (or read src->tokens), and run the fp32 model over
 *            the stream once to keep its logits as the KL base (or read
 *            src->kl_base), calibration from src->calib;
 *   digest   the folder's files (config.json, tokenizer, weights), the
 *            token stream, ctx and chunks, the base logits, the task files;
 *   eval     a plan per row (as the ONNX backend makes it), then
 *            qp_llm_perplexity with the base: ppl, ppl_err from the PPL,
 *            kl, kl_err from the KL statistics, top1, top1_err from
 *            same-top-p; task_acc / exact_match from the task files;
 *            tokens_per_s from the forward passes' time; weight_bytes,
 *            params and bitops from the plan (analysis/price.h);
 *            sqnr_db, cosine and the worst tensor stay NaN / empty.
 * Until then the folder is refused with a message saying why. */
#include "analysis/sweep-backend.h"

enum qp_status qp_sweep_llm_open(const struct qp_sweep_src *src,
                                 struct qp_sweep_backend **out,
                                 struct qp_error *err)
{
    *out = NULL;
    return qp_fail(err, QP_E_UNSUPPORTED, "'%s': a folder is a language model; "
                   "sweeping one needs the Llama runtime, which this build does "
                   "not have yet (sweep an .onnx or .tflite model)", src->model);
}
