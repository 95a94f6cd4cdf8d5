#include "formats/json.h"

#include <cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fileio.h"
#include "core/outfile.h"

/* struct qp_json is never defined: a node is a cJSON in disguise. */
static inline cJSON *J(const struct qp_json *n) { return (cJSON *)n; }
static inline struct qp_json *Q(cJSON *n) { return (struct qp_json *)n; }

static int cmp_key(const void *a, const void *b)
{
    return strcmp((*(const cJSON *const *)a)->string,
                  (*(const cJSON *const *)b)->string);
}

/* Appends the member or element `c` of a container to the location text
 * `at` (e.g. "layers"[2]), truncating quietly. */
static void locate(char *at, size_t size, const cJSON *c, int index)
{
    size_t n = strlen(at);
    if (n + 1 >= size)
        return;
    if (c->string)
        snprintf(at + n, size - n, "%s\"%.100s\"", n ? "." : "", c->string);
    else
        snprintf(at + n, size - n, "[%d]", index);
}

/* Refuses an object, anywhere below node, whose members repeat a key
 * (cJSON keeps both and its lookups find the first). */
static enum qp_status unique_keys(const cJSON *node, const char *what,
                                  char *at, size_t size, struct qp_error *err)
{
    if (!cJSON_IsArray(node) && !cJSON_IsObject(node))
        return QP_OK;
    size_t n = 0, len = strlen(at);
    for (const cJSON *c = node->child; c; c = c->next)
        n++;
    enum qp_status st = QP_OK;
    if (cJSON_IsObject(node) && n > 1) {
        const cJSON **v = malloc(n * sizeof *v);
        if (!v)
            return qp_fail(err, QP_E_NOMEM, "out of memory");
        size_t k = 0;
        for (const cJSON *c = node->child; c; c = c->next)
            v[k++] = c;
        qsort(v, n, sizeof *v, cmp_key);
        for (k = 1; k < n && !st; k++)
            if (!strcmp(v[k - 1]->string, v[k]->string))
                st = qp_fail(err, QP_E_FORMAT, "%s: key \"%.200s\" appears "
                             "twice in %s", what, v[k]->string,
                             *at ? at : "the top-level object");
        free(v);
    }
    int i = 0;
    for (const cJSON *c = node->child; c && !st; c = c->next, i++) {
        if (!cJSON_IsArray(c) && !cJSON_IsObject(c))
            continue;
        locate(at, size, c, i);
        st = unique_keys(c, what, at, size, err);
        at[len] = '\0';
    }
    return st;
}

enum qp_status qp_json_parse(const char *text, const char *what,
                             struct qp_json **root, struct qp_error *err)
{
    const char *end = NULL;
    cJSON *r = cJSON_ParseWithOpts(text, &end, 1);
    if (!r) {
        const char *at = end ? end : cJSON_GetErrorPtr();
        int line = 1, col = 1;
        for (const char *p = text; at && p < at && *p; p++) {
            if (*p == '\n') {
                line++;
                col = 1;
            } else {
                col++;
            }
        }
        *root = NULL;
        return qp_fail(err, QP_E_FORMAT, "%s: invalid JSON at line %d, column %d",
                       what, line, col);
    }
    char at[512] = "";
    enum qp_status st = unique_keys(r, what, at, sizeof at, err);
    if (st) {
        cJSON_Delete(r);
        *root = NULL;
        return st;
    }
    *root = Q(r);
    return QP_OK;
}

enum qp_status qp_json_load(const char *path, struct qp_json **root,
                            struct qp_error *err)
{
    char *text;
    enum qp_status st = qp_read_file(path, (size_t)256 << 20, &text, NULL, err);
    if (st)
        return st;
    char what[600];
    snprintf(what, sizeof what, "'%s'", path);
    st = qp_json_parse(text, what, root, err);
    free(text);
    return st;
}

void qp_json_free(struct qp_json *root)
{
    cJSON_Delete(J(root));
}

enum qp_json_type qp_json_type(const struct qp_json *n)
{
    const cJSON *c = J(n);
    if (!c || cJSON_IsNull(c))
        return QP_JSON_NULL;
    if (cJSON_IsBool(c))
        return QP_JSON_BOOL;
    if (cJSON_IsNumber(c))
        return QP_JSON_NUMBER;
    if (cJSON_IsString(c))
        return QP_JSON_STRING;
    if (cJSON_IsArray(c))
        return QP_JSON_ARRAY;
    if (cJSON_IsObject(c))
        return QP_JSON_OBJECT;
    return QP_JSON_NULL;
}

const char *qp_json_type_name(enum qp_json_type t)
{
    static const char *const names[] = {"null", "boolean", "number", "string",
                                        "array", "object"};
    _Static_assert(sizeof names / sizeof names[0] == QP_JSON_TYPE_COUNT,
                   "names must cover every JSON type");
    return (unsigned)t < QP_JSON_TYPE_COUNT ? names[t] : "?";
}

const struct qp_json *qp_json_get(const struct qp_json *n, const char *key)
{
    if (!cJSON_IsObject(J(n)))
        return NULL;
    return Q(cJSON_GetObjectItemCaseSensitive(J(n), key));
}

size_t qp_json_size(const struct qp_json *n)
{
    const cJSON *c = J(n);
    if (!cJSON_IsArray(c) && !cJSON_IsObject(c))
        return 0;
    size_t k = 0;
    for (const cJSON *e = c->child; e; e = e->next)
        k++;
    return k;
}

const struct qp_json *qp_json_at(const struct qp_json *n, size_t i)
{
    const cJSON *c = J(n);
    if (!cJSON_IsArray(c) && !cJSON_IsObject(c))
        return NULL;
    const cJSON *e = c->child;
    while (e && i--)
        e = e->next;
    return Q((cJSON *)e);
}

const struct qp_json *qp_json_first(const struct qp_json *n)
{
    const cJSON *c = J(n);
    if (!cJSON_IsArray(c) && !cJSON_IsObject(c))
        return NULL;
    return Q(c->child);
}

const struct qp_json *qp_json_next(const struct qp_json *e)
{
    return e ? Q(J(e)->next) : NULL;
}

const char *qp_json_key(const struct qp_json *n)
{
    return n ? J(n)->string : NULL;
}

bool qp_json_str(const struct qp_json *n, const char **out)
{
    if (!cJSON_IsString(J(n)))
        return false;
    *out = J(n)->valuestring;
    return true;
}

bool qp_json_num(const struct qp_json *n, double *out)
{
    if (!cJSON_IsNumber(J(n)))
        return false;
    *out = J(n)->valuedouble;
    return true;
}

bool qp_json_bool(const struct qp_json *n, bool *out)
{
    if (!cJSON_IsBool(J(n)))
        return false;
    *out = cJSON_IsTrue(J(n));
    return true;
}

struct qp_json *qp_json_new_object(void) { return Q(cJSON_CreateObject()); }
struct qp_json *qp_json_new_array(void) { return Q(cJSON_CreateArray()); }

static struct qp_json *add(struct qp_json *obj, const char *key, cJSON *v)
{
    if (!v)
        return NULL;
    cJSON_bool ok = key ? cJSON_AddItemToObject(J(obj), key, v)
                        : cJSON_AddItemToArray(J(obj), v);
    if (!ok) {
        cJSON_Delete(v);
        return NULL;
    }
    return Q(v);
}

struct qp_json *qp_json_add_str(struct qp_json *obj, const char *key,
                                const char *v)
{
    return add(obj, key, cJSON_CreateString(v));
}

struct qp_json *qp_json_add_num(struct qp_json *obj, const char *key, double v)
{
    return add(obj, key, cJSON_CreateNumber(v));
}

struct qp_json *qp_json_add_bool(struct qp_json *obj, const char *key, bool v)
{
    return add(obj, key, cJSON_CreateBool(v));
}

struct qp_json *qp_json_add_null(struct qp_json *obj, const char *key)
{
    return add(obj, key, cJSON_CreateNull());
}

struct qp_json *qp_json_add_object(struct qp_json *obj, const char *key)
{
    return add(obj, key, cJSON_CreateObject());
}

struct qp_json *qp_json_add_array(struct qp_json *obj, const char *key)
{
    return add(obj, key, cJSON_CreateArray());
}

char *qp_json_print(const struct qp_json *n, bool pretty)
{
    return pretty ? cJSON_Print(J(n)) : cJSON_PrintUnformatted(J(n));
}

enum qp_status qp_json_save(const char *path, const struct qp_json *n,
                            bool pretty, struct qp_error *err)
{
    char *text = qp_json_print(n, pretty);
    if (!text)
        return qp_fail(err, QP_E_NOMEM, "'%s': out of memory", path);
    struct qp_outfile *of;
    enum qp_status st = qp_outfile_open(path, &of, err);
    if (!st) {
        fputs(text, of->fp);
        fputc('\n', of->fp);
        st = qp_outfile_commit(of, err);
    }
    free(text);
    return st;
}
