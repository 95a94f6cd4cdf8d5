/* model/qdq.c: int mode of QDQ and QLinear models (model/qdq.h). */
#include "model/qdq.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/quantize-act.h"
#include "model/op-quant.h"
#include "model/qdq-ort.h"

/* F_ORT: one of ONNX Runtime's QLinear contrib operators (model/qdq-ort.h) */
enum fkind { F_NONE = 0, F_CONV, F_MATMUL, F_ADD, F_QLINEAR, F_ORT };

/* Per-tensor parameters of a DQ or Q node. */
struct side {
    float scale;
    int32_t zp;
    enum qp_dtype dtype;
};

struct fuse {
    enum fkind kind;
    struct side x, x2, y;         /* inputs' DQ, the output's Q */
    const struct qp_tensor *w;    /* constant integer weight, or NULL */
    float *ws;                    /* weight scales */
    int32_t *wz;                  /* weight zero points */
    size_t nw;                    /* scales / zero points (1 or channels) */
    int32_t *bias;
    struct qp_rq rq;
    enum qp_qdq_ort_op ort;       /* F_ORT */
};

struct qp_qdq {
    const struct qp_graph *g;
    enum qp_rq_flavor flavor;
    struct fuse *f;               /* [n_nodes] */
    int fused;
};

static bool is_op(const struct qp_node *n, const char *op)
{
    return !n->domain[0] && !strcmp(n->op_type, op);
}

bool qp_qdq_model(const struct qp_graph *g)
{
    for (int i = 0; i < g->n_nodes; i++) {
        const struct qp_node *n = &g->nodes[i];
        if (is_op(n, "QuantizeLinear") || is_op(n, "DequantizeLinear") ||
            is_op(n, "QLinearConv") || is_op(n, "QLinearMatMul"))
            return true;
    }
    return false;
}

static const struct qp_tensor *konst(const struct qp_graph *g, const struct qp_node *n,
                                     int k)
{
    return k < n->n_in && n->in[k] >= 0 ? g->values[n->in[k]].konst : NULL;
}

/* The integer dtype of Q/DQ node n's integer side: its zero point's; for
 * a DQ without one, its input's (a Q's zero point, or a constant);
 * otherwise uint8 (ONNX's default). */
static enum qp_dtype int_dtype(const struct qp_graph *g, const struct qp_node *n)
{
    const struct qp_tensor *zp = konst(g, n, 2);
    if (zp)
        return zp->dtype;
    if (is_op(n, "DequantizeLinear") && n->in[0] >= 0) {
        const struct qp_value *v = &g->values[n->in[0]];
        if (v->konst)
            return v->konst->dtype;
        if (v->producer >= 0 && is_op(&g->nodes[v->producer], "QuantizeLinear"))
            return int_dtype(g, &g->nodes[v->producer]);
    }
    return QP_DTYPE_U8;
}

/* Per-tensor scale and zero point of Q/DQ node n. */
static bool side_of(const struct qp_graph *g, const struct qp_node *n,
                    struct side *s)
{
    const struct qp_tensor *sc = konst(g, n, 1), *zp = konst(g, n, 2);
    if (!sc || qp_tensor_numel(sc) != 1 || sc->dtype != QP_DTYPE_F32 ||
        (n->n_in > 2 && n->in[2] >= 0 && (!zp || qp_tensor_numel(zp) != 1)))
        return false;
    s->scale = *(const float *)sc->data;
    s->zp = zp ? (int32_t)qp_elem_get_i64(zp->dtype, zp->data, 0) : 0;
    s->dtype = int_dtype(g, n);
    return s->scale > 0 && isfinite(s->scale) &&
           (s->dtype == QP_DTYPE_I8 || s->dtype == QP_DTYPE_U8);
}

/* The DQ node making value v, or NULL. */
static const struct qp_node *dq_of(const struct qp_graph *g, int v)
{
    if (v < 0 || g->values[v].producer < 0)
        return NULL;
    const struct qp_node *n = &g->nodes[g->values[v].producer];
    return is_op(n, "DequantizeLinear") ? n : NULL;
}

/* The only consumer of node i's output when it is a Q node. */
static const struct qp_node *q_after(const struct qp_graph *g, int i)
{
    int v = g->nodes[i].out[0];
    if (v < 0 || g->values[v].is_output || g->values[v].n_consumers != 1)
        return NULL;
    const struct qp_node *n = &g->nodes[g->values[v].consumers[0]];
    return is_op(n, "QuantizeLinear") && n->in[0] == v ? n : NULL;
}

/* Weight DQ: a constant 8-bit tensor with per-tensor or per-axis
 * parameters along axis `axis` (of `channels` entries). */
static bool weight_of(const struct qp_graph *g, const struct qp_node *dq,
                      int axis, struct fuse *f)
{
    const struct qp_tensor *w = konst(g, dq, 0), *sc = konst(g, dq, 1);
    const struct qp_tensor *zp = konst(g, dq, 2);
    if (!w || !sc || (w->dtype != QP_DTYPE_I8 && w->dtype != QP_DTYPE_U8) ||
        sc->dtype != QP_DTYPE_F32 || axis >= w->ndim)
        return false;
    size_t n = qp_tensor_numel(sc);
    int a = (int)qp_attr_int(dq, "axis", 1);
    if (a < 0)
        a += w->ndim;
    if (n != 1 && (a != axis || (size_t)w->shape[axis] != n))
        return false;
    if (zp && qp_tensor_numel(zp) != n)
        return false;
    f->w = w;
    f->nw = n;
    f->ws = malloc(n * sizeof *f->ws);
    f->wz = calloc(n, sizeof *f->wz);
    if (!f->ws || !f->wz)
        return false;
    for (size_t i = 0; i < n; i++) {
        f->ws[i] = ((const float *)sc->data)[i];
        f->wz[i] = zp ? (int32_t)qp_elem_get_i64(zp->dtype, zp->data, i) : 0;
    }
    return true;
}

/* Bias of a fused conv: DQ of an int32 constant, or a float constant
 * rounded to the grid of x_scale * w_scale[c]. */
static bool bias_of(const struct qp_graph *g, const struct qp_node *n,
                    size_t channels, struct fuse *f)
{
    if (n->n_in < 3 || n->in[2] < 0)
        return true;
    const struct qp_node *dq = dq_of(g, n->in[2]);
    const struct qp_tensor *b = dq ? konst(g, dq, 0) : g->values[n->in[2]].konst;
    if (!b || qp_tensor_numel(b) != channels ||
        b->dtype != (dq ? QP_DTYPE_I32 : QP_DTYPE_F32))
        return false;
    if (!(f->bias = malloc(channels * sizeof *f->bias)))
        return false;
    for (size_t c = 0; c < channels; c++) {
        if (dq) {
            f->bias[c] = ((const int32_t *)b->data)[c];
            continue;
        }
        double s = (double)f->x.scale * f->ws[f->nw == 1 ? 0 : c];
        double r = round(((const float *)b->data)[c] / s);
        f->bias[c] = (int32_t)fmax(fmin(r, INT32_MAX), INT32_MIN);
    }
    return true;
}

static void fuse_release(struct fuse *f)
{
    free(f->ws);
    free(f->wz);
    free(f->bias);
    qp_rq_release(&f->rq);
    memset(f, 0, sizeof *f);
}

/* ONNX Runtime's own fusions (its CPU provider on x86-64, 1.20's QDQ
 * selectors): the input and output types agree; a Conv's bias fuses only
 * as DQ of an int32 constant; Add, Mul, the average pools, Softmax,
 * Sigmoid and LeakyRelu become the QLinear contrib operators. Only groups
 * with uint8 activations fuse: for Conv and MatMul QDQIsInt8Allowed() is
 * false on x86, and with int8 activations every group comes out of the
 * pinned onnxruntime-node as the float path's result (observed in
 * tests/unit/test-qdq-ort.c; its graph transformers turn the output's
 * int8 Q -> DQ pair into uint8 first, leaving the group's types unequal). */
static bool ort_fuses(const struct qp_graph *g, const struct qp_node *n,
                      const struct fuse *f, const struct qp_node *d1)
{
    bool conv = is_op(n, "Conv"), mm = is_op(n, "MatMul");
    if (f->x.dtype != QP_DTYPE_U8 || f->y.dtype != QP_DTYPE_U8)
        return false;
    if (conv || mm) {
        bool bias_dq = n->n_in < 3 || n->in[2] < 0 || dq_of(g, n->in[2]);
        return bias_dq && d1;
    }
    return f->ort != QP_QDQ_ORT_COUNT &&
           (!d1 || f->x2.dtype == f->x.dtype);
}

/* Recognizes a fusable pattern at node i. */
static void plan_node(struct qp_qdq *q, int i)
{
    const struct qp_graph *g = q->g;
    const struct qp_node *n = &g->nodes[i];
    struct fuse *f = &q->f[i];
    bool ort = q->flavor == QP_RQ_ORT;
    if (is_op(n, "QLinearConv") || is_op(n, "QLinearMatMul")) {
        f->kind = F_QLINEAR;
        return;
    }
    bool conv = is_op(n, "Conv"), mm = is_op(n, "MatMul"), add = is_op(n, "Add");
    f->ort = ort ? qp_qdq_ort_op_of(n) : QP_QDQ_ORT_COUNT;
    bool binary = f->ort == QP_QDQ_ORT_ADD || f->ort == QP_QDQ_ORT_MUL;
    if (!conv && !mm && !add && f->ort == QP_QDQ_ORT_COUNT)
        return;
    const struct qp_node *dx = dq_of(g, n->in[0]), *qy = q_after(g, i);
    const struct qp_node *d1 = n->n_in > 1 ? dq_of(g, n->in[1]) : NULL;
    bool unary = f->ort != QP_QDQ_ORT_COUNT && !binary;
    if (!dx || !qy || (!d1 && !unary) || (unary && n->n_in != 1) ||
        !side_of(g, dx, &f->x) || !side_of(g, qy, &f->y))
        return;
    bool ok;
    if (unary || binary) {
        ok = unary || side_of(g, d1, &f->x2);
    } else if (add) { /* TFLite's integer add in the fixed-point flavors */
        ok = side_of(g, d1, &f->x2) && qp_rq_flavor_fixed(q->flavor);
    } else if (konst(g, d1, 0)) {
        const struct qp_tensor *w = konst(g, d1, 0);
        int axis = conv ? 0 : w->ndim - 1;
        ok = weight_of(g, d1, axis, f) &&
             (!conv || bias_of(g, n, (size_t)w->shape[0], f)) &&
             (conv || n->n_in == 2);
    } else { /* activation x activation */
        ok = mm && side_of(g, d1, &f->x2);
    }
    if (ok && ort)
        ok = ort_fuses(g, n, f, d1);
    const struct qp_dtype_traits *tr = qp_dtype_traits(f->y.dtype);
    if (ok && (conv || mm)) {
        struct qp_error e;
        const float *ws = f->w ? f->ws : &f->x2.scale;
        ok = qp_rq_prepare_scales(&f->rq, q->flavor, f->x.scale, ws,
                                  f->w ? f->nw : 1, f->y.scale, f->y.zp,
                                  f->y.dtype, (int32_t)tr->min, (int32_t)tr->max,
                                  &e) == QP_OK;
    }
    if (!ok) {
        fuse_release(f);
        return;
    }
    f->kind = conv ? F_CONV : mm ? F_MATMUL : ort ? F_ORT : F_ADD;
    q->fused++;
}

void qp_qdq_free(struct qp_qdq *q)
{
    if (!q)
        return;
    for (int i = 0; q->f && i < q->g->n_nodes; i++)
        fuse_release(&q->f[i]);
    free(q->f);
    free(q);
}

enum qp_status qp_qdq_new(const struct qp_graph *g, enum qp_rq_flavor f,
                          struct qp_qdq **out, struct qp_error *err)
{
    struct qp_qdq *q = calloc(1, sizeof *q);
    if (q)
        q->f = calloc((size_t)(g->n_nodes ? g->n_nodes : 1), sizeof *q->f);
    if (!q || !q->f) {
        free(q);
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    }
    q->g = g;
    q->flavor = f;
    for (int i = 0; i < g->n_nodes; i++)
        plan_node(q, i);
    *out = q;
    return QP_OK;
}

int qp_qdq_fused(const struct qp_qdq *q)
{
    return q->fused;
}

/* ---- running -------------------------------------------------------------- */

/* The integers of a float tensor dequantized with s (exact: its values
 * lie on s's grid). */
static enum qp_status requantize(const struct qp_tensor *x, const struct side *s,
                                 struct qp_tensor **out, struct qp_error *err)
{
    enum qp_status st = qp_tensor_new(x->name, s->dtype, x->ndim, x->shape, out,
                                      err);
    if (!st)
        st = qp_qa_quantize(QP_QA_ONNX, x->data, 1, 1, qp_tensor_numel(x),
                            &s->scale, &s->zp, s->dtype, (*out)->data, err);
    return st;
}

static enum qp_status run_fused(struct qp_qdq *q, const struct qp_op_ctx *c,
                                struct qp_tensor **out, struct qp_error *err)
{
    struct fuse *f = &q->f[c->node];
    struct qp_tensor *xq = NULL, *x2q = NULL, *yq = NULL;
    struct qp_tdesc d;
    bool one_input = f->kind == F_ORT && f->ort != QP_QDQ_ORT_ADD &&
                     f->ort != QP_QDQ_ORT_MUL;
    enum qp_status st = requantize(c->in[0], &f->x, &xq, err);
    if (!st && !f->w && !one_input)
        st = requantize(c->in[1], &f->x2, &x2q, err);
    const struct qp_tensor *w = f->w ? f->w : x2q;
    if (!st) {
        if (f->kind == F_CONV)
            st = qp_qlin_conv_shape(c, xq, w, &d, err);
        else if (f->kind == F_MATMUL)
            st = qp_qlin_matmul_shape(c, xq, w, &d, err);
        else if (f->kind == F_ORT)
            st = qp_qdq_ort_shape(f->ort, c, xq, x2q, &d, err);
        else
            st = qp_op_broadcast(c, c->in, 2, &d, err);
    }
    if (!st)
        st = qp_tensor_new("y", f->y.dtype, d.ndim, d.shape, &yq, err);
    if (!st && f->kind == F_ORT) {
        struct qp_qlin_side a = {f->x.scale, f->x.zp}, b = {f->x2.scale, f->x2.zp};
        struct qp_qlin_side y = {f->y.scale, f->y.zp};
        st = qp_qdq_ort_run(f->ort, c, xq, a, x2q, b, y, yq, err);
    } else if (!st && f->kind == F_ADD) {
        bool done;
        struct qp_qside a = {f->x.scale, f->x.zp}, b = {f->x2.scale, f->x2.zp};
        struct qp_qside y = {f->y.scale, f->y.zp};
        st = qp_qadd(c, q->flavor, xq, a, x2q, b, y, yq, &done, err);
        if (!st && !done)
            st = qp_op_fail(err, c, QP_E_UNSUPPORTED, "no integer add in %s",
                            qp_rq_flavor_name(q->flavor));
    } else if (!st) {
        struct qp_qlin ql = {xq, w, f->bias, f->x.zp, f->w ? f->wz : &f->x2.zp,
                             f->w ? f->nw : 1, &f->rq};
        st = f->kind == F_CONV ? qp_qlin_conv(c, &ql, yq, err)
                               : qp_qlin_matmul(c, &ql, yq, err);
    }
    if (!st) /* the float the Q after this turns back into these integers */
        st = qp_tensor_new(c->g->values[c->n->out[0]].name, QP_DTYPE_F32, d.ndim,
                           d.shape, &out[0], err);
    if (!st)
        st = qp_qa_dequantize(yq->data, yq->dtype, 1, 1, qp_tensor_numel(yq),
                              &f->y.scale, &f->y.zp, out[0]->data, err);
    qp_tensor_free(xq);
    qp_tensor_free(x2q);
    qp_tensor_free(yq);
    return st;
}

static enum qp_status qdq_run_node(void *ctx, const struct qp_op_ctx *c,
                                   struct qp_tensor **out, bool *done,
                                   struct qp_error *err)
{
    struct qp_qdq *q = ctx;
    enum fkind k = q->f[c->node].kind;
    if (k == F_NONE)
        return QP_OK;
    *done = true;
    if (k != F_QLINEAR)
        return run_fused(q, c, out, err);
    struct qp_tdesc d;
    enum qp_status st = c->n->def->infer(c, &d, err);
    if (!st)
        st = qp_tensor_new(c->g->values[c->n->out[0]].name, d.dtype, d.ndim,
                           d.shape, &out[0], err);
    return st ? st : qp_qlin_node_run(c, q->flavor, out, err);
}

void qp_qdq_hooks(struct qp_qdq *q, struct qp_exec_hooks *h)
{
    memset(h, 0, sizeof *h);
    h->ctx = q;
    h->run_node = qdq_run_node;
}
