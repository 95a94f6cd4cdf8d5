/* kernels/conv-s8-nchw.h: the NCHW convolution of kernels/conv-s8.h
 * without layout changes, for one group and the 1-byte VNNI-shaped GEMM
 * micro-kernels. Internal to kernels/ (kernels/conv-s8.c calls it).
 *
 * The output [OC][OH*OW] of an image is the product of the weights
 * [OC][K] (K = IC*KH*KW, OIHW's own order) and the columns of the input
 * [K][OH*OW] (im2col in CHW order, padded taps at the input zero point):
 * the weights are the micro-kernel's A (packed once, tiles of mr output
 * channels), blocks of the columns its B (packed per run, panels of nr
 * output pixels), so each tile's rows are output channels and its columns
 * consecutive pixels of one channel plane, requantized per channel
 * straight into the NCHW output. Signs: A must be unsigned and B signed,
 * so a = w + alpha (alpha = 128 for int8 weights, else 0) and b = x + beta
 * (beta = -128 for uint8 inputs, else 0); then, modulo 2^32,
 *
 *   acc = sum a*b + R[oc] + C[oc] * Sx[pixel]
 *   R[oc] = bias[oc] - (beta + x_zp) * sum_k w[oc][k] - K*alpha*beta
 *           + K * x_zp * w_zp[oc]
 *   C[oc] = -(alpha + w_zp[oc]),  Sx = sum_k x[k][pixel] = sum_k b - K*beta
 *
 * which is kernels/ref/conv-s8.c's accumulator exactly, so the bytes are
 * the reference's. */
#ifndef QP_KERNELS_CONV_S8_NCHW_H
#define QP_KERNELS_CONV_S8_NCHW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/status.h"
#include "kernels/conv-s8.h"

struct qp_gemm_s8_ukernel;

struct qp_conv_s8_nchw {
    const struct qp_gemm_s8_ukernel *uk;
    size_t k, kp, tiles; /* reduction, padded to uk->kr; tiles of uk->mr rows */
    uint8_t *a;          /* [tiles][mr][kp]: w ^ a_flip, zero past OC and K */
    int32_t *r, *cf;     /* R[oc], C[oc] above */
    bool cf_same;        /* every C[oc] is cf[0] (symmetric weights) */
    uint8_t *ones;       /* kp ones: a row of A summing B's columns */
    uint8_t b_flip;      /* b = x ^ b_flip */
    uint8_t pad;         /* the padding tap's b */
    uint32_t kbeta;      /* K * beta (modulo 2^32) */
    size_t *col_lo, *col_hi; /* [KW]: the output columns [lo, hi) whose tap
                                kx reads inside the input row */
};

/* True when c (prepared up to its filter, bias and zero points) can run
 * this way with micro-kernel uk: NCHW, one group, an rq, uk 1-byte
 * elements. */
bool qp_conv_s8_nchw_fits(const struct qp_conv_s8 *c,
                          const struct qp_gemm_s8_ukernel *uk);

/* Packs c's filter; *d is then released with qp_conv_s8_nchw_release. */
enum qp_status qp_conv_s8_nchw_prepare(struct qp_conv_s8_nchw *d,
                                       const struct qp_conv_s8 *c,
                                       const struct qp_gemm_s8_ukernel *uk,
                                       struct qp_error *err);
void qp_conv_s8_nchw_release(struct qp_conv_s8_nchw *d);

/* Threads a run of batch images uses, and the scratch it needs (bytes,
 * 64-byte aligned by the caller). */
int qp_conv_s8_nchw_threads(const struct qp_conv_s8 *c, size_t batch);
size_t qp_conv_s8_nchw_scratch(const struct qp_conv_s8 *c, size_t batch);

/* output [batch][OC][OH][OW] = conv(input [batch][IC][H][W]). */
void qp_conv_s8_nchw_run(const struct qp_conv_s8 *c, const uint8_t *input,
                         size_t batch, char *output, char *scratch);

#endif
