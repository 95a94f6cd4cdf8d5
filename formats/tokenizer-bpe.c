/* formats/tokenizer-bpe.c: the token table, the hash maps (token string
 * -> id, merge pair -> rank), the BPE merge loop and the encode pipeline.
 *
 * The merge loop is HF's: the word starts as one symbol per character (per
 * byte for byte-level models); the adjacent pair with the lowest merge
 * rank, the leftmost among equal ranks, is merged, until no pair has a
 * merge. A binary heap keyed by (rank, position) makes it O(n log n) in
 * the word's length; stale heap entries are recognised by checking that
 * the pair at their position is still the one their rank merges. */
#include "formats/tokenizer-impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/size.h"

/* ---- the token table ---------------------------------------------------- */

enum qp_status tok_set_token(struct qp_tokenizer *t, int32_t id, const char *s,
                             size_t n, bool in_vocab, struct qp_error *err)
{
    if (id < 0 || id >= TOK_MAX_ID)
        return qp_fail(err, QP_E_FORMAT, "token id %ld is out of range",
                       (long)id);
    if ((size_t)id >= t->n_tokens) {
        if ((size_t)id >= t->tokens_cap) { /* geometric: ids come in order */
            size_t cap = t->tokens_cap ? 2 * t->tokens_cap : 1024;
            if (cap <= (size_t)id)
                cap = (size_t)id + 1;
            struct tok_entry *v = realloc(t->tokens, cap * sizeof *v);
            if (!v)
                return qp_fail(err, QP_E_NOMEM, "out of memory");
            t->tokens = v;
            t->tokens_cap = cap;
        }
        memset(t->tokens + t->n_tokens, 0,
               ((size_t)id + 1 - t->n_tokens) * sizeof *t->tokens);
        t->n_tokens = (size_t)id + 1;
    }
    size_t need;
    if (qp_size_add(t->pool_len, n + 1, &need) || need > UINT32_MAX)
        return qp_fail(err, QP_E_FORMAT, "the token strings exceed 4 GiB");
    if (need > t->pool_cap) {
        size_t cap = t->pool_cap ? t->pool_cap : 1 << 16;
        while (cap < need)
            cap *= 2;
        char *p = realloc(t->pool, cap);
        if (!p)
            return qp_fail(err, QP_E_NOMEM, "out of memory");
        t->pool = p;
        t->pool_cap = cap;
    }
    memcpy(t->pool + t->pool_len, s, n);
    t->pool[t->pool_len + n] = '\0';
    struct tok_entry *e = &t->tokens[id];
    e->off = (uint32_t)t->pool_len;
    e->len = (uint32_t)n;
    e->type = QP_TOK_NORMAL;
    e->in_vocab = e->in_vocab || in_vocab;
    t->pool_len = need;
    return QP_OK;
}

const char *tok_str(const struct qp_tokenizer *t, int32_t id)
{
    return t->pool + t->tokens[id].off;
}

/* ---- hash maps ---------------------------------------------------------- */

static uint64_t hash_bytes(const char *s, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 0x100000001b3ull;
    return h ^ (h >> 29);
}

static uint64_t hash_pair(int32_t a, int32_t b)
{
    uint64_t x = (uint64_t)(uint32_t)a << 32 | (uint32_t)b;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    return x ^ (x >> 33);
}

/* A slot array of cap (a power of two, at least twice count) -1s. */
static int32_t *new_slots(size_t count, size_t *cap)
{
    size_t c = 64;
    while (c < 2 * count)
        c *= 2;
    int32_t *s = malloc(c * sizeof *s);
    if (s)
        memset(s, 0xff, c * sizeof *s);
    *cap = c;
    return s;
}

enum qp_status tok_vocab_index(struct qp_tokenizer *t, const char *what,
                               struct qp_error *err)
{
    size_t count = 0;
    for (size_t i = 0; i < t->n_tokens; i++)
        count += t->tokens[i].in_vocab;
    free(t->vocab_slots);
    if (!(t->vocab_slots = new_slots(count, &t->vocab_cap)))
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    for (size_t id = 0; id < t->n_tokens; id++) {
        const struct tok_entry *e = &t->tokens[id];
        if (!e->in_vocab)
            continue;
        const char *s = t->pool + e->off;
        size_t i = hash_bytes(s, e->len) & (t->vocab_cap - 1);
        for (int32_t o; (o = t->vocab_slots[i]) >= 0;
             i = (i + 1) & (t->vocab_cap - 1)) {
            const struct tok_entry *f = &t->tokens[o];
            if (f->len == e->len && !memcmp(t->pool + f->off, s, e->len))
                return qp_fail(err, QP_E_FORMAT,
                               "%s: token '%s' has two ids, %ld and %zu", what,
                               s, (long)o, id);
        }
        t->vocab_slots[i] = (int32_t)id;
    }
    return QP_OK;
}

int32_t tok_vocab_get(const struct qp_tokenizer *t, const char *s, size_t n)
{
    size_t i = hash_bytes(s, n) & (t->vocab_cap - 1);
    for (int32_t o; (o = t->vocab_slots[i]) >= 0;
         i = (i + 1) & (t->vocab_cap - 1)) {
        const struct tok_entry *f = &t->tokens[o];
        if (f->len == n && !memcmp(t->pool + f->off, s, n))
            return o;
    }
    return -1;
}

enum qp_status tok_merge_index(struct qp_tokenizer *t, struct qp_error *err)
{
    free(t->merge_slots);
    if (!(t->merge_slots = new_slots(t->n_merges, &t->merge_cap)))
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    for (size_t r = 0; r < t->n_merges; r++) {
        const struct tok_merge *m = &t->merges[r];
        size_t i = hash_pair(m->left, m->right) & (t->merge_cap - 1);
        for (int32_t o; (o = t->merge_slots[i]) >= 0;
             i = (i + 1) & (t->merge_cap - 1))
            if (t->merges[o].left == m->left && t->merges[o].right == m->right)
                break; /* a repeated pair: the later rank wins, as in HF */
        t->merge_slots[i] = (int32_t)r;
    }
    return QP_OK;
}

/* The rank of merging a with b, or -1. */
static int32_t merge_rank(const struct qp_tokenizer *t, int32_t a, int32_t b)
{
    if (!t->n_merges)
        return -1;
    size_t i = hash_pair(a, b) & (t->merge_cap - 1);
    for (int32_t o; (o = t->merge_slots[i]) >= 0;
         i = (i + 1) & (t->merge_cap - 1))
        if (t->merges[o].left == a && t->merges[o].right == b)
            return o;
    return -1;
}

/* ---- the merge loop ----------------------------------------------------- */

struct sym {
    int32_t id, prev, next; /* id -1: merged away */
};

struct heap_item {
    int32_t rank, pos;
};

/* Scratch kept across the words of one encode call. */
struct scratch {
    struct tok_ids syms;
    struct tok_ids cps; /* SentencePiece-style: each symbol's character,
                           -1 for byte-fallback and unk symbols */
    struct sym *s;
    struct heap_item *h;
    size_t cap;
    char *mapped; /* byte-level spelling of a word (ignore_merges) */
    size_t mapped_cap;
};

static bool before(struct heap_item a, struct heap_item b)
{
    return a.rank < b.rank || (a.rank == b.rank && a.pos < b.pos);
}

static void heap_push(struct heap_item *h, size_t *n, struct heap_item x)
{
    size_t i = (*n)++;
    while (i > 0 && before(x, h[(i - 1) / 2])) {
        h[i] = h[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h[i] = x;
}

static struct heap_item heap_pop(struct heap_item *h, size_t *n)
{
    struct heap_item top = h[0], x = h[--*n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= *n)
            break;
        if (c + 1 < *n && before(h[c + 1], h[c]))
            c++;
        if (!before(h[c], x))
            break;
        h[i] = h[c];
        i = c;
    }
    if (*n)
        h[i] = x;
    return top;
}

static void push_pair(const struct qp_tokenizer *t, struct scratch *sc,
                      size_t *nh, int32_t pos)
{
    if (pos < 0 || sc->s[pos].next < 0)
        return;
    int32_t nx = sc->s[pos].next, r = merge_rank(t, sc->s[pos].id, sc->s[nx].id);
    if (r >= 0)
        heap_push(sc->h, nh, (struct heap_item){r, pos});
}

/* Merges the symbols sc->syms.v[from..from + n) and appends the resulting
 * ids to out. */
static bool merge_word(const struct qp_tokenizer *t, struct scratch *sc,
                       size_t from, size_t n, struct tok_ids *out)
{
    if (n > sc->cap) {
        size_t cap = sc->cap < 32 ? 64 : 2 * sc->cap;
        if (cap < n)
            cap = n;
        struct sym *s = realloc(sc->s, cap * sizeof *s);
        if (s)
            sc->s = s;
        /* each merge pushes at most two pairs: 3n entries at most */
        struct heap_item *h = s ? realloc(sc->h, 3 * cap * sizeof *h) : NULL;
        if (!h)
            return false;
        sc->h = h;
        sc->cap = cap;
    }
    for (size_t i = 0; i < n; i++)
        sc->s[i] = (struct sym){sc->syms.v[from + i], (int32_t)i - 1,
                                i + 1 < n ? (int32_t)i + 1 : -1};
    size_t nh = 0;
    for (size_t i = 0; i + 1 < n; i++)
        push_pair(t, sc, &nh, (int32_t)i);
    while (nh) {
        struct heap_item it = heap_pop(sc->h, &nh);
        struct sym *a = &sc->s[it.pos];
        const struct tok_merge *m = &t->merges[it.rank];
        if (a->id != m->left || a->next < 0 || sc->s[a->next].id != m->right)
            continue; /* stale */
        struct sym *b = &sc->s[a->next];
        a->id = m->result;
        a->next = b->next;
        if (b->next >= 0)
            sc->s[b->next].prev = it.pos;
        b->id = -1;
        push_pair(t, sc, &nh, a->prev);
        push_pair(t, sc, &nh, it.pos);
    }
    for (int32_t i = n ? 0 : -1; i >= 0; i = sc->s[i].next)
        if (!tok_ids_add(out, sc->s[i].id))
            return false;
    return true;
}

/* Whether characters a and b stand next to each other in some token of
 * the vocabulary (tok->pair_slots). */
static bool pair_in_vocab(const struct qp_tokenizer *t, int32_t a, int32_t b)
{
    uint64_t key = (uint64_t)(uint32_t)a << 32 | (uint32_t)b;
    size_t i = hash_pair(a, b) & (t->pair_cap - 1);
    for (; t->pair_slots[i] != UINT64_MAX; i = (i + 1) & (t->pair_cap - 1))
        if (t->pair_slots[i] == key)
            return true;
    return false;
}

/* A SentencePiece-style word may be the whole text (there is no
 * pre-tokenizer). A merge can only join two characters that stand next to
 * each other in some token, so the word is cut where they do not (never
 * next to byte-fallback or unk symbols) and the parts merged on their own:
 * the result is the same, the heaps stay small. */
static bool merge_cut(const struct qp_tokenizer *t, struct scratch *sc,
                      struct tok_ids *out)
{
    size_t n = sc->syms.n, from = 0;
    if (!t->pair_slots || n < 64)
        return merge_word(t, sc, 0, n, out);
    const int32_t *cp = sc->cps.v;
    for (size_t i = 1; i < n; i++)
        if (cp[i - 1] >= 0 && cp[i] >= 0 && !pair_in_vocab(t, cp[i - 1], cp[i])) {
            if (!merge_word(t, sc, from, i - from, out))
                return false;
            from = i;
        }
    return merge_word(t, sc, from, n - from, out);
}

enum qp_status tok_pair_index(struct qp_tokenizer *t, struct qp_error *err)
{
    /* byte-fallback or unk symbols that merge: no cutting */
    for (size_t r = 0; r < t->n_merges; r++) {
        int32_t ab[2] = {t->merges[r].left, t->merges[r].right};
        for (int k = 0; k < 2; k++)
            if (ab[k] == t->unk_id || t->tokens[ab[k]].type == QP_TOK_BYTE)
                return QP_OK;
    }
    size_t count = 0;
    for (size_t id = 0; id < t->n_tokens; id++)
        count += t->tokens[id].in_vocab ? t->tokens[id].len : 0;
    size_t cap = 64;
    while (cap < 2 * count)
        cap *= 2;
    uint64_t *slots = malloc(cap * sizeof *slots);
    if (!slots)
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    memset(slots, 0xff, cap * sizeof *slots);
    for (size_t id = 0; id < t->n_tokens; id++) {
        const struct tok_entry *e = &t->tokens[id];
        const unsigned char *s = (const unsigned char *)t->pool + e->off;
        int32_t prev = -1;
        for (size_t i = 0; e->in_vocab && i < e->len;) {
            uint32_t c;
            size_t k = tok_utf8_char(s + i, e->len - i, &c);
            int32_t cur = k ? (int32_t)c : 0x110000 + s[i];
            i += k ? k : 1;
            if (prev >= 0) {
                uint64_t key = (uint64_t)(uint32_t)prev << 32 | (uint32_t)cur;
                size_t j = hash_pair(prev, cur) & (cap - 1);
                while (slots[j] != UINT64_MAX && slots[j] != key)
                    j = (j + 1) & (cap - 1);
                slots[j] = key;
            }
            prev = cur;
        }
    }
    t->pair_slots = slots;
    t->pair_cap = cap;
    return QP_OK;
}

/* ---- the model ---------------------------------------------------------- */

static size_t put_utf8(uint32_t cp, char *o)
{
    if (cp < 0x80) {
        o[0] = (char)cp;
        return 1;
    }
    o[0] = (char)(0xc0 | cp >> 6); /* byte-level characters are < U+0800 */
    o[1] = (char)(0x80 | (cp & 0x3f));
    return 2;
}

/* The symbols of a SentencePiece-style (or plain) BPE word: one per
 * character, byte fallback or unk for characters without a token. */
static enum qp_status char_symbols(const struct qp_tokenizer *t, const char *p,
                                   size_t n, struct scratch *sc,
                                   struct qp_error *err)
{
    bool last_unk = false;
    for (size_t i = 0; i < n;) {
        uint32_t cp = 0;
        size_t k = tok_utf8_char((const unsigned char *)p + i, n - i, &cp);
        bool valid = k > 0;
        k = valid ? k : 1;
        int32_t id = tok_vocab_get(t, p + i, k);
        bool ok = true, fell = id < 0 && t->byte_fallback;
        for (size_t j = 0; fell && j < k; j++)
            fell = t->fallback_ids[(unsigned char)p[i + j]] >= 0;
        if (id >= 0) {
            ok = tok_ids_add(&sc->syms, id) &&
                 tok_ids_add(&sc->cps, valid ? (int32_t)cp
                                             : 0x110000 + (unsigned char)p[i]);
        } else if (fell) {
            for (size_t j = 0; ok && j < k; j++)
                ok = tok_ids_add(&sc->syms,
                                 t->fallback_ids[(unsigned char)p[i + j]]) &&
                     tok_ids_add(&sc->cps, -1);
        } else if (t->unk_id >= 0) {
            if (!(t->fuse_unk && last_unk))
                ok = tok_ids_add(&sc->syms, t->unk_id) &&
                     tok_ids_add(&sc->cps, -1);
        } else if (valid) {
            return qp_fail(err, QP_E_FORMAT,
                           "character U+%04lX has no token and the tokenizer "
                           "has neither byte fallback nor an unk_token",
                           (unsigned long)cp);
        } else {
            return qp_fail(err, QP_E_FORMAT,
                           "byte 0x%02X (not valid UTF-8) has no token and the "
                           "tokenizer has neither byte fallback nor an "
                           "unk_token", (unsigned)(unsigned char)p[i]);
        }
        if (!ok)
            return qp_fail(err, QP_E_NOMEM, "out of memory");
        last_unk = id < 0 && !fell;
        i += k;
    }
    return QP_OK;
}

/* Encodes one pre-tokenized word p[0..n) onto out. */
static enum qp_status model_word(const struct qp_tokenizer *t, const char *p,
                                 size_t n, struct scratch *sc,
                                 struct tok_ids *out, struct qp_error *err)
{
    sc->syms.n = 0;
    if (n > INT32_MAX / 4) /* symbol positions are int32_t */
        return qp_fail(err, QP_E_UNSUPPORTED, "a word of %zu bytes is too "
                       "long to encode", n);
    if (t->ignore_merges) {
        const char *w = p;
        size_t wn = n;
        if (t->byte_level) {
            if (n > sc->mapped_cap / 2) {
                size_t cap = 2 * n > 2 * sc->mapped_cap ? 2 * n
                                                        : 2 * sc->mapped_cap;
                char *m = realloc(sc->mapped, cap);
                if (!m)
                    return qp_fail(err, QP_E_NOMEM, "out of memory");
                sc->mapped = m;
                sc->mapped_cap = cap;
            }
            wn = 0;
            for (size_t i = 0; i < n; i++)
                wn += put_utf8(t->byte_cps[(unsigned char)p[i]],
                               sc->mapped + wn);
            w = sc->mapped;
        }
        int32_t id = tok_vocab_get(t, w, wn);
        if (id >= 0)
            return tok_ids_add(out, id) ? QP_OK
                                        : qp_fail(err, QP_E_NOMEM, "out of memory");
    }
    if (t->byte_level) {
        for (size_t i = 0; i < n; i++) {
            int32_t id = t->byte_ids[(unsigned char)p[i]];
            if (id < 0)
                return qp_fail(err, QP_E_FORMAT, "byte 0x%02X has no token in "
                               "the byte-level vocabulary",
                               (unsigned)(unsigned char)p[i]);
            if (!tok_ids_add(&sc->syms, id))
                return qp_fail(err, QP_E_NOMEM, "out of memory");
        }
    } else {
        sc->cps.n = 0;
        enum qp_status st = char_symbols(t, p, n, sc, err);
        if (st)
            return st;
        return merge_cut(t, sc, out) ? QP_OK
                                     : qp_fail(err, QP_E_NOMEM, "out of memory");
    }
    return merge_word(t, sc, 0, sc->syms.n, out)
               ? QP_OK
               : qp_fail(err, QP_E_NOMEM, "out of memory");
}

/* ---- encode ------------------------------------------------------------- */

struct encoder {
    struct tok_matcher m;
    struct tok_spans sections, words;
    struct tok_buf buf;
    struct scratch sc;
};

static enum qp_status encode_text(const struct qp_tokenizer *t,
                                  struct encoder *e, const char *s, size_t n,
                                  bool at_start, struct tok_ids *out,
                                  struct qp_error *err)
{
    if (!tok_normalize(t, &e->m, s, n, &e->buf) ||
        !tok_pretokenize(t, &e->m, &e->buf,
                         (struct tok_span){0, e->buf.n, at_start}, &e->words))
        return qp_fail(err, QP_E_NOMEM, "out of memory (or a regular "
                       "expression failed to match)");
    for (size_t i = 0; i < e->words.n; i++) {
        enum qp_status st = model_word(t, e->buf.p + e->words.v[i].off,
                                       e->words.v[i].len, &e->sc, out, err);
        if (st)
            return st;
    }
    return QP_OK;
}

static bool add_ids(struct tok_ids *out, const struct tok_ids *in)
{
    for (size_t i = 0; i < in->n; i++)
        if (!tok_ids_add(out, in->v[i]))
            return false;
    return true;
}

enum qp_status qp_tokenizer_encode(const struct qp_tokenizer *tok,
                                   const char *text, size_t len,
                                   bool add_special, int32_t **ids, size_t *n,
                                   struct qp_error *err)
{
    *ids = NULL;
    *n = 0;
    struct encoder e = {0};
    struct tok_ids out = {0};
    enum qp_status st = QP_OK;
    if (!tok_matcher_init(&e.m) || !tok_split_added(tok, text, len, &e.sections) ||
        (add_special && !add_ids(&out, &tok->prefix)))
        st = qp_fail(err, QP_E_NOMEM, "out of memory");
    for (size_t i = 0; !st && i < e.sections.n; i++) {
        const struct tok_span *sp = &e.sections.v[i];
        if (sp->first)
            st = tok_ids_add(&out, tok->added[sp->off].id)
                     ? QP_OK
                     : qp_fail(err, QP_E_NOMEM, "out of memory");
        else
            st = encode_text(tok, &e, text + sp->off, sp->len, sp->off == 0,
                             &out, err);
    }
    if (!st && add_special && !add_ids(&out, &tok->suffix))
        st = qp_fail(err, QP_E_NOMEM, "out of memory");
    tok_matcher_release(&e.m);
    free(e.sections.v);
    free(e.words.v);
    free(e.buf.p);
    free(e.sc.syms.v);
    free(e.sc.cps.v);
    free(e.sc.s);
    free(e.sc.h);
    free(e.sc.mapped);
    if (st) {
        free(out.v);
        return st;
    }
    *ids = out.v;
    *n = out.n;
    return QP_OK;
}
