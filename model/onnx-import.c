/* model/onnx-import.c: graph IR from a parsed ONNX model
 * (model/onnx-import.h). */
#include "model/onnx-import.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/fold.h"
#include "model/op.h"

/* An If node of the IR and the ONNX node holding its branches. */
struct if_site {
    char *out0;                       /* its first output: a stable key */
    const struct qp_onnx_node *node;
};

struct importer {
    struct qp_graph *g;
    const struct qp_onnx_model *m;
    struct if_site *ifs;
    size_t n_ifs;
};

static enum qp_status oom(struct qp_error *err)
{
    return qp_fail(err, QP_E_NOMEM, "import: out of memory");
}

/* A tensor over t's data (borrowed: the graph keeps the model alive, and
 * a mapping reference is taken when t lives in one). */
static enum qp_status borrow(const struct qp_tensor *t, const char *name,
                             struct qp_tensor **out, struct qp_error *err)
{
    return qp_tensor_wrap(name, t->dtype, t->ndim, t->shape, t->data, t->nbytes,
                          t->map, out, err);
}

static enum qp_status add_const(struct importer *im, const struct qp_tensor *t,
                                const char *name, struct qp_error *err)
{
    struct qp_tensor *c;
    enum qp_status st = borrow(t, name, &c, err);
    return st ? st : qp_graph_add_const(im->g, c, err);
}

static enum qp_status add_attr(struct qp_node *n, const struct qp_onnx_attr *a,
                               struct qp_error *err)
{
    struct qp_tensor *t;
    enum qp_status st;
    switch (a->type) {
    case QP_ONNX_ATTR_FLOAT: return qp_node_set_float(n, a->name, a->f, err);
    case QP_ONNX_ATTR_INT: return qp_node_set_int(n, a->name, a->i, err);
    case QP_ONNX_ATTR_STRING: return qp_node_set_string(n, a->name, a->s, err);
    case QP_ONNX_ATTR_FLOATS:
        return qp_node_set_floats(n, a->name, a->floats, a->n, err);
    case QP_ONNX_ATTR_INTS: return qp_node_set_ints(n, a->name, a->ints, a->n, err);
    case QP_ONNX_ATTR_STRINGS:
        return qp_node_set_strings(n, a->name, (const char *const *)a->strings,
                                   a->n, err);
    case QP_ONNX_ATTR_TENSOR:
        if ((st = borrow(a->t, a->t->name ? a->t->name : "", &t, err)))
            return st;
        return qp_node_set_tensor(n, a->name, t, err);
    default:
        /* subgraphs (If is handled apart), type protos, sparse tensors:
         * no operator qprobe runs reads them */
        return QP_OK;
    }
}

static enum qp_status add_node(struct importer *im, const struct qp_onnx_node *on,
                               struct qp_error *err)
{
    if (on->value && qp_onnx_node_is(on, "Constant")) {
        if (on->n_outputs != 1)
            return qp_fail(err, QP_E_FORMAT, "node '%s' (Constant): %zu outputs",
                           on->name, on->n_outputs);
        return add_const(im, on->value, on->outputs[0], err);
    }
    bool def = qp_onnx_domain_is_default(on->domain);
    int64_t opset = qp_onnx_opset_version(im->m, def ? "" : on->domain);
    if (on->n_inputs > QP_OP_MAX_IO || on->n_outputs > QP_OP_MAX_IO)
        return qp_fail(err, QP_E_UNSUPPORTED, "node '%s' (%s): more than %d "
                       "inputs or outputs", on->name, on->op_type, QP_OP_MAX_IO);
    int id;
    enum qp_status st = qp_graph_add_node(im->g, on->op_type, def ? "" : on->domain,
                                          (int)opset, on->name, (int)on->n_inputs,
                                          (const char *const *)on->inputs,
                                          (int)on->n_outputs,
                                          (const char *const *)on->outputs, &id,
                                          err);
    for (size_t k = 0; !st && k < on->n_attrs; k++)
        st = add_attr(&im->g->nodes[id], &on->attrs[k], err);
    if (st || !qp_onnx_node_is(on, "If"))
        return st;
    if (on->n_outputs < 1 || !on->outputs[0][0])
        return qp_fail(err, QP_E_FORMAT, "node '%s' (If) has no output",
                       on->name);
    struct if_site *s = realloc(im->ifs, (im->n_ifs + 1) * sizeof *s);
    if (!s)
        return oom(err);
    im->ifs = s;
    s[im->n_ifs].node = on;
    if (!(s[im->n_ifs].out0 = strdup(on->outputs[0])))
        return oom(err);
    im->n_ifs++;
    return QP_OK;
}

/* Nodes and initializers of an ONNX graph (the main one or a branch). */
static enum qp_status add_body(struct importer *im, const struct qp_onnx_graph *og,
                               struct qp_error *err)
{
    enum qp_status st = QP_OK;
    for (size_t i = 0; !st && i < og->n_initializers; i++)
        st = add_const(im, og->initializers[i], og->initializers[i]->name, err);
    for (size_t i = 0; !st && i < og->n_nodes; i++)
        st = add_node(im, &og->nodes[i], err);
    return st;
}

static enum qp_status add_inputs(struct importer *im, struct qp_error *err)
{
    const struct qp_onnx_graph *og = im->m->graph;
    for (size_t i = 0; i < og->n_inputs; i++) {
        const struct qp_onnx_value *v = &og->inputs[i];
        if (qp_onnx_graph_initializer(og, v->name))
            continue; /* an initializer: a constant with a default */
        if (v->type.kind != QP_ONNX_KIND_TENSOR)
            return qp_fail(err, QP_E_UNSUPPORTED, "graph input '%s' is not a "
                           "tensor", v->name);
        enum qp_dtype dt;
        enum qp_status st = qp_fmt_onnx_dtype(v->type.elem_type, &dt, err);
        if (st)
            return qp_error_prefix(err, "graph input '%s': ", v->name);
        int64_t shape[QP_MAX_DIMS];
        int nd = v->type.ndim;
        if (nd > QP_MAX_DIMS)
            return qp_fail(err, QP_E_UNSUPPORTED, "graph input '%s' has %d "
                           "dims, at most %d are supported", v->name, nd,
                           QP_MAX_DIMS);
        for (int d = 0; d < nd; d++)
            shape[d] = v->type.dims[d].value;
        if ((st = qp_graph_add_input(im->g, v->name, dt, nd < 0 ? -1 : nd, shape,
                                     err)))
            return st;
    }
    return QP_OK;
}

/* ---- If ---------------------------------------------------------------- */

/* Replaces If node `node` (its condition a constant) by the nodes of the
 * branch it takes, each branch output copied to the If output by an
 * Identity. The graph must be unfinalized; the If node is marked in
 * dead_ifs by its first output. */
static enum qp_status inline_if(struct importer *im, int node, bool cond,
                                const struct qp_onnx_node *on, struct qp_error *err)
{
    struct qp_graph *g = im->g;
    const struct qp_onnx_attr *br =
        qp_onnx_attr_find(on, cond ? "then_branch" : "else_branch");
    if (!br || br->type != QP_ONNX_ATTR_GRAPH || !br->g)
        return qp_fail(err, QP_E_FORMAT, "node '%s' (If): no %s graph",
                       on->name, cond ? "then_branch" : "else_branch");
    const struct qp_onnx_graph *b = br->g;
    if (b->n_outputs != on->n_outputs)
        return qp_fail(err, QP_E_FORMAT, "node '%s' (If): the branch has %zu "
                       "outputs, the node %zu", on->name, b->n_outputs,
                       on->n_outputs);
    /* the If node stops producing its outputs */
    struct qp_node *n = &g->nodes[node];
    for (int k = 0; k < n->n_out; k++) {
        if (n->out[k] >= 0)
            g->values[n->out[k]].producer = -1;
        n->out[k] = -1;
    }
    enum qp_status st = add_body(im, b, err);
    for (size_t k = 0; !st && k < on->n_outputs; k++) {
        if (!on->outputs[k][0])
            continue;
        const char *in[1] = {b->outputs[k].name}, *out[1] = {on->outputs[k]};
        st = qp_graph_add_node(g, "Identity", "", 13, on->name, 1, in, 1, out,
                               NULL, err);
    }
    return st;
}

static const struct qp_onnx_node *if_site_of(const struct importer *im,
                                             const struct qp_graph *g, int node)
{
    const struct qp_node *n = &g->nodes[node];
    if (strcmp(n->op_type, "If") || n->domain[0] || n->n_out < 1 || n->out[0] < 0)
        return NULL;
    const char *key = g->values[n->out[0]].name;
    for (size_t i = 0; i < im->n_ifs; i++)
        if (!strcmp(im->ifs[i].out0, key))
            return im->ifs[i].node;
    return NULL;
}

/* Inlines every If whose condition is constant, folding in between, until
 * none is left; a dynamic one is an error. */
static enum qp_status resolve_ifs(struct importer *im, struct qp_error *err)
{
    struct qp_graph *g = im->g;
    char lab[256];
    for (;;) {
        enum qp_status st = qp_graph_fold_constants(g, NULL, err);
        if (st)
            return st;
        int first_dynamic = -1, inlined = 0;
        int n_before = g->n_nodes;
        bool *dead = NULL;
        for (int i = 0; i < n_before; i++) {
            const struct qp_onnx_node *on = if_site_of(im, g, i);
            if (!on)
                continue;
            int c = g->nodes[i].n_in ? g->nodes[i].in[0] : -1;
            const struct qp_tensor *ct = c >= 0 ? g->values[c].konst : NULL;
            if (!ct || qp_tensor_numel(ct) != 1) {
                if (first_dynamic < 0)
                    first_dynamic = i;
                continue;
            }
            if (!dead && !(dead = calloc((size_t)n_before, 1)))
                return oom(err);
            g->finalized = false;
            bool cond = qp_elem_get_i64(ct->dtype, ct->data, 0) != 0;
            if ((st = inline_if(im, i, cond, on, err))) {
                free(dead);
                return st;
            }
            dead[i] = true;
            inlined++;
        }
        if (!inlined) {
            if (first_dynamic >= 0)
                return qp_fail(err, QP_E_UNSUPPORTED, "%s: the condition is not "
                               "a constant; qprobe runs If only when its "
                               "condition folds to one",
                               qp_node_label(g, first_dynamic, lab, sizeof lab));
            return QP_OK;
        }
        /* dead covers the nodes that existed before inlining; the new ones
         * live */
        bool *all = calloc((size_t)g->n_nodes, 1);
        if (!all) {
            free(dead);
            return oom(err);
        }
        memcpy(all, dead, (size_t)n_before);
        free(dead);
        st = qp_graph_compact(g, all, err);
        free(all);
        if (st)
            return st;
    }
}

/* ---- the model ----------------------------------------------------------- */

static void free_model(void *p)
{
    qp_onnx_model_free(p);
}

static enum qp_status build(struct importer *im, const struct qp_import_opts *o,
                            struct qp_error *err)
{
    const struct qp_onnx_model *m = im->m;
    int64_t opset = qp_onnx_opset_version(m, "");
    if (opset < 1 || opset > QP_ONNX_MAX_OPSET)
        return qp_fail(err, QP_E_UNSUPPORTED, "the model imports ONNX opset "
                       "%lld; qprobe runs opsets 1 to %d", (long long)opset,
                       QP_ONNX_MAX_OPSET);
    enum qp_status st;
    if ((st = add_inputs(im, err)) || (st = add_body(im, m->graph, err)))
        return st;
    for (size_t i = 0; i < m->graph->n_outputs; i++)
        if ((st = qp_graph_add_output(im->g, m->graph->outputs[i].name, err)))
            return st;
    if ((st = qp_graph_finalize(im->g, err)))
        return st;
    if (o && o->no_fold) {
        for (int i = 0; i < im->g->n_nodes; i++)
            if (if_site_of(im, im->g, i)) {
                char lab[256];
                return qp_fail(err, QP_E_UNSUPPORTED, "%s: If needs constant "
                               "folding", qp_node_label(im->g, i, lab, sizeof lab));
            }
        return QP_OK;
    }
    if ((st = resolve_ifs(im, err)))
        return st;
    if (!(o && o->keep_batchnorm))
        st = qp_graph_fold_batchnorm(im->g, NULL, err);
    return st;
}

enum qp_status qp_model_from_onnx(struct qp_onnx_model *m,
                                  const struct qp_import_opts *opts,
                                  struct qp_graph **out, struct qp_error *err)
{
    *out = NULL;
    struct importer im = {NULL, m, NULL, 0};
    char path[512];
    snprintf(path, sizeof path, "%s", m->path ? m->path : "model");
    enum qp_status st = qp_graph_new(path, &im.g, err);
    if (st) {
        qp_onnx_model_free(m);
        return st;
    }
    /* constants borrow from the model: it lives as long as the graph */
    if ((st = qp_graph_keep(im.g, m, free_model, err))) {
        qp_graph_free(im.g);
        return st;
    }
    st = build(&im, opts, err);
    for (size_t i = 0; i < im.n_ifs; i++)
        free(im.ifs[i].out0);
    free(im.ifs);
    if (st) {
        qp_graph_free(im.g);
        return qp_error_prefix(err, "'%s': ", path);
    }
    *out = im.g;
    return QP_OK;
}

enum qp_status qp_model_load_onnx(const char *path,
                                  const struct qp_import_opts *opts,
                                  struct qp_graph **out, struct qp_error *err)
{
    struct qp_onnx_model *m;
    *out = NULL;
    enum qp_status st = qp_onnx_load(path, &m, err);
    if (st)
        return st;
    st = qp_model_from_onnx(m, opts, out, err);
    return st ? qp_error_in_file(err, path) : QP_OK;
}
