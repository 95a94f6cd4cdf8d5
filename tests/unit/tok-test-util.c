/* tests/unit/tok-test-util.c: see tok-test-util.h. */
#include "tests/unit/tok-test-util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char tt_llama3_regex[] =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| "
    "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

const char *tt_json_str(const char *s)
{
    static char buf[4096];
    size_t n = 0;
    buf[n++] = '"';
    for (; *s && n + 8 < sizeof buf; s++) {
        if (*s == '"' || *s == '\\') {
            buf[n++] = '\\';
            buf[n++] = *s;
        } else if ((unsigned char)*s < 0x20) {
            n += (size_t)snprintf(buf + n, sizeof buf - n, "\\u%04x",
                                  (unsigned char)*s);
        } else {
            buf[n++] = *s;
        }
    }
    buf[n++] = '"';
    buf[n] = '\0';
    return buf;
}

char *tt_doc(const char *vocab, const char *merges, const char *model_opts,
             const char *rest)
{
    size_t n = strlen(vocab) + (merges ? strlen(merges) : 4) +
               strlen(model_opts) + strlen(rest) + 200;
    char *s = malloc(n);
    if (!s)
        abort();
    snprintf(s, n, "{\"model\": {\"type\": \"BPE\", \"vocab\": {%s}, "
             "\"merges\": %s%s%s}%s%s}", vocab, merges ? merges : "[]",
             *model_opts ? ", " : "", model_opts, *rest ? ", " : "", rest);
    return s;
}

const char *tt_byte_vocab(void)
{
    static char buf[8192];
    if (buf[0])
        return buf;
    size_t n = 0, k = 0;
    for (unsigned b = 0; b < 256; b++) {
        bool printable = (b >= '!' && b <= '~') || (b >= 0xa1 && b <= 0xac) ||
                         b >= 0xae;
        unsigned cp = printable ? b : 256 + (unsigned)k++;
        char ch[4] = {0};
        if (cp < 0x80) {
            ch[0] = (char)cp;
        } else {
            ch[0] = (char)(0xc0 | cp >> 6);
            ch[1] = (char)(0x80 | (cp & 0x3f));
        }
        n += (size_t)snprintf(buf + n, sizeof buf - n, "%s%s: %u",
                              b ? ", " : "", tt_json_str(ch), b);
    }
    return buf;
}

char *tt_byte_doc(const char *more_vocab, const char *merges,
                  const char *model_opts, const char *rest)
{
    size_t n = strlen(tt_byte_vocab()) + strlen(more_vocab) + 4;
    char *v = malloc(n);
    if (!v)
        abort();
    snprintf(v, n, "%s%s%s", tt_byte_vocab(), *more_vocab ? ", " : "",
             more_vocab);
    char *doc = tt_doc(v, merges, model_opts, rest);
    free(v);
    return doc;
}

struct qp_tokenizer *tt_parse(struct qp_test_ctx *ctx, const char *json,
                              const char *config)
{
    struct qp_error err = {0};
    struct qp_tokenizer *t = NULL;
    if (qp_tokenizer_parse(json, config, "'test'", &t, &err))
        qp_test_failf(ctx, __FILE__, __LINE__, "parse failed: %s", err.msg);
    return t;
}

static void show(char *buf, size_t size, const int32_t *v, size_t n)
{
    size_t k = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < n && k + 16 < size; i++)
        k += (size_t)snprintf(buf + k, size - k, "%s%ld", i ? " " : "",
                              (long)v[i]);
}

void tt_check_encode(struct qp_test_ctx *ctx, const char *where,
                     const struct qp_tokenizer *tok, const char *text,
                     size_t len, bool add_special, const int32_t *want,
                     size_t n)
{
    if (!tok)
        return;
    struct qp_error err = {0};
    int32_t *ids;
    size_t got;
    if (qp_tokenizer_encode(tok, text, len, add_special, &ids, &got, &err)) {
        qp_test_failf(ctx, __FILE__, __LINE__, "encode %s: %s", where, err.msg);
        return;
    }
    if (got != n || (n && memcmp(ids, want, n * sizeof *ids))) {
        char a[512], b[512];
        show(a, sizeof a, ids, got);
        show(b, sizeof b, want, n);
        qp_test_failf(ctx, __FILE__, __LINE__, "encode %s%s: [%s], expected [%s]",
                      where, add_special ? " (special)" : "", a, b);
    }
    free(ids);
}

void tt_check_decode(struct qp_test_ctx *ctx, const char *where,
                     const struct qp_tokenizer *tok, const int32_t *ids,
                     size_t n, unsigned flags, const char *want,
                     size_t want_len)
{
    if (!tok)
        return;
    struct qp_error err = {0};
    char *text;
    size_t len;
    if (qp_tokenizer_decode(tok, ids, n, flags, &text, &len, &err)) {
        qp_test_failf(ctx, __FILE__, __LINE__, "decode %s: %s", where, err.msg);
        return;
    }
    if (len != want_len || memcmp(text, want, len))
        qp_test_failf(ctx, __FILE__, __LINE__, "decode gave \"%.*s\" (%zu "
                      "bytes), expected %s", (int)len, text, len, where);
    free(text);
}
