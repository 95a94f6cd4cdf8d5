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

static enum qp_status bad_value(const char *what, const char *where,
                                struct qp_error *err)
{
    qp_error_prefix(err, "%s: %s: ", what, where);
    err->status = QP_E_FORMAT;
    return QP_E_FORMAT;
}

/* A rule's value (see the header's forms); `where` names it in messages. */
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
        rule->fp32 = rule->w_said = rule->w_float = true;
        rule->a_said = rule->a_float = true;
        return QP_OK;
    }
    if (s[0] == 'a') { /* the output activation only */
        if (qp_ascheme_parse(s, &rule->scheme.a, NULL, err))
            return bad_value(what, where, err);
        rule->a_said = rule->a_set = rule->scheme.has_acts = true;
        return QP_OK;
    }
    const char *plus = strchr(s, '+');
    char left[QP_SCHEME_MAX + 1];
    size_t ll = plus ? (size_t)(plus - s) : strlen(s);
    if (ll > QP_SCHEME_MAX)
        ll = QP_SCHEME_MAX;
    memcpy(left, s, ll);
    left[ll] = '\0';
    bool w_fp32 = !strcmp(left, "fp32"), a_fp32 = plus && !strcmp(plus + 1, "fp32");
    if (w_fp32 || a_fp32) {
        rule->w_said = rule->a_said = true;
        rule->w_float = w_fp32;
        rule->a_float = a_fp32;
        if (w_fp32 && a_fp32)
            return qp_fail(err, QP_E_FORMAT, "%s: %s: write \"fp32\" for a "
                           "layer kept float", what, where);
        if (!w_fp32 && qp_scheme_parse(left, &rule->scheme, NULL, err))
            return bad_value(what, where, err);
        if (!a_fp32) {
            if (!plus)
                return qp_fail(err, QP_E_FORMAT, "%s: %s: \"fp32+\" needs an "
                               "activation part, e.g. \"fp32+a8t\"", what,
                               where);
            if (qp_ascheme_parse(plus + 1, &rule->scheme.a, NULL, err))
                return bad_value(what, where, err);
            rule->a_set = rule->scheme.has_acts = true;
        }
        return QP_OK;
    }
    if (qp_scheme_parse(s, &rule->scheme, NULL, err))
        return bad_value(what, where, err);
    rule->w_said = true;
    rule->a_said = rule->a_set = rule->scheme.has_acts;
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
            strcmp(k, "requant") && strcmp(k, "layers") &&
            strcmp(k, "derived") && k[0] != '_')
            return qp_fail(err, QP_E_FORMAT, "%s: unknown key \"%.300s\" "
                           "(expected qprobe_recipe, default, requant, layers, "
                           "derived, or a '_' comment)", what, k);
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
        if (!r->def.w_said || (r->def.w_float != r->def.a_float && r->def.w_float))
            return qp_fail(err, QP_E_FORMAT, "%s: \"default\" must be a "
                           "scheme (weights, optionally +activations) or "
                           "\"fp32\"", what);
        r->has_default = true;
    }
    if ((v = qp_json_get(root, "derived")) &&
        qp_json_type(v) != QP_JSON_OBJECT)
        return qp_fail(err, QP_E_FORMAT, "%s: \"derived\" must be an object, "
                       "got %s", what, qp_json_type_name(qp_json_type(v)));
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

static bool any_match(const char *glob, const char *const *names, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (names[i] && qp_recipe_glob_match(glob, names[i]))
            return true;
    return false;
}

/* The first rule matching one of names that says something about the
 * part (weights or output), else the default; *idx as the header says. */
static const struct qp_recipe_rule *decide(const struct qp_recipe *r,
                                           const char *const *names, size_t n,
                                           enum qp_recipe_part part, int *idx)
{
    const struct qp_recipe_rule *hit = r->has_default ? &r->def : NULL;
    int at = r->has_default ? -1 : -2;
    for (size_t i = 0; i < r->nrules; i++) {
        const struct qp_recipe_rule *x = &r->rules[i];
        bool says = part == QP_RECIPE_WEIGHTS ? x->w_said : x->a_said;
        if (says && any_match(x->glob, names, n)) {
            hit = x;
            at = (int)i;
            break;
        }
    }
    if (idx)
        *idx = at;
    return hit;
}

bool qp_recipe_weights(const struct qp_recipe *r, const char *const *names,
                       size_t n, struct qp_wscheme *ws, int *rule_index)
{
    const struct qp_recipe_rule *hit =
        decide(r, names, n, QP_RECIPE_WEIGHTS, rule_index);
    if (!hit || hit->w_float)
        return false;
    *ws = hit->scheme.w;
    return true;
}

bool qp_recipe_output(const struct qp_recipe *r, const char *const *names,
                      size_t n, struct qp_ascheme *as, int *rule_index)
{
    const struct qp_recipe_rule *hit =
        decide(r, names, n, QP_RECIPE_OUTPUT, rule_index);
    if (!hit || hit->a_float || !hit->a_set)
        return false;
    *as = hit->scheme.a;
    return true;
}

void qp_recipe_rule_format(const struct qp_recipe_rule *rule, char *buf,
                           size_t size)
{
    char w[QP_SCHEME_MAX + 1], a[QP_SCHEME_MAX + 1];
    if (rule->fp32) {
        snprintf(buf, size, "fp32");
        return;
    }
    struct qp_scheme wonly = rule->scheme;
    wonly.has_acts = false;
    if (rule->w_said && !rule->w_float)
        qp_scheme_format(&wonly, w, sizeof w);
    else
        snprintf(w, sizeof w, "fp32");
    if (rule->a_set)
        qp_ascheme_format(&rule->scheme.a, a, sizeof a);
    else
        snprintf(a, sizeof a, "fp32");
    if (!rule->w_said)
        snprintf(buf, size, "%s", a);
    else if (!rule->a_said)
        snprintf(buf, size, "%s", w);
    else
        snprintf(buf, size, "%s+%s", w, a);
}

enum qp_status qp_recipe_to_json(const struct qp_recipe *r,
                                 struct qp_json **out, struct qp_error *err)
{
    struct qp_json *root = qp_json_new_object(), *layers = NULL;
    char v[2 * QP_SCHEME_MAX + 8];
    bool ok = root && qp_json_add_num(root, "qprobe_recipe", VERSION);
    if (ok && r->has_default) {
        qp_recipe_rule_format(&r->def, v, sizeof v);
        ok = qp_json_add_str(root, "default", v) != NULL;
    }
    if (ok && r->requant)
        ok = qp_json_add_str(root, "requant", r->requant) != NULL;
    ok = ok && (layers = qp_json_add_object(root, "layers"));
    for (size_t i = 0; ok && i < r->nrules; i++) {
        qp_recipe_rule_format(&r->rules[i], v, sizeof v);
        ok = qp_json_add_str(layers, r->rules[i].glob, v) != NULL;
    }
    if (!ok) {
        qp_json_free(root);
        *out = NULL;
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    }
    *out = root;
    return QP_OK;
}
