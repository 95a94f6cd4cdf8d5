/* analysis/export-enc.c: a plan as AIMET / QNN encodings
 * (analysis/export-enc.h). */
#include "analysis/export-enc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/qassign.h"

void qp_export_enc_release(struct qp_export_enc *x)
{
    for (size_t i = 0; i < x->n_owned; i++) {
        free(x->names[i]);
        free(x->scales[i]);
        free(x->zps[i]);
    }
    free(x->names);
    free(x->scales);
    free(x->zps);
    free(x->e);
    memset(x, 0, sizeof *x);
}

struct ctx {
    const struct qp_graph *g;
    const struct qp_qplan *p;
    struct qp_export_enc *x;
    size_t cap, cap_owned;
    struct qp_export_enc_stats st;
    struct qp_error *err;
};

static enum qp_status nomem(struct ctx *c)
{
    return qp_fail(c->err, QP_E_NOMEM, "out of memory");
}

static struct qp_qnn_enc_entry *push(struct ctx *c)
{
    struct qp_export_enc *x = c->x;
    if (x->n == c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 64;
        struct qp_qnn_enc_entry *e = realloc(x->e, cap * sizeof *e);
        if (!e)
            return NULL;
        x->e = e;
        c->cap = cap;
    }
    struct qp_qnn_enc_entry *e = &x->e[x->n++];
    memset(e, 0, sizeof *e);
    return e;
}

/* Room for one more owned name / scales / zero points triple. */
static bool own(struct ctx *c, char *name, float *s, int32_t *z)
{
    struct qp_export_enc *x = c->x;
    if (x->n_owned == c->cap_owned) {
        size_t cap = c->cap_owned ? 2 * c->cap_owned : 64;
        char **nv = realloc(x->names, cap * sizeof *nv);
        if (nv)
            x->names = nv;
        float **sv = realloc(x->scales, cap * sizeof *sv);
        if (sv)
            x->scales = sv;
        int32_t **zv = realloc(x->zps, cap * sizeof *zv);
        if (zv)
            x->zps = zv;
        if (!nv || !sv || !zv)
            return false;
        c->cap_owned = cap;
    }
    x->names[x->n_owned] = name;
    x->scales[x->n_owned] = s;
    x->zps[x->n_owned++] = z;
    return true;
}

/* The unsigned-grid zero point of a signed or unsigned storage type. */
static int32_t unsigned_zp(enum qp_dtype dt, int bits, int32_t zp)
{
    bool is_signed = dt == QP_DTYPE_I4 || dt == QP_DTYPE_I8 || dt == QP_DTYPE_I16 ||
                     dt == QP_DTYPE_I2 || dt == QP_DTYPE_I3;
    return is_signed ? zp + (int32_t)(1u << (bits - 1)) : zp;
}

static enum qp_status weight_entry(struct ctx *c, int i)
{
    const struct qp_graph *g = c->g;
    const struct qp_qnode *q = &c->p->n[i];
    char wn[512], sch[QP_SCHEME_MAX];
    qp_node_weight_name(g, i, wn, sizeof wn);
    char *name = strdup(wn);
    if (!name)
        return nomem(c);
    struct qp_qnn_enc_entry *e = push(c);
    if (!e || !own(c, name, NULL, NULL)) {
        free(name);
        return nomem(c);
    }
    e->name = name;
    e->param = true;
    if (!q->wq) {
        e->is_float = true;
        e->bitwidth = 32;
        c->st.floats++;
        return QP_OK;
    }
    struct qp_scheme s = {.w = q->ws};
    qp_scheme_format(&s, sch, sizeof sch);
    if (q->ws.family != QP_WFAMILY_INT || q->ws.gran == QP_GRAN_GROUP)
        return qp_fail(c->err, QP_E_UNSUPPORTED, "tensor '%s': %s has no AIMET/QNN "
                       "encoding (version 0.6.1 has per-tensor and per-channel "
                       "encodings only)", wn, sch);
    const struct qp_qparams *qp = q->w_q->qp;
    float *sc = malloc(qp->count * sizeof *sc);
    int32_t *zp = malloc(qp->count * sizeof *zp);
    if (!sc || !zp || !own(c, NULL, sc, zp)) {
        free(sc);
        free(zp);
        return nomem(c);
    }
    for (size_t k = 0; k < qp->count; k++) {
        sc[k] = qp->scale[k];
        zp[k] = unsigned_zp(q->w_q->dtype, (int)q->ws.f.bits,
                            qp->zero_point ? qp->zero_point[k] : 0);
    }
    e->bitwidth = (int)q->ws.f.bits;
    e->symmetric = !q->ws.f.asym;
    e->count = qp->count;
    e->scale = sc;
    e->zero_point = zp;
    c->st.params++;
    c->st.per_channel += qp->count > 1;
    return QP_OK;
}

static enum qp_status value_entry(struct ctx *c, int v)
{
    const struct qp_qval *q = &c->p->v[v];
    struct qp_qnn_enc_entry *e = push(c);
    if (!e)
        return nomem(c);
    e->name = c->g->values[v].name;
    if (!q->quant) {
        e->is_float = true;
        e->bitwidth = 32;
        c->st.floats++;
        return QP_OK;
    }
    if (q->as.dynamic) {
        char as[QP_SCHEME_MAX];
        qp_ascheme_format(&q->as, as, sizeof as);
        return qp_fail(c->err, QP_E_UNSUPPORTED, "activation '%s': %s is dynamic: "
                       "it has no constant encoding", e->name, as);
    }
    float *sc = malloc(sizeof *sc);
    int32_t *zp = malloc(sizeof *zp);
    if (!sc || !zp || !own(c, NULL, sc, zp)) {
        free(sc);
        free(zp);
        return nomem(c);
    }
    *sc = q->scale;
    *zp = unsigned_zp(q->dtype, (int)q->as.f.bits, q->zp);
    e->bitwidth = (int)q->as.f.bits;
    e->symmetric = !q->as.f.asym;
    e->count = 1;
    e->scale = sc;
    e->zero_point = zp;
    c->st.activations++;
    return QP_OK;
}

/* A float activation qprobe runs (not a constant, not an integer tensor). */
static bool float_activation(const struct ctx *c, int v)
{
    const struct qp_value *val = &c->g->values[v];
    return !val->konst && (val->producer >= 0 || val->is_input) && c->p->v[v].f32;
}

enum qp_status qp_export_enc_build(const struct qp_session *s,
                                   const struct qp_qplan *p,
                                   const struct qp_recipe *overrides_of,
                                   struct qp_export_enc *out,
                                   struct qp_export_enc_stats *stats,
                                   struct qp_error *err)
{
    memset(out, 0, sizeof *out);
    struct ctx c = {.g = qp_session_graph(s), .p = p, .x = out, .err = err};
    const struct qp_graph *g = c.g;
    struct qp_qassign *a = NULL;
    enum qp_status st = QP_OK;
    if (overrides_of)
        st = qp_qassign_recipe(g, overrides_of, &a, NULL, err);
    for (int i = 0; !st && i < g->n_nodes; i++)
        if (qp_node_weighted(g, i, NULL) && (!a || a->w_rule[i] >= 0))
            st = weight_entry(&c, i);
    for (int v = 0; !st && v < g->n_values; v++)
        if (float_activation(&c, v) && (!a || a->a_rule[v] >= 0))
            st = value_entry(&c, v);
    qp_qassign_free(a);
    if (st) {
        qp_export_enc_release(out);
        return st;
    }
    if (stats)
        *stats = c.st;
    return QP_OK;
}

enum qp_status qp_export_encodings(const struct qp_session *s,
                                   const struct qp_qplan *p,
                                   const struct qp_recipe *overrides_of,
                                   const char *path, char *summary, size_t size,
                                   struct qp_error *err)
{
    struct qp_export_enc x;
    struct qp_export_enc_stats st0;
    enum qp_status st = qp_export_enc_build(s, p, overrides_of, &x, &st0, err);
    if (st)
        return st;
    st = qp_qnn_encodings_save(path, x.e, x.n, err);
    if (!st)
        snprintf(summary, size, "%s: AIMET/QNN encodings 0.6.1%s: %zu activation "
                 "and %zu param encodings (%zu per channel), %zu float tensors",
                 path, overrides_of ? " (the recipe's overrides)" : "",
                 st0.activations, st0.params, st0.per_channel, st0.floats);
    qp_export_enc_release(&x);
    return st;
}
