#include "analysis/align.h"

#include <ctype.h>
#include <regex.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "formats/json.h"

static const char *const how_names[] = {"map-pair", "exact", "normalised",
                                        "map-rule"};
_Static_assert(sizeof how_names / sizeof how_names[0] == QP_ALIGN_HOW_COUNT,
               "a name per alignment stage");

const char *qp_align_how_name(enum qp_align_how how)
{
    return (unsigned)how < QP_ALIGN_HOW_COUNT ? how_names[how] : "?";
}

/* ---- normalisation ----------------------------------------------------------- */

static bool is_sep(char c)
{
    return c == '/' || c == '.' || c == '_' || c == ':' || c == '-' || c == ' ';
}

/* Length of name once a trailing ":N" and then "<sep>output[<sep>][N]"
 * are removed. */
static size_t strip_suffixes(const char *s, size_t n)
{
    size_t k = n;
    while (k > 0 && isdigit((unsigned char)s[k - 1]))
        k--;
    if (k < n && k > 1 && s[k - 1] == ':')
        n = k - 1;
    k = n;
    while (k > 0 && isdigit((unsigned char)s[k - 1]))
        k--;
    if (k < n && k > 0 && is_sep(s[k - 1]) && s[k - 1] != ' ')
        k--;
    if (k >= 8 && !strncasecmp(s + k - 6, "output", 6) &&
        strchr("/._:", s[k - 7]))
        n = k - 7;
    return n;
}

char *qp_align_normalise(const char *name)
{
    size_t len = strlen(name), n = strip_suffixes(name, len);
    char *r = malloc(len + 1);
    if (!r)
        return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        if (is_sep(c)) {
            if (k && r[k - 1] != '_')
                r[k++] = '_';
        } else {
            r[k++] = (char)tolower((unsigned char)c);
        }
    }
    while (k && r[k - 1] == '_')
        k--;
    r[k] = '\0';
    if (!k) { /* nothing but separators or a suffix: keep the lower-cased name */
        for (size_t i = 0; i <= len; i++)
            r[i] = (char)tolower((unsigned char)name[i]);
    }
    return r;
}

/* ---- map files ---------------------------------------------------------------- */

struct map_rule {
    regex_t re;
    char *tmpl;
};

struct qp_align_map {
    struct map_rule *rules;
    size_t nrules;
    char **pref, **ptest; /* explicit pairs */
    size_t npairs;
};

void qp_align_map_free(struct qp_align_map *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->nrules; i++) {
        regfree(&m->rules[i].re);
        free(m->rules[i].tmpl);
    }
    for (size_t i = 0; i < m->npairs; i++) {
        free(m->pref[i]);
        free(m->ptest[i]);
    }
    free(m->rules);
    free(m->pref);
    free(m->ptest);
    free(m);
}

static enum qp_status parse_pairs(struct qp_align_map *m, const struct qp_json *p,
                                  const char *what, struct qp_error *err)
{
    if (qp_json_type(p) != QP_JSON_OBJECT)
        return qp_fail(err, QP_E_FORMAT,
                       "%s: \"pairs\" must be an object of \"ref\": \"test\" "
                       "names, not %s", what,
                       qp_json_type_name(qp_json_type(p)));
    size_t n = qp_json_size(p);
    m->pref = calloc(n + 1, sizeof *m->pref);
    m->ptest = calloc(n + 1, sizeof *m->ptest);
    if (!m->pref || !m->ptest)
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        const struct qp_json *e = qp_json_at(p, i);
        const char *ref = qp_json_key(e), *test;
        if (!qp_json_str(e, &test))
            return qp_fail(err, QP_E_FORMAT,
                           "%s: pair \"%s\": the test name must be a string", what,
                           ref);
        for (size_t j = 0; j < m->npairs; j++) {
            if (!strcmp(m->pref[j], ref))
                return qp_fail(err, QP_E_FORMAT,
                               "%s: reference tensor '%s' is paired twice", what,
                               ref);
            if (!strcmp(m->ptest[j], test))
                return qp_fail(err, QP_E_FORMAT,
                               "%s: test tensor '%s' is paired twice", what, test);
        }
        if (!(m->pref[i] = strdup(ref)) || !(m->ptest[i] = strdup(test)))
            return qp_fail(err, QP_E_NOMEM, "out of memory");
        m->npairs = i + 1;
    }
    return QP_OK;
}

/* Highest \N a template refers to; -1 when it has a dangling backslash. */
static int template_max_group(const char *t)
{
    int max = 0;
    for (; *t; t++) {
        if (*t != '\\')
            continue;
        t++;
        if (*t >= '0' && *t <= '9') {
            if (*t - '0' > max)
                max = *t - '0';
        } else if (*t != '\\') {
            return -1;
        }
    }
    return max;
}

/* Patterns glibc's regcomp cannot compile in bounded memory: POSIX leaves
 * adjacent repetition operators ("a++", "a*{2}") undefined, and glibc
 * expands them into automata that grow exponentially (a fuzzed map of 60
 * '+' took gigabytes). Returns why pat is refused, or NULL. */
static const char *regex_too_costly(const char *pat)
{
    if (strlen(pat) > 1024)
        return "longer than 1024 characters";
    bool prev_rep = false, bracket = false;
    for (const char *p = pat; *p; p++) {
        if (*p == '\\' && p[1]) {
            p++;
            prev_rep = false;
            continue;
        }
        if (bracket) {
            if (*p == ']')
                bracket = false;
            continue;
        }
        if (*p == '[') {
            bracket = true;
            if (p[1] == '^')
                p++;
            if (p[1] == ']') /* a literal ']' first in a bracket */
                p++;
            prev_rep = false;
            continue;
        }
        bool rep = *p == '*' || *p == '+' || *p == '?' || *p == '{';
        if (rep && prev_rep)
            return "adjacent repetition operators (undefined in POSIX ERE)";
        if (*p == '{') {
            const char *close = strchr(p, '}');
            if (!close)
                return NULL; /* regcomp reports it */
            long lo = strtol(p + 1, NULL, 10);
            const char *comma = memchr(p, ',', (size_t)(close - p));
            long hi = comma ? strtol(comma + 1, NULL, 10) : lo;
            if (lo > 255 || hi > 255)
                return "a repetition count above 255";
            p = close;
        }
        prev_rep = rep;
    }
    return NULL;
}

static enum qp_status parse_rule(struct map_rule *r, const struct qp_json *e,
                                 size_t i, const char *what,
                                 struct qp_error *err)
{
    const char *pat, *tmpl;
    if (qp_json_type(e) != QP_JSON_OBJECT)
        return qp_fail(err, QP_E_FORMAT, "%s: rule %zu must be an object", what, i);
    for (size_t k = 0; k < qp_json_size(e); k++) {
        const char *key = qp_json_key(qp_json_at(e, k));
        if (strcmp(key, "test") && strcmp(key, "ref") && key[0] != '_')
            return qp_fail(err, QP_E_FORMAT,
                           "%s: rule %zu: unknown member \"%s\" (expected "
                           "\"test\" and \"ref\")", what, i, key);
    }
    if (!qp_json_str(qp_json_get(e, "test"), &pat) ||
        !qp_json_str(qp_json_get(e, "ref"), &tmpl))
        return qp_fail(err, QP_E_FORMAT,
                       "%s: rule %zu needs string members \"test\" (a regex) "
                       "and \"ref\" (a template)", what, i);
    const char *why = regex_too_costly(pat);
    if (why)
        return qp_fail(err, QP_E_FORMAT, "%s: rule %zu: regex '%.200s' refused: %s",
                       what, i, pat, why);
    int rc = regcomp(&r->re, pat, REG_EXTENDED);
    if (rc) {
        char msg[128];
        regerror(rc, &r->re, msg, sizeof msg);
        regfree(&r->re);
        return qp_fail(err, QP_E_FORMAT, "%s: rule %zu: bad regex '%s': %s",
                       what, i, pat, msg);
    }
    int g = template_max_group(tmpl);
    if (g < 0 || (size_t)g > r->re.re_nsub) {
        regfree(&r->re);
        if (g < 0)
            return qp_fail(err, QP_E_FORMAT,
                           "%s: rule %zu: template '%s' has a backslash not "
                           "followed by a digit or a backslash", what, i, tmpl);
        return qp_fail(err, QP_E_FORMAT,
                       "%s: rule %zu: template '%s' refers to group %d, the "
                       "regex has %zu", what, i, tmpl, g, r->re.re_nsub);
    }
    if (!(r->tmpl = strdup(tmpl))) {
        regfree(&r->re);
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    }
    return QP_OK;
}

static enum qp_status parse_rules(struct qp_align_map *m, const struct qp_json *a,
                                  const char *what, struct qp_error *err)
{
    if (qp_json_type(a) != QP_JSON_ARRAY)
        return qp_fail(err, QP_E_FORMAT, "%s: \"rules\" must be an array, not %s",
                       what, qp_json_type_name(qp_json_type(a)));
    size_t n = qp_json_size(a);
    m->rules = calloc(n + 1, sizeof *m->rules);
    if (!m->rules)
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        enum qp_status st = parse_rule(&m->rules[i], qp_json_at(a, i), i, what, err);
        if (st)
            return st;
        m->nrules = i + 1;
    }
    return QP_OK;
}

/* Builds the map from a parsed document. */
static enum qp_status map_from_json(const struct qp_json *root, const char *what,
                                    struct qp_align_map **out,
                                    struct qp_error *err)
{
    struct qp_align_map *m = calloc(1, sizeof *m);
    if (!m)
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    enum qp_status st = QP_OK;
    if (qp_json_type(root) != QP_JSON_OBJECT)
        st = qp_fail(err, QP_E_FORMAT,
                     "%s: a map is an object with \"pairs\" and/or \"rules\"",
                     what);
    bool seen_pairs = false, seen_rules = false;
    for (size_t k = 0; !st && k < qp_json_size(root); k++) {
        const struct qp_json *e = qp_json_at(root, k);
        const char *key = qp_json_key(e);
        bool *seen = !strcmp(key, "pairs") ? &seen_pairs
                   : !strcmp(key, "rules") ? &seen_rules : NULL;
        if (seen && *seen)
            st = qp_fail(err, QP_E_FORMAT, "%s: \"%s\" appears twice", what, key);
        else if (seen == &seen_pairs)
            st = parse_pairs(m, e, what, err);
        else if (seen == &seen_rules)
            st = parse_rules(m, e, what, err);
        if (seen)
            *seen = true;
        else if (key[0] != '_')
            st = qp_fail(err, QP_E_FORMAT,
                         "%s: unknown member \"%s\" (expected \"pairs\" and "
                         "\"rules\")", what, key);
    }
    if (st) {
        qp_align_map_free(m);
        return st;
    }
    *out = m;
    return QP_OK;
}

enum qp_status qp_align_map_parse(const char *text, const char *what,
                                  struct qp_align_map **out,
                                  struct qp_error *err)
{
    *out = NULL;
    struct qp_json *root;
    enum qp_status st = qp_json_parse(text, what, &root, err);
    if (!st)
        st = map_from_json(root, what, out, err);
    qp_json_free(root);
    return st;
}

enum qp_status qp_align_map_load(const char *path, struct qp_align_map **out,
                                 struct qp_error *err)
{
    *out = NULL;
    struct qp_json *root;
    enum qp_status st = qp_json_load(path, &root, err);
    if (st)
        return st;
    size_t n = strlen(path) + 3;
    char *what = malloc(n);
    if (what) {
        snprintf(what, n, "'%s'", path);
        st = map_from_json(root, what, out, err);
    } else {
        st = qp_fail(err, QP_E_NOMEM, "out of memory");
    }
    free(what);
    qp_json_free(root);
    return st;
}

/* ---- alignment ------------------------------------------------------------------ */

struct key_ix {
    const char *key;
    size_t idx;
};

static int cmp_key(const void *a, const void *b)
{
    const struct key_ix *x = a, *y = b;
    int c = strcmp(x->key, y->key);
    return c ? c : (x->idx > y->idx) - (x->idx < y->idx);
}

/* First entry of v[0..n) with key, or NULL. */
static const struct key_ix *find_key(const struct key_ix *v, size_t n,
                                     const char *key)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (strcmp(v[mid].key, key) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && !strcmp(v[lo].key, key) ? &v[lo] : NULL;
}

/* Count of entries equal to e's key starting at e. */
static size_t run_len(const struct key_ix *v, size_t n, const struct key_ix *e)
{
    size_t k = 1;
    while ((size_t)(e - v) + k < n && !strcmp(e[k].key, e->key))
        k++;
    return k;
}

struct state {
    const char *const *ref, *const *test;
    size_t nref, ntest;
    bool *ref_used, *test_used;
    struct key_ix *ref_sorted, *test_sorted; /* exact names, all entries */
    struct qp_align *out;
    size_t pairs_cap, notes_cap;
    struct qp_error *err;
};

static enum qp_status note(struct state *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static enum qp_status note(struct state *s, const char *fmt, ...)
{
    struct qp_align *a = s->out;
    if (a->nnotes == s->notes_cap) {
        size_t cap = s->notes_cap ? 2 * s->notes_cap : 16;
        char **nn = realloc(a->notes, cap * sizeof *nn);
        if (!nn)
            return qp_fail(s->err, QP_E_NOMEM, "out of memory");
        a->notes = nn;
        s->notes_cap = cap;
    }
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *m = malloc((size_t)n + 1);
    if (!m)
        return qp_fail(s->err, QP_E_NOMEM, "out of memory");
    va_start(ap, fmt);
    vsnprintf(m, (size_t)n + 1, fmt, ap);
    va_end(ap);
    a->notes[a->nnotes++] = m;
    return QP_OK;
}

static enum qp_status pair(struct state *s, size_t r, size_t t,
                           enum qp_align_how how, int rule)
{
    struct qp_align *a = s->out;
    if (a->npairs == s->pairs_cap) {
        size_t cap = s->pairs_cap ? 2 * s->pairs_cap : 64;
        struct qp_align_pair *np = realloc(a->pairs, cap * sizeof *np);
        if (!np)
            return qp_fail(s->err, QP_E_NOMEM, "out of memory");
        a->pairs = np;
        s->pairs_cap = cap;
    }
    a->pairs[a->npairs++] = (struct qp_align_pair){r, t, how, rule};
    s->ref_used[r] = s->test_used[t] = true;
    return QP_OK;
}

/* An unused entry named exactly name, or -1. */
static long find_unused(const struct key_ix *sorted, size_t n, const bool *used,
                        const char *name)
{
    const struct key_ix *e = find_key(sorted, n, name);
    for (size_t k = 0; e && k < run_len(sorted, n, e); k++)
        if (!used[e[k].idx])
            return (long)e[k].idx;
    return -1;
}

static enum qp_status stage_map_pairs(struct state *s, const struct qp_align_map *m)
{
    enum qp_status st = QP_OK;
    for (size_t i = 0; m && i < m->npairs && !st; i++) {
        long r = find_unused(s->ref_sorted, s->nref, s->ref_used, m->pref[i]);
        long t = find_unused(s->test_sorted, s->ntest, s->test_used, m->ptest[i]);
        if (r >= 0 && t >= 0)
            st = pair(s, (size_t)r, (size_t)t, QP_ALIGN_MAP_PAIR, -1);
        else if (r < 0)
            st = note(s, "map pair '%s' -> '%s': no tensor '%s' in the reference",
                      m->pref[i], m->ptest[i], m->pref[i]);
        else
            st = note(s, "map pair '%s' -> '%s': no tensor '%s' in the test dump",
                      m->pref[i], m->ptest[i], m->ptest[i]);
    }
    return st;
}

static enum qp_status stage_exact(struct state *s)
{
    enum qp_status st = QP_OK;
    for (size_t r = 0; r < s->nref && !st; r++) {
        if (s->ref_used[r])
            continue;
        long t = find_unused(s->test_sorted, s->ntest, s->test_used, s->ref[r]);
        if (t >= 0)
            st = pair(s, r, (size_t)t, QP_ALIGN_EXACT, -1);
    }
    return st;
}

/* Sorted normalised keys of the unused names of one side; *keys (each key
 * and the array) belongs to the caller. */
static enum qp_status unused_keys(struct state *s, const char *const *names,
                                  size_t n, const bool *used,
                                  struct key_ix **keys, size_t *nkeys)
{
    *keys = calloc(n + 1, sizeof **keys);
    *nkeys = 0;
    if (!*keys)
        return qp_fail(s->err, QP_E_NOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        if (used[i])
            continue;
        char *k = qp_align_normalise(names[i]);
        if (!k)
            return qp_fail(s->err, QP_E_NOMEM, "out of memory");
        (*keys)[(*nkeys)++] = (struct key_ix){k, i};
    }
    qsort(*keys, *nkeys, sizeof **keys, cmp_key);
    return QP_OK;
}

static void keys_free(struct key_ix *keys, size_t n)
{
    for (size_t i = 0; keys && i < n; i++)
        free((char *)keys[i].key);
    free(keys);
}

/* "'a', 'b'" of the names in a run of keys (truncated to size). */
static void list_names(const char *const *names, const struct key_ix *e,
                       size_t k, char *buf, size_t size)
{
    size_t len = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < k && len < size; i++)
        len += (size_t)snprintf(buf + len, size - len, "%s'%s'", i ? ", " : "",
                                names[e[i].idx]);
}

static enum qp_status stage_normalised(struct state *s)
{
    struct key_ix *rk, *tk = NULL;
    size_t nr, nt = 0;
    enum qp_status st = unused_keys(s, s->ref, s->nref, s->ref_used, &rk, &nr);
    if (!st)
        st = unused_keys(s, s->test, s->ntest, s->test_used, &tk, &nt);
    for (size_t i = 0; !st && i < nr; i += run_len(rk, nr, &rk[i])) {
        const struct key_ix *t = find_key(tk, nt, rk[i].key);
        if (!t)
            continue;
        size_t cr = run_len(rk, nr, &rk[i]), ct = run_len(tk, nt, t);
        if (cr == 1 && ct == 1) {
            st = pair(s, rk[i].idx, t->idx, QP_ALIGN_NORMALISED, -1);
            continue;
        }
        char a[512], b[512];
        list_names(s->ref, &rk[i], cr, a, sizeof a);
        list_names(s->test, t, ct, b, sizeof b);
        st = note(s, "ambiguous: %s (reference) and %s (test) all normalise to "
                  "'%s'; none paired", a, b, rk[i].key);
    }
    keys_free(rk, nr);
    keys_free(tk, nt);
    return st;
}

/* malloc'd expansion of a rule's template for the match m of name. */
static char *expand(const char *tmpl, const char *name, const regmatch_t *m)
{
    size_t refs = 0, len = 0;
    for (const char *p = tmpl; *p; p++)
        if (*p == '\\' && p[1] >= '0' && p[1] <= '9')
            refs++;
    /* each \N copies at most the whole name */
    char *r = malloc(strlen(tmpl) + refs * strlen(name) + 1);
    if (!r)
        return NULL;
    for (const char *p = tmpl; *p; p++) {
        if (*p == '\\' && p[1] >= '0' && p[1] <= '9') {
            const regmatch_t *g = &m[p[1] - '0'];
            p++;
            if (g->rm_so < 0)
                continue;
            size_t gl = (size_t)(g->rm_eo - g->rm_so);
            memcpy(r + len, name + g->rm_so, gl);
            len += gl;
        } else {
            if (*p == '\\')
                p++; /* "\\" */
            r[len++] = *p;
        }
    }
    r[len] = '\0';
    return r;
}

/* The reference index rule-mapped from test name t (first matching rule),
 * or -1; *rule_out is the rule. Notes a rule whose target is absent. */
static enum qp_status rule_target(struct state *s, const struct qp_align_map *m,
                                  const struct key_ix *rk, size_t nr, size_t t,
                                  long *target, int *rule_out)
{
    *target = -1;
    const char *name = s->test[t];
    size_t len = strlen(name);
    regmatch_t g[10];
    for (size_t i = 0; i < m->nrules; i++) {
        if (regexec(&m->rules[i].re, name, 10, g, 0) || g[0].rm_so != 0 ||
            (size_t)g[0].rm_eo != len)
            continue;
        char *want = expand(m->rules[i].tmpl, name, g);
        if (!want)
            return qp_fail(s->err, QP_E_NOMEM, "out of memory");
        *rule_out = (int)i;
        *target = find_unused(s->ref_sorted, s->nref, s->ref_used, want);
        enum qp_status st = QP_OK;
        if (*target < 0) {
            char *key = qp_align_normalise(want);
            const struct key_ix *e = key ? find_key(rk, nr, key) : NULL;
            if (!key)
                st = qp_fail(s->err, QP_E_NOMEM, "out of memory");
            else if (e && run_len(rk, nr, e) == 1)
                *target = (long)e->idx;
            else
                st = note(s, "rule %zu maps '%s' to '%s', which is not an "
                          "unpaired reference tensor", i, name, want);
            free(key);
        }
        free(want);
        return st;
    }
    return QP_OK;
}

static enum qp_status stage_rules(struct state *s, const struct qp_align_map *m)
{
    if (!m || !m->nrules)
        return QP_OK;
    struct key_ix *rk;
    size_t nr;
    long *target = malloc((s->ntest + 1) * sizeof *target);
    int *rule = malloc((s->ntest + 1) * sizeof *rule);
    size_t *hits = calloc(s->nref + 1, sizeof *hits);
    enum qp_status st = unused_keys(s, s->ref, s->nref, s->ref_used, &rk, &nr);
    if (!st && (!target || !rule || !hits))
        st = qp_fail(s->err, QP_E_NOMEM, "out of memory");
    for (size_t t = 0; !st && t < s->ntest; t++) {
        target[t] = -1;
        if (!s->test_used[t])
            st = rule_target(s, m, rk, nr, t, &target[t], &rule[t]);
        if (target[t] >= 0)
            hits[target[t]]++;
    }
    for (size_t t = 0; !st && t < s->ntest; t++) {
        if (target[t] < 0)
            continue;
        size_t r = (size_t)target[t];
        if (hits[r] == 1)
            st = pair(s, r, t, QP_ALIGN_MAP_RULE, rule[t]);
        else
            st = note(s, "ambiguous: test tensor '%s' and %zu other(s) map to "
                      "'%s'; none paired", s->test[t], hits[r] - 1, s->ref[r]);
    }
    keys_free(rk, nr);
    free(target);
    free(rule);
    free(hits);
    return st;
}

static int cmp_pair(const void *a, const void *b)
{
    const struct qp_align_pair *x = a, *y = b;
    return (x->ref > y->ref) - (x->ref < y->ref);
}

static enum qp_status leftovers(const bool *used, size_t n, size_t **out,
                                size_t *count, struct qp_error *err)
{
    *out = malloc((n + 1) * sizeof **out);
    if (!*out)
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    for (size_t i = 0; i < n; i++)
        if (!used[i])
            (*out)[(*count)++] = i;
    return QP_OK;
}

static struct key_ix *sorted_names(const char *const *names, size_t n)
{
    struct key_ix *v = malloc((n + 1) * sizeof *v);
    if (!v)
        return NULL;
    for (size_t i = 0; i < n; i++)
        v[i] = (struct key_ix){names[i], i};
    qsort(v, n, sizeof *v, cmp_key);
    return v;
}

enum qp_status qp_align_names(const char *const *ref, size_t nref,
                              const char *const *test, size_t ntest,
                              const struct qp_align_map *map,
                              struct qp_align *out, struct qp_error *err)
{
    *out = (struct qp_align){0};
    struct state s = {ref, test, nref, ntest, NULL, NULL, NULL, NULL, out,
                      0, 0, err};
    s.ref_used = calloc(nref + 1, 1);
    s.test_used = calloc(ntest + 1, 1);
    s.ref_sorted = sorted_names(ref, nref);
    s.test_sorted = sorted_names(test, ntest);
    enum qp_status st = QP_OK;
    if (!s.ref_used || !s.test_used || !s.ref_sorted || !s.test_sorted)
        st = qp_fail(err, QP_E_NOMEM, "out of memory");
    if (!st)
        st = stage_map_pairs(&s, map);
    if (!st)
        st = stage_exact(&s);
    if (!st)
        st = stage_normalised(&s);
    if (!st)
        st = stage_rules(&s, map);
    if (!st)
        st = leftovers(s.ref_used, nref, &out->ref_only, &out->nref_only, err);
    if (!st)
        st = leftovers(s.test_used, ntest, &out->test_only, &out->ntest_only, err);
    if (!st && out->npairs)
        qsort(out->pairs, out->npairs, sizeof *out->pairs, cmp_pair);
    free(s.ref_used);
    free(s.test_used);
    free(s.ref_sorted);
    free(s.test_sorted);
    return st;
}

void qp_align_release(struct qp_align *a)
{
    if (!a)
        return;
    free(a->pairs);
    free(a->ref_only);
    free(a->test_only);
    for (size_t i = 0; i < a->nnotes; i++)
        free(a->notes[i]);
    free(a->notes);
    *a = (struct qp_align){0};
}
