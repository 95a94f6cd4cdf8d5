/* model/session-impl.h: the session's state, shared by model/session.c
 * (loading, calibration, plans) and model/session-run.c (runs, memos).
 * Internal to model/. */
#ifndef QP_MODEL_SESSION_IMPL_H
#define QP_MODEL_SESSION_IMPL_H

#include "model/qdq.h"
#include "model/session.h"
#include "model/wcache.h"
#include "quant/observer.h"

/* An observer of one value with one range method, fed over every
 * calibration set. */
struct obs_entry {
    int value;
    struct qp_observer_opts opts;
    struct qp_observer *obs;
};

struct qp_session {
    char *path;
    struct qp_graph *g;
    bool tfl_int;               /* a quantized TFLite model, run natively */
    struct qp_tensor ***calib;  /* [ncalib] input sets (g->n_inputs each) */
    size_t ncalib;
    bool *f32;                  /* [n_values] float activations */
    bool f32_known;             /* a calibration pass ran */
    struct obs_entry *obs;
    size_t nobs, cap_obs;
    struct qp_wcache *wc;
    struct qp_session_stats stats;
    struct qp_session_gptq_opts gptq; /* how plans make GPTQ weights */
    uint64_t calib_hash;        /* of every calibration set, once known */
    bool calib_hashed;
    struct qp_exec_buffers *buf; /* handed from run to run */
};

struct qp_splan {
    enum qp_run_mode mode;
    struct qp_qplan *q;    /* scheme, recipe or assignment */
    struct qp_qdq *qdq;    /* the int mode of the model's own quantization */
};

struct qp_memo {
    const struct qp_graph *g;
    bool valid;
    uint64_t feed_hash;
    uint64_t *sig;            /* [n_nodes] */
    uint64_t *in_sig;         /* [n_values] (graph inputs) */
    struct qp_tensor **vals;  /* [n_values], owned */
    size_t bytes;
};

/* True when a quantizes some weight with '@gptq' (model/session-gptq.c). */
bool qp_session_gptq_any(const struct qp_qassign *a);

/* FNV-1a over the inputs' dtypes, shapes and bytes (model/session-run.c). */
uint64_t qp_session_feed_hash(const struct qp_graph *g,
                              const struct qp_tensor *const *feed);

#endif
