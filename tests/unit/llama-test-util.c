/* tests/unit/llama-test-util.c: tiny checkpoints and the reference forward
 * (tests/unit/llama-test-util.h). */
#include "tests/unit/llama-test-util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fileio.h"
#include "core/half.h"
#include "core/tensor.h"
#include "model/op.h"
#include "formats/dump.h"
#include "tests/test.h"

struct tl_cfg tl_default(void)
{
    struct tl_cfg c = {0};
    c.model_type = "llama";
    c.hidden = 32;
    c.inter = 48;
    c.layers = 2;
    c.heads = 4;
    c.kv_heads = 2;
    c.head_dim = 8;
    c.vocab = 50;
    c.theta = 10000.0;
    c.dtype = QP_DTYPE_F32;
    c.seed = 1;
    return c;
}

/* ---- writing ---------------------------------------------------------------- */

struct writer {
    const struct tl_cfg *c;
    struct qp_dump_writer *w[2];
    char names[512][96];
    int shard_of[512];
    int n;
    unsigned seed;
    bool ok;
};

static float rnd(unsigned *s, float a)
{
    *s = *s * 1664525u + 1013904223u;
    return ((float)(*s >> 8) / 16777216.0f * 2.0f - 1.0f) * a;
}

static float stored(enum qp_dtype dt, float v)
{
    if (dt == QP_DTYPE_BF16)
        return qp_bf16_to_f32(qp_f32_to_bf16(v));
    if (dt == QP_DTYPE_F16)
        return qp_f16_to_f32(qp_f32_to_f16(v));
    return v;
}

/* A tensor [d0] or [d0, d1] of values center + uniform(+-a), written to
 * shard (n % 2 when sharded) and returned as float32 (malloc'd). */
static float *tensor(struct writer *wr, const char *name, int d0, int d1,
                     float center, float a)
{
    size_t n = (size_t)d0 * (size_t)(d1 ? d1 : 1);
    float *f = malloc(n * sizeof *f);
    int64_t shape[2] = {d0, d1};
    struct qp_tensor *t = NULL;
    struct qp_error err;
    if (!f || qp_tensor_new(name, wr->c->dtype, d1 ? 2 : 1, shape, &t, &err)) {
        wr->ok = false;
        free(f);
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        f[i] = stored(wr->c->dtype, center + rnd(&wr->seed, a));
        qp_elem_set_f64(wr->c->dtype, t->data, i, f[i]);
    }
    int s = wr->w[1] ? wr->n % 2 : 0;
    if (qp_dump_writer_add(wr->w[s], t, &err))
        wr->ok = false;
    snprintf(wr->names[wr->n], sizeof wr->names[0], "%s", name);
    wr->shard_of[wr->n++] = s;
    qp_tensor_free(t);
    return f;
}

static float *lin(struct writer *wr, const char *p, const char *mod, int out,
                  int in)
{
    char name[96];
    snprintf(name, sizeof name, "%s.%s.weight", p, mod);
    return tensor(wr, name, out, in, 0, 1.7f / sqrtf((float)in));
}

static float *bias(struct writer *wr, const char *p, const char *mod, int out)
{
    char name[96];
    snprintf(name, sizeof name, "%s.%s.bias", p, mod);
    return tensor(wr, name, out, 0, 0, 0.2f);
}

bool tl_write_config(const char *dir, const struct tl_cfg *c)
{
    char rope[256] = "null", window[32] = "null", text[2048];
    if (c->rope && !strcmp(c->rope, "linear"))
        snprintf(rope, sizeof rope, "{\"type\": \"linear\", \"factor\": %g}",
                 c->factor);
    else if (c->rope)
        snprintf(rope, sizeof rope, "{\"rope_type\": \"%s\", \"factor\": %g, "
                 "\"low_freq_factor\": 1.0, \"high_freq_factor\": 4.0, "
                 "\"original_max_position_embeddings\": %d}", c->rope, c->factor,
                 c->orig_max);
    if (c->window)
        snprintf(window, sizeof window, "%d", c->window);
    const char *arch = c->arch ? c->arch
                       : !strcmp(c->model_type, "qwen2") ? "Qwen2ForCausalLM"
                       : !strcmp(c->model_type, "mistral") ? "MistralForCausalLM"
                                                           : "LlamaForCausalLM";
    snprintf(text, sizeof text,
             "{\"architectures\": [\"%s\"], \"model_type\": \"%s\",\n"
             " \"hidden_size\": %d, \"intermediate_size\": %d,\n"
             " \"num_hidden_layers\": %d, \"num_attention_heads\": %d,\n"
             " \"num_key_value_heads\": %d, \"head_dim\": %d, \"vocab_size\": %d,\n"
             " \"max_position_embeddings\": %d, \"rms_norm_eps\": 1e-05,\n"
             " \"rope_theta\": %g, \"rope_scaling\": %s, \"sliding_window\": %s,\n"
             " \"tie_word_embeddings\": %s, \"hidden_act\": \"silu\",\n"
             " \"bos_token_id\": 1, \"eos_token_id\": 2}\n",
             arch, c->model_type, c->hidden, c->inter, c->layers, c->heads,
             c->kv_heads, c->head_dim, c->vocab, c->max_pos ? c->max_pos : 64,
             c->theta, rope, window, c->tie ? "true" : "false");
    char *path = qp_path_join(dir, "config.json");
    bool ok = path && qp_test_write_file(path, text, strlen(text));
    free(path);
    return ok;
}

static bool write_index(const char *dir, const struct writer *wr)
{
    size_t cap = 64 + (size_t)wr->n * 160, len = 0;
    char *t = malloc(cap);
    if (!t)
        return false;
    len += (size_t)snprintf(t + len, cap - len, "{\"metadata\": {}, \"weight_map\": {");
    for (int i = 0; i < wr->n; i++)
        len += (size_t)snprintf(t + len, cap - len, "%s\"%s\": "
                                "\"model-0000%d-of-00002.safetensors\"",
                                i ? ", " : "", wr->names[i], wr->shard_of[i] + 1);
    len += (size_t)snprintf(t + len, cap - len, "}}\n");
    char *path = qp_path_join(dir, "model.safetensors.index.json");
    bool ok = path && qp_test_write_file(path, t, len);
    free(path);
    free(t);
    return ok;
}

static void weights(struct writer *wr, struct tl_model *m)
{
    const struct tl_cfg *c = wr->c;
    int h = c->hidden, qd = c->heads * c->head_dim, kvd = c->kv_heads * c->head_dim;
    m->embed = tensor(wr, "model.embed_tokens.weight", c->vocab, h, 0, 1.0f);
    for (int l = 0; l < c->layers; l++) {
        char p[64];
        struct tl_layer *L = &m->l[l];
        snprintf(p, sizeof p, "model.layers.%d", l);
        char n1[96], n2[96];
        snprintf(n1, sizeof n1, "%s.input_layernorm.weight", p);
        snprintf(n2, sizeof n2, "%s.post_attention_layernorm.weight", p);
        L->ln1 = tensor(wr, n1, h, 0, 1.0f, 0.2f);
        L->q = lin(wr, p, "self_attn.q_proj", qd, h);
        L->k = lin(wr, p, "self_attn.k_proj", kvd, h);
        L->v = lin(wr, p, "self_attn.v_proj", kvd, h);
        if (c->bias) {
            L->qb = bias(wr, p, "self_attn.q_proj", qd);
            L->kb = bias(wr, p, "self_attn.k_proj", kvd);
            L->vb = bias(wr, p, "self_attn.v_proj", kvd);
        }
        L->o = lin(wr, p, "self_attn.o_proj", h, qd);
        L->ln2 = tensor(wr, n2, h, 0, 1.0f, 0.2f);
        L->gate = lin(wr, p, "mlp.gate_proj", c->inter, h);
        L->up = lin(wr, p, "mlp.up_proj", c->inter, h);
        L->down = lin(wr, p, "mlp.down_proj", h, c->inter);
    }
    m->norm = tensor(wr, "model.norm.weight", h, 0, 1.0f, 0.2f);
    m->lm = c->tie ? m->embed : tensor(wr, "lm_head.weight", c->vocab, h, 0, 0.5f);
}

bool tl_write_model(const char *dir, const struct tl_cfg *c, struct tl_model *out)
{
    struct writer wr = {.c = c, .seed = c->seed * 7919u + 17u, .ok = true};
    struct tl_model m = {*c, NULL, NULL, NULL, calloc((size_t)c->layers, sizeof *m.l)};
    struct qp_error err;
    char *p0 = qp_path_join(dir, c->shards > 1 ? "model-00001-of-00002.safetensors"
                                               : "model.safetensors");
    char *p1 = qp_path_join(dir, "model-00002-of-00002.safetensors");
    bool ok = m.l && p0 && p1 && tl_write_config(dir, c) &&
              !qp_dump_writer_open(p0, QP_DUMP_SAFETENSORS, &wr.w[0], &err) &&
              (c->shards < 2 ||
               !qp_dump_writer_open(p1, QP_DUMP_SAFETENSORS, &wr.w[1], &err));
    if (ok)
        weights(&wr, &m);
    ok = ok && wr.ok;
    for (int s = 0; s < 2; s++) {
        if (ok && wr.w[s])
            ok = !qp_dump_writer_commit(wr.w[s], &err);
        else
            qp_dump_writer_abort(wr.w[s]);
    }
    if (ok && c->shards > 1)
        ok = write_index(dir, &wr);
    free(p0);
    free(p1);
    if (out && ok)
        *out = m;
    else
        tl_model_free(&m);
    return ok;
}

void tl_model_free(struct tl_model *m)
{
    for (int l = 0; m->l && l < m->c.layers; l++) {
        struct tl_layer *L = &m->l[l];
        float *all[] = {L->ln1, L->q, L->qb, L->k, L->kb, L->v, L->vb, L->o,
                        L->ln2, L->gate, L->up, L->down};
        for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
            free(all[i]);
    }
    if (m->lm != m->embed)
        free(m->lm);
    free(m->embed);
    free(m->norm);
    free(m->l);
    memset(m, 0, sizeof *m);
}

/* ---- the reference forward ------------------------------------------------------ */

static void rmsnorm(const double *x, const float *w, int h, double *y)
{
    double ss = 0;
    for (int i = 0; i < h; i++)
        ss += x[i] * x[i];
    double r = 1.0 / sqrt(ss / h + 1e-5);
    for (int i = 0; i < h; i++)
        y[i] = w[i] * (x[i] * r);
}

/* y[out] = W[out, in] x (+ b) */
static void matvec(const float *w, const float *b, const double *x, int out,
                   int in, double *y)
{
    for (int o = 0; o < out; o++) {
        double s = b ? b[o] : 0;
        for (int i = 0; i < in; i++)
            s += (double)w[(size_t)o * in + i] * x[i];
        y[o] = s;
    }
}

static void inv_freq(const struct tl_cfg *c, double *f)
{
    int d = c->head_dim;
    for (int i = 0; i < d / 2; i++) {
        f[i] = 1.0 / pow(c->theta, 2.0 * i / d);
        if (c->rope && !strcmp(c->rope, "linear")) {
            f[i] /= c->factor;
        } else if (c->rope) { /* llama3, low 1, high 4 */
            double wl = 2 * M_PI / f[i], low_wl = c->orig_max / 1.0,
                   high_wl = c->orig_max / 4.0;
            if (wl > low_wl) {
                f[i] /= c->factor;
            } else if (wl >= high_wl) {
                double s = (c->orig_max / wl - 1.0) / (4.0 - 1.0);
                f[i] = (1 - s) * f[i] / c->factor + s * f[i];
            }
        }
    }
}

static void rope(double *x, const double *f, int d, int p)
{
    for (int i = 0; i < d / 2; i++) {
        double a = x[i], b = x[i + d / 2], cs = cos(p * f[i]), sn = sin(p * f[i]);
        x[i] = a * cs - b * sn;
        x[i + d / 2] = b * cs + a * sn;
    }
}

static void attention(const struct tl_cfg *c, const double *q, const double *k,
                      const double *v, int T, double *out)
{
    int d = c->head_dim, qd = c->heads * d, kvd = c->kv_heads * d;
    int rep = c->heads / c->kv_heads;
    double *s = malloc((size_t)T * sizeof *s);
    for (int h = 0; h < c->heads; h++) {
        int g = h / rep;
        for (int t = 0; t < T; t++) {
            double m = -INFINITY, sum = 0;
            int lo = c->window ? t - c->window + 1 : 0;
            lo = lo < 0 ? 0 : lo;
            for (int j = lo; j <= t; j++) {
                double dot = 0;
                for (int i = 0; i < d; i++)
                    dot += q[t * qd + h * d + i] * k[j * kvd + g * d + i];
                s[j] = dot / sqrt((double)d);
                m = s[j] > m ? s[j] : m;
            }
            for (int j = lo; j <= t; j++)
                sum += (s[j] = exp(s[j] - m));
            for (int i = 0; i < d; i++) {
                double acc = 0;
                for (int j = lo; j <= t; j++)
                    acc += s[j] / sum * v[j * kvd + g * d + i];
                out[t * qd + h * d + i] = acc;
            }
        }
    }
    free(s);
}

void tl_ref_forward(const struct tl_model *m, const int32_t *ids, int T,
                    double *logits, double *hidden)
{
    const struct tl_cfg *c = &m->c;
    int h = c->hidden, d = c->head_dim, qd = c->heads * d, kvd = c->kv_heads * d;
    size_t big = (size_t)T * (size_t)(qd > c->inter ? (qd > h ? qd : h)
                                                   : (c->inter > h ? c->inter : h));
    double *x = calloc((size_t)T * h, sizeof *x), *n = calloc(big, sizeof *n);
    double *q = calloc(big, sizeof *q), *k = calloc(big, sizeof *k);
    double *v = calloc(big, sizeof *v), *a = calloc(big, sizeof *a);
    double *gt = calloc(big, sizeof *gt), *f = calloc((size_t)d, sizeof *f);
    inv_freq(c, f);
    for (int t = 0; t < T; t++)
        for (int i = 0; i < h; i++)
            x[t * h + i] = m->embed[(size_t)ids[t] * h + i];
    for (int l = 0; l < c->layers; l++) {
        const struct tl_layer *L = &m->l[l];
        for (int t = 0; t < T; t++) {
            rmsnorm(x + t * h, L->ln1, h, n + t * h);
            matvec(L->q, L->qb, n + t * h, qd, h, q + t * qd);
            matvec(L->k, L->kb, n + t * h, kvd, h, k + t * kvd);
            matvec(L->v, L->vb, n + t * h, kvd, h, v + t * kvd);
            for (int hh = 0; hh < c->heads; hh++)
                rope(q + t * qd + hh * d, f, d, t);
            for (int hh = 0; hh < c->kv_heads; hh++)
                rope(k + t * kvd + hh * d, f, d, t);
        }
        attention(c, q, k, v, T, a);
        for (int t = 0; t < T; t++) {
            matvec(L->o, NULL, a + t * qd, h, qd, n + t * h);
            for (int i = 0; i < h; i++)
                x[t * h + i] += n[t * h + i];
        }
        for (int t = 0; t < T; t++) {
            double *hn = n + t * h, *g = gt + (size_t)t * c->inter,
                   *u = q + (size_t)t * c->inter;
            rmsnorm(x + t * h, L->ln2, h, hn);
            matvec(L->gate, NULL, hn, c->inter, h, g);
            matvec(L->up, NULL, hn, c->inter, h, u);
            for (int i = 0; i < c->inter; i++)
                g[i] = g[i] / (1 + exp(-g[i])) * u[i];
        }
        for (int t = 0; t < T; t++) {
            matvec(L->down, NULL, gt + (size_t)t * c->inter, h, c->inter, n);
            for (int i = 0; i < h; i++)
                x[t * h + i] += n[i];
        }
        if (hidden)
            memcpy(hidden + (size_t)l * T * h, x, (size_t)T * h * sizeof *x);
    }
    for (int t = 0; t < T; t++) {
        rmsnorm(x + t * h, m->norm, h, n);
        matvec(m->lm, NULL, n, c->vocab, h, logits + (size_t)t * c->vocab);
    }
    free(x);
    free(n);
    free(q);
    free(k);
    free(v);
    free(a);
    free(gt);
    free(f);
}

double tl_rel_l2(const float *a, const double *b, size_t n)
{
    double e = 0, r = 0;
    for (size_t i = 0; i < n; i++) {
        e += (a[i] - b[i]) * (a[i] - b[i]);
        r += b[i] * b[i];
    }
    return r > 0 ? sqrt(e / r) : sqrt(e);
}
