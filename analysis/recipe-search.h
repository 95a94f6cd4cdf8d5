/* analysis/recipe-search.h: a mixed-precision recipe found by measurement
 * (`qprobe recipe`).
 *
 * Start uniform at the base scheme; every unit (analysis/units.h: a
 * weighted layer, or an operator's quantized output) may be promoted one
 * level at a time through the promotion list (e.g. w8c+a16t, then fp32).
 * Greedy (the standard fallback procedure): the candidates, one promotion
 * per unit, are ranked by the quality each would add on its own from the
 * current state, per extra byte of weights (free promotions, activation
 * bits, by their gain alone); the best is applied, the whole model is
 * evaluated again on the calibration sets, and when the measured gain
 * departs from the predicted one by more than half (and 0.5 dB), the next
 * candidates are re-ranked from the new state. The search stops when the
 * target is met, when the next promotion would exceed the byte budget, or
 * when nothing helps. Promotions that cost no bytes (activation bits)
 * are first tried all at once when the base misses the target; once the
 * target is met, the least useful of them are undone again (the longest
 * such list that keeps the target, by bisection), since they cost BitOps
 * and precision transitions. Binary (AIMET AMP's variant): the candidates ranked
 * once, then the shortest prefix of that list meeting the target, by
 * bisection.
 *
 * Quality is measured on the model's output (analysis/outcome.h): SQNR
 * against fp32 (--target-sqnr, or for a budget), or KL (--target-kl). Every
 * step is also measured on the evaluation sets, which the search never
 * uses to decide. Prices: weight bytes (data, scales, zero points as
 * `qprobe quantize` writes them; fp32 for float weights) and BitOps (MACs x
 * weight bits x input activation bits, 32 for float); precision
 * transitions count the graph edges whose two ends carry different
 * precisions (mixed precision can split an NPU's partitions).
 *
 * Runs reuse memos: each state's calibration runs are recorded, so a
 * promotion recomputes only what depends on its unit. */
#ifndef QP_ANALYSIS_RECIPE_SEARCH_H
#define QP_ANALYSIS_RECIPE_SEARCH_H

#include <stdbool.h>
#include <stddef.h>

#include "analysis/outcome.h"
#include "analysis/units.h"
#include "model/session.h"

/* A promotion level: a scheme, or float. */
struct qp_level {
    bool fp32;
    struct qp_scheme s;
};

/* SQNR (higher is better), KL, perplexity minus fp32's (lower is better),
 * or a byte budget (best SQNR within it). */
enum qp_rtarget { QP_RT_SQNR = 0, QP_RT_KL, QP_RT_BYTES, QP_RT_PPL, QP_RT_COUNT };

struct qp_rpin {
    const char *glob;
    struct qp_level level;
};

struct qp_rsearch_opts {
    enum qp_run_mode mode;          /* fake (default) or int */
    const struct qp_scheme *base;
    const struct qp_level *promote;
    size_t npromote;
    enum qp_rq_flavor flavor;
    bool flavor_given;
    enum qp_rtarget target;
    double value;                   /* dB, KL, bytes or perplexity */
    const char *const *keep;        /* units never quantized */
    size_t nkeep;
    const struct qp_rpin *pins;     /* units fixed at a level */
    size_t npins;
    const char *const *groups;
    size_t ngroups;
    bool binary;                    /* AMP's bisection instead of greedy */
    int output;                     /* the graph output scored */
    size_t rerank;                  /* candidates re-ranked (default 16) */
    const struct qp_progress *progress;
};

struct qp_rstate {
    double calib_sqnr, calib_kl, eval_sqnr, eval_kl;
    double calib_dppl, eval_dppl; /* perplexity - fp32's (language models) */
    size_t bytes;
    double bitops;
    size_t transitions;
};

enum qp_rstep_kind {
    QP_STEP_START = 0,     /* the uniform base (after --keep and --pin) */
    QP_STEP_PROMOTE,       /* one unit promoted one level */
    QP_STEP_BULK,          /* the free promotions (no extra bytes) at once */
    QP_STEP_REVERT,        /* free promotions the target did not need, undone */
    QP_STEP_PROBE,         /* bisection: a prefix of the ranked list */
    QP_STEP_KIND_COUNT
};

const char *qp_rstep_kind_name(enum qp_rstep_kind k);

struct qp_rstep {
    enum qp_rstep_kind kind;
    long unit;             /* promoted unit (QP_STEP_PROMOTE), else -1 */
    int level;             /* its new level */
    size_t count;          /* units changed (bulk, revert; probe: prefix) */
    double predicted, measured; /* gain in the target's metric */
    bool reranked;         /* the candidates were re-ranked after it */
    struct qp_rstate at;
};

struct qp_rsearch_result {
    struct qp_units units;
    int *level;            /* [units.n] final level (0: base) */
    bool *fixed;           /* [units.n] kept or pinned */
    struct qp_qassign *assign; /* the final assignment */
    struct qp_rstep *steps;
    size_t nsteps;
    struct qp_rstate fp32_ref, base, uniform_top; /* fp32, all base, all at
                                                      the last level */
    size_t bytes_fp32;
    bool reached_calib, reached_eval;
    double passes;         /* forward-pass equivalents per calibration set */
    size_t runs;
};

/* Searches on session s (calibrated; its calibration sets drive the search)
 * with evaluation sets eval[0..neval) for validation. res is owned by the
 * caller (qp_rsearch_release), also on failure. */
enum qp_status qp_recipe_search(struct qp_session *s,
                                struct qp_tensor **const *eval, size_t neval,
                                const struct qp_rsearch_opts *o,
                                struct qp_rsearch_result *res,
                                struct qp_error *err);

void qp_rsearch_release(struct qp_rsearch_result *res);

/* The found recipe: default = the base, one rule per unit not at its base
 * (its exact name as the glob, metacharacters escaped). *out belongs to the
 * caller (qp_recipe_free). */
enum qp_status qp_rsearch_recipe(const struct qp_graph *g,
                                 const struct qp_rsearch_result *res,
                                 const struct qp_rsearch_opts *o,
                                 struct qp_recipe **out, struct qp_error *err);

/* The target's metric of a state (higher is better: SQNR, -KL or
 * -perplexity delta). */
double qp_rstate_metric(const struct qp_rstate *s, enum qp_rtarget t, bool eval);

/* True when state s meets the target on calibration (eval false) or
 * evaluation data. */
bool qp_rstate_meets(const struct qp_rstate *s, const struct qp_rsearch_opts *o,
                     bool eval);

#endif
