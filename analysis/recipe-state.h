/* analysis/recipe-state.h: the recipe search's states (analysis/recipe-search.h):
 * an assignment made from each unit's level, measured on the calibration
 * (and evaluation) sets over memos, and priced. Internal to analysis/. */
#ifndef QP_ANALYSIS_RECIPE_STATE_H
#define QP_ANALYSIS_RECIPE_STATE_H

#include "analysis/recipe-search.h"

/* Unit levels: 0 the base, 1..npromote the promotion list, then: */
#define QP_LEVEL_FP32 (-1)   /* kept float (--keep) */
#define QP_LEVEL_PIN0 (-2)   /* pinned to pins[p]: QP_LEVEL_PIN0 - p */

struct qp_search {
    struct qp_session *s;
    const struct qp_graph *g;
    const struct qp_rsearch_opts *o;
    struct qp_rsearch_result *res;
    struct qp_qassign *base;     /* uniform at the base scheme */
    uint64_t *macs;              /* [n_nodes] */
    size_t ncal, neval;
    struct qp_tensor **const *eval;
    struct qp_memo **cmemo, **ememo; /* per set, following the state */
    struct qp_memo **fmemo;      /* per calibration set, its fp32 run */
    struct qp_tensor **cref, **eref; /* fp32 outputs per set */
    size_t nodes;                /* computed so far */
};

/* Makes the references (fp32 runs of every set), the base plan's units
 * (res->units, res->level, res->fixed) and the prices of fp32. */
enum qp_status qp_search_open(struct qp_search *q, struct qp_session *s,
                              struct qp_tensor **const *eval, size_t neval,
                              const struct qp_rsearch_opts *o,
                              struct qp_rsearch_result *res, struct qp_error *err);

void qp_search_close(struct qp_search *q);

/* Measures the state res->level describes: the calibration sets always
 * (recorded into the memos when record), the evaluation sets when record
 * (else their metrics are NaN); prices from its plan. */
enum qp_status qp_search_measure(struct qp_search *q, struct qp_rstate *out,
                                 bool record, struct qp_error *err);

/* Measures the state res->level describes on the calibration sets only,
 * reading the fp32 runs' memos (nothing recorded): for states that are
 * mostly float (one unit quantized alone), which share little with the
 * search's current state. */
enum qp_status qp_search_measure_near_fp32(struct qp_search *q,
                                           struct qp_rstate *out,
                                           struct qp_error *err);

/* The weight bytes of unit u at its level now (qp_rtn_bytes of each of its
 * weights at that scheme; fp32 when float). */
enum qp_status qp_search_bytes(struct qp_search *q, size_t u, size_t *out,
                               struct qp_error *err);

/* True when level l of unit u is another assignment than its level now. */
bool qp_search_level_changes(const struct qp_search *q, size_t u, int l);

/* The assignment res->level describes. *out belongs to the caller. */
enum qp_status qp_search_assignment(const struct qp_search *q,
                                    struct qp_qassign **out, struct qp_error *err);

/* The level definition of a level number (NULL: the base). */
const struct qp_level *qp_search_level(const struct qp_rsearch_opts *o, int l);

#endif
