/* model/kvcache.h: the key/value cache of an LLM's attention layers, the
 * run-wide state (qp_exec_opts.state, model/exec.h) through which the
 * qprobe-domain Attention operator (model/op-llm-attn.c) remembers the
 * keys and values of earlier positions.
 *
 * Without a cache, Attention sees positions 0..T-1 of its input alone
 * (a prefill). With one, a run on T new tokens places them at positions
 * len..len+T-1 of every sequence of the batch, attends over the cached
 * positions and the new ones, and appends the new keys (after RoPE) and
 * values: generation runs the model on one token at a time and gets the
 * logits a full recomputation would give.
 *
 * Layer l's keys and values are float32 [batch][kv_heads][cap][head_dim],
 * allocated at its first use (batch and head geometry come from that
 * run) and grown as needed; every layer must see the same batch. */
#ifndef QP_MODEL_KVCACHE_H
#define QP_MODEL_KVCACHE_H

#include <stddef.h>
#include <stdint.h>

#include "core/status.h"

struct qp_kv_layer {
    float *k, *v;
    int64_t len, cap;        /* positions held, allocated */
    int64_t batch, kv_heads, head_dim;
};

struct qp_kv_cache {
    struct qp_kv_layer *layer;
    int n_layers;
};

/* An empty cache for n_layers attention layers. *out belongs to the caller
 * (qp_kv_cache_free). */
enum qp_status qp_kv_cache_new(int n_layers, struct qp_kv_cache **out,
                               struct qp_error *err);
void qp_kv_cache_free(struct qp_kv_cache *c);

/* Positions held (those of layer 0; 0 when nothing ran). */
int64_t qp_kv_cache_len(const struct qp_kv_cache *c);

/* Forgets every position from len on (len <= the current length), in
 * every layer: the next run continues at position len (multiple-choice
 * scoring reuses a context's cache for each choice). */
void qp_kv_cache_truncate(struct qp_kv_cache *c, int64_t len);

/* Makes layer l ready for t more positions of a batch of the given
 * geometry: allocates or grows it (keeping what it holds). QP_E_INVAL for
 * a layer out of range, QP_E_SHAPE when the geometry differs from the
 * layer's earlier runs, QP_E_OVERFLOW / QP_E_NOMEM for sizes. */
enum qp_status qp_kv_cache_reserve(struct qp_kv_cache *c, int l, int64_t batch,
                                   int64_t kv_heads, int64_t head_dim,
                                   int64_t t, struct qp_error *err);

/* Key (or value) row of position p of (sequence b, kv head h) in layer L
 * (reserved). */
static inline float *qp_kv_key(const struct qp_kv_layer *L, int64_t b,
                               int64_t h, int64_t p)
{
    return L->k + (((size_t)b * (size_t)L->kv_heads + (size_t)h) * (size_t)L->cap +
                   (size_t)p) * (size_t)L->head_dim;
}
static inline float *qp_kv_value(const struct qp_kv_layer *L, int64_t b,
                                 int64_t h, int64_t p)
{
    return L->v + (((size_t)b * (size_t)L->kv_heads + (size_t)h) * (size_t)L->cap +
                   (size_t)p) * (size_t)L->head_dim;
}

#endif
