/* tests/unit/test-scheme-ggml.c: ggml block types as weight schemes
 * (q8_0, q4_0, q4_1, q5_0, q4_k, q6_k), alone and with an activation part. */
#include <string.h>

#include "quant/recipe.h"
#include "quant/scheme.h"
#include "tests/test.h"

QP_TEST(scheme_ggml_types_parse_and_print)
{
    static const struct {
        const char *s;
        enum qp_ggml_type t;
        unsigned bits;
        int64_t block;
        bool asym;
    } cases[] = {
        {"q8_0", QP_GGML_Q8_0, 8, 32, false}, {"q4_0", QP_GGML_Q4_0, 4, 32, false},
        {"q4_1", QP_GGML_Q4_1, 4, 32, true},  {"q5_0", QP_GGML_Q5_0, 5, 32, false},
        {"q4_k", QP_GGML_Q4_K, 4, 256, true}, {"q6_k", QP_GGML_Q6_K, 6, 256, false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct qp_scheme s;
        struct qp_error err;
        REQUIRE_OK(qp_scheme_parse(cases[i].s, &s, NULL, &err), &err);
        CHECK_INT(s.w.family, QP_WFAMILY_GGML);
        CHECK_INT(s.w.ggml, cases[i].t);
        CHECK_INT(s.w.f.bits, cases[i].bits);
        CHECK_INT(s.w.gran, QP_GRAN_GROUP);
        CHECK_INT(s.w.group, cases[i].block);
        CHECK_INT(s.w.f.asym, cases[i].asym);
        CHECK_INT(s.w.algo, QP_WALGO_RTN);
        CHECK(!s.has_acts);
        char buf[QP_SCHEME_MAX + 1];
        qp_scheme_format(&s, buf, sizeof buf);
        CHECK_STR(buf, cases[i].s);
    }
}

QP_TEST(scheme_ggml_with_activations_round_trips)
{
    static const char *const canon[] = {"q4_k+a8d", "q8_0+a8t:kl",
                                        "q4_0+a8tz:pct99.9", "q6_k+a16t"};
    for (size_t i = 0; i < sizeof canon / sizeof canon[0]; i++) {
        struct qp_scheme s, back;
        struct qp_error err;
        REQUIRE_OK(qp_scheme_parse(canon[i], &s, NULL, &err), &err);
        CHECK_INT(s.w.family, QP_WFAMILY_GGML);
        CHECK(s.has_acts);
        char buf[QP_SCHEME_MAX + 1];
        qp_scheme_format(&s, buf, sizeof buf);
        CHECK_STR(buf, canon[i]);
        REQUIRE_OK(qp_scheme_parse(buf, &back, NULL, &err), &err);
        CHECK(back.w.family == s.w.family && back.w.ggml == s.w.ggml &&
              back.w.f.bits == s.w.f.bits && back.w.group == s.w.group &&
              back.a.f.bits == s.a.f.bits && back.a.range == s.a.range &&
              back.a.pct == s.a.pct && back.a.f.asym == s.a.f.asym);
    }
    struct qp_scheme s;
    struct qp_error err;
    REQUIRE_OK(qp_scheme_parse("q5_0+a8d", &s, NULL, &err), &err);
    CHECK(s.a.dynamic && s.a.f.bits == 8 && s.w.ggml == QP_GGML_Q5_0);
    /* an integer scheme stays in the zeroed family */
    REQUIRE_OK(qp_scheme_parse("w4g32", &s, NULL, &err), &err);
    CHECK_INT(s.w.family, QP_WFAMILY_INT);
}

/* s is refused with needle in the message and the caret at byte pos. */
static void check_error(struct qp_test_ctx *ctx, int line, const char *s,
                        const char *needle, int pos)
{
    struct qp_scheme out;
    struct qp_error err = {0};
    int at = 99;
    enum qp_status st = qp_scheme_parse(s, &out, &at, &err);
    if (st != QP_E_INVAL || at != pos || !strstr(err.msg, needle))
        qp_test_failf(ctx, __FILE__, line, "'%s': status %d at %d (expected "
                      "%d at %d), message '%s' (expected '%s')", s, (int)st,
                      at, (int)QP_E_INVAL, pos, err.msg, needle);
}

#define ERR(s, needle, pos) check_error(ctx, __LINE__, s, needle, pos)

QP_TEST(scheme_ggml_errors)
{
    ERR("q4_2", "unknown ggml type 'q4_2' (expected q8_0, q4_0, q4_1, q5_0, "
        "q4_k or q6_k)", 0);
    ERR("q5_k", "unknown ggml type 'q5_k'", 0);
    ERR("q", "unknown ggml type 'q'", 0);
    ERR("q4_kz", "unknown ggml type 'q4_kz'", 0);
    ERR("q4_k@gptq", "a ggml type takes no '@' algorithm", 4);
    ERR("q4_k@mse", "takes no '@'", 4);
    ERR("q8_0g32", "unknown ggml type 'q8_0g32'", 0);
    ERR("q8_0:kl", "unexpected ':' after the weight part", 4);
    ERR("q8_0+", "expected 'a' and the activation bits", 5);
    ERR("q8_0+a8d:kl", "a range applies to static ('t') activations only", 8);
    ERR("Q4_K", "expected 'w'", 0);
}

/* A llama.cpp-style mix (Q4_K_M-like: q6_k for some tensors) as a recipe. */
QP_TEST(scheme_ggml_in_recipes)
{
    static const char text[] =
        "{\"qprobe_recipe\": 1, \"default\": \"q4_k\", \"layers\": {"
        "\"*.ffn_down\": \"q6_k\", \"output\": \"q8_0+a8d\", "
        "\"*.attn_norm\": \"fp32\"}}";
    struct qp_recipe *r;
    struct qp_error err;
    REQUIRE_OK(qp_recipe_parse(text, "'r.json'", &r, &err), &err);
    const struct qp_recipe_rule *m = qp_recipe_lookup(r, "blk.3.ffn_down.weight");
    CHECK(m && !m->fp32 && m->scheme.w.ggml == QP_GGML_Q6_K);
    m = qp_recipe_lookup(r, "output.weight");
    CHECK(m && m->scheme.w.ggml == QP_GGML_Q8_0 && m->scheme.has_acts);
    m = qp_recipe_lookup(r, "blk.0.attn_q.weight");
    CHECK(m && m->scheme.w.family == QP_WFAMILY_GGML &&
          m->scheme.w.ggml == QP_GGML_Q4_K);
    qp_recipe_free(r);
    static const char bad[] =
        "{\"qprobe_recipe\": 1, \"layers\": {\"*.ffn_up\": \"q3_k\"}}";
    CHECK_FAILS(qp_recipe_parse(bad, "'r.json'", &r, &err), QP_E_FORMAT, &err,
                "unknown ggml type 'q3_k'");
}
