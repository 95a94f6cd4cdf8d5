/* analysis/diff.h: per-tensor comparison of two dumps (qprobe diff).
 *
 * Given the alignment of the two dumps' names (analysis/align.h), each pair
 * is checked from the listings first (shapes after layout conversion), then
 * streamed: both tensors are loaded, the test tensor is permuted into the
 * reference's layout when the two layouts differ, the metrics are computed
 * (analysis/metrics.h; integer tensors dequantized), and both are released
 * before the next pair, so memory stays about the size of the largest pair.
 *
 * Layouts: a side's layout for a tensor of rank R is the tensor's own
 * layout tag (dump sidecars) when it has R letters, else the declared
 * layout of that side with R letters (--layout REF:TEST, e.g.
 * "NCHW:NHWC"), else unknown. When both are known and differ, the test
 * tensor is permuted into the reference's letter order. A pair whose shapes
 * still differ is refused (never compared flattened) with a message naming
 * both shapes. */
#ifndef QP_ANALYSIS_DIFF_H
#define QP_ANALYSIS_DIFF_H

#include <stdbool.h>
#include <stddef.h>

#include "analysis/align.h"
#include "analysis/lsb.h"
#include "analysis/metrics.h"
#include "core/progress.h"
#include "formats/dump.h"

/* ---- metrics by name ---------------------------------------------------------- */

enum qp_diff_metric {
    QP_DM_SQNR = 0,
    QP_DM_COSINE,
    QP_DM_MAE,
    QP_DM_MAX_ABS,
    QP_DM_REL_L2,
    QP_DM_REF_ABSMAX,
    QP_DM_NONFINITE,
    QP_DM_NUMEL,
    QP_DM_KL,
    QP_DM_TOP1,
    QP_DM_ORDER, /* position in the reference dump (sorting only) */
    QP_DM_COUNT
};

/* Looks a metric up by its CSV column name ("sqnr_db", "cosine", "mae",
 * "max_abs", "rel_l2", "ref_absmax", "nonfinite", "numel", "kl", "top1",
 * "order"). */
bool qp_diff_metric_from_name(const char *name, enum qp_diff_metric *out);
const char *qp_diff_metric_name(enum qp_diff_metric m);

/* ---- layouts --------------------------------------------------------------------- */

struct qp_layout_decl {
    char ref[QP_MAX_DIMS + 1];  /* e.g. "NCHW"; "" when not declared */
    char test[QP_MAX_DIMS + 1];
};

/* Parses "REF:TEST" (either side may be empty, not both): 1 to 8 distinct
 * letters A-Z each, and when both are given, the same letters. */
enum qp_status qp_layout_decl_parse(const char *s, struct qp_layout_decl *out,
                                    struct qp_error *err);

#define QP_DIFF_WARN_MAX 160

/* ---- running ------------------------------------------------------------------------ */

struct qp_diff_opts {
    const struct qp_layout_decl *layouts;
    size_t nlayouts;
    const char *const *logits_globs; /* fnmatch patterns on reference names */
    size_t nlogits;
    const struct qp_progress *progress; /* may be NULL */
    /* refuse pairs a warning is given for (a layout known on one side) */
    bool strict;
};

struct qp_diff_row {
    char *name;       /* reference name, owned */
    char *test_name;  /* owned */
    size_t ref_index; /* position in the reference dump */
    size_t test_index;/* position in the test dump */
    enum qp_align_how how;
    int ndim;
    int64_t shape[QP_MAX_DIMS]; /* the reference's */
    uint64_t numel;
    bool permute;     /* test permuted into the reference's layout: */
    int perm[QP_MAX_DIMS];              /* test dims in reference order */
    char permuted[2 * QP_MAX_DIMS + 4]; /* "NHWC->NCHW" or "" */
    char warning[QP_DIFF_WARN_MAX];     /* "" or one sentence, e.g. a layout
                                           tag on one side only (rank >= 3) */
    struct qp_metrics m;
    struct qp_lsb lsb; /* valid when the test tensor is integer with a scale */
    bool logits;      /* kl and top1 computed */
    double kl, top1;  /* NaN unless logits (and until computed) */
};

struct qp_diff_refusal {
    char *ref_name, *test_name; /* owned */
    size_t ref_index;           /* position in the reference dump */
    char *reason;               /* owned; one sentence */
};

struct qp_diff {
    struct qp_diff_row *rows;   /* in reference order until sorted */
    size_t nrows;
    struct qp_diff_refusal *refused;
    size_t nrefused;
};

/* Plans every aligned pair from the dumps' listings (nothing is loaded):
 * refusals go to out->refused, the others become rows whose metrics are
 * still zero. out is filled and owned by the caller (qp_diff_release),
 * also on failure (QP_E_NOMEM only). */
enum qp_status qp_diff_plan(const struct qp_dump *ref,
                            const struct qp_dump *test,
                            const struct qp_align *al,
                            const struct qp_diff_opts *opts, struct qp_diff *out,
                            struct qp_error *err);

/* Loads, compares and releases the pair of every planned row, in order.
 * Fails (naming the dump) when a tensor cannot be loaded. */
enum qp_status qp_diff_compute(struct qp_dump *ref, struct qp_dump *test,
                               struct qp_diff *d,
                               const struct qp_progress *progress,
                               struct qp_error *err);

/* qp_diff_plan, then qp_diff_compute with opts->progress. Refused pairs are
 * not failures. */
enum qp_status qp_diff_run(struct qp_dump *ref, struct qp_dump *test,
                           const struct qp_align *al,
                           const struct qp_diff_opts *opts, struct qp_diff *out,
                           struct qp_error *err);

void qp_diff_release(struct qp_diff *d);

/* A row's value of a metric (NaN for kl/top1 of non-logit rows). */
double qp_diff_value(const struct qp_diff_row *r, enum qp_diff_metric m);

/* Sorts worst first: rows with non-finite test values first (most first),
 * then by the metric, worst first (lowest sqnr_db / cosine / top1, highest
 * of the others); NaN values last; ties in dump order. QP_DM_ORDER is
 * plain dump order. */
void qp_diff_sort(struct qp_diff *d, enum qp_diff_metric by);

/* ---- --fail-if conditions --------------------------------------------------------- */

enum qp_cond_op { QP_OP_LT, QP_OP_LE, QP_OP_GT, QP_OP_GE, QP_OP_EQ, QP_OP_NE };

struct qp_diff_cond {
    enum qp_diff_metric metric;
    enum qp_cond_op op;
    double value;
    char text[64]; /* as written, for messages */
};

/* Parses "METRIC OP NUMBER" (spaces allowed; OP one of < <= > >= == !=;
 * NUMBER may be inf). QP_E_INVAL with a message otherwise. */
enum qp_status qp_diff_cond_parse(const char *s, struct qp_diff_cond *out,
                                  struct qp_error *err);

/* True when row r crosses c. A pair with NaN/Inf on either side crosses
 * every condition on sqnr_db, cosine, mae, max_abs and rel_l2 (NaN is never
 * a pass); otherwise a NaN value (kl of a non-logit) never crosses. */
bool qp_diff_cond_hit(const struct qp_diff_cond *c, const struct qp_diff_row *r);

/* Parses one --fail-if argument, conditions joined by ',' ("a<1,b>2"),
 * appending to (*conds)[*n] (realloc'd; the caller frees *conds). An empty
 * argument or an empty condition between commas is QP_E_INVAL. */
enum qp_status qp_diff_conds_add(const char *arg, struct qp_diff_cond **conds,
                                 size_t *n, struct qp_error *err);

#endif
