/* kernels/pool-s8.h: TFLite's quantized average and max pooling
 * (reference_integer_ops::AveragePool / MaxPool), NHWC.
 *
 * For output (b, oy, ox, c) the window is the kernel placed at
 * (oy*stride_h - pad_top, ox*stride_w - pad_left), clipped to the image
 * (padding never counts):
 *   average: sum / count rounded half away from zero, in integers:
 *            sum > 0 ? (sum + count/2) / count : (sum - count/2) / count
 *   max:     the largest value
 * then clamped to [act_min, act_max]. The output size is that of
 * kernels/conv-s8.h with dilation 1 (pad_bottom/pad_right only count
 * there). Values are int8, uint8 or int16 (TFLite's 16-bit pooling). */
#ifndef QP_KERNELS_POOL_S8_H
#define QP_KERNELS_POOL_S8_H

#include <stdbool.h>

#include "kernels/conv-s8.h"

enum qp_pool_kind {
    QP_POOL_AVG = 0,
    QP_POOL_MAX,
    QP_POOL_KIND_COUNT
};

struct qp_pool_s8_params {
    enum qp_pool_kind kind;
    struct qp_conv_geom geom; /* dilation 1 */
    size_t channels;
    enum qp_dtype dtype;      /* QP_DTYPE_I8, QP_DTYPE_U8 or QP_DTYPE_I16 */
    int32_t act_min, act_max; /* inside the dtype's range */
};

/* Checks p (QP_E_INVAL naming the problem: kind, dtype, dilation, empty
 * activation range, or an output window that lies wholly in the padding,
 * which TFLite refuses) and stores the output size. */
enum qp_status qp_pool_s8_check(const struct qp_pool_s8_params *p,
                                size_t *out_h, size_t *out_w,
                                struct qp_error *err);

/* output [batch, OH, OW, C] from input [batch, H, W, C]; p must pass
 * qp_pool_s8_check. */
void qp_pool_s8_ref(const struct qp_pool_s8_params *p, const void *input,
                    size_t batch, void *output);

/* 2x2 max pooling at stride 2 of one row pair of 8-bit codes (NCHW
 * planes: the int mode's MaxPool, model/op-pool.c): y[i] = the largest of
 * r0[2i], r0[2i + 1], r1[2i], r1[2i + 1] for i < ow, as int8 when
 * is_signed, else uint8. SSE2 (the x86-64 baseline) 16 outputs at a
 * time, reading no byte past r0[2 ow - 1] or r1[2 ow - 1]; the plain
 * loop elsewhere and for the tail (kernels/maxpool-s8.c). */
void qp_maxpool2x2_8(const uint8_t *r0, const uint8_t *r1, size_t ow,
                     bool is_signed, uint8_t *y);

#endif
