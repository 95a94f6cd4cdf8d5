/* Unit tests of quant/recipe: parsing, first-match-wins lookup on globs
 * (tensor and layer names), "fp32", the default, and one test per way a
 * recipe can be malformed (the message names the file and the key). */
#include <stdlib.h>
#include <string.h>

#include "formats/json.h"
#include "quant/recipe.h"
#include "tests/test.h"

static const char *const good =
    "{ \"qprobe_recipe\": 1,\n"
    "  \"default\": \"w4g128@mse\",\n"
    "  \"requant\": \"tflite\",\n"
    "  \"layers\": { \"model.layers.*.mlp.down_proj\": \"w8c\",\n"
    "              \"model.layers.*\": \"w4g32z\",\n"
    "              \"lm_head\": \"fp32\",\n"
    "              \"*/conv?/w\": \"w8tn+a8t:kl\" } }";

QP_TEST(recipe_parses_and_looks_up_first_match)
{
    struct qp_recipe *r;
    struct qp_error err;
    REQUIRE_OK(qp_recipe_parse(good, "'r.json'", &r, &err), &err);
    CHECK(r->has_default && !r->def.fp32);
    CHECK_INT(r->def.scheme.w.group, 128);
    CHECK_INT(r->def.scheme.w.algo, QP_WALGO_MSE);
    CHECK_STR(r->requant, "tflite");
    CHECK_INT(r->flavor, QP_RQ_TFLITE_DOUBLE);
    REQUIRE(r->nrules == 4);
    CHECK_STR(r->rules[0].glob, "model.layers.*.mlp.down_proj");
    CHECK_STR(r->rules[3].glob, "*/conv?/w");
    const struct qp_recipe_rule *m;
    m = qp_recipe_lookup(r, "model.layers.3.mlp.down_proj.weight");
    REQUIRE(m);
    CHECK(m == &r->rules[0]);
    CHECK_INT(m->scheme.w.gran, QP_GRAN_CHANNEL);
    m = qp_recipe_lookup(r, "model.layers.3.self_attn.q_proj.weight");
    CHECK(m == &r->rules[1]);
    CHECK(m->scheme.w.f.asym);
    m = qp_recipe_lookup(r, "lm_head.weight");
    CHECK(m == &r->rules[2] && m->fp32);
    m = qp_recipe_lookup(r, "net/block1/conv2/w");
    CHECK(m == &r->rules[3]);
    CHECK(m->scheme.has_acts && m->scheme.a.range == QP_ARANGE_KL);
    m = qp_recipe_lookup(r, "embed_tokens.weight");
    CHECK(m == &r->def);
    /* the layer name drops one component only */
    m = qp_recipe_lookup(r, "lm_head.weight.extra");
    CHECK(m == &r->def);
    qp_recipe_free(r);

    REQUIRE_OK(qp_recipe_parse("{\"qprobe_recipe\": 1, \"layers\": {\"a*\": "
                               "\"w8c\"}}", "x", &r, &err), &err);
    CHECK(!r->has_default && !r->requant);
    CHECK(qp_recipe_lookup(r, "b.weight") == NULL);
    CHECK(qp_recipe_lookup(r, "abc") == &r->rules[0]);
    qp_recipe_free(r);
    REQUIRE_OK(qp_recipe_parse("{\"qprobe_recipe\": 1.0, \"default\": \"fp32\"}",
                               "x", &r, &err), &err);
    CHECK(r->has_default && r->def.fp32 && r->nrules == 0);
    qp_recipe_free(r);
}

QP_TEST(recipe_glob_matching)
{
    CHECK(qp_recipe_glob_match("*", "a.b/c"));
    CHECK(qp_recipe_glob_match("a.*.w", "a.1.2.w"));
    CHECK(qp_recipe_glob_match("conv[12]", "conv2.weight"));
    CHECK(!qp_recipe_glob_match("conv[12]", "conv3.weight"));
    CHECK(qp_recipe_glob_match("a/b", "a/b/kernel"));
    CHECK(qp_recipe_glob_match("a/b", "a/b.bias"));
    CHECK(!qp_recipe_glob_match("a", "a/b/kernel"));
    CHECK(!qp_recipe_glob_match("w", ".w"));
    CHECK(!qp_recipe_glob_match("lm_head", "lm_head_weight"));
    /* long names work too */
    char name[1200];
    memset(name, 'x', 1000);
    strcpy(name + 1000, ".weight");
    CHECK(qp_recipe_glob_match("x*x", name));
    CHECK(!qp_recipe_glob_match("x*x.w", name));
}

static void check_bad(struct qp_test_ctx *ctx, int line, const char *text,
                      const char *needle)
{
    struct qp_recipe *r = (struct qp_recipe *)1;
    struct qp_error err;
    enum qp_status st = qp_recipe_parse(text, "'r.json'", &r, &err);
    if (st != QP_E_FORMAT || r)
        qp_test_failf(ctx, __FILE__, line, "%s: status %d", text, (int)st);
    else if (!strstr(err.msg, needle) || strncmp(err.msg, "'r.json': ", 10))
        qp_test_failf(ctx, __FILE__, line, "message '%s' lacks '%s'", err.msg,
                      needle);
}

#define BAD(text, needle) check_bad(ctx, __LINE__, text, needle)

QP_TEST(recipe_refuses_malformed_recipes)
{
    BAD("{\"qprobe_recipe\": 1,", "invalid JSON at line 1, column 21");
    BAD("{\"qprobe_recipe\": 1,\n \"default\" \"w8c\"}",
        "invalid JSON at line 2");
    BAD("[1]", "a recipe is a JSON object, got array");
    BAD("\"w8c\"", "a recipe is a JSON object, got string");
    BAD("{}", "missing \"qprobe_recipe\": 1 (the recipe format version)");
    BAD("{\"default\": \"w8c\"}", "missing \"qprobe_recipe\"");
    BAD("{\"qprobe_recipe\": \"1\"}",
        "\"qprobe_recipe\" must be the number 1, got string");
    BAD("{\"qprobe_recipe\": 2}", "\"qprobe_recipe\" is 2, this qprobe reads "
                                   "version 1");
    BAD("{\"qprobe_recipe\": 1, \"defualt\": \"w8c\"}",
        "unknown key \"defualt\" (expected qprobe_recipe, default, requant, "
        "layers, derived, or a '_' comment)");
    BAD("{\"qprobe_recipe\": 1, \"derived\": 3}",
        "\"derived\" must be an object, got number");
    BAD("{\"qprobe_recipe\": 1, \"default\": \"a8t\"}",
        "\"default\" must be a scheme (weights, optionally +activations) or "
        "\"fp32\"");
    BAD("{\"qprobe_recipe\": 1, \"default\": \"fp32+a8t\"}",
        "\"default\" must be a scheme");
    BAD("{\"qprobe_recipe\": 1, \"layers\": {\"x\": \"fp32+fp32\"}}",
        "layers \"x\": write \"fp32\" for a layer kept float");
    BAD("{\"qprobe_recipe\": 1, \"layers\": {\"x\": \"fp32+\"}}",
        "layers \"x\": scheme '': empty activation scheme");
    BAD("{\"qprobe_recipe\": 1, \"layers\": {\"x\": \"a9t\"}}",
        "layers \"x\": scheme 'a9t': bits must be 2..8 or 16, got 9");
    BAD("{\"qprobe_recipe\": 1, \"layers\": {\"x\": \"w8c+fp33\"}}",
        "layers \"x\": scheme 'w8c+fp33': expected 'a'");
    BAD("{\"qprobe_recipe\": 1, \"default\": \"w8c\", \"default\": \"w4c\"}",
        "key \"default\" appears twice");
    BAD("{\"qprobe_recipe\": 1, \"default\": 8}",
        "\"default\": expected a scheme string or \"fp32\", got number");
    BAD("{\"qprobe_recipe\": 1, \"default\": \"w4g0\"}",
        "'r.json': \"default\": scheme 'w4g0': group size must be at least 1\n"
        "  w4g0\n     ^");
    BAD("{\"qprobe_recipe\": 1, \"default\": \"FP32\"}",
        "\"default\": scheme 'FP32': expected 'w'");
    BAD("{\"qprobe_recipe\": 1, \"requant\": 1}",
        "\"requant\" must be a flavor name string, got number");
    BAD("{\"qprobe_recipe\": 1, \"requant\": \"\"}",
        "\"requant\": unknown flavor '' (expected one of tflite-double, ");
    BAD("{\"qprobe_recipe\": 1, \"requant\": \"tflit\"}",
        "\"requant\": unknown flavor 'tflit' (expected one of tflite-double, "
        "tflite-single, ");
    BAD("{\"qprobe_recipe\": 1, \"layers\": [\"w8c\"]}",
        "\"layers\" must be an object of glob: scheme, got array");
    BAD("{\"qprobe_recipe\": 1, \"layers\": {\"fc\": null}}",
        "layers \"fc\": expected a scheme string or \"fp32\", got null");
    BAD("{\"qprobe_recipe\": 1, \"layers\": {\"fc\": \"w8c\", \"conv*\": "
        "\"w4g32+a8\"}}",
        "layers \"conv*\": scheme 'w4g32+a8': expected 't' (static");
    BAD("{\"qprobe_recipe\": 1, \"layers\": {\"\": \"w8c\"}}",
        "layers: a glob is empty");
    BAD("{\"qprobe_recipe\": 1, \"layers\": {\"a\": \"w8c\", \"a\": \"fp32\"}}",
        "key \"a\" appears twice in \"layers\"");
}

QP_TEST(recipe_load_names_the_file)
{
    struct qp_recipe *r;
    struct qp_error err;
    char *p = qp_test_path(ctx, "r.json");
    CHECK_FAILS(qp_recipe_load(p, &r, &err), QP_E_IO, &err, "cannot open");
    REQUIRE(qp_test_write_file(p, good, strlen(good)));
    REQUIRE_OK(qp_recipe_load(p, &r, &err), &err);
    CHECK_INT(r->nrules, 4);
    qp_recipe_free(r);
    const char *bad = "{\"qprobe_recipe\": 1, \"layers\": {\"x\": \"w3q\"}}";
    REQUIRE(qp_test_write_file(p, bad, strlen(bad)));
    CHECK_FAILS(qp_recipe_load(p, &r, &err), QP_E_FORMAT, &err,
                "r.json': layers \"x\": scheme 'w3q': expected granularity");
    free(p);
}

/* Each part of a layer is decided by the first rule that says something
 * about it: activation-only rules do not shadow weight rules. */
QP_TEST(recipe_parts_are_decided_separately)
{
    static const char text[] =
        "{\"qprobe_recipe\": 1, \"default\": \"w4g32+a8t\",\n"
        " \"layers\": {\"soft*\": \"a16t\", \"fc1\": \"w8c+fp32\",\n"
        "  \"fc2\": \"fp32+a8tz:kl\", \"fc*\": \"w6c\", \"head\": \"fp32\"}}";
    struct qp_recipe *r;
    struct qp_error err;
    REQUIRE_OK(qp_recipe_parse(text, "'r'", &r, &err), &err);
    struct qp_wscheme ws;
    struct qp_ascheme as;
    int rule;
    const char *fc1[] = {"fc1.weight"}, *fc2[] = {"fc2.weight"},
               *fc3[] = {"fc3.weight"}, *head[] = {"head.weight"},
               *soft[] = {"softmax_out"}, *other[] = {"conv.w"};
    /* weights */
    CHECK(qp_recipe_weights(r, fc1, 1, &ws, &rule) && ws.f.bits == 8 &&
          ws.gran == QP_GRAN_CHANNEL && rule == 1);
    CHECK(!qp_recipe_weights(r, fc2, 1, &ws, &rule) && rule == 2);
    CHECK(qp_recipe_weights(r, fc3, 1, &ws, &rule) && ws.f.bits == 6 && rule == 3);
    CHECK(!qp_recipe_weights(r, head, 1, &ws, &rule) && rule == 4);
    CHECK(qp_recipe_weights(r, other, 1, &ws, &rule) && ws.f.bits == 4 &&
          ws.gran == QP_GRAN_GROUP && ws.group == 32 && rule == -1);
    /* outputs: "soft*" says a16t; fc1 keeps its output float; fc2 gets a8tz:kl;
     * fc3's rule says nothing about outputs, so the default's a8t */
    CHECK(qp_recipe_output(r, soft, 1, &as, &rule) && as.f.bits == 16 && rule == 0);
    CHECK(!qp_recipe_output(r, fc1, 1, &as, &rule) && rule == 1);
    CHECK(qp_recipe_output(r, fc2, 1, &as, &rule) && as.f.asym &&
          as.range == QP_ARANGE_KL && rule == 2);
    CHECK(qp_recipe_output(r, fc3, 1, &as, &rule) && as.f.bits == 8 && rule == -1);
    CHECK(!qp_recipe_output(r, head, 1, &as, &rule) && rule == 4);
    /* the rule values print back as written, and the whole recipe
     * round-trips through JSON */
    static const char *const want[] = {"a16t", "w8c+fp32", "fp32+a8tz:kl", "w6c",
                                       "fp32"};
    char buf[80];
    for (size_t i = 0; i < r->nrules; i++) {
        qp_recipe_rule_format(&r->rules[i], buf, sizeof buf);
        CHECK_STR(buf, want[i]);
    }
    struct qp_json *doc;
    REQUIRE_OK(qp_recipe_to_json(r, &doc, &err), &err);
    char *txt = qp_json_print(doc, false);
    struct qp_recipe *r2;
    REQUIRE_OK(qp_recipe_parse(txt, "'r2'", &r2, &err), &err);
    REQUIRE(r2->nrules == r->nrules);
    for (size_t i = 0; i < r->nrules; i++) {
        char b2[80];
        qp_recipe_rule_format(&r->rules[i], buf, sizeof buf);
        qp_recipe_rule_format(&r2->rules[i], b2, sizeof b2);
        CHECK_STR(b2, buf);
        CHECK_STR(r2->rules[i].glob, r->rules[i].glob);
    }
    qp_recipe_rule_format(&r2->def, buf, sizeof buf);
    CHECK_STR(buf, "w4g32+a8t");
    free(txt);
    qp_json_free(doc);
    qp_recipe_free(r2);
    qp_recipe_free(r);
}
