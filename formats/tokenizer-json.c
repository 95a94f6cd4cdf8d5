/* formats/tokenizer-json.c: the sections of an HF tokenizer.json (model,
 * added_tokens, normalizer, pre_tokenizer, post_processor, decoder) into
 * struct qp_tokenizer. Messages say which section and field is wrong; the
 * caller puts the file name in front. */
#include "formats/tokenizer-impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/size.h"
#include "formats/json.h"

/* GPT-2's split, used by ByteLevel with use_regex (HF's
 * pre_tokenizers::byte_level). */
static const char gpt2_regex[] =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|"
    "\\s+(?!\\S)|\\s+";

/* ---- typed getters ------------------------------------------------------ */

static const char *type_of(const struct qp_json *n)
{
    const char *s;
    return qp_json_str(qp_json_get(n, "type"), &s) ? s : NULL;
}

/* obj.key as a string: absent or null gives def (may be NULL). */
static enum qp_status get_str(const struct qp_json *obj, const char *key,
                              const char *def, const char **out,
                              struct qp_error *err)
{
    const struct qp_json *v = qp_json_get(obj, key);
    *out = def;
    if (!v || qp_json_type(v) == QP_JSON_NULL || qp_json_str(v, out))
        return QP_OK;
    return qp_fail(err, QP_E_FORMAT, "'%s' is a %s, not a string", key,
                   qp_json_type_name(qp_json_type(v)));
}

static enum qp_status get_bool(const struct qp_json *obj, const char *key,
                               bool def, bool *out, struct qp_error *err)
{
    const struct qp_json *v = qp_json_get(obj, key);
    *out = def;
    if (!v || qp_json_type(v) == QP_JSON_NULL || qp_json_bool(v, out))
        return QP_OK;
    return qp_fail(err, QP_E_FORMAT, "'%s' is a %s, not a boolean", key,
                   qp_json_type_name(qp_json_type(v)));
}

/* An integer in [0, max) from node v, named `what` in messages. */
static enum qp_status int_of(const struct qp_json *v, const char *what,
                             double max, int64_t *out, struct qp_error *err)
{
    double d;
    if (!qp_json_num(v, &d) || d != floor(d) || d < 0 || d >= max)
        return qp_fail(err, QP_E_FORMAT, "%s is not an integer in [0, %.0f)",
                       what, max);
    *out = (int64_t)d;
    return QP_OK;
}

/* A string holding exactly one UTF-8 character, into ch (8 bytes). */
static enum qp_status one_char(const struct qp_json *obj, const char *key,
                               const char *def, char *ch, size_t *len,
                               struct qp_error *err)
{
    const char *s;
    enum qp_status st = get_str(obj, key, def, &s, err);
    if (st)
        return st;
    size_t n = s ? strlen(s) : 0;
    if (!n || tok_utf8_char((const unsigned char *)s, n, NULL) != n)
        return qp_fail(err, QP_E_FORMAT, "'%s' must be one character", key);
    memcpy(ch, s, n);
    *len = n;
    return QP_OK;
}

/* {"String": "..."} or {"Regex": "..."} into p. */
static enum qp_status pattern(const struct qp_json *obj, struct tok_pattern *p,
                              struct qp_error *err)
{
    const struct qp_json *pat = qp_json_get(obj, "pattern");
    const char *s;
    memset(p, 0, sizeof *p);
    if (qp_json_str(qp_json_get(pat, "Regex"), &s)) {
        char msg[400];
        if (!tok_pattern_regex(p, s, strlen(s), msg, sizeof msg))
            return qp_fail(err, QP_E_FORMAT, "bad regex \"%.200s\": %s", s, msg);
        return QP_OK;
    }
    if (!qp_json_str(qp_json_get(pat, "String"), &s))
        return qp_fail(err, QP_E_FORMAT,
                       "'pattern' must be {\"String\": ...} or {\"Regex\": ...}");
    if (!*s)
        return qp_fail(err, QP_E_FORMAT, "'pattern' is an empty string");
    if (!(p->lit = strdup(s)))
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    p->lit_len = strlen(s);
    return QP_OK;
}

static enum qp_status dup_str(const char *s, char **out, size_t *len,
                              struct qp_error *err)
{
    if (!(*out = strdup(s ? s : "")))
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    *len = strlen(*out);
    return QP_OK;
}

/* Grows an array of components by one zeroed element. */
static void *grow_one(void *v, size_t *n, size_t size)
{
    char *p = realloc(v, (*n + 1) * size);
    if (p) {
        memset(p + *n * size, 0, size);
        (*n)++;
    }
    return p;
}

static enum qp_status unsupported(const char *section, const char *type,
                                  const char *supported, struct qp_error *err)
{
    return qp_fail(err, QP_E_UNSUPPORTED,
                   "%s type '%s' is not supported (supported: %s)", section,
                   type ? type : "(none)", supported);
}

/* How deep Sequences may nest. */
#define DEPTH_MAX 16

typedef enum qp_status (*component_fn)(struct qp_tokenizer *t,
                                       const struct qp_json *n, int depth,
                                       struct qp_error *err);

/* When n is a {"type": "Sequence", key: [...]}, parses each member with fn
 * and sets *done; otherwise leaves n to the caller. */
static enum qp_status sequence(struct qp_tokenizer *t, const struct qp_json *n,
                               const char *section, const char *key,
                               component_fn fn, int depth, bool *done,
                               struct qp_error *err)
{
    const char *type = type_of(n);
    *done = type && !strcmp(type, "Sequence");
    if (!*done)
        return QP_OK;
    const struct qp_json *v = qp_json_get(n, key);
    if (depth >= DEPTH_MAX)
        return qp_fail(err, QP_E_UNSUPPORTED, "%s Sequences nest more than %d "
                       "deep", section, DEPTH_MAX);
    if (qp_json_type(v) != QP_JSON_ARRAY)
        return qp_fail(err, QP_E_FORMAT, "%s Sequence has no '%s' array",
                       section, key);
    for (const struct qp_json *e = qp_json_first(v); e; e = qp_json_next(e)) {
        enum qp_status st = fn(t, e, depth + 1, err);
        if (st)
            return st;
    }
    return QP_OK;
}

/* The index of s in names[0..count), or count (also for s NULL). */
static size_t name_index(const char *s, const char *const *names, size_t count)
{
    size_t k = 0;
    while (k < count && !(s && !strcmp(s, names[k])))
        k++;
    return k;
}

/* ---- normalizer --------------------------------------------------------- */

static enum qp_status normalizer(struct qp_tokenizer *t, const struct qp_json *n,
                                 int depth, struct qp_error *err)
{
    bool done;
    enum qp_status st = sequence(t, n, "normalizer", "normalizers",
                                 normalizer, depth, &done, err);
    if (st || done)
        return st;
    const char *type = type_of(n);
    static const char *const names[] = {"Prepend", "Replace", "NFC", "NFD",
                                        "NFKC", "NFKD", "Strip"};
    _Static_assert(sizeof names / sizeof names[0] == TOK_NORM_COUNT,
                   "a name per normalizer");
    size_t k = name_index(type, names, TOK_NORM_COUNT);
    if (k == TOK_NORM_COUNT)
        return unsupported("normalizer", type, "Sequence, Prepend, Replace, "
                           "NFC, NFD, NFKC, NFKD, Strip", err);
    struct tok_norm *v = grow_one(t->norms, &t->n_norms, sizeof *v);
    if (!v)
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    t->norms = v;
    struct tok_norm *nm = &v[t->n_norms - 1];
    nm->kind = (enum tok_norm_kind)k;
    const char *s = NULL;
    st = QP_OK;
    if (nm->kind == TOK_NORM_PREPEND) {
        if (!(st = get_str(n, "prepend", NULL, &s, err)) && !s)
            st = qp_fail(err, QP_E_FORMAT, "normalizer Prepend has no 'prepend'");
        st = st ? st : dup_str(s, &nm->content, &nm->content_len, err);
    } else if (nm->kind == TOK_NORM_REPLACE) {
        st = pattern(n, &nm->pat, err);
        st = st ? st : get_str(n, "content", "", &s, err);
        st = st ? st : dup_str(s, &nm->content, &nm->content_len, err);
    } else if (nm->kind == TOK_NORM_STRIP) {
        st = get_bool(n, "strip_left", true, &nm->left, err);
        st = st ? st : get_bool(n, "strip_right", true, &nm->right, err);
    }
    if (st)
        qp_error_prefix(err, "normalizer %s: ", names[k]);
    return st;
}

/* ---- pre-tokenizer ------------------------------------------------------ */

static enum qp_status prepend_scheme(const struct qp_json *n,
                                     enum tok_prepend *out,
                                     struct qp_error *err)
{
    const char *s;
    bool add;
    enum qp_status st = get_str(n, "prepend_scheme", NULL, &s, err);
    st = st ? st : get_bool(n, "add_prefix_space", true, &add, err);
    if (st)
        return st;
    /* older files only have add_prefix_space */
    *out = add ? TOK_PREPEND_ALWAYS : TOK_PREPEND_NEVER;
    if (!s)
        return QP_OK;
    if (!strcmp(s, "always"))
        *out = TOK_PREPEND_ALWAYS;
    else if (!strcmp(s, "first"))
        *out = TOK_PREPEND_FIRST;
    else if (!strcmp(s, "never"))
        *out = TOK_PREPEND_NEVER;
    else
        return qp_fail(err, QP_E_FORMAT, "unknown prepend_scheme '%s'", s);
    return QP_OK;
}

static enum qp_status split_pre(const struct qp_json *n, struct tok_pre *p,
                                struct qp_error *err)
{
    static const char *const names[] = {"Removed", "Isolated",
                                        "MergedWithPrevious", "MergedWithNext",
                                        "Contiguous"};
    _Static_assert(sizeof names / sizeof names[0] == TOK_SPLIT_COUNT,
                   "a name per behaviour");
    const char *b, *re;
    enum qp_status st = pattern(n, &p->pat, err);
    st = st ? st : get_str(n, "behavior", NULL, &b, err);
    st = st ? st : get_bool(n, "invert", false, &p->invert, err);
    if (st)
        return st;
    size_t k = name_index(b, names, TOK_SPLIT_COUNT);
    if (k == TOK_SPLIT_COUNT)
        return qp_fail(err, QP_E_FORMAT, "unknown behavior '%s'",
                       b ? b : "(none)");
    p->behavior = (enum tok_behavior)k;
    if (qp_json_str(qp_json_get(qp_json_get(n, "pattern"), "Regex"), &re) &&
        !(p->raw = strdup(re)))
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    return QP_OK;
}

static enum qp_status pre_tokenizer(struct qp_tokenizer *t,
                                    const struct qp_json *n, int depth,
                                    struct qp_error *err)
{
    bool done;
    enum qp_status st = sequence(t, n, "pre_tokenizer", "pretokenizers",
                                 pre_tokenizer, depth, &done, err);
    if (st || done)
        return st;
    const char *type = type_of(n);
    static const char *const names[] = {"Split", "Digits", "Metaspace",
                                        "ByteLevel"};
    _Static_assert(sizeof names / sizeof names[0] == TOK_PRE_COUNT,
                   "a name per pre-tokenizer");
    size_t k = name_index(type, names, TOK_PRE_COUNT);
    if (k == TOK_PRE_COUNT)
        return unsupported("pre_tokenizer", type, "Sequence, Split, Digits, "
                           "Metaspace, ByteLevel", err);
    if (t->byte_level)
        return qp_fail(err, QP_E_UNSUPPORTED, "pre_tokenizer %s after "
                       "ByteLevel is not supported (ByteLevel must be last)",
                       names[k]);
    struct tok_pre *v = grow_one(t->pres, &t->n_pres, sizeof *v);
    if (!v)
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    t->pres = v;
    struct tok_pre *p = &v[t->n_pres - 1];
    p->kind = (enum tok_pre_kind)k;
    st = QP_OK;
    char msg[400];
    switch (p->kind) {
    case TOK_PRE_SPLIT:
        st = split_pre(n, p, err);
        break;
    case TOK_PRE_DIGITS:
        st = get_bool(n, "individual_digits", false, &p->individual, err);
        break;
    case TOK_PRE_METASPACE:
        st = one_char(n, "replacement", "\xe2\x96\x81", p->repl, &p->repl_len,
                      err);
        st = st ? st : prepend_scheme(n, &p->prepend, err);
        st = st ? st : get_bool(n, "split", true, &p->split, err);
        break;
    case TOK_PRE_BYTELEVEL:
        t->byte_level = true;
        st = get_bool(n, "add_prefix_space", true, &p->prefix_space, err);
        st = st ? st : get_bool(n, "use_regex", true, &p->use_regex, err);
        if (!st && p->use_regex &&
            !tok_pattern_regex(&p->pat, gpt2_regex, strlen(gpt2_regex), msg,
                               sizeof msg))
            st = qp_fail(err, QP_E_NOMEM, "the GPT-2 regex: %s", msg);
        break;
    case TOK_PRE_COUNT:
        break;
    }
    if (st)
        qp_error_prefix(err, "pre_tokenizer %s: ", names[k]);
    return st;
}

/* ---- decoder ------------------------------------------------------------ */

static enum qp_status decoder(struct qp_tokenizer *t, const struct qp_json *n,
                              int depth, struct qp_error *err)
{
    bool done;
    enum qp_status st = sequence(t, n, "decoder", "decoders", decoder, depth,
                                 &done, err);
    if (st || done)
        return st;
    const char *type = type_of(n);
    static const char *const names[] = {"ByteLevel", "Metaspace", "Replace",
                                        "ByteFallback", "Fuse", "Strip"};
    _Static_assert(sizeof names / sizeof names[0] == TOK_DEC_COUNT,
                   "a name per decoder");
    size_t k = name_index(type, names, TOK_DEC_COUNT);
    if (k == TOK_DEC_COUNT)
        return unsupported("decoder", type, "Sequence, ByteLevel, Metaspace, "
                           "Replace, ByteFallback, Fuse, Strip", err);
    struct tok_dec *v = grow_one(t->decs, &t->n_decs, sizeof *v);
    if (!v)
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    t->decs = v;
    struct tok_dec *d = &v[t->n_decs - 1];
    d->kind = (enum tok_dec_kind)k;
    st = QP_OK;
    const char *s;
    enum tok_prepend ps = TOK_PREPEND_ALWAYS;
    int64_t a = 0, b = 0;
    if (d->kind == TOK_DEC_METASPACE) {
        st = one_char(n, "replacement", "\xe2\x96\x81", d->ch, &d->ch_len, err);
        st = st ? st : prepend_scheme(n, &ps, err);
        d->strip_first = ps != TOK_PREPEND_NEVER;
    } else if (d->kind == TOK_DEC_REPLACE) {
        st = pattern(n, &d->pat, err);
        st = st ? st : get_str(n, "content", "", &s, err);
        st = st ? st : dup_str(s, &d->content, &d->content_len, err);
    } else if (d->kind == TOK_DEC_STRIP) {
        st = one_char(n, "content", " ", d->ch, &d->ch_len, err);
        st = st ? st : int_of(qp_json_get(n, "start"), "'start'", 1e6, &a, err);
        st = st ? st : int_of(qp_json_get(n, "stop"), "'stop'", 1e6, &b, err);
        d->start = (size_t)a;
        d->stop = (size_t)b;
    }
    if (st)
        qp_error_prefix(err, "decoder %s: ", names[k]);
    return st;
}

/* ---- post-processor ----------------------------------------------------- */

/* The ids of special token `name` in a TemplateProcessing's
 * special_tokens, appended to out. */
static enum qp_status template_ids(const struct qp_json *specials,
                                   const char *name, struct tok_ids *out,
                                   struct qp_error *err)
{
    const struct qp_json *ids = qp_json_get(qp_json_get(specials, name), "ids");
    if (qp_json_type(ids) != QP_JSON_ARRAY)
        return qp_fail(err, QP_E_FORMAT, "special token '%s' is not in "
                       "'special_tokens' (with its 'ids')", name);
    for (const struct qp_json *e = qp_json_first(ids); e; e = qp_json_next(e)) {
        int64_t id;
        enum qp_status st = int_of(e, "an id of 'special_tokens'", TOK_MAX_ID,
                                   &id, err);
        if (st)
            return st;
        if (!tok_ids_add(out, (int32_t)id))
            return qp_fail(err, QP_E_NOMEM, "out of memory");
    }
    return QP_OK;
}

static enum qp_status template_single(struct qp_tokenizer *t,
                                      const struct qp_json *n,
                                      struct qp_error *err)
{
    const struct qp_json *single = qp_json_get(n, "single");
    const struct qp_json *specials = qp_json_get(n, "special_tokens");
    if (qp_json_type(single) != QP_JSON_ARRAY)
        return qp_fail(err, QP_E_FORMAT, "'single' is not an array of "
                       "template pieces");
    bool after = false;
    for (const struct qp_json *e = qp_json_first(single); e; e = qp_json_next(e)) {
        const struct qp_json *sp = qp_json_get(e, "SpecialToken");
        const char *name;
        if (sp) {
            if (!qp_json_str(qp_json_get(sp, "id"), &name))
                return qp_fail(err, QP_E_FORMAT, "a SpecialToken has no 'id'");
            enum qp_status st = template_ids(specials, name,
                                             after ? &t->suffix : &t->prefix,
                                             err);
            if (st)
                return st;
        } else if (qp_json_str(qp_json_get(qp_json_get(e, "Sequence"), "id"),
                               &name) && !strcmp(name, "A") && !after) {
            after = true;
        } else {
            return qp_fail(err, QP_E_FORMAT, "'single' may hold SpecialToken "
                           "pieces and one Sequence A");
        }
    }
    return QP_OK;
}

/* BertProcessing's "cls"/"sep": [token, id]. */
static enum qp_status cls_sep(const struct qp_json *n, const char *key,
                              struct tok_ids *out, struct qp_error *err)
{
    int64_t id;
    enum qp_status st = int_of(qp_json_at(qp_json_get(n, key), 1), key,
                               TOK_MAX_ID, &id, err);
    if (st)
        return st;
    return tok_ids_add(out, (int32_t)id) ? QP_OK
                                         : qp_fail(err, QP_E_NOMEM, "out of memory");
}

static enum qp_status post_processor(struct qp_tokenizer *t,
                                     const struct qp_json *n, int depth,
                                     struct qp_error *err)
{
    bool done;
    enum qp_status st = sequence(t, n, "post_processor", "processors",
                                 post_processor, depth, &done, err);
    if (st || done)
        return st;
    const char *type = type_of(n);
    if (type && !strcmp(type, "ByteLevel"))
        return QP_OK; /* offsets only */
    if (type && !strcmp(type, "TemplateProcessing"))
        st = template_single(t, n, err);
    else if (type && (!strcmp(type, "BertProcessing") ||
                      !strcmp(type, "RobertaProcessing"))) {
        st = cls_sep(n, "cls", &t->prefix, err);
        st = st ? st : cls_sep(n, "sep", &t->suffix, err);
    } else
        return unsupported("post_processor", type, "Sequence, ByteLevel, "
                           "TemplateProcessing, BertProcessing, "
                           "RobertaProcessing", err);
    if (st)
        qp_error_prefix(err, "post_processor %s: ", type);
    return st;
}

/* ---- model -------------------------------------------------------------- */

static enum qp_status vocab(struct qp_tokenizer *t, const struct qp_json *v,
                            struct qp_error *err)
{
    if (qp_json_type(v) != QP_JSON_OBJECT)
        return qp_fail(err, QP_E_FORMAT, "model: 'vocab' is not an object");
    size_t count = qp_json_size(v);
    for (const struct qp_json *e = qp_json_first(v); e; e = qp_json_next(e)) {
        const char *s = qp_json_key(e);
        int64_t id;
        char what[120];
        snprintf(what, sizeof what, "model: the id of token '%.60s'", s);
        enum qp_status st = int_of(e, what, TOK_MAX_ID, &id, err);
        if (st)
            return st;
        /* holes are allowed, a table mostly of holes is not */
        if ((size_t)id > 2 * count + 1024)
            return qp_fail(err, QP_E_FORMAT, "model: token '%.60s' has id "
                           "%lld, far past the %zu tokens of the vocabulary",
                           s, (long long)id, count);
        if ((size_t)id < t->n_tokens && t->tokens[id].in_vocab)
            return qp_fail(err, QP_E_FORMAT, "model: id %lld is given to both "
                           "'%.60s' and '%.60s'", (long long)id,
                           tok_str(t, (int32_t)id), s);
        if ((st = tok_set_token(t, (int32_t)id, s, strlen(s), true, err)))
            return st;
    }
    return QP_OK;
}

/* One merge (a string "a b" or an array ["a", "b"]) into t->merges[r]. */
static enum qp_status merge(struct qp_tokenizer *t, const struct qp_json *e,
                            size_t r, struct tok_buf *cat, struct qp_error *err)
{
    const char *s, *a = NULL, *b = NULL;
    size_t an = 0, bn = 0;
    if (qp_json_str(e, &s)) {
        const char *sp = strchr(s, ' ');
        if (!sp || strchr(sp + 1, ' '))
            return qp_fail(err, QP_E_FORMAT, "model: merge %zu (\"%.80s\") is "
                           "not two tokens separated by one space", r, s);
        a = s, an = (size_t)(sp - s), b = sp + 1, bn = strlen(b);
    } else if (qp_json_size(e) == 2 && qp_json_str(qp_json_at(e, 0), &a) &&
               qp_json_str(qp_json_at(e, 1), &b)) {
        an = strlen(a), bn = strlen(b);
    } else {
        return qp_fail(err, QP_E_FORMAT, "model: merge %zu is neither \"a b\" "
                       "nor [\"a\", \"b\"]", r);
    }
    cat->n = 0;
    if (!tok_buf_add(cat, a, an) || !tok_buf_add(cat, b, bn))
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    struct tok_merge *m = &t->merges[r];
    m->left = tok_vocab_get(t, a, an);
    m->right = tok_vocab_get(t, b, bn);
    m->result = tok_vocab_get(t, cat->p, cat->n);
    const char *missing = m->left < 0 ? a : m->right < 0 ? b : cat->p;
    size_t mn = m->left < 0 ? an : m->right < 0 ? bn : cat->n;
    if (m->left < 0 || m->right < 0 || m->result < 0)
        return qp_fail(err, QP_E_FORMAT, "model: merge %zu (\"%.*s\" + "
                       "\"%.*s\") refers to '%.*s', which is not in the "
                       "vocabulary", r, (int)(an > 60 ? 60 : an), a,
                       (int)(bn > 60 ? 60 : bn), b, (int)(mn > 60 ? 60 : mn),
                       missing);
    return QP_OK;
}

static enum qp_status merges(struct qp_tokenizer *t, const struct qp_json *v,
                             struct qp_error *err)
{
    if (!v || qp_json_type(v) == QP_JSON_NULL)
        return QP_OK;
    if (qp_json_type(v) != QP_JSON_ARRAY)
        return qp_fail(err, QP_E_FORMAT, "model: 'merges' is not an array");
    size_t n = qp_json_size(v), bytes;
    if (qp_size_mul(n ? n : 1, sizeof *t->merges, &bytes) ||
        !(t->merges = malloc(bytes)))
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    struct tok_buf cat = {0};
    enum qp_status st = QP_OK;
    size_t r = 0;
    for (const struct qp_json *e = qp_json_first(v); !st && e;
         e = qp_json_next(e), r++)
        st = merge(t, e, r, &cat, err);
    free(cat.p);
    t->n_merges = st ? 0 : n;
    return st ? st : tok_merge_index(t, err);
}

/* An empty-or-null string option the model would need support for. */
static enum qp_status no_affix(const struct qp_json *m, const char *key,
                               struct qp_error *err)
{
    const char *s;
    enum qp_status st = get_str(m, key, NULL, &s, err);
    if (!st && s && *s)
        st = qp_fail(err, QP_E_UNSUPPORTED, "model: BPE with %s \"%s\" is not "
                     "supported", key, s);
    return st;
}

static enum qp_status model(struct qp_tokenizer *t, const struct qp_json *m,
                            struct qp_error *err)
{
    if (qp_json_type(m) != QP_JSON_OBJECT)
        return qp_fail(err, QP_E_FORMAT, "no 'model' object");
    const char *type = type_of(m);
    if (!type && qp_json_get(m, "merges"))
        type = "BPE"; /* files from before "type" was written */
    if (!type || strcmp(type, "BPE"))
        return qp_fail(err, QP_E_UNSUPPORTED, "model type '%s' is not "
                       "supported (only BPE)", type ? type : "(none)");
    const char *unk;
    double dropout = 0;
    const struct qp_json *dv = qp_json_get(m, "dropout");
    enum qp_status st = vocab(t, qp_json_get(m, "vocab"), err);
    st = st ? st : tok_vocab_index(t, "model", err);
    st = st ? st : merges(t, qp_json_get(m, "merges"), err);
    st = st ? st : get_str(m, "unk_token", NULL, &unk, err);
    st = st ? st : get_bool(m, "byte_fallback", false, &t->byte_fallback, err);
    st = st ? st : get_bool(m, "fuse_unk", false, &t->fuse_unk, err);
    st = st ? st : get_bool(m, "ignore_merges", false, &t->ignore_merges, err);
    st = st ? st : no_affix(m, "continuing_subword_prefix", err);
    st = st ? st : no_affix(m, "end_of_word_suffix", err);
    if (st)
        return st;
    if (dv && qp_json_type(dv) != QP_JSON_NULL &&
        (!qp_json_num(dv, &dropout) || dropout != 0))
        return qp_fail(err, QP_E_UNSUPPORTED, "model: BPE dropout (random "
                       "merges) is not supported");
    t->unk_id = unk ? tok_vocab_get(t, unk, strlen(unk)) : -1;
    if (unk && t->unk_id < 0)
        return qp_fail(err, QP_E_FORMAT, "model: unk_token '%.60s' is not in "
                       "the vocabulary", unk);
    return QP_OK;
}

/* ---- added tokens ------------------------------------------------------- */

static enum qp_status added_tokens(struct qp_tokenizer *t,
                                   const struct qp_json *v, struct qp_error *err)
{
    if (!v || qp_json_type(v) == QP_JSON_NULL)
        return QP_OK;
    if (qp_json_type(v) != QP_JSON_ARRAY)
        return qp_fail(err, QP_E_FORMAT, "'added_tokens' is not an array");
    size_t n = qp_json_size(v), i = 0;
    if (!(t->added = calloc(n ? n : 1, sizeof *t->added)))
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    for (const struct qp_json *e = qp_json_first(v); e; e = qp_json_next(e), i++) {
        const char *s;
        int64_t id;
        struct tok_added *a = &t->added[i];
        enum qp_status st = get_str(e, "content", NULL, &s, err);
        st = st ? st : int_of(qp_json_get(e, "id"), "its 'id'", TOK_MAX_ID, &id,
                              err);
        st = st ? st : get_bool(e, "lstrip", false, &a->lstrip, err);
        st = st ? st : get_bool(e, "rstrip", false, &a->rstrip, err);
        st = st ? st : get_bool(e, "single_word", false, &a->single_word, err);
        st = st ? st : get_bool(e, "special", false, &a->special, err);
        if (!st && (!s || !*s))
            st = qp_fail(err, QP_E_FORMAT, "no 'content'");
        if (!st && (size_t)id > 2 * (t->n_tokens + n) + 1024)
            st = qp_fail(err, QP_E_FORMAT, "id %lld is far past the vocabulary",
                         (long long)id);
        bool defined = !st && (size_t)id < t->n_tokens &&
                       t->tokens[id].type != QP_TOK_UNDEFINED;
        if (defined && strcmp(tok_str(t, (int32_t)id), s))
            st = qp_fail(err, QP_E_FORMAT, "id %lld is token '%.60s' in the "
                         "vocabulary", (long long)id, tok_str(t, (int32_t)id));
        if (!st && !defined)
            st = tok_set_token(t, (int32_t)id, s, strlen(s), false, err);
        if (st) {
            qp_error_prefix(err, "added token %zu: ", i);
            return st;
        }
        t->n_added = i + 1;
        a->id = (int32_t)id;
        t->tokens[id].added = true;
        t->tokens[id].special = a->special;
    }
    return QP_OK;
}

enum qp_status tok_parse_sections(struct qp_tokenizer *t,
                                  const struct qp_json *root,
                                  struct qp_error *err)
{
    if (qp_json_type(root) != QP_JSON_OBJECT)
        return qp_fail(err, QP_E_FORMAT, "not a JSON object");
    enum qp_status st = model(t, qp_json_get(root, "model"), err);
    st = st ? st : added_tokens(t, qp_json_get(root, "added_tokens"), err);
    const struct qp_json *n;
    if (!st && (n = qp_json_get(root, "normalizer")) &&
        qp_json_type(n) != QP_JSON_NULL)
        st = normalizer(t, n, 0, err);
    if (!st && (n = qp_json_get(root, "pre_tokenizer")) &&
        qp_json_type(n) != QP_JSON_NULL)
        st = pre_tokenizer(t, n, 0, err);
    if (!st && (n = qp_json_get(root, "post_processor")) &&
        qp_json_type(n) != QP_JSON_NULL)
        st = post_processor(t, n, 0, err);
    if (!st && (n = qp_json_get(root, "decoder")) &&
        qp_json_type(n) != QP_JSON_NULL) {
        t->has_decoder = true;
        st = decoder(t, n, 0, err);
    }
    return st;
}
