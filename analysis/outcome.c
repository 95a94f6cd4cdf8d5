/* analysis/outcome.c: output damage over evaluation sets
 * (analysis/outcome.h). */
#include "analysis/outcome.h"

#include <math.h>

#include <stdlib.h>

#include "analysis/kld.h"

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

bool qp_outcome_tokens_apply(const struct qp_tensor *ids,
                             const struct qp_tensor *out)
{
    if (!ids || !out || qp_dtype_traits(ids->dtype)->is_float ||
        ids->ndim < 1 || out->ndim != ids->ndim + 1 ||
        !qp_dtype_traits(out->dtype)->is_float || out->shape[out->ndim - 1] < 2)
        return false;
    for (int i = 0; i < ids->ndim; i++)
        if (ids->shape[i] != out->shape[i])
            return false;
    return true;
}

/* -log p of the next token at the scored rows of every sequence. */
static enum qp_status nll_rows(const struct qp_tensor *ids,
                               const struct qp_tensor *logits, double *sum,
                               size_t *rows, struct qp_error *err)
{
    size_t t = (size_t)ids->shape[ids->ndim - 1], seqs = qp_tensor_numel(ids) / t;
    size_t v = (size_t)logits->shape[logits->ndim - 1];
    float *row = malloc(v * sizeof *row);
    float *tok = malloc(t * sizeof *tok); /* ids below 2^24: exact */
    enum qp_status st = row && tok ? QP_OK : qp_fail(err, QP_E_NOMEM, "out of memory");
    *sum = 0;
    *rows = 0;
    for (size_t s = 0; !st && s < seqs; s++) {
        qp_tensor_read_f32(ids, s * t, t, tok);
        for (size_t p = t / 2; !st && p + 1 < t; p++) {
            if (!(tok[p + 1] >= 0 && tok[p + 1] < (float)v)) {
                st = qp_fail(err, QP_E_INVAL, "token id %g outside the %zu "
                             "logits", (double)tok[p + 1], v);
                break;
            }
            qp_tensor_read_f32(logits, (s * t + p) * v, v, row);
            *sum += qp_kld_nll(row, (int)v, (int)tok[p + 1]);
            ++*rows;
        }
    }
    free(row);
    free(tok);
    return st;
}

enum qp_status qp_outcome_add_tokens(struct qp_outcome *o,
                                     const struct qp_tensor *ids,
                                     const struct qp_tensor *ref,
                                     const struct qp_tensor *test,
                                     struct qp_error *err)
{
    enum qp_status st = qp_outcome_add(o, ref, test, err);
    if (st || !qp_outcome_tokens_apply(ids, test))
        return st;
    double a, b;
    size_t n, m;
    if ((st = nll_rows(ids, ref, &a, &n, err)) ||
        (st = nll_rows(ids, test, &b, &m, err)))
        return st;
    o->nll_ref += a;
    o->nll_test += b;
    o->nll_rows += n;
    return QP_OK;
}

double qp_outcome_ppl(const struct qp_outcome *o)
{
    return o->nll_rows ? exp(o->nll_test / (double)o->nll_rows) : NAN;
}

double qp_outcome_ppl_delta(const struct qp_outcome *o)
{
    return o->nll_rows ? exp(o->nll_test / (double)o->nll_rows) -
                             exp(o->nll_ref / (double)o->nll_rows)
                       : NAN;
}
