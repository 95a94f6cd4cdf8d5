/* Unit tests of quant/scheme: the DESIGN.md §4 grammar, canonical printing,
 * and an error (with a caret under the right character) for every way a
 * scheme string can be malformed. */
#include <stdlib.h>
#include <string.h>

#include "quant/scheme.h"
#include "tests/test.h"

static bool parse(const char *s, struct qp_scheme *out)
{
    struct qp_error err;
    return qp_scheme_parse(s, out, NULL, &err) == QP_OK;
}

QP_TEST(scheme_parses_design_examples)
{
    struct qp_scheme s;
    REQUIRE(parse("w8c", &s));
    CHECK_INT(s.w.f.bits, 8);
    CHECK_INT(s.w.gran, QP_GRAN_CHANNEL);
    CHECK(!s.w.f.asym && !s.w.f.narrow && !s.has_acts);
    CHECK_INT(s.w.algo, QP_WALGO_RTN);

    REQUIRE(parse("w4g128", &s));
    CHECK_INT(s.w.f.bits, 4);
    CHECK_INT(s.w.gran, QP_GRAN_GROUP);
    CHECK_INT(s.w.group, 128);

    REQUIRE(parse("w4g32z@gptq", &s));
    CHECK_INT(s.w.group, 32);
    CHECK(s.w.f.asym);
    CHECK_INT(s.w.algo, QP_WALGO_GPTQ);

    REQUIRE(parse("w8c+a8t:kl", &s));
    CHECK(s.has_acts);
    CHECK_INT(s.a.f.bits, 8);
    CHECK(!s.a.dynamic);
    CHECK_INT(s.a.range, QP_ARANGE_KL);

    REQUIRE(parse("w4g32+a8d", &s));
    CHECK(s.a.dynamic);
    CHECK_INT(s.a.range, QP_ARANGE_MINMAX);

    REQUIRE(parse("w16tn@mse+a16tz:pct99.99", &s));
    CHECK_INT(s.w.f.bits, 16);
    CHECK_INT(s.w.gran, QP_GRAN_TENSOR);
    CHECK(s.w.f.narrow && !s.w.f.asym);
    CHECK_INT(s.w.algo, QP_WALGO_MSE);
    CHECK_INT(s.a.f.bits, 16);
    CHECK(s.a.f.asym);
    CHECK_INT(s.a.range, QP_ARANGE_PCT);
    CHECK(s.a.pct == 99.99);

    REQUIRE(parse("w2g1+a3t:ema", &s));
    CHECK_INT(s.w.f.bits, 2);
    CHECK_INT(s.w.group, 1);
    CHECK_INT(s.a.range, QP_ARANGE_EMA);
    REQUIRE(parse("w8c+a8t:mse", &s));
    CHECK_INT(s.a.range, QP_ARANGE_MSE);
    REQUIRE(parse("w4g1073741824", &s));
    CHECK_INT(s.w.group, 1073741824);
}

static bool qformat_eq(const struct qp_qformat *a, const struct qp_qformat *b)
{
    return a->bits == b->bits && a->asym == b->asym && a->narrow == b->narrow;
}

static bool gptq_eq(const struct qp_gptq_options *a,
                    const struct qp_gptq_options *b)
{
    return a->act_order == b->act_order &&
           a->static_groups == b->static_groups && a->mse == b->mse &&
           a->damp == b->damp && a->block == b->block;
}

static bool scheme_eq(const struct qp_scheme *a, const struct qp_scheme *b)
{
    if (!qformat_eq(&a->w.f, &b->w.f) || a->w.gran != b->w.gran ||
        a->w.group != b->w.group || a->w.algo != b->w.algo ||
        !gptq_eq(&a->w.gptq, &b->w.gptq) || a->has_acts != b->has_acts)
        return false;
    return !a->has_acts ||
           (qformat_eq(&a->a.f, &b->a.f) && a->a.dynamic == b->a.dynamic &&
            a->a.range == b->a.range && a->a.pct == b->a.pct);
}

static void check_format(struct qp_test_ctx *ctx, const char *in,
                         const char *want)
{
    struct qp_scheme s;
    char buf[QP_SCHEME_MAX + 1];
    if (!parse(in, &s)) {
        qp_test_failf(ctx, __FILE__, __LINE__, "'%s' does not parse", in);
        return;
    }
    qp_scheme_format(&s, buf, sizeof buf);
    if (strcmp(buf, want))
        qp_test_failf(ctx, __FILE__, __LINE__, "'%s' prints as '%s', expected '%s'",
                      in, buf, want);
}

QP_TEST(scheme_canonical_form_drops_defaults)
{
    static const char *const canon[] = {
        "w8c", "w8t", "w4g32", "w4g32z", "w8cn", "w3g7z@mse", "w4g128@gptq",
        "w8c+a8t:kl", "w4g32+a8d", "w8c+a16tz:pct99.99", "w8c+a8tn:ema",
        "w2t+a2t:pct0.000001", "w5cz+a7tz:mse", "w16g1n"};
    for (size_t i = 0; i < sizeof canon / sizeof canon[0]; i++)
        check_format(ctx, canon[i], canon[i]);
    check_format(ctx, "w8c@rtn", "w8c");
    check_format(ctx, "w8c+a8t:minmax", "w8c+a8t");
    check_format(ctx, "w8c+a8t:pct99.90", "w8c+a8t:pct99.9");
    check_format(ctx, "w8c+a8t:pct100.000", "w8c+a8t:pct100");
}

QP_TEST(scheme_every_combination_round_trips)
{
    static const unsigned bits[] = {2, 3, 4, 5, 6, 7, 8, 16};
    static const double pcts[] = {99.99, 50, 0.5, 100, 99.999999};
    size_t n = 0;
    for (size_t b = 0; b < 8; b++)
        for (int g = 0; g < QP_GRAN_COUNT; g++)
            for (int sym = 0; sym < 3; sym++)
                for (int algo = 0; algo < QP_WALGO_COUNT; algo++)
                    for (int act = -1; act < 2 * QP_ARANGE_COUNT; act++) {
                        struct qp_scheme s, back;
                        memset(&s, 0, sizeof s);
                        s.w.f.bits = bits[b];
                        s.w.gran = (enum qp_gran)g;
                        s.w.group = g == QP_GRAN_GROUP ? 1 + (int64_t)b * 37 : 0;
                        s.w.f.asym = sym == 1;
                        s.w.f.narrow = sym == 2;
                        s.w.algo = (enum qp_walgo)algo;
                        if (algo == QP_WALGO_GPTQ) {
                            static const double damps[] = {0, 0.5, 0.000001,
                                                           0.015, 0.999999};
                            s.w.gptq.act_order = n % 2;
                            s.w.gptq.static_groups =
                                g == QP_GRAN_GROUP && n % 3 == 0;
                            s.w.gptq.mse = n % 5 < 2;
                            s.w.gptq.damp = damps[n % 5];
                            s.w.gptq.block = (int64_t)(n % 4) * 96; /* never 128 */
                        }
                        if (act >= 0) {
                            s.has_acts = true;
                            s.a.f.bits = bits[(b + 3) % 8];
                            s.a.f.asym = sym == 2;
                            s.a.dynamic = act >= QP_ARANGE_COUNT;
                            if (!s.a.dynamic) {
                                s.a.range = (enum qp_arange)act;
                                if (s.a.range == QP_ARANGE_PCT)
                                    s.a.pct = pcts[n % 5];
                            }
                        }
                        char buf[QP_SCHEME_MAX + 1];
                        qp_scheme_format(&s, buf, sizeof buf);
                        if (!parse(buf, &back) || !scheme_eq(&s, &back))
                            qp_test_failf(ctx, __FILE__, __LINE__,
                                          "'%s' does not read back", buf);
                        n++;
                    }
    CHECK(n > 1000);
}

/* The error names the problem, echoes the string, and puts the caret at
 * byte pos of it. */
static void check_error(struct qp_test_ctx *ctx, int line, const char *s,
                        const char *needle, int pos)
{
    struct qp_scheme out;
    struct qp_error err;
    int at = 99;
    if (qp_scheme_parse(s, &out, &at, &err) != QP_E_INVAL) {
        qp_test_failf(ctx, __FILE__, line, "'%s' parsed", s);
        return;
    }
    if (!strstr(err.msg, needle))
        qp_test_failf(ctx, __FILE__, line, "'%s': message '%s' lacks '%s'", s,
                      err.msg, needle);
    if (at != pos)
        qp_test_failf(ctx, __FILE__, line, "'%s': error at %d, expected %d", s,
                      at, pos);
    /* last line: two spaces, pos spaces, caret */
    const char *nl = strrchr(err.msg, '\n');
    char want[128];
    snprintf(want, sizeof want, "\n  %*s^", pos, "");
    if (!nl || strcmp(nl, want))
        qp_test_failf(ctx, __FILE__, line, "'%s': caret line '%s', expected '%s'",
                      s, nl ? nl + 1 : "(none)", want + 1);
    char head[128];
    snprintf(head, sizeof head, "scheme '%.64s': ", s);
    if (strncmp(err.msg, head, strlen(head)) && s[0] && !strchr(s, '\n'))
        qp_test_failf(ctx, __FILE__, line, "'%s': message starts '%.40s'", s,
                      err.msg);
}

#define ERR(s, needle, pos) check_error(ctx, __LINE__, s, needle, pos)

QP_TEST(scheme_errors_point_at_the_offending_character)
{
    ERR("", "empty scheme", 0);
    ERR("x8c", "expected 'w' and the weight bits", 0);
    ERR("W8C", "expected 'w'", 0);
    ERR("a8t", "expected 'w'", 0);
    ERR("w", "expected the number of bits after 'w'", 1);
    ERR("wc", "expected the number of bits after 'w'", 1);
    ERR("w1c", "bits must be 2..8 or 16, got 1", 1);
    ERR("w10c", "bits must be 2..8 or 16, got 10", 1);
    ERR("w32c", "got 32", 1);
    ERR("w08c", "must not have a leading zero", 1);
    ERR("w12345678901c", "has too many digits", 1);
    ERR("w8", "expected granularity 't' (per-tensor), 'c'", 2);
    ERR("w8x", "expected granularity", 2);
    ERR("w4g", "expected a group size after 'g'", 3);
    ERR("w4gz", "expected a group size after 'g'", 3);
    ERR("w4g0", "group size must be at least 1", 3);
    ERR("w4g00", "leading zero", 3);
    ERR("w4g2000000000", "group size must be at most 1073741824", 3);
    ERR("w8czn", "'z' (asymmetric) and 'n' (narrow symmetric) exclude each other", 4);
    ERR("w8cnz", "exclude each other", 4);
    ERR("w8czz", "exclude each other", 4);
    ERR("w8c@", "expected algorithm (rtn, mse or gptq)", 4);
    ERR("w8c@foo", "unknown algorithm 'foo' (expected rtn, mse or gptq)", 4);
    ERR("w8c@GPTQ", "expected algorithm", 4);
    ERR("w8c@gptqx1", "unknown algorithm 'gptqx'", 4);
    ERR("w8c+", "expected 'a' and the activation bits after '+'", 4);
    ERR("w8c+w8c", "expected 'a'", 4);
    ERR("w8c+a", "expected the number of bits after 'a'", 5);
    ERR("w8c+a9t", "bits must be 2..8 or 16, got 9", 5);
    ERR("w8c+a8", "expected 't' (static per-tensor) or 'd' (dynamic per-token)", 6);
    ERR("w8c+a8c", "expected 't' (static per-tensor) or 'd'", 6);
    ERR("w8c+a8d:kl", "a range applies to static ('t') activations only", 7);
    ERR("w8c+a8tzn", "exclude each other", 8);
    ERR("w8c+a8t:", "expected range (minmax, ema, pct P, mse or kl)", 8);
    ERR("w8c+a8t:foo", "unknown range 'foo'", 8);
    ERR("w8c+a8t:pct", "expected a percentile after 'pct'", 11);
    ERR("w8c+a8t:pct.5", "expected a percentile after 'pct'", 11);
    ERR("w8c+a8t:pct0", "percentile must be in (0, 100], got 0", 11);
    ERR("w8c+a8t:pct0.0", "percentile must be in (0, 100], got 0.0", 11);
    ERR("w8c+a8t:pct100.5", "got 100.5", 11);
    ERR("w8c+a8t:pct99.", "expected digits after '.'", 14);
    ERR("w8c+a8t:pct99.1234567", "percentile has more than 6 decimals", 20);
    ERR("w8c+a8t:kl+a8t", "unexpected '+' after the activation part", 10);
    ERR("w8cx", "unexpected 'x' after the weight part", 3);
    ERR("w8c ", "unexpected ' ' after the weight part", 3);
    ERR("w8c+a8tx", "unexpected 'x' after the activation part", 7);
    ERR("w8c\n", "unexpected '?' after the weight part", 3);
    ERR("w8c@mse@mse", "unexpected '@'", 7);
    char longs[80];
    memset(longs, 'w', 70);
    longs[70] = '\0';
    ERR(longs, "longer than 64 characters", 64);
}

QP_TEST(scheme_error_message_is_three_lines)
{
    struct qp_scheme s;
    struct qp_error err;
    CHECK_INT(qp_scheme_parse("w4g0", &s, NULL, &err), QP_E_INVAL);
    CHECK_STR(err.msg, "scheme 'w4g0': group size must be at least 1\n"
                       "  w4g0\n"
                       "     ^");
}

QP_TEST(scheme_gptq_options)
{
    struct qp_scheme s;
    REQUIRE(parse("w4g128@gptq", &s));
    CHECK(!s.w.gptq.act_order && !s.w.gptq.static_groups && !s.w.gptq.mse);
    CHECK(s.w.gptq.damp == 0 && s.w.gptq.block == 0);
    REQUIRE(parse("w4g128z@gptq:blk32,mse,damp0.05,static,act+a8d", &s));
    CHECK(s.w.gptq.act_order && s.w.gptq.static_groups && s.w.gptq.mse);
    CHECK(s.w.gptq.damp == 0.05);
    CHECK_INT(s.w.gptq.block, 32);
    CHECK(s.w.f.asym && s.has_acts && s.a.dynamic);
    REQUIRE(parse("w3c@gptq:damp0.5", &s));
    CHECK(s.w.gptq.damp == 0.5 && !s.w.gptq.act_order);
    /* defaults are stored as zero, whichever way they are written */
    REQUIRE(parse("w4g64@gptq:damp0.010000,blk128", &s));
    CHECK(s.w.gptq.damp == 0 && s.w.gptq.block == 0);

    check_format(ctx, "w4g128@gptq:act", "w4g128@gptq:act");
    check_format(ctx, "w4g128@gptq:act,static,mse,damp0.1,blk64",
                 "w4g128@gptq:act,static,mse,damp0.1,blk64");
    check_format(ctx, "w4g128@gptq:blk64,act", "w4g128@gptq:act,blk64");
    check_format(ctx, "w4g128@gptq:half,act", "w4g128@gptq:act,half");
    check_format(ctx, "w4g128@gptq:damp0.01,blk128", "w4g128@gptq");
    check_format(ctx, "w4g128@gptq:damp0.0200", "w4g128@gptq:damp0.02");
    check_format(ctx, "w8cz@gptq:mse+a8t:pct99.9",
                 "w8cz@gptq:mse+a8t:pct99.9");
}

QP_TEST(scheme_gptq_option_errors)
{
    ERR("w4g128@gptq:", "expected GPTQ option (act, static, mse, damp D, blk N or half)",
        12);
    ERR("w4g128@gptq:act,", "expected GPTQ option", 16);
    ERR("w4g128@gptq:fast", "unknown GPTQ option 'fast'", 12);
    ERR("w4g128@gptq:act,act", "GPTQ option 'act' given twice", 16);
    ERR("w4g128@gptq:damp0.1,damp0.2", "'damp' given twice", 20);
    ERR("w4c@gptq:static", "'static' needs group-wise weights ('g' N)", 9);
    ERR("w4t@gptq:act,static", "'static' needs group-wise", 13);
    ERR("w4g128@gptq:damp", "expected a dampening fraction after 'damp'", 16);
    ERR("w4g128@gptq:damp1", "dampening must be in (0, 1), got 1", 16);
    ERR("w4g128@gptq:damp0", "dampening must be in (0, 1), got 0", 16);
    ERR("w4g128@gptq:damp0.0", "got 0.0", 16);
    ERR("w4g128@gptq:damp00.1", "leading zero", 16);
    ERR("w4g128@gptq:damp0.", "expected digits after '.'", 18);
    ERR("w4g128@gptq:damp0.0000001", "dampening has more than 6 decimals", 24);
    ERR("w4g128@gptq:blk", "expected a block size after 'blk'", 15);
    ERR("w4g128@gptq:blk0", "block size must be at least 1", 15);
    ERR("w4g128@gptq:blk2000000000", "block size must be at most 1073741824",
        15);
    ERR("w4g128@gptq:blk-1", "expected a block size after 'blk'", 15);
    ERR("w4g128@rtn:act", "options after ':' apply to '@gptq' only", 10);
    ERR("w4g128@mse:act", "apply to '@gptq' only", 10);
    ERR("w4g128:act", "unexpected ':' after the weight part", 6);
    ERR("w4g128@gptq:act;static", "unexpected ';' after the weight part", 15);
    ERR("w4g128@gptq:act:static", "unexpected ':' after the weight part", 15);
    ERR("w4g128@gptq:ACT", "expected GPTQ option", 12);
    ERR("w4g128@gptq:act+a8t:", "expected range", 20);
}

QP_TEST(scheme_names)
{
    CHECK_STR(qp_gran_name(QP_GRAN_GROUP), "g");
    CHECK_STR(qp_walgo_name(QP_WALGO_MSE), "mse");
    CHECK_STR(qp_arange_name(QP_ARANGE_KL), "kl");
    CHECK_STR(qp_arange_name(QP_ARANGE_COUNT), "?");
}
