#include "quant/qparams.h"

#include <float.h>
#include <math.h>
#include <string.h>
#include <strings.h>

#include "formats/dump.h"

static const char *const round_names[] = {"half-away", "half-even"};
_Static_assert(sizeof round_names / sizeof round_names[0] == QP_ROUND_COUNT,
               "round_names must cover every rounding mode");

/* Index of name in names[n] (case-insensitive; also after skip bytes of
 * the entry when skip > 0), or -1. */
static int name_index(const char *const *names, int n, size_t skip,
                      const char *name)
{
    for (int i = 0; i < n; i++)
        if (!strcasecmp(name, names[i]) ||
            (skip && !strcasecmp(name, names[i] + skip)))
            return i;
    return -1;
}

const char *qp_round_name(enum qp_round r)
{
    return (unsigned)r < QP_ROUND_COUNT ? round_names[r] : "?";
}

bool qp_round_from_name(const char *name, enum qp_round *out)
{
    int i = name_index(round_names, QP_ROUND_COUNT, 5, name); /* "half-" */
    if (i >= 0)
        *out = (enum qp_round)i;
    return i >= 0;
}

void qp_qformat_range(const struct qp_qformat *f, int32_t *qmin, int32_t *qmax)
{
    if (f->asym) {
        *qmin = 0;
        *qmax = (int32_t)((1u << f->bits) - 1);
    } else {
        *qmax = (int32_t)((1u << (f->bits - 1)) - 1);
        *qmin = f->narrow ? -*qmax : -*qmax - 1;
    }
}

enum qp_dtype qp_qformat_dtype(const struct qp_qformat *f)
{
    switch (f->bits) {
    case 2: return f->asym ? QP_DTYPE_U2 : QP_DTYPE_I2;
    case 3: return f->asym ? QP_DTYPE_U3 : QP_DTYPE_I3;
    case 4: return f->asym ? QP_DTYPE_U4 : QP_DTYPE_I4;
    case 16: return f->asym ? QP_DTYPE_U16 : QP_DTYPE_I16;
    default: return f->asym ? QP_DTYPE_U8 : QP_DTYPE_I8;
    }
}

/* Rounds a double with |v| < 2^31 in mode r. */
static double round_d(double v, enum qp_round r)
{
    double t = trunc(v), f = v - t;
    if (fabs(f) > 0.5 || (fabs(f) == 0.5 &&
                          (r == QP_ROUND_HALF_AWAY || fmod(t, 2.0) != 0)))
        t += f > 0 ? 1 : -1;
    return t;
}

/* The float nearest to s, at most FLT_MAX; below QP_SCALE_MIN (0
 * included: a negligible range, see qparams.h) 1. */
static float safe_scale(double s)
{
    if (s < QP_SCALE_MIN)
        return 1.0f;
    if (s > FLT_MAX)
        return FLT_MAX;
    return (float)s;
}

void qp_qparams_from_range(const struct qp_qformat *f, enum qp_round r,
                           float lo, float hi, float *scale, int32_t *zp)
{
    int32_t qmin, qmax;
    qp_qformat_range(f, &qmin, &qmax);
    float s;
    double z = 0;
    if (!f->asym) {
        double amax = fmax(fabs((double)lo), fabs((double)hi));
        s = safe_scale(amax / qmax);
    } else {
        double l = fmin((double)lo, 0), h = fmax((double)hi, 0);
        s = safe_scale((h - l) / (qmax - qmin));
        z = fmin(fmax(qmin - round_d(l / s, r), qmin), qmax);
    }
    /* The grid s * (q - z), q in [qmin, qmax], reaches beyond [lo, hi]: by
     * up to a step on the side the rounded zero point favours, and to
     * qmin = -qmax - 1 when symmetric; and s is rounded to float. For a
     * range near +-FLT_MAX those ends would dequantize to infinity. The
     * scale shrinks until the whole grid is finite (the range's ends are
     * then clipped by at most a step). */
    double reach = fmax(z - qmin, qmax - z);
    if ((double)s * reach > FLT_MAX) {
        s = (float)(FLT_MAX / reach);
        while ((double)s * reach > FLT_MAX)
            s = nextafterf(s, 0);
    }
    *scale = s;
    *zp = (int32_t)z;
}

/* ---- layouts ------------------------------------------------------------ */

static const char *const wlayout_names[] = {"torch", "tflite", "keras", "io"};
_Static_assert(sizeof wlayout_names / sizeof wlayout_names[0] == QP_WLAYOUT_COUNT,
               "wlayout_names must cover every layout");

const char *qp_wlayout_name(enum qp_wlayout l)
{
    return (unsigned)l < QP_WLAYOUT_COUNT ? wlayout_names[l] : "?";
}

bool qp_wlayout_from_name(const char *name, enum qp_wlayout *out)
{
    int i = name_index(wlayout_names, QP_WLAYOUT_COUNT, 0, name);
    if (i >= 0)
        *out = (enum qp_wlayout)i;
    return i >= 0;
}

bool qp_wlayout_of_onnx_op(const char *op_type, bool trans_b,
                           enum qp_wlayout *out)
{
    if (!strcmp(op_type, "Conv"))
        *out = QP_WLAYOUT_TORCH;
    else if (!strcmp(op_type, "ConvTranspose"))
        *out = QP_WLAYOUT_IO;
    else if (!strcmp(op_type, "MatMul"))
        *out = QP_WLAYOUT_KERAS;
    else if (!strcmp(op_type, "Gemm"))
        *out = trans_b ? QP_WLAYOUT_TORCH : QP_WLAYOUT_KERAS;
    else
        return false;
    return true;
}

void qp_wlayout_axes(enum qp_wlayout l, int ndim, int *out_axis, int *in_axis)
{
    if (ndim < 2) {
        *out_axis = -1;
        *in_axis = ndim - 1;
        return;
    }
    switch (l) {
    case QP_WLAYOUT_TFLITE:
        *out_axis = 0;
        *in_axis = ndim - 1;
        break;
    case QP_WLAYOUT_KERAS:
        *out_axis = ndim - 1;
        *in_axis = ndim - 2;
        break;
    case QP_WLAYOUT_IO:
        *out_axis = 1;
        *in_axis = 0;
        break;
    default:
        *out_axis = 0;
        *in_axis = 1;
        break;
    }
}

/* ---- geometry ----------------------------------------------------------- */

static void geom_set(struct qp_qgeom *g, int ndim, const int64_t *shape,
                     int axis, int64_t block)
{
    size_t numel = 1;
    for (int i = 0; i < ndim; i++)
        numel *= (size_t)shape[i];
    g->axis = axis;
    g->block = block;
    if (axis < 0) {
        g->outer = 1;
        g->dim = 1;
        g->inner = numel;
        g->nblk = 1;
        g->count = 1;
        return;
    }
    g->outer = 1;
    g->inner = 1;
    for (int i = 0; i < axis; i++)
        g->outer *= (size_t)shape[i];
    for (int i = axis + 1; i < ndim; i++)
        g->inner *= (size_t)shape[i];
    g->dim = (size_t)shape[axis];
    g->nblk = block ? (g->dim + (size_t)block - 1) / (size_t)block : g->dim;
    g->count = block ? g->outer * g->nblk * g->inner : g->dim;
}

/* Shape of the scales of g: [1] per-tensor, [dim] per-axis, the tensor's
 * shape with the axis dim replaced by nblk when blocked. */
static int scale_shape(const struct qp_qgeom *g, int ndim, const int64_t *shape,
                       int64_t *s)
{
    if (g->axis < 0) {
        s[0] = 1;
        return 1;
    }
    if (!g->block) {
        s[0] = (int64_t)g->dim;
        return 1;
    }
    for (int i = 0; i < ndim; i++)
        s[i] = i == g->axis ? (int64_t)g->nblk : shape[i];
    return ndim;
}

enum qp_status qp_qgeom_init(struct qp_qgeom *g, int ndim, const int64_t *shape,
                             enum qp_gran gran, int64_t group,
                             enum qp_wlayout l, struct qp_error *err)
{
    int out_axis, in_axis;
    qp_wlayout_axes(l, ndim, &out_axis, &in_axis);
    if (gran == QP_GRAN_GROUP && group < 1)
        return qp_fail(err, QP_E_INVAL, "group size %lld must be at least 1",
                       (long long)group);
    if (gran == QP_GRAN_CHANNEL && out_axis >= 0)
        geom_set(g, ndim, shape, out_axis, 0);
    else if (gran == QP_GRAN_GROUP && in_axis >= 0)
        geom_set(g, ndim, shape, in_axis, group);
    else
        geom_set(g, ndim, shape, -1, 0);
    /* the input axis fits in one group: the group is the output channel's
     * whole reduction (for a conv, input channels x kernel), as a row of
     * a linear layer is */
    if (g->block && g->nblk == 1 && out_axis >= 0)
        geom_set(g, ndim, shape, out_axis, 0);
    if (g->count == 1 && g->axis >= 0)
        geom_set(g, ndim, shape, -1, 0);
    if (g->block && g->nblk == 1)
        geom_set(g, ndim, shape, g->axis, (int64_t)g->dim);
    /* adopt what the scale shape reads back as, when it is the same
     * partition: per-tensor, per-axis of the one varying dim, or a scale
     * per element */
    int64_t s[QP_MAX_DIMS];
    int sn = scale_shape(g, ndim, shape, s);
    int axis;
    int64_t block;
    if (g->block && qp_qparams_infer(ndim, shape, sn, s, &axis, &block) &&
        (axis != g->axis || block != g->block)) {
        size_t numel = g->outer * g->dim * g->inner;
        if (g->nblk == 1 || g->count == numel)
            geom_set(g, ndim, shape, axis, block);
    }
    return QP_OK;
}

bool qp_qgeom_storable(const struct qp_qgeom *g, int ndim, const int64_t *shape)
{
    int64_t s[QP_MAX_DIMS];
    int sn = scale_shape(g, ndim, shape, s);
    int axis;
    int64_t block;
    if (!g->block)
        return true; /* [1] and [1,..,C,..,1] always read back */
    return qp_qparams_infer(ndim, shape, sn, s, &axis, &block) &&
           axis == g->axis && block == g->block;
}

void qp_qseg_begin(struct qp_qseg_iter *it, const struct qp_qgeom *g)
{
    it->g = g;
    it->o = 0;
    it->a = 0;
    it->done = g->outer == 0 || g->dim == 0 || g->inner == 0;
}

bool qp_qseg_next(struct qp_qseg_iter *it, struct qp_qseg *s)
{
    const struct qp_qgeom *g = it->g;
    if (it->done)
        return false;
    size_t step = 1;
    if (g->axis < 0) {
        *s = (struct qp_qseg){0, g->inner, 0, false};
        it->done = true;
        return true;
    }
    size_t row = it->o * g->dim + it->a;
    if (!g->block) {
        if (g->inner == 1) {
            *s = (struct qp_qseg){row, g->dim, 0, true};
            step = g->dim;
        } else {
            *s = (struct qp_qseg){row * g->inner, g->inner, it->a, false};
        }
    } else if (g->inner == 1) {
        size_t b = (size_t)g->block, len = g->dim - it->a < b ? g->dim - it->a : b;
        *s = (struct qp_qseg){row, len, it->o * g->nblk + it->a / b, false};
        step = len;
    } else {
        size_t j = it->a / (size_t)g->block;
        *s = (struct qp_qseg){row * g->inner, g->inner,
                              (it->o * g->nblk + j) * g->inner, true};
    }
    it->a += step;
    if (it->a >= g->dim) {
        it->a = 0;
        if (++it->o == g->outer)
            it->done = true;
    }
    return true;
}

size_t qp_qgeom_members(const struct qp_qgeom *g, size_t idx)
{
    if (g->axis < 0)
        return g->inner;
    if (!g->block)
        return g->outer * g->inner;
    size_t j = (idx / g->inner) % g->nblk, b = (size_t)g->block;
    return g->dim - j * b < b ? g->dim - j * b : b;
}

/* Folds min/max of p[0..n) into *lo, *hi and x * 0 into *poison, in 8
 * independent lanes so the loop vectorizes without reassociating floats. */
static void range_run(const float *p, size_t n, float *lo, float *hi,
                      float *poison)
{
    enum { L = 8 };
    float l[L], h[L], z[L];
    for (int j = 0; j < L; j++) {
        l[j] = *lo;
        h[j] = *hi;
        z[j] = 0;
    }
    size_t k = 0;
    for (; k + L <= n; k += L)
        for (int j = 0; j < L; j++) {
            float v = p[k + j];
            l[j] = v < l[j] ? v : l[j];
            h[j] = v > h[j] ? v : h[j];
            z[j] += v * 0.0f;
        }
    for (; k < n; k++) {
        l[0] = p[k] < l[0] ? p[k] : l[0];
        h[0] = p[k] > h[0] ? p[k] : h[0];
        z[0] += p[k] * 0.0f;
    }
    for (int j = 0; j < L; j++) {
        *lo = l[j] < *lo ? l[j] : *lo;
        *hi = h[j] > *hi ? h[j] : *hi;
        *poison += z[j];
    }
}

enum qp_status qp_qgeom_minmax(const struct qp_qgeom *g, const float *x,
                               const char *what, float *lo, float *hi,
                               struct qp_error *err)
{
    for (size_t i = 0; i < g->count; i++) {
        lo[i] = INFINITY;
        hi[i] = -INFINITY;
    }
    float poison = 0; /* x * 0 is NaN exactly for NaN and infinities */
    struct qp_qseg_iter it;
    struct qp_qseg s;
    qp_qseg_begin(&it, g);
    while (qp_qseg_next(&it, &s)) {
        const float *p = x + s.off;
        if (s.vec) {
            float *l = lo + s.idx, *h = hi + s.idx;
            for (size_t k = 0; k < s.len; k++) {
                l[k] = p[k] < l[k] ? p[k] : l[k];
                h[k] = p[k] > h[k] ? p[k] : h[k];
                poison += p[k] * 0.0f;
            }
        } else {
            range_run(p, s.len, lo + s.idx, hi + s.idx, &poison);
        }
    }
    if (poison == 0)
        return QP_OK;
    size_t n = g->outer * g->dim * g->inner;
    for (size_t i = 0; i < n; i++)
        if (!isfinite(x[i]))
            return qp_fail(err, QP_E_INVAL, "%s: element %zu is %s, only finite "
                           "values can be quantized", what, i,
                           isnan(x[i]) ? "nan" : x[i] > 0 ? "inf" : "-inf");
    return QP_OK;
}
