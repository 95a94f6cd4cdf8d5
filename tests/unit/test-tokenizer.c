/* Unit tests of formats/tokenizer.h on small hand-made tokenizer.json
 * documents: merge priority and ties, the Split regex, ignore_merges,
 * invalid UTF-8, added and special tokens, the post-processor, decoding,
 * and the accessors an exporter uses. Expected ids are worked out by hand
 * from the merges (comments show the steps). The oracle comparison on real
 * tokenizers is tests/cli/test-tokenize.sh. */
#include <stdlib.h>
#include <string.h>

#include "tests/test.h"
#include "tests/unit/tok-test-util.h"

/* Byte-level: bytes are ids 0..255 (h 104, e 101, l 108, o 111, ' ' 32 as
 * "Ġ", w 119, 1 49 ...), then: */
static const char byte_more[] =
    "\"he\": 256, \"ll\": 257, \"hell\": 258, \"hello\": 259, \"\xc4\xa0w\": 260, "
    "\"or\": 261, \"\xc4\xa0wor\": 262, \"ld\": 263, \"\xc4\xa0world\": 264, "
    "\"lo\": 265, \"wxyz\": 266, \"12\": 270, \"34\": 271, "
    "\"\xc4\xa0\xc3\xbf\": 272, \"\xc3\xbf\xc3\xbe\": 273, \"aa\": 274, "
    "\"aaaa\": 275";
/* ranks 0..15 */
static const char byte_merges[] =
    "[\"h e\", \"l l\", \"he ll\", \"hell o\", \"l o\", \"\xc4\xa0 w\", \"o r\", "
    "\"\xc4\xa0w or\", \"l d\", \"\xc4\xa0wor ld\", \"3 4\", \"1 2\", "
    "\"\xc4\xa0 \xc3\xbf\", [\"\xc3\xbf\", \"\xc3\xbe\"], \"a a\", \"aa aa\"]";

static char *byte_tokenizer(bool ignore_merges, const char *normalizer)
{
    char rest[4096];
    snprintf(rest, sizeof rest,
             "\"added_tokens\": ["
             "{\"id\": 267, \"content\": \"<|bos|>\", \"special\": true},"
             "{\"id\": 268, \"content\": \"<|x|>\", \"special\": true, "
             "\"lstrip\": true, \"rstrip\": true},"
             "{\"id\": 269, \"content\": \"tok\", \"single_word\": true},"
             "{\"id\": 276, \"content\": \"<|bo\", \"special\": true},"
             "{\"id\": 280, \"content\": \"<|far|>\", \"special\": true}],"
             "\"normalizer\": %s,"
             "\"pre_tokenizer\": {\"type\": \"Sequence\", \"pretokenizers\": ["
             "{\"type\": \"Split\", \"pattern\": {\"Regex\": %s}, "
             "\"behavior\": \"Isolated\", \"invert\": false},"
             "{\"type\": \"ByteLevel\", \"add_prefix_space\": false, "
             "\"use_regex\": false}]},"
             "\"post_processor\": {\"type\": \"Sequence\", \"processors\": ["
             "{\"type\": \"ByteLevel\"}, {\"type\": \"TemplateProcessing\", "
             "\"single\": [{\"SpecialToken\": {\"id\": \"<|bos|>\", "
             "\"type_id\": 0}}, {\"Sequence\": {\"id\": \"A\", \"type_id\": 0}}],"
             "\"special_tokens\": {\"<|bos|>\": {\"id\": \"<|bos|>\", "
             "\"ids\": [267]}}}]},"
             "\"decoder\": {\"type\": \"ByteLevel\"}",
             normalizer ? normalizer : "null", tt_json_str(tt_llama3_regex));
    return tt_byte_doc(byte_more, byte_merges,
                       ignore_merges ? "\"ignore_merges\": true" : "", rest);
}

QP_TEST(tokenizer_byte_level_merges_by_rank)
{
    char *json = byte_tokenizer(false, NULL);
    struct qp_tokenizer *t = tt_parse(ctx, json, NULL);
    /* h e l l o -> he l l o -> he ll o -> hell o -> hello */
    TT_ENC(t, "hello", false, 259);
    /* Ġ w o r l d -> Ġw o r l d -> Ġw or l d -> Ġwor l d -> Ġwor ld ->
     * Ġworld; "hello" and " world" are separate pre-tokens */
    TT_ENC(t, "hello world", false, 259, 264);
    /* "  world": " " then " world" (\s+(?!\S)) */
    TT_ENC(t, "hello  world", false, 259, 32, 264);
    /* l l (rank 1) beats l o (rank 4) */
    TT_ENC(t, "llo", false, 257, 111);
    /* equal ranks: the leftmost pair first */
    TT_ENC(t, "aaa", false, 274, 97);
    TT_ENC(t, "aaaaa", false, 275, 97);
    /* digits in groups of at most three: "123" "45", so 3 4 never meets */
    TT_ENC(t, "12345", false, 270, 51, 52, 53);
    tt_check_encode(ctx, "empty", t, "", 0, false, NULL, 0);
    /* without ignore_merges a vocabulary word without merges is spelled */
    TT_ENC(t, "wxyz", false, 119, 120, 121, 122);
    qp_tokenizer_free(t);
    free(json);
}

QP_TEST(tokenizer_byte_level_ignore_merges)
{
    char *json = byte_tokenizer(true, NULL);
    struct qp_tokenizer *t = tt_parse(ctx, json, NULL);
    TT_ENC(t, "wxyz", false, 266);
    /* "Ġwxyz" is not a token: merged as usual, Ġ w -> Ġw */
    TT_ENC(t, " wxyz", false, 260, 120, 121, 122);
    TT_ENC(t, "hello world", false, 259, 264);
    qp_tokenizer_free(t);
    free(json);
}

QP_TEST(tokenizer_byte_level_invalid_utf8_is_bytes)
{
    char *json = byte_tokenizer(false, NULL);
    struct qp_tokenizer *t = tt_parse(ctx, json, NULL);
    /* the invalid byte is a gap of its own: " " then "\xff", so the merge
     * "Ġ ÿ" (272) cannot apply */
    TT_ENC(t, " \xff", false, 32, 255);
    /* a run of invalid bytes is one word: ÿ þ merge (273) */
    TT_ENC(t, "\xff\xfe", false, 273);
    TT_ENC(t, "he\xffllo", false, 256, 255, 257, 111);
    /* a truncated sequence: its two bytes, then "a" */
    TT_ENC(t, "\xe2\x82" "a", false, 226, 130, 97);
    /* U+FFFD itself is a character (EF BF BD) joined to the space */
    TT_ENC(t, " \xef\xbf\xbd", false, 32, 239, 191, 189);
    /* decoding gives the bytes back */
    TT_DEC(t, 0, "he\xffllo", 256, 255, 257, 111);
    qp_tokenizer_free(t);
    free(json);
}

QP_TEST(tokenizer_added_and_special_tokens)
{
    char *json = byte_tokenizer(false, NULL);
    struct qp_tokenizer *t = tt_parse(ctx, json, NULL);
    TT_ENC(t, "<|bos|>hello", false, 267, 259);
    TT_ENC(t, "hello<|bos|>", false, 259, 267);
    /* leftmost-longest: "<|bos|>" over "<|bo" */
    TT_ENC(t, "<|bo<|bos|>", false, 276, 267);
    /* no strip: the spaces stay words of their own */
    TT_ENC(t, "a <|bos|> b", false, 97, 32, 267, 32, 98);
    /* lstrip/rstrip: the spaces around <|x|> are part of it */
    TT_ENC(t, "a <|x|> b", false, 97, 268, 98);
    TT_ENC(t, "a \t<|x|>\n b", false, 97, 268, 98);
    /* single_word: "tok" alone, not inside "tokens" */
    TT_ENC(t, "tok tokens", false, 269, 32, 116, 111, 107, 101, 110, 115);
    TT_ENC(t, "atok", false, 97, 116, 111, 107);
    /* the post-processor's <|bos|> with add_special */
    TT_ENC(t, "hello", true, 267, 259);
    TT_ENC(t, "", true, 267); /* the text is empty, the template is not */
    qp_tokenizer_free(t);
    free(json);
}

QP_TEST(tokenizer_long_word_and_decode)
{
    char *json = byte_tokenizer(false, NULL);
    struct qp_tokenizer *t = tt_parse(ctx, json, NULL);
    REQUIRE(t);
    /* 100001 letters: 50000 "aa" + "a", then 25000 "aaaa" + "a" */
    size_t n = 100001;
    char *text = malloc(n);
    REQUIRE(text);
    memset(text, 'a', n);
    struct qp_error err = {0};
    int32_t *ids;
    size_t got;
    CHECK_OK(qp_tokenizer_encode(t, text, n, false, &ids, &got, &err), &err);
    CHECK_INT(got, 25001);
    size_t aaaa = 0;
    for (size_t i = 0; i + 1 < got; i++)
        aaaa += ids[i] == 275;
    CHECK_INT(aaaa, 25000);
    CHECK_INT(ids[got - 1], 97);
    char *back;
    size_t len;
    CHECK_OK(qp_tokenizer_decode(t, ids, got, 0, &back, &len, &err), &err);
    CHECK(len == n && !memcmp(back, text, n));
    free(back);
    free(ids);
    free(text);
    TT_DEC(t, 0, "<|bos|>hello world\xff", 267, 259, 264, 255);
    TT_DEC(t, QP_TOK_DECODE_SKIP_SPECIAL, "hello world\xff", 267, 259, 264, 255);
    TT_DEC(t, 0, "tok tokens", 269, 32, 116, 111, 107, 101, 110, 115);
    TT_DEC(t, 0, "hello .", 259, 32, 46);
    TT_DEC(t, QP_TOK_DECODE_CLEAN_UP, "hello.", 259, 32, 46);
    static const int32_t bad[][1] = {{281}, {-1}, {278}};
    for (int i = 0; i < 3; i++)
        CHECK_FAILS(qp_tokenizer_decode(t, bad[i], 1, 0, &back, &len, &err),
                    QP_E_INVAL, &err, "is not in the vocabulary (281 ids)");
    qp_tokenizer_free(t);
    free(json);
}

QP_TEST(tokenizer_exporter_accessors)
{
    char *json = byte_tokenizer(false, NULL);
    struct qp_tokenizer *t = tt_parse(ctx, json, NULL);
    REQUIRE(t);
    CHECK_INT(qp_tokenizer_vocab_size(t), 281);
    size_t len;
    CHECK_STR(qp_tokenizer_token(t, 260, &len), "\xc4\xa0w");
    CHECK_INT(len, 3);
    CHECK(qp_tokenizer_token(t, 278, NULL) == NULL);
    CHECK_INT(qp_tokenizer_token_type(t, 259), QP_TOK_NORMAL);
    CHECK_INT(qp_tokenizer_token_type(t, 267), QP_TOK_CONTROL);
    CHECK_INT(qp_tokenizer_token_type(t, 269), QP_TOK_USER_DEFINED);
    CHECK_INT(qp_tokenizer_token_type(t, 278), QP_TOK_UNDEFINED);
    CHECK_INT(qp_tokenizer_token_id(t, "hello", 5), 259);
    CHECK_INT(qp_tokenizer_token_id(t, "<|x|>", 5), 268);
    CHECK_INT(qp_tokenizer_token_id(t, "nope", 4), -1);
    /* no tokenizer_config.json: BOS is what the template puts first */
    CHECK_INT(qp_tokenizer_bos_id(t), 267);
    CHECK_INT(qp_tokenizer_eos_id(t), -1);
    CHECK_INT(qp_tokenizer_unk_id(t), -1);
    CHECK(qp_tokenizer_adds_bos(t));
    CHECK(!qp_tokenizer_adds_eos(t));
    CHECK_STR(qp_tokenizer_model_name(t), "gpt2");
    CHECK_STR(qp_tokenizer_pre_name(t), "llama-bpe");
    CHECK_INT(qp_tokenizer_merge_count(t), 16);
    int32_t a, b, r;
    qp_tokenizer_merge(t, 2, &a, &b, &r);
    CHECK(a == 256 && b == 257 && r == 258);
    qp_tokenizer_merge(t, 13, &a, &b, &r); /* the [a, b] form */
    CHECK(a == 255 && b == 254 && r == 273);
    /* scores: -rank of the merge making the token, -16 for the bytes */
    CHECK(qp_tokenizer_token_score(t, 258) == -2.0f);
    CHECK(qp_tokenizer_token_score(t, 256) == 0.0f); /* rank 0 */
    CHECK(qp_tokenizer_token_score(t, 104) == -16.0f);
    CHECK(qp_tokenizer_token_score(t, 266) == -16.0f); /* no merge makes it */
    CHECK(qp_tokenizer_token_score(t, 267) == 0.0f);   /* control */
    qp_tokenizer_free(t);
    free(json);
}

QP_TEST(tokenizer_normalizers)
{
    char *json = byte_tokenizer(false, "{\"type\": \"NFC\"}");
    struct qp_tokenizer *t = tt_parse(ctx, json, NULL);
    /* e + U+0301 composes to é (C3 A9) */
    TT_ENC(t, "e\xcc\x81", false, 195, 169);
    /* not across an invalid byte */
    TT_ENC(t, "e\xff\xcc\x81", false, 101, 255, 204, 129);
    qp_tokenizer_free(t);
    free(json);
    json = byte_tokenizer(false, NULL);
    t = tt_parse(ctx, json, NULL);
    TT_ENC(t, "e\xcc\x81", false, 101, 204, 129);
    qp_tokenizer_free(t);
    free(json);
    json = byte_tokenizer(false, "{\"type\": \"Sequence\", \"normalizers\": ["
                                 "{\"type\": \"Strip\"}, {\"type\": \"Replace\", "
                                 "\"pattern\": {\"Regex\": \" +\"}, "
                                 "\"content\": \" \"}]}");
    t = tt_parse(ctx, json, NULL);
    TT_ENC(t, "  hello    world \t", false, 259, 264);
    qp_tokenizer_free(t);
    free(json);
}

/* GPT-2's ByteLevel alone (prefix space, its own regex) and SmolLM's
 * Digits + ByteLevel */
QP_TEST(tokenizer_byte_level_variants)
{
    char *json = tt_byte_doc(byte_more, byte_merges, "",
                             "\"pre_tokenizer\": {\"type\": \"ByteLevel\", "
                             "\"add_prefix_space\": true}");
    struct qp_tokenizer *t = tt_parse(ctx, json, NULL);
    /* " hello" " world": Ġ + hello, Ġworld */
    TT_ENC(t, "hello world", false, 32, 259, 264);
    TT_ENC(t, "12345", false, 32, 270, 271, 53);
    if (t)
        CHECK_STR(qp_tokenizer_pre_name(t), "gpt-2");
    qp_tokenizer_free(t);
    free(json);
    json = tt_byte_doc(byte_more, byte_merges, "",
                       "\"pre_tokenizer\": {\"type\": \"Sequence\", "
                       "\"pretokenizers\": [{\"type\": \"Digits\", "
                       "\"individual_digits\": true}, {\"type\": \"ByteLevel\", "
                       "\"add_prefix_space\": false}]}");
    t = tt_parse(ctx, json, NULL);
    TT_ENC(t, "12345", false, 49, 50, 51, 52, 53);
    TT_ENC(t, "hello world", false, 259, 264);
    if (t) {
        CHECK_STR(qp_tokenizer_pre_name(t), "smollm");
        /* no decoder: tokens joined by spaces, as HF does */
        TT_DEC(t, 0, "hello \xc4\xa0world", 259, 264);
    }
    qp_tokenizer_free(t);
    free(json);
}
