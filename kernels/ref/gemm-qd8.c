/* kernels/ref/gemm-qd8.c: the reference of ExecuTorch's 8da4w product, the
 * specification of kernels/gemm-qd8.h's steps 1 and 4 (one operation per
 * line, in XNNPACK's order; built with -ffp-contract=off). */
#include <math.h>

#include "kernels/gemm-qd8-impl.h"

void qp_qd8_params_from_range(float min, float max, struct qp_qd8_params *p)
{
    const float qmin = -128.0f, qmax = 127.0f;
    float lo = min < 0.0f ? min : 0.0f;
    float hi = max > 0.0f ? max : 0.0f;
    float m = lo == hi ? 1.0f : (qmax - qmin) / (hi - lo);
    float dl = lo * m, dh = hi * m;
    float from_min = qmin + dl, from_max = qmax + dh;
    float z = from_min + from_max > 0.0f ? qmin - dl : qmax - dh;
    z = z > qmin ? z : qmin;
    z = z < qmax ? z : qmax;
    p->mul = m;
    p->scale = 1.0f / m;
    p->zp = (int32_t)lrintf(z);
}

void qp_qd8_quantize_row(const float *x, size_t k, struct qp_qd8_params *p,
                         int8_t *q)
{
    float lo = INFINITY, hi = -INFINITY;
    for (size_t i = 0; i < k; i++) {
        lo = x[i] < lo ? x[i] : lo;
        hi = x[i] > hi ? x[i] : hi;
    }
    qp_qd8_params_from_range(lo, hi, p);
    float vmin = (float)(-128 - p->zp), vmax = (float)(127 - p->zp);
    for (size_t i = 0; i < k; i++) {
        float v = x[i] * p->mul;
        v = v > vmin ? v : vmin;
        v = v < vmax ? v : vmax;
        q[i] = (int8_t)((int32_t)lrintf(v) + p->zp);
    }
}

/* Step 4 for row r and column j. */
static float one(const struct qp_qb4w *b, const struct qp_qd8_rows *rows,
                 size_t r, size_t j)
{
    const int8_t *q = rows->q + r * rows->kp;
    float out = b->ksum[j] * (float)rows->p[r].zp;
    for (size_t g = 0; g < b->groups; g++) {
        size_t i0 = g * b->group, i1 = i0 + b->group < b->k ? i0 + b->group : b->k;
        int32_t acc = 0;
        for (size_t i = i0; i < i1; i++)
            acc += (int32_t)q[i] * qp_qb4w_get(b, j, i);
        float f = (float)acc;
        f *= qp_qd8_bf16(b->scale[j * b->groups + g]);
        out += f;
    }
    out *= rows->p[r].scale;
    return out;
}

static void ref_cols(const struct qp_qb4w *b, const struct qp_qd8_rows *rows,
                     size_t t0, size_t t1, const float *bias, float *y,
                     size_t ldy)
{
    size_t j1 = t1 * QP_QD8_NR < b->n ? t1 * QP_QD8_NR : b->n;
    for (size_t r = 0; r < rows->m; r++)
        for (size_t j = t0 * QP_QD8_NR; j < j1; j++) {
            float v = one(b, rows, r, j);
            if (bias)
                v += bias[j];
            y[r * ldy + j] = v;
        }
}

const struct qp_qd8_variant qp_qd8_ref = {"ref", QP_KERN_REF, NULL, ref_cols};
