/* kernels/depthwise-s8-nchw.h: the depthwise convolution of a prepared
 * struct qp_dw_s8 (kernels/depthwise-s8.h) on NCHW tensors, without
 * layout changes. Internal to kernels/ (kernels/conv-s8.c calls it).
 *
 * Each channel plane is copied once with its padding (the input zero
 * point, so padded taps add (zp - zp) * w = 0 as the reference's skipped
 * ones), then every output row is one call of the variant's pixel kernel
 * with the row's pixels as its lanes: tap t's lane j reads the padded
 * input under output pixel j (a pointer into the padded plane for stride
 * 1, a gathered row otherwise) and the tap's weight repeated, or one call
 * of its row kernel (the weights broadcast, the input zero point folded
 * into the start: sum (x - zp) w = sum x w - zp sum w). The sums are the
 * reference's modulo 2^32, so the bytes are. */
#ifndef QP_KERNELS_DEPTHWISE_S8_NCHW_H
#define QP_KERNELS_DEPTHWISE_S8_NCHW_H

#include <stdbool.h>
#include <stddef.h>

#include "kernels/depthwise-s8.h"

/* True when dw can and should run this way: a SIMD variant, an rq, an
 * input zero point that is a value of the input dtype, stride 1 along
 * rows, and planes where this is the faster way (measured on PP-OCR's
 * shapes): with the variant's row kernel, rows of 64 pixels and 3 rows
 * (any number of rows with the AVX-512 VNNI rows);
 * with its pixel kernel only, 8 rows and either fewer than 64 channels or
 * 2048 pixels. */
bool qp_dw_s8_nchw_fits(const struct qp_dw_s8 *dw);

/* Packs dw's taps for the VNNI rows when they can run it (called by
 * qp_dw_s8_prepare, after dw->w); false when out of memory. */
bool qp_dw_s8_nchw_prepare(struct qp_dw_s8 *dw);

/* Scratch bytes (64-byte aligned by the caller) and threads for batch
 * images. */
size_t qp_dw_s8_nchw_scratch(const struct qp_dw_s8 *dw, size_t batch);

/* output [batch][OC][OH][OW] = depthwise(input [batch][IC][H][W]). */
void qp_dw_s8_nchw_run(const struct qp_dw_s8 *dw, const uint8_t *input,
                       size_t batch, char *output, char *scratch);

#endif
