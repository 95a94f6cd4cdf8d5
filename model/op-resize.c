/* model/op-resize.c: Resize (opsets 10-18: nearest, linear and cubic, all
 * coordinate transformation modes, tf_crop_and_resize's extrapolation)
 * and the older Upsample. f32.
 *
 * The resize is separable: it runs one axis at a time, each through a
 * table giving every output index up to four source indices and their
 * weights. Opset 10 and Upsample use ONNX Runtime's legacy rules:
 * asymmetric coordinates, and nearest picks floor when upsampling and
 * ceil when downsampling. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "core/size.h"
#include "model/op.h"

enum rmode { R_NEAREST, R_LINEAR, R_CUBIC };

struct rplan {
    int nd;
    enum rmode mode;
    int64_t in[QP_MAX_DIMS], out[QP_MAX_DIMS];
    double scale[QP_MAX_DIMS];
    /* the resized length the coordinate formulas use: the output size
     * when sizes are given, in * scale (not floored, as the ONNX reference
     * computes it) when scales are */
    double len_res[QP_MAX_DIMS];
    double roi_start[QP_MAX_DIMS], roi_end[QP_MAX_DIMS];
    const char *ctm, *nearest;
    bool legacy, exclude_outside;
    double cubic_a;
    float extrapolation;
};

static enum qp_status read_resize_inputs(const struct qp_op_ctx *c,
                                         struct rplan *p, bool *have_sizes,
                                         int64_t *sizes, struct qp_error *err)
{
    int nd = p->nd;
    const struct qp_tensor *roi = NULL, *sc = NULL, *sz = NULL;
    bool upsample = !strcmp(c->n->op_type, "Upsample");
    if (upsample && c->n->opset < 9) {
        size_t n;
        const float *a = qp_attr_floats(c->n, "scales", &n);
        if (n != (size_t)nd)
            return qp_op_fail(err, c, QP_E_FORMAT, "scales has %zu values for "
                              "rank %d", n, nd);
        for (int d = 0; d < nd; d++)
            p->scale[d] = a[d];
        *have_sizes = false;
        return QP_OK;
    }
    if (upsample || c->n->opset < 11) {
        sc = qp_op_in(c, 1);
    } else {
        roi = qp_op_in(c, 1);
        sc = qp_op_in(c, 2);
        sz = qp_op_in(c, 3);
    }
    size_t naxes = 0;
    const int64_t *axes_attr = qp_attr_ints(c->n, "axes", &naxes);
    int axes[QP_MAX_DIMS];
    if (!axes_attr)
        naxes = (size_t)nd;
    if (naxes > (size_t)nd)
        return qp_op_fail(err, c, QP_E_FORMAT, "too many axes");
    for (size_t i = 0; i < naxes; i++) {
        enum qp_status st = qp_op_axis(c, "axis", axes_attr ? axes_attr[i]
                                       : (int64_t)i, nd, &axes[i], err);
        if (st)
            return st;
    }
    float buf[2 * QP_MAX_DIMS];
    size_t n;
    enum qp_status st;
    for (int d = 0; d < nd; d++) {
        p->roi_start[d] = 0.0;
        p->roi_end[d] = 1.0;
        p->scale[d] = 1.0;
        sizes[d] = p->in[d];
    }
    if (roi && qp_tensor_numel(roi) &&
        !strcmp(p->ctm, "tf_crop_and_resize")) {
        if ((st = qp_op_read_floats(c, "roi", roi, buf, 2 * QP_MAX_DIMS, &n, err)))
            return st;
        if (n != 2 * naxes)
            return qp_op_fail(err, c, QP_E_FORMAT, "roi has %zu values", n);
        for (size_t i = 0; i < naxes; i++) {
            p->roi_start[axes[i]] = buf[i];
            p->roi_end[axes[i]] = buf[i + naxes];
        }
    }
    *have_sizes = sz && qp_tensor_numel(sz);
    if (*have_sizes) {
        int64_t v[QP_MAX_DIMS];
        if ((st = qp_op_read_ints(c, "sizes", sz, v, QP_MAX_DIMS, &n, err)))
            return st;
        if (n != naxes)
            return qp_op_fail(err, c, QP_E_FORMAT, "sizes has %zu values", n);
        for (size_t i = 0; i < naxes; i++)
            sizes[axes[i]] = v[i];
        return QP_OK;
    }
    if (!sc || !qp_tensor_numel(sc))
        return qp_op_fail(err, c, QP_E_FORMAT, "neither scales nor sizes given");
    if ((st = qp_op_read_floats(c, "scales", sc, buf, QP_MAX_DIMS, &n, err)))
        return st;
    if (n != naxes)
        return qp_op_fail(err, c, QP_E_FORMAT, "scales has %zu values for %zu "
                          "axes", n, naxes);
    for (size_t i = 0; i < naxes; i++)
        p->scale[axes[i]] = buf[i];
    return QP_OK;
}

static enum qp_status resize_plan(const struct qp_op_ctx *c, struct rplan *p,
                                  struct qp_error *err)
{
    const struct qp_tensor *x = c->in[0];
    enum qp_status st = QP_OK;
    memset(p, 0, sizeof *p);
    p->nd = x->ndim;
    memcpy(p->in, x->shape, sizeof p->in);
    const char *m = qp_attr_str(c->n, "mode", "nearest");
    p->mode = !strcmp(m, "nearest") ? R_NEAREST
            : !strcmp(m, "linear") || !strcmp(m, "bilinear") ? R_LINEAR
            : R_CUBIC;
    if (p->mode == R_CUBIC && strcmp(m, "cubic"))
        return qp_op_fail(err, c, QP_E_UNSUPPORTED, "mode '%s'", m);
    p->legacy = !strcmp(c->n->op_type, "Upsample") || c->n->opset < 11;
    p->ctm = p->legacy ? "asymmetric"
                       : qp_attr_str(c->n, "coordinate_transformation_mode",
                                     "half_pixel");
    p->nearest = qp_attr_str(c->n, "nearest_mode", "round_prefer_floor");
    p->cubic_a = qp_attr_float(c->n, "cubic_coeff_a", -0.75f);
    p->exclude_outside = qp_attr_int(c->n, "exclude_outside", 0) != 0;
    p->extrapolation = qp_attr_float(c->n, "extrapolation_value", 0.0f);
    if (qp_attr_int(c->n, "antialias", 0))
        return qp_op_fail(err, c, QP_E_UNSUPPORTED, "antialias");
    if (strcmp(qp_attr_str(c->n, "keep_aspect_ratio_policy", "stretch"),
               "stretch"))
        return qp_op_fail(err, c, QP_E_UNSUPPORTED, "keep_aspect_ratio_policy");
    static const char *const ctms[] = {"half_pixel", "pytorch_half_pixel",
                                       "align_corners", "asymmetric",
                                       "tf_half_pixel_for_nn",
                                       "tf_crop_and_resize", "half_pixel_symmetric"};
    bool known = false;
    for (size_t i = 0; i < sizeof ctms / sizeof ctms[0]; i++)
        known |= !strcmp(ctms[i], p->ctm);
    if (!known)
        return qp_op_fail(err, c, QP_E_UNSUPPORTED,
                          "coordinate_transformation_mode '%s'", p->ctm);
    bool have_sizes = false;
    int64_t sizes[QP_MAX_DIMS] = {0};
    if ((st = read_resize_inputs(c, p, &have_sizes, sizes, err)))
        return st;
    bool crop = !strcmp(p->ctm, "tf_crop_and_resize");
    for (int d = 0; d < p->nd; d++) {
        if (have_sizes) {
            p->out[d] = sizes[d];
            p->len_res[d] = (double)sizes[d];
            p->scale[d] = p->in[d] ? (double)(float)((float)sizes[d] / (float)p->in[d])
                                   : 1.0;
        } else {
            double span = crop ? p->roi_end[d] - p->roi_start[d] : 1.0;
            if (!(p->scale[d] > 0))
                return qp_op_fail(err, c, QP_E_FORMAT, "scale %g must be "
                                  "positive", p->scale[d]);
            double o = floor((double)p->in[d] * span * p->scale[d]);
            if (!(o >= 0 && o <= 0x1p53)) /* NaN, negative, absurd */
                return qp_op_fail(err, c, QP_E_SHAPE, "output size %g along "
                                  "axis %d is out of range", o, d);
            p->out[d] = (int64_t)o;
            p->len_res[d] = (double)p->in[d] * p->scale[d];
        }
        if (p->out[d] < 0)
            return qp_op_fail(err, c, QP_E_SHAPE, "negative output size");
    }
    return QP_OK;
}

/* Nearest without extrapolation only gathers elements (nearest_run). */
static bool gathers(const struct rplan *p)
{
    return p->mode == R_NEAREST && p->nd > 0 && strcmp(p->ctm, "tf_crop_and_resize");
}

/* resize_plan, and the input's dtype: f32, or any 1-byte type for a
 * gather (integer codes, as the int mode carries them, are moved). */
static enum qp_status resize_plan_typed(const struct qp_op_ctx *c,
                                        struct rplan *p, struct qp_error *err)
{
    enum qp_status st = resize_plan(c, p, err);
    if (st || (gathers(p) && qp_elem_size(c->in[0]->dtype) == 1))
        return st;
    return qp_op_want_f32(c, 0, err);
}

static enum qp_status resize_infer(const struct qp_op_ctx *c,
                                   struct qp_tdesc *out, struct qp_error *err)
{
    struct rplan p;
    enum qp_status st = resize_plan_typed(c, &p, err);
    if (st)
        return st;
    out->dtype = c->in[0]->dtype;
    out->ndim = p.nd;
    memcpy(out->shape, p.out, sizeof p.out);
    return QP_OK;
}

/* Source coordinate of output index x along axis d. */
static double source_coord(const struct rplan *p, int d, int64_t x)
{
    double s = p->scale[d], in = (double)p->in[d], out = (double)p->out[d];
    const char *m = p->ctm;
    if (!strcmp(m, "half_pixel"))
        return (x + 0.5) / s - 0.5;
    if (!strcmp(m, "half_pixel_symmetric")) {
        double adj = out / (in * s), center = in / 2;
        return center * (1 - adj) + (x + 0.5) / s - 0.5;
    }
    if (!strcmp(m, "pytorch_half_pixel"))
        return out > 1 ? (x + 0.5) / s - 0.5 : 0.0;
    if (!strcmp(m, "align_corners")) {
        double len = p->len_res[d];
        return len <= 1 ? 0.0 : x * (in - 1) / (len - 1);
    }
    if (!strcmp(m, "tf_half_pixel_for_nn"))
        return (x + 0.5) / s;
    if (!strcmp(m, "tf_crop_and_resize")) {
        double a = p->roi_start[d], b = p->roi_end[d];
        return out > 1 ? a * (in - 1) + x * (b - a) * (in - 1) / (out - 1)
                       : 0.5 * (a + b) * (in - 1);
    }
    return x / s; /* asymmetric */
}

static int64_t nearest_index(const struct rplan *p, int d, double v)
{
    if (p->legacy)
        return p->scale[d] < 1.0 ? (int64_t)ceil(v) : (int64_t)v;
    const char *m = p->nearest;
    if (!strcmp(m, "floor"))
        return (int64_t)floor(v);
    if (!strcmp(m, "ceil"))
        return (int64_t)ceil(v);
    double f = floor(v);
    if (v - f == 0.5)
        return !strcmp(m, "round_prefer_ceil") ? (int64_t)f + 1 : (int64_t)f;
    return (int64_t)round(v);
}

static double cubic_w(double a, double t)
{
    t = fabs(t);
    if (t <= 1)
        return ((a + 2) * t - (a + 3)) * t * t + 1;
    if (t < 2)
        return ((a * t - 5 * a) * t + 8 * a) * t - 4 * a;
    return 0.0;
}

/* Up to four taps per output index; idx < 0 everywhere marks an
 * extrapolated output. */
struct tap {
    int64_t idx[4];
    float w[4];
};

static void axis_taps(const struct rplan *p, int d, struct tap *t)
{
    int64_t in = p->in[d];
    bool crop = !strcmp(p->ctm, "tf_crop_and_resize");
    for (int64_t x = 0; x < p->out[d]; x++) {
        struct tap *k = &t[x];
        for (int j = 0; j < 4; j++) {
            k->idx[j] = -1;
            k->w[j] = 0.0f;
        }
        double v = source_coord(p, d, x);
        if (crop && (v < 0 || v > (double)(in - 1)))
            continue; /* extrapolation_value */
        if (p->mode == R_NEAREST) {
            int64_t i = nearest_index(p, d, v);
            k->idx[0] = i < 0 ? 0 : i >= in ? in - 1 : i;
            k->w[0] = 1.0f;
        } else if (p->mode == R_LINEAR) {
            if (v < 0)
                v = 0;
            if (v > (double)(in - 1))
                v = (double)(in - 1);
            int64_t i0 = (int64_t)floor(v), i1 = i0 + 1 < in ? i0 + 1 : in - 1;
            double f = v - (double)i0;
            k->idx[0] = i0;
            k->idx[1] = i1;
            k->w[0] = (float)(1.0 - f);
            k->w[1] = (float)f;
        } else {
            int64_t i0 = (int64_t)floor(v);
            double r = v - (double)i0, sum = 0.0, w[4];
            for (int j = 0; j < 4; j++) {
                int64_t i = i0 - 1 + j;
                w[j] = cubic_w(p->cubic_a, r + 1 - j);
                if (p->exclude_outside && (i < 0 || i >= in))
                    w[j] = 0.0;
                sum += w[j];
                k->idx[j] = i < 0 ? 0 : i >= in ? in - 1 : i;
            }
            for (int j = 0; j < 4; j++)
                k->w[j] = (float)(p->exclude_outside && sum != 0 ? w[j] / sum : w[j]);
        }
    }
}

/* [outer, n_in, inner] -> [outer, n_out, inner] along one axis. */
static void resize_axis(const struct tap *t, int64_t n_out, int64_t n_in,
                        size_t outer, size_t inner, float extrap,
                        const float *src, float *dst)
{
    for (size_t o = 0; o < outer; o++)
        for (int64_t x = 0; x < n_out; x++) {
            const struct tap *k = &t[x];
            float *d = dst + (o * (size_t)n_out + (size_t)x) * inner;
            if (k->idx[0] < 0) {
                for (size_t i = 0; i < inner; i++)
                    d[i] = extrap;
                continue;
            }
            const float *s0 = src + o * (size_t)n_in * inner;
            for (size_t i = 0; i < inner; i++) {
                float acc = 0.0f;
                for (int j = 0; j < 4 && k->idx[j] >= 0; j++)
                    acc += k->w[j] * s0[(size_t)k->idx[j] * inner + i];
                d[i] = acc;
            }
        }
}

/* Nearest without extrapolation is a gather: every output row (the last
 * axis) copies source elements through the last axis's index table, or,
 * when it reads the same source row as the row before it (upsampling),
 * copies that row. Rows are shared over the pool. */
struct nearest_job {
    const struct rplan *p;
    int64_t *idx[QP_MAX_DIMS]; /* per axis: source index of each output */
    const char *src;
    char *dst;
    size_t rows;
    size_t es;                 /* bytes per element: 4 or 1 */
};

/* Offset of the source row of output row r. */
static size_t nearest_src_row(const struct nearest_job *j, size_t r)
{
    const struct rplan *p = j->p;
    size_t off = 0, stride = (size_t)p->in[p->nd - 1];
    for (int d = p->nd - 2; d >= 0; d--) {
        size_t x = r % (size_t)p->out[d];
        r /= (size_t)p->out[d];
        off += (size_t)j->idx[d][x] * stride;
        stride *= (size_t)p->in[d];
    }
    return off;
}

static void nearest_rows(void *ctx, size_t b, size_t e)
{
    const struct nearest_job *j = ctx;
    size_t w = (size_t)j->p->out[j->p->nd - 1], prev = SIZE_MAX;
    const int64_t *iw = j->idx[j->p->nd - 1];
    size_t es = j->es;
    for (size_t r = b; r < e; r++) {
        size_t s = nearest_src_row(j, r);
        char *d = j->dst + r * w * es;
        if (s == prev) {
            memcpy(d, d - w * es, w * es);
            continue;
        }
        if (es == 1) {
            const char *sr = j->src + s;
            for (size_t x = 0; x < w; x++)
                d[x] = sr[iw[x]];
        } else {
            const float *sr = (const float *)(const void *)j->src + s;
            float *df = (float *)(void *)d;
            for (size_t x = 0; x < w; x++)
                df[x] = sr[iw[x]];
        }
        prev = s;
    }
}

static enum qp_status nearest_run(const struct qp_op_ctx *c,
                                  const struct rplan *p, struct qp_tensor *out,
                                  struct qp_error *err)
{
    /* a non-empty output has out[d] <= its element count on every axis */
    size_t most = 1, total = 0;
    for (int d = 0; d < p->nd; d++) {
        most = (size_t)p->out[d] > most ? (size_t)p->out[d] : most;
        total += (size_t)p->out[d];
    }
    size_t bytes = most * sizeof(struct tap) + total * sizeof(int64_t);
    char *mem;
    enum qp_status st = qp_op_scratch_get(c, bytes, (void **)&mem, err);
    if (st)
        return st;
    struct tap *t = (struct tap *)(void *)mem;
    int64_t *tab = (int64_t *)(void *)(mem + most * sizeof(struct tap));
    struct nearest_job j = {p, {NULL}, c->in[0]->data, out->data, 0,
                            qp_elem_size(out->dtype)};
    for (int d = 0; d < p->nd; d++) {
        axis_taps(p, d, t);
        j.idx[d] = tab;
        for (int64_t x = 0; x < p->out[d]; x++)
            tab[x] = t[x].idx[0];
        tab += p->out[d];
    }
    size_t w = p->nd ? (size_t)p->out[p->nd - 1] : 1;
    j.rows = w ? qp_tensor_numel(out) / w : 0;
    qp_op_parallel_items(c, j.rows, qp_op_par_items(w), nearest_rows, &j);
    return QP_OK;
}

static enum qp_status resize_run(const struct qp_op_ctx *c,
                                 struct qp_tensor *const *out,
                                 struct qp_error *err)
{
    struct rplan p;
    enum qp_status st = resize_plan_typed(c, &p, err);
    if (st || !qp_tensor_numel(out[0]))
        return st; /* an empty output (one dim 0, others maybe huge) */
    if (gathers(&p))
        return nearest_run(c, &p, out[0], err);
    /* two ping-pong buffers big enough for every intermediate shape, and
     * the largest tap table */
    size_t biggest = 1, cur = qp_tensor_numel(c->in[0]), taps = 1;
    int64_t shape[QP_MAX_DIMS];
    memcpy(shape, p.in, sizeof shape);
    bool big = false;
    for (int d = p.nd - 1; d >= 0; d--) {
        if (shape[d])
            big |= qp_size_mul(cur / (size_t)shape[d], (size_t)p.out[d], &cur);
        else
            cur = 0;
        shape[d] = p.out[d];
        biggest = cur > biggest ? cur : biggest;
        taps = (size_t)p.out[d] > taps ? (size_t)p.out[d] : taps;
    }
    size_t bytes, tapb;
    big |= qp_size_mul(biggest, 2 * sizeof(float), &bytes) ||
           qp_size_mul(taps, sizeof(struct tap), &tapb) ||
           qp_size_add(bytes, tapb, &bytes);
    char *mem;
    if ((st = qp_op_scratch_get(c, big ? SIZE_MAX : bytes, (void **)&mem, err)))
        return st;
    float *buf[2] = {(float *)(void *)mem, (float *)(void *)mem + biggest};
    struct tap *t = (struct tap *)(void *)(mem + 2 * biggest * sizeof(float));
    const float *src = c->in[0]->data;
    memcpy(shape, p.in, sizeof shape);
    bool crop = !strcmp(p.ctm, "tf_crop_and_resize");
    int first = -1; /* the outermost axis that changes: writes the output */
    for (int d = p.nd - 1; d >= 0; d--)
        if (crop || p.out[d] != p.in[d] || p.scale[d] != 1.0)
            first = d;
    if (first < 0) {
        memcpy(out[0]->data, src, out[0]->nbytes);
        return QP_OK;
    }
    int flip = 0;
    for (int d = p.nd - 1; d >= first; d--) {
        if (d != first && !crop && p.out[d] == p.in[d] && p.scale[d] == 1.0)
            continue;
        size_t outer = 1, inner = 1;
        for (int e = 0; e < d; e++)
            outer *= (size_t)shape[e];
        for (int e = d + 1; e < p.nd; e++)
            inner *= (size_t)shape[e];
        axis_taps(&p, d, t);
        float *dst = d == first ? (float *)out[0]->data : buf[flip];
        resize_axis(t, p.out[d], shape[d], outer, inner, p.extrapolation, src,
                    dst);
        shape[d] = p.out[d];
        src = dst;
        flip ^= 1;
    }
    return QP_OK;
}

static const struct qp_attr_spec resize_attrs[] = {
    {"mode", QP_ATTR_STRING}, {"coordinate_transformation_mode", QP_ATTR_STRING},
    {"nearest_mode", QP_ATTR_STRING}, {"cubic_coeff_a", QP_ATTR_FLOAT},
    {"exclude_outside", QP_ATTR_INT}, {"extrapolation_value", QP_ATTR_FLOAT},
    {"antialias", QP_ATTR_INT}, {"axes", QP_ATTR_INTS},
    {"keep_aspect_ratio_policy", QP_ATTR_STRING}, {"scales", QP_ATTR_FLOATS},
    {NULL, 0}};

/* A nearest-neighbour resize copies input values. */
static bool resize_nearest(const struct qp_node *n)
{
    return !strcmp(qp_attr_str(n, "mode", "nearest"), "nearest");
}

const struct qp_op_def qp_ops_resize[] = {
    {"", "Resize", 1, 4, 1, 1, 14u, false, false, resize_attrs, NULL,
     resize_infer, resize_run, 0, resize_nearest, NULL, NULL},
    {"", "Upsample", 1, 2, 1, 1, 2u, false, false, resize_attrs, NULL,
     resize_infer, resize_run, 0, NULL, NULL, NULL},
    {NULL},
};
