/* model/op-quant.c: ONNX's quantization operators with the ONNX reference
 * semantics: QuantizeLinear and DequantizeLinear (per tensor or per axis;
 * DequantizeLinear also of int4 / uint4),
 * DynamicQuantizeLinear, QLinearConv and QLinearMatMul (integer kernels,
 * requantized in the onnx-ref flavor: multiply in double, round half to
 * even), ConvInteger and MatMulInteger (int32 accumulators).
 * Convolutions are 1-D or 2-D (kernels/conv-s8.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/add-s8.h"
#include "kernels/conv-s8.h"
#include "kernels/gemm-s8.h"
#include "kernels/quantize-act.h"
#include "kernels/requant.h"
#include "model/op-conv.h"
#include "model/op-quant.h"

/* ---- helpers ---------------------------------------------------------- */

static bool is_8bit(enum qp_dtype dt)
{
    return dt == QP_DTYPE_I8 || dt == QP_DTYPE_U8;
}

/* Scale and zero-point arrays of a per-tensor or per-axis parameter pair,
 * count values each (any count the memory holds: a CTC head has 6625
 * channels, an LLM head 32k to 256k); released with qparam_release. */
struct qparam {
    float *s;
    int32_t *z;
    size_t count;
};

static void qparam_release(struct qparam *q)
{
    free(q->s);
    free(q->z);
    q->s = NULL;
    q->z = NULL;
}

static enum qp_status read_param(const struct qp_op_ctx *c, int si, int zi,
                                 size_t want, struct qparam *q,
                                 struct qp_error *err)
{
    const struct qp_tensor *s = qp_op_in(c, si), *z = qp_op_in(c, zi);
    size_t n, max = s ? qp_tensor_numel(s) : 1;
    q->s = malloc((max ? max : 1) * sizeof *q->s);
    q->z = malloc((max ? max : 1) * sizeof *q->z);
    q->count = 0;
    if (!q->s || !q->z)
        return qp_op_fail(err, c, QP_E_NOMEM, "out of memory for %zu scales", max);
    enum qp_status st = qp_op_read_floats(c, "scale", s, q->s, max, &n, err);
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
        bool packed = z->dtype == QP_DTYPE_I4 || z->dtype == QP_DTYPE_U4;
        for (size_t i = 0; i < n; i++)
            q->z[i] = packed ? qp_packed_get(z->dtype, z->data, i)
                             : (int32_t)qp_elem_get_i64(z->dtype, z->data, i);
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
    struct qparam q = {0};
    size_t outer = 1, ch = 1, inner = 1;
    enum qp_status st;
    if (x->dtype != QP_DTYPE_F32)
        return qp_op_fail(err, c, QP_E_UNSUPPORTED, "input is %s",
                          qp_dtype_name(x->dtype));
    if (!(st = read_param(c, 1, 2, 0, &q, err)) &&
        !(st = split_axis(c, x, q.count, &outer, &ch, &inner, err)))
        st = ql_fail_prefix(c, qp_qa_quantize(QP_QA_ONNX, x->data, outer, ch,
                                              inner, q.s, q.z, out[0]->dtype,
                                              out[0]->data, err), err);
    qparam_release(&q);
    return st;
}

static enum qp_status dq_infer(const struct qp_op_ctx *c, struct qp_tdesc *out,
                               struct qp_error *err)
{
    (void)err;
    qp_tdesc_of(c->in[0], out);
    out->dtype = QP_DTYPE_F32;
    return QP_OK;
}

/* int4 / uint4 (opset 21; two a byte, low nibble first) unpacked into a
 * new int8 / uint8 buffer; NULL when out of memory. */
static void *unpack4(const struct qp_tensor *x, enum qp_dtype *dt)
{
    size_t n = qp_tensor_numel(x);
    int8_t *u = malloc(n ? n : 1);
    for (size_t i = 0; u && i < n; i++)
        u[i] = (int8_t)qp_packed_get(x->dtype, x->data, i);
    *dt = x->dtype == QP_DTYPE_I4 ? QP_DTYPE_I8 : QP_DTYPE_U8;
    return u;
}

static enum qp_status dq_run(const struct qp_op_ctx *c,
                             struct qp_tensor *const *out, struct qp_error *err)
{
    const struct qp_tensor *x = c->in[0];
    struct qparam q = {0};
    size_t outer = 1, ch = 1, inner = 1;
    enum qp_dtype dt = x->dtype;
    void *u = NULL;
    enum qp_status st;
    if ((dt == QP_DTYPE_I4 || dt == QP_DTYPE_U4) && !(u = unpack4(x, &dt)))
        return qp_op_fail(err, c, QP_E_NOMEM, "out of memory");
    if (!(st = read_param(c, 1, 2, 0, &q, err)) &&
        !(st = split_axis(c, x, q.count, &outer, &ch, &inner, err)))
        st = ql_fail_prefix(c, qp_qa_dequantize(u ? u : x->data, dt, outer, ch,
                                                inner, q.s, q.z, out[0]->data,
                                                err), err);
    qparam_release(&q);
    free(u);
    return st;
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

/* ---- the integer products -------------------------------------------------- */

static enum qp_status conv_geom_s8(const struct qp_op_ctx *c,
                                   const struct qp_tensor *x,
                                   const struct qp_tensor *w,
                                   struct qp_conv_geom *g, size_t *oh, size_t *ow,
                                   struct qp_error *err)
{
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

enum qp_status qp_qlin_conv_shape(const struct qp_op_ctx *c,
                                  const struct qp_tensor *x,
                                  const struct qp_tensor *w, struct qp_tdesc *out,
                                  struct qp_error *err)
{
    struct qp_conv_geom g;
    size_t oh = 0, ow = 0;
    enum qp_status st = conv_geom_s8(c, x, w, &g, &oh, &ow, err);
    if (st)
        return st;
    out->ndim = x->ndim;
    out->shape[0] = x->shape[0];
    out->shape[1] = w->shape[0];
    out->shape[2] = x->ndim == 4 ? (int64_t)oh : (int64_t)ow;
    out->shape[3] = (int64_t)ow;
    return QP_OK;
}

enum qp_status qp_qlin_conv(const struct qp_op_ctx *c, const struct qp_qlin *q,
                            struct qp_tensor *y, struct qp_error *err)
{
    const struct qp_tensor *x = q->x, *w = q->w;
    struct qp_conv_geom g;
    size_t oh, ow;
    enum qp_status st = conv_geom_s8(c, x, w, &g, &oh, &ow, err);
    if (st)
        return st;
    struct qp_conv_s8_params p = {
        .layout = QP_CONV_NCHW, .geom = g, .in_c = (size_t)x->shape[1],
        .out_c = (size_t)w->shape[0], .groups = (size_t)qp_attr_int(c->n, "group", 1),
        .in_dtype = x->dtype, .filter_dtype = w->dtype, .input_zero_point = q->x_zp,
        .filter_zero_point = q->w_zp, .filter_zero_points = q->w_zp ? q->n_wzp : 0,
        .bias = q->bias, .rq = q->rq, .threads = 1};
    struct qp_conv_s8 conv;
    if ((st = qp_conv_s8_prepare(&conv, &p, w->data, err)))
        return ql_fail_prefix(c, st, err);
    size_t need = qp_conv_s8_scratch_size(&conv, (size_t)x->shape[0]);
    void *scratch = need ? qp_op_scratch(c, need) : NULL;
    st = need && !scratch ? qp_op_fail(err, c, QP_E_NOMEM, "out of memory")
                          : qp_conv_s8_run(&conv, x->data, (size_t)x->shape[0],
                                           y->data, scratch, err);
    qp_conv_s8_release(&conv);
    return ql_fail_prefix(c, st, err);
}

enum qp_status qp_qlin_matmul_shape(const struct qp_op_ctx *c,
                                    const struct qp_tensor *a,
                                    const struct qp_tensor *b,
                                    struct qp_tdesc *out, struct qp_error *err)
{
    struct qp_tensor ab, bb;
    if (a->ndim < 2 || b->ndim < 2 || a->shape[a->ndim - 1] != b->shape[b->ndim - 2])
        return qp_op_fail(err, c, QP_E_SHAPE, "matrices do not fit (rank >= 2 "
                          "is supported)");
    if (!is_8bit(a->dtype) || !is_8bit(b->dtype))
        return qp_op_fail(err, c, QP_E_UNSUPPORTED, "inputs must be 8-bit");
    enum qp_status st = qp_op_batch_dims(c, a, b, &ab, &bb, out, err);
    if (st)
        return st;
    out->shape[out->ndim++] = a->shape[a->ndim - 2];
    out->shape[out->ndim++] = b->shape[b->ndim - 1];
    return QP_OK;
}

enum qp_status qp_qlin_matmul(const struct qp_op_ctx *c, const struct qp_qlin *q,
                              struct qp_tensor *y, struct qp_error *err)
{
    const struct qp_tensor *a = q->x, *b = q->w;
    struct qp_tensor ab, bb;
    struct qp_tdesc batch;
    enum qp_status st = qp_op_batch_dims(c, a, b, &ab, &bb, &batch, err);
    if (st)
        return st;
    size_t m = (size_t)a->shape[a->ndim - 2], k = (size_t)a->shape[a->ndim - 1];
    size_t n = (size_t)b->shape[b->ndim - 1], kn = k * n;
    size_t es = qp_elem_size(y->dtype);
    uint8_t *bt = qp_op_scratch(c, kn ? kn : 1);
    if (!bt)
        return qp_op_fail(err, c, QP_E_NOMEM, "out of memory");
    struct qp_bcast bc;
    const struct qp_tensor *ops[2] = {&ab, &bb};
    qp_bcast_init(&bc, &batch, ops, 2);
    size_t batches = qp_tdesc_numel(&batch);
    struct qp_gemm_s8_params gp = {
        .n = n, .k = k, .a_dtype = a->dtype, .b_dtype = b->dtype,
        .a_zero_point = q->x_zp, .b_zero_point = q->w_zp,
        .b_zero_points = q->w_zp ? q->n_wzp : 0, .bias = q->bias, .rq = q->rq,
        .threads = 1};
    for (size_t i = 0; i < batches; i++) {
        int64_t off[2];
        qp_bcast_at(&bc, i, off);
        const uint8_t *bs = (const uint8_t *)b->data + (size_t)off[1] * kn;
        for (size_t r = 0; r < k; r++) /* [K, N] -> [N, K] */
            for (size_t j = 0; j < n; j++)
                bt[j * k + r] = bs[r * n + j];
        struct qp_gemm_s8 g;
        if ((st = qp_gemm_s8_prepare(&g, &gp, bt, k, err)))
            return ql_fail_prefix(c, st, err);
        size_t need = qp_gemm_s8_scratch_size(&g, m);
        void *scratch = need ? malloc(need) : NULL;
        st = need && !scratch ? qp_op_fail(err, c, QP_E_NOMEM, "out of memory")
                              : qp_gemm_s8_run(&g, (const uint8_t *)a->data +
                                               (size_t)off[0] * m * k, m, k,
                                               (uint8_t *)y->data + i * m * n * es,
                                               n, scratch, err);
        free(scratch);
        qp_gemm_s8_release(&g);
        if (st)
            return ql_fail_prefix(c, st, err);
    }
    return QP_OK;
}

/* ---- integer add -------------------------------------------------------------- */

void qp_spread8(const struct qp_tensor *t, const struct qp_tdesc *d,
                uint8_t *dst)
{
    struct qp_bcast b;
    qp_bcast_init(&b, d, &t, 1);
    size_t rows = b.inner ? b.total / b.inner : 0;
    for (size_t r = 0; r < rows; r++) {
        int64_t off;
        qp_bcast_row(&b, r, &off);
        const uint8_t *s = (const uint8_t *)t->data + off;
        if (b.stride[0][b.nd - 1])
            memcpy(dst + r * b.inner, s, b.inner);
        else
            memset(dst + r * b.inner, *s, b.inner);
    }
}

struct qadd_job {
    const struct qp_add_s8 *add;
    const uint8_t *a, *b; /* 8-bit codes, one element a byte */
    uint8_t *y;
};

/* Elements [b, e) of the add: each is its own, any split gives the same
 * bytes. */
static void qadd_range(void *ctx, size_t b, size_t e)
{
    const struct qadd_job *j = ctx;
    qp_add_s8_run(j->add, j->a + b, j->b + b, e - b, e - b, j->y + b);
}

enum qp_status qp_qadd(const struct qp_op_ctx *c, enum qp_rq_flavor f,
                       const struct qp_tensor *a, struct qp_qside qa,
                       const struct qp_tensor *b, struct qp_qside qb,
                       struct qp_qside qy, struct qp_tensor *y, bool *done,
                       struct qp_error *err)
{
    double twice_max = 2.0 * fmax(qa.scale, qb.scale);
    const struct qp_dtype_traits *tr = qp_dtype_traits(y->dtype);
    struct qp_add_s8_params p = {.flavor = f, .dtype = y->dtype,
                                 .zero_point1 = qa.zp, .zero_point2 = qb.zp,
                                 .out_zero_point = qy.zp, .left_shift = 20,
                                 .act_min = (int32_t)tr->min,
                                 .act_max = (int32_t)tr->max};
    struct qp_error e;
    *done = false;
    if (!qp_rq_flavor_fixed(f) || a->dtype != y->dtype || b->dtype != y->dtype)
        return QP_OK;
    qp_rq_quantize_multiplier(f, qa.scale / twice_max, &p.multiplier1, &p.shift1);
    qp_rq_quantize_multiplier(f, qb.scale / twice_max, &p.multiplier2, &p.shift2);
    qp_rq_quantize_multiplier(f, twice_max / ((double)(1 << 20) * qy.scale),
                              &p.out_multiplier, &p.out_shift);
    if (qp_add_s8_check(&p, &e))
        return QP_OK;
    size_t total = qp_tensor_numel(y);
    const void *x[2] = {a->data, b->data};
    const struct qp_tensor *in[2] = {a, b};
    uint8_t *buf = NULL;
    struct qp_tdesc d;
    qp_tdesc_of(y, &d);
    for (int k = 0; k < 2; k++) {
        if (qp_tensor_numel(in[k]) == total)
            continue;
        if (!buf && !(buf = qp_op_scratch(c, 2 * (total ? total : 1))))
            return qp_op_fail(err, c, QP_E_NOMEM, "out of memory");
        qp_spread8(in[k], &d, buf + (size_t)k * total);
        x[k] = buf + (size_t)k * total;
    }
    struct qp_add_s8 add;
    if (qp_add_s8_prepare(&add, &p, err))
        return ql_fail_prefix(c, QP_E_INVAL, err);
    struct qadd_job j = {&add, x[0], x[1], y->data};
    qp_op_parallel_for(c, total, QP_OP_PAR_MIN, qadd_range, &j);
    qp_add_s8_release(&add);
    *done = true;
    return QP_OK;
}

/* ---- the QLinear and Integer operators ---------------------------------- */

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

static bool is_conv(const struct qp_op_ctx *c)
{
    return strstr(c->n->op_type, "Conv") != NULL;
}

static enum qp_status qlin_infer(const struct qp_op_ctx *c, struct qp_tdesc *out,
                                 struct qp_error *err)
{
    const struct qio *io = io_of(c);
    const struct qp_tensor *x = c->in[io->x], *w = c->in[io->w];
    enum qp_status st = is_conv(c) ? qp_qlin_conv_shape(c, x, w, out, err)
                                   : qp_qlin_matmul_shape(c, x, w, out, err);
    out->dtype = io->yz >= 0 && qp_op_in(c, io->yz) ? c->in[io->yz]->dtype
               : io->ys >= 0 ? QP_DTYPE_U8 : QP_DTYPE_I32;
    return st;
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

enum qp_status qp_qlin_node_run(const struct qp_op_ctx *c, enum qp_rq_flavor f,
                                struct qp_tensor *const *out, struct qp_error *err)
{
    const struct qio *io = io_of(c);
    const struct qp_tensor *x = c->in[io->x], *w = c->in[io->w];
    const struct qp_tensor *b = io->b >= 0 ? qp_op_in(c, io->b) : NULL;
    size_t ch = (size_t)(is_conv(c) ? w->shape[0] : w->shape[w->ndim - 1]);
    int32_t xz[1];
    int32_t *wz = malloc((ch ? ch : 1) * sizeof *wz);
    size_t nxz, nwz;
    struct qp_rq rq = {0};
    struct qparam xs = {0}, ws = {0}, ys = {0};
    enum qp_status st = wz ? QP_OK : qp_op_fail(err, c, QP_E_NOMEM, "out of memory");
    if (!st && !(st = zero_points(c, io->xz, 1, xz, &nxz, err)))
        st = zero_points(c, io->wz, ch, wz, &nwz, err);
    if (!st && b && (b->dtype != QP_DTYPE_I32 || qp_tensor_numel(b) != ch))
        st = qp_op_fail(err, c, QP_E_SHAPE, "bias must be %zu int32 values", ch);
    if (!st && io->ys >= 0) { /* QLinear: requantize in flavor f */
        const struct qp_dtype_traits *tr = qp_dtype_traits(out[0]->dtype);
        if (!(st = read_param(c, io->xs, -1, 1, &xs, err)) &&
            !(st = read_param(c, io->ws, -1, ch, &ws, err)) &&
            !(st = read_param(c, io->ys, io->yz, 1, &ys, err)))
            st = ql_fail_prefix(c, qp_rq_prepare_scales(
                                       &rq, f, xs.s[0], ws.s, ws.count, ys.s[0],
                                       ys.z[0], out[0]->dtype, (int32_t)tr->min,
                                       (int32_t)tr->max, err), err);
    }
    if (!st) {
        struct qp_qlin q = {x, w, b ? b->data : NULL, xz[0], wz, nwz,
                            io->ys >= 0 ? &rq : NULL};
        st = is_conv(c) ? qp_qlin_conv(c, &q, out[0], err)
                        : qp_qlin_matmul(c, &q, out[0], err);
    }
    qparam_release(&xs);
    qparam_release(&ws);
    qparam_release(&ys);
    qp_rq_release(&rq);
    free(wz);
    return st;
}

static enum qp_status qlin_run(const struct qp_op_ctx *c,
                               struct qp_tensor *const *out, struct qp_error *err)
{
    return qp_qlin_node_run(c, QP_RQ_ONNX_REF, out, err);
}

static const struct qp_attr_spec q_attrs[] = {
    {"axis", QP_ATTR_INT}, {"saturate", QP_ATTR_INT}, {NULL, 0}};
static const struct qp_attr_spec conv_attrs[] = {
    {"auto_pad", QP_ATTR_STRING}, {"dilations", QP_ATTR_INTS},
    {"group", QP_ATTR_INT}, {"kernel_shape", QP_ATTR_INTS},
    {"pads", QP_ATTR_INTS}, {"strides", QP_ATTR_INTS}, {NULL, 0}};

const struct qp_op_def qp_ops_quant[] = {
    {"", "QuantizeLinear", 2, 3, 1, 1, 6u, false, true, q_attrs, NULL, q_infer,
     q_run, 0, NULL, NULL, NULL},
    {"", "DequantizeLinear", 2, 3, 1, 1, 6u, false, true, q_attrs, NULL,
     dq_infer, dq_run, QP_TRAIT_PACKED_IN, NULL, NULL, NULL},
    {"", "DynamicQuantizeLinear", 1, 1, 3, 3, 0, false, true, NULL, NULL,
     dyn_infer, dyn_run, 0, NULL, NULL, NULL},
    {"", "QLinearConv", 8, 9, 1, 1, 0, false, true, conv_attrs, NULL,
     qlin_infer, qlin_run, 0, NULL, NULL, NULL},
    {"", "ConvInteger", 2, 4, 1, 1, 0, false, true, conv_attrs, NULL,
     qlin_infer, qlin_run, 0, NULL, NULL, NULL},
    {"", "QLinearMatMul", 8, 8, 1, 1, 0, false, true, NULL, NULL, qlin_infer,
     qlin_run, 0, NULL, NULL, NULL},
    {"", "MatMulInteger", 2, 4, 1, 1, 0, false, true, NULL, NULL, qlin_infer,
     qlin_run, 0, NULL, NULL, NULL},
    {NULL},
};
