/* formats/onnx.c: ModelProto (protobuf-c) -> struct qp_onnx_model. See
 * formats/onnx.h for the tree and its memory behaviour.
 *
 * Every array is allocated with its final count before its elements are
 * converted, so a conversion that fails half-way leaves a tree that
 * qp_onnx_model_free releases. */
#include "formats/onnx.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/tensorproto-pb.h"

struct conv {
    struct qp_tp_ctx tp;
    struct qp_onnx_stats *stats;
    struct qp_error *err;
};

/* snprintf for message labels, which may be truncated. */
static void label_fmt(char *buf, size_t size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void label_fmt(char *buf, size_t size, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, size, fmt, ap);
    va_end(ap);
}

static enum qp_status nomem(struct conv *c)
{
    return qp_fail(c->err, QP_E_NOMEM, "'%s': out of memory", c->tp.file);
}

/* Allocates n zeroed elements of size (at least one, so n == 0 is not
 * NULL). */
static void *alloc_n(size_t n, size_t size)
{
    return calloc(n ? n : 1, size);
}

static enum qp_status str(struct conv *c, char **dst, const char *s)
{
    if (!(*dst = strdup(s ? s : "")))
        return nomem(c);
    return QP_OK;
}

static enum qp_status strv(struct conv *c, char ***dst, size_t *n,
                           char *const *src, size_t count)
{
    if (!(*dst = alloc_n(count, sizeof **dst)))
        return nomem(c);
    *n = count;
    for (size_t i = 0; i < count; i++)
        if (str(c, &(*dst)[i], src[i]))
            return QP_E_NOMEM;
    return QP_OK;
}

static void strv_free(char **v, size_t n)
{
    for (size_t i = 0; v && i < n; i++)
        free(v[i]);
    free(v);
}

static enum qp_status tensor(struct conv *c, const Onnx__TensorProto *tp,
                             const char *label, const char *name,
                             struct qp_tensor **out)
{
    enum qp_status st =
        qp_fmt_tensorproto_to_tensor(&c->tp, tp, label, name, out, c->err);
    if (st)
        return st;
    c->stats->tensors++;
    if ((*out)->map) {
        c->stats->borrowed++;
        c->stats->bytes_borrowed += (*out)->nbytes;
    } else {
        c->stats->bytes_copied += (*out)->nbytes;
    }
    return QP_OK;
}

/* ---- types ---------------------------------------------------------------- */

static void type_release(struct qp_onnx_valtype *t)
{
    for (int i = 0; t->dims && i < t->ndim; i++)
        free(t->dims[i].param);
    free(t->dims);
    if (t->elem) {
        type_release(t->elem);
        free(t->elem);
    }
    memset(t, 0, sizeof *t);
}

static enum qp_status shape(struct conv *c, const Onnx__TensorShapeProto *sp,
                            struct qp_onnx_valtype *t)
{
    t->ndim = -1;
    if (!sp)
        return QP_OK;
    if (sp->n_dim > 64)
        return qp_fail(c->err, QP_E_UNSUPPORTED, "'%s': a value has %zu dims",
                       c->tp.file, sp->n_dim);
    if (!(t->dims = alloc_n(sp->n_dim, sizeof *t->dims)))
        return nomem(c);
    t->ndim = (int)sp->n_dim;
    for (size_t i = 0; i < sp->n_dim; i++) {
        const Onnx__TensorShapeProto__Dimension *d = sp->dim[i];
        t->dims[i].value = -1;
        if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE)
            t->dims[i].value = d->dim_value;
        else if (d->value_case ==
                     ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM &&
                 str(c, &t->dims[i].param, d->dim_param))
            return QP_E_NOMEM;
    }
    return QP_OK;
}

static enum qp_status type(struct conv *c, const Onnx__TypeProto *tp,
                           struct qp_onnx_valtype *t)
{
    memset(t, 0, sizeof *t);
    t->ndim = -1;
    if (!tp)
        return QP_OK;
    const Onnx__TypeProto *inner = NULL;
    switch (tp->value_case) {
    case ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE:
        t->kind = QP_ONNX_KIND_TENSOR;
        t->elem_type = tp->tensor_type->elem_type;
        return shape(c, tp->tensor_type->shape, t);
    case ONNX__TYPE_PROTO__VALUE_SPARSE_TENSOR_TYPE:
        t->kind = QP_ONNX_KIND_SPARSE_TENSOR;
        t->elem_type = tp->sparse_tensor_type->elem_type;
        return shape(c, tp->sparse_tensor_type->shape, t);
    case ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE:
        t->kind = QP_ONNX_KIND_SEQUENCE;
        inner = tp->sequence_type->elem_type;
        break;
    case ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE:
        t->kind = QP_ONNX_KIND_OPTIONAL;
        inner = tp->optional_type->elem_type;
        break;
    case ONNX__TYPE_PROTO__VALUE_MAP_TYPE:
        t->kind = QP_ONNX_KIND_MAP;
        t->elem_type = tp->map_type->key_type;
        inner = tp->map_type->value_type;
        break;
    default:
        return QP_OK;
    }
    if (!(t->elem = calloc(1, sizeof *t->elem)))
        return nomem(c);
    return type(c, inner, t->elem);
}

static enum qp_status values(struct conv *c, Onnx__ValueInfoProto *const *src,
                             size_t count, struct qp_onnx_value **dst,
                             size_t *n)
{
    if (!(*dst = alloc_n(count, sizeof **dst)))
        return nomem(c);
    *n = count;
    for (size_t i = 0; i < count; i++) {
        (*dst)[i].type.ndim = -1;
        if (str(c, &(*dst)[i].name, src[i]->name) ||
            type(c, src[i]->type, &(*dst)[i].type))
            return c->err->status;
    }
    return QP_OK;
}

/* ---- graphs, nodes, attributes -------------------------------------------- */

static void graph_free(struct qp_onnx_graph *g);
static enum qp_status graph(struct conv *c, const Onnx__GraphProto *gp,
                            const char *scope, struct qp_onnx_graph **out);

static void attr_release(struct qp_onnx_attr *a)
{
    free(a->name);
    free(a->ref_attr_name);
    free(a->s);
    qp_tensor_free(a->t);
    graph_free(a->g);
    if (a->tp) {
        type_release(a->tp);
        free(a->tp);
    }
    free(a->floats);
    free(a->ints);
    strv_free(a->strings, a->n);
    free(a->string_lens);
    for (size_t i = 0; a->tensors && i < a->n; i++)
        qp_tensor_free(a->tensors[i]);
    free(a->tensors);
    for (size_t i = 0; a->graphs && i < a->n; i++)
        graph_free(a->graphs[i]);
    free(a->graphs);
    for (size_t i = 0; a->tps && i < a->n; i++)
        type_release(&a->tps[i]);
    free(a->tps);
}

/* The type of an attribute without one (IR version 1): from its fields. */
static int infer_type(const Onnx__AttributeProto *ap)
{
    if (ap->has_f) return QP_ONNX_ATTR_FLOAT;
    if (ap->has_i) return QP_ONNX_ATTR_INT;
    if (ap->has_s) return QP_ONNX_ATTR_STRING;
    if (ap->t) return QP_ONNX_ATTR_TENSOR;
    if (ap->g) return QP_ONNX_ATTR_GRAPH;
    if (ap->n_floats) return QP_ONNX_ATTR_FLOATS;
    if (ap->n_ints) return QP_ONNX_ATTR_INTS;
    if (ap->n_strings) return QP_ONNX_ATTR_STRINGS;
    if (ap->n_tensors) return QP_ONNX_ATTR_TENSORS;
    if (ap->n_graphs) return QP_ONNX_ATTR_GRAPHS;
    return QP_ONNX_ATTR_UNDEFINED;
}

static enum qp_status bytes_str(struct conv *c, const ProtobufCBinaryData *b,
                                char **s, size_t *len)
{
    if (!(*s = malloc(b->len + 1)))
        return nomem(c);
    if (b->len)
        memcpy(*s, b->data, b->len);
    (*s)[b->len] = '\0';
    *len = b->len;
    return QP_OK;
}

/* Converts the list part of attribute ap (type a->type) into a. */
static enum qp_status attr_list(struct conv *c, const char *where,
                                const Onnx__AttributeProto *ap,
                                struct qp_onnx_attr *a)
{
    char label[640];
    switch (a->type) {
    case QP_ONNX_ATTR_FLOATS:
        a->n = ap->n_floats;
        if (!(a->floats = alloc_n(a->n, sizeof *a->floats)))
            return nomem(c);
        if (a->n)
            memcpy(a->floats, ap->floats, a->n * sizeof *a->floats);
        return QP_OK;
    case QP_ONNX_ATTR_INTS:
        a->n = ap->n_ints;
        if (!(a->ints = alloc_n(a->n, sizeof *a->ints)))
            return nomem(c);
        if (a->n)
            memcpy(a->ints, ap->ints, a->n * sizeof *a->ints);
        return QP_OK;
    case QP_ONNX_ATTR_STRINGS:
        if (!(a->strings = alloc_n(ap->n_strings, sizeof *a->strings)) ||
            !(a->string_lens = alloc_n(ap->n_strings, sizeof *a->string_lens)))
            return nomem(c);
        a->n = ap->n_strings;
        for (size_t i = 0; i < a->n; i++)
            if (bytes_str(c, &ap->strings[i], &a->strings[i],
                          &a->string_lens[i]))
                return QP_E_NOMEM;
        return QP_OK;
    case QP_ONNX_ATTR_TENSORS:
        if (!(a->tensors = alloc_n(ap->n_tensors, sizeof *a->tensors)))
            return nomem(c);
        a->n = ap->n_tensors;
        for (size_t i = 0; i < a->n; i++) {
            const char *nm = ap->tensors[i]->name;
            label_fmt(label, sizeof label, "%s tensor %zu", where, i);
            if (tensor(c, ap->tensors[i], label, nm && *nm ? nm : a->name,
                       &a->tensors[i]))
                return c->err->status;
        }
        return QP_OK;
    case QP_ONNX_ATTR_GRAPHS:
        if (!(a->graphs = alloc_n(ap->n_graphs, sizeof *a->graphs)))
            return nomem(c);
        a->n = ap->n_graphs;
        for (size_t i = 0; i < a->n; i++) {
            label_fmt(label, sizeof label, "%s graph %zu: ", where, i);
            if (graph(c, ap->graphs[i], label, &a->graphs[i]))
                return c->err->status;
        }
        return QP_OK;
    case QP_ONNX_ATTR_TYPE_PROTOS:
        if (!(a->tps = alloc_n(ap->n_type_protos, sizeof *a->tps)))
            return nomem(c);
        a->n = ap->n_type_protos;
        for (size_t i = 0; i < a->n; i++)
            if (type(c, ap->type_protos[i], &a->tps[i]))
                return c->err->status;
        return QP_OK;
    default: /* sparse tensors: the type only */
        return QP_OK;
    }
}

static enum qp_status attr(struct conv *c, const char *node_label,
                           const Onnx__AttributeProto *ap,
                           struct qp_onnx_attr *a)
{
    if (!ap->name || !*ap->name)
        return qp_fail(c->err, QP_E_FORMAT, "'%s': %s: an attribute has no "
                       "name", c->tp.file, node_label);
    if (str(c, &a->name, ap->name))
        return QP_E_NOMEM;
    if (ap->ref_attr_name && *ap->ref_attr_name &&
        str(c, &a->ref_attr_name, ap->ref_attr_name))
        return QP_E_NOMEM;
    int t = ap->has_type ? (int)ap->type : infer_type(ap);
    char where[640];
    label_fmt(where, sizeof where, "%s attribute '%s'", node_label, ap->name);
    if (t <= 0 || t >= QP_ONNX_ATTR_COUNT) {
        if (a->ref_attr_name) /* a reference carries no value */
            return QP_OK;
        return qp_fail(c->err, QP_E_FORMAT, "'%s': %s has %s type %d",
                       c->tp.file, where, t ? "unknown" : "no", t);
    }
    a->type = (enum qp_onnx_attr_type)t;
    switch (a->type) {
    case QP_ONNX_ATTR_FLOAT:
        a->f = ap->f;
        return QP_OK;
    case QP_ONNX_ATTR_INT:
        a->i = ap->i;
        return QP_OK;
    case QP_ONNX_ATTR_STRING:
        return bytes_str(c, &ap->s, &a->s, &a->s_len);
    case QP_ONNX_ATTR_TENSOR:
        if (!ap->t)
            return qp_fail(c->err, QP_E_FORMAT, "'%s': %s is a TENSOR without "
                           "a tensor", c->tp.file, where);
        return tensor(c, ap->t, where,
                      ap->t->name && *ap->t->name ? ap->t->name : a->name,
                      &a->t);
    case QP_ONNX_ATTR_GRAPH:
        if (!ap->g)
            return qp_fail(c->err, QP_E_FORMAT, "'%s': %s is a GRAPH without "
                           "a graph", c->tp.file, where);
        strncat(where, ": ", sizeof where - strlen(where) - 1);
        return graph(c, ap->g, where, &a->g);
    case QP_ONNX_ATTR_TYPE_PROTO:
        if (!(a->tp = calloc(1, sizeof *a->tp)))
            return nomem(c);
        return type(c, ap->tp, a->tp);
    default:
        return attr_list(c, where, ap, a);
    }
}

/* A tensor over t's memory, named name: a second reference on t's mapping,
 * or t's owned buffer, whose ownership moves to the new tensor. */
static enum qp_status share(struct conv *c, struct qp_tensor *t,
                            const char *name, struct qp_tensor **out)
{
    enum qp_status st = qp_tensor_wrap(name, t->dtype, t->ndim, t->shape,
                                       t->data, t->nbytes, t->map, out, c->err);
    if (!st && !t->map && t->owns_data) {
        (*out)->owns_data = true;
        t->owns_data = false;
    }
    return st;
}

/* Sets n->value for a standard Constant node. */
static enum qp_status constant(struct conv *c, const char *label,
                               struct qp_onnx_node *n)
{
    static const struct {
        const char *name;
        enum qp_onnx_attr_type type;
    } kinds[] = {
        {"value", QP_ONNX_ATTR_TENSOR},       {"value_float", QP_ONNX_ATTR_FLOAT},
        {"value_floats", QP_ONNX_ATTR_FLOATS}, {"value_int", QP_ONNX_ATTR_INT},
        {"value_ints", QP_ONNX_ATTR_INTS},     {"value_string", 0},
        {"value_strings", 0},                  {"sparse_value", 0},
    };
    const char *file = c->tp.file;
    if (n->n_outputs != 1 || !*n->outputs[0])
        return qp_fail(c->err, QP_E_FORMAT, "'%s': %s needs one named output",
                       file, label);
    const struct qp_onnx_attr *a = NULL;
    size_t k = 0, found = 0;
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        const struct qp_onnx_attr *x = qp_onnx_attr_find(n, kinds[i].name);
        if (x) {
            a = x;
            k = i;
            found++;
        }
    }
    if (found != 1)
        return qp_fail(c->err, QP_E_FORMAT, "'%s': %s needs exactly one value "
                       "attribute, it has %zu", file, label, found);
    if (!kinds[k].type)
        return qp_fail(c->err, QP_E_UNSUPPORTED, "'%s': %s: %s values are not "
                       "supported", file, label,
                       k == 7 ? "sparse" : "string");
    if (a->type != kinds[k].type)
        return qp_fail(c->err, QP_E_FORMAT, "'%s': %s: attribute '%s' is %s, "
                       "expected %s", file, label, a->name,
                       qp_onnx_attr_type_name(a->type),
                       qp_onnx_attr_type_name(kinds[k].type));
    const char *name = n->outputs[0];
    if (a->type == QP_ONNX_ATTR_TENSOR)
        return share(c, a->t, name, &n->value);
    bool list = a->type == QP_ONNX_ATTR_FLOATS || a->type == QP_ONNX_ATTR_INTS;
    bool ints = a->type == QP_ONNX_ATTR_INT || a->type == QP_ONNX_ATTR_INTS;
    int64_t len = (int64_t)a->n;
    enum qp_status st = qp_tensor_new(name, ints ? QP_DTYPE_I64 : QP_DTYPE_F32,
                                      list, &len, &n->value, c->err);
    if (st)
        return st;
    const void *src = ints ? (list ? (const void *)a->ints : &a->i)
                           : (list ? (const void *)a->floats : &a->f);
    if (n->value->nbytes)
        memcpy(n->value->data, src, n->value->nbytes);
    c->stats->tensors++;
    c->stats->bytes_copied += n->value->nbytes;
    return QP_OK;
}

static void node_release(struct qp_onnx_node *n)
{
    free(n->name);
    free(n->op_type);
    free(n->domain);
    strv_free(n->inputs, n->n_inputs);
    strv_free(n->outputs, n->n_outputs);
    for (size_t i = 0; n->attrs && i < n->n_attrs; i++)
        attr_release(&n->attrs[i]);
    free(n->attrs);
    qp_tensor_free(n->value);
}

static enum qp_status node(struct conv *c, const char *scope, size_t index,
                           const Onnx__NodeProto *np, struct qp_onnx_node *n)
{
    char label[640];
    const char *op = np->op_type && *np->op_type ? np->op_type : "?";
    if (np->name && *np->name)
        label_fmt(label, sizeof label, "%snode '%s' (%s)", scope, np->name, op);
    else
        label_fmt(label, sizeof label, "%snode %zu (%s)", scope, index, op);
    if (!np->op_type || !*np->op_type)
        return qp_fail(c->err, QP_E_FORMAT, "'%s': %s has no op_type",
                       c->tp.file, label);
    if (str(c, &n->name, np->name) || str(c, &n->op_type, np->op_type) ||
        str(c, &n->domain, np->domain) ||
        strv(c, &n->inputs, &n->n_inputs, np->input, np->n_input) ||
        strv(c, &n->outputs, &n->n_outputs, np->output, np->n_output))
        return QP_E_NOMEM;
    if (!(n->attrs = alloc_n(np->n_attribute, sizeof *n->attrs)))
        return nomem(c);
    n->n_attrs = np->n_attribute;
    for (size_t i = 0; i < np->n_attribute; i++)
        if (attr(c, label, np->attribute[i], &n->attrs[i]))
            return c->err->status;
    if (qp_onnx_node_is(n, "Constant"))
        return constant(c, label, n);
    return QP_OK;
}

static enum qp_status nodes(struct conv *c, const char *scope,
                            Onnx__NodeProto *const *src, size_t count,
                            struct qp_onnx_node **dst, size_t *n)
{
    if (!(*dst = alloc_n(count, sizeof **dst)))
        return nomem(c);
    *n = count;
    for (size_t i = 0; i < count; i++)
        if (node(c, scope, i, src[i], &(*dst)[i]))
            return c->err->status;
    return QP_OK;
}

static int cmp_tensor_name(const void *a, const void *b)
{
    return strcmp((*(struct qp_tensor *const *)a)->name,
                  (*(struct qp_tensor *const *)b)->name);
}

/* Refuses an initializer name that appears twice in g. */
static enum qp_status unique_initializers(struct conv *c, const char *scope,
                                          const struct qp_onnx_graph *g)
{
    if (g->n_initializers < 2)
        return QP_OK;
    struct qp_tensor **s = malloc(g->n_initializers * sizeof *s);
    if (!s)
        return nomem(c);
    memcpy(s, g->initializers, g->n_initializers * sizeof *s);
    qsort(s, g->n_initializers, sizeof *s, cmp_tensor_name);
    enum qp_status st = QP_OK;
    for (size_t i = 1; i < g->n_initializers && !st; i++)
        if (!strcmp(s[i - 1]->name, s[i]->name))
            st = qp_fail(c->err, QP_E_FORMAT, "'%s': %sinitializer name '%s' "
                         "appears twice", c->tp.file, scope, s[i]->name);
    free(s);
    return st;
}

static void graph_free(struct qp_onnx_graph *g)
{
    if (!g)
        return;
    free(g->name);
    for (size_t i = 0; g->nodes && i < g->n_nodes; i++)
        node_release(&g->nodes[i]);
    free(g->nodes);
    struct qp_onnx_value *vs[3] = {g->inputs, g->outputs, g->value_info};
    size_t ns[3] = {g->n_inputs, g->n_outputs, g->n_value_info};
    for (int k = 0; k < 3; k++) {
        for (size_t i = 0; vs[k] && i < ns[k]; i++) {
            free(vs[k][i].name);
            type_release(&vs[k][i].type);
        }
        free(vs[k]);
    }
    for (size_t i = 0; g->initializers && i < g->n_initializers; i++)
        qp_tensor_free(g->initializers[i]);
    free(g->initializers);
    free(g);
}

static enum qp_status graph(struct conv *c, const Onnx__GraphProto *gp,
                            const char *scope, struct qp_onnx_graph **out)
{
    struct qp_onnx_graph *g = *out = calloc(1, sizeof *g);
    if (!g)
        return nomem(c);
    if (gp->n_sparse_initializer)
        return qp_fail(c->err, QP_E_UNSUPPORTED, "'%s': %s%zu sparse "
                       "initializers are not supported", c->tp.file, scope,
                       gp->n_sparse_initializer);
    if (str(c, &g->name, gp->name) ||
        values(c, gp->input, gp->n_input, &g->inputs, &g->n_inputs) ||
        values(c, gp->output, gp->n_output, &g->outputs, &g->n_outputs) ||
        values(c, gp->value_info, gp->n_value_info, &g->value_info,
               &g->n_value_info))
        return c->err->status;
    if (!(g->initializers = alloc_n(gp->n_initializer, sizeof *g->initializers)))
        return nomem(c);
    g->n_initializers = gp->n_initializer;
    for (size_t i = 0; i < gp->n_initializer; i++) {
        const Onnx__TensorProto *tp = gp->initializer[i];
        char label[768];
        if (!tp->name || !*tp->name)
            return qp_fail(c->err, QP_E_FORMAT, "'%s': %sinitializer %zu has "
                           "no name", c->tp.file, scope, i);
        label_fmt(label, sizeof label, "%sinitializer '%s'", scope, tp->name);
        if (tensor(c, tp, label, tp->name, &g->initializers[i]))
            return c->err->status;
    }
    if (unique_initializers(c, scope, g))
        return c->err->status;
    return nodes(c, scope, gp->node, gp->n_node, &g->nodes, &g->n_nodes);
}

/* ---- model ------------------------------------------------------------------ */

static enum qp_status opsets(struct conv *c, Onnx__OperatorSetIdProto *const *src,
                             size_t count, struct qp_onnx_opset **dst, size_t *n)
{
    if (!(*dst = alloc_n(count, sizeof **dst)))
        return nomem(c);
    *n = count;
    for (size_t i = 0; i < count; i++) {
        (*dst)[i].version = src[i]->has_version ? src[i]->version : 0;
        if (str(c, &(*dst)[i].domain, src[i]->domain))
            return QP_E_NOMEM;
    }
    return QP_OK;
}

static void opsets_free(struct qp_onnx_opset *o, size_t n)
{
    for (size_t i = 0; o && i < n; i++)
        free(o[i].domain);
    free(o);
}

static enum qp_status function(struct conv *c, const Onnx__FunctionProto *fp,
                               struct qp_onnx_function *f)
{
    char scope[512];
    label_fmt(scope, sizeof scope, "function '%s': ", fp->name ? fp->name : "");
    if (str(c, &f->name, fp->name) || str(c, &f->domain, fp->domain) ||
        strv(c, &f->inputs, &f->n_inputs, fp->input, fp->n_input) ||
        strv(c, &f->outputs, &f->n_outputs, fp->output, fp->n_output) ||
        strv(c, &f->attributes, &f->n_attributes, fp->attribute,
             fp->n_attribute) ||
        opsets(c, fp->opset_import, fp->n_opset_import, &f->opsets,
               &f->n_opsets))
        return c->err->status;
    return nodes(c, scope, fp->node, fp->n_node, &f->nodes, &f->n_nodes);
}

void qp_onnx_model_free(struct qp_onnx_model *m)
{
    if (!m)
        return;
    free(m->path);
    free(m->producer_name);
    free(m->producer_version);
    free(m->domain);
    free(m->doc_string);
    opsets_free(m->opsets, m->n_opsets);
    for (size_t i = 0; m->metadata && i < m->n_metadata; i++) {
        free(m->metadata[i].key);
        free(m->metadata[i].value);
    }
    free(m->metadata);
    graph_free(m->graph);
    for (size_t i = 0; m->functions && i < m->n_functions; i++) {
        struct qp_onnx_function *f = &m->functions[i];
        free(f->name);
        free(f->domain);
        strv_free(f->inputs, f->n_inputs);
        strv_free(f->outputs, f->n_outputs);
        strv_free(f->attributes, f->n_attributes);
        for (size_t k = 0; f->nodes && k < f->n_nodes; k++)
            node_release(&f->nodes[k]);
        free(f->nodes);
        opsets_free(f->opsets, f->n_opsets);
    }
    free(m->functions);
    free(m);
}

static enum qp_status model(struct conv *c, const Onnx__ModelProto *mp,
                            struct qp_onnx_model *m)
{
    m->ir_version = mp->has_ir_version ? mp->ir_version : 0;
    m->model_version = mp->has_model_version ? mp->model_version : 0;
    if (str(c, &m->producer_name, mp->producer_name) ||
        str(c, &m->producer_version, mp->producer_version) ||
        str(c, &m->domain, mp->domain) ||
        str(c, &m->doc_string, mp->doc_string) ||
        opsets(c, mp->opset_import, mp->n_opset_import, &m->opsets,
               &m->n_opsets))
        return c->err->status;
    if (!(m->metadata = alloc_n(mp->n_metadata_props, sizeof *m->metadata)))
        return nomem(c);
    m->n_metadata = mp->n_metadata_props;
    for (size_t i = 0; i < m->n_metadata; i++)
        if (str(c, &m->metadata[i].key, mp->metadata_props[i]->key) ||
            str(c, &m->metadata[i].value, mp->metadata_props[i]->value))
            return QP_E_NOMEM;
    if (graph(c, mp->graph, "", &m->graph))
        return c->err->status;
    if (!(m->functions = alloc_n(mp->n_functions, sizeof *m->functions)))
        return nomem(c);
    m->n_functions = mp->n_functions;
    for (size_t i = 0; i < mp->n_functions; i++)
        if (function(c, mp->functions[i], &m->functions[i]))
            return c->err->status;
    return QP_OK;
}

enum qp_status qp_onnx_parse(const char *what, const void *buf, size_t len,
                             struct qp_mmap *map, const char *dir,
                             struct qp_onnx_model **out, struct qp_error *err)
{
    *out = NULL;
    struct qp_pb_msg pm;
    struct conv c = {.err = err};
    struct qp_onnx_model *m = NULL;
    enum qp_status st = qp_tp_unpack(&c.tp, &pm, &onnx__model_proto__descriptor,
                                     "ONNX model", what, buf, len, map, dir,
                                     err);
    const Onnx__ModelProto *mp = (const Onnx__ModelProto *)pm.msg;
    if (!st && !mp->graph)
        st = qp_fail(err, QP_E_FORMAT, "'%s': not an ONNX model: it has no "
                     "graph", what);
    if (!st && (!(m = calloc(1, sizeof *m)) || !(m->path = strdup(what))))
        st = qp_fail(err, QP_E_NOMEM, "'%s': out of memory", what);
    if (!st) {
        c.stats = &m->stats;
        st = model(&c, mp, m);
    }
    qp_tp_ctx_release(&c.tp);
    qp_pb_msg_release(&pm);
    if (st) {
        qp_onnx_model_free(m);
        return st;
    }
    *out = m;
    return QP_OK;
}

enum qp_status qp_onnx_load(const char *path, struct qp_onnx_model **out,
                            struct qp_error *err)
{
    *out = NULL;
    struct qp_mmap *map;
    enum qp_status st = qp_mmap_open(path, &map, err);
    if (st)
        return st;
    char *dir = qp_tp_dir_of(path);
    if (!dir)
        st = qp_fail(err, QP_E_NOMEM, "out of memory");
    else
        st = qp_onnx_parse(path, map->data, map->size, map, dir, out, err);
    free(dir);
    qp_mmap_unref(map);
    return st;
}
