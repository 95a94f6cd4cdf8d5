/* formats/qnn-encodings.c: QNN / AIMET encodings JSON (qnn-encodings.h). */
#include "formats/qnn-encodings.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "formats/dump-info.h"
#include "formats/json.h"

struct qp_qnn_key {
    char *key; /* owned */
    size_t idx;
    int rank;  /* 0 exact, 1 mangled */
};

static const char *const groups[] = {"activation_encodings", "param_encodings"};

bool qp_qnn_is_encodings(const struct qp_json *root)
{
    return qp_json_get(root, groups[0]) || qp_json_get(root, groups[1]);
}

void qp_qnn_mangle(const char *name, bool collapse, char *out)
{
    size_t k = 0;
    bool prev_other = false;
    if (isdigit((unsigned char)name[0]))
        out[k++] = '_';
    for (const char *p = name; *p; p++) {
        unsigned char c = (unsigned char)*p;
        if (isalnum(c) || c == '_') {
            out[k++] = (char)c;
            prev_other = false;
        } else {
            if (!collapse || !prev_other)
                out[k++] = '_';
            prev_other = true;
        }
    }
    out[k] = '\0';
}

static void encoding_free(struct qp_qnn_encoding *e)
{
    free(e->name);
    free(e->scale);
    free(e->zero_point);
}

void qp_qnn_encodings_release(struct qp_qnn_encodings *e)
{
    for (size_t i = 0; i < e->n; i++)
        encoding_free(&e->v[i]);
    free(e->v);
    for (size_t i = 0; i < e->nkeys; i++)
        free(e->keys[i].key);
    free(e->keys);
    memset(e, 0, sizeof *e);
}

/* A boolean that may be a JSON bool or the strings "True"/"False". */
static bool truthy(const struct qp_json *n)
{
    bool b;
    const char *s;
    if (qp_json_bool(n, &b))
        return b;
    return qp_json_str(n, &s) && !strcasecmp(s, "true");
}

/* Slot `slot` of enc from the number nodes sc and off (off may be NULL:
 * offset 0). */
static enum qp_status take_values(const struct qp_json *sc, const struct qp_json *off,
                                  size_t slot, const char *where,
                                  struct qp_qnn_encoding *enc, struct qp_error *err)
{
    double s, o = 0;
    if (!qp_json_num(sc, &s) || !isfinite(s))
        return qp_fail(err, QP_E_FORMAT, "%s: scale is not a finite number", where);
    if (off && (!qp_json_num(off, &o) || o != floor(o) || fabs(o) > 2147483647.0))
        return qp_fail(err, QP_E_FORMAT, "%s: offset is not an integer", where);
    enc->scale[slot] = (float)s;
    enc->zero_point[slot] = (int32_t)-o; /* QNN: real = scale * (q + offset) */
    return QP_OK;
}

static enum qp_status new_encoding(struct qp_qnn_encodings *e, const char *name,
                                   size_t count, struct qp_qnn_encoding **out,
                                   struct qp_error *err)
{
    if (e->n == e->cap) {
        size_t cap = e->cap ? 2 * e->cap : 32;
        struct qp_qnn_encoding *v = realloc(e->v, cap * sizeof *v);
        if (!v)
            return qp_fail(err, QP_E_NOMEM, "out of memory");
        e->v = v;
        e->cap = cap;
    }
    struct qp_qnn_encoding *enc = &e->v[e->n];
    memset(enc, 0, sizeof *enc);
    enc->count = count;
    enc->name = strdup(name);
    enc->scale = malloc(count * sizeof *enc->scale + 1);
    enc->zero_point = malloc(count * sizeof *enc->zero_point + 1);
    if (!enc->name || !enc->scale || !enc->zero_point) {
        encoding_free(enc);
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    }
    e->n++;
    *out = enc;
    return QP_OK;
}

static bool int_type(const struct qp_json *dt)
{
    const char *s;
    return !dt || !qp_json_str(dt, &s) || strncasecmp(s, "float", 5);
}

static enum qp_status bitwidth(const struct qp_json *o, const char *where, int *bw,
                               struct qp_error *err)
{
    const struct qp_json *b = qp_json_get(o, "bitwidth");
    int64_t v;
    if (!b)
        b = qp_json_get(o, "bw");
    if (!qp_dump_json_int(b, 1, 32, &v))
        return qp_fail(err, QP_E_FORMAT, "%s: bitwidth is not an integer in "
                       "[1, 32]", where);
    *bw = (int)v;
    return QP_OK;
}

/* Legacy: name -> [ {bitwidth, scale, offset, ...} per channel ]. */
static enum qp_status parse_legacy(const struct qp_json *grp, const char *what,
                                   const char *gname, struct qp_qnn_encodings *e,
                                   struct qp_error *err)
{
    for (const struct qp_json *t = qp_json_first(grp); t; t = qp_json_next(t)) {
        const char *name = qp_json_key(t);
        bool list = qp_json_type(t) == QP_JSON_ARRAY;
        size_t count = list ? qp_json_size(t) : 1;
        const struct qp_json *first = list ? qp_json_first(t) : t;
        char where[700];
        snprintf(where, sizeof where, "%s: %s['%s']", what, gname, name);
        if (qp_json_type(first) != QP_JSON_OBJECT)
            return qp_fail(err, QP_E_FORMAT, "%s is a %s, expected a list of "
                           "encoding objects", where,
                           qp_json_type_name(qp_json_type(list ? first : t)));
        if (!int_type(qp_json_get(first, "dtype")) || !qp_json_get(first, "scale"))
            continue; /* float, or min/max only */
        struct qp_qnn_encoding *enc;
        enum qp_status st = new_encoding(e, name, count, &enc, err);
        if (st)
            return st;
        st = bitwidth(first, where, &enc->bitwidth, err);
        enc->symmetric = truthy(qp_json_get(first, "is_symmetric"));
        const struct qp_json *o = first;
        for (size_t c = 0; c < count && !st; c++, o = qp_json_next(o)) {
            snprintf(where, sizeof where, "%s: %s['%s'][%zu]", what, gname, name, c);
            if (qp_json_type(o) != QP_JSON_OBJECT)
                st = qp_fail(err, QP_E_FORMAT, "%s is a %s, expected an object",
                             where, qp_json_type_name(qp_json_type(o)));
            else
                st = take_values(qp_json_get(o, "scale"), qp_json_get(o, "offset"),
                                 c, where, enc, err);
        }
        if (st)
            return st;
    }
    return QP_OK;
}

/* AIMET 1.0.0: [ {name, bw, scale: [...], offset: [...], enc_type, ...} ]. */
static enum qp_status parse_v1(const struct qp_json *grp, const char *what,
                               const char *gname, struct qp_qnn_encodings *e,
                               struct qp_error *err)
{
    size_t i = 0;
    for (const struct qp_json *o = qp_json_first(grp); o; o = qp_json_next(o), i++) {
        const char *name, *type = "PER_TENSOR";
        char where[700];
        snprintf(where, sizeof where, "%s: %s[%zu]", what, gname, i);
        if (qp_json_type(o) != QP_JSON_OBJECT ||
            !qp_json_str(qp_json_get(o, "name"), &name))
            return qp_fail(err, QP_E_FORMAT, "%s is not an object with a name",
                           where);
        qp_json_str(qp_json_get(o, "enc_type"), &type);
        const struct qp_json *sc = qp_json_get(o, "scale"),
                             *off = qp_json_get(o, "offset");
        if (!int_type(qp_json_get(o, "dtype")) || !sc ||
            (strcasecmp(type, "PER_TENSOR") && strcasecmp(type, "PER_CHANNEL")))
            continue; /* float, min/max only, or per-block */
        size_t count = qp_json_type(sc) == QP_JSON_ARRAY ? qp_json_size(sc) : 1;
        snprintf(where, sizeof where, "%s: %s['%s']", what, gname, name);
        if (!count || (off && qp_json_type(off) == QP_JSON_ARRAY &&
                       qp_json_size(off) != count))
            return qp_fail(err, QP_E_FORMAT, "%s: scale and offset have different "
                           "lengths", where);
        struct qp_qnn_encoding *enc;
        enum qp_status st = new_encoding(e, name, count, &enc, err);
        if (st)
            return st;
        st = bitwidth(o, where, &enc->bitwidth, err);
        enc->symmetric = truthy(qp_json_get(o, "is_sym"));
        bool arr = qp_json_type(sc) == QP_JSON_ARRAY,
             oarr = qp_json_type(off) == QP_JSON_ARRAY;
        const struct qp_json *s = arr ? qp_json_first(sc) : sc,
                             *f = oarr ? qp_json_first(off) : off;
        for (size_t c = 0; c < count && !st; c++) {
            st = take_values(s, f, c, where, enc, err);
            s = qp_json_next(s);
            f = oarr ? qp_json_next(f) : f;
        }
        if (st)
            return st;
    }
    return QP_OK;
}

enum qp_status qp_qnn_encodings_parse(const struct qp_json *root,
                                      const char *what,
                                      struct qp_qnn_encodings *e,
                                      struct qp_error *err)
{
    for (size_t g = 0; g < 2; g++) {
        const struct qp_json *grp = qp_json_get(root, groups[g]);
        enum qp_json_type t = qp_json_type(grp);
        enum qp_status st = QP_OK;
        if (t == QP_JSON_OBJECT)
            st = parse_legacy(grp, what, groups[g], e, err);
        else if (t == QP_JSON_ARRAY)
            st = parse_v1(grp, what, groups[g], e, err);
        else if (grp)
            st = qp_fail(err, QP_E_FORMAT, "%s: %s is a %s, expected an object or "
                         "a list", what, groups[g], qp_json_type_name(t));
        if (st)
            return st;
    }
    /* a new document invalidates the lookup index */
    for (size_t i = 0; i < e->nkeys; i++)
        free(e->keys[i].key);
    free(e->keys);
    e->keys = NULL;
    e->nkeys = 0;
    return QP_OK;
}

static int cmp_key(const void *a, const void *b)
{
    const struct qp_qnn_key *x = a, *y = b;
    int c = strcmp(x->key, y->key);
    return c ? c : x->rank - y->rank;
}

static bool build_keys(struct qp_qnn_encodings *e)
{
    e->keys = calloc(3 * e->n + 1, sizeof *e->keys);
    if (!e->keys)
        return false;
    for (size_t i = 0; i < e->n; i++)
        for (int r = 0; r < 3; r++) {
            char *k = malloc(strlen(e->v[i].name) + 2);
            if (!k)
                return false;
            if (r == 0)
                strcpy(k, e->v[i].name);
            else
                qp_qnn_mangle(e->v[i].name, r == 2, k);
            e->keys[e->nkeys++] = (struct qp_qnn_key){k, i, r ? 1 : 0};
        }
    qsort(e->keys, e->nkeys, sizeof *e->keys, cmp_key);
    return true;
}

const struct qp_qnn_encoding *qp_qnn_encodings_find(struct qp_qnn_encodings *e,
                                                    const char *name)
{
    if (!e->n || (!e->keys && !build_keys(e)))
        return NULL;
    size_t lo = 0, hi = e->nkeys; /* first key >= name */
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (strcmp(e->keys[mid].key, name) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < e->nkeys && !strcmp(e->keys[lo].key, name))
        return &e->v[e->keys[lo].idx]; /* exact matches sort first */
    return NULL;
}
