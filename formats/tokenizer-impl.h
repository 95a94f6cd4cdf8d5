/* formats/tokenizer-impl.h: the insides of struct qp_tokenizer, shared by
 * formats/tokenizer*.c only (the public API is formats/tokenizer.h).
 *
 *   tokenizer.c         files, tokenizer_config.json, accessors, free
 *   tokenizer-json.c    tokenizer.json into this struct
 *   tokenizer-text.c    UTF-8, PCRE2 and utf8proc (the only callers), the
 *                       growable buffers, normalizers
 *   tokenizer-pretok.c  added-token splitting and the pre-tokenizers
 *   tokenizer-bpe.c     hash maps and the BPE merge loop; encode
 *   tokenizer-decode.c  decoders */
#ifndef QP_FORMATS_TOKENIZER_IMPL_H
#define QP_FORMATS_TOKENIZER_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/status.h"
#include "formats/json.h"
#include "formats/tokenizer.h"

/* Ids are below this (and the table of tokens is dense enough, see
 * tokenizer-json.c), so they fit int32_t with room to spare. */
#define TOK_MAX_ID (1 << 24)

/* ---- growable arrays ---------------------------------------------------- */

struct tok_buf { /* bytes */
    char *p;
    size_t n, cap;
};

struct tok_ids {
    int32_t *v;
    size_t n, cap;
};

/* A piece of a buffer: pre-tokenizer splits, decoder pieces. */
struct tok_span {
    size_t off, len;
    bool first; /* splits: starts at the first byte of the input text;
                   decoder pieces: an added token's content */
};

struct tok_spans {
    struct tok_span *v;
    size_t n, cap;
};

/* Each returns false on no memory (the array is unchanged then). */
bool tok_buf_add(struct tok_buf *b, const void *p, size_t n);
bool tok_ids_add(struct tok_ids *a, int32_t id);
bool tok_spans_add(struct tok_spans *a, size_t off, size_t len, bool first);

/* ---- UTF-8 and patterns (tokenizer-text.c) ------------------------------ */

/* Length (1-4) of the valid UTF-8 character at s[0..n), n >= 1, or 0 when
 * s[0] does not start one (RFC 3629: no overlongs, surrogates or code
 * points past U+10FFFF). *cp (may be NULL) gets the code point. */
size_t tok_utf8_char(const unsigned char *s, size_t n, uint32_t *cp);

/* Unicode White_Space (through utf8proc's categories: Zs, Zl, Zp, and the
 * controls \t \n \v \f \r U+0085). */
bool tok_is_space(uint32_t cp);
/* A letter, number or '_' (utf8proc's categories L*, N*). */
bool tok_is_word(uint32_t cp);

/* A literal or a PCRE2 regex (compiled with UTF, UCP and JIT). */
struct tok_pattern {
    char *lit; /* literal (owned) when re is NULL */
    size_t lit_len;
    void *re;  /* pcre2_code_8 * */
};

/* Compiles regex src[0..n); on a syntax error fills msg with PCRE2's
 * message and the offset and returns false (also on no memory). */
bool tok_pattern_regex(struct tok_pattern *p, const char *src, size_t n,
                       char *msg, size_t msg_size);
void tok_pattern_release(struct tok_pattern *p);

/* A match state for one encode or decode call (PCRE2 match data). */
struct tok_matcher {
    void *md; /* pcre2_match_data_8 * */
};
bool tok_matcher_init(struct tok_matcher *m);
void tok_matcher_release(struct tok_matcher *m);

/* Replaces *out's content with the pieces of s[0..n) as the pattern finds
 * them: each match a span with first = true, each gap between matches
 * (including every run of invalid UTF-8, which no match crosses) a span
 * with first = false; empty matches are left out. Spans are relative to
 * s and cover it. false on no memory or a PCRE2 matching error. */
bool tok_pattern_find(const struct tok_pattern *p, struct tok_matcher *m,
                      const char *s, size_t n, struct tok_spans *out);

/* Appends s[0..n) with every occurrence of p replaced by with[0..wn). */
bool tok_pattern_replace(const struct tok_pattern *p, struct tok_matcher *m,
                         const char *s, size_t n, const char *with, size_t wn,
                         struct tok_buf *out);

/* ---- components --------------------------------------------------------- */

enum tok_norm_kind {
    TOK_NORM_PREPEND,
    TOK_NORM_REPLACE,
    TOK_NORM_NFC,
    TOK_NORM_NFD,
    TOK_NORM_NFKC,
    TOK_NORM_NFKD,
    TOK_NORM_STRIP,
    TOK_NORM_COUNT
};

struct tok_norm {
    enum tok_norm_kind kind;
    struct tok_pattern pat; /* REPLACE */
    char *content;          /* PREPEND, REPLACE (owned) */
    size_t content_len;
    bool left, right;       /* STRIP */
};

enum tok_behavior {
    TOK_SPLIT_REMOVED,
    TOK_SPLIT_ISOLATED,
    TOK_SPLIT_MERGED_PREV,
    TOK_SPLIT_MERGED_NEXT,
    TOK_SPLIT_CONTIGUOUS,
    TOK_SPLIT_COUNT
};

enum tok_prepend { TOK_PREPEND_ALWAYS, TOK_PREPEND_FIRST, TOK_PREPEND_NEVER };

enum tok_pre_kind {
    TOK_PRE_SPLIT,
    TOK_PRE_DIGITS,
    TOK_PRE_METASPACE,
    TOK_PRE_BYTELEVEL, /* always last: the model then maps bytes */
    TOK_PRE_COUNT
};

struct tok_pre {
    enum tok_pre_kind kind;
    struct tok_pattern pat;    /* SPLIT; BYTELEVEL with use_regex */
    enum tok_behavior behavior; /* SPLIT */
    bool invert;               /* SPLIT */
    bool individual;           /* DIGITS */
    char repl[8];              /* METASPACE: the replacement character */
    size_t repl_len;
    enum tok_prepend prepend;  /* METASPACE */
    bool split;                /* METASPACE */
    bool prefix_space;         /* BYTELEVEL add_prefix_space */
    bool use_regex;            /* BYTELEVEL */
    char *raw;                 /* SPLIT: the regex source (owned), or NULL */
};

enum tok_dec_kind {
    TOK_DEC_BYTELEVEL,
    TOK_DEC_METASPACE,
    TOK_DEC_REPLACE,
    TOK_DEC_BYTEFALLBACK,
    TOK_DEC_FUSE,
    TOK_DEC_STRIP,
    TOK_DEC_COUNT
};

struct tok_dec {
    enum tok_dec_kind kind;
    struct tok_pattern pat; /* REPLACE */
    char *content;          /* REPLACE (owned) */
    size_t content_len;
    char ch[8];             /* METASPACE replacement, STRIP content */
    size_t ch_len;
    bool strip_first;       /* METASPACE: drop the first token's leading space */
    size_t start, stop;     /* STRIP */
};

struct tok_entry {
    uint32_t off, len; /* the string in tok->pool */
    uint8_t type;      /* enum qp_tok_type */
    bool in_vocab;     /* a model vocabulary entry (not only an added token) */
    bool added;        /* an added token (kept whole by the ByteLevel decoder) */
    bool special;      /* an added token marked special */
};

struct tok_added { /* its content is the string of token id */
    int32_t id;
    bool lstrip, rstrip, single_word, special;
};

/* Byte trie over the added tokens' contents: leftmost-longest matching. */
struct tok_trie_node {
    int32_t child, sibling; /* -1 for none */
    int32_t added;          /* index into tok->added ending here, or -1 */
    unsigned char byte;
};

struct tok_merge {
    int32_t left, right, result;
};

struct qp_tokenizer {
    char *pool; /* NUL-separated token strings */
    size_t pool_len, pool_cap;
    struct tok_entry *tokens; /* [n_tokens]; len 0 and type UNDEFINED = hole */
    size_t n_tokens, tokens_cap;
    int32_t *made_by;         /* [n_tokens]: the first merge rank making the
                                 token, or -1 */

    int32_t *vocab_slots; /* open addressing over model-vocabulary ids */
    size_t vocab_cap;

    struct tok_merge *merges; /* by rank */
    size_t n_merges;
    int32_t *merge_slots;     /* open addressing over ranks, keyed by pair */
    size_t merge_cap;
    uint64_t *pair_slots;     /* SentencePiece-style: the character pairs
                                 inside tokens (tokenizer-bpe.c), or NULL */
    size_t pair_cap;

    struct tok_added *added;
    size_t n_added;
    struct tok_trie_node *trie; /* node 0 is the root */
    size_t n_trie, trie_cap;

    struct tok_norm *norms;
    size_t n_norms;
    struct tok_pre *pres;
    size_t n_pres;
    struct tok_dec *decs;
    size_t n_decs;
    bool has_decoder;

    /* model */
    bool byte_level;       /* a ByteLevel pre-tokenizer: BPE over bytes */
    bool byte_fallback, fuse_unk, ignore_merges;
    int32_t unk_id;
    int32_t byte_ids[256];     /* byte-level: token of each byte's character */
    uint16_t byte_cps[256];    /* the character of each byte (tok_byte_char) */
    int32_t fallback_ids[256]; /* <0xNN> tokens, -1 when absent */

    /* post-processor (single sequence) and specials */
    struct tok_ids prefix, suffix;
    int32_t bos_id, eos_id, pad_id;
    bool clean_up;
    const char *pre_name;
};

/* Parses the sections of tokenizer.json into t (tokenizer-json.c);
 * messages name the section, not the file. */
enum qp_status tok_parse_sections(struct qp_tokenizer *t,
                                  const struct qp_json *root,
                                  struct qp_error *err);

/* Tokens and maps (tokenizer-bpe.c). */
/* Adds s[0..n) as the string of token id (growing the table to id + 1). */
enum qp_status tok_set_token(struct qp_tokenizer *t, int32_t id, const char *s,
                             size_t n, bool in_vocab, struct qp_error *err);
const char *tok_str(const struct qp_tokenizer *t, int32_t id);
/* Builds the vocabulary map over tokens with in_vocab set. */
enum qp_status tok_vocab_index(struct qp_tokenizer *t, const char *what,
                               struct qp_error *err);
/* The model-vocabulary id of s[0..n), or -1. */
int32_t tok_vocab_get(const struct qp_tokenizer *t, const char *s, size_t n);
/* Builds the merge map over t->merges (a later duplicate pair wins). */
enum qp_status tok_merge_index(struct qp_tokenizer *t, struct qp_error *err);
/* Builds the set of character pairs adjacent inside vocabulary tokens,
 * which lets long SentencePiece-style words be cut where no merge can
 * reach across (after the token types are known). */
enum qp_status tok_pair_index(struct qp_tokenizer *t, struct qp_error *err);

/* Normalizes s[0..n) into out (tokenizer-text.c). */
bool tok_normalize(const struct qp_tokenizer *t, struct tok_matcher *m,
                   const char *s, size_t n, struct tok_buf *out);

/* Added tokens (tokenizer-pretok.c): builds the trie. */
enum qp_status tok_added_index(struct qp_tokenizer *t, struct qp_error *err);

/* The sections of text[0..n): added tokens (first = true, off = index into
 * t->added, len = bytes consumed including stripped spaces) or text to
 * tokenize (first = false). */
bool tok_split_added(const struct qp_tokenizer *t, const char *text, size_t n,
                     struct tok_spans *out);

/* Runs the pre-tokenizers over buf's single split `in` (in.first: it
 * starts the text); *buf may be replaced, *out gets the splits. */
bool tok_pretokenize(const struct qp_tokenizer *t, struct tok_matcher *m,
                     struct tok_buf *buf, struct tok_span in,
                     struct tok_spans *out);

/* The byte-level alphabet: the character each byte maps to (GPT-2's
 * bytes_to_unicode), as a code point. */
uint32_t tok_byte_char(unsigned char b);

#endif
