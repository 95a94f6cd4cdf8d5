/* analysis/ladder-run.h: the rungs of a ladder built from a model: one
 * input run in fp32, fake-quant and the int mode (accumulated: each layer
 * fed the previous quantized layer), and, when local is set, the fake and
 * int modes teacher-forced from the fp32 run (each layer fed the fp32
 * reference: its own error). Each rung is an .h5 dump in a folder. */
#ifndef QP_ANALYSIS_LADDER_RUN_H
#define QP_ANALYSIS_LADDER_RUN_H

#include <stdbool.h>
#include <stddef.h>

#include "model/session.h"

struct qp_ladder_build {
    const char *const *inputs;      /* --input specs of the one input set */
    size_t ninputs;
    const struct qp_scheme *scheme; /* one of scheme and recipe */
    const struct qp_recipe *recipe;
    enum qp_rq_flavor flavor;
    bool flavor_given;
    bool local;
    const char *dir;                /* where the dumps go (exists) */
};

/* Rung names in the order made: fp32, fake, int, then fake-local,
 * int-local when local. paths[k] (owned by the caller, free each) get
 * DIR/NAME.h5; *n the count. The session must be calibrated when the
 * scheme quantizes activations. */
enum qp_status qp_ladder_make_rungs(struct qp_session *s,
                                    const struct qp_ladder_build *b,
                                    char **paths, size_t *n,
                                    struct qp_error *err);

/* The names of the rungs qp_ladder_make_rungs makes, in its order. */
extern const char *const qp_ladder_rung_names[5];

#endif
