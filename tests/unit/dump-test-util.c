/* tests/unit/dump-test-util.c: see dump-test-util.h. */
#include "tests/unit/dump-test-util.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>

struct qp_tensor *dt_pattern_tensor(const char *name, enum qp_dtype dtype,
                                    int ndim, const int64_t *shape,
                                    unsigned seed)
{
    struct qp_tensor *t;
    if (qp_tensor_new(name, dtype, ndim, shape, &t, NULL))
        abort();
    const struct qp_dtype_traits *tr = qp_dtype_traits(dtype);
    if (qp_dtype_is_packed(dtype)) {
        size_t n = qp_tensor_numel(t);
        int64_t span = tr->max - tr->min + 1;
        for (size_t i = 0; i < n; i++)
            qp_packed_set(dtype, t->data, i,
                          (int32_t)(tr->min + (int64_t)((i * 5 + seed) % (size_t)span)));
        return t;
    }
    unsigned char *p = t->data;
    for (size_t i = 0; i < t->nbytes; i++)
        p[i] = (unsigned char)(i * 37 + seed * 11 + 5);
    if (dtype == QP_DTYPE_BOOL)
        for (size_t i = 0; i < t->nbytes; i++)
            p[i] &= 1;
    return t;
}

bool dt_write_dump(const char *path, enum qp_dump_format format,
                   struct qp_tensor *const *t, size_t n, const char *const *meta,
                   struct qp_error *err)
{
    struct qp_dump_writer *w;
    if (qp_dump_writer_open(path, format, &w, err))
        return false;
    for (size_t i = 0; meta && meta[i]; i += 2)
        if (qp_dump_writer_set_meta(w, meta[i], meta[i + 1], err)) {
            qp_dump_writer_abort(w);
            return false;
        }
    for (size_t i = 0; i < n; i++)
        if (qp_dump_writer_add(w, t[i], err)) {
            qp_dump_writer_abort(w);
            return false;
        }
    return qp_dump_writer_commit(w, err) == QP_OK;
}

/* Integer value of element i (any integer dtype). */
static int64_t int_at(const struct qp_tensor *t, size_t i)
{
    const unsigned char *p = t->data;
    switch (t->dtype) {
    case QP_DTYPE_I8: return ((const int8_t *)p)[i];
    case QP_DTYPE_U8: return p[i];
    case QP_DTYPE_I16: return ((const int16_t *)p)[i];
    case QP_DTYPE_U16: return ((const uint16_t *)p)[i];
    case QP_DTYPE_I32: return ((const int32_t *)p)[i];
    case QP_DTYPE_U32: return ((const uint32_t *)p)[i];
    default: return qp_packed_get(t->dtype, p, i);
    }
}

/* The scale index of element i, from its coordinates. */
static size_t scale_index(const struct qp_tensor *t, size_t i)
{
    const struct qp_qparams *q = t->qp;
    if (q->axis < 0)
        return 0;
    int64_t coord[QP_MAX_DIMS];
    for (int d = t->ndim - 1; d >= 0; d--) {
        coord[d] = (int64_t)(i % (size_t)t->shape[d]);
        i /= (size_t)t->shape[d];
    }
    if (!q->block_size)
        return (size_t)coord[q->axis];
    size_t j = 0;
    for (int d = 0; d < t->ndim; d++) {
        int64_t dim = t->shape[d], c = coord[d];
        if (d == q->axis) {
            dim = (dim + q->block_size - 1) / q->block_size;
            c /= q->block_size;
        }
        j = j * (size_t)dim + (size_t)c;
    }
    return j;
}

static void check_dequant(struct qp_test_ctx *ctx, const struct qp_tensor *t)
{
    size_t n = qp_tensor_numel(t);
    float *got = malloc(n * sizeof *got + 1);
    qp_tensor_read_f32(t, 0, n, got);
    for (size_t i = 0; i < n; i++) {
        size_t j = scale_index(t, i);
        double z = t->qp->zero_point ? t->qp->zero_point[j] : 0;
        double want = (double)t->qp->scale[j] * ((double)int_at(t, i) - z);
        CHECK_NEAR(got[i], want, 1e-6 * fabs(want));
    }
    free(got);
}

static void check_same(struct qp_test_ctx *ctx, const struct qp_tensor *a,
                       const struct qp_tensor *b)
{
    CHECK_STR(a->name, b->name);
    CHECK_INT(a->dtype, b->dtype);
    CHECK(qp_shape_equal(a->ndim, a->shape, b->ndim, b->shape));
    CHECK_STR(a->layout ? a->layout : "-", b->layout ? b->layout : "-");
    CHECK((a->qp == NULL) == (b->qp == NULL));
    if (a->qp && b->qp) {
        CHECK_INT(a->qp->axis, b->qp->axis);
        CHECK_INT(a->qp->block_size, b->qp->block_size);
        CHECK_INT(a->qp->count, b->qp->count);
        CHECK(a->qp->count == b->qp->count &&
              !memcmp(a->qp->scale, b->qp->scale, a->qp->count * sizeof(float)));
        CHECK((a->qp->zero_point == NULL) == (b->qp->zero_point == NULL));
        if (a->qp->zero_point && b->qp->zero_point && a->qp->count == b->qp->count)
            CHECK(!memcmp(a->qp->zero_point, b->qp->zero_point,
                          a->qp->count * sizeof(int32_t)));
    }
}

void dt_check_dump(struct qp_test_ctx *ctx, const char *path,
                   struct qp_tensor *const *src, size_t n)
{
    struct qp_error err;
    struct qp_dump *d;
    REQUIRE_OK(qp_dump_open(path, QP_DUMP_AUTO, &d, &err), &err);
    CHECK_INT(qp_dump_count(d), n);
    for (size_t i = 0; i < n && i < qp_dump_count(d); i++) {
        const struct qp_tensor *e = qp_dump_entry(d, i);
        CHECK(e->data == NULL);
        check_same(ctx, e, src[i]);
        struct qp_tensor *t;
        enum qp_status st = qp_dump_load(d, i, &t, &err);
        CHECK_OK(st, &err);
        if (st)
            continue;
        check_same(ctx, t, src[i]);
        if (t->nbytes != src[i]->nbytes ||
            memcmp(t->data, src[i]->data, t->nbytes))
            qp_test_failf(ctx, __FILE__, __LINE__, "'%s': bytes differ",
                          src[i]->name);
        if (t->qp)
            check_dequant(ctx, t);
        qp_tensor_free(t);
    }
    qp_dump_close(d);
}

static struct qp_tensor *quantized(const char *name, enum qp_dtype dtype,
                                   int ndim, const int64_t *shape, int axis,
                                   int64_t block, bool zp, unsigned seed)
{
    struct qp_tensor *t = dt_pattern_tensor(name, dtype, ndim, shape, seed);
    size_t count = 1;
    for (int d = 0; axis >= 0 && d < ndim; d++)
        count *= d == axis ? (size_t)(block ? (shape[d] + block - 1) / block
                                            : shape[d])
                           : block ? (size_t)shape[d] : 1;
    float sc[64];
    int32_t z[64];
    for (size_t i = 0; i < count; i++) {
        sc[i] = 0.03125f * (float)(i + 1) + 0.001f * (float)seed;
        z[i] = (int32_t)(i % 3) - 1;
    }
    if (qp_tensor_set_qparams(t, count, sc, zp ? z : NULL, axis, block, NULL))
        abort();
    return t;
}

size_t dt_quantized_set(struct qp_tensor **out)
{
    int64_t s23[2] = {2, 3}, s44[2] = {4, 4}, s46[2] = {4, 6}, s38[2] = {3, 8},
            s5[1] = {5};
    out[0] = quantized("per_tensor", QP_DTYPE_I8, 2, s23, -1, 0, true, 1);
    out[1] = quantized("per_axis", QP_DTYPE_U8, 2, s44, 1, 0, true, 2);
    /* 6 in blocks of 4: 2 blocks, which the scale shape alone reads as
     * blocks of 3 */
    out[2] = quantized("blocked", QP_DTYPE_I8, 2, s46, 1, 4, false, 3);
    out[3] = quantized("w4", QP_DTYPE_I4, 2, s38, 1, 4, true, 4);
    out[4] = quantized("w3", QP_DTYPE_U3, 1, s5, 0, 0, true, 5);
    out[5] = quantized("w2", QP_DTYPE_I2, 2, s23, -1, 0, false, 6);
    if (qp_tensor_set_layout(out[5], "NC", NULL))
        abort();
    return 6;
}

size_t dt_every_dtype_set(struct qp_tensor **out, const char *odd_name)
{
    size_t n = 0;
    int64_t s3[3] = {2, 3, 5}, s8[8] = {2, 1, 2, 1, 2, 1, 2, 1}, s0[3] = {3, 0, 2};
    for (int d = 0; d < QP_DTYPE_COUNT; d++) {
        char name[32];
        snprintf(name, sizeof name, "t.%s", qp_dtype_name((enum qp_dtype)d));
        out[n++] = dt_pattern_tensor(name, (enum qp_dtype)d, 3, s3, (unsigned)d);
    }
    out[n++] = dt_pattern_tensor(odd_name, QP_DTYPE_F32, 8, s8, 7);
    out[n++] = dt_pattern_tensor("scalar", QP_DTYPE_F64, 0, NULL, 9);
    out[n++] = dt_pattern_tensor("empty", QP_DTYPE_I16, 3, s0, 1);
    return n;
}

void dt_free_all(struct qp_tensor **t, size_t n)
{
    for (size_t i = 0; i < n; i++)
        qp_tensor_free(t[i]);
}

int dt_count_files(const char *dir)
{
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *de;
    while (d && (de = readdir(d)))
        n += strcmp(de->d_name, ".") && strcmp(de->d_name, "..");
    if (d)
        closedir(d);
    return n;
}
