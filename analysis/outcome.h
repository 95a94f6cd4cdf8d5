/* analysis/outcome.h: how much a quantized run damaged a model's output,
 * accumulated over evaluation sets: the metrics of analysis/metrics.h of
 * the primary output against the fp32 reference (SQNR, cosine, ...), and,
 * for an output of at least two classes per row, KL and top-1 agreement
 * (analysis/logits.h; a Softmax output is read as probabilities, anything
 * else as logits). For a language model (logits [.., T, V] of token ids
 * [.., T]), qp_outcome_add_tokens also scores next-token perplexity of
 * both runs as llama.cpp does (the second half of each sequence).
 * Sensitivity, the recipe search and sweeps all score runs this way. */
#ifndef QP_ANALYSIS_OUTCOME_H
#define QP_ANALYSIS_OUTCOME_H

#include <stdbool.h>

#include "analysis/logits.h"
#include "analysis/metrics.h"

struct qp_outcome {
    struct qp_metrics m;
    struct qp_logits l;
    bool dist;    /* kl / top1 apply */
    bool probs;   /* the output holds probabilities */
    size_t sets;
    /* next-token -log p of the reference and the test (tokens given) */
    double nll_ref, nll_test;
    size_t nll_rows;
};

void qp_outcome_init(struct qp_outcome *o);

/* Adds one evaluation set: test against ref (same element count). The
 * first set decides dist and probs (ref's shape and values). */
enum qp_status qp_outcome_add(struct qp_outcome *o, const struct qp_tensor *ref,
                              const struct qp_tensor *test, struct qp_error *err);

/* True when logits out follow token ids ids: ids integer [.., T] and out
 * [.., T, V] with the same leading dimensions. */
bool qp_outcome_tokens_apply(const struct qp_tensor *ids,
                             const struct qp_tensor *out);

/* qp_outcome_add, then (when qp_outcome_tokens_apply) the next-token
 * -log p of ref and test at positions T/2 .. T-2 of each sequence
 * (llama.cpp's scored rows; analysis/kld.h). */
enum qp_status qp_outcome_add_tokens(struct qp_outcome *o,
                                     const struct qp_tensor *ids,
                                     const struct qp_tensor *ref,
                                     const struct qp_tensor *test,
                                     struct qp_error *err);

/* exp(mean -log p) of the test, and test minus reference; NaN without
 * scored rows. */
double qp_outcome_ppl(const struct qp_outcome *o);
double qp_outcome_ppl_delta(const struct qp_outcome *o);

double qp_outcome_sqnr(const struct qp_outcome *o);
double qp_outcome_cosine(const struct qp_outcome *o);
double qp_outcome_kl(const struct qp_outcome *o);   /* NaN unless dist */
double qp_outcome_top1(const struct qp_outcome *o); /* NaN unless dist */

#endif
