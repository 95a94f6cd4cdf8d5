#include "quant/scheme.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/hash.h"
#include "quant/ggml-quant.h"

#define GROUP_MAX ((int64_t)1 << 30)
#define PCT_DECIMALS 6

static const char *const gran_names[] = {"t", "c", "g"};
_Static_assert(sizeof gran_names / sizeof gran_names[0] == QP_GRAN_COUNT,
               "gran_names must cover every granularity");
static const char *const walgo_names[] = {"rtn", "mse", "gptq"};
_Static_assert(sizeof walgo_names / sizeof walgo_names[0] == QP_WALGO_COUNT,
               "walgo_names must cover every algorithm");
/* GPTQ options, in their canonical order */
enum { GOPT_ACT, GOPT_STATIC, GOPT_MSE, GOPT_DAMP, GOPT_BLK, GOPT_HALF,
       GOPT_COUNT };
static const char *const gopt_names[] = {"act", "static", "mse", "damp", "blk",
                                         "half"};
_Static_assert(sizeof gopt_names / sizeof gopt_names[0] == GOPT_COUNT,
               "gopt_names must cover every GPTQ option");
static const char *const arange_names[] = {"minmax", "ema", "pct", "mse", "kl"};
_Static_assert(sizeof arange_names / sizeof arange_names[0] == QP_ARANGE_COUNT,
               "arange_names must cover every range method");

const char *qp_gran_name(enum qp_gran g)
{
    return (unsigned)g < QP_GRAN_COUNT ? gran_names[g] : "?";
}

const char *qp_walgo_name(enum qp_walgo a)
{
    return (unsigned)a < QP_WALGO_COUNT ? walgo_names[a] : "?";
}

const char *qp_arange_name(enum qp_arange r)
{
    return (unsigned)r < QP_ARANGE_COUNT ? arange_names[r] : "?";
}

bool qp_wscheme_equal(const struct qp_wscheme *a, const struct qp_wscheme *b)
{
    if (a->family != b->family)
        return false;
    if (a->family == QP_WFAMILY_GGML)
        return a->ggml == b->ggml;
    return a->f.bits == b->f.bits && a->f.asym == b->f.asym &&
           a->f.narrow == b->f.narrow && a->gran == b->gran &&
           a->group == b->group && a->algo == b->algo &&
           a->gptq.act_order == b->gptq.act_order &&
           a->gptq.static_groups == b->gptq.static_groups &&
           a->gptq.mse == b->gptq.mse && a->gptq.damp == b->gptq.damp &&
           a->gptq.block == b->gptq.block &&
           a->gptq.half_scales == b->gptq.half_scales;
}

uint64_t qp_wscheme_hash(uint64_t h, const struct qp_wscheme *ws)
{
    h = qp_hash_u64(h, (uint64_t)ws->family);
    if (ws->family == QP_WFAMILY_GGML)
        return qp_hash_u64(h, (uint64_t)ws->ggml);
    h = qp_hash_u64(h, (uint64_t)ws->f.bits | (uint64_t)ws->f.asym << 8 |
                           (uint64_t)ws->f.narrow << 9 |
                           (uint64_t)ws->gran << 16 | (uint64_t)ws->algo << 24);
    h = qp_hash_u64(h, (uint64_t)ws->group);
    if (ws->algo != QP_WALGO_GPTQ)
        return h;
    const struct qp_gptq_options *g = &ws->gptq;
    uint64_t bits;
    memcpy(&bits, &g->damp, sizeof bits);
    h = qp_hash_u64(h, (uint64_t)g->act_order | (uint64_t)g->static_groups << 1 |
                           (uint64_t)g->mse << 2 |
                           (uint64_t)g->half_scales << 3);
    return qp_hash_u64(qp_hash_u64(h, bits), (uint64_t)g->block);
}

/* Parser state: the string, the cursor, and where an error points. */
struct cur {
    const char *s;
    size_t i, len;
    int pos;
    struct qp_error *err;
};

/* Fails with "scheme 'S': MSG" and the string with a caret under byte at. */
__attribute__((format(printf, 3, 4)))
static enum qp_status fail_at(struct cur *c, size_t at, const char *fmt, ...)
{
    char shown[QP_SCHEME_MAX + 1], msg[256], caret[QP_SCHEME_MAX + 2];
    size_t n = c->len < QP_SCHEME_MAX ? c->len : QP_SCHEME_MAX;
    for (size_t k = 0; k < n; k++) {
        unsigned char ch = (unsigned char)c->s[k];
        shown[k] = ch >= 0x20 && ch < 0x7f ? (char)ch : '?';
    }
    shown[n] = '\0';
    if (at > n)
        at = n;
    memset(caret, ' ', at);
    caret[at] = '^';
    caret[at + 1] = '\0';
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    c->pos = (int)at;
    return qp_fail(c->err, QP_E_INVAL, "scheme '%s': %s\n  %s\n  %s", shown,
                   msg, shown, caret);
}

static bool is_digit(char ch) { return ch >= '0' && ch <= '9'; }
static bool is_alpha(char ch) { return ch >= 'a' && ch <= 'z'; }

/* A decimal integer of at most 10 digits, without a leading zero. */
static enum qp_status number(struct cur *c, const char *what, int64_t *out)
{
    size_t start = c->i;
    if (c->i >= c->len || !is_digit(c->s[c->i]))
        return fail_at(c, start, "expected %s", what);
    int64_t v = 0;
    while (c->i < c->len && is_digit(c->s[c->i])) {
        if (c->i - start == 10)
            return fail_at(c, start, "%s has too many digits", what);
        v = v * 10 + (c->s[c->i++] - '0');
    }
    if (c->s[start] == '0' && c->i - start > 1)
        return fail_at(c, start, "%s must not have a leading zero", what);
    *out = v;
    return QP_OK;
}

static enum qp_status bits(struct cur *c, const char *after, unsigned *out)
{
    size_t start = c->i;
    char what[48];
    snprintf(what, sizeof what, "the number of bits after '%s'", after);
    int64_t v;
    enum qp_status st = number(c, what, &v);
    if (st)
        return st;
    if (!((v >= 2 && v <= 8) || v == 16))
        return fail_at(c, start, "bits must be 2..8 or 16, got %lld",
                       (long long)v);
    *out = (unsigned)v;
    return QP_OK;
}

/* Optional 'z' or 'n' (one of them). */
static enum qp_status symmetry(struct cur *c, struct qp_qformat *f)
{
    if (c->i < c->len && (c->s[c->i] == 'z' || c->s[c->i] == 'n')) {
        f->asym = c->s[c->i] == 'z';
        f->narrow = c->s[c->i] == 'n';
        c->i++;
        if (c->i < c->len && (c->s[c->i] == 'z' || c->s[c->i] == 'n'))
            return fail_at(c, c->i, "'z' (asymmetric) and 'n' (narrow "
                                    "symmetric) exclude each other");
    }
    return QP_OK;
}

/* A lower-case word at the cursor, looked up in names[n]. */
static enum qp_status word(struct cur *c, const char *const *names, int n,
                           const char *what, const char *expected, int *out)
{
    size_t start = c->i;
    while (c->i < c->len && is_alpha(c->s[c->i]))
        c->i++;
    size_t wl = c->i - start;
    for (int k = 0; k < n; k++)
        if (strlen(names[k]) == wl && !memcmp(names[k], c->s + start, wl)) {
            *out = k;
            return QP_OK;
        }
    if (wl == 0)
        return fail_at(c, start, "expected %s (%s)", what, expected);
    return fail_at(c, start, "unknown %s '%.*s' (expected %s)", what, (int)wl,
                   c->s + start, expected);
}

/* A number in 1..GROUP_MAX ("expected WHAT", "NAME must be ..."). */
static enum qp_status count(struct cur *c, const char *what, const char *name,
                            int64_t *out)
{
    size_t at = c->i;
    enum qp_status st = number(c, what, out);
    if (st)
        return st;
    if (*out < 1)
        return fail_at(c, at, "%s must be at least 1", name);
    if (*out > GROUP_MAX)
        return fail_at(c, at, "%s must be at most %lld", name,
                       (long long)GROUP_MAX);
    return QP_OK;
}

/* A decimal at the cursor: digits (no leading zero), then optionally '.'
 * and 1..PCT_DECIMALS digits. Errors say "expected WHAT" and "NAME has
 * more than .. decimals". *start receives its offset. */
static enum qp_status decimal(struct cur *c, const char *what, const char *name,
                              size_t *start, double *out)
{
    *start = c->i;
    int64_t ip;
    enum qp_status st = number(c, what, &ip);
    if (st)
        return st;
    if (c->i < c->len && c->s[c->i] == '.') {
        size_t dot = c->i++;
        while (c->i < c->len && is_digit(c->s[c->i]))
            c->i++;
        if (c->i == dot + 1)
            return fail_at(c, c->i, "expected digits after '.'");
        if (c->i - dot - 1 > PCT_DECIMALS)
            return fail_at(c, dot + 1 + PCT_DECIMALS,
                           "%s has more than %d decimals", name, PCT_DECIMALS);
    }
    char buf[QP_SCHEME_MAX + 1];
    size_t n = c->i - *start;
    memcpy(buf, c->s + *start, n);
    buf[n] = '\0';
    *out = strtod(buf, NULL);
    return QP_OK;
}

/* 'pct' P: 0 < P <= 100. */
static enum qp_status percentile(struct cur *c, double *out)
{
    size_t start;
    enum qp_status st = decimal(c, "a percentile after 'pct'", "percentile",
                                &start, out);
    if (st)
        return st;
    if (!(*out > 0 && *out <= 100))
        return fail_at(c, start, "percentile must be in (0, 100], got %.*s",
                       (int)(c->i - start), c->s + start);
    return QP_OK;
}

/* ':' GOPT { ',' GOPT } after '@gptq', the cursor on the ':'. */
static enum qp_status gptq_options(struct cur *c, struct qp_wscheme *w)
{
    struct qp_gptq_options *o = &w->gptq;
    unsigned seen = 0;
    enum qp_status st;
    do {
        c->i++; /* ':' or ',' */
        size_t at = c->i, start;
        int k;
        if ((st = word(c, gopt_names, GOPT_COUNT, "GPTQ option",
                       "act, static, mse, damp D, blk N or half", &k)))
            return st;
        if (seen & (1u << k))
            return fail_at(c, at, "GPTQ option '%s' given twice", gopt_names[k]);
        seen |= 1u << k;
        switch (k) {
        case GOPT_ACT:
            o->act_order = true;
            break;
        case GOPT_STATIC:
            if (w->gran != QP_GRAN_GROUP)
                return fail_at(c, at, "'static' needs group-wise weights "
                                      "('g' N)");
            o->static_groups = true;
            break;
        case GOPT_MSE:
            o->mse = true;
            break;
        case GOPT_HALF:
            o->half_scales = true;
            break;
        case GOPT_DAMP:
            if ((st = decimal(c, "a dampening fraction after 'damp'", "dampening",
                              &start, &o->damp)))
                return st;
            if (!(o->damp > 0 && o->damp < 1))
                return fail_at(c, start, "dampening must be in (0, 1), got %.*s",
                               (int)(c->i - start), c->s + start);
            if (o->damp == QP_GPTQ_DAMP_DEFAULT)
                o->damp = 0;
            break;
        default:
            if ((st = count(c, "a block size after 'blk'", "block size",
                            &o->block)))
                return st;
            if (o->block == QP_GPTQ_BLOCK_DEFAULT)
                o->block = 0;
            break;
        }
    } while (c->i < c->len && c->s[c->i] == ',');
    return QP_OK;
}

/* GGML: a ggml type name at the cursor ('q' ...). */
static enum qp_status ggml_weights(struct cur *c, struct qp_wscheme *w)
{
    size_t start = c->i;
    while (c->i < c->len && (is_alpha(c->s[c->i]) || is_digit(c->s[c->i]) ||
                             c->s[c->i] == '_'))
        c->i++;
    enum qp_ggml_type t;
    if (!qp_ggml_type_from_scheme(c->s + start, c->i - start, &t))
        return fail_at(c, start, "unknown ggml type '%.*s' (expected q8_0, "
                       "q4_0, q4_1, q5_0, q4_k or q6_k)", (int)(c->i - start),
                       c->s + start);
    const struct qp_ggml_type_info *ti = qp_ggml_type_info(t);
    w->family = QP_WFAMILY_GGML;
    w->ggml = t;
    w->f.bits = ti->bits;
    w->f.asym = t == QP_GGML_Q4_1 || t == QP_GGML_Q4_K;
    w->gran = QP_GRAN_GROUP;
    w->group = ti->block;
    if (c->i < c->len && c->s[c->i] == '@')
        return fail_at(c, c->i, "a ggml type takes no '@' algorithm (ggml's "
                       "reference quantizer is fixed)");
    return QP_OK;
}

static enum qp_status weights(struct cur *c, struct qp_wscheme *w)
{
    if (c->i < c->len && c->s[c->i] == 'q')
        return ggml_weights(c, w);
    if (c->i >= c->len || c->s[c->i] != 'w')
        return fail_at(c, c->i, "expected 'w' and the weight bits at the start");
    c->i++;
    enum qp_status st = bits(c, "w", &w->f.bits);
    if (st)
        return st;
    char g = c->i < c->len ? c->s[c->i] : '\0';
    if (g == 't' || g == 'c') {
        w->gran = g == 't' ? QP_GRAN_TENSOR : QP_GRAN_CHANNEL;
        c->i++;
    } else if (g == 'g') {
        c->i++;
        if ((st = count(c, "a group size after 'g'", "group size", &w->group)))
            return st;
        w->gran = QP_GRAN_GROUP;
    } else {
        return fail_at(c, c->i, "expected granularity 't' (per-tensor), 'c' "
                                "(per-channel) or 'g' N (groups of N)");
    }
    if ((st = symmetry(c, &w->f)))
        return st;
    if (c->i < c->len && c->s[c->i] == '@') {
        c->i++;
        int a;
        if ((st = word(c, walgo_names, QP_WALGO_COUNT, "algorithm",
                       "rtn, mse or gptq", &a)))
            return st;
        w->algo = (enum qp_walgo)a;
        if (c->i < c->len && c->s[c->i] == ':') {
            if (w->algo != QP_WALGO_GPTQ)
                return fail_at(c, c->i, "options after ':' apply to '@gptq' "
                                        "only");
            if ((st = gptq_options(c, w)))
                return st;
        }
    }
    return QP_OK;
}

static enum qp_status acts(struct cur *c, struct qp_ascheme *a)
{
    if (c->i >= c->len || c->s[c->i] != 'a')
        return fail_at(c, c->i, "expected 'a' and the activation bits after '+'");
    c->i++;
    enum qp_status st = bits(c, "a", &a->f.bits);
    if (st)
        return st;
    char g = c->i < c->len ? c->s[c->i] : '\0';
    if (g != 't' && g != 'd')
        return fail_at(c, c->i, "expected 't' (static per-tensor) or 'd' "
                                "(dynamic per-token) after the activation bits");
    a->dynamic = g == 'd';
    c->i++;
    if ((st = symmetry(c, &a->f)))
        return st;
    if (c->i < c->len && c->s[c->i] == ':') {
        if (a->dynamic)
            return fail_at(c, c->i, "a range applies to static ('t') "
                                    "activations only");
        c->i++;
        int r;
        if ((st = word(c, arange_names, QP_ARANGE_COUNT, "range",
                       "minmax, ema, pct P, mse or kl", &r)))
            return st;
        a->range = (enum qp_arange)r;
        if (a->range == QP_ARANGE_PCT && (st = percentile(c, &a->pct)))
            return st;
    }
    return QP_OK;
}

/* The checks every whole-string parse starts with. */
static enum qp_status whole_start(struct cur *c, const char *what)
{
    if (c->len == 0)
        return fail_at(c, 0, "empty %s", what);
    if (c->len > QP_SCHEME_MAX)
        return fail_at(c, QP_SCHEME_MAX, "longer than %d characters",
                       QP_SCHEME_MAX);
    return QP_OK;
}

/* What is left after a whole-string parse; pos as the parsers report it. */
static enum qp_status whole_end(struct cur *c, enum qp_status st,
                                const char *part, int *pos)
{
    if (!st && c->i < c->len)
        st = fail_at(c, c->i, "unexpected '%c' after the %s", c->s[c->i] >= 0x20 &&
                     c->s[c->i] < 0x7f ? c->s[c->i] : '?', part);
    if (pos)
        *pos = st ? c->pos : -1;
    return st;
}

/* "8da4w" [ ':g' N ]: ExecuTorch's 8da4w, w4gN+a8dz (N 32 by default),
 * into buf; false for anything else. */
static bool alias_8da4w(const char *s, char *buf, size_t size)
{
    if (strncmp(s, "8da4w", 5))
        return false;
    const char *g = s[5] == ':' && s[6] == 'g' ? s + 7 : NULL;
    if (!s[5])
        g = "32";
    if (!g || !*g || strspn(g, "0123456789") != strlen(g) || strlen(g) > 10)
        return false;
    snprintf(buf, size, "w4g%s+a8dz", g);
    return true;
}

enum qp_status qp_scheme_parse(const char *s, struct qp_scheme *out, int *pos,
                               struct qp_error *err)
{
    char alias[32];
    if (alias_8da4w(s, alias, sizeof alias))
        s = alias;
    struct cur c = {s, 0, strlen(s), -1, err};
    struct qp_scheme r;
    memset(&r, 0, sizeof r);
    enum qp_status st = whole_start(&c, "scheme");
    if (!st)
        st = weights(&c, &r.w);
    if (!st && c.i < c.len && c.s[c.i] == '+') {
        c.i++;
        r.has_acts = true;
        st = acts(&c, &r.a);
    }
    st = whole_end(&c, st, r.has_acts ? "activation part" : "weight part", pos);
    if (!st)
        *out = r;
    return st;
}

enum qp_status qp_ascheme_parse(const char *s, struct qp_ascheme *out, int *pos,
                                struct qp_error *err)
{
    struct cur c = {s, 0, strlen(s), -1, err};
    struct qp_ascheme a;
    memset(&a, 0, sizeof a);
    enum qp_status st = whole_start(&c, "activation scheme");
    if (!st)
        st = acts(&c, &a);
    st = whole_end(&c, st, "activation part", pos);
    if (!st)
        *out = a;
    return st;
}

static int sym_char(const struct qp_qformat *f)
{
    return f->asym ? 'z' : f->narrow ? 'n' : 0;
}

/* The shortest decimal with at most PCT_DECIMALS decimals that reads back
 * as v (v one the parser produced). */
static void shortest(double v, char *num, size_t size)
{
    for (int d = 0; d <= PCT_DECIMALS; d++) {
        snprintf(num, size, "%.*f", d, v);
        if (strtod(num, NULL) == v)
            break;
    }
}

/* ":act,static,mse,dampD,blkN,half" without defaults, or "" (canonical
 * order). */
static void format_gptq(const struct qp_gptq_options *o, char *buf, size_t size)
{
    char num[32];
    size_t n = 0;
    buf[0] = '\0';
    bool on[GOPT_COUNT] = {o->act_order, o->static_groups, o->mse,
                           o->damp != 0, o->block != 0, o->half_scales};
    for (int k = 0; k < GOPT_COUNT && n < size; k++) {
        if (!on[k])
            continue;
        num[0] = '\0';
        if (k == GOPT_DAMP)
            shortest(o->damp, num, sizeof num);
        else if (k == GOPT_BLK)
            snprintf(num, sizeof num, "%lld", (long long)o->block);
        n += (size_t)snprintf(buf + n, size - n, "%c%s%s", n ? ',' : ':',
                              gopt_names[k], num);
    }
}

void qp_ascheme_format(const struct qp_ascheme *a, char *buf, size_t size)
{
    char range[48] = "";
    if (a->range == QP_ARANGE_PCT) {
        char num[32];
        shortest(a->pct, num, sizeof num);
        snprintf(range, sizeof range, ":pct%s", num);
    } else if (a->range != QP_ARANGE_MINMAX) {
        snprintf(range, sizeof range, ":%s", qp_arange_name(a->range));
    }
    int as = sym_char(&a->f);
    snprintf(buf, size, "a%u%c%s%s", a->f.bits, a->dynamic ? 'd' : 't',
             as == 'z' ? "z" : as == 'n' ? "n" : "", range);
}

void qp_scheme_format(const struct qp_scheme *s, char *buf, size_t size)
{
    char g[24], tail[80] = "", w[48], opts[64] = "";
    if (s->w.gran == QP_GRAN_GROUP)
        snprintf(g, sizeof g, "g%lld", (long long)s->w.group);
    else
        snprintf(g, sizeof g, "%s", qp_gran_name(s->w.gran));
    int ws = sym_char(&s->w.f);
    if (s->w.algo == QP_WALGO_GPTQ)
        format_gptq(&s->w.gptq, opts, sizeof opts);
    if (s->w.family == QP_WFAMILY_GGML)
        snprintf(w, sizeof w, "%s", qp_ggml_type_info(s->w.ggml)->scheme);
    else
        snprintf(w, sizeof w, "w%u%s%s%s%s", s->w.f.bits, g,
                 ws == 'z' ? "z" : ws == 'n' ? "n" : "",
                 s->w.algo != QP_WALGO_RTN ? "@" : "",
                 s->w.algo != QP_WALGO_RTN ? qp_walgo_name(s->w.algo) : "");
    if (s->has_acts) {
        char a[72];
        qp_ascheme_format(&s->a, a, sizeof a);
        snprintf(tail, sizeof tail, "+%s", a);
    }
    snprintf(buf, size, "%s%s%s", w, opts, tail);
}
