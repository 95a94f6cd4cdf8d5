/* formats/tokenizer-text.c: text primitives of the tokenizer: UTF-8,
 * character classes and Unicode normalization (utf8proc), patterns
 * (PCRE2), growable buffers, and the normalizers. The only module that
 * calls PCRE2 and utf8proc.
 *
 * PCRE2 needs valid UTF-8, so every pattern runs on the valid runs of a
 * text one at a time (with PCRE2_NO_UTF_CHECK: validated here once); the
 * runs of invalid bytes between them are gaps no match crosses, which is
 * how PCRE2_MATCH_INVALID_UTF would treat them. */
#include "formats/tokenizer-impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <utf8proc.h>

#include "core/size.h"

/* ---- growable arrays ---------------------------------------------------- */

/* Makes room for `more` elements of `size` bytes in *p (capacity *cap). */
static bool reserve(void **p, size_t *cap, size_t n, size_t more, size_t size)
{
    size_t need;
    if (qp_size_add(n, more, &need))
        return false;
    if (need <= *cap)
        return true;
    size_t c = *cap ? *cap : 16, bytes;
    while (c < need)
        if (qp_size_mul(c, 2, &c))
            return false;
    if (qp_size_mul(c, size, &bytes))
        return false;
    void *q = realloc(*p, bytes);
    if (!q)
        return false;
    *p = q;
    *cap = c;
    return true;
}

bool tok_buf_add(struct tok_buf *b, const void *p, size_t n)
{
    /* one spare byte so a buffer can always be NUL-terminated */
    if (!reserve((void **)&b->p, &b->cap, b->n, n + 1, 1))
        return false;
    if (n)
        memcpy(b->p + b->n, p, n);
    b->n += n;
    b->p[b->n] = '\0';
    return true;
}

bool tok_ids_add(struct tok_ids *a, int32_t id)
{
    if (!reserve((void **)&a->v, &a->cap, a->n, 1, sizeof *a->v))
        return false;
    a->v[a->n++] = id;
    return true;
}

bool tok_spans_add(struct tok_spans *a, size_t off, size_t len, bool first)
{
    if (!reserve((void **)&a->v, &a->cap, a->n, 1, sizeof *a->v))
        return false;
    a->v[a->n++] = (struct tok_span){off, len, first};
    return true;
}

/* ---- UTF-8 and character classes ---------------------------------------- */

size_t tok_utf8_char(const unsigned char *s, size_t n, uint32_t *cp)
{
    unsigned char c = s[0];
    size_t len;
    uint32_t v, min;
    if (c < 0x80) {
        if (cp)
            *cp = c;
        return 1;
    } else if (c >= 0xc2 && c <= 0xdf) {
        len = 2, v = c & 0x1f, min = 0x80;
    } else if (c >= 0xe0 && c <= 0xef) {
        len = 3, v = c & 0x0f, min = 0x800;
    } else if (c >= 0xf0 && c <= 0xf4) {
        len = 4, v = c & 0x07, min = 0x10000;
    } else {
        return 0;
    }
    if (n < len)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        v = v << 6 | (s[i] & 0x3f);
    }
    if (v < min || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
        return 0;
    if (cp)
        *cp = v;
    return len;
}

/* Length of the run of valid UTF-8 at s[0..n) (0 when s[0] is invalid),
 * and of the invalid run there. */
static size_t valid_run(const char *s, size_t n)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0, k;
    while (i < n) {
        if (u[i] < 0x80) {
            i++;
            continue;
        }
        if (!(k = tok_utf8_char(u + i, n - i, NULL)))
            break;
        i += k;
    }
    return i;
}

static size_t invalid_run(const char *s, size_t n)
{
    size_t i = 0;
    while (i < n && !tok_utf8_char((const unsigned char *)s + i, n - i, NULL))
        i++;
    return i;
}

bool tok_is_space(uint32_t cp)
{
    if ((cp >= 9 && cp <= 13) || cp == 0x85)
        return true;
    if (cp < 0x80)
        return cp == ' ';
    utf8proc_category_t c = utf8proc_category((utf8proc_int32_t)cp);
    return c == UTF8PROC_CATEGORY_ZS || c == UTF8PROC_CATEGORY_ZL ||
           c == UTF8PROC_CATEGORY_ZP;
}

bool tok_is_word(uint32_t cp)
{
    if (cp == '_')
        return true;
    utf8proc_category_t c = utf8proc_category((utf8proc_int32_t)cp);
    return (c >= UTF8PROC_CATEGORY_LU && c <= UTF8PROC_CATEGORY_LO) ||
           (c >= UTF8PROC_CATEGORY_ND && c <= UTF8PROC_CATEGORY_NO);
}

uint32_t tok_byte_char(unsigned char b)
{
    /* printable Latin-1 maps to itself; the other 68 bytes, in order, to
     * U+0100 and up */
    bool printable = (b >= '!' && b <= '~') || (b >= 0xa1 && b <= 0xac) ||
                     b >= 0xae;
    if (printable)
        return b;
    uint32_t n = 0;
    for (unsigned x = 0; x < b; x++)
        n += !((x >= '!' && x <= '~') || (x >= 0xa1 && x <= 0xac) || x >= 0xae);
    return 256 + n;
}

/* ---- patterns ----------------------------------------------------------- */

bool tok_pattern_regex(struct tok_pattern *p, const char *src, size_t n,
                       char *msg, size_t msg_size)
{
    int code;
    PCRE2_SIZE at;
    memset(p, 0, sizeof *p);
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)src, n, PCRE2_UTF | PCRE2_UCP,
                                   &code, &at, NULL);
    if (!re) {
        PCRE2_UCHAR text[256];
        if (pcre2_get_error_message(code, text, sizeof text) < 0)
            snprintf((char *)text, sizeof text, "error %d", code);
        snprintf(msg, msg_size, "%s at offset %zu", (char *)text, (size_t)at);
        return false;
    }
    pcre2_jit_compile(re, PCRE2_JIT_COMPLETE); /* the interpreter otherwise */
    p->re = re;
    return true;
}

void tok_pattern_release(struct tok_pattern *p)
{
    free(p->lit);
    pcre2_code_free(p->re);
    memset(p, 0, sizeof *p);
}

bool tok_matcher_init(struct tok_matcher *m)
{
    m->md = pcre2_match_data_create(1, NULL);
    return m->md != NULL;
}

void tok_matcher_release(struct tok_matcher *m)
{
    pcre2_match_data_free(m->md);
    m->md = NULL;
}

/* Appends a gap s[from..to) unless empty; merges it into a preceding gap
 * (an unmatched stretch next to invalid bytes is one gap). */
static bool add_gap(struct tok_spans *out, size_t base, size_t from, size_t to)
{
    if (to <= from)
        return true;
    struct tok_span *last = out->n ? &out->v[out->n - 1] : NULL;
    if (last && !last->first && last->off + last->len == base + from) {
        last->len += to - from;
        return true;
    }
    return tok_spans_add(out, base + from, to - from, false);
}

/* Matches of regex re in the valid UTF-8 run s[0..n); spans at base. */
static bool regex_run(pcre2_code *re, pcre2_match_data *md, const char *s,
                      size_t n, size_t base, struct tok_spans *out)
{
    PCRE2_SPTR subj = (PCRE2_SPTR)s;
    size_t pos = 0, prev = 0;
    uint32_t opts = 0;
    while (pos <= n) {
        int rc = pcre2_match(re, subj, n, pos, opts | PCRE2_NO_UTF_CHECK, md,
                             NULL);
        if (rc == PCRE2_ERROR_NOMATCH) {
            if (!opts)
                break;
            /* nothing non-empty at pos after an empty match: next char */
            opts = 0;
            pos += pos < n ? tok_utf8_char(subj + pos, n - pos, NULL) : 1;
            continue;
        }
        if (rc < 0)
            return false;
        PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
        size_t ms = ov[0], me = ov[1];
        if (me > ms) {
            if (!add_gap(out, base, prev, ms) ||
                !tok_spans_add(out, base + ms, me - ms, true))
                return false;
            prev = me;
        }
        pos = me;
        opts = me == ms ? PCRE2_NOTEMPTY_ATSTART | PCRE2_ANCHORED : 0;
    }
    return add_gap(out, base, prev, n);
}

/* Occurrences of a literal in s[0..n). */
static bool literal_find(const struct tok_pattern *p, const char *s, size_t n,
                         struct tok_spans *out)
{
    size_t pos = 0, prev = 0;
    while (p->lit_len && pos + p->lit_len <= n) {
        const char *hit = memmem(s + pos, n - pos, p->lit, p->lit_len);
        if (!hit)
            break;
        size_t at = (size_t)(hit - s);
        if (!add_gap(out, 0, prev, at) ||
            !tok_spans_add(out, at, p->lit_len, true))
            return false;
        pos = prev = at + p->lit_len;
    }
    return add_gap(out, 0, prev, n);
}

bool tok_pattern_find(const struct tok_pattern *p, struct tok_matcher *m,
                      const char *s, size_t n, struct tok_spans *out)
{
    out->n = 0;
    if (!p->re) /* a valid literal never matches inside an invalid run, so
                   plain byte search agrees with the regex rule */
        return literal_find(p, s, n, out);
    size_t i = 0;
    while (i < n) {
        size_t v = valid_run(s + i, n - i);
        if (v && !regex_run(p->re, m->md, s + i, v, i, out))
            return false;
        i += v;
        size_t bad = invalid_run(s + i, n - i);
        if (!add_gap(out, 0, i, i + bad))
            return false;
        i += bad;
    }
    return true;
}

bool tok_pattern_replace(const struct tok_pattern *p, struct tok_matcher *m,
                         const char *s, size_t n, const char *with, size_t wn,
                         struct tok_buf *out)
{
    struct tok_spans sp = {0};
    bool ok = tok_pattern_find(p, m, s, n, &sp);
    for (size_t i = 0; ok && i < sp.n; i++)
        ok = sp.v[i].first ? tok_buf_add(out, with, wn)
                           : tok_buf_add(out, s + sp.v[i].off, sp.v[i].len);
    free(sp.v);
    return ok && tok_buf_add(out, NULL, 0);
}

/* ---- normalizers -------------------------------------------------------- */

/* Unicode normalization of each valid run (ASCII is left as is). */
static bool unicode_form(enum tok_norm_kind kind, const char *s, size_t n,
                         struct tok_buf *out)
{
    utf8proc_option_t opt = UTF8PROC_STABLE;
    opt |= kind == TOK_NORM_NFC || kind == TOK_NORM_NFKC ? UTF8PROC_COMPOSE
                                                         : UTF8PROC_DECOMPOSE;
    if (kind == TOK_NORM_NFKC || kind == TOK_NORM_NFKD)
        opt |= UTF8PROC_COMPAT;
    size_t i = 0;
    while (i < n) {
        size_t v = valid_run(s + i, n - i), ascii = 0;
        while (ascii < v && !(s[i + ascii] & 0x80))
            ascii++;
        if (ascii == v) {
            if (!tok_buf_add(out, s + i, v))
                return false;
        } else {
            utf8proc_uint8_t *dst = NULL;
            utf8proc_ssize_t k = utf8proc_map((const utf8proc_uint8_t *)s + i,
                                              (utf8proc_ssize_t)v, &dst, opt);
            bool ok = k >= 0 && tok_buf_add(out, dst, (size_t)k);
            free(dst);
            if (!ok)
                return false;
        }
        i += v;
        size_t bad = invalid_run(s + i, n - i);
        if (!tok_buf_add(out, s + i, bad))
            return false;
        i += bad;
    }
    return tok_buf_add(out, NULL, 0);
}

/* s[0..n) without leading and/or trailing white space. */
static bool strip(const char *s, size_t n, bool left, bool right,
                  struct tok_buf *out)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t a = 0, b = n;
    uint32_t cp;
    size_t k;
    while (left && a < b && (k = tok_utf8_char(u + a, b - a, &cp)) &&
           tok_is_space(cp))
        a += k;
    while (right && b > a) {
        size_t st = b - 1; /* the start of the last character */
        while (st > a && (u[st] & 0xc0) == 0x80 && b - st < 4)
            st--;
        k = tok_utf8_char(u + st, b - st, &cp);
        if (!k || st + k != b || !tok_is_space(cp))
            break;
        b = st;
    }
    return tok_buf_add(out, s + a, b - a);
}

static bool norm_step(const struct tok_norm *nm, struct tok_matcher *m,
                      const char *s, size_t n, struct tok_buf *out)
{
    switch (nm->kind) {
    case TOK_NORM_PREPEND:
        return (!n || tok_buf_add(out, nm->content, nm->content_len)) &&
               tok_buf_add(out, s, n);
    case TOK_NORM_REPLACE:
        return tok_pattern_replace(&nm->pat, m, s, n, nm->content,
                                   nm->content_len, out);
    case TOK_NORM_NFC:
    case TOK_NORM_NFD:
    case TOK_NORM_NFKC:
    case TOK_NORM_NFKD:
        return unicode_form(nm->kind, s, n, out);
    case TOK_NORM_STRIP:
        return strip(s, n, nm->left, nm->right, out);
    case TOK_NORM_COUNT:
        break;
    }
    return false;
}

bool tok_normalize(const struct qp_tokenizer *t, struct tok_matcher *m,
                   const char *s, size_t n, struct tok_buf *out)
{
    out->n = 0;
    if (!tok_buf_add(out, s, n))
        return false;
    struct tok_buf tmp = {0};
    bool ok = true;
    for (size_t i = 0; ok && i < t->n_norms; i++) {
        tmp.n = 0;
        ok = tok_buf_add(&tmp, NULL, 0) &&
             norm_step(&t->norms[i], m, out->p, out->n, &tmp);
        struct tok_buf x = *out;
        *out = tmp;
        tmp = x;
    }
    free(tmp.p);
    return ok;
}
