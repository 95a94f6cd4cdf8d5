/* formats/tflite-edit.c: small edits of a verified TFLite model's bytes,
 * for running the model in TFLite itself as an oracle (formats/tflite.h):
 * other subgraph outputs, and quantized_dimension fields TFLite refuses. */
#include <stdlib.h>
#include <string.h>

#include "formats/tflite.h"

static void put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

enum qp_status qp_tfl_with_outputs(const struct qp_tfl_model *m,
                                   const int *outputs, int n, uint8_t **buf,
                                   size_t *len, struct qp_error *err)
{
    *buf = NULL;
    *len = 0;
    if (!m->outputs_slot)
        return qp_fail(err, QP_E_UNSUPPORTED, "'%s': subgraph 0 has no outputs "
                       "field to point elsewhere", m->path);
    for (int i = 0; i < n; i++)
        if (outputs[i] < 0 || (size_t)outputs[i] >= m->n_tensors)
            return qp_fail(err, QP_E_INVAL, "'%s': output %d is tensor %d of "
                           "%zu", m->path, i, outputs[i], m->n_tensors);
    size_t at = (m->size + 3) & ~(size_t)3;
    size_t total = at + 4 + 4 * (size_t)n;
    if (n < 0 || total - m->outputs_slot > UINT32_MAX)
        return qp_fail(err, QP_E_UNSUPPORTED, "'%s': too large to extend",
                       m->path);
    uint8_t *b = calloc(1, total);
    if (!b)
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    memcpy(b, m->bytes, m->size);
    put32(b + at, (uint32_t)n);
    for (int i = 0; i < n; i++)
        put32(b + at + 4 + 4 * (size_t)i, (uint32_t)outputs[i]);
    put32(b + m->outputs_slot, (uint32_t)(at - m->outputs_slot));
    *buf = b;
    *len = total;
    return QP_OK;
}

enum qp_status qp_tfl_fix_quant_dims(const struct qp_tfl_model *m,
                                     uint8_t *buf, size_t len, size_t *changed,
                                     struct qp_error *err)
{
    *changed = 0;
    if (len < m->size)
        return qp_fail(err, QP_E_INVAL, "'%s': the copy is shorter than the "
                       "model", m->path);
    for (size_t i = 0; i < m->n_tensors; i++) {
        const struct qp_tfl_quant *q = &m->tensors[i].q;
        if (q->count > 1 && q->dim != q->file_dim && q->dim_slot) {
            put32(buf + q->dim_slot, (uint32_t)q->dim);
            (*changed)++;
        }
    }
    return QP_OK;
}
