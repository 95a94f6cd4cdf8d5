/* tests/unit/test-llama.c: Hugging Face Llama-family folders as graphs
 * (model/llama-import.h) against the independent reference forward of
 * tests/unit/llama-test-util.c: grouped-query attention, tied and untied
 * heads, F32/F16/BF16 storage, rope_scaling linear and llama3, Qwen2's
 * biases with a sharded checkpoint, Mistral's sliding window, batches; and
 * every malformed folder refused with a message naming it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/fileio.h"
#include "model/llama-import.h"
#include "model/session.h"
#include "tests/test.h"
#include "tests/unit/llama-test-util.h"

/* Captured tensors, cloned. */
struct grab {
    struct qp_tensor *t[256];
    int n;
};

static enum qp_status grab_fn(void *ctx, const struct qp_graph *g, int v,
                              const struct qp_tensor *t, struct qp_error *err)
{
    struct grab *gr = ctx;
    (void)g;
    (void)v;
    if (gr->n == 256)
        return QP_OK;
    return qp_tensor_clone(t, &gr->t[gr->n++], err);
}

static const struct qp_tensor *grabbed(const struct grab *gr, const char *name)
{
    for (int i = 0; i < gr->n; i++)
        if (!strcmp(gr->t[i]->name, name))
            return gr->t[i];
    return NULL;
}

static void grab_free(struct grab *gr)
{
    for (int i = 0; i < gr->n; i++)
        qp_tensor_free(gr->t[i]);
    gr->n = 0;
}

static struct qp_tensor *ids_tensor(const int32_t *ids, int b, int t)
{
    struct qp_tensor *x;
    struct qp_error err;
    int64_t shape[2] = {b, t};
    int64_t one[1] = {t};
    if (qp_tensor_new(QP_LLAMA_INPUT, QP_DTYPE_I32, b ? 2 : 1, b ? shape : one, &x,
                      &err))
        return NULL;
    memcpy(x->data, ids, (size_t)(b ? b : 1) * (size_t)t * sizeof *ids);
    return x;
}

/* Writes the model, runs it in fp32 on T ids capturing everything, and
 * checks every block's output and the logits against the reference. */
static void check_forward(struct qp_test_ctx *ctx, const struct tl_cfg *c, int T,
                          double tol)
{
    char *dir = qp_test_path(ctx, "model");
    struct tl_model m;
    struct qp_session *s = NULL;
    struct qp_error err;
    REQUIRE(dir && mkdir(dir, 0755) == 0 && tl_write_model(dir, c, &m));
    int32_t ids[64];
    for (int t = 0; t < T; t++)
        ids[t] = (int32_t)((t * 7 + 3) % c->vocab);
    double *logits = malloc((size_t)T * c->vocab * sizeof *logits);
    double *hidden = malloc((size_t)c->layers * T * c->hidden * sizeof *hidden);
    tl_ref_forward(&m, ids, T, logits, hidden);
    struct grab gr = {0};
    struct qp_tensor *x = ids_tensor(ids, 0, T), *out = NULL;
    if (qp_session_open(dir, NULL, &s, &err) == QP_OK) {
        struct qp_session_run_opts o = {.capture = "*", .on_capture = grab_fn,
                                        .capture_ctx = &gr};
        const struct qp_tensor *feed[1] = {x};
        CHECK_OK(qp_session_run(s, NULL, feed, &o, &out, NULL, &err), &err);
    } else {
        qp_test_failf(ctx, __FILE__, __LINE__, "open: %s", err.msg);
    }
    for (int l = 0; out && l < c->layers; l++) {
        char name[64];
        snprintf(name, sizeof name, "model.layers.%d", l);
        const struct qp_tensor *h = grabbed(&gr, name);
        CHECK(h && h->ndim == 2 && h->shape[0] == T && h->shape[1] == c->hidden);
        double e = h ? tl_rel_l2(h->data, hidden + (size_t)l * T * c->hidden,
                                 (size_t)T * c->hidden) : 1;
        if (e > tol)
            qp_test_failf(ctx, __FILE__, __LINE__, "%s: rel L2 %.3g", name, e);
    }
    if (out) {
        CHECK(out->ndim == 2 && out->shape[0] == T && out->shape[1] == c->vocab);
        double e = tl_rel_l2(out->data, logits, (size_t)T * c->vocab);
        if (getenv("TL_DEBUG"))
            fprintf(stderr, "%s: logits rel L2 %.3g\n", ctx->name, e);
        if (e > tol)
            qp_test_failf(ctx, __FILE__, __LINE__, "logits: rel L2 %.3g", e);
        /* every module the issue names is captured, by its HF name */
        const char *names[] = {"model.embed_tokens", "model.layers.0.input_layernorm",
                               "model.layers.0.self_attn.q_proj",
                               "model.layers.0.self_attn.k_proj",
                               "model.layers.0.self_attn.v_proj",
                               "model.layers.0.self_attn.o_proj",
                               "model.layers.0.post_attention_layernorm",
                               "model.layers.0.mlp.gate_proj",
                               "model.layers.0.mlp.up_proj",
                               "model.layers.0.mlp.down_proj", "model.norm",
                               "lm_head"};
        for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
            if (!grabbed(&gr, names[i]))
                qp_test_failf(ctx, __FILE__, __LINE__, "'%s' not captured",
                              names[i]);
        const struct qp_tensor *k = grabbed(&gr, "model.layers.0.self_attn.k_proj");
        CHECK(k && k->shape[1] == c->kv_heads * c->head_dim);
    }
    grab_free(&gr);
    qp_tensor_free(out);
    qp_tensor_free(x);
    qp_session_free(s);
    tl_model_free(&m);
    free(logits);
    free(hidden);
    free(dir);
}

QP_TEST(llama_forward_gqa_untied_f32)
{
    struct tl_cfg c = tl_default();
    check_forward(ctx, &c, 9, 1e-5);
}

QP_TEST(llama_forward_tied_bf16)
{
    struct tl_cfg c = tl_default();
    c.tie = true;
    c.dtype = QP_DTYPE_BF16;
    c.seed = 2;
    check_forward(ctx, &c, 12, 1e-5);
}

QP_TEST(llama_forward_rope_llama3)
{
    struct tl_cfg c = tl_default();
    c.head_dim = 16;
    c.heads = 2;
    c.kv_heads = 1;
    c.rope = "llama3";
    c.factor = 4;
    c.orig_max = 32;
    c.seed = 3;
    check_forward(ctx, &c, 40, 1e-5);
}

QP_TEST(llama_forward_rope_linear_f16_mha)
{
    struct tl_cfg c = tl_default();
    c.rope = "linear";
    c.factor = 2;
    c.kv_heads = 4;
    c.tie = true;
    c.dtype = QP_DTYPE_F16;
    c.seed = 4;
    check_forward(ctx, &c, 11, 1e-5);
}

QP_TEST(llama_forward_qwen2_bias_sharded)
{
    struct tl_cfg c = tl_default();
    c.model_type = "qwen2";
    c.bias = true;
    c.tie = true;
    c.theta = 1e6;
    c.shards = 2;
    c.dtype = QP_DTYPE_BF16;
    c.seed = 5;
    check_forward(ctx, &c, 10, 1e-5);
}

QP_TEST(llama_forward_mistral_window)
{
    struct tl_cfg c = tl_default();
    c.model_type = "mistral";
    c.window = 4;
    c.head_dim = 16; /* heads x head_dim 64 != hidden 32 */
    c.seed = 6;
    check_forward(ctx, &c, 13, 1e-5);
}

QP_TEST(llama_batch_rows_equal_single_runs)
{
    struct tl_cfg c = tl_default();
    char *dir = qp_test_path(ctx, "model");
    struct qp_session *s = NULL;
    struct qp_error err;
    REQUIRE(dir && mkdir(dir, 0755) == 0 && tl_write_model(dir, &c, NULL));
    REQUIRE_OK(qp_session_open(dir, NULL, &s, &err), &err);
    int32_t ids[2][6] = {{1, 5, 9, 2, 33, 7}, {4, 4, 0, 49, 12, 3}};
    struct qp_tensor *xb = ids_tensor(&ids[0][0], 2, 6), *yb = NULL;
    struct grab gr = {0};
    struct qp_session_run_opts o = {.capture = "model.layers.1", .on_capture = grab_fn,
                                    .capture_ctx = &gr};
    const struct qp_tensor *feed[1] = {xb};
    CHECK_OK(qp_session_run(s, NULL, feed, &o, &yb, NULL, &err), &err);
    CHECK(yb && yb->ndim == 3 && yb->shape[0] == 2 && yb->shape[1] == 6 &&
          yb->shape[2] == c.vocab);
    const struct qp_tensor *hb = grabbed(&gr, "model.layers.1");
    CHECK(hb && hb->ndim == 3 && hb->shape[0] == 2 && hb->shape[2] == c.hidden);
    for (int b = 0; yb && b < 2; b++) {
        struct qp_tensor *x = ids_tensor(ids[b], 0, 6), *y = NULL;
        feed[0] = x;
        CHECK_OK(qp_session_run(s, NULL, feed, NULL, &y, NULL, &err), &err);
        /* the same computation per sequence (OpenBLAS may order a sum
         * differently for another row count: not bit for bit) */
        size_t n = (size_t)6 * c.vocab;
        double ref[6 * 50];
        for (size_t i = 0; y && i < n; i++)
            ref[i] = ((const float *)yb->data)[b * n + i];
        CHECK(y && tl_rel_l2(y->data, ref, n) < 1e-6);
        qp_tensor_free(x);
        qp_tensor_free(y);
    }
    grab_free(&gr);
    qp_tensor_free(xb);
    qp_tensor_free(yb);
    qp_session_free(s);
    free(dir);
}

/* A model folder for the error tests: c written, then config edited. */
static char *bad_model(struct qp_test_ctx *ctx, const struct tl_cfg *c,
                       const struct tl_cfg *config)
{
    char *dir = qp_test_path(ctx, "bad");
    if (!dir || mkdir(dir, 0755) || !tl_write_model(dir, c, NULL) ||
        (config && !tl_write_config(dir, config))) {
        free(dir);
        return NULL;
    }
    return dir;
}

QP_TEST(llama_refuses_other_architectures)
{
    struct tl_cfg c = tl_default(), e = c;
    e.model_type = "gpt2";
    e.arch = "GPT2LMHeadModel";
    char *dir = bad_model(ctx, &c, &e);
    REQUIRE(dir);
    struct qp_session *s;
    struct qp_error err;
    CHECK_FAILS(qp_session_open(dir, NULL, &s, &err), QP_E_UNSUPPORTED, &err,
                "architectures \"GPT2LMHeadModel\", model_type \"gpt2\"");
    CHECK_CONTAINS(err.msg, "config.json");
    e = c;
    e.arch = "Qwen2ForCausalLM"; /* model_type llama with another class */
    REQUIRE(tl_write_config(dir, &e));
    CHECK_FAILS(qp_session_open(dir, NULL, &s, &err), QP_E_UNSUPPORTED, &err,
                "Qwen2ForCausalLM");
    e = c;
    e.rope = "yarn";
    e.factor = 2;
    e.orig_max = 16;
    REQUIRE(tl_write_config(dir, &e));
    CHECK_FAILS(qp_session_open(dir, NULL, &s, &err), QP_E_UNSUPPORTED, &err,
                "rope_scaling type \"yarn\"");
    free(dir);
}

QP_TEST(llama_refuses_shape_mismatch)
{
    struct tl_cfg c = tl_default(), e = c;
    e.inter = 64;
    char *dir = bad_model(ctx, &c, &e);
    REQUIRE(dir);
    struct qp_session *s;
    struct qp_error err;
    CHECK_FAILS(qp_session_open(dir, NULL, &s, &err), QP_E_SHAPE, &err,
                "tensor 'model.layers.0.mlp.gate_proj.weight' is [48,32], "
                "config.json implies [64,32]");
    CHECK_CONTAINS(err.msg, dir);
    e = c;
    e.kv_heads = 4;
    REQUIRE(tl_write_config(dir, &e));
    CHECK_FAILS(qp_session_open(dir, NULL, &s, &err), QP_E_SHAPE, &err,
                "'model.layers.0.self_attn.k_proj.weight' is [16,32], "
                "config.json implies [32,32]");
    e = c;
    e.layers = 1; /* the checkpoint has a second layer */
    REQUIRE(tl_write_config(dir, &e));
    CHECK_FAILS(qp_session_open(dir, NULL, &s, &err), QP_E_FORMAT, &err,
                "belongs to layer 1, but config.json has 1 layers");
    e = c;
    e.layers = 3;
    REQUIRE(tl_write_config(dir, &e));
    CHECK_FAILS(qp_session_open(dir, NULL, &s, &err), QP_E_NOTFOUND, &err,
                "tensor 'model.layers.2.input_layernorm.weight' is missing");
    free(dir);
}

QP_TEST(llama_refuses_missing_head_and_shard)
{
    struct tl_cfg c = tl_default(), e = c;
    c.tie = true;
    char *dir = bad_model(ctx, &c, &e); /* config untied: lm_head.weight needed */
    REQUIRE(dir);
    struct qp_session *s;
    struct qp_error err;
    CHECK_FAILS(qp_session_open(dir, NULL, &s, &err), QP_E_NOTFOUND, &err,
                "tensor 'lm_head.weight' is missing");
    free(dir);
    c = tl_default();
    c.shards = 2;
    char *d2 = qp_test_path(ctx, "sharded");
    REQUIRE(d2 && mkdir(d2, 0755) == 0 && tl_write_model(d2, &c, NULL));
    char *shard = qp_path_join(d2, "model-00002-of-00002.safetensors");
    REQUIRE(shard && remove(shard) == 0);
    CHECK_FAILS(qp_session_open(d2, NULL, &s, &err), QP_E_IO, &err,
                "model-00002-of-00002.safetensors");
    free(shard);
    free(d2);
}

QP_TEST(llama_refuses_ids_outside_vocab)
{
    struct tl_cfg c = tl_default();
    char *dir = bad_model(ctx, &c, NULL);
    REQUIRE(dir);
    struct qp_session *s;
    struct qp_error err;
    REQUIRE_OK(qp_session_open(dir, NULL, &s, &err), &err);
    int32_t ids[4] = {3, 1, 50, 2};
    struct qp_tensor *x = ids_tensor(ids, 0, 4), *y = NULL;
    const struct qp_tensor *feed[1] = {x};
    CHECK_FAILS(qp_session_run(s, NULL, feed, NULL, &y, NULL, &err), QP_E_INVAL,
                &err, "token id 50 at position 2 is outside the vocabulary [0, 50)");
    CHECK(!y);
    qp_tensor_free(x);
    qp_session_free(s);
    free(dir);
}

/* Resident KB of the mapping holding address p (/proc/self/smaps), or -1. */
static long resident_kb(const void *p)
{
    FILE *f = fopen("/proc/self/smaps", "r");
    char line[512];
    bool in = false;
    long kb = -1;
    uintptr_t a = (uintptr_t)p;
    while (f && fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2) {
            in = a >= lo && a < hi;
            continue;
        }
        if (in && sscanf(line, "Rss: %ld kB", &kb) == 1)
            break;
    }
    if (f)
        fclose(f);
    return kb;
}

QP_TEST(llama_release_weights_after_last_use)
{
    struct tl_cfg c = tl_default();
    c.hidden = 256;
    c.inter = 512;
    c.heads = 4;
    c.head_dim = 64;
    c.vocab = 64;
    char *dir = qp_test_path(ctx, "model");
    struct qp_session *s = NULL;
    struct qp_error err;
    REQUIRE(dir && mkdir(dir, 0755) == 0 && tl_write_model(dir, &c, NULL));
    REQUIRE_OK(qp_session_open(dir, NULL, &s, &err), &err);
    const struct qp_graph *g = qp_session_graph(s);
    const struct qp_tensor *w =
        g->values[qp_graph_find(g, "model.layers.0.mlp.down_proj.weight")].konst;
    REQUIRE(w->map);
    int32_t ids[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    struct qp_tensor *x = ids_tensor(ids, 0, 8), *y = NULL;
    const struct qp_tensor *feed[1] = {x};
    struct qp_session_run_opts o = {0};
    REQUIRE_OK(qp_session_run(s, NULL, feed, &o, &y, NULL, &err), &err);
    long kept = resident_kb(w->data);
    qp_tensor_free(y);
    /* the file is ~4.3 MB of f32 weights: all of it was read */
    CHECK(kept > 3000);
    o.release_weights = true;
    REQUIRE_OK(qp_session_run(s, NULL, feed, &o, &y, NULL, &err), &err);
    long released = resident_kb(w->data);
    /* only the pages of constants no node read last (none) stay; a page
     * shared by two tensors may be read again after its release */
    CHECK(released >= 0 && released < 64);
    qp_tensor_free(y);
    qp_tensor_free(x);
    qp_session_free(s);
    free(dir);
}
