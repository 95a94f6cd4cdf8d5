/* model/llama-config.c: Llama-family config.json (model/llama-config.h). */
#include "model/llama-config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fileio.h"
#include "formats/json.h"

const char *qp_llama_family_name(enum qp_llama_family f)
{
    static const char *const names[] = {"llama", "mistral", "qwen2"};
    _Static_assert(sizeof names / sizeof names[0] == QP_LLAMA_FAMILY_COUNT,
                   "family names");
    return (unsigned)f < QP_LLAMA_FAMILY_COUNT ? names[f] : "?";
}

/* ---- typed getters ------------------------------------------------------ */

struct cfg_reader {
    const struct qp_json *root;
    const char *what;
    struct qp_error *err;
};

/* A whole number in [lo, hi] at key; def when absent (required: absent is
 * an error). A JSON null counts as absent. */
static enum qp_status get_int(const struct cfg_reader *r, const char *key,
                              bool required, int64_t def, int64_t lo, int64_t hi,
                              int64_t *out)
{
    const struct qp_json *n = qp_json_get(r->root, key);
    double v;
    *out = def;
    if (!n || qp_json_type(n) == QP_JSON_NULL) {
        if (required)
            return qp_fail(r->err, QP_E_FORMAT, "%s: '%s' is missing", r->what,
                           key);
        return QP_OK;
    }
    if (!qp_json_num(n, &v) || v != floor(v) || v < (double)lo || v > (double)hi)
        return qp_fail(r->err, QP_E_FORMAT, "%s: '%s' must be a whole number in "
                       "[%lld, %lld]", r->what, key, (long long)lo,
                       (long long)hi);
    *out = (int64_t)v;
    return QP_OK;
}

/* A positive finite number at key (of object o), def when absent. */
static enum qp_status get_num(const struct cfg_reader *r, const struct qp_json *o,
                              const char *key, bool required, double def,
                              double *out)
{
    const struct qp_json *n = qp_json_get(o, key);
    *out = def;
    if (!n || qp_json_type(n) == QP_JSON_NULL) {
        if (required)
            return qp_fail(r->err, QP_E_FORMAT, "%s: '%s' is missing", r->what,
                           key);
        return QP_OK;
    }
    if (!qp_json_num(n, out) || !isfinite(*out) || *out <= 0)
        return qp_fail(r->err, QP_E_FORMAT, "%s: '%s' must be a positive number",
                       r->what, key);
    return QP_OK;
}

static enum qp_status get_bool(const struct cfg_reader *r, const char *key,
                               bool def, bool *out)
{
    const struct qp_json *n = qp_json_get(r->root, key);
    *out = def;
    if (!n || qp_json_type(n) == QP_JSON_NULL)
        return QP_OK;
    if (!qp_json_bool(n, out))
        return qp_fail(r->err, QP_E_FORMAT, "%s: '%s' must be true or false",
                       r->what, key);
    return QP_OK;
}

/* bos/eos: a number or a list of numbers (the first); -1 when absent. */
static enum qp_status get_token(const struct cfg_reader *r, const char *key,
                                int64_t *out)
{
    const struct qp_json *n = qp_json_get(r->root, key);
    double v;
    *out = -1;
    if (n && qp_json_type(n) == QP_JSON_ARRAY)
        n = qp_json_size(n) ? qp_json_at(n, 0) : NULL;
    if (!n || qp_json_type(n) == QP_JSON_NULL)
        return QP_OK;
    if (!qp_json_num(n, &v) || v != floor(v) || v < 0 || v > 2147483647.0)
        return qp_fail(r->err, QP_E_FORMAT, "%s: '%s' must be a token id",
                       r->what, key);
    *out = (int64_t)v;
    return QP_OK;
}

static const char *get_str(const struct qp_json *o, const char *key)
{
    const char *s = NULL;
    const struct qp_json *n = qp_json_get(o, key);
    return n && qp_json_str(n, &s) ? s : NULL;
}

/* ---- family and rope ---------------------------------------------------- */

static enum qp_status family(const struct cfg_reader *r,
                             struct qp_llama_config *c)
{
    static const struct {
        const char *type, *arch;
        enum qp_llama_family f;
    } known[] = {
        {"llama", "LlamaForCausalLM", QP_LLAMA_LLAMA},
        {"mistral", "MistralForCausalLM", QP_LLAMA_MISTRAL},
        {"qwen2", "Qwen2ForCausalLM", QP_LLAMA_QWEN2},
    };
    const char *type = get_str(r->root, "model_type");
    const struct qp_json *archs = qp_json_get(r->root, "architectures");
    const char *arch = NULL;
    if (archs && qp_json_type(archs) == QP_JSON_ARRAY && qp_json_size(archs))
        qp_json_str(qp_json_at(archs, 0), &arch);
    for (size_t i = 0; type && i < sizeof known / sizeof known[0]; i++) {
        if (strcmp(type, known[i].type))
            continue;
        if (arch && strcmp(arch, known[i].arch))
            break;
        c->family = known[i].f;
        snprintf(c->model_type, sizeof c->model_type, "%s", type);
        snprintf(c->arch, sizeof c->arch, "%s", arch ? arch : "");
        return QP_OK;
    }
    return qp_fail(r->err, QP_E_UNSUPPORTED, "%s: architectures %s%s%s, "
                   "model_type %s%s%s: qprobe runs the Llama family "
                   "(LlamaForCausalLM/llama, MistralForCausalLM/mistral, "
                   "Qwen2ForCausalLM/qwen2)", r->what, arch ? "\"" : "",
                   arch ? arch : "(none)", arch ? "\"" : "", type ? "\"" : "",
                   type ? type : "(none)", type ? "\"" : "");
}

static enum qp_status rope(const struct cfg_reader *r, struct qp_llama_config *c)
{
    enum qp_status st = get_num(r, r->root, "rope_theta", false, 10000.0,
                                &c->rope_theta);
    const struct qp_json *s = qp_json_get(r->root, "rope_scaling");
    c->rope = QP_ROPE_DEFAULT;
    if (st || !s || qp_json_type(s) == QP_JSON_NULL)
        return st;
    if (qp_json_type(s) != QP_JSON_OBJECT)
        return qp_fail(r->err, QP_E_FORMAT, "%s: 'rope_scaling' must be an "
                       "object or null", r->what);
    const char *type = get_str(s, "rope_type");
    if (!type)
        type = get_str(s, "type");
    if (!type || !strcmp(type, "default"))
        return QP_OK;
    if (!strcmp(type, "linear")) {
        c->rope = QP_ROPE_LINEAR;
        return get_num(r, s, "factor", true, 1, &c->rope_factor);
    }
    if (strcmp(type, "llama3"))
        return qp_fail(r->err, QP_E_UNSUPPORTED, "%s: rope_scaling type \"%s\" "
                       "is not supported (default, linear and llama3 are)",
                       r->what, type);
    c->rope = QP_ROPE_LLAMA3;
    double old;
    if ((st = get_num(r, s, "factor", true, 1, &c->rope_factor)) ||
        (st = get_num(r, s, "low_freq_factor", true, 1, &c->rope_low)) ||
        (st = get_num(r, s, "high_freq_factor", true, 1, &c->rope_high)) ||
        (st = get_num(r, s, "original_max_position_embeddings", true, 1, &old)))
        return st;
    if (old != floor(old) || old > 1e9 || c->rope_high <= c->rope_low)
        return qp_fail(r->err, QP_E_FORMAT, "%s: rope_scaling: "
                       "original_max_position_embeddings must be a whole number "
                       "and high_freq_factor above low_freq_factor", r->what);
    c->rope_orig_max = (int64_t)old;
    return QP_OK;
}

/* ---- the config ---------------------------------------------------------- */

#define MAX_DIM ((int64_t)1 << 31)

static enum qp_status sizes(const struct cfg_reader *r, struct qp_llama_config *c)
{
    enum qp_status st;
    if ((st = get_int(r, "hidden_size", true, 0, 1, MAX_DIM, &c->hidden)) ||
        (st = get_int(r, "intermediate_size", true, 0, 1, MAX_DIM,
                      &c->intermediate)) ||
        (st = get_int(r, "num_hidden_layers", true, 0, 1, 100000, &c->n_layers)) ||
        (st = get_int(r, "num_attention_heads", true, 0, 1, 65536, &c->n_heads)) ||
        (st = get_int(r, "num_key_value_heads", false, c->n_heads, 1, 65536,
                      &c->n_kv_heads)) ||
        (st = get_int(r, "vocab_size", true, 0, 1, MAX_DIM, &c->vocab)) ||
        (st = get_int(r, "max_position_embeddings", false, 0, 1, MAX_DIM,
                      &c->max_pos)))
        return st;
    if (c->n_heads % c->n_kv_heads)
        return qp_fail(r->err, QP_E_FORMAT, "%s: num_key_value_heads %lld does "
                       "not divide num_attention_heads %lld", r->what,
                       (long long)c->n_kv_heads, (long long)c->n_heads);
    if (!qp_json_get(r->root, "head_dim") && c->hidden % c->n_heads)
        return qp_fail(r->err, QP_E_FORMAT, "%s: hidden_size %lld is not a "
                       "multiple of num_attention_heads %lld", r->what,
                       (long long)c->hidden, (long long)c->n_heads);
    if ((st = get_int(r, "head_dim", false, c->hidden / c->n_heads, 2, 65536,
                      &c->head_dim)))
        return st;
    if (c->head_dim % 2)
        return qp_fail(r->err, QP_E_FORMAT, "%s: head_dim %lld is odd (rotary "
                       "embeddings rotate pairs)", r->what,
                       (long long)c->head_dim);
    if (c->n_heads * c->head_dim > MAX_DIM)
        return qp_fail(r->err, QP_E_FORMAT, "%s: heads x head_dim is too large",
                       r->what);
    return get_num(r, r->root, "rms_norm_eps", false, 1e-6, &c->rms_eps);
}

static enum qp_status options(const struct cfg_reader *r,
                              struct qp_llama_config *c)
{
    enum qp_status st;
    bool attn_bias, sw;
    const char *act = get_str(r->root, "hidden_act");
    if (act && strcmp(act, "silu"))
        return qp_fail(r->err, QP_E_UNSUPPORTED, "%s: hidden_act \"%s\" is not "
                       "supported (the Llama family's MLP is SwiGLU: silu)",
                       r->what, act);
    if ((st = get_bool(r, "tie_word_embeddings", false, &c->tie)) ||
        (st = get_bool(r, "attention_bias", false, &attn_bias)) ||
        (st = get_bool(r, "mlp_bias", false, &c->mlp_bias)) ||
        (st = get_bool(r, "use_sliding_window", false, &sw)) ||
        (st = get_token(r, "bos_token_id", &c->bos_id)) ||
        (st = get_token(r, "eos_token_id", &c->eos_id)))
        return st;
    c->qkv_bias = c->family == QP_LLAMA_QWEN2 || attn_bias;
    c->o_bias = c->family == QP_LLAMA_LLAMA && attn_bias;
    if (c->family == QP_LLAMA_QWEN2 && sw)
        return qp_fail(r->err, QP_E_UNSUPPORTED, "%s: use_sliding_window true "
                       "(Qwen2's per-layer sliding window) is not supported",
                       r->what);
    if (c->family == QP_LLAMA_MISTRAL &&
        (st = get_int(r, "sliding_window", false, 0, 1, MAX_DIM,
                      &c->sliding_window)))
        return st;
    const char *dt = get_str(r->root, "torch_dtype");
    c->dtype = !dt ? QP_DTYPE_COUNT
             : !strcmp(dt, "bfloat16") ? QP_DTYPE_BF16
             : !strcmp(dt, "float16") ? QP_DTYPE_F16
             : !strcmp(dt, "float32") ? QP_DTYPE_F32 : QP_DTYPE_COUNT;
    return QP_OK;
}

enum qp_status qp_llama_config_parse(const char *text, const char *what,
                                     struct qp_llama_config *cfg,
                                     struct qp_error *err)
{
    memset(cfg, 0, sizeof *cfg);
    struct qp_json *root;
    enum qp_status st = qp_json_parse(text, what, &root, err);
    if (st)
        return st;
    struct cfg_reader r = {root, what, err};
    if (qp_json_type(root) != QP_JSON_OBJECT)
        st = qp_fail(err, QP_E_FORMAT, "%s: not a JSON object", what);
    if (!st)
        st = family(&r, cfg);
    if (!st)
        st = sizes(&r, cfg);
    if (!st)
        st = rope(&r, cfg);
    if (!st)
        st = options(&r, cfg);
    qp_json_free(root);
    return st;
}

enum qp_status qp_llama_config_load(const char *path, struct qp_llama_config *cfg,
                                    struct qp_error *err)
{
    char *text, what[4200];
    size_t len;
    enum qp_status st = qp_read_file(path, (size_t)16 << 20, &text, &len, err);
    if (st)
        return st;
    snprintf(what, sizeof what, "'%s'", path);
    st = qp_llama_config_parse(text, what, cfg, err);
    free(text);
    return st;
}

/* ---- rotary frequencies -------------------------------------------------- */

void qp_llama_inv_freq(const struct qp_llama_config *cfg, float *out)
{
    size_t half = (size_t)cfg->head_dim / 2;
    float theta = (float)cfg->rope_theta, d = (float)cfg->head_dim;
    /* torch: 1.0 / (base ** (arange(0, d, 2).float() / d)), all float32
     * (Python scalars enter float32 operations as float32) */
    for (size_t i = 0; i < half; i++)
        out[i] = 1.0f / powf(theta, (float)(2 * i) / d);
    float factor = (float)cfg->rope_factor;
    if (cfg->rope == QP_ROPE_LINEAR) {
        for (size_t i = 0; i < half; i++)
            out[i] = out[i] / factor;
        return;
    }
    if (cfg->rope != QP_ROPE_LLAMA3)
        return;
    /* transformers' _compute_llama3_parameters */
    double old = (double)cfg->rope_orig_max;
    float low_wl = (float)(old / cfg->rope_low), high_wl = (float)(old / cfg->rope_high);
    float lo = (float)cfg->rope_low, hi = (float)cfg->rope_high;
    float two_pi = (float)(2.0 * M_PI), oldf = (float)old;
    for (size_t i = 0; i < half; i++) {
        float f = out[i], wl = two_pi / f;
        float scaled = wl > low_wl ? f / factor : f;
        bool medium = !(wl < high_wl) && !(wl > low_wl);
        if (medium) {
            float s = (oldf / wl - lo) / (hi - lo);
            scaled = (1.0f - s) * scaled / factor + s * scaled;
        }
        out[i] = scaled;
    }
}
