/* formats/onnx-write.c: struct qp_onnx_model -> ModelProto (protobuf-c)
 * -> a file, with external data (formats/onnx-write.h).
 *
 * The messages are allocated from a list that is freed at the end (never
 * through protobuf_c_message_free_unpacked: raw_data points into the
 * tree's tensors, which the messages do not own). The model streams to
 * the file through a ProtobufCBuffer, so no second copy of the weights is
 * made. */
#include "formats/onnx-write.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/outfile.h"
#include "formats/tensorproto.h"
#include "onnx.pb-c.h"

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
               "raw_data is written from memory: a little-endian host");

#define EXT_ALIGN 4096
/* protobuf's message limit, less room for everything but the weights */
#define AUTO_EXTERNAL ((size_t)INT32_MAX - ((size_t)64 << 20))

struct wctx {
    void **blocks;          /* everything allocated for the messages */
    size_t nblocks, cap;
    struct qp_error *err;
    const char *path;
    /* external data */
    bool external;
    size_t ext_min;
    const char *data_name;
    struct qp_outfile *data; /* open while tensors are converted */
    uint64_t data_off;
    size_t ext_tensors;
    size_t embedded;         /* raw bytes kept in the message */
};

static enum qp_status nomem(struct wctx *w)
{
    return qp_fail(w->err, QP_E_NOMEM, "'%s': out of memory", w->path);
}

/* Zeroed memory owned by w (NULL when out of memory). */
static void *take(struct wctx *w, size_t size)
{
    if (w->nblocks == w->cap) {
        size_t cap = w->cap ? 2 * w->cap : 256;
        void **b = realloc(w->blocks, cap * sizeof *b);
        if (!b)
            return NULL;
        w->blocks = b;
        w->cap = cap;
    }
    void *p = calloc(1, size ? size : 1);
    if (p)
        w->blocks[w->nblocks++] = p;
    return p;
}

static void release(struct wctx *w)
{
    for (size_t i = 0; i < w->nblocks; i++)
        free(w->blocks[i]);
    free(w->blocks);
}

/* A string field: absent (NULL) for "". */
static char *opt(const char *s)
{
    return s && *s ? (char *)s : NULL;
}

/* ---- types and values ------------------------------------------------------ */

static Onnx__TypeProto *type_pb(struct wctx *w, const struct qp_onnx_valtype *t);

static Onnx__TensorShapeProto *shape_pb(struct wctx *w,
                                        const struct qp_onnx_valtype *t)
{
    if (t->ndim < 0)
        return NULL;
    Onnx__TensorShapeProto *s = take(w, sizeof *s);
    Onnx__TensorShapeProto__Dimension **d =
        take(w, (size_t)t->ndim * sizeof *d);
    if (!s || !d)
        return NULL;
    onnx__tensor_shape_proto__init(s);
    s->n_dim = (size_t)t->ndim;
    s->dim = d;
    for (int i = 0; i < t->ndim; i++) {
        if (!(d[i] = take(w, sizeof *d[i])))
            return NULL;
        onnx__tensor_shape_proto__dimension__init(d[i]);
        if (t->dims[i].param) {
            d[i]->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
            d[i]->dim_param = t->dims[i].param;
        } else if (t->dims[i].value >= 0) {
            d[i]->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
            d[i]->dim_value = t->dims[i].value;
        }
    }
    return s;
}

/* NULL for no type, or when out of memory (callers tell them apart by
 * t->kind). */
static Onnx__TypeProto *type_pb(struct wctx *w, const struct qp_onnx_valtype *t)
{
    if (t->kind == QP_ONNX_KIND_NONE)
        return NULL;
    Onnx__TypeProto *tp = take(w, sizeof *tp);
    if (!tp)
        return NULL;
    onnx__type_proto__init(tp);
    switch (t->kind) {
    case QP_ONNX_KIND_TENSOR:
    case QP_ONNX_KIND_SPARSE_TENSOR: {
        bool sparse = t->kind == QP_ONNX_KIND_SPARSE_TENSOR;
        if (sparse) {
            Onnx__TypeProto__SparseTensor *st = take(w, sizeof *st);
            if (!st)
                return NULL;
            onnx__type_proto__sparse_tensor__init(st);
            st->has_elem_type = t->elem_type != 0;
            st->elem_type = t->elem_type;
            st->shape = shape_pb(w, t);
            tp->value_case = ONNX__TYPE_PROTO__VALUE_SPARSE_TENSOR_TYPE;
            tp->sparse_tensor_type = st;
        } else {
            Onnx__TypeProto__Tensor *tt = take(w, sizeof *tt);
            if (!tt)
                return NULL;
            onnx__type_proto__tensor__init(tt);
            tt->has_elem_type = t->elem_type != 0;
            tt->elem_type = t->elem_type;
            tt->shape = shape_pb(w, t);
            tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
            tp->tensor_type = tt;
        }
        return tp;
    }
    case QP_ONNX_KIND_SEQUENCE: {
        Onnx__TypeProto__Sequence *s = take(w, sizeof *s);
        if (!s)
            return NULL;
        onnx__type_proto__sequence__init(s);
        s->elem_type = t->elem ? type_pb(w, t->elem) : NULL;
        tp->value_case = ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE;
        tp->sequence_type = s;
        return tp;
    }
    case QP_ONNX_KIND_OPTIONAL: {
        Onnx__TypeProto__Optional *o = take(w, sizeof *o);
        if (!o)
            return NULL;
        onnx__type_proto__optional__init(o);
        o->elem_type = t->elem ? type_pb(w, t->elem) : NULL;
        tp->value_case = ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE;
        tp->optional_type = o;
        return tp;
    }
    case QP_ONNX_KIND_MAP: {
        Onnx__TypeProto__Map *m = take(w, sizeof *m);
        if (!m)
            return NULL;
        onnx__type_proto__map__init(m);
        m->has_key_type = true;
        m->key_type = t->elem_type;
        m->value_type = t->elem ? type_pb(w, t->elem) : NULL;
        tp->value_case = ONNX__TYPE_PROTO__VALUE_MAP_TYPE;
        tp->map_type = m;
        return tp;
    }
    default:
        return tp;
    }
}

static enum qp_status values_pb(struct wctx *w, const struct qp_onnx_value *v,
                                size_t n, Onnx__ValueInfoProto ***out)
{
    Onnx__ValueInfoProto **a = *out = take(w, n * sizeof *a);
    if (!a)
        return nomem(w);
    for (size_t i = 0; i < n; i++) {
        if (!(a[i] = take(w, sizeof *a[i])))
            return nomem(w);
        onnx__value_info_proto__init(a[i]);
        a[i]->name = (char *)v[i].name;
        a[i]->type = type_pb(w, &v[i].type);
        if (v[i].type.kind != QP_ONNX_KIND_NONE && !a[i]->type)
            return nomem(w);
    }
    return QP_OK;
}

/* ---- tensors ------------------------------------------------------------------ */

static Onnx__StringStringEntryProto *entry(struct wctx *w, const char *key,
                                           const char *value)
{
    Onnx__StringStringEntryProto *e = take(w, sizeof *e);
    char *v = take(w, strlen(value) + 1);
    if (!e || !v)
        return NULL;
    onnx__string_string_entry_proto__init(e);
    strcpy(v, value);
    e->key = (char *)key;
    e->value = v;
    return e;
}

/* Appends t's bytes to the side file at the next aligned offset and
 * points tp at them. */
static enum qp_status to_external(struct wctx *w, const struct qp_tensor *t,
                                  Onnx__TensorProto *tp)
{
    FILE *fp = w->data->fp;
    uint64_t off = (w->data_off + EXT_ALIGN - 1) / EXT_ALIGN * EXT_ALIGN;
    static const char zeros[EXT_ALIGN];
    if ((off > w->data_off &&
         fwrite(zeros, 1, (size_t)(off - w->data_off), fp) != off - w->data_off) ||
        fwrite(t->data, 1, t->nbytes, fp) != t->nbytes)
        return qp_fail(w->err, QP_E_IO, "'%s': cannot write external data for "
                       "'%s'", w->data->path, t->name);
    char num[2][32];
    snprintf(num[0], sizeof num[0], "%llu", (unsigned long long)off);
    snprintf(num[1], sizeof num[1], "%zu", t->nbytes);
    Onnx__StringStringEntryProto **e = take(w, 3 * sizeof *e);
    if (!e || !(e[0] = entry(w, "location", w->data_name)) ||
        !(e[1] = entry(w, "offset", num[0])) || !(e[2] = entry(w, "length", num[1])))
        return nomem(w);
    tp->n_external_data = 3;
    tp->external_data = e;
    tp->has_data_location = true;
    tp->data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
    w->data_off = off + t->nbytes;
    w->ext_tensors++;
    return QP_OK;
}

/* t as a TensorProto (raw_data, or external data when allowed and large
 * enough); label names it in messages. */
static enum qp_status tensor_pb(struct wctx *w, const struct qp_tensor *t,
                                bool may_externalize, const char *label,
                                Onnx__TensorProto **out)
{
    enum qp_onnx_type ot = qp_fmt_onnx_type_of(t->dtype);
    if (ot == QP_ONNX_UNDEFINED)
        return qp_fail(w->err, QP_E_UNSUPPORTED, "'%s': %s '%s' is %s, which "
                       "ONNX has no type for", w->path, label, t->name,
                       qp_dtype_name(t->dtype));
    if (!t->data && t->nbytes)
        return qp_fail(w->err, QP_E_INVAL, "'%s': %s '%s' has no data", w->path,
                       label, t->name);
    Onnx__TensorProto *tp = *out = take(w, sizeof *tp);
    int64_t *dims = take(w, (size_t)t->ndim * sizeof *dims);
    if (!tp || !dims)
        return nomem(w);
    onnx__tensor_proto__init(tp);
    tp->name = opt(t->name);
    tp->has_data_type = true;
    tp->data_type = (int32_t)ot;
    tp->n_dims = (size_t)t->ndim;
    tp->dims = dims;
    for (int d = 0; d < t->ndim; d++)
        dims[d] = t->shape[d];
    if (may_externalize && w->data && t->nbytes >= w->ext_min)
        return to_external(w, t, tp);
    if (t->nbytes > (size_t)INT32_MAX - w->embedded)
        return qp_fail(w->err, QP_E_UNSUPPORTED, "'%s': %s '%s' (%zu bytes) takes "
                       "the model past protobuf's 2 GiB: write it with external "
                       "data", w->path, label, t->name, t->nbytes);
    w->embedded += t->nbytes;
    tp->has_raw_data = true;
    tp->raw_data.len = t->nbytes;
    tp->raw_data.data = t->data;
    return QP_OK;
}

static enum qp_status tensors_pb(struct wctx *w, struct qp_tensor *const *t,
                                 size_t n, bool ext, const char *label,
                                 Onnx__TensorProto ***out)
{
    Onnx__TensorProto **a = *out = take(w, n * sizeof *a);
    if (!a)
        return nomem(w);
    for (size_t i = 0; i < n; i++) {
        if (ext && (!t[i]->name || !*t[i]->name))
            return qp_fail(w->err, QP_E_INVAL, "'%s': initializer %zu has no "
                           "name", w->path, i);
        enum qp_status st = tensor_pb(w, t[i], ext, label, &a[i]);
        if (st)
            return st;
    }
    return QP_OK;
}

/* ---- graphs, nodes, attributes ------------------------------------------- */

static enum qp_status graph_pb(struct wctx *w, const struct qp_onnx_graph *g,
                               Onnx__GraphProto **out);

static enum qp_status bytes_of(struct wctx *w, char *const *s,
                               const size_t *lens, size_t n,
                               ProtobufCBinaryData **out)
{
    ProtobufCBinaryData *b = *out = take(w, n * sizeof *b);
    if (!b)
        return nomem(w);
    for (size_t i = 0; i < n; i++) {
        b[i].data = (uint8_t *)s[i];
        b[i].len = lens ? lens[i] : strlen(s[i]);
    }
    return QP_OK;
}

static enum qp_status attr_pb(struct wctx *w, const struct qp_onnx_node *n,
                              const struct qp_onnx_attr *a,
                              Onnx__AttributeProto **out)
{
    Onnx__AttributeProto *ap = *out = take(w, sizeof *ap);
    if (!ap)
        return nomem(w);
    onnx__attribute_proto__init(ap);
    ap->name = a->name;
    ap->ref_attr_name = opt(a->ref_attr_name);
    if (a->type == QP_ONNX_ATTR_UNDEFINED)
        return QP_OK; /* a reference */
    ap->has_type = true;
    ap->type = (Onnx__AttributeProto__AttributeType)a->type;
    char label[512];
    snprintf(label, sizeof label, "node '%s' (%s) attribute '%s'", n->name,
             n->op_type, a->name);
    enum qp_status st = QP_OK;
    switch (a->type) {
    case QP_ONNX_ATTR_FLOAT:
        ap->has_f = true;
        ap->f = a->f;
        break;
    case QP_ONNX_ATTR_INT:
        ap->has_i = true;
        ap->i = a->i;
        break;
    case QP_ONNX_ATTR_STRING:
        ap->has_s = true;
        ap->s.data = (uint8_t *)a->s;
        ap->s.len = a->s_len;
        break;
    case QP_ONNX_ATTR_TENSOR:
        st = tensor_pb(w, a->t, false, label, &ap->t);
        break;
    case QP_ONNX_ATTR_GRAPH:
        st = graph_pb(w, a->g, &ap->g);
        break;
    case QP_ONNX_ATTR_TYPE_PROTO:
        if (!(ap->tp = type_pb(w, a->tp)) && a->tp->kind != QP_ONNX_KIND_NONE)
            st = nomem(w);
        break;
    case QP_ONNX_ATTR_FLOATS:
        ap->n_floats = a->n;
        ap->floats = a->floats;
        break;
    case QP_ONNX_ATTR_INTS:
        ap->n_ints = a->n;
        ap->ints = a->ints;
        break;
    case QP_ONNX_ATTR_STRINGS:
        ap->n_strings = a->n;
        st = bytes_of(w, a->strings, a->string_lens, a->n, &ap->strings);
        break;
    case QP_ONNX_ATTR_TENSORS:
        ap->n_tensors = a->n;
        st = tensors_pb(w, a->tensors, a->n, false, label, &ap->tensors);
        break;
    case QP_ONNX_ATTR_GRAPHS:
        ap->n_graphs = a->n;
        if (!(ap->graphs = take(w, a->n * sizeof *ap->graphs)))
            st = nomem(w);
        for (size_t i = 0; !st && i < a->n; i++)
            st = graph_pb(w, a->graphs[i], &ap->graphs[i]);
        break;
    case QP_ONNX_ATTR_TYPE_PROTOS:
        ap->n_type_protos = a->n;
        if (!(ap->type_protos = take(w, a->n * sizeof *ap->type_protos)))
            st = nomem(w);
        for (size_t i = 0; !st && i < a->n; i++)
            if (!(ap->type_protos[i] = type_pb(w, &a->tps[i])) &&
                a->tps[i].kind != QP_ONNX_KIND_NONE)
                st = nomem(w);
        break;
    default:
        st = qp_fail(w->err, QP_E_UNSUPPORTED, "'%s': %s is %s, whose value "
                     "qprobe does not keep", w->path, label,
                     qp_onnx_attr_type_name(a->type));
    }
    return st;
}

static enum qp_status nodes_pb(struct wctx *w, const struct qp_onnx_node *src,
                               size_t n, Onnx__NodeProto ***out)
{
    Onnx__NodeProto **a = *out = take(w, n * sizeof *a);
    if (!a)
        return nomem(w);
    for (size_t i = 0; i < n; i++) {
        const struct qp_onnx_node *s = &src[i];
        Onnx__NodeProto *np = a[i] = take(w, sizeof *np);
        if (!np)
            return nomem(w);
        onnx__node_proto__init(np);
        np->name = opt(s->name);
        np->op_type = s->op_type;
        np->domain = opt(s->domain);
        np->n_input = s->n_inputs;
        np->input = s->inputs;
        np->n_output = s->n_outputs;
        np->output = s->outputs;
        Onnx__AttributeProto **attrs = take(w, s->n_attrs * sizeof *attrs);
        if (!attrs)
            return nomem(w);
        np->n_attribute = s->n_attrs;
        np->attribute = attrs;
        for (size_t k = 0; k < s->n_attrs; k++) {
            enum qp_status st = attr_pb(w, s, &s->attrs[k], &attrs[k]);
            if (st)
                return st;
        }
    }
    return QP_OK;
}

static enum qp_status graph_pb(struct wctx *w, const struct qp_onnx_graph *g,
                               Onnx__GraphProto **out)
{
    Onnx__GraphProto *gp = *out = take(w, sizeof *gp);
    if (!gp)
        return nomem(w);
    onnx__graph_proto__init(gp);
    gp->name = opt(g->name);
    gp->n_node = g->n_nodes;
    gp->n_initializer = g->n_initializers;
    gp->n_input = g->n_inputs;
    gp->n_output = g->n_outputs;
    gp->n_value_info = g->n_value_info;
    enum qp_status st;
    if ((st = nodes_pb(w, g->nodes, g->n_nodes, &gp->node)) ||
        (st = tensors_pb(w, g->initializers, g->n_initializers, true,
                         "initializer", &gp->initializer)) ||
        (st = values_pb(w, g->inputs, g->n_inputs, &gp->input)) ||
        (st = values_pb(w, g->outputs, g->n_outputs, &gp->output)))
        return st;
    return values_pb(w, g->value_info, g->n_value_info, &gp->value_info);
}

/* ---- model ----------------------------------------------------------------------- */

static enum qp_status opsets_pb(struct wctx *w, const struct qp_onnx_opset *o,
                                size_t n, Onnx__OperatorSetIdProto ***out)
{
    Onnx__OperatorSetIdProto **a = *out = take(w, n * sizeof *a);
    if (!a)
        return nomem(w);
    for (size_t i = 0; i < n; i++) {
        if (!(a[i] = take(w, sizeof *a[i])))
            return nomem(w);
        onnx__operator_set_id_proto__init(a[i]);
        a[i]->domain = o[i].domain; /* "" is the standard domain: kept */
        a[i]->has_version = true;
        a[i]->version = o[i].version;
    }
    return QP_OK;
}

static enum qp_status functions_pb(struct wctx *w, const struct qp_onnx_model *m,
                                   Onnx__ModelProto *mp)
{
    mp->n_functions = m->n_functions;
    if (!(mp->functions = take(w, m->n_functions * sizeof *mp->functions)))
        return nomem(w);
    for (size_t i = 0; i < m->n_functions; i++) {
        const struct qp_onnx_function *f = &m->functions[i];
        Onnx__FunctionProto *fp = mp->functions[i] = take(w, sizeof *fp);
        if (!fp)
            return nomem(w);
        onnx__function_proto__init(fp);
        fp->name = f->name;
        fp->domain = opt(f->domain);
        fp->n_input = f->n_inputs;
        fp->input = f->inputs;
        fp->n_output = f->n_outputs;
        fp->output = f->outputs;
        fp->n_attribute = f->n_attributes;
        fp->attribute = f->attributes;
        fp->n_node = f->n_nodes;
        fp->n_opset_import = f->n_opsets;
        enum qp_status st = nodes_pb(w, f->nodes, f->n_nodes, &fp->node);
        if (!st)
            st = opsets_pb(w, f->opsets, f->n_opsets, &fp->opset_import);
        if (st)
            return st;
    }
    return QP_OK;
}

static enum qp_status model_pb(struct wctx *w, const struct qp_onnx_model *m,
                               Onnx__ModelProto *mp)
{
    onnx__model_proto__init(mp);
    mp->has_ir_version = m->ir_version != 0;
    mp->ir_version = m->ir_version;
    mp->producer_name = opt(m->producer_name);
    mp->producer_version = opt(m->producer_version);
    mp->domain = opt(m->domain);
    mp->doc_string = opt(m->doc_string);
    mp->has_model_version = m->model_version != 0;
    mp->model_version = m->model_version;
    mp->n_opset_import = m->n_opsets;
    mp->n_metadata_props = m->n_metadata;
    enum qp_status st = opsets_pb(w, m->opsets, m->n_opsets, &mp->opset_import);
    if (st)
        return st;
    if (!(mp->metadata_props = take(w, m->n_metadata * sizeof *mp->metadata_props)))
        return nomem(w);
    for (size_t i = 0; i < m->n_metadata; i++)
        if (!(mp->metadata_props[i] = entry(w, m->metadata[i].key,
                                            m->metadata[i].value)))
            return nomem(w);
    if ((st = graph_pb(w, m->graph, &mp->graph)))
        return st;
    return functions_pb(w, m, mp);
}

/* ---- files ------------------------------------------------------------------------ */

struct file_buf {
    ProtobufCBuffer base;
    FILE *fp;
    bool failed;
    size_t written;
};

static void file_append(ProtobufCBuffer *b, size_t len, const uint8_t *data)
{
    struct file_buf *f = (struct file_buf *)b;
    if (!f->failed && len && fwrite(data, 1, len, f->fp) != len)
        f->failed = true;
    f->written += len;
}

static size_t graph_init_bytes(const struct qp_onnx_graph *g)
{
    size_t n = 0;
    for (size_t i = 0; i < g->n_initializers; i++)
        n += g->initializers[i]->nbytes;
    return n;
}

/* The side file's default name: the model's base name with ".data". */
static void default_data_name(const char *path, char *buf, size_t size)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    snprintf(buf, size, "%s.data", base);
}

enum qp_status qp_onnx_save(const struct qp_onnx_model *m, const char *path,
                            const struct qp_onnx_save_opts *o,
                            struct qp_onnx_save_stats *stats,
                            struct qp_error *err)
{
    struct qp_onnx_save_opts def = {0};
    struct qp_onnx_save_stats s = {0};
    o = o ? o : &def;
    struct wctx w = {.err = err, .path = path,
                     .ext_min = o->ext_min ? o->ext_min : 1024};
    size_t limit = o->ext_auto ? o->ext_auto : AUTO_EXTERNAL;
    w.external = o->external || graph_init_bytes(m->graph) > limit;
    if (o->data_name)
        snprintf(s.data_name, sizeof s.data_name, "%s", o->data_name);
    else
        default_data_name(path, s.data_name, sizeof s.data_name);
    w.data_name = s.data_name;
    if (w.external && (strchr(s.data_name, '/') || !*s.data_name ||
                       !strcmp(s.data_name, "..")))
        return qp_fail(err, QP_E_INVAL, "'%s': external data file name '%s' "
                       "must be a plain file name in the model's folder", path,
                       s.data_name);
    struct qp_outfile *model_out = NULL;
    enum qp_status st = QP_OK;
    char data_path[4096];
    if (w.external) {
        const char *slash = strrchr(path, '/');
        snprintf(data_path, sizeof data_path, "%.*s%s",
                 slash ? (int)(slash - path + 1) : 0, path, s.data_name);
        st = qp_outfile_open(data_path, &w.data, err);
    }
    Onnx__ModelProto mp;
    if (!st)
        st = model_pb(&w, m, &mp);
    if (!st && !w.ext_tensors && w.data) { /* nothing was large enough */
        qp_outfile_abort(w.data);
        w.data = NULL;
    }
    if (!st && protobuf_c_message_get_packed_size(&mp.base) > (size_t)INT32_MAX)
        st = qp_fail(err, QP_E_UNSUPPORTED, "'%s': the model is over protobuf's "
                     "2 GiB limit even with external data", path);
    if (!st)
        st = qp_outfile_open(path, &model_out, err);
    if (!st) {
        struct file_buf fb = {{.append = file_append}, model_out->fp, false, 0};
        protobuf_c_message_pack_to_buffer(&mp.base, &fb.base);
        if (fb.failed)
            st = qp_fail(err, QP_E_IO, "'%s': write failed", path);
        s.model_bytes = fb.written;
    }
    s.external = w.data != NULL;
    s.external_bytes = (size_t)w.data_off;
    s.external_tensors = w.ext_tensors;
    if (!st && w.data) {
        st = qp_outfile_commit(w.data, err);
        w.data = NULL;
    }
    if (!st) {
        st = qp_outfile_commit(model_out, err);
        model_out = NULL;
        if (st && s.external)
            remove(data_path);
    }
    qp_outfile_abort(w.data);
    qp_outfile_abort(model_out);
    release(&w);
    if (!st && stats)
        *stats = s;
    return st;
}
