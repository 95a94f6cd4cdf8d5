/* kernels/ref/softmax-s8.c: ONNX Runtime's QLinearSoftmax
 * (kernels/softmax-s8.h). */
#include "kernels/softmax-s8.h"

#include <float.h>
#include <math.h>
#include <string.h>

#include "kernels/ref/round-impl.h"

#if FLT_EVAL_METHOD != 0
#error "softmax-s8: float arithmetic must be evaluated in its own type"
#endif

void qp_softmax_s8_table(enum qp_dtype dt, float x_scale, size_t d,
                         float table[256])
{
    /* keep sum(exp) below FLT_MAX: 5 bits in reserve for float sums */
    double shift = log((double)(FLT_MAX / (float)d));
    shift = fmax(0.0, shift - 5.0) / (double)x_scale;
    for (int i = 0; i < 256; i++) {
        double e = exp(((double)i - 255.0 + shift) * (double)x_scale);
        uint8_t at = (uint8_t)(dt == QP_DTYPE_I8 ? i - 128 : i);
        table[at] = (float)e;
    }
}

/* static_cast<int32_t>(float) as x86 converts it */
static int32_t to_i32(float v)
{
    return v >= -2147483648.0f && v < 2147483648.0f ? (int32_t)v : INT32_MIN;
}

void qp_softmax_s8_ref(enum qp_dtype dt, const float table[256],
                       const void *x, size_t rows, size_t d, float y_scale,
                       int32_t y_zp, void *y)
{
    float ys = floorf(1.0f / y_scale);
    bool s8 = dt == QP_DTYPE_I8;
    memset(y, 0, rows * d);
    for (size_t r = 0; r < rows; r++) {
        const uint8_t *xr = (const uint8_t *)x + r * d;
        uint8_t *yr = (uint8_t *)y + r * d;
        int32_t max = s8 ? (int8_t)xr[0] : xr[0];
        for (size_t k = 1; k < d; k++) {
            int32_t v = s8 ? (int8_t)xr[k] : xr[k];
            max = v > max ? v : max;
        }
        /* the table entry of each code shifted so the max lands at 255 */
        const float *t = s8 ? table : table + 255 - max;
        int32_t adj = s8 ? 127 - max : 0;
        float sum = 0.0f;
        for (size_t k = 0; k < d; k++)
            sum += t[(uint8_t)((s8 ? (int8_t)xr[k] : xr[k]) + adj)];
        if (sum == 0.0f)
            return; /* ONNX Runtime leaves this row and the rest */
        for (size_t k = 0; k < d; k++) {
            float e = t[(uint8_t)((s8 ? (int8_t)xr[k] : xr[k]) + adj)];
            int32_t q = to_i32(qp_round_even_f(e * ys / sum)) + y_zp;
            if (s8)
                yr[k] = (uint8_t)(int8_t)(q > 255 ? 255 : q);
            else
                yr[k] = (uint8_t)((uint32_t)q > 255 ? 255 : (uint32_t)q);
        }
    }
}
