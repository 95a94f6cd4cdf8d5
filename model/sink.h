/* model/sink.h: captured tensors of a run written into a dump (the --dump
 * of `qprobe run`): every captured value as it is produced, then the graph
 * outputs that the capture did not take, then the commit that renames the
 * dump into place. */
#ifndef QP_MODEL_SINK_H
#define QP_MODEL_SINK_H

#include <stdbool.h>
#include <stddef.h>

#include "formats/dump.h"
#include "model/graph.h"

struct qp_sink {
    struct qp_dump_writer *w;
    bool *written; /* [n_values] */
    size_t count;  /* tensors written */
};

/* Opens the dump writer for path (format QP_DUMP_AUTO: from the name).
 * s is zeroed first; qp_sink_abort releases it on any path. */
enum qp_status qp_sink_open(struct qp_sink *s, const struct qp_graph *g,
                            const char *path, enum qp_dump_format format,
                            struct qp_error *err);

/* An on_capture callback (model/exec.h) writing into the sink (ctx). */
enum qp_status qp_sink_capture(void *ctx, const struct qp_graph *g, int value,
                               const struct qp_tensor *t, struct qp_error *err);

/* Writes the graph outputs (outputs[k] for g->outputs[k]) not captured yet
 * and commits the dump. */
enum qp_status qp_sink_commit(struct qp_sink *s, const struct qp_graph *g,
                              struct qp_tensor *const *outputs,
                              struct qp_error *err);

/* Discards an uncommitted dump (no file is left) and frees the sink. */
void qp_sink_abort(struct qp_sink *s);

#endif
