/* model/wcache.h: quantized weights, made once per distinct (weight,
 * scheme, rounding, layout, storage) and shared by every plan that asks
 * for the same: a session that plans a model many times (sensitivity,
 * sweeps, the recipe search) quantizes each weight once per scheme.
 *
 * Calibrated weights (GPTQ) depend on more than the weight: on the
 * calibration inputs and on how the layers before the weight's are
 * quantized. They are made elsewhere (model/gptq-graph.h) and put here
 * under a key (non-zero) that stands for all of that; a request with the
 * same key finds them, any other key does not. */
#ifndef QP_MODEL_WCACHE_H
#define QP_MODEL_WCACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/tensor.h"
#include "model/graph.h"
#include "quant/rtn.h"
#include "quant/scheme.h"

struct qp_wcache;

/* A quantized weight: the integer tensor with its parameters (unpacked to
 * int8/uint8 when asked: the int mode's kernels read 8-bit weights) and
 * its dequantized float copy (same shape as the weight), made only when
 * qp_wcache_fake asks for it (NULL until then): operators that take
 * integer weights (QP_TRAIT_QWEIGHT, model/op.h) never need it, and an
 * LLM's float copy would be four times its int8 size. */
struct qp_wquant {
    struct qp_tensor *q;
    struct qp_tensor *fake;
    /* GPTQ with act-order and refit groups: each input element's group
     * (quant/gptq-layer.h qp_gptq_gidx_dequantize), without which q's own
     * parameters do not describe it; else NULL */
    struct qp_tensor *g_idx;
};

struct qp_wcache_stats {
    size_t made, hits; /* weights quantized; requests served from the cache */
    size_t bytes;      /* held */
};

/* *out belongs to the caller (qp_wcache_free). */
enum qp_status qp_wcache_new(struct qp_wcache **out, struct qp_error *err);
void qp_wcache_free(struct qp_wcache *c);

/* The quantized form of g's constant value `value` under ws and o (unpack8:
 * narrower than 8 bits stored as int8/uint8), made now when new. *out is
 * borrowed from the cache and lives as long as it. Errors name the weight. */
enum qp_status qp_wcache_get(struct qp_wcache *c, const struct qp_graph *g,
                             int value, const struct qp_wscheme *ws,
                             const struct qp_wquant_opts *o, bool unpack8,
                             const struct qp_wquant **out, struct qp_error *err);

/* The same for a calibrated weight: key 0 is qp_wcache_get; otherwise the
 * weight put under (value, ws, o, key), made unpack8 now when asked and
 * not yet held so. QP_E_NOTFOUND when nothing was put under the key. */
enum qp_status qp_wcache_get_keyed(struct qp_wcache *c, const struct qp_graph *g,
                                   int value, const struct qp_wscheme *ws,
                                   const struct qp_wquant_opts *o, uint64_t key,
                                   bool unpack8, const struct qp_wquant **out,
                                   struct qp_error *err);

/* The weight put under (value, ws, o, key) as it was put (not unpacked),
 * or NULL. Counts no hit. */
const struct qp_wquant *qp_wcache_find(const struct qp_wcache *c, int value,
                                       const struct qp_wscheme *ws,
                                       const struct qp_wquant_opts *o,
                                       uint64_t key);

/* Stores a calibrated weight under key (non-zero): the cache takes w's
 * tensors (also on failure; *w is then zeroed). */
enum qp_status qp_wcache_put(struct qp_wcache *c, int value,
                             const struct qp_wscheme *ws,
                             const struct qp_wquant_opts *o, uint64_t key,
                             struct qp_wquant *w, struct qp_error *err);

/* The dequantized float copy of w (a result of qp_wcache_get or _keyed on
 * c), made now when it was not yet (a calibrated weight's is the one put);
 * *out is borrowed from the cache. */
enum qp_status qp_wcache_fake(struct qp_wcache *c, const struct qp_wquant *w,
                              const struct qp_tensor **out, struct qp_error *err);

struct qp_wcache_stats qp_wcache_stats(const struct qp_wcache *c);

#endif
