#include "quant/recipe.h"

#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/json.h"
#include "kernels/requant.h"

#define VERSION 1

void qp_recipe_free(struct qp_recipe *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->nrules; i++)
        free(r->rules[i].glob);
    free(r->rules);
    free(r->requant);
    free(r);
}

/* A rule's value: "fp32" or a scheme; `where` names it in messages. */
static enum qp_status rule_value(const struct qp_json *v, const char *what,
                                 const char *where, struct qp_recipe_rule *rule,
                                 struct qp_error *err)
{
    const char *s;
    if (!qp_json_str(v, &s))
        return qp_fail(err, QP_E_FORMAT, "%s: %s: expected a scheme string or "
                       "\"fp32\", got %s", what, where,
                       qp_json_type_name(qp_json_type(v)));
    if (!strcmp(s, "fp32")) {
        rule->fp32 = true;
        return QP_OK;
    }
    if (qp_scheme_parse(s, &rule->scheme, NULL, err)) {
        qp_error_prefix(err, "%s: %s: ", what, where);
        err->status = QP_E_FORMAT;
        return QP_E_FORMAT;
    }
    return QP_OK;
}

/* Refuses a key that appears twice among the members of object o. */
static enum qp_status no_duplicates(const struct qp_json *o, const char *what,
                                    const char *in, struct qp_error *err)
{
    size_t n = qp_json_size(o);
    for (size_t i = 1; i < n; i++)
        for (size_t j = 0; j < i; j++)
            if (!strcmp(qp_json_key(qp_json_at(o, i)),
                        qp_json_key(qp_json_at(o, j))))
                return qp_fail(err, QP_E_FORMAT, "%s: %s\"%s\" appears twice",
                               what, in, qp_json_key(qp_json_at(o, i)));
    return QP_OK;
}

static enum qp_status parse_layers(const struct qp_json *layers, const char *what,
                                   struct qp_recipe *r, struct qp_error *err)
{
    if (qp_json_type(layers) != QP_JSON_OBJECT)
        return qp_fail(err, QP_E_FORMAT, "%s: \"layers\" must be an object of "
                       "glob: scheme, got %s", what,
                       qp_json_type_name(qp_json_type(layers)));
    enum qp_status st = no_duplicates(layers, what, "layers ", err);
    if (st)
        return st;
    size_t n = qp_json_size(layers);
    r->rules = calloc(n ? n : 1, sizeof *r->rules);
    if (!r->rules)
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        const struct qp_json *m = qp_json_at(layers, i);
        const char *glob = qp_json_key(m);
        if (!*glob)
            return qp_fail(err, QP_E_FORMAT, "%s: layers: a glob is empty", what);
        struct qp_recipe_rule *rule = &r->rules[i];
        if (!(rule->glob = strdup(glob)))
            return qp_fail(err, QP_E_NOMEM, "out of memory");
        r->nrules = i + 1;
        char where[400];
        snprintf(where, sizeof where, "layers \"%.300s\"", glob);
        if ((st = rule_value(m, what, where, rule, err)))
            return st;
    }
    return QP_OK;
}

static enum qp_status parse_root(const struct qp_json *root, const char *what,
                                 struct qp_recipe *r, struct qp_error *err)
{
    if (qp_json_type(root) != QP_JSON_OBJECT)
        return qp_fail(err, QP_E_FORMAT, "%s: a recipe is a JSON object, got %s",
                       what, qp_json_type_name(qp_json_type(root)));
    enum qp_status st = no_duplicates(root, what, "key ", err);
    if (st)
        return st;
    for (size_t i = 0; i < qp_json_size(root); i++) {
        const char *k = qp_json_key(qp_json_at(root, i));
        if (strcmp(k, "qprobe_recipe") && strcmp(k, "default") &&
            strcmp(k, "requant") && strcmp(k, "layers"))
            return qp_fail(err, QP_E_FORMAT, "%s: unknown key \"%.300s\" "
                           "(expected qprobe_recipe, default, requant, layers)",
                           what, k);
    }
    const struct qp_json *v = qp_json_get(root, "qprobe_recipe");
    double version;
    if (!v)
        return qp_fail(err, QP_E_FORMAT, "%s: missing \"qprobe_recipe\": %d "
                       "(the recipe format version)", what, VERSION);
    if (!qp_json_num(v, &version))
        return qp_fail(err, QP_E_FORMAT, "%s: \"qprobe_recipe\" must be the "
                       "number %d, got %s", what, VERSION,
                       qp_json_type_name(qp_json_type(v)));
    if (version != VERSION)
        return qp_fail(err, QP_E_FORMAT, "%s: \"qprobe_recipe\" is %g, this "
                       "qprobe reads version %d", what, version, VERSION);
    if ((v = qp_json_get(root, "default"))) {
        if ((st = rule_value(v, what, "\"default\"", &r->def, err)))
            return st;
        r->has_default = true;
    }
    if ((v = qp_json_get(root, "requant"))) {
        const char *s;
        if (!qp_json_str(v, &s))
            return qp_fail(err, QP_E_FORMAT, "%s: \"requant\" must be a flavor "
                           "name string, got %s", what,
                           qp_json_type_name(qp_json_type(v)));
        if (!qp_rq_flavor_from_name(s, &r->flavor)) {
            char names[400];
            size_t len = 0;
            for (int f = 0; f < QP_RQ_COUNT && len < sizeof names; f++)
                len += (size_t)snprintf(names + len, sizeof names - len, "%s%s",
                                        f ? ", " : "",
                                        qp_rq_flavor_name((enum qp_rq_flavor)f));
            return qp_fail(err, QP_E_FORMAT, "%s: \"requant\": unknown flavor "
                           "'%.100s' (expected one of %s)", what, s, names);
        }
        if (!(r->requant = strdup(s)))
            return qp_fail(err, QP_E_NOMEM, "out of memory");
    }
    if ((v = qp_json_get(root, "layers")))
        return parse_layers(v, what, r, err);
    return QP_OK;
}

/* Builds the recipe from a parsed document and frees the document. */
static enum qp_status from_json(struct qp_json *root, const char *what,
                                struct qp_recipe **out, struct qp_error *err)
{
    struct qp_recipe *r = calloc(1, sizeof *r);
    enum qp_status st = r ? parse_root(root, what, r, err)
                          : qp_fail(err, QP_E_NOMEM, "out of memory");
    qp_json_free(root);
    if (st) {
        qp_recipe_free(r);
        return st;
    }
    *out = r;
    return QP_OK;
}

enum qp_status qp_recipe_parse(const char *text, const char *what,
                               struct qp_recipe **out, struct qp_error *err)
{
    *out = NULL;
    struct qp_json *root;
    enum qp_status st = qp_json_parse(text, what, &root, err);
    return st ? st : from_json(root, what, out, err);
}

enum qp_status qp_recipe_load(const char *path, struct qp_recipe **out,
                              struct qp_error *err)
{
    *out = NULL;
    struct qp_json *root;
    enum qp_status st = qp_json_load(path, &root, err);
    if (st)
        return st;
    char what[600];
    snprintf(what, sizeof what, "'%s'", path);
    return from_json(root, what, out, err);
}

bool qp_recipe_glob_match(const char *glob, const char *name)
{
    if (!fnmatch(glob, name, 0))
        return true;
    const char *dot = strrchr(name, '.'), *slash = strrchr(name, '/');
    const char *cut = dot > slash ? dot : slash;
    if (!cut || cut == name)
        return false;
    size_t n = (size_t)(cut - name);
    char buf[512];
    char *layer = n < sizeof buf ? buf : malloc(n + 1);
    if (!layer)
        return false;
    memcpy(layer, name, n);
    layer[n] = '\0';
    bool m = !fnmatch(glob, layer, 0);
    if (layer != buf)
        free(layer);
    return m;
}

const struct qp_recipe_rule *qp_recipe_lookup(const struct qp_recipe *r,
                                              const char *name)
{
    for (size_t i = 0; i < r->nrules; i++)
        if (qp_recipe_glob_match(r->rules[i].glob, name))
            return &r->rules[i];
    return r->has_default ? &r->def : NULL;
}
