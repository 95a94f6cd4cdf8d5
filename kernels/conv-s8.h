/* kernels/conv-s8.h: 8-bit integer 2-D convolution (stride, padding,
 * dilation, groups) with int32 accumulation and requantization.
 *
 *   acc[b][oy][ox][oc] = bias[oc] + sum_{ky,kx,ic < IC/groups}
 *       (in[b][iy][ix][g*IC/groups + ic] - in_zp) * (f[oc][ky][kx][ic] - f_zp[oc])
 *   with g = oc / (OC/groups), iy = oy*stride_h - pad_top + ky*dilation_h,
 *   ix = ox*stride_w - pad_left + kx*dilation_w; taps outside the image are
 *   skipped (the same as padding with the input zero point, as TFLite);
 *   out = requant(rq, channel oc, acc)
 *
 *   OH = (H + pad_top + pad_bottom - dilation_h*(KH-1) - 1) / stride_h + 1
 *   OW = (W + pad_left + pad_right - dilation_w*(KW-1) - 1) / stride_w + 1
 *
 * Layouts:
 *   QP_CONV_NHWC (TFLite): input [N,H,W,IC], filter OHWI [OC,KH,KW,IC/g],
 *                          output [N,OH,OW,OC]
 *   QP_CONV_NCHW (ONNX):   input [N,IC,H,W], filter OIHW [OC,IC/g,KH,KW],
 *                          output [N,OC,OH,OW]
 * Arithmetic modulo 2^32 and zero points as in kernels/gemm-s8.h (TFLite's
 * input_offset is -in_zp). Depthwise convolution is groups == IC; with
 * TFLite's [1,KH,KW,OC] filter see kernels/depthwise-s8.h.
 *
 * Prepare once (weights packed for the GEMM, or rearranged for the
 * depthwise kernel), run many times with caller-provided scratch. */
#ifndef QP_KERNELS_CONV_S8_H
#define QP_KERNELS_CONV_S8_H

#include <stddef.h>
#include <stdint.h>

#include "core/dtype.h"
#include "core/status.h"
#include "kernels/dispatch.h"
#include "kernels/requant.h"

struct qp_gemm_s8;
struct qp_dw_s8;
struct qp_conv_s8_nchw;

enum qp_conv_layout {
    QP_CONV_NHWC = 0,
    QP_CONV_NCHW,
    QP_CONV_LAYOUT_COUNT
};

/* The spatial part shared by conv, depthwise conv and pooling. */
struct qp_conv_geom {
    size_t in_h, in_w;
    size_t kernel_h, kernel_w;
    size_t stride_h, stride_w;     /* >= 1 */
    size_t dilation_h, dilation_w; /* >= 1 (pooling: 1) */
    size_t pad_top, pad_left, pad_bottom, pad_right;
};

/* Output size (formula above). QP_E_INVAL names the problem when a size,
 * stride or dilation is 0 or the dilated kernel is larger than the padded
 * input; `what` prefixes the message ("conv"). */
enum qp_status qp_conv_geom_out(const struct qp_conv_geom *g, const char *what,
                                size_t *out_h, size_t *out_w,
                                struct qp_error *err);

struct qp_conv_s8_params {
    enum qp_conv_layout layout;
    struct qp_conv_geom geom;
    size_t in_c, out_c;
    size_t groups;                   /* >= 1, divides in_c and out_c */
    enum qp_dtype in_dtype;          /* QP_DTYPE_I8 or QP_DTYPE_U8 */
    enum qp_dtype filter_dtype;      /* QP_DTYPE_I8 or QP_DTYPE_U8 */
    int32_t input_zero_point;
    const int32_t *filter_zero_point; /* NULL: 0; else 1 or out_c values */
    size_t filter_zero_points;
    const int32_t *bias;             /* [out_c] or NULL */
    const struct qp_rq *rq;          /* borrowed; channels 1 or out_c;
                                        NULL: int32 output */
    enum qp_kern_isa isa;            /* QP_KERN_AUTO: the dispatch table's */
    int threads;                     /* 0: qp_parallel_threads() */
};

/* A prepared convolution. Fields are private to kernels/. */
struct qp_conv_s8 {
    struct qp_conv_s8_params p;      /* pointers replaced by owned copies */
    size_t out_h, out_w, icg, ocg, kg;
    int mode;                        /* CONV_* in kernels/conv-s8.c */
    int threads;
    struct qp_rq rq;
    uint8_t *filter;                 /* reference: copy in p.layout */
    int32_t *bias, *filter_zp;       /* [out_c] */
    struct qp_gemm_s8 *gemm;         /* [groups] */
    struct qp_dw_s8 *dw;
    struct qp_conv_s8_nchw *nchw;    /* NCHW without transposes */
    size_t rows;                     /* output pixels per im2col block */
};

/* Checks params (sizes, groups, dtypes, rq channels) and prepares the
 * weights (filter in the layout's order above). filter may be freed
 * afterwards; rq may not. On failure c is left released. */
enum qp_status qp_conv_s8_prepare(struct qp_conv_s8 *c,
                                  const struct qp_conv_s8_params *params,
                                  const void *filter, struct qp_error *err);

void qp_conv_s8_release(struct qp_conv_s8 *c);

/* "ref", "gemm/avx512-vnni", "depthwise/avx2", ... */
const char *qp_conv_s8_variant(const struct qp_conv_s8 *c, char *buf,
                               size_t size);

/* Bytes of scratch run needs for `batch` images. */
size_t qp_conv_s8_scratch_size(const struct qp_conv_s8 *c, size_t batch);

/* output = conv(input) for batch images; scratch of
 * qp_conv_s8_scratch_size bytes (any alignment; NULL if that is 0). */
enum qp_status qp_conv_s8_run(const struct qp_conv_s8 *c, const void *input,
                              size_t batch, void *output, void *scratch,
                              struct qp_error *err);

/* The portable reference (kernels/ref/conv-s8.c), the specification of
 * the above; needs no scratch. */
void qp_conv_s8_ref(const struct qp_conv_s8_params *p, const void *filter,
                    const void *input, size_t batch, void *output);

#endif
