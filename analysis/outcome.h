/* analysis/outcome.h: how much a quantized run damaged a model's output,
 * accumulated over evaluation sets: the metrics of analysis/metrics.h of
 * the primary output against the fp32 reference (SQNR, cosine, ...), and,
 * for an output of at least two classes per row, KL and top-1 agreement
 * (analysis/logits.h; a Softmax output is read as probabilities, anything
 * else as logits). Sensitivity, the recipe search and sweeps all score
 * runs this way. */
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
};

void qp_outcome_init(struct qp_outcome *o);

/* Adds one evaluation set: test against ref (same element count). The
 * first set decides dist and probs (ref's shape and values). */
enum qp_status qp_outcome_add(struct qp_outcome *o, const struct qp_tensor *ref,
                              const struct qp_tensor *test, struct qp_error *err);

double qp_outcome_sqnr(const struct qp_outcome *o);
double qp_outcome_cosine(const struct qp_outcome *o);
double qp_outcome_kl(const struct qp_outcome *o);   /* NaN unless dist */
double qp_outcome_top1(const struct qp_outcome *o); /* NaN unless dist */

#endif
