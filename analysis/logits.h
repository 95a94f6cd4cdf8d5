/* analysis/logits.h: metrics for classifier / language-model outputs.
 *
 * A logits tensor is read as rows of C = shape[last] classes (a scalar is
 * one row of one class). For each row, softmax in double through the
 * log-sum-exp:
 *   kl   = mean over rows of KL(p_ref || p_test)
 *        = sum_i p_i (log p_i - log q_i),  p = softmax(ref), q = softmax(test)
 *   top1 = fraction of rows whose argmax (first maximum) agrees.
 * A row holding a NaN or Inf on either side is left out of kl and counts
 * as disagreeing in top1. kl is NaN when no row is finite; both are NaN for
 * a tensor with no rows (a zero dimension). */
#ifndef QP_ANALYSIS_LOGITS_H
#define QP_ANALYSIS_LOGITS_H

#include "core/tensor.h"

struct qp_logits {
    uint64_t rows;       /* rows compared */
    uint64_t finite_rows;/* rows that entered kl */
    uint64_t agree;      /* rows whose argmax agrees */
    double kl_sum;
};

/* KL(p||q) of one row of c logits each (finite); *agree tells whether the
 * argmaxes agree. */
double qp_logits_row_kl(const float *ref, const float *test, size_t c,
                        bool *agree);

/* Both tensors hold data and have the same element count; rows follow the
 * reference's last dimension. QP_E_SHAPE when the counts differ. */
enum qp_status qp_logits_tensors(const struct qp_tensor *ref,
                                 const struct qp_tensor *test,
                                 struct qp_logits *out, struct qp_error *err);

/* The same for tensors of probabilities (a Softmax output): KL of the
 * rows as they are, with test probabilities floored at 1e-30. */
enum qp_status qp_logits_tensors_as(const struct qp_tensor *ref,
                                    const struct qp_tensor *test, bool probs,
                                    struct qp_logits *out, struct qp_error *err);

/* True when every row of t (over the last axis, at least 2 classes) holds
 * values in [0, 1] summing to 1 within 1e-3: probabilities. */
bool qp_logits_look_like_probs(const struct qp_tensor *t);

double qp_logits_kl(const struct qp_logits *l);
double qp_logits_top1(const struct qp_logits *l);

#endif
