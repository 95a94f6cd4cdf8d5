/* model/qexec-fuse.c: the int mode's fused lookup-table chains
 * (model/qexec-fuse.h). */
#include "model/qexec-fuse.h"

#include <stdlib.h>
#include <string.h>

#include "core/parallel.h"
#include "kernels/lut-s8.h"
#include "model/qexec-int.h"

/* Nodes one chain covers. */
#define CHAIN_MAX 32
/* Elements below which a table pass stays on one thread. */
#define PAR_MIN ((size_t)1 << 16)
/* Elements a pass applies its tables to at a time (stays in L1). */
#define BLOCK ((size_t)4096)

/* A node of the chain: which earlier values its quantized inputs are
 * (0: the source, j + 1: member j's output). */
struct member {
    int node, value;
    int nq, src[2];
    bool pc;               /* its table has 256 codes per channel */
    int qin;               /* pc: its quantized input */
    const uint8_t *table;  /* the node's own table */
    struct qp_tensor view; /* its output as a descriptor */
    struct qp_qparams qp;  /* the view's parameters (arrays in the plan) */
    bool needed;           /* must exist after the span */
    uint8_t *comp;         /* from the source's code to its own, per channel */
};

struct chain {
    int head;                    /* node making the source in the span, or -1 */
    int source;                  /* value */
    const struct qp_tensor *src; /* its tensor */
    int n;                       /* members */
    struct member m[CHAIN_MAX];
    /* per-channel members' axis and extent (channels 1: none) and the
     * elements of one channel's run (the dims after the axis) */
    int axis;
    size_t channels, inner;
};

/* A chain's composed tables, kept in the plan by its first node. */
struct cached {
    bool head;             /* the first node heads the chain */
    int n;                 /* members composed */
    int nodes[CHAIN_MAX];  /* theirs */
    size_t channels;
    uint8_t *comp;         /* [n][channels][256] */
    uint8_t *lut_t;        /* the node's pair table transposed, or NULL */
};

struct qp_qfuse_cache {
    size_t n;
    struct cached *at;     /* [n]: by node */
};

void qp_qfuse_cache_free(struct qp_qfuse_cache *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->n; i++) {
        free(c->at[i].comp);
        free(c->at[i].lut_t);
    }
    free(c->at);
    free(c);
}

/* True when node i runs as a lookup table in the int mode (what
 * qp_qplan_run_int does for it): an elementwise node of quantized inputs
 * and scalar constants (lut_ok), an Add of the fixed-point flavors too
 * (its table is the integer add's, model/qexec.c). */
static bool runs_as_table(const struct qp_qplan *p, int i)
{
    const struct qp_qnode *q = &p->n[i];
    const struct qp_node *n = &p->g->nodes[i];
    if (!q->lut_ok || n->n_out != 1 || n->out[0] < 0)
        return false;
    return q->kind == QP_QK_FLOAT || q->kind == QP_QK_ADD;
}

/* True when node i may run as per-channel tables (qp_qint_channel_ok
 * decides on its inputs): input 0 quantized, the others constants. */
static bool channel_like(const struct qp_qplan *p, int i)
{
    const struct qp_node *n = &p->g->nodes[i];
    static const char *const ops[] = {"Add", "Sub", "Mul", "Div",
                                      "BatchNormalization"};
    bool op = false;
    for (size_t k = 0; k < sizeof ops / sizeof *ops; k++)
        op |= !n->domain[0] && !strcmp(n->op_type, ops[k]);
    if (!op || p->n[i].kind != QP_QK_FLOAT || p->n[i].lut_ok || n->n_out != 1 ||
        n->n_in < 2 || n->in[0] < 0 || !p->v[n->in[0]].quant)
        return false;
    for (int k = 1; k < n->n_in; k++)
        if (n->in[k] >= 0 && !p->g->values[n->in[k]].konst)
            return false;
    return true;
}

/* True when t holds value v as the int mode carries it. */
static bool carried(const struct qp_qplan *p, int v, const struct qp_tensor *t)
{
    const struct qp_qval *q = &p->v[v];
    return t && t->data && q->quant && t->dtype == q->dtype && t->qp &&
           t->qp->count == 1;
}

/* The slot (0: the source, j + 1: member j) computing value v, or -1. */
static int slot_of(const struct chain *ch, int v)
{
    if (v == ch->source)
        return 0;
    for (int j = 0; j < ch->n; j++)
        if (ch->m[j].value == v)
            return j + 1;
    return -1;
}

/* A descriptor of value v as the plan quantizes it, of shape d. */
static void set_view(const struct qp_qplan *p, int v, const struct qp_tdesc *d,
                     struct qp_tensor *t, struct qp_qparams *qp)
{
    const struct qp_qval *q = &p->v[v];
    memset(t, 0, sizeof *t);
    t->name = p->g->values[v].name;
    t->dtype = q->dtype;
    t->ndim = d->ndim;
    memcpy(t->shape, d->shape, sizeof t->shape);
    qp->scale = (float *)&q->scale;
    qp->zero_point = (int32_t *)&q->zp;
    qp->count = 1;
    qp->axis = -1;
    qp->block_size = 0;
    t->qp = qp;
}

/* The inputs of node as the run has them (the chain's members as
 * descriptors) into in[]; false when one is missing. */
static bool gather(const struct qp_exec_span *s, const struct chain *ch,
                   int node, const struct qp_tensor **in)
{
    const struct qp_node *n = &s->g->nodes[node];
    for (int k = 0; k < n->n_in; k++) {
        int v = n->in[k], sl = ch ? slot_of(ch, v) : -1;
        in[k] = sl > 0 ? &ch->m[sl - 1].view
                       : sl == 0 ? ch->src : qp_exec_span_value(s, v);
        if (v >= 0 && (!in[k] || (in[k]->data && !qp_elem_size(in[k]->dtype))))
            return false;
    }
    return true;
}

/* Appends node to the chain when it runs as per-channel tables
 * (model/qexec-int.h) on a chain value of the source's shape, along the
 * chain's channel axis if it has one. */
static bool add_channel_member(const struct qp_qplan *p,
                               const struct qp_exec_span *s, struct chain *ch,
                               int node)
{
    const struct qp_node *n = &p->g->nodes[node];
    const struct qp_tensor *in[QP_OP_MAX_IO];
    struct qp_op_ctx c = {p->g, node, n, in, n->n_in, NULL, NULL, NULL};
    int qin, axis, sl;
    size_t chans;
    if (!gather(s, ch, node, in) || !qp_qint_channel_ok(p, &c, &qin, &axis, &chans) ||
        (sl = slot_of(ch, n->in[qin])) < 0 ||
        !qp_shape_equal(in[qin]->ndim, in[qin]->shape, ch->src->ndim,
                        ch->src->shape) ||
        (ch->channels > 1 && (axis != ch->axis || chans != ch->channels)) ||
        chans < 2 || chans * 256 * 4 > qp_tensor_numel(ch->src))
        return false; /* building tables per channel would cost more */
    struct member *m = &ch->m[ch->n];
    struct qp_tdesc d;
    qp_tdesc_of(in[qin], &d);
    ch->axis = axis;
    ch->channels = chans;
    ch->inner = 1;
    for (int k = axis + 1; k < d.ndim; k++)
        ch->inner *= (size_t)d.shape[k];
    m->node = node;
    m->value = n->out[0];
    m->nq = 1;
    m->src[0] = sl;
    m->pc = true;
    m->qin = qin;
    set_view(p, m->value, &d, &m->view, &m->qp);
    ch->n++;
    return true;
}

/* Appends node to the chain when it is a table on the chain's values
 * and constants with the source's element count; false otherwise. */
static bool add_member(const struct qp_qplan *p, const struct qp_exec_span *s,
                       struct chain *ch, int node)
{
    const struct qp_graph *g = p->g;
    const struct qp_node *n = &g->nodes[node];
    if (ch->n == CHAIN_MAX || n->n_in > QP_OP_MAX_IO)
        return false;
    if (!runs_as_table(p, node))
        return add_channel_member(p, s, ch, node);
    struct member *m = &ch->m[ch->n];
    const struct qp_tensor *in[QP_OP_MAX_IO], *ops[QP_OP_MAX_IO];
    int nops = 0;
    m->nq = 0;
    for (int k = 0; k < n->n_in; k++) {
        int v = n->in[k];
        if (v < 0)
            continue;
        if (!g->values[v].konst) {
            int sl = slot_of(ch, v);
            if (sl < 0 || m->nq == 2)
                return false;
            m->src[m->nq++] = sl;
        }
    }
    if (m->nq == 0 || !gather(s, ch, node, in))
        return false;
    for (int k = 0; k < n->n_in; k++)
        if (in[k])
            ops[nops++] = in[k];
    struct qp_op_ctx c = {g, node, n, in, n->n_in, NULL, NULL, NULL};
    struct qp_tdesc d;
    struct qp_error e;
    if (qp_op_broadcast(&c, ops, nops, &d, &e) ||
        qp_tdesc_numel(&d) != qp_tensor_numel(ch->src))
        return false;
    m->node = node;
    m->value = n->out[0];
    m->pc = false;
    set_view(p, m->value, &d, &m->view, &m->qp);
    ch->n++;
    return true;
}

/* The value all quantized inputs of node are when node runs as a table
 * (or may run as per-channel ones) and that value exists, else -1: the
 * source of a chain without head. */
static int own_source(const struct qp_qplan *p, const struct qp_exec_span *s,
                      int node)
{
    const struct qp_node *n = &p->g->nodes[node];
    int src = -1;
    if (!runs_as_table(p, node) && !channel_like(p, node))
        return -1;
    for (int k = 0; k < n->n_in; k++) {
        int v = n->in[k];
        if (v < 0 || p->g->values[v].konst)
            continue;
        if (src >= 0 && v != src)
            return -1;
        src = v;
    }
    return src >= 0 && carried(p, src, qp_exec_span_value(s, src)) ? src : -1;
}

/* True when the next node of the span reads node's only output, a
 * quantized one, as a table or perhaps per-channel ones (node then heads
 * a chain). */
static bool feeds_table(const struct qp_qplan *p, const struct qp_exec_span *s,
                        int node)
{
    const struct qp_node *n = &p->g->nodes[node];
    if (n->n_out != 1 || n->out[0] < 0 || !p->v[n->out[0]].quant || s->len < 2)
        return false;
    int next = s->g->order[s->pos + 1];
    const struct qp_node *m = &p->g->nodes[next];
    bool reads = false;
    for (int k = 0; k < m->n_in; k++)
        reads |= m->in[k] == n->out[0];
    return reads && (runs_as_table(p, next) || channel_like(p, next));
}

/* Runs node, the span's first, when it heads a chain or has an integer
 * way (model/qexec-int.h): *out its new output (*ran false, nothing
 * done, otherwise). */
static enum qp_status run_head(struct qp_qplan *p, struct qp_exec_span *s,
                               int node, struct qp_tensor **out, bool *ran,
                               struct qp_error *err)
{
    const struct qp_node *n = &s->g->nodes[node];
    const struct qp_tensor *in[QP_OP_MAX_IO];
    *ran = false;
    if (n->n_in > QP_OP_MAX_IO || !gather(s, NULL, node, in))
        return QP_OK;
    struct qp_op_ctx c = {s->g, node, n, in, n->n_in, s->scratch, s->pool,
                          s->state};
    if (qp_qint_ok(p, &c)) {
        *ran = true;
        return qp_qint_run(p, &c, out, err);
    }
    if (!feeds_table(p, s, node))
        return QP_OK;
    *ran = true;
    return qp_qplan_run_int(p, &c, out, err);
}

/* The cache entry of node (a chain's first), made when missing; NULL
 * when out of memory. */
static struct cached *entry(struct qp_qplan *p, int node)
{
    if (!p->fuse && (p->fuse = calloc(1, sizeof *p->fuse))) {
        p->fuse->n = (size_t)p->g->n_nodes;
        if (!(p->fuse->at = calloc(p->fuse->n, sizeof *p->fuse->at))) {
            free(p->fuse);
            p->fuse = NULL;
        }
    }
    return p->fuse ? &p->fuse->at[node] : NULL;
}

enum qp_status qp_qfuse_transposed(struct qp_qplan *p, int node,
                                   const uint8_t *t, const uint8_t **tt,
                                   struct qp_error *err)
{
    struct cached *e = entry(p, node);
    if (e && !e->lut_t && (e->lut_t = malloc(65536)))
        for (size_t a = 0; a < 256; a++)
            for (size_t b = 0; b < 256; b++)
                e->lut_t[b << 8 | a] = t[a << 8 | b];
    *tt = e ? e->lut_t : NULL;
    return *tt ? QP_OK : qp_fail(err, QP_E_NOMEM, "out of memory");
}

/* True when e holds ch's composed tables (ch's members a prefix of e's). */
static bool cached_has(const struct cached *e, const struct chain *ch)
{
    if (!e->comp || e->head != (ch->head >= 0) || e->n < ch->n ||
        e->channels != ch->channels)
        return false;
    for (int j = 0; j < ch->n; j++)
        if (e->nodes[j] != ch->m[j].node)
            return false;
    return true;
}

/* Each member's table, then the composition from the source's codes
 * (per channel when a member has channels), kept in the plan. */
static enum qp_status compose(struct qp_qplan *p, struct qp_exec_span *s,
                              struct chain *ch, struct qp_error *err)
{
    size_t chans = ch->channels, per = chans * 256;
    struct cached *e = entry(p, ch->head >= 0 ? ch->head : ch->m[0].node);
    if (!e)
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    if (cached_has(e, ch)) {
        for (int j = 0; j < ch->n; j++)
            ch->m[j].comp = e->comp + (size_t)j * per;
        return QP_OK;
    }
    for (int j = 0; j < ch->n; j++) {
        struct member *m = &ch->m[j];
        const struct qp_node *n = &s->g->nodes[m->node];
        const struct qp_tensor *in[QP_OP_MAX_IO];
        gather(s, ch, m->node, in);
        struct qp_op_ctx c = {s->g, m->node, n, in, n->n_in, s->scratch,
                              s->pool, s->state};
        enum qp_status st = m->pc ? qp_qint_channel_table(p, &c, m->qin, ch->axis,
                                                          chans, &m->table, err)
                                  : qp_qplan_lut(p, &c, &m->table, err);
        if (st)
            return st;
    }
    uint8_t *comp = malloc((size_t)ch->n * per);
    if (!comp)
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    free(e->comp);
    e->head = ch->head >= 0;
    e->n = ch->n;
    e->channels = chans;
    e->comp = comp;
    for (int j = 0; j < ch->n; j++) {
        e->nodes[j] = ch->m[j].node;
        ch->m[j].comp = comp + (size_t)j * per;
    }
    uint8_t val[CHAIN_MAX + 1];
    for (size_t c = 0; c < chans; c++)
        for (int code = 0; code < 256; code++) {
            val[0] = (uint8_t)code;
            for (int j = 0; j < ch->n; j++) {
                const struct member *m = &ch->m[j];
                size_t i = m->nq == 1 ? val[m->src[0]]
                                      : (size_t)val[m->src[0]] << 8 | val[m->src[1]];
                val[j + 1] = m->table[(m->pc ? c * 256 : 0) + i];
                m->comp[c * 256 + (size_t)code] = val[j + 1];
            }
        }
    return QP_OK;
}

/* ---- the pass ------------------------------------------------------------ */

struct pass {
    const uint8_t *x;             /* the source's codes */
    size_t n;
    size_t channels, inner;       /* element i's table: (i / inner) % channels */
    int k;                        /* outputs */
    const uint8_t *t[CHAIN_MAX];  /* their composed tables */
    uint8_t *y[CHAIN_MAX];        /* the last may be x (in place) */
};

/* Elements [i, i + len) all of channel c. */
static void pass_run(const struct pass *ps, size_t c, size_t i, size_t len)
{
    for (int k = 0; k < ps->k; k++)
        qp_lut8_apply(ps->t[k] + c * 256, ps->x + i, len, ps->y[k] + i);
}

/* Elements [b, e) of the pass (any range: each element is its own). */
static void pass_part(void *ctx, int t, size_t b, size_t e)
{
    const struct pass *ps = ctx;
    (void)t;
    if (ps->channels > 1 && ps->inner == 1) { /* the last axis */
        for (int k = 0; k < ps->k; k++)
            for (size_t i = b; i < e; i++)
                ps->y[k][i] = ps->t[k][i % ps->channels * 256 + ps->x[i]];
        return;
    }
    for (size_t i = b; i < e;) {
        size_t run = ps->inner - i % ps->inner, len = BLOCK < run ? BLOCK : run;
        len = e - i < len ? e - i : len;
        pass_run(ps, ps->channels > 1 ? i / ps->inner % ps->channels : 0, i, len);
        i += len;
    }
}

/* Allocates the needed members' outputs (the last one in the head's
 * buffer *hout when the source itself is not needed and shapes agree)
 * and fills them in one pass over the source. */
static enum qp_status apply(struct qp_exec_span *s,
                            struct chain *ch, struct qp_tensor **hout,
                            struct qp_tensor **out, struct qp_error *err)
{
    int total = (ch->head >= 0) + ch->n, last = -1;
    struct pass ps = {ch->src->data, qp_tensor_numel(ch->src), ch->channels,
                      ch->channels > 1 ? ch->inner : BLOCK, 0, {0}, {0}};
    bool src_needed = ch->head < 0 || qp_exec_span_needed(s, ch->source, total);
    for (int j = 0; j < ch->n; j++) {
        struct member *m = &ch->m[j];
        m->needed = qp_exec_span_needed(s, m->value, total);
        if (m->needed)
            last = j;
    }
    enum qp_status st = QP_OK;
    for (int j = 0; !st && j < ch->n; j++) {
        struct member *m = &ch->m[j];
        const struct qp_tensor *v = &m->view;
        if (!m->needed)
            continue;
        if (j == last && !src_needed &&
            qp_shape_equal(v->ndim, v->shape, (*hout)->ndim, (*hout)->shape)) {
            out[j] = *hout;
            *hout = NULL;
            st = qp_tensor_rename(out[j], v->name, err);
        } else {
            st = qp_exec_span_tensor(s, m->value, v->dtype, v->ndim, v->shape,
                                     &out[j], err);
        }
        if (!st)
            st = qp_tensor_set_qparams(out[j], 1, v->qp->scale,
                                       v->qp->zero_point, -1, 0, err);
        if (!st) {
            ps.t[ps.k] = m->comp;
            ps.y[ps.k++] = out[j]->data;
        }
    }
    if (!st && ps.n) {
        /* chunks of whole 64-byte lines, a few per thread, claimed by
         * the threads as they come free */
        int nt = qp_parallel_threads_for((double)ps.n, (double)PAR_MIN,
                                         qp_pool_threads(s->pool));
        size_t chunk = (ps.n / ((size_t)nt * 4) + 63) / 64 * 64;
        qp_parallel_chunks(pass_part, &ps, ps.n, chunk, nt);
    }
    if (*hout && !src_needed) {
        qp_exec_span_free(s, *hout);
        *hout = NULL;
    }
    return st;
}

/* Publishes the head's and the members' outputs in order; on failure
 * (st) frees them instead. */
static enum qp_status finish(struct qp_exec_span *s, struct chain *ch,
                             struct qp_tensor **hout, struct qp_tensor **out,
                             enum qp_status st, struct qp_error *err)
{
    if (ch->head >= 0 && st)
        qp_exec_span_free(s, hout[0]);
    else if (ch->head >= 0)
        st = qp_exec_span_publish(s, ch->head, hout, err);
    for (int j = 0; j < ch->n; j++) {
        struct qp_tensor *o[1] = {out[j]};
        if (st)
            qp_exec_span_free(s, out[j]);
        else
            st = qp_exec_span_publish(s, ch->m[j].node, o, err);
    }
    return st;
}

enum qp_status qp_qfuse_run_span(void *ctx, struct qp_exec_span *s, int *done,
                                 struct qp_error *err)
{
    struct qp_qplan *p = ctx;
    const struct qp_graph *g = s->g;
    int node = g->order[s->pos], first = 0;
    struct chain ch;
    struct qp_tensor *hout[QP_OP_MAX_IO] = {0}, *out[CHAIN_MAX] = {0};
    enum qp_status st = QP_OK;
    *done = 0;
    ch.n = 0;
    ch.head = -1;
    ch.axis = -1;
    ch.channels = 1;
    ch.inner = 1;
    ch.source = own_source(p, s, node);
    if (ch.source >= 0) {
        ch.src = qp_exec_span_value(s, ch.source);
    } else {
        bool ran;
        if ((st = run_head(p, s, node, hout, &ran, err)) || !ran)
            return st;
        ch.head = node;
        ch.source = g->nodes[node].out[0];
        ch.src = hout[0];
        first = 1;
        if (!carried(p, ch.source, ch.src))
            ch.src = NULL; /* not fused: published as it came */
    }
    for (int k = first; ch.src && k < s->len; k++)
        if (!add_member(p, s, &ch, g->order[s->pos + k]))
            break;
    /* a single table without head is as fast alone; a per-channel one
     * replaces the float way */
    if (ch.head < 0 && (ch.n == 0 || (ch.n == 1 && !ch.m[0].pc)))
        return QP_OK;
    if (ch.n > 0 && !(st = compose(p, s, &ch, err)))
        st = apply(s, &ch, hout, out, err);
    if ((st = finish(s, &ch, hout, out, st, err)))
        return st;
    *done = (ch.head >= 0) + ch.n;
    qp_exec_span_account(s, *done);
    return QP_OK;
}
