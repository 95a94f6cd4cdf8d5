/* quant/gptq-layer.h: one layer's GPTQ as a model runtime drives it,
 * independent of any runtime: the runtime hands over the layer's input
 * rows as it computes them (the capture callback), the Hessians grow
 * streaming (quant/hessian.h), and the layer is quantized with the figures
 * of `qprobe quantize --report`.
 *
 * A layer is `parts` independent weights of [rows, cols] (torch layout,
 * rows = outputs): one for a linear layer, one per group for a grouped
 * convolution, each with its own inputs and Hessian. cols counts the
 * input features in the order the runtime gives them (for a convolution,
 * im2col's: channel-major, kernel taps inside).
 *
 * The runtime may quantize a permuted and padded view of the weight
 * instead (struct qp_gptq_view): the ONNX driver orders a convolution's
 * columns tap-major and pads each tap's channels to a whole number of
 * groups, so that GPTQ's groups of consecutive columns are RTN's groups
 * of a convolution (G input channels at one kernel position). A padded
 * column has a zero weight and a Hessian row and column of zero but for
 * the diagonal, which is the mean diagonal of the real columns (dead ones
 * counted as 1, as GPTQ does): it is independent of every other column,
 * so it stays zero, quantizes to zero without error, changes neither the
 * dampening nor any group's range (every grid holds 0), and the result on
 * the real columns is what GPTQ gives the unpadded problem with those
 * groups.
 *
 * Use (runtime side):
 *   qp_gptq_layer_new(name, parts, rows, cols, pool, &l, err);
 *   per calibration batch and part: qp_gptq_layer_rows(l, &rows, err)
 *       (or hand qp_gptq_layer_rows_cb to a producer as the callback);
 *   qp_gptq_layer_quantize(l, w_view, &view, &opts, &res, err);
 *   res.fake: the dequantized view, for the layers after it;
 *   qp_gptq_layer_free(l) as soon as it is quantized (frees the Hessians). */
#ifndef QP_QUANT_GPTQ_LAYER_H
#define QP_QUANT_GPTQ_LAYER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/tensor.h"
#include "quant/gptq.h"
#include "quant/hessian.h"
#include "quant/qparams.h"

struct qp_pool;

/* A batch of one part's input rows, as a runtime computed them: token r's
 * feature c is x[r * ld + c] (by_cols false: x [rows, ld], ld >= cols) or
 * x[c * ld + r] (by_cols: x [cols, ld] with ld >= rows, e.g. an im2col
 * tile [features, positions]). Borrowed for the call. */
struct qp_layer_rows {
    size_t part;
    const float *x;
    size_t rows, cols, ld;
    bool by_cols;
};

/* The capture callback a producer of layer inputs calls (the ONNX driver
 * model/gptq-graph.h; an LLM runtime the same way): layer is the
 * producer's layer index. */
typedef enum qp_status (*qp_gptq_rows_fn)(void *ctx, int layer,
                                          const struct qp_layer_rows *r,
                                          struct qp_error *err);

struct qp_gptq_layer {
    char *name;               /* owned */
    size_t parts, rows, cols; /* rows and cols per part */
    struct qp_hessian **h;    /* [parts], owned */
    uint64_t samples;         /* calibration inputs that reached it (the
                               * runtime counts them: qp_gptq_layer_sample) */
};

/* A layer of parts x [rows, cols] with empty Hessians (cols * cols floats
 * per part). *out belongs to the caller (qp_gptq_layer_free). QP_E_INVAL
 * for a zero size, QP_E_OVERFLOW / QP_E_NOMEM. */
enum qp_status qp_gptq_layer_new(const char *name, size_t parts, size_t rows,
                                 size_t cols, struct qp_pool *pool,
                                 struct qp_gptq_layer **out,
                                 struct qp_error *err);

void qp_gptq_layer_free(struct qp_gptq_layer *l);

/* Adds a batch of input rows to part r->part's Hessian. QP_E_SHAPE when
 * r->cols is not the layer's, QP_E_INVAL for a part out of range, and the
 * errors of qp_hessian_add (NaN / Inf refused naming the layer, the row
 * and the column). */
enum qp_status qp_gptq_layer_rows(struct qp_gptq_layer *l,
                                  const struct qp_layer_rows *r,
                                  struct qp_error *err);

/* qp_gptq_layer_rows as a qp_gptq_rows_fn: ctx is an array of layers
 * indexed by the producer's layer index (struct qp_gptq_layer **; NULL
 * entries ignore their rows). */
enum qp_status qp_gptq_layer_rows_cb(void *ctx, int layer,
                                     const struct qp_layer_rows *r,
                                     struct qp_error *err);

/* Counts one calibration input (sample) that reached the layer. */
void qp_gptq_layer_sample(struct qp_gptq_layer *l);

/* The columns GPTQ quantizes: vcols per part, view column c holding the
 * layer's column colmap[c], or padding when colmap[c] < 0. colmap NULL:
 * the layer's own columns (vcols == cols). Every layer column must appear
 * once. */
struct qp_gptq_view {
    size_t vcols;
    const int64_t *colmap;
};

struct qp_gptq_layer_result {
    size_t parts, rows, vcols;
    struct qp_gptq_result *part; /* [parts]: q [rows, vcols] with g_idx, in
                                  * view order (quant/gptq.h) */
    float *fake;                 /* [parts * rows * vcols] dequantized view */
    /* figures of the whole layer */
    double out_err;     /* ||W X - What X||^2 / ||W X||^2 on the calibration
                         * inputs, summed over parts before dividing */
    double rtn_out_err; /* the same for RTN on the same grid (@rtn: min/max
                         * ranges, no error feedback) */
    double loss;        /* the reference's error figure, summed (gptq.h) */
    double damp;        /* the largest dampening a part needed */
    int retries;        /* failed factorizations, summed */
    uint64_t tokens;    /* input rows behind each part's Hessian */
    size_t dead;        /* real columns with diag H == 0, summed */
    bool few_tokens;    /* tokens < cols: H singular, dampening dominates */
    double seconds;     /* wall time of qp_gptq_layer_quantize */
};

/* Quantizes every part: w is the view weight [parts][rows][v->vcols]
 * (padding columns zero), o as qp_gptq_quantize takes it (o->name NULL:
 * the layer's name). On success *res owns everything
 * (qp_gptq_layer_result_release); on failure it is empty. Errors name
 * the layer: those of qp_gptq_quantize and qp_hessian_check (no tokens,
 * a poisoned Hessian), QP_E_INVAL for a bad colmap. */
enum qp_status qp_gptq_layer_quantize(const struct qp_gptq_layer *l,
                                      const float *w,
                                      const struct qp_gptq_view *v,
                                      const struct qp_gptq_opts *o,
                                      struct qp_gptq_layer_result *res,
                                      struct qp_error *err);

void qp_gptq_layer_result_release(struct qp_gptq_layer_result *res);

/* Dequantizes a GPTQ weight stored with g_idx (act-order with refit
 * groups) in its own layout: q is the integer tensor with its blocked
 * parameters as RTN gives that layout (axis = l's input axis, block G),
 * g_idx an integer tensor holding, for each input element (the elements
 * of one output channel: [in] for a linear weight, [in, k...] for a
 * convolution's, with a leading dimension of `parts` for a grouped
 * convolution whose groups were quantized apart), the index of its scale
 * among that output channel's scales in the scale tensor's order (so
 * g_idx[e] == e's own index when act-order changed nothing). Output
 * axis 0 (torch, conv OIHW) or, for 2-D weights, 1 ([in, out]). out gets
 * numel(q) floats. QP_E_INVAL when g_idx does not fit q. */
enum qp_status qp_gptq_gidx_dequantize(const struct qp_tensor *q,
                                       const struct qp_tensor *g_idx,
                                       enum qp_wlayout l, float *out,
                                       struct qp_error *err);

#endif
