#include "quant/hessian.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/size.h"
#include "kernels/blas.h"

enum qp_status qp_hessian_new(const char *name, size_t cols,
                              struct qp_pool *pool, struct qp_hessian **out,
                              struct qp_error *err)
{
    *out = NULL;
    if (!name)
        name = "layer";
    size_t n, bytes;
    if (cols == 0)
        return qp_fail(err, QP_E_INVAL, "layer '%s': a Hessian needs at least "
                       "one input column", name);
    if (cols > QP_BLAS_MAX_DIM || qp_size_mul(cols, cols, &n) ||
        qp_size_mul(n, sizeof(float), &bytes))
        return qp_fail(err, QP_E_OVERFLOW, "layer '%s': a Hessian of %zu "
                       "columns is too large", name, cols);
    struct qp_hessian *h = calloc(1, sizeof *h);
    if (h) {
        h->h = calloc(n, sizeof(float));
        h->name = strdup(name);
    }
    if (!h || !h->h || !h->name) {
        qp_hessian_free(h);
        return qp_fail(err, QP_E_NOMEM, "layer '%s': out of memory for a "
                       "%zu x %zu Hessian", name, cols, cols);
    }
    h->cols = cols;
    h->pool = pool;
    *out = h;
    return QP_OK;
}

void qp_hessian_free(struct qp_hessian *h)
{
    if (!h)
        return;
    free(h->h);
    free(h->name);
    free(h);
}

/* The error for a batch whose products were not finite: x holds the
 * batch as [rows, cols] (stride ld), or transposed as [cols, rows] when
 * t. */
static enum qp_status bad_batch(struct qp_hessian *h, const float *x,
                                size_t rows, size_t cols, size_t ld, bool t,
                                struct qp_error *err)
{
    h->poisoned = true;
    for (size_t r = 0; r < rows; r++)
        for (size_t c = 0; c < cols; c++) {
            float v = t ? x[c * ld + r] : x[r * ld + c];
            if (!isfinite(v))
                return qp_fail(err, QP_E_INVAL, "layer '%s': calibration "
                               "input row %zu, column %zu is %s; the layer's "
                               "inputs must be finite", h->name, r, c,
                               isnan(v) ? "nan" : v > 0 ? "inf" : "-inf");
        }
    return qp_fail(err, QP_E_INVAL, "layer '%s': the squares of the "
                   "calibration inputs overflow float32 (the Hessian has "
                   "infinite entries)", h->name);
}

/* H = n/(n+rows) H + 2/(n+rows) X^T X for x as bad_batch reads it. */
static enum qp_status add(struct qp_hessian *h, const float *x, size_t rows,
                          size_t cols, size_t ld, bool t, struct qp_error *err)
{
    if (h->poisoned)
        return qp_hessian_check(h, err);
    if (cols != h->cols)
        return qp_fail(err, QP_E_SHAPE, "layer '%s': calibration inputs have "
                       "%zu columns, the layer %zu", h->name, cols, h->cols);
    const size_t step = (size_t)1 << 30; /* BLAS dimensions are int */
    for (size_t r0 = 0; r0 < rows; r0 += step) {
        size_t nr = rows - r0 < step ? rows - r0 : step;
        double n = (double)h->tokens, tot = n + (double)nr;
        const float *xb = t ? x + r0 : x + r0 * ld;
        if (t)
            qp_blas_ssyrk_lower_rows(h->pool, cols, nr, (float)(2.0 / tot), xb,
                                     ld, (float)(n / tot), h->h, cols);
        else
            qp_blas_ssyrk_lower(h->pool, cols, nr, (float)(2.0 / tot), xb, ld,
                                (float)(n / tot), h->h, cols);
        h->tokens += nr;
        float poison = 0; /* x * 0 is NaN exactly for NaN and infinities */
        for (size_t i = 0; i < cols; i++)
            poison += h->h[i * cols + i] * 0.0f;
        if (poison != 0)
            return bad_batch(h, xb, nr, cols, ld, t, err);
    }
    return QP_OK;
}

enum qp_status qp_hessian_add(struct qp_hessian *h, const float *x,
                              size_t rows, size_t cols, struct qp_error *err)
{
    return add(h, x, rows, cols, cols, false, err);
}

enum qp_status qp_hessian_add_cols(struct qp_hessian *h, const float *xt,
                                   size_t cols, size_t rows, size_t ld,
                                   struct qp_error *err)
{
    if (ld < rows)
        return qp_fail(err, QP_E_INVAL, "layer '%s': row stride %zu below %zu "
                       "tokens", h->name, ld, rows);
    return add(h, xt, rows, cols, ld, true, err);
}

enum qp_status qp_hessian_check(const struct qp_hessian *h,
                                struct qp_error *err)
{
    if (h->poisoned)
        return qp_fail(err, QP_E_INVAL, "layer '%s': the Hessian is unusable: "
                       "a calibration batch held NaN or Inf", h->name);
    if (h->tokens == 0)
        return qp_fail(err, QP_E_INVAL, "layer '%s': no calibration tokens "
                       "reached the layer (the Hessian is empty)", h->name);
    return QP_OK;
}

/* Rows per panel of the output-error products. */
#define PANEL 128

enum qp_status qp_hessian_output_energy(const struct qp_hessian *h,
                                        const float *w, size_t rows,
                                        const float *const *what, size_t count,
                                        double *num, struct qp_error *err)
{
    if (h->poisoned)
        return qp_hessian_check(h, err);
    size_t cols = h->cols, prow = PANEL * (count + 1), n;
    if (qp_size_mul(prow, cols, &n) || n > SIZE_MAX / 2 / sizeof(float))
        return qp_fail(err, QP_E_OVERFLOW, "layer '%s': too many matrices",
                       h->name);
    /* a = [W; W - What_0; ...] for PANEL rows, t = a H */
    float *a = malloc(n * sizeof *a + 1), *t = malloc(n * sizeof *t + 1);
    if (!a || !t) {
        free(a);
        free(t);
        return qp_fail(err, QP_E_NOMEM, "layer '%s': out of memory for the "
                       "output error", h->name);
    }
    for (size_t k = 0; k <= count; k++)
        num[k] = 0;
    for (size_t r0 = 0; r0 < rows; r0 += PANEL) {
        size_t pr = rows - r0 < PANEL ? rows - r0 : PANEL, pn = pr * cols;
        const float *wp = w + r0 * cols;
        memcpy(a, wp, pn * sizeof *a);
        for (size_t k = 0; k < count; k++) {
            const float *q = what[k] + r0 * cols;
            float *d = a + (k + 1) * pn;
            for (size_t i = 0; i < pn; i++)
                d[i] = wp[i] - q[i];
        }
        size_t m = pr * (count + 1);
        qp_blas_ssymm_right_lower(h->pool, m, cols, 1.0f, h->h, cols, a, cols,
                                  0.0f, t, cols);
        for (size_t k = 0; k <= count; k++) {
            const float *ak = a + k * pn, *tk = t + k * pn;
            double s = 0;
            for (size_t i = 0; i < pn; i++)
                s += (double)ak[i] * (double)tk[i];
            num[k] += s;
        }
    }
    free(a);
    free(t);
    return QP_OK;
}

enum qp_status qp_hessian_output_error(const struct qp_hessian *h,
                                       const float *w, size_t rows,
                                       const float *const *what, size_t count,
                                       double *rel, struct qp_error *err)
{
    double *num = malloc((count + 1) * sizeof *num);
    if (!num)
        return qp_fail(err, QP_E_NOMEM, "layer '%s': out of memory for the "
                       "output error", h->name);
    enum qp_status st = qp_hessian_output_energy(h, w, rows, what, count, num,
                                                 err);
    for (size_t k = 0; !st && k < count; k++)
        rel[k] = num[k + 1] == 0 ? 0 : num[k + 1] / num[0];
    free(num);
    return st;
}
