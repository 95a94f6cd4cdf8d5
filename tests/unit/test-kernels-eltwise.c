/* Unit tests of TFLite's quantized add (kernels/add-s8.h) and pooling
 * (kernels/pool-s8.h) against hand-computed values, including the ties
 * where the double- and single-rounding builds part. */
#include <string.h>

#include "kernels/add-s8.h"
#include "kernels/pool-s8.h"
#include "tests/test.h"

/* Equal input scales s and output scale `out` * s, as TFLite's Prepare
 * derives them with left_shift 20: twice_max = 2s, input multipliers
 * 0.5 = (2^30, 0), output multiplier 2 / (2^20 out) = (2^30, -18 - log2 out). */
static struct qp_add_s8_params add_params(enum qp_rq_flavor f, int log2_out)
{
    return (struct qp_add_s8_params){
        .flavor = f, .dtype = QP_DTYPE_I8, .left_shift = 20,
        .multiplier1 = 1 << 30, .multiplier2 = 1 << 30,
        .out_multiplier = 1 << 30, .out_shift = -18 - log2_out,
        .act_min = -128, .act_max = 127};
}

QP_TEST(add_ref_equal_scales_sum_and_saturate)
{
    static const int8_t x1[] = {10, -100, 127, -128, 0};
    static const int8_t x2[] = {20, -50, 127, -128, 3};
    struct qp_add_s8_params p = add_params(QP_RQ_TFLITE_DOUBLE, 0);
    struct qp_error err;
    REQUIRE_OK(qp_add_s8_check(&p, &err), &err);
    int8_t out[5];
    qp_add_s8_ref(&p, x1, x2, 5, 5, out);
    CHECK_INT(out[0], 30);
    CHECK_INT(out[1], -128); /* -150 clamped */
    CHECK_INT(out[2], 127);  /* 254 clamped */
    CHECK_INT(out[3], -128);
    CHECK_INT(out[4], 3);
    /* zero points: (10 - 5) + (20 - (-2)) = 27, + output zero point 4 */
    p.zero_point1 = 5;
    p.zero_point2 = -2;
    p.out_zero_point = 4;
    p.act_max = 30;
    qp_add_s8_ref(&p, x1, x2, 5, 5, out);
    CHECK_INT(out[0], 30); /* 27 + 4 = 31, act_max 30 */
    CHECK_INT(out[4], (0 - 5) + (3 + 2) + 4);
}

QP_TEST(add_ref_ties_follow_the_rounding_build)
{
    /* output scale 2s: (x1 + x2) / 2; 1 + 2 -> 1.5 and -1 - 2 -> -1.5.
     * Double rounding (RoundingDivideByPOT) rounds half away from zero,
     * single rounding adds 2^(n-1) and shifts: half up. */
    static const int8_t x1[] = {1, -1, 3, -3};
    static const int8_t x2[] = {2, -2, 0, 0};
    int8_t out[4];
    struct qp_add_s8_params d = add_params(QP_RQ_TFLITE_DOUBLE, 1);
    qp_add_s8_ref(&d, x1, x2, 4, 4, out);
    CHECK_INT(out[0], 2);
    CHECK_INT(out[1], -2);
    CHECK_INT(out[2], 2);
    CHECK_INT(out[3], -2);
    struct qp_add_s8_params s = add_params(QP_RQ_TFLITE_SINGLE, 1);
    qp_add_s8_ref(&s, x1, x2, 4, 4, out);
    CHECK_INT(out[0], 2);
    CHECK_INT(out[1], -1);
    CHECK_INT(out[2], 2);
    CHECK_INT(out[3], -1);
}

QP_TEST(add_ref_broadcasts_the_second_input)
{
    static const uint8_t x1[] = {10, 20, 30, 40, 50, 60};
    static const uint8_t bias[] = {1, 2, 3};
    struct qp_add_s8_params p = add_params(QP_RQ_TFLITE_DOUBLE, 0);
    p.dtype = QP_DTYPE_U8;
    p.act_min = 0;
    p.act_max = 255;
    uint8_t out[6];
    qp_add_s8_ref(&p, x1, bias, 6, 3, out);
    static const uint8_t want[] = {11, 22, 33, 41, 52, 63};
    CHECK(!memcmp(out, want, 6));
    qp_add_s8_ref(&p, x1, bias + 2, 6, 1, out); /* a scalar */
    CHECK_INT(out[0], 13);
    CHECK_INT(out[5], 63);
}

QP_TEST(add_rejects_bad_parameters)
{
    struct qp_error err;
    struct qp_add_s8_params p = add_params(QP_RQ_XNNPACK_FP32, 0);
    CHECK_FAILS(qp_add_s8_check(&p, &err), QP_E_INVAL, &err,
                "flavor 'xnnpack-fp32' is not a TFLite");
    p = add_params(QP_RQ_TFLITE_INT64_DOUBLE, 0);
    CHECK_FAILS(qp_add_s8_check(&p, &err), QP_E_INVAL, &err, "int32 flavor");
    p = add_params(QP_RQ_TFLITE_DOUBLE, 0);
    p.left_shift = 31;
    CHECK_FAILS(qp_add_s8_check(&p, &err), QP_E_INVAL, &err,
                "left shift 31 outside 0..30");
    p = add_params(QP_RQ_TFLITE_DOUBLE, 0);
    p.shift2 = 31;
    CHECK_FAILS(qp_add_s8_check(&p, &err), QP_E_INVAL, &err,
                "input 2 shift 31 outside [-31, 30]");
    p = add_params(QP_RQ_TFLITE_DOUBLE, 0);
    p.act_min = 5;
    p.act_max = 4;
    CHECK_FAILS(qp_add_s8_check(&p, &err), QP_E_INVAL, &err,
                "activation range [5, 4]");
    p.dtype = QP_DTYPE_I16;
    CHECK_FAILS(qp_add_s8_check(&p, &err), QP_E_INVAL, &err,
                "dtype i16 is not int8 or uint8");
}

static struct qp_pool_s8_params pool(enum qp_pool_kind kind, size_t h,
                                     size_t w, size_t k, size_t s, size_t pad)
{
    return (struct qp_pool_s8_params){
        .kind = kind,
        .geom = {h, w, k, k, s, s, 1, 1, pad, pad, pad, pad},
        .channels = 1, .dtype = QP_DTYPE_I8, .act_min = -128,
        .act_max = 127};
}

QP_TEST(pool_ref_average_rounds_half_away_from_zero)
{
    /* 2x2 windows, stride 2: sums 14 and 23 over 4 pixels are 3.5 and
     * 5.75; negated -3.5 and -5.75 */
    static const int8_t in[] = {1, 2, 3, 4, 5, 6, 7, 9,
                                -1, -2, -3, -4, -5, -6, -7, -9};
    struct qp_pool_s8_params p = pool(QP_POOL_AVG, 2, 4, 2, 2, 0);
    size_t oh, ow;
    struct qp_error err;
    REQUIRE_OK(qp_pool_s8_check(&p, &oh, &ow, &err), &err);
    CHECK_INT(oh, 1);
    CHECK_INT(ow, 2);
    int8_t out[4];
    qp_pool_s8_ref(&p, in, 2, out);
    CHECK_INT(out[0], 4);
    CHECK_INT(out[1], 6);
    CHECK_INT(out[2], -4);
    CHECK_INT(out[3], -6);
}

QP_TEST(pool_ref_padding_never_counts)
{
    /* 3x3 windows, pad 1 on a 2x2 image [1 2; 3 4]: every window holds
     * the 4 pixels, average 2.5 -> 3 (not 10 / 9) */
    static const int8_t in[] = {1, 2, 3, 4};
    struct qp_pool_s8_params p = pool(QP_POOL_AVG, 2, 2, 3, 1, 1);
    int8_t out[4];
    qp_pool_s8_ref(&p, in, 1, out);
    for (int i = 0; i < 4; i++)
        CHECK_INT(out[i], 3);
    /* max pooling with a clamp, and in int16 and uint8 */
    p.kind = QP_POOL_MAX;
    p.act_max = 3;
    qp_pool_s8_ref(&p, in, 1, out);
    CHECK_INT(out[0], 3);
    static const int16_t in16[] = {-1000, 2000, 3000, -32768};
    int16_t o16[4];
    p.dtype = QP_DTYPE_I16;
    p.act_min = -32768;
    p.act_max = 32767;
    p.kind = QP_POOL_AVG;
    qp_pool_s8_ref(&p, in16, 1, o16);
    CHECK_INT(o16[0], -7192); /* -28768 / 4 exactly */
    p.kind = QP_POOL_MAX;
    qp_pool_s8_ref(&p, in16, 1, o16);
    CHECK_INT(o16[3], 3000);
    static const uint8_t in8[] = {255, 254, 0, 0};
    uint8_t o8[4];
    p.dtype = QP_DTYPE_U8;
    p.act_min = 0;
    p.act_max = 255;
    p.kind = QP_POOL_AVG;
    qp_pool_s8_ref(&p, in8, 1, o8);
    CHECK_INT(o8[0], 127); /* 509 / 4 = 127.25 */
}

QP_TEST(pool_rejects_bad_parameters)
{
    struct qp_error err;
    size_t oh, ow;
    struct qp_pool_s8_params p = pool(QP_POOL_MAX, 4, 4, 1, 1, 1);
    CHECK_FAILS(qp_pool_s8_check(&p, &oh, &ow, &err), QP_E_INVAL, &err,
                "a 1x1 window lies wholly in the padding");
    p = pool(QP_POOL_MAX, 4, 4, 2, 1, 0);
    p.geom.dilation_w = 2;
    CHECK_FAILS(qp_pool_s8_check(&p, &oh, &ow, &err), QP_E_INVAL, &err,
                "needs dilation 1");
    p = pool(QP_POOL_MAX, 4, 4, 5, 1, 0);
    CHECK_FAILS(qp_pool_s8_check(&p, &oh, &ow, &err), QP_E_INVAL, &err,
                "pool: dilated kernel 5x5 is larger than the padded input");
    p = pool(QP_POOL_MAX, 4, 4, 2, 1, 0);
    p.dtype = QP_DTYPE_U8; /* -128 is not a uint8 */
    CHECK_FAILS(qp_pool_s8_check(&p, &oh, &ow, &err), QP_E_INVAL, &err,
                "activation range [-128, 127] is empty or outside u8");
    p.kind = QP_POOL_KIND_COUNT;
    CHECK_FAILS(qp_pool_s8_check(&p, &oh, &ow, &err), QP_E_INVAL, &err,
                "unknown kind");
}

/* 2x2 max pooling of row pairs: every width up to 70 (the 16-output
 * vectors and every tail), int8 and uint8, bytes on both sides of 0x80,
 * against the four-way maximum; nothing past ow written. */
QP_TEST(maxpool2x2_rows_match_the_four_way_maximum)
{
    uint8_t r0[140], r1[140], y[72];
    for (int i = 0; i < 140; i++) {
        r0[i] = (uint8_t)(i * 97 + 13);
        r1[i] = (uint8_t)(i * 61 + 200);
    }
    r0[40] = 0x7F; r0[41] = 0x80; r1[40] = 0x81; r1[41] = 0x00; /* y[20] */
    int bad = 0;
    for (int sgn = 0; sgn < 2; sgn++)
        for (size_t ow = 0; ow <= 70; ow++) {
            memset(y, 0xEE, sizeof y);
            qp_maxpool2x2_8(r0, r1, ow, sgn, y);
            for (size_t i = 0; i < ow; i++) {
                const uint8_t v[4] = {r0[2 * i], r0[2 * i + 1], r1[2 * i], r1[2 * i + 1]};
                int best = sgn ? (int8_t)v[0] : v[0];
                for (int k = 1; k < 4; k++) {
                    int e = sgn ? (int8_t)v[k] : v[k];
                    best = e > best ? e : best;
                }
                bad += y[i] != (uint8_t)best;
            }
            bad += y[ow] != 0xEE;
        }
    CHECK_INT(bad, 0);
    qp_maxpool2x2_8(r0, r1, 21, true, y);
    CHECK_INT(y[20], 0x7F); /* int8: 127 beats 0, -128, -127 */
    qp_maxpool2x2_8(r0, r1, 21, false, y);
    CHECK_INT(y[20], 0x81); /* uint8: 129 */
}
