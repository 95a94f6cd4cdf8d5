/* Unit tests of analysis/export-llm.c: the Hugging Face -> llama.cpp name
 * map, llama-quantize arguments (exact text for a recipe written in both
 * spellings; every regex compiled and matched against every tensor name:
 * each tensor matches exactly one line, of the recipe's type; the bundled
 * tiny Llama's shapes give llama.cpp's fallbacks), GPTQModel's dynamic
 * config (exact document; its regexes decide every module as the globs
 * do, '?' and bracket sets included), unused rules, --strict, and the
 * refusals. */
#include <regex.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "analysis/export-llm.h"
#include "core/fileio.h"
#include "formats/json.h"
#include "tests/test.h"

static const char *TINY = "data/llama-tiny";

static struct qp_recipe *recipe_of(struct qp_test_ctx *ctx, const char *text)
{
    struct qp_error err;
    struct qp_recipe *r = NULL;
    if (qp_recipe_parse(text, "'recipe'", &r, &err))
        qp_test_failf(ctx, __FILE__, __LINE__, "%s", err.msg);
    return r;
}

QP_TEST(export_llm_names_map_to_llama_cpp)
{
    static const char *const pairs[][2] = {
        {"model.embed_tokens.weight", "token_embd.weight"},
        {"lm_head.weight", "output.weight"},
        {"model.norm.weight", "output_norm.weight"},
        {"model.layers.0.self_attn.q_proj.weight", "blk.0.attn_q.weight"},
        {"model.layers.12.self_attn.k_proj.weight", "blk.12.attn_k.weight"},
        {"model.layers.3.self_attn.v_proj.weight", "blk.3.attn_v.weight"},
        {"model.layers.3.self_attn.o_proj.weight", "blk.3.attn_output.weight"},
        {"model.layers.7.mlp.gate_proj.weight", "blk.7.ffn_gate.weight"},
        {"model.layers.7.mlp.up_proj.weight", "blk.7.ffn_up.weight"},
        {"model.layers.7.mlp.down_proj.weight", "blk.7.ffn_down.weight"},
        {"model.layers.1.input_layernorm.weight", "blk.1.attn_norm.weight"},
        {"model.layers.1.post_attention_layernorm.weight", "blk.1.ffn_norm.weight"},
        {"model.layers.2.self_attn.q_norm.weight", "blk.2.attn_q_norm.weight"},
        {"model.layers.2.self_attn.k_proj.bias", "blk.2.attn_k.bias"},
    };
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
        char buf[128];
        CHECK(qp_llama_name_of(pairs[i][0], buf, sizeof buf));
        CHECK_STR(buf, pairs[i][1]);
    }
    char buf[128];
    CHECK(!qp_llama_name_of("model.layers.x.mlp.down_proj.weight", buf, sizeof buf));
    CHECK(!qp_llama_name_of("model.layers.01.mlp.down_proj.weight", buf, sizeof buf));
    CHECK(!qp_llama_name_of("model.layers.1.mlp.fc.weight", buf, sizeof buf));
    CHECK(!qp_llama_name_of("vision.proj.weight", buf, sizeof buf));
}

static const char *LLAMA_RECIPE =
    "{\"qprobe_recipe\": 1, \"default\": \"q4_k\", \"layers\": {"
    "\"model.layers.0.mlp.down_proj\": \"q6_k\", \"blk.2.attn_v\": \"q8_0\", "
    "\"*.self_attn.v_proj\": \"q6_k\", \"lm_head\": \"q8_0\", "
    "\"model.layers.1.*\": \"fp32\"}}";

static const char *LLAMA_EXPECTED =
    "--pure\n"
    "--token-embedding-type q4_K\n"
    "--output-tensor-type q8_0\n"
    "--tensor-type ^blk\\.(1)\\.attn_q\\.weight$=f32\n"
    "--tensor-type ^blk\\.(0|2)\\.attn_q\\.weight$=q4_K\n"
    "--tensor-type ^blk\\.(1)\\.attn_k\\.weight$=f32\n"
    "--tensor-type ^blk\\.(0|2)\\.attn_k\\.weight$=q4_K\n"
    "--tensor-type ^blk\\.(2)\\.attn_v\\.weight$=q8_0\n"
    "--tensor-type ^blk\\.(0|1)\\.attn_v\\.weight$=q6_K\n"
    "--tensor-type ^blk\\.(1)\\.attn_output\\.weight$=f32\n"
    "--tensor-type ^blk\\.(0|2)\\.attn_output\\.weight$=q4_K\n"
    "--tensor-type ^blk\\.(1)\\.ffn_gate\\.weight$=f32\n"
    "--tensor-type ^blk\\.(0|2)\\.ffn_gate\\.weight$=q4_K\n"
    "--tensor-type ^blk\\.(1)\\.ffn_up\\.weight$=f32\n"
    "--tensor-type ^blk\\.(0|2)\\.ffn_up\\.weight$=q4_K\n"
    "--tensor-type ^blk\\.(1)\\.ffn_down\\.weight$=f32\n"
    "--tensor-type ^blk\\.(2)\\.ffn_down\\.weight$=q4_K\n"
    "--tensor-type ^blk\\.(0)\\.ffn_down\\.weight$=q6_K\n";

QP_TEST(export_llama_tensor_type_exact_and_exclusive)
{
    struct qp_error err;
    struct qp_recipe *r = recipe_of(ctx, LLAMA_RECIPE);
    REQUIRE(r);
    char *out = qp_test_path(ctx, "tt.txt");
    struct qp_export_llm_opts o = {NULL, r, "recipe", 3, false};
    struct qp_export_result res = {0};
    REQUIRE_OK(qp_export_llama_tensor_type(&o, out, &res, &err), &err);
    CHECK_CONTAINS(res.summary, "15 --tensor-type lines over 23 tensors of 3 layers");
    CHECK_CONTAINS(res.summary, "llama-quantize $(cat ");
    CHECK_CONTAINS(res.summary, " Q4_K_S");
    char *text = NULL;
    REQUIRE_OK(qp_read_file(out, 1 << 20, &text, NULL, &err), &err);
    CHECK_STR(text, LLAMA_EXPECTED);
    /* every llama.cpp tensor name matches exactly one regex, of its type */
    static const char *const kinds[] = {"attn_q", "attn_k", "attn_v",
                                        "attn_output", "ffn_gate", "ffn_up",
                                        "ffn_down"};
    static const char *const want[3][7] = {
        {"q4_K", "q4_K", "q6_K", "q4_K", "q4_K", "q4_K", "q6_K"},
        {"f32", "f32", "q6_K", "f32", "f32", "f32", "f32"},
        {"q4_K", "q4_K", "q8_0", "q4_K", "q4_K", "q4_K", "q4_K"},
    };
    regex_t re[32];
    char types[32][16];
    int n = 0;
    for (char *line = text; line && *line && n < 32;) {
        char *end = strchr(line, '\n');
        *end = '\0';
        if (!strncmp(line, "--tensor-type ", 14)) {
            char *eq = strrchr(line, '=');
            *eq = '\0';
            snprintf(types[n], sizeof types[n], "%s", eq + 1);
            CHECK(!regcomp(&re[n], line + 14, REG_EXTENDED | REG_NOSUB));
            n++;
        }
        line = end + 1;
    }
    CHECK_INT(n, 15);
    for (int l = 0; l < 4; l++) /* layer 3 is not in the model: no match */
        for (int k = 0; k < 7; k++) {
            char name[64];
            snprintf(name, sizeof name, "blk.%d.%s.weight", l, kinds[k]);
            int hits = 0, hit = -1;
            for (int i = 0; i < n; i++)
                if (!regexec(&re[i], name, 0, NULL, 0)) {
                    hits++;
                    hit = i;
                }
            CHECK_INT(hits, l < 3 ? 1 : 0);
            if (l < 3 && hits == 1 && strcmp(types[hit], want[l][k]))
                qp_test_failf(ctx, __FILE__, __LINE__, "%s: %s, expected %s", name,
                              types[hit], want[l][k]);
            /* a name that merely contains the pattern does not match */
            snprintf(name, sizeof name, "xblk.%d.%s.weight.1", l, kinds[k]);
            for (int i = 0; i < n; i++)
                CHECK(regexec(&re[i], name, 0, NULL, 0) != 0);
        }
    for (int i = 0; i < n; i++)
        regfree(&re[i]);
    free(text);
    free(out);
    qp_export_result_release(&res);
    qp_recipe_free(r);
}

QP_TEST(export_llama_tensor_type_on_the_tiny_llama)
{
    struct qp_error err;
    /* the embedding's rows of 128 take q8_0, not the default q4_k */
    char text0[1024];
    snprintf(text0, sizeof text0, "%.*s, \"model.embed_tokens\": \"q8_0\"}}",
             (int)strlen(LLAMA_RECIPE) - 2, LLAMA_RECIPE);
    struct qp_recipe *r = recipe_of(ctx, text0);
    REQUIRE(r);
    char *out = qp_test_path(ctx, "tiny.txt");
    struct qp_export_llm_opts o = {TINY, r, "recipe", 0, false};
    struct qp_export_result res = {0};
    REQUIRE_OK(qp_export_llama_tensor_type(&o, out, &res, &err), &err);
    /* 4 layers of 9 tensors, embed and final norm; tied embeddings: no
     * lm_head, so no --output-tensor-type, and that rule is unused */
    CHECK_CONTAINS(res.summary, "over 29 tensors of 4 layers");
    CHECK_CONTAINS(res.notes, "");
    REQUIRE(res.unused);
    CHECK_INT(res.n_unused, 1);
    CHECK(res.unused[3]);
    char *text = NULL;
    REQUIRE_OK(qp_read_file(out, 1 << 20, &text, NULL, &err), &err);
    CHECK(!strstr(text, "--output-tensor-type"));
    CHECK_CONTAINS(text, "--tensor-type ^blk\\.(0|2|3)\\.attn_q\\.weight$=q4_K\n");
    /* hidden 128 and intermediate 344: rows llama.cpp cannot block */
    CHECK_CONTAINS(res.notes, "blk.0.attn_q.weight and 14 more: rows of 128 values "
                   "are not a multiple of q4_K's block: llama.cpp falls back to q5_0");
    CHECK_CONTAINS(res.notes, "blk.0.ffn_down.weight and 0 more: rows of 344 values "
                   "are not a multiple of q6_K's block: llama.cpp falls back to f16");
    /* the embedding at q4_k would fail in llama-quantize: refused */
    struct qp_recipe *emb = recipe_of(ctx, LLAMA_RECIPE);
    o.recipe = emb;
    char *out3 = qp_test_path(ctx, "emb.txt");
    CHECK_FAILS(qp_export_llama_tensor_type(&o, out3, &res, &err), QP_E_UNSUPPORTED,
                &err, "tensor 'model.embed_tokens.weight' (token_embd.weight): rows of "
                "128 values are not a multiple of q4_K's block, and llama-quantize's "
                "--token-embedding-type has no fallback: give it q5_0");
    qp_export_result_release(&res);
    qp_recipe_free(emb);
    free(out3);
    o.recipe = r;
    free(text);
    qp_export_result_release(&res);
    /* --strict: the unused rule is an error, and nothing is written */
    char *out2 = qp_test_path(ctx, "strict.txt");
    o.strict = true;
    CHECK_FAILS(qp_export_llama_tensor_type(&o, out2, &res, &err), QP_E_NOTFOUND,
                &err, "layers \"lm_head\" matches no tensor");
    struct stat sb;
    CHECK(stat(out2, &sb) != 0);
    qp_export_result_release(&res);
    /* an integer scheme is not a llama.cpp type */
    struct qp_recipe *bad = recipe_of(ctx, "{\"qprobe_recipe\": 1, \"layers\": "
                                      "{\"*.down_proj\": \"w8c\"}}");
    o.recipe = bad;
    o.strict = false;
    CHECK_FAILS(qp_export_llama_tensor_type(&o, out2, &res, &err), QP_E_UNSUPPORTED,
                &err, "tensor 'model.layers.0.mlp.down_proj.weight' "
                "(blk.0.ffn_down.weight): w8c is not one of llama.cpp's types; the "
                "nearest is q8_0");
    CHECK(stat(out2, &sb) != 0);
    /* no model and no layer count */
    o.model = NULL;
    CHECK_FAILS(qp_export_llama_tensor_type(&o, out2, &res, &err), QP_E_INVAL,
                &err, "give MODEL (a checkpoint) or --layers N");
    qp_export_result_release(&res);
    qp_recipe_free(bad);
    qp_recipe_free(r);
    free(out);
    free(out2);
}

static const char *GPTQ_RECIPE =
    "{\"qprobe_recipe\": 1, \"default\": \"w4g128\", \"layers\": {"
    "\"model.layers.0.mlp.down_proj\": \"w8c\", \"*.self_attn.v_proj\": \"w4g32z\", "
    "\"model.layers.[2-3].*\": \"fp32\", \"*.q_proj.weight\": \"w3g64\", "
    "\"model.layers.?.mlp.up_proj\": \"w2g16\", \"*.self_attn.[!q]_proj\": \"w8g64\"}}";

static double num_at(const struct qp_json *o, const char *k)
{
    double v = -999;
    qp_json_num(qp_json_get(o, k), &v);
    return v;
}

QP_TEST(export_gptqmodel_dynamic_exact_and_checked)
{
    struct qp_error err;
    struct qp_recipe *r = recipe_of(ctx, GPTQ_RECIPE);
    REQUIRE(r);
    char *out = qp_test_path(ctx, "g.json");
    struct qp_export_llm_opts o = {TINY, r, "recipe", 0, false};
    struct qp_export_result res = {0};
    REQUIRE_OK(qp_export_gptqmodel_dynamic(&o, out, &res, &err), &err);
    CHECK_CONTAINS(res.summary, "5 overrides and 1 skip, checked on every module");
    struct qp_json *root;
    REQUIRE_OK(qp_json_load(out, &root, &err), &err);
    CHECK(num_at(root, "bits") == 4 && num_at(root, "group_size") == 128);
    bool b = false;
    CHECK(qp_json_bool(qp_json_get(root, "sym"), &b) && b);
    CHECK(qp_json_bool(qp_json_get(root, "desc_act"), &b) && !b);
    const struct qp_json *dyn = qp_json_get(root, "dynamic");
    static const struct {
        const char *key;
        double bits, group;
        int sym;
    } want[] = {
        {"+:^(model\\.layers\\.0\\.mlp\\.down_proj)$", 8, -1, 1},
        {"+:^(.*\\.self_attn\\.v_proj)$", 4, 32, 0},
        {"-:^(model\\.layers\\.[2-3]\\..*)$", 0, 0, -1},
        {"+:^(.*\\.q_proj)$", 3, 64, 1},
        {"+:^(model\\.layers\\..\\.mlp\\.up_proj)$", 2, 16, 1},
        {"+:^(.*\\.self_attn\\.[^q]_proj)$", 8, 64, 1},
    };
    REQUIRE(qp_json_size(dyn) == sizeof want / sizeof want[0]);
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        const struct qp_json *e = qp_json_at(dyn, i);
        CHECK_STR(qp_json_key(e), want[i].key);
        if (want[i].sym < 0) {
            CHECK_INT(qp_json_size(e), 0);
            continue;
        }
        CHECK(num_at(e, "bits") == want[i].bits);
        CHECK(num_at(e, "group_size") == want[i].group);
        CHECK(qp_json_bool(qp_json_get(e, "sym"), &b) && b == (want[i].sym == 1));
    }
    /* the regexes decide as the globs do on names beyond the tiny model */
    static const char *const modules[] = {
        "model.layers.0.mlp.down_proj", "model.layers.1.mlp.down_proj",
        "model.layers.10.self_attn.v_proj", "model.layers.2.mlp.up_proj",
        "model.layers.7.mlp.up_proj", "model.layers.17.mlp.up_proj",
        "model.layers.5.self_attn.q_proj", "model.layers.5.self_attn.k_proj",
        "model.layers.5.self_attn.o_proj", "model.layers.5.mlp.gate_proj"};
    for (size_t m = 0; m < sizeof modules / sizeof modules[0]; m++) {
        int by_regex = -1; /* the base config: the default */
        for (size_t i = 0; i < qp_json_size(dyn) && by_regex < 0; i++) {
            regex_t re;
            REQUIRE(!regcomp(&re, qp_json_key(qp_json_at(dyn, i)) + 2,
                             REG_EXTENDED | REG_NOSUB));
            if (!regexec(&re, modules[m], 0, NULL, 0))
                by_regex = (int)i; /* dynamic keys follow the rules in order */
            regfree(&re);
        }
        char name[128];
        snprintf(name, sizeof name, "%s.weight", modules[m]);
        const char *names[1] = {name};
        struct qp_wscheme ws;
        int by_glob = -3;
        qp_recipe_weights(r, names, 1, &ws, &by_glob);
        if (by_regex != by_glob)
            qp_test_failf(ctx, __FILE__, __LINE__, "%s: regex %d, glob %d",
                          modules[m], by_regex, by_glob);
    }
    qp_json_free(root);
    qp_export_result_release(&res);
    qp_recipe_free(r);
    free(out);
}

QP_TEST(export_gptqmodel_dynamic_fp32_default_and_refusals)
{
    struct qp_error err;
    struct qp_recipe *r = recipe_of(ctx, "{\"qprobe_recipe\": 1, \"default\": "
                                    "\"fp32\", \"layers\": {\"*.down_proj\": "
                                    "\"w4g128z\"}}");
    REQUIRE(r);
    char *out = qp_test_path(ctx, "g.json");
    struct qp_export_llm_opts o = {NULL, r, "recipe", 0, false};
    struct qp_export_result res = {0};
    REQUIRE_OK(qp_export_gptqmodel_dynamic(&o, out, &res, &err), &err);
    struct qp_json *root;
    REQUIRE_OK(qp_json_load(out, &root, &err), &err);
    bool b = true;
    CHECK(num_at(root, "bits") == 4 && num_at(root, "group_size") == 128);
    CHECK(qp_json_bool(qp_json_get(root, "sym"), &b) && !b);
    const struct qp_json *dyn = qp_json_get(root, "dynamic");
    CHECK_INT(qp_json_size(dyn), 2);
    CHECK_STR(qp_json_key(qp_json_at(dyn, 0)), "+:^(.*\\.down_proj)$");
    CHECK_STR(qp_json_key(qp_json_at(dyn, 1)), "-:.*");
    qp_json_free(root);
    qp_export_result_release(&res);
    qp_recipe_free(r);
    static const struct {
        const char *scheme, *needle;
    } cases[] = {
        {"w4t", "layers: w4t has no GPTQModel form"},
        {"w5g128", "layers: w5g128 has no GPTQModel form"},
        {"w4g128n", "layers: w4g128n has no GPTQModel form"},
        {"q4_k", "layers: q4_k has no GPTQModel form"},
    };
    char *bad = qp_test_path(ctx, "bad.json");
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        char text[256];
        snprintf(text, sizeof text, "{\"qprobe_recipe\": 1, \"default\": \"w4g128\", "
                 "\"layers\": {\"layers\": \"%s\"}}", cases[k].scheme);
        struct qp_recipe *rr = recipe_of(ctx, text);
        REQUIRE(rr);
        o.recipe = rr;
        CHECK_FAILS(qp_export_gptqmodel_dynamic(&o, bad, &res, &err),
                    QP_E_UNSUPPORTED, &err, cases[k].needle);
        struct stat sb;
        CHECK(stat(bad, &sb) != 0);
        qp_export_result_release(&res);
        qp_recipe_free(rr);
    }
    free(bad);
    free(out);
}
