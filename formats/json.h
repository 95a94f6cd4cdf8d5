/* formats/json.h: JSON documents, through cJSON (the only module that
 * calls it). Other modules read recipes, maps and sidecars through these
 * functions, so parse errors always name the file, line and column.
 *
 * A struct qp_json is a node of a document; nodes returned by the getters
 * are borrowed from the document and live until qp_json_free(root). */
#ifndef QP_FORMATS_JSON_H
#define QP_FORMATS_JSON_H

#include <stdbool.h>
#include <stddef.h>

#include "core/status.h"

struct qp_json;

enum qp_json_type {
    QP_JSON_NULL = 0,
    QP_JSON_BOOL,
    QP_JSON_NUMBER,
    QP_JSON_STRING,
    QP_JSON_ARRAY,
    QP_JSON_OBJECT,
    QP_JSON_TYPE_COUNT
};

/* Parses text (NUL-terminated); `what` names it in messages ("'f.json'").
 * QP_E_FORMAT with line and column on a syntax error, and for an object
 * (at any depth) that repeats a key: 'f.json': key "k" appears twice in
 * "layers" (JSON allows it, but which value counts is a reader's guess).
 * *root belongs to the caller (qp_json_free). */
enum qp_status qp_json_parse(const char *text, const char *what,
                             struct qp_json **root, struct qp_error *err);

/* Reads and parses a file (at most 256 MiB). */
enum qp_status qp_json_load(const char *path, struct qp_json **root,
                            struct qp_error *err);

void qp_json_free(struct qp_json *root);

enum qp_json_type qp_json_type(const struct qp_json *n);
const char *qp_json_type_name(enum qp_json_type t);

/* Object member by key (NULL when absent or n is not an object). */
const struct qp_json *qp_json_get(const struct qp_json *n, const char *key);
/* Number of array elements or object members (0 otherwise). */
size_t qp_json_size(const struct qp_json *n);
/* i-th array element or object member (in document order). */
const struct qp_json *qp_json_at(const struct qp_json *n, size_t i);
/* Iteration in O(1) per step (qp_json_at walks from the start): the first
 * array element or object member of n, and the one after e; NULL at the
 * end or when n is not an array or object. */
const struct qp_json *qp_json_first(const struct qp_json *n);
const struct qp_json *qp_json_next(const struct qp_json *e);
/* The key of an object member node, or NULL. */
const char *qp_json_key(const struct qp_json *n);

/* Values; the getters return false when the node has another type. */
bool qp_json_str(const struct qp_json *n, const char **out);
bool qp_json_num(const struct qp_json *n, double *out);
bool qp_json_bool(const struct qp_json *n, bool *out);

/* ---- building ------------------------------------------------------------ */

struct qp_json *qp_json_new_object(void);
struct qp_json *qp_json_new_array(void);
/* Each adds a member to object obj (or an element to array obj when key is
 * NULL) and returns the new node, or NULL on no memory. */
struct qp_json *qp_json_add_str(struct qp_json *obj, const char *key,
                                const char *v);
struct qp_json *qp_json_add_num(struct qp_json *obj, const char *key, double v);
struct qp_json *qp_json_add_bool(struct qp_json *obj, const char *key, bool v);
struct qp_json *qp_json_add_null(struct qp_json *obj, const char *key);
struct qp_json *qp_json_add_object(struct qp_json *obj, const char *key);
struct qp_json *qp_json_add_array(struct qp_json *obj, const char *key);

/* malloc'd text of the document (pretty: indented, one member per line).
 * Numbers print with enough digits to read back the same double. */
char *qp_json_print(const struct qp_json *n, bool pretty);

/* Writes the document to path atomically. */
enum qp_status qp_json_save(const char *path, const struct qp_json *n,
                            bool pretty, struct qp_error *err);

#endif
