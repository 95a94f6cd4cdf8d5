/* kernels/ref/requant-prepare.c: flavor names and the checked construction
 * of struct qp_rq (qp_rq_prepare_*). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "kernels/ref/requant-impl.h"
#include "kernels/requant.h"

static const char *const flavor_names[] = {
    [QP_RQ_TFLITE_DOUBLE] = "tflite-double",
    [QP_RQ_TFLITE_SINGLE] = "tflite-single",
    [QP_RQ_TFLITE_INT64_DOUBLE] = "tflite-int64-double",
    [QP_RQ_TFLITE_INT64_SINGLE] = "tflite-int64-single",
    [QP_RQ_CMSIS_NN_DOUBLE] = "cmsis-nn-double",
    [QP_RQ_CMSIS_NN_SINGLE] = "cmsis-nn-single",
    [QP_RQ_CMSIS_NN_S64] = "cmsis-nn-s64",
    [QP_RQ_GEMMLOWP] = "gemmlowp",
    [QP_RQ_XNNPACK_FP32] = "xnnpack-fp32",
    [QP_RQ_XNNPACK_RNDNU] = "xnnpack-rndnu",
    [QP_RQ_ONNX_REF] = "onnx-ref",
    [QP_RQ_ORT] = "ort",
};
_Static_assert(sizeof flavor_names / sizeof flavor_names[0] == QP_RQ_COUNT,
               "a name for every flavor");

static const struct {
    const char *name;
    enum qp_rq_flavor f;
} aliases[] = {
    {"tflite", QP_RQ_TFLITE_DOUBLE},
    {"cmsis-nn", QP_RQ_CMSIS_NN_DOUBLE},
    {"onnx", QP_RQ_ONNX_REF},
};

const char *qp_rq_flavor_name(enum qp_rq_flavor f)
{
    return (unsigned)f < QP_RQ_COUNT ? flavor_names[f] : "?";
}

bool qp_rq_flavor_from_name(const char *name, enum qp_rq_flavor *out)
{
    for (int f = 0; f < QP_RQ_COUNT; f++)
        if (!strcasecmp(name, flavor_names[f])) {
            *out = (enum qp_rq_flavor)f;
            return true;
        }
    for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
        if (!strcasecmp(name, aliases[i].name)) {
            *out = aliases[i].f;
            return true;
        }
    return false;
}

const char *qp_rq_flavor_list(void)
{
    return "tflite-double (tflite), tflite-single, tflite-int64-double, "
           "tflite-int64-single, cmsis-nn-double (cmsis-nn), cmsis-nn-single, "
           "cmsis-nn-s64, gemmlowp, xnnpack-fp32, xnnpack-rndnu, "
           "onnx-ref (onnx), ort";
}

bool qp_rq_flavor_acc64(enum qp_rq_flavor f)
{
    return f == QP_RQ_TFLITE_INT64_DOUBLE || f == QP_RQ_TFLITE_INT64_SINGLE ||
           f == QP_RQ_CMSIS_NN_S64;
}

bool qp_rq_flavor_fixed(enum qp_rq_flavor f)
{
    return f != QP_RQ_XNNPACK_FP32 && f != QP_RQ_ORT && f != QP_RQ_ONNX_REF &&
           (unsigned)f < QP_RQ_COUNT;
}

static bool is_xnnpack(enum qp_rq_flavor f)
{
    return f == QP_RQ_XNNPACK_FP32 || f == QP_RQ_XNNPACK_RNDNU;
}

void qp_rq_shift_range(enum qp_rq_flavor f, int32_t *lo, int32_t *hi)
{
    *lo = -31;
    *hi = qp_rq_flavor_acc64(f) ? 7 : f == QP_RQ_XNNPACK_RNDNU ? 8 : 30;
}

void qp_rq_release(struct qp_rq *rq)
{
    free(rq->multiplier);
    free(rq->shift);
    free(rq->scale);
    free(rq->scale_d);
    memset(rq, 0, sizeof *rq);
}

enum qp_status qp_rq_check_output(enum qp_rq_flavor f, int32_t zp,
                                  enum qp_dtype out, int32_t qmin,
                                  int32_t qmax, struct qp_error *err)
{
    if ((unsigned)f >= QP_RQ_COUNT)
        return qp_fail(err, QP_E_INVAL, "unknown requantization flavor %d", (int)f);
    const char *fn = flavor_names[f];
    if (out != QP_DTYPE_I8 && out != QP_DTYPE_U8 && out != QP_DTYPE_I16)
        return qp_fail(err, QP_E_INVAL,
                       "%s: output dtype %s is not i8, u8 or i16", fn,
                       qp_dtype_name(out));
    if (is_xnnpack(f) && out == QP_DTYPE_I16)
        return qp_fail(err, QP_E_INVAL,
                       "%s: XNNPACK requantizes to i8 or u8, not i16", fn);
    const struct qp_dtype_traits *tr = qp_dtype_traits(out);
    if (zp < tr->min || zp > tr->max)
        return qp_fail(err, QP_E_INVAL,
                       "%s: zero point %d is outside the %s range [%lld, %lld]",
                       fn, zp, tr->name, (long long)tr->min, (long long)tr->max);
    if (qmin < tr->min || qmax > tr->max)
        return qp_fail(err, QP_E_INVAL,
                       "%s: clamp [%d, %d] is outside the %s range [%lld, %lld]",
                       fn, qmin, qmax, tr->name, (long long)tr->min,
                       (long long)tr->max);
    if (qmin > qmax || (is_xnnpack(f) && qmin == qmax))
        return qp_fail(err, QP_E_INVAL, "%s: qmin %d must be %s qmax %d", fn,
                       qmin, is_xnnpack(f) ? "below (XNNPACK)" : "at most", qmax);
    return QP_OK;
}

/* Checks what every flavor needs and fills the scalar fields. */
static enum qp_status init_common(struct qp_rq *rq, enum qp_rq_flavor f,
                                  size_t channels, int32_t zp,
                                  enum qp_dtype out, int32_t qmin,
                                  int32_t qmax, struct qp_error *err)
{
    memset(rq, 0, sizeof *rq);
    enum qp_status st = qp_rq_check_output(f, zp, out, qmin, qmax, err);
    if (st != QP_OK)
        return st;
    if (channels == 0)
        return qp_fail(err, QP_E_INVAL, "%s: no channels", flavor_names[f]);
    rq->flavor = f;
    rq->channels = channels;
    rq->zero_point = zp;
    rq->qmin = qmin;
    rq->qmax = qmax;
    rq->out_dtype = out;
    return QP_OK;
}

static enum qp_status alloc_arrays(struct qp_rq *rq, bool fixed, bool f32,
                                   bool f64, struct qp_error *err)
{
    size_t n = rq->channels;
    if (n > SIZE_MAX / sizeof(double))
        return qp_fail(err, QP_E_OVERFLOW, "%zu channels overflow", n);
    if (fixed) {
        rq->multiplier = malloc(n * sizeof *rq->multiplier);
        rq->shift = malloc(n * sizeof *rq->shift);
    }
    if (f32)
        rq->scale = malloc(n * sizeof *rq->scale);
    if (f64)
        rq->scale_d = malloc(n * sizeof *rq->scale_d);
    if ((fixed && (!rq->multiplier || !rq->shift)) || (f32 && !rq->scale) ||
        (f64 && !rq->scale_d)) {
        qp_rq_release(rq);
        return qp_fail(err, QP_E_NOMEM, "out of memory for %zu channels", n);
    }
    return QP_OK;
}

static enum qp_status check_shift(enum qp_rq_flavor f, size_t c,
                                  int32_t shift, struct qp_error *err)
{
    int32_t lo, hi;
    qp_rq_shift_range(f, &lo, &hi);
    if (shift < lo || shift > hi)
        return qp_fail(err, QP_E_INVAL,
                       "%s: shift[%zu] = %d is outside [%d, %d] (shift > 0 "
                       "shifts left)",
                       flavor_names[f], c, shift, lo, hi);
    return QP_OK;
}

/* rq->right_only from its multipliers and shifts */
static void set_right_only(struct qp_rq *rq)
{
    rq->right_only = true;
    for (size_t c = 0; c < rq->channels; c++)
        rq->right_only &= rq->shift[c] <= 0 && rq->multiplier[c] != INT32_MIN;
}

enum qp_status qp_rq_prepare_fixed(struct qp_rq *rq, enum qp_rq_flavor f,
                                   const int32_t *multiplier,
                                   const int32_t *shift, size_t channels,
                                   int32_t zero_point, enum qp_dtype out_dtype,
                                   int32_t qmin, int32_t qmax,
                                   struct qp_error *err)
{
    enum qp_status st = init_common(rq, f, channels, zero_point, out_dtype,
                                    qmin, qmax, err);
    if (st != QP_OK)
        return st;
    if (!qp_rq_flavor_fixed(f)) {
        memset(rq, 0, sizeof *rq);
        return qp_fail(err, QP_E_INVAL,
                       "%s multiplies by a float scale, not by (multiplier, "
                       "shift): give scales",
                       flavor_names[f]);
    }
    for (size_t c = 0; c < channels; c++) {
        if ((st = check_shift(f, c, shift[c], err)) != QP_OK) {
            memset(rq, 0, sizeof *rq);
            return st;
        }
        if (f == QP_RQ_XNNPACK_RNDNU && multiplier[c] < 0) {
            memset(rq, 0, sizeof *rq);
            return qp_fail(err, QP_E_INVAL,
                           "%s: multiplier[%zu] = %d is negative",
                           flavor_names[f], c, multiplier[c]);
        }
    }
    if ((st = alloc_arrays(rq, true, false, false, err)) != QP_OK)
        return st;
    memcpy(rq->multiplier, multiplier, channels * sizeof *multiplier);
    memcpy(rq->shift, shift, channels * sizeof *shift);
    set_right_only(rq);
    return QP_OK;
}

/* XNNPACK's checks on a requantization scale (xnn_create_* refuse scales
 * >= 256 and non-normal ones; the rndnu parameters need >= 2^-32). */
static enum qp_status check_xnnpack_scale(enum qp_rq_flavor f, size_t c,
                                          double s, struct qp_error *err)
{
    float sf = (float)s;
    if (!(sf > 0.0f) || !isnormal(sf) || sf >= 256.0f ||
        (f == QP_RQ_XNNPACK_RNDNU && sf < 0x1p-32f))
        return qp_fail(err, QP_E_INVAL,
                       "%s: scale[%zu] = %.9g: XNNPACK requires a normal "
                       "float32 scale in (0, 256)%s",
                       flavor_names[f], c, s,
                       f == QP_RQ_XNNPACK_RNDNU ? ", rndnu also >= 2^-32" : "");
    return QP_OK;
}

enum qp_status qp_rq_prepare_float(struct qp_rq *rq, enum qp_rq_flavor f,
                                   const double *scale, size_t channels,
                                   int32_t zero_point, enum qp_dtype out_dtype,
                                   int32_t qmin, int32_t qmax,
                                   struct qp_error *err)
{
    enum qp_status st = init_common(rq, f, channels, zero_point, out_dtype,
                                    qmin, qmax, err);
    if (st != QP_OK)
        return st;
    for (size_t c = 0; c < channels; c++) {
        double s = scale[c];
        if (!(s > 0.0) || !isfinite(s))
            st = qp_fail(err, QP_E_INVAL, "%s: scale[%zu] = %g must be "
                         "finite and > 0", flavor_names[f], c, s);
        else if (is_xnnpack(f))
            st = check_xnnpack_scale(f, c, s, err);
        else if (f == QP_RQ_ORT && !isfinite((float)s))
            st = qp_fail(err, QP_E_INVAL, "%s: scale[%zu] = %g overflows "
                         "float32", flavor_names[f], c, s);
        if (st != QP_OK) {
            memset(rq, 0, sizeof *rq);
            return st;
        }
    }
    bool fixed = qp_rq_flavor_fixed(f);
    st = alloc_arrays(rq, fixed, f == QP_RQ_XNNPACK_FP32 || f == QP_RQ_ORT ||
                                     f == QP_RQ_XNNPACK_RNDNU,
                      f == QP_RQ_ONNX_REF, err);
    if (st != QP_OK)
        return st;
    for (size_t c = 0; c < channels; c++) {
        if (rq->scale)
            rq->scale[c] = (float)scale[c];
        if (rq->scale_d)
            rq->scale_d[c] = scale[c];
    }
    if (!fixed)
        return QP_OK;
    st = qp_rq_derive(f, scale, channels, rq->multiplier, rq->shift, err);
    for (size_t c = 0; st == QP_OK && c < channels; c++) {
        int32_t lo, hi;
        qp_rq_shift_range(f, &lo, &hi);
        if (rq->shift[c] < lo || rq->shift[c] > hi)
            st = qp_fail(err, QP_E_INVAL,
                         "%s: scale[%zu] = %.9g gives shift %d, outside the "
                         "[%d, %d] the runtime accepts",
                         flavor_names[f], c, scale[c], rq->shift[c], lo, hi);
    }
    if (st != QP_OK)
        qp_rq_release(rq);
    else
        set_right_only(rq);
    return st;
}

enum qp_status qp_rq_prepare_scales(struct qp_rq *rq, enum qp_rq_flavor f,
                                    float in_scale, const float *w_scale,
                                    size_t channels, float out_scale,
                                    int32_t zero_point, enum qp_dtype out_dtype,
                                    int32_t qmin, int32_t qmax,
                                    struct qp_error *err)
{
    memset(rq, 0, sizeof *rq);
    if ((unsigned)f >= QP_RQ_COUNT)
        return qp_fail(err, QP_E_INVAL, "unknown requantization flavor %d", (int)f);
    if (channels == 0)
        return qp_fail(err, QP_E_INVAL, "%s: no channels", flavor_names[f]);
    if (channels > SIZE_MAX / sizeof(double))
        return qp_fail(err, QP_E_OVERFLOW, "%zu channels overflow", channels);
    double *eff = malloc(channels * sizeof *eff);
    if (!eff)
        return qp_fail(err, QP_E_NOMEM, "out of memory for %zu channels", channels);
    enum qp_rq_product p = qp_rq_flavor_product(f);
    enum qp_status st = QP_OK;
    for (size_t c = 0; c < channels && st == QP_OK; c++)
        st = qp_rq_effective_checked(p, in_scale, w_scale[c], c, out_scale,
                                     &eff[c], err);
    if (st != QP_OK)
        qp_error_prefix(err, "%s: ", flavor_names[f]);
    else
        st = qp_rq_prepare_float(rq, f, eff, channels, zero_point, out_dtype,
                                 qmin, qmax, err);
    free(eff);
    return st;
}
