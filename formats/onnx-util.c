/* formats/onnx-util.c: lookups over a parsed ONNX model (formats/onnx.h). */
#include <string.h>

#include "formats/onnx.h"

const char *qp_onnx_attr_type_name(enum qp_onnx_attr_type t)
{
    static const char *const names[] = {
        "UNDEFINED", "FLOAT", "INT", "STRING", "TENSOR", "GRAPH", "FLOATS",
        "INTS", "STRINGS", "TENSORS", "GRAPHS", "SPARSE_TENSOR",
        "SPARSE_TENSORS", "TYPE_PROTO", "TYPE_PROTOS",
    };
    _Static_assert(sizeof names / sizeof names[0] == QP_ONNX_ATTR_COUNT,
                   "names must cover every attribute type");
    return (unsigned)t < QP_ONNX_ATTR_COUNT ? names[t] : "unknown";
}

bool qp_onnx_domain_is_default(const char *domain)
{
    return !domain || !*domain || !strcmp(domain, "ai.onnx");
}

int64_t qp_onnx_opset_version(const struct qp_onnx_model *m, const char *domain)
{
    bool def = qp_onnx_domain_is_default(domain);
    for (size_t i = 0; i < m->n_opsets; i++) {
        const char *d = m->opsets[i].domain;
        if (def ? qp_onnx_domain_is_default(d) : !strcmp(d, domain))
            return m->opsets[i].version;
    }
    return -1;
}

bool qp_onnx_node_is(const struct qp_onnx_node *n, const char *op_type)
{
    return qp_onnx_domain_is_default(n->domain) && !strcmp(n->op_type, op_type);
}

const struct qp_onnx_attr *qp_onnx_attr_find(const struct qp_onnx_node *n,
                                             const char *name)
{
    for (size_t i = 0; i < n->n_attrs; i++)
        if (n->attrs[i].name && !strcmp(n->attrs[i].name, name))
            return &n->attrs[i];
    return NULL;
}

/* The attribute called name if it has type want; *a NULL when absent. */
static enum qp_status typed(const struct qp_onnx_node *n, const char *name,
                            enum qp_onnx_attr_type want,
                            const struct qp_onnx_attr **a, struct qp_error *err)
{
    *a = qp_onnx_attr_find(n, name);
    if (*a && (*a)->type != want)
        return qp_fail(err, QP_E_FORMAT, "node '%s' (%s): attribute '%s' is "
                       "%s, expected %s", n->name, n->op_type, name,
                       qp_onnx_attr_type_name((*a)->type),
                       qp_onnx_attr_type_name(want));
    return QP_OK;
}

enum qp_status qp_onnx_attr_int(const struct qp_onnx_node *n, const char *name,
                                int64_t def, int64_t *out, struct qp_error *err)
{
    const struct qp_onnx_attr *a;
    enum qp_status st = typed(n, name, QP_ONNX_ATTR_INT, &a, err);
    if (!st)
        *out = a ? a->i : def;
    return st;
}

enum qp_status qp_onnx_attr_float(const struct qp_onnx_node *n,
                                  const char *name, float def, float *out,
                                  struct qp_error *err)
{
    const struct qp_onnx_attr *a;
    enum qp_status st = typed(n, name, QP_ONNX_ATTR_FLOAT, &a, err);
    if (!st)
        *out = a ? a->f : def;
    return st;
}

enum qp_status qp_onnx_attr_string(const struct qp_onnx_node *n,
                                   const char *name, const char *def,
                                   const char **out, struct qp_error *err)
{
    const struct qp_onnx_attr *a;
    enum qp_status st = typed(n, name, QP_ONNX_ATTR_STRING, &a, err);
    if (!st)
        *out = a ? a->s : def;
    return st;
}

enum qp_status qp_onnx_attr_ints(const struct qp_onnx_node *n,
                                 const char *name, const int64_t **out,
                                 size_t *count, struct qp_error *err)
{
    const struct qp_onnx_attr *a;
    enum qp_status st = typed(n, name, QP_ONNX_ATTR_INTS, &a, err);
    if (!st) {
        *out = a ? a->ints : NULL;
        *count = a ? a->n : 0;
    }
    return st;
}

enum qp_status qp_onnx_attr_floats(const struct qp_onnx_node *n,
                                   const char *name, const float **out,
                                   size_t *count, struct qp_error *err)
{
    const struct qp_onnx_attr *a;
    enum qp_status st = typed(n, name, QP_ONNX_ATTR_FLOATS, &a, err);
    if (!st) {
        *out = a ? a->floats : NULL;
        *count = a ? a->n : 0;
    }
    return st;
}

const struct qp_tensor *qp_onnx_graph_initializer(const struct qp_onnx_graph *g,
                                                  const char *name)
{
    for (size_t i = 0; i < g->n_initializers; i++)
        if (!strcmp(g->initializers[i]->name, name))
            return g->initializers[i];
    return NULL;
}
