/* analysis/ladder-run.c: ladder rungs from a model (analysis/ladder-run.h). */
#include "analysis/ladder-run.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fileio.h"
#include "model/sink.h"

const char *const qp_ladder_rung_names[5] = {"fp32", "fake", "int", "fake-local",
                                             "int-local"};

/* One run of plan (NULL: fp32) into path, every value captured. */
static enum qp_status dump_run(struct qp_session *s, const struct qp_splan *plan,
                               struct qp_tensor *const *feed, struct qp_dump *local,
                               const char *path, struct qp_error *err)
{
    const struct qp_graph *g = qp_session_graph(s);
    struct qp_sink sink;
    struct qp_tensor **outs = calloc((size_t)g->n_outputs + 1, sizeof *outs);
    if (!outs)
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    enum qp_status st = qp_sink_open(&sink, g, path, QP_DUMP_AUTO, err);
    struct qp_session_run_opts ro = {.capture = "*", .on_capture = qp_sink_capture,
                                     .capture_ctx = &sink, .local = local};
    if (!st)
        st = qp_session_run(s, plan, (const struct qp_tensor *const *)feed, &ro,
                            outs, NULL, err);
    if (!st)
        st = qp_sink_commit(&sink, g, outs, err);
    qp_sink_abort(&sink);
    for (int k = 0; k < g->n_outputs; k++)
        qp_tensor_free(outs[k]);
    free(outs);
    return st;
}

enum qp_status qp_ladder_make_rungs(struct qp_session *s,
                                    const struct qp_ladder_build *b,
                                    char **paths, size_t *n,
                                    struct qp_error *err)
{
    *n = 0;
    struct qp_tensor **feed = NULL;
    struct qp_splan *plan[2] = {NULL, NULL};
    struct qp_dump *ref = NULL;
    size_t want = b->local ? 5 : 3;
    enum qp_status st = qp_session_load_inputs(s, b->inputs, (int)b->ninputs,
                                               &feed, err);
    for (int m = 0; !st && m < 2; m++) {
        struct qp_session_cfg cfg = {.mode = m ? QP_MODE_INT : QP_MODE_FAKE,
            .scheme = b->scheme, .recipe = b->recipe, .flavor = b->flavor,
            .flavor_given = b->flavor_given};
        st = qp_session_plan(s, &cfg, &plan[m], err);
    }
    for (size_t k = 0; !st && k < want; k++) {
        char name[32];
        snprintf(name, sizeof name, "%s.h5", qp_ladder_rung_names[k]);
        if (!(paths[k] = qp_path_join(b->dir, name))) {
            st = qp_fail(err, QP_E_NOMEM, "out of memory");
            break;
        }
        (*n)++;
        const struct qp_splan *p = k == 0 ? NULL : plan[(k - 1) % 2];
        if (k == 3 && (st = qp_dump_open(paths[0], QP_DUMP_AUTO, &ref, err)))
            break;
        st = dump_run(s, p, feed, k >= 3 ? ref : NULL, paths[k], err);
    }
    qp_dump_close(ref);
    qp_splan_free(plan[0]);
    qp_splan_free(plan[1]);
    qp_session_free_inputs(s, feed);
    return st;
}
