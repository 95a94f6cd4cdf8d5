/* Unit tests of formats/json.c. */
#include <stdlib.h>

#include "formats/json.h"
#include "tests/test.h"

QP_TEST(json_parse_navigate_and_errors)
{
    struct qp_error err;
    struct qp_json *r;
    REQUIRE_OK(qp_json_parse("{\"a\": [1, 2.5, \"x\"], \"b\": {\"c\": true}}",
                             "t", &r, &err), &err);
    const struct qp_json *a = qp_json_get(r, "a");
    CHECK_INT(qp_json_type(a), QP_JSON_ARRAY);
    CHECK_INT(qp_json_size(a), 3);
    double v;
    CHECK(qp_json_num(qp_json_at(a, 1), &v) && v == 2.5);
    const char *s;
    CHECK(qp_json_str(qp_json_at(a, 2), &s) && !strcmp(s, "x"));
    CHECK(!qp_json_str(qp_json_at(a, 0), &s));
    bool b;
    CHECK(qp_json_bool(qp_json_get(qp_json_get(r, "b"), "c"), &b) && b);
    CHECK_STR(qp_json_key(qp_json_at(r, 1)), "b");
    CHECK(qp_json_get(r, "missing") == NULL);
    qp_json_free(r);
    CHECK_FAILS(qp_json_parse("{\n  \"a\": 1,\n  oops\n}", "'r.json'", &r, &err),
                QP_E_FORMAT, &err, "'r.json': invalid JSON at line 3, column ");
    CHECK_FAILS(qp_json_parse("{} trailing", "'x'", &r, &err), QP_E_FORMAT, &err,
                "column 4");
}

QP_TEST(json_build_print_roundtrip)
{
    struct qp_error err;
    struct qp_json *o = qp_json_new_object();
    qp_json_add_num(o, "pi", 3.141592653589793);
    struct qp_json *arr = qp_json_add_array(o, "xs");
    qp_json_add_str(arr, NULL, "a\"b");
    qp_json_add_null(arr, NULL);
    char *text = qp_json_print(o, false);
    struct qp_json *r;
    REQUIRE_OK(qp_json_parse(text, "t", &r, &err), &err);
    double v;
    CHECK(qp_json_num(qp_json_get(r, "pi"), &v) && v == 3.141592653589793);
    const char *s;
    CHECK(qp_json_str(qp_json_at(qp_json_get(r, "xs"), 0), &s) && !strcmp(s, "a\"b"));
    CHECK_INT(qp_json_type(qp_json_at(qp_json_get(r, "xs"), 1)), QP_JSON_NULL);
    free(text);
    qp_json_free(r);
    qp_json_free(o);
}

QP_TEST(json_refuses_repeated_keys_at_any_depth)
{
    struct qp_error err;
    struct qp_json *r = NULL;
    CHECK_FAILS(qp_json_parse("{\"a\": 1, \"b\": 2, \"a\": 3}", "'t.json'", &r,
                              &err),
                QP_E_FORMAT, &err,
                "'t.json': key \"a\" appears twice in the top-level object");
    CHECK(r == NULL);
    CHECK_FAILS(qp_json_parse("{\"x\": {\"rules\": [{\"k\": 1}, {\"k\": 1, "
                              "\"k\": 2}]}}", "'t.json'", &r, &err),
                QP_E_FORMAT, &err,
                "key \"k\" appears twice in \"x\".\"rules\"[1]");
    CHECK_FAILS(qp_json_parse("[[{\"\": 0, \"\": 0}]]", "'t.json'", &r, &err),
                QP_E_FORMAT, &err, "key \"\" appears twice in [0][0]");
    /* the same key in two objects, and keys differing in case, are fine */
    REQUIRE_OK(qp_json_parse("{\"a\": {\"k\": 1}, \"b\": {\"k\": 2}, \"A\": 0}",
                             "t", &r, &err), &err);
    qp_json_free(r);
    /* deep nesting is refused by the parser, not by a stack overflow */
    char deep[6000];
    size_t n = 0;
    for (int i = 0; i < 2500; i++)
        deep[n++] = '[';
    for (int i = 0; i < 2500; i++)
        deep[n++] = ']';
    deep[n] = '\0';
    CHECK_FAILS(qp_json_parse(deep, "'deep.json'", &r, &err), QP_E_FORMAT, &err,
                "'deep.json': invalid JSON");
}
