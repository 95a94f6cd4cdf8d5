/* model/op-matmul.c: MatMul (numpy semantics: 1-D promotion, broadcast
 * batch dims) and Gemm, in f32 through kernels/blas.h. */
#include <string.h>

#include "kernels/blas.h"
#include "model/op.h"

/* The matrices of a MatMul after 1-D promotion: A [batch..., m, k],
 * B [batch..., k, n]. */
struct mm {
    int64_t m, k, n;
    struct qp_tdesc batch;           /* broadcast batch dims */
    struct qp_tensor a_b, b_b;       /* batch-only views for qp_bcast */
};

static enum qp_status mm_shapes(const struct qp_op_ctx *c, struct mm *p,
                                struct qp_tdesc *out, struct qp_error *err)
{
    const struct qp_tensor *a = c->in[0], *b = c->in[1];
    if (a->ndim < 1 || b->ndim < 1)
        return qp_op_fail(err, c, QP_E_SHAPE, "inputs must have rank >= 1");
    int64_t ak = a->shape[a->ndim - 1];
    int64_t am = a->ndim >= 2 ? a->shape[a->ndim - 2] : 1;
    int64_t bk = b->ndim >= 2 ? b->shape[b->ndim - 2] : b->shape[0];
    int64_t bn = b->ndim >= 2 ? b->shape[b->ndim - 1] : 1;
    if (ak != bk) {
        char s0[128], s1[128];
        qp_shape_str(a->ndim, a->shape, s0, sizeof s0);
        qp_shape_str(b->ndim, b->shape, s1, sizeof s1);
        return qp_op_fail(err, c, QP_E_SHAPE, "cannot multiply %s by %s", s0, s1);
    }
    p->m = am;
    p->k = ak;
    p->n = bn;
    enum qp_status st = qp_op_batch_dims(c, a, b, &p->a_b, &p->b_b, &p->batch,
                                         err);
    if (st)
        return st;
    *out = p->batch;
    if (a->ndim >= 2)
        out->shape[out->ndim++] = am;
    if (b->ndim >= 2)
        out->shape[out->ndim++] = bn;
    out->dtype = a->dtype;
    return QP_OK;
}

static enum qp_status matmul_infer(const struct qp_op_ctx *c,
                                   struct qp_tdesc *out, struct qp_error *err)
{
    struct mm p;
    enum qp_status st;
    if ((st = qp_op_want_f32(c, 0, err)) || (st = qp_op_want_f32(c, 1, err)))
        return st;
    return mm_shapes(c, &p, out, err);
}

static enum qp_status matmul_run(const struct qp_op_ctx *c,
                                 struct qp_tensor *const *out,
                                 struct qp_error *err)
{
    struct mm p;
    struct qp_tdesc od;
    enum qp_status st = mm_shapes(c, &p, &od, err);
    if (st)
        return st;
    if ((size_t)p.m > QP_BLAS_MAX_DIM || (size_t)p.n > QP_BLAS_MAX_DIM ||
        (size_t)p.k > QP_BLAS_MAX_DIM)
        return qp_op_fail(err, c, QP_E_UNSUPPORTED, "matrix too large");
    const float *a = c->in[0]->data, *b = c->in[1]->data;
    float *y = out[0]->data;
    size_t mk = (size_t)(p.m * p.k), kn = (size_t)(p.k * p.n);
    size_t mn = (size_t)(p.m * p.n);
    size_t batches = qp_tdesc_numel(&p.batch);
    if (p.b_b.ndim == 0 && batches * (size_t)p.m <= QP_BLAS_MAX_DIM) {
        /* B shared by every batch: one product with the rows stacked */
        qp_blas_sgemm(c->pool, false, false, batches * (size_t)p.m, (size_t)p.n,
                      (size_t)p.k, 1.0f, a, (size_t)p.k, b, (size_t)p.n, 0.0f,
                      y, (size_t)p.n);
        return QP_OK;
    }
    struct qp_bcast bc;
    const struct qp_tensor *ops[2] = {&p.a_b, &p.b_b};
    qp_bcast_init(&bc, &p.batch, ops, 2);
    for (size_t i = 0; i < batches; i++) {
        int64_t off[2];
        qp_bcast_at(&bc, i, off);
        qp_blas_sgemm(c->pool, false, false, (size_t)p.m, (size_t)p.n, (size_t)p.k, 1.0f,
                      a + (size_t)off[0] * mk, (size_t)p.k, b + (size_t)off[1] * kn,
                      (size_t)p.n, 0.0f,
                      y + i * mn, (size_t)p.n);
    }
    return QP_OK;
}

/* ---- Gemm: Y = alpha * A' B' + beta * C --------------------------------- */

static enum qp_status gemm_infer(const struct qp_op_ctx *c,
                                 struct qp_tdesc *out, struct qp_error *err)
{
    enum qp_status st;
    for (int i = 0; i < 3; i++)
        if ((st = qp_op_want_f32(c, i, err)))
            return st;
    const struct qp_tensor *a = c->in[0], *b = c->in[1], *cc = qp_op_in(c, 2);
    if (a->ndim != 2 || b->ndim != 2)
        return qp_op_fail(err, c, QP_E_SHAPE, "A and B must be 2-D");
    bool ta = qp_attr_int(c->n, "transA", 0), tb = qp_attr_int(c->n, "transB", 0);
    int64_t m = a->shape[ta ? 1 : 0], k = a->shape[ta ? 0 : 1];
    int64_t kb = b->shape[tb ? 1 : 0], n = b->shape[tb ? 0 : 1];
    if (k != kb)
        return qp_op_fail(err, c, QP_E_SHAPE, "A has %lld columns, B %lld rows",
                          (long long)k, (long long)kb);
    *out = (struct qp_tdesc){QP_DTYPE_F32, 2, {m, n}};
    return cc ? qp_op_broadcasts_to(c, "C", cc, out, err) : QP_OK;
}

static enum qp_status gemm_run(const struct qp_op_ctx *c,
                               struct qp_tensor *const *out,
                               struct qp_error *err)
{
    (void)err;
    const struct qp_tensor *a = c->in[0], *b = c->in[1], *cc = qp_op_in(c, 2);
    bool ta = qp_attr_int(c->n, "transA", 0), tb = qp_attr_int(c->n, "transB", 0);
    float alpha = qp_attr_float(c->n, "alpha", 1.0f);
    float beta = qp_attr_float(c->n, "beta", 1.0f);
    size_t m = (size_t)out[0]->shape[0], n = (size_t)out[0]->shape[1];
    size_t k = (size_t)a->shape[ta ? 0 : 1];
    float *y = out[0]->data;
    float use_beta = 0.0f;
    if (cc && beta != 0.0f) {
        struct qp_tdesc od;
        qp_tdesc_of(out[0], &od);
        struct qp_bcast bc;
        const struct qp_tensor *ops[1] = {cc};
        qp_bcast_init(&bc, &od, ops, 1);
        const float *cv = cc->data;
        for (size_t i = 0; i < m * n; i++) {
            int64_t off;
            qp_bcast_at(&bc, i, &off);
            y[i] = beta * cv[off];
        }
        use_beta = 1.0f;
    }
    qp_blas_sgemm(c->pool, ta, tb, m, n, k, alpha, a->data, (size_t)a->shape[1], b->data,
                  (size_t)b->shape[1], use_beta, y, n);
    return QP_OK;
}

static const struct qp_attr_spec gemm_attrs[] = {
    {"alpha", QP_ATTR_FLOAT}, {"beta", QP_ATTR_FLOAT},
    {"transA", QP_ATTR_INT},  {"transB", QP_ATTR_INT}, {NULL, 0}};

/* MatMul's B is [.., K, N]; Gemm's B is [K, N], or [N, K] with transB. */
static bool matmul_layout(const struct qp_node *n, enum qp_wlayout *out)
{
    (void)n;
    *out = QP_WLAYOUT_KERAS;
    return true;
}

static bool gemm_layout(const struct qp_node *n, enum qp_wlayout *out)
{
    *out = qp_attr_int(n, "transB", 0) ? QP_WLAYOUT_TORCH : QP_WLAYOUT_KERAS;
    return true;
}

/* Every output element: K. */
static uint64_t matmul_macs(const struct qp_node *n,
                            const struct qp_tdesc *const *in,
                            const struct qp_tdesc *out)
{
    (void)n;
    int r = in[0]->ndim;
    return qp_tdesc_dims(out, 0, out->ndim) * qp_tdesc_dims(in[0], r - 1, r);
}

static uint64_t gemm_macs(const struct qp_node *n, const struct qp_tdesc *const *in,
                          const struct qp_tdesc *out)
{
    int k = qp_attr_int(n, "transA", 0) ? 0 : 1;
    return qp_tdesc_dims(out, 0, out->ndim) * qp_tdesc_dims(in[0], k, k + 1);
}

const struct qp_op_def qp_ops_matmul[] = {
    {"", "MatMul", 2, 2, 1, 1, 0, false, false, NULL, NULL, matmul_infer,
     matmul_run, 0, NULL, matmul_layout, matmul_macs},
    {"", "Gemm", 2, 3, 1, 1, 0, false, false, gemm_attrs, NULL, gemm_infer,
     gemm_run, 0, NULL, gemm_layout, gemm_macs},
    {NULL},
};
