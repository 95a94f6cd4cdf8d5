/* formats/dump-meta.c: string key/value metadata of dumps (formats/dump.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "formats/dump.h"
#include "formats/json.h"

/* Adds a key known to be absent. */
static enum qp_status meta_append(struct qp_dump_meta *m, const char *key,
                                  const char *value, struct qp_error *err)
{
    if (m->count == m->cap) {
        size_t cap = m->cap ? 2 * m->cap : 8;
        char **k = realloc(m->keys, cap * sizeof *k);
        if (k)
            m->keys = k;
        char **v = k ? realloc(m->values, cap * sizeof *v) : NULL;
        if (!v)
            return qp_fail(err, QP_E_NOMEM, "out of memory");
        m->values = v;
        m->cap = cap;
    }
    char *k = strdup(key), *v = strdup(value);
    if (!k || !v) {
        free(k);
        free(v);
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    }
    m->keys[m->count] = k;
    m->values[m->count++] = v;
    return QP_OK;
}

enum qp_status qp_dump_meta_set(struct qp_dump_meta *m, const char *key,
                                const char *value, struct qp_error *err)
{
    for (size_t i = 0; i < m->count; i++)
        if (!strcmp(m->keys[i], key)) {
            char *v = strdup(value);
            if (!v)
                return qp_fail(err, QP_E_NOMEM, "out of memory");
            free(m->values[i]);
            m->values[i] = v;
            return QP_OK;
        }
    return meta_append(m, key, value, err);
}

const char *qp_dump_meta_get(const struct qp_dump_meta *m, const char *key)
{
    for (size_t i = 0; i < m->count; i++)
        if (!strcmp(m->keys[i], key))
            return m->values[i];
    return NULL;
}

void qp_dump_meta_release(struct qp_dump_meta *m)
{
    for (size_t i = 0; i < m->count; i++) {
        free(m->keys[i]);
        free(m->values[i]);
    }
    free(m->keys);
    free(m->values);
    memset(m, 0, sizeof *m);
}

const char *qp_dump_meta(const struct qp_dump *d, const char *key)
{
    return qp_dump_meta_get(&d->meta, key);
}

void qp_dump_meta_at(const struct qp_dump *d, size_t i, const char **key,
                     const char **value)
{
    *key = d->meta.keys[i];
    *value = d->meta.values[i];
}

enum qp_status qp_dump_writer_set_meta(struct qp_dump_writer *w,
                                       const char *key, const char *value,
                                       struct qp_error *err)
{
    if (!*key || !strcmp(key, QP_DUMP_META_RESERVED))
        return qp_fail(err, QP_E_INVAL, "'%s': metadata key '%s' is %s",
                       w->path, key, *key ? "reserved" : "empty");
    return qp_dump_meta_set(&w->meta, key, value, err);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

enum qp_status qp_dump_meta_from_json(struct qp_dump_meta *m,
                                      const struct qp_json *obj,
                                      const char *what, struct qp_error *err)
{
    if (qp_json_type(obj) != QP_JSON_OBJECT)
        return qp_fail(err, QP_E_FORMAT, "%s: metadata is a %s, expected an "
                       "object of strings", what,
                       qp_json_type_name(qp_json_type(obj)));
    size_t n = qp_json_size(obj);
    const char **keys = malloc(n * sizeof *keys + 1);
    if (!keys)
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    enum qp_status st = QP_OK;
    size_t i = 0;
    for (const struct qp_json *e = qp_json_first(obj); e && !st; e = qp_json_next(e)) {
        const char *v;
        keys[i++] = qp_json_key(e);
        if (!qp_json_str(e, &v))
            st = qp_fail(err, QP_E_FORMAT, "%s: metadata value '%s' is a %s, "
                         "expected a string", what, keys[i - 1],
                         qp_json_type_name(qp_json_type(e)));
    }
    if (!st && n > 1) { /* a JSON object may repeat a key */
        qsort(keys, n, sizeof *keys, cmp_str);
        for (size_t k = 1; k < n && !st; k++)
            if (!strcmp(keys[k - 1], keys[k]))
                st = qp_fail(err, QP_E_FORMAT, "%s: metadata key '%s' appears "
                             "twice", what, keys[k]);
    }
    free(keys);
    bool fresh = m->count == 0; /* keys are unique: no lookups needed */
    for (const struct qp_json *e = qp_json_first(obj); e && !st; e = qp_json_next(e)) {
        const char *v, *k = qp_json_key(e);
        qp_json_str(e, &v);
        if (strcmp(k, QP_DUMP_META_RESERVED))
            st = fresh ? meta_append(m, k, v, err) : qp_dump_meta_set(m, k, v, err);
    }
    return st;
}

bool qp_dump_meta_to_json(const struct qp_dump_meta *m, struct qp_json *obj)
{
    for (size_t i = 0; i < m->count; i++)
        if (!qp_json_add_str(obj, m->keys[i], m->values[i]))
            return false;
    return true;
}

enum qp_status qp_dump_meta_save(const char *path, const struct qp_dump_meta *m,
                                 struct qp_error *err)
{
    struct qp_json *root = qp_json_new_object(), *o;
    enum qp_status st = root && (o = qp_json_add_object(root, "metadata")) &&
                                qp_dump_meta_to_json(m, o)
                            ? qp_json_save(path, root, true, err)
                            : qp_fail(err, QP_E_NOMEM, "out of memory");
    qp_json_free(root);
    return st;
}

enum qp_status qp_dump_meta_load(const char *path, struct qp_dump_meta *m,
                                 struct qp_error *err)
{
    struct stat sb;
    if (stat(path, &sb) != 0)
        return QP_OK;
    struct qp_json *root;
    enum qp_status st = qp_json_load(path, &root, err);
    if (st)
        return st;
    char what[600];
    snprintf(what, sizeof what, "'%s'", path);
    const struct qp_json *o = qp_json_get(root, "metadata");
    st = o ? qp_dump_meta_from_json(m, o, what, err)
           : qp_fail(err, QP_E_FORMAT, "%s: no metadata object", what);
    qp_json_free(root);
    return st;
}
