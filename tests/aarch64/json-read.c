/* tests/aarch64/json-read.c: the reading half of formats/json.h for the
 * cross-compiled kernel test binary (make test-aarch64).
 *
 * formats/json.c wraps cJSON, and this machine has no aarch64 build of
 * cJSON, so the golden-vector tests (tests/unit/test-kernels-golden.c,
 * test-requant-golden.c, test-requant-derive.c), which read each case's
 * case.json, link this small reader instead when built for aarch64. It
 * implements RFC 8259 documents (objects, arrays, strings with every
 * escape, numbers, literals) into a tree with the accessors of
 * formats/json.h; the building and printing half is not provided. Never
 * part of libqprobe. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fileio.h"
#include "formats/json.h"

#define MAX_DEPTH 64

struct qp_json {
    enum qp_json_type type;
    char *key;               /* member name inside an object, else NULL */
    char *str;               /* QP_JSON_STRING */
    double num;              /* QP_JSON_NUMBER */
    bool b;                  /* QP_JSON_BOOL */
    struct qp_json *child;   /* first element or member */
    struct qp_json *next;    /* next sibling */
};

struct parser {
    const char *s, *p;
    const char *fail; /* where parsing stopped, NULL while fine */
};

static struct qp_json *value(struct parser *ps, int depth);

static void ws(struct parser *ps)
{
    while (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' ||
           *ps->p == '\r')
        ps->p++;
}

static void *bad(struct parser *ps)
{
    if (!ps->fail)
        ps->fail = ps->p;
    return NULL;
}

static bool fail(struct parser *ps)
{
    bad(ps);
    return false;
}

static bool fail_at(struct parser *ps, const char *at)
{
    ps->p = at;
    return fail(ps);
}

static int hex4(const char *p)
{
    int v = 0;
    for (int i = 0; i < 4; i++) {
        char c = p[i];
        int d = c >= '0' && c <= '9'   ? c - '0'
                : c >= 'a' && c <= 'f' ? c - 'a' + 10
                : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                       : -1;
        if (d < 0)
            return -1;
        v = v * 16 + d;
    }
    return v;
}

/* UTF-8 of code point cp into o; returns the bytes written */
static size_t utf8(uint32_t cp, char *o)
{
    if (cp < 0x80) {
        o[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (char)(0xC0 | cp >> 6);
        o[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (char)(0xE0 | cp >> 12);
        o[1] = (char)(0x80 | (cp >> 6 & 0x3F));
        o[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | cp >> 18);
    o[1] = (char)(0x80 | (cp >> 12 & 0x3F));
    o[2] = (char)(0x80 | (cp >> 6 & 0x3F));
    o[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* A string at ps->p (on the opening quote), malloc'd and decoded. Escapes
 * never lengthen the text (\uXXXX is 6 bytes for at most 3, a surrogate
 * pair 12 for 4), so the input length bounds the output. Errors point at
 * the opening quote of an unterminated string, else at the bad character
 * or escape. */
static char *string(struct parser *ps)
{
    const char *q = ps->p + 1;
    while (*q && *q != '"')
        q += *q == '\\' && q[1] ? 2 : 1;
    if (*q != '"')
        return bad(ps);
    ps->p++;
    char *out = malloc((size_t)(q - ps->p) + 1), *o = out;
    const char *at = ps->p;
    if (!out)
        return bad(ps);
    while (*(at = ps->p) != '"') {
        unsigned char c = (unsigned char)*ps->p;
        if (c < 0x20)
            goto fail; /* control characters must be escaped */
        if (c != '\\') {
            *o++ = (char)c;
            ps->p++;
            continue;
        }
        char e = ps->p[1];
        static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
        const char *k = e ? strchr(from, e) : NULL;
        if (k) {
            *o++ = to[k - from];
            ps->p += 2;
            continue;
        }
        if (e != 'u')
            goto fail;
        int u = hex4(ps->p + 2);
        if (u < 0)
            goto fail;
        ps->p += 6;
        uint32_t cp = (uint32_t)u;
        if (cp >= 0xD800 && cp < 0xDC00) { /* a high surrogate: its pair */
            int lo = ps->p[0] == '\\' && ps->p[1] == 'u' ? hex4(ps->p + 2) : -1;
            if (lo < 0xDC00 || lo >= 0xE000)
                goto fail;
            cp = 0x10000 + ((cp - 0xD800) << 10) + (uint32_t)(lo - 0xDC00);
            ps->p += 6;
        } else if (cp >= 0xDC00 && cp < 0xE000) {
            goto fail;
        }
        o += utf8(cp, o);
    }
    ps->p++;
    *o = '\0';
    return out;
fail:
    free(out);
    ps->p = at;
    return bad(ps);
}

/* A number (RFC 8259 grammar) at ps->p into n->num; an error points at
 * the first character that does not fit. */
static bool number(struct parser *ps, struct qp_json *n)
{
    const char *q = ps->p;
    if (*q == '-')
        q++;
    if (*q == '0')
        q++;
    else if (*q >= '1' && *q <= '9')
        while (*q >= '0' && *q <= '9')
            q++;
    else
        return fail_at(ps, q);
    if (*q == '.') {
        if (!(*++q >= '0' && *q <= '9'))
            return fail_at(ps, q);
        while (*q >= '0' && *q <= '9')
            q++;
    }
    if (*q == 'e' || *q == 'E') {
        q++;
        if (*q == '+' || *q == '-')
            q++;
        if (!(*q >= '0' && *q <= '9'))
            return fail_at(ps, q);
        while (*q >= '0' && *q <= '9')
            q++;
    }
    n->num = strtod(ps->p, NULL); /* the C locale: '.' is the separator */
    ps->p = q;
    return true;
}

static void node_free(struct qp_json *n)
{
    while (n) {
        struct qp_json *next = n->next;
        node_free(n->child);
        free(n->key);
        free(n->str);
        free(n);
        n = next;
    }
}

/* The elements of an array or members of an object, after the bracket. */
static bool items(struct parser *ps, struct qp_json *n, int depth)
{
    bool obj = n->type == QP_JSON_OBJECT;
    char close = obj ? '}' : ']';
    struct qp_json **tail = &n->child;
    ws(ps);
    if (*ps->p == close) {
        ps->p++;
        return true;
    }
    for (;;) {
        char *key = NULL;
        ws(ps);
        if (obj) {
            if (*ps->p != '"' || !(key = string(ps)))
                return fail(ps);
            ws(ps);
            if (*ps->p != ':') {
                free(key);
                return fail(ps);
            }
            ps->p++;
        }
        struct qp_json *v = value(ps, depth + 1);
        if (!v) {
            free(key);
            return false;
        }
        v->key = key;
        *tail = v;
        tail = &v->next;
        ws(ps);
        if (*ps->p == close) {
            ps->p++;
            return true;
        }
        if (*ps->p != ',')
            return fail(ps);
        ps->p++;
    }
}

static struct qp_json *value(struct parser *ps, int depth)
{
    if (depth > MAX_DEPTH)
        return bad(ps);
    ws(ps);
    struct qp_json *n = calloc(1, sizeof *n);
    if (!n)
        return bad(ps);
    bool ok = true;
    char c = *ps->p;
    if (c == '{' || c == '[') {
        n->type = c == '{' ? QP_JSON_OBJECT : QP_JSON_ARRAY;
        ps->p++;
        ok = items(ps, n, depth);
    } else if (c == '"') {
        n->type = QP_JSON_STRING;
        ok = (n->str = string(ps)) != NULL;
    } else if (c == '-' || (c >= '0' && c <= '9')) {
        n->type = QP_JSON_NUMBER;
        ok = number(ps, n);
    } else if (!strncmp(ps->p, "true", 4) || !strncmp(ps->p, "false", 5)) {
        n->type = QP_JSON_BOOL;
        n->b = c == 't';
        ps->p += n->b ? 4 : 5;
    } else if (!strncmp(ps->p, "null", 4)) {
        n->type = QP_JSON_NULL;
        ps->p += 4;
    } else {
        ok = fail(ps);
    }
    if (!ok) {
        node_free(n);
        return NULL;
    }
    return n;
}

enum qp_status qp_json_parse(const char *text, const char *what,
                             struct qp_json **root, struct qp_error *err)
{
    struct parser ps = {text, text, NULL};
    struct qp_json *r = value(&ps, 0);
    if (r) {
        ws(&ps);
        if (*ps.p) { /* trailing text */
            bad(&ps);
            node_free(r);
            r = NULL;
        }
    }
    *root = r;
    if (r)
        return QP_OK;
    int line = 1, col = 1;
    for (const char *p = text; p < ps.fail && *p; p++) {
        if (*p == '\n') {
            line++;
            col = 1;
        } else {
            col++;
        }
    }
    return qp_fail(err, QP_E_FORMAT, "%s: invalid JSON at line %d, column %d",
                   what, line, col);
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
    node_free(root);
}

enum qp_json_type qp_json_type(const struct qp_json *n)
{
    return n ? n->type : QP_JSON_NULL;
}

const struct qp_json *qp_json_first(const struct qp_json *n)
{
    return n && (n->type == QP_JSON_ARRAY || n->type == QP_JSON_OBJECT)
               ? n->child : NULL;
}

const struct qp_json *qp_json_next(const struct qp_json *e)
{
    return e ? e->next : NULL;
}

const struct qp_json *qp_json_get(const struct qp_json *n, const char *key)
{
    if (!n || n->type != QP_JSON_OBJECT)
        return NULL;
    for (const struct qp_json *e = n->child; e; e = e->next)
        if (!strcmp(e->key, key))
            return e;
    return NULL;
}

size_t qp_json_size(const struct qp_json *n)
{
    size_t k = 0;
    for (const struct qp_json *e = qp_json_first(n); e; e = e->next)
        k++;
    return k;
}

const struct qp_json *qp_json_at(const struct qp_json *n, size_t i)
{
    const struct qp_json *e = qp_json_first(n);
    while (e && i--)
        e = e->next;
    return e;
}

const char *qp_json_key(const struct qp_json *n)
{
    return n ? n->key : NULL;
}

bool qp_json_str(const struct qp_json *n, const char **out)
{
    if (!n || n->type != QP_JSON_STRING)
        return false;
    *out = n->str;
    return true;
}

bool qp_json_num(const struct qp_json *n, double *out)
{
    if (!n || n->type != QP_JSON_NUMBER)
        return false;
    *out = n->num;
    return true;
}

bool qp_json_bool(const struct qp_json *n, bool *out)
{
    if (!n || n->type != QP_JSON_BOOL)
        return false;
    *out = n->b;
    return true;
}
