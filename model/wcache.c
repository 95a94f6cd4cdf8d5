/* model/wcache.c: the quantized-weight cache (model/wcache.h). */
#include "model/wcache.h"

#include <stdlib.h>
#include <string.h>

struct entry {
    int value;
    struct qp_wscheme ws;
    struct qp_wquant_opts o;
    bool unpack8;
    struct qp_wquant w;
};

struct qp_wcache {
    struct entry *e;
    size_t n, cap;
    struct qp_wcache_stats stats;
};

enum qp_status qp_wcache_new(struct qp_wcache **out, struct qp_error *err)
{
    *out = calloc(1, sizeof **out);
    return *out ? QP_OK : qp_fail(err, QP_E_NOMEM, "out of memory");
}

void qp_wcache_free(struct qp_wcache *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->n; i++) {
        qp_tensor_free(c->e[i].w.q);
        qp_tensor_free(c->e[i].w.fake);
    }
    free(c->e);
    free(c);
}

/* A weight of fewer than 8 bits (per tensor or per channel) unpacked to
 * int8 / uint8 with its parameters, as devices feed 4-bit weights to
 * 8-bit kernels: the same integers, so the products are exact. */
static enum qp_status unpack8(struct qp_tensor **w, struct qp_error *err)
{
    const struct qp_tensor *t = *w;
    enum qp_dtype dt = qp_dtype_traits(t->dtype)->is_signed ? QP_DTYPE_I8
                                                            : QP_DTYPE_U8;
    struct qp_tensor *u;
    enum qp_status st = qp_tensor_new(t->name, dt, t->ndim, t->shape, &u, err);
    if (st)
        return st;
    size_t n = qp_tensor_numel(t);
    for (size_t i = 0; i < n; i++) {
        int32_t v = qp_packed_get(t->dtype, t->data, i);
        if (dt == QP_DTYPE_I8)
            ((int8_t *)u->data)[i] = (int8_t)v;
        else
            ((uint8_t *)u->data)[i] = (uint8_t)v;
    }
    const struct qp_qparams *qp = t->qp;
    if ((st = qp_tensor_set_qparams(u, qp->count, qp->scale, qp->zero_point,
                                    qp->axis, qp->block_size, err))) {
        qp_tensor_free(u);
        return st;
    }
    qp_tensor_free(*w);
    *w = u;
    return QP_OK;
}

static enum qp_status make(const struct qp_tensor *w, const struct qp_wscheme *ws,
                           const struct qp_wquant_opts *o, bool unpack,
                           struct qp_wquant *out, struct qp_error *err)
{
    *out = (struct qp_wquant){0};
    enum qp_status st = qp_rtn_quantize(w, ws, o, &out->q, err);
    if (!st && unpack && ws->f.bits < 8 && ws->gran != QP_GRAN_GROUP)
        st = unpack8(&out->q, err);
    if (st) {
        qp_tensor_free(out->q);
        qp_tensor_free(out->fake);
        *out = (struct qp_wquant){0};
    }
    return st;
}

enum qp_status qp_wcache_get(struct qp_wcache *c, const struct qp_graph *g,
                             int value, const struct qp_wscheme *ws,
                             const struct qp_wquant_opts *o, bool unpack8,
                             const struct qp_wquant **out, struct qp_error *err)
{
    for (size_t i = 0; i < c->n; i++) {
        const struct entry *e = &c->e[i];
        if (e->value == value && qp_wscheme_equal(&e->ws, ws) &&
            e->o.round == o->round && e->o.layout == o->layout &&
            e->unpack8 == unpack8) {
            c->stats.hits++;
            *out = &e->w;
            return QP_OK;
        }
    }
    const struct qp_tensor *w = g->values[value].konst;
    if (!w)
        return qp_fail(err, QP_E_INVAL, "'%s' is not a constant",
                       g->values[value].name);
    if (c->n == c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 16;
        struct entry *e = realloc(c->e, cap * sizeof *e);
        if (!e)
            return qp_fail(err, QP_E_NOMEM, "out of memory");
        c->e = e;
        c->cap = cap;
    }
    struct entry *e = &c->e[c->n];
    enum qp_status st = make(w, ws, o, unpack8, &e->w, err);
    if (st)
        return st;
    /* the plan reads the quantized copy: the weight's mapped pages (a
     * large model's file) need not stay resident */
    if (w->map)
        qp_mmap_release_range(w->map, (size_t)((const unsigned char *)w->data -
                                               w->map->data), w->nbytes);
    e->value = value;
    e->ws = *ws;
    e->o = *o;
    e->unpack8 = unpack8;
    c->n++;
    c->stats.made++;
    c->stats.bytes += e->w.q->nbytes;
    *out = &e->w;
    return QP_OK;
}

enum qp_status qp_wcache_fake(struct qp_wcache *c, const struct qp_wquant *w,
                              const struct qp_tensor **out, struct qp_error *err)
{
    struct entry *e = NULL;
    for (size_t i = 0; !e && i < c->n; i++)
        if (c->e[i].w.q == w->q)
            e = &c->e[i];
    if (!e)
        return qp_fail(err, QP_E_INVAL, "weight '%s' is not in the cache",
                       w->q->name);
    if (!e->w.fake) {
        const struct qp_tensor *q = e->w.q;
        enum qp_status st = qp_tensor_new(q->name, QP_DTYPE_F32, q->ndim,
                                          q->shape, &e->w.fake, err);
        if (st)
            return st;
        qp_tensor_read_f32(q, 0, qp_tensor_numel(q), e->w.fake->data);
        c->stats.bytes += e->w.fake->nbytes;
    }
    *out = e->w.fake;
    return QP_OK;
}

struct qp_wcache_stats qp_wcache_stats(const struct qp_wcache *c)
{
    return c->stats;
}
