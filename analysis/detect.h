/* analysis/detect.h: which requantization flavor (and activation rounding)
 * reproduces a device's integer dump (`qprobe detect`).
 *
 * The model runs in the int mode once per candidate (every requantization
 * flavor, each with its runtime's activation quantizer, and, when asked,
 * every activation quantizer too) on the same input, with a scheme or
 * recipe, or with the model's own quantization (QDQ / QLinear nodes).
 * Every captured tensor the device dump also holds (names aligned as
 * qprobe diff aligns them: exactly, normalised, --map) is compared code
 * for code (analysis/lsb.h): exact tensors, mismatched elements, the
 * largest error in steps of the device tensor's scale. Candidates rank by
 * exact tensors, then mismatched elements. A device no candidate matches
 * gets the first tensor, in model order, that every candidate misses. */
#ifndef QP_ANALYSIS_DETECT_H
#define QP_ANALYSIS_DETECT_H

#include <stdbool.h>
#include <stddef.h>

#include "kernels/quantize-act.h"
#include "kernels/requant.h"
#include "model/session.h"

struct qp_detect_opts {
    const struct qp_scheme *scheme; /* one of scheme and recipe, or neither */
    const struct qp_recipe *recipe; /* (the model's own quantization) */
    const char *map;                /* name map to the device's names */
    bool all_qa;                    /* every activation quantizer per flavor */
    const struct qp_progress *progress;
};

struct qp_detect_cand {
    enum qp_rq_flavor flavor;
    enum qp_qa_flavor qa;
    bool qa_own;                /* the flavor's runtime's own quantizer */
    bool failed;                /* the flavor cannot run this model */
    char why[160];              /* then, the reason */
    size_t compared, exact;     /* tensors */
    uint64_t elements, mismatched;
    double max_lsb;
    long first_diff;            /* the first tensor that differs, -1 none */
};

struct qp_detect {
    struct qp_detect_cand *cand;
    size_t ncand;
    size_t *order;              /* best first */
    char **names;               /* the compared tensors, model order */
    size_t nnames;
    long all_miss;              /* first tensor every candidate misses, -1 */
    size_t skipped;             /* aligned pairs whose shapes differ */
};

/* Runs the candidates on feed (the device's input) and compares them with
 * the dump at device_path. out is owned by the caller (qp_detect_release),
 * also on failure. */
enum qp_status qp_detect_run(struct qp_session *s,
                             const struct qp_tensor *const *feed,
                             const char *device_path,
                             const struct qp_detect_opts *o,
                             struct qp_detect *out, struct qp_error *err);

void qp_detect_release(struct qp_detect *d);

#endif
