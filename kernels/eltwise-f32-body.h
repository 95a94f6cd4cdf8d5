/* kernels/eltwise-f32-body.h: the loops of kernels/eltwise-f32.h, included
 * once per variant by a file that defines EW_VARIANT (the struct's name)
 * and EW_NAME (its name string) and is compiled with that variant's
 * instruction set (at -O3, where GCC vectorizes these loops); it may
 * define EW_EXP_SHIFTED, a function of its own for exp_shifted. Internal
 * to kernels/. */
#include <math.h>

#include "kernels/eltwise-f32.h"

/* Comparisons rather than fminf/fmaxf, so loops vectorize; NaN passes
 * through (as numpy's clip). */
static inline float ew_clamp(float v, float lo, float hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

#define EW_UNARY_LOOP(expr)                                                    \
    for (size_t i = 0; i < n; i++) {                                           \
        float v = x[i];                                                        \
        y[i] = (expr);                                                         \
    }                                                                          \
    break

static void ew_unary(enum qp_ew_unary op, float a, float b, const float *x,
                     float *y, size_t n)
{
    switch (op) {
    case QP_EW_RELU: EW_UNARY_LOOP(v > 0.0f ? v : 0.0f);
    case QP_EW_LEAKY: EW_UNARY_LOOP(v >= 0.0f ? v : a * v);
    case QP_EW_SIGMOID: EW_UNARY_LOOP(1.0f / (1.0f + expf(-v)));
    case QP_EW_HSIGMOID: EW_UNARY_LOOP(ew_clamp(a * v + b, 0.0f, 1.0f));
    case QP_EW_HSWISH:
        EW_UNARY_LOOP(v * ew_clamp(v * (1.0f / 6.0f) + 0.5f, 0.0f, 1.0f));
    case QP_EW_TANH: EW_UNARY_LOOP(tanhf(v));
    case QP_EW_ERF: EW_UNARY_LOOP(erff(v));
    case QP_EW_SQRT: EW_UNARY_LOOP(sqrtf(v));
    case QP_EW_EXP: EW_UNARY_LOOP(expf(v));
    case QP_EW_NEG: EW_UNARY_LOOP(-v);
    case QP_EW_CLIP: EW_UNARY_LOOP(ew_clamp(v, a, b));
    default: EW_UNARY_LOOP((float)qp_ew_unary_f64(op, a, b, v));
    }
}

/* o = a op b over n, each operand a vector or one value */
#define EW_BINARY_LOOPS(expr)                                                  \
    if (av && bv)                                                              \
        for (size_t i = 0; i < n; i++) {                                       \
            float p = a[i], q = b[i];                                          \
            o[i] = (expr);                                                     \
        }                                                                      \
    else if (av) {                                                             \
        float q = b[0];                                                        \
        for (size_t i = 0; i < n; i++) {                                       \
            float p = a[i];                                                    \
            o[i] = (expr);                                                     \
        }                                                                      \
    } else if (bv) {                                                           \
        float p = a[0];                                                        \
        for (size_t i = 0; i < n; i++) {                                       \
            float q = b[i];                                                    \
            o[i] = (expr);                                                     \
        }                                                                      \
    } else {                                                                   \
        float p = a[0], q = b[0], r = (expr);                                  \
        for (size_t i = 0; i < n; i++)                                         \
            o[i] = r;                                                          \
    }                                                                          \
    break

static void ew_binary(enum qp_ew_binary op, const float *a, bool av,
                      const float *b, bool bv, float *o, size_t n)
{
    switch (op) {
    case QP_EW_ADD: EW_BINARY_LOOPS(p + q);
    case QP_EW_SUB: EW_BINARY_LOOPS(p - q);
    case QP_EW_MUL: EW_BINARY_LOOPS(p * q);
    case QP_EW_DIV: EW_BINARY_LOOPS(p / q);
    case QP_EW_POW: EW_BINARY_LOOPS(powf(p, q));
    case QP_EW_MAX: EW_BINARY_LOOPS(isnan(p) || p > q ? p : q);
    case QP_EW_MIN: EW_BINARY_LOOPS(isnan(p) || p < q ? p : q);
    case QP_EW_BINARY_COUNT: break;
    }
}

/* the four operations in the four loops' order: a + c, clip, x * that,
 * then / d or * d */
static void ew_hswish_chain(const float *x, float add, float lo, float hi,
                            bool div, float d, float *o, size_t n)
{
    if (div)
        for (size_t i = 0; i < n; i++) {
            float v = x[i];
            o[i] = v * ew_clamp(v + add, lo, hi) / d;
        }
    else
        for (size_t i = 0; i < n; i++) {
            float v = x[i];
            o[i] = v * ew_clamp(v + add, lo, hi) * d;
        }
}

/* two roundings: the file is compiled without contraction into FMA */
static void ew_affine(const float *x, float a, float b, float *o, size_t n)
{
    for (size_t i = 0; i < n; i++)
        o[i] = x[i] * a + b;
}

#ifndef EW_EXP_SHIFTED
static void ew_exp_shifted(const float *x, float m, float *y, size_t n)
{
    for (size_t i = 0; i < n; i++)
        y[i] = expf(x[i] - m);
}
#define EW_EXP_SHIFTED ew_exp_shifted
#endif

const struct qp_ew_f32 EW_VARIANT = {EW_NAME, ew_unary, ew_binary,
                                     ew_hswish_chain, ew_affine, EW_EXP_SHIFTED};
