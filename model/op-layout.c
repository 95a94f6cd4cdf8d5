/* model/op-layout.c: operators that move elements: Transpose, Concat,
 * Slice, Split, Gather, Pad, Tile and Where. All work on bytes, so every
 * runtime dtype goes through them unchanged. */
#include <string.h>

#include "model/op.h"

static size_t prod(const int64_t *s, int a, int b)
{
    size_t p = 1;
    for (int i = a; i < b; i++)
        p *= (size_t)s[i];
    return p;
}

/* Generic strided copy: out (contiguous, shape[nd]) from src with element
 * strides st[nd] (in elements of size es). */
static void strided_copy(int nd, const int64_t *shape, const int64_t *st,
                         const char *src, char *dst, size_t es)
{
    size_t total = prod(shape, 0, nd);
    if (!total)
        return;
    if (nd == 0) {
        memcpy(dst, src, es);
        return;
    }
    int64_t idx[QP_MAX_DIMS] = {0};
    int64_t off = 0, inner = shape[nd - 1], ist = st[nd - 1];
    for (size_t o = 0; o < total; o += (size_t)inner) {
        if (ist == 1) {
            memcpy(dst + o * es, src + (size_t)off * es, (size_t)inner * es);
        } else if (es == 4) {
            const uint32_t *s4 = (const uint32_t *)(const void *)src + off;
            uint32_t *d4 = (uint32_t *)(void *)(dst + o * es);
            for (int64_t i = 0; i < inner; i++)
                d4[i] = s4[i * ist];
        } else {
            for (int64_t i = 0; i < inner; i++)
                memcpy(dst + (o + (size_t)i) * es, src + (size_t)(off + i * ist) * es,
                       es);
        }
        for (int d = nd - 2; d >= 0; d--) {
            off += st[d];
            if (++idx[d] < shape[d])
                break;
            off -= st[d] * shape[d];
            idx[d] = 0;
        }
    }
}

/* Advances the row-major index idx over shape; false after the last. */
static bool next_index(int nd, int64_t *idx, const int64_t *shape)
{
    for (int d = nd - 1; d >= 0; d--) {
        if (++idx[d] < shape[d])
            return true;
        idx[d] = 0;
    }
    return false;
}

static void contiguous_strides(int nd, const int64_t *shape, int64_t *st)
{
    int64_t s = 1;
    for (int d = nd - 1; d >= 0; d--) {
        st[d] = s;
        s *= shape[d];
    }
}

/* ---- Transpose --------------------------------------------------------- */

static enum qp_status perm_of(const struct qp_op_ctx *c, int *perm,
                              struct qp_error *err)
{
    int nd = c->in[0]->ndim;
    size_t n;
    const int64_t *p = qp_attr_ints(c->n, "perm", &n);
    bool seen[QP_MAX_DIMS] = {false};
    if (p && n != (size_t)nd)
        return qp_op_fail(err, c, QP_E_FORMAT, "perm has %zu entries for rank "
                          "%d", n, nd);
    for (int i = 0; i < nd; i++) {
        int64_t v = p ? p[i] : nd - 1 - i;
        if (v < 0 || v >= nd || seen[v])
            return qp_op_fail(err, c, QP_E_FORMAT, "perm is not a permutation");
        seen[v] = true;
        perm[i] = (int)v;
    }
    return QP_OK;
}

static enum qp_status transpose_infer(const struct qp_op_ctx *c,
                                      struct qp_tdesc *out,
                                      struct qp_error *err)
{
    int perm[QP_MAX_DIMS];
    enum qp_status st = perm_of(c, perm, err);
    if (st)
        return st;
    out->dtype = c->in[0]->dtype;
    out->ndim = c->in[0]->ndim;
    for (int i = 0; i < out->ndim; i++)
        out->shape[i] = c->in[0]->shape[perm[i]];
    return QP_OK;
}

static enum qp_status transpose_run(const struct qp_op_ctx *c,
                                    struct qp_tensor *const *out,
                                    struct qp_error *err)
{
    const struct qp_tensor *x = c->in[0];
    int perm[QP_MAX_DIMS];
    int64_t ist[QP_MAX_DIMS], st[QP_MAX_DIMS];
    enum qp_status s = perm_of(c, perm, err);
    if (s)
        return s;
    contiguous_strides(x->ndim, x->shape, ist);
    for (int i = 0; i < x->ndim; i++)
        st[i] = ist[perm[i]];
    strided_copy(out[0]->ndim, out[0]->shape, st, x->data, out[0]->data,
                 qp_elem_size(x->dtype));
    return QP_OK;
}

/* ---- Concat ------------------------------------------------------------ */

static enum qp_status concat_infer(const struct qp_op_ctx *c,
                                   struct qp_tdesc *out, struct qp_error *err)
{
    const struct qp_tensor *x0 = c->in[0];
    int axis;
    enum qp_status st = qp_op_axis(c, "axis", qp_attr_int(c->n, "axis", 0),
                                   x0->ndim, &axis, err);
    if (st)
        return st;
    qp_tdesc_of(x0, out);
    out->shape[axis] = 0;
    for (int i = 0; i < c->n_in; i++) {
        const struct qp_tensor *t = c->in[i];
        bool ok = t && t->ndim == x0->ndim && t->dtype == x0->dtype;
        for (int d = 0; ok && d < t->ndim; d++)
            ok = d == axis || t->shape[d] == x0->shape[d];
        if (!ok)
            return qp_op_fail(err, c, QP_E_SHAPE, "input %d does not match "
                              "input 0 outside axis %d", i, axis);
        out->shape[axis] += t->shape[axis];
    }
    return QP_OK;
}

struct concat_job {
    const struct qp_op_ctx *c;
    char *out;
    size_t outer;
    int axis;
    size_t inner, row; /* bytes: of one index along axis, of one outer index */
};

/* Pieces [b, e): piece p is input p % n_in's block of outer index p /
 * n_in. */
static void concat_pieces(void *ctx, size_t b, size_t e)
{
    const struct concat_job *j = ctx;
    size_t n = (size_t)j->c->n_in;
    for (size_t p = b; p < e; p++) {
        size_t o = p / n, i = p % n, at = 0;
        for (size_t k = 0; k < i; k++)
            at += (size_t)j->c->in[k]->shape[j->axis] * j->inner;
        size_t len = (size_t)j->c->in[i]->shape[j->axis] * j->inner;
        memcpy(j->out + o * j->row + at, (const char *)j->c->in[i]->data + o * len,
               len);
    }
}

static enum qp_status concat_run(const struct qp_op_ctx *c,
                                 struct qp_tensor *const *out,
                                 struct qp_error *err)
{
    int axis;
    enum qp_status st = qp_op_axis(c, "axis", qp_attr_int(c->n, "axis", 0),
                                   c->in[0]->ndim, &axis, err);
    if (st)
        return st;
    size_t es = qp_elem_size(out[0]->dtype);
    size_t outer = prod(out[0]->shape, 0, axis);
    size_t inner = prod(out[0]->shape, axis + 1, out[0]->ndim) * es;
    struct concat_job j = {c, out[0]->data, outer, axis, inner,
                           (size_t)out[0]->shape[axis] * inner};
    /* a piece: an input's block of one outer index (its elements, on
     * average) */
    size_t pieces = outer * (size_t)c->n_in;
    qp_op_parallel_items(c, pieces, qp_op_par_items(qp_tensor_numel(out[0]) /
                                                    (pieces ? pieces : 1)),
                         concat_pieces, &j);
    return QP_OK;
}

/* ---- Slice ------------------------------------------------------------- */

struct slice {
    int64_t start[QP_MAX_DIMS], step[QP_MAX_DIMS], len[QP_MAX_DIMS];
};

static enum qp_status slice_plan(const struct qp_op_ctx *c, struct slice *s,
                                 struct qp_error *err)
{
    const struct qp_tensor *x = c->in[0];
    int64_t st[QP_MAX_DIMS], en[QP_MAX_DIMS], ax[QP_MAX_DIMS], sp[QP_MAX_DIMS];
    size_t ns = 0, ne = 0, na = 0, np = 0;
    enum qp_status r;
    if (c->n->opset < 10) {
        const int64_t *a = qp_attr_ints(c->n, "starts", &ns);
        const int64_t *b = qp_attr_ints(c->n, "ends", &ne);
        const int64_t *d = qp_attr_ints(c->n, "axes", &na);
        if (ns > QP_MAX_DIMS || ne != ns || na > QP_MAX_DIMS)
            return qp_op_fail(err, c, QP_E_FORMAT, "starts/ends/axes disagree");
        memcpy(st, a, ns * sizeof *a);
        memcpy(en, b, ne * sizeof *b);
        if (na)
            memcpy(ax, d, na * sizeof *d);
    } else {
        if ((r = qp_op_read_ints(c, "starts", c->in[1], st, QP_MAX_DIMS, &ns, err)) ||
            (r = qp_op_read_ints(c, "ends", c->in[2], en, QP_MAX_DIMS, &ne, err)) ||
            (qp_op_in(c, 3) &&
             (r = qp_op_read_ints(c, "axes", c->in[3], ax, QP_MAX_DIMS, &na, err))) ||
            (qp_op_in(c, 4) &&
             (r = qp_op_read_ints(c, "steps", c->in[4], sp, QP_MAX_DIMS, &np, err))))
            return r;
    }
    if (ne != ns || (na && na != ns) || (np && np != ns))
        return qp_op_fail(err, c, QP_E_FORMAT, "starts, ends, axes and steps "
                          "have different lengths");
    for (int d = 0; d < x->ndim; d++) {
        s->start[d] = 0;
        s->step[d] = 1;
        s->len[d] = x->shape[d];
    }
    bool seen[QP_MAX_DIMS] = {false};
    for (size_t i = 0; i < ns; i++) {
        int a;
        if ((r = qp_op_axis(c, "axis", na ? ax[i] : (int64_t)i, x->ndim, &a, err)))
            return r;
        if (seen[a])
            return qp_op_fail(err, c, QP_E_FORMAT, "axis %d is repeated", a);
        seen[a] = true;
        int64_t dim = x->shape[a], step = np ? sp[i] : 1;
        if (step == 0)
            return qp_op_fail(err, c, QP_E_FORMAT, "step is 0");
        int64_t b = st[i], e = en[i];
        /* clamp before adding dim: INT64_MIN/MAX are common sentinels */
        b = b < -dim ? -dim - 1 : b > dim ? dim : b;
        e = e < -dim ? -dim - 1 : e > dim ? dim : e;
        if (b < 0)
            b += dim;
        if (e < 0)
            e += dim;
        if (step > 0) {
            b = b < 0 ? 0 : b > dim ? dim : b;
            e = e < 0 ? 0 : e > dim ? dim : e;
        } else {
            b = b < 0 ? -1 : b > dim - 1 ? dim - 1 : b;
            e = e < -1 ? -1 : e > dim - 1 ? dim - 1 : e;
        }
        int64_t n = step > 0 ? (e - b + step - 1) / step : (b - e + (-step) - 1) / -step;
        s->start[a] = b;
        s->step[a] = step;
        s->len[a] = n > 0 ? n : 0;
    }
    return QP_OK;
}

static enum qp_status slice_infer(const struct qp_op_ctx *c,
                                  struct qp_tdesc *out, struct qp_error *err)
{
    struct slice s;
    enum qp_status st = slice_plan(c, &s, err);
    if (st)
        return st;
    qp_tdesc_of(c->in[0], out);
    memcpy(out->shape, s.len, (size_t)out->ndim * sizeof(int64_t));
    return QP_OK;
}

static enum qp_status slice_run(const struct qp_op_ctx *c,
                                struct qp_tensor *const *out,
                                struct qp_error *err)
{
    const struct qp_tensor *x = c->in[0];
    struct slice s;
    enum qp_status r = slice_plan(c, &s, err);
    if (r)
        return r;
    if (!qp_tensor_numel(out[0]))
        return QP_OK;
    int64_t ist[QP_MAX_DIMS], st[QP_MAX_DIMS], off = 0;
    contiguous_strides(x->ndim, x->shape, ist);
    for (int d = 0; d < x->ndim; d++) {
        off += s.start[d] * ist[d];
        st[d] = s.step[d] * ist[d];
    }
    size_t es = qp_elem_size(x->dtype);
    strided_copy(x->ndim, s.len, st, (const char *)x->data + (size_t)off * es,
                 out[0]->data, es);
    return QP_OK;
}

/* ---- Split ------------------------------------------------------------- */

static enum qp_status split_sizes(const struct qp_op_ctx *c, int *axis,
                                  int64_t *sizes, struct qp_error *err)
{
    const struct qp_tensor *x = c->in[0];
    int nout = c->n->n_out;
    enum qp_status st = qp_op_axis(c, "axis", qp_attr_int(c->n, "axis", 0),
                                   x->ndim, axis, err);
    if (st)
        return st;
    int64_t dim = x->shape[*axis];
    size_t n = 0;
    if (c->n->opset < 13) {
        const int64_t *a = qp_attr_ints(c->n, "split", &n);
        if (n && n != (size_t)nout)
            return qp_op_fail(err, c, QP_E_FORMAT, "split has %zu sizes for %d "
                              "outputs", n, nout);
        if (n)
            memcpy(sizes, a, n * sizeof *a);
    } else if (qp_op_in(c, 1)) {
        if ((st = qp_op_read_ints(c, "split", c->in[1], sizes, QP_OP_MAX_IO, &n,
                                  err)))
            return st;
        if (n != (size_t)nout)
            return qp_op_fail(err, c, QP_E_FORMAT, "split has %zu sizes for %d "
                              "outputs", n, nout);
    }
    if (!n) { /* equal parts; opset 18 allows a smaller last part */
        int64_t part = (dim + nout - 1) / nout;
        if (c->n->opset < 18 && dim % nout)
            return qp_op_fail(err, c, QP_E_SHAPE, "axis of %lld does not split "
                              "into %d equal parts", (long long)dim, nout);
        for (int i = 0; i < nout; i++) {
            int64_t left = dim - part * i;
            sizes[i] = left < part ? (left > 0 ? left : 0) : part;
        }
    }
    int64_t sum = 0;
    for (int i = 0; i < nout; i++) {
        if (sizes[i] < 0)
            return qp_op_fail(err, c, QP_E_FORMAT, "negative split size");
        sum += sizes[i];
    }
    if (sum != dim)
        return qp_op_fail(err, c, QP_E_SHAPE, "split sizes add up to %lld, the "
                          "axis has %lld", (long long)sum, (long long)dim);
    return QP_OK;
}

static enum qp_status split_infer(const struct qp_op_ctx *c,
                                  struct qp_tdesc *out, struct qp_error *err)
{
    int axis;
    int64_t sizes[QP_OP_MAX_IO];
    enum qp_status st = split_sizes(c, &axis, sizes, err);
    for (int i = 0; !st && i < c->n->n_out; i++) {
        qp_tdesc_of(c->in[0], &out[i]);
        out[i].shape[axis] = sizes[i];
    }
    return st;
}

static enum qp_status split_run(const struct qp_op_ctx *c,
                                struct qp_tensor *const *out,
                                struct qp_error *err)
{
    int axis;
    int64_t sizes[QP_OP_MAX_IO];
    enum qp_status st = split_sizes(c, &axis, sizes, err);
    if (st)
        return st;
    const struct qp_tensor *x = c->in[0];
    size_t es = qp_elem_size(x->dtype), outer = prod(x->shape, 0, axis);
    size_t inner = prod(x->shape, axis + 1, x->ndim) * es;
    size_t row = (size_t)x->shape[axis] * inner, at = 0;
    for (int i = 0; i < c->n->n_out; i++) {
        size_t len = (size_t)sizes[i] * inner;
        for (size_t o = 0; out[i] && o < outer; o++)
            memcpy((char *)out[i]->data + o * len,
                   (const char *)x->data + o * row + at, len);
        at += len;
    }
    return QP_OK;
}

/* ---- Gather ------------------------------------------------------------ */

static enum qp_status gather_infer(const struct qp_op_ctx *c,
                                   struct qp_tdesc *out, struct qp_error *err)
{
    const struct qp_tensor *x = c->in[0], *idx = c->in[1];
    int axis;
    enum qp_status st = qp_op_axis(c, "axis", qp_attr_int(c->n, "axis", 0),
                                   x->ndim, &axis, err);
    if (st)
        return st;
    if (idx->dtype != QP_DTYPE_I64 && idx->dtype != QP_DTYPE_I32)
        return qp_op_fail(err, c, QP_E_FORMAT, "indices must be int32 or int64");
    if (x->ndim - 1 + idx->ndim > QP_MAX_DIMS)
        return qp_op_fail(err, c, QP_E_UNSUPPORTED, "result has too many dims");
    out->dtype = x->dtype;
    out->ndim = 0;
    for (int d = 0; d < axis; d++)
        out->shape[out->ndim++] = x->shape[d];
    for (int d = 0; d < idx->ndim; d++)
        out->shape[out->ndim++] = idx->shape[d];
    for (int d = axis + 1; d < x->ndim; d++)
        out->shape[out->ndim++] = x->shape[d];
    return QP_OK;
}

static enum qp_status gather_run(const struct qp_op_ctx *c,
                                 struct qp_tensor *const *out,
                                 struct qp_error *err)
{
    const struct qp_tensor *x = c->in[0], *idx = c->in[1];
    int axis;
    enum qp_status st = qp_op_axis(c, "axis", qp_attr_int(c->n, "axis", 0),
                                   x->ndim, &axis, err);
    if (st)
        return st;
    size_t es = qp_elem_size(x->dtype), outer = prod(x->shape, 0, axis);
    size_t inner = prod(x->shape, axis + 1, x->ndim) * es;
    int64_t dim = x->shape[axis];
    size_t ni = qp_tensor_numel(idx);
    char *dst = out[0]->data;
    for (size_t o = 0; o < outer; o++)
        for (size_t k = 0; k < ni; k++) {
            int64_t i = qp_elem_get_i64(idx->dtype, idx->data, k);
            if (i < -dim || i >= dim)
                return qp_op_fail(err, c, QP_E_SHAPE, "index %lld is out of "
                                  "range for an axis of %lld", (long long)i,
                                  (long long)dim);
            if (i < 0)
                i += dim;
            memcpy(dst, (const char *)x->data + (o * (size_t)dim + (size_t)i) * inner,
                   inner);
            dst += inner;
        }
    return QP_OK;
}

/* ---- Pad --------------------------------------------------------------- */

struct pad {
    int64_t before[QP_MAX_DIMS], after[QP_MAX_DIMS];
    int mode; /* 0 constant, 1 reflect, 2 edge, 3 wrap */
};

static enum qp_status pad_plan(const struct qp_op_ctx *c, struct pad *p,
                               struct qp_error *err)
{
    const struct qp_tensor *x = c->in[0];
    int nd = x->ndim;
    int64_t pads[2 * QP_MAX_DIMS], axes[QP_MAX_DIMS];
    size_t np = 0, na = 0;
    enum qp_status st;
    if (c->n->opset < 11) {
        const int64_t *a = qp_attr_ints(c->n, "pads", &np);
        if (np > 2 * QP_MAX_DIMS)
            return qp_op_fail(err, c, QP_E_FORMAT, "too many pads");
        memcpy(pads, a, np * sizeof *a);
    } else if ((st = qp_op_read_ints(c, "pads", c->in[1], pads, 2 * QP_MAX_DIMS,
                                     &np, err))) {
        return st;
    }
    if (qp_op_in(c, 3)) {
        if ((st = qp_op_read_ints(c, "axes", c->in[3], axes, QP_MAX_DIMS, &na, err)))
            return st;
    } else {
        na = (size_t)nd;
        for (int d = 0; d < nd; d++)
            axes[d] = d;
    }
    if (np != 2 * na)
        return qp_op_fail(err, c, QP_E_FORMAT, "%zu pads for %zu axes", np, na);
    memset(p->before, 0, sizeof p->before);
    memset(p->after, 0, sizeof p->after);
    for (size_t i = 0; i < na; i++) {
        int a;
        if ((st = qp_op_axis(c, "axis", axes[i], nd, &a, err)))
            return st;
        p->before[a] = pads[i];
        p->after[a] = pads[i + na];
        if (x->shape[a] + pads[i] + pads[i + na] < 0)
            return qp_op_fail(err, c, QP_E_SHAPE, "pads remove more than axis "
                              "%d holds", a);
    }
    const char *m = qp_attr_str(c->n, "mode", "constant");
    p->mode = !strcmp(m, "constant") ? 0 : !strcmp(m, "reflect") ? 1
            : !strcmp(m, "edge") ? 2 : !strcmp(m, "wrap") ? 3 : -1;
    if (p->mode < 0)
        return qp_op_fail(err, c, QP_E_UNSUPPORTED, "pad mode '%s'", m);
    for (int d = 0; d < nd && p->mode; d++)
        if (x->shape[d] == 0 && (p->before[d] > 0 || p->after[d] > 0))
            return qp_op_fail(err, c, QP_E_SHAPE, "cannot %s-pad an empty axis",
                              m);
    return QP_OK;
}

static enum qp_status pad_infer(const struct qp_op_ctx *c, struct qp_tdesc *out,
                                struct qp_error *err)
{
    struct pad p;
    enum qp_status st = pad_plan(c, &p, err);
    if (st)
        return st;
    qp_tdesc_of(c->in[0], out);
    for (int d = 0; d < out->ndim; d++)
        out->shape[d] += p.before[d] + p.after[d];
    return QP_OK;
}

/* Source index along an axis of extent n for padded index i (-1: fill). */
static int64_t pad_src(const struct pad *p, int64_t i, int64_t n)
{
    if (i >= 0 && i < n)
        return i;
    switch (p->mode) {
    case 1: { /* reflect without repeating the edge */
        if (n == 1)
            return 0;
        int64_t period = 2 * (n - 1), m = ((i % period) + period) % period;
        return m < n ? m : period - m;
    }
    case 2: return i < 0 ? 0 : n - 1;
    case 3: return ((i % n) + n) % n;
    default: return -1;
    }
}

static enum qp_status pad_run(const struct qp_op_ctx *c,
                              struct qp_tensor *const *out,
                              struct qp_error *err)
{
    struct pad p;
    enum qp_status st = pad_plan(c, &p, err);
    if (st)
        return st;
    const struct qp_tensor *x = c->in[0];
    int nd = x->ndim;
    size_t es = qp_elem_size(x->dtype), total = qp_tensor_numel(out[0]);
    char fill[16] = {0};
    const struct qp_tensor *cv = c->n->opset < 11 ? NULL : qp_op_in(c, 2);
    if (cv && qp_tensor_numel(cv) == 1 && cv->dtype == x->dtype)
        memcpy(fill, cv->data, es);
    else if (cv && qp_tensor_numel(cv) != 0)
        return qp_op_fail(err, c, QP_E_SHAPE, "constant_value must be one %s",
                          qp_dtype_name(x->dtype));
    else if (c->n->opset < 11)
        qp_elem_set_f64(x->dtype, fill, 0, qp_attr_float(c->n, "value", 0.0f));
    int64_t ist[QP_MAX_DIMS], idx[QP_MAX_DIMS] = {0};
    contiguous_strides(nd, x->shape, ist);
    char *dst = out[0]->data;
    for (size_t o = 0; o < total; o++) {
        int64_t off = 0;
        bool inside = true;
        for (int d = 0; d < nd && inside; d++) {
            int64_t s = pad_src(&p, idx[d] - p.before[d], x->shape[d]);
            inside = s >= 0;
            off += s * ist[d];
        }
        memcpy(dst + o * es, inside ? (const char *)x->data + (size_t)off * es : fill,
               es);
        next_index(nd, idx, out[0]->shape);
    }
    return QP_OK;
}

/* ---- Tile -------------------------------------------------------------- */

static enum qp_status tile_infer(const struct qp_op_ctx *c, struct qp_tdesc *out,
                                 struct qp_error *err)
{
    int64_t rep[QP_MAX_DIMS];
    size_t n;
    enum qp_status st = qp_op_read_ints(c, "repeats", c->in[1], rep, QP_MAX_DIMS,
                                        &n, err);
    if (st)
        return st;
    if (n != (size_t)c->in[0]->ndim)
        return qp_op_fail(err, c, QP_E_SHAPE, "%zu repeats for rank %d", n,
                          c->in[0]->ndim);
    qp_tdesc_of(c->in[0], out);
    for (size_t d = 0; d < n; d++) {
        if (rep[d] < 0)
            return qp_op_fail(err, c, QP_E_FORMAT, "negative repeat");
        out->shape[d] *= rep[d];
    }
    return QP_OK;
}

static enum qp_status tile_run(const struct qp_op_ctx *c,
                               struct qp_tensor *const *out,
                               struct qp_error *err)
{
    (void)err;
    const struct qp_tensor *x = c->in[0];
    int nd = x->ndim;
    size_t es = qp_elem_size(x->dtype), total = qp_tensor_numel(out[0]);
    int64_t ist[QP_MAX_DIMS], idx[QP_MAX_DIMS] = {0};
    contiguous_strides(nd, x->shape, ist);
    for (size_t o = 0; o < total; o++) {
        int64_t off = 0;
        for (int d = 0; d < nd; d++)
            off += (idx[d] % x->shape[d]) * ist[d];
        memcpy((char *)out[0]->data + o * es,
               (const char *)x->data + (size_t)off * es, es);
        next_index(nd, idx, out[0]->shape);
    }
    return QP_OK;
}

/* ---- Where ------------------------------------------------------------- */

static enum qp_status where_infer(const struct qp_op_ctx *c,
                                  struct qp_tdesc *out, struct qp_error *err)
{
    if (c->in[0]->dtype != QP_DTYPE_BOOL || c->in[1]->dtype != c->in[2]->dtype)
        return qp_op_fail(err, c, QP_E_SHAPE, "needs a bool condition and two "
                          "inputs of one dtype");
    enum qp_status st = qp_op_broadcast(c, c->in, 3, out, err);
    out->dtype = c->in[1]->dtype;
    return st;
}

static enum qp_status where_run(const struct qp_op_ctx *c,
                                struct qp_tensor *const *out,
                                struct qp_error *err)
{
    (void)err;
    struct qp_tdesc od;
    struct qp_bcast b;
    qp_tdesc_of(out[0], &od);
    qp_bcast_init(&b, &od, c->in, 3);
    size_t es = qp_elem_size(od.dtype);
    const uint8_t *cond = c->in[0]->data;
    size_t n = b.inner, rows = n ? b.total / n : 0;
    int64_t step[3];
    for (int j = 0; j < 3; j++)
        step[j] = b.stride[j][b.nd - 1];
    for (size_t r = 0; r < rows; r++) { /* offsets once a row */
        int64_t off[3];
        qp_bcast_row(&b, r, off);
        char *d = (char *)out[0]->data + r * n * es;
        for (size_t i = 0; i < n; i++) {
            int k = cond[off[0] + (int64_t)i * step[0]] ? 1 : 2;
            memcpy(d + i * es, (const char *)c->in[k]->data +
                   (size_t)(off[k] + (int64_t)i * step[k]) * es, es);
        }
    }
    return QP_OK;
}

static const struct qp_attr_spec perm_attrs[] = {{"perm", QP_ATTR_INTS}, {NULL, 0}};
static const struct qp_attr_spec axis_attrs[] = {
    {"axis", QP_ATTR_INT}, {"split", QP_ATTR_INTS}, {"num_outputs", QP_ATTR_INT},
    {NULL, 0}};
static const struct qp_attr_spec slice_attrs[] = {
    {"starts", QP_ATTR_INTS}, {"ends", QP_ATTR_INTS}, {"axes", QP_ATTR_INTS},
    {NULL, 0}};
static const struct qp_attr_spec pad_attrs[] = {
    {"mode", QP_ATTR_STRING}, {"pads", QP_ATTR_INTS}, {"value", QP_ATTR_FLOAT},
    {NULL, 0}};

const struct qp_op_def qp_ops_layout[] = {
    {"", "Transpose", 1, 1, 1, 1, 0, false, false, perm_attrs, NULL,
     transpose_infer, transpose_run,
     QP_TRAIT_INT_PASS, qp_op_always, NULL, NULL},
    {"", "Concat", 1, QP_OP_MAX_IO, 1, 1, 0, false, false, axis_attrs, NULL,
     concat_infer, concat_run, 0, NULL, NULL, NULL},
    {"", "Slice", 1, 5, 1, 1, 30u, false, false, slice_attrs, NULL, slice_infer,
     slice_run,
     QP_TRAIT_INT_PASS, qp_op_always, NULL, NULL},
    {"", "Split", 1, 2, 1, QP_OP_MAX_IO, 2u, false, false, axis_attrs, NULL,
     split_infer, split_run,
     QP_TRAIT_INT_PASS, qp_op_always, NULL, NULL},
    {"", "Gather", 2, 2, 1, 1, 0, false, false, axis_attrs, NULL, gather_infer,
     gather_run,
     QP_TRAIT_INT_PASS, qp_op_always, NULL, NULL},
    {"", "Pad", 1, 4, 1, 1, 14u, false, false, pad_attrs, NULL, pad_infer,
     pad_run, 0, NULL, NULL, NULL},
    {"", "Tile", 2, 2, 1, 1, 2u, false, false, NULL, NULL, tile_infer, tile_run, 0, NULL, NULL, NULL},
    {"", "Where", 3, 3, 1, 1, 0, false, false, NULL, NULL, where_infer,
     where_run, 0, NULL, NULL, NULL},
    {NULL},
};
