/* Unit tests of analysis/align.c: normalisation, the four stages and their
 * order, conflicts, and every malformed map. */
#include <stdlib.h>
#include <string.h>

#include "analysis/align.h"
#include "core/fileio.h"
#include "tests/test.h"

QP_TEST(align_normalise_keys)
{
    static const char *const cases[][2] = {
        {"/conv1/Conv_output_0", "conv1_conv"},
        {"conv1.conv:0", "conv1_conv"},
        {"Conv1-Conv", "conv1_conv"},
        {"_conv1_Conv_output_0", "conv1_conv"},
        {"model/output_0", "model"},
        {"model.Output", "model"},
        {"x:12", "x"},
        {"blk/output7", "blk"},
        {"layer_0", "layer_0"},     /* "_0" alone is not an export suffix */
        {"layer_1", "layer_1"},
        {"output", "output"},       /* nothing before the suffix */
        {"output_0", "output_0"},
        {"a//b..c", "a_b_c"},
        {"A B", "a_b"},
        {"__", "__"},               /* only separators: kept, lower-cased */
        {"x:", "x"},
        {"soft:max", "soft_max"},   /* ':' with no digits is a separator */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *k = qp_align_normalise(cases[i][0]);
        CHECK_STR(k, cases[i][1]);
        free(k);
    }
}

static enum qp_status map_of(const char *json, struct qp_align_map **m,
                             struct qp_error *err)
{
    return qp_align_map_parse(json, "'map.json'", m, err);
}

/* Finds the pair whose reference is r; its test index or -1. */
static long paired(const struct qp_align *a, size_t r, enum qp_align_how *how)
{
    for (size_t i = 0; i < a->npairs; i++)
        if (a->pairs[i].ref == r) {
            if (how)
                *how = a->pairs[i].how;
            return (long)a->pairs[i].test;
        }
    return -1;
}

QP_TEST(align_stages_in_order)
{
    const char *ref[] = {"input", "Stem.Conv", "block1.conv2", "pool", "A", "a",
                         "only_ref"};
    const char *test[] = {"a", "stem/conv:0", "b1_c2", "global_pool", "input",
                          "only_test"};
    struct qp_error err;
    struct qp_align_map *m;
    REQUIRE_OK(map_of("{\"pairs\": {\"pool\": \"global_pool\"}, \"rules\": ["
                      "{\"test\": \"^b([0-9]+)_c([0-9]+)$\", \"ref\": "
                      "\"block\\\\1.conv\\\\2\"}]}", &m, &err), &err);
    struct qp_align a;
    REQUIRE_OK(qp_align_names(ref, 7, test, 6, m, &a, &err), &err);
    enum qp_align_how how = QP_ALIGN_HOW_COUNT;
    CHECK_INT(paired(&a, 0, &how), 4);
    CHECK_INT(how, QP_ALIGN_EXACT);
    CHECK_INT(paired(&a, 1, &how), 1);
    CHECK_INT(how, QP_ALIGN_NORMALISED);
    CHECK_INT(paired(&a, 2, &how), 2);
    CHECK_INT(how, QP_ALIGN_MAP_RULE);
    CHECK_INT(a.pairs[2].rule, 0);
    CHECK_INT(paired(&a, 3, &how), 3);
    CHECK_INT(how, QP_ALIGN_MAP_PAIR);
    /* "a" pairs exactly; "A" would normalise to "a" too, but the test "a"
     * is taken, so "A" stays unpaired */
    CHECK_INT(paired(&a, 5, &how), 0);
    CHECK_INT(how, QP_ALIGN_EXACT);
    CHECK_INT(paired(&a, 4, NULL), -1);
    CHECK_INT(a.npairs, 5);
    for (size_t i = 1; i < a.npairs; i++) /* sorted by reference index */
        CHECK(a.pairs[i - 1].ref < a.pairs[i].ref);
    REQUIRE(a.nref_only == 2);
    CHECK_INT(a.ref_only[0], 4);
    CHECK_INT(a.ref_only[1], 6);
    REQUIRE(a.ntest_only == 1);
    CHECK_INT(a.test_only[0], 5);
    CHECK_INT(a.nnotes, 0);
    qp_align_release(&a);
    qp_align_map_free(m);
}

QP_TEST(align_map_pair_wins_over_exact)
{
    const char *ref[] = {"a", "b"}, *test[] = {"a", "b"};
    struct qp_error err;
    struct qp_align_map *m;
    REQUIRE_OK(map_of("{\"pairs\": {\"a\": \"b\", \"zz\": \"a\", \"b\": \"q\"}}",
                      &m, &err), &err);
    struct qp_align a;
    REQUIRE_OK(qp_align_names(ref, 2, test, 2, m, &a, &err), &err);
    enum qp_align_how how = QP_ALIGN_HOW_COUNT;
    CHECK_INT(paired(&a, 0, &how), 1);
    CHECK_INT(how, QP_ALIGN_MAP_PAIR);
    /* ref b and test a remain: neither exact nor normalised */
    CHECK_INT(a.npairs, 1);
    CHECK_INT(a.nref_only, 1);
    CHECK_INT(a.ntest_only, 1);
    REQUIRE(a.nnotes == 2);
    CHECK_STR(a.notes[0], "map pair 'zz' -> 'a': no tensor 'zz' in the reference");
    CHECK_STR(a.notes[1], "map pair 'b' -> 'q': no tensor 'q' in the test dump");
    qp_align_release(&a);
    qp_align_map_free(m);
}

QP_TEST(align_normalised_ambiguity_pairs_nothing)
{
    const char *ref[] = {"x.y", "X_Y", "k"}, *test[] = {"x/y:0", "K:0"};
    struct qp_error err;
    struct qp_align a;
    REQUIRE_OK(qp_align_names(ref, 3, test, 2, NULL, &a, &err), &err);
    CHECK_INT(a.npairs, 1);
    CHECK_INT(paired(&a, 2, NULL), 1);
    CHECK_INT(a.nref_only, 2);
    CHECK_INT(a.ntest_only, 1);
    REQUIRE(a.nnotes == 1);
    CHECK_STR(a.notes[0], "ambiguous: 'x.y', 'X_Y' (reference) and 'x/y:0' "
                          "(test) all normalise to 'x_y'; none paired");
    qp_align_release(&a);
}

QP_TEST(align_rules_first_match_templates_and_conflicts)
{
    const char *ref[] = {"layers.0.out", "layers.1.out", "Head/Final",
                         "lit\\raw_x"};
    const char *test[] = {"L0", "L1", "dup1", "dup2", "hf", "raw_x", "L9"};
    struct qp_error err;
    struct qp_align_map *m;
    /* rule 0 catches L<n>; rule 1 would too but comes later; rule 2 sends
     * both dup names to one reference (a conflict); rule 3 gives a name
     * that only matches after normalisation; rule 4 writes a literal
     * backslash and the whole name (\0) */
    REQUIRE_OK(map_of("{\"rules\": ["
                      "{\"test\": \"L([0-9]+)\", \"ref\": \"layers.\\\\1.out\"},"
                      "{\"test\": \"L(.*)\", \"ref\": \"never\"},"
                      "{\"test\": \"dup[0-9]\", \"ref\": \"layers.0.out\"},"
                      "{\"test\": \"hf\", \"ref\": \"head.final:0\"},"
                      "{\"test\": \"raw_(x)\", \"ref\": \"lit\\\\\\\\\\\\0\"}]}",
                      &m, &err), &err);
    struct qp_align a;
    REQUIRE_OK(qp_align_names(ref, 4, test, 7, m, &a, &err), &err);
    enum qp_align_how how = QP_ALIGN_HOW_COUNT;
    /* L0 and dup1, dup2 all land on layers.0.out: none of them pairs */
    CHECK_INT(paired(&a, 0, NULL), -1);
    CHECK_INT(paired(&a, 1, &how), 1);
    CHECK_INT(how, QP_ALIGN_MAP_RULE);
    CHECK_INT(paired(&a, 2, &how), 4); /* head.final:0 ~ Head/Final */
    CHECK_INT(how, QP_ALIGN_MAP_RULE);
    CHECK_INT(paired(&a, 3, NULL), 5);
    CHECK_INT(a.npairs, 3);
    int ambiguous = 0, absent = 0;
    for (size_t i = 0; i < a.nnotes; i++) {
        ambiguous += strstr(a.notes[i], "ambiguous: test tensor") != NULL;
        absent += strstr(a.notes[i], "rule 0 maps 'L9' to 'layers.9.out'") != NULL;
    }
    CHECK_INT(ambiguous, 3);
    CHECK_INT(absent, 1);
    qp_align_release(&a);
    qp_align_map_free(m);
}

QP_TEST(align_map_rejects_malformed_files)
{
    static const struct {
        const char *json, *needle;
    } cases[] = {
        {"[1]", "a map is an object"},
        {"{\"pairs\": [\"a\"]}", "\"pairs\" must be an object"},
        {"{\"pairs\": {\"a\": 3}}", "pair \"a\": the test name must be a string"},
        {"{\"pairs\": {\"a\": \"x\", \"b\": \"x\"}}", "test tensor 'x' is paired twice"},
        {"{\"pairs\": {\"a\": \"x\", \"a\": \"y\"}}",
         "key \"a\" appears twice in \"pairs\""},
        {"{\"rules\": {}}", "\"rules\" must be an array"},
        {"{\"rules\": [3]}", "rule 0 must be an object"},
        {"{\"rules\": [{\"test\": \"a\"}]}", "rule 0 needs string members"},
        {"{\"rules\": [{\"test\": \"a\", \"ref\": 1}]}", "rule 0 needs string"},
        {"{\"rules\": [{\"test\": \"a\", \"ref\": \"b\", \"to\": \"c\"}]}",
         "rule 0: unknown member \"to\""},
        {"{\"rules\": [{\"test\": \"a(\", \"ref\": \"b\"}]}", "rule 0: bad regex 'a('"},
        /* what glibc would compile into gigabytes (found by libFuzzer) */
        {"{\"rules\": [{\"test\": \"[A-Z]+++\", \"ref\": \"b\"}]}",
         "rule 0: regex '[A-Z]+++' refused: adjacent repetition operators"},
        {"{\"rules\": [{\"test\": \"x(a*){3}\", \"ref\": \"b\"}, {\"test\": "
         "\"(ab){1,999}\", \"ref\": \"b\"}]}", "rule 1: regex '(ab){1,999}' "
         "refused: a repetition count above 255"},
        {"{\"rules\": [{\"test\": \"a\", \"ref\": \"b\"}, {\"test\": \"(a)\", "
         "\"ref\": \"\\\\2\"}]}", "rule 1: template '\\2' refers to group 2, the "
                                  "regex has 1"},
        {"{\"rules\": [{\"test\": \"a\", \"ref\": \"b\\\\x\"}]}",
         "backslash not followed by a digit"},
        {"{\"map\": {}}", "unknown member \"map\""},
        /* found by libFuzzer: a second "pairs" reused the first's count */
        {"{\"pairs\": {\"a\": \"x\"}, \"pairs\": {\"a\": \"x\"}}",
         "\"pairs\" appears twice"},
        {"{\"rules\": [], \"rules\": []}", "\"rules\" appears twice"},
        {"{\"pairs\": {", "'map.json'"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct qp_error err;
        struct qp_align_map *m = (struct qp_align_map *)1;
        CHECK_FAILS(map_of(cases[i].json, &m, &err), QP_E_FORMAT, &err,
                    cases[i].needle);
        CHECK(m == NULL);
        CHECK_CONTAINS(err.msg, "'map.json'");
    }
    /* comments and empty maps are fine */
    struct qp_error err;
    struct qp_align_map *m;
    CHECK_OK(map_of("{\"_note\": 1, \"rules\": [{\"_why\": \"x\", \"test\": \"a\","
                    " \"ref\": \"b\"}]}", &m, &err), &err);
    qp_align_map_free(m);
    /* escaped and bracketed repetition characters are literals, not operators */
    CHECK_OK(map_of("{\"rules\": [{\"test\": \"a\\\\++[+*]+x{2}\", \"ref\": \"b\"}]}",
                    &m, &err), &err);
    qp_align_map_free(m);
    CHECK_OK(map_of("{}", &m, &err), &err);
    qp_align_map_free(m);
}

QP_TEST(align_map_load_from_file)
{
    struct qp_error err;
    struct qp_align_map *m;
    char *path = qp_test_path(ctx, "m.json");
    const char *json = "{\"pairs\": {\"r\": \"t\"}}";
    REQUIRE(qp_test_write_file(path, json, strlen(json)));
    REQUIRE_OK(qp_align_map_load(path, &m, &err), &err);
    const char *ref[] = {"r"}, *test[] = {"t"};
    struct qp_align a;
    REQUIRE_OK(qp_align_names(ref, 1, test, 1, m, &a, &err), &err);
    CHECK_INT(a.npairs, 1);
    qp_align_release(&a);
    qp_align_map_free(m);
    char *missing = qp_test_path(ctx, "none.json");
    CHECK_FAILS(qp_align_map_load(missing, &m, &err), QP_E_IO, &err, "none.json");
    const char *bad = "{\"rules\": 1}";
    REQUIRE(qp_test_write_file(path, bad, strlen(bad)));
    CHECK_FAILS(qp_align_map_load(path, &m, &err), QP_E_FORMAT, &err, "m.json");
    free(path);
    free(missing);
}
