/* formats/dump-info.c: per-tensor facts a container lacks (dump-info.h). */
#include "formats/dump-info.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/json.h"

#define INFO_VERSION 1

void qp_dump_infos_release(struct qp_dump_infos *s)
{
    for (size_t i = 0; i < s->n; i++) {
        free(s->v[i].name);
        free(s->v[i].layout);
    }
    free(s->v);
    memset(s, 0, sizeof *s);
}

static struct qp_dump_info *infos_push(struct qp_dump_infos *s,
                                       const char *name, struct qp_error *err)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 16;
        struct qp_dump_info *v = realloc(s->v, cap * sizeof *v);
        if (!v) {
            qp_fail(err, QP_E_NOMEM, "out of memory");
            return NULL;
        }
        s->v = v;
        s->cap = cap;
    }
    struct qp_dump_info *i = &s->v[s->n];
    memset(i, 0, sizeof *i);
    if (!(i->name = strdup(name))) {
        qp_fail(err, QP_E_NOMEM, "out of memory");
        return NULL;
    }
    s->n++;
    s->sorted = false;
    return i;
}

enum qp_status qp_dump_infos_add(struct qp_dump_infos *s,
                                 const struct qp_tensor *t, bool as_bytes,
                                 struct qp_error *err)
{
    bool quant = t->qp && qp_dtype_is_int(t->dtype);
    if (!as_bytes && !quant && !t->layout)
        return QP_OK;
    struct qp_dump_info *i = infos_push(s, t->name, err);
    if (!i)
        return QP_E_NOMEM;
    i->bytes = as_bytes;
    i->dtype = t->dtype;
    i->ndim = t->ndim;
    memcpy(i->shape, t->shape, sizeof i->shape);
    i->quant = quant;
    if (quant) {
        i->axis = t->qp->axis;
        i->block_size = t->qp->block_size;
    }
    if (t->layout && !(i->layout = strdup(t->layout)))
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    return QP_OK;
}

static bool info_to_json(const struct qp_dump_info *i, struct qp_json *obj)
{
    struct qp_json *o = qp_json_add_object(obj, i->name);
    if (!o)
        return false;
    if (i->bytes) {
        struct qp_json *sh;
        if (!qp_json_add_str(o, "dtype", qp_dtype_name(i->dtype)) ||
            !(sh = qp_json_add_array(o, "shape")))
            return false;
        for (int k = 0; k < i->ndim; k++)
            if (!qp_json_add_num(sh, NULL, (double)i->shape[k]))
                return false;
    }
    if (i->quant && (!qp_json_add_num(o, "axis", i->axis) ||
                     !qp_json_add_num(o, "block_size", (double)i->block_size)))
        return false;
    return !i->layout || qp_json_add_str(o, "layout", i->layout);
}

char *qp_dump_infos_print(const struct qp_dump_infos *s,
                          const struct qp_dump_meta *meta)
{
    struct qp_json *root = qp_json_new_object();
    bool ok = root && qp_json_add_num(root, "version", INFO_VERSION);
    if (ok && meta && meta->count) {
        struct qp_json *m = qp_json_add_object(root, "metadata");
        ok = m && qp_dump_meta_to_json(meta, m);
    }
    struct qp_json *tens = ok ? qp_json_add_object(root, "tensors") : NULL;
    ok = tens != NULL;
    for (size_t k = 0; ok && k < s->n; k++)
        ok = info_to_json(&s->v[k], tens);
    char *text = ok ? qp_json_print(root, false) : NULL;
    qp_json_free(root);
    return text;
}

bool qp_dump_json_int(const struct qp_json *n, int64_t lo, int64_t hi,
                      int64_t *out)
{
    double v;
    if (!qp_json_num(n, &v) || !(v >= -9007199254740992.0) ||
        !(v <= 9007199254740992.0) || v != floor(v))
        return false;
    int64_t i = (int64_t)v;
    if (i < lo || i > hi)
        return false;
    *out = i;
    return true;
}

enum qp_status qp_dump_json_shape(const struct qp_json *n, const char *what,
                                  int *ndim, int64_t *shape,
                                  struct qp_error *err)
{
    if (qp_json_type(n) != QP_JSON_ARRAY)
        return qp_fail(err, QP_E_FORMAT, "%s is a %s, expected an array of dims",
                       what, qp_json_type_name(qp_json_type(n)));
    size_t k = qp_json_size(n);
    if (k > QP_MAX_DIMS)
        return qp_fail(err, QP_E_UNSUPPORTED, "%s has %zu dims, at most %d are "
                       "supported", what, k, QP_MAX_DIMS);
    for (size_t i = 0; i < k; i++)
        if (!qp_dump_json_int(qp_json_at(n, i), 0, INT64_MAX, &shape[i]))
            return qp_fail(err, QP_E_FORMAT, "%s[%zu] is not a non-negative "
                           "integer", what, i);
    *ndim = (int)k;
    return QP_OK;
}

static enum qp_status parse_one(const struct qp_json *o, const char *what,
                                struct qp_dump_info *i, struct qp_error *err)
{
    if (qp_json_type(o) != QP_JSON_OBJECT)
        return qp_fail(err, QP_E_FORMAT, "%s: tensor '%s' is described by a %s, "
                       "expected an object", what, i->name,
                       qp_json_type_name(qp_json_type(o)));
    const struct qp_json *dt = qp_json_get(o, "dtype"), *sh = qp_json_get(o, "shape"),
                         *ax = qp_json_get(o, "axis"),
                         *bs = qp_json_get(o, "block_size"),
                         *ly = qp_json_get(o, "layout");
    char field[600];
    snprintf(field, sizeof field, "%s: tensor '%s': shape", what, i->name);
    if (dt || sh) {
        const char *name;
        if (!dt || !sh)
            return qp_fail(err, QP_E_FORMAT, "%s: tensor '%s' needs both dtype "
                           "and shape", what, i->name);
        if (!qp_json_str(dt, &name) || !qp_dtype_from_name(name, &i->dtype))
            return qp_fail(err, QP_E_FORMAT, "%s: tensor '%s': unknown dtype",
                           what, i->name);
        enum qp_status st = qp_dump_json_shape(sh, field, &i->ndim, i->shape, err);
        if (st)
            return st;
        i->bytes = true;
    }
    int64_t v;
    if (ax) {
        if (!qp_dump_json_int(ax, -1, QP_MAX_DIMS - 1, &v))
            return qp_fail(err, QP_E_FORMAT, "%s: tensor '%s': axis is not an "
                           "integer in [-1, %d]", what, i->name, QP_MAX_DIMS - 1);
        i->axis = (int)v;
        i->quant = true;
    }
    if (bs) {
        if (!ax || !qp_dump_json_int(bs, 0, INT64_MAX, &v))
            return qp_fail(err, QP_E_FORMAT, "%s: tensor '%s': block_size must be "
                           "a non-negative integer beside an axis", what, i->name);
        i->block_size = v;
    }
    if (ly) {
        const char *l;
        if (!qp_json_str(ly, &l))
            return qp_fail(err, QP_E_FORMAT, "%s: tensor '%s': layout is not a "
                           "string", what, i->name);
        if (!(i->layout = strdup(l)))
            return qp_fail(err, QP_E_NOMEM, "out of memory");
    }
    return QP_OK;
}

static int cmp_info(const void *a, const void *b)
{
    return strcmp(((const struct qp_dump_info *)a)->name,
                  ((const struct qp_dump_info *)b)->name);
}

enum qp_status qp_dump_infos_parse(const char *text, const char *what,
                                   struct qp_dump_infos *s,
                                   struct qp_dump_meta *meta,
                                   struct qp_error *err)
{
    struct qp_json *root;
    enum qp_status st = qp_json_parse(text, what, &root, err);
    if (st)
        return st;
    const struct qp_json *ver = qp_json_get(root, "version"),
                         *tens = qp_json_get(root, "tensors"),
                         *md = qp_json_get(root, "metadata");
    int64_t v;
    if (qp_json_type(root) != QP_JSON_OBJECT)
        st = qp_fail(err, QP_E_FORMAT, "%s: not a JSON object", what);
    else if (ver && (!qp_dump_json_int(ver, 0, INT64_MAX, &v) || v != INFO_VERSION))
        st = qp_fail(err, QP_E_UNSUPPORTED, "%s: unknown version (qprobe reads "
                     "version %d)", what, INFO_VERSION);
    else if (tens && qp_json_type(tens) != QP_JSON_OBJECT)
        st = qp_fail(err, QP_E_FORMAT, "%s: tensors is a %s, expected an object",
                     what, qp_json_type_name(qp_json_type(tens)));
    else if (md && meta)
        st = qp_dump_meta_from_json(meta, md, what, err);
    size_t first = s->n;
    for (const struct qp_json *o = qp_json_first(tens); o && !st; o = qp_json_next(o)) {
        struct qp_dump_info *i = infos_push(s, qp_json_key(o), err);
        st = i ? parse_one(o, what, i, err) : QP_E_NOMEM;
    }
    /* names must be unique within the document */
    if (!st && s->n - first > 1) {
        qsort(s->v + first, s->n - first, sizeof *s->v, cmp_info);
        for (size_t k = first + 1; k < s->n && !st; k++)
            if (!strcmp(s->v[k - 1].name, s->v[k].name))
                st = qp_fail(err, QP_E_FORMAT, "%s: tensor '%s' is described "
                             "twice", what, s->v[k].name);
    }
    qp_json_free(root);
    return st;
}

const struct qp_dump_info *qp_dump_infos_find(struct qp_dump_infos *s,
                                              const char *name)
{
    if (!s->n)
        return NULL;
    if (!s->sorted) {
        qsort(s->v, s->n, sizeof *s->v, cmp_info);
        s->sorted = true;
    }
    struct qp_dump_info key = {.name = (char *)name};
    return bsearch(&key, s->v, s->n, sizeof *s->v, cmp_info);
}

enum qp_status qp_dump_bytes_view(const struct qp_tensor *t,
                                  struct qp_tensor **out, struct qp_error *err)
{
    int64_t n = (int64_t)t->nbytes;
    return qp_tensor_wrap(t->name, QP_DTYPE_U8, 1, &n, t->data, t->nbytes, NULL,
                          out, err);
}

enum qp_status qp_dump_info_retype(struct qp_tensor *t,
                                   const struct qp_dump_info *info,
                                   const char *what, struct qp_error *err)
{
    size_t need;
    char s[128];
    enum qp_status st = qp_shape_check(what, info->dtype, info->ndim,
                                       info->shape, &need, err);
    if (st)
        return st;
    if (t->dtype != QP_DTYPE_U8 || t->ndim != 1 || t->nbytes != need) {
        qp_shape_str(info->ndim, info->shape, s, sizeof s);
        return qp_fail(err, QP_E_FORMAT, "%s: tensor '%s' should hold the %zu "
                       "bytes of %s %s as a 1-D u8 tensor, it is %s of %zu bytes",
                       what, t->name, need, qp_dtype_name(info->dtype), s,
                       qp_dtype_name(t->dtype), t->nbytes);
    }
    t->dtype = info->dtype;
    t->ndim = info->ndim;
    memcpy(t->shape, info->shape, sizeof t->shape);
    return QP_OK;
}

enum qp_status qp_dump_infos_apply(struct qp_dump *d, struct qp_dump_infos *s,
                                   struct qp_error *err)
{
    if (!s->n)
        return QP_OK;
    bool *used = calloc(s->n, sizeof *used);
    if (!used)
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    enum qp_status st = QP_OK;
    for (size_t k = 0; k < d->count && !st; k++) {
        struct qp_tensor *e = d->entries[k];
        const struct qp_dump_info *i = qp_dump_infos_find(s, e->name);
        if (!i)
            continue;
        used[i - s->v] = true;
        if (i->quant && !e->qp)
            st = qp_fail(err, QP_E_FORMAT, "'%s': tensor '%s' has quantization "
                         "metadata but no '%s.scale' tensor", d->path, i->name,
                         i->name);
        else if (i->quant &&
                 (st = qp_tensor_set_qparams(e, e->qp->count, e->qp->scale,
                                             e->qp->zero_point, i->axis,
                                             i->block_size, err)))
            qp_error_prefix(err, "'%s': ", d->path);
        if (!st && i->layout)
            st = qp_tensor_set_layout(e, i->layout, err);
    }
    for (size_t k = 0; k < s->n && !st; k++)
        if (!used[k])
            st = qp_fail(err, QP_E_FORMAT, "'%s': metadata describes tensor "
                         "'%s', which is not in the file", d->path, s->v[k].name);
    free(used);
    return st;
}

enum qp_status qp_dump_info_companions(const struct qp_tensor *t,
                                       struct qp_tensor **scale,
                                       struct qp_tensor **zp,
                                       struct qp_error *err)
{
    enum qp_status st = qp_dump_companions(t, scale, zp, err);
    if (st != QP_E_UNSUPPORTED)
        return st;
    const struct qp_qparams *q = t->qp;
    int64_t shape[QP_MAX_DIMS];
    for (int i = 0; i < t->ndim; i++) {
        shape[i] = q->block_size ? t->shape[i] : 1;
        if (i == q->axis)
            shape[i] = q->block_size
                ? (t->shape[i] + q->block_size - 1) / q->block_size : t->shape[i];
    }
    return qp_dump_companions_shaped(t, t->ndim, shape, scale, zp, err);
}

enum qp_status qp_dump_info_write(struct qp_dump_infos *s,
                                  const struct qp_tensor *t, bool as_bytes,
                                  qp_dump_store_fn write, void *ctx,
                                  struct qp_error *err)
{
    struct qp_tensor *view = NULL, *sc = NULL, *zp = NULL;
    enum qp_status st = as_bytes ? qp_dump_bytes_view(t, &view, err) : QP_OK;
    if (!st)
        st = qp_dump_infos_add(s, t, as_bytes, err);
    if (!st)
        st = write(ctx, view ? view : t, err);
    if (!st && t->qp && qp_dtype_is_int(t->dtype)) {
        st = qp_dump_info_companions(t, &sc, &zp, err);
        if (!st)
            st = write(ctx, sc, err);
        if (!st && zp)
            st = write(ctx, zp, err);
    }
    qp_tensor_free(view);
    qp_tensor_free(sc);
    qp_tensor_free(zp);
    return st;
}
