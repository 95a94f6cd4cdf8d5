/* analysis/outcome.c: output damage over evaluation sets
 * (analysis/outcome.h). */
#include "analysis/outcome.h"

#include <math.h>

void qp_outcome_init(struct qp_outcome *o)
{
    *o = (struct qp_outcome){0};
    qp_metrics_init(&o->m);
}

enum qp_status qp_outcome_add(struct qp_outcome *o, const struct qp_tensor *ref,
                              const struct qp_tensor *test, struct qp_error *err)
{
    struct qp_metrics m;
    enum qp_status st = qp_metrics_tensors(ref, test, &m, err);
    if (st)
        return st;
    qp_metrics_merge(&o->m, &m);
    if (!o->sets) {
        o->dist = ref->ndim >= 1 && ref->shape[ref->ndim - 1] >= 2;
        o->probs = o->dist && qp_logits_look_like_probs(ref);
    }
    o->sets++;
    if (!o->dist)
        return QP_OK;
    struct qp_logits l;
    if ((st = qp_logits_tensors_as(ref, test, o->probs, &l, err)))
        return st;
    o->l.rows += l.rows;
    o->l.finite_rows += l.finite_rows;
    o->l.agree += l.agree;
    o->l.kl_sum += l.kl_sum;
    return QP_OK;
}

double qp_outcome_sqnr(const struct qp_outcome *o)
{
    return qp_metrics_sqnr_db(&o->m);
}

double qp_outcome_cosine(const struct qp_outcome *o)
{
    return qp_metrics_cosine(&o->m);
}

double qp_outcome_kl(const struct qp_outcome *o)
{
    return o->dist ? qp_logits_kl(&o->l) : NAN;
}

double qp_outcome_top1(const struct qp_outcome *o)
{
    return o->dist ? qp_logits_top1(&o->l) : NAN;
}
