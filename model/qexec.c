/* model/qexec.c: running a quantization plan (model/qplan.h): the fake
 * mode's hooks, and the int mode's node computations on the integer
 * kernels. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/lut-s8.h"
#include "model/op-conv.h"
#include "model/op-quant.h"
#include "model/qexec-da8w4.h"
#include "model/qexec-fuse.h"
#include "model/qexec-int.h"
#include "model/qplan.h"
#include "quant/qparams.h"

/* ---- quantize / dequantize -------------------------------------------- */

/* A new tensor of dtype and shape[nd], from the buffers of c's run (its
 * data uninitialized) or, with c NULL, zero-filled. */
static enum qp_status new_tensor(const struct qp_op_ctx *c, const char *name,
                                 enum qp_dtype dtype, int nd,
                                 const int64_t *shape, struct qp_tensor **out,
                                 struct qp_error *err)
{
    if (!c)
        return qp_tensor_new(name, dtype, nd, shape, out, err);
    struct qp_tdesc d = {dtype, nd, {0}};
    memcpy(d.shape, shape, (size_t)nd * sizeof *shape);
    return qp_op_new_tensor(c, name, &d, out, err);
}

struct quant_job {
    const struct qp_qplan *p;
    const struct qp_qval *v;
    const float *x;
    void *y;       /* quantized codes of v->dtype */
};

/* Elements [b, e) quantized (each element on its own: any split). */
static void quant_range(void *ctx, size_t b, size_t e)
{
    const struct quant_job *j = ctx;
    const struct qp_qval *v = j->v;
    qp_qa_quantize_row(j->p->qa, j->x + b, e - b, v->scale, v->zp, v->qmin,
                       v->qmax, v->dtype,
                       (char *)j->y + b * qp_elem_size(v->dtype));
}

/* qp_qplan_quantize with the new tensor from c's run (c may be NULL; else
 * on its threads). */
static enum qp_status quantize_in(const struct qp_qplan *p,
                                  const struct qp_op_ctx *c,
                                  const struct qp_qval *v,
                                  const struct qp_tensor *x, const char *name,
                                  struct qp_tensor **out, struct qp_error *err)
{
    enum qp_status st = new_tensor(c, name, v->dtype, x->ndim, x->shape, out,
                                   err);
    if (!st) {
        struct quant_job j = {p, v, x->data, (*out)->data};
        if (c)
            qp_qint_parallel_for(c, qp_tensor_numel(x), 1 << 16, 64,
                                 quant_range, &j);
        else
            quant_range(&j, 0, qp_tensor_numel(x));
    }
    if (!st)
        st = qp_tensor_set_qparams(*out, 1, &v->scale, &v->zp, -1, 0, err);
    if (st) {
        qp_tensor_free(*out);
        *out = NULL;
    }
    return st;
}

enum qp_status qp_qplan_quantize(const struct qp_qplan *p,
                                 const struct qp_qval *v,
                                 const struct qp_tensor *x, const char *name,
                                 struct qp_tensor **out, struct qp_error *err)
{
    return quantize_in(p, NULL, v, x, name, out, err);
}

/* x[n] <- dequantize(quantize(x)) with v's parameters, the dequantization
 * as kernels/quantize-act.h's: ((float)q - (float)z) * s. */
static enum qp_status fake_quantize(const struct qp_qplan *p,
                                    const struct qp_qval *v, float *x, size_t n,
                                    struct qp_error *err)
{
    (void)err;
    qp_qa_fake_row(p->qa, x, n, v->scale, v->zp, v->qmin, v->qmax, x);
    return QP_OK;
}

/* Dynamic per-token activations: each row (the last axis) quantized over
 * its own range. */
static void fake_dynamic(const struct qp_qplan *p, const struct qp_qval *v,
                         struct qp_tensor *t)
{
    size_t row = t->ndim ? (size_t)t->shape[t->ndim - 1] : 1;
    size_t n = qp_tensor_numel(t);
    float *x = t->data;
    for (size_t r = 0; row && r < n; r += row) {
        float lo = 0, hi = 0;
        for (size_t i = r; i < r + row; i++)
            if (x[i] == x[i]) { /* NaN stays out of the range */
                lo = x[i] < lo ? x[i] : lo;
                hi = x[i] > hi ? x[i] : hi;
            }
        struct qp_qval dv = *v;
        qp_qparams_from_range(&v->as.f, p->round, lo, hi, &dv.scale, &dv.zp);
        fake_quantize(p, &dv, x + r, row, NULL);
    }
}

static enum qp_status fake_apply(const struct qp_qplan *p, int v,
                                 struct qp_tensor *t, struct qp_error *err)
{
    if (!p->v[v].quant || p->v[v].inherited || t->dtype != QP_DTYPE_F32)
        return QP_OK;
    if (p->v[v].as.dynamic) {
        fake_dynamic(p, &p->v[v], t);
        return QP_OK;
    }
    return fake_quantize(p, &p->v[v], t->data, qp_tensor_numel(t), err);
}

struct dequant_job {
    const uint8_t *q;
    enum qp_dtype dtype;
    float scale;
    int32_t zp;
    float *y;
};

static void dequant_range(void *ctx, size_t b, size_t e)
{
    const struct dequant_job *j = ctx;
    qp_qa_dequantize_row(j->q + b, j->dtype, e - b, j->scale, j->zp, j->y + b);
}

/* A float copy of quantized t (8-bit, per-tensor parameters):
 * ((float)q - (float)z) * s, as kernels/quantize-act.h dequantizes. */
static enum qp_status dequantize(const struct qp_op_ctx *c,
                                 const struct qp_tensor *t,
                                 struct qp_tensor **out, struct qp_error *err)
{
    enum qp_status st = new_tensor(c, t->name, QP_DTYPE_F32, t->ndim, t->shape,
                                   out, err);
    if (st)
        return st;
    size_t n = qp_tensor_numel(t);
    float *y = (*out)->data;
    const struct qp_qparams *qp = t->qp;
    if (!qp || qp->count != 1 || (t->dtype != QP_DTYPE_I8 && t->dtype != QP_DTYPE_U8)) {
        qp_tensor_read_f32(t, 0, n, y);
        return QP_OK;
    }
    struct dequant_job j = {t->data, t->dtype, qp->scale[0],
                            qp->zero_point ? qp->zero_point[0] : 0, y};
    if (c)
        qp_qint_parallel_for(c, n, 1 << 16, 64, dequant_range, &j);
    else
        dequant_range(&j, 0, n);
    return QP_OK;
}

static bool is_quantized(const struct qp_qplan *p, const struct qp_node *n,
                         int k, const struct qp_tensor *t)
{
    return t && n->in[k] >= 0 && p->v[n->in[k]].quant && t->dtype != QP_DTYPE_F32;
}

static enum qp_status attach(const struct qp_qval *v, struct qp_tensor *t,
                             struct qp_error *err)
{
    return qp_tensor_set_qparams(t, 1, &v->scale, &v->zp, -1, 0, err);
}

/* A new tensor for output k of c's node, of v's dtype and shape[nd]. */
static enum qp_status new_out(const struct qp_op_ctx *c, int k,
                              const struct qp_qval *v, int nd,
                              const int64_t *shape, struct qp_tensor **out,
                              struct qp_error *err)
{
    int id = c->n->out[k];
    enum qp_status st = new_tensor(c, id >= 0 ? c->g->values[id].name : "",
                                   v->dtype, nd, shape, out, err);
    if (!st && (st = attach(v, *out, err))) {
        qp_tensor_free(*out);
        *out = NULL;
    }
    return st;
}

/* ---- the float way and the integer way of generic operators --------------- */

/* Dequantizes the quantized inputs, runs the float operator, quantizes the
 * outputs that are quantized activations. */
static enum qp_status run_float(struct qp_qplan *p, const struct qp_op_ctx *c,
                                struct qp_tensor **out, struct qp_error *err)
{
    const struct qp_node *n = c->n;
    const struct qp_qnode *q = &p->n[c->node];
    const struct qp_tensor *in[QP_OP_MAX_IO];
    struct qp_tensor *tmp[QP_OP_MAX_IO] = {0};
    enum qp_status st = QP_OK;
    for (int k = 0; k < c->n_in; k++) {
        in[k] = c->in[k];
        if (!st && is_quantized(p, n, k, c->in[k]) &&
            !(st = dequantize(c, c->in[k], &tmp[k], err)))
            in[k] = tmp[k];
    }
    if (q->wq) { /* a weighted layer the int kernels do not run */
        in[1] = q->w_fake ? q->w_fake : q->w_q;
        if (q->b_fake && c->n_in > 2 && in[2])
            in[2] = q->b_fake;
    }
    if (!st)
        st = qp_exec_node_as(c, in, out, err);
    for (int k = 0; !st && k < n->n_out; k++) {
        int v = n->out[k];
        if (v < 0 || !p->v[v].quant || !out[k] || out[k]->dtype != QP_DTYPE_F32)
            continue;
        struct qp_tensor *q;
        if (!(st = quantize_in(p, c, &p->v[v], out[k], out[k]->name, &q, err))) {
            qp_op_free_tensor(c, out[k]);
            out[k] = q;
        }
    }
    for (int k = 0; k < c->n_in; k++)
        qp_op_free_tensor(c, tmp[k]);
    return st;
}

enum qp_status qp_qplan_represent(const struct qp_qplan *p, int v,
                                  const struct qp_tensor *x,
                                  struct qp_tensor **out, struct qp_error *err)
{
    const struct qp_qval *q = &p->v[v];
    if (q->quant && p->mode == QP_MODE_INT)
        return qp_qplan_quantize(p, q, x, p->g->values[v].name, out, err);
    enum qp_status st = qp_tensor_clone(x, out, err);
    if (st || !q->quant || (*out)->dtype != QP_DTYPE_F32)
        return st;
    /* inherited values too: a reference value is not on the grid yet */
    if (q->as.dynamic)
        fake_dynamic(p, q, *out);
    else
        st = fake_quantize(p, q, (*out)->data, qp_tensor_numel(*out), err);
    return st;
}

/* An operator that moves values, on the integers; outputs keep input 0's
 * parameters. */
static enum qp_status run_pass(struct qp_qplan *p, const struct qp_op_ctx *c,
                               struct qp_tensor **out, struct qp_error *err)
{
    enum qp_status st = qp_exec_node_as(c, c->in, out, err);
    for (int k = 0; !st && k < c->n->n_out; k++) {
        int v = c->n->out[k];
        if (v >= 0 && p->v[v].quant && out[k])
            st = attach(&p->v[v], out[k], err);
    }
    return st;
}

/* ---- lookup tables ---------------------------------------------------------- */

/* The float value of every code of quantized t (its byte b read as the
 * dtype), repeated `rep` times each (rep > 1) or the codes tiled `tile`
 * times: the inputs on which the float operator builds the table. */
static enum qp_status codes(const struct qp_tensor *t, size_t rep, size_t tile,
                            struct qp_tensor **out, struct qp_error *err)
{
    int64_t n = (int64_t)(256 * rep * tile);
    enum qp_status st = qp_tensor_new(t->name, QP_DTYPE_F32, 1, &n, out, err);
    if (st)
        return st;
    uint8_t b[256];
    float f[256];
    for (int i = 0; i < 256; i++)
        b[i] = (uint8_t)i;
    qp_qa_dequantize_row(b, t->dtype, 256, t->qp->scale[0],
                         t->qp->zero_point ? t->qp->zero_point[0] : 0, f);
    float *y = (*out)->data;
    for (size_t i = 0; i < (size_t)n; i++)
        y[i] = f[(i / rep) % 256];
    return QP_OK;
}

/* The table of node c: an integer Add's (qp_qint_add_table), else the float
 * operator on every code (pair of codes), quantized with the output's
 * parameters. */
static enum qp_status lut_build(struct qp_qplan *p, const struct qp_op_ctx *c,
                                struct qp_error *err)
{
    const struct qp_node *n = c->n;
    bool done;
    enum qp_status ist = qp_qint_add_table(p, c, &done, err);
    if (ist || done)
        return ist;
    const struct qp_tensor *in[QP_OP_MAX_IO];
    struct qp_tensor *tmp[QP_OP_MAX_IO] = {0}, *out[QP_OP_MAX_IO] = {0};
    int quant[2], nq = 0;
    for (int k = 0; k < c->n_in; k++)
        if (is_quantized(p, n, k, c->in[k]))
            quant[nq++] = k;
    enum qp_status st = QP_OK;
    for (int k = 0; k < c->n_in; k++)
        in[k] = c->in[k];
    for (int j = 0; !st && j < nq; j++) /* pairs: index a * 256 + b */
        if (!(st = codes(c->in[quant[j]], nq == 2 && j == 0 ? 256 : 1,
                         nq == 2 && j == 1 ? 256 : 1, &tmp[j], err)))
            in[quant[j]] = tmp[j];
    if (!st)
        st = qp_exec_node_as(c, in, out, err);
    size_t m = nq == 2 ? 65536 : 256;
    struct qp_qnode *q = &p->n[c->node];
    if (!st && (!out[0] || out[0]->dtype != QP_DTYPE_F32 ||
                qp_tensor_numel(out[0]) != m))
        st = qp_op_fail(err, c, QP_E_SHAPE, "lookup table: unexpected output");
    if (!st && !(q->lut = malloc(m)))
        st = qp_op_fail(err, c, QP_E_NOMEM, "out of memory");
    if (!st) {
        const struct qp_qval *v = &p->v[n->out[0]];
        qp_qa_quantize_row(p->qa, out[0]->data, m, v->scale, v->zp, v->qmin,
                           v->qmax, v->dtype, q->lut);
    }
    for (int k = 0; k < QP_OP_MAX_IO; k++) {
        qp_tensor_free(tmp[k]);
        qp_tensor_free(out[k]);
    }
    return st;
}

enum qp_status qp_qplan_lut(struct qp_qplan *p, const struct qp_op_ctx *c,
                            const uint8_t **table, struct qp_error *err)
{
    struct qp_qnode *q = &p->n[c->node];
    enum qp_status st = q->lut ? QP_OK : lut_build(p, c, err);
    *table = q->lut;
    return st;
}

struct lut_job {
    const uint8_t *t, *x0, *x1; /* table; quantized inputs (x1: pairs) */
    uint8_t *y;
    struct qp_bcast b;           /* of x0 (and x1) to y */
};

static void lut_flat(void *ctx, size_t begin, size_t end)
{
    const struct lut_job *j = ctx;
    if (!j->x1) {
        qp_lut8_apply(j->t, j->x0 + begin, end - begin, j->y + begin);
        return;
    }
    qp_lut16_apply(j->t, j->x0 + begin, j->x1 + begin, end - begin,
                   j->y + begin);
}

/* Rows [begin, end) of the broadcast (innermost strides 0 or 1). */
static void lut_rows(void *ctx, size_t begin, size_t end)
{
    const struct lut_job *j = ctx;
    size_t inner = j->b.inner, nd = (size_t)j->b.nd;
    for (size_t r = begin; r < end; r++) {
        int64_t off[2];
        qp_bcast_row(&j->b, r, off);
        const uint8_t *a = j->x0 + off[0];
        uint8_t *o = j->y + r * inner;
        size_t sa = (size_t)j->b.stride[0][nd - 1];
        if (!j->x1) {
            if (sa)
                qp_lut8_apply(j->t, a, inner, o);
            else
                memset(o, j->t[*a], inner);
            continue;
        }
        const uint8_t *c = j->x1 + off[1];
        size_t sc = (size_t)j->b.stride[1][nd - 1];
        if (sa && sc) {
            qp_lut16_apply(j->t, a, c, inner, o);
        } else if (sc) { /* a fixed: row a of the pair table */
            qp_lut8_apply(j->t + ((size_t)*a << 8), c, inner, o);
        } else if (sa && inner >= 256) { /* c fixed: column c */
            uint8_t col[256];
            for (size_t k = 0; k < 256; k++)
                col[k] = j->t[k << 8 | *c];
            qp_lut8_apply(col, a, inner, o);
        } else {
            for (size_t i = 0; i < inner; i++)
                o[i] = j->t[(size_t)a[i * sa] << 8 | *c];
        }
    }
}

/* An elementwise node through its table; the quantized inputs broadcast
 * to the output shape. */
static enum qp_status run_lut(struct qp_qplan *p, const struct qp_op_ctx *c,
                              struct qp_tensor **out, struct qp_error *err)
{
    struct qp_qnode *q = &p->n[c->node];
    const struct qp_tensor *ops[QP_OP_MAX_IO], *qin[2];
    int nops = 0, nq = 0;
    for (int k = 0; k < c->n_in; k++) {
        if (!c->in[k])
            continue;
        ops[nops++] = c->in[k];
        if (is_quantized(p, c->n, k, c->in[k]))
            qin[nq++] = c->in[k];
    }
    struct qp_tdesc d;
    enum qp_status st = qp_op_broadcast(c, ops, nops, &d, err);
    if (!st && !q->lut)
        st = lut_build(p, c, err);
    if (st || (st = new_out(c, 0, &p->v[c->n->out[0]], d.ndim, d.shape, &out[0],
                            err)))
        return st;
    struct lut_job j = {q->lut, qin[0]->data, nq == 2 ? qin[1]->data : NULL,
                        out[0]->data, {0}};
    qp_bcast_init(&j.b, &d, qin, nq);
    size_t rows = j.b.inner ? j.b.total / j.b.inner : 0;
    bool flat = qp_tensor_numel(qin[0]) == j.b.total &&
                (nq == 1 || qp_tensor_numel(qin[1]) == j.b.total);
    if (flat) /* no broadcast: one run of elements, split among threads */
        qp_qint_parallel_for(c, j.b.total, 1 << 16, 64, lut_flat, &j);
    else
        qp_qint_parallel_for(c, rows, rows * j.b.inner < (1 << 17) ? rows : 1,
                             1, lut_rows, &j);
    return QP_OK;
}

/* ---- Conv ---------------------------------------------------------------- */

/* Spatial extents of x as 2-D (a 1-D convolution has height 1). */
static void conv_hw(const struct qp_tensor *x, size_t *h, size_t *w)
{
    *h = x->ndim == 4 ? (size_t)x->shape[2] : 1;
    *w = (size_t)x->shape[x->ndim - 1];
}

static enum qp_status conv_prepare(struct qp_qplan *p, const struct qp_op_ctx *c,
                                   const struct qp_tensor *x,
                                   struct qp_error *err)
{
    struct qp_qnode *q = &p->n[c->node];
    const struct qp_tensor *w = q->w_q;
    struct qp_conv_nd nd;
    int nsp = x->ndim - 2;
    enum qp_status st = qp_window_geom(c, x->shape + 2, nsp, w->shape + 2,
                                       QP_WINDOW_CONV, &nd, err);
    if (st)
        return st;
    if (q->conv_ready)
        qp_conv_s8_release(&q->conv);
    q->conv_ready = false;
    const struct qp_qval *vi = &p->v[c->n->in[0]];
    struct qp_conv_s8_params cp = {
        .layout = QP_CONV_NCHW,
        .in_c = (size_t)x->shape[1],
        .out_c = (size_t)w->shape[0],
        .groups = (size_t)qp_attr_int(c->n, "group", 1),
        .in_dtype = vi->dtype,
        .filter_dtype = w->dtype,
        .input_zero_point = vi->zp,
        .filter_zero_point = w->qp->zero_point,
        .filter_zero_points = w->qp->zero_point ? w->qp->count : 0,
        .bias = q->b_int,
        .rq = &q->rq,
    };
    qp_conv_nd_to_s8(&nd, &cp.geom);
    if ((st = qp_conv_s8_prepare(&q->conv, &cp, w->data, err)))
        return qp_op_fail(err, c, st, "%s", err->msg);
    q->conv_ready = true;
    conv_hw(x, &q->conv_h, &q->conv_w);
    return QP_OK;
}

/* Conv, 1-D as 2-D of height 1 (the same NCHW bytes) */
static enum qp_status run_conv(struct qp_qplan *p, const struct qp_op_ctx *c,
                               struct qp_tensor **out, struct qp_error *err)
{
    struct qp_qnode *q = &p->n[c->node];
    const struct qp_tensor *x = c->in[0];
    enum qp_status st;
    size_t h, w;
    if (x->ndim != q->w_q->ndim ||
        x->shape[1] != q->w_q->shape[1] * qp_attr_int(c->n, "group", 1))
        return qp_op_fail(err, c, QP_E_SHAPE, "input does not fit the weight");
    conv_hw(x, &h, &w);
    if ((!q->conv_ready || q->conv_h != h || q->conv_w != w) &&
        (st = conv_prepare(p, c, x, err)))
        return st;
    int64_t shape[4] = {x->shape[0], q->w_q->shape[0], (int64_t)q->conv.out_h,
                        (int64_t)q->conv.out_w};
    if (x->ndim == 3)
        shape[2] = shape[3];
    if ((st = new_out(c, 0, &p->v[c->n->out[0]], x->ndim, shape, &out[0], err)))
        return st;
    size_t need = qp_conv_s8_scratch_size(&q->conv, (size_t)x->shape[0]);
    void *scratch = need ? qp_op_scratch(c, need) : NULL;
    if (need && !scratch)
        return qp_op_fail(err, c, QP_E_NOMEM, "out of memory");
    return qp_conv_s8_run(&q->conv, x->data, (size_t)x->shape[0], out[0]->data,
                          scratch, err);
}

/* ---- MatMul / Gemm --------------------------------------------------------- */

/* C [rows, N] = requant(A [rows, K] . B^T) with the prepared gemm. */
static enum qp_status gemm_rows(const struct qp_op_ctx *c, const struct qp_gemm_s8 *g,
                                const void *a, size_t rows, void *y,
                                struct qp_error *err)
{
    size_t need = qp_gemm_s8_scratch_size(g, rows);
    void *scratch = need ? qp_op_scratch(c, need) : NULL;
    if (need && !scratch)
        return qp_op_fail(err, c, QP_E_NOMEM, "out of memory");
    return qp_gemm_s8_run(g, a, rows, g->k, y, g->n, scratch, err);
}

static enum qp_status run_const_matmul(struct qp_qplan *p,
                                       const struct qp_op_ctx *c,
                                       struct qp_tensor **out,
                                       struct qp_error *err)
{
    struct qp_qnode *q = &p->n[c->node];
    const struct qp_tensor *a = c->in[0];
    size_t k = q->gemm.k, n = q->gemm.n;
    if (a->ndim < 1 || (size_t)a->shape[a->ndim - 1] != k ||
        (!strcmp(c->n->op_type, "Gemm") && a->ndim != 2))
        return qp_op_fail(err, c, QP_E_SHAPE, "input does not fit the weight");
    int64_t shape[QP_MAX_DIMS];
    memcpy(shape, a->shape, sizeof shape);
    shape[a->ndim - 1] = (int64_t)n;
    enum qp_status st = new_out(c, 0, &p->v[c->n->out[0]], a->ndim, shape,
                                &out[0], err);
    if (st)
        return st;
    size_t rows = k ? qp_tensor_numel(a) / k : 0;
    return gemm_rows(c, &q->gemm, a->data, rows, out[0]->data, err);
}

/* Gemm with transA: A [K, M] transposed to [M, K] rows first */
static enum qp_status run_gemm_ta(struct qp_qplan *p, const struct qp_op_ctx *c,
                                  struct qp_tensor **out, struct qp_error *err)
{
    struct qp_qnode *q = &p->n[c->node];
    const struct qp_tensor *a = c->in[0];
    size_t k = q->gemm.k, n = q->gemm.n;
    if (a->ndim != 2 || (size_t)a->shape[0] != k)
        return qp_op_fail(err, c, QP_E_SHAPE, "input does not fit the weight");
    size_t m = (size_t)a->shape[1];
    int64_t shape[2] = {(int64_t)m, (int64_t)n};
    enum qp_status st = new_out(c, 0, &p->v[c->n->out[0]], 2, shape, &out[0], err);
    if (st)
        return st;
    /* the transposed rows after the gemm's own scratch */
    size_t need = qp_gemm_s8_scratch_size(&q->gemm, m);
    uint8_t *s = qp_op_scratch(c, need + m * k + 1);
    if (!s)
        return qp_op_fail(err, c, QP_E_NOMEM, "out of memory");
    uint8_t *at = s + need;
    const uint8_t *ad = a->data;
    for (size_t r = 0; r < k; r++)
        for (size_t j = 0; j < m; j++)
            at[j * k + r] = ad[r * m + j];
    return qp_gemm_s8_run(&q->gemm, at, m, k, out[0]->data, n, need ? s : NULL,
                          err);
}

/* Activation x activation. */
static enum qp_status run_dyn_matmul(struct qp_qplan *p, const struct qp_op_ctx *c,
                                     struct qp_tensor **out, struct qp_error *err)
{
    struct qp_qnode *q = &p->n[c->node];
    const struct qp_qval *va = &p->v[c->n->in[0]], *vb = &p->v[c->n->in[1]];
    struct qp_tdesc d;
    enum qp_status st = qp_qlin_matmul_shape(c, c->in[0], c->in[1], &d, err);
    if (st || (st = new_out(c, 0, &p->v[c->n->out[0]], d.ndim, d.shape, &out[0],
                            err)))
        return st;
    struct qp_qlin ql = {c->in[0], c->in[1], NULL, va->zp, &vb->zp, 1, &q->rq};
    return qp_qlin_matmul(c, &ql, out[0], err);
}

/* ---- Add ------------------------------------------------------------------ */

static enum qp_status run_add(struct qp_qplan *p, const struct qp_op_ctx *c,
                              struct qp_tensor **out, struct qp_error *err)
{
    const struct qp_node *n = c->n;
    /* a table of every pair of codes, of the integer add when the flavor
     * has one (lut_build), else of the float add */
    if (p->n[c->node].lut_ok)
        return run_lut(p, c, out, err);
    const struct qp_qval *v1 = &p->v[n->in[0]], *v2 = &p->v[n->in[1]];
    const struct qp_qval *vo = &p->v[n->out[0]];
    struct qp_tdesc od;
    enum qp_status st = qp_op_broadcast(c, c->in, 2, &od, err);
    if (st || (st = new_out(c, 0, vo, od.ndim, od.shape, &out[0], err)))
        return st;
    bool done;
    struct qp_qside a = {v1->scale, v1->zp}, b = {v2->scale, v2->zp};
    struct qp_qside y = {vo->scale, vo->zp};
    st = qp_qadd(c, p->flavor, c->in[0], a, c->in[1], b, y, out[0], &done, err);
    if (st || done)
        return st;
    qp_tensor_free(out[0]); /* a float flavor: the add in float */
    out[0] = NULL;
    return run_float(p, c, out, err);
}

/* ---- dispatch ------------------------------------------------------------- */

enum qp_status qp_qplan_run_int(struct qp_qplan *p, const struct qp_op_ctx *c,
                                struct qp_tensor **out, struct qp_error *err)
{
    for (int k = 0; k < c->n->n_out; k++)
        out[k] = NULL;
    enum qp_status st;
    switch (p->n[c->node].kind) {
    case QP_QK_CONV: st = run_conv(p, c, out, err); break;
    case QP_QK_GEMM:
        st = qp_attr_int(c->n, "transA", 0) ? run_gemm_ta(p, c, out, err)
                                            : run_const_matmul(p, c, out, err);
        break;
    case QP_QK_MATMUL:
        st = p->n[c->node].gemm_ready ? run_const_matmul(p, c, out, err)
                                      : run_dyn_matmul(p, c, out, err);
        break;
    case QP_QK_ADD: st = run_add(p, c, out, err); break;
    case QP_QK_DA8W4: st = qp_da8w4_run(p, c, out, err); break;
    case QP_QK_PASS: st = run_pass(p, c, out, err); break;
    default:
        st = p->n[c->node].lut_ok ? run_lut(p, c, out, err)
                                  : run_float(p, c, out, err);
        break;
    }
    if (st)
        for (int k = 0; k < c->n->n_out; k++) {
            qp_tensor_free(out[k]);
            out[k] = NULL;
        }
    return st;
}

/* ---- int preparation ------------------------------------------------------- */

static enum qp_status prepare_node(struct qp_qplan *p, int i, struct qp_error *err)
{
    const struct qp_graph *g = p->g;
    const struct qp_node *n = &g->nodes[i];
    struct qp_qnode *q = &p->n[i];
    if (q->kind == QP_QK_DA8W4)
        return qp_da8w4_prepare(p, i, err);
    if (q->kind != QP_QK_CONV && q->kind != QP_QK_MATMUL && q->kind != QP_QK_GEMM)
        return QP_OK;
    const struct qp_qval *vi = &p->v[n->in[0]], *vo = &p->v[n->out[0]];
    const float *ws = q->wq ? q->w_q->qp->scale : &p->v[n->in[1]].scale;
    size_t nws = q->wq ? q->w_q->qp->count : 1;
    enum qp_status st = qp_rq_prepare_scales(&q->rq, p->flavor, vi->scale, ws, nws,
                                             vo->scale, vo->zp, vo->dtype,
                                             vo->qmin, vo->qmax, err);
    if (st)
        return st;
    q->rq_ready = true;
    if (q->kind == QP_QK_CONV || !q->wq)
        return QP_OK;
    /* a constant weight: [N, K] rows for the gemm */
    const struct qp_tensor *w = q->w_q;
    bool rows_are_n = !strcmp(n->op_type, "Gemm") && qp_attr_int(n, "transB", 0);
    size_t kk = (size_t)w->shape[rows_are_n ? 1 : 0];
    size_t nn = (size_t)w->shape[rows_are_n ? 0 : 1];
    uint8_t *bt = malloc(kk && nn ? kk * nn : 1);
    if (!bt)
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    for (size_t r = 0; r < kk; r++)
        for (size_t j = 0; j < nn; j++)
            bt[j * kk + r] = rows_are_n ? ((const uint8_t *)w->data)[j * kk + r]
                                        : ((const uint8_t *)w->data)[r * nn + j];
    q->kernel_weight = bt;
    struct qp_gemm_s8_params gp = {
        .n = nn, .k = kk, .a_dtype = vi->dtype, .b_dtype = w->dtype,
        .a_zero_point = vi->zp, .b_zero_point = w->qp->zero_point,
        .b_zero_points = w->qp->zero_point ? w->qp->count : 0,
        .bias = q->b_int, .rq = &q->rq};
    if ((st = qp_gemm_s8_prepare(&q->gemm, &gp, bt, kk, err)))
        return st;
    q->gemm_ready = true;
    return QP_OK;
}

enum qp_status qp_qplan_prepare_int(struct qp_qplan *p, struct qp_error *err)
{
    char lab[256];
    for (int i = 0; i < p->g->n_nodes; i++) {
        enum qp_status st = prepare_node(p, i, err);
        if (st)
            return qp_error_prefix(err, "%s: ",
                                   qp_node_label(p->g, i, lab, sizeof lab));
    }
    return QP_OK;
}

/* ---- hooks ------------------------------------------------------------------ */

static enum qp_status fake_on_input(void *ctx, const struct qp_graph *g, int v,
                                    struct qp_tensor **t, struct qp_error *err)
{
    struct qp_qplan *p = ctx;
    (void)g;
    if (!p->v[v].quant)
        return QP_OK;
    struct qp_tensor *c;
    enum qp_status st = qp_tensor_clone(*t, &c, err);
    if (!st && (st = fake_apply(p, v, c, err)))
        qp_tensor_free(c);
    if (!st)
        *t = c;
    return st;
}

/* Weighted layers run on their dequantized weights and rounded bias. */
static enum qp_status fake_run_node(void *ctx, const struct qp_op_ctx *c,
                                    struct qp_tensor **out, bool *done,
                                    struct qp_error *err)
{
    struct qp_qplan *p = ctx;
    const struct qp_qnode *q = &p->n[c->node];
    if (!q->wq)
        return QP_OK;
    const struct qp_tensor *in[QP_OP_MAX_IO];
    memcpy(in, c->in, (size_t)c->n_in * sizeof *in);
    in[1] = q->w_fake ? q->w_fake : q->w_q; /* QWEIGHT operators: integers */
    if (q->b_fake && c->n_in > 2 && in[2])
        in[2] = q->b_fake;
    *done = true;
    return qp_exec_node_as(c, in, out, err);
}

static enum qp_status fake_after(void *ctx, const struct qp_op_ctx *c,
                                 struct qp_tensor **out, struct qp_error *err)
{
    struct qp_qplan *p = ctx;
    for (int k = 0; k < c->n->n_out; k++) {
        int v = c->n->out[k];
        enum qp_status st = v >= 0 && out[k] ? fake_apply(p, v, out[k], err) : QP_OK;
        if (st)
            return st;
    }
    return QP_OK;
}

static enum qp_status int_on_input(void *ctx, const struct qp_graph *g, int v,
                                   struct qp_tensor **t, struct qp_error *err)
{
    struct qp_qplan *p = ctx;
    if (!p->v[v].quant)
        return QP_OK;
    return qp_qplan_quantize(p, &p->v[v], *t, g->values[v].name, t, err);
}

static enum qp_status int_run_node(void *ctx, const struct qp_op_ctx *c,
                                   struct qp_tensor **out, bool *done,
                                   struct qp_error *err)
{
    *done = true;
    return qp_qplan_run_int(ctx, c, out, err);
}

void qp_qplan_hooks(struct qp_qplan *p, struct qp_exec_hooks *h)
{
    memset(h, 0, sizeof *h);
    h->ctx = p;
    if (p->mode == QP_MODE_INT) {
        h->on_input = int_on_input;
        h->run_node = int_run_node;
        h->run_span = qp_qfuse_run_span;
    } else {
        h->on_input = fake_on_input;
        h->run_node = fake_run_node;
        h->after_node = fake_after;
    }
}
