/* analysis/llm-eval.h: language-model quality on a token stream, as
 * llama.cpp's perplexity tool measures it (analysis/kld.h has the
 * arithmetic and the base-logits file):
 *
 *   the stream is cut into non-overlapping chunks of ctx tokens (a partial
 *   last chunk is dropped); each chunk runs alone (positions 0..ctx-1),
 *   its first token replaced by BOS when the model has one; the logits of
 *   positions ctx/2 .. ctx-2 are scored against the token that follows
 *   (the second half of the chunk: every scored token has at least ctx/2
 *   tokens of context). PPL = exp(mean -log p), with its uncertainty.
 *
 * With a base file (made by --save-logits here or by llama.cpp's
 * --kl-divergence-base), every scored row is also compared with the base
 * model's: KL divergence, ln(PPL/PPL_base) with the covariance of the two
 * runs, Δp and same-top-p, as llama.cpp's --kl-divergence prints them. The
 * base must come from the same vocabulary, context size and token stream. */
#ifndef QP_ANALYSIS_LLM_EVAL_H
#define QP_ANALYSIS_LLM_EVAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analysis/kld.h"
#include "core/progress.h"
#include "model/llm.h"

struct qp_ppl_opts {
    int64_t ctx;             /* tokens per chunk; 0: the base file's, else 512 */
    int64_t chunks;          /* at most this many chunks (0: all) */
    int64_t batch;           /* chunks per forward pass (0 or 1: one) */
    int32_t bos;             /* replaces each chunk's first token; -1: none */
    const char *kl_base;     /* base logits to compare with, or NULL */
    const char *save_logits; /* write this run's logits there, or NULL */
    const struct qp_progress *progress; /* "eval": chunks done of all */
};

struct qp_ppl_result {
    int64_t ctx, chunks;
    size_t count;            /* scored tokens */
    double ppl, ppl_unc;     /* llama.cpp's perplexity (the save path's
                                float log-sum-exp when saving) */
    bool has_kld;
    struct qp_kld_stats kld; /* with a base file */
    double seconds;          /* forward passes alone */
};

/* Runs the model (m's session under plan; NULL: fp32) over ids[n].
 * QP_E_INVAL when the stream has fewer than 2 * ctx tokens (llama.cpp's
 * rule) or the options are out of range; QP_E_SHAPE / QP_E_FORMAT naming
 * the base file and both values when it has another vocabulary, context
 * size or token stream; errors of the runs and files. Nothing is written
 * to save_logits unless the whole evaluation succeeds. */
enum qp_status qp_llm_perplexity(struct qp_llm *m, const struct qp_splan *plan,
                                 const int32_t *ids, size_t n,
                                 const struct qp_ppl_opts *o,
                                 struct qp_ppl_result *r, struct qp_error *err);

#endif
