/* analysis/ladder.h: the bisection ladder (`qprobe ladder`): a chain of
 * dumps of one input, e.g. fp32 -> fake-quant -> host integer -> device,
 * each rung compared per tensor with the first and with the previous one,
 * in the first dump's (model) order, to say at which rung and which layer
 * the error jumps:
 *   scheme error  fp32 -> fake   (the quantization scheme itself)
 *   kernel error  fake -> int    (the integer arithmetic of the host kernels)
 *   device error  int -> device  (the device's own arithmetic)
 *
 * Rungs are aligned with the first (and each with its predecessor) as
 * qprobe diff aligns two dumps (names, --map, layouts). For each step
 * (rung k against rung k-1), along model order: where its error first
 * appears (the first tensor that is not exact), and where it jumps: the
 * first later tensor whose SQNR against the previous rung falls more than
 * `jump` dB below that of the tensor before it (infinite SQNR counts as
 * 200 dB; NaN or -inf as -200), the step made the error worse right there,
 * not gradually. The ladder's finding is the step that costs the output
 * most (lowest SQNR of the last tensor against the previous rung), with
 * where that step's error appears and jumps. */
#ifndef QP_ANALYSIS_LADDER_H
#define QP_ANALYSIS_LADDER_H

#include <stdbool.h>
#include <stddef.h>

#include "analysis/diff.h"
#include "analysis/lsb.h"

#define QP_LADDER_MAX_RUNGS 16

struct qp_ladder_opts {
    const char *map;                   /* --map file, or NULL */
    const struct qp_layout_decl *layouts;
    size_t nlayouts;
    double jump;                       /* dB (default 6) */
    const struct qp_progress *progress;
};

struct qp_ladder_cell {
    bool have;              /* the tensor pairs up in this rung */
    double vs_first, vs_prev; /* SQNR dB */
    struct qp_lsb lsb;      /* against the previous rung, when integer */
};

struct qp_ladder_jump {
    bool differs;           /* some tensor is not exact against the previous */
    size_t first_diff;      /* the first such tensor: where the step's error
                               appears (for int -> device: where the device
                               departs from the host) */
    bool found;
    size_t tensor;          /* first jump after the first difference */
    double drop;            /* dB below the tensor before it */
    size_t worst;           /* the tensor with the lowest SQNR vs previous */
    double worst_sqnr;
    double last_sqnr;       /* of the last paired tensor (the output) */
};

struct qp_ladder {
    size_t nrungs;
    char **labels;          /* [nrungs], owned */
    size_t ntensors;
    char **names;           /* [ntensors]: the first rung's, model order */
    struct qp_ladder_cell *cells; /* [ntensors * nrungs], rung-major inside */
    struct qp_ladder_jump *jumps; /* [nrungs] (rung 0 unused) */
    int first_rung;         /* the first rung that jumps, -1 none */
    int worst_rung;         /* the step costing the output most, -1: all
                               exact */
};

/* Compares dumps paths[0..n) (2 <= n <= QP_LADDER_MAX_RUNGS) labelled
 * labels[] (NULL: "rung0", ...). out is owned by the caller
 * (qp_ladder_release), also on failure. */
enum qp_status qp_ladder_compute(const char *const *paths,
                                 const char *const *labels, size_t n,
                                 const struct qp_ladder_opts *o,
                                 struct qp_ladder *out, struct qp_error *err);

void qp_ladder_release(struct qp_ladder *l);

/* The cell of tensor t in rung k. */
static inline const struct qp_ladder_cell *
qp_ladder_cell(const struct qp_ladder *l, size_t t, size_t k)
{
    return &l->cells[t * l->nrungs + k];
}

/* What a step between two labels is: "scheme error" (fp32 -> fake),
 * "kernel error" (fake -> int), "device error" (int -> device), or
 * "error" for other pairs. Labels are matched by what they start with:
 * fp32/float/ref, fake/sim, int/host, device/dev/npu/dsp/target. */
const char *qp_ladder_step_kind(const char *from, const char *to);

#endif
