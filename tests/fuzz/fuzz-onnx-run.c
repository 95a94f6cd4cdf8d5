/* tests/fuzz/fuzz-onnx-run.c: the runtime on arbitrary models: parse
 * (formats/onnx.h), import, fold and check (model/onnx-import.h), infer
 * shapes for the declared input shapes, and when every value is known and
 * small, run the graph on ramp inputs in fp32 and in the int mode of a
 * model's own quantization. Operators must refuse bad attributes, never
 * crash. Seeds: small models made by tests/unit/test-exec-onnx.h's
 * builders (conv/BN/pool, shape arithmetic with Resize and Softmax,
 * matmul with a decomposed normalization). */
#include <stdint.h>
#include <stdlib.h>

#include "model/infer.h"
#include "model/onnx-import.h"
#include "model/qdq.h"

#define MAX_ELEMS 4096

static bool small_known(const struct qp_graph *g, const struct qp_tdesc *d,
                        const bool *known)
{
    for (int v = 0; v < g->n_values; v++)
        if (!known[v] || qp_tdesc_numel(&d[v]) > MAX_ELEMS)
            return false;
    return true;
}

static void run(const struct qp_graph *g, struct qp_tensor **in,
                const struct qp_exec_hooks *h)
{
    struct qp_error err;
    struct qp_tensor *out[64] = {0};
    struct qp_exec_opts o = {.hooks = h};
    if (g->n_outputs <= 64 &&
        !qp_exec_run(g, (const struct qp_tensor *const *)in, g->n_inputs, &o, out,
                     NULL, &err))
        for (int k = 0; k < g->n_outputs; k++)
            qp_tensor_free(out[k]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct qp_error err;
    struct qp_onnx_model *m;
    struct qp_graph *g;
    if (qp_onnx_parse("fuzz", data, size, NULL, NULL, &m, &err) ||
        qp_model_from_onnx(m, NULL, &g, &err))
        return 0;
    size_t nv = (size_t)(g->n_values ? g->n_values : 1);
    struct qp_tdesc *in_d = calloc((size_t)(g->n_inputs ? g->n_inputs : 1),
                                   sizeof *in_d);
    struct qp_tdesc *d = calloc(nv, sizeof *d);
    bool *known = calloc(nv, 1);
    struct qp_tensor **in = calloc((size_t)(g->n_inputs ? g->n_inputs : 1),
                                   sizeof *in);
    bool ok = in_d && d && known && in;
    for (int i = 0; ok && i < g->n_inputs; i++) {
        const struct qp_value *v = &g->values[g->inputs[i]];
        ok = v->typed && qp_elem_size(v->dtype);
        in_d[i] = (struct qp_tdesc){v->dtype, v->ndim, {0}};
        for (int k = 0; ok && k < v->ndim; k++)
            ok = (in_d[i].shape[k] = v->shape[k]) >= 0;
    }
    ok = ok && !qp_graph_infer(g, in_d, d, known, &err) && small_known(g, d, known);
    for (int i = 0; ok && i < g->n_inputs; i++) {
        ok = !qp_tensor_new(g->values[g->inputs[i]].name, in_d[i].dtype,
                            in_d[i].ndim, in_d[i].shape, &in[i], &err);
        for (size_t e = 0; ok && e < qp_tensor_numel(in[i]); e++)
            qp_elem_set_f64(in[i]->dtype, in[i]->data, e, (double)(e % 7) - 3);
    }
    if (ok) {
        run(g, in, NULL);
        struct qp_qdq *q;
        struct qp_exec_hooks h;
        if (!qp_qdq_new(g, QP_RQ_TFLITE_DOUBLE, &q, &err)) {
            qp_qdq_hooks(q, &h);
            run(g, in, &h);
            qp_qdq_free(q);
        }
    }
    for (int i = 0; in && i < g->n_inputs; i++)
        qp_tensor_free(in[i]);
    free(in);
    free(in_d);
    free(d);
    free(known);
    qp_graph_free(g);
    return 0;
}
