/* Unit tests of formats/tokenizer.h on SentencePiece-style BPE (Llama 2,
 * Mistral): the Prepend/Replace normalizers and the Metaspace
 * pre-tokenizer, byte fallback, unk, the decoders, the Split behaviours,
 * Digits, and tokenizer_config.json. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fileio.h"
#include "tests/test.h"
#include "tests/unit/tok-test-util.h"

#define SP "\xe2\x96\x81" /* U+2581, SentencePiece's space */

/* <unk> 0, <s> 1, </s> 2, <0x00>..<0xFF> 3..258, then: */
static const char *spm_vocab(const char *more)
{
    static char buf[8192];
    size_t n = (size_t)snprintf(buf, sizeof buf,
                                "\"<unk>\": 0, \"<s>\": 1, \"</s>\": 2");
    for (unsigned b = 0; b < 256; b++)
        n += (size_t)snprintf(buf + n, sizeof buf - n, ", \"<0x%02X>\": %u", b,
                              3 + b);
    snprintf(buf + n, sizeof buf - n, ", \"" SP "\": 259, \"a\": 260, "
             "\"b\": 261, \"" SP "a\": 262, \"ab\": 263, \"" SP "ab\": 264, "
             "\"\xc3\xa9\": 265%s", more);
    return buf;
}

static const char spm_added[] =
    "\"added_tokens\": [{\"id\": 0, \"content\": \"<unk>\", \"special\": true},"
    "{\"id\": 1, \"content\": \"<s>\", \"special\": true},"
    "{\"id\": 2, \"content\": \"</s>\", \"special\": true}],"
    "\"post_processor\": {\"type\": \"TemplateProcessing\", \"single\": ["
    "{\"SpecialToken\": {\"id\": \"<s>\", \"type_id\": 0}}, "
    "{\"Sequence\": {\"id\": \"A\", \"type_id\": 0}}], \"special_tokens\": "
    "{\"<s>\": {\"id\": \"<s>\", \"ids\": [1], \"tokens\": [\"<s>\"]}}}";

/* Llama 2's tokenizer.json form: normalizers, no pre-tokenizer */
static char *spm_tokenizer(const char *model_opts)
{
    char rest[2048];
    snprintf(rest, sizeof rest, "%s, "
             "\"normalizer\": {\"type\": \"Sequence\", \"normalizers\": ["
             "{\"type\": \"Prepend\", \"prepend\": \"" SP "\"}, "
             "{\"type\": \"Replace\", \"pattern\": {\"String\": \" \"}, "
             "\"content\": \"" SP "\"}]}, \"pre_tokenizer\": null, "
             "\"decoder\": {\"type\": \"Sequence\", \"decoders\": ["
             "{\"type\": \"Replace\", \"pattern\": {\"String\": \"" SP "\"}, "
             "\"content\": \" \"}, {\"type\": \"ByteFallback\"}, "
             "{\"type\": \"Fuse\"}, {\"type\": \"Strip\", \"content\": \" \", "
             "\"start\": 1, \"stop\": 0}]}", spm_added);
    return tt_doc(spm_vocab(""), "[\"" SP " a\", \"a b\", \"" SP "a b\"]",
                  model_opts, rest);
}

QP_TEST(tokenizer_spm_merges_and_byte_fallback)
{
    char *json = spm_tokenizer("\"unk_token\": \"<unk>\", "
                               "\"byte_fallback\": true, \"fuse_unk\": true");
    struct qp_tokenizer *t = tt_parse(ctx, json, NULL);
    /* "▁ab▁ab": ▁ a -> ▁a (rank 0) at both places, then ▁a b -> ▁ab */
    TT_ENC(t, "ab ab", false, 264, 264);
    TT_ENC(t, "a  b", false, 262, 259, 259, 261);
    /* é is a token; ü (C3 BC) falls back to its bytes */
    TT_ENC(t, "\xc3\xa9", false, 259, 265);
    TT_ENC(t, "\xc3\xbc", false, 259, 3 + 0xc3, 3 + 0xbc);
    /* an invalid byte: <0xFF>, and a b do not merge across it */
    TT_ENC(t, "a\xff" "b", false, 262, 3 + 0xff, 261);
    /* special tokens split the text; each part gets its ▁ */
    TT_ENC(t, "<s>ab</s>ab", false, 1, 264, 2, 264);
    TT_ENC(t, "ab", true, 1, 264);
    TT_DEC(t, 0, "ab ab", 264, 264);
    TT_DEC(t, 0, "<s> ab", 1, 264);
    TT_DEC(t, QP_TOK_DECODE_SKIP_SPECIAL, "ab", 1, 264);
    TT_DEC(t, 0, "\xc3\xbc", 259, 3 + 0xc3, 3 + 0xbc);
    TT_DEC(t, 0, "a\xff" "b", 262, 3 + 0xff, 261);
    if (t) {
        CHECK_STR(qp_tokenizer_model_name(t), "llama");
        CHECK_STR(qp_tokenizer_pre_name(t), "default");
        CHECK_INT(qp_tokenizer_token_type(t, 0), QP_TOK_UNKNOWN);
        CHECK_INT(qp_tokenizer_token_type(t, 1), QP_TOK_CONTROL);
        CHECK_INT(qp_tokenizer_token_type(t, 3 + 0x41), QP_TOK_BYTE);
        CHECK_INT(qp_tokenizer_token_type(t, 262), QP_TOK_NORMAL);
        CHECK_INT(qp_tokenizer_unk_id(t), 0);
    }
    qp_tokenizer_free(t);
    free(json);
}

QP_TEST(tokenizer_spm_unk)
{
    char *json = spm_tokenizer("\"unk_token\": \"<unk>\", \"fuse_unk\": true");
    struct qp_tokenizer *t = tt_parse(ctx, json, NULL);
    TT_ENC(t, "\xc3\xbc\xc3\xbc" "a", false, 259, 0, 260); /* ü ü fused */
    qp_tokenizer_free(t);
    free(json);
    json = spm_tokenizer("\"unk_token\": \"<unk>\"");
    t = tt_parse(ctx, json, NULL);
    TT_ENC(t, "\xc3\xbc\xc3\xbc" "a", false, 259, 0, 0, 260);
    qp_tokenizer_free(t);
    free(json);
    json = spm_tokenizer("");
    t = tt_parse(ctx, json, NULL);
    struct qp_error err = {0};
    int32_t *ids;
    size_t n;
    if (t)
        CHECK_FAILS(qp_tokenizer_encode(t, "\xc3\xbc", 2, false, &ids, &n, &err),
                    QP_E_FORMAT, &err, "character U+00FC has no token");
    qp_tokenizer_free(t);
    free(json);
}

/* Checks that text (n copies of unit) encodes to first, then n copies of
 * each, then last (first, last -1: none). */
static void check_repeat(struct qp_test_ctx *ctx, const struct qp_tokenizer *t,
                         const char *unit, size_t n, int32_t first,
                         int32_t each, int32_t last)
{
    size_t u = strlen(unit);
    char *text = malloc(n * u);
    int32_t *want = malloc((n + 2) * sizeof *want);
    REQUIRE(text && want);
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        memcpy(text + i * u, unit, u);
    if (first >= 0)
        want[k++] = first;
    for (size_t i = 0; i < n; i++)
        want[k++] = each;
    if (last >= 0)
        want[k++] = last;
    tt_check_encode(ctx, unit, t, text, n * u, false, want, k);
    free(text);
    free(want);
}

/* A long word (the whole text: no pre-tokenizer) is cut where no token
 * holds the two characters side by side; the ids are those of the uncut
 * word. */
QP_TEST(tokenizer_spm_long_words_are_cut_safely)
{
    char *json = spm_tokenizer("\"unk_token\": \"<unk>\", "
                               "\"byte_fallback\": true");
    struct qp_tokenizer *t = tt_parse(ctx, json, NULL);
    check_repeat(ctx, t, "ab ", 300, -1, 264, 259); /* ... ▁ab ▁ */
    qp_tokenizer_free(t);
    free(json);
}

/* The newer form: a Metaspace pre-tokenizer and decoder. "a▁" (266) merges
 * first, so whether words are split at ▁ shows. */
static char *metaspace_tokenizer(const char *scheme, bool split)
{
    char rest[2048];
    snprintf(rest, sizeof rest, "%s, \"pre_tokenizer\": {\"type\": "
             "\"Metaspace\", \"replacement\": \"" SP "\", %s, \"split\": %s}, "
             "\"decoder\": {\"type\": \"Metaspace\", \"replacement\": \"" SP
             "\", %s}", spm_added, scheme, split ? "true" : "false", scheme);
    return tt_doc(spm_vocab(", \"a" SP "\": 266"),
                  "[\"a " SP "\", \"" SP " a\", \"a b\", \"" SP "a b\"]",
                  "\"unk_token\": \"<unk>\", \"byte_fallback\": true", rest);
}

QP_TEST(tokenizer_spm_metaspace)
{
    char *json = metaspace_tokenizer("\"prepend_scheme\": \"first\"", false);
    struct qp_tokenizer *t = tt_parse(ctx, json, NULL);
    /* "▁a▁a" unsplit: a ▁ merges first */
    TT_ENC(t, "a a", false, 259, 266, 260);
    /* "first": no ▁ for a part that does not start the text */
    TT_ENC(t, "<s>ab", false, 1, 263);
    TT_ENC(t, "ab<s>ab", false, 264, 1, 263);
    TT_DEC(t, 0, "ab ab", 264, 264);
    /* a ▁ is a token: no cut between them in a long word */
    check_repeat(ctx, t, "a ", 200, 259, 266, -1);
    qp_tokenizer_free(t);
    free(json);
    json = metaspace_tokenizer("\"prepend_scheme\": \"always\"", true);
    t = tt_parse(ctx, json, NULL);
    /* split at ▁: "▁a" "▁a" */
    TT_ENC(t, "a a", false, 262, 262);
    TT_ENC(t, "<s>ab", false, 1, 264);
    qp_tokenizer_free(t);
    free(json);
    /* the old form: add_prefix_space */
    json = metaspace_tokenizer("\"add_prefix_space\": false", true);
    t = tt_parse(ctx, json, NULL);
    TT_ENC(t, "ab", false, 263);
    TT_DEC(t, 0, " ab", 264);
    qp_tokenizer_free(t);
    free(json);
}

/* Split with a literal delimiter, each behaviour; words are whole tokens
 * (ignore_merges, no merges) so the splits show as ids. */
static void check_split(struct qp_test_ctx *ctx, const char *behavior,
                        bool invert, const char *text, const int32_t *want,
                        size_t n)
{
    char rest[512];
    snprintf(rest, sizeof rest, "\"pre_tokenizer\": {\"type\": \"Split\", "
             "\"pattern\": {\"String\": \"-\"}, \"behavior\": \"%s\", "
             "\"invert\": %s}", behavior, invert ? "true" : "false");
    char *json = tt_doc("\"a\": 0, \"b\": 1, \"-\": 2, \"a-\": 3, \"-b\": 4, "
                        "\"--\": 5", NULL, "\"ignore_merges\": true", rest);
    struct qp_tokenizer *t = tt_parse(ctx, json, NULL);
    tt_check_encode(ctx, behavior, t, text, strlen(text), false, want, n);
    qp_tokenizer_free(t);
    free(json);
}

QP_TEST(tokenizer_split_behaviours_and_digits)
{
    check_split(ctx, "Removed", false, "a-b", (int32_t[]){0, 1}, 2);
    check_split(ctx, "Isolated", false, "a-b", (int32_t[]){0, 2, 1}, 3);
    check_split(ctx, "MergedWithPrevious", false, "a-b", (int32_t[]){3, 1}, 2);
    check_split(ctx, "MergedWithNext", false, "a-b", (int32_t[]){0, 4}, 2);
    check_split(ctx, "Contiguous", false, "a--b", (int32_t[]){0, 5, 1}, 3);
    check_split(ctx, "Isolated", false, "a--b", (int32_t[]){0, 2, 2, 1}, 4);
    /* inverted: "a" and "b" are the delimiters, removed */
    check_split(ctx, "Removed", true, "a-b", (int32_t[]){2}, 1);
    for (int individual = 0; individual < 2; individual++) {
        char rest[200];
        snprintf(rest, sizeof rest, "\"pre_tokenizer\": {\"type\": "
                 "\"Digits\", \"individual_digits\": %s}",
                 individual ? "true" : "false");
        char *json = tt_doc("\"x\": 0, \"1\": 1, \"2\": 2, \"3\": 3, \"123\": 4, "
                            "\"x1\": 5", NULL, "\"ignore_merges\": true", rest);
        struct qp_tokenizer *t = tt_parse(ctx, json, NULL);
        if (individual)
            TT_ENC(t, "x123", false, 0, 1, 2, 3);
        else
            TT_ENC(t, "x123", false, 0, 4);
        qp_tokenizer_free(t);
        free(json);
    }
}

QP_TEST(tokenizer_config_json)
{
    char *json = spm_tokenizer("\"unk_token\": \"<unk>\", \"byte_fallback\": true");
    /* a Llama class rebuilds the template from add_bos/add_eos_token */
    struct qp_tokenizer *t = tt_parse(ctx, json,
        "{\"tokenizer_class\": \"LlamaTokenizerFast\", \"add_bos_token\": true, "
        "\"add_eos_token\": true, \"bos_token\": \"<s>\", \"eos_token\": "
        "{\"__type\": \"AddedToken\", \"content\": \"</s>\"}, "
        "\"clean_up_tokenization_spaces\": false, \"pad_token\": null}");
    TT_ENC(t, "ab", true, 1, 264, 2);
    if (t) {
        CHECK(qp_tokenizer_adds_bos(t) && qp_tokenizer_adds_eos(t));
        CHECK(!qp_tokenizer_cleans_up_spaces(t));
        CHECK_INT(qp_tokenizer_eos_id(t), 2);
        CHECK_INT(qp_tokenizer_pad_id(t), -1);
    }
    qp_tokenizer_free(t);
    /* another class keeps the post-processor; add_bos_token false of a
     * Llama class drops the BOS */
    t = tt_parse(ctx, json, "{\"tokenizer_class\": \"PreTrainedTokenizerFast\", "
                            "\"add_eos_token\": true, \"eos_token\": \"</s>\"}");
    TT_ENC(t, "ab", true, 1, 264);
    qp_tokenizer_free(t);
    t = tt_parse(ctx, json, "{\"tokenizer_class\": \"LlamaTokenizer\", "
                            "\"add_bos_token\": false, \"bos_token\": \"<s>\"}");
    TT_ENC(t, "ab", true, 264);
    if (t)
        CHECK(!qp_tokenizer_adds_bos(t) && qp_tokenizer_bos_id(t) == 1);
    qp_tokenizer_free(t);
    /* from a folder: tokenizer.json and the config beside it, by folder or
     * by file */
    char *tj = qp_test_path(ctx, "tokenizer.json");
    char *tc = qp_test_path(ctx, "tokenizer_config.json");
    const char *cfg = "{\"bos_token\": \"</s>\"}";
    REQUIRE(qp_test_write_file(tj, json, strlen(json)) &&
            qp_test_write_file(tc, cfg, strlen(cfg)));
    struct qp_error err = {0};
    const char *paths[] = {qp_test_tmpdir(ctx), tj};
    for (int i = 0; i < 2; i++) {
        CHECK_OK(qp_tokenizer_load(paths[i], &t, &err), &err);
        if (t)
            CHECK_INT(qp_tokenizer_bos_id(t), 2);
        qp_tokenizer_free(t);
    }
    free(tj);
    free(tc);
    free(json);
}
