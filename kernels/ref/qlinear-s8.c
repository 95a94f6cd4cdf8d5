/* kernels/ref/qlinear-s8.c: ONNX Runtime's QLinearAdd, QLinearMul, the
 * sigmoid / leaky-relu tables and the average pools (kernels/qlinear-s8.h),
 * written out element by element. */
#include "kernels/qlinear-s8.h"

#include <math.h>
#include <string.h>

#include "kernels/quantize-act.h"
#include "kernels/ref/ref-util.h"
#include "kernels/ref/round-impl.h"

#if FLT_EVAL_METHOD != 0
#error "qlinear: float arithmetic must be evaluated in its own type"
#endif

/* cvtps2dq (round half to even; INT32_MIN for NaN and out of range), then
 * the saturating packs to int16 and to the dtype. */
static int32_t to_dtype(enum qp_dtype dt, float y)
{
    int32_t r = INT32_MIN;
    if (y >= -2147483648.0f && y < 2147483648.0f)
        r = (int32_t)qp_round_even_f(y);
    int32_t lo = dt == QP_DTYPE_I8 ? -128 : 0, hi = dt == QP_DTYPE_I8 ? 127 : 255;
    return r < lo ? lo : r > hi ? hi : r;
}

static void store8(enum qp_dtype dt, void *y, size_t i, int32_t v)
{
    if (dt == QP_DTYPE_I8)
        ((int8_t *)y)[i] = (int8_t)v;
    else
        ((uint8_t *)y)[i] = (uint8_t)v;
}

/* (float)zc - (r1 * z1 + r2 * z2), the constant part of MLAS's add with
 * the kernel's first operand first, as ONNX Runtime's build compiles it
 * (GCC contracts the sum into a fused multiply-add) */
static float add_fixed(float r1, int32_t z1, float r2, int32_t z2, int32_t zc)
{
    return (float)zc - fmaf(r1, (float)z1, r2 * (float)z2);
}

void qp_qlin_add_ref(enum qp_dtype dt, enum qp_qlin_span kind,
                     const void *a, struct qp_qlin_side sa, const void *b,
                     struct qp_qlin_side sb, struct qp_qlin_side sc, size_t n,
                     void *y)
{
    float ra = sa.scale / sc.scale, rb = sb.scale / sc.scale;
    float fixed = kind == QP_QLIN_A_FIXED ? add_fixed(rb, sb.zp, ra, sa.zp, sc.zp)
                                          : add_fixed(ra, sa.zp, rb, sb.zp, sc.zp);
    if (kind == QP_QLIN_B_FIXED) /* the broadcast part, contracted too */
        fixed = fmaf((float)qp_kern_load8(dt, b, 0), rb, fixed);
    else if (kind == QP_QLIN_A_FIXED)
        fixed = fmaf((float)qp_kern_load8(dt, a, 0), ra, fixed);
    for (size_t i = 0; i < n; i++) {
        float v;
        if (kind == QP_QLIN_BOTH)
            v = fmaf((float)qp_kern_load8(dt, a, i), ra,
                     fmaf((float)qp_kern_load8(dt, b, i), rb, fixed));
        else if (kind == QP_QLIN_B_FIXED)
            v = fmaf((float)qp_kern_load8(dt, a, i), ra, fixed);
        else
            v = fmaf((float)qp_kern_load8(dt, b, i), rb, fixed);
        store8(dt, y, i, to_dtype(dt, v));
    }
}

void qp_qlin_mul_ref(enum qp_dtype dt, enum qp_qlin_span kind,
                     const void *a, struct qp_qlin_side sa, const void *b,
                     struct qp_qlin_side sb, struct qp_qlin_side sc, size_t n,
                     void *y)
{
    float r = sa.scale * sb.scale / sc.scale;
    for (size_t i = 0; i < n; i++) {
        /* |product| <= 255 * 255: exact in float */
        int32_t pa = qp_kern_load8(dt, a, kind == QP_QLIN_A_FIXED ? 0 : i) - sa.zp;
        int32_t pb = qp_kern_load8(dt, b, kind == QP_QLIN_B_FIXED ? 0 : i) - sb.zp;
        float v = (float)(pa * pb) * r;
        store8(dt, y, i, to_dtype(dt, v + (float)sc.zp));
    }
}

/* MLAS's logistic constants (Eigen's rational approximation) */
static const float lo_range = -18.0f, hi_range = 18.0f;
static const float alpha[5] = {4.37031012579801e-11f, 1.15627324459942e-07f,
                               6.08574864600143e-05f, 8.51377133304701e-03f,
                               2.48287947061529e-01f};
static const float beta[6] = {6.10247389755681e-13f, 5.76102136993427e-09f,
                              6.29106785017040e-06f, 1.70198817374094e-03f,
                              1.16817656904453e-01f, 9.93151921023180e-01f};

float qp_qlin_logistic(float x)
{
    /* vmaxps/vminps with x second: a NaN x goes through */
    float v = x != x ? x : x < lo_range ? lo_range : x;
    v = v != v ? v : v > hi_range ? hi_range : v;
    float x2 = v * v;
    float p = fmaf(x2, alpha[0], alpha[1]);
    for (int k = 2; k < 5; k++)
        p = fmaf(x2, p, alpha[k]);
    float q = fmaf(x2, beta[0], beta[1]);
    for (int k = 2; k < 6; k++)
        q = fmaf(x2, q, beta[k]);
    p = v * p;
    float r = p / q + 0.5f;
    return r != r ? r : r < 0.0f ? 0.0f : r; /* lower clamp only */
}

void qp_qlin_table(enum qp_qlin_fn fn, float a, enum qp_dtype dt,
                   struct qp_qlin_side x, struct qp_qlin_side y,
                   uint8_t table[256])
{
    int32_t lo = dt == QP_DTYPE_I8 ? -128 : 0, hi = dt == QP_DTYPE_I8 ? 127 : 255;
    for (int i = 0; i < 256; i++) {
        uint8_t byte = (uint8_t)i;
        float v = x.scale * (float)(qp_kern_load8(dt, &byte, 0) - x.zp);
        float f = fn == QP_QLIN_SIGMOID ? qp_qlin_logistic(v)
                                        : v >= 0.0f ? v : a * v;
        table[i] = (uint8_t)qp_qa_quantize_one(QP_QA_ONNX, f, y.scale, y.zp, lo, hi);
    }
}
