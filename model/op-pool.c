/* model/op-pool.c: MaxPool (with optional Indices), AveragePool,
 * GlobalAveragePool and GlobalMaxPool over 1 to 3 spatial dims. Float
 * pooling runs in f32 (kernels/conv-f32.h); 8-bit MaxPool goes through
 * f32 too, which is exact for a maximum, but for windows inside the
 * input, taken directly (2x2 ones by kernels/pool-s8.h). */
#include <math.h>
#include <string.h>

#include "kernels/pool-s8.h"
#include "model/op-conv.h"

static const struct qp_attr_spec pool_attrs[] = {
    {"auto_pad", QP_ATTR_STRING}, {"ceil_mode", QP_ATTR_INT},
    {"count_include_pad", QP_ATTR_INT}, {"dilations", QP_ATTR_INTS},
    {"kernel_shape", QP_ATTR_INTS}, {"pads", QP_ATTR_INTS},
    {"storage_order", QP_ATTR_INT}, {"strides", QP_ATTR_INTS}, {NULL, 0}};

static bool is_max(const struct qp_node *n)
{
    return strstr(n->op_type, "Max") != NULL;
}

static enum qp_status pool_check(const struct qp_op_ctx *c, struct qp_error *err)
{
    size_t n;
    if (!qp_attr_ints(c->n, "kernel_shape", &n) || n < 1 ||
        n > QP_CONV_MAX_SPATIAL)
        return qp_op_fail(err, c, QP_E_FORMAT, "kernel_shape must give 1 to %d "
                          "extents", QP_CONV_MAX_SPATIAL);
    return QP_OK;
}

static enum qp_status pool_geom(const struct qp_op_ctx *c,
                                struct qp_conv_nd *g, struct qp_error *err)
{
    const struct qp_tensor *x = c->in[0];
    enum qp_dtype dt = x->dtype;
    bool ok = dt == QP_DTYPE_F32 ||
              (is_max(c->n) && (dt == QP_DTYPE_U8 || dt == QP_DTYPE_I8));
    if (!ok)
        return qp_op_fail(err, c, QP_E_UNSUPPORTED, "input is %s",
                          qp_dtype_name(dt));
    size_t nk;
    const int64_t *ks = qp_attr_ints(c->n, "kernel_shape", &nk);
    if (x->ndim != (int)nk + 2)
        return qp_op_fail(err, c, QP_E_SHAPE, "input rank %d does not match "
                          "kernel_shape's %zu spatial dims", x->ndim, nk);
    for (size_t i = 0; i < nk; i++)
        if (ks[i] < 1)
            return qp_op_fail(err, c, QP_E_FORMAT, "kernel_shape must be >= 1");
    g->batch = (size_t)x->shape[0];
    g->in_c = g->out_c = (size_t)x->shape[1];
    g->groups = 1;
    return qp_window_geom(c, x->shape + 2, (int)nk, ks, QP_WINDOW_POOL, g, err);
}

static enum qp_status pool_infer(const struct qp_op_ctx *c,
                                 struct qp_tdesc *out, struct qp_error *err)
{
    struct qp_conv_nd g;
    enum qp_status st = pool_geom(c, &g, err);
    if (st)
        return st;
    out[0].dtype = c->in[0]->dtype;
    out[0].ndim = c->in[0]->ndim;
    out[0].shape[0] = (int64_t)g.batch;
    out[0].shape[1] = (int64_t)g.in_c;
    for (int i = 0; i < g.nsp; i++)
        out[0].shape[2 + i] = g.out[i];
    if (c->n->n_out > 1) {
        out[1] = out[0];
        out[1].dtype = QP_DTYPE_I64;
    }
    return QP_OK;
}

/* True when every window of 2-D pooling g lies inside the input (no
 * padding reached): max pooling then needs no bounds per window. */
static bool windows_inside(const struct qp_conv_nd *g)
{
    if (g->nsp != 2)
        return false;
    for (int d = 0; d < 2; d++)
        if (g->pad[d] || g->out[d] < 1 ||
            (g->out[d] - 1) * g->stride[d] + (g->kernel[d] - 1) * g->dilation[d] >=
                g->in[d])
            return false;
    return true;
}

/* One plane's windows in the reference's order (rows, then columns;
 * the first element, then every greater one: NaN kept only when first). */
#define MAX_WINDOWS(T)                                                         \
    do {                                                                       \
        const T *x_ = x;                                                       \
        T *y_ = y;                                                             \
        for (int64_t oh = 0; oh < g->out[0]; oh++)                             \
            for (int64_t ow = 0; ow < g->out[1]; ow++) {                       \
                const T *w_ = x_ + oh * g->stride[0] * W + ow * g->stride[1];  \
                T best = w_[0];                                                \
                for (int64_t kh = 0; kh < g->kernel[0]; kh++)                  \
                    for (int64_t kw = 0; kw < g->kernel[1]; kw++) {            \
                        T v = w_[kh * g->dilation[0] * W + kw * g->dilation[1]]; \
                        if (v > best)                                          \
                            best = v;                                          \
                    }                                                          \
                y_[oh * g->out[1] + ow] = best;                                \
            }                                                                  \
    } while (0)

/* MAX_WINDOWS for 2x2 windows at stride 2 without dilation (the
 * PP-OCR models' pooling), the same comparisons in the same order with
 * the window's offsets constant. */
#define MAX_WINDOWS_2X2(T)                                                     \
    do {                                                                       \
        const T *x_ = x;                                                       \
        T *y_ = y;                                                             \
        for (int64_t oh = 0; oh < g->out[0]; oh++) {                           \
            const T *r0 = x_ + 2 * oh * W, *r1 = r0 + W;                       \
            T *yr = y_ + oh * g->out[1];                                       \
            for (int64_t ow = 0; ow < g->out[1]; ow++) {                       \
                T best = r0[2 * ow];                                           \
                if (r0[2 * ow + 1] > best)                                     \
                    best = r0[2 * ow + 1];                                     \
                if (r1[2 * ow] > best)                                         \
                    best = r1[2 * ow];                                         \
                if (r1[2 * ow + 1] > best)                                     \
                    best = r1[2 * ow + 1];                                     \
                yr[ow] = best;                                                 \
            }                                                                  \
        }                                                                      \
    } while (0)

/* MAX_WINDOWS_2X2 for 8-bit codes, a row pair at a time
 * (kernels/pool-s8.h). */
#define MAX_WINDOWS_2X2_BYTES(T)                                               \
    do {                                                                       \
        const uint8_t *x_ = x;                                                 \
        uint8_t *y_ = y;                                                       \
        for (int64_t oh = 0; oh < g->out[0]; oh++)                             \
            qp_maxpool2x2_8(x_ + 2 * oh * W, x_ + (2 * oh + 1) * W,            \
                            (size_t)g->out[1], (T)-1 < 0, y_ + oh * g->out[1]); \
    } while (0)

/* True for 2-D windows of 2x2 at stride 2, dilation 1. */
static bool windows_2x2(const struct qp_conv_nd *g)
{
    for (int d = 0; d < 2; d++)
        if (g->kernel[d] != 2 || g->stride[d] != 2 || g->dilation[d] != 1)
            return false;
    return true;
}

struct maxpool_job {
    const struct qp_conv_nd *g;
    const char *x;
    char *y;
    enum qp_dtype dt;
};

static void maxpool_planes(void *ctx, size_t b, size_t e)
{
    const struct maxpool_job *j = ctx;
    const struct qp_conv_nd *g = j->g;
    size_t es = qp_elem_size(j->dt), W = (size_t)g->in[1];
    size_t in = (size_t)(g->in[0] * g->in[1]), on = (size_t)(g->out[0] * g->out[1]);
    bool k2 = windows_2x2(g);
    for (size_t p = b; p < e; p++) {
        const void *x = j->x + p * in * es;
        void *y = j->y + p * on * es;
        if (k2 && j->dt == QP_DTYPE_F32)
            MAX_WINDOWS_2X2(float);
        else if (k2 && j->dt == QP_DTYPE_I8)
            MAX_WINDOWS_2X2_BYTES(int8_t);
        else if (k2)
            MAX_WINDOWS_2X2_BYTES(uint8_t);
        else if (j->dt == QP_DTYPE_F32)
            MAX_WINDOWS(float);
        else if (j->dt == QP_DTYPE_I8)
            MAX_WINDOWS(int8_t);
        else
            MAX_WINDOWS(uint8_t);
    }
}

static enum qp_status pool_run(const struct qp_op_ctx *c,
                               struct qp_tensor *const *out,
                               struct qp_error *err)
{
    struct qp_conv_nd g;
    enum qp_status st = pool_geom(c, &g, err);
    if (st)
        return st;
    if (is_max(c->n) && c->n->n_out == 1 && windows_inside(&g)) {
        /* the same maxima as below, without the general path's per-window
         * bounds and the 8-bit input's conversions to float */
        struct maxpool_job j = {&g, c->in[0]->data, out[0]->data, c->in[0]->dtype};
        size_t planes = g.batch * g.in_c;
        qp_op_parallel_items(c, planes, qp_op_par_items((size_t)(g.in[0] * g.in[1])),
                             maxpool_planes, &j);
        return QP_OK;
    }
    const struct qp_tensor *x = c->in[0];
    const float *xf = x->data;
    float *yf = out[0]->data;
    size_t nx = qp_tensor_numel(x), ny = qp_tensor_numel(out[0]);
    bool s8 = x->dtype == QP_DTYPE_I8;
    if (x->dtype != QP_DTYPE_F32) { /* 8-bit (pool_geom): typed loops */
        float *buf = qp_op_scratch(c, (nx + ny) * sizeof(float));
        if (!buf)
            return qp_op_fail(err, c, QP_E_NOMEM, "out of memory");
        const int8_t *xs = x->data;
        const uint8_t *xu = x->data;
        for (size_t i = 0; i < nx; i++)
            buf[i] = s8 ? (float)xs[i] : (float)xu[i];
        xf = buf;
        yf = buf + nx;
    }
    if (is_max(c->n)) {
        int64_t *idx = c->n->n_out > 1 && out[1] ? out[1]->data : NULL;
        qp_maxpool_f32(c->pool, &g, xf, yf, idx, qp_attr_int(c->n, "storage_order", 0));
    } else {
        qp_avgpool_f32(c->pool, &g, xf, yf, qp_attr_int(c->n, "count_include_pad", 0));
    }
    if (x->dtype != QP_DTYPE_F32) {
        int8_t *ys = out[0]->data;
        uint8_t *yu = out[0]->data;
        for (size_t i = 0; i < ny; i++) { /* as qp_elem_set_i64 narrows */
            int64_t v = (int64_t)yf[i];
            if (s8)
                ys[i] = (int8_t)(uint8_t)v;
            else
                yu[i] = (uint8_t)v;
        }
    }
    return QP_OK;
}

/* ---- global pooling ---------------------------------------------------- */

static enum qp_status global_infer(const struct qp_op_ctx *c,
                                   struct qp_tdesc *out, struct qp_error *err)
{
    const struct qp_tensor *x = c->in[0];
    enum qp_status st = qp_op_want_f32(c, 0, err);
    if (st)
        return st;
    if (x->ndim < 3)
        return qp_op_fail(err, c, QP_E_SHAPE, "input rank %d; at least 3 is "
                          "needed", x->ndim);
    qp_tdesc_of(x, out);
    for (int i = 2; i < x->ndim; i++)
        out->shape[i] = 1;
    return QP_OK;
}

struct global_job {
    const float *x;
    float *y;
    size_t area;
    bool max;
};

/* Max, or mean summed in double (eight running sums, so the loop
 * vectorizes; a reassociation of the exact-order sum), of planes
 * [b, e). */
static void global_planes(void *ctx, size_t b, size_t e)
{
    const struct global_job *j = ctx;
    size_t area = j->area;
    for (size_t p = b; p < e; p++) {
        const float *v = j->x + p * area;
        if (j->max) {
            float m = -INFINITY;
            for (size_t i = 0; i < area; i++)
                m = v[i] > m ? v[i] : m;
            j->y[p] = m;
            continue;
        }
        double s8[8] = {0}, s = 0.0;
        size_t i = 0;
        for (; i + 8 <= area; i += 8)
            for (int k = 0; k < 8; k++)
                s8[k] += v[i + k];
        for (; i < area; i++)
            s += v[i];
        for (int k = 0; k < 8; k++)
            s += s8[k];
        j->y[p] = area ? (float)(s / (double)area) : 0.0f;
    }
}

static enum qp_status global_run(const struct qp_op_ctx *c,
                                 struct qp_tensor *const *out,
                                 struct qp_error *err)
{
    (void)err;
    const struct qp_tensor *x = c->in[0];
    size_t planes = (size_t)(x->shape[0] * x->shape[1]);
    size_t area = planes ? qp_tensor_numel(x) / planes : 0;
    struct global_job j = {x->data, out[0]->data, area, is_max(c->n)};
    qp_op_parallel_items(c, planes, qp_op_par_items(area), global_planes, &j);
    return QP_OK;
}

const struct qp_op_def qp_ops_pool[] = {
    {"", "MaxPool", 1, 1, 1, 2, 0, false, false, pool_attrs, pool_check,
     pool_infer, pool_run, QP_TRAIT_INT_PASS, qp_op_always, NULL, NULL},
    {"", "AveragePool", 1, 1, 1, 1, 0, false, false, pool_attrs, pool_check,
     pool_infer, pool_run, 0, NULL, NULL, NULL},
    {"", "GlobalAveragePool", 1, 1, 1, 1, 0, false, false, NULL, NULL,
     global_infer, global_run, 0, NULL, NULL, NULL},
    {"", "GlobalMaxPool", 1, 1, 1, 1, 0, false, false, NULL, NULL,
     global_infer, global_run, 0, NULL, NULL, NULL},
    {NULL},
};
