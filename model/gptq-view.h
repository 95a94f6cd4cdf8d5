/* model/gptq-view.h: how the weight of an ONNX Conv, MatMul or Gemm, or
 * of an LLM's Linear (model/op-llm.h), is laid out for GPTQ (quant/gptq-layer.h), and the result put back in the
 * weight's own layout with the parameters RTN gives that layout, so a
 * GPTQ weight is stored, read and run exactly as an RTN one.
 *
 *   MatMul / Gemm B [K, N] (keras, io): rows N, columns K (transposed)
 *   Gemm B [N, K] (transB, torch):      rows N, columns K
 *   Linear W [N, K] (torch):            rows N, columns K
 *   Conv W [O, I/g, k...]:              g parts of [O/g, I/g * kvol]
 *
 * A convolution's columns are im2col's (channel-major: i * kvol + tap),
 * except under groups of G channels with a kernel of more than one tap:
 * then they are tap-major (tap * Ip + i) with each tap's channels padded
 * to Ip = ceil(I/g / G) * G, so that GPTQ's groups of consecutive columns
 * are RTN's (G channels at one kernel position, a partial last group
 * where G does not divide the channels) and the parameters go back to
 * RTN's [O, ceil(I/g / G), k...] scales one for one (quant/gptq-layer.h
 * explains why padding changes nothing).
 *
 * The view's granularity is the one RTN's geometry of the whole weight
 * has (quant/qparams.h): a group as wide as the input axis is a channel.
 * Internal to model/gptq-graph.c and its tests. */
#ifndef QP_MODEL_GPTQ_VIEW_H
#define QP_MODEL_GPTQ_VIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model/graph.h"
#include "model/wcache.h"
#include "quant/gptq-layer.h"
#include "quant/qparams.h"
#include "quant/scheme.h"

enum qp_gview_kind {
    QP_GVIEW_ROWS = 0, /* [N, K]: the view is the weight */
    QP_GVIEW_COLS,     /* [K, N]: the view is its transpose */
    QP_GVIEW_CONV,     /* [O, I/g, k...] */
    QP_GVIEW_COUNT
};

struct qp_gview {
    enum qp_gview_kind kind;
    const struct qp_tensor *w; /* the weight (borrowed) */
    enum qp_wlayout layout;
    struct qp_qgeom geo;       /* RTN's geometry of w */
    struct qp_wscheme ws;      /* the view's scheme (granularity from geo) */
    size_t parts, rows, cols;  /* per part, cols in im2col order */
    size_t vcols;              /* view columns per part */
    size_t kvol, ic, icp;      /* conv: taps, channels per group, padded */
    size_t nb;                 /* groups of the input axis (geo), or 1 */
    bool tapmajor;
    int64_t *colmap;           /* [vcols] or NULL (identity), owned */
};

/* Whether n is the qprobe-domain Linear of an LLM graph (model/op-llm.h:
 * y = x W^T, x [..., K]). */
bool qp_gview_llm_linear(const struct qp_node *n);

/* Whether node i (weighted, its weight w under scheme ws) can run GPTQ:
 * a Conv (not ConvTranspose) or a 2-D MatMul / Gemm / Linear weight read by this
 * node alone, and no per-tensor scale shared by a grouped convolution's
 * groups. When not, why (a short phrase) goes to buf. */
bool qp_gview_capable(const struct qp_graph *g, int i,
                      const struct qp_wscheme *ws, char *buf, size_t size);

/* The view of node i's weight under ws with layout l (node i capable).
 * Release with qp_gview_release. */
enum qp_status qp_gview_init(struct qp_gview *v, const struct qp_graph *g,
                             int i, const struct qp_wscheme *ws,
                             enum qp_wlayout l, struct qp_error *err);
void qp_gview_release(struct qp_gview *v);

/* The view weight [parts][rows][vcols] of v->w (padding zero), malloc'd;
 * NULL when out of memory. */
float *qp_gview_weights(const struct qp_gview *v);

/* The layer's result in the weight's layout: out->q (integers, RTN's
 * parameters), out->fake (dequantized, f32) and out->g_idx (int32
 * [in...] or [parts, in...], quant/gptq-layer.h's
 * qp_gptq_gidx_dequantize; NULL when act-order left every group in
 * place). */
enum qp_status qp_gview_assemble(const struct qp_gview *v,
                                 const struct qp_gptq_layer_result *res,
                                 struct qp_wquant *out, struct qp_error *err);

#endif
