/* Hand-computed tests of kernels/quantize-act.h: the activation quantizers
 * of ONNX, PyTorch, XNNPACK and TFLite, dequantization and ONNX
 * DynamicQuantizeLinear. */
#include <math.h>
#include <string.h>

#include "kernels/quantize-act.h"
#include "tests/test.h"

#define Q(f, x, s, zp) qp_qa_quantize_one(QP_QA_##f, (x), (s), (zp), -128, 127)

QP_TEST(quantize_act_ties_and_division)
{
    /* ties: 2.5 and -2.5 round to even (2, -2) except TFLite (3, -3) */
    CHECK_INT(Q(ONNX, 2.5f, 1.0f, 0), 2);
    CHECK_INT(Q(PYTORCH, 2.5f, 1.0f, 0), 2);
    CHECK_INT(Q(XNNPACK, 2.5f, 1.0f, 0), 2);
    CHECK_INT(Q(TFLITE, 2.5f, 1.0f, 0), 3);
    CHECK_INT(Q(ONNX, -2.5f, 1.0f, 0), -2);
    CHECK_INT(Q(TFLITE, -2.5f, 1.0f, 0), -3);
    /* 3.5 -> 4 for all (4 is even) */
    CHECK_INT(Q(ONNX, 3.5f, 1.0f, 0), 4);
    CHECK_INT(Q(TFLITE, 3.5f, 1.0f, 0), 4);
    /* divide vs multiply by the reciprocal, on a value that is not a tie:
     * s = 0.1f = 0x1.99999ap-4, x = 0x1.8cccccp+0 (1.54999995).
     * x / s = 15.4999992922 exactly -> float 0x1.effffep+3 -> 15.
     * 1.0f / s = 10.0f exactly; x * 10 = 15.4999995232, halfway between
     * the floats 15.49999905 and 15.5, rounds to the even 15.5 -> 16. */
    float s = 0x1.99999ap-4f, x = 0x1.8cccccp+0f;
    CHECK_INT(Q(ONNX, x, s, 0), 15);
    CHECK_INT(Q(TFLITE, x, s, 0), 15);
    CHECK_INT(Q(PYTORCH, x, s, 0), 16);
    CHECK_INT(Q(XNNPACK, x, s, 0), 16);
    /* zero point after rounding: uint8, zp 128, s 0.25: -0.75 -> -3 ->
     * 125; 0.625 -> 2.5 -> 2 (onnx) / 3 (tflite) -> 130 / 131 */
    CHECK_INT(qp_qa_quantize_one(QP_QA_ONNX, -0.75f, 0.25f, 128, 0, 255), 125);
    CHECK_INT(qp_qa_quantize_one(QP_QA_ONNX, 0.625f, 0.25f, 128, 0, 255), 130);
    CHECK_INT(qp_qa_quantize_one(QP_QA_TFLITE, 0.625f, 0.25f, 128, 0, 255), 131);
    /* saturation, infinities, NaN (-> qmin, as the runtimes on x86) */
    CHECK_INT(Q(ONNX, 1000.0f, 1.0f, 0), 127);
    CHECK_INT(Q(PYTORCH, -1e30f, 1e-30f, 0), -128);
    CHECK_INT(Q(TFLITE, INFINITY, 1.0f, 5), 127);
    CHECK_INT(Q(XNNPACK, -INFINITY, 1.0f, 5), -128);
    CHECK_INT(Q(ONNX, NAN, 1.0f, 5), -128);
    CHECK_INT(Q(TFLITE, NAN, 1.0f, 5), -128);
    /* a subnormal scale: 1 / s = inf, and 0 * inf is NaN -> qmin; the
     * division 0 / s is 0 -> the zero point */
    CHECK_INT(Q(PYTORCH, 0.0f, 0x1p-140f, 5), -128);
    CHECK_INT(Q(ONNX, 0.0f, 0x1p-140f, 5), 5);
    /* a large value beyond 2^23 stays exact: 2^24 with zp 0 saturates in
     * int16 */
    CHECK_INT(qp_qa_quantize_one(QP_QA_ONNX, 0x1p24f, 1.0f, 0, -32768, 32767), 32767);
}

QP_TEST(quantize_act_arrays_and_dequantize)
{
    struct qp_error err;
    /* [outer 2, channels 2, inner 2]: channel 0 scale 0.5 zp 0, channel 1
     * scale 2 zp -3, int8 */
    float x[8] = {1.25f, -1.25f, 3.0f, 5.0f, 0.75f, 100.0f, -4.0f, 1e9f};
    float sc[2] = {0.5f, 2.0f};
    int32_t zp[2] = {0, -3};
    int8_t q[8];
    CHECK_OK(qp_qa_quantize(QP_QA_ONNX, x, 2, 2, 2, sc, zp, QP_DTYPE_I8, q, &err), &err);
    /* 2.5 -> 2, -2.5 -> -2; 1.5 -> 2 - 3 = -1, 2.5 -> 2 - 3 = -1;
     * 1.5 -> 2, 200 -> 127; -2 - 3 = -5, huge -> 127 */
    static const int8_t want[8] = {2, -2, -1, -1, 2, 127, -5, 127};
    CHECK(!memcmp(q, want, sizeof want));
    float back[8];
    CHECK_OK(qp_qa_dequantize(q, QP_DTYPE_I8, 2, 2, 2, sc, zp, back, &err), &err);
    /* (2 - 0) * 0.5 = 1, (-1 + 3) * 2 = 4, (127 + 3) * 2 = 260 */
    CHECK(back[0] == 1.0f && back[2] == 4.0f && back[7] == 260.0f && back[1] == -1.0f);
    /* uint16 and int32 dequantization: int32 16777217 becomes float
     * 16777216 before the zero point is subtracted (numpy astype) */
    int32_t big = 16777217;
    float one = 1.0f, out;
    CHECK_OK(qp_qa_dequantize(&big, QP_DTYPE_I32, 1, 1, 1, &one, NULL, &out, &err), &err);
    CHECK(out == 16777216.0f);
    uint16_t u16[1];
    float xv = 70000.0f;
    CHECK_OK(qp_qa_quantize(QP_QA_TFLITE, &xv, 1, 1, 1, &one, NULL, QP_DTYPE_U16, u16, &err),
             &err);
    CHECK_INT(u16[0], 65535);
    /* refusals */
    float bad = 0.0f;
    CHECK_FAILS(qp_qa_quantize(QP_QA_ONNX, x, 1, 1, 1, &bad, NULL, QP_DTYPE_I8, q, &err),
                QP_E_INVAL, &err, "scale[0] = 0 must be finite and > 0");
    int32_t zbad = 300;
    CHECK_FAILS(qp_qa_quantize(QP_QA_ONNX, x, 1, 1, 1, &one, &zbad, QP_DTYPE_U8, q, &err),
                QP_E_INVAL, &err, "zero point[0] = 300 is outside the u8 range [0, 255]");
    CHECK_FAILS(qp_qa_quantize(QP_QA_ONNX, x, 1, 1, 1, &one, NULL, QP_DTYPE_F32, q, &err),
                QP_E_INVAL, &err, "cannot quantize to f32: i8, u8, i16, u16");
    CHECK_FAILS(qp_qa_dequantize(q, QP_DTYPE_I64, 1, 1, 1, &one, NULL, back, &err),
                QP_E_INVAL, &err, "cannot dequantize i64: i8, u8, i16, u16 or i32");
}

QP_TEST(quantize_act_dynamic_u8)
{
    float s;
    uint8_t zp, q[4];
    /* range [-126.5, 128.5] = 255 -> scale 1; zero point rint(126.5) = 126
     * (half to even; half away would give 127); -126.5 -> -126 + 126 = 0,
     * 128.5 -> 128 + 126 = 254, 0 -> 126, 1.5 -> 2 + 126 = 128 */
    float x[4] = {-126.5f, 128.5f, 0.0f, 1.5f};
    qp_qa_dynamic_u8(x, 4, &s, &zp, q);
    CHECK(s == 1.0f);
    CHECK_INT(zp, 126);
    CHECK(q[0] == 0 && q[1] == 254 && q[2] == 126 && q[3] == 128);
    /* all zeros: scale 1, zero point 0 */
    float z[3] = {0, 0, 0};
    qp_qa_dynamic_u8(z, 3, &s, &zp, q);
    CHECK(s == 1.0f && zp == 0 && q[0] == 0);
    /* only positive: range [0, 510] -> scale 2, zp 0; 3 -> 1.5 -> 2 */
    float p[2] = {510.0f, 3.0f};
    qp_qa_dynamic_u8(p, 2, &s, &zp, q);
    CHECK(s == 2.0f && zp == 0 && q[0] == 255 && q[1] == 2);
}

QP_TEST(quantize_act_names)
{
    enum qp_qa_flavor f;
    for (int i = 0; i < QP_QA_COUNT; i++)
        CHECK(qp_qa_flavor_from_name(qp_qa_flavor_name((enum qp_qa_flavor)i), &f) &&
              f == (enum qp_qa_flavor)i);
    CHECK(qp_qa_flavor_from_name("ORT", &f) && f == QP_QA_ONNX);
    CHECK(!qp_qa_flavor_from_name("numpy", &f));
    CHECK_INT(qp_qa_for_requant(QP_RQ_CMSIS_NN_S64), QP_QA_TFLITE);
    CHECK_INT(qp_qa_for_requant(QP_RQ_XNNPACK_RNDNU), QP_QA_XNNPACK);
    CHECK_INT(qp_qa_for_requant(QP_RQ_ORT), QP_QA_ONNX);
}
