/* analysis/sensitivity.h: which layers quantization hurts, and why
 * (`qprobe sensitivity`).
 *
 * For every unit (analysis/units.h) of the base scheme and each part
 * (weights only, activations only, both, as AIMET splits them):
 *   one-in   only this unit quantized, everything else fp32;
 *   one-out  everything quantized but this unit;
 * scored on the model's output against fp32 over the evaluation sets
 * (analysis/outcome.h: SQNR, cosine, and KL / top-1 for class outputs).
 * The fp32 values of each set are recorded once (a memo) and every one-in
 * run recomputes only what depends on its unit; one-out runs reuse the
 * all-quantized run the same way. The cost is reported in forward-pass
 * equivalents (nodes computed / nodes of the graph).
 *
 * Evidence per unit, for the hint: which part hurts (one-in weights vs
 * activations), the weights' own SQNR under the scheme, weight outliers
 * (excess kurtosis, share beyond 6 sigma), the spread of per-output-channel
 * ranges when the scheme is per-tensor (largest channel absmax / median),
 * the activation's own SQNR when every node is fed the fp32 reference
 * (local) and its absmax / std (heavy tails), activation clipping (share of
 * calibration values outside the quantized range), and error inherited:
 * the same output in the all-quantized run (accumulated) against local. */
#ifndef QP_ANALYSIS_SENSITIVITY_H
#define QP_ANALYSIS_SENSITIVITY_H

#include <stdbool.h>
#include <stddef.h>

#include "analysis/outcome.h"
#include "analysis/units.h"
#include "model/session.h"

enum { QP_SENS_IN = 1u << 0, QP_SENS_OUT = 1u << 1 };

/* The parts a run quantizes (one-in) or keeps float (one-out). */
enum qp_sens_part { QP_SP_W = 0, QP_SP_A, QP_SP_WA, QP_SP_COUNT };

struct qp_sens_opts {
    enum qp_run_mode mode;          /* QP_MODE_FAKE or QP_MODE_INT */
    const struct qp_scheme *scheme; /* the base */
    enum qp_rq_flavor flavor;
    bool flavor_given;
    const char *const *groups;
    size_t ngroups;
    unsigned methods;               /* QP_SENS_IN | QP_SENS_OUT */
    unsigned parts;                 /* bit p: enum qp_sens_part p */
    int output;                     /* the graph output scored */
    const struct qp_progress *progress;
};

struct qp_sens_score {
    bool done;
    double sqnr, cosine, kl, top1;
};

struct qp_sens_row {
    struct qp_sens_score in[QP_SP_COUNT], out[QP_SP_COUNT];
    /* evidence; NaN where it does not apply */
    double w_sqnr;                 /* the weights against their quantized
                                      form (the worst of the unit's) */
    double w_kurtosis, w_outliers; /* the worst of the unit's weights */
    double spread;                 /* per-channel range spread (per-tensor
                                      weight schemes only) */
    double clip_share;             /* activations outside their range */
    double act_range;              /* absmax / std of the fp32 output */
    double local_sqnr, accum_sqnr; /* of the unit's first output value */
    char hint[400];
};

struct qp_sens_result {
    struct qp_units units;
    struct qp_sens_row *rows;      /* [units.n], model order */
    struct qp_sens_score fp32_ref; /* sqnr inf: the reference itself */
    struct qp_sens_score all;      /* everything quantized */
    double passes;                 /* forward-pass equivalents computed,
                                      per evaluation set */
    size_t runs;
    double seconds;
};

/* Runs the analysis on session s (calibrated) over evaluation input sets
 * sets[0..nsets) (each g->n_inputs tensors, borrowed). res is owned by the
 * caller (qp_sens_release), also on failure. */
enum qp_status qp_sensitivity(struct qp_session *s,
                              struct qp_tensor **const *sets, size_t nsets,
                              const struct qp_sens_opts *o,
                              struct qp_sens_result *res, struct qp_error *err);

void qp_sens_release(struct qp_sens_result *res);

/* The score a ranking uses for row r: one-in both-parts SQNR when
 * computed, else one-in weights, activations, else one-out gain. Lower is
 * more sensitive. */
double qp_sens_rank_value(const struct qp_sens_result *res, size_t r);

/* "w", "a", "wa". */
const char *qp_sens_part_name(enum qp_sens_part p);

#endif
