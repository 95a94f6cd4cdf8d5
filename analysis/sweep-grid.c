/* analysis/sweep-grid.c: grid specs, expanded into configurations
 * (analysis/sweep-grid.h). */
#include "analysis/sweep-grid.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fileio.h"
#include "formats/json.h"

const char *qp_sweep_kind_name(enum qp_sweep_kind k)
{
    static const char *const names[] = {"fp32", "scheme", "recipe"};
    _Static_assert(sizeof names / sizeof names[0] == QP_SWEEP_KIND_COUNT, "kinds");
    return (unsigned)k < QP_SWEEP_KIND_COUNT ? names[k] : "?";
}

/* ---- expansion ------------------------------------------------------------- */

struct list {
    char **v;
    size_t n, cap;
};

static bool push(struct list *l, char *s)
{
    if (!s)
        return false;
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 8;
        char **v = realloc(l->v, cap * sizeof *v);
        if (!v) {
            free(s);
            return false;
        }
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = s;
    return true;
}

void qp_sweep_items_free(char **items, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(items[i]);
    free(items);
}

/* The index of the '}' closing the '{' at s[open], or -1. */
static long closing(const char *s, size_t open)
{
    int depth = 0;
    for (size_t i = open; s[i]; i++) {
        depth += s[i] == '{' ? 1 : s[i] == '}' ? -1 : 0;
        if (!depth)
            return (long)i;
    }
    return -1;
}

/* Expands the braces of s[0..len) into l. */
static enum qp_status expand(const char *s, size_t len, const char *what,
                             struct list *l, struct qp_error *err)
{
    const char *open = memchr(s, '{', len);
    if (!open) {
        const char *close = memchr(s, '}', len);
        if (close)
            return qp_fail(err, QP_E_INVAL, "%s: '}' without '{' in '%.*s'", what,
                           (int)len, s);
        if (l->n >= QP_SWEEP_GRID_MAX)
            return qp_fail(err, QP_E_INVAL, "%s: more than %d entries", what,
                           QP_SWEEP_GRID_MAX);
        return push(l, strndup(s, len)) ? QP_OK
                                         : qp_fail(err, QP_E_NOMEM, "out of memory");
    }
    char *copy = strndup(s, len);
    if (!copy)
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    size_t o = (size_t)(open - s);
    long c = closing(copy, o);
    enum qp_status st = QP_OK;
    if (c < 0)
        st = qp_fail(err, QP_E_INVAL, "%s: '{' without '}' in '%s'", what, copy);
    /* each top-level choice between the braces, with the rest after it */
    size_t start = o + 1, tail = (size_t)c + 1, tail_len = len - tail;
    int depth = 0;
    for (size_t i = start; !st && (long)i <= c; i++) {
        if ((long)i < c && (depth || copy[i] != ',')) {
            depth += copy[i] == '{' ? 1 : copy[i] == '}' ? -1 : 0;
            continue;
        }
        size_t clen = i - start, n = o + clen + tail_len;
        char *alt = malloc(n + 1);
        if (!alt) {
            st = qp_fail(err, QP_E_NOMEM, "out of memory");
            break;
        }
        memcpy(alt, copy, o);
        memcpy(alt + o, copy + start, clen);
        memcpy(alt + o + clen, copy + tail, tail_len);
        alt[n] = '\0';
        st = expand(alt, n, what, l, err);
        free(alt);
        start = i + 1;
    }
    free(copy);
    return st;
}

static char *trimmed(const char *s, size_t len)
{
    while (len && isspace((unsigned char)*s))
        s++, len--;
    while (len && isspace((unsigned char)s[len - 1]))
        len--;
    return strndup(s, len);
}

enum qp_status qp_sweep_expand(const char *spec, const char *what,
                               char ***items, size_t *n, struct qp_error *err)
{
    struct list l = {0};
    enum qp_status st = QP_OK;
    size_t start = 0, len = strlen(spec);
    int depth = 0;
    for (size_t i = 0; !st && i <= len; i++) {
        if (i < len && spec[i] != ',') {
            depth += spec[i] == '{' ? 1 : spec[i] == '}' ? -1 : 0;
            continue;
        }
        if (i < len && depth > 0)
            continue;
        char *entry = trimmed(spec + start, i - start);
        if (!entry)
            st = qp_fail(err, QP_E_NOMEM, "out of memory");
        else if (!*entry)
            st = qp_fail(err, QP_E_INVAL, "%s: empty entry in '%s'", what, spec);
        else
            st = expand(entry, strlen(entry), what, &l, err);
        free(entry);
        start = i + 1;
    }
    /* an expansion may leave blanks around a choice: trim them too */
    for (size_t i = 0; !st && i < l.n; i++) {
        char *t = trimmed(l.v[i], strlen(l.v[i]));
        if (!t) {
            st = qp_fail(err, QP_E_NOMEM, "out of memory");
            break;
        }
        free(l.v[i]);
        l.v[i] = t;
        if (!*t)
            st = qp_fail(err, QP_E_INVAL, "%s: an empty entry in '%s'", what, spec);
    }
    if (st) {
        qp_sweep_items_free(l.v, l.n);
        *items = NULL;
        *n = 0;
        return st;
    }
    *items = l.v;
    *n = l.n;
    return QP_OK;
}

/* ---- configurations ----------------------------------------------------------- */

static void cfg_release(struct qp_sweep_cfg *c)
{
    free(c->name);
    free(c->recipe_json);
    qp_recipe_free(c->recipe);
    *c = (struct qp_sweep_cfg){0};
}

void qp_sweep_grid_release(struct qp_sweep_grid *g)
{
    for (size_t i = 0; i < g->n; i++)
        cfg_release(&g->c[i]);
    free(g->c);
    *g = (struct qp_sweep_grid){0};
}

/* The canonical document of recipe r, compact, into c->recipe_json. */
static enum qp_status canonical(struct qp_sweep_cfg *c, const struct qp_recipe *r,
                                struct qp_error *err)
{
    struct qp_json *doc;
    enum qp_status st = qp_recipe_to_json(r, &doc, err);
    if (st)
        return st;
    c->recipe_json = qp_json_print(doc, false);
    qp_json_free(doc);
    return c->recipe_json ? QP_OK : qp_fail(err, QP_E_NOMEM, "out of memory");
}

/* The document of a uniform scheme (or fp32): parsed back through the
 * recipe parser, so that it is canonical as a loaded recipe is. */
static enum qp_status uniform_json(struct qp_sweep_cfg *c, const char *what,
                                   struct qp_error *err)
{
    char text[2 * QP_SCHEME_MAX + 96];
    if (c->kind == QP_SWEEP_FP32)
        snprintf(text, sizeof text, "{\"qprobe_recipe\": 1, \"default\": \"fp32\"}");
    else
        snprintf(text, sizeof text, "{\"qprobe_recipe\": 1, \"default\": \"%s\", "
                 "\"requant\": \"%s\"}", c->scheme_text, qp_rq_flavor_name(c->flavor));
    struct qp_recipe *r;
    enum qp_status st = qp_recipe_parse(text, what, &r, err);
    if (!st)
        st = canonical(c, r, err);
    qp_recipe_free(r);
    return st;
}

/* A recipe file's configuration: the flavor made explicit. */
static enum qp_status recipe_cfg(struct qp_sweep_cfg *c, const char *path,
                                 const struct qp_sweep_grid_opts *o,
                                 struct qp_error *err)
{
    enum qp_status st = qp_recipe_load(path, &c->recipe, err);
    if (st)
        return st;
    struct qp_recipe *r = c->recipe;
    c->flavor = o->flavor_given ? o->flavor : r->requant ? r->flavor
                                                         : QP_RQ_TFLITE_DOUBLE;
    free(r->requant);
    if (!(r->requant = strdup(qp_rq_flavor_name(c->flavor))))
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    r->flavor = c->flavor;
    if (r->has_default)
        qp_recipe_rule_format(&r->def, c->scheme_text, sizeof c->scheme_text);
    return canonical(c, r, err);
}

/* Parses one entry into c. */
static enum qp_status parse_entry(const char *entry, const char *what,
                                  const struct qp_sweep_grid_opts *o,
                                  struct qp_sweep_cfg *c, struct qp_error *err)
{
    *c = (struct qp_sweep_cfg){.mode = o->mode, .flavor = o->flavor,
                               .flavor_given = o->flavor_given};
    const char *body = entry;
    bool prefixed = false;
    if (!strncmp(entry, "fake:", 5) || !strncmp(entry, "int:", 4)) {
        c->mode = entry[0] == 'f' ? QP_MODE_FAKE : QP_MODE_INT;
        body = entry + (entry[0] == 'f' ? 5 : 4);
        prefixed = true;
    }
    if (!c->flavor_given)
        c->flavor = QP_RQ_TFLITE_DOUBLE;
    const char *prefix = c->mode == QP_MODE_INT ? "int:" : "";
    enum qp_status st;
    if (!strcmp(body, "fp32")) {
        if (prefixed)
            return qp_fail(err, QP_E_INVAL, "%s: '%s': fp32 runs in no "
                           "quantized mode", what, entry);
        c->kind = QP_SWEEP_FP32;
        c->mode = QP_MODE_FP32;
        snprintf(c->scheme_text, sizeof c->scheme_text, "fp32");
        st = uniform_json(c, what, err);
    } else if (qp_str_ends_with(body, ".json")) {
        c->kind = QP_SWEEP_RECIPE;
        st = recipe_cfg(c, body, o, err);
    } else {
        c->kind = QP_SWEEP_SCHEME;
        st = qp_scheme_parse(body, &c->scheme, NULL, err);
        if (st)
            return qp_error_prefix(err, "%s: ", what);
        qp_scheme_format(&c->scheme, c->scheme_text, sizeof c->scheme_text);
        st = uniform_json(c, what, err);
        body = c->scheme_text;
    }
    if (!st) {
        size_t n = strlen(prefix) + strlen(body) + 1;
        if ((c->name = malloc(n)))
            snprintf(c->name, n, "%s%s", prefix, body);
        else
            st = qp_fail(err, QP_E_NOMEM, "out of memory");
    }
    if (st)
        cfg_release(c);
    return st;
}

/* Appends c unless it repeats a configuration (then releases it). */
static enum qp_status add_cfg(struct qp_sweep_grid *g, struct qp_sweep_cfg *c,
                              struct qp_error *err)
{
    for (size_t i = 0; i < g->n; i++)
        if (g->c[i].mode == c->mode && !strcmp(g->c[i].recipe_json, c->recipe_json)) {
            g->dropped++;
            cfg_release(c);
            return QP_OK;
        }
    if (g->n == g->cap) {
        size_t cap = g->cap ? 2 * g->cap : 16;
        struct qp_sweep_cfg *v = realloc(g->c, cap * sizeof *v);
        if (!v) {
            cfg_release(c);
            return qp_fail(err, QP_E_NOMEM, "out of memory");
        }
        g->c = v;
        g->cap = cap;
    }
    g->c[g->n++] = *c;
    return QP_OK;
}

enum qp_status qp_sweep_grid_controls(struct qp_sweep_grid *g,
                                      const struct qp_sweep_grid_opts *o,
                                      struct qp_error *err)
{
    static const char *const controls[] = {"fp32", "fake:w8c"};
    for (size_t k = 0; k < 2; k++) {
        struct qp_sweep_cfg c;
        enum qp_status st = parse_entry(controls[k], "control row", o, &c, err);
        if (st)
            return st;
        c.control = true;
        if ((st = add_cfg(g, &c, err)))
            return st;
    }
    return QP_OK;
}

enum qp_status qp_sweep_grid_add(struct qp_sweep_grid *g, const char *spec,
                                 const char *what,
                                 const struct qp_sweep_grid_opts *o,
                                 struct qp_error *err)
{
    char **items;
    size_t n;
    enum qp_status st = qp_sweep_expand(spec, what, &items, &n, err);
    for (size_t i = 0; !st && i < n; i++) {
        struct qp_sweep_cfg c;
        if (!(st = parse_entry(items[i], what, o, &c, err)))
            st = add_cfg(g, &c, err);
    }
    if (!st && g->n > QP_SWEEP_GRID_MAX)
        st = qp_fail(err, QP_E_INVAL, "%s: more than %d configurations", what,
                     QP_SWEEP_GRID_MAX);
    if (n)
        qp_sweep_items_free(items, n);
    return st;
}

enum qp_status qp_sweep_grid_add_file(struct qp_sweep_grid *g, const char *path,
                                      const struct qp_sweep_grid_opts *o,
                                      struct qp_error *err)
{
    char *text;
    size_t len;
    enum qp_status st = qp_read_file(path, 1 << 24, &text, &len, err);
    if (st)
        return st;
    size_t lineno = 0, before = g->n + g->dropped;
    for (char *line = text; !st && line && *line;) {
        char *next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        lineno++;
        char *hash = strchr(line, '#');
        if (hash)
            *hash = '\0';
        char *t = trimmed(line, strlen(line));
        if (!t) {
            st = qp_fail(err, QP_E_NOMEM, "out of memory");
        } else if (*t) {
            char what[600];
            snprintf(what, sizeof what, "'%s' line %zu", path, lineno);
            st = qp_sweep_grid_add(g, t, what, o, err);
        }
        free(t);
        line = next;
    }
    free(text);
    if (!st && g->n + g->dropped == before)
        st = qp_fail(err, QP_E_INVAL, "'%s': no grid entry in the file", path);
    return st;
}
