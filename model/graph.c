/* model/graph.c: graph IR construction, checks and topological order. */
#include "model/graph.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/op.h"

struct qp_graph_keep {
    void *ptr;
    void (*free_fn)(void *);
    struct qp_graph_keep *next;
};

/* Open-addressing table of value ids keyed by name. */
struct names {
    int *slot; /* -1 empty */
    size_t cap;
};

static uint64_t hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static enum qp_status names_grow(struct qp_graph *g, struct qp_error *err)
{
    struct names *nt = g->names;
    size_t cap = 256;
    while (cap < (size_t)g->n_values * 4 + 4)
        cap *= 2;
    int *slot = malloc(cap * sizeof *slot);
    if (!slot)
        return qp_fail(err, QP_E_NOMEM, "graph: out of memory");
    for (size_t i = 0; i < cap; i++)
        slot[i] = -1;
    for (int v = 0; v < g->n_values; v++) {
        size_t h = hash_str(g->values[v].name) & (cap - 1);
        while (slot[h] >= 0)
            h = (h + 1) & (cap - 1);
        slot[h] = v;
    }
    free(nt->slot);
    nt->slot = slot;
    nt->cap = cap;
    return QP_OK;
}

int qp_graph_find(const struct qp_graph *g, const char *name)
{
    const struct names *nt = g->names;
    if (!nt->cap || !name)
        return -1;
    size_t h = hash_str(name) & (nt->cap - 1);
    while (nt->slot[h] >= 0) {
        if (!strcmp(g->values[nt->slot[h]].name, name))
            return nt->slot[h];
        h = (h + 1) & (nt->cap - 1);
    }
    return -1;
}

static enum qp_status oom(struct qp_error *err)
{
    return qp_fail(err, QP_E_NOMEM, "graph: out of memory");
}

enum qp_status qp_graph_new(const char *name, struct qp_graph **out,
                            struct qp_error *err)
{
    *out = NULL;
    struct qp_graph *g = calloc(1, sizeof *g);
    if (!g || !(g->names = calloc(1, sizeof(struct names))) ||
        !(g->name = strdup(name ? name : "graph"))) {
        if (g)
            free(g->names);
        free(g);
        return oom(err);
    }
    *out = g;
    return QP_OK;
}

static void attr_release(struct qp_attr *a)
{
    free(a->name);
    free(a->s);
    free(a->ints);
    free(a->floats);
    if (a->strings)
        for (size_t i = 0; i < a->count; i++)
            free(a->strings[i]);
    free(a->strings);
    qp_tensor_free(a->t);
    memset(a, 0, sizeof *a);
}

static void node_release(struct qp_node *n)
{
    free(n->name);
    free(n->op_type);
    free(n->domain);
    free(n->in);
    free(n->out);
    for (int i = 0; i < n->n_attrs; i++)
        attr_release(&n->attrs[i]);
    free(n->attrs);
    if (n->state_free)
        n->state_free(n->state);
    memset(n, 0, sizeof *n);
}

static void value_release(struct qp_value *v)
{
    free(v->name);
    qp_tensor_free(v->konst);
    qp_tensor_free(v->feed_q);
    free(v->consumers);
    memset(v, 0, sizeof *v);
}

void qp_graph_free(struct qp_graph *g)
{
    if (!g)
        return;
    for (int i = 0; i < g->n_nodes; i++)
        node_release(&g->nodes[i]);
    for (int i = 0; i < g->n_values; i++)
        value_release(&g->values[i]);
    free(g->nodes);
    free(g->values);
    free(g->inputs);
    free(g->outputs);
    free(g->order);
    free(g->name);
    if (g->names)
        free(((struct names *)g->names)->slot);
    free(g->names);
    struct qp_graph_keep *k = g->keep;
    while (k) {
        struct qp_graph_keep *next = k->next;
        if (k->free_fn)
            k->free_fn(k->ptr);
        free(k);
        k = next;
    }
    free(g);
}

enum qp_status qp_graph_keep(struct qp_graph *g, void *ptr,
                             void (*free_fn)(void *), struct qp_error *err)
{
    struct qp_graph_keep *k = malloc(sizeof *k);
    if (!k) {
        if (free_fn)
            free_fn(ptr);
        return oom(err);
    }
    *k = (struct qp_graph_keep){ptr, free_fn, g->keep};
    g->keep = k;
    return QP_OK;
}

static bool grow(void **arr, int *cap, int need, size_t elem)
{
    if (need <= *cap)
        return true;
    int nc = *cap ? *cap * 2 : 16;
    while (nc < need)
        nc *= 2;
    void *p = realloc(*arr, (size_t)nc * elem);
    if (!p)
        return false;
    memset((char *)p + (size_t)*cap * elem, 0, (size_t)(nc - *cap) * elem);
    *arr = p;
    *cap = nc;
    return true;
}

enum qp_status qp_graph_value(struct qp_graph *g, const char *name, int *id,
                              struct qp_error *err)
{
    int v = qp_graph_find(g, name);
    if (v >= 0) {
        *id = v;
        return QP_OK;
    }
    struct names *nt = g->names;
    if ((size_t)(g->n_values + 1) * 2 > nt->cap && names_grow(g, err))
        return QP_E_NOMEM;
    if (!grow((void **)&g->values, &g->cap_values, g->n_values + 1,
              sizeof *g->values))
        return oom(err);
    struct qp_value *val = &g->values[g->n_values];
    memset(val, 0, sizeof *val);
    if (!(val->name = strdup(name)))
        return oom(err);
    val->producer = -1;
    v = g->n_values++;
    size_t h = hash_str(name) & (nt->cap - 1);
    while (nt->slot[h] >= 0)
        h = (h + 1) & (nt->cap - 1);
    nt->slot[h] = v;
    *id = v;
    return QP_OK;
}

static enum qp_status not_finalized(const struct qp_graph *g,
                                    struct qp_error *err)
{
    if (g->finalized)
        return qp_fail(err, QP_E_INVAL, "graph: cannot add to a finalized graph");
    return QP_OK;
}

static enum qp_status append_id(int **arr, int *n, int id, struct qp_error *err)
{
    int *p = realloc(*arr, (size_t)(*n + 1) * sizeof *p);
    if (!p)
        return oom(err);
    p[(*n)++] = id;
    *arr = p;
    return QP_OK;
}

enum qp_status qp_graph_add_input(struct qp_graph *g, const char *name,
                                  enum qp_dtype dtype, int ndim,
                                  const int64_t *shape, struct qp_error *err)
{
    int v;
    enum qp_status st;
    if ((st = not_finalized(g, err)) || (st = qp_graph_value(g, name, &v, err)))
        return st;
    if (ndim < -1 || ndim > QP_MAX_DIMS)
        return qp_fail(err, QP_E_UNSUPPORTED, "graph input '%s': %d dims, at "
                       "most %d are supported", name, ndim, QP_MAX_DIMS);
    struct qp_value *val = &g->values[v];
    if (val->is_input || val->konst || val->producer >= 0)
        return qp_fail(err, QP_E_FORMAT, "graph input '%s' is defined twice",
                       name);
    val->is_input = true;
    val->typed = ndim >= 0; /* -1: rank unknown, nothing is checked */
    val->dtype = dtype;
    val->ndim = ndim < 0 ? 0 : ndim;
    for (int i = 0; i < ndim; i++)
        val->shape[i] = shape ? shape[i] : -1;
    return append_id(&g->inputs, &g->n_inputs, v, err);
}

enum qp_status qp_graph_add_const(struct qp_graph *g, struct qp_tensor *t,
                                  struct qp_error *err)
{
    int v;
    enum qp_status st;
    if ((st = not_finalized(g, err)) ||
        (st = qp_graph_value(g, t->name, &v, err))) {
        qp_tensor_free(t);
        return st;
    }
    struct qp_value *val = &g->values[v];
    if (val->is_input || val->konst || val->producer >= 0) {
        qp_tensor_free(t);
        return qp_fail(err, QP_E_FORMAT, "constant '%s' is defined twice",
                       val->name);
    }
    return qp_graph_set_const(g, v, t, err);
}

enum qp_status qp_graph_set_const(struct qp_graph *g, int id,
                                  struct qp_tensor *t, struct qp_error *err)
{
    (void)err;
    struct qp_value *val = &g->values[id];
    qp_tensor_free(val->konst);
    val->konst = t;
    val->typed = true;
    val->dtype = t->dtype;
    val->ndim = t->ndim;
    memcpy(val->shape, t->shape, sizeof val->shape);
    if (val->producer >= 0) {
        struct qp_node *n = &g->nodes[val->producer];
        for (int i = 0; i < n->n_out; i++)
            if (n->out[i] == id)
                n->out[i] = -1;
        val->producer = -1;
    }
    return QP_OK;
}

static enum qp_status resolve_names(struct qp_graph *g, int n,
                                    const char *const *names, int *ids,
                                    struct qp_error *err)
{
    for (int i = 0; i < n; i++) {
        ids[i] = -1;
        if (names && names[i] && names[i][0]) {
            enum qp_status st = qp_graph_value(g, names[i], &ids[i], err);
            if (st)
                return st;
        }
    }
    return QP_OK;
}

enum qp_status qp_graph_add_node(struct qp_graph *g, const char *op_type,
                                 const char *domain, int opset,
                                 const char *name, int n_in,
                                 const char *const *in, int n_out,
                                 const char *const *out, int *id,
                                 struct qp_error *err)
{
    enum qp_status st;
    if ((st = not_finalized(g, err)))
        return st;
    if (n_in < 0 || n_out < 0)
        return qp_fail(err, QP_E_INVAL, "graph: negative input/output count");
    if (!grow((void **)&g->nodes, &g->cap_nodes, g->n_nodes + 1,
              sizeof *g->nodes))
        return oom(err);
    struct qp_node *n = &g->nodes[g->n_nodes];
    memset(n, 0, sizeof *n);
    n->name = strdup(name ? name : "");
    n->op_type = strdup(op_type);
    n->domain = strdup(domain ? domain : "");
    n->in = malloc((size_t)(n_in ? n_in : 1) * sizeof *n->in);
    n->out = malloc((size_t)(n_out ? n_out : 1) * sizeof *n->out);
    if (!n->name || !n->op_type || !n->domain || !n->in || !n->out) {
        node_release(n);
        return oom(err);
    }
    n->opset = opset;
    n->n_in = n_in;
    n->n_out = n_out;
    int node_id = g->n_nodes++;
    /* resolving may grow g->values but not g->nodes: n stays valid */
    if ((st = resolve_names(g, n_in, in, n->in, err)) ||
        (st = resolve_names(g, n_out, out, n->out, err)))
        return st;
    for (int i = 0; i < n_out; i++) {
        if (n->out[i] < 0)
            continue;
        struct qp_value *v = &g->values[n->out[i]];
        if (v->producer >= 0 || v->konst || v->is_input)
            return qp_fail(err, QP_E_FORMAT, "node '%s' (%s): output '%s' is "
                           "already defined", n->name, op_type, v->name);
        v->producer = node_id;
    }
    if (id)
        *id = node_id;
    return QP_OK;
}

enum qp_status qp_graph_add_output(struct qp_graph *g, const char *name,
                                   struct qp_error *err)
{
    int v;
    enum qp_status st;
    if ((st = not_finalized(g, err)) || (st = qp_graph_value(g, name, &v, err)))
        return st;
    if (g->values[v].is_output)
        return QP_OK;
    g->values[v].is_output = true;
    return append_id(&g->outputs, &g->n_outputs, v, err);
}

/* ---- attributes -------------------------------------------------------- */

static struct qp_attr *attr_slot(struct qp_node *n, const char *name,
                                 struct qp_error *err)
{
    for (int i = 0; i < n->n_attrs; i++)
        if (!strcmp(n->attrs[i].name, name)) {
            attr_release(&n->attrs[i]);
            if (!(n->attrs[i].name = strdup(name))) {
                oom(err);
                return NULL;
            }
            return &n->attrs[i];
        }
    struct qp_attr *a = realloc(n->attrs, (size_t)(n->n_attrs + 1) * sizeof *a);
    if (!a) {
        oom(err);
        return NULL;
    }
    n->attrs = a;
    a = &n->attrs[n->n_attrs];
    memset(a, 0, sizeof *a);
    if (!(a->name = strdup(name))) {
        oom(err);
        return NULL;
    }
    n->n_attrs++;
    return a;
}

enum qp_status qp_node_set_int(struct qp_node *n, const char *name, int64_t v,
                               struct qp_error *err)
{
    struct qp_attr *a = attr_slot(n, name, err);
    if (!a)
        return QP_E_NOMEM;
    a->type = QP_ATTR_INT;
    a->i = v;
    return QP_OK;
}

enum qp_status qp_node_set_float(struct qp_node *n, const char *name, float v,
                                 struct qp_error *err)
{
    struct qp_attr *a = attr_slot(n, name, err);
    if (!a)
        return QP_E_NOMEM;
    a->type = QP_ATTR_FLOAT;
    a->f = v;
    return QP_OK;
}

enum qp_status qp_node_set_string(struct qp_node *n, const char *name,
                                  const char *v, struct qp_error *err)
{
    struct qp_attr *a = attr_slot(n, name, err);
    if (!a)
        return QP_E_NOMEM;
    a->type = QP_ATTR_STRING;
    if (!(a->s = strdup(v)))
        return oom(err);
    return QP_OK;
}

static enum qp_status set_array(struct qp_node *n, const char *name,
                                enum qp_attr_type type, const void *v,
                                size_t count, size_t elem, struct qp_error *err)
{
    struct qp_attr *a = attr_slot(n, name, err);
    if (!a)
        return QP_E_NOMEM;
    a->type = type;
    void *p = malloc(count ? count * elem : 1);
    if (!p)
        return oom(err);
    if (count)
        memcpy(p, v, count * elem);
    if (type == QP_ATTR_INTS)
        a->ints = p;
    else
        a->floats = p;
    a->count = count;
    return QP_OK;
}

enum qp_status qp_node_set_ints(struct qp_node *n, const char *name,
                                const int64_t *v, size_t count,
                                struct qp_error *err)
{
    return set_array(n, name, QP_ATTR_INTS, v, count, sizeof *v, err);
}

enum qp_status qp_node_set_floats(struct qp_node *n, const char *name,
                                  const float *v, size_t count,
                                  struct qp_error *err)
{
    return set_array(n, name, QP_ATTR_FLOATS, v, count, sizeof *v, err);
}

enum qp_status qp_node_set_strings(struct qp_node *n, const char *name,
                                   const char *const *v, size_t count,
                                   struct qp_error *err)
{
    struct qp_attr *a = attr_slot(n, name, err);
    if (!a)
        return QP_E_NOMEM;
    a->type = QP_ATTR_STRINGS;
    if (!(a->strings = calloc(count ? count : 1, sizeof *a->strings)))
        return oom(err);
    a->count = count;
    for (size_t i = 0; i < count; i++)
        if (!(a->strings[i] = strdup(v[i])))
            return oom(err);
    return QP_OK;
}

enum qp_status qp_node_set_tensor(struct qp_node *n, const char *name,
                                  struct qp_tensor *t, struct qp_error *err)
{
    struct qp_attr *a = attr_slot(n, name, err);
    if (!a) {
        qp_tensor_free(t);
        return QP_E_NOMEM;
    }
    a->type = QP_ATTR_TENSOR;
    a->t = t;
    return QP_OK;
}

const struct qp_attr *qp_node_attr(const struct qp_node *n, const char *name)
{
    for (int i = 0; i < n->n_attrs; i++)
        if (!strcmp(n->attrs[i].name, name))
            return &n->attrs[i];
    return NULL;
}

/* ---- finalize ---------------------------------------------------------- */

const char *qp_node_label(const struct qp_graph *g, int node, char *buf,
                          size_t size)
{
    const struct qp_node *n = &g->nodes[node];
    if (n->name[0])
        snprintf(buf, size, "node '%s' (%s)", n->name, n->op_type);
    else if (n->n_out > 0 && n->out[0] >= 0)
        snprintf(buf, size, "the %s node making '%s'", n->op_type,
                 g->values[n->out[0]].name);
    else
        snprintf(buf, size, "node #%d (%s)", node, n->op_type);
    return buf;
}

static enum qp_status check_values(struct qp_graph *g, struct qp_error *err)
{
    char lab[256];
    for (int i = 0; i < g->n_nodes; i++) {
        struct qp_node *n = &g->nodes[i];
        for (int k = 0; k < n->n_in; k++) {
            int v = n->in[k];
            if (v < 0)
                continue;
            struct qp_value *val = &g->values[v];
            if (val->producer < 0 && !val->konst && !val->is_input)
                return qp_fail(err, QP_E_FORMAT, "%s: input '%s' is not "
                               "defined by any node, input or initializer",
                               qp_node_label(g, i, lab, sizeof lab), val->name);
        }
    }
    for (int k = 0; k < g->n_outputs; k++) {
        struct qp_value *val = &g->values[g->outputs[k]];
        if (val->producer < 0 && !val->konst && !val->is_input)
            return qp_fail(err, QP_E_FORMAT, "graph output '%s' is not defined "
                           "by any node", val->name);
    }
    return QP_OK;
}

/* Kahn's algorithm, taking ready nodes in their original order. */
static enum qp_status topo_sort(struct qp_graph *g, struct qp_error *err)
{
    int nn = g->n_nodes;
    int *pending = calloc((size_t)(nn ? nn : 1), sizeof *pending);
    int *order = malloc((size_t)(nn ? nn : 1) * sizeof *order);
    int *stack = malloc((size_t)(nn ? nn : 1) * sizeof *stack);
    if (!pending || !order || !stack) {
        free(pending);
        free(order);
        free(stack);
        return oom(err);
    }
    for (int i = 0; i < nn; i++) {
        const struct qp_node *n = &g->nodes[i];
        for (int k = 0; k < n->n_in; k++)
            if (n->in[k] >= 0 && g->values[n->in[k]].producer >= 0)
                pending[i]++;
    }
    /* a min-heap would keep the original order exactly; a sorted insert
     * into a small ready list is enough for graphs of thousands of nodes */
    int nready = 0, done = 0;
    for (int i = nn - 1; i >= 0; i--)
        if (!pending[i])
            stack[nready++] = i;
    while (nready) {
        int i = stack[--nready];
        order[done++] = i;
        const struct qp_node *n = &g->nodes[i];
        for (int o = 0; o < n->n_out; o++) {
            int v = n->out[o];
            if (v < 0)
                continue;
            const struct qp_value *val = &g->values[v];
            for (int c = 0; c < val->n_consumers; c++) {
                int j = val->consumers[c];
                const struct qp_node *m = &g->nodes[j];
                for (int k = 0; k < m->n_in; k++)
                    if (m->in[k] == v)
                        pending[j]--;
                if (!pending[j]) {
                    /* keep the ready list sorted descending: pop smallest */
                    int p = nready++;
                    while (p > 0 && stack[p - 1] < j) {
                        stack[p] = stack[p - 1];
                        p--;
                    }
                    stack[p] = j;
                }
            }
        }
    }
    free(pending);
    free(stack);
    if (done != nn) {
        free(order);
        return qp_fail(err, QP_E_FORMAT, "graph '%s' has a cycle (%d of %d "
                       "nodes can run)", g->name, done, nn);
    }
    free(g->order);
    g->order = order;
    return QP_OK;
}

static enum qp_status build_consumers(struct qp_graph *g, struct qp_error *err)
{
    for (int v = 0; v < g->n_values; v++) {
        free(g->values[v].consumers);
        g->values[v].consumers = NULL;
        g->values[v].n_consumers = 0;
    }
    for (int i = 0; i < g->n_nodes; i++) {
        const struct qp_node *n = &g->nodes[i];
        for (int k = 0; k < n->n_in; k++) {
            int v = n->in[k];
            if (v < 0)
                continue;
            struct qp_value *val = &g->values[v];
            if (val->n_consumers && val->consumers[val->n_consumers - 1] == i)
                continue;
            bool seen = false;
            for (int c = 0; c < val->n_consumers; c++)
                seen |= val->consumers[c] == i;
            if (!seen && append_id(&val->consumers, &val->n_consumers, i, err))
                return QP_E_NOMEM;
        }
    }
    return QP_OK;
}

/* Reorders each value's consumers to the topological order. */
static void sort_consumers(struct qp_graph *g)
{
    int *rank = malloc((size_t)(g->n_nodes ? g->n_nodes : 1) * sizeof *rank);
    if (!rank)
        return; /* order of consumers is then the node order: still valid */
    for (int i = 0; i < g->n_nodes; i++)
        rank[g->order[i]] = i;
    for (int v = 0; v < g->n_values; v++) {
        struct qp_value *val = &g->values[v];
        for (int a = 1; a < val->n_consumers; a++) {
            int x = val->consumers[a], b = a;
            while (b > 0 && rank[val->consumers[b - 1]] > rank[x]) {
                val->consumers[b] = val->consumers[b - 1];
                b--;
            }
            val->consumers[b] = x;
        }
    }
    free(rank);
}

enum qp_status qp_graph_finalize(struct qp_graph *g, struct qp_error *err)
{
    enum qp_status st;
    char lab[256];
    g->finalized = false;
    for (int i = 0; i < g->n_nodes; i++) {
        struct qp_node *n = &g->nodes[i];
        n->def = qp_op_find(n->domain, n->op_type);
        if (!n->def)
            return qp_fail(err, QP_E_UNSUPPORTED, "%s: unsupported operator "
                           "'%s%s%s'", qp_node_label(g, i, lab, sizeof lab),
                           n->domain, n->domain[0] ? "." : "", n->op_type);
    }
    if ((st = check_values(g, err)) || (st = build_consumers(g, err)) ||
        (st = topo_sort(g, err)))
        return st;
    sort_consumers(g);
    for (int i = 0; i < g->n_nodes; i++)
        if ((st = qp_op_check(g, i, err)))
            return st;
    g->finalized = true;
    return QP_OK;
}

/* ---- compaction -------------------------------------------------------- */

enum qp_status qp_graph_compact(struct qp_graph *g, const bool *dead,
                                struct qp_error *err)
{
    int *nmap = malloc((size_t)(g->n_nodes ? g->n_nodes : 1) * sizeof *nmap);
    int *vmap = malloc((size_t)(g->n_values ? g->n_values : 1) * sizeof *vmap);
    bool *used = calloc((size_t)(g->n_values ? g->n_values : 1), 1);
    if (!nmap || !vmap || !used) {
        free(nmap);
        free(vmap);
        free(used);
        return oom(err);
    }
    int nn = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        if (dead && dead[i]) {
            nmap[i] = -1;
            node_release(&g->nodes[i]);
            continue;
        }
        struct qp_node *n = &g->nodes[i];
        for (int k = 0; k < n->n_in; k++)
            if (n->in[k] >= 0)
                used[n->in[k]] = true;
        for (int k = 0; k < n->n_out; k++)
            if (n->out[k] >= 0)
                used[n->out[k]] = true;
        nmap[i] = nn;
        g->nodes[nn++] = *n;
    }
    for (int k = 0; k < g->n_inputs; k++)
        used[g->inputs[k]] = true;
    for (int k = 0; k < g->n_outputs; k++)
        used[g->outputs[k]] = true;
    int nv = 0;
    for (int v = 0; v < g->n_values; v++) {
        if (!used[v]) {
            vmap[v] = -1;
            value_release(&g->values[v]);
            continue;
        }
        vmap[v] = nv;
        g->values[nv++] = g->values[v];
    }
    g->n_nodes = nn;
    g->n_values = nv;
    for (int i = 0; i < nn; i++) {
        struct qp_node *n = &g->nodes[i];
        for (int k = 0; k < n->n_in; k++)
            n->in[k] = n->in[k] >= 0 ? vmap[n->in[k]] : -1;
        for (int k = 0; k < n->n_out; k++)
            n->out[k] = n->out[k] >= 0 ? vmap[n->out[k]] : -1;
    }
    for (int v = 0; v < nv; v++) {
        struct qp_value *val = &g->values[v];
        if (val->producer >= 0)
            val->producer = nmap[val->producer];
    }
    for (int k = 0; k < g->n_inputs; k++)
        g->inputs[k] = vmap[g->inputs[k]];
    for (int k = 0; k < g->n_outputs; k++)
        g->outputs[k] = vmap[g->outputs[k]];
    free(nmap);
    free(vmap);
    free(used);
    if (names_grow(g, err)) /* rebuild the name table */
        return QP_E_NOMEM;
    return qp_graph_finalize(g, err);
}
