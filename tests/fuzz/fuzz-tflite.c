/* tests/fuzz/fuzz-tflite.c: the TFLite reader on arbitrary bytes: a parsed
 * model is walked (every tensor's data and parameters read), read as a
 * dump, imported into a graph in both flavors and as a float reference
 * (dequantized) and, when its inputs are
 * small, run on zeros. Seeds in tests/fuzz/seeds/tflite/ are one-operator
 * models written by tests/unit/tflite-build.h (QP_TFL_SEEDS=DIR
 * build/qprobe-test tflite_write_fuzz_seeds) and truncations of them. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "formats/tflite.h"
#include "model/exec.h"
#include "model/tflite-import.h"
#include "tests/fuzz/fuzz-dump.h"

static void run(const struct qp_graph *g)
{
    struct qp_error err;
    struct qp_tensor *in[8] = {0}, *out[8] = {0};
    bool ok = g->n_inputs <= 8 && g->n_outputs <= 8;
    for (int i = 0; ok && i < g->n_inputs; i++) {
        const struct qp_value *v = &g->values[g->inputs[i]];
        size_t n = 1;
        for (int d = 0; d < v->ndim; d++)
            n *= (size_t)v->shape[d];
        ok = v->typed && n <= 4096 &&
             !qp_tensor_new(v->name, v->dtype, v->ndim, v->shape, &in[i], &err);
    }
    if (ok)
        qp_exec_run(g, (const struct qp_tensor *const *)in, g->n_inputs, NULL,
                    out, NULL, &err);
    for (int i = 0; i < 8; i++) {
        qp_tensor_free(in[i]);
        qp_tensor_free(out[i]);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct qp_error err;
    struct qp_tfl_model *m = NULL;
    if (qp_tfl_parse("fuzz", data, size, NULL, &m, &err) == QP_OK) {
        for (size_t i = 0; i < m->n_tensors; i++) {
            struct qp_tensor *t;
            if (qp_tfl_tensor_new(m, i, &t, &err) == QP_OK) {
                float buf[16];
                size_t n = qp_tensor_numel(t);
                if (t->data && n)
                    qp_tensor_read_f32(t, 0, n < 16 ? n : 16, buf);
                qp_tensor_free(t);
            }
        }
        for (int f = 0; f <= QP_TFL_FLAVOR_COUNT; f++) {
            struct qp_graph *g; /* each flavor, then the float reference */
            struct qp_tflite_opts o = {f % QP_TFL_FLAVOR_COUNT,
                                       f == QP_TFL_FLAVOR_COUNT};
            if (qp_model_from_tflite(m, &o, &g, &err) == QP_OK) {
                run(g);
                qp_graph_free(g);
            }
        }
        qp_tfl_model_free(m);
    }
    fuzz_dump_bytes(data, size, QP_DUMP_TFLITE);
    return 0;
}
