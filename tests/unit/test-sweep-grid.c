/* tests/unit/test-sweep-grid.c: grid specs: brace products in order,
 * canonical names and documents, duplicates, control rows, recipe rows,
 * grid files, and every malformed spec refused with its reason. */
#include <stdlib.h>
#include <string.h>

#include "analysis/sweep-grid.h"
#include "tests/test.h"

/* The expansion of spec joined by ' ', or "ERR: message". */
static char *expanded(const char *spec)
{
    char **items;
    size_t n;
    struct qp_error err;
    static char buf[4096];
    if (qp_sweep_expand(spec, "--grid", &items, &n, &err)) {
        snprintf(buf, sizeof buf, "ERR: %s", err.msg);
        return buf;
    }
    size_t len = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < n && len < sizeof buf; i++) {
        /* a long expansion is cut at the buffer's end */
        int w = snprintf(buf + len, sizeof buf - len, "%s%s", i ? " " : "",
                         items[i]);
        len += w > 0 ? (size_t)w : 0;
    }
    qp_sweep_items_free(items, n);
    return buf;
}

QP_TEST(sweep_grid_braces_are_products_leftmost_slowest)
{
    CHECK_STR(expanded("w{4,8}g{32,128}"), "w4g32 w4g128 w8g32 w8g128");
    CHECK_STR(expanded("w4g128{,@gptq}+a8t"), "w4g128+a8t w4g128@gptq+a8t");
    CHECK_STR(expanded("fp32, w8c ,int:w8c+a8t"), "fp32 w8c int:w8c+a8t");
    /* a comma inside braces does not split entries; braces nest */
    CHECK_STR(expanded("w{4{c,t},8c}+a8t,w2t"), "w4c+a8t w4t+a8t w8c+a8t w2t");
    CHECK_STR(expanded("{w4c,w8c}{,+a{8,16}t}"),
              "w4c w4c+a8t w4c+a16t w8c w8c+a8t w8c+a16t");
    CHECK_STR(expanded("w8c"), "w8c");
}

QP_TEST(sweep_grid_malformed_specs_are_refused)
{
    CHECK_CONTAINS(expanded("w{4,8g32"), "'{' without '}'");
    CHECK_CONTAINS(expanded("w4}g32"), "'}' without '{'");
    CHECK_CONTAINS(expanded("w4c,,w8c"), "empty entry");
    CHECK_CONTAINS(expanded("w4c,"), "empty entry");
    CHECK_CONTAINS(expanded("{,}"), "empty entry");
    /* 8^4 = 4096 is the limit; 8^4 * 2 is over */
    char big[200];
    snprintf(big, sizeof big, "{1,2,3,4,5,6,7,8}{1,2,3,4,5,6,7,8}"
             "{1,2,3,4,5,6,7,8}{1,2,3,4,5,6,7,8}");
    CHECK(strncmp(expanded(big), "ERR", 3) != 0);
    snprintf(big + strlen(big), sizeof big - strlen(big), "{a,b}");
    CHECK_CONTAINS(expanded(big), "more than 4096 entries");
}

static const struct qp_sweep_grid_opts fake_opts = {QP_MODE_FAKE,
                                                    QP_RQ_TFLITE_DOUBLE, false};

QP_TEST(sweep_grid_entries_are_canonical_and_deduplicated)
{
    struct qp_sweep_grid g = {0};
    struct qp_error err;
    REQUIRE_OK(qp_sweep_grid_controls(&g, &fake_opts, &err), &err);
    REQUIRE_OK(qp_sweep_grid_add(&g, "w8c+a8t:minmax,int:w8c+a8t,w8c+a8t,"
                                 "w4g128@gptq:damp0.01,fp32,fake:w8c",
                                 "--grid", &fake_opts, &err), &err);
    /* fp32 and w8c (controls), w8c+a8t, int:w8c+a8t, w4g128@gptq; the
     * repeated w8c+a8t, fp32 and w8c dropped */
    REQUIRE(g.n == 5);
    CHECK_INT(g.dropped, 3);
    CHECK_STR(g.c[0].name, "fp32");
    CHECK_INT(g.c[0].kind, QP_SWEEP_FP32);
    CHECK_INT(g.c[0].mode, QP_MODE_FP32);
    CHECK(g.c[0].control && g.c[1].control && !g.c[2].control);
    CHECK_STR(g.c[1].name, "w8c");
    CHECK_INT(g.c[1].mode, QP_MODE_FAKE);
    CHECK_STR(g.c[2].name, "w8c+a8t");
    CHECK_STR(g.c[3].name, "int:w8c+a8t");
    CHECK_INT(g.c[3].mode, QP_MODE_INT);
    CHECK_STR(g.c[3].scheme_text, "w8c+a8t");
    CHECK_STR(g.c[4].name, "w4g128@gptq");
    /* the documents: the scheme as a recipe's default, with the flavor */
    CHECK_STR(g.c[0].recipe_json, "{\"qprobe_recipe\":1,\"default\":\"fp32\","
                                  "\"layers\":{}}");
    CHECK_STR(g.c[2].recipe_json, "{\"qprobe_recipe\":1,\"default\":\"w8c+a8t\","
                                  "\"requant\":\"tflite-double\",\"layers\":{}}");
    CHECK_STR(g.c[2].recipe_json, g.c[3].recipe_json); /* the mode differs */
    qp_sweep_grid_release(&g);
}

QP_TEST(sweep_grid_requant_and_mode_options)
{
    struct qp_sweep_grid g = {0};
    struct qp_error err;
    struct qp_sweep_grid_opts o = {QP_MODE_INT, QP_RQ_CMSIS_NN_DOUBLE, true};
    REQUIRE_OK(qp_sweep_grid_add(&g, "w8c+a8t,fake:w8c+a8t", "--grid", &o, &err),
               &err);
    REQUIRE(g.n == 2);
    CHECK_STR(g.c[0].name, "int:w8c+a8t");
    CHECK_STR(g.c[1].name, "w8c+a8t");
    CHECK_INT(g.c[0].flavor, QP_RQ_CMSIS_NN_DOUBLE);
    CHECK_CONTAINS(g.c[0].recipe_json, "\"requant\":\"cmsis-nn-double\"");
    /* a mode on fp32, a bad scheme: refused, naming the spec */
    CHECK_INT(qp_sweep_grid_add(&g, "int:fp32", "--grid", &o, &err), QP_E_INVAL);
    CHECK_CONTAINS(err.msg, "fp32 runs in no quantized mode");
    CHECK_INT(qp_sweep_grid_add(&g, "w8c,w9q", "--grid", &o, &err), QP_E_INVAL);
    CHECK_CONTAINS(err.msg, "--grid: scheme 'w9q'");
    CHECK_INT(g.n, 3); /* w8c before the bad entry went in */
    qp_sweep_grid_release(&g);
}

QP_TEST(sweep_grid_recipes_and_files)
{
    struct qp_error err;
    char *r1 = qp_test_path(ctx, "mixed.json"), *r2 = qp_test_path(ctx, "same.json");
    char *gf = qp_test_path(ctx, "grid.txt"), *bad = qp_test_path(ctx, "bad.txt");
    const char *mixed = "{\"qprobe_recipe\": 1, \"default\": \"w4c+a8t\", "
                        "\"requant\": \"ort\", \"layers\": {\"conv1*\": \"fp32\"}}";
    const char *same = "{\"qprobe_recipe\": 1, \"default\": \"w8c+a8t\"}";
    REQUIRE(qp_test_write_file(r1, mixed, strlen(mixed)));
    REQUIRE(qp_test_write_file(r2, same, strlen(same)));
    char text[2048];
    snprintf(text, sizeof text, "# a grid\nw{4,8}c+a8t   # two rows\n\n%s, %s\n"
             "int:%s\n", r1, r2, r1);
    REQUIRE(qp_test_write_file(gf, text, strlen(text)));
    struct qp_sweep_grid g = {0};
    REQUIRE_OK(qp_sweep_grid_add_file(&g, gf, &fake_opts, &err), &err);
    /* w4c+a8t, w8c+a8t, mixed, int:mixed; same.json is w8c+a8t again */
    REQUIRE(g.n == 4);
    CHECK_INT(g.dropped, 1);
    CHECK_INT(g.c[2].kind, QP_SWEEP_RECIPE);
    CHECK_STR(g.c[2].name, r1);
    CHECK_STR(g.c[2].scheme_text, "w4c+a8t");
    CHECK_INT(g.c[2].flavor, QP_RQ_ORT); /* the recipe's own */
    CHECK_CONTAINS(g.c[2].recipe_json, "\"layers\":{\"conv1*\":\"fp32\"}");
    char want[600];
    snprintf(want, sizeof want, "int:%s", r1);
    CHECK_STR(g.c[3].name, want);
    qp_sweep_grid_release(&g);
    /* --requant overrides the recipe's flavor, and changes its document */
    struct qp_sweep_grid_opts o = {QP_MODE_FAKE, QP_RQ_TFLITE_DOUBLE, true};
    REQUIRE_OK(qp_sweep_grid_add(&g, r1, "--grid", &o, &err), &err);
    CHECK_CONTAINS(g.c[0].recipe_json, "\"requant\":\"tflite-double\"");
    qp_sweep_grid_release(&g);
    /* errors name the file and the line */
    const char *b = "w8c\n\n# fine so far\nw8c+a8q\n";
    REQUIRE(qp_test_write_file(bad, b, strlen(b)));
    CHECK(qp_sweep_grid_add_file(&g, bad, &fake_opts, &err) == QP_E_INVAL);
    CHECK_CONTAINS(err.msg, "bad.txt' line 4: scheme 'w8c+a8q'");
    qp_sweep_grid_release(&g);
    REQUIRE(qp_test_write_file(bad, "# nothing\n\n", 11));
    CHECK(qp_sweep_grid_add_file(&g, bad, &fake_opts, &err) == QP_E_INVAL);
    CHECK_CONTAINS(err.msg, "no grid entry");
    qp_sweep_grid_release(&g);
    CHECK(qp_sweep_grid_add(&g, "nope.json", "--grid", &fake_opts, &err) != QP_OK);
    CHECK_CONTAINS(err.msg, "nope.json");
    qp_sweep_grid_release(&g);
    free(r1);
    free(r2);
    free(gf);
    free(bad);
}
