/* model/op-llm-attn.c: the qprobe-domain Attention operator
 * (model/op-llm.h), Hugging Face's LlamaAttention after the projections:
 *
 *   q [.., T, heads * d], k and v [.., T, kv_heads * d] (the leading dims
 *   are the batch), inv_freq [d / 2] the rotary frequencies
 *   (model.rotary_emb.inv_freq).
 *
 * For each sequence b and query head h, with kv head g = h / (heads /
 * kv_heads) (transformers' repeat_kv: consecutive query heads share a kv
 * head) and positions p = p0 + t (p0 = the KV cache's length, else 0):
 *
 *   RoPE, rotate-half: angle = (float)p * inv_freq[i], c = cosf, s = sinf,
 *     x'[i] = x[i] c - x[i + d/2] s,  x'[i + d/2] = x[i + d/2] c + x[i] s
 *   scores = (q' . k') * d^-0.5 over keys j <= p (and j > p - window when
 *     the node has a sliding window), softmax in float32 over j,
 *   out[t, h*d:(h+1)*d] = sum_j softmax_j v_j.
 *
 * With a KV cache (qp_op_ctx.state, model/kvcache.h; attribute layer
 * names the node's slot) the new keys (after RoPE) and values are
 * appended and the queries attend over every cached position. */
#include <math.h>
#include <string.h>

#include "core/parallel.h"
#include "kernels/blas.h"
#include "model/kvcache.h"
#include "model/op-llm.h"

/* Query rows scored at a time: the scores of a block are [QB, keys]. */
#define QB 128

const struct qp_attr_spec qp_llm_attn_attrs[] = {
    {"num_heads", QP_ATTR_INT}, {"num_kv_heads", QP_ATTR_INT},
    {"layer", QP_ATTR_INT},     {"window", QP_ATTR_INT},
    {NULL, 0}};

struct attn_geom {
    int64_t heads, kv_heads, d, batch, t;
};

enum qp_status qp_llm_attn_check(const struct qp_op_ctx *c, struct qp_error *err)
{
    int64_t h = qp_attr_int(c->n, "num_heads", 0);
    int64_t kv = qp_attr_int(c->n, "num_kv_heads", h);
    if (h < 1 || kv < 1 || h % kv || qp_attr_int(c->n, "layer", 0) < 0 ||
        qp_attr_int(c->n, "window", 0) < 0)
        return qp_op_fail(err, c, QP_E_FORMAT, "num_heads %lld must be a "
                          "positive multiple of num_kv_heads %lld (layer and "
                          "window >= 0)", (long long)h, (long long)kv);
    return QP_OK;
}

static enum qp_status geom(const struct qp_op_ctx *c, struct attn_geom *g,
                           struct qp_error *err)
{
    const struct qp_tensor *q = c->in[0], *k = c->in[1], *v = c->in[2];
    const struct qp_tensor *f = c->in[3];
    g->heads = qp_attr_int(c->n, "num_heads", 0);
    g->kv_heads = qp_attr_int(c->n, "num_kv_heads", g->heads);
    if (!qp_dtype_traits(f->dtype)->is_float || f->ndim != 1 || f->shape[0] < 1)
        return qp_op_fail(err, c, QP_E_SHAPE, "inv_freq must be a float vector");
    g->d = 2 * f->shape[0];
    for (int i = 0; i < 3; i++) {
        enum qp_status st = qp_op_want_f32(c, i, err);
        if (st)
            return st;
    }
    bool ok = q->ndim >= 2 && q->ndim == k->ndim && q->ndim == v->ndim &&
              q->shape[q->ndim - 1] == g->heads * g->d &&
              k->shape[k->ndim - 1] == g->kv_heads * g->d &&
              v->shape[v->ndim - 1] == g->kv_heads * g->d;
    for (int i = 0; ok && i < q->ndim - 1; i++)
        ok = q->shape[i] == k->shape[i] && q->shape[i] == v->shape[i];
    if (!ok) {
        char s0[128], s1[128], s2[128];
        qp_shape_str(q->ndim, q->shape, s0, sizeof s0);
        qp_shape_str(k->ndim, k->shape, s1, sizeof s1);
        qp_shape_str(v->ndim, v->shape, s2, sizeof s2);
        return qp_op_fail(err, c, QP_E_SHAPE, "q %s, k %s, v %s do not fit %lld "
                          "heads, %lld kv heads of %lld", s0, s1, s2,
                          (long long)g->heads, (long long)g->kv_heads,
                          (long long)g->d);
    }
    g->t = q->shape[q->ndim - 2];
    g->batch = 1;
    for (int i = 0; i < q->ndim - 2; i++)
        g->batch *= q->shape[i];
    return QP_OK;
}

enum qp_status qp_llm_attn_infer(const struct qp_op_ctx *c, struct qp_tdesc *out,
                                 struct qp_error *err)
{
    struct attn_geom g;
    enum qp_status st = geom(c, &g, err);
    if (!st)
        qp_tdesc_of(c->in[0], out);
    return st;
}

/* ---- the computation ------------------------------------------------------- */

struct attn_job {
    struct attn_geom g;
    const float *q, *k, *v;
    float *y;
    const float *cosv, *sinv;    /* [t][d/2] for positions p0 + t */
    struct qp_kv_layer *cache;   /* NULL: no cache */
    int64_t p0, window;
    float scale;
    float *scratch;              /* per thread: per_thread floats */
    size_t per_thread;
    struct qp_pool *serial;
};

/* dst[d] = RoPE of src[d] at table row t. */
static void rope(const struct attn_job *j, int64_t t, const float *src, float *dst)
{
    int64_t half = j->g.d / 2;
    const float *cs = j->cosv + t * half, *sn = j->sinv + t * half;
    for (int64_t i = 0; i < half; i++) {
        float a = src[i], b = src[i + half];
        dst[i] = a * cs[i] - b * sn[i];
        dst[i + half] = b * cs[i] + a * sn[i];
    }
}

/* Softmax of one row of scores over keys [0, n) with those after `last`
 * (and at or before last - window) masked out: exact zeros. */
static void softmax_row(float *s, int64_t n, int64_t last, int64_t window)
{
    int64_t lo = window > 0 && last - window + 1 > 0 ? last - window + 1 : 0;
    float m = -INFINITY;
    for (int64_t j = lo; j <= last && j < n; j++)
        m = s[j] > m ? s[j] : m;
    double sum = 0;
    for (int64_t j = 0; j < n; j++) {
        float e = j >= lo && j <= last ? expf(s[j] - m) : 0.0f;
        s[j] = e;
        sum += e;
    }
    float inv = (float)sum;
    for (int64_t j = 0; j < n; j++)
        s[j] = s[j] / inv;
}

/* Sequence b, kv head g and its query heads. */
static void attn_group(const struct attn_job *j, int64_t b, int64_t g, float *w)
{
    const struct attn_geom *G = &j->g;
    int64_t d = G->d, T = G->t, tk = j->p0 + T, rep = G->heads / G->kv_heads;
    size_t qw = (size_t)(G->heads * d), kw = (size_t)(G->kv_heads * d);
    const float *kin = j->k + (size_t)b * (size_t)T * kw + (size_t)(g * d);
    const float *vin = j->v + (size_t)b * (size_t)T * kw + (size_t)(g * d);
    float *qbuf = w, *kbuf = qbuf + T * d, *s = kbuf + T * d;
    const float *K = kbuf, *V = vin;
    size_t ldk = (size_t)d, ldv = kw;
    if (j->cache) {
        for (int64_t t = 0; t < T; t++) {
            rope(j, t, kin + (size_t)t * kw, qp_kv_key(j->cache, b, g, j->p0 + t));
            memcpy(qp_kv_value(j->cache, b, g, j->p0 + t), vin + (size_t)t * kw,
                   (size_t)d * sizeof(float));
        }
        K = qp_kv_key(j->cache, b, g, 0);
        V = qp_kv_value(j->cache, b, g, 0);
        ldv = (size_t)d;
    } else {
        for (int64_t t = 0; t < T; t++)
            rope(j, t, kin + (size_t)t * kw, kbuf + t * d);
    }
    for (int64_t r = 0; r < rep; r++) {
        int64_t h = g * rep + r;
        const float *qin = j->q + (size_t)b * (size_t)T * qw + (size_t)(h * d);
        for (int64_t t = 0; t < T; t++)
            rope(j, t, qin + (size_t)t * qw, qbuf + t * d);
        for (int64_t t0 = 0; t0 < T; t0 += QB) {
            int64_t nq = T - t0 < QB ? T - t0 : QB;
            int64_t nk = j->p0 + t0 + nq; /* keys any row of the block sees */
            nk = nk < tk ? nk : tk;
            qp_blas_sgemm(j->serial, false, true, (size_t)nq, (size_t)nk,
                          (size_t)d, j->scale, qbuf + t0 * d, (size_t)d, K, ldk,
                          0.0f, s, (size_t)nk);
            for (int64_t t = 0; t < nq; t++)
                softmax_row(s + t * nk, nk, j->p0 + t0 + t, j->window);
            float *y = j->y + ((size_t)b * (size_t)T + (size_t)t0) * qw +
                       (size_t)(h * d);
            qp_blas_sgemm(j->serial, false, false, (size_t)nq, (size_t)d,
                          (size_t)nk, 1.0f, s, (size_t)nk, V, ldv, 0.0f, y, qw);
        }
    }
}

static void attn_part(void *ctx, int t, int nt)
{
    const struct attn_job *j = ctx;
    size_t b, e;
    qp_parallel_split((size_t)(j->g.batch * j->g.kv_heads), t, nt, 1, &b, &e);
    for (size_t i = b; i < e; i++)
        attn_group(j, (int64_t)i / j->g.kv_heads, (int64_t)i % j->g.kv_heads,
                   j->scratch + (size_t)t * j->per_thread);
}

/* cos/sin [t][d/2] of positions p0 .. p0 + T - 1, in scratch. */
static void rope_table(const struct qp_tensor *inv, int64_t p0, int64_t T,
                       int64_t half, float *cosv, float *sinv)
{
    float f[4096];
    for (int64_t i0 = 0; i0 < half; i0 += 4096) {
        int64_t n = half - i0 < 4096 ? half - i0 : 4096;
        qp_tensor_read_f32(inv, (size_t)i0, (size_t)n, f);
        for (int64_t t = 0; t < T; t++)
            for (int64_t i = 0; i < n; i++) {
                /* torch: (inv_freq @ position) in float32, then cos/sin */
                float a = (float)(p0 + t) * f[i];
                cosv[t * half + i0 + i] = cosf(a);
                sinv[t * half + i0 + i] = sinf(a);
            }
    }
}

enum qp_status qp_llm_attn_run(const struct qp_op_ctx *c,
                               struct qp_tensor *const *out,
                               struct qp_error *err)
{
    struct attn_job j = {.q = c->in[0]->data, .k = c->in[1]->data,
                         .v = c->in[2]->data, .y = out[0]->data};
    enum qp_status st = geom(c, &j.g, err);
    if (st)
        return st;
    struct qp_kv_cache *kv = c->state;
    int layer = (int)qp_attr_int(c->n, "layer", 0);
    if (kv) {
        if ((st = qp_kv_cache_reserve(kv, layer, j.g.batch, j.g.kv_heads, j.g.d,
                                      j.g.t, err)))
            return qp_op_fail(err, c, st, "%s", err->msg);
        j.cache = &kv->layer[layer];
        j.p0 = j.cache->len;
    }
    j.window = qp_attr_int(c->n, "window", 0);
    j.scale = (float)(1.0 / sqrt((double)j.g.d));
    int64_t T = j.g.t, d = j.g.d, tk = j.p0 + T;
    int nt = qp_pool_threads(c->pool);
    j.per_thread = (size_t)(2 * T * d + (T < QB ? T : QB) * tk);
    size_t table = (size_t)(T * d), total;
    if (__builtin_mul_overflow(j.per_thread, (size_t)nt, &total) ||
        __builtin_add_overflow(total, table, &total) ||
        __builtin_mul_overflow(total, sizeof(float), &total))
        return qp_op_fail(err, c, QP_E_OVERFLOW, "%lld positions are too many",
                          (long long)tk);
    float *scratch = qp_op_scratch(c, total ? total : 1);
    j.serial = qp_pool_new(1);
    if (!scratch || !j.serial) {
        qp_pool_free(j.serial);
        return qp_op_fail(err, c, QP_E_NOMEM, "out of memory (%zu bytes of "
                          "scratch)", total);
    }
    j.cosv = scratch;
    j.sinv = scratch + table / 2;
    rope_table(c->in[3], j.p0, T, d / 2, scratch, scratch + table / 2);
    j.scratch = scratch + table;
    int64_t items = j.g.batch * j.g.kv_heads;
    if (T && items)
        qp_pool_run(c->pool, attn_part, &j, items < nt ? (int)items : nt);
    qp_pool_free(j.serial);
    if (j.cache)
        j.cache->len += T;
    return QP_OK;
}

uint64_t qp_llm_attn_macs(const struct qp_node *n,
                          const struct qp_tdesc *const *in,
                          const struct qp_tdesc *out)
{
    (void)n;
    (void)out;
    /* scores and weighted sums over the causal half: T^2 d per head */
    const struct qp_tdesc *q = in[0];
    if (q->ndim < 2)
        return 0;
    uint64_t t = (uint64_t)q->shape[q->ndim - 2];
    return qp_tdesc_dims(q, 0, q->ndim - 2) * t * t *
           (uint64_t)q->shape[q->ndim - 1];
}
