/* tests/fuzz/fuzz-tokenizer.c: a tokenizer.json and a text on arbitrary
 * bytes. The input is the JSON, a NUL byte, then the text (any bytes). An
 * accepted tokenizer encodes the text without and with special tokens;
 * every id must be a token, and the ids must decode. Only the first
 * TEXT_MAX bytes of the text are encoded: under the sanitizers encoding
 * and decoding cost some 15 us a byte, and the corpus grows texts of
 * kilobytes where every path (the scratch buffers' growth, the cut of
 * SentencePiece words of 64 and more symbols) is reached in a few hundred
 * bytes (the last campaign's corpus reaches the same coverage). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "formats/tokenizer.h"

#define TEXT_MAX 1024

static void encode_decode(const struct qp_tokenizer *tok, const char *text,
                          size_t len, bool special)
{
    struct qp_error err;
    int32_t *ids;
    size_t n;
    if (qp_tokenizer_encode(tok, text, len, special, &ids, &n, &err) != QP_OK)
        return;
    for (size_t i = 0; i < n; i++)
        if (!qp_tokenizer_token(tok, ids[i], NULL))
            __builtin_trap();
    char *back;
    size_t blen;
    if (qp_tokenizer_decode(tok, ids, n, 0, &back, &blen, &err) != QP_OK)
        __builtin_trap();
    free(back);
    free(ids);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *nul = memchr(data, 0, size);
    size_t jn = nul ? (size_t)(nul - data) : size;
    char *json = malloc(jn + 1);
    if (!json)
        return 0;
    memcpy(json, data, jn);
    json[jn] = '\0';
    const char *text = nul ? (const char *)nul + 1 : "";
    size_t tn = nul ? size - jn - 1 : 0;
    if (tn > TEXT_MAX)
        tn = TEXT_MAX;
    struct qp_tokenizer *tok;
    struct qp_error err;
    if (qp_tokenizer_parse(json, NULL, "fuzz", &tok, &err) == QP_OK) {
        encode_decode(tok, text, tn, false);
        encode_decode(tok, text, tn, true);
        qp_tokenizer_free(tok);
    }
    free(json);
    return 0;
}
