/* analysis/export-gguf.c: Llama-family checkpoints as GGUF
 * (analysis/export-gguf.h). */
#include "analysis/export-gguf.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/export-llm.h"
#include "formats/gguf.h"
#include "formats/tokenizer.h"
#include "quant/ggml-quant.h"

/* ---- tensors ------------------------------------------------------------------ */

/* One tensor to write: its source constant, GGUF type and rope permutation. */
struct item {
    const struct qp_tensor *src;  /* NULL: data (rope_freqs) */
    const float *data;
    char name[QP_GGUF_MAX_NAME + 1];
    enum qp_ggml_type type;
    int64_t perm_heads;           /* > 0: q/k rows permuted over this many heads */
    bool fell;                    /* got llama.cpp's fallback type */
};

/* src's rows permuted per head from rotate-half to interleaved order into
 * a new F32 tensor [out, in] (*dst, caller frees). */
static enum qp_status permuted(const struct qp_tensor *src, int64_t heads,
                               struct qp_tensor **dst, struct qp_error *err)
{
    int64_t rows = src->shape[0], cols = src->shape[1];
    if (rows % (2 * heads))
        return qp_fail(err, QP_E_SHAPE, "tensor '%s': %lld rows do not split "
                       "into %lld heads of even size", src->name, (long long)rows,
                       (long long)heads);
    enum qp_status st = qp_tensor_new(src->name, QP_DTYPE_F32, 2, src->shape, dst,
                                      err);
    if (st)
        return st;
    int64_t d = rows / heads, half = d / 2;
    float *y = (*dst)->data;
    for (int64_t h = 0; h < heads; h++)
        for (int64_t i = 0; i < half; i++)
            for (int64_t j = 0; j < 2; j++)
                qp_tensor_read_f32(src, (size_t)((h * d + j * half + i) * cols),
                                   (size_t)cols,
                                   y + (h * d + 2 * i + j) * cols);
    return QP_OK;
}

static enum qp_status fill(void *ctx, void *buf, size_t nbytes,
                           struct qp_error *err)
{
    const struct item *it = ctx;
    if (!it->src) {
        memcpy(buf, it->data, nbytes);
        return QP_OK;
    }
    struct qp_tensor *p = NULL;
    enum qp_status st = QP_OK;
    if (it->perm_heads)
        st = permuted(it->src, it->perm_heads, &p, err);
    struct qp_ggml_data q = {0};
    if (!st)
        st = qp_ggml_quantize_tensor(p ? p : it->src, it->type, &q, err);
    if (!st && q.nbytes != nbytes)
        st = qp_fail(err, QP_E_SHAPE, "tensor '%s': %zu bytes quantized, %zu "
                     "declared", it->name, q.nbytes, nbytes);
    if (!st)
        memcpy(buf, q.data, nbytes);
    free(q.data);
    qp_tensor_free(p);
    return st;
}


/* The constant called name in g, or NULL. */
static const struct qp_tensor *konst(const struct qp_graph *g, const char *name)
{
    int v = qp_graph_find(g, name);
    return v >= 0 ? g->values[v].konst : NULL;
}

/* The scheme a gives weight name (NULL: it stays float). */
static const struct qp_wscheme *scheme_of(const struct qp_graph *g,
                                          const struct qp_qassign *a,
                                          const char *name)
{
    char buf[256];
    for (int i = 0; i < g->n_nodes; i++) {
        if (!qp_node_weighted(g, i, NULL))
            continue;
        qp_node_weight_name(g, i, buf, sizeof buf);
        if (!strcmp(buf, name))
            return a->wq[i] ? &a->ws[i] : NULL;
    }
    return NULL;
}

struct plan {
    struct item *it;
    size_t n;
    size_t fallbacks;
    struct { enum qp_ggml_type t; int64_t row; } seen[16]; /* noted fallbacks */
    size_t n_seen;
    size_t counts[QP_GGML_TYPE_COUNT];
    size_t matrices[QP_GGML_TYPE_COUNT]; /* tensors of rank >= 2 */
};

/* general.file_type: llama.cpp's llama_ftype of the matrices' most common
 * type (LLAMA_FTYPE_MOSTLY_*; q4_K as Q4_K_S, the mixture without larger
 * types). */
static uint32_t file_type(const struct plan *p)
{
    static const uint32_t ftype[QP_GGML_TYPE_COUNT] = {
        [QP_GGML_F32] = 0, [QP_GGML_F16] = 1, [QP_GGML_BF16] = 32,
        [QP_GGML_Q8_0] = 7, [QP_GGML_Q4_0] = 2, [QP_GGML_Q4_1] = 3,
        [QP_GGML_Q5_0] = 8, [QP_GGML_Q4_K] = 14, [QP_GGML_Q6_K] = 18};
    int best = QP_GGML_F32;
    for (int t = 0; t < QP_GGML_TYPE_COUNT; t++)
        if (p->matrices[t] > p->matrices[best])
            best = t;
    return ftype[best];
}

/* Adds HF weight hf to p with its GGUF type (QP_E_NOTFOUND when the graph
 * lacks it). */
static enum qp_status plan_add(struct plan *p, const struct qp_export_gguf_in *in,
                               const char *hf, int64_t perm_heads,
                               struct qp_export_result *r, struct qp_error *err)
{
    const struct qp_tensor *t = konst(in->g, hf);
    if (!t)
        return qp_fail(err, QP_E_NOTFOUND, "'%s': the graph has no weight '%s'",
                       in->dir, hf);
    struct item it = {.src = t, .perm_heads = perm_heads};
    if (!qp_llama_name_of(hf, it.name, sizeof it.name))
        return qp_fail(err, QP_E_UNSUPPORTED, "'%s': weight '%s' has no llama.cpp "
                       "name", in->dir, hf);
    enum qp_status st = QP_OK;
    if (t->ndim < 2) {
        it.type = QP_GGML_F32;
    } else {
        const struct qp_wscheme *ws = scheme_of(in->g, in->a, hf);
        if ((st = qp_llama_ggml_type(hf, it.name, ws, &it.type, err)))
            return st;
        if (!ws)
            it.type = in->float_type;
        int64_t row = t->shape[t->ndim - 1];
        enum qp_ggml_type fb = qp_ggml_fallback(it.type, row);
        if (fb != it.type) {
            bool seen = false;
            for (size_t i = 0; i < p->n_seen; i++)
                seen |= p->seen[i].t == it.type && p->seen[i].row == row;
            if (!seen && p->n_seen < sizeof p->seen / sizeof p->seen[0]) {
                p->seen[p->n_seen].t = it.type;
                p->seen[p->n_seen++].row = row;
            }
            p->fallbacks++;
            if (!seen)
                qp_export_note(r, "%s: rows of %lld values are not a multiple of "
                               "%s's block: written as %s, as llama.cpp falls "
                               "back", it.name, (long long)row,
                               qp_ggml_type_info(it.type)->name,
                               qp_ggml_type_info(fb)->name);
            it.type = fb;
            it.fell = true;
        }
    }
    struct item *grown = realloc(p->it, (p->n + 1) * sizeof *grown);
    if (!grown)
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    p->it = grown;
    p->it[p->n++] = it;
    p->counts[it.type]++;
    p->matrices[it.type] += t->ndim >= 2;
    return QP_OK;
}

static enum qp_status plan_build(struct plan *p, const struct qp_export_gguf_in *in,
                                 struct qp_export_result *r, struct qp_error *err)
{
    const struct qp_llama_config *c = in->cfg;
    static const char *const layer_w[] = {
        "input_layernorm.weight", "self_attn.q_proj.weight",
        "self_attn.k_proj.weight", "self_attn.v_proj.weight",
        "self_attn.o_proj.weight", "post_attention_layernorm.weight",
        "mlp.gate_proj.weight", "mlp.up_proj.weight", "mlp.down_proj.weight"};
    enum qp_status st = plan_add(p, in, "model.embed_tokens.weight", 0, r, err);
    if (!st) {
        /* a tied head is token_embd itself unless it gets another type */
        enum qp_ggml_type embd = p->it[0].type;
        size_t before = p->n;
        st = plan_add(p, in, "lm_head.weight", 0, r, err);
        if (!st && c->tie && p->it[before].type == embd) {
            p->counts[embd]--;
            p->matrices[embd]--;
            p->fallbacks -= p->it[before].fell;
            p->n--;
        }
    }
    if (!st)
        st = plan_add(p, in, "model.norm.weight", 0, r, err);
    for (int64_t l = 0; !st && l < c->n_layers; l++)
        for (size_t k = 0; !st && k < sizeof layer_w / sizeof layer_w[0]; k++) {
            char hf[256];
            snprintf(hf, sizeof hf, "model.layers.%lld.%s", (long long)l, layer_w[k]);
            int64_t heads = k == 1 ? c->n_heads : k == 2 ? c->n_kv_heads : 0;
            st = plan_add(p, in, hf, heads, r, err);
        }
    if (!st && p->fallbacks > 1)
        qp_export_note(r, "%zu tensors in all fell back to another type",
                       p->fallbacks);
    return st;
}

/* ---- metadata ----------------------------------------------------------------- */

/* llama3 rope scaling as divisors of each rotary frequency. */
static void llama3_factors(const struct qp_llama_config *c, float *f)
{
    struct qp_llama_config plain = *c;
    plain.rope = QP_ROPE_DEFAULT;
    int64_t n = c->head_dim / 2;
    float *inv = f; /* unscaled frequencies first, replaced in place */
    qp_llama_inv_freq(&plain, inv);
    double old = (double)c->rope_orig_max;
    double low_wl = old / c->rope_low, high_wl = old / c->rope_high;
    for (int64_t i = 0; i < n; i++) {
        double wl = 2 * M_PI / inv[i];
        if (wl < high_wl) {
            f[i] = 1.0f;
        } else if (wl > low_wl) {
            f[i] = (float)c->rope_factor;
        } else {
            double smooth = (old / wl - c->rope_low) / (c->rope_high - c->rope_low);
            f[i] = (float)(1 / ((1 - smooth) / c->rope_factor + smooth));
        }
    }
}

static enum qp_status add_hparams(struct qp_gguf_writer *w,
                                  const struct qp_export_gguf_in *in,
                                  int64_t vocab, uint32_t ftype,
                                  struct qp_error *err)
{
    const struct qp_llama_config *c = in->cfg;
    const char *base = strrchr(in->dir, '/');
    char name[256];
    snprintf(name, sizeof name, "%s", base && base[1] ? base + 1 : in->dir);
    size_t len = strlen(name);
    while (len > 1 && name[len - 1] == '/')
        name[--len] = '\0';
    struct { const char *key; int64_t v; } u32s[] = {
        {"general.quantization_version", 2},
        {"general.file_type", ftype},
        {"llama.context_length", c->max_pos ? c->max_pos : 2048},
        {"llama.embedding_length", c->hidden},
        {"llama.block_count", c->n_layers},
        {"llama.feed_forward_length", c->intermediate},
        {"llama.attention.head_count", c->n_heads},
        {"llama.attention.head_count_kv", c->n_kv_heads},
        {"llama.attention.key_length", c->head_dim},
        {"llama.attention.value_length", c->head_dim},
        {"llama.rope.dimension_count", c->head_dim},
        {"llama.vocab_size", vocab},
    };
    enum qp_status st = qp_gguf_add_str(w, "general.architecture", "llama", err);
    if (!st)
        st = qp_gguf_add_str(w, "general.name", name, err);
    for (size_t i = 0; !st && i < sizeof u32s / sizeof u32s[0]; i++)
        st = qp_gguf_add_u32(w, u32s[i].key, (uint32_t)u32s[i].v, err);
    if (!st)
        st = qp_gguf_add_f32(w, "llama.attention.layer_norm_rms_epsilon",
                             (float)c->rms_eps, err);
    if (!st)
        st = qp_gguf_add_f32(w, "llama.rope.freq_base", (float)c->rope_theta, err);
    if (!st && c->rope == QP_ROPE_LINEAR) {
        st = qp_gguf_add_str(w, "llama.rope.scaling.type", "linear", err);
        if (!st)
            st = qp_gguf_add_f32(w, "llama.rope.scaling.factor",
                                 (float)c->rope_factor, err);
    }
    return st;
}

/* tokenizer.ggml.*: every id below vocab (the embedding's rows). */
static enum qp_status add_tokenizer(struct qp_gguf_writer *w,
                                    const struct qp_tokenizer *tok, int64_t vocab,
                                    const char *dir, struct qp_error *err)
{
    bool spm = !strcmp(qp_tokenizer_model_name(tok), "llama");
    if ((int64_t)qp_tokenizer_vocab_size(tok) > vocab)
        return qp_fail(err, QP_E_FORMAT, "'%s': the tokenizer has %zu tokens, the "
                       "embedding only %lld rows", dir, qp_tokenizer_vocab_size(tok),
                       (long long)vocab);
    size_t n = (size_t)vocab, nm = qp_tokenizer_merge_count(tok);
    const char **s = calloc(n + 1, sizeof *s);
    size_t *lens = calloc(n + 1, sizeof *lens);
    int32_t *types = calloc(n + 1, sizeof *types);
    float *scores = calloc(n + 1, sizeof *scores);
    char **pads = calloc(n + 1, sizeof *pads);
    char **merges = spm ? NULL : calloc(nm + 1, sizeof *merges);
    enum qp_status st = QP_OK;
    if (!s || !lens || !types || !scores || !pads || (!spm && !merges))
        st = qp_fail(err, QP_E_NOMEM, "out of memory");
    for (size_t i = 0; !st && i < n; i++) {
        s[i] = qp_tokenizer_token(tok, (int32_t)i, &lens[i]);
        types[i] = (int32_t)qp_tokenizer_token_type(tok, (int32_t)i);
        scores[i] = qp_tokenizer_token_score(tok, (int32_t)i);
        if (!s[i] || types[i] == QP_TOK_UNDEFINED) {
            char buf[32];
            snprintf(buf, sizeof buf, "[PAD%zu]", i);
            if (!(pads[i] = strdup(buf)))
                st = qp_fail(err, QP_E_NOMEM, "out of memory");
            s[i] = pads[i];
            lens[i] = strlen(buf);
            types[i] = QP_TOK_UNUSED;
            scores[i] = 0;
        }
    }
    for (size_t i = 0; !st && !spm && i < nm; i++) {
        int32_t a, b, c;
        size_t la, lb;
        qp_tokenizer_merge(tok, i, &a, &b, &c);
        const char *sa = qp_tokenizer_token(tok, a, &la);
        const char *sb = qp_tokenizer_token(tok, b, &lb);
        if (!(merges[i] = malloc(la + lb + 2)))
            st = qp_fail(err, QP_E_NOMEM, "out of memory");
        else
            snprintf(merges[i], la + lb + 2, "%.*s %.*s", (int)la, sa, (int)lb, sb);
    }
    if (!st)
        st = qp_gguf_add_str(w, "tokenizer.ggml.model", spm ? "llama" : "gpt2", err);
    if (!st)
        st = qp_gguf_add_str(w, "tokenizer.ggml.pre", qp_tokenizer_pre_name(tok), err);
    if (!st)
        st = qp_gguf_add_str_array(w, "tokenizer.ggml.tokens", s, lens, n, err);
    if (!st && spm)
        st = qp_gguf_add_array(w, "tokenizer.ggml.scores", QP_GGUF_F32, scores, n,
                               err);
    if (!st)
        st = qp_gguf_add_array(w, "tokenizer.ggml.token_type", QP_GGUF_I32, types,
                               n, err);
    if (!st && !spm)
        st = qp_gguf_add_str_array(w, "tokenizer.ggml.merges",
                                   (const char *const *)merges, NULL, nm, err);
    struct { const char *key; int32_t id; } ids[] = {
        {"tokenizer.ggml.bos_token_id", qp_tokenizer_bos_id(tok)},
        {"tokenizer.ggml.eos_token_id", qp_tokenizer_eos_id(tok)},
        {"tokenizer.ggml.unknown_token_id", qp_tokenizer_unk_id(tok)},
        {"tokenizer.ggml.padding_token_id", qp_tokenizer_pad_id(tok)},
    };
    for (size_t i = 0; !st && i < sizeof ids / sizeof ids[0]; i++)
        if (ids[i].id >= 0)
            st = qp_gguf_add_u32(w, ids[i].key, (uint32_t)ids[i].id, err);
    if (!st)
        st = qp_gguf_add_bool(w, "tokenizer.ggml.add_bos_token",
                              qp_tokenizer_adds_bos(tok), err);
    if (!st)
        st = qp_gguf_add_bool(w, "tokenizer.ggml.add_eos_token",
                              qp_tokenizer_adds_eos(tok), err);
    for (size_t i = 0; pads && i < n; i++)
        free(pads[i]);
    for (size_t i = 0; merges && i < nm; i++)
        free(merges[i]);
    free(pads);
    free(merges);
    free(s);
    free(lens);
    free(types);
    free(scores);
    return st;
}

/* ---- the export ----------------------------------------------------------------- */

static enum qp_status check_model(const struct qp_export_gguf_in *in,
                                  struct qp_error *err)
{
    const struct qp_llama_config *c = in->cfg;
    if (c->family == QP_LLAMA_QWEN2)
        return qp_fail(err, QP_E_UNSUPPORTED, "'%s': --to gguf writes llama.cpp's "
                       "\"llama\" architecture (Llama, Mistral, SmolLM); %s "
                       "(llama.cpp's qwen2) is not written yet", in->dir,
                       qp_llama_family_name(c->family));
    if (c->qkv_bias || c->o_bias || c->mlp_bias)
        return qp_fail(err, QP_E_UNSUPPORTED, "'%s': --to gguf does not write "
                       "attention or MLP biases yet", in->dir);
    for (int i = 0; i < in->g->n_nodes; i++)
        if (qp_node_weighted(in->g, i, NULL) && in->a->wq[i] &&
            in->a->ws[i].family != QP_WFAMILY_GGML) {
            char name[256], ll[QP_GGUF_MAX_NAME + 1] = "?";
            qp_node_weight_name(in->g, i, name, sizeof name);
            qp_llama_name_of(name, ll, sizeof ll);
            enum qp_ggml_type t;
            return qp_llama_ggml_type(name, ll, &in->a->ws[i], &t, err);
        }
    for (int v = 0; v < in->a->n_values; v++)
        if (in->a->aq[v])
            return qp_fail(err, QP_E_UNSUPPORTED, "value '%s' gets an activation "
                           "scheme: GGUF holds weights only (llama.cpp quantizes "
                           "activations itself); give a weight-only scheme",
                           in->g->values[v].name);
    return QP_OK;
}

enum qp_status qp_export_gguf(const struct qp_export_gguf_in *in,
                              struct qp_export_result *r, struct qp_error *err)
{
    enum qp_status st = check_model(in, err);
    if (st)
        return st;
    struct qp_tokenizer *tok = NULL;
    if ((st = qp_tokenizer_load(in->dir, &tok, err)))
        return st;
    const struct qp_tensor *embd = konst(in->g, "model.embed_tokens.weight");
    int64_t vocab = embd && embd->ndim == 2 ? embd->shape[0] : in->cfg->vocab;
    struct plan p = {0};
    struct qp_gguf_writer *w = NULL;
    float *freqs = NULL;
    st = plan_build(&p, in, r, err);
    if (!st)
        st = qp_gguf_writer_new(in->out, &w, err);
    if (!st)
        st = add_hparams(w, in, vocab, file_type(&p), err);
    if (!st)
        st = add_tokenizer(w, tok, vocab, in->dir, err);
    if (!st && in->cfg->rope == QP_ROPE_LLAMA3) {
        int64_t ne = in->cfg->head_dim / 2;
        if (!(freqs = calloc((size_t)ne, sizeof *freqs)))
            st = qp_fail(err, QP_E_NOMEM, "out of memory");
        else {
            llama3_factors(in->cfg, freqs);
            st = qp_gguf_add_tensor(w, "rope_freqs.weight", 1, &ne, QP_GGML_F32,
                                    freqs, err);
            p.counts[QP_GGML_F32]++;
        }
    }
    for (size_t i = 0; !st && i < p.n; i++) {
        const struct qp_tensor *t = p.it[i].src;
        int64_t ne[QP_GGUF_MAX_DIMS];
        for (int d = 0; d < t->ndim; d++)
            ne[d] = t->shape[t->ndim - 1 - d];
        st = qp_gguf_add_tensor_fill(w, p.it[i].name, t->ndim, ne, p.it[i].type,
                                     fill, &p.it[i], err);
    }
    if (!st) {
        st = qp_gguf_writer_commit(w, err);
        w = NULL;
    }
    if (!st) {
        int len = snprintf(r->summary, sizeof r->summary, "%s: GGUF v3, llama, "
                           "%lld blocks, %zu tensors:", in->out,
                           (long long)in->cfg->n_layers,
                           p.n + (in->cfg->rope == QP_ROPE_LLAMA3));
        for (int t = 0; t < QP_GGML_TYPE_COUNT && len > 0 &&
                        (size_t)len < sizeof r->summary; t++)
            if (p.counts[t])
                len += snprintf(r->summary + len, sizeof r->summary - (size_t)len,
                                " %zu %s", p.counts[t],
                                qp_ggml_type_info((enum qp_ggml_type)t)->name);
    }
    qp_gguf_writer_free(w);
    free(freqs);
    free(p.it);
    qp_tokenizer_free(tok);
    return st;
}
