/* tests/fuzz/fuzz-gguf.c: a GGUF file of arbitrary bytes through the GGUF
 * reader (every KV value walked element by element, nested arrays too,
 * each copied into a writer) and through the dump reader (every tensor
 * decoded to f32, the metadata rendered). */
#include "formats/gguf.h"
#include "tests/fuzz/fuzz-dump.h"

/* Visits every element of v (bounded depth by construction of the
 * reader). */
static uint64_t walk(const struct qp_gguf_value *v)
{
    uint64_t h = v->size;
    if (v->type != QP_GGUF_ARRAY) {
        int64_t i;
        double d;
        if (qp_gguf_value_int(v, &i))
            h += (uint64_t)i;
        if (qp_gguf_value_float(v, &d) && d != d)
            h++;
        return h + (v->size ? v->p[0] : 0);
    }
    for (uint64_t k = 0; k < v->count && k < 4096; k++) {
        struct qp_gguf_value e;
        qp_gguf_array_at(v, k, &e);
        h += walk(&e);
    }
    return h;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct qp_gguf *g;
    struct qp_error err;
    if (qp_gguf_parse(data, size, "fuzz.gguf", &g, &err) == QP_OK) {
        struct qp_gguf_writer *w;
        volatile uint64_t h = 0;
        if (qp_gguf_writer_new("/nonexistent/fuzz.gguf", &w, &err) == QP_OK) {
            for (size_t i = 0; i < g->n_kv; i++) {
                h += walk(&g->kv[i].val);
                qp_gguf_add_value(w, g->kv[i].key, &g->kv[i].val, &err);
            }
            for (size_t i = 0; i < g->n_tensors; i++) {
                const struct qp_gguf_tensor *t = &g->tensors[i];
                qp_gguf_add_tensor(w, t->name, t->ndim, t->ne, t->type, t->data,
                                   &err);
            }
            qp_gguf_writer_free(w);
        }
        (void)h;
        qp_gguf_free(g);
    }
    fuzz_dump_bytes(data, size, QP_DUMP_GGUF);
    return 0;
}
