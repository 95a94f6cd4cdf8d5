#include "tests/unit/gptq-test-util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static double uniform(uint64_t *s) /* (0, 1] */
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return ((*s >> 11) + 1) * 0x1p-53;
}

double gt_normal(uint64_t *s)
{
    double u = uniform(s), v = uniform(s);
    return sqrt(-2 * log(u)) * cos(6.283185307179586 * v);
}

/* Band of the mixing matrix: x_j mixes z_j .. z_{j-BAND+1}. */
#define BAND 4

float *gt_inputs(size_t tokens, size_t cols, float spread, uint64_t seed)
{
    uint64_t s = seed * 0x9e3779b97f4a7c15ull + 1;
    float *x = malloc(tokens * cols * sizeof *x + 1);
    double *a = malloc(cols * BAND * sizeof *a + 1);
    double *z = malloc(cols * sizeof *z + 1);
    if (!x || !a || !z) {
        free(x);
        free(a);
        free(z);
        return NULL;
    }
    for (size_t i = 0; i < cols * BAND; i++)
        a[i] = gt_normal(&s);
    for (size_t t = 0; t < tokens; t++) {
        double shared = gt_normal(&s);
        for (size_t k = 0; k < cols; k++)
            z[k] = gt_normal(&s);
        for (size_t j = 0; j < cols; j++) {
            double v = 0.7 * shared;
            for (size_t b = 0; b < BAND && b <= j; b++)
                v += a[j * BAND + b] * z[j - b];
            x[t * cols + j] = (float)(v * (1 + spread * (double)j / cols));
        }
    }
    free(a);
    free(z);
    return x;
}

struct qp_tensor *gt_weight(size_t rows, size_t cols, uint64_t seed)
{
    uint64_t s = seed * 0x2545f4914f6cdd1dull + 7;
    int64_t shape[2] = {(int64_t)rows, (int64_t)cols};
    struct qp_tensor *t;
    struct qp_error err;
    if (qp_tensor_new("w", QP_DTYPE_F32, 2, shape, &t, &err))
        return NULL;
    float *w = t->data;
    for (size_t i = 0; i < rows * cols; i++)
        w[i] = (float)(0.05 * gt_normal(&s) * (i % 61 == 3 ? 6 : 1));
    return t;
}

struct qp_hessian *gt_hessian(const float *x, size_t tokens, size_t cols,
                              size_t batch)
{
    struct qp_hessian *h;
    struct qp_error err;
    if (qp_hessian_new("layer", cols, NULL, &h, &err))
        return NULL;
    for (size_t t = 0; t < tokens; t += batch) {
        size_t n = tokens - t < batch ? tokens - t : batch;
        if (qp_hessian_add(h, x + t * cols, n, cols, &err)) {
            qp_hessian_free(h);
            return NULL;
        }
    }
    return h;
}

bool gt_problem_init(struct gt_problem *p, size_t rows, size_t cols,
                     size_t tokens, size_t batch, float spread, uint64_t xseed,
                     uint64_t wseed)
{
    p->x = gt_inputs(tokens, cols, spread, xseed);
    p->h = p->x ? gt_hessian(p->x, tokens, cols, batch) : NULL;
    p->w = gt_weight(rows, cols, wseed);
    if (p->x && p->h && p->w)
        return true;
    gt_problem_release(p);
    return false;
}

void gt_problem_release(struct gt_problem *p)
{
    free(p->x);
    qp_hessian_free(p->h);
    qp_tensor_free(p->w);
    p->x = NULL;
    p->h = NULL;
    p->w = NULL;
}

struct qp_wscheme gt_scheme(const char *s)
{
    struct qp_scheme sc;
    struct qp_error err;
    if (qp_scheme_parse(s, &sc, NULL, &err)) {
        fprintf(stderr, "gt_scheme: %s\n", err.msg);
        abort();
    }
    return sc.w;
}

float *gt_dequant(const struct qp_tensor *q, const int32_t *g_idx)
{
    size_t n = qp_tensor_numel(q);
    float *out = malloc(n * sizeof *out + 1);
    struct qp_error err;
    if (out && qp_gptq_dequantize(q, g_idx, out, &err)) {
        free(out);
        return NULL;
    }
    return out;
}

float *gt_rtn(const struct qp_tensor *w, struct qp_wscheme ws, enum qp_round r,
              struct qp_tensor **qout)
{
    struct qp_wquant_opts o = {r, QP_WLAYOUT_TORCH};
    struct qp_tensor *q;
    struct qp_error err;
    ws.algo = QP_WALGO_RTN;
    ws.gptq = (struct qp_gptq_options){0};
    if (qp_rtn_quantize(w, &ws, &o, &q, &err))
        return NULL;
    float *d = gt_dequant(q, NULL);
    if (qout)
        *qout = q;
    else
        qp_tensor_free(q);
    return d;
}

void gt_output_error(const struct qp_hessian *h, const struct qp_tensor *w,
                     const float *a, const float *b, double *ra, double *rb)
{
    const float *what[2] = {a, b};
    double rel[2] = {NAN, NAN};
    struct qp_error err;
    if (qp_hessian_output_error(h, w->data, (size_t)w->shape[0], what,
                                b ? 2 : 1, rel, &err))
        rel[0] = rel[1] = NAN;
    *ra = rel[0];
    if (rb)
        *rb = rel[1];
}
