/* formats/tokenizer-pretok.c: the first steps of encoding: finding added
 * tokens in the text (a byte trie, leftmost-longest, as HF's added
 * vocabulary), and the pre-tokenizers that cut a normalized section into
 * the words the model encodes (HF's Split behaviours, Digits, Metaspace,
 * ByteLevel). */
#include "formats/tokenizer-impl.h"

#include <stdlib.h>
#include <string.h>

/* ---- added tokens ------------------------------------------------------- */

static int32_t trie_child(const struct qp_tokenizer *t, int32_t node,
                          unsigned char b)
{
    for (int32_t c = t->trie[node].child; c >= 0; c = t->trie[c].sibling)
        if (t->trie[c].byte == b)
            return c;
    return -1;
}

enum qp_status tok_added_index(struct qp_tokenizer *t, struct qp_error *err)
{
    free(t->trie);
    t->trie = NULL;
    t->n_trie = t->trie_cap = 0;
    size_t need = 1;
    for (size_t i = 0; i < t->n_added; i++)
        need += t->tokens[t->added[i].id].len;
    if (!(t->trie = malloc(need * sizeof *t->trie)))
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    t->trie_cap = need;
    t->trie[0] = (struct tok_trie_node){-1, -1, -1, 0};
    t->n_trie = 1;
    for (size_t i = 0; i < t->n_added; i++) {
        const char *s = tok_str(t, t->added[i].id);
        size_t len = t->tokens[t->added[i].id].len;
        int32_t node = 0;
        for (size_t k = 0; k < len; k++) {
            unsigned char b = (unsigned char)s[k];
            int32_t c = trie_child(t, node, b);
            if (c < 0) {
                c = (int32_t)t->n_trie++;
                t->trie[c] = (struct tok_trie_node){-1, t->trie[node].child,
                                                    -1, b};
                t->trie[node].child = c;
            }
            node = c;
        }
        if (node > 0 && t->trie[node].added < 0)
            t->trie[node].added = (int32_t)i; /* the first of equal contents */
    }
    return QP_OK;
}

/* The added token matching longest at text[i..n) (-1 for none); its end
 * in *end. */
static int32_t longest_added(const struct qp_tokenizer *t, const char *text,
                             size_t i, size_t n, size_t *end)
{
    int32_t node = 0, found = -1;
    for (size_t k = i; k < n; k++) {
        node = trie_child(t, node, (unsigned char)text[k]);
        if (node < 0)
            break;
        if (t->trie[node].added >= 0) {
            found = t->trie[node].added;
            *end = k + 1;
        }
    }
    return found;
}

/* The character ending at s[end) not before s[lo): its length, or 0 when
 * the bytes there are not a valid character. */
static size_t char_before(const char *s, size_t lo, size_t end, uint32_t *cp)
{
    for (size_t k = 1; k <= 4 && k <= end - lo; k++)
        if (tok_utf8_char((const unsigned char *)s + end - k, k, cp) == k)
            return k;
    return 0;
}

static bool word_at(const char *s, size_t i, size_t n)
{
    uint32_t cp;
    return i < n && tok_utf8_char((const unsigned char *)s + i, n - i, &cp) &&
           tok_is_word(cp);
}

bool tok_split_added(const struct qp_tokenizer *t, const char *text, size_t n,
                     struct tok_spans *out)
{
    out->n = 0;
    size_t start = 0, i = 0;
    uint32_t cp;
    while (i < n) {
        size_t end = 0, k;
        int32_t a = t->n_added ? longest_added(t, text, i, n, &end) : -1;
        const struct tok_added *ad = a >= 0 ? &t->added[a] : NULL;
        if (ad && ad->single_word &&
            ((i > 0 && char_before(text, 0, i, &cp) && tok_is_word(cp)) ||
             word_at(text, end, n)))
            ad = NULL;
        if (!ad) {
            i++;
            continue;
        }
        size_t from = i;
        while (ad->lstrip && (k = char_before(text, start, from, &cp)) &&
               tok_is_space(cp))
            from -= k;
        while (ad->rstrip && end < n &&
               (k = tok_utf8_char((const unsigned char *)text + end, n - end,
                                  &cp)) &&
               tok_is_space(cp))
            end += k;
        if ((from > start && !tok_spans_add(out, start, from - start, false)) ||
            !tok_spans_add(out, (size_t)a, end - from, true))
            return false;
        start = i = end;
    }
    return start >= n || tok_spans_add(out, start, n - start, false);
}

/* ---- Split behaviours --------------------------------------------------- */

/* Appends to out the splits that behaviour b makes of the pieces p[0..np)
 * (first = is a match) of the split `in` of a buffer; pieces are relative
 * to in.off and cover it. */
static bool combine(const struct tok_span *p, size_t np, enum tok_behavior b,
                    bool invert, struct tok_span in, struct tok_spans *out)
{
    size_t n0 = out->n;
    bool prev = false;
    if (b == TOK_SPLIT_MERGED_NEXT) {
        /* right to left: a match joins the piece after it */
        for (size_t j = np; j-- > 0;) {
            bool m = p[j].first != invert;
            if (m && !prev && out->n > n0) {
                struct tok_span *last = &out->v[out->n - 1];
                last->len += last->off - (in.off + p[j].off);
                last->off = in.off + p[j].off;
            } else if (!tok_spans_add(out, in.off + p[j].off, p[j].len, false)) {
                return false;
            }
            prev = m;
        }
        for (size_t a = n0, z = out->n; a + 1 < z; a++, z--) {
            struct tok_span x = out->v[a];
            out->v[a] = out->v[z - 1];
            out->v[z - 1] = x;
        }
    } else {
        for (size_t j = 0; j < np; j++) {
            bool m = p[j].first != invert;
            bool join = out->n > n0 &&
                        ((b == TOK_SPLIT_MERGED_PREV && m && !prev) ||
                         (b == TOK_SPLIT_CONTIGUOUS && m == prev));
            prev = m;
            if (b == TOK_SPLIT_REMOVED && m)
                continue;
            if (join)
                out->v[out->n - 1].len += p[j].len;
            else if (!tok_spans_add(out, in.off + p[j].off, p[j].len, false))
                return false;
        }
    }
    /* only the split that begins the input keeps `first` */
    for (size_t j = n0; j < out->n; j++)
        out->v[j].first = in.first && out->v[j].off == in.off;
    return true;
}

/* ASCII digits as matches, the rest as gaps. */
static bool digit_pieces(const char *s, size_t n, struct tok_spans *out)
{
    out->n = 0;
    for (size_t i = 0; i < n;) {
        bool d = s[i] >= '0' && s[i] <= '9';
        size_t j = i + 1;
        while (!d && j < n && !(s[j] >= '0' && s[j] <= '9'))
            j++;
        if (!tok_spans_add(out, i, j - i, d))
            return false;
        i = j;
    }
    return true;
}

/* ---- pre-tokenizers ----------------------------------------------------- */

static bool starts_with(const char *s, size_t n, const char *p, size_t pn)
{
    return n >= pn && !memcmp(s, p, pn);
}

/* Metaspace and ByteLevel rewrite each split into nb: spaces replaced,
 * a prefix added; then split again. */
static bool rewrite(const struct tok_pre *pre, const char *s,
                    struct tok_span in, struct tok_buf *nb)
{
    const char *p = s + in.off;
    if (pre->kind == TOK_PRE_BYTELEVEL)
        return (!pre->prefix_space || starts_with(p, in.len, " ", 1) ||
                tok_buf_add(nb, " ", 1)) &&
               tok_buf_add(nb, p, in.len);
    size_t at = nb->n;
    for (size_t i = 0; i < in.len; i++)
        if (!(p[i] == ' ' ? tok_buf_add(nb, pre->repl, pre->repl_len)
                          : tok_buf_add(nb, p + i, 1)))
            return false;
    bool add = pre->prepend == TOK_PREPEND_ALWAYS ||
               (pre->prepend == TOK_PREPEND_FIRST && in.first);
    if (add && !starts_with(nb->p + at, nb->n - at, pre->repl, pre->repl_len)) {
        if (!tok_buf_add(nb, pre->repl, pre->repl_len))
            return false;
        memmove(nb->p + at + pre->repl_len, nb->p + at,
                nb->n - at - pre->repl_len);
        memcpy(nb->p + at, pre->repl, pre->repl_len);
    }
    return true;
}

/* One pre-tokenizer over every split of cur (in *buf) into next. */
static bool pre_step(const struct tok_pre *pre, struct tok_matcher *m,
                     struct tok_buf *buf, const struct tok_spans *cur,
                     struct tok_spans *next, struct tok_spans *pieces)
{
    struct tok_buf nb = {0};
    bool ok = true, moved = pre->kind == TOK_PRE_METASPACE ||
                            pre->kind == TOK_PRE_BYTELEVEL;
    next->n = 0;
    for (size_t i = 0; ok && i < cur->n; i++) {
        struct tok_span in = cur->v[i];
        if (moved) {
            size_t at = nb.n;
            ok = rewrite(pre, buf->p, in, &nb);
            in.off = at;
            in.len = nb.n - at;
        }
        const char *base = moved ? nb.p : buf->p;
        switch (pre->kind) {
        case TOK_PRE_SPLIT:
            ok = ok &&
                 tok_pattern_find(&pre->pat, m, base + in.off, in.len, pieces) &&
                 combine(pieces->v, pieces->n, pre->behavior, pre->invert, in,
                         next);
            break;
        case TOK_PRE_DIGITS:
            ok = ok && digit_pieces(base + in.off, in.len, pieces) &&
                 combine(pieces->v, pieces->n,
                         pre->individual ? TOK_SPLIT_ISOLATED
                                         : TOK_SPLIT_CONTIGUOUS,
                         false, in, next);
            break;
        case TOK_PRE_METASPACE:
            if (ok && pre->split) {
                struct tok_pattern lit = {(char *)pre->repl, pre->repl_len, NULL};
                ok = tok_pattern_find(&lit, m, base + in.off, in.len, pieces) &&
                     combine(pieces->v, pieces->n, TOK_SPLIT_MERGED_NEXT, false,
                             in, next);
            } else {
                ok = ok && tok_spans_add(next, in.off, in.len, in.first);
            }
            break;
        case TOK_PRE_BYTELEVEL:
            if (ok && pre->use_regex)
                ok = tok_pattern_find(&pre->pat, m, base + in.off, in.len,
                                      pieces) &&
                     combine(pieces->v, pieces->n, TOK_SPLIT_ISOLATED, false, in,
                             next);
            else
                ok = ok && tok_spans_add(next, in.off, in.len, in.first);
            break;
        case TOK_PRE_COUNT:
            ok = false;
            break;
        }
    }
    if (moved) {
        if (ok && !nb.p)
            ok = tok_buf_add(&nb, NULL, 0);
        free(buf->p);
        *buf = nb;
    }
    /* empty splits are dropped */
    size_t k = 0;
    for (size_t i = 0; i < next->n; i++)
        if (next->v[i].len)
            next->v[k++] = next->v[i];
    next->n = k;
    return ok;
}

bool tok_pretokenize(const struct qp_tokenizer *t, struct tok_matcher *m,
                     struct tok_buf *buf, struct tok_span in,
                     struct tok_spans *out)
{
    out->n = 0;
    if (!in.len)
        return true;
    if (!tok_spans_add(out, in.off, in.len, in.first))
        return false;
    struct tok_spans next = {0}, pieces = {0};
    bool ok = true;
    for (size_t i = 0; ok && i < t->n_pres; i++) {
        ok = pre_step(&t->pres[i], m, buf, out, &next, &pieces);
        struct tok_spans x = *out;
        *out = next;
        next = x;
    }
    free(next.v);
    free(pieces.v);
    return ok;
}
