/* tests/aarch64/test-json-read.c: the JSON reader the aarch64 test binary
 * links instead of formats/json.c (tests/aarch64/json-read.c): values,
 * escapes and nesting read back as written, every malformed document
 * rejected with its position, and a golden case.json read as the golden
 * tests need it (values from the file, checked by hand). */
#include <stdio.h>

#include "formats/json.h"
#include "tests/test.h"

QP_TEST(aarch64_json_read_values)
{
    static const char doc[] =
        " {\"a\": -12.5e1, \"s\": \"x\\\"\\\\\\/\\b\\f\\n\\r\\t\\u00e9\\u20ac"
        "\\ud83d\\ude00\", \"t\": true, \"f\": false, \"n\": null,\n"
        "  \"arr\": [0, 1e-2, [], {}, [\"\"]], \"o\": {\"k\": 3}, \"a\": 9} ";
    struct qp_json *j;
    struct qp_error err;
    REQUIRE_OK(qp_json_parse(doc, "doc", &j, &err), &err);
    double v = 0;
    const char *s = NULL;
    bool b = false;
    CHECK(qp_json_num(qp_json_get(j, "a"), &v) && v == -125.0); /* first */
    CHECK(qp_json_str(qp_json_get(j, "s"), &s));
    CHECK_STR(s, "x\"\\/\b\f\n\r\t\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80");
    CHECK(qp_json_bool(qp_json_get(j, "t"), &b) && b);
    CHECK(qp_json_bool(qp_json_get(j, "f"), &b) && !b);
    CHECK_INT(qp_json_type(qp_json_get(j, "n")), QP_JSON_NULL);
    CHECK(!qp_json_get(j, "missing"));
    const struct qp_json *arr = qp_json_get(j, "arr");
    CHECK_INT(qp_json_type(arr), QP_JSON_ARRAY);
    CHECK_INT(qp_json_size(arr), 5);
    CHECK(qp_json_num(qp_json_at(arr, 1), &v) && v == 0.01);
    CHECK_INT(qp_json_type(qp_json_at(arr, 2)), QP_JSON_ARRAY);
    CHECK_INT(qp_json_size(qp_json_at(arr, 3)), 0);
    CHECK(!qp_json_at(arr, 5));
    CHECK(!qp_json_num(qp_json_at(arr, 4), &v)); /* an array, not a number */
    CHECK(qp_json_num(qp_json_get(qp_json_get(j, "o"), "k"), &v) && v == 3);
    CHECK_STR(qp_json_key(qp_json_first(j)), "a");
    CHECK_STR(qp_json_key(qp_json_next(qp_json_first(j))), "s");
    CHECK_INT(qp_json_size(j), 8);
    qp_json_free(j);
}

QP_TEST(aarch64_json_read_rejects)
{
    static const struct {
        const char *doc, *where;
    } bad[] = {
        {"", "line 1, column 1"},
        {"{\"a\": 1,}", "column 9"},
        {"{\"a\" 1}", "column 6"},
        {"[1, 2", "column 6"},
        {"[01]", "column 3"},
        {"[1.]", "column 4"},
        {"[1e]", "column 4"},
        {"[-]", "column 3"},
        {"\"abc", "column 1"},
        {"\"\\x\"", "column 2"},
        {"\"\\u12g4\"", "column 2"},
        {"\"\\udc00\"", "column 2"},
        {"\"\\ud800x\"", "column 2"},
        {"\"a\tb\"", "column 3"},
        {"tru", "column 1"},
        {"{} {}", "column 4"},
        {"{\"a\":\n [nul]}", "line 2, column 3"},
    };
    struct qp_error err;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct qp_json *j = (struct qp_json *)1;
        CHECK_FAILS(qp_json_parse(bad[i].doc, "'x.json'", &j, &err),
                    QP_E_FORMAT, &err, bad[i].where);
        CHECK_CONTAINS(err.msg, "'x.json': invalid JSON");
        CHECK(j == NULL);
    }
    /* nesting deeper than the reader's limit fails instead of recursing */
    char deep[400];
    memset(deep, '[', sizeof deep - 1);
    deep[sizeof deep - 1] = '\0';
    struct qp_json *j;
    CHECK_FAILS(qp_json_parse(deep, "deep", &j, &err), QP_E_FORMAT, &err,
                "invalid JSON");
    CHECK_FAILS(qp_json_load("/nonexistent/case.json", &j, &err), QP_E_IO,
                &err, "/nonexistent/case.json");
}

QP_TEST(aarch64_json_read_golden_case)
{
    const char *shared = qp_test_shared_dir();
    REQUIRE(shared);
    char path[512];
    snprintf(path, sizeof path,
             "%s/golden/public/kernels/conv/tflite-double/case_000/case.json",
             shared);
    struct qp_json *j;
    struct qp_error err;
    REQUIRE_OK(qp_json_load(path, &j, &err), &err);
    /* the values in that file */
    double v = 0;
    const char *s = NULL;
    CHECK(qp_json_num(qp_json_get(j, "input_offset"), &v) && v == 19);
    CHECK(qp_json_num(qp_json_get(j, "output_zero_point"), &v) && v == 25);
    CHECK(qp_json_num(qp_json_get(j, "activation_min"), &v) && v == -128);
    CHECK(qp_json_num(qp_json_get(j, "input_scale"), &v) &&
          v == 0.005219968035817146);
    CHECK(qp_json_str(qp_json_get(j, "padding"), &s));
    CHECK_STR(s, "VALID");
    const struct qp_json *fs = qp_json_get(j, "filter_shape");
    CHECK_INT(qp_json_size(fs), 4);
    CHECK(qp_json_num(qp_json_at(fs, 0), &v) && v == 4);
    qp_json_free(j);
}
