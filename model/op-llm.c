/* model/op-llm.c: Embedding, RMSNorm and SwiGLU, and the table of the
 * qprobe-domain LLM operators (model/op-llm.h). */
#include "model/op-llm.h"

#include <math.h>
#include <string.h>

#include "kernels/gemm-wq.h"

size_t qp_llm_rows(const struct qp_tdesc *d)
{
    return d->ndim ? (size_t)qp_tdesc_dims(d, 0, d->ndim - 1) : 1;
}

void qp_llm_read_vec(const struct qp_tensor *t, float *out, size_t n)
{
    qp_tensor_read_f32(t, 0, n, out);
}

/* Last dim of t (1 for a scalar). */
static int64_t last_dim(const struct qp_tensor *t)
{
    return t->ndim ? t->shape[t->ndim - 1] : 1;
}

/* ---- Embedding ----------------------------------------------------------- */

static enum qp_status embed_infer(const struct qp_op_ctx *c, struct qp_tdesc *out,
                                  struct qp_error *err)
{
    const struct qp_tensor *ids = c->in[0], *tab = c->in[1];
    if (ids->dtype != QP_DTYPE_I32 && ids->dtype != QP_DTYPE_I64)
        return qp_op_fail(err, c, QP_E_FORMAT, "token ids are %s, expected "
                          "int32 or int64", qp_dtype_name(ids->dtype));
    if (tab->ndim != 2)
        return qp_op_fail(err, c, QP_E_SHAPE, "the table has rank %d, expected "
                          "[vocab, hidden]", tab->ndim);
    if (ids->ndim + 1 > QP_MAX_DIMS)
        return qp_op_fail(err, c, QP_E_UNSUPPORTED, "ids of rank %d", ids->ndim);
    qp_tdesc_of(ids, out);
    out->dtype = QP_DTYPE_F32;
    out->shape[out->ndim++] = tab->shape[1];
    return QP_OK;
}

static enum qp_status embed_run(const struct qp_op_ctx *c,
                                struct qp_tensor *const *out,
                                struct qp_error *err)
{
    const struct qp_tensor *ids = c->in[0], *tab = c->in[1];
    struct qp_wq w;
    enum qp_status st = qp_wq_init(&w, tab, err);
    if (st)
        return qp_op_fail(err, c, st, "%s", err->msg);
    size_t n = qp_tensor_numel(ids), h = w.k;
    float *y = out[0]->data;
    for (size_t i = 0; i < n; i++) {
        int64_t id = qp_elem_get_i64(ids->dtype, ids->data, i);
        if (id < 0 || (uint64_t)id >= w.n)
            return qp_op_fail(err, c, QP_E_INVAL, "token id %lld at position "
                              "%zu is outside the vocabulary [0, %zu)",
                              (long long)id, i, w.n);
        qp_wq_decode(&w, (size_t)id, 1, 0, h, y + i * h, h);
    }
    return QP_OK;
}

/* ---- RMSNorm ------------------------------------------------------------- */

static enum qp_status rms_infer(const struct qp_op_ctx *c, struct qp_tdesc *out,
                                struct qp_error *err)
{
    const struct qp_tensor *x = c->in[0], *w = c->in[1];
    enum qp_status st = qp_op_want_f32(c, 0, err);
    if (st)
        return st;
    if (!qp_dtype_traits(w->dtype)->is_float || w->ndim != 1 ||
        w->shape[0] != last_dim(x))
        return qp_op_fail(err, c, QP_E_SHAPE, "weight must be a float vector "
                          "of the input's last dim (%lld)",
                          (long long)last_dim(x));
    qp_tdesc_of(x, out);
    return QP_OK;
}

struct rms_job {
    const float *x, *w;
    float *y;
    size_t h;
    float eps;
};

static void rms_rows(void *ctx, size_t b, size_t e)
{
    const struct rms_job *j = ctx;
    for (size_t r = b; r < e; r++) {
        const float *x = j->x + r * j->h;
        float *y = j->y + r * j->h;
        double ss = 0;
        for (size_t i = 0; i < j->h; i++)
            ss += (double)x[i] * x[i];
        /* transformers: x * rsqrt(mean(x^2) + eps), in float32, then the
         * weight times that */
        float var = (float)(ss / (double)j->h);
        float inv = 1.0f / sqrtf(var + j->eps);
        for (size_t i = 0; i < j->h; i++)
            y[i] = j->w[i] * (x[i] * inv);
    }
}

static enum qp_status rms_run(const struct qp_op_ctx *c,
                              struct qp_tensor *const *out, struct qp_error *err)
{
    const struct qp_tensor *x = c->in[0], *w = c->in[1];
    size_t h = (size_t)last_dim(x);
    float *wf = qp_op_scratch(c, (h ? h : 1) * sizeof *wf);
    if (!wf)
        return qp_op_fail(err, c, QP_E_NOMEM, "out of memory");
    qp_llm_read_vec(w, wf, h);
    struct rms_job j = {x->data, wf, out[0]->data, h,
                        qp_attr_float(c->n, "epsilon", 1e-6f)};
    size_t rows = h ? qp_tensor_numel(x) / h : 0;
    qp_op_parallel_items(c, rows, qp_op_par_items(h), rms_rows, &j);
    return QP_OK;
}

/* ---- SwiGLU -------------------------------------------------------------- */

static enum qp_status swiglu_infer(const struct qp_op_ctx *c, struct qp_tdesc *out,
                                   struct qp_error *err)
{
    enum qp_status st;
    if ((st = qp_op_want_f32(c, 0, err)) || (st = qp_op_want_f32(c, 1, err)))
        return st;
    if (!qp_shape_equal(c->in[0]->ndim, c->in[0]->shape, c->in[1]->ndim,
                        c->in[1]->shape))
        return qp_op_fail(err, c, QP_E_SHAPE, "gate and up differ in shape");
    qp_tdesc_of(c->in[0], out);
    return QP_OK;
}

struct swiglu_job {
    const float *g, *u;
    float *y;
};

static void swiglu_range(void *ctx, size_t b, size_t e)
{
    const struct swiglu_job *j = ctx;
    for (size_t i = b; i < e; i++) {
        float g = j->g[i];
        j->y[i] = g / (1.0f + expf(-g)) * j->u[i];
    }
}

static enum qp_status swiglu_run(const struct qp_op_ctx *c,
                                 struct qp_tensor *const *out,
                                 struct qp_error *err)
{
    (void)err;
    struct swiglu_job j = {c->in[0]->data, c->in[1]->data, out[0]->data};
    qp_op_parallel_for(c, qp_tensor_numel(out[0]), QP_OP_PAR_MIN, swiglu_range, &j);
    return QP_OK;
}

/* ---- the table ----------------------------------------------------------- */

static bool torch_layout(const struct qp_node *n, enum qp_wlayout *out)
{
    (void)n;
    *out = QP_WLAYOUT_TORCH;
    return true;
}

static const struct qp_attr_spec rms_attrs[] = {{"epsilon", QP_ATTR_FLOAT},
                                                {NULL, 0}};

const struct qp_op_def qp_ops_llm[] = {
    {QP_LLM_DOMAIN, "Embedding", 2, 2, 1, 1, 0, false, false, NULL, NULL,
     embed_infer, embed_run, QP_TRAIT_QWEIGHT, NULL, torch_layout, NULL},
    {QP_LLM_DOMAIN, "RMSNorm", 2, 2, 1, 1, 0, false, false, rms_attrs, NULL,
     rms_infer, rms_run, 0, NULL, NULL, NULL},
    {QP_LLM_DOMAIN, "Linear", 2, 3, 1, 1, 0, false, false, NULL, NULL,
     qp_llm_linear_infer, qp_llm_linear_run, QP_TRAIT_QWEIGHT, NULL,
     torch_layout, qp_llm_linear_macs},
    {QP_LLM_DOMAIN, "SwiGLU", 2, 2, 1, 1, 0, false, false, NULL, NULL,
     swiglu_infer, swiglu_run, QP_TRAIT_ELEMENTWISE, NULL, NULL, NULL},
    {QP_LLM_DOMAIN, "Attention", 4, 4, 1, 1, 0, false, false, qp_llm_attn_attrs,
     qp_llm_attn_check, qp_llm_attn_infer, qp_llm_attn_run, 0, NULL, NULL,
     qp_llm_attn_macs},
    {NULL},
};
