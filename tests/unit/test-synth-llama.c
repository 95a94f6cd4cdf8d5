/* Unit tests of model/synth-llama.c (synthetic checkpoints): a tiny
 * config's checkpoint is written, sharded and not, and read back through
 * the safetensors reader; names, shapes, dtypes, the scales of the values,
 * the outlier channels, determinism and the refusals are checked. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/fileio.h"
#include "core/half.h"
#include "formats/dump.h"
#include "formats/json.h"
#include "formats/safetensors.h"
#include "model/synth-llama.h"
#include "tests/test.h"
#include "tests/unit/dump-test-util.h"

/* qwen2 (q/k/v biases), GQA 4:2, untied, f32 by its torch_dtype. */
static const char tiny_cfg[] =
    "{\"architectures\": [\"Qwen2ForCausalLM\"], \"model_type\": \"qwen2\",\n"
    " \"hidden_size\": 64, \"intermediate_size\": 1536, \"num_hidden_layers\": 2,\n"
    " \"num_attention_heads\": 4, \"num_key_value_heads\": 2, \"vocab_size\": 1000,\n"
    " \"tie_word_embeddings\": false, \"torch_dtype\": \"float32\"}\n";

static char *write_cfg(struct qp_test_ctx *ctx, const char *name, const char *text)
{
    char *p = qp_test_path(ctx, name);
    if (!qp_test_write_file(p, text, strlen(text))) {
        free(p);
        return NULL;
    }
    return p;
}

/* Mean and standard deviation (double) of t's elements [b, e) taken with
 * stride s. */
static void moments(const struct qp_tensor *t, size_t b, size_t e, size_t s,
                    double *mean, double *std)
{
    size_t n = qp_tensor_numel(t), k = 0;
    float *v = malloc(n * sizeof *v);
    qp_tensor_read_f32(t, 0, n, v);
    double s1 = 0, s2 = 0;
    for (size_t i = b; i < e; i += s, k++) {
        s1 += v[i];
        s2 += (double)v[i] * v[i];
    }
    *mean = s1 / (double)k;
    *std = sqrt(s2 / (double)k - *mean * *mean);
    free(v);
}

static struct qp_tensor *load(struct qp_test_ctx *ctx, struct qp_dump *d,
                              const char *name)
{
    struct qp_error err;
    long i = qp_dump_find(d, name);
    struct qp_tensor *t = NULL;
    if (i < 0)
        qp_test_failf(ctx, __FILE__, __LINE__, "tensor '%s' is missing", name);
    else if (qp_dump_load(d, (size_t)i, &t, &err))
        qp_test_failf(ctx, __FILE__, __LINE__, "load '%s': %s", name, err.msg);
    return t;
}

/* Columns of a [rows, cols] tensor whose RMS exceeds `above`. */
static int loud_columns(const struct qp_tensor *t, double above)
{
    int64_t rows = t->shape[0], cols = t->shape[1];
    int n = 0;
    for (int64_t c = 0; c < cols; c++) {
        double m, s;
        moments(t, (size_t)c, (size_t)(rows * cols), (size_t)cols, &m, &s);
        n += sqrt(s * s + m * m) > above;
    }
    return n;
}

static void check_scales(struct qp_test_ctx *ctx, struct qp_dump *d)
{
    double m, s;
    struct qp_tensor *t = load(ctx, d, "model.embed_tokens.weight");
    REQUIRE(t);
    moments(t, 0, qp_tensor_numel(t), 1, &m, &s);
    CHECK_NEAR(s, 0.02, 0.0006);
    CHECK_NEAR(m, 0, 0.0004);
    qp_tensor_free(t);
    static const char *const lin[][2] = {
        {"model.layers.0.self_attn.q_proj.weight", "64"},
        {"model.layers.1.self_attn.k_proj.weight", "64"},
        {"model.layers.0.mlp.down_proj.weight", "1536"},
        {"model.layers.1.mlp.up_proj.weight", "64"},
        {"lm_head.weight", "64"}};
    for (size_t i = 0; i < sizeof lin / sizeof lin[0]; i++) {
        REQUIRE((t = load(ctx, d, lin[i][0])));
        double want = 1 / sqrt(atof(lin[i][1]));
        moments(t, 0, qp_tensor_numel(t), 1, &m, &s);
        if (fabs(s / want - 1) > 0.05 || fabs(m) > 4 * want / sqrt((double)qp_tensor_numel(t)))
            qp_test_failf(ctx, __FILE__, __LINE__, "%s: mean %g std %g, want std %g",
                          lin[i][0], m, s, want);
        qp_tensor_free(t);
    }
    REQUIRE((t = load(ctx, d, "model.layers.1.self_attn.v_proj.bias")));
    moments(t, 0, qp_tensor_numel(t), 1, &m, &s);
    CHECK(s > 0.012 && s < 0.03 && fabs(m) < 0.01);
    qp_tensor_free(t);
    REQUIRE((t = load(ctx, d, "model.layers.0.input_layernorm.weight")));
    moments(t, 0, qp_tensor_numel(t), 1, &m, &s);
    CHECK(fabs(m - 1) < 0.01 && s > 0.012 && s < 0.03);
    qp_tensor_free(t);
}

/* Layer 1 is an outlier layer, layer 0 is not. */
static void check_outliers(struct qp_test_ctx *ctx, struct qp_dump *d)
{
    double base = 1 / sqrt(1536.0);
    struct qp_tensor *t;
    REQUIRE((t = load(ctx, d, "model.layers.1.mlp.down_proj.weight")));
    CHECK_INT(loud_columns(t, 5 * base), QP_SYNTH_OUTLIERS(1536));
    CHECK_INT(QP_SYNTH_OUTLIERS(1536), 3);
    CHECK_INT(loud_columns(t, 20 * base), 0); /* scaled by 16, not more */
    qp_tensor_free(t);
    REQUIRE((t = load(ctx, d, "model.layers.0.mlp.down_proj.weight")));
    CHECK_INT(loud_columns(t, 2 * base), 0);
    qp_tensor_free(t);
    for (int layer = 0; layer < 2; layer++) {
        char name[64];
        snprintf(name, sizeof name, "model.layers.%d.post_attention_layernorm.weight",
                 layer);
        REQUIRE((t = load(ctx, d, name)));
        float v[64];
        qp_tensor_read_f32(t, 0, 64, v);
        int big = 0;
        for (int i = 0; i < 64; i++)
            if (v[i] > 4) {
                big++;
                CHECK_NEAR(v[i], QP_SYNTH_OUTLIER_NORM, 0.1);
            }
        CHECK_INT(big, layer == 1 ? 2 : 0);
        qp_tensor_free(t);
    }
}

/* The names and shapes HF's Qwen2ForCausalLM state_dict has. */
static void check_names(struct qp_test_ctx *ctx, struct qp_dump *d,
                        enum qp_dtype dtype)
{
    static const struct { const char *leaf; int64_t d0, d1; } layer[] = {
        {"self_attn.q_proj.weight", 64, 64}, {"self_attn.q_proj.bias", 64, 0},
        {"self_attn.k_proj.weight", 32, 64}, {"self_attn.k_proj.bias", 32, 0},
        {"self_attn.v_proj.weight", 32, 64}, {"self_attn.v_proj.bias", 32, 0},
        {"self_attn.o_proj.weight", 64, 64}, {"mlp.gate_proj.weight", 1536, 64},
        {"mlp.up_proj.weight", 1536, 64},    {"mlp.down_proj.weight", 64, 1536},
        {"input_layernorm.weight", 64, 0},   {"post_attention_layernorm.weight", 64, 0}};
    CHECK_INT(qp_dump_count(d), 3 + 2 * 12);
    CHECK(qp_dump_find(d, "model.layers.0.self_attn.o_proj.bias") < 0);
    for (int l = -1; l < 2; l++)
        for (size_t i = 0; i < (l < 0 ? 3 : 12); i++) {
            char name[96];
            int64_t s0 = l < 0 ? (i == 1 ? 64 : 1000) : layer[i].d0;
            int64_t s1 = l < 0 ? (i == 1 ? 0 : 64) : layer[i].d1;
            if (l < 0)
                snprintf(name, sizeof name, "%s", i == 0 ? "model.embed_tokens.weight"
                         : i == 1 ? "model.norm.weight" : "lm_head.weight");
            else
                snprintf(name, sizeof name, "model.layers.%d.%s", l, layer[i].leaf);
            long k = qp_dump_find(d, name);
            if (k < 0) {
                qp_test_failf(ctx, __FILE__, __LINE__, "'%s' missing", name);
                continue;
            }
            const struct qp_tensor *e = qp_dump_entry(d, (size_t)k);
            int64_t want[2] = {s0, s1};
            if (e->dtype != dtype || !qp_shape_equal(e->ndim, e->shape, s1 ? 2 : 1, want))
                qp_test_failf(ctx, __FILE__, __LINE__, "'%s': dtype %s ndim %d",
                              name, qp_dtype_name(e->dtype), e->ndim);
        }
}

QP_TEST(synth_llama_sharded_checkpoint_has_hf_names_scales_and_outliers)
{
    struct qp_error err;
    char *cfg = write_cfg(ctx, "config.json", tiny_cfg);
    char *out = qp_test_path(ctx, "ckpt");
    char *tok = write_cfg(ctx, "tok.json", "{\"model\": {}}");
    REQUIRE(cfg && tok);
    struct qp_synth_opts o = qp_synth_opts_default();
    o.seed = 7;
    o.shards = 3;
    o.tokenizer = tok;
    REQUIRE_OK(qp_synth_llama_write(cfg, out, &o, &err), &err);
    CHECK_INT(dt_count_files(out), 6); /* config, 3 shards, index, tokenizer */

    char *index = qp_path_join(out, "model.safetensors.index.json");
    struct qp_json *root;
    REQUIRE_OK(qp_json_load(index, &root, &err), &err);
    const struct qp_json *map = qp_json_get(root, "weight_map");
    CHECK_INT(qp_json_size(map), 27);
    const char *shard;
    CHECK(qp_json_str(qp_json_get(map, "model.embed_tokens.weight"), &shard) &&
          !strcmp(shard, "model-00001-of-00003.safetensors"));
    CHECK(qp_json_str(qp_json_get(map, "lm_head.weight"), &shard) &&
          !strcmp(shard, "model-00003-of-00003.safetensors"));
    double total = 0;
    CHECK(qp_json_num(qp_json_get(qp_json_get(root, "metadata"), "total_size"), &total));
    /* 2 x 64000 + 64 + 2 x (64 x 64 x 2 + 32 x 64 x 2 + 64 + 64 + 3 x 1536 x 64
       + 2 x 64) parameters, 4 bytes each */
    CHECK_NEAR(total, 4.0 * (128000 + 64 + 2 * (8192 + 4096 + 128 + 294912 + 128)), 0);
    qp_json_free(root);

    struct qp_dump *d;
    REQUIRE_OK(qp_dump_open(index, QP_DUMP_AUTO, &d, &err), &err);
    check_names(ctx, d, QP_DTYPE_F32);
    check_scales(ctx, d);
    check_outliers(ctx, d);

    /* one file, bf16: the same values rounded, whatever the sharding */
    char *out1 = qp_test_path(ctx, "one");
    o.shards = 1;
    o.dtype = QP_DTYPE_BF16;
    o.tokenizer = NULL;
    REQUIRE_OK(qp_synth_llama_write(cfg, out1, &o, &err), &err);
    CHECK_INT(dt_count_files(out1), 2);
    char *one = qp_path_join(out1, "model.safetensors");
    struct qp_dump *d1;
    REQUIRE_OK(qp_dump_open(one, QP_DUMP_AUTO, &d1, &err), &err);
    check_names(ctx, d1, QP_DTYPE_BF16);
    size_t mismatches = 0;
    for (size_t i = 0; i < qp_dump_count(d1); i++) {
        struct qp_tensor *b = load(ctx, d1, qp_dump_entry(d1, i)->name);
        struct qp_tensor *f = load(ctx, d, qp_dump_entry(d1, i)->name);
        REQUIRE(b && f);
        for (size_t k = 0; k < qp_tensor_numel(f); k++)
            mismatches += ((uint16_t *)b->data)[k] != qp_f32_to_bf16(((float *)f->data)[k]);
        qp_tensor_free(b);
        qp_tensor_free(f);
    }
    CHECK_INT(mismatches, 0);
    qp_dump_close(d1);
    qp_dump_close(d);

    /* config copied verbatim, tokenizer copied under its HF name */
    char *bytes, *p = qp_path_join(out, "config.json");
    size_t len;
    REQUIRE_OK(qp_read_file(p, 1 << 20, &bytes, &len, &err), &err);
    CHECK_STR(bytes, tiny_cfg);
    free(bytes);
    free(p);
    p = qp_path_join(out, "tokenizer.json");
    CHECK(access(p, F_OK) == 0);
    free(p);
    free(one);
    free(out1);
    free(index);
    free(tok);
    free(out);
    free(cfg);
}

QP_TEST(synth_llama_seed_changes_values_and_same_seed_repeats_them)
{
    struct qp_error err;
    char *cfg = write_cfg(ctx, "config.json", tiny_cfg);
    REQUIRE(cfg);
    const char *dirs[3] = {"a", "b", "c"};
    char *files[3];
    struct qp_synth_opts o = qp_synth_opts_default();
    o.dtype = QP_DTYPE_F16;
    for (int i = 0; i < 3; i++) {
        char *dir = qp_test_path(ctx, dirs[i]);
        o.seed = i == 2 ? 2 : 1;
        o.threads = i + 1; /* the thread count never changes values */
        REQUIRE_OK(qp_synth_llama_write(cfg, dir, &o, &err), &err);
        files[i] = qp_path_join(dir, "model.safetensors");
        free(dir);
    }
    char *a, *b, *c;
    size_t na, nb, nc;
    REQUIRE_OK(qp_read_file(files[0], 1 << 24, &a, &na, &err), &err);
    REQUIRE_OK(qp_read_file(files[1], 1 << 24, &b, &nb, &err), &err);
    REQUIRE_OK(qp_read_file(files[2], 1 << 24, &c, &nc, &err), &err);
    CHECK(na == nb && !memcmp(a, b, na));
    CHECK(na == nc && memcmp(a, c, na));
    CHECK_CONTAINS(a + 8, "\"dtype\":\"F16\"");
    CHECK_CONTAINS(a + 8, "\"__metadata__\":{\"format\":\"pt\"}");
    free(a);
    free(b);
    free(c);
    for (int i = 0; i < 3; i++)
        free(files[i]);
    free(cfg);
}

QP_TEST(synth_llama_refuses_bad_configs_and_options_leaving_nothing)
{
    struct qp_error err;
    char *out = qp_test_path(ctx, "out");
    static const struct { const char *text, *needle; enum qp_status st; } bad[] = {
        {"{\"model_type\": \"llama\", \"intermediate_size\": 8, \"num_hidden_layers\": 1,"
         " \"num_attention_heads\": 2, \"vocab_size\": 8}",
         "\"hidden_size\" is missing", QP_E_FORMAT},
        {"{\"model_type\": \"gpt2\"}", "model_type \"gpt2\" is not supported",
         QP_E_UNSUPPORTED},
        {"{\"model_type\": \"llama\", \"hidden_size\": 16.5, \"intermediate_size\": 8,"
         " \"num_hidden_layers\": 1, \"num_attention_heads\": 2, \"vocab_size\": 8}",
         "\"hidden_size\" must be an integer", QP_E_FORMAT},
        {"{\"model_type\": \"mistral\", \"hidden_size\": 16, \"intermediate_size\": 8,"
         " \"num_hidden_layers\": 1, \"num_attention_heads\": 4, \"num_key_value_heads\": 3,"
         " \"vocab_size\": 8}", "not a multiple of num_key_value_heads 3", QP_E_FORMAT},
        {"{\"model_type\": \"llama\", \"hidden_size\": 18, \"intermediate_size\": 8,"
         " \"num_hidden_layers\": 1, \"num_attention_heads\": 4, \"vocab_size\": 8}",
         "and no head_dim", QP_E_FORMAT},
        {"{\"model_type\": \"llama\", \"hidden_size\": 16, \"intermediate_size\": 8,"
         " \"num_hidden_layers\": 1, \"num_attention_heads\": 4, \"vocab_size\": 8,"
         " \"tie_word_embeddings\": 1}", "\"tie_word_embeddings\" must be true or false",
         QP_E_FORMAT},
        {"[1, 2]", "not a JSON object", QP_E_FORMAT},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char *cfg = write_cfg(ctx, "bad.json", bad[i].text);
        struct qp_synth_opts o = qp_synth_opts_default();
        CHECK_FAILS(qp_synth_llama_write(cfg, out, &o, &err), bad[i].st, &err,
                    bad[i].needle);
        CHECK_CONTAINS(err.msg, "bad.json");
        free(cfg);
    }
    char *cfg = write_cfg(ctx, "config.json", tiny_cfg);
    struct qp_synth_opts o = qp_synth_opts_default();
    o.shards = 28; /* 27 tensors */
    CHECK_FAILS(qp_synth_llama_write(cfg, out, &o, &err), QP_E_INVAL, &err,
                "28 shards: the checkpoint has 27 tensors");
    o.shards = 0;
    CHECK_FAILS(qp_synth_llama_write(cfg, out, &o, &err), QP_E_INVAL, &err, "0 shards");
    o.shards = 1;
    o.dtype = QP_DTYPE_I8;
    CHECK_FAILS(qp_synth_llama_write(cfg, out, &o, &err), QP_E_INVAL, &err,
                "bf16, f16 or f32");
    o.dtype = QP_DTYPE_COUNT;
    o.tokenizer = "/nonexistent/tokenizer.json";
    CHECK_FAILS(qp_synth_llama_write(cfg, out, &o, &err), QP_E_IO, &err,
                "/nonexistent/tokenizer.json");
    CHECK(access(out, F_OK) != 0);              /* no output folder */
    CHECK_INT(dt_count_files(qp_test_tmpdir(ctx)), 2); /* nor temporaries */
    free(cfg);
    free(out);
}
