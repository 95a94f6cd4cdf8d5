/* model/wcache.h: quantized weights, made once per distinct (weight,
 * scheme, rounding, layout, storage) and shared by every plan that asks
 * for the same: a session that plans a model many times (sensitivity,
 * sweeps, the recipe search) quantizes each weight once per scheme. */
#ifndef QP_MODEL_WCACHE_H
#define QP_MODEL_WCACHE_H

#include <stdbool.h>
#include <stddef.h>

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

/* The dequantized float copy of w (a result of qp_wcache_get on c), made
 * now when it was not yet; *out is borrowed from the cache. */
enum qp_status qp_wcache_fake(struct qp_wcache *c, const struct qp_wquant *w,
                              const struct qp_tensor **out, struct qp_error *err);

struct qp_wcache_stats qp_wcache_stats(const struct qp_wcache *c);

#endif
