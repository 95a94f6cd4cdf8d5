/* analysis/lsb.c: errors in steps of the test's scale (analysis/lsb.h). */
#include "analysis/lsb.h"

#include <math.h>
#include <stdlib.h>

bool qp_lsb_applies(const struct qp_tensor *t)
{
    return t->qp && t->qp->count && qp_dtype_is_int(t->dtype);
}

/* The index into t->qp->scale of element i. */
static size_t scale_index(const struct qp_tensor *t, size_t i)
{
    const struct qp_qparams *q = t->qp;
    if (q->axis < 0 || q->count == 1)
        return 0;
    size_t inner = 1;
    for (int d = q->axis + 1; d < t->ndim; d++)
        inner *= (size_t)t->shape[d];
    size_t dim = (size_t)t->shape[q->axis];
    size_t o = i / (dim * inner), j = (i / inner) % dim, r = i % inner;
    if (!q->block_size)
        return j;
    size_t b = (size_t)q->block_size, nb = (dim + b - 1) / b;
    return (o * nb + j / b) * inner + r;
}

static bool same_params(const struct qp_tensor *a, const struct qp_tensor *b)
{
    const struct qp_qparams *p = a->qp, *q = b->qp;
    if (!p || !q || a->dtype != b->dtype || p->count != q->count ||
        p->axis != q->axis || p->block_size != q->block_size)
        return false;
    for (size_t k = 0; k < p->count; k++) {
        int32_t za = p->zero_point ? p->zero_point[k] : 0;
        int32_t zb = q->zero_point ? q->zero_point[k] : 0;
        if (p->scale[k] != q->scale[k] || za != zb)
            return false;
    }
    return true;
}

enum qp_status qp_lsb_tensors(const struct qp_tensor *ref,
                              const struct qp_tensor *test, struct qp_lsb *out,
                              struct qp_error *err)
{
    *out = (struct qp_lsb){0};
    size_t n = qp_tensor_numel(test);
    if (qp_tensor_numel(ref) != n)
        return qp_fail(err, QP_E_SHAPE, "tensors '%s' and '%s' have %zu and %zu "
                       "elements", ref->name, test->name, qp_tensor_numel(ref), n);
    if (!qp_lsb_applies(test))
        return QP_OK;
    out->valid = true;
    bool codes = same_params(ref, test);
    enum { CHUNK = 1024 };
    float r[CHUNK], t[CHUNK];
    for (size_t i = 0; i < n; i += CHUNK) {
        size_t k = n - i < CHUNK ? n - i : CHUNK;
        qp_tensor_read_f32(ref, i, k, r);
        qp_tensor_read_f32(test, i, k, t);
        for (size_t j = 0; j < k; j++) {
            float s = test->qp->scale[scale_index(test, i + j)];
            double e = fabs((double)r[j] - (double)t[j]) / (double)s;
            if (!isfinite(e)) {
                out->mismatches++;
                continue;
            }
            out->n++;
            out->sum += e;
            out->sum2 += e * e;
            out->max = e > out->max ? e : out->max;
            /* same parameters: the codes differ exactly when the values do */
            out->mismatches += codes ? r[j] != t[j] : e > 0.5;
        }
    }
    return QP_OK;
}

double qp_lsb_mae(const struct qp_lsb *l)
{
    return l->valid && l->n ? l->sum / (double)l->n : NAN;
}

double qp_lsb_rmse(const struct qp_lsb *l)
{
    return l->valid && l->n ? sqrt(l->sum2 / (double)l->n) : NAN;
}
