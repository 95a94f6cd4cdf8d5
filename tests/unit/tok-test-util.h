/* tests/unit/tok-test-util.h: small hand-made tokenizer.json documents for
 * the tokenizer tests (tests/unit/test-tokenizer*.c) and helpers to check
 * encodings. */
#ifndef QP_TESTS_TOK_TEST_UTIL_H
#define QP_TESTS_TOK_TEST_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "formats/tokenizer.h"
#include "tests/test.h"

/* Llama 3's pre-tokenizer regex. */
extern const char tt_llama3_regex[];

/* s as a JSON string literal, quotes included (static buffer, reused). */
const char *tt_json_str(const char *s);

/* "{...}" of a tokenizer.json with a BPE model: vocab members (JSON text,
 * e.g. "\"a\": 0, \"b\": 1"), merges (JSON array text, or NULL), more
 * model members (JSON text, may be empty) and the other top-level members
 * (JSON text, may be empty). malloc'd. */
char *tt_doc(const char *vocab, const char *merges, const char *model_opts,
             const char *rest);

/* The vocab members of the 256 byte-level characters, byte b as id b. */
const char *tt_byte_vocab(void);

/* A byte-level tokenizer: the byte vocabulary plus these tokens
 * ("\"he\": 256, ..."), merges, model options and the other sections
 * (pre-tokenizer, added tokens...). malloc'd. */
char *tt_byte_doc(const char *more_vocab, const char *merges,
                  const char *model_opts, const char *rest);

/* Parses json (and config, may be NULL); NULL on failure (reported). */
struct qp_tokenizer *tt_parse(struct qp_test_ctx *ctx, const char *json,
                              const char *config);

/* Checks that encoding text[0..len) gives want[0..n). */
void tt_check_encode(struct qp_test_ctx *ctx, const char *where,
                     const struct qp_tokenizer *tok, const char *text,
                     size_t len, bool add_special, const int32_t *want,
                     size_t n);

/* Checks that decoding ids gives the bytes want[0..want_len). */
void tt_check_decode(struct qp_test_ctx *ctx, const char *where,
                     const struct qp_tokenizer *tok, const int32_t *ids,
                     size_t n, unsigned flags, const char *want,
                     size_t want_len);

#define TT_ENC(tok, text, special, ...)                                        \
    do {                                                                       \
        static const int32_t want_[] = {__VA_ARGS__};                          \
        tt_check_encode(ctx, #text, tok, text, sizeof(text) - 1, special,      \
                        want_, sizeof want_ / sizeof want_[0]);                \
    } while (0)

#define TT_DEC(tok, flags, want, ...)                                          \
    do {                                                                       \
        static const int32_t ids_[] = {__VA_ARGS__};                           \
        tt_check_decode(ctx, #want, tok, ids_, sizeof ids_ / sizeof ids_[0],   \
                        flags, want, sizeof(want) - 1);                        \
    } while (0)

#endif
