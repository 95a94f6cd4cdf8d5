/* model/llm-generate.h: greedy generation with a KV cache (model/kvcache.h),
 * in fp32 or under any plan: the prompt runs once (a prefill filling the
 * cache), then each new token runs alone at the next position. Each step
 * takes the most probable token (the first of equal maxima, as
 * torch.argmax), so the tokens equal those of recomputing the whole
 * sequence at every step (qp_gen_opts.no_cache, for tests). */
#ifndef QP_MODEL_LLM_GENERATE_H
#define QP_MODEL_LLM_GENERATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model/llm.h"

struct qp_gen_opts {
    size_t max_new;      /* tokens to generate at most */
    int32_t eos;         /* stop after generating it; -1: never */
    bool no_cache;       /* recompute the whole sequence at every step */
    /* called with each new token as it is chosen (may be NULL); a status
     * other than QP_OK stops generation with that error */
    enum qp_status (*on_token)(void *ctx, int32_t id, struct qp_error *err);
    void *ctx;
    const struct qp_progress *progress; /* "generate": tokens of max_new */
};

struct qp_gen_stats {
    double prefill_seconds, decode_seconds;
    size_t prompt_tokens, new_tokens;
};

/* Generates after prompt[np] (np >= 1) under plan (NULL: fp32). *out
 * (malloc'd, *nout entries; the EOS included when it stopped there)
 * belongs to the caller. stats may be NULL. QP_E_INVAL for an empty
 * prompt. */
enum qp_status qp_llm_generate(struct qp_llm *m, const struct qp_splan *plan,
                               const int32_t *prompt, size_t np,
                               const struct qp_gen_opts *o, int32_t **out,
                               size_t *nout, struct qp_gen_stats *stats,
                               struct qp_error *err);

/* Index of the largest of x[n] (the first of equal maxima; NaN never
 * wins). */
int32_t qp_llm_argmax(const float *x, size_t n);

#endif
