#include "core/tensor.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/half.h"
#include "core/memlimit.h"
#include "core/size.h"

size_t qp_tensor_numel(const struct qp_tensor *t)
{
    size_t n = 1;
    for (int i = 0; i < t->ndim; i++)
        n *= (size_t)t->shape[i];
    return n;
}

enum qp_status qp_shape_check(const char *what, enum qp_dtype dtype, int ndim,
                              const int64_t *shape, size_t *nbytes,
                              struct qp_error *err)
{
    if ((unsigned)dtype >= QP_DTYPE_COUNT)
        return qp_fail(err, QP_E_INVAL, "%s: invalid dtype %d", what, (int)dtype);
    if (ndim < 0 || ndim > QP_MAX_DIMS)
        return qp_fail(err, QP_E_UNSUPPORTED,
                       "%s: %d dims, at most %d are supported", what, ndim,
                       QP_MAX_DIMS);
    size_t n = 1;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 0)
            return qp_fail(err, QP_E_FORMAT, "%s: dim %d is negative (%lld)",
                           what, i, (long long)shape[i]);
        if ((uint64_t)shape[i] > SIZE_MAX || qp_size_mul(n, (size_t)shape[i], &n))
            return qp_fail(err, QP_E_OVERFLOW, "%s: element count overflows",
                           what);
    }
    if (!qp_dtype_bytes(dtype, n, nbytes))
        return qp_fail(err, QP_E_OVERFLOW, "%s: byte size overflows", what);
    return QP_OK;
}

enum qp_status qp_tensor_check_limit(const struct qp_tensor *t, size_t nbytes,
                                     struct qp_error *err)
{
    size_t limit;
    enum qp_status st = qp_mem_limit(&limit, err);
    if (st || nbytes <= limit) /* the message is made only when it is needed */
        return st;
    char what[300], shape[128];
    qp_shape_str(t->ndim, t->shape, shape, sizeof shape);
    snprintf(what, sizeof what, "tensor '%.150s' %s %s", t->name,
             qp_dtype_name(t->dtype), shape);
    return qp_mem_check(what, nbytes, err);
}

static enum qp_status tensor_alloc(const char *name, enum qp_dtype dtype,
                                   int ndim, const int64_t *shape,
                                   struct qp_tensor **out, size_t *nbytes,
                                   struct qp_error *err)
{
    *out = NULL;
    enum qp_status st = qp_shape_check(name, dtype, ndim, shape, nbytes, err);
    if (st)
        return st;
    struct qp_tensor *t = calloc(1, sizeof *t);
    if (!t || !(t->name = strdup(name))) {
        free(t);
        return qp_fail(err, QP_E_NOMEM, "tensor '%s': out of memory", name);
    }
    t->dtype = dtype;
    t->ndim = ndim;
    if (ndim > 0)
        memcpy(t->shape, shape, (size_t)ndim * sizeof *shape);
    *out = t;
    return QP_OK;
}

enum qp_status qp_tensor_new(const char *name, enum qp_dtype dtype, int ndim,
                             const int64_t *shape, struct qp_tensor **out,
                             struct qp_error *err)
{
    size_t nbytes;
    enum qp_status st = tensor_alloc(name, dtype, ndim, shape, out, &nbytes, err);
    if (st)
        return st;
    struct qp_tensor *t = *out;
    if ((st = qp_tensor_check_limit(t, nbytes, err))) {
        qp_tensor_free(t);
        *out = NULL;
        return st;
    }
    t->data = calloc(1, nbytes ? nbytes : 1);
    if (!t->data) {
        qp_tensor_free(t);
        *out = NULL;
        return qp_fail(err, QP_E_NOMEM, "tensor '%s': cannot allocate %zu bytes",
                       name, nbytes);
    }
    t->nbytes = nbytes;
    t->owns_data = true;
    return QP_OK;
}

enum qp_status qp_tensor_new_desc(const char *name, enum qp_dtype dtype,
                                  int ndim, const int64_t *shape,
                                  struct qp_tensor **out, struct qp_error *err)
{
    size_t nbytes;
    enum qp_status st = tensor_alloc(name, dtype, ndim, shape, out, &nbytes, err);
    if (!st)
        (*out)->nbytes = nbytes;
    return st;
}

enum qp_status qp_tensor_wrap(const char *name, enum qp_dtype dtype, int ndim,
                              const int64_t *shape, const void *data,
                              size_t nbytes, struct qp_mmap *map,
                              struct qp_tensor **out, struct qp_error *err)
{
    size_t need;
    enum qp_status st = tensor_alloc(name, dtype, ndim, shape, out, &need, err);
    if (st)
        return st;
    if (need != nbytes) {
        char s[128];
        qp_shape_str(ndim, shape, s, sizeof s);
        qp_tensor_free(*out);
        *out = NULL;
        return qp_fail(err, QP_E_FORMAT,
                       "tensor '%s': %s %s needs %zu bytes, data has %zu", name,
                       qp_dtype_name(dtype), s, need, nbytes);
    }
    /* mapped data is read whole by whoever asked for the tensor */
    if ((st = qp_tensor_check_limit(*out, nbytes, err))) {
        qp_tensor_free(*out);
        *out = NULL;
        return st;
    }
    (*out)->data = (void *)data;
    (*out)->nbytes = nbytes;
    (*out)->map = qp_mmap_ref(map);
    return QP_OK;
}

static void qparams_free(struct qp_qparams *q)
{
    if (q) {
        free(q->scale);
        free(q->zero_point);
        free(q);
    }
}

void qp_tensor_free(struct qp_tensor *t)
{
    if (!t)
        return;
    if (t->owns_data)
        free(t->data);
    qp_mmap_unref(t->map);
    qparams_free(t->qp);
    free(t->layout);
    free(t->name);
    free(t);
}

enum qp_status qp_tensor_clone(const struct qp_tensor *t,
                               struct qp_tensor **out, struct qp_error *err)
{
    enum qp_status st = t->data
        ? qp_tensor_new(t->name, t->dtype, t->ndim, t->shape, out, err)
        : qp_tensor_new_desc(t->name, t->dtype, t->ndim, t->shape, out, err);
    if (st)
        return st;
    if (t->data && t->nbytes)
        memcpy((*out)->data, t->data, t->nbytes);
    if (t->qp)
        st = qp_tensor_set_qparams(*out, t->qp->count, t->qp->scale,
                                   t->qp->zero_point, t->qp->axis,
                                   t->qp->block_size, err);
    if (!st && t->layout)
        st = qp_tensor_set_layout(*out, t->layout, err);
    if (st) {
        qp_tensor_free(*out);
        *out = NULL;
    }
    return st;
}

enum qp_status qp_tensor_rename(struct qp_tensor *t, const char *name,
                                struct qp_error *err)
{
    char *n = strdup(name);
    if (!n)
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    free(t->name);
    t->name = n;
    return QP_OK;
}

enum qp_status qp_tensor_set_qparams(struct qp_tensor *t, size_t count,
                                     const float *scale,
                                     const int32_t *zero_point, int axis,
                                     int64_t block_size, struct qp_error *err)
{
    size_t want = 1;
    if (axis < -1 || axis >= t->ndim || (axis == -1 && block_size != 0) ||
        block_size < 0)
        return qp_fail(err, QP_E_INVAL,
                       "tensor '%s': quantization axis %d / block %lld invalid "
                       "for %d dims", t->name, axis, (long long)block_size,
                       t->ndim);
    if (axis >= 0 && block_size == 0) {
        want = (size_t)t->shape[axis];
    } else if (axis >= 0) {
        for (int i = 0; i < t->ndim; i++) {
            size_t d = (size_t)t->shape[i];
            if (i == axis)
                d = (d + (size_t)block_size - 1) / (size_t)block_size;
            want *= d;
        }
    }
    if (count != want)
        return qp_fail(err, QP_E_SHAPE,
                       "tensor '%s': %zu scales given, axis %d block %lld needs %zu",
                       t->name, count, axis, (long long)block_size, want);
    struct qp_qparams *q = calloc(1, sizeof *q);
    if (!q)
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    q->count = count;
    q->axis = axis;
    q->block_size = block_size;
    q->scale = malloc(count * sizeof *q->scale + 1);
    if (zero_point)
        q->zero_point = malloc(count * sizeof *q->zero_point + 1);
    if (!q->scale || (zero_point && !q->zero_point)) {
        qparams_free(q);
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    }
    memcpy(q->scale, scale, count * sizeof *scale);
    if (zero_point)
        memcpy(q->zero_point, zero_point, count * sizeof *zero_point);
    qparams_free(t->qp);
    t->qp = q;
    return QP_OK;
}

enum qp_status qp_tensor_set_layout(struct qp_tensor *t, const char *layout,
                                    struct qp_error *err)
{
    char *l = NULL;
    if (layout && !(l = strdup(layout)))
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    free(t->layout);
    t->layout = l;
    return QP_OK;
}

int32_t qp_packed_get(enum qp_dtype dtype, const void *data, size_t i)
{
    const struct qp_dtype_traits *tr = qp_dtype_traits(dtype);
    unsigned b = tr->bits;
    size_t bit = i * b;
    const unsigned char *p = (const unsigned char *)data + bit / 8;
    unsigned sh = (unsigned)(bit % 8);
    uint32_t w = p[0];
    if (sh + b > 8)
        w |= (uint32_t)p[1] << 8;
    uint32_t v = (w >> sh) & ((1u << b) - 1);
    if (tr->is_signed && (v >> (b - 1)))
        return (int32_t)v - (int32_t)(1u << b);
    return (int32_t)v;
}

void qp_packed_set(enum qp_dtype dtype, void *data, size_t i, int32_t v)
{
    unsigned b = qp_dtype_traits(dtype)->bits;
    size_t bit = i * b;
    unsigned char *p = (unsigned char *)data + bit / 8;
    unsigned sh = (unsigned)(bit % 8);
    uint32_t mask = ((1u << b) - 1) << sh;
    uint32_t bits = ((uint32_t)v << sh) & mask;
    p[0] = (unsigned char)((p[0] & ~mask) | bits);
    if (sh + b > 8)
        p[1] = (unsigned char)((p[1] & ~(mask >> 8)) | (bits >> 8));
}

/* Raw element i as a double (exact for every integer type up to 2^53 and
 * for every float type). */
static inline double raw_at(const struct qp_tensor *t, size_t i)
{
    const unsigned char *p = t->data;
    switch (t->dtype) {
    case QP_DTYPE_F32: return ((const float *)p)[i];
    case QP_DTYPE_F16: return qp_f16_to_f32(((const uint16_t *)p)[i]);
    case QP_DTYPE_BF16: return qp_bf16_to_f32(((const uint16_t *)p)[i]);
    case QP_DTYPE_F64: return ((const double *)p)[i];
    case QP_DTYPE_I8: return ((const int8_t *)p)[i];
    case QP_DTYPE_U8: return p[i];
    case QP_DTYPE_I16: return ((const int16_t *)p)[i];
    case QP_DTYPE_U16: return ((const uint16_t *)p)[i];
    case QP_DTYPE_I32: return ((const int32_t *)p)[i];
    case QP_DTYPE_U32: return ((const uint32_t *)p)[i];
    case QP_DTYPE_I64: return (double)((const int64_t *)p)[i];
    case QP_DTYPE_U64: return (double)((const uint64_t *)p)[i];
    case QP_DTYPE_I4:
    case QP_DTYPE_U4:
    case QP_DTYPE_I2:
    case QP_DTYPE_U2:
    case QP_DTYPE_I3:
    case QP_DTYPE_U3: return qp_packed_get(t->dtype, p, i);
    case QP_DTYPE_BOOL: return p[i] != 0;
    case QP_DTYPE_F8E4M3: return qp_f8e4m3_to_f32(p[i]);
    case QP_DTYPE_F8E5M2: return qp_f8e5m2_to_f32(p[i]);
    case QP_DTYPE_COUNT: break;
    }
    return 0;
}

/* Walks the scale index of consecutive elements without a division per
 * element: element i = (outer, a, in) over (..., shape[axis], inner). */
struct scale_walk {
    size_t inner, dim, nblk, block, outer, a, in;
};

static void walk_init(struct scale_walk *w, const struct qp_tensor *t,
                      size_t start)
{
    const struct qp_qparams *q = t->qp;
    w->inner = 1;
    for (int d = q->axis + 1; d < t->ndim; d++)
        w->inner *= (size_t)t->shape[d];
    w->dim = (size_t)t->shape[q->axis];
    w->block = q->block_size ? (size_t)q->block_size : 0;
    w->nblk = w->block ? (w->dim + w->block - 1) / w->block : w->dim;
    size_t row = w->inner * w->dim;
    w->outer = row ? start / row : 0;
    size_t r = row ? start % row : 0;
    w->a = w->inner ? r / w->inner : 0;
    w->in = w->inner ? r % w->inner : 0;
}

static inline size_t walk_index(const struct scale_walk *w)
{
    if (!w->block)
        return w->a;
    return (w->outer * w->nblk + w->a / w->block) * w->inner + w->in;
}


/* out[k] = (float)(q[i + k] - z) * s for len elements sharing one scale.
 * Integer values are widened exactly and rounded to float once, as the
 * double expression of raw_at would; s == 1, z == 0 reads plain values. */
#define RUN_INT(T)                                                            \
    do {                                                                      \
        const T *p_ = (const T *)t->data + i;                                 \
        for (size_t k = 0; k < len; k++)                                      \
            out[k] = (float)((int64_t)p_[k] - z) * s;                         \
    } while (0)

static void read_run(const struct qp_tensor *t, size_t i, size_t len, float s,
                     int64_t z, float *out)
{
    switch (t->dtype) {
    case QP_DTYPE_I8: RUN_INT(int8_t); return;
    case QP_DTYPE_U8: RUN_INT(uint8_t); return;
    case QP_DTYPE_I16: RUN_INT(int16_t); return;
    case QP_DTYPE_U16: RUN_INT(uint16_t); return;
    case QP_DTYPE_I32: RUN_INT(int32_t); return;
    case QP_DTYPE_U32: RUN_INT(uint32_t); return;
    case QP_DTYPE_F32:
        if (s == 1.0f && z == 0) {
            memcpy(out, (const float *)t->data + i, len * sizeof *out);
            return;
        }
        break;
    case QP_DTYPE_F16: {
        const uint16_t *p = (const uint16_t *)t->data + i;
        for (size_t k = 0; k < len; k++)
            out[k] = qp_f16_to_f32(p[k]);
        return;
    }
    case QP_DTYPE_BF16: {
        const uint16_t *p = (const uint16_t *)t->data + i;
        for (size_t k = 0; k < len; k++)
            out[k] = qp_bf16_to_f32(p[k]);
        return;
    }
    default:
        break;
    }
    /* the rest (64-bit integers, packed, f64, f8, bool) element by element */
    for (size_t k = 0; k < len; k++)
        out[k] = (float)(raw_at(t, i + k) - (double)z) * s;
}
#undef RUN_INT

/* Advances the walk by len elements. */
static void walk_skip(struct scale_walk *w, size_t len)
{
    w->in += len;
    if (w->in >= w->inner) {
        w->a += w->in / w->inner;
        w->in %= w->inner;
        if (w->a >= w->dim) {
            w->outer += w->a / w->dim;
            w->a %= w->dim;
        }
    }
}

void qp_tensor_read_f32(const struct qp_tensor *t, size_t start, size_t n,
                        float *out)
{
    const struct qp_qparams *q = t->qp;
    if (!q || !qp_dtype_is_int(t->dtype)) {
        read_run(t, start, n, 1.0f, 0, out);
        return;
    }
    if (q->axis < 0) {
        read_run(t, start, n, q->scale[0], q->zero_point ? q->zero_point[0] : 0,
                 out);
        return;
    }
    /* runs of elements that share a scale: a whole inner block per axis
     * index when per-axis; up to the end of the group when blocked along
     * the innermost varying axis; single elements otherwise */
    struct scale_walk w;
    walk_init(&w, t, start);
    for (size_t k = 0; k < n;) {
        size_t j = walk_index(&w), len = 1;
        if (!w.block)
            len = w.inner - w.in;
        else if (w.inner == 1)
            len = (w.block - w.a % w.block < w.dim - w.a)
                      ? w.block - w.a % w.block : w.dim - w.a;
        if (len > n - k)
            len = n - k;
        read_run(t, start + k, len, q->scale[j],
                 q->zero_point ? q->zero_point[j] : 0, out + k);
        k += len;
        walk_skip(&w, len);
    }
}

void qp_shape_str(int ndim, const int64_t *shape, char *buf, size_t size)
{
    size_t len = 0;
    if (size == 0)
        return;
    buf[0] = '\0';
    len += (size_t)snprintf(buf, size, "[");
    for (int i = 0; i < ndim && len < size; i++)
        len += (size_t)snprintf(buf + len, size - len, "%s%lld", i ? "," : "",
                                (long long)shape[i]);
    if (len < size)
        snprintf(buf + len, size - len, "]");
}

bool qp_shape_equal(int ndim_a, const int64_t *a, int ndim_b, const int64_t *b)
{
    if (ndim_a != ndim_b)
        return false;
    for (int i = 0; i < ndim_a; i++)
        if (a[i] != b[i])
            return false;
    return true;
}

enum qp_status qp_tensor_permute(const struct qp_tensor *t, const int *perm,
                                 struct qp_tensor **out, struct qp_error *err)
{
    int64_t shape[QP_MAX_DIMS];
    int seen = 0;
    for (int i = 0; i < t->ndim; i++) {
        if (perm[i] < 0 || perm[i] >= t->ndim || (seen & (1 << perm[i])))
            return qp_fail(err, QP_E_INVAL, "tensor '%s': invalid permutation",
                           t->name);
        seen |= 1 << perm[i];
        shape[i] = t->shape[perm[i]];
    }
    if (qp_dtype_traits(t->dtype)->bits < 8)
        return qp_fail(err, QP_E_UNSUPPORTED,
                       "tensor '%s': cannot permute packed %s data", t->name,
                       qp_dtype_name(t->dtype));
    enum qp_status st = qp_tensor_new(t->name, t->dtype, t->ndim, shape, out, err);
    if (st)
        return st;
    size_t es = qp_dtype_traits(t->dtype)->bits / 8;
    size_t n = qp_tensor_numel(t);
    /* source strides, gathered in output order */
    size_t sstride[QP_MAX_DIMS], acc = 1;
    for (int d = t->ndim - 1; d >= 0; d--) {
        sstride[d] = acc;
        acc *= (size_t)t->shape[d];
    }
    size_t ps[QP_MAX_DIMS];
    for (int i = 0; i < t->ndim; i++)
        ps[i] = sstride[perm[i]];
    int64_t idx[QP_MAX_DIMS] = {0};
    size_t src = 0;
    const unsigned char *s = t->data;
    unsigned char *d = (*out)->data;
    for (size_t k = 0; k < n; k++) {
        memcpy(d + k * es, s + src * es, es);
        for (int i = t->ndim - 1; i >= 0; i--) {
            src += ps[i];
            if (++idx[i] < shape[i])
                break;
            src -= ps[i] * (size_t)shape[i];
            idx[i] = 0;
        }
    }
    if (t->qp) {
        const struct qp_qparams *q = t->qp;
        int axis = q->axis;
        for (int i = 0; i < t->ndim && axis >= 0; i++)
            if (perm[i] == q->axis)
                axis = i;
        if (q->block_size && t->ndim > 1)
            st = qp_fail(err, QP_E_UNSUPPORTED,
                         "tensor '%s': cannot permute block-quantized data",
                         t->name);
        else
            st = qp_tensor_set_qparams(*out, q->count, q->scale, q->zero_point,
                                       axis, q->block_size, err);
        if (st) {
            qp_tensor_free(*out);
            *out = NULL;
        }
    }
    return st;
}
