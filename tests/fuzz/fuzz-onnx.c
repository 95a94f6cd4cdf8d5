/* tests/fuzz/fuzz-onnx.c: the ONNX model parser on arbitrary bytes; a
 * parsed model is walked (every tensor read, subgraphs included) and
 * freed. Seeds in tests/fuzz/seeds/onnx/ are small models encoded by hand
 * (tests/unit/pbtest.h): nodes with attributes of each type, Constants,
 * If subgraphs, a function, typed initializers. */
#include <stdint.h>
#include <stdlib.h>

#include "formats/onnx.h"

static void touch(const struct qp_tensor *t)
{
    size_t n = qp_tensor_numel(t);
    float buf[16];
    if (t->data && n)
        qp_tensor_read_f32(t, 0, n < 16 ? n : 16, buf);
}

static void walk(const struct qp_onnx_graph *g, int depth)
{
    for (size_t i = 0; i < g->n_initializers; i++)
        touch(g->initializers[i]);
    for (size_t i = 0; i < g->n_nodes; i++) {
        const struct qp_onnx_node *n = &g->nodes[i];
        if (n->value)
            touch(n->value);
        int64_t v;
        const int64_t *ints;
        size_t cnt;
        qp_onnx_attr_int(n, "axis", 0, &v, NULL);
        qp_onnx_attr_ints(n, "pads", &ints, &cnt, NULL);
        for (size_t k = 0; k < n->n_attrs; k++) {
            const struct qp_onnx_attr *a = &n->attrs[k];
            if (a->t)
                touch(a->t);
            if (a->g)
                walk(a->g, depth + 1);
            for (size_t j = 0; a->tensors && j < a->n; j++)
                touch(a->tensors[j]);
            for (size_t j = 0; a->graphs && j < a->n; j++)
                walk(a->graphs[j], depth + 1);
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct qp_error err;
    struct qp_onnx_model *m = NULL;
    if (qp_onnx_parse("fuzz", data, size, NULL, NULL, &m, &err) == QP_OK) {
        walk(m->graph, 0);
        qp_onnx_opset_version(m, "");
    }
    qp_onnx_model_free(m);
    return 0;
}
