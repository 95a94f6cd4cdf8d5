/* analysis/sweep.h: one model, many configurations, one CSV (`qprobe
 * sweep`).
 *
 * Every configuration of a grid (analysis/sweep-grid.h) is evaluated by a
 * backend and becomes one row of the sweep CSV (analysis/sweep-csv.h),
 * appended whole (one write, then fsync) as soon as it is done. A row is
 * named by a content hash: SHA-256 over the qprobe version, the backend,
 * what the backend's digest covers (the model file, the calibration and
 * evaluation data, the scored output), the row's mode and its canonical
 * recipe document. A run skips the configurations whose hash is already
 * in the CSV, so rerunning the same command after an interruption (even
 * SIGKILL) finishes the table; a torn last line left by a kill is dropped
 * first.
 *
 * Sharding: with nshards N, configuration k (its index in the grid, the
 * control rows included) belongs to shard k mod N, so N processes given
 * i = 0..N-1 split a grid with no coordination, each into its own CSV,
 * and qp_sweep_merge joins them.
 *
 * Backends evaluate a configuration: quality against the fp32 reference
 * and cost. The ONNX backend (analysis/sweep-onnx.h) scores a graph's
 * output (SQNR, cosine, KL, top-1) and its worst tensor; a language-model
 * backend fills perplexity, KL and task scores instead
 * (analysis/sweep-backend.h). Work shared by rows (the model, calibration
 * ranges, quantized weights, fp32 references) lives in the backend and is
 * done once. */
#ifndef QP_ANALYSIS_SWEEP_H
#define QP_ANALYSIS_SWEEP_H

#include <stdbool.h>
#include <stddef.h>

#include "analysis/sweep-grid.h"
#include "core/sha256.h"

/* What one configuration measured; NaN where it does not apply (every
 * quality field a backend does not report). */
struct qp_sweep_result {
    /* quality against fp32 */
    double sqnr_db, cosine;       /* of the scored output */
    double kl, kl_err;            /* mean KL(fp32 || row) over output rows
                                     or tokens, its uncertainty (LLM) */
    double top1, top1_err;        /* share of rows whose argmax agrees
                                     (LLM: llama.cpp's same-top-p) */
    double ppl, ppl_err;          /* perplexity (LLM) */
    double task_acc, task_acc_err;       /* multiple choice (LLM) */
    double exact_match, exact_match_err; /* generation (LLM) */
    /* cost */
    double weight_bytes, params;  /* of the weighted layers */
    double bitops;                /* MACs x weight bits x activation bits */
    char worst[256];              /* the tensor with the lowest SQNR, "" */
    double worst_sqnr_db;         /* when none is below +inf */
    double ms_per_input;          /* forward time per evaluation input */
    double tokens_per_s;          /* LLM */
    double peak_rss_mb;           /* the process's peak while evaluating */
    double seconds;               /* the whole row */
};

/* A result with every field NaN (worst ""). */
void qp_sweep_result_clear(struct qp_sweep_result *r);

/* A backend: how rows of one kind of model are evaluated. */
struct qp_sweep_backend {
    const char *name;             /* "onnx", "llm": part of every hash */
    void *self;
    /* Adds to h everything besides the configuration that the rows'
     * values depend on (model, data, scored output). */
    enum qp_status (*digest)(void *self, struct qp_sha256 *h,
                             struct qp_error *err);
    /* Evaluates configuration c into r (cleared by the caller). An error
     * of the configuration itself (a scheme the mode refuses) makes an
     * error row; QP_E_NOMEM and QP_E_IO end the sweep. */
    enum qp_status (*eval)(void *self, const struct qp_sweep_cfg *c,
                           struct qp_sweep_result *r, struct qp_error *err);
    void (*free)(void *self);
};

/* Frees b and its state; NULL is ignored. */
void qp_sweep_backend_free(struct qp_sweep_backend *b);

/* What happened to each configuration of the grid. */
enum qp_sweep_state {
    QP_SWEEP_OTHER_SHARD = 0, /* another shard's */
    QP_SWEEP_DONE_BEFORE,     /* its hash was in the CSV */
    QP_SWEEP_COMPUTED,        /* evaluated and appended now */
    QP_SWEEP_FAILED,          /* an error row, now or before */
    QP_SWEEP_STATE_COUNT
};

const char *qp_sweep_state_name(enum qp_sweep_state s);

/* Reported after each row this run appends. */
struct qp_sweep_event {
    size_t done, todo;            /* rows appended so far / to append */
    const struct qp_sweep_cfg *cfg;
    const struct qp_sweep_result *r;
    const char *error;            /* the row's error, or NULL */
    double elapsed;               /* seconds since the run started */
};

struct qp_sweep_opts {
    const struct qp_sweep_grid *grid;
    const char *csv;              /* the table, created or resumed */
    size_t shard, nshards;        /* 0 and 1 for the whole grid */
    const char *version;          /* qprobe's (core/version.h) */
    void (*on_row)(void *ctx, const struct qp_sweep_event *e);
    void *ctx;
};

struct qp_sweep_summary {
    size_t configs, in_shard, done_before, computed, failed;
    size_t torn_bytes;            /* of a torn last line dropped */
    double seconds;
    /* per configuration of the grid (configs entries, owned: free) */
    enum qp_sweep_state *state;
    char (*hash)[QP_SHA256_HEX];
};

/* Runs the sweep: hashes every configuration, opens (or creates) the
 * CSV, evaluates the shard's configurations not yet in it and appends
 * their rows. sum is owned by the caller (qp_sweep_summary_release), also
 * on failure. Errors: the CSV's (not a sweep table, locked by another
 * sweep, unwritable), the backend's digest, QP_E_NOMEM / QP_E_IO of an
 * evaluation. */
enum qp_status qp_sweep_run(struct qp_sweep_backend *b,
                            const struct qp_sweep_opts *o,
                            struct qp_sweep_summary *sum, struct qp_error *err);

void qp_sweep_summary_release(struct qp_sweep_summary *s);

/* The row hash of configuration c (hex into out) given the run's base
 * state (the version, backend and digest already added). */
void qp_sweep_cfg_hash(const struct qp_sha256 *base, const struct qp_sweep_cfg *c,
                       char out[QP_SHA256_HEX]);

/* The base state: version, backend name and the backend's digest. */
enum qp_status qp_sweep_base_hash(struct qp_sweep_backend *b, const char *version,
                                  struct qp_sha256 *base, struct qp_error *err);

#endif
