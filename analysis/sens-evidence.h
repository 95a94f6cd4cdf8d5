/* analysis/sens-evidence.h: the evidence behind each sensitivity hint
 * (analysis/sensitivity.h): weight statistics, per-channel spread,
 * activation clipping over the session's calibration sets, and the
 * created-vs-inherited error of each unit's output (a teacher-forced run
 * of the base plan from the fp32 memo against the plain run), then the
 * hint sentence. Internal to analysis/. */
#ifndef QP_ANALYSIS_SENS_EVIDENCE_H
#define QP_ANALYSIS_SENS_EVIDENCE_H

#include "analysis/sensitivity.h"

/* Fills every row's evidence and hint; ref is the fp32 memo of feed. */
enum qp_status qp_sens_evidence(struct qp_session *s, const struct qp_splan *base,
                                const struct qp_memo *ref,
                                const struct qp_tensor *const *feed,
                                struct qp_sens_result *res, struct qp_error *err);

#endif
