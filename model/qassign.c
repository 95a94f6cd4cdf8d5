/* model/qassign.c: per-layer scheme assignments (model/qassign.h). */
#include "model/qassign.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/op.h"

bool qp_node_weighted(const struct qp_graph *g, int i, enum qp_wlayout *layout)
{
    const struct qp_node *n = &g->nodes[i];
    enum qp_wlayout l;
    if (!n->def || !n->def->weight_layout || n->n_in < 2 || n->in[1] < 0)
        return false;
    const struct qp_tensor *w = g->values[n->in[1]].konst;
    if (!w || !qp_dtype_traits(w->dtype)->is_float || w->ndim < 2 ||
        !n->def->weight_layout(n, &l))
        return false;
    if (layout)
        *layout = l;
    return true;
}

void qp_node_weight_name(const struct qp_graph *g, int i, char *buf,
                         size_t size)
{
    snprintf(buf, size, "%s", g->values[g->nodes[i].in[1]].name);
    size_t n = strlen(buf);
    if (n > 3 && !strcmp(buf + n - 3, ":bn"))
        buf[n - 3] = '\0';
}

void qp_qassign_free(struct qp_qassign *a)
{
    if (!a)
        return;
    free(a->wq);
    free(a->ws);
    free(a->aq);
    free(a->as);
    free(a->w_rule);
    free(a->a_rule);
    free(a);
}

static enum qp_status alloc(int nn, int nv, struct qp_qassign **out,
                            struct qp_error *err)
{
    struct qp_qassign *a = calloc(1, sizeof *a);
    size_t n = (size_t)(nn ? nn : 1), v = (size_t)(nv ? nv : 1);
    if (a) {
        a->n_nodes = nn;
        a->n_values = nv;
        a->wq = calloc(n, sizeof *a->wq);
        a->ws = calloc(n, sizeof *a->ws);
        a->w_rule = malloc(n * sizeof *a->w_rule);
        a->aq = calloc(v, sizeof *a->aq);
        a->as = calloc(v, sizeof *a->as);
        a->a_rule = malloc(v * sizeof *a->a_rule);
    }
    if (!a || !a->wq || !a->ws || !a->w_rule || !a->aq || !a->as || !a->a_rule) {
        qp_qassign_free(a);
        *out = NULL;
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    }
    for (size_t i = 0; i < n; i++)
        a->w_rule[i] = -2;
    for (size_t i = 0; i < v; i++)
        a->a_rule[i] = -2;
    *out = a;
    return QP_OK;
}

enum qp_status qp_qassign_new(const struct qp_graph *g, struct qp_qassign **out,
                              struct qp_error *err)
{
    return alloc(g->n_nodes, g->n_values, out, err);
}

/* Values that are activations: graph inputs and node outputs. */
static bool activation(const struct qp_graph *g, int v)
{
    const struct qp_value *val = &g->values[v];
    return !val->konst && (val->producer >= 0 || val->is_input);
}

enum qp_status qp_qassign_uniform(const struct qp_graph *g,
                                  const struct qp_scheme *s,
                                  struct qp_qassign **out, struct qp_error *err)
{
    enum qp_status st = alloc(g->n_nodes, g->n_values, out, err);
    if (st)
        return st;
    struct qp_qassign *a = *out;
    for (int i = 0; i < g->n_nodes; i++)
        if (qp_node_weighted(g, i, NULL)) {
            a->wq[i] = true;
            a->ws[i] = s->w;
        }
    for (int v = 0; s->has_acts && v < g->n_values; v++)
        if (activation(g, v)) {
            a->aq[v] = true;
            a->as[v] = s->a;
        }
    return QP_OK;
}

static void mark(bool *used, int rule)
{
    if (used && rule >= 0)
        used[rule] = true;
}

enum qp_status qp_qassign_recipe(const struct qp_graph *g,
                                 const struct qp_recipe *r,
                                 struct qp_qassign **out, bool *used,
                                 struct qp_error *err)
{
    enum qp_status st = alloc(g->n_nodes, g->n_values, out, err);
    if (st)
        return st;
    struct qp_qassign *a = *out;
    for (size_t k = 0; used && k < r->nrules; k++)
        used[k] = false;
    char wname[512];
    for (int i = 0; i < g->n_nodes; i++) {
        if (!qp_node_weighted(g, i, NULL))
            continue;
        qp_node_weight_name(g, i, wname, sizeof wname);
        const char *names[1] = {wname};
        a->wq[i] = qp_recipe_weights(r, names, 1, &a->ws[i], &a->w_rule[i]);
        mark(used, a->w_rule[i]);
    }
    for (int v = 0; v < g->n_values; v++) {
        if (!activation(g, v))
            continue;
        const char *names[2] = {g->values[v].name, NULL};
        int p = g->values[v].producer;
        if (p >= 0 && g->nodes[p].out[0] == v && qp_node_weighted(g, p, NULL)) {
            qp_node_weight_name(g, p, wname, sizeof wname);
            names[1] = wname;
        }
        a->aq[v] = qp_recipe_output(r, names, names[1] ? 2 : 1, &a->as[v],
                                    &a->a_rule[v]);
        mark(used, a->a_rule[v]);
    }
    return QP_OK;
}

enum qp_status qp_qassign_ckpt(const struct qp_graph *g,
                               const struct qp_ckpt_opts *o,
                               struct qp_qassign **out, struct qp_error *err)
{
    enum qp_status st = qp_qassign_new(g, out, err);
    for (int i = 0; !st && i < g->n_nodes; i++) {
        struct qp_scheme sc;
        if (qp_node_weighted(g, i, NULL) &&
            qp_ckpt_pick(o, g->values[g->nodes[i].in[1]].konst, &sc)) {
            (*out)->wq[i] = true;
            (*out)->ws[i] = sc.w;
        }
    }
    return st;
}

enum qp_status qp_qassign_clone(const struct qp_qassign *a,
                                struct qp_qassign **out, struct qp_error *err)
{
    enum qp_status st = alloc(a->n_nodes, a->n_values, out, err);
    if (st)
        return st;
    struct qp_qassign *c = *out;
    size_t n = (size_t)a->n_nodes, v = (size_t)a->n_values;
    memcpy(c->wq, a->wq, n * sizeof *c->wq);
    memcpy(c->ws, a->ws, n * sizeof *c->ws);
    memcpy(c->w_rule, a->w_rule, n * sizeof *c->w_rule);
    memcpy(c->aq, a->aq, v * sizeof *c->aq);
    memcpy(c->as, a->as, v * sizeof *c->as);
    memcpy(c->a_rule, a->a_rule, v * sizeof *c->a_rule);
    return QP_OK;
}

bool qp_qassign_any(const struct qp_qassign *a)
{
    for (int i = 0; i < a->n_nodes; i++)
        if (a->wq[i])
            return true;
    for (int v = 0; v < a->n_values; v++)
        if (a->aq[v])
            return true;
    return false;
}
