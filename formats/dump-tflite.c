/* formats/dump-tflite.c: a TFLite model read as a dump of its weights
 * (read-only): every tensor of subgraph 0 that has buffer data, in tensor
 * order, named by its (unique) name, with its quantization parameters
 * (per-tensor, or per-axis along quantized_dimension), so `qprobe inspect`
 * shows bits, scales and zero points. Activations have no data and are
 * not listed. The model's notes (irregularities it tolerated) become
 * metadata "tflite.note.N". Loaded tensors borrow from the file mapping
 * when aligned, so they may outlive the dump. */
#include <stdio.h>
#include <stdlib.h>

#include "formats/dump.h"
#include "formats/tflite.h"

struct tfl_dump {
    struct qp_tfl_model *model;
    size_t *index; /* tensor index by backing index */
};

static void tfl_close(struct qp_dump *d)
{
    struct tfl_dump *td = d->impl;
    if (!td)
        return;
    qp_tfl_model_free(td->model);
    free(td->index);
    free(td);
    d->impl = NULL;
}

static enum qp_status tfl_open(struct qp_dump *d, struct qp_error *err)
{
    struct tfl_dump *td = calloc(1, sizeof *td);
    if (!td)
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    d->impl = td;
    enum qp_status st = qp_tfl_load(d->path, &td->model, err);
    if (st)
        return st;
    const struct qp_tfl_model *m = td->model;
    size_t cap = m->n_tensors ? m->n_tensors : 1;
    td->index = calloc(cap, sizeof *td->index);
    d->entries = calloc(cap, sizeof *d->entries);
    if (!td->index || !d->entries)
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    for (size_t i = 0; i < m->n_tensors; i++) {
        if (!m->tensors[i].data)
            continue;
        struct qp_tensor *t;
        if ((st = qp_tfl_tensor_new(m, i, &t, err)))
            return st;
        /* the listing is a descriptor with the parameters */
        struct qp_tensor *desc;
        st = qp_tensor_new_desc(t->name, t->dtype, t->ndim, t->shape, &desc,
                                err);
        if (!st && t->qp)
            st = qp_tensor_set_qparams(desc, t->qp->count, t->qp->scale,
                                       t->qp->zero_point, t->qp->axis, 0, err);
        qp_tensor_free(t);
        if (st) {
            qp_tensor_free(desc);
            return st;
        }
        td->index[d->count] = i;
        d->entries[d->count++] = desc;
    }
    for (size_t i = 0; i < m->n_notes && !st; i++) {
        char key[64];
        snprintf(key, sizeof key, "tflite.note.%zu", i);
        st = qp_dump_meta_set(&d->meta, key, m->notes[i], err);
    }
    return st;
}

static enum qp_status tfl_load(struct qp_dump *d, size_t i,
                               struct qp_tensor **out, struct qp_error *err)
{
    struct tfl_dump *td = d->impl;
    return qp_tfl_tensor_new(td->model, td->index[i], out, err);
}

const struct qp_dump_ops qp_dump_ops_tflite = {
    "tflite", tfl_open, tfl_load, tfl_close,
};
