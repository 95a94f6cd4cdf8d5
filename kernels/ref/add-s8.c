/* kernels/ref/add-s8.c: TFLite's quantized add, the reference
 * (kernels/add-s8.h). */
#include "kernels/add-s8.h"

#include "kernels/ref/ref-util.h"

enum qp_status qp_add_s8_check(const struct qp_add_s8_params *p,
                               struct qp_error *err)
{
    if (!qp_rq_flavor_fixed(p->flavor) || qp_rq_flavor_acc64(p->flavor) ||
        p->flavor == QP_RQ_XNNPACK_RNDNU)
        return qp_fail(err, QP_E_INVAL, "add: flavor '%s' is not a TFLite, "
                       "CMSIS-NN or gemmlowp int32 flavor",
                       qp_rq_flavor_name(p->flavor));
    if (p->dtype != QP_DTYPE_I8 && p->dtype != QP_DTYPE_U8)
        return qp_fail(err, QP_E_INVAL, "add: dtype %s is not int8 or uint8",
                       qp_dtype_name(p->dtype));
    if (p->left_shift < 0 || p->left_shift > 30)
        return qp_fail(err, QP_E_INVAL, "add: left shift %d outside 0..30",
                       p->left_shift);
    int32_t lo, hi;
    qp_rq_shift_range(p->flavor, &lo, &hi);
    const int32_t shifts[3] = {p->shift1, p->shift2, p->out_shift};
    static const char *const names[3] = {"input 1", "input 2", "output"};
    for (int i = 0; i < 3; i++)
        if (shifts[i] < lo || shifts[i] > hi)
            return qp_fail(err, QP_E_INVAL, "add: %s shift %d outside "
                           "[%d, %d]", names[i], (int)shifts[i], (int)lo,
                           (int)hi);
    int32_t dmin = p->dtype == QP_DTYPE_I8 ? -128 : 0;
    int32_t dmax = p->dtype == QP_DTYPE_I8 ? 127 : 255;
    if (p->act_min > p->act_max || p->act_min < dmin || p->act_max > dmax)
        return qp_fail(err, QP_E_INVAL, "add: activation range [%d, %d] is "
                       "empty or outside %s", (int)p->act_min,
                       (int)p->act_max, qp_dtype_name(p->dtype));
    return QP_OK;
}

int32_t qp_add_s8_rescale(const struct qp_add_s8_params *p, int32_t x,
                          int32_t zp, int32_t m, int32_t shift)
{
    uint32_t a = ((uint32_t)x - (uint32_t)zp) << p->left_shift;
    return qp_rq_scale_fixed(p->flavor, (int32_t)a, m, shift);
}

void qp_add_s8_ref(const struct qp_add_s8_params *p, const void *x1,
                   const void *x2, size_t n, size_t n2, void *out)
{
    for (size_t i = 0; i < n; i++) {
        int32_t v1 = qp_add_s8_rescale(p, qp_kern_load8(p->dtype, x1, i),
                                       p->zero_point1, p->multiplier1,
                                       p->shift1);
        int32_t v2 = qp_add_s8_rescale(p, qp_kern_load8(p->dtype, x2, i % n2),
                                       p->zero_point2, p->multiplier2,
                                       p->shift2);
        int32_t sum = (int32_t)((uint32_t)v1 + (uint32_t)v2);
        int32_t o = qp_rq_scale_fixed(p->flavor, sum, p->out_multiplier,
                                      p->out_shift);
        o = (int32_t)((uint32_t)o + (uint32_t)p->out_zero_point);
        o = o < p->act_min ? p->act_min : o > p->act_max ? p->act_max : o;
        if (p->dtype == QP_DTYPE_I8)
            ((int8_t *)out)[i] = (int8_t)o;
        else
            ((uint8_t *)out)[i] = (uint8_t)o;
    }
}
