/* formats/safetensors.c: safetensors header parser and dump reader, single
 * files and sharded checkpoints (formats/safetensors.h). */
#include "formats/safetensors.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fileio.h"
#include "formats/dump-info.h"
#include "formats/json.h"

static const char *const st_names[] = {
    [QP_DTYPE_F32] = "F32",        [QP_DTYPE_F16] = "F16",
    [QP_DTYPE_BF16] = "BF16",      [QP_DTYPE_F64] = "F64",
    [QP_DTYPE_I8] = "I8",          [QP_DTYPE_U8] = "U8",
    [QP_DTYPE_I16] = "I16",        [QP_DTYPE_U16] = "U16",
    [QP_DTYPE_I32] = "I32",        [QP_DTYPE_U32] = "U32",
    [QP_DTYPE_I64] = "I64",        [QP_DTYPE_U64] = "U64",
    [QP_DTYPE_I4] = NULL,          [QP_DTYPE_U4] = NULL,
    [QP_DTYPE_BOOL] = "BOOL",      [QP_DTYPE_F8E4M3] = "F8_E4M3",
    [QP_DTYPE_F8E5M2] = "F8_E5M2", [QP_DTYPE_I2] = NULL,
    [QP_DTYPE_U2] = NULL,          [QP_DTYPE_I3] = NULL,
    [QP_DTYPE_U3] = NULL,
};
_Static_assert(sizeof st_names / sizeof st_names[0] == QP_DTYPE_COUNT,
               "st_names must cover every dtype");

const char *qp_st_dtype_name(enum qp_dtype dtype)
{
    return (unsigned)dtype < QP_DTYPE_COUNT ? st_names[dtype] : NULL;
}

static bool st_dtype_from_name(const char *name, enum qp_dtype *out)
{
    for (int d = 0; d < QP_DTYPE_COUNT; d++)
        if (st_names[d] && !strcmp(st_names[d], name)) {
            *out = (enum qp_dtype)d;
            return true;
        }
    return false;
}

void qp_st_header_free(struct qp_st_header *h)
{
    if (!h)
        return;
    for (size_t i = 0; i < h->count; i++)
        qp_tensor_free(h->tensors[i].desc);
    free(h->tensors);
    free(h->info);
    qp_dump_meta_release(&h->meta);
    free(h);
}

/* One header entry {"dtype", "shape", "data_offsets"} into *t. */
static enum qp_status parse_entry(const char *what, const struct qp_json *o,
                                  uint64_t data_len, struct qp_st_tensor *t,
                                  struct qp_error *err)
{
    const char *name = qp_json_key(o), *dname;
    char where[640];
    snprintf(where, sizeof where, "'%s': tensor '%s'", what, name);
    if (qp_json_type(o) != QP_JSON_OBJECT)
        return qp_fail(err, QP_E_FORMAT, "%s: entry is a %s, expected an object",
                       where, qp_json_type_name(qp_json_type(o)));
    enum qp_dtype dtype;
    if (!qp_json_str(qp_json_get(o, "dtype"), &dname))
        return qp_fail(err, QP_E_FORMAT, "%s: dtype missing or not a string",
                       where);
    if (!st_dtype_from_name(dname, &dtype))
        return qp_fail(err, QP_E_UNSUPPORTED, "%s: dtype '%s' is not supported",
                       where, dname);
    const struct qp_json *sh = qp_json_get(o, "shape");
    if (!sh)
        return qp_fail(err, QP_E_FORMAT, "%s: shape missing", where);
    int ndim;
    int64_t shape[QP_MAX_DIMS];
    char field[700];
    snprintf(field, sizeof field, "%s: shape", where);
    enum qp_status st = qp_dump_json_shape(sh, field, &ndim, shape, err);
    if (st)
        return st;
    const struct qp_json *off = qp_json_get(o, "data_offsets");
    int64_t b, e;
    if (qp_json_type(off) != QP_JSON_ARRAY || qp_json_size(off) != 2 ||
        !qp_dump_json_int(qp_json_at(off, 0), 0, INT64_MAX, &b) ||
        !qp_dump_json_int(qp_json_at(off, 1), 0, INT64_MAX, &e) || b > e)
        return qp_fail(err, QP_E_FORMAT, "%s: data_offsets must be [begin, end] "
                       "with 0 <= begin <= end", where);
    if ((uint64_t)e > data_len)
        return qp_fail(err, QP_E_FORMAT, "%s: data_offsets [%lld,%lld] exceed "
                       "the data section (%llu bytes)", where, (long long)b,
                       (long long)e, (unsigned long long)data_len);
    size_t need;
    if ((st = qp_shape_check(where, dtype, ndim, shape, &need, err)))
        return st;
    if ((uint64_t)(e - b) != need) {
        char s[128];
        qp_shape_str(ndim, shape, s, sizeof s);
        return qp_fail(err, QP_E_FORMAT, "%s: data_offsets [%lld,%lld] hold %lld "
                       "bytes, %s %s needs %zu", where, (long long)b, (long long)e,
                       (long long)(e - b), dname, s, need);
    }
    t->begin = (uint64_t)b;
    t->end = (uint64_t)e;
    return qp_tensor_new_desc(name, dtype, ndim, shape, &t->desc, err);
}

static int cmp_range(const void *a, const void *b)
{
    const struct qp_st_tensor *x = a, *y = b;
    if (x->begin != y->begin)
        return x->begin < y->begin ? -1 : 1;
    return x->end < y->end ? -1 : x->end > y->end;
}

static int cmp_tensor_name(const void *a, const void *b)
{
    return strcmp((*(const struct qp_st_tensor *const *)a)->desc->name,
                  (*(const struct qp_st_tensor *const *)b)->desc->name);
}

/* No two non-empty ranges overlap; no name appears twice. */
static enum qp_status check_ranges_and_names(const char *what,
                                             struct qp_st_header *h,
                                             struct qp_error *err)
{
    qsort(h->tensors, h->count, sizeof *h->tensors, cmp_range);
    const struct qp_st_tensor *last = NULL; /* non-empty range ending last */
    for (size_t i = 0; i < h->count; i++) {
        const struct qp_st_tensor *t = &h->tensors[i];
        if (t->begin == t->end)
            continue;
        if (last && t->begin < last->end)
            return qp_fail(err, QP_E_FORMAT, "'%s': tensors '%s' [%llu,%llu] and "
                           "'%s' [%llu,%llu] overlap", what, last->desc->name,
                           (unsigned long long)last->begin,
                           (unsigned long long)last->end, t->desc->name,
                           (unsigned long long)t->begin,
                           (unsigned long long)t->end);
        if (!last || t->end > last->end)
            last = t;
    }
    const struct qp_st_tensor **v = malloc(h->count * sizeof *v + 1);
    if (!v)
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    for (size_t i = 0; i < h->count; i++)
        v[i] = &h->tensors[i];
    qsort(v, h->count, sizeof *v, cmp_tensor_name);
    enum qp_status st = QP_OK;
    for (size_t i = 1; i < h->count && !st; i++)
        if (!strcmp(v[i - 1]->desc->name, v[i]->desc->name))
            st = qp_fail(err, QP_E_FORMAT, "'%s': tensor '%s' appears twice in "
                         "the header", what, v[i]->desc->name);
    free(v);
    return st;
}

static enum qp_status parse_root(const char *what, const struct qp_json *root,
                                 struct qp_st_header *h, uint64_t data_len,
                                 struct qp_error *err)
{
    size_t n = qp_json_size(root);
    h->tensors = calloc(n + 1, sizeof *h->tensors);
    if (!h->tensors)
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    bool have_meta = false;
    for (const struct qp_json *o = qp_json_first(root); o; o = qp_json_next(o)) {
        enum qp_status st;
        if (strcmp(qp_json_key(o), "__metadata__")) {
            st = parse_entry(what, o, data_len, &h->tensors[h->count], err);
            if (st)
                return st;
            h->count++;
            continue;
        }
        char mwhat[600];
        snprintf(mwhat, sizeof mwhat, "'%s': __metadata__", what);
        if (have_meta)
            return qp_fail(err, QP_E_FORMAT, "%s appears twice", mwhat);
        have_meta = true;
        if ((st = qp_dump_meta_from_json(&h->meta, o, mwhat, err)))
            return st;
        const char *info;
        if (qp_json_str(qp_json_get(o, QP_DUMP_META_RESERVED), &info) &&
            !(h->info = strdup(info)))
            return qp_fail(err, QP_E_NOMEM, "out of memory");
    }
    return check_ranges_and_names(what, h, err);
}

enum qp_status qp_st_parse(const char *what, const void *buf, size_t len,
                           struct qp_st_header **out, struct qp_error *err)
{
    const unsigned char *b = buf;
    *out = NULL;
    if (len < 8)
        return qp_fail(err, QP_E_FORMAT, "'%s': truncated: %zu bytes, a "
                       "safetensors file starts with an 8-byte header length",
                       what, len);
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--)
        n = n << 8 | b[i];
    if (n > QP_SAFETENSORS_MAX_HEADER)
        return qp_fail(err, QP_E_FORMAT, "'%s': header length %llu exceeds the "
                       "limit of %llu bytes", what, (unsigned long long)n,
                       (unsigned long long)QP_SAFETENSORS_MAX_HEADER);
    if (n > len - 8)
        return qp_fail(err, QP_E_FORMAT, "'%s': header length %llu exceeds the "
                       "file (%zu bytes)", what, (unsigned long long)n, len);
    if (n < 2 || b[8] != '{')
        return qp_fail(err, QP_E_FORMAT, "'%s': header is not a JSON object",
                       what);
    if (memchr(b + 8, 0, (size_t)n))
        return qp_fail(err, QP_E_FORMAT, "'%s': header holds a NUL byte", what);
    char *text = malloc((size_t)n + 1);
    struct qp_st_header *h = calloc(1, sizeof *h);
    if (!text || !h) {
        free(text);
        free(h);
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    }
    memcpy(text, b + 8, (size_t)n);
    text[n] = '\0';
    h->data_start = 8 + n;
    char jwhat[600];
    snprintf(jwhat, sizeof jwhat, "'%s': header", what);
    struct qp_json *root;
    enum qp_status st = qp_json_parse(text, jwhat, &root, err);
    free(text);
    if (!st) {
        if (qp_json_type(root) != QP_JSON_OBJECT)
            st = qp_fail(err, QP_E_FORMAT, "'%s': header is not a JSON object",
                         what);
        else
            st = parse_root(what, root, h, len - h->data_start, err);
        qp_json_free(root);
    }
    if (st) {
        qp_st_header_free(h);
        return st;
    }
    *out = h;
    return QP_OK;
}

/* ---- dump reader ----------------------------------------------------------- */

struct st_shard {
    char *path;
    struct qp_mmap *map;
    struct qp_st_header *h;
};

struct st_ref { /* a tensor as stored, by backing index */
    char *name;   /* owned */
    size_t shard;
    uint64_t off; /* in the file */
    enum qp_dtype dtype;
    int ndim;
    int64_t shape[QP_MAX_DIMS];
    const struct qp_dump_info *bytes_of; /* stored as bytes of this */
};

struct st_reader {
    struct st_shard *shards;
    size_t nshards;
    struct st_ref *refs;
    size_t nrefs;
    struct qp_dump_infos infos;
};

static void st_close(struct qp_dump *d)
{
    struct st_reader *r = d->impl;
    if (!r)
        return;
    for (size_t i = 0; i < r->nshards; i++) {
        free(r->shards[i].path);
        qp_mmap_unref(r->shards[i].map);
        qp_st_header_free(r->shards[i].h);
    }
    free(r->shards);
    for (size_t i = 0; r->refs && i < r->nrefs; i++)
        free(r->refs[i].name);
    free(r->refs);
    qp_dump_infos_release(&r->infos);
    free(r);
    d->impl = NULL;
}

static int cmp_natural(const void *a, const void *b)
{
    return strverscmp(*(char *const *)a, *(char *const *)b);
}

static void free_list(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

static enum qp_status list_push(char ***v, size_t *n, char *s,
                                struct qp_error *err)
{
    char **nv = s ? realloc(*v, (*n + 1) * sizeof *nv) : NULL;
    if (!nv) {
        free(s);
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    }
    nv[(*n)++] = s;
    *v = nv;
    return QP_OK;
}

/* Files of dir ending in ext (not recursive), in natural order. */
static enum qp_status list_dir(const char *dir, const char *ext, char ***out,
                               size_t *n, struct qp_error *err)
{
    *out = NULL;
    *n = 0;
    DIR *dp = opendir(dir);
    if (!dp)
        return qp_fail(err, QP_E_IO, "'%s': cannot open directory", dir);
    enum qp_status st = QP_OK;
    struct dirent *de;
    while (!st && (de = readdir(dp)))
        if (de->d_name[0] != '.' && qp_str_ends_with(de->d_name, ext))
            st = list_push(out, n, qp_path_join(dir, de->d_name), err);
    closedir(dp);
    if (st) {
        free_list(*out, *n);
        *out = NULL;
        *n = 0;
        return st;
    }
    if (*n)
        qsort(*out, *n, sizeof **out, cmp_natural);
    return QP_OK;
}

/* A shard name from an index must stay inside the index's directory. */
static bool safe_relative(const char *name)
{
    if (!*name || name[0] == '/')
        return false;
    for (const char *p = name; *p;) {
        const char *s = strchr(p, '/');
        size_t len = s ? (size_t)(s - p) : strlen(p);
        if (len == 2 && p[0] == '.' && p[1] == '.')
            return false;
        p += len + (s != NULL);
    }
    return true;
}

static char *dir_of(const char *path)
{
    const char *s = strrchr(path, '/');
    if (!s)
        return strdup(".");
    char *d = strndup(path, (size_t)(s - path) + (s == path));
    return d;
}

/* Shard paths from an index's weight_map. */
static enum qp_status index_shards(const char *index, struct qp_json **root,
                                   char ***files, size_t *n,
                                   struct qp_error *err)
{
    *files = NULL;
    *n = 0;
    enum qp_status st = qp_json_load(index, root, err);
    if (st)
        return st;
    const struct qp_json *wm = qp_json_get(*root, "weight_map");
    if (qp_json_type(wm) != QP_JSON_OBJECT)
        return qp_fail(err, QP_E_FORMAT, "'%s': weight_map is missing or not an "
                       "object", index);
    char *dir = dir_of(index);
    if (!dir)
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    char **names = NULL;
    size_t k = 0;
    for (const struct qp_json *e = qp_json_first(wm); e && !st; e = qp_json_next(e)) {
        const char *file;
        if (!qp_json_str(e, &file))
            st = qp_fail(err, QP_E_FORMAT, "'%s': weight_map['%s'] is a %s, "
                         "expected a shard file name", index, qp_json_key(e),
                         qp_json_type_name(qp_json_type(e)));
        else if (!safe_relative(file))
            st = qp_fail(err, QP_E_FORMAT, "'%s': weight_map['%s']: shard '%s' "
                         "is not a path inside the index's directory", index,
                         qp_json_key(e), file);
        else
            st = list_push(&names, &k, strdup(file), err);
    }
    if (!st && k == 0)
        st = qp_fail(err, QP_E_FORMAT, "'%s': weight_map is empty", index);
    if (!st) {
        qsort(names, k, sizeof *names, cmp_natural);
        for (size_t i = 0; i < k && !st; i++)
            if (i == 0 || strcmp(names[i], names[i - 1]))
                st = list_push(files, n, qp_path_join(dir, names[i]), err);
    }
    free_list(names, k);
    free(dir);
    return st;
}

/* The shard files (and index document, if any) a dump path names. */
static enum qp_status resolve(const char *path, struct qp_json **index,
                              char **index_path, char ***files, size_t *n,
                              struct qp_error *err)
{
    *index = NULL;
    *index_path = NULL;
    if (!qp_is_dir(path)) {
        if (qp_str_ends_with(path, ".index.json")) {
            if (!(*index_path = strdup(path)))
                return qp_fail(err, QP_E_NOMEM, "out of memory");
            return index_shards(path, index, files, n, err);
        }
        *n = 0;
        *files = NULL;
        return list_push(files, n, strdup(path), err);
    }
    char **idx;
    size_t ni;
    enum qp_status st = list_dir(path, ".safetensors.index.json", &idx, &ni, err);
    if (st)
        return st;
    size_t pick = ni == 1 ? 0 : ni; /* several: the conventional name wins */
    for (size_t i = 0; i < ni && ni > 1; i++)
        if (qp_str_ends_with(idx[i], "/model.safetensors.index.json"))
            pick = i;
    if (ni > 1 && pick == ni) {
        free_list(idx, ni);
        return qp_fail(err, QP_E_FORMAT, "'%s': several *.safetensors.index.json "
                       "files; open one of them", path);
    }
    if (pick < ni) {
        *index_path = idx[pick];
        idx[pick] = NULL;
        free_list(idx, ni);
        return index_shards(*index_path, index, files, n, err);
    }
    free_list(idx, ni);
    st = list_dir(path, ".safetensors", files, n, err);
    if (!st && *n == 0)
        st = qp_fail(err, QP_E_NOTFOUND, "'%s': no .safetensors files or index",
                     path);
    return st;
}

struct name_ref {
    const char *name;
    size_t shard;
};

static int cmp_name_ref(const void *a, const void *b)
{
    return strcmp(((const struct name_ref *)a)->name,
                  ((const struct name_ref *)b)->name);
}

/* Tensor names unique across shards; the index's weight_map agrees. */
static enum qp_status check_shards(struct st_reader *r, const char *index_path,
                                   const struct qp_json *index, size_t total,
                                   struct qp_error *err)
{
    struct name_ref *v = malloc(total * sizeof *v + 1);
    if (!v)
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    size_t k = 0;
    for (size_t s = 0; s < r->nshards; s++)
        for (size_t i = 0; i < r->shards[s].h->count; i++)
            v[k++] = (struct name_ref){r->shards[s].h->tensors[i].desc->name, s};
    qsort(v, k, sizeof *v, cmp_name_ref);
    enum qp_status st = QP_OK;
    for (size_t i = 1; i < k && !st; i++)
        if (!strcmp(v[i - 1].name, v[i].name))
            st = qp_fail(err, QP_E_FORMAT, "'%s' and '%s' both hold tensor '%s'",
                         r->shards[v[i - 1].shard].path,
                         r->shards[v[i].shard].path, v[i].name);
    const struct qp_json *wm = qp_json_get(index, "weight_map");
    for (const struct qp_json *e = qp_json_first(wm); e && !st; e = qp_json_next(e)) {
        const char *file;
        qp_json_str(e, &file);
        struct name_ref key = {qp_json_key(e), 0};
        const struct name_ref *f = bsearch(&key, v, k, sizeof *v, cmp_name_ref);
        const char *held = f ? strrchr(r->shards[f->shard].path, '/') : NULL;
        held = held ? held + 1 : f ? r->shards[f->shard].path : NULL;
        const char *want = strrchr(file, '/');
        if (!f || strcmp(held, want ? want + 1 : file))
            st = qp_fail(err, QP_E_FORMAT, "'%s': weight_map puts tensor '%s' in "
                         "'%s', which does not hold it", index_path, key.name,
                         file);
    }
    free(v);
    return st;
}

static enum qp_status open_shard(struct st_reader *r, struct qp_dump *d,
                                 const char *file, struct qp_error *err)
{
    struct st_shard *s = &r->shards[r->nshards];
    memset(s, 0, sizeof *s);
    if (!(s->path = strdup(file)))
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    r->nshards++;
    enum qp_status st = qp_mmap_open(file, &s->map, err);
    if (!st)
        st = qp_st_parse(file, s->map->data, s->map->size, &s->h, err);
    for (size_t i = 0; !st && i < s->h->meta.count; i++)
        st = qp_dump_meta_set(&d->meta, s->h->meta.keys[i], s->h->meta.values[i],
                              err);
    if (!st && s->h->info) {
        char what[600];
        snprintf(what, sizeof what, "'%s': __metadata__ %s", file,
                 QP_DUMP_META_RESERVED);
        st = qp_dump_infos_parse(s->h->info, what, &r->infos, NULL, err);
    }
    return st;
}

/* Moves every shard's descriptors into d->entries, in shard then offset
 * order, restoring tensors stored as bytes. */
static enum qp_status build_entries(struct qp_dump *d, struct st_reader *r,
                                    size_t total, struct qp_error *err)
{
    d->entries = calloc(total + 1, sizeof *d->entries);
    r->refs = calloc(total + 1, sizeof *r->refs);
    if (!d->entries || !r->refs)
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    for (size_t s = 0; s < r->nshards; s++) {
        struct qp_st_header *h = r->shards[s].h;
        for (size_t i = 0; i < h->count; i++) {
            struct qp_tensor *t = h->tensors[i].desc;
            struct st_ref *ref = &r->refs[d->count];
            *ref = (struct st_ref){strdup(t->name), s,
                                   h->data_start + h->tensors[i].begin, t->dtype,
                                   t->ndim, {0}, NULL};
            r->nrefs = d->count + 1;
            if (!ref->name)
                return qp_fail(err, QP_E_NOMEM, "out of memory");
            memcpy(ref->shape, t->shape, sizeof ref->shape);
            h->tensors[i].desc = NULL;
            d->entries[d->count++] = t;
            const struct qp_dump_info *info = qp_dump_infos_find(&r->infos,
                                                                 t->name);
            if (info && info->bytes) {
                enum qp_status st = qp_dump_info_retype(t, info, r->shards[s].path,
                                                        err);
                if (st)
                    return st;
                ref->bytes_of = info;
            }
        }
    }
    return QP_OK;
}

static enum qp_status st_open(struct qp_dump *d, struct qp_error *err)
{
    struct qp_json *index;
    char *index_path, **files = NULL;
    size_t n = 0;
    enum qp_status st = resolve(d->path, &index, &index_path, &files, &n, err);
    struct st_reader *r = st ? NULL : calloc(1, sizeof *r);
    if (!st && (!r || !(r->shards = calloc(n, sizeof *r->shards)))) {
        free(r);
        r = NULL;
        st = qp_fail(err, QP_E_NOMEM, "out of memory");
    }
    d->impl = r;
    size_t total = 0;
    for (size_t i = 0; i < n && !st; i++) {
        st = open_shard(r, d, files[i], err);
        if (!st)
            total += r->shards[i].h->count;
        else if (index_path && st != QP_E_NOMEM)
            qp_error_prefix(err, "'%s': shard ", index_path);
    }
    if (!st)
        st = check_shards(r, index_path, index, total, err);
    if (!st)
        st = build_entries(d, r, total, err);
    if (!st)
        st = qp_dump_attach_companions(d, err);
    if (!st)
        st = qp_dump_infos_apply(d, &r->infos, err);
    free_list(files, n);
    free(index_path);
    qp_json_free(index);
    return st;
}

static enum qp_status st_load(struct qp_dump *d, size_t i, struct qp_tensor **out,
                              struct qp_error *err)
{
    struct st_reader *r = d->impl;
    const struct st_ref *ref = &r->refs[i];
    const struct st_shard *s = &r->shards[ref->shard];
    size_t nbytes;
    enum qp_status st = qp_shape_check(s->path, ref->dtype, ref->ndim, ref->shape,
                                       &nbytes, err);
    if (st)
        return st;
    const unsigned char *p = s->map->data + ref->off;
    unsigned es = qp_dtype_traits(ref->dtype)->bits / 8;
    qp_mmap_prefetch(s->map, (size_t)ref->off, nbytes);
    if (es <= 1 || (uintptr_t)p % es == 0) {
        st = qp_tensor_wrap(ref->name, ref->dtype, ref->ndim, ref->shape, p,
                            nbytes, s->map, out, err);
    } else { /* misaligned for its element size: copy */
        st = qp_tensor_new(ref->name, ref->dtype, ref->ndim, ref->shape, out, err);
        if (!st)
            memcpy((*out)->data, p, nbytes);
    }
    if (!st && ref->bytes_of)
        st = qp_dump_info_retype(*out, ref->bytes_of, s->path, err);
    if (st) {
        qp_tensor_free(*out);
        *out = NULL;
    }
    return st;
}

const struct qp_dump_ops qp_dump_ops_safetensors = {
    "safetensors", st_open, st_load, st_close,
};
