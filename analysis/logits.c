#include "analysis/logits.h"

#include <math.h>
#include <stdlib.h>

#include "core/parallel.h"

/* log(sum exp(x)) computed around the maximum; also the argmax. */
static double logsumexp(const float *x, size_t c, size_t *argmax)
{
    size_t am = 0;
    for (size_t i = 1; i < c; i++)
        if (x[i] > x[am])
            am = i;
    double m = x[am], s = 0;
    for (size_t i = 0; i < c; i++)
        s += exp((double)x[i] - m);
    *argmax = am;
    return m + log(s);
}

double qp_logits_row_kl(const float *ref, const float *test, size_t c,
                        bool *agree)
{
    size_t ar, at;
    double lr = logsumexp(ref, c, &ar), lt = logsumexp(test, c, &at);
    double kl = 0;
    for (size_t i = 0; i < c; i++) {
        double lp = (double)ref[i] - lr, lq = (double)test[i] - lt;
        kl += exp(lp) * (lp - lq);
    }
    *agree = ar == at;
    return kl > 0 ? kl : 0; /* rounding may leave a tiny negative */
}

/* KL(p||q) of rows of probabilities (p, q >= 0, rows summing to 1): terms
 * with p == 0 add nothing; q is floored at 1e-30 so a class the test
 * rules out costs a large but finite amount. */
static double probs_row_kl(const float *ref, const float *test, size_t c,
                           bool *agree)
{
    size_t ar = 0, at = 0;
    double kl = 0;
    for (size_t i = 0; i < c; i++) {
        ar = ref[i] > ref[ar] ? i : ar;
        at = test[i] > test[at] ? i : at;
        if (ref[i] > 0) {
            double q = test[i] > 1e-30f ? (double)test[i] : 1e-30;
            kl += (double)ref[i] * (log((double)ref[i]) - log(q));
        }
    }
    *agree = ar == at;
    return kl > 0 ? kl : 0;
}

static bool row_finite(const float *x, size_t c)
{
    for (size_t i = 0; i < c; i++)
        if (!(fabsf(x[i]) < INFINITY))
            return false;
    return true;
}

struct rows_ctx {
    const struct qp_tensor *ref, *test;
    size_t rows, classes;
    bool probs;
    struct qp_logits *part; /* [nthreads] */
    bool nomem;
};

static void rows_share(void *arg, int t, int nthreads)
{
    struct rows_ctx *c = arg;
    size_t begin, end;
    qp_parallel_split(c->rows, t, nthreads, 1, &begin, &end);
    if (begin >= end)
        return;
    float *r = malloc(2 * c->classes * sizeof *r);
    if (!r) {
        c->nomem = true;
        return;
    }
    float *q = r + c->classes;
    struct qp_logits *l = &c->part[t];
    for (size_t row = begin; row < end; row++) {
        qp_tensor_read_f32(c->ref, row * c->classes, c->classes, r);
        qp_tensor_read_f32(c->test, row * c->classes, c->classes, q);
        l->rows++;
        if (!row_finite(r, c->classes) || !row_finite(q, c->classes))
            continue;
        bool agree;
        l->kl_sum += c->probs ? probs_row_kl(r, q, c->classes, &agree)
                              : qp_logits_row_kl(r, q, c->classes, &agree);
        l->finite_rows++;
        l->agree += agree;
    }
    free(r);
}

enum qp_status qp_logits_tensors(const struct qp_tensor *ref,
                                 const struct qp_tensor *test,
                                 struct qp_logits *out, struct qp_error *err)
{
    return qp_logits_tensors_as(ref, test, false, out, err);
}

bool qp_logits_look_like_probs(const struct qp_tensor *t)
{
    size_t n = qp_tensor_numel(t);
    size_t c = t->ndim ? (size_t)t->shape[t->ndim - 1] : 1;
    if (!n || c < 2 || !t->data)
        return false;
    float buf[256];
    double sum = 0;
    for (size_t i = 0; i < n; i += 256) {
        size_t k = n - i < 256 ? n - i : 256;
        qp_tensor_read_f32(t, i, k, buf);
        for (size_t j = 0; j < k; j++) {
            if (!(buf[j] >= 0.0f && buf[j] <= 1.0f))
                return false;
            sum += buf[j];
            if ((i + j + 1) % c == 0) {
                if (fabs(sum - 1.0) > 1e-3)
                    return false;
                sum = 0;
            }
        }
    }
    return true;
}

enum qp_status qp_logits_tensors_as(const struct qp_tensor *ref,
                                    const struct qp_tensor *test, bool probs,
                                    struct qp_logits *out, struct qp_error *err)
{
    *out = (struct qp_logits){0};
    size_t n = qp_tensor_numel(ref);
    if (qp_tensor_numel(test) != n)
        return qp_fail(err, QP_E_SHAPE,
                       "tensors '%s' and '%s' have %zu and %zu elements",
                       ref->name, test->name, n, qp_tensor_numel(test));
    size_t classes = ref->ndim ? (size_t)ref->shape[ref->ndim - 1] : 1;
    if (!classes || !n)
        return QP_OK;
    struct rows_ctx c = {ref, test, n / classes, classes, probs, NULL, false};
    /* a row costs about 3 exp() per class: thread above ~64K classes*rows */
    int nthreads = n >= ((size_t)1 << 16) ? qp_parallel_threads() : 1;
    if ((size_t)nthreads > c.rows)
        nthreads = (int)c.rows;
    c.part = calloc((size_t)nthreads, sizeof *c.part);
    if (!c.part)
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    qp_parallel_run(rows_share, &c, nthreads);
    for (int t = 0; t < nthreads; t++) {
        out->rows += c.part[t].rows;
        out->finite_rows += c.part[t].finite_rows;
        out->agree += c.part[t].agree;
        out->kl_sum += c.part[t].kl_sum;
    }
    free(c.part);
    if (c.nomem)
        return qp_fail(err, QP_E_NOMEM, "tensor '%s': out of memory", ref->name);
    return QP_OK;
}

double qp_logits_kl(const struct qp_logits *l)
{
    return l->finite_rows ? l->kl_sum / (double)l->finite_rows : NAN;
}

double qp_logits_top1(const struct qp_logits *l)
{
    return l->rows ? (double)l->agree / (double)l->rows : NAN;
}
