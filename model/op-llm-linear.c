/* model/op-llm-linear.c: the qprobe-domain Linear operator (model/op-llm.h):
 * y[..., out] = x[..., in] W^T (+ b) with W [out, in] in any form
 * kernels/gemm-wq.h multiplies (float32, bfloat16, float16, integers with
 * scales), decoded tile by tile inside the product. */
#include <string.h>

#include "core/parallel.h"
#include "kernels/gemm-wq.h"
#include "model/op-llm.h"

enum qp_status qp_llm_linear_infer(const struct qp_op_ctx *c,
                                   struct qp_tdesc *out, struct qp_error *err)
{
    const struct qp_tensor *x = c->in[0], *w = c->in[1], *b = qp_op_in(c, 2);
    enum qp_status st = qp_op_want_f32(c, 0, err);
    if (st)
        return st;
    if (w->ndim != 2 || x->ndim < 1 || x->shape[x->ndim - 1] != w->shape[1]) {
        char s0[128], s1[128];
        qp_shape_str(x->ndim, x->shape, s0, sizeof s0);
        qp_shape_str(w->ndim, w->shape, s1, sizeof s1);
        return qp_op_fail(err, c, QP_E_SHAPE, "input %s does not fit the weight "
                          "%s ([out, in])", s0, s1);
    }
    if (b && (!qp_dtype_traits(b->dtype)->is_float || b->ndim != 1 ||
              b->shape[0] != w->shape[0]))
        return qp_op_fail(err, c, QP_E_SHAPE, "bias must be a float vector of "
                          "%lld", (long long)w->shape[0]);
    qp_tdesc_of(x, out);
    out->shape[out->ndim - 1] = w->shape[0];
    return QP_OK;
}

enum qp_status qp_llm_linear_run(const struct qp_op_ctx *c,
                                 struct qp_tensor *const *out,
                                 struct qp_error *err)
{
    const struct qp_tensor *x = c->in[0], *w = c->in[1], *b = qp_op_in(c, 2);
    struct qp_wq wq;
    enum qp_status st = qp_wq_init(&wq, w, err);
    if (st)
        return qp_op_fail(err, c, st, "%s", err->msg);
    size_t rows = wq.k ? qp_tensor_numel(x) / wq.k : 0;
    if (!wq.k)
        rows = qp_tensor_numel(out[0]) / (wq.n ? wq.n : 1);
    int nt = qp_pool_threads(c->pool);
    size_t need = qp_gemm_wq_scratch_size(&wq, rows, nt);
    size_t bias_at = (need + 63) / 64 * 64;
    char *scratch = qp_op_scratch(c, bias_at + (b ? wq.n : 1) * sizeof(float));
    struct qp_pool *serial = qp_pool_new(1);
    if (!scratch || !serial) {
        qp_pool_free(serial);
        return qp_op_fail(err, c, QP_E_NOMEM, "out of memory");
    }
    float *bias = NULL;
    if (b) {
        bias = (float *)(scratch + bias_at);
        qp_llm_read_vec(b, bias, wq.n);
    }
    qp_gemm_wq(c->pool, serial, &wq, x->data, wq.k, rows, bias, out[0]->data,
               wq.n, need ? scratch : NULL);
    qp_pool_free(serial);
    return QP_OK;
}

uint64_t qp_llm_linear_macs(const struct qp_node *n,
                            const struct qp_tdesc *const *in,
                            const struct qp_tdesc *out)
{
    (void)n;
    int r = in[0]->ndim;
    return qp_tdesc_dims(out, 0, out->ndim) * qp_tdesc_dims(in[0], r - 1, r);
}
