/* Unit tests of formats/tokenizer.h: every malformed or unsupported
 * tokenizer.json (and tokenizer_config.json) is refused with a message
 * naming the file and what is wrong. */
#include <stdlib.h>
#include <string.h>

#include "tests/test.h"
#include "tests/unit/tok-test-util.h"

#define V "\"a\": 0, \"b\": 1, \"ab\": 2"

static void check_bad(struct qp_test_ctx *ctx, const char *json,
                      const char *config, enum qp_status code,
                      const char *needle)
{
    struct qp_error err = {0};
    struct qp_tokenizer *t = (struct qp_tokenizer *)1;
    int st = qp_tokenizer_parse(json, config, "'dir/tokenizer.json'", &t, &err);
    if (st != (int)code)
        qp_test_failf(ctx, __FILE__, __LINE__, "parse returned %d, expected %d "
                      "for %.200s (%s)", st, (int)code, json, err.msg);
    else if (!strstr(err.msg, needle) || !strstr(err.msg, "tokenizer"))
        qp_test_failf(ctx, __FILE__, __LINE__, "message \"%s\" lacks \"%s\" or "
                      "the file", err.msg, needle);
    CHECK(t == NULL);
}

/* A document from its parts (see tt_doc), checked to fail. */
static void bad_doc(struct qp_test_ctx *ctx, const char *vocab,
                    const char *merges, const char *opts, const char *rest,
                    enum qp_status code, const char *needle)
{
    char *json = tt_doc(vocab, merges, opts, rest);
    check_bad(ctx, json, NULL, code, needle);
    free(json);
}

QP_TEST(tokenizer_refuses_malformed_json_and_models)
{
    check_bad(ctx, "{\"model\": ", NULL, QP_E_FORMAT,
              "'dir/tokenizer.json': invalid JSON at line 1");
    check_bad(ctx, "[1, 2]", NULL, QP_E_FORMAT, "not a JSON object");
    check_bad(ctx, "{\"version\": \"1.0\"}", NULL, QP_E_FORMAT,
              "'dir/tokenizer.json': no 'model' object");
    check_bad(ctx, "{\"model\": {\"type\": \"WordPiece\", \"vocab\": {}}}", NULL,
              QP_E_UNSUPPORTED, "model type 'WordPiece' is not supported");
    check_bad(ctx, "{\"model\": {\"type\": \"Unigram\", \"vocab\": []}}", NULL,
              QP_E_UNSUPPORTED, "model type 'Unigram' is not supported");
    check_bad(ctx, "{\"model\": {\"type\": \"BPE\", \"vocab\": [1]}}", NULL,
              QP_E_FORMAT, "'vocab' is not an object");
    bad_doc(ctx, "\"a\": -1", NULL, "", "", QP_E_FORMAT,
            "the id of token 'a' is not an integer");
    bad_doc(ctx, "\"a\": 1.5", NULL, "", "", QP_E_FORMAT, "is not an integer");
    bad_doc(ctx, "\"a\": \"0\"", NULL, "", "", QP_E_FORMAT, "is not an integer");
    bad_doc(ctx, "\"a\": 0, \"b\": 0", NULL, "", "", QP_E_FORMAT,
            "id 0 is given to both 'a' and 'b'");
    bad_doc(ctx, "\"a\": 0, \"b\": 5000000", NULL, "", "", QP_E_FORMAT,
            "token 'b' has id 5000000, far past");
    bad_doc(ctx, "\"a\": 0, \"a\": 1", NULL, "", "", QP_E_FORMAT,
            "key \"a\" appears twice in \"model\".\"vocab\"");
    bad_doc(ctx, V, NULL, "\"unk_token\": \"<unk>\"", "", QP_E_FORMAT,
            "unk_token '<unk>' is not in the vocabulary");
    bad_doc(ctx, V, NULL, "\"dropout\": 0.1", "", QP_E_UNSUPPORTED,
            "dropout");
    bad_doc(ctx, V, NULL, "\"end_of_word_suffix\": \"</w>\"", "",
            QP_E_UNSUPPORTED, "end_of_word_suffix");
    bad_doc(ctx, V, NULL, "\"byte_fallback\": 1", "", QP_E_FORMAT,
            "'byte_fallback' is a number, not a boolean");
}

QP_TEST(tokenizer_refuses_bad_merges)
{
    bad_doc(ctx, V, "[\"a zz\"]", "", "", QP_E_FORMAT,
            "merge 0 (\"a\" + \"zz\") refers to 'zz', which is not in the "
            "vocabulary");
    bad_doc(ctx, "\"a\": 0, \"b\": 1", "[\"a b\"]", "", "", QP_E_FORMAT,
            "refers to 'ab'");
    bad_doc(ctx, V, "[\"a b\", [\"q\", \"b\"]]", "", "", QP_E_FORMAT,
            "merge 1 (\"q\" + \"b\") refers to 'q'");
    bad_doc(ctx, V, "[\"ab\"]", "", "", QP_E_FORMAT,
            "merge 0 (\"ab\") is not two tokens separated by one space");
    bad_doc(ctx, V, "[\"a b c\"]", "", "", QP_E_FORMAT, "separated by one space");
    bad_doc(ctx, V, "[[\"a\"]]", "", "", QP_E_FORMAT,
            "merge 0 is neither \"a b\" nor [\"a\", \"b\"]");
    bad_doc(ctx, V, "{}", "", "", QP_E_FORMAT, "'merges' is not an array");
}

QP_TEST(tokenizer_refuses_bad_components)
{
    bad_doc(ctx, V, NULL, "", "\"pre_tokenizer\": {\"type\": \"Split\", "
            "\"pattern\": {\"Regex\": \"(a\"}, \"behavior\": \"Isolated\"}",
            QP_E_FORMAT, "pre_tokenizer Split: bad regex \"(a\": missing closing "
            "parenthesis at offset 2");
    bad_doc(ctx, V, NULL, "", "\"pre_tokenizer\": {\"type\": \"Split\", "
            "\"pattern\": {\"Regex\": \"a\"}, \"behavior\": \"Sideways\"}",
            QP_E_FORMAT, "unknown behavior 'Sideways'");
    bad_doc(ctx, V, NULL, "", "\"pre_tokenizer\": {\"type\": \"Split\", "
            "\"pattern\": {\"Glob\": \"a\"}, \"behavior\": \"Isolated\"}",
            QP_E_FORMAT, "'pattern' must be {\"String\": ...} or {\"Regex\": ...}");
    bad_doc(ctx, V, NULL, "", "\"pre_tokenizer\": {\"type\": \"Whitespace\"}",
            QP_E_UNSUPPORTED, "pre_tokenizer type 'Whitespace' is not supported");
    bad_doc(ctx, V, NULL, "", "\"pre_tokenizer\": {\"type\": \"Sequence\", "
            "\"pretokenizers\": [{\"type\": \"ByteLevel\"}, {\"type\": "
            "\"Digits\"}]}", QP_E_UNSUPPORTED, "Digits after ByteLevel");
    bad_doc(ctx, V, NULL, "", "\"pre_tokenizer\": {\"type\": \"Metaspace\", "
            "\"replacement\": \"ab\"}", QP_E_FORMAT,
            "'replacement' must be one character");
    bad_doc(ctx, V, NULL, "", "\"normalizer\": {\"type\": \"Lowercase\"}",
            QP_E_UNSUPPORTED, "normalizer type 'Lowercase' is not supported");
    bad_doc(ctx, V, NULL, "", "\"normalizer\": {\"type\": \"Sequence\"}",
            QP_E_FORMAT, "has no 'normalizers' array");
    bad_doc(ctx, V, NULL, "", "\"normalizer\": {\"type\": \"Replace\", "
            "\"pattern\": {\"String\": \"\"}}", QP_E_FORMAT,
            "normalizer Replace: 'pattern' is an empty string");
    bad_doc(ctx, V, NULL, "", "\"decoder\": {\"type\": \"WordPiece\"}",
            QP_E_UNSUPPORTED, "decoder type 'WordPiece' is not supported");
    bad_doc(ctx, V, NULL, "", "\"decoder\": {\"type\": \"Strip\", \"start\": -1, "
            "\"stop\": 0}", QP_E_FORMAT, "decoder Strip: 'start' is not an integer");
    bad_doc(ctx, V, NULL, "", "\"post_processor\": {\"type\": \"BertProcessing\"}",
            QP_E_FORMAT, "post_processor BertProcessing: cls");
    bad_doc(ctx, V, NULL, "", "\"post_processor\": {\"type\": \"Magic\"}",
            QP_E_UNSUPPORTED, "post_processor type 'Magic' is not supported");
    bad_doc(ctx, V, NULL, "", "\"post_processor\": {\"type\": "
            "\"TemplateProcessing\", \"single\": [{\"SpecialToken\": {\"id\": "
            "\"<s>\"}}], \"special_tokens\": {}}", QP_E_FORMAT,
            "special token '<s>' is not in 'special_tokens'");
    bad_doc(ctx, V, NULL, "", "\"post_processor\": {\"type\": "
            "\"TemplateProcessing\", \"single\": [{\"SpecialToken\": {\"id\": "
            "\"<s>\"}}], \"special_tokens\": {\"<s>\": {\"ids\": [7]}}}",
            QP_E_FORMAT, "post_processor: id 7 is not a token");
    bad_doc(ctx, V, NULL, "", "\"post_processor\": {\"type\": "
            "\"TemplateProcessing\", \"single\": [{\"Sequence\": {\"id\": "
            "\"B\"}}]}", QP_E_FORMAT, "one Sequence A");
}

QP_TEST(tokenizer_refuses_bad_added_tokens_and_config)
{
    bad_doc(ctx, V, NULL, "", "\"added_tokens\": [{\"id\": 0, \"content\": "
            "\"<s>\"}]", QP_E_FORMAT, "added token 0: id 0 is token 'a' in the "
            "vocabulary");
    bad_doc(ctx, V, NULL, "", "\"added_tokens\": [{\"id\": 3}]", QP_E_FORMAT,
            "added token 0: no 'content'");
    bad_doc(ctx, V, NULL, "", "\"added_tokens\": [{\"id\": 3, \"content\": "
            "\"x\"}, {\"content\": \"y\"}]", QP_E_FORMAT,
            "added token 1: its 'id' is not an integer");
    bad_doc(ctx, V, NULL, "", "\"added_tokens\": {}", QP_E_FORMAT,
            "'added_tokens' is not an array");
    char *json = tt_doc(V, "[\"a b\"]", "", "");
    check_bad(ctx, json, "{\"bos_token\": \"<s>\"}", QP_E_FORMAT,
              "the tokenizer_config.json beside 'dir/tokenizer.json': "
              "bos_token '<s>' is not a token of the tokenizer");
    check_bad(ctx, json, "{\"eos_token\": 3}", QP_E_FORMAT,
              "'eos_token' is neither a string nor an object");
    check_bad(ctx, json, "{\"add_bos_token\": \"yes\"}", QP_E_FORMAT,
              "'add_bos_token' is not a boolean");
    check_bad(ctx, json, "{\"tokenizer_class\": \"LlamaTokenizer\"}",
              QP_E_FORMAT, "add_bos_token is true but there is no bos_token");
    check_bad(ctx, json, "{\"a\": ", QP_E_FORMAT,
              "the tokenizer_config.json beside 'dir/tokenizer.json': invalid "
              "JSON");
    /* a pad_token that is not a token is only ignored */
    struct qp_tokenizer *t = tt_parse(ctx, json, "{\"pad_token\": \"<pad>\"}");
    if (t)
        CHECK_INT(qp_tokenizer_pad_id(t), -1);
    qp_tokenizer_free(t);
    free(json);
}

QP_TEST(tokenizer_load_names_the_file)
{
    struct qp_error err = {0};
    struct qp_tokenizer *t;
    const char *dir = qp_test_tmpdir(ctx);
    CHECK_FAILS(qp_tokenizer_load(dir, &t, &err), QP_E_IO, &err,
                "has no tokenizer.json");
    char *p = qp_test_path(ctx, "tokenizer.json");
    REQUIRE(qp_test_write_file(p, "{\"model\": {\"type\": \"WordLevel\"}}", 33));
    CHECK_FAILS(qp_tokenizer_load(dir, &t, &err), QP_E_UNSUPPORTED, &err,
                "tokenizer.json': model type 'WordLevel' is not supported");
    CHECK(strstr(err.msg, dir) != NULL);
    char *q = qp_test_path(ctx, "missing.json");
    CHECK_FAILS(qp_tokenizer_load(q, &t, &err), QP_E_IO, &err, "missing.json");
    free(p);
    free(q);
}
