/* model/wlayout.c: weight layouts from a graph (model/wlayout.h). */
#include "model/wlayout.h"

#include "model/onnx-import.h"
#include "model/qassign.h"

enum qp_status qp_graph_weight_layouts(const struct qp_graph *g,
                                       struct qp_strmap *out,
                                       struct qp_error *err)
{
    struct qp_strmap clash;
    qp_strmap_init(&clash);
    enum qp_status st = QP_OK;
    for (int i = 0; !st && i < g->n_nodes; i++) {
        enum qp_wlayout l;
        if (!qp_node_weighted(g, i, &l))
            continue;
        const char *name = g->values[g->nodes[i].in[1]].name;
        size_t have;
        if (!qp_strmap_get(out, name, &have))
            st = qp_strmap_put(out, name, (size_t)l, NULL, err);
        else if (have != (size_t)l)
            st = qp_strmap_put(&clash, name, 0, NULL, err);
    }
    /* drop the names read in two layouts: rebuild without them */
    struct qp_strmap keep;
    qp_strmap_init(&keep);
    for (size_t i = 0; i < out->cap && !st; i++)
        if (out->keys[i] && !qp_strmap_get(&clash, out->keys[i], NULL))
            st = qp_strmap_put(&keep, out->keys[i], out->values[i], NULL, err);
    qp_strmap_release(out);
    *out = keep;
    qp_strmap_release(&clash);
    return st;
}

enum qp_status qp_onnx_weight_layouts(const char *path, struct qp_strmap *out,
                                      struct qp_error *err)
{
    struct qp_import_opts io = {true, true};
    struct qp_graph *g;
    enum qp_status st = qp_model_load_onnx(path, &io, &g, err);
    if (!st)
        st = qp_graph_weight_layouts(g, out, err);
    qp_graph_free(g);
    return st;
}
