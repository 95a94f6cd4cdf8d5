/* kernels/fixedpoint.h: gemmlowp's fixed-point arithmetic on int32, the
 * building blocks of TFLite's integer softmax, logistic and tanh
 * (gemmlowp/fixedpoint/fixedpoint.h semantics, written out in C).
 *
 * A Q(i) value has i integer bits and 31 - i fractional bits in an int32
 * raw value. Products of Q(a) and Q(b) are Q(a + b) through
 * SaturatingRoundingDoublingHighMul; sums wrap modulo 2^32 as the
 * compiled C++ does on the ranges these functions see. */
#ifndef QP_KERNELS_FIXEDPOINT_H
#define QP_KERNELS_FIXEDPOINT_H

#include <stdint.h>

/* (a * b * 2 + 2^31 rounding away from zero) >> 32, saturating the single
 * overflow case a == b == INT32_MIN. */
static inline int32_t qp_fx_srdhm(int32_t a, int32_t b)
{
    if (a == b && a == INT32_MIN)
        return INT32_MAX;
    int64_t ab = (int64_t)a * b;
    int64_t nudge = ab >= 0 ? (1 << 30) : (1 - (1 << 30));
    /* C division truncates toward zero, as gemmlowp's */
    return (int32_t)((ab + nudge) / ((int64_t)1 << 31));
}

/* x / 2^e rounded half away from zero (gemmlowp's RoundingDivideByPOT),
 * 0 <= e <= 31. */
static inline int32_t qp_fx_rdbypot(int32_t x, int e)
{
    int32_t mask = (int32_t)(((int64_t)1 << e) - 1);
    int32_t rem = x & mask;
    int32_t threshold = (mask >> 1) + (x < 0 ? 1 : 0);
    return (x >> e) + (rem > threshold ? 1 : 0);
}

/* x * 2^e, saturating for e > 0, rounding (qp_fx_rdbypot) for e < 0. */
static inline int32_t qp_fx_mul_pot(int32_t x, int e)
{
    if (e < 0)
        return qp_fx_rdbypot(x, -e);
    if (e == 0)
        return x;
    int32_t threshold = (int32_t)(((int64_t)1 << (31 - e)) - 1);
    if (x > threshold)
        return INT32_MAX;
    if (x < -threshold)
        return INT32_MIN;
    return (int32_t)((uint32_t)x << e);
}

static inline int32_t qp_fx_add(int32_t a, int32_t b)
{
    return (int32_t)((uint32_t)a + (uint32_t)b);
}

static inline int32_t qp_fx_sub(int32_t a, int32_t b)
{
    return (int32_t)((uint32_t)a - (uint32_t)b);
}

/* Q(from) -> Q(to) (gemmlowp's Rescale). */
static inline int32_t qp_fx_rescale(int32_t x, int from, int to)
{
    return qp_fx_mul_pot(x, from - to);
}

/* exp(a) for a Q0 value a in [-1/4, 0), as a Q0 value. */
static inline int32_t qp_fx_exp_quarter(int32_t a)
{
    const int32_t constant_term = 1895147668;  /* exp(-1/8) */
    const int32_t constant_1_over_3 = 715827883;
    int32_t x = qp_fx_add(a, 1 << 28);         /* a + 1/8 */
    int32_t x2 = qp_fx_srdhm(x, x);
    int32_t x3 = qp_fx_srdhm(x2, x);
    int32_t x4 = qp_fx_srdhm(x2, x2);
    int32_t x4_over_4 = qp_fx_mul_pot(x4, -2);
    int32_t poly = qp_fx_mul_pot(
        qp_fx_add(qp_fx_srdhm(qp_fx_add(x4_over_4, x3), constant_1_over_3), x2),
        -1);
    return qp_fx_add(constant_term,
                     qp_fx_srdhm(constant_term, qp_fx_add(x, poly)));
}

/* exp(a) for a Q(ib) value a <= 0, as a Q0 value (exp_on_negative_values). */
static inline int32_t qp_fx_exp_neg(int32_t a, int ib)
{
    int fb = 31 - ib;
    int32_t quarter = (int32_t)1 << (fb - 2);
    int32_t mask = quarter - 1;
    int32_t a_mod = qp_fx_sub(a & mask, quarter);
    int32_t result = qp_fx_exp_quarter(qp_fx_rescale(a_mod, ib, 0));
    int32_t rem = qp_fx_sub(a_mod, a);
    static const int32_t mult[7] = {1672461947, 1302514674, 790015084,
                                    290630308,  39332535,   720401, 242};
    for (int e = -2; e <= 4; e++)
        if (ib > e) {
            int shift = fb + e;
            if (rem & ((int32_t)1 << shift))
                result = qp_fx_srdhm(result, mult[e + 2]);
        }
    if (ib > 5) {
        int32_t clamp = -((int32_t)1 << (36 - ib)); /* -32 */
        if (a < clamp)
            result = 0;
    }
    return a == 0 ? INT32_MAX : result;
}

/* Newton-Raphson for 1 / (1 + a), a Q0 value in [0, 1]: the Q2 estimate of
 * 1 / ((1 + a) / 2) both reciprocals below start from (gemmlowp's 48/17 -
 * 32/17 seed, three iterations). */
static inline int32_t qp_fx_nr_q2(int32_t a)
{
    int64_t sum = (int64_t)a + INT32_MAX;
    int32_t half_den = (int32_t)((sum + (sum >= 0 ? 1 : -1)) / 2);
    const int32_t c48_17 = 1515870810, cneg32_17 = -1010580540; /* Q2 */
    int32_t x = qp_fx_add(c48_17, qp_fx_srdhm(half_den, cneg32_17));
    for (int i = 0; i < 3; i++) {
        int32_t hdx = qp_fx_srdhm(half_den, x);                  /* Q2 */
        int32_t one_minus = qp_fx_sub((int32_t)1 << 29, hdx);    /* Q2 */
        x = qp_fx_add(x, qp_fx_rescale(qp_fx_srdhm(x, one_minus), 4, 2));
    }
    return x;
}

/* 1 / (1 + a) for a Q0 value a in [0, 1), as a Q0 value
 * (one_over_one_plus_x_for_x_in_0_1: ExactMulByPot<-1> reads the Q2
 * estimate as Q1). */
static inline int32_t qp_fx_one_over_one_plus(int32_t a)
{
    return qp_fx_rescale(qp_fx_nr_q2(a), 1, 0);
}

/* (1 - a) / (1 + a) for a Q0 value a in [0, 1], as a Q0 value
 * (one_minus_x_over_one_plus_x_for_x_in_0_1: 2 / (1 + a) - 1). */
static inline int32_t qp_fx_one_minus_over_one_plus(int32_t a)
{
    return qp_fx_rescale(qp_fx_sub(qp_fx_nr_q2(a), (int32_t)1 << 29), 2, 0);
}

/* gemmlowp's logistic of a Q(ib) value, as a Q0 value. */
static inline int32_t qp_fx_logistic(int32_t a, int ib)
{
    if (a == 0)
        return 1 << 30; /* one half */
    int32_t abs_a = a > 0 ? a : qp_fx_sub(0, a);
    int32_t pos = qp_fx_one_over_one_plus(qp_fx_exp_neg(qp_fx_sub(0, abs_a), ib));
    return a > 0 ? pos : qp_fx_sub(INT32_MAX, pos);
}

/* gemmlowp's tanh of a Q(ib) value, as a Q0 value. */
static inline int32_t qp_fx_tanh(int32_t a, int ib)
{
    if (a == 0)
        return 0;
    int32_t n = a < 0 ? a : qp_fx_sub(0, a);
    /* ExactMulByPot<1>: the same raw value read as Q(ib + 1), i.e. 2n */
    int32_t t = qp_fx_one_minus_over_one_plus(qp_fx_exp_neg(n, ib + 1));
    return a < 0 ? qp_fx_sub(0, t) : t;
}

/* TFLite's GetReciprocal: 1 / x for a Q(int_digits) value x > 0, as a Q0
 * mantissa with *bits_over_unit the exponent to apply. */
static inline int32_t qp_fx_reciprocal(int32_t x, int int_digits,
                                       int *bits_over_unit)
{
    int lz = x ? __builtin_clz((uint32_t)x) : 32;
    *bits_over_unit = int_digits - lz;
    int32_t shifted = (int32_t)(((uint64_t)(uint32_t)x << lz) - ((uint64_t)1 << 31));
    return qp_fx_one_over_one_plus(shifted);
}

#endif
