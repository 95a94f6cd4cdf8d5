#include "quant/scheme.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "quant/ggml-quant.h"

#define GROUP_MAX ((int64_t)1 << 30)
#define PCT_DECIMALS 6

static const char *const gran_names[] = {"t", "c", "g"};
_Static_assert(sizeof gran_names / sizeof gran_names[0] == QP_GRAN_COUNT,
               "gran_names must cover every granularity");
static const char *const walgo_names[] = {"rtn", "mse", "gptq"};
_Static_assert(sizeof walgo_names / sizeof walgo_names[0] == QP_WALGO_COUNT,
               "walgo_names must cover every algorithm");
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
           a->group == b->group && a->algo == b->algo;
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

/* 'pct' P: digits with at most PCT_DECIMALS decimals, 0 < P <= 100. */
static enum qp_status percentile(struct cur *c, double *out)
{
    size_t start = c->i;
    int64_t ip;
    enum qp_status st = number(c, "a percentile after 'pct'", &ip);
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
                           "percentile has more than %d decimals", PCT_DECIMALS);
    }
    char buf[QP_SCHEME_MAX + 1];
    size_t n = c->i - start;
    memcpy(buf, c->s + start, n);
    buf[n] = '\0';
    double v = strtod(buf, NULL);
    if (!(v > 0 && v <= 100))
        return fail_at(c, start, "percentile must be in (0, 100], got %s", buf);
    *out = v;
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
        size_t at = c->i;
        if ((st = number(c, "a group size after 'g'", &w->group)))
            return st;
        if (w->group < 1)
            return fail_at(c, at, "group size must be at least 1");
        if (w->group > GROUP_MAX)
            return fail_at(c, at, "group size must be at most %lld",
                           (long long)GROUP_MAX);
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

enum qp_status qp_scheme_parse(const char *s, struct qp_scheme *out, int *pos,
                               struct qp_error *err)
{
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

void qp_ascheme_format(const struct qp_ascheme *a, char *buf, size_t size)
{
    char range[48] = "";
    if (a->range == QP_ARANGE_PCT) {
        /* shortest decimal that reads back as the same double */
        char num[32];
        for (int d = 0; d <= PCT_DECIMALS; d++) {
            snprintf(num, sizeof num, "%.*f", d, a->pct);
            if (strtod(num, NULL) == a->pct)
                break;
        }
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
    char g[24], tail[80] = "", w[48];
    if (s->w.gran == QP_GRAN_GROUP)
        snprintf(g, sizeof g, "g%lld", (long long)s->w.group);
    else
        snprintf(g, sizeof g, "%s", qp_gran_name(s->w.gran));
    int ws = sym_char(&s->w.f);
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
    snprintf(buf, size, "%s%s", w, tail);
}
