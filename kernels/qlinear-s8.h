/* kernels/qlinear-s8.h: the 8-bit arithmetic of ONNX Runtime's QLinear
 * contrib operators, which its CPU provider substitutes for
 * DequantizeLinear -> op -> QuantizeLinear groups (DESIGN.md §3), as the
 * x86-64 build of ONNX Runtime 1.20 computes them on a CPU with AVX2 and
 * FMA (its MLAS kernels; read from onnxruntime/contrib_ops/cpu/
 * quantization/ and core/mlas/lib/). Checked bit for bit against the
 * onnxruntime-node binary pinned in scripts/ort/ort.lock
 * (tests/unit/test-qdq-ort.c). Scales are float32, zero points inside the
 * dtype (int8 or uint8); "round" is half to even.
 *
 * QLinearAdd (MlasQLinearAdd, AVX2, as GCC compiles it: multiply-adds
 *   contracted): rA = sa / sc, rB = sb / sc, fixed = (float)zc - fma(rA,
 *   za, rB * zb), then per element, by how ONNX Runtime's broadcaster
 *   hands the spans to the kernel:
 *     both vary    y = fma(a, rA, fma(b, rB, fixed))
 *     b constant   y = fma(a, rA, fma(b, rB, fixed))  (b's part first)
 *     a constant   the same with the roles of a and b swapped (fixed
 *                  computed as (float)zc - fma(rB, zb, rA * za))
 *   rounded (cvtps2dq), saturated to int16 then to the dtype.
 * QLinearMul (MlasQLinearMul, SSE2): r = sa * sb / sc;
 *   y = round((float)((a - za) * (b - zb)) * r + (float)zc), saturated.
 * QLinearGlobalAveragePool: s = sa / (sc * (float)count) (refused unless
 *   count < 2^24 and 2^-32 <= s < 256, as MLAS throws), the int32 sum of
 *   (x - za) requantized as the `ort` flavor (kernels/requant.h).
 * QLinearAveragePool: x dequantized as sa * (float)(x - za), summed in
 *   float over the window clipped to the image (rows, then columns),
 *   divided by the count (the kernel's size with count_include_pad, else
 *   the clipped window's), then round(y / sc + (float)zc) clamped. A
 *   kernel covering the whole image without padding is the global pool.
 * QLinearSigmoid, QLinearLeakyRelu: a table of 256 entries: sa * (float)
 *   (x - za) through the function (the sigmoid as MLAS's FMA3 logistic
 *   kernel approximates it; leaky: v >= 0 ? v : alpha * v), quantized
 *   with ONNX's rule (kernels/quantize-act.h, onnx).
 * QLinearSoftmax: see kernels/softmax-s8.h. */
#ifndef QP_KERNELS_QLINEAR_S8_H
#define QP_KERNELS_QLINEAR_S8_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/dtype.h"
#include "core/status.h"
#include "kernels/conv-s8.h"

struct qp_qlin_side {
    float scale;
    int32_t zp;
};

/* How the elements of a binary operator's span vary. */
enum qp_qlin_span {
    QP_QLIN_BOTH = 0, /* a and b vary */
    QP_QLIN_B_FIXED,  /* b is one value for the whole span */
    QP_QLIN_A_FIXED,  /* a is one value for the whole span */
    QP_QLIN_SPAN_COUNT
};

/* y[i] = a[i] + b[i] (a or b read at index 0 when fixed), n elements of
 * dtype dt (i8 or u8). */
void qp_qlin_add_ref(enum qp_dtype dt, enum qp_qlin_span kind,
                     const void *a, struct qp_qlin_side sa, const void *b,
                     struct qp_qlin_side sb, struct qp_qlin_side sc, size_t n,
                     void *y);
/* y[i] = a[i] * b[i], the same conventions. */
void qp_qlin_mul_ref(enum qp_dtype dt, enum qp_qlin_span kind,
                     const void *a, struct qp_qlin_side sa, const void *b,
                     struct qp_qlin_side sb, struct qp_qlin_side sc, size_t n,
                     void *y);

/* MLAS's logistic function (FMA3 kernel) of one value. */
float qp_qlin_logistic(float x);

enum qp_qlin_fn { QP_QLIN_SIGMOID = 0, QP_QLIN_LEAKY_RELU, QP_QLIN_FN_COUNT };

/* The table of fn (alpha: LeakyRelu's) for input side x and output side y,
 * dtype dt: table[byte] for each input byte. */
void qp_qlin_table(enum qp_qlin_fn fn, float alpha, enum qp_dtype dt,
                   struct qp_qlin_side x, struct qp_qlin_side y,
                   uint8_t table[256]);

/* Average pooling of NCHW [batch * channels][H][W] 8-bit planes (1-D: H
 * 1) into [.][OH][OW], geometry as kernels/conv-s8.h (dilation 1; pad_top
 * and pad_left place the windows, the output size is given). QP_E_INVAL
 * (naming the value) when the global pool's scale or count is out of
 * MLAS's range. */
struct qp_qlin_pool {
    enum qp_dtype dt;
    struct qp_conv_geom geom;
    size_t out_h, out_w;
    bool count_include_pad;
    struct qp_qlin_side x, y;
};
enum qp_status qp_qlin_avgpool_ref(const struct qp_qlin_pool *p,
                                   const void *x, size_t planes, void *y,
                                   struct qp_error *err);
/* The global pool of planes of `count` elements (QLinearGlobalAveragePool). */
enum qp_status qp_qlin_gavgpool_ref(enum qp_dtype dt, const void *x,
                                    size_t planes, size_t count,
                                    struct qp_qlin_side sx,
                                    struct qp_qlin_side sy, void *y,
                                    struct qp_error *err);

#endif
