/* model/qdq-ort.c: ONNX Runtime's QLinear contrib operators on tensors
 * (model/qdq-ort.h): broadcasting as its binary kernels see it, the
 * pools' geometry, softmax's rows. */
#include "model/qdq-ort.h"

#include <stdlib.h>
#include <string.h>

#include "kernels/softmax-s8.h"
#include "model/op-conv.h"

enum qp_qdq_ort_op qp_qdq_ort_op_of(const struct qp_node *n)
{
    static const char *const names[QP_QDQ_ORT_COUNT] = {
        "Add", "Mul", "AveragePool", "GlobalAveragePool", "Softmax", "Sigmoid",
        "LeakyRelu"};
    for (int k = 0; !n->domain[0] && k < QP_QDQ_ORT_COUNT; k++)
        if (!strcmp(n->op_type, names[k]))
            return (enum qp_qdq_ort_op)k;
    return QP_QDQ_ORT_COUNT;
}

static enum qp_status pool_geom(const struct qp_op_ctx *c, const struct qp_tensor *x,
                                bool global, struct qp_conv_nd *nd,
                                struct qp_error *err)
{
    int nsp = x->ndim - 2;
    if (nsp < 1 || nsp > 2)
        return qp_op_fail(err, c, QP_E_UNSUPPORTED, "1-D and 2-D pooling are "
                          "supported, not rank %d", x->ndim);
    memset(nd, 0, sizeof *nd);
    nd->nsp = nsp;
    for (int k = 0; k < nsp; k++) {
        nd->in[k] = x->shape[2 + k];
        nd->out[k] = global ? 1 : 0;
        nd->kernel[k] = x->shape[2 + k];
        nd->stride[k] = nd->dilation[k] = 1;
    }
    if (global)
        return QP_OK;
    int64_t kernel[2];
    const struct qp_attr *ks = qp_node_attr(c->n, "kernel_shape");
    if (!ks || ks->count != (size_t)nsp)
        return qp_op_fail(err, c, QP_E_INVAL, "kernel_shape must have %d values",
                          nsp);
    for (int k = 0; k < nsp; k++)
        kernel[k] = ks->ints[k];
    enum qp_status st = qp_window_geom(c, x->shape + 2, nsp, kernel,
                                       QP_WINDOW_POOL, nd, err);
    for (int k = 0; !st && k < nsp; k++)
        if (nd->dilation[k] != 1)
            st = qp_op_fail(err, c, QP_E_UNSUPPORTED, "dilated average pooling");
    return st;
}

enum qp_status qp_qdq_ort_shape(enum qp_qdq_ort_op op, const struct qp_op_ctx *c,
                                const struct qp_tensor *x,
                                const struct qp_tensor *x2, struct qp_tdesc *d,
                                struct qp_error *err)
{
    qp_tdesc_of(x, d);
    if (op == QP_QDQ_ORT_ADD || op == QP_QDQ_ORT_MUL) {
        const struct qp_tensor *ts[2] = {x, x2};
        return qp_op_broadcast(c, ts, 2, d, err);
    }
    if (op != QP_QDQ_ORT_AVGPOOL && op != QP_QDQ_ORT_GAVGPOOL)
        return QP_OK;
    struct qp_conv_nd nd;
    enum qp_status st = pool_geom(c, x, op == QP_QDQ_ORT_GAVGPOOL, &nd, err);
    for (int k = 0; !st && k < nd.nsp; k++)
        d->shape[2 + k] = nd.out[k];
    return st;
}

/* ---- binary: ONNX Runtime's broadcaster ---------------------------------- */

/* How the kernels see element spans of a op b: a whole-tensor scalar
 * first, else by the innermost output axis longer than 1 (the span's
 * axis after merging): the operand of extent 1 there is fixed in it. */
static enum qp_qlin_span span_kind(const struct qp_tensor *a,
                                   const struct qp_tensor *b,
                                   const struct qp_tdesc *d)
{
    if (qp_tensor_numel(a) == 1)
        return QP_QLIN_A_FIXED;
    if (qp_tensor_numel(b) == 1)
        return QP_QLIN_B_FIXED;
    for (int k = d->ndim - 1; k >= 0; k--) {
        if (d->shape[k] == 1)
            continue;
        int ka = k - (d->ndim - a->ndim), kb = k - (d->ndim - b->ndim);
        bool fa = ka < 0 || a->shape[ka] == 1, fb = kb < 0 || b->shape[kb] == 1;
        return fa ? QP_QLIN_A_FIXED : fb ? QP_QLIN_B_FIXED : QP_QLIN_BOTH;
    }
    return QP_QLIN_BOTH;
}

static enum qp_status run_binary(enum qp_qdq_ort_op op, const struct qp_op_ctx *c,
                                 const struct qp_tensor *a, struct qp_qlin_side sa,
                                 const struct qp_tensor *b, struct qp_qlin_side sb,
                                 struct qp_qlin_side sy, struct qp_tensor *y,
                                 struct qp_error *err)
{
    struct qp_tdesc d;
    qp_tdesc_of(y, &d);
    enum qp_qlin_span kind = span_kind(a, b, &d);
    const struct qp_tensor *ops[2] = {a, b};
    struct qp_bcast bc;
    qp_bcast_init(&bc, &d, ops, 2);
    size_t rows = bc.inner ? bc.total / bc.inner : 0;
    for (size_t r = 0; r < rows; r++) {
        int64_t off[2];
        qp_bcast_row(&bc, r, off);
        const uint8_t *pa = (const uint8_t *)a->data + off[0];
        const uint8_t *pb = (const uint8_t *)b->data + off[1];
        uint8_t *py = (uint8_t *)y->data + r * bc.inner;
        /* the span kind matches the rows: a fixed operand has stride 0 */
        if (op == QP_QDQ_ORT_ADD)
            qp_qlin_add_ref(y->dtype, kind, pa, sa, pb, sb, sy, bc.inner, py);
        else
            qp_qlin_mul_ref(y->dtype, kind, pa, sa, pb, sb, sy, bc.inner, py);
    }
    (void)c;
    (void)err;
    return QP_OK;
}

/* ---- softmax --------------------------------------------------------------- */

/* Rows along the axis: [outer][len][inner] -> rows of len (transposing
 * through scratch when inner > 1, as ONNX Runtime does). */
static enum qp_status run_softmax(const struct qp_op_ctx *c, const struct qp_tensor *x,
                                  struct qp_qlin_side sx, struct qp_qlin_side sy,
                                  struct qp_tensor *y, struct qp_error *err)
{
    bool legacy = c->n->opset < 13;
    int axis;
    enum qp_status st = qp_op_axis(c, "axis", qp_attr_int(c->n, "axis",
                                   legacy ? 1 : -1), x->ndim ? x->ndim : 1,
                                   &axis, err);
    if (st)
        return st;
    size_t outer = 1, len = 1, inner = 1;
    for (int k = 0; k < x->ndim; k++) {
        size_t v = (size_t)x->shape[k];
        if (k < axis)
            outer *= v;
        else if (k == axis || legacy)
            len *= v;
        else
            inner *= v;
    }
    float table[256];
    qp_softmax_s8_table(x->dtype, sx.scale, len, table);
    size_t total = outer * len * inner;
    if (inner == 1) {
        qp_softmax_s8_ref(x->dtype, table, x->data, outer, len, sy.scale, sy.zp,
                          y->data);
        return QP_OK;
    }
    uint8_t *t = qp_op_scratch(c, 2 * (total ? total : 1));
    if (!t)
        return qp_op_fail(err, c, QP_E_NOMEM, "out of memory");
    const uint8_t *xs = x->data;
    uint8_t *ys = y->data, *ty = t + total;
    for (size_t o = 0; o < outer; o++)
        for (size_t k = 0; k < len; k++)
            for (size_t i = 0; i < inner; i++)
                t[(o * inner + i) * len + k] = xs[(o * len + k) * inner + i];
    qp_softmax_s8_ref(x->dtype, table, t, outer * inner, len, sy.scale, sy.zp, ty);
    for (size_t o = 0; o < outer; o++)
        for (size_t k = 0; k < len; k++)
            for (size_t i = 0; i < inner; i++)
                ys[(o * len + k) * inner + i] = ty[(o * inner + i) * len + k];
    return QP_OK;
}

/* ---- dispatch ---------------------------------------------------------------- */

enum qp_status qp_qdq_ort_run(enum qp_qdq_ort_op op, const struct qp_op_ctx *c,
                              const struct qp_tensor *x, struct qp_qlin_side sx,
                              const struct qp_tensor *x2, struct qp_qlin_side sx2,
                              struct qp_qlin_side sy, struct qp_tensor *y,
                              struct qp_error *err)
{
    size_t planes = x->ndim >= 2 ? (size_t)(x->shape[0] * x->shape[1]) : 1;
    enum qp_status st = QP_OK;
    switch (op) {
    case QP_QDQ_ORT_ADD:
    case QP_QDQ_ORT_MUL:
        return run_binary(op, c, x, sx, x2, sx2, sy, y, err);
    case QP_QDQ_ORT_SOFTMAX:
        return run_softmax(c, x, sx, sy, y, err);
    case QP_QDQ_ORT_SIGMOID:
    case QP_QDQ_ORT_LEAKY_RELU: {
        uint8_t table[256];
        qp_qlin_table(op == QP_QDQ_ORT_SIGMOID ? QP_QLIN_SIGMOID : QP_QLIN_LEAKY_RELU,
                      qp_attr_float(c->n, "alpha", 0.01f), x->dtype, sx, sy, table);
        const uint8_t *xs = x->data;
        uint8_t *ys = y->data;
        for (size_t i = 0, n = qp_tensor_numel(x); i < n; i++)
            ys[i] = table[xs[i]];
        return QP_OK;
    }
    case QP_QDQ_ORT_GAVGPOOL:
    case QP_QDQ_ORT_AVGPOOL: {
        struct qp_conv_nd nd;
        if ((st = pool_geom(c, x, op == QP_QDQ_ORT_GAVGPOOL, &nd, err)))
            return st;
        if (op == QP_QDQ_ORT_GAVGPOOL) {
            size_t count = qp_tensor_numel(x) / (planes ? planes : 1);
            st = qp_qlin_gavgpool_ref(x->dtype, x->data, planes, count, sx, sy,
                                      y->data, err);
        } else {
            struct qp_qlin_pool p = {
                .dt = x->dtype, .x = sx, .y = sy,
                .count_include_pad = qp_attr_int(c->n, "count_include_pad", 0) != 0,
                .out_h = nd.nsp == 2 ? (size_t)nd.out[0] : 1,
                .out_w = (size_t)nd.out[nd.nsp - 1]};
            qp_conv_nd_to_s8(&nd, &p.geom);
            st = qp_qlin_avgpool_ref(&p, x->data, planes, y->data, err);
        }
        break;
    }
    case QP_QDQ_ORT_COUNT:
        break;
    }
    char lab[256];
    return st ? qp_error_prefix(err, "%s: ", qp_node_label(c->g, c->node, lab,
                                                           sizeof lab))
              : QP_OK;
}
