/* formats/dump-onnx.c: an ONNX model read as a dump of its weights
 * (read-only): the main graph's initializers in file order, then the values
 * of its Constant nodes, named by their outputs (a Constant whose output
 * has an initializer's name is left out). Subgraph weights (If/Loop
 * bodies) are not listed. The model is parsed once at open and kept until
 * close; a loaded tensor borrows its data from the file mapping when the
 * model does, else it is a copy, so it may outlive the dump. */
#include <stdlib.h>
#include <string.h>

#include "formats/dump.h"
#include "formats/onnx.h"

struct onnx_dump {
    struct qp_onnx_model *model;
    const struct qp_tensor **src; /* by backing index */
};

static void onnx_close(struct qp_dump *d)
{
    struct onnx_dump *od = d->impl;
    if (!od)
        return;
    qp_onnx_model_free(od->model);
    free(od->src);
    free(od);
    d->impl = NULL;
}

static enum qp_status onnx_open(struct qp_dump *d, struct qp_error *err)
{
    struct onnx_dump *od = calloc(1, sizeof *od);
    if (!od)
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    d->impl = od;
    enum qp_status st = qp_onnx_load(d->path, &od->model, err);
    if (st)
        return st;
    const struct qp_onnx_graph *g = od->model->graph;
    size_t cap = g->n_initializers + g->n_nodes;
    od->src = calloc(cap ? cap : 1, sizeof *od->src);
    d->entries = calloc(cap ? cap : 1, sizeof *d->entries);
    if (!od->src || !d->entries)
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    size_t n = 0;
    for (size_t i = 0; i < g->n_initializers; i++)
        od->src[n++] = g->initializers[i];
    for (size_t i = 0; i < g->n_nodes; i++) {
        const struct qp_tensor *v = g->nodes[i].value;
        if (v && !qp_onnx_graph_initializer(g, v->name))
            od->src[n++] = v;
    }
    for (size_t i = 0; i < n; i++) {
        const struct qp_tensor *t = od->src[i];
        st = qp_tensor_new_desc(t->name, t->dtype, t->ndim, t->shape,
                                &d->entries[i], err);
        if (st)
            return st;
        d->count = i + 1;
    }
    return QP_OK;
}

static enum qp_status onnx_load(struct qp_dump *d, size_t i,
                                struct qp_tensor **out, struct qp_error *err)
{
    struct onnx_dump *od = d->impl;
    const struct qp_tensor *t = od->src[i];
    if (t->map)
        return qp_tensor_wrap(t->name, t->dtype, t->ndim, t->shape, t->data,
                              t->nbytes, t->map, out, err);
    return qp_tensor_clone(t, out, err);
}

const struct qp_dump_ops qp_dump_ops_onnx = {
    "onnx", onnx_open, onnx_load, onnx_close,
};
