/* model/op-quant.c: ONNX's quantization operators with the ONNX reference
 * semantics: QuantizeLinear and DequantizeLinear (per tensor or per axis),
 * DynamicQuantizeLinear, QLinearConv and QLinearMatMul (integer kernels,
 * requantized in the onnx-ref flavor: multiply in double, round half to
 * even), ConvInteger and MatMulInteger (int32 accumulators).
 * Convolutions are 1-D or 2-D (kernels/conv-s8.h). */
#include <math.h>
#include <string.h>

#include "kernels/conv-s8.h"
#include "kernels/gemm-s8.h"
#include "kernels/quantize-act.h"
#include "kernels/requant.h"
#include "model/op-conv.h"

/* ---- helpers ---------------------------------------------------------- */

static bool is_8bit(enum qp_dtype dt)
{
    return dt == QP_DTYPE_I8 || dt == QP_DTYPE_U8;
}

/* Scale and zero-point arrays of a per-tensor or per-axis parameter pair,
 * count values each (zp NULL: all 0 of zdt). */
struct qparam {
    float s[4096];
    int32_t z[4096];
    size_t count;
};

static enum qp_status read_param(const struct qp_op_ctx *c, int si, int zi,
                                 size_t want, struct qparam *q,
                                 struct qp_error *err)
{
    const struct qp_tensor *s = qp_op_in(c, si), *z = qp_op_in(c, zi);
    size_t n;
    enum qp_status st = qp_op_read_floats(c, "scale", s, q->s, 4096, &n, err);
    if (st)
        return st;
    if (n != 1 && want && n != want) /* want 0: any (checked by the axis) */
        return qp_op_fail(err, c, QP_E_SHAPE, "input %d has %zu scales, expected "
                          "1 or %zu", si, n, want);
    q->count = n;
    for (size_t i = 0; i < n; i++) {
        if (!(q->s[i] > 0.0f) || !isfinite(q->s[i]))
            return qp_op_fail(err, c, QP_E_FORMAT, "scale %g is not positive",
                              (double)q->s[i]);
        q->z[i] = 0;
    }
    if (z) {
        if (qp_tensor_numel(z) != n)
            return qp_op_fail(err, c, QP_E_SHAPE, "input %d has %zu zero points "
                              "for %zu scales", zi, qp_tensor_numel(z), n);
        for (size_t i = 0; i < n; i++)
            q->z[i] = (int32_t)qp_elem_get_i64(z->dtype, z->data, i);
    }
    return QP_OK;
}

/* [outer, channels, inner] around axis (channels 1 when per-tensor). */
static enum qp_status split_axis(const struct qp_op_ctx *c, const struct qp_tensor *x,
                                 size_t count, size_t *outer, size_t *ch,
                                 size_t *inner, struct qp_error *err)
{
    *outer = 1;
    *ch = 1;
    *inner = qp_tensor_numel(x);
    if (count == 1)
        return QP_OK;
    int axis;
    enum qp_status st = qp_op_axis(c, "axis", qp_attr_int(c->n, "axis", 1),
                                   x->ndim, &axis, err);
    if (st)
        return st;
    if ((size_t)x->shape[axis] != count)
        return qp_op_fail(err, c, QP_E_SHAPE, "%zu scales for an axis of %lld",
                          count, (long long)x->shape[axis]);
    *inner = 1;
    for (int d = 0; d < x->ndim; d++) {
        if (d < axis)
            *outer *= (size_t)x->shape[d];
        else if (d > axis)
            *inner *= (size_t)x->shape[d];
    }
    *ch = count;
    return QP_OK;
}

static enum qp_status ql_fail_prefix(const struct qp_op_ctx *c, enum qp_status st,
                                     struct qp_error *err)
{
    char lab[256];
    return st ? qp_error_prefix(err, "%s: ",
                                qp_node_label(c->g, c->node, lab, sizeof lab))
              : QP_OK;
}

/* ---- QuantizeLinear / DequantizeLinear ------------------------------------ */

static enum qp_status q_infer(const struct qp_op_ctx *c, struct qp_tdesc *out,
                              struct qp_error *err)
{
    (void)err;
    qp_tdesc_of(c->in[0], out);
    const struct qp_tensor *z = qp_op_in(c, 2);
    out->dtype = z ? z->dtype : QP_DTYPE_U8;
    return QP_OK;
}

static enum qp_status q_run(const struct qp_op_ctx *c, struct qp_tensor *const *out,
                            struct qp_error *err)
{
    const struct qp_tensor *x = c->in[0];
    struct qparam q;
    size_t outer = 1, ch = 1, inner = 1;
    enum qp_status st;
    if (x->dtype != QP_DTYPE_F32)
        return qp_op_fail(err, c, QP_E_UNSUPPORTED, "input is %s",
                          qp_dtype_name(x->dtype));
    if ((st = read_param(c, 1, 2, 0, &q, err)) ||
        (st = split_axis(c, x, q.count, &outer, &ch, &inner, err)))
        return st;
    st = qp_qa_quantize(QP_QA_ONNX, x->data, outer, ch, inner, q.s, q.z,
                        out[0]->dtype, out[0]->data, err);
    return ql_fail_prefix(c, st, err);
}

static enum qp_status dq_infer(const struct qp_op_ctx *c, struct qp_tdesc *out,
                               struct qp_error *err)
{
    (void)err;
    qp_tdesc_of(c->in[0], out);
    out->dtype = QP_DTYPE_F32;
    return QP_OK;
}

static enum qp_status dq_run(const struct qp_op_ctx *c,
                             struct qp_tensor *const *out, struct qp_error *err)
{
    const struct qp_tensor *x = c->in[0];
    struct qparam q;
    size_t outer = 1, ch = 1, inner = 1;
    enum qp_status st;
    if ((st = read_param(c, 1, 2, 0, &q, err)) ||
        (st = split_axis(c, x, q.count, &outer, &ch, &inner, err)))
        return st;
    st = qp_qa_dequantize(x->data, x->dtype, outer, ch, inner, q.s, q.z,
                          out[0]->data, err);
    return ql_fail_prefix(c, st, err);
}

static enum qp_status dyn_infer(const struct qp_op_ctx *c, struct qp_tdesc *out,
                                struct qp_error *err)
{
    enum qp_status st = qp_op_want_f32(c, 0, err);
    if (st)
        return st;
    qp_tdesc_of(c->in[0], &out[0]);
    out[0].dtype = QP_DTYPE_U8;
    out[1] = (struct qp_tdesc){QP_DTYPE_F32, 0, {0}};
    out[2] = (struct qp_tdesc){QP_DTYPE_U8, 0, {0}};
    return QP_OK;
}

static enum qp_status dyn_run(const struct qp_op_ctx *c,
                              struct qp_tensor *const *out, struct qp_error *err)
{
    (void)err;
    qp_qa_dynamic_u8(c->in[0]->data, qp_tensor_numel(c->in[0]), out[1]->data,
                     out[2]->data, out[0]->data);
    return QP_OK;
}

/* ---- convolution ------------------------------------------------------------ */

/* Inputs of the integer convolutions and matmuls: data, zero points and,
 * for the QLinear forms, scales. */
struct qio {
    int x, w, xz, wz, xs, ws, ys, yz, b; /* input indices; -1 absent */
};

static const struct qio qlinear_io = {0, 3, 2, 5, 1, 4, 6, 7, 8};
static const struct qio integer_io = {0, 1, 2, 3, -1, -1, -1, -1, -1};

static const struct qio *io_of(const struct qp_op_ctx *c)
{
    return !strncmp(c->n->op_type, "QLinear", 7) ? &qlinear_io : &integer_io;
}

static enum qp_status conv_geom_s8(const struct qp_op_ctx *c,
                                   struct qp_conv_geom *g, size_t *oh, size_t *ow,
                                   struct qp_error *err)
{
    const struct qio *io = io_of(c);
    const struct qp_tensor *x = c->in[io->x], *w = c->in[io->w];
    int nsp = x->ndim - 2;
    if (nsp < 1 || nsp > 2 || w->ndim != x->ndim)
        return qp_op_fail(err, c, QP_E_UNSUPPORTED, "1-D and 2-D convolutions "
                          "are supported, not rank %d", x->ndim);
    if (!is_8bit(x->dtype) || !is_8bit(w->dtype))
        return qp_op_fail(err, c, QP_E_UNSUPPORTED, "inputs must be 8-bit");
    struct qp_conv_nd nd;
    enum qp_status st = qp_window_geom(c, x->shape + 2, nsp, w->shape + 2,
                                       QP_WINDOW_CONV, &nd, err);
    if (st)
        return st;
    qp_conv_nd_to_s8(&nd, g);
    *oh = nsp == 2 ? (size_t)nd.out[0] : 1;
    *ow = (size_t)nd.out[nsp - 1];
    return QP_OK;
}

static enum qp_status iconv_infer(const struct qp_op_ctx *c, struct qp_tdesc *out,
                                  struct qp_error *err)
{
    const struct qio *io = io_of(c);
    struct qp_conv_geom g;
    size_t oh = 0, ow = 0;
    enum qp_status st = conv_geom_s8(c, &g, &oh, &ow, err);
    if (st)
        return st;
    const struct qp_tensor *x = c->in[io->x], *w = c->in[io->w];
    out->ndim = x->ndim;
    out->shape[0] = x->shape[0];
    out->shape[1] = w->shape[0];
    out->shape[2] = x->ndim == 4 ? (int64_t)oh : (int64_t)ow;
    out->shape[3] = (int64_t)ow;
    out->dtype = io->yz >= 0 && qp_op_in(c, io->yz) ? c->in[io->yz]->dtype
               : io->ys >= 0 ? QP_DTYPE_U8 : QP_DTYPE_I32;
    return QP_OK;
}

/* The output requantization of a QLinear node (onnx-ref), channels = the
 * weight scales. */
static enum qp_status qlinear_rq(const struct qp_op_ctx *c, size_t channels,
                                 enum qp_dtype out_dt, struct qp_rq *rq,
                                 struct qp_error *err)
{
    const struct qio *io = io_of(c);
    struct qparam xs, ws, ys;
    enum qp_status st;
    if ((st = read_param(c, io->xs, -1, 1, &xs, err)) ||
        (st = read_param(c, io->ws, -1, channels, &ws, err)) ||
        (st = read_param(c, io->ys, io->yz, 1, &ys, err)))
        return st;
    const struct qp_dtype_traits *tr = qp_dtype_traits(out_dt);
    st = qp_rq_prepare_scales(rq, QP_RQ_ONNX_REF, xs.s[0], ws.s, ws.count, ys.s[0],
                              ys.z[0], out_dt, (int32_t)tr->min, (int32_t)tr->max,
                              err);
    return ql_fail_prefix(c, st, err);
}

/* Zero points of input k as int32 (count values, or 1). */
static enum qp_status zero_points(const struct qp_op_ctx *c, int k, size_t count,
                                  int32_t *z, size_t *n, struct qp_error *err)
{
    const struct qp_tensor *t = k >= 0 ? qp_op_in(c, k) : NULL;
    *n = t ? qp_tensor_numel(t) : 1;
    if (*n != 1 && *n != count)
        return qp_op_fail(err, c, QP_E_SHAPE, "input %d has %zu zero points", k,
                          *n);
    for (size_t i = 0; i < *n; i++)
        z[i] = t ? (int32_t)qp_elem_get_i64(t->dtype, t->data, i) : 0;
    return QP_OK;
}

static enum qp_status iconv_run(const struct qp_op_ctx *c,
                                struct qp_tensor *const *out, struct qp_error *err)
{
    const struct qio *io = io_of(c);
    const struct qp_tensor *x = c->in[io->x], *w = c->in[io->w];
    const struct qp_tensor *b = io->b >= 0 ? qp_op_in(c, io->b) : NULL;
    struct qp_conv_geom g;
    size_t oh, ow, oc = (size_t)w->shape[0], nzw;
    int32_t wz[4096], xz[1];
    size_t nzx;
    enum qp_status st;
    if (oc > 4096)
        return qp_op_fail(err, c, QP_E_UNSUPPORTED, "more than 4096 channels");
    if ((st = conv_geom_s8(c, &g, &oh, &ow, err)) ||
        (st = zero_points(c, io->xz, 1, xz, &nzx, err)) ||
        (st = zero_points(c, io->wz, oc, wz, &nzw, err)))
        return st;
    if (b && (b->dtype != QP_DTYPE_I32 || qp_tensor_numel(b) != oc))
        return qp_op_fail(err, c, QP_E_SHAPE, "bias must be %zu int32 values", oc);
    struct qp_rq rq = {0};
    bool ql = io->ys >= 0;
    if (ql && (st = qlinear_rq(c, oc, out[0]->dtype, &rq, err)))
        return st;
    struct qp_conv_s8_params p = {
        .layout = QP_CONV_NCHW, .geom = g, .in_c = (size_t)x->shape[1],
        .out_c = oc, .groups = (size_t)qp_attr_int(c->n, "group", 1),
        .in_dtype = x->dtype, .filter_dtype = w->dtype, .input_zero_point = xz[0],
        .filter_zero_point = wz, .filter_zero_points = nzw,
        .bias = b ? b->data : NULL, .rq = ql ? &rq : NULL, .threads = 1};
    struct qp_conv_s8 conv;
    if (!(st = qp_conv_s8_prepare(&conv, &p, w->data, err))) {
        size_t need = qp_conv_s8_scratch_size(&conv, (size_t)x->shape[0]);
        void *scratch = need ? qp_op_scratch(c, need) : NULL;
        st = need && !scratch
                 ? qp_op_fail(err, c, QP_E_NOMEM, "out of memory")
                 : qp_conv_s8_run(&conv, x->data, (size_t)x->shape[0],
                                  out[0]->data, scratch, err);
        qp_conv_s8_release(&conv);
    }
    qp_rq_release(&rq);
    return ql_fail_prefix(c, st, err);
}

/* ---- matmul ------------------------------------------------------------------ */

struct imm {
    size_t m, k, n;
    struct qp_tensor ab, bb; /* batch-only views */
    struct qp_tdesc batch;
};

static enum qp_status imm_shapes(const struct qp_op_ctx *c, struct imm *p,
                                 struct qp_tdesc *out, struct qp_error *err)
{
    const struct qio *io = io_of(c);
    const struct qp_tensor *a = c->in[io->x], *b = c->in[io->w];
    if (a->ndim < 2 || b->ndim < 2 || a->shape[a->ndim - 1] != b->shape[b->ndim - 2])
        return qp_op_fail(err, c, QP_E_SHAPE, "matrices do not fit (rank >= 2 "
                          "is supported)");
    if (!is_8bit(a->dtype) || !is_8bit(b->dtype))
        return qp_op_fail(err, c, QP_E_UNSUPPORTED, "inputs must be 8-bit");
    p->m = (size_t)a->shape[a->ndim - 2];
    p->k = (size_t)a->shape[a->ndim - 1];
    p->n = (size_t)b->shape[b->ndim - 1];
    enum qp_status st = qp_op_batch_dims(c, a, b, &p->ab, &p->bb, &p->batch, err);
    if (st)
        return st;
    *out = p->batch;
    out->shape[out->ndim++] = (int64_t)p->m;
    out->shape[out->ndim++] = (int64_t)p->n;
    out->dtype = io->yz >= 0 && qp_op_in(c, io->yz) ? c->in[io->yz]->dtype
               : io->ys >= 0 ? QP_DTYPE_U8 : QP_DTYPE_I32;
    return QP_OK;
}

static enum qp_status imm_infer(const struct qp_op_ctx *c, struct qp_tdesc *out,
                                struct qp_error *err)
{
    struct imm p;
    return imm_shapes(c, &p, out, err);
}

static enum qp_status imm_run(const struct qp_op_ctx *c,
                              struct qp_tensor *const *out, struct qp_error *err)
{
    const struct qio *io = io_of(c);
    const struct qp_tensor *a = c->in[io->x], *b = c->in[io->w];
    struct imm p;
    struct qp_tdesc od;
    int32_t az[1], bz[4096];
    size_t naz, nbz;
    enum qp_status st;
    if ((st = imm_shapes(c, &p, &od, err)))
        return st;
    if (p.n > 4096)
        return qp_op_fail(err, c, QP_E_UNSUPPORTED, "more than 4096 columns");
    if ((st = zero_points(c, io->xz, 1, az, &naz, err)) ||
        (st = zero_points(c, io->wz, p.n, bz, &nbz, err)))
        return st;
    struct qp_rq rq = {0};
    bool ql = io->ys >= 0;
    if (ql && (st = qlinear_rq(c, p.n, out[0]->dtype, &rq, err)))
        return st;
    size_t es = qp_elem_size(out[0]->dtype), kn = p.k * p.n;
    uint8_t *bt = qp_op_scratch(c, kn ? kn : 1);
    if (!bt) {
        qp_rq_release(&rq);
        return qp_op_fail(err, c, QP_E_NOMEM, "out of memory");
    }
    struct qp_bcast bc;
    const struct qp_tensor *ops[2] = {&p.ab, &p.bb};
    qp_bcast_init(&bc, &p.batch, ops, 2);
    size_t batches = qp_tdesc_numel(&p.batch);
    for (size_t i = 0; !st && i < batches; i++) {
        int64_t off[2];
        qp_bcast_at(&bc, i, off);
        const uint8_t *bs = (const uint8_t *)b->data + (size_t)off[1] * kn;
        for (size_t r = 0; r < p.k; r++) /* [K, N] -> [N, K] */
            for (size_t j = 0; j < p.n; j++)
                bt[j * p.k + r] = bs[r * p.n + j];
        struct qp_gemm_s8_params gp = {
            .n = p.n, .k = p.k, .a_dtype = a->dtype, .b_dtype = b->dtype,
            .a_zero_point = az[0], .b_zero_point = bz, .b_zero_points = nbz,
            .rq = ql ? &rq : NULL};
        qp_gemm_s8_ref(&gp, bt, p.k, (const uint8_t *)a->data +
                       (size_t)off[0] * p.m * p.k, p.m, p.k,
                       (uint8_t *)out[0]->data + i * p.m * p.n * es, p.n);
    }
    qp_rq_release(&rq);
    return QP_OK;
}

static const struct qp_attr_spec q_attrs[] = {
    {"axis", QP_ATTR_INT}, {"saturate", QP_ATTR_INT}, {NULL, 0}};
static const struct qp_attr_spec conv_attrs[] = {
    {"auto_pad", QP_ATTR_STRING}, {"dilations", QP_ATTR_INTS},
    {"group", QP_ATTR_INT}, {"kernel_shape", QP_ATTR_INTS},
    {"pads", QP_ATTR_INTS}, {"strides", QP_ATTR_INTS}, {NULL, 0}};

const struct qp_op_def qp_ops_quant[] = {
    {"", "QuantizeLinear", 2, 3, 1, 1, 6u, false, true, q_attrs, NULL, q_infer,
     q_run},
    {"", "DequantizeLinear", 2, 3, 1, 1, 6u, false, true, q_attrs, NULL,
     dq_infer, dq_run},
    {"", "DynamicQuantizeLinear", 1, 1, 3, 3, 0, false, true, NULL, NULL,
     dyn_infer, dyn_run},
    {"", "QLinearConv", 8, 9, 1, 1, 0, false, true, conv_attrs, NULL,
     iconv_infer, iconv_run},
    {"", "ConvInteger", 2, 4, 1, 1, 0, false, true, conv_attrs, NULL,
     iconv_infer, iconv_run},
    {"", "QLinearMatMul", 8, 8, 1, 1, 0, false, true, NULL, NULL, imm_infer,
     imm_run},
    {"", "MatMulInteger", 2, 4, 1, 1, 0, false, true, NULL, NULL, imm_infer,
     imm_run},
    {NULL},
};
