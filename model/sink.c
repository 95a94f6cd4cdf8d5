/* model/sink.c: captured tensors into a dump (model/sink.h). */
#include "model/sink.h"

#include <stdlib.h>
#include <string.h>

enum qp_status qp_sink_open(struct qp_sink *s, const struct qp_graph *g,
                            const char *path, enum qp_dump_format format,
                            struct qp_error *err)
{
    memset(s, 0, sizeof *s);
    s->written = calloc((size_t)g->n_values + 1, sizeof *s->written);
    if (!s->written)
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    return qp_dump_writer_open(path, format, &s->w, err);
}

enum qp_status qp_sink_capture(void *ctx, const struct qp_graph *g, int value,
                               const struct qp_tensor *t, struct qp_error *err)
{
    struct qp_sink *s = ctx;
    (void)g;
    if (!s->w || s->written[value])
        return QP_OK;
    enum qp_status st = qp_dump_writer_add(s->w, t, err);
    if (!st) {
        s->written[value] = true;
        s->count++;
    }
    return st;
}

enum qp_status qp_sink_commit(struct qp_sink *s, const struct qp_graph *g,
                              struct qp_tensor *const *outputs,
                              struct qp_error *err)
{
    enum qp_status st = QP_OK;
    for (int k = 0; !st && k < g->n_outputs; k++)
        st = qp_sink_capture(s, g, g->outputs[k], outputs[k], err);
    if (!st) {
        st = qp_dump_writer_commit(s->w, err);
        s->w = NULL;
    }
    return st;
}

void qp_sink_abort(struct qp_sink *s)
{
    qp_dump_writer_abort(s->w);
    s->w = NULL;
    free(s->written);
    s->written = NULL;
}
