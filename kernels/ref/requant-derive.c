/* kernels/ref/requant-derive.c: (multiplier, shift) from real scales, as
 * each runtime derives them, and TFLite's quantized activation ranges. */
#include <float.h>
#include <math.h>
#include <string.h>
#include <strings.h>

#include "kernels/ref/requant-impl.h"
#include "kernels/requant.h"

#if FLT_EVAL_METHOD != 0
#error "requant: float arithmetic must be evaluated in its own type (SSE, not x87)"
#endif

static bool single_rounding_build(enum qp_rq_flavor f)
{
    return f == QP_RQ_TFLITE_SINGLE || f == QP_RQ_TFLITE_INT64_SINGLE ||
           f == QP_RQ_CMSIS_NN_SINGLE;
}

/* tflite::QuantizeMultiplier (quantization_util.cc, non-TFLITE_EMULATE_FLOAT
 * path). q = frexp(real) is in [0.5, 1) in magnitude, so q * 2^31 is exact
 * and std::round (half away from zero) of it is at most 2^31; 2^31 itself
 * (reals a hair below a power of two) becomes (2^30, shift + 1). A
 * negative q never hits that case (TFLite compares with +2^31 only) and
 * -2^31 narrows to INT32_MIN, as static_cast does. */
void qp_rq_quantize_multiplier(enum qp_rq_flavor f, double real,
                               int32_t *multiplier, int32_t *shift)
{
    if (real == 0.0 || !isfinite(real)) {
        *multiplier = 0;
        *shift = 0;
        return;
    }
    int e;
    double q = frexp(real, &e);
    int64_t q_fixed = (int64_t)round(q * 2147483648.0);
    if (q_fixed == (INT64_C(1) << 31)) {
        q_fixed /= 2;
        e++;
    }
    /* shifts below -31 would shift every bit out: TFLite flushes the
     * multiplier to zero instead ("flush denormals to zero") */
    if (e < -31) {
        e = 0;
        q_fixed = 0;
    }
    /* the single-rounding MultiplyByQuantizedMultiplier cannot shift left
     * by more than 30: that build saturates */
    if (single_rounding_build(f) && e > 30) {
        e = 30;
        q_fixed = INT32_MAX;
    }
    *multiplier = (int32_t)q_fixed;
    *shift = e;
}

/* xnn_init_qs8_conv_minmax_rndnu_neon_params: multiplier from the float's
 * mantissa, shift from its exponent (XNNPACK's right shift 126 - biased
 * exponent in [-8, 31], negated for the TFLite convention). */
enum qp_status qp_rq_rndnu_params(float scale, int32_t *multiplier,
                                  int32_t *shift, struct qp_error *err)
{
    if (!(scale > 0.0f) || !isnormal(scale) || scale >= 256.0f ||
        scale < 0x1p-32f)
        return qp_fail(err, QP_E_INVAL,
                       "xnnpack-rndnu: scale %.9g is outside XNNPACK's "
                       "[2^-32, 256) of normal floats",
                       (double)scale);
    uint32_t bits;
    memcpy(&bits, &scale, sizeof bits);
    *multiplier = (int32_t)(((bits & UINT32_C(0x007FFFFF)) | UINT32_C(0x00800000)) << 7);
    *shift = (int32_t)(bits >> 23) - 126;
    return QP_OK;
}

enum qp_status qp_rq_derive(enum qp_rq_flavor f, const double *real, size_t n,
                            int32_t *multiplier, int32_t *shift,
                            struct qp_error *err)
{
    if (!qp_rq_flavor_fixed(f))
        return qp_fail(err, QP_E_INVAL,
                       "%s multiplies by a float scale; it derives no "
                       "(multiplier, shift)",
                       qp_rq_flavor_name(f));
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(real[i]))
            return qp_fail(err, QP_E_INVAL, "%s: real multiplier [%zu] is %g",
                           qp_rq_flavor_name(f), i, real[i]);
        if (f != QP_RQ_XNNPACK_RNDNU) {
            qp_rq_quantize_multiplier(f, real[i], &multiplier[i], &shift[i]);
            continue;
        }
        enum qp_status st = qp_rq_rndnu_params((float)real[i], &multiplier[i],
                                               &shift[i], err);
        if (st != QP_OK)
            return qp_error_prefix(err, "[%zu] ", i);
    }
    return QP_OK;
}

enum qp_rq_product qp_rq_flavor_product(enum qp_rq_flavor f)
{
    switch (f) {
    case QP_RQ_XNNPACK_FP32:
    case QP_RQ_XNNPACK_RNDNU:
    case QP_RQ_ORT:
    case QP_RQ_ONNX_REF:
        return QP_RQ_PRODUCT_FLOAT;
    default:
        return QP_RQ_PRODUCT_DOUBLE;
    }
}

double qp_rq_effective_scale(enum qp_rq_product p, float in_scale,
                             float w_scale, float out_scale)
{
    switch (p) {
    case QP_RQ_PRODUCT_LEGACY_FLOAT: {
        /* static_cast<double>(input->params.scale * filter->params.scale) */
        float prod = in_scale * w_scale;
        return (double)prod / (double)out_scale;
    }
    case QP_RQ_PRODUCT_FLOAT: {
        /* input_scale * kernel_scale / output_scale in float32 */
        float prod = in_scale * w_scale;
        float s = prod / out_scale;
        return s;
    }
    default:
        return (double)in_scale * (double)w_scale / (double)out_scale;
    }
}

enum qp_status qp_rq_effective_checked(enum qp_rq_product p, float in_scale,
                                       float w_scale, size_t c,
                                       float out_scale, double *eff,
                                       struct qp_error *err)
{
    if (!(in_scale > 0) || !isfinite(in_scale) || !(out_scale > 0) ||
        !isfinite(out_scale) || !(w_scale > 0) || !isfinite(w_scale))
        return qp_fail(err, QP_E_INVAL,
                       "scales must be finite and > 0: input %g, weight[%zu] "
                       "%g, output %g",
                       in_scale, c, w_scale, out_scale);
    *eff = qp_rq_effective_scale(p, in_scale, w_scale, out_scale);
    return QP_OK;
}

enum qp_status qp_rq_derive_per_channel(enum qp_rq_flavor f,
                                        enum qp_rq_product p, float in_scale,
                                        const float *w_scale, size_t channels,
                                        float out_scale, int32_t *multiplier,
                                        int32_t *shift, struct qp_error *err)
{
    for (size_t c = 0; c < channels; c++) {
        double eff;
        enum qp_status st = qp_rq_effective_checked(p, in_scale, w_scale[c], c,
                                                    out_scale, &eff, err);
        if (st == QP_OK)
            st = qp_rq_derive(f, &eff, 1, &multiplier[c], &shift[c], err);
        if (st != QP_OK)
            return qp_error_prefix(err, "channel %zu: ", c);
    }
    return QP_OK;
}

/* ---- activation ranges ---- */

static const char *const act_names[] = {
    [QP_RQ_ACT_NONE] = "none",
    [QP_RQ_ACT_RELU] = "relu",
    [QP_RQ_ACT_RELU6] = "relu6",
    [QP_RQ_ACT_RELU_N1_TO_1] = "relu-n1-to-1",
};
_Static_assert(sizeof act_names / sizeof act_names[0] == QP_RQ_ACT_COUNT,
               "a name for every activation");

const char *qp_rq_act_name(enum qp_rq_act a)
{
    return (unsigned)a < QP_RQ_ACT_COUNT ? act_names[a] : "?";
}

bool qp_rq_act_from_name(const char *name, enum qp_rq_act *out)
{
    for (int a = 0; a < QP_RQ_ACT_COUNT; a++)
        if (!strcasecmp(name, act_names[a])) {
            *out = (enum qp_rq_act)a;
            return true;
        }
    if (!strcasecmp(name, "relu_n1_to_1")) {
        *out = QP_RQ_ACT_RELU_N1_TO_1;
        return true;
    }
    return false;
}

/* kernel_util.cc Quantize(): TfLiteRound(f / scale) in float32 (std::round:
 * half away from zero), refused unless it fits int32, plus the zero point
 * (an int32 add; in range here since |tmp| < 2^31 and the zero point is a
 * small output value, computed in int64 to stay defined). */
static enum qp_status quantize_bound(float scale, int32_t zp, float v,
                                     int32_t *q, struct qp_error *err)
{
    float tmp = roundf(v / scale);
    if (!(tmp >= -2147483648.0f && tmp < 2147483648.0f))
        return qp_fail(err, QP_E_INVAL,
                       "activation bound %g / output scale %g = %g does not "
                       "fit int32",
                       (double)v, (double)scale, (double)tmp);
    int64_t s = (int64_t)zp + (int64_t)tmp;
    *q = (int32_t)(s < INT32_MIN ? INT32_MIN : s > INT32_MAX ? INT32_MAX : s);
    return QP_OK;
}

enum qp_status qp_rq_activation_range(enum qp_rq_act a, float out_scale,
                                      int32_t zero_point, int32_t qmin,
                                      int32_t qmax, int32_t *act_min,
                                      int32_t *act_max, struct qp_error *err)
{
    static const float lo[] = {[QP_RQ_ACT_RELU] = 0.0f, [QP_RQ_ACT_RELU6] = 0.0f,
                               [QP_RQ_ACT_RELU_N1_TO_1] = -1.0f};
    static const float hi[] = {[QP_RQ_ACT_RELU6] = 6.0f, [QP_RQ_ACT_RELU_N1_TO_1] = 1.0f};
    *act_min = qmin;
    *act_max = qmax;
    if (a == QP_RQ_ACT_NONE)
        return QP_OK;
    if ((unsigned)a >= QP_RQ_ACT_COUNT)
        return qp_fail(err, QP_E_INVAL, "unknown activation %d", (int)a);
    int32_t q;
    enum qp_status st = quantize_bound(out_scale, zero_point, lo[a], &q, err);
    if (st != QP_OK)
        return st;
    *act_min = q > qmin ? q : qmin;
    if (a == QP_RQ_ACT_RELU)
        return QP_OK;
    if ((st = quantize_bound(out_scale, zero_point, hi[a], &q, err)) != QP_OK)
        return st;
    *act_max = q < qmax ? q : qmax;
    return QP_OK;
}
