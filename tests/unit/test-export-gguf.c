/* Unit tests of analysis/export-gguf.c on the bundled tiny Llama
 * (data/llama-tiny: 4 layers, hidden 128, 4 heads of 32, 2 KV heads,
 * intermediate 344, tied embeddings, byte-level BPE of 766 tokens + 2
 * special): the file read back with qprobe's GGUF reader has llama.cpp's
 * keys and values, the tokenizer (tokens, types, merges as "a b"), every
 * tensor under its llama.cpp name with ne reversed, and every tensor's
 * bytes equal to qprobe's ggml quantizer on the checkpoint's rows, with
 * q/k rows moved to ggml's rope order by the index rule written here
 * independently (new row h*d + 2i + j = old row h*d + j*d/2 + i). Also the
 * refusals: a non-ggml scheme, activation schemes, no partial file. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "analysis/export.h"
#include "core/half.h"
#include "formats/gguf.h"
#include "model/llama-import.h"
#include "quant/ggml-quant.h"
#include "quant/recipe.h"
#include "quant/scheme.h"
#include "tests/test.h"

static const char *TINY = "data/llama-tiny";

static enum qp_status export_recipe(struct qp_test_ctx *ctx, const char *json,
                                    const char *out, struct qp_export_result *r,
                                    struct qp_error *err)
{
    struct qp_recipe *rc = NULL;
    if (qp_recipe_parse(json, "'recipe'", &rc, err)) {
        qp_test_failf(ctx, __FILE__, __LINE__, "%s", err->msg);
        return QP_E_INVAL;
    }
    struct qp_export_opts o = {.format = QP_EXPORT_GGUF, .model = TINY,
                               .recipe = rc, .recipe_name = "recipe", .out = out};
    enum qp_status st = qp_export_run(&o, r, err);
    qp_recipe_free(rc);
    return st;
}

static int64_t kv_int(struct qp_test_ctx *ctx, const struct qp_gguf *g,
                      const char *key)
{
    struct qp_error err;
    int64_t v = -1;
    CHECK_OK(qp_gguf_get_int(g, key, &v, &err), &err);
    return v;
}

static bool kv_str_is(const struct qp_gguf *g, const char *key, const char *want)
{
    const char *s;
    size_t len;
    struct qp_error err;
    return !qp_gguf_get_str(g, key, &s, &len, &err) && len == strlen(want) &&
           !memcmp(s, want, len);
}

static bool str_elem_is(const struct qp_gguf_value *a, uint64_t i, const char *want)
{
    struct qp_gguf_value e;
    qp_gguf_array_at(a, i, &e);
    return e.count == strlen(want) && !memcmp(e.p, want, e.count);
}

QP_TEST(export_gguf_metadata_and_tokenizer)
{
    struct qp_error err;
    struct qp_export_result r = {0};
    char *out = qp_test_path(ctx, "m.gguf");
    REQUIRE_OK(export_recipe(ctx, "{\"qprobe_recipe\": 1, \"default\": \"fp32\"}",
                             out, &r, &err), &err);
    CHECK_CONTAINS(r.summary, "38 f32");
    qp_export_result_release(&r);
    struct qp_gguf *g = NULL;
    REQUIRE_OK(qp_gguf_load(out, &g, &err), &err);
    CHECK(kv_str_is(g, "general.architecture", "llama"));
    CHECK(kv_str_is(g, "general.name", "llama-tiny"));
    CHECK_INT(kv_int(ctx, g, "llama.context_length"), 1024);
    CHECK_INT(kv_int(ctx, g, "llama.embedding_length"), 128);
    CHECK_INT(kv_int(ctx, g, "llama.block_count"), 4);
    CHECK_INT(kv_int(ctx, g, "llama.feed_forward_length"), 344);
    CHECK_INT(kv_int(ctx, g, "llama.attention.head_count"), 4);
    CHECK_INT(kv_int(ctx, g, "llama.attention.head_count_kv"), 2);
    CHECK_INT(kv_int(ctx, g, "llama.rope.dimension_count"), 32);
    CHECK_INT(kv_int(ctx, g, "llama.vocab_size"), 768);
    CHECK_INT(kv_int(ctx, g, "general.file_type"), 0);
    double eps = 0, theta = 0;
    CHECK_OK(qp_gguf_get_float(g, "llama.attention.layer_norm_rms_epsilon", &eps,
                               &err), &err);
    CHECK_NEAR(eps, 1e-5, 1e-12);
    CHECK_OK(qp_gguf_get_float(g, "llama.rope.freq_base", &theta, &err), &err);
    CHECK_NEAR(theta, 10000.0, 0);
    CHECK(!qp_gguf_find(g, "llama.rope.scaling.type"));
    CHECK(kv_str_is(g, "tokenizer.ggml.model", "gpt2"));
    CHECK(kv_str_is(g, "tokenizer.ggml.pre", "llama-bpe"));
    CHECK_INT(kv_int(ctx, g, "tokenizer.ggml.bos_token_id"), 766);
    CHECK_INT(kv_int(ctx, g, "tokenizer.ggml.eos_token_id"), 767);
    struct qp_gguf_value tokens, types, merges;
    REQUIRE_OK(qp_gguf_get_array(g, "tokenizer.ggml.tokens", QP_GGUF_STRING,
                                 &tokens, &err), &err);
    REQUIRE_OK(qp_gguf_get_array(g, "tokenizer.ggml.token_type", QP_GGUF_I32,
                                 &types, &err), &err);
    REQUIRE_OK(qp_gguf_get_array(g, "tokenizer.ggml.merges", QP_GGUF_STRING,
                                 &merges, &err), &err);
    CHECK_INT(tokens.count, 768);
    CHECK_INT(types.count, 768);
    CHECK_INT(merges.count, 510);
    /* the first merges of tokenizer.json, in rank order */
    CHECK(str_elem_is(&merges, 0, "\xc4\xa0 t"));
    CHECK(str_elem_is(&merges, 2, "\xc4\xa0t h"));
    CHECK(str_elem_is(&tokens, 766, "<|begin_of_text|>"));
    CHECK(str_elem_is(&tokens, 767, "<|end_of_text|>"));
    int32_t ty[768];
    memcpy(ty, types.p, sizeof ty);
    CHECK_INT(ty[0], 1);
    CHECK_INT(ty[765], 1);
    CHECK_INT(ty[766], 3);
    CHECK_INT(ty[767], 3);
    /* tied: no output.weight; names and reversed shapes */
    CHECK(qp_gguf_find_tensor(g, "output.weight") < 0);
    long ffn = qp_gguf_find_tensor(g, "blk.3.ffn_down.weight");
    REQUIRE(ffn >= 0);
    CHECK_INT(g->tensors[ffn].ne[0], 344);
    CHECK_INT(g->tensors[ffn].ne[1], 128);
    long k = qp_gguf_find_tensor(g, "blk.0.attn_k.weight");
    REQUIRE(k >= 0);
    CHECK_INT(g->tensors[k].ne[1], 64);
    qp_gguf_free(g);
    free(out);
}

/* Row `row` of the GGUF tensor's source: the checkpoint row it came from. */
static int64_t source_row(const char *ll, int64_t row)
{
    int64_t heads = strstr(ll, "attn_q.") ? 4 : strstr(ll, "attn_k.") ? 2 : 0;
    if (!heads)
        return row;
    int64_t d = 32, h = row / d, i = (row % d) / 2, j = row % 2;
    return h * d + j * (d / 2) + i;
}

/* Every tensor's bytes against qprobe's quantizer of its source rows. */
static void check_bytes(struct qp_test_ctx *ctx, const char *recipe,
                        enum qp_ggml_type want_q, size_t want_q_count)
{
    struct qp_error err;
    struct qp_export_result r = {0};
    char *out = qp_test_path(ctx, "q.gguf");
    REQUIRE_OK(export_recipe(ctx, recipe, out, &r, &err), &err);
    qp_export_result_release(&r);
    struct qp_gguf *g = NULL;
    struct qp_graph *graph = NULL;
    REQUIRE_OK(qp_gguf_load(out, &g, &err), &err);
    REQUIRE_OK(qp_llama_load(TINY, &graph, NULL, &err), &err);
    static const char *const hf_of[][2] = {
        {"token_embd.", "model.embed_tokens."}, {"output_norm.", "model.norm."},
        {"attn_norm.", "input_layernorm."}, {"attn_q.", "self_attn.q_proj."},
        {"attn_k.", "self_attn.k_proj."}, {"attn_v.", "self_attn.v_proj."},
        {"attn_output.", "self_attn.o_proj."},
        {"ffn_norm.", "post_attention_layernorm."}, {"ffn_gate.", "mlp.gate_proj."},
        {"ffn_up.", "mlp.up_proj."}, {"ffn_down.", "mlp.down_proj."}};
    size_t quantized = 0, rows_checked = 0;
    for (size_t t = 0; t < g->n_tensors; t++) {
        const struct qp_gguf_tensor *gt = &g->tensors[t];
        char hf[256] = "";
        int layer = -1;
        const char *rest = gt->name;
        if (!strncmp(rest, "blk.", 4)) {
            layer = atoi(rest + 4);
            rest = strchr(rest + 4, '.') + 1;
        }
        for (size_t k = 0; k < sizeof hf_of / sizeof hf_of[0]; k++)
            if (!strncmp(rest, hf_of[k][0], strlen(hf_of[k][0]))) {
                if (layer >= 0)
                    snprintf(hf, sizeof hf, "model.layers.%d.%sweight", layer,
                             hf_of[k][1]);
                else
                    snprintf(hf, sizeof hf, "%sweight", hf_of[k][1]);
            }
        int v = qp_graph_find(graph, hf);
        if (v < 0 || !graph->values[v].konst) {
            qp_test_failf(ctx, __FILE__, __LINE__, "%s: no source %s", gt->name, hf);
            continue;
        }
        const struct qp_tensor *src = graph->values[v].konst;
        int64_t cols = gt->ne[0], rows = gt->ndim > 1 ? gt->ne[1] : 1;
        CHECK_INT(cols, src->shape[src->ndim - 1]);
        size_t rb;
        REQUIRE(qp_ggml_row_bytes(gt->type, cols, &rb));
        REQUIRE(rb * (size_t)rows == gt->nbytes);
        quantized += gt->type == want_q;
        float *x = malloc((size_t)cols * sizeof *x);
        unsigned char *q = malloc(rb);
        for (int64_t i = 0; i < rows; i++) {
            qp_tensor_read_f32(src, (size_t)(source_row(gt->name, i) * cols),
                               (size_t)cols, x);
            REQUIRE(qp_ggml_quantize_row(gt->type, x, q, cols));
            if (memcmp(q, (const unsigned char *)gt->data + (size_t)i * rb, rb)) {
                qp_test_failf(ctx, __FILE__, __LINE__, "%s row %lld differs",
                              gt->name, (long long)i);
                break;
            }
            rows_checked++;
        }
        free(x);
        free(q);
    }
    CHECK_INT(quantized, want_q_count);
    CHECK(rows_checked > 5000);
    qp_graph_free(graph);
    qp_gguf_free(g);
    free(out);
}

QP_TEST(export_gguf_q8_0_bytes_are_qprobe_quantizer_on_permuted_rows)
{
    /* embed + q, k, v, o, gate, up of 4 layers; down_proj stays f16 */
    check_bytes(ctx, "{\"qprobe_recipe\": 1, \"default\": \"q8_0\", \"layers\": "
                "{\"*.down_proj\": \"fp32\"}}", QP_GGML_Q8_0, 25);
}

QP_TEST(export_gguf_mixed_recipe_bytes_and_fallback)
{
    struct qp_error err;
    struct qp_export_result r = {0};
    char *out = qp_test_path(ctx, "fb.gguf");
    /* q4_K on rows of 128 falls back to q5_0 (llama.cpp's rule), reported */
    REQUIRE_OK(export_recipe(ctx, "{\"qprobe_recipe\": 1, \"default\": \"q4_0\", "
                             "\"layers\": {\"model.layers.1.*\": \"q4_k\", "
                             "\"*.down_proj\": \"q5_0\"}}", out, &r, &err), &err);
    CHECK_CONTAINS(r.notes, "blk.1.attn_q.weight: rows of 128 values are not a "
                   "multiple of q4_K's block: written as q5_0");
    CHECK_CONTAINS(r.notes, "falls back");
    qp_export_result_release(&r);
    struct qp_gguf *g = NULL;
    REQUIRE_OK(qp_gguf_load(out, &g, &err), &err);
    long d = qp_gguf_find_tensor(g, "blk.2.ffn_down.weight");
    long q1 = qp_gguf_find_tensor(g, "blk.1.attn_q.weight");
    long q0 = qp_gguf_find_tensor(g, "blk.0.attn_q.weight");
    REQUIRE(d >= 0 && q1 >= 0 && q0 >= 0);
    /* 344 values: not a multiple of 32 either: q5_0 -> f16 */
    CHECK_STR(qp_ggml_type_info(g->tensors[d].type)->name, "f16");
    CHECK_STR(qp_ggml_type_info(g->tensors[q1].type)->name, "q5_0");
    CHECK_STR(qp_ggml_type_info(g->tensors[q0].type)->name, "q4_0");
    /* llama_ftype of the most common matrix type: LLAMA_FTYPE_MOSTLY_Q4_0 */
    CHECK_INT(kv_int(ctx, g, "general.file_type"), 2);
    qp_gguf_free(g);
    free(out);
    check_bytes(ctx, "{\"qprobe_recipe\": 1, \"default\": \"q4_0\", \"layers\": "
                "{\"model.layers.1.*\": \"q4_k\", \"*.down_proj\": \"q5_0\"}}",
                QP_GGML_Q4_0, 19);
}

QP_TEST(export_gguf_refusals_leave_no_file)
{
    struct qp_error err;
    struct qp_export_result r = {0};
    char *out = qp_test_path(ctx, "x.gguf");
    struct stat sb;
    CHECK_FAILS(export_recipe(ctx, "{\"qprobe_recipe\": 1, \"default\": \"q8_0\", "
                              "\"layers\": {\"*.up_proj\": \"w4g32\"}}", out, &r,
                              &err), QP_E_UNSUPPORTED, &err,
                "tensor 'model.layers.0.mlp.up_proj.weight' (blk.0.ffn_up.weight): "
                "w4g32 is not one of llama.cpp's types; the nearest is q4_0");
    qp_export_result_release(&r);
    CHECK(stat(out, &sb) != 0);
    struct qp_scheme s;
    REQUIRE_OK(qp_scheme_parse("q8_0+a8t", &s, NULL, &err), &err);
    struct qp_export_opts o = {.format = QP_EXPORT_GGUF, .model = TINY,
                               .scheme = &s, .out = out};
    CHECK_FAILS(qp_export_run(&o, &r, &err), QP_E_UNSUPPORTED, &err,
                "GGUF holds weights only");
    qp_export_result_release(&r);
    CHECK(stat(out, &sb) != 0);
    free(out);
}
