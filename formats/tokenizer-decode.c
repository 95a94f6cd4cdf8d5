/* formats/tokenizer-decode.c: token ids back to text through the
 * tokenizer.json decoders, as HF runs them: each decoder turns the list of
 * token strings into another list (ByteLevel maps characters back to
 * bytes, ByteFallback turns runs of <0xNN> into their bytes, Fuse joins,
 * Strip and Metaspace remove the space SentencePiece put first), and the
 * result is their concatenation. Invalid UTF-8 in the result is kept as
 * bytes. */
#include "formats/tokenizer-impl.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

/* The list being decoded: pieces of buf; span.first marks an added
 * token's content. */
struct pieces {
    struct tok_buf buf;
    struct tok_spans v;
};

static bool add_piece(struct pieces *p, const char *s, size_t n, bool added)
{
    size_t at = p->buf.n;
    return tok_buf_add(&p->buf, s, n) && tok_spans_add(&p->v, at, n, added);
}

static bool byte_level(const char *s, size_t n, const int16_t *table,
                       struct pieces *out)
{
    struct tok_buf b = {0};
    bool mapped = true;
    for (size_t i = 0; mapped && i < n;) {
        uint32_t cp;
        size_t k = tok_utf8_char((const unsigned char *)s + i, n - i, &cp);
        mapped = k && cp < 0x200 && table[cp] >= 0;
        char c = mapped ? (char)table[cp] : 0;
        mapped = mapped && tok_buf_add(&b, &c, 1);
        i += k;
    }
    /* a token with a character outside the alphabet is kept as it is */
    bool ok = mapped ? add_piece(out, b.p ? b.p : "", b.n, false)
                     : add_piece(out, s, n, false);
    free(b.p);
    return ok;
}

/* The byte of a "<0xNN>" token, or -1. */
static int fallback_byte(const char *s, size_t n)
{
    if (n != 6 || memcmp(s, "<0x", 3) || s[5] != '>' ||
        !isxdigit((unsigned char)s[3]) || !isxdigit((unsigned char)s[4]))
        return -1;
    char hex[3] = {s[3], s[4], 0};
    return (int)strtol(hex, NULL, 16);
}

/* One decoder over every piece of in into out. */
static bool dec_step(const struct tok_dec *d, struct tok_matcher *m,
                     const int16_t *table, const struct pieces *in,
                     struct pieces *out)
{
    out->buf.n = 0;
    out->v.n = 0;
    bool ok = tok_buf_add(&out->buf, NULL, 0);
    bool in_bytes = false; /* ByteFallback: the last piece is a byte run */
    for (size_t i = 0; ok && i < in->v.n; i++) {
        const char *s = in->buf.p + in->v.v[i].off;
        size_t n = in->v.v[i].len;
        bool added = in->v.v[i].first;
        switch (d->kind) {
        case TOK_DEC_BYTELEVEL:
            ok = added ? add_piece(out, s, n, true)
                       : byte_level(s, n, table, out);
            break;
        case TOK_DEC_REPLACE:
        case TOK_DEC_METASPACE: {
            size_t at = out->buf.n;
            ok = d->kind == TOK_DEC_REPLACE
                     ? tok_pattern_replace(&d->pat, m, s, n, d->content,
                                           d->content_len, &out->buf)
                     : tok_pattern_replace(&(struct tok_pattern){(char *)d->ch,
                                                                 d->ch_len, NULL},
                                           m, s, n, " ", 1, &out->buf);
            size_t skip = d->kind == TOK_DEC_METASPACE && d->strip_first &&
                          i == 0 && out->buf.n > at && out->buf.p[at] == ' ';
            ok = ok && tok_spans_add(&out->v, at + skip, out->buf.n - at - skip,
                                     added);
            break;
        }
        case TOK_DEC_BYTEFALLBACK: {
            int b = fallback_byte(s, n);
            char c = (char)b;
            if (b >= 0 && in_bytes) {
                ok = tok_buf_add(&out->buf, &c, 1);
                out->v.v[out->v.n - 1].len++;
            } else {
                ok = b >= 0 ? add_piece(out, &c, 1, false)
                            : add_piece(out, s, n, added);
            }
            in_bytes = b >= 0;
            break;
        }
        case TOK_DEC_FUSE:
            ok = tok_buf_add(&out->buf, s, n) &&
                 (out->v.n ? (out->v.v[0].len += n, true)
                           : tok_spans_add(&out->v, 0, n, false));
            break;
        case TOK_DEC_STRIP: {
            size_t a = 0, z = n;
            for (size_t k = 0; k < d->start && z - a >= d->ch_len &&
                               !memcmp(s + a, d->ch, d->ch_len); k++)
                a += d->ch_len;
            for (size_t k = 0; k < d->stop && z - a >= d->ch_len &&
                               !memcmp(s + z - d->ch_len, d->ch, d->ch_len); k++)
                z -= d->ch_len;
            ok = add_piece(out, s + a, z - a, added);
            break;
        }
        case TOK_DEC_COUNT:
            ok = false;
            break;
        }
    }
    return ok;
}

/* transformers' clean_up_tokenization, applied in this order. */
static bool clean_up(struct tok_buf *b, struct tok_matcher *m)
{
    static const char *const from[] = {" .", " ?", " !", " ,", " ' ", " n't",
                                       " 'm", " 's", " 've", " 're"};
    static const char *const to[] = {".", "?", "!", ",", "'", "n't", "'m", "'s",
                                     "'ve", "'re"};
    for (size_t i = 0; i < sizeof from / sizeof from[0]; i++) {
        struct tok_pattern lit = {(char *)from[i], strlen(from[i]), NULL};
        struct tok_buf o = {0};
        if (!tok_pattern_replace(&lit, m, b->p, b->n, to[i], strlen(to[i]), &o)) {
            free(o.p);
            return false;
        }
        free(b->p);
        *b = o;
    }
    return true;
}

static enum qp_status check_ids(const struct qp_tokenizer *t,
                                const int32_t *ids, size_t n,
                                struct qp_error *err)
{
    for (size_t i = 0; i < n; i++)
        if (ids[i] < 0 || (size_t)ids[i] >= t->n_tokens ||
            t->tokens[ids[i]].type == QP_TOK_UNDEFINED)
            return qp_fail(err, QP_E_INVAL,
                           "token id %ld (at position %zu) is not in the "
                           "vocabulary (%zu ids)", (long)ids[i], i, t->n_tokens);
    return QP_OK;
}

enum qp_status qp_tokenizer_decode(const struct qp_tokenizer *tok,
                                   const int32_t *ids, size_t n, unsigned flags,
                                   char **text, size_t *len,
                                   struct qp_error *err)
{
    *text = NULL;
    *len = 0;
    enum qp_status st = check_ids(tok, ids, n, err);
    if (st)
        return st;
    int16_t table[0x200];
    for (uint32_t c = 0; c < 0x200; c++)
        table[c] = -1;
    for (unsigned b = 0; b < 256; b++)
        table[tok->byte_cps[b]] = (int16_t)b;
    struct pieces a = {0}, b = {0};
    struct tok_matcher m = {0};
    bool ok = tok_matcher_init(&m) && tok_buf_add(&a.buf, NULL, 0);
    for (size_t i = 0; ok && i < n; i++) {
        const struct tok_entry *e = &tok->tokens[ids[i]];
        if ((flags & QP_TOK_DECODE_SKIP_SPECIAL) && e->special)
            continue;
        /* without a decoder, HF joins the tokens with spaces */
        if (!tok->has_decoder && a.v.n)
            ok = tok_buf_add(&a.buf, " ", 1) && (a.v.v[a.v.n - 1].len++, true);
        ok = ok && add_piece(&a, tok->pool + e->off, e->len, e->added);
    }
    for (size_t i = 0; ok && i < tok->n_decs; i++) {
        ok = dec_step(&tok->decs[i], &m, table, &a, &b);
        struct pieces x = a;
        a = b;
        b = x;
    }
    /* the pieces are in order in a.buf, but steps may have dropped bytes
     * between them (Strip, Metaspace): concatenate */
    struct tok_buf out = {0};
    ok = ok && tok_buf_add(&out, NULL, 0);
    for (size_t i = 0; ok && i < a.v.n; i++)
        ok = tok_buf_add(&out, a.buf.p + a.v.v[i].off, a.v.v[i].len);
    if (ok && (flags & QP_TOK_DECODE_CLEAN_UP))
        ok = clean_up(&out, &m);
    tok_matcher_release(&m);
    free(a.buf.p);
    free(a.v.v);
    free(b.buf.p);
    free(b.v.v);
    if (!ok) {
        free(out.p);
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    }
    *text = out.p;
    *len = out.n;
    return QP_OK;
}
