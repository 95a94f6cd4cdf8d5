/* model/llama-import.c: Hugging Face Llama-family folders as graphs
 * (model/llama-import.h). */
#include "model/llama-import.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/fileio.h"
#include "formats/dump.h"
#include "model/op-llm.h"

bool qp_llama_is_model_dir(const char *path)
{
    if (!qp_is_dir(path))
        return false;
    char *cfg = qp_path_join(path, "config.json");
    struct stat st;
    bool ok = cfg && stat(cfg, &st) == 0 && S_ISREG(st.st_mode);
    free(cfg);
    return ok;
}

/* ---- weights ------------------------------------------------------------- */

struct builder {
    const char *dir;
    const struct qp_llama_config *cfg;
    struct qp_dump *d;
    struct qp_graph *g;
    struct qp_error *err;
};

/* Adds the checkpoint tensor `name` as a constant after checking its
 * dtype and shape ([d0] or [d0, d1]). */
static enum qp_status weight(struct builder *b, const char *name, int ndim,
                             int64_t d0, int64_t d1)
{
    long i = qp_dump_find(b->d, name);
    if (i < 0)
        return qp_fail(b->err, QP_E_NOTFOUND, "'%s': tensor '%s' is missing "
                       "(config.json: %lld layers, %s)", b->dir, name,
                       (long long)b->cfg->n_layers,
                       qp_llama_family_name(b->cfg->family));
    const struct qp_tensor *e = qp_dump_entry(b->d, (size_t)i);
    if (e->dtype != QP_DTYPE_F32 && e->dtype != QP_DTYPE_F16 &&
        e->dtype != QP_DTYPE_BF16)
        return qp_fail(b->err, QP_E_UNSUPPORTED, "'%s': tensor '%s' is %s; "
                       "weights must be F32, F16 or BF16", b->dir, name,
                       qp_dtype_name(e->dtype));
    int64_t want[2] = {d0, d1};
    if (!qp_shape_equal(e->ndim, e->shape, ndim, want)) {
        char s0[128], s1[128];
        qp_shape_str(e->ndim, e->shape, s0, sizeof s0);
        qp_shape_str(ndim, want, s1, sizeof s1);
        return qp_fail(b->err, QP_E_SHAPE, "'%s': tensor '%s' is %s, config.json "
                       "implies %s", b->dir, name, s0, s1);
    }
    struct qp_tensor *t;
    enum qp_status st = qp_dump_load(b->d, (size_t)i, &t, b->err);
    if (st)
        return st;
    return qp_graph_add_const(b->g, t, b->err);
}

/* A second constant `alias` over the bytes of constant `of` (its mapping,
 * or memory the graph keeps as long as `of`). */
static enum qp_status alias(struct builder *b, const char *alias, const char *of)
{
    const struct qp_tensor *t = b->g->values[qp_graph_find(b->g, of)].konst;
    struct qp_tensor *a;
    enum qp_status st = qp_tensor_wrap(alias, t->dtype, t->ndim, t->shape, t->data,
                                       t->nbytes, t->map, &a, b->err);
    return st ? st : qp_graph_add_const(b->g, a, b->err);
}

/* Tensors of layers beyond the config's count are a config mismatch. */
static enum qp_status check_extra(const struct builder *b)
{
    for (size_t i = 0; i < qp_dump_count(b->d); i++) {
        const char *name = qp_dump_entry(b->d, i)->name;
        long long l;
        int off = 0;
        if (sscanf(name, "model.layers.%lld.%n", &l, &off) == 1 && off > 0 &&
            l >= b->cfg->n_layers)
            return qp_fail(b->err, QP_E_FORMAT, "'%s': tensor '%s' belongs to "
                           "layer %lld, but config.json has %lld layers", b->dir,
                           name, l, (long long)b->cfg->n_layers);
    }
    return QP_OK;
}

/* ---- nodes ------------------------------------------------------------------ */

/* Adds node op named out (its output value too) reading ins. */
static enum qp_status node(struct builder *b, const char *op, const char *domain,
                           const char *out, int n_in, const char *const *ins,
                           int *id)
{
    const char *outs[1] = {out};
    return qp_graph_add_node(b->g, op, domain, domain[0] ? 1 : 14, out, n_in, ins,
                             1, outs, id, b->err);
}

static enum qp_status linear(struct builder *b, const char *in, const char *mod,
                             int64_t out_f, int64_t in_f, bool bias)
{
    char w[256], bn[256];
    snprintf(w, sizeof w, "%s.weight", mod);
    snprintf(bn, sizeof bn, "%s.bias", mod);
    enum qp_status st = weight(b, w, 2, out_f, in_f);
    if (!st && bias)
        st = weight(b, bn, 1, out_f, 0);
    const char *ins[3] = {in, w, bn};
    return st ? st : node(b, "Linear", QP_LLM_DOMAIN, mod, bias ? 3 : 2, ins, NULL);
}

static enum qp_status rmsnorm(struct builder *b, const char *in, const char *mod)
{
    char w[256];
    snprintf(w, sizeof w, "%s.weight", mod);
    int id;
    enum qp_status st = weight(b, w, 1, b->cfg->hidden, 0);
    const char *ins[2] = {in, w};
    if (!st)
        st = node(b, "RMSNorm", QP_LLM_DOMAIN, mod, 2, ins, &id);
    return st ? st : qp_node_set_float(&b->g->nodes[id], "epsilon",
                                       (float)b->cfg->rms_eps, b->err);
}

static enum qp_status attention(struct builder *b, const char *p, int layer)
{
    const struct qp_llama_config *c = b->cfg;
    char q[256], k[256], v[256], a[256];
    snprintf(q, sizeof q, "%s.self_attn.q_proj", p);
    snprintf(k, sizeof k, "%s.self_attn.k_proj", p);
    snprintf(v, sizeof v, "%s.self_attn.v_proj", p);
    snprintf(a, sizeof a, "%s.self_attn.attention", p);
    const char *ins[4] = {q, k, v, "model.rotary_emb.inv_freq"};
    int id;
    enum qp_status st = node(b, "Attention", QP_LLM_DOMAIN, a, 4, ins, &id);
    struct qp_node *n = st ? NULL : &b->g->nodes[id];
    if (!st)
        st = qp_node_set_int(n, "num_heads", c->n_heads, b->err);
    if (!st)
        st = qp_node_set_int(n, "num_kv_heads", c->n_kv_heads, b->err);
    if (!st)
        st = qp_node_set_int(n, "layer", layer, b->err);
    if (!st && c->sliding_window)
        st = qp_node_set_int(n, "window", c->sliding_window, b->err);
    return st;
}

static enum qp_status block(struct builder *b, int l, const char *x)
{
    const struct qp_llama_config *c = b->cfg;
    char p[64], ln1[128], q[128], k[128], v[128], a[128], o[128], r[128],
        ln2[128], gt[128], up[128], sw[128], dn[128];
    snprintf(p, sizeof p, "model.layers.%d", l);
    snprintf(ln1, sizeof ln1, "%s.input_layernorm", p);
    snprintf(q, sizeof q, "%s.self_attn.q_proj", p);
    snprintf(k, sizeof k, "%s.self_attn.k_proj", p);
    snprintf(v, sizeof v, "%s.self_attn.v_proj", p);
    snprintf(a, sizeof a, "%s.self_attn.attention", p);
    snprintf(o, sizeof o, "%s.self_attn.o_proj", p);
    snprintf(r, sizeof r, "%s.attn_residual", p);
    snprintf(ln2, sizeof ln2, "%s.post_attention_layernorm", p);
    snprintf(gt, sizeof gt, "%s.mlp.gate_proj", p);
    snprintf(up, sizeof up, "%s.mlp.up_proj", p);
    snprintf(sw, sizeof sw, "%s.mlp.swiglu", p);
    snprintf(dn, sizeof dn, "%s.mlp.down_proj", p);
    int64_t h = c->hidden, qd = c->n_heads * c->head_dim;
    int64_t kvd = c->n_kv_heads * c->head_dim, im = c->intermediate;
    const char *add1[2] = {x, o}, *add2[2] = {r, dn}, *gu[2] = {gt, up};
    enum qp_status st = rmsnorm(b, x, ln1);
    if (!st)
        st = linear(b, ln1, q, qd, h, c->qkv_bias);
    if (!st)
        st = linear(b, ln1, k, kvd, h, c->qkv_bias);
    if (!st)
        st = linear(b, ln1, v, kvd, h, c->qkv_bias);
    if (!st)
        st = attention(b, p, l);
    if (!st)
        st = linear(b, a, o, h, qd, c->o_bias);
    if (!st)
        st = node(b, "Add", "", r, 2, add1, NULL);
    if (!st)
        st = rmsnorm(b, r, ln2);
    if (!st)
        st = linear(b, ln2, gt, im, h, c->mlp_bias);
    if (!st)
        st = linear(b, ln2, up, im, h, c->mlp_bias);
    if (!st)
        st = node(b, "SwiGLU", QP_LLM_DOMAIN, sw, 2, gu, NULL);
    if (!st)
        st = linear(b, sw, dn, h, im, c->mlp_bias);
    if (!st)
        st = node(b, "Add", "", p, 2, add2, NULL);
    return st;
}

static enum qp_status inv_freq(struct builder *b)
{
    int64_t half = b->cfg->head_dim / 2;
    struct qp_tensor *t;
    enum qp_status st = qp_tensor_new("model.rotary_emb.inv_freq", QP_DTYPE_F32, 1,
                                      &half, &t, b->err);
    if (st)
        return st;
    qp_llama_inv_freq(b->cfg, t->data);
    return qp_graph_add_const(b->g, t, b->err);
}

static enum qp_status build(struct builder *b)
{
    const struct qp_llama_config *c = b->cfg;
    const char *emb_in[2] = {QP_LLAMA_INPUT, "model.embed_tokens.weight"};
    const char *head_in[2] = {"model.norm", "lm_head.weight"};
    enum qp_status st = qp_graph_add_input(b->g, QP_LLAMA_INPUT, QP_DTYPE_I32, -1,
                                           NULL, b->err);
    if (!st)
        st = check_extra(b);
    if (!st)
        st = weight(b, "model.embed_tokens.weight", 2, c->vocab, c->hidden);
    if (!st)
        st = inv_freq(b);
    if (!st)
        st = node(b, "Embedding", QP_LLM_DOMAIN, "model.embed_tokens", 2, emb_in,
                  NULL);
    char x[64] = "model.embed_tokens";
    for (int l = 0; !st && l < c->n_layers; l++) {
        st = block(b, l, x);
        snprintf(x, sizeof x, "model.layers.%d", l);
    }
    if (!st)
        st = rmsnorm(b, x, "model.norm");
    if (!st)
        st = c->tie ? alias(b, "lm_head.weight", "model.embed_tokens.weight")
                    : weight(b, "lm_head.weight", 2, c->vocab, c->hidden);
    if (!st)
        st = node(b, "Linear", QP_LLM_DOMAIN, QP_LLAMA_OUTPUT, 2, head_in, NULL);
    if (!st)
        st = qp_graph_add_output(b->g, QP_LLAMA_OUTPUT, b->err);
    return st ? st : qp_graph_finalize(b->g, b->err);
}

enum qp_status qp_llama_load(const char *dir, struct qp_graph **g,
                             struct qp_llama_config *cfg, struct qp_error *err)
{
    *g = NULL;
    struct qp_llama_config c;
    char *path = qp_path_join(dir, "config.json");
    if (!path)
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    enum qp_status st = qp_llama_config_load(path, &c, err);
    free(path);
    if (st)
        return st;
    struct builder b = {dir, &c, NULL, NULL, err};
    if ((st = qp_dump_open(dir, QP_DUMP_SAFETENSORS, &b.d, err)))
        return st;
    st = qp_graph_new(dir, &b.g, err);
    if (!st)
        st = build(&b);
    qp_dump_close(b.d);
    if (st) {
        qp_graph_free(b.g);
        return st;
    }
    *g = b.g;
    if (cfg)
        *cfg = c;
    return QP_OK;
}
