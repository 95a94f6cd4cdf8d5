/* model/kvcache.c: the attention layers' key/value cache (model/kvcache.h). */
#include "model/kvcache.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "core/size.h"

enum qp_status qp_kv_cache_new(int n_layers, struct qp_kv_cache **out,
                               struct qp_error *err)
{
    *out = NULL;
    struct qp_kv_cache *c = calloc(1, sizeof *c);
    if (c)
        c->layer = calloc((size_t)(n_layers > 0 ? n_layers : 1), sizeof *c->layer);
    if (!c || !c->layer) {
        free(c);
        return qp_fail(err, QP_E_NOMEM, "KV cache: out of memory");
    }
    c->n_layers = n_layers;
    *out = c;
    return QP_OK;
}

void qp_kv_cache_free(struct qp_kv_cache *c)
{
    if (!c)
        return;
    for (int l = 0; l < c->n_layers; l++) {
        free(c->layer[l].k);
        free(c->layer[l].v);
    }
    free(c->layer);
    free(c);
}

int64_t qp_kv_cache_len(const struct qp_kv_cache *c)
{
    return c && c->n_layers ? c->layer[0].len : 0;
}

void qp_kv_cache_truncate(struct qp_kv_cache *c, int64_t len)
{
    for (int l = 0; c && l < c->n_layers; l++)
        if (len >= 0 && len < c->layer[l].len)
            c->layer[l].len = len;
}

/* Moves the rows of a [batch*heads][old cap][hd] array into one of
 * capacity cap (len rows each). */
static float *regrow(float *old, const struct qp_kv_layer *L, int64_t cap,
                     size_t bytes)
{
    float *p = malloc(bytes ? bytes : 1);
    if (!p || !old)
        return p;
    size_t rows = (size_t)L->len * (size_t)L->head_dim;
    for (int64_t s = 0; s < L->batch * L->kv_heads; s++)
        memcpy(p + (size_t)s * (size_t)cap * (size_t)L->head_dim,
               old + (size_t)s * (size_t)L->cap * (size_t)L->head_dim,
               rows * sizeof *p);
    return p;
}

enum qp_status qp_kv_cache_reserve(struct qp_kv_cache *c, int l, int64_t batch,
                                   int64_t kv_heads, int64_t head_dim,
                                   int64_t t, struct qp_error *err)
{
    if (l < 0 || l >= c->n_layers)
        return qp_fail(err, QP_E_INVAL, "KV cache: layer %d of %d", l,
                       c->n_layers);
    struct qp_kv_layer *L = &c->layer[l];
    if (L->k && (L->batch != batch || L->kv_heads != kv_heads ||
                 L->head_dim != head_dim))
        return qp_fail(err, QP_E_SHAPE, "KV cache: layer %d holds a batch of "
                       "%lld x %lld heads x %lld, this run has %lld x %lld x %lld",
                       l, (long long)L->batch, (long long)L->kv_heads,
                       (long long)L->head_dim, (long long)batch,
                       (long long)kv_heads, (long long)head_dim);
    if (L->k && L->len + t <= L->cap)
        return QP_OK;
    int64_t cap = L->cap ? L->cap : 64;
    while (cap < L->len + t)
        cap *= 2;
    size_t n = 0;
    bool overflow = qp_size_mul((size_t)batch, (size_t)kv_heads, &n) ||
                    qp_size_mul(n, (size_t)cap, &n) ||
                    qp_size_mul(n, (size_t)head_dim, &n) ||
                    qp_size_mul(n, sizeof(float), &n);
    if (overflow)
        return qp_fail(err, QP_E_OVERFLOW, "KV cache: %lld positions are too "
                       "many", (long long)cap);
    L->batch = batch;
    L->kv_heads = kv_heads;
    L->head_dim = head_dim;
    float *k = regrow(L->k, L, cap, n), *v = regrow(L->v, L, cap, n);
    if (!k || !v) {
        free(k);
        free(v);
        return qp_fail(err, QP_E_NOMEM, "KV cache: cannot allocate %zu bytes",
                       2 * n);
    }
    free(L->k);
    free(L->v);
    L->k = k;
    L->v = v;
    L->cap = cap;
    return QP_OK;
}
