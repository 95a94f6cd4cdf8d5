/* model/qexec-int.c: integer computations of float-path nodes of the int
 * mode (model/qexec-int.h). */
#include "model/qexec-int.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/parallel.h"
#include "kernels/lut-s8.h"
#include "kernels/quantize-act.h"
#include "model/op-quant.h"
#include "model/qexec-fuse.h"

/* ---- threads ----------------------------------------------------------- */

struct pfor_job {
    void (*fn)(void *ctx, size_t begin, size_t end);
    void *ctx;
};

static void pfor_chunk(void *arg, int t, size_t b, size_t e)
{
    const struct pfor_job *j = arg;
    (void)t;
    j->fn(j->ctx, b, e);
}

void qp_qint_parallel_for(const struct qp_op_ctx *c, size_t n,
                          size_t min_per_thread, size_t align,
                          void (*fn)(void *ctx, size_t begin, size_t end),
                          void *ctx)
{
    int nt = qp_parallel_threads_for((double)n, (double)min_per_thread,
                                     qp_pool_threads(c->pool));
    if (nt <= 1) { /* one call: what a function sets up per call, once */
        if (n)
            fn(ctx, 0, n);
        return;
    }
    struct pfor_job j = {fn, ctx};
    size_t per = (n + (size_t)nt * 4 - 1) / ((size_t)nt * 4);
    qp_parallel_chunks(pfor_chunk, &j, n, (per + align - 1) / align * align, nt);
}

/* Largest plane whose sum of dequantized codes is exact in double. */
#define GAP_MAX_AREA ((size_t)1 << 20)

static bool is_op(const struct qp_node *n, const char *op)
{
    return !n->domain[0] && !strcmp(n->op_type, op);
}

/* True when t holds value v as the int mode carries it. */
static bool carried(const struct qp_qplan *p, int v, const struct qp_tensor *t)
{
    const struct qp_qval *q = v >= 0 ? &p->v[v] : NULL;
    return q && t && t->data && q->quant && t->dtype == q->dtype && t->qp &&
           t->qp->count == 1;
}

/* The float value of every code of a value quantized as q. */
static void code_values(const struct qp_qval *q, float f[256])
{
    uint8_t b[256];
    for (int i = 0; i < 256; i++)
        b[i] = (uint8_t)i;
    qp_qa_dequantize_row(b, q->dtype, 256, q->scale, q->zp, f);
}

/* t[code] = quantize(dequantize(code)) from a value quantized as a to
 * one quantized as b, as the float path computes it; true when that is
 * every code itself. */
static bool requant_table(const struct qp_qplan *p, const struct qp_qval *a,
                          const struct qp_qval *b, uint8_t t[256])
{
    float f[256];
    code_values(a, f);
    qp_qa_quantize_row(p->qa, f, 256, b->scale, b->zp, b->qmin, b->qmax,
                       b->dtype, t);
    bool same = a->dtype == b->dtype;
    for (int i = 0; same && i < 256; i++)
        same = t[i] == i;
    return same;
}

static enum qp_status attach(const struct qp_qval *v, struct qp_tensor *t,
                             struct qp_error *err)
{
    return qp_tensor_set_qparams(t, 1, &v->scale, &v->zp, -1, 0, err);
}

struct table_job {
    const uint8_t *t;
    const uint8_t *x;
    uint8_t *y;
};

static void table_range(void *ctx, size_t b, size_t e)
{
    const struct table_job *j = ctx;
    qp_lut8_apply(j->t, j->x + b, e - b, j->y + b);
}

/* y[i] = t[x[i]] for n bytes (y may be x), on c's pool when large. */
static void apply_table(const struct qp_op_ctx *c, const uint8_t t[256],
                        const void *x, size_t n, void *y)
{
    struct table_job j = {t, x, y};
    qp_qint_parallel_for(c, n, 1 << 16, 64, table_range, &j);
}

/* ---- GlobalAveragePool ---------------------------------------------------- */

struct gap_job {
    const uint8_t *x;
    size_t area;
    const float *v;   /* the float value of each code */
    const int64_t *i; /* NULL, or v / unit: integers (gap_integers) */
    double unit;
    float *y;         /* per plane */
};

/* Planes [b, e): the mean of each as global_planes (model/op-pool.c)
 * computes it: its sum in double is exact, so any order of the same terms
 * gives the same bits. With integer values that sum is unit times their
 * integer sum (qp_lutsum_planes). */
static void gap_planes(void *ctx, size_t b, size_t e)
{
    const struct gap_job *j = ctx;
    if (j->i && j->area) {
        int64_t s[512];
        for (size_t pl = b; pl < e; pl += 512) {
            size_t n = e - pl < 512 ? e - pl : 512;
            qp_lutsum_planes(j->i, j->x + pl * j->area, j->area, n, s);
            for (size_t k = 0; k < n; k++)
                j->y[pl + k] = (float)((double)s[k] * j->unit / (double)j->area);
        }
        return;
    }
    double v[256];
    for (int k = 0; k < 256; k++)
        v[k] = j->v[k];
    for (size_t pl = b; pl < e; pl++) {
        const uint8_t *x = j->x + pl * j->area;
        double s[4] = {0.0, 0.0, 0.0, 0.0};
        size_t i = 0;
        for (; i + 4 <= j->area; i += 4)
            for (int k = 0; k < 4; k++)
                s[k] += v[x[i + k]];
        for (; i < j->area; i++)
            s[0] += v[x[i]];
        double t = (s[0] + s[1]) + (s[2] + s[3]);
        j->y[pl] = j->area ? (float)(t / (double)j->area) : 0.0f;
    }
}

/* in[k] = v[k] / *unit, for unit a power of two every value is a
 * multiple of (a float is a 24-bit integer times a power of two, read off
 * its bits; unit is the least nonzero value's), *most the largest |in[k]|:
 * false when a value is not finite. Sums of area values are then exact in
 * double where area * *most <= 2^53, and unit times the integer sum. */
static bool gap_integers(const float v[256], int64_t in[256], double *unit,
                         double *most)
{
    int64_t m[256];
    int ex[256], e = INT_MAX;
    for (int k = 0; k < 256; k++) {
        uint32_t b;
        memcpy(&b, &v[k], sizeof b);
        int be = (int)(b >> 23 & 0xFF);
        if (be == 0xFF)
            return false; /* Inf, NaN */
        int64_t mag = (int64_t)(b & 0x7FFFFF) | (be ? INT64_C(1) << 23 : 0);
        m[k] = b >> 31 ? -mag : mag;
        ex[k] = be ? be - 150 : -149; /* v = m * 2^ex */
        if (mag && ex[k] < e)
            e = ex[k];
    }
    if (e == INT_MAX)
        e = 0; /* all zero */
    *unit = ldexp(1.0, e);
    *most = 0;
    for (int k = 0; k < 256; k++) {
        int sh = m[k] ? ex[k] - e : 0;
        if (sh > 29) /* |in| < 2^(24 + sh): past 2^53 */
            return false;
        in[k] = m[k] * (INT64_C(1) << sh);
        *most = fmax(*most, fabs((double)in[k]));
    }
    return true;
}

static bool gap_ok(const struct qp_op_ctx *c)
{
    const struct qp_tensor *x = c->in[0];
    if (x->ndim < 3 || !x->shape[0] || !x->shape[1])
        return false;
    return qp_tensor_numel(x) / (size_t)(x->shape[0] * x->shape[1]) <=
           GAP_MAX_AREA;
}

static enum qp_status run_gap(struct qp_qplan *p,
                              const struct qp_op_ctx *c, struct qp_tensor **out,
                              struct qp_error *err)
{
    const struct qp_tensor *x = c->in[0];
    const struct qp_qval *vo = &p->v[c->n->out[0]];
    struct qp_tdesc d = {vo->dtype, x->ndim, {0}};
    for (int k = 0; k < x->ndim; k++)
        d.shape[k] = k < 2 ? x->shape[k] : 1;
    size_t planes = (size_t)(x->shape[0] * x->shape[1]);
    float *y = qp_op_scratch(c, planes * sizeof *y);
    if (!y)
        return qp_op_fail(err, c, QP_E_NOMEM, "out of memory");
    enum qp_status st = qp_op_new_tensor(c, c->g->values[c->n->out[0]].name, &d,
                                         out, err);
    if (st)
        return st;
    float v[256];
    struct gap_job j = {x->data, qp_tensor_numel(x) / planes, v, NULL, 1.0, y};
    struct qp_qnode *q = &p->n[c->node];
    if (!q->gap_ready) { /* the same input's codes at every run */
        code_values(&p->v[c->n->in[0]], v);
        q->gap_in = malloc(256 * sizeof *q->gap_in);
        if (q->gap_in &&
            !gap_integers(v, q->gap_in, &q->gap_unit, &q->gap_most)) {
            free(q->gap_in);
            q->gap_in = NULL;
        }
        q->gap_ready = true;
    }
    if (q->gap_in && q->gap_most * (double)j.area <= 0x1p53) {
        j.i = q->gap_in;
        j.unit = q->gap_unit;
    } else {
        code_values(&p->v[c->n->in[0]], v);
    }
    qp_qint_parallel_for(c, planes, qp_op_par_items(j.area), 1, gap_planes,
                         &j);
    qp_qa_quantize_row(p->qa, y, planes, vo->scale, vo->zp, vo->qmin, vo->qmax,
                       vo->dtype, (*out)->data);
    return attach(vo, *out, err);
}

/* ---- moves: Resize (nearest), Concat ---------------------------------- */

/* The operator on the codes of inputs in[] (each already on the output's
 * grid), then the output's parameters. */
static enum qp_status run_moved(const struct qp_qplan *p,
                                const struct qp_op_ctx *c,
                                const struct qp_tensor *const *in,
                                struct qp_tensor **out, struct qp_error *err)
{
    enum qp_status st = qp_exec_node_as(c, in, out, err);
    return st ? st : attach(&p->v[c->n->out[0]], out[0], err);
}

static enum qp_status run_resize(const struct qp_qplan *p,
                                 const struct qp_op_ctx *c,
                                 struct qp_tensor **out, struct qp_error *err)
{
    uint8_t t[256];
    bool same = requant_table(p, &p->v[c->n->in[0]], &p->v[c->n->out[0]], t);
    enum qp_status st = run_moved(p, c, c->in, out, err);
    if (!st && !same)
        apply_table(c, t, out[0]->data, out[0]->nbytes, out[0]->data);
    return st;
}

static enum qp_status run_concat(const struct qp_qplan *p,
                                 const struct qp_op_ctx *c,
                                 struct qp_tensor **out, struct qp_error *err)
{
    const struct qp_tensor *in[QP_OP_MAX_IO];
    struct qp_tensor *tmp[QP_OP_MAX_IO] = {0};
    enum qp_status st = QP_OK;
    for (int k = 0; !st && k < c->n_in; k++) {
        uint8_t t[256];
        struct qp_tdesc d;
        in[k] = c->in[k];
        if (requant_table(p, &p->v[c->n->in[k]], &p->v[c->n->out[0]], t))
            continue;
        qp_tdesc_of(c->in[k], &d);
        if (!(st = qp_op_new_tensor(c, c->in[k]->name, &d, &tmp[k], err))) {
            apply_table(c, t, c->in[k]->data, c->in[k]->nbytes, tmp[k]->data);
            in[k] = tmp[k];
        }
    }
    if (!st)
        st = run_moved(p, c, in, out, err);
    for (int k = 0; k < c->n_in; k++)
        qp_op_free_tensor(c, tmp[k]);
    return st;
}

/* ---- per-channel tables --------------------------------------------------- */

/* The axis along which constant k of an output of rank nd varies (dims
 * aligned to the right, every other one 1), or -1; *len its extent. */
static int varying_axis(const struct qp_tensor *k, int nd, size_t *len)
{
    int axis = -1;
    if (k->ndim > nd)
        return -1;
    for (int d = 0; d < k->ndim; d++) {
        if (k->shape[d] == 1)
            continue;
        if (axis >= 0)
            return -1;
        axis = nd - k->ndim + d;
        *len = (size_t)k->shape[d];
    }
    return axis;
}

static bool bn_ok(const struct qp_op_ctx *c, int *axis, size_t *channels)
{
    const struct qp_tensor *x = c->in[0];
    if (c->n_in != 5 || c->n->n_out != 1 || x->ndim < 2 ||
        qp_attr_int(c->n, "training_mode", 0))
        return false;
    for (int k = 1; k < 5; k++) {
        const struct qp_tensor *t = c->n->in[k] >= 0
                                        ? c->g->values[c->n->in[k]].konst : NULL;
        if (!t || t->dtype != QP_DTYPE_F32 ||
            qp_tensor_numel(t) != (size_t)x->shape[1])
            return false;
    }
    *axis = 1;
    *channels = (size_t)x->shape[1];
    return true;
}

bool qp_qint_channel_ok(const struct qp_qplan *p, const struct qp_op_ctx *c,
                        int *qin, int *axis, size_t *channels)
{
    const struct qp_node *n = c->n;
    const struct qp_qnode *q = &p->n[c->node];
    if (q->kind != QP_QK_FLOAT || q->lut_ok || q->wq || n->n_out != 1 ||
        n->out[0] < 0 || !p->v[n->out[0]].quant || n->n_in < 1 ||
        n->in[0] < 0 || !p->v[n->in[0]].quant || !c->in[0] ||
        c->in[0]->dtype != p->v[n->in[0]].dtype || c->in[0]->ndim < 2)
        return false;
    *qin = 0;
    if (is_op(n, "BatchNormalization"))
        return bn_ok(c, axis, channels);
    if (!(is_op(n, "Add") || is_op(n, "Sub") || is_op(n, "Mul") ||
          is_op(n, "Div")) || n->n_in != 2 || n->in[1] < 0)
        return false;
    const struct qp_tensor *x = c->in[0], *k = c->g->values[n->in[1]].konst;
    if (!k || k->dtype != QP_DTYPE_F32)
        return false;
    *axis = varying_axis(k, x->ndim, channels);
    return *axis >= 0 && (size_t)x->shape[*axis] == *channels;
}

enum qp_status qp_qint_channel_table(struct qp_qplan *p,
                                     const struct qp_op_ctx *c, int qin,
                                     int axis, size_t channels,
                                     const uint8_t **table,
                                     struct qp_error *err)
{
    struct qp_qnode *q = &p->n[c->node];
    *table = q->lut;
    if (q->lut)
        return QP_OK;
    /* every code of every channel: [1.., C at axis, .., 256 on another] */
    int nd = c->in[qin]->ndim, cax = axis == nd - 1 ? nd - 2 : nd - 1;
    int64_t shape[QP_MAX_DIMS];
    for (int d = 0; d < nd; d++)
        shape[d] = d == axis ? (int64_t)channels : d == cax ? 256 : 1;
    size_t inner = axis < cax ? 1 : channels; /* stride between codes */
    struct qp_tensor *x, *out[QP_OP_MAX_IO] = {0};
    enum qp_status st = qp_tensor_new(c->in[qin]->name, QP_DTYPE_F32, nd, shape,
                                      &x, err);
    if (st)
        return st;
    float v[256];
    code_values(&p->v[c->n->in[qin]], v);
    float *xp = x->data;
    for (size_t ch = 0; ch < channels; ch++)
        for (size_t k = 0; k < 256; k++)
            xp[axis < cax ? ch * 256 + k : k * channels + ch] = v[k];
    const struct qp_tensor *in[QP_OP_MAX_IO];
    for (int k = 0; k < c->n_in; k++)
        in[k] = k == qin ? x : c->in[k];
    st = qp_exec_node_as(c, in, out, err);
    uint8_t *t = NULL, *raw = NULL;
    const struct qp_qval *vo = &p->v[c->n->out[0]];
    if (!st && (!out[0] || out[0]->dtype != QP_DTYPE_F32 ||
                qp_tensor_numel(out[0]) != 256 * channels))
        st = qp_op_fail(err, c, QP_E_SHAPE, "channel table: unexpected output");
    if (!st && (!(t = malloc(256 * channels)) || !(raw = malloc(256 * channels))))
        st = qp_op_fail(err, c, QP_E_NOMEM, "out of memory");
    if (!st) {
        qp_qa_quantize_row(p->qa, out[0]->data, 256 * channels, vo->scale,
                           vo->zp, vo->qmin, vo->qmax, vo->dtype, raw);
        for (size_t ch = 0; ch < channels; ch++)
            for (size_t k = 0; k < 256; k++)
                t[ch * 256 + k] = raw[inner == 1 ? ch * 256 + k : k * channels + ch];
        q->lut = t;
        *table = t;
        t = NULL;
    }
    free(t);
    free(raw);
    qp_tensor_free(x);
    for (int k = 0; k < c->n->n_out; k++)
        qp_tensor_free(out[k]);
    return st;
}

/* ---- pair tables with one input per block ---------------------------------- */

/* For a table node of two quantized inputs where one (*small) holds one
 * code per block of *inner consecutive output elements and the other
 * has the output's shape (x * se[c] of a squeeze-excite block): true, with
 * the two inputs' indices among c's inputs in in[0] (first quantized,
 * the table's high byte) and in[1]. */
static bool pair_rows_ok(const struct qp_qplan *p, const struct qp_op_ctx *c,
                         int *in, int *small, size_t *inner)
{
    const struct qp_node *n = c->n;
    const struct qp_qnode *q = &p->n[c->node];
    int nq = 0;
    if (!q->lut_ok || n->n_out != 1 || n->out[0] < 0 ||
        !(q->kind == QP_QK_FLOAT || q->kind == QP_QK_ADD))
        return false;
    for (int k = 0; k < n->n_in; k++) {
        if (n->in[k] < 0 || c->g->values[n->in[k]].konst)
            continue;
        if (nq == 2 || !carried(p, n->in[k], c->in[k]))
            return false;
        in[nq++] = k;
    }
    if (nq != 2)
        return false;
    const struct qp_tensor *a = c->in[in[0]], *b = c->in[in[1]];
    *small = qp_tensor_numel(a) < qp_tensor_numel(b) ? 0 : 1;
    const struct qp_tensor *s = c->in[in[*small]], *big = c->in[in[1 - *small]];
    if (qp_tensor_numel(s) == qp_tensor_numel(big) || s->ndim > big->ndim)
        return false;
    for (int k = 0; k < c->n_in; k++) /* scalar constants, within big's rank */
        if (c->in[k] && c->in[k] != a && c->in[k] != b &&
            (qp_tensor_numel(c->in[k]) != 1 || c->in[k]->ndim > big->ndim))
            return false;
    /* s aligned right: big's dims up to some axis, then ones */
    int off = big->ndim - s->ndim, last = -1;
    for (int d = 0; d < s->ndim; d++)
        if (s->shape[d] != 1)
            last = off + d;
    for (int d = 0; d < big->ndim; d++) {
        int64_t sd = d < off ? 1 : s->shape[d - off];
        if (d <= last ? sd != big->shape[d] : sd != 1)
            return false;
    }
    *inner = 1;
    for (int d = last + 1; d < big->ndim; d++)
        *inner *= (size_t)big->shape[d];
    return *inner >= 64; /* whole table rows pay from there */
}

struct rows_job {
    const uint8_t *t;   /* rows by the small input's code */
    const uint8_t *s, *x;
    uint8_t *y;
    size_t inner;
};

static void rows_range(void *ctx, size_t b, size_t e)
{
    const struct rows_job *j = ctx;
    for (size_t i = b; i < e; i++)
        qp_lut8_apply(j->t + ((size_t)j->s[i] << 8), j->x + i * j->inner,
                      j->inner, j->y + i * j->inner);
}

static enum qp_status run_pair_rows(struct qp_qplan *p,
                                    const struct qp_op_ctx *c, const int *in,
                                    int small, size_t inner,
                                    struct qp_tensor **out,
                                    struct qp_error *err)
{
    const uint8_t *t;
    enum qp_status st = qp_qplan_lut(p, c, &t, err);
    /* the small input indexes rows: as it is when it is the high byte,
     * else of the table transposed */
    if (!st && small == 1)
        st = qp_qfuse_transposed(p, c->node, t, &t, err);
    const struct qp_tensor *s = c->in[in[small]], *x = c->in[in[1 - small]];
    struct qp_tdesc d;
    qp_tdesc_of(x, &d);
    d.dtype = p->v[c->n->out[0]].dtype;
    if (st || (st = qp_op_new_tensor(c, c->g->values[c->n->out[0]].name, &d, out,
                                     err)))
        return st;
    struct rows_job j = {t, s->data, x->data, (*out)->data, inner};
    qp_qint_parallel_for(c, qp_tensor_numel(s), qp_op_par_items(inner), 1,
                         rows_range, &j);
    return attach(&p->v[c->n->out[0]], *out, err);
}

/* ---- the integer Add's pair table ------------------------------------------ */

enum qp_status qp_qint_add_table(struct qp_qplan *p, const struct qp_op_ctx *c,
                                 bool *done, struct qp_error *err)
{
    const struct qp_node *n = c->n;
    *done = false;
    if (p->n[c->node].kind != QP_QK_ADD || !qp_rq_flavor_fixed(p->flavor) ||
        c->n_in != 2)
        return QP_OK;
    for (int k = 0; k < 2; k++) /* both quantized, as run_lut takes them */
        if (!c->in[k] || n->in[k] < 0 || !p->v[n->in[k]].quant ||
            qp_elem_size(c->in[k]->dtype) != 1)
            return QP_OK;
    const struct qp_qval *v1 = &p->v[n->in[0]], *v2 = &p->v[n->in[1]];
    const struct qp_qval *vo = &p->v[n->out[0]];
    int64_t len = 65536;
    struct qp_tensor *a = NULL, *b = NULL, *y = NULL;
    enum qp_status st = qp_tensor_new("a", c->in[0]->dtype, 1, &len, &a, err);
    if (!st)
        st = qp_tensor_new("b", c->in[1]->dtype, 1, &len, &b, err);
    if (!st)
        st = qp_tensor_new("y", vo->dtype, 1, &len, &y, err);
    if (!st) {
        uint8_t *ad = a->data, *bd = b->data;
        for (size_t i = 0; i < 65536; i++) {
            ad[i] = (uint8_t)(i >> 8);
            bd[i] = (uint8_t)i;
        }
        struct qp_qside qa = {v1->scale, v1->zp}, qb = {v2->scale, v2->zp};
        struct qp_qside qy = {vo->scale, vo->zp};
        st = qp_qadd(c, p->flavor, a, qa, b, qb, qy, y, done, err);
    }
    if (!st && *done) {
        if ((p->n[c->node].lut = malloc(65536)))
            memcpy(p->n[c->node].lut, y->data, 65536);
        else
            st = qp_op_fail(err, c, QP_E_NOMEM, "out of memory");
    }
    qp_tensor_free(a);
    qp_tensor_free(b);
    qp_tensor_free(y);
    return st;
}

/* ---- dispatch ------------------------------------------------------------- */

/* Resize's integer way: the gather runs on the codes (its shape
 * inference accepts them only then). */
static bool resize_ok(const struct qp_op_ctx *c)
{
    struct qp_tdesc d[QP_OP_MAX_IO];
    for (int k = 1; k < c->n_in; k++)
        if (c->n->in[k] >= 0 && !c->g->values[c->n->in[k]].konst)
            return false;
    return c->n->def->moves_values && c->n->def->moves_values(c->n) &&
           c->n->def->infer(c, d, NULL) == QP_OK;
}

static bool concat_ok(const struct qp_qplan *p, const struct qp_op_ctx *c)
{
    int vo = c->n->out[0];
    for (int k = 0; k < c->n_in; k++)
        if (!carried(p, c->n->in[k], c->in[k]) ||
            p->v[c->n->in[k]].dtype != p->v[vo].dtype)
            return false;
    return c->n_in > 0;
}

bool qp_qint_ok(const struct qp_qplan *p, const struct qp_op_ctx *c)
{
    const struct qp_node *n = c->n;
    const struct qp_qnode *q = &p->n[c->node];
    int in[2], small;
    size_t inner;
    if (pair_rows_ok(p, c, in, &small, &inner))
        return true;
    if (q->kind != QP_QK_FLOAT || q->lut_ok || q->wq || n->n_out != 1 ||
        n->out[0] < 0 || !p->v[n->out[0]].quant || n->n_in < 1)
        return false;
    if (is_op(n, "Concat"))
        return concat_ok(p, c);
    if (!carried(p, n->in[0], c->in[0]))
        return false;
    if (is_op(n, "GlobalAveragePool"))
        return n->n_in == 1 && gap_ok(c);
    if (is_op(n, "Resize"))
        return resize_ok(c);
    return false;
}

enum qp_status qp_qint_run(struct qp_qplan *p, const struct qp_op_ctx *c,
                           struct qp_tensor **out, struct qp_error *err)
{
    const struct qp_node *n = c->n;
    int in[2], small;
    size_t inner;
    out[0] = NULL;
    enum qp_status st = pair_rows_ok(p, c, in, &small, &inner)
                            ? run_pair_rows(p, c, in, small, inner, out, err)
                      : is_op(n, "GlobalAveragePool") ? run_gap(p, c, out, err)
                      : is_op(n, "Resize")            ? run_resize(p, c, out, err)
                                                      : run_concat(p, c, out, err);
    if (st) {
        qp_op_free_tensor(c, out[0]);
        out[0] = NULL;
    }
    return st;
}
