/* formats/tokenizer.h: Hugging Face tokenizers (`tokenizer.json`, with the
 * `tokenizer_config.json` beside it when present): text to token ids and
 * back, as HF `tokenizers` encodes without and with special tokens.
 *
 * Supported: the BPE model, byte-level (Llama 3, GPT-2, Qwen2, SmolLM: Split
 * regex and ByteLevel pre-tokenizers, merges as "a b" strings or [a, b]
 * pairs, ignore_merges) and SentencePiece-style (Llama 2, Mistral:
 * Prepend/Replace normalizers or the Metaspace pre-tokenizer, byte fallback
 * to <0xNN> tokens, unk); added and special tokens, recognized in the text
 * as HF does by default (lstrip, rstrip, single_word honoured; `normalized`
 * tokens are matched on the raw text); normalizers Sequence, Prepend,
 * Replace, NFC, NFD, NFKC, NFKD, Strip; pre-tokenizers Sequence, Split,
 * ByteLevel, Metaspace, Digits; post-processors TemplateProcessing,
 * ByteLevel, Bert/RobertaProcessing, Sequence; decoders ByteLevel,
 * Metaspace, Replace, ByteFallback, Fuse, Strip, Sequence. Anything else
 * (WordPiece, Unigram, WordLevel models; other components) is refused with
 * a message naming it. Regular expressions run through PCRE2 (UTF + UCP),
 * Unicode normalization through utf8proc.
 *
 * Text is bytes. Invalid UTF-8 is not an error: each maximal run of bytes
 * that is not valid UTF-8 is a barrier no regex match, normalization or
 * merge crosses (as PCRE2's PCRE2_MATCH_INVALID_UTF treats it): a Split
 * pre-tokenizer sees it as an unmatched gap, the byte-level model encodes
 * its bytes like any other bytes (merging only among them), and the
 * SentencePiece-style model falls back to one <0xNN> token per byte (or
 * unk). Decoding returns the bytes the tokens stand for, never replacing
 * invalid UTF-8 (HF replaces it with U+FFFD), so decode(encode(t)) gives t
 * back for byte-level tokenizers.
 *
 * A loaded tokenizer is immutable: encode and decode may run concurrently
 * on one. */
#ifndef QP_FORMATS_TOKENIZER_H
#define QP_FORMATS_TOKENIZER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/status.h"

struct qp_tokenizer;

/* Token types, numbered as GGUF's tokenizer.ggml.token_type (llama.cpp's
 * llama_token_type): what an exporter writes per token. */
enum qp_tok_type {
    QP_TOK_UNDEFINED = 0, /* an id no token has (a hole in the vocabulary) */
    QP_TOK_NORMAL = 1,
    QP_TOK_UNKNOWN = 2,      /* the model's unk_token */
    QP_TOK_CONTROL = 3,      /* an added token marked special */
    QP_TOK_USER_DEFINED = 4, /* an added token not marked special */
    QP_TOK_UNUSED = 5,       /* (never produced here) */
    QP_TOK_BYTE = 6,         /* <0xNN> of a byte-fallback vocabulary */
    QP_TOK_TYPE_COUNT
};

/* Loads path: a folder holding tokenizer.json (a model folder), or a
 * tokenizer.json file. tokenizer_config.json in the same folder, when
 * present, gives bos_token, eos_token, add_bos_token, add_eos_token,
 * clean_up_tokenization_spaces and tokenizer_class (for the Llama-family
 * classes add_bos_token/add_eos_token decide the special tokens added, as
 * transformers' LlamaTokenizerFast does; otherwise the post-processor of
 * tokenizer.json does). *tok belongs to the caller (qp_tokenizer_free).
 * QP_E_IO when a file cannot be read; QP_E_FORMAT for malformed JSON or
 * content (merges naming unknown tokens, a bad regex, ids out of range,
 * ...); QP_E_UNSUPPORTED for valid components qprobe does not implement;
 * each message names the file. */
enum qp_status qp_tokenizer_load(const char *path, struct qp_tokenizer **tok,
                                 struct qp_error *err);

/* The same from memory: json is the text of tokenizer.json, config that of
 * tokenizer_config.json or NULL (both NUL-terminated); `what` names them in
 * messages (e.g. "'dir/tokenizer.json'"). */
enum qp_status qp_tokenizer_parse(const char *json, const char *config,
                                  const char *what, struct qp_tokenizer **tok,
                                  struct qp_error *err);

/* NULL is ignored. */
void qp_tokenizer_free(struct qp_tokenizer *tok);

/* Encodes text[0..len) (any bytes). Special tokens written in the text are
 * recognized; with add_special the post-processor's tokens (e.g. BOS) are
 * added around the result. *ids (malloc'd, *n entries, NULL when *n is 0)
 * belongs to the caller. QP_E_FORMAT when a character has no token and the
 * model has neither byte fallback nor unk_token (never for byte-level
 * tokenizers whose vocabulary covers the 256 bytes); QP_E_NOMEM. */
enum qp_status qp_tokenizer_encode(const struct qp_tokenizer *tok,
                                   const char *text, size_t len,
                                   bool add_special, int32_t **ids, size_t *n,
                                   struct qp_error *err);

enum {
    QP_TOK_DECODE_SKIP_SPECIAL = 1, /* leave out added tokens marked special */
    QP_TOK_DECODE_CLEAN_UP = 2,     /* transformers' clean_up_tokenization:
                                       " ." -> "." and the like */
};

/* Decodes ids[0..n) through the tokenizer's decoder into *text (malloc'd,
 * *len bytes plus a terminating NUL, owned by the caller); flags are
 * QP_TOK_DECODE_*. QP_E_INVAL names the first id outside [0, vocab size)
 * or with no token. */
enum qp_status qp_tokenizer_decode(const struct qp_tokenizer *tok,
                                   const int32_t *ids, size_t n, unsigned flags,
                                   char **text, size_t *len,
                                   struct qp_error *err);

/* ---- what an exporter (GGUF) needs -------------------------------------- */

/* One more than the largest token id (model vocabulary and added tokens). */
size_t qp_tokenizer_vocab_size(const struct qp_tokenizer *tok);

/* The string of token id as the vocabulary spells it (byte-level tokens in
 * their mapped form, e.g. "Ġthe"; SentencePiece tokens with U+2581), its
 * byte length in *len when len is non-NULL; NULL for ids outside the
 * vocabulary or holes. Borrowed from tok. */
const char *qp_tokenizer_token(const struct qp_tokenizer *tok, int32_t id,
                               size_t *len);

/* The type of token id (QP_TOK_UNDEFINED outside the vocabulary). */
enum qp_tok_type qp_tokenizer_token_type(const struct qp_tokenizer *tok,
                                         int32_t id);

/* The id of a token string (model vocabulary or added token), or -1. */
int32_t qp_tokenizer_token_id(const struct qp_tokenizer *tok, const char *s,
                              size_t len);

/* Special ids, -1 when the tokenizer has none: BOS and EOS (from
 * tokenizer_config.json, else the post-processor's first/last added
 * token), the model's unk_token, pad_token (tokenizer_config.json). */
int32_t qp_tokenizer_bos_id(const struct qp_tokenizer *tok);
int32_t qp_tokenizer_eos_id(const struct qp_tokenizer *tok);
int32_t qp_tokenizer_unk_id(const struct qp_tokenizer *tok);
int32_t qp_tokenizer_pad_id(const struct qp_tokenizer *tok);

/* Whether encoding with add_special puts BOS first / EOS last. */
bool qp_tokenizer_adds_bos(const struct qp_tokenizer *tok);
bool qp_tokenizer_adds_eos(const struct qp_tokenizer *tok);

/* tokenizer_config.json's clean_up_tokenization_spaces (transformers'
 * default, true, when absent): whether transformers' decode passes
 * QP_TOK_DECODE_CLEAN_UP for this tokenizer. */
bool qp_tokenizer_cleans_up_spaces(const struct qp_tokenizer *tok);

/* GGUF's tokenizer.ggml.model: "gpt2" for byte-level BPE, "llama" for
 * SentencePiece-style BPE. */
const char *qp_tokenizer_model_name(const struct qp_tokenizer *tok);

/* GGUF's tokenizer.ggml.pre, recognised from the pre-tokenizer: "llama-bpe"
 * (Llama 3's regex), "qwen2" (Qwen2's), "smollm" (Digits + GPT-2 regex),
 * "gpt-2" (the ByteLevel regex alone), "default" otherwise (and for
 * SentencePiece-style tokenizers). */
const char *qp_tokenizer_pre_name(const struct qp_tokenizer *tok);

/* A SentencePiece-style score for token id (GGUF's tokenizer.ggml.scores,
 * which llama.cpp's "llama" tokenizer merges by, highest first): -r for
 * the token the merge of rank r makes (the first such merge), -(merge
 * count) for tokens no merge makes, 0 for control, user-defined and byte
 * tokens. Merging the highest-scoring pair first, leftmost on ties,
 * reproduces the ranks. */
float qp_tokenizer_token_score(const struct qp_tokenizer *tok, int32_t id);

/* The merges, by rank (priority; 0 first): the ids of the two tokens
 * merged and of their concatenation. i < qp_tokenizer_merge_count. */
size_t qp_tokenizer_merge_count(const struct qp_tokenizer *tok);
void qp_tokenizer_merge(const struct qp_tokenizer *tok, size_t i,
                        int32_t *left, int32_t *right, int32_t *result);

#endif
