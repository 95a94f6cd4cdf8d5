/* kernels/conv-f32.c: the float convolution's (and the transposed
 * convolution's) choice between the SIMD variant of the dispatch table and
 * the GEMM path (kernels/conv-f32.h). */
#include "kernels/conv-f32.h"

#include "kernels/conv-f32-ukernel.h"

/* The variant for g (transposed when t), or NULL (the GEMM path);
 * *scratch its need. */
static const struct qp_conv_f32_variant *variant(const struct qp_conv_nd *g,
                                                 bool t, size_t *scratch)
{
    const struct qp_conv_f32_variant *v = qp_kern_table()->conv_f32;
    bool ok = v && (t ? v->supports_transpose && v->supports_transpose(g, scratch)
                      : v->supports(g, scratch));
    return ok ? v : NULL;
}

static const char *path(const struct qp_conv_nd *g, bool t)
{
    size_t need;
    const struct qp_conv_f32_variant *v = variant(g, t, &need);
    return v ? v->name : "gemm";
}

size_t qp_conv_f32_scratch_size(const struct qp_conv_nd *g)
{
    size_t need;
    return variant(g, false, &need) ? need : qp_conv_f32_gemm_scratch_size(g);
}

void qp_conv_f32(struct qp_pool *pool, const struct qp_conv_nd *g,
                 const float *x, const float *w, const float *bias, float *y,
                 float *scratch, const struct qp_conv_epilogue *epi)
{
    size_t need;
    const struct qp_conv_f32_variant *v = variant(g, false, &need);
    if (v)
        v->run(pool, g, x, w, bias, y, scratch, epi);
    else
        qp_conv_f32_gemm(pool, g, x, w, bias, y, scratch, epi);
}

const char *qp_conv_f32_path(const struct qp_conv_nd *g)
{
    return path(g, false);
}

size_t qp_conv_transpose_f32_scratch_size(const struct qp_conv_nd *g)
{
    size_t need;
    return variant(g, true, &need) ? need
                                   : qp_conv_transpose_f32_gemm_scratch_size(g);
}

void qp_conv_transpose_f32(struct qp_pool *pool, const struct qp_conv_nd *g,
                           const float *x, const float *w, const float *bias,
                           float *y, float *scratch,
                           const struct qp_conv_epilogue *epi)
{
    size_t need;
    const struct qp_conv_f32_variant *v = variant(g, true, &need);
    if (v)
        v->run_transpose(pool, g, x, w, bias, y, scratch, epi);
    else
        qp_conv_transpose_f32_gemm(pool, g, x, w, bias, y, scratch, epi);
}

const char *qp_conv_transpose_f32_path(const struct qp_conv_nd *g)
{
    return path(g, true);
}
