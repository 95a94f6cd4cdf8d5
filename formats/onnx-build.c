/* formats/onnx-build.c: building a struct qp_onnx_model tree in memory
 * (formats/onnx-write.h), with the allocation conventions of the reader
 * (formats/onnx.c), so that qp_onnx_model_free frees it. Arrays grow by
 * realloc one element at a time (they carry no capacity); strings are
 * copies. */
#include "formats/onnx-write.h"

#include <stdlib.h>
#include <string.h>

static enum qp_status nomem(struct qp_error *err)
{
    return qp_fail(err, QP_E_NOMEM, "out of memory building an ONNX model");
}

/* *arr grows to n + 1 elements of size elem; the new one is zeroed. */
static bool grow(void *arr, size_t n, size_t elem)
{
    void **p = arr;
    void *q = realloc(*p, (n + 1) * elem);
    if (!q)
        return false;
    memset((char *)q + n * elem, 0, elem);
    *p = q;
    return true;
}

static char *dup(const char *s)
{
    return strdup(s ? s : "");
}

enum qp_status qp_onnx_model_new(int64_t ir, int64_t opset,
                                 const char *graph_name,
                                 struct qp_onnx_model **out,
                                 struct qp_error *err)
{
    struct qp_onnx_model *m = *out = calloc(1, sizeof *m);
    if (!m)
        return nomem(err);
    m->ir_version = ir;
    if (!(m->path = dup("(built)")) || !(m->producer_name = dup("")) ||
        !(m->producer_version = dup("")) || !(m->domain = dup("")) ||
        !(m->doc_string = dup("")) || !(m->graph = calloc(1, sizeof *m->graph)) ||
        !(m->graph->name = dup(graph_name)) ||
        qp_onnx_model_set_opset(m, "", opset, err)) {
        qp_onnx_model_free(m);
        *out = NULL;
        return nomem(err);
    }
    return QP_OK;
}

enum qp_status qp_onnx_model_set_opset(struct qp_onnx_model *m,
                                       const char *domain, int64_t version,
                                       struct qp_error *err)
{
    bool def = qp_onnx_domain_is_default(domain);
    for (size_t i = 0; i < m->n_opsets; i++) {
        const char *d = m->opsets[i].domain;
        if (def ? qp_onnx_domain_is_default(d) : !strcmp(d, domain)) {
            m->opsets[i].version = version;
            return QP_OK;
        }
    }
    if (!grow(&m->opsets, m->n_opsets, sizeof *m->opsets))
        return nomem(err);
    struct qp_onnx_opset *o = &m->opsets[m->n_opsets];
    if (!(o->domain = dup(domain)))
        return nomem(err);
    o->version = version;
    m->n_opsets++;
    return QP_OK;
}

enum qp_status qp_onnx_model_add_meta(struct qp_onnx_model *m, const char *key,
                                      const char *value, struct qp_error *err)
{
    if (!grow(&m->metadata, m->n_metadata, sizeof *m->metadata))
        return nomem(err);
    struct qp_onnx_kv *kv = &m->metadata[m->n_metadata++];
    if (!(kv->key = dup(key)) || !(kv->value = dup(value)))
        return nomem(err);
    return QP_OK;
}

/* n strings copied into a new array (every slot set, "" for NULL). */
static bool strv_copy(const char *const *src, size_t n, char ***dst)
{
    if (!(*dst = calloc(n ? n : 1, sizeof **dst)))
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((*dst)[i] = dup(src[i])))
            return false;
    return true;
}

enum qp_status qp_onnx_graph_add_node(struct qp_onnx_graph *g,
                                      const char *op_type, const char *domain,
                                      const char *name, const char *const *in,
                                      size_t n_in, const char *const *out,
                                      size_t n_out, struct qp_onnx_node **node,
                                      struct qp_error *err)
{
    if (!grow(&g->nodes, g->n_nodes, sizeof *g->nodes))
        return nomem(err);
    /* counted at once: a half-built node is released with the tree */
    struct qp_onnx_node *n = &g->nodes[g->n_nodes++];
    if (!(n->op_type = dup(op_type)) || !(n->domain = dup(domain)) ||
        !(n->name = dup(name)) || !(n->attrs = calloc(1, sizeof *n->attrs)))
        return nomem(err);
    bool ok = strv_copy(in, n_in, &n->inputs);
    n->n_inputs = ok ? n_in : 0;
    ok = ok && strv_copy(out, n_out, &n->outputs);
    n->n_outputs = ok ? n_out : 0;
    if (!ok)
        return nomem(err);
    if (node)
        *node = n;
    return QP_OK;
}

/* A new attribute of n named name of type t. */
static struct qp_onnx_attr *new_attr(struct qp_onnx_node *n, const char *name,
                                     enum qp_onnx_attr_type t)
{
    if (!grow(&n->attrs, n->n_attrs, sizeof *n->attrs))
        return NULL;
    struct qp_onnx_attr *a = &n->attrs[n->n_attrs++];
    a->type = t;
    return (a->name = dup(name)) ? a : NULL;
}

enum qp_status qp_onnx_node_add_int(struct qp_onnx_node *n, const char *name,
                                    int64_t v, struct qp_error *err)
{
    struct qp_onnx_attr *a = new_attr(n, name, QP_ONNX_ATTR_INT);
    if (!a)
        return nomem(err);
    a->i = v;
    return QP_OK;
}

enum qp_status qp_onnx_node_add_float(struct qp_onnx_node *n, const char *name,
                                      float v, struct qp_error *err)
{
    struct qp_onnx_attr *a = new_attr(n, name, QP_ONNX_ATTR_FLOAT);
    if (!a)
        return nomem(err);
    a->f = v;
    return QP_OK;
}

enum qp_status qp_onnx_node_add_string(struct qp_onnx_node *n, const char *name,
                                       const char *v, size_t len,
                                       struct qp_error *err)
{
    struct qp_onnx_attr *a = new_attr(n, name, QP_ONNX_ATTR_STRING);
    if (!a || !(a->s = malloc(len + 1)))
        return nomem(err);
    if (len)
        memcpy(a->s, v, len);
    a->s[len] = '\0';
    a->s_len = len;
    return QP_OK;
}

enum qp_status qp_onnx_node_add_ints(struct qp_onnx_node *n, const char *name,
                                     const int64_t *v, size_t count,
                                     struct qp_error *err)
{
    struct qp_onnx_attr *a = new_attr(n, name, QP_ONNX_ATTR_INTS);
    if (!a || !(a->ints = calloc(count ? count : 1, sizeof *a->ints)))
        return nomem(err);
    a->n = count;
    if (count)
        memcpy(a->ints, v, count * sizeof *v);
    return QP_OK;
}

enum qp_status qp_onnx_node_add_floats(struct qp_onnx_node *n, const char *name,
                                       const float *v, size_t count,
                                       struct qp_error *err)
{
    struct qp_onnx_attr *a = new_attr(n, name, QP_ONNX_ATTR_FLOATS);
    if (!a || !(a->floats = calloc(count ? count : 1, sizeof *a->floats)))
        return nomem(err);
    a->n = count;
    if (count)
        memcpy(a->floats, v, count * sizeof *v);
    return QP_OK;
}

enum qp_status qp_onnx_node_add_strings(struct qp_onnx_node *n, const char *name,
                                        const char *const *v, size_t count,
                                        struct qp_error *err)
{
    struct qp_onnx_attr *a = new_attr(n, name, QP_ONNX_ATTR_STRINGS);
    if (!a || !(a->string_lens = calloc(count ? count : 1, sizeof *a->string_lens)))
        return nomem(err);
    bool ok = strv_copy(v, count, &a->strings);
    a->n = ok ? count : 0;
    if (!ok)
        return nomem(err);
    for (size_t i = 0; i < count; i++)
        a->string_lens[i] = strlen(a->strings[i]);
    return QP_OK;
}

enum qp_status qp_onnx_node_add_tensor(struct qp_onnx_node *n, const char *name,
                                       struct qp_tensor *t, struct qp_error *err)
{
    struct qp_onnx_attr *a = new_attr(n, name, QP_ONNX_ATTR_TENSOR);
    if (!a) {
        qp_tensor_free(t);
        return nomem(err);
    }
    a->t = t;
    return QP_OK;
}

enum qp_status qp_onnx_graph_add_initializer(struct qp_onnx_graph *g,
                                             struct qp_tensor *t,
                                             struct qp_error *err)
{
    if (!grow(&g->initializers, g->n_initializers, sizeof *g->initializers)) {
        qp_tensor_free(t);
        return nomem(err);
    }
    g->initializers[g->n_initializers++] = t;
    return QP_OK;
}

/* dims[0..ndim) copied into t (ndim >= 0). */
static bool dims_copy(const struct qp_onnx_dim *dims, int ndim,
                      struct qp_onnx_valtype *t)
{
    t->ndim = ndim;
    if (ndim < 0)
        return true;
    if (!(t->dims = calloc((size_t)ndim + 1, sizeof *t->dims)))
        return false;
    for (int d = 0; d < ndim; d++) {
        t->dims[d].value = dims[d].value;
        if (dims[d].param && !(t->dims[d].param = strdup(dims[d].param)))
            return false;
    }
    return true;
}

enum qp_status qp_onnx_valtype_copy(const struct qp_onnx_valtype *src,
                                    struct qp_onnx_valtype *dst,
                                    struct qp_error *err)
{
    memset(dst, 0, sizeof *dst);
    dst->kind = src->kind;
    dst->elem_type = src->elem_type;
    dst->ndim = -1;
    if (!dims_copy(src->dims, src->ndim, dst))
        return nomem(err);
    if (src->elem) {
        if (!(dst->elem = calloc(1, sizeof *dst->elem)))
            return nomem(err);
        return qp_onnx_valtype_copy(src->elem, dst->elem, err);
    }
    return QP_OK;
}

enum qp_status qp_onnx_graph_add_value(struct qp_onnx_graph *g,
                                       enum qp_onnx_value_list list,
                                       const char *name, int32_t elem_type,
                                       int ndim, const struct qp_onnx_dim *dims,
                                       struct qp_error *err)
{
    struct qp_onnx_value **vs[QP_ONNX_LIST_COUNT] = {&g->inputs, &g->outputs,
                                                     &g->value_info};
    size_t *ns[QP_ONNX_LIST_COUNT] = {&g->n_inputs, &g->n_outputs,
                                      &g->n_value_info};
    if ((unsigned)list >= QP_ONNX_LIST_COUNT)
        return qp_fail(err, QP_E_INVAL, "value '%s': no such list", name);
    if (!grow(vs[list], *ns[list], sizeof **vs[list]))
        return nomem(err);
    struct qp_onnx_value *v = &(*vs[list])[(*ns[list])++];
    v->type.kind = QP_ONNX_KIND_TENSOR;
    v->type.elem_type = elem_type;
    v->type.ndim = -1;
    if (!(v->name = dup(name)) || !dims_copy(dims, ndim, &v->type))
        return nomem(err);
    return QP_OK;
}
