/* analysis/units.c: quantized tensor producers (analysis/units.h). */
#include "analysis/units.h"

#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "quant/rtn.h"

void qp_units_release(struct qp_units *u)
{
    for (size_t i = 0; i < u->n; i++) {
        free(u->u[i].name);
        free(u->u[i].nodes);
        free(u->u[i].values);
    }
    free(u->u);
    *u = (struct qp_units){0};
}

bool qp_unit_has(const struct qp_unit *u, unsigned parts)
{
    return ((parts & QP_PART_W) && u->nnodes) || ((parts & QP_PART_A) && u->nvalues);
}

/* The group key of name: its shortest prefix at a '.' or '/' boundary (or
 * itself) that a glob matches, malloc'd; NULL when none does. */
static char *group_key(const char *name, const char *const *groups, size_t ng)
{
    size_t len = strlen(name);
    char *buf = malloc(len + 1);
    if (!buf)
        return NULL;
    for (size_t end = 1; end <= len; end++) {
        if (end < len && name[end] != '.' && name[end] != '/')
            continue;
        memcpy(buf, name, end);
        buf[end] = '\0';
        for (size_t k = 0; k < ng; k++)
            if (!fnmatch(groups[k], buf, 0))
                return buf;
    }
    free(buf);
    return NULL;
}

static bool push_int(int **v, size_t *n, int x)
{
    int *nv = realloc(*v, (*n + 1) * sizeof *nv);
    if (!nv)
        return false;
    nv[(*n)++] = x;
    *v = nv;
    return true;
}

/* The unit named name (created at the end when new). */
static struct qp_unit *unit_named(struct qp_units *u, const char *name)
{
    for (size_t i = 0; i < u->n; i++)
        if (!strcmp(u->u[i].name, name))
            return &u->u[i];
    struct qp_unit *nu = realloc(u->u, (u->n + 1) * sizeof *nu);
    if (!nu)
        return NULL;
    u->u = nu;
    struct qp_unit *x = &u->u[u->n];
    *x = (struct qp_unit){0};
    if (!(x->name = strdup(name)))
        return NULL;
    u->n++;
    return x;
}

/* Adds weighted node i (with its quantized outputs) or activation value v
 * (node < 0) under name. */
static bool add(struct qp_units *u, const struct qp_graph *g,
                const struct qp_qplan *p, const char *name, int node, int v,
                const uint64_t *macs, const char *const *groups, size_t ng)
{
    char *key = group_key(name, groups, ng);
    struct qp_unit *x = unit_named(u, key ? key : name);
    free(key);
    if (!x)
        return false;
    if (node < 0) {
        x->abits = p->v[v].as.f.bits;
        return push_int(&x->values, &x->nvalues, v);
    }
    const struct qp_qnode *q = &p->n[node];
    const struct qp_tensor *w = g->values[g->nodes[node].in[1]].konst;
    x->params += qp_tensor_numel(w);
    x->bytes_fp32 += qp_tensor_numel(w) * 4;
    x->bytes_base += q->wq ? qp_rtn_bytes(q->w_q) : qp_tensor_numel(w) * 4;
    x->macs += macs ? macs[node] : 0;
    x->wbits = q->wq ? q->ws.f.bits : 0;
    if (!push_int(&x->nodes, &x->nnodes, node))
        return false;
    const struct qp_node *n = &g->nodes[node];
    for (int k = 0; k < n->n_out; k++)
        if (n->out[k] >= 0 && p->v[n->out[k]].quant && !p->v[n->out[k]].inherited) {
            x->abits = p->v[n->out[k]].as.f.bits;
            if (!push_int(&x->values, &x->nvalues, n->out[k]))
                return false;
        }
    return true;
}

static bool own_activation(const struct qp_graph *g, const struct qp_qplan *p,
                           int v)
{
    const struct qp_qval *q = &p->v[v];
    if (!q->quant || q->inherited)
        return false;
    int prod = g->values[v].producer;
    return prod < 0 || !p->n[prod].wq;
}

/* Values that inherit another's parameters (through nodes that only move
 * values) join the unit of the value they inherit from: quantizing or not
 * quantizing a unit takes them along. */
static enum qp_status add_inherited(const struct qp_graph *g,
                                    const struct qp_qplan *p, struct qp_units *u,
                                    struct qp_error *err)
{
    int *owner = malloc(((size_t)g->n_values + 1) * sizeof *owner);
    if (!owner)
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    for (int v = 0; v < g->n_values; v++)
        owner[v] = -1;
    for (size_t i = 0; i < u->n; i++)
        for (size_t k = 0; k < u->u[i].nvalues; k++)
            owner[u->u[i].values[k]] = (int)i;
    enum qp_status st = QP_OK;
    for (int oi = 0; !st && oi < g->n_nodes; oi++) {
        const struct qp_node *n = &g->nodes[g->order[oi]];
        int v = n->n_out ? n->out[0] : -1;
        if (v < 0 || !p->v[v].inherited || n->in[0] < 0 || owner[n->in[0]] < 0 ||
            owner[v] >= 0)
            continue;
        struct qp_unit *x = &u->u[owner[n->in[0]]];
        owner[v] = owner[n->in[0]];
        if (!push_int(&x->values, &x->nvalues, v))
            st = qp_fail(err, QP_E_NOMEM, "out of memory");
    }
    free(owner);
    return st;
}

enum qp_status qp_units_of(const struct qp_graph *g, const struct qp_qplan *base,
                           const char *const *groups, size_t ngroups,
                           const uint64_t *macs, struct qp_units *out,
                           struct qp_error *err)
{
    *out = (struct qp_units){0};
    char name[512];
    for (int k = 0; k < g->n_inputs; k++) {
        int v = g->inputs[k];
        if (own_activation(g, base, v) &&
            !add(out, g, base, g->values[v].name, -1, v, macs, groups, ngroups))
            return qp_fail(err, QP_E_NOMEM, "out of memory");
    }
    for (int oi = 0; oi < g->n_nodes; oi++) {
        int i = g->order[oi];
        const struct qp_node *n = &g->nodes[i];
        if (base->n[i].wq) {
            qp_node_weight_name(g, i, name, sizeof name);
            if (!add(out, g, base, name, i, -1, macs, groups, ngroups))
                return qp_fail(err, QP_E_NOMEM, "out of memory");
            continue;
        }
        for (int k = 0; k < n->n_out; k++) {
            int v = n->out[k];
            if (v >= 0 && own_activation(g, base, v) &&
                !add(out, g, base, g->values[v].name, -1, v, macs, groups,
                     ngroups))
                return qp_fail(err, QP_E_NOMEM, "out of memory");
        }
    }
    return add_inherited(g, base, out, err);
}

enum qp_status qp_units_assign(const struct qp_qassign *base,
                               const struct qp_units *u, size_t i, bool one_in,
                               unsigned parts, struct qp_qassign **out,
                               struct qp_error *err)
{
    enum qp_status st = qp_qassign_clone(base, out, err);
    if (st)
        return st;
    struct qp_qassign *a = *out;
    if (one_in) {
        memset(a->wq, 0, (size_t)a->n_nodes * sizeof *a->wq);
        memset(a->aq, 0, (size_t)a->n_values * sizeof *a->aq);
    }
    const struct qp_unit *x = &u->u[i];
    for (size_t k = 0; (parts & QP_PART_W) && k < x->nnodes; k++)
        a->wq[x->nodes[k]] = one_in ? base->wq[x->nodes[k]] : false;
    for (size_t k = 0; (parts & QP_PART_A) && k < x->nvalues; k++)
        a->aq[x->values[k]] = one_in ? base->aq[x->values[k]] : false;
    return QP_OK;
}
