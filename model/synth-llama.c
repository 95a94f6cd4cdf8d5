/* model/synth-llama.c: synthetic Llama-family checkpoints
 * (model/synth-llama.h). The config gives the tensor list; each tensor is
 * generated in chunks by a counter-based normal generator (a hash of the
 * seed, the name and the pair index, then Box-Muller), converted to the
 * stored dtype and streamed into its shard (formats/safetensors.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/fileio.h"
#include "core/half.h"
#include "core/outfile.h"
#include "core/parallel.h"
#include "core/tensor.h"
#include "formats/json.h"
#include "formats/safetensors.h"
#include "model/synth-llama.h"

#define CHUNK ((size_t)1 << 22) /* elements generated per write */

enum kind { K_EMBED, K_LINEAR, K_BIAS, K_NORM };

struct plan {
    char name[96];
    enum kind kind;
    int ndim;
    int64_t shape[2];
    int layer;  /* -1 outside the blocks */
    int shard;
    size_t numel;
    bool outliers; /* an outlier tensor (down_proj / post-attention norm) */
};

struct cfg {
    int64_t hidden, inter, layers, heads, kv_heads, head_dim, vocab;
    bool tied, qkv_bias, o_bias, mlp_bias;
    enum qp_dtype dtype; /* torch_dtype, or QP_DTYPE_COUNT */
};

struct qp_synth_opts qp_synth_opts_default(void)
{
    return (struct qp_synth_opts){.seed = 1, .shards = 1, .dtype = QP_DTYPE_COUNT};
}

/* ---- config --------------------------------------------------------------- */

static enum qp_status get_int(const struct qp_json *root, const char *key,
                              bool required, int64_t dflt, int64_t *out,
                              const char *path, struct qp_error *err)
{
    const struct qp_json *v = qp_json_get(root, key);
    if (!v || qp_json_type(v) == QP_JSON_NULL) {
        if (required)
            return qp_fail(err, QP_E_FORMAT, "'%s': \"%s\" is missing", path, key);
        *out = dflt;
        return QP_OK;
    }
    double d;
    if (!qp_json_num(v, &d) || d != floor(d) || d < 1 || d > (double)(1 << 30))
        return qp_fail(err, QP_E_FORMAT, "'%s': \"%s\" must be an integer from 1 "
                       "to 2^30", path, key);
    *out = (int64_t)d;
    return QP_OK;
}

static enum qp_status get_bool(const struct qp_json *root, const char *key,
                               bool *out, const char *path, struct qp_error *err)
{
    const struct qp_json *v = qp_json_get(root, key);
    *out = false;
    if (v && qp_json_type(v) != QP_JSON_NULL && !qp_json_bool(v, out))
        return qp_fail(err, QP_E_FORMAT, "'%s': \"%s\" must be true or false",
                       path, key);
    return QP_OK;
}

static enum qp_status parse_config(const struct qp_json *root, const char *path,
                                   struct cfg *c, struct qp_error *err)
{
    const char *type = NULL, *td = NULL;
    if (qp_json_type(root) != QP_JSON_OBJECT)
        return qp_fail(err, QP_E_FORMAT, "'%s': not a JSON object", path);
    if (!qp_json_str(qp_json_get(root, "model_type"), &type))
        return qp_fail(err, QP_E_FORMAT, "'%s': \"model_type\" is missing", path);
    bool qwen2 = !strcmp(type, "qwen2");
    if (!qwen2 && strcmp(type, "llama") && strcmp(type, "mistral"))
        return qp_fail(err, QP_E_UNSUPPORTED, "'%s': model_type \"%s\" is not "
                       "supported (llama, mistral, qwen2)", path, type);
    bool attn_bias;
    enum qp_status st = QP_OK;
    if (!st) st = get_int(root, "hidden_size", true, 0, &c->hidden, path, err);
    if (!st) st = get_int(root, "intermediate_size", true, 0, &c->inter, path, err);
    if (!st) st = get_int(root, "num_hidden_layers", true, 0, &c->layers, path, err);
    if (!st) st = get_int(root, "num_attention_heads", true, 0, &c->heads, path, err);
    if (!st) st = get_int(root, "vocab_size", true, 0, &c->vocab, path, err);
    if (!st) st = get_int(root, "num_key_value_heads", false, c->heads,
                          &c->kv_heads, path, err);
    if (!st && !qp_json_get(root, "head_dim") && c->hidden % c->heads)
        st = qp_fail(err, QP_E_FORMAT, "'%s': hidden_size %lld is not a multiple "
                     "of num_attention_heads %lld (and no head_dim)", path,
                     (long long)c->hidden, (long long)c->heads);
    if (!st) st = get_int(root, "head_dim", false, c->hidden / c->heads,
                          &c->head_dim, path, err);
    if (!st) st = get_bool(root, "tie_word_embeddings", &c->tied, path, err);
    if (!st) st = get_bool(root, "attention_bias", &attn_bias, path, err);
    if (!st) st = get_bool(root, "mlp_bias", &c->mlp_bias, path, err);
    if (st)
        return st;
    if (c->heads % c->kv_heads)
        return qp_fail(err, QP_E_FORMAT, "'%s': num_attention_heads %lld is not a "
                       "multiple of num_key_value_heads %lld", path,
                       (long long)c->heads, (long long)c->kv_heads);
    c->qkv_bias = qwen2 || attn_bias;
    c->o_bias = !qwen2 && attn_bias;
    c->dtype = QP_DTYPE_COUNT;
    if (qp_json_str(qp_json_get(root, "torch_dtype"), &td))
        c->dtype = !strcmp(td, "bfloat16") ? QP_DTYPE_BF16
                 : !strcmp(td, "float16")  ? QP_DTYPE_F16
                 : !strcmp(td, "float32")  ? QP_DTYPE_F32 : QP_DTYPE_COUNT;
    return QP_OK;
}

/* ---- the tensor list ------------------------------------------------------ */

struct plan_list {
    struct plan *v;
    size_t n, cap;
};

static bool add(struct plan_list *l, int layer, const char *leaf, enum kind kind,
                int64_t d0, int64_t d1)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 64;
        struct plan *v = realloc(l->v, cap * sizeof *v);
        if (!v)
            return false;
        l->v = v;
        l->cap = cap;
    }
    struct plan *p = &l->v[l->n++];
    memset(p, 0, sizeof *p);
    if (layer >= 0)
        snprintf(p->name, sizeof p->name, "model.layers.%d.%s", layer, leaf);
    else
        snprintf(p->name, sizeof p->name, "%s", leaf);
    p->kind = kind;
    p->layer = layer;
    p->ndim = d1 ? 2 : 1;
    p->shape[0] = d0;
    p->shape[1] = d1;
    p->numel = (size_t)d0 * (size_t)(d1 ? d1 : 1); /* dims <= 2^30 each */
    p->outliers = layer % 4 == 1 && (!strcmp(leaf, "mlp.down_proj.weight") ||
                                     !strcmp(leaf, "post_attention_layernorm.weight"));
    return true;
}

/* A linear layer out x in and its bias when `bias`. */
static bool add_linear(struct plan_list *l, int layer, const char *mod,
                       int64_t out, int64_t in, bool bias)
{
    char w[64], b[64];
    snprintf(w, sizeof w, "%s.weight", mod);
    snprintf(b, sizeof b, "%s.bias", mod);
    return add(l, layer, w, K_LINEAR, out, in) &&
           (!bias || add(l, layer, b, K_BIAS, out, 0));
}

static bool build_plan(const struct cfg *c, struct plan_list *l)
{
    int64_t h = c->hidden, q = c->heads * c->head_dim, kv = c->kv_heads * c->head_dim;
    bool ok = add(l, -1, "model.embed_tokens.weight", K_EMBED, c->vocab, h);
    for (int i = 0; ok && i < c->layers; i++)
        ok = add_linear(l, i, "self_attn.q_proj", q, h, c->qkv_bias) &&
             add_linear(l, i, "self_attn.k_proj", kv, h, c->qkv_bias) &&
             add_linear(l, i, "self_attn.v_proj", kv, h, c->qkv_bias) &&
             add_linear(l, i, "self_attn.o_proj", h, q, c->o_bias) &&
             add_linear(l, i, "mlp.gate_proj", c->inter, h, c->mlp_bias) &&
             add_linear(l, i, "mlp.up_proj", c->inter, h, c->mlp_bias) &&
             add_linear(l, i, "mlp.down_proj", h, c->inter, c->mlp_bias) &&
             add(l, i, "input_layernorm.weight", K_NORM, h, 0) &&
             add(l, i, "post_attention_layernorm.weight", K_NORM, h, 0);
    ok = ok && add(l, -1, "model.norm.weight", K_NORM, h, 0);
    if (ok && !c->tied)
        ok = add_linear(l, -1, "lm_head", c->vocab, h, false);
    return ok;
}

/* Assigns consecutive tensors to k shards of about equal bytes, none
 * empty. */
static void assign_shards(struct plan_list *l, int k, size_t esize)
{
    double total = 0, cum = 0;
    for (size_t i = 0; i < l->n; i++)
        total += (double)l->v[i].numel * (double)esize;
    int s = 0;
    for (size_t i = 0; i < l->n; i++) {
        l->v[i].shard = s;
        cum += (double)l->v[i].numel * (double)esize;
        size_t left = l->n - 1 - i;
        if (s < k - 1 && (cum >= total * (s + 1) / k || left == (size_t)(k - 1 - s)))
            s++;
    }
}

/* ---- values --------------------------------------------------------------- */

static uint64_t mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static uint64_t tensor_key(uint64_t seed, const char *name)
{
    uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */
    for (const unsigned char *p = (const unsigned char *)name; *p; p++)
        h = (h ^ *p) * 0x100000001b3ull;
    return mix64(mix64(seed) ^ h);
}

/* The standard normal value number i of the stream `key`. */
static float normal_at(uint64_t key, size_t i)
{
    uint64_t r = mix64(key ^ mix64((uint64_t)(i >> 1)));
    double u1 = ((double)(r >> 32) + 0.5) * (1.0 / 4294967296.0);
    double u2 = (double)(r & 0xffffffffu) * (1.0 / 4294967296.0);
    double rad = sqrt(-2.0 * log(u1)), a = 2.0 * M_PI * u2;
    return (float)(rad * ((i & 1) ? sin(a) : cos(a)));
}

/* True when index j (a column of a linear layer, a channel of a norm) is
 * one of the n evenly spaced outliers of tensor `key`. */
static bool is_outlier(uint64_t key, int64_t j, int64_t n)
{
    int64_t k = QP_SYNTH_OUTLIERS(n), step = n / k;
    int64_t off = (int64_t)(mix64(key + 1) % (uint64_t)n);
    int64_t d = ((j - off) % n + n) % n;
    return d % step == 0 && d / step < k;
}

struct gen_job {
    const struct plan *p;
    uint64_t key;
    size_t start, n; /* elements [start, start + n) of the tensor */
    enum qp_dtype dtype;
    void *out;
};

static float value_at(const struct plan *p, uint64_t key, size_t i)
{
    float z = normal_at(key, i);
    switch (p->kind) {
    case K_EMBED:
    case K_BIAS:
        return 0.02f * z;
    case K_NORM:
        if (p->outliers && is_outlier(key, (int64_t)i, p->shape[0]))
            return (float)QP_SYNTH_OUTLIER_NORM + 0.02f * z;
        return 1.0f + 0.02f * z;
    case K_LINEAR:
    default: {
        int64_t in = p->shape[1];
        float v = z / sqrtf((float)in);
        if (p->outliers && is_outlier(key, (int64_t)(i % (size_t)in), in))
            v *= (float)QP_SYNTH_OUTLIER_SCALE;
        return v;
    }
    }
}

static void gen_share(void *ctx, int t, int nt)
{
    const struct gen_job *j = ctx;
    size_t b, e;
    qp_parallel_split(j->n, t, nt, 64, &b, &e);
    for (size_t k = b; k < e; k++) {
        float v = value_at(j->p, j->key, j->start + k);
        if (j->dtype == QP_DTYPE_BF16)
            ((uint16_t *)j->out)[k] = qp_f32_to_bf16(v);
        else if (j->dtype == QP_DTYPE_F16)
            ((uint16_t *)j->out)[k] = qp_f32_to_f16(v);
        else
            ((float *)j->out)[k] = v;
    }
}

/* ---- files ---------------------------------------------------------------- */

static enum qp_status copy_file(const char *src, const char *dst,
                                struct qp_error *err)
{
    char *buf;
    size_t len;
    enum qp_status st = qp_read_file(src, (size_t)1 << 30, &buf, &len, err);
    if (st)
        return st;
    struct qp_outfile *of;
    st = qp_outfile_open(dst, &of, err);
    if (!st && fwrite(buf, 1, len, of->fp) != len) {
        qp_outfile_abort(of);
        st = qp_fail(err, QP_E_IO, "'%s': write failed", dst);
    } else if (!st) {
        st = qp_outfile_commit(of, err);
    }
    free(buf);
    return st;
}

/* Copies the tokenizer files of opts->tokenizer into dir. */
static enum qp_status copy_tokenizer(const char *tok, const char *dir,
                                     struct qp_error *err)
{
    static const char *const names[] = {"tokenizer.json", "tokenizer_config.json",
                                        "generation_config.json"};
    bool folder = qp_is_dir(tok);
    enum qp_status st = QP_OK;
    for (size_t i = 0; i < (folder ? 3 : 1) && !st; i++) {
        char *src = folder ? qp_path_join(tok, names[i]) : strdup(tok);
        char *dst = qp_path_join(dir, names[i]);
        if (!src || !dst)
            st = qp_fail(err, QP_E_NOMEM, "out of memory");
        else if (i == 0 || access(src, F_OK) == 0)
            st = copy_file(src, dst, err);
        free(src);
        free(dst);
    }
    return st;
}

static void shard_name(char *buf, size_t size, int s, int k)
{
    if (k == 1)
        snprintf(buf, size, "model.safetensors");
    else
        snprintf(buf, size, "model-%05d-of-%05d.safetensors", s + 1, k);
}

struct writer {
    const struct plan_list *l;
    const struct qp_synth_opts *o;
    enum qp_dtype dtype;
    size_t esize;
    void *buf;
    uint64_t done, total;
};

/* Streams the values of tensor p into s, CHUNK elements at a time. */
static enum qp_status write_tensor(struct writer *w, struct qp_st_stream *s,
                                   const struct plan *p, struct qp_error *err)
{
    struct gen_job j = {p, tensor_key(w->o->seed, p->name), 0, 0, w->dtype, w->buf};
    enum qp_status st = QP_OK;
    for (size_t start = 0; start < p->numel && !st; start += CHUNK) {
        j.start = start;
        j.n = p->numel - start < CHUNK ? p->numel - start : CHUNK;
        qp_parallel_run(gen_share, &j, j.n < 65536 ? 1 : w->o->threads);
        st = qp_st_stream_write(s, w->buf, j.n * w->esize, err);
        w->done += j.n * w->esize;
        qp_progress_report(w->o->progress, "synth", w->done, w->total);
    }
    return st;
}

static enum qp_status write_shard(struct writer *w, const char *dir, int shard,
                                  struct qp_error *err)
{
    const struct plan_list *l = w->l;
    size_t first = 0, n = 0;
    while (first < l->n && l->v[first].shard != shard)
        first++;
    while (first + n < l->n && l->v[first + n].shard == shard)
        n++;
    struct qp_tensor **descs = calloc(n, sizeof *descs);
    if (!descs)
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    enum qp_status st = QP_OK;
    for (size_t i = 0; i < n && !st; i++)
        st = qp_tensor_new_desc(l->v[first + i].name, w->dtype, l->v[first + i].ndim,
                                l->v[first + i].shape, &descs[i], err);
    char name[64];
    shard_name(name, sizeof name, shard, w->o->shards);
    char *path = qp_path_join(dir, name);
    struct qp_dump_meta meta = {0};
    struct qp_st_stream *s = NULL;
    if (!st && !path)
        st = qp_fail(err, QP_E_NOMEM, "out of memory");
    if (!st)
        st = qp_dump_meta_set(&meta, "format", "pt", err);
    if (!st)
        st = qp_st_stream_open(path, descs, n, &meta, &s, err);
    for (size_t i = 0; i < n && !st; i++)
        st = write_tensor(w, s, &l->v[first + i], err);
    if (!st) {
        st = qp_st_stream_commit(s, err);
        s = NULL;
    }
    qp_st_stream_abort(s);
    qp_dump_meta_release(&meta);
    for (size_t i = 0; i < n; i++)
        qp_tensor_free(descs[i]);
    free(descs);
    free(path);
    return st;
}

static enum qp_status write_index(const struct writer *w, const char *dir,
                                  struct qp_error *err)
{
    struct qp_json *root = qp_json_new_object();
    struct qp_json *meta = root ? qp_json_add_object(root, "metadata") : NULL;
    struct qp_json *map = meta ? qp_json_add_object(root, "weight_map") : NULL;
    bool ok = map && qp_json_add_num(meta, "total_size", (double)w->total);
    for (size_t i = 0; ok && i < w->l->n; i++) {
        char name[64];
        shard_name(name, sizeof name, w->l->v[i].shard, w->o->shards);
        ok = qp_json_add_str(map, w->l->v[i].name, name) != NULL;
    }
    char *path = ok ? qp_path_join(dir, "model.safetensors.index.json") : NULL;
    enum qp_status st = path ? qp_json_save(path, root, true, err)
                             : qp_fail(err, QP_E_NOMEM, "out of memory");
    free(path);
    qp_json_free(root);
    return st;
}

static enum qp_status write_all(struct writer *w, const char *config_path,
                                const char *dir, struct qp_error *err)
{
    char *cfg_out = qp_path_join(dir, "config.json");
    enum qp_status st = cfg_out ? copy_file(config_path, cfg_out, err)
                                : qp_fail(err, QP_E_NOMEM, "out of memory");
    free(cfg_out);
    for (int s = 0; s < w->o->shards && !st; s++)
        st = write_shard(w, dir, s, err);
    if (!st && w->o->shards > 1)
        st = write_index(w, dir, err);
    if (!st && w->o->tokenizer)
        st = copy_tokenizer(w->o->tokenizer, dir, err);
    return st;
}

/* Reads the config and fills w (dtype, element size, total bytes) and l. */
static enum qp_status prepare(const char *config_path,
                              const struct qp_synth_opts *opts, struct writer *w,
                              struct plan_list *l, struct qp_error *err)
{
    struct qp_json *root;
    enum qp_status st = qp_json_load(config_path, &root, err);
    if (st)
        return st;
    struct cfg c;
    st = parse_config(root, config_path, &c, err);
    qp_json_free(root);
    if (st)
        return st;
    *w = (struct writer){.o = opts, .dtype = opts->dtype, .l = l};
    if (w->dtype == QP_DTYPE_COUNT)
        w->dtype = c.dtype == QP_DTYPE_COUNT ? QP_DTYPE_BF16 : c.dtype;
    if (w->dtype != QP_DTYPE_BF16 && w->dtype != QP_DTYPE_F16 && w->dtype != QP_DTYPE_F32)
        return qp_fail(err, QP_E_INVAL, "dtype %s: synthetic checkpoints are bf16, "
                       "f16 or f32", qp_dtype_name(w->dtype));
    w->esize = w->dtype == QP_DTYPE_F32 ? 4 : 2;
    if (!build_plan(&c, l))
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    if (opts->shards < 1 || (size_t)opts->shards > l->n)
        return qp_fail(err, QP_E_INVAL, "%d shards: the checkpoint has %zu tensors",
                       opts->shards, l->n);
    assign_shards(l, opts->shards, w->esize);
    for (size_t i = 0; i < l->n; i++)
        w->total += (uint64_t)l->v[i].numel * w->esize;
    return QP_OK;
}

enum qp_status qp_synth_llama_size(const char *config_path,
                                   const struct qp_synth_opts *opts,
                                   size_t *tensors, uint64_t *bytes,
                                   struct qp_error *err)
{
    struct writer w;
    struct plan_list l = {0};
    enum qp_status st = prepare(config_path, opts, &w, &l, err);
    if (!st) {
        *tensors = l.n;
        *bytes = w.total;
    }
    free(l.v);
    return st;
}

enum qp_status qp_synth_llama_write(const char *config_path, const char *outdir,
                                    const struct qp_synth_opts *opts,
                                    struct qp_error *err)
{
    struct writer w;
    struct plan_list l = {0};
    enum qp_status st = prepare(config_path, opts, &w, &l, err);
    w.buf = st ? NULL : malloc(CHUNK * w.esize);
    if (!st && !w.buf)
        st = qp_fail(err, QP_E_NOMEM, "out of memory");
    struct qp_outdir *od = NULL;
    if (!st)
        st = qp_outdir_open(outdir, &od, err);
    if (!st)
        st = write_all(&w, config_path, od->tmp_path, err);
    if (!st)
        st = qp_outdir_commit(od, err);
    else
        qp_outdir_abort(od);
    free(w.buf);
    free(l.v);
    return st;
}
