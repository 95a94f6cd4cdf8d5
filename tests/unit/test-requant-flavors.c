/* Hand-computed tests of each requantization flavor, in and out of the
 * runtimes' input contracts (kernels/requant.h). Every expected value below
 * is worked out in the comment next to it. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/requant.h"
#include "tests/test.h"

#define SCALE(f, x, m, s) qp_rq_scale_fixed(QP_RQ_##f, (x), (m), (s))

QP_TEST(requant_double_vs_single_rounding)
{
    /* real 0.25 = (2^30, -1). x = 1: SRDHM(1, 2^30) = 0.5 rounded up = 1,
     * then RoundingDivideByPOT(1, 1) = 0.5 away from zero = 1; single
     * rounding: (2^30 + 2^31) >> 32 = 0 (0.25 -> 0). */
    CHECK_INT(SCALE(TFLITE_DOUBLE, 1, 1 << 30, -1), 1);
    CHECK_INT(SCALE(TFLITE_SINGLE, 1, 1 << 30, -1), 0);
    CHECK_INT(SCALE(CMSIS_NN_DOUBLE, 1, 1 << 30, -1), 1);
    CHECK_INT(SCALE(CMSIS_NN_SINGLE, 1, 1 << 30, -1), 0);
    CHECK_INT(SCALE(GEMMLOWP, 1, 1 << 30, -1), 1);
    /* x = -2 (-0.5): SRDHM = -1 exactly, RDBPOT(-1, 1) = -0.5 away = -1;
     * single: (-2^31 + 2^31) >> 32 = 0 (half up) */
    CHECK_INT(SCALE(TFLITE_DOUBLE, -2, 1 << 30, -1), -1);
    CHECK_INT(SCALE(TFLITE_SINGLE, -2, 1 << 30, -1), 0);
    /* x = -3 (-0.75): SRDHM(-3, 2^30) = -1.5 up = -1, RDBPOT(-1, 1) = -1;
     * single: (-3 * 2^30 + 2^31) >> 32 = -2^30 >> 32 = -1 */
    CHECK_INT(SCALE(TFLITE_DOUBLE, -3, 1 << 30, -1), -1);
    CHECK_INT(SCALE(TFLITE_SINGLE, -3, 1 << 30, -1), -1);
    /* real 0.5, x = 3 and -3: 1.5 -> 2, -1.5 -> -1 (both half up) */
    CHECK_INT(SCALE(TFLITE_DOUBLE, 3, 1 << 30, 0), 2);
    CHECK_INT(SCALE(TFLITE_DOUBLE, -3, 1 << 30, 0), -1);
    CHECK_INT(SCALE(TFLITE_SINGLE, -3, 1 << 30, 0), -1);
    /* largest right shift: x = INT32_MIN, (2^30, -31) = 2^-32 * ... real
     * 2^-32: SRDHM = -2^30, RDBPOT(-2^30, 31): remainder 2^30, threshold
     * 2^30 - 1 + 1, not above: -2^30 >> 31 = -1 (-0.5 away from zero) */
    CHECK_INT(SCALE(TFLITE_DOUBLE, INT32_MIN, 1 << 30, -31), -1);
    CHECK_INT(SCALE(TFLITE_SINGLE, INT32_MIN, 1 << 30, -31), 0);
}

QP_TEST(requant_out_of_contract_per_runtime)
{
    /* left shift overflow, real 2.0 = (2^30, 2): x = 2^30, x * 4 = 2^32.
     * TFLite/CMSIS wrap it to 0 -> 0; gemmlowp saturates to INT32_MAX and
     * SRDHM(2^31 - 1, 2^30) = (2^61 - 2^30 + 2^30) / 2^31 = 2^30. */
    CHECK_INT(SCALE(TFLITE_DOUBLE, 1 << 30, 1 << 30, 2), 0);
    CHECK_INT(SCALE(CMSIS_NN_DOUBLE, 1 << 30, 1 << 30, 2), 0);
    CHECK_INT(SCALE(GEMMLOWP, 1 << 30, 1 << 30, 2), 1 << 30);
    /* x = 3 * 2^29, x * 2 = 3 * 2^30 wraps to -2^30: SRDHM(-2^30, 2^30) =
     * -2^29 in TFLite; gemmlowp saturates x' to 2^31 - 1 -> 2^30 */
    CHECK_INT(SCALE(TFLITE_DOUBLE, 3 << 29, 1 << 30, 1), -(1 << 29));
    CHECK_INT(SCALE(GEMMLOWP, 3 << 29, 1 << 30, 1), 1 << 30);
    /* INT32_MIN * INT32_MIN (a negative multiplier, outside TFLite's
     * contract): gemmlowp saturates to INT32_MAX, CMSIS-NN's no_sat wraps
     * to INT32_MIN */
    CHECK_INT(SCALE(TFLITE_DOUBLE, INT32_MIN, INT32_MIN, 0), INT32_MAX);
    CHECK_INT(SCALE(GEMMLOWP, INT32_MIN, INT32_MIN, 0), INT32_MAX);
    CHECK_INT(SCALE(CMSIS_NN_DOUBLE, INT32_MIN, INT32_MIN, 0), INT32_MIN);
    /* single rounding, result beyond int32: x = M = 2^31 - 1, shift 30:
     * ((2^31-1)^2 + 1) >> 1 = 2^61 - 2^31 + 1, narrowed mod 2^32 to
     * -2^31 + 1 (TFLite release build; debug builds abort) */
    CHECK_INT(SCALE(TFLITE_SINGLE, INT32_MAX, INT32_MAX, 30), -2147483647);
    /* CMSIS-NN single shifts by total - 1, adds 1 and shifts once more,
     * all in int64 (arm_nn_requantize at the golden README's commit):
     * x = 2^20, real 2^10 = (2^30, 11): prod >> 19 = 2^31, (2^31 + 1) >> 1
     * = 2^30, as TFLite. (An implementation that narrowed to 32 bits
     * before the last step would get -2^30.) */
    CHECK_INT(SCALE(TFLITE_SINGLE, 1 << 20, 1 << 30, 11), 1 << 30);
    CHECK_INT(SCALE(CMSIS_NN_SINGLE, 1 << 20, 1 << 30, 11), 1 << 30);
    /* one below: x = 2^20 - 1: (2^50 - 2^30 + 2^19) >> 20 = 2^30 - 1024
     * in both */
    CHECK_INT(SCALE(TFLITE_SINGLE, (1 << 20) - 1, 1 << 30, 11), 1073740800);
    CHECK_INT(SCALE(CMSIS_NN_SINGLE, (1 << 20) - 1, 1 << 30, 11), 1073740800);
}

QP_TEST(requant_int64_paths)
{
    int64_t x = INT64_C(1) << 31;
    /* real 0.5 = (2^30, 0): reduced multiplier 2^14, total shift 15.
     * x = 2^31: TFLite (2^45 + 2^14) >> 15 = 2^30; CMSIS-NN s64: 2^45 >>
     * 14 = 2^31 truncated to INT32_MIN, (INT32_MIN + 1) >> 1 = -2^30 */
    CHECK_INT(SCALE(TFLITE_INT64_DOUBLE, x, 1 << 30, 0), 1 << 30);
    CHECK_INT(SCALE(TFLITE_INT64_SINGLE, x, 1 << 30, 0), 1 << 30);
    CHECK_INT(SCALE(CMSIS_NN_S64, x, 1 << 30, 0), -(1 << 30));
    /* x = 2^32: TFLite 2^31 narrows to INT32_MIN; CMSIS 2^32 -> 0 -> 0 */
    CHECK_INT(SCALE(TFLITE_INT64_DOUBLE, 2 * x, 1 << 30, 0), INT32_MIN);
    CHECK_INT(SCALE(CMSIS_NN_S64, 2 * x, 1 << 30, 0), 0);
    /* in range they agree: x = -3, 0.5 -> -1.5 rounds half up to -1:
     * (-3 * 2^14 + 2^14) >> 15 = -1; CMSIS (-3 * 2^14 >> 14) = -3, (-3 +
     * 1) >> 1 = -1 */
    CHECK_INT(SCALE(TFLITE_INT64_DOUBLE, -3, 1 << 30, 0), -1);
    CHECK_INT(SCALE(CMSIS_NN_S64, -3, 1 << 30, 0), -1);
    /* REDUCE_MULTIPLIER saturates from 0x7FFF0000: x = 2^16, shift 0 ->
     * 2^16 * 0x7FFF / 2^15 = 65534 for M = 2^31 - 1 (not 65536), and
     * 0x7FFEFFFF reduces to 0x7FFF as well; 0x40008000 rounds up to
     * 0x4001: 2^16 * 0x4001 / 2^15 = 32770 */
    CHECK_INT(SCALE(TFLITE_INT64_DOUBLE, 1 << 16, INT32_MAX, 0), 65534);
    CHECK_INT(SCALE(TFLITE_INT64_DOUBLE, 1 << 16, 0x7FFEFFFF, 0), 65534);
    CHECK_INT(SCALE(CMSIS_NN_S64, 1 << 16, 0x40008000, 0), 32770);
    /* a 40-bit accumulator, real 2^-20 = (2^30, -19): 2^40 * 2^-20 */
    CHECK_INT(SCALE(TFLITE_INT64_DOUBLE, INT64_C(1) << 40, 1 << 30, -19), 1 << 20);
}

static struct qp_rq prep_fixed(struct qp_test_ctx *ctx, enum qp_rq_flavor f,
                               int32_t m, int32_t s, int32_t zp,
                               enum qp_dtype dt, int32_t lo, int32_t hi)
{
    struct qp_rq rq;
    struct qp_error err;
    CHECK_OK(qp_rq_prepare_fixed(&rq, f, &m, &s, 1, zp, dt, lo, hi, &err), &err);
    return rq;
}

static struct qp_rq prep_float(struct qp_test_ctx *ctx, enum qp_rq_flavor f,
                               double scale, int32_t zp, enum qp_dtype dt,
                               int32_t lo, int32_t hi)
{
    struct qp_rq rq;
    struct qp_error err;
    CHECK_OK(qp_rq_prepare_float(&rq, f, &scale, 1, zp, dt, lo, hi, &err), &err);
    return rq;
}

QP_TEST(requant_xnnpack_rndnu_hand_values)
{
    struct qp_error err;
    int32_t m, s;
    /* 3.0f = 1.5 * 2^1: mantissa 0x400000 | 2^23 = 0xC00000, << 7 =
     * 0x60000000; biased exponent 128 -> shift 128 - 126 = 2 */
    CHECK_OK(qp_rq_rndnu_params(3.0f, &m, &s, &err), &err);
    CHECK_INT(m, 0x60000000);
    CHECK_INT(s, 2);
    CHECK_OK(qp_rq_rndnu_params(0.5f, &m, &s, &err), &err);
    CHECK(m == 1 << 30 && s == 0);
    /* 2^-32: exponent 95 -> shift -31, the smallest XNNPACK accepts */
    CHECK_OK(qp_rq_rndnu_params(0x1p-32f, &m, &s, &err), &err);
    CHECK(m == 1 << 30 && s == -31);
    /* largest float below 256: 0x1.fffffep7, shift 8, mantissa all ones */
    CHECK_OK(qp_rq_rndnu_params(0x1.fffffep7f, &m, &s, &err), &err);
    CHECK(m == 0x7FFFFF80 && s == 8);
    CHECK_FAILS(qp_rq_rndnu_params(256.0f, &m, &s, &err), QP_E_INVAL, &err, "[2^-32, 256)");
    CHECK_FAILS(qp_rq_rndnu_params(0x1p-33f, &m, &s, &err), QP_E_INVAL, &err, "xnnpack-rndnu");
    CHECK_FAILS(qp_rq_rndnu_params(0x1p-140f, &m, &s, &err), QP_E_INVAL, &err, "normal");
    CHECK_FAILS(qp_rq_rndnu_params(0.0f, &m, &s, &err), QP_E_INVAL, &err, "scale 0");
    CHECK_FAILS(qp_rq_rndnu_params(NAN, &m, &s, &err), QP_E_INVAL, &err, "nan");
    /* 0.5 = (2^30, 0): post shift 1, pre shift 1: x' = 2x, high = x,
     * rounding shift by 1 = x / 2 rounded half up */
    CHECK_INT(SCALE(XNNPACK_RNDNU, 3, 1 << 30, 0), 2);
    CHECK_INT(SCALE(XNNPACK_RNDNU, -3, 1 << 30, 0), -1);
    CHECK_INT(SCALE(XNNPACK_RNDNU, 5, 1 << 30, 0), 3);
    CHECK_INT(SCALE(XNNPACK_RNDNU, -5, 1 << 30, 0), -2);
    /* 3.0: pre shift 3, high = 8x * 0.75 = 6x, post 1: 3x exactly */
    CHECK_INT(SCALE(XNNPACK_RNDNU, -7, 0x60000000, 2), -21);
    /* out of contract: x = 2^29 -> x << 3 saturates to 2^31 - 1; high =
     * floor((2^31 - 1) * 0.75) = 1610612735, rounded half: 805306368
     * (not 3 * 2^29) */
    CHECK_INT(SCALE(XNNPACK_RNDNU, 1 << 29, 0x60000000, 2), 805306368);
    /* 2^-32 (shift -31): x = INT32_MIN -> -0.5 rounds half up to 0;
     * x = INT32_MAX -> 0.49999 -> 0 */
    CHECK_INT(SCALE(XNNPACK_RNDNU, INT32_MIN, 1 << 30, -31), 0);
    CHECK_INT(SCALE(XNNPACK_RNDNU, INT32_MAX, 1 << 30, -31), 0);
    /* through prepare_float (scale -> params) and the epilogue: 0.5, zp -3,
     * clamp [-128, 10]: acc 5 -> 2.5 up = 3, + zp = 0; acc 40 -> 20 - 3 =
     * 17 -> 10; acc -300 -> -150 - 3 -> -128 */
    struct qp_rq rq = prep_float(ctx, QP_RQ_XNNPACK_RNDNU, 0.5, -3, QP_DTYPE_I8, -128, 10);
    CHECK_INT(qp_rq_one(&rq, 0, 5), 0);
    CHECK_INT(qp_rq_one(&rq, 0, 40), 10);
    CHECK_INT(qp_rq_one(&rq, 0, -300), -128);
    CHECK(rq.multiplier && rq.multiplier[0] == 1 << 30 && rq.shift[0] == 0);
    qp_rq_release(&rq);
}

QP_TEST(requant_float_flavors_hand_values)
{
    /* ties: 5 * 0.5 = 2.5. xnnpack-fp32/ort round half to even -> 2, then
     * + zp 1 = 3. onnx-ref adds the zero point first: 3.5 -> 4. */
    struct qp_rq x = prep_float(ctx, QP_RQ_XNNPACK_FP32, 0.5, 1, QP_DTYPE_I8, -128, 127);
    struct qp_rq o = prep_float(ctx, QP_RQ_ORT, 0.5, 1, QP_DTYPE_I8, -128, 127);
    struct qp_rq d = prep_float(ctx, QP_RQ_ONNX_REF, 0.5, 1, QP_DTYPE_I8, -128, 127);
    CHECK_INT(qp_rq_one(&x, 0, 5), 3);
    CHECK_INT(qp_rq_one(&o, 0, 5), 3);
    CHECK_INT(qp_rq_one(&d, 0, 5), 4);
    /* -5 * 0.5 = -2.5 -> -2, + 1 = -1; onnx: -1.5 -> -2 */
    CHECK_INT(qp_rq_one(&x, 0, -5), -1);
    CHECK_INT(qp_rq_one(&d, 0, -5), -2);
    /* clamp in output units: 1000 * 0.5 + 1 -> 127; -1000 -> -128 */
    CHECK_INT(qp_rq_one(&x, 0, 1000), 127);
    CHECK_INT(qp_rq_one(&x, 0, -1000), -128);
    CHECK_INT(qp_rq_one(&d, 0, 1000), 127);
    qp_rq_release(&x);
    qp_rq_release(&o);
    qp_rq_release(&d);
    /* float32 vs float64 product: acc = 2^24 + 1, scale 5 * 2^-25 (2.5 *
     * 2^-24, exact in float). float(acc) = 2^24, * scale = 2.5 exactly ->
     * 2 (even). In double: 2.5 + 2.5 * 2^-24 -> 3. */
    x = prep_float(ctx, QP_RQ_XNNPACK_FP32, 5 * 0x1p-25, 0, QP_DTYPE_I8, -128, 127);
    d = prep_float(ctx, QP_RQ_ONNX_REF, 5 * 0x1p-25, 0, QP_DTYPE_I8, -128, 127);
    CHECK_INT(qp_rq_one(&x, 0, (1 << 24) + 1), 2);
    CHECK_INT(qp_rq_one(&d, 0, (1 << 24) + 1), 3);
    qp_rq_release(&x);
    qp_rq_release(&d);
    /* uint8 with zero point 128, scale 0.25: 6 * 0.25 = 1.5 -> 2 -> 130;
     * 10 * 0.25 = 2.5 -> 2 -> 130; -2000 -> -500 + 128 -> 0 */
    o = prep_float(ctx, QP_RQ_ORT, 0.25, 128, QP_DTYPE_U8, 0, 255);
    CHECK_INT(qp_rq_one(&o, 0, 6), 130);
    CHECK_INT(qp_rq_one(&o, 0, 10), 130);
    CHECK_INT(qp_rq_one(&o, 0, -2000), 0);
    qp_rq_release(&o);
    /* the fixed-point flavors round that tie away from zero (TFLite): 0.5
     * = (2^30, 0): SRDHM(5, 2^30) = 2.5 up = 3 */
    struct qp_rq t = prep_fixed(ctx, QP_RQ_TFLITE_DOUBLE, 1 << 30, 0, 1, QP_DTYPE_I8, -128, 127);
    CHECK_INT(qp_rq_one(&t, 0, 5), 4);
    /* int32 add of the zero point wraps like the runtime: (2^31 - 1, 0):
     * SRDHM(2^31 - 1, 2^31 - 1) = (2^62 - 2^32 + 1 + 2^30) / 2^31 =
     * 2^31 - 2; + zp 2 wraps to INT32_MIN -> clamped to -128 */
    qp_rq_release(&t);
    t = prep_fixed(ctx, QP_RQ_TFLITE_DOUBLE, INT32_MAX, 0, 2, QP_DTYPE_I8, -128, 127);
    CHECK_INT(qp_rq_one(&t, 0, INT32_MAX), -128);
    CHECK_INT(qp_rq_scale_fixed(QP_RQ_TFLITE_DOUBLE, INT32_MAX, INT32_MAX, 0), INT32_MAX - 1);
    qp_rq_release(&t);
    /* ... and the left shift wraps before that: 1.0 = (2^30, 1), x =
     * 2^31 - 1, x * 2 wraps to -2, SRDHM(-2, 2^30) = -1, + 1 = 0 */
    t = prep_fixed(ctx, QP_RQ_TFLITE_DOUBLE, 1 << 30, 1, 1, QP_DTYPE_I8, -128, 127);
    CHECK_INT(qp_rq_one(&t, 0, INT32_MAX), 0);
    qp_rq_release(&t);
}

QP_TEST(requant_quantize_multiplier_edges)
{
    int32_t m, s;
#define QM(f, r, em, es)                                                       \
    do {                                                                       \
        qp_rq_quantize_multiplier(QP_RQ_##f, (r), &m, &s);                     \
        CHECK_INT(m, em);                                                      \
        CHECK_INT(s, es);                                                      \
    } while (0)
    QM(TFLITE_DOUBLE, 1.0, 1 << 30, 1);
    QM(TFLITE_DOUBLE, 0.5, 1 << 30, 0);
    QM(TFLITE_DOUBLE, 0.25, 1 << 30, -1);
    QM(TFLITE_DOUBLE, 3.0, 0x60000000, 2);
    QM(TFLITE_DOUBLE, 0.0, 0, 0);
    /* 1 - 2^-33: q * 2^31 = 2^31 - 1/4 rounds to 2^31 -> (2^30, 1) */
    QM(TFLITE_DOUBLE, 1.0 - 0x1p-33, 1 << 30, 1);
    /* 1 - 2^-31: q * 2^31 = 2^31 - 1, kept */
    QM(TFLITE_DOUBLE, 1.0 - 0x1p-31, INT32_MAX, 0);
    /* tie: (2^30 + 0.5) / 2^31 -> std::round away from zero -> 2^30 + 1 */
    QM(TFLITE_DOUBLE, 0.5 + 0x1p-32, (1 << 30) + 1, 0);
    /* smallest kept: 2^-32 = 0.5 * 2^-31; below, the shift < -31 flushes */
    QM(TFLITE_DOUBLE, 0x1p-32, 1 << 30, -31);
    QM(TFLITE_DOUBLE, 0x1p-33, 0, 0);
    QM(TFLITE_SINGLE, 0x1p-33, 0, 0);
    /* large: 2^40 keeps shift 41 in the double build; the single build
     * saturates to (2^31 - 1, 30) */
    QM(TFLITE_DOUBLE, 0x1p40, 1 << 30, 41);
    QM(TFLITE_SINGLE, 0x1p40, INT32_MAX, 30);
    QM(TFLITE_SINGLE, 0x1p29, 1 << 30, 30);
    QM(TFLITE_SINGLE, 0x1p30, INT32_MAX, 30);
    QM(CMSIS_NN_SINGLE, 0x1p30, INT32_MAX, 30);
    QM(CMSIS_NN_DOUBLE, 0x1p30, 1 << 30, 31);
    /* negative reals give negative multipliers; -(1 - 2^-33) rounds to
     * -2^31, which TFLite does not renormalize: INT32_MIN, shift 0 */
    QM(TFLITE_DOUBLE, -0.5, -(1 << 30), 0);
    QM(TFLITE_DOUBLE, -(1.0 - 0x1p-33), INT32_MIN, 0);
#undef QM
    struct qp_error err;
    double bad[2] = {0.5, NAN};
    int32_t mm[2], ss[2];
    CHECK_FAILS(qp_rq_derive(QP_RQ_TFLITE_DOUBLE, bad, 2, mm, ss, &err),
                QP_E_INVAL, &err, "[1] is nan");
    CHECK_FAILS(qp_rq_derive(QP_RQ_XNNPACK_FP32, bad, 1, mm, ss, &err),
                QP_E_INVAL, &err, "float scale");
    /* rndnu derives from float32(real): 0.1 -> bits 0x3DCCCCCD, mantissa
     * 0x4CCCCD | 2^23 = 0xCCCCCD, << 7 = 0x66666680; exponent 123 - 126 */
    double r01 = 0.1;
    CHECK_OK(qp_rq_derive(QP_RQ_XNNPACK_RNDNU, &r01, 1, mm, ss, &err), &err);
    CHECK_INT(mm[0], 0x66666680);
    CHECK_INT(ss[0], -3);
}

QP_TEST(requant_effective_scale_products)
{
    /* in = w = 1 + 2^-23, out 1: exact product 1 + 2^-22 + 2^-46 (double
     * holds it); float32 rounds the product to 1 + 2^-22 */
    float a = 1.0f + 0x1p-23f;
    CHECK(qp_rq_effective_scale(QP_RQ_PRODUCT_DOUBLE, a, a, 1.0f) ==
          1.0 + 0x1p-22 + 0x1p-46);
    CHECK(qp_rq_effective_scale(QP_RQ_PRODUCT_LEGACY_FLOAT, a, a, 1.0f) ==
          1.0 + 0x1p-22);
    CHECK(qp_rq_effective_scale(QP_RQ_PRODUCT_FLOAT, a, a, 1.0f) == 1.0 + 0x1p-22);
    /* out 3: double (1 + 2^-22 + 2^-46) / 3 vs float32(float32 / 3) */
    CHECK(qp_rq_effective_scale(QP_RQ_PRODUCT_FLOAT, 1.0f, 1.0f, 3.0f) ==
          (double)(1.0f / 3.0f));
    CHECK(qp_rq_effective_scale(QP_RQ_PRODUCT_DOUBLE, 1.0f, 1.0f, 3.0f) == 1.0 / 3.0);
    CHECK_INT(qp_rq_flavor_product(QP_RQ_TFLITE_SINGLE), QP_RQ_PRODUCT_DOUBLE);
    CHECK_INT(qp_rq_flavor_product(QP_RQ_ORT), QP_RQ_PRODUCT_FLOAT);
    /* prepare_scales: XNNPACK's float scale 0.5 * 3 / 1 = 1.5, 1.5 * 3 =
     * 4.5 -> 4 (even); tflite-double derives (0x60000000, 1) and rounds
     * 4.5 away -> 5 */
    struct qp_rq rq;
    struct qp_error err;
    float w = 3.0f;
    CHECK_OK(qp_rq_prepare_scales(&rq, QP_RQ_XNNPACK_FP32, 0.5f, &w, 1, 1.0f, 0,
                                  QP_DTYPE_I8, -128, 127, &err), &err);
    CHECK_INT(qp_rq_one(&rq, 0, 3), 4);
    qp_rq_release(&rq);
    CHECK_OK(qp_rq_prepare_scales(&rq, QP_RQ_TFLITE_DOUBLE, 0.5f, &w, 1, 1.0f, 0,
                                  QP_DTYPE_I8, -128, 127, &err), &err);
    CHECK(rq.multiplier && rq.multiplier[0] == 0x60000000 && rq.shift[0] == 1);
    CHECK_INT(qp_rq_one(&rq, 0, 3), 5);
    qp_rq_release(&rq);
    /* XNNPACK refuses a product >= 256: 16 * 16 / 1 */
    w = 16.0f;
    CHECK_FAILS(qp_rq_prepare_scales(&rq, QP_RQ_XNNPACK_FP32, 16.0f, &w, 1, 1.0f, 0,
                                     QP_DTYPE_I8, -128, 127, &err),
                QP_E_INVAL, &err, "(0, 256)");
    w = -1.0f;
    CHECK_FAILS(qp_rq_prepare_scales(&rq, QP_RQ_ORT, 1.0f, &w, 1, 1.0f, 0,
                                     QP_DTYPE_I8, -128, 127, &err),
                QP_E_INVAL, &err, "ort: scales must be finite and > 0");
}

QP_TEST(requant_activation_range)
{
    struct qp_error err;
    int32_t lo, hi;
    /* relu6, scale 12, zp 3: 0 -> 3; 6 / 12 = 0.5 rounds away -> 1 -> 4
     * (half-even would give 3) */
    CHECK_OK(qp_rq_activation_range(QP_RQ_ACT_RELU6, 12.0f, 3, -128, 127, &lo, &hi, &err), &err);
    CHECK(lo == 3 && hi == 4);
    /* relu-n1-to-1, scale 2, zp 3: -0.5 -> -1 -> 2; 0.5 -> 1 -> 4 */
    CHECK_OK(qp_rq_activation_range(QP_RQ_ACT_RELU_N1_TO_1, 2.0f, 3, -128, 127, &lo, &hi, &err), &err);
    CHECK(lo == 2 && hi == 4);
    /* relu, zp -128 (uint8 style bounds), and bounds kept inside qmin/qmax */
    CHECK_OK(qp_rq_activation_range(QP_RQ_ACT_RELU, 0.1f, -200, -128, 127, &lo, &hi, &err), &err);
    CHECK(lo == -128 && hi == 127);
    CHECK_OK(qp_rq_activation_range(QP_RQ_ACT_RELU6, 0.01f, 0, -128, 127, &lo, &hi, &err), &err);
    CHECK(lo == 0 && hi == 127);
    CHECK_FAILS(qp_rq_activation_range(QP_RQ_ACT_RELU6, 1e-38f, 0, -128, 127, &lo, &hi, &err),
                QP_E_INVAL, &err, "does not fit int32");
    enum qp_rq_act a;
    CHECK(qp_rq_act_from_name("RELU_N1_TO_1", &a) && a == QP_RQ_ACT_RELU_N1_TO_1);
    CHECK(qp_rq_act_from_name("Relu6", &a) && a == QP_RQ_ACT_RELU6);
    CHECK(!qp_rq_act_from_name("gelu", &a));
}

QP_TEST(requant_prepare_rejects)
{
    struct qp_rq rq;
    struct qp_error err;
    int32_t m = 1 << 30, s = 31;
    CHECK_FAILS(qp_rq_prepare_fixed(&rq, QP_RQ_TFLITE_DOUBLE, &m, &s, 1, 0, QP_DTYPE_I8,
                                    -128, 127, &err),
                QP_E_INVAL, &err, "tflite-double: shift[0] = 31 is outside [-31, 30]");
    s = 8;
    CHECK_FAILS(qp_rq_prepare_fixed(&rq, QP_RQ_CMSIS_NN_S64, &m, &s, 1, 0, QP_DTYPE_I16,
                                    -32768, 32767, &err),
                QP_E_INVAL, &err, "outside [-31, 7]");
    s = -32;
    CHECK_FAILS(qp_rq_prepare_fixed(&rq, QP_RQ_XNNPACK_RNDNU, &m, &s, 1, 0, QP_DTYPE_I8,
                                    -128, 127, &err),
                QP_E_INVAL, &err, "outside [-31, 8]");
    s = 0;
    m = -1;
    CHECK_FAILS(qp_rq_prepare_fixed(&rq, QP_RQ_XNNPACK_RNDNU, &m, &s, 1, 0, QP_DTYPE_I8,
                                    -128, 127, &err),
                QP_E_INVAL, &err, "multiplier[0] = -1 is negative");
    m = 1 << 30;
    CHECK_FAILS(qp_rq_prepare_fixed(&rq, QP_RQ_ORT, &m, &s, 1, 0, QP_DTYPE_I8, -128, 127, &err),
                QP_E_INVAL, &err, "ort multiplies by a float scale");
    CHECK_FAILS(qp_rq_prepare_fixed(&rq, QP_RQ_TFLITE_DOUBLE, &m, &s, 1, 128, QP_DTYPE_I8,
                                    -128, 127, &err),
                QP_E_INVAL, &err, "zero point 128 is outside the i8 range [-128, 127]");
    CHECK_FAILS(qp_rq_prepare_fixed(&rq, QP_RQ_TFLITE_DOUBLE, &m, &s, 1, 0, QP_DTYPE_U8,
                                    -1, 255, &err),
                QP_E_INVAL, &err, "clamp [-1, 255] is outside the u8 range");
    CHECK_FAILS(qp_rq_prepare_fixed(&rq, QP_RQ_TFLITE_DOUBLE, &m, &s, 1, 0, QP_DTYPE_I8,
                                    5, 4, &err),
                QP_E_INVAL, &err, "qmin 5 must be at most qmax 4");
    CHECK_FAILS(qp_rq_prepare_fixed(&rq, QP_RQ_TFLITE_DOUBLE, &m, &s, 1, 0, QP_DTYPE_I32,
                                    0, 0, &err),
                QP_E_INVAL, &err, "output dtype i32 is not i8, u8 or i16");
    CHECK_FAILS(qp_rq_prepare_fixed(&rq, QP_RQ_TFLITE_DOUBLE, &m, &s, 0, 0, QP_DTYPE_I8,
                                    -128, 127, &err),
                QP_E_INVAL, &err, "no channels");
    double sc = 0.5;
    CHECK_FAILS(qp_rq_prepare_float(&rq, QP_RQ_XNNPACK_FP32, &sc, 1, 0, QP_DTYPE_I8, 3, 3, &err),
                QP_E_INVAL, &err, "qmin 3 must be below (XNNPACK) qmax 3");
    CHECK_FAILS(qp_rq_prepare_float(&rq, QP_RQ_XNNPACK_FP32, &sc, 1, 0, QP_DTYPE_I16,
                                    -32768, 32767, &err),
                QP_E_INVAL, &err, "XNNPACK requantizes to i8 or u8");
    double bads[] = {256.0, 1e-40, 0.0, -0.5, NAN, INFINITY};
    for (size_t i = 0; i < sizeof bads / sizeof bads[0]; i++)
        CHECK_FAILS(qp_rq_prepare_float(&rq, QP_RQ_XNNPACK_FP32, &bads[i], 1, 0, QP_DTYPE_I8,
                                        -128, 127, &err),
                    QP_E_INVAL, &err, "scale[0]");
    sc = 1e39; /* finite double, inf as float32 */
    CHECK_FAILS(qp_rq_prepare_float(&rq, QP_RQ_ORT, &sc, 1, 0, QP_DTYPE_I8, -128, 127, &err),
                QP_E_INVAL, &err, "overflows float32");
    /* a fixed-point flavor given a scale: QuantizeMultiplier(2^31) gives
     * shift 32, which tflite-double cannot apply */
    sc = 0x1p31;
    CHECK_FAILS(qp_rq_prepare_float(&rq, QP_RQ_TFLITE_DOUBLE, &sc, 1, 0, QP_DTYPE_I8,
                                    -128, 127, &err),
                QP_E_INVAL, &err, "gives shift 32, outside the [-31, 30]");
    /* ... while tflite-single saturates it to (2^31 - 1, 30) */
    CHECK_OK(qp_rq_prepare_float(&rq, QP_RQ_TFLITE_SINGLE, &sc, 1, 0, QP_DTYPE_I8, -128, 127,
                                 &err), &err);
    CHECK(rq.multiplier && rq.multiplier[0] == INT32_MAX && rq.shift[0] == 30);
    qp_rq_release(&rq);
    qp_rq_release(&rq); /* twice is fine */
}

QP_TEST(requant_names)
{
    enum qp_rq_flavor f;
    for (int i = 0; i < QP_RQ_COUNT; i++) {
        CHECK(qp_rq_flavor_from_name(qp_rq_flavor_name((enum qp_rq_flavor)i), &f));
        CHECK_INT(f, i);
        CHECK_CONTAINS(qp_rq_flavor_list(), qp_rq_flavor_name((enum qp_rq_flavor)i));
    }
    CHECK(qp_rq_flavor_from_name("tflite", &f) && f == QP_RQ_TFLITE_DOUBLE);
    CHECK(qp_rq_flavor_from_name("cmsis-nn", &f) && f == QP_RQ_CMSIS_NN_DOUBLE);
    CHECK(qp_rq_flavor_from_name("onnx", &f) && f == QP_RQ_ONNX_REF);
    CHECK(!qp_rq_flavor_from_name("tflite-triple", &f));
    CHECK(qp_rq_flavor_acc64(QP_RQ_CMSIS_NN_S64) && !qp_rq_flavor_acc64(QP_RQ_GEMMLOWP));
    CHECK(qp_rq_flavor_fixed(QP_RQ_XNNPACK_RNDNU) && !qp_rq_flavor_fixed(QP_RQ_ONNX_REF));
}

QP_TEST(requant_apply_layouts_and_explain)
{
    struct qp_error err;
    struct qp_rq rq;
    /* two channels: 0.5 = (2^30, 0) and 0.25 = (2^30, -1), zp 10 */
    int32_t m[2] = {1 << 30, 1 << 30}, s[2] = {0, -1};
    REQUIRE_OK(qp_rq_prepare_fixed(&rq, QP_RQ_TFLITE_SINGLE, m, s, 2, 10, QP_DTYPE_I16,
                                   -32768, 32767, &err), &err);
    /* [2, 2]: col 0 * 0.5, col 1 * 0.25, + 10 */
    int32_t acc[4] = {100, 100, -7, -7};
    int16_t out[4];
    qp_rq_apply_i32(&rq, acc, 2, 2, out);
    /* 50 + 10, 25 + 10, -3.5 half up = -3, + 10 = 7; -1.75 -> -2 -> 8 */
    CHECK(out[0] == 60 && out[1] == 35 && out[2] == 7 && out[3] == 8);
    int64_t acc64[4] = {100, 100, -7, -7};
    memset(out, 0, sizeof out);
    qp_rq_apply_i64(&rq, acc64, 2, 2, out);
    CHECK(out[0] == 60 && out[1] == 35 && out[2] == 7 && out[3] == 8);
    /* a plane of channel 1 (0.25) */
    int32_t plane[3] = {4, 6, -6};
    qp_rq_apply_plane(&rq, 1, plane, 3, out);
    /* 1 + 10, 1.5 -> 2 -> 12, -1.5 -> -1 -> 9 */
    CHECK(out[0] == 11 && out[1] == 12 && out[2] == 9);
    /* the int32 flavors narrow int64 accumulators: 2^32 + 100 -> 100 */
    acc64[0] = (INT64_C(1) << 32) + 100;
    qp_rq_apply_i64(&rq, acc64, 1, 2, out);
    CHECK_INT(out[0], 60);
    qp_rq_release(&rq);
    /* one channel broadcast over 3 columns */
    int32_t one_m = 1 << 30, one_s = 1; /* 1.0 */
    REQUIRE_OK(qp_rq_prepare_fixed(&rq, QP_RQ_TFLITE_DOUBLE, &one_m, &one_s, 1, 5,
                                   QP_DTYPE_U8, 0, 255, &err), &err);
    int32_t row[3] = {-9, 1, 300};
    uint8_t o8[3];
    qp_rq_apply_i32(&rq, row, 1, 3, o8);
    CHECK(o8[0] == 0 && o8[1] == 6 && o8[2] == 255);
    /* explain: x = 3 * 2 = 6 after the left shift, product 6 * 2^30,
     * nudge 2^30, high = 7 * 2^30 / 2^31 = 3 (truncating), right shift 0,
     * scaled 3, + zp = 8 */
    struct qp_rq_trace t;
    CHECK_INT(qp_rq_explain(&rq, 0, 3, &t), 8);
    bool saw_prod = false, saw_high = false;
    for (int i = 0; i < t.n; i++) {
        if (!strcmp(t.step[i].what, "product = x' * multiplier"))
            saw_prod = t.step[i].i == (INT64_C(6) << 30);
        if (strstr(t.step[i].what, "high ="))
            saw_high = t.step[i].i == 3;
    }
    CHECK(saw_prod && saw_high);
    CHECK_CONTAINS(t.step[t.n - 1].what, "clamped");
    CHECK_INT(t.step[t.n - 1].i, 8);
    qp_rq_release(&rq);
}
