/* kernels/ref/eltwise-f32.c: the reference elementwise loops
 * (kernels/eltwise-f32.h) and the double forms of the unary functions. */
#include <math.h>

#include "kernels/eltwise-f32.h"

#define EW_VARIANT qp_ew_f32_ref
#define EW_NAME "ref"
#include "kernels/eltwise-f32-body.h"

double qp_ew_unary_f64(enum qp_ew_unary op, float alpha, float beta, double x)
{
    switch (op) {
    case QP_EW_RELU: return x > 0 ? x : 0;
    case QP_EW_LEAKY: return x >= 0 ? x : alpha * x;
    case QP_EW_SIGMOID: return 1.0 / (1.0 + exp(-x));
    case QP_EW_HSIGMOID: return fmax(0.0, fmin(1.0, alpha * x + beta));
    case QP_EW_HSWISH: return x * fmax(0.0, fmin(1.0, x / 6.0 + 0.5));
    case QP_EW_TANH: return tanh(x);
    case QP_EW_ERF: return erf(x);
    case QP_EW_GELU: return 0.5 * x * (1.0 + erf(x * M_SQRT1_2));
    case QP_EW_GELU_TANH:
        return 0.5 * x *
               (1.0 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
    case QP_EW_ELU: return x >= 0 ? x : alpha * (exp(x) - 1.0);
    case QP_EW_SQRT: return sqrt(x);
    case QP_EW_EXP: return exp(x);
    case QP_EW_LOG: return log(x);
    case QP_EW_NEG: return -x;
    case QP_EW_ABS: return fabs(x);
    case QP_EW_RECIP: return 1.0 / x;
    case QP_EW_FLOOR: return floor(x);
    case QP_EW_CEIL: return ceil(x);
    case QP_EW_CLIP: return x < alpha ? alpha : x > beta ? beta : x;
    case QP_EW_UNARY_COUNT: break;
    }
    return x;
}
