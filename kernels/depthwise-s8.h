/* kernels/depthwise-s8.h: 8-bit integer depthwise 2-D convolution with
 * TFLite's layouts and depth multiplier.
 *
 *   input  NHWC [N,H,W,IC]         filter [1,KH,KW,OC], OC = IC*dm
 *   output NHWC [N,OH,OW,OC], output channel oc = ic*dm + m reads input
 *   channel ic = oc / dm:
 *   acc[b][oy][ox][oc] = bias[oc] + sum_{ky,kx}
 *       (in[b][iy][ix][oc/dm] - in_zp) * (f[0][ky][kx][oc] - f_zp[oc])
 *   out = requant(rq, channel oc, acc)
 * iy, ix, padding and the output size as in kernels/conv-s8.h; arithmetic
 * modulo 2^32 as in kernels/gemm-s8.h. */
#ifndef QP_KERNELS_DEPTHWISE_S8_H
#define QP_KERNELS_DEPTHWISE_S8_H

#include "kernels/conv-s8.h"

struct qp_dw_s8_ukernel;

struct qp_dw_s8_params {
    struct qp_conv_geom geom;
    size_t in_c, depth_multiplier;    /* both >= 1 */
    enum qp_dtype in_dtype;           /* QP_DTYPE_I8 or QP_DTYPE_U8 */
    enum qp_dtype filter_dtype;       /* QP_DTYPE_I8 or QP_DTYPE_U8 */
    int32_t input_zero_point;
    const int32_t *filter_zero_point; /* NULL: 0; else 1 or OC values */
    size_t filter_zero_points;
    const int32_t *bias;              /* [OC] or NULL */
    const struct qp_rq *rq;           /* borrowed; channels 1 or OC;
                                         NULL: int32 output */
    enum qp_kern_isa isa;             /* QP_KERN_AUTO: the dispatch table's */
    int threads;                      /* 0: qp_parallel_threads() */
};

/* A prepared depthwise convolution. Fields are private to kernels/. */
struct qp_dw_s8 {
    struct qp_dw_s8_params p;         /* pointers replaced by owned copies */
    size_t out_h, out_w, out_c;
    const struct qp_dw_s8_ukernel *uk; /* NULL: reference */
    int threads;
    struct qp_rq rq;
    uint8_t *filter;                  /* copy [KH*KW][OC] */
    int32_t *bias, *filter_zp;        /* [OC] */
    int32_t *w;                       /* [KH*KW][OC]: f - f_zp */
    /* NCHW planes on the VNNI rows (kernels/depthwise-s8-nchw.c), NULL
     * where they cannot run: per channel its taps packed for
     * qp_dw_s8_rows4 ([OC][KH * ceil(KW/4)]), the rows' start (bias and
     * the zero points folded in) and whether its taps fit int8 */
    int32_t *rows4_w, *rows4_init;
    uint8_t *rows4_ok;
};

/* Checks params and prepares the filter ([1,KH,KW,OC]); filter may be
 * freed afterwards, rq may not. On failure dw is left released. */
enum qp_status qp_dw_s8_prepare(struct qp_dw_s8 *dw,
                                const struct qp_dw_s8_params *params,
                                const void *filter, struct qp_error *err);

void qp_dw_s8_release(struct qp_dw_s8 *dw);

/* "ref", "avx2", "avx512", "neon". */
const char *qp_dw_s8_variant(const struct qp_dw_s8 *dw);

size_t qp_dw_s8_scratch_size(const struct qp_dw_s8 *dw, size_t batch);

/* output = depthwise(input) for batch images; scratch of
 * qp_dw_s8_scratch_size bytes (any alignment; NULL if that is 0). */
enum qp_status qp_dw_s8_run(const struct qp_dw_s8 *dw, const void *input,
                            size_t batch, void *output, void *scratch,
                            struct qp_error *err);

/* The portable reference (kernels/ref/depthwise-s8.c); no scratch. */
void qp_dw_s8_ref(const struct qp_dw_s8_params *p, const void *filter,
                  const void *input, size_t batch, void *output);

#endif
