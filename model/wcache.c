/* model/wcache.c: the quantized-weight cache (model/wcache.h). */
#include "model/wcache.h"

#include <stdlib.h>
#include <string.h>

struct entry {
    int value;
    struct qp_wscheme ws;
    struct qp_wquant_opts o;
    uint64_t key;       /* 0: rounded to nearest here; else calibrated */
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

static void wquant_release(struct qp_wquant *w)
{
    qp_tensor_free(w->q);
    qp_tensor_free(w->fake);
    qp_tensor_free(w->g_idx);
    *w = (struct qp_wquant){0};
}

void qp_wcache_free(struct qp_wcache *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->n; i++)
        wquant_release(&c->e[i].w);
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
    if (st)
        wquant_release(out);
    return st;
}

static struct entry *find(const struct qp_wcache *c, int value,
                          const struct qp_wscheme *ws,
                          const struct qp_wquant_opts *o, uint64_t key,
                          bool unpack8)
{
    for (size_t i = 0; i < c->n; i++) {
        struct entry *e = &c->e[i];
        if (e->value == value && e->key == key && e->unpack8 == unpack8 &&
            qp_wscheme_equal(&e->ws, ws) && e->o.round == o->round &&
            e->o.layout == o->layout)
            return e;
    }
    return NULL;
}

/* A new empty entry at the end (not counted until filled). */
static enum qp_status grow(struct qp_wcache *c, struct qp_error *err)
{
    if (c->n < c->cap)
        return QP_OK;
    size_t cap = c->cap ? 2 * c->cap : 16;
    struct entry *e = realloc(c->e, cap * sizeof *e);
    if (!e)
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    c->e = e;
    c->cap = cap;
    return QP_OK;
}

/* Fills the next entry with w (taken) and counts it. */
static const struct qp_wquant *add(struct qp_wcache *c, int value,
                                   const struct qp_wscheme *ws,
                                   const struct qp_wquant_opts *o, uint64_t key,
                                   bool unpack8, struct qp_wquant *w)
{
    struct entry *e = &c->e[c->n++];
    *e = (struct entry){value, *ws, *o, key, unpack8, *w};
    *w = (struct qp_wquant){0};
    c->stats.made++;
    c->stats.bytes += e->w.q->nbytes + (e->w.fake ? e->w.fake->nbytes : 0) +
                      (e->w.g_idx ? e->w.g_idx->nbytes : 0);
    return &e->w;
}

enum qp_status qp_wcache_get(struct qp_wcache *c, const struct qp_graph *g,
                             int value, const struct qp_wscheme *ws,
                             const struct qp_wquant_opts *o, bool unpack8,
                             const struct qp_wquant **out, struct qp_error *err)
{
    return qp_wcache_get_keyed(c, g, value, ws, o, 0, unpack8, out, err);
}

/* The unpack8 form of a calibrated entry (copies; the integers are the
 * same). */
static enum qp_status derive_unpack8(const struct qp_wquant *from,
                                     const struct qp_wscheme *ws,
                                     struct qp_wquant *out, struct qp_error *err)
{
    *out = (struct qp_wquant){0};
    enum qp_status st = qp_tensor_clone(from->q, &out->q, err);
    if (!st && from->fake)
        st = qp_tensor_clone(from->fake, &out->fake, err);
    if (!st && from->g_idx)
        st = qp_tensor_clone(from->g_idx, &out->g_idx, err);
    if (!st && ws->f.bits < 8 && ws->gran != QP_GRAN_GROUP)
        st = unpack8(&out->q, err);
    if (st)
        wquant_release(out);
    return st;
}

enum qp_status qp_wcache_get_keyed(struct qp_wcache *c, const struct qp_graph *g,
                                   int value, const struct qp_wscheme *ws,
                                   const struct qp_wquant_opts *o, uint64_t key,
                                   bool unpack8, const struct qp_wquant **out,
                                   struct qp_error *err)
{
    const struct entry *e = find(c, value, ws, o, key, unpack8);
    if (e) {
        c->stats.hits++;
        *out = &e->w;
        return QP_OK;
    }
    const struct qp_tensor *w = g->values[value].konst;
    if (!w)
        return qp_fail(err, QP_E_INVAL, "'%s' is not a constant",
                       g->values[value].name);
    const struct entry *base = key ? find(c, value, ws, o, key, false) : NULL;
    if (key && !base)
        return qp_fail(err, QP_E_NOTFOUND, "'%s': no calibrated (GPTQ) weight "
                       "was made for this scheme and these calibration inputs",
                       g->values[value].name);
    enum qp_status st = grow(c, err);
    if (st)
        return st;
    struct qp_wquant made;
    if (base) {
        /* find() again after grow: base may have moved */
        st = derive_unpack8(&find(c, value, ws, o, key, false)->w, ws, &made,
                            err);
    } else if (!(st = make(w, ws, o, unpack8, &made, err)) && w->map) {
        /* the plan reads the quantized copy: the weight's mapped pages (a
         * large model's file) need not stay resident */
        qp_mmap_release_range(w->map, (size_t)((const unsigned char *)w->data -
                                               w->map->data), w->nbytes);
    }
    if (st)
        return st;
    *out = add(c, value, ws, o, key, unpack8, &made);
    return QP_OK;
}

const struct qp_wquant *qp_wcache_find(const struct qp_wcache *c, int value,
                                       const struct qp_wscheme *ws,
                                       const struct qp_wquant_opts *o,
                                       uint64_t key)
{
    const struct entry *e = find(c, value, ws, o, key, false);
    return e ? &e->w : NULL;
}

enum qp_status qp_wcache_put(struct qp_wcache *c, int value,
                             const struct qp_wscheme *ws,
                             const struct qp_wquant_opts *o, uint64_t key,
                             struct qp_wquant *w, struct qp_error *err)
{
    enum qp_status st = key && w->q && (w->fake || !w->g_idx)
                            ? grow(c, err)
                            : qp_fail(err, QP_E_INVAL, "a calibrated weight "
                                      "needs a key and its tensors");
    if (!st && find(c, value, ws, o, key, false))
        st = qp_fail(err, QP_E_INVAL, "a calibrated weight was put twice");
    if (st) {
        wquant_release(w);
        return st;
    }
    add(c, value, ws, o, key, false, w);
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
