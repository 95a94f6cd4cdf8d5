/* Unit tests of formats/onnx-write.c and formats/onnx-build.c: trees
 * built with every part the reader keeps (attributes of every type,
 * subgraphs, value types with symbolic dims, sequences / maps / optionals,
 * functions, metadata, initializers of every ONNX type qprobe has,
 * int4 and bool included) are written, read back with qp_onnx_load and
 * compared field by field; external data lands at 4096-byte offsets in
 * one side file and reads back the same; the real PP-OCRv4 models
 * round-trip and run bit for bit as before; refusals leave no file. */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "formats/onnx-write.h"
#include "model/exec.h"
#include "model/onnx-import.h"
#include "tests/test.h"
#include "tests/unit/ppocr-models.h"

/* ---- deep comparison ------------------------------------------------------ */

struct cmp {
    struct qp_test_ctx *ctx;
    int bad;
    char where[256];
};

static void differ(struct cmp *c, const char *what)
{
    if (c->bad++ < 10)
        qp_test_failf(c->ctx, __FILE__, __LINE__, "%s: %s differs", c->where,
                      what);
}

static void cmp_str(struct cmp *c, const char *a, const char *b, const char *what)
{
    if (strcmp(a ? a : "", b ? b : ""))
        differ(c, what);
}

static void cmp_tensor(struct cmp *c, const struct qp_tensor *a,
                       const struct qp_tensor *b)
{
    if (!a || !b || a->dtype != b->dtype || a->nbytes != b->nbytes ||
        !qp_shape_equal(a->ndim, a->shape, b->ndim, b->shape) ||
        (a->nbytes && memcmp(a->data, b->data, a->nbytes)))
        differ(c, "tensor");
    else
        cmp_str(c, a->name, b->name, "tensor name");
}

static void cmp_type(struct cmp *c, const struct qp_onnx_valtype *a,
                     const struct qp_onnx_valtype *b)
{
    if (a->kind != b->kind || a->elem_type != b->elem_type || a->ndim != b->ndim) {
        differ(c, "value type");
        return;
    }
    for (int d = 0; d < a->ndim; d++) {
        if (a->dims[d].value != b->dims[d].value)
            differ(c, "dim value");
        cmp_str(c, a->dims[d].param, b->dims[d].param, "dim param");
    }
    if (!a->elem != !b->elem)
        differ(c, "element type");
    else if (a->elem)
        cmp_type(c, a->elem, b->elem);
}

static void cmp_values(struct cmp *c, const struct qp_onnx_value *a, size_t na,
                       const struct qp_onnx_value *b, size_t nb)
{
    if (na != nb) {
        differ(c, "value count");
        return;
    }
    for (size_t i = 0; i < na; i++) {
        cmp_str(c, a[i].name, b[i].name, "value name");
        cmp_type(c, &a[i].type, &b[i].type);
    }
}

static void cmp_graph(struct cmp *c, const struct qp_onnx_graph *a,
                      const struct qp_onnx_graph *b);

static void cmp_attr(struct cmp *c, const struct qp_onnx_attr *a,
                     const struct qp_onnx_attr *b)
{
    cmp_str(c, a->name, b->name, "attribute name");
    cmp_str(c, a->ref_attr_name, b->ref_attr_name, "ref_attr_name");
    if (a->type != b->type || a->n != b->n) {
        differ(c, "attribute type or count");
        return;
    }
    switch (a->type) {
    case QP_ONNX_ATTR_FLOAT:
        if (memcmp(&a->f, &b->f, sizeof a->f))
            differ(c, "float");
        break;
    case QP_ONNX_ATTR_INT:
        if (a->i != b->i)
            differ(c, "int");
        break;
    case QP_ONNX_ATTR_STRING:
        if (a->s_len != b->s_len || memcmp(a->s, b->s, a->s_len))
            differ(c, "string");
        break;
    case QP_ONNX_ATTR_TENSOR:
        cmp_tensor(c, a->t, b->t);
        break;
    case QP_ONNX_ATTR_GRAPH:
        cmp_graph(c, a->g, b->g);
        break;
    case QP_ONNX_ATTR_TYPE_PROTO:
        cmp_type(c, a->tp, b->tp);
        break;
    case QP_ONNX_ATTR_FLOATS:
        if (a->n && memcmp(a->floats, b->floats, a->n * sizeof *a->floats))
            differ(c, "floats");
        break;
    case QP_ONNX_ATTR_INTS:
        if (a->n && memcmp(a->ints, b->ints, a->n * sizeof *a->ints))
            differ(c, "ints");
        break;
    case QP_ONNX_ATTR_STRINGS:
        for (size_t i = 0; i < a->n; i++)
            if (a->string_lens[i] != b->string_lens[i] ||
                memcmp(a->strings[i], b->strings[i], a->string_lens[i]))
                differ(c, "strings");
        break;
    case QP_ONNX_ATTR_TENSORS:
        for (size_t i = 0; i < a->n; i++)
            cmp_tensor(c, a->tensors[i], b->tensors[i]);
        break;
    case QP_ONNX_ATTR_GRAPHS:
        for (size_t i = 0; i < a->n; i++)
            cmp_graph(c, a->graphs[i], b->graphs[i]);
        break;
    case QP_ONNX_ATTR_TYPE_PROTOS:
        for (size_t i = 0; i < a->n; i++)
            cmp_type(c, &a->tps[i], &b->tps[i]);
        break;
    default:
        break;
    }
}

static void cmp_nodes(struct cmp *c, const struct qp_onnx_node *a, size_t na,
                      const struct qp_onnx_node *b, size_t nb)
{
    if (na != nb) {
        differ(c, "node count");
        return;
    }
    for (size_t i = 0; i < na; i++) {
        cmp_str(c, a[i].name, b[i].name, "node name");
        cmp_str(c, a[i].op_type, b[i].op_type, "op_type");
        cmp_str(c, a[i].domain, b[i].domain, "domain");
        if (a[i].n_inputs != b[i].n_inputs || a[i].n_outputs != b[i].n_outputs ||
            a[i].n_attrs != b[i].n_attrs) {
            differ(c, "node arity");
            continue;
        }
        for (size_t k = 0; k < a[i].n_inputs; k++)
            cmp_str(c, a[i].inputs[k], b[i].inputs[k], "node input");
        for (size_t k = 0; k < a[i].n_outputs; k++)
            cmp_str(c, a[i].outputs[k], b[i].outputs[k], "node output");
        for (size_t k = 0; k < a[i].n_attrs; k++)
            cmp_attr(c, &a[i].attrs[k], &b[i].attrs[k]);
        if (!a[i].value != !b[i].value)
            differ(c, "Constant value");
        else if (a[i].value)
            cmp_tensor(c, a[i].value, b[i].value);
    }
}

static void cmp_graph(struct cmp *c, const struct qp_onnx_graph *a,
                      const struct qp_onnx_graph *b)
{
    if (!a || !b) {
        differ(c, "graph");
        return;
    }
    cmp_str(c, a->name, b->name, "graph name");
    cmp_nodes(c, a->nodes, a->n_nodes, b->nodes, b->n_nodes);
    cmp_values(c, a->inputs, a->n_inputs, b->inputs, b->n_inputs);
    cmp_values(c, a->outputs, a->n_outputs, b->outputs, b->n_outputs);
    cmp_values(c, a->value_info, a->n_value_info, b->value_info, b->n_value_info);
    if (a->n_initializers != b->n_initializers)
        differ(c, "initializer count");
    else
        for (size_t i = 0; i < a->n_initializers; i++)
            cmp_tensor(c, a->initializers[i], b->initializers[i]);
}

/* Every field of two models; returns the number of differences. */
static int cmp_models(struct qp_test_ctx *ctx, const struct qp_onnx_model *a,
                      const struct qp_onnx_model *b, const char *where)
{
    struct cmp c = {ctx, 0, ""};
    snprintf(c.where, sizeof c.where, "%s", where);
    if (a->ir_version != b->ir_version || a->model_version != b->model_version)
        differ(&c, "ir/model version");
    cmp_str(&c, a->producer_name, b->producer_name, "producer_name");
    cmp_str(&c, a->producer_version, b->producer_version, "producer_version");
    cmp_str(&c, a->domain, b->domain, "domain");
    cmp_str(&c, a->doc_string, b->doc_string, "doc_string");
    if (a->n_opsets != b->n_opsets || a->n_metadata != b->n_metadata ||
        a->n_functions != b->n_functions) {
        differ(&c, "opset, metadata or function count");
        return c.bad;
    }
    for (size_t i = 0; i < a->n_opsets; i++) {
        cmp_str(&c, a->opsets[i].domain, b->opsets[i].domain, "opset domain");
        if (a->opsets[i].version != b->opsets[i].version)
            differ(&c, "opset version");
    }
    for (size_t i = 0; i < a->n_metadata; i++) {
        cmp_str(&c, a->metadata[i].key, b->metadata[i].key, "metadata key");
        cmp_str(&c, a->metadata[i].value, b->metadata[i].value, "metadata value");
    }
    for (size_t i = 0; i < a->n_functions; i++) {
        const struct qp_onnx_function *f = &a->functions[i], *g = &b->functions[i];
        cmp_str(&c, f->name, g->name, "function name");
        cmp_str(&c, f->domain, g->domain, "function domain");
        if (f->n_inputs != g->n_inputs || f->n_outputs != g->n_outputs ||
            f->n_attributes != g->n_attributes || f->n_opsets != g->n_opsets)
            differ(&c, "function arity");
        else
            for (size_t k = 0; k < f->n_inputs; k++)
                cmp_str(&c, f->inputs[k], g->inputs[k], "function input");
        cmp_nodes(&c, f->nodes, f->n_nodes, g->nodes, g->n_nodes);
    }
    cmp_graph(&c, a->graph, b->graph);
    return c.bad;
}

/* ---- a tree with every part ---------------------------------------------- */

static struct qp_tensor *tensor_of(struct qp_test_ctx *ctx, const char *name,
                                   enum qp_dtype dt, int nd, const int64_t *shape,
                                   uint32_t seed)
{
    struct qp_tensor *t;
    struct qp_error err;
    if (qp_tensor_new(name, dt, nd, shape, &t, &err)) {
        qp_test_failf(ctx, __FILE__, __LINE__, "%s", err.msg);
        return NULL;
    }
    uint8_t *p = t->data;
    for (size_t i = 0; i < t->nbytes; i++) {
        seed = seed * 1103515245u + 12345u;
        p[i] = (uint8_t)(seed >> 16);
    }
    if (dt == QP_DTYPE_BOOL)
        for (size_t i = 0; i < t->nbytes; i++)
            p[i] &= 1;
    if (dt == QP_DTYPE_F32 || dt == QP_DTYPE_F64 || dt == QP_DTYPE_F16 ||
        dt == QP_DTYPE_BF16) /* finite values: bit patterns compare anyway */
        memset(p, 0x3c, t->nbytes);
    return t;
}

static struct qp_onnx_model *every_part(struct qp_test_ctx *ctx)
{
    struct qp_error err;
    struct qp_onnx_model *m;
    if (qp_onnx_model_new(10, 21, "main", &m, &err))
        return NULL;
    bool ok = !qp_onnx_model_set_opset(m, "com.example", 3, &err) &&
              !qp_onnx_model_add_meta(m, "qprobe", "test", &err) &&
              !qp_onnx_model_add_meta(m, "empty", "", &err);
    free(m->producer_name);
    m->producer_name = strdup("qprobe");
    m->model_version = 7;
    struct qp_onnx_graph *g = m->graph;
    struct qp_onnx_dim dims[3] = {{-1, "batch"}, {3, NULL}, {-1, NULL}};
    ok = ok && !qp_onnx_graph_add_value(g, QP_ONNX_LIST_INPUT, "x", 1, 3, dims, &err);
    ok = ok && !qp_onnx_graph_add_value(g, QP_ONNX_LIST_OUTPUT, "y", 1, -1, NULL, &err);
    ok = ok && !qp_onnx_graph_add_value(g, QP_ONNX_LIST_VALUE_INFO, "s", 7, 0, NULL, &err);
    /* a sequence of maps of optionals in value_info */
    ok = ok && !qp_onnx_graph_add_value(g, QP_ONNX_LIST_VALUE_INFO, "seq", 0, -1,
                                        NULL, &err);
    if (ok) {
        struct qp_onnx_valtype *t = &g->value_info[g->n_value_info - 1].type;
        struct qp_onnx_valtype in = {QP_ONNX_KIND_TENSOR, 1, 1, dims + 1, NULL};
        struct qp_onnx_valtype opt = {QP_ONNX_KIND_OPTIONAL, 0, -1, NULL, &in};
        struct qp_onnx_valtype map = {QP_ONNX_KIND_MAP, 7, -1, NULL, &opt};
        struct qp_onnx_valtype seq = {QP_ONNX_KIND_SEQUENCE, 0, -1, NULL, &map};
        free(t->dims);
        ok = !qp_onnx_valtype_copy(&seq, t, &err);
    }
    static const enum qp_dtype types[] = {
        QP_DTYPE_F32, QP_DTYPE_F16, QP_DTYPE_BF16, QP_DTYPE_F64, QP_DTYPE_I8,
        QP_DTYPE_U8, QP_DTYPE_I16, QP_DTYPE_U16, QP_DTYPE_I32, QP_DTYPE_U32,
        QP_DTYPE_I64, QP_DTYPE_U64, QP_DTYPE_I4, QP_DTYPE_U4, QP_DTYPE_BOOL,
        QP_DTYPE_F8E4M3, QP_DTYPE_F8E5M2, QP_DTYPE_I2, QP_DTYPE_U2};
    for (size_t i = 0; ok && i < sizeof types / sizeof types[0]; i++) {
        char name[32];
        int64_t shape[2] = {3, (int64_t)i + 1}; /* odd counts for packed types */
        snprintf(name, sizeof name, "init_%s", qp_dtype_name(types[i]));
        struct qp_tensor *t = tensor_of(ctx, name, types[i], 2, shape, (uint32_t)i);
        ok = t && !qp_onnx_graph_add_initializer(g, t, &err);
    }
    int64_t s0 = 0;
    struct qp_tensor *scalar = tensor_of(ctx, "scalar", QP_DTYPE_I64, 0, &s0, 9);
    ok = ok && scalar && !qp_onnx_graph_add_initializer(g, scalar, &err);
    struct qp_onnx_node *n = NULL;
    const char *in[3] = {"x", "", "init_f32"}, *out[2] = {"y", ""};
    ok = ok && !qp_onnx_graph_add_node(g, "Custom", "com.example", "every", in, 3,
                                       out, 2, &n, &err);
    int64_t ints[3] = {-1, 0, INT64_MAX};
    float floats[2] = {-0.0f, 1e-30f};
    const char *strs[2] = {"a", ""};
    ok = ok && !qp_onnx_node_add_int(n, "i", -5, &err) &&
         !qp_onnx_node_add_float(n, "f", 0.1f, &err) &&
         !qp_onnx_node_add_string(n, "s", "with\0nul", 8, &err) &&
         !qp_onnx_node_add_ints(n, "is", ints, 3, &err) &&
         !qp_onnx_node_add_ints(n, "empty", NULL, 0, &err) &&
         !qp_onnx_node_add_floats(n, "fs", floats, 2, &err) &&
         !qp_onnx_node_add_strings(n, "ss", strs, 2, &err);
    int64_t ts[1] = {5};
    struct qp_tensor *at = tensor_of(ctx, "attr_t", QP_DTYPE_I4, 1, ts, 3);
    ok = ok && at && !qp_onnx_node_add_tensor(n, "t", at, &err);
    /* GRAPH, GRAPHS, TENSORS, TYPE_PROTO(S) and a reference, by hand */
    if (ok) {
        struct qp_onnx_model *sub;
        ok = !qp_onnx_model_new(0, 1, "body", &sub, &err);
        const char *bi[1] = {"x"}, *bo[1] = {"z"};
        ok = ok && !qp_onnx_graph_add_node(sub->graph, "Relu", "", "", bi, 1, bo,
                                           1, NULL, &err);
        struct qp_onnx_attr *a = NULL;
        if (ok && (a = realloc(n->attrs, (n->n_attrs + 4) * sizeof *a))) {
            n->attrs = a;
            a = memset(&n->attrs[n->n_attrs], 0, 4 * sizeof *a);
            n->n_attrs += 4;
            a[0].name = strdup("g");
            a[0].type = QP_ONNX_ATTR_GRAPH;
            a[0].g = sub->graph;
            sub->graph = NULL;
            a[1].name = strdup("ts");
            a[1].type = QP_ONNX_ATTR_TENSORS;
            a[1].n = 2;
            a[1].tensors = calloc(2, sizeof *a[1].tensors);
            a[1].tensors[0] = tensor_of(ctx, "t0", QP_DTYPE_U8, 1, ts, 1);
            a[1].tensors[1] = tensor_of(ctx, "t1", QP_DTYPE_F32, 1, ts, 2);
            a[2].name = strdup("tp");
            a[2].type = QP_ONNX_ATTR_TYPE_PROTO;
            a[2].tp = calloc(1, sizeof *a[2].tp);
            struct qp_onnx_valtype tt = {QP_ONNX_KIND_TENSOR, 10, 2, dims, NULL};
            ok = !qp_onnx_valtype_copy(&tt, a[2].tp, &err);
            a[3].name = strdup("ref");
            a[3].ref_attr_name = strdup("outer");
            a[3].type = QP_ONNX_ATTR_INT;
        }
        qp_onnx_model_free(sub);
        ok = ok && a;
    }
    /* a function */
    if (ok && (m->functions = calloc(1, sizeof *m->functions))) {
        struct qp_onnx_function *f = m->functions;
        m->n_functions = 1;
        f->name = strdup("Custom");
        f->domain = strdup("com.example");
        const char *fi[2] = {"a", "b"}, *fo[1] = {"c"};
        f->inputs = calloc(2, sizeof *f->inputs);
        f->inputs[0] = strdup(fi[0]);
        f->inputs[1] = strdup(fi[1]);
        f->n_inputs = 2;
        f->outputs = calloc(1, sizeof *f->outputs);
        f->outputs[0] = strdup(fo[0]);
        f->n_outputs = 1;
        f->attributes = calloc(1, sizeof *f->attributes);
        f->attributes[0] = strdup("outer");
        f->n_attributes = 1;
        f->opsets = calloc(1, sizeof *f->opsets);
        f->opsets[0].domain = strdup("");
        f->opsets[0].version = 18;
        f->n_opsets = 1;
        struct qp_onnx_graph tmp = {0};
        ok = !qp_onnx_graph_add_node(&tmp, "Add", "", "add", fi, 2, fo, 1, NULL,
                                     &err);
        f->nodes = tmp.nodes;
        f->n_nodes = tmp.n_nodes;
    }
    if (!ok) {
        qp_test_failf(ctx, __FILE__, __LINE__, "building: %s", err.msg);
        qp_onnx_model_free(m);
        return NULL;
    }
    return m;
}

static bool exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* The size of file path, or 0. */
static size_t file_bytes(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (size_t)st.st_size : 0;
}

/* Files in dir (hidden ones too). */
static int count_files(const char *dir)
{
    DIR *d = opendir(dir);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    if (d)
        closedir(d);
    return n;
}

QP_TEST(onnx_write_round_trips_every_part)
{
    struct qp_error err;
    struct qp_onnx_model *m = every_part(ctx), *back = NULL;
    REQUIRE(m);
    char *path = qp_test_path(ctx, "every.onnx");
    struct qp_onnx_save_stats st;
    REQUIRE_OK(qp_onnx_save(m, path, NULL, &st, &err), &err);
    CHECK(!st.external);
    CHECK_INT(st.external_tensors, 0);
    CHECK_INT(file_bytes(path), st.model_bytes);
    REQUIRE_OK(qp_onnx_load(path, &back, &err), &err);
    CHECK_INT(cmp_models(ctx, m, back, "every.onnx"), 0);
    /* a few fields by value, so that a comparator bug cannot hide them */
    CHECK_INT(back->ir_version, 10);
    CHECK_INT(qp_onnx_opset_version(back, ""), 21);
    CHECK_INT(qp_onnx_opset_version(back, "com.example"), 3);
    CHECK_STR(back->graph->inputs[0].type.dims[0].param, "batch");
    CHECK_INT(back->graph->inputs[0].type.dims[2].value, -1);
    CHECK(back->graph->inputs[0].type.dims[2].param == NULL);
    const struct qp_onnx_attr *s = qp_onnx_attr_find(&back->graph->nodes[0], "s");
    REQUIRE(s);
    CHECK_INT(s->s_len, 8);
    CHECK_STR(back->graph->nodes[0].inputs[1], "");
    const struct qp_tensor *i4 = qp_onnx_graph_initializer(back->graph, "init_i4");
    REQUIRE(i4);
    CHECK_INT(i4->dtype, QP_DTYPE_I4);
    CHECK_INT(i4->shape[1], 13);
    CHECK_INT(i4->nbytes, 20); /* 39 nibbles, packed two a byte */
    qp_onnx_model_free(back);
    qp_onnx_model_free(m);
    free(path);
}

QP_TEST(onnx_write_external_data_at_aligned_offsets)
{
    struct qp_error err;
    struct qp_onnx_model *m = every_part(ctx), *back = NULL;
    REQUIRE(m);
    /* two large initializers: one goes out, the small ones stay */
    int64_t big[2] = {300, 7};
    struct qp_tensor *a = tensor_of(ctx, "big_a", QP_DTYPE_F32, 2, big, 1);
    struct qp_tensor *b = tensor_of(ctx, "big_b", QP_DTYPE_I8, 2, big, 2);
    REQUIRE(a && b);
    for (size_t i = 0; i < qp_tensor_numel(a); i++)
        ((float *)a->data)[i] = (float)i * 0.5f - 3.0f;
    REQUIRE_OK(qp_onnx_graph_add_initializer(m->graph, a, &err), &err);
    REQUIRE_OK(qp_onnx_graph_add_initializer(m->graph, b, &err), &err);
    char *path = qp_test_path(ctx, "ext.onnx");
    struct qp_onnx_save_opts o = {.external = true, .ext_min = 2000};
    struct qp_onnx_save_stats st;
    REQUIRE_OK(qp_onnx_save(m, path, &o, &st, &err), &err);
    CHECK(st.external);
    CHECK_STR(st.data_name, "ext.onnx.data");
    CHECK_INT(st.external_tensors, 2);
    /* big_a (8400 bytes) at 0, big_b (2100 bytes) at the next 4096 */
    CHECK_INT(st.external_bytes, 3 * 4096 + 2100);
    char *data = qp_test_path(ctx, "ext.onnx.data");
    CHECK_INT(file_bytes(data), st.external_bytes);
    REQUIRE_OK(qp_onnx_load(path, &back, &err), &err);
    CHECK_INT(cmp_models(ctx, m, back, "ext.onnx"), 0);
    const struct qp_tensor *ba = qp_onnx_graph_initializer(back->graph, "big_a");
    REQUIRE(ba);
    CHECK(ba->map != NULL); /* aligned: borrowed from the side file's mapping */
    CHECK_NEAR(((const float *)ba->data)[2099], 2099 * 0.5 - 3.0, 0);
    qp_onnx_model_free(back);
    /* automatic: past ext_auto bytes, without asking */
    char *path2 = qp_test_path(ctx, "auto.onnx");
    struct qp_onnx_save_opts o2 = {.ext_auto = 10000, .data_name = "w.bin"};
    REQUIRE_OK(qp_onnx_save(m, path2, &o2, &st, &err), &err);
    CHECK(st.external);
    CHECK_STR(st.data_name, "w.bin");
    CHECK_INT(st.external_tensors, 2);
    char *w = qp_test_path(ctx, "w.bin");
    CHECK(exists(w));
    REQUIRE_OK(qp_onnx_load(path2, &back, &err), &err);
    CHECK_INT(cmp_models(ctx, m, back, "auto.onnx"), 0);
    qp_onnx_model_free(back);
    /* a data file name that leaves the folder is refused, nothing written */
    int before = count_files(qp_test_tmpdir(ctx));
    char *path3 = qp_test_path(ctx, "bad.onnx");
    struct qp_onnx_save_opts o3 = {.external = true, .data_name = "../x.data"};
    CHECK_FAILS(qp_onnx_save(m, path3, &o3, NULL, &err), QP_E_INVAL, &err,
                "plain file name");
    CHECK_INT(count_files(qp_test_tmpdir(ctx)), before);
    qp_onnx_model_free(m);
    free(path);
    free(path2);
    free(path3);
    free(data);
    free(w);
}

QP_TEST(onnx_write_refuses_what_onnx_cannot_hold)
{
    struct qp_error err;
    struct qp_onnx_model *m = every_part(ctx);
    REQUIRE(m);
    int64_t sh[1] = {5};
    struct qp_tensor *t = tensor_of(ctx, "three_bit", QP_DTYPE_I3, 1, sh, 1);
    REQUIRE(t);
    REQUIRE_OK(qp_onnx_graph_add_initializer(m->graph, t, &err), &err);
    int before = count_files(qp_test_tmpdir(ctx));
    char *path = qp_test_path(ctx, "bad.onnx");
    CHECK_FAILS(qp_onnx_save(m, path, NULL, NULL, &err), QP_E_UNSUPPORTED, &err,
                "'three_bit' is i3");
    CHECK(!exists(path));
    CHECK_INT(count_files(qp_test_tmpdir(ctx)), before);
    /* a sparse attribute has no value in the tree */
    m->graph->n_initializers--;
    qp_tensor_free(t);
    struct qp_onnx_node *n = &m->graph->nodes[0];
    n->attrs[0].type = QP_ONNX_ATTR_SPARSE_TENSOR;
    CHECK_FAILS(qp_onnx_save(m, path, NULL, NULL, &err), QP_E_UNSUPPORTED, &err,
                "attribute 'i' is SPARSE_TENSOR");
    CHECK_INT(count_files(qp_test_tmpdir(ctx)), before);
    /* an unwritable place: an error naming it */
    CHECK_FAILS(qp_onnx_save(m, "/nonexistent-dir/x.onnx", NULL, NULL, &err),
                QP_E_UNSUPPORTED, &err, "SPARSE");
    n->attrs[0].type = QP_ONNX_ATTR_INT;
    CHECK_FAILS(qp_onnx_save(m, "/nonexistent-dir/x.onnx", NULL, NULL, &err),
                QP_E_IO, &err, "/nonexistent-dir/x.onnx");
    qp_onnx_model_free(m);
    free(path);
}

/* The real models: read, write, read again; equal trees, and the graph
 * built from the copy computes the same bytes. */
QP_TEST(onnx_write_round_trips_ppocr)
{
    char paths[PPOCR_COUNT][512];
    REQUIRE(ppocr_paths(ctx, paths));
    for (int k = 0; k < PPOCR_COUNT; k++) {
        struct qp_error err;
        struct qp_onnx_model *m = NULL, *back = NULL;
        REQUIRE_OK(qp_onnx_load(paths[k], &m, &err), &err);
        char name[32];
        snprintf(name, sizeof name, "copy%d.onnx", k);
        char *copy = qp_test_path(ctx, name);
        struct qp_onnx_save_opts o = {.external = k == PPOCR_REC};
        struct qp_onnx_save_stats st;
        REQUIRE_OK(qp_onnx_save(m, copy, &o, &st, &err), &err);
        REQUIRE_OK(qp_onnx_load(copy, &back, &err), &err);
        CHECK_INT(cmp_models(ctx, m, back, paths[k]), 0);
        /* PP-OCR keeps its weights in Constant nodes (attributes, always
         * embedded): asked for external data, the writer makes no side
         * file */
        CHECK(!st.external && st.external_tensors == 0);
        qp_onnx_model_free(back);
        qp_onnx_model_free(m);
        struct qp_graph *g1, *g2;
        REQUIRE_OK(qp_model_load_onnx(paths[k], NULL, &g1, &err), &err);
        REQUIRE_OK(qp_model_load_onnx(copy, NULL, &g2, &err), &err);
        int64_t shape[4] = {1, 3, k == PPOCR_DET ? 64 : 48, 96};
        struct qp_tensor *x;
        REQUIRE_OK(qp_tensor_new("x", QP_DTYPE_F32, 4, shape, &x, &err), &err);
        for (size_t i = 0; i < qp_tensor_numel(x); i++)
            ((float *)x->data)[i] = (float)((i * 37) % 101) / 50.0f - 1.0f;
        const struct qp_tensor *feed[1] = {x};
        struct qp_tensor *y1 = NULL, *y2 = NULL;
        struct qp_exec_opts eo = {0};
        CHECK_OK(qp_exec_run(g1, feed, 1, &eo, &y1, NULL, &err), &err);
        CHECK_OK(qp_exec_run(g2, feed, 1, &eo, &y2, NULL, &err), &err);
        CHECK(y1 && y2 && y1->nbytes == y2->nbytes &&
              !memcmp(y1->data, y2->data, y1->nbytes));
        qp_tensor_free(y1);
        qp_tensor_free(y2);
        qp_tensor_free(x);
        qp_graph_free(g1);
        qp_graph_free(g2);
        free(copy);
    }
}
