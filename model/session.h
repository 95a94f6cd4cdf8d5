/* model/session.h: the pipeline every command runs a model through.
 *
 * A session loads a model once (an ONNX graph or a TFLite model), keeps calibration
 * inputs, and makes plans: a run mode with a uniform scheme, a recipe or a
 * per-layer assignment (model/qassign.h). It runs the model in fp32 or
 * under a plan, capturing named values, as many times as asked, without
 * reloading or recomputing what did not change:
 *
 *   weights  are quantized once per distinct (weight, scheme, rounding,
 *            layout) and shared by every plan (model/wcache.h); GPTQ
 *            weights ('@gptq') are made over the calibration inputs
 *            (model/gptq-graph.h) once per distinct calibration set and,
 *            in sequential mode, quantization of the layers upstream;
 *   ranges   of activations come from observers fed by fp32 runs over the
 *            calibration inputs; an observer is made once per (value,
 *            range method) and fed once, so plans that differ only in
 *            weights, or in the bits of an activation, calibrate nothing;
 *   values   of an earlier run on the same inputs (a memo) are reused: a
 *            node whose behaviour and ancestors' behaviour are unchanged
 *            (qp_qplan_node_sig) is not run again, so quantizing one layer
 *            of an fp32 memo recomputes only what depends on that layer.
 *
 * A run may also feed every node the reference values of another run
 * (teacher forcing: --local), so that a layer's error is its own.
 *
 *   qp_session_open -> qp_session_add_calib* -> qp_session_plan ->
 *   qp_session_run (any number of times, any plans) -> qp_session_free */
#ifndef QP_MODEL_SESSION_H
#define QP_MODEL_SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/progress.h"
#include "formats/dump.h"
#include "model/exec.h"
#include "model/gptq-graph.h"
#include "model/graph.h"
#include "model/op-tflite.h"
#include "model/qassign.h"
#include "model/qplan.h"
#include "quant/recipe.h"
#include "quant/scheme.h"

struct qp_session_opts {
    bool keep_bn; /* ONNX: keep BatchNormalization nodes (no folding) */
    /* TFLite (a path ending in .tflite): the arithmetic its integer model
     * runs in (model/op-tflite.h), and dequantize: run the float reference
     * of a quantized model instead (model/tflite-import.h) */
    enum qp_tfl_flavor tfl_flavor;
    bool dequantize;
};

struct qp_session_stats {
    size_t calib_passes;  /* fp32 runs over calibration inputs */
    size_t observers;     /* (value, method) observers made */
    size_t weights_made;  /* weights quantized */
    size_t weights_reused;/* weight requests served from the cache */
    size_t runs;          /* qp_session_run calls */
    size_t nodes_run;     /* nodes computed by those runs */
    size_t nodes_reused;  /* nodes whose values came from a memo */
};

struct qp_session;

/* Opens the model at path: an .onnx file, or a Hugging Face Llama-family
 * folder (config.json + safetensors, model/llama-import.h). *out belongs to the caller
 * (qp_session_free). Errors name the file. */
enum qp_status qp_session_open(const char *path,
                               const struct qp_session_opts *o,
                               struct qp_session **out, struct qp_error *err);

/* A session over a finalized graph built elsewhere (tests, other model
 * builders); takes g (also on failure). name is used in messages. */
enum qp_status qp_session_new(struct qp_graph *g, const char *name,
                              struct qp_session **out, struct qp_error *err);

void qp_session_free(struct qp_session *s);

/* True when the model carries its own quantization (QDQ / QLinear nodes,
 * or a quantized TFLite model run natively): its int mode needs no
 * scheme. */
bool qp_session_own_quant(const struct qp_session *s);

/* The model's graph (borrowed from the session). */
const struct qp_graph *qp_session_graph(const struct qp_session *s);
const char *qp_session_path(const struct qp_session *s);

/* ---- inputs ----------------------------------------------------------- */

/* One input set for the graph from "[NAME=]FILE" specs (model/inputs.h).
 * *feed (g->n_inputs tensors) belongs to the caller:
 * qp_session_free_inputs. */
enum qp_status qp_session_load_inputs(const struct qp_session *s,
                                      const char *const *specs, int n,
                                      struct qp_tensor ***feed,
                                      struct qp_error *err);
void qp_session_free_inputs(const struct qp_session *s,
                            struct qp_tensor **feed);

/* The float reference session of an analysis command (sensitivity,
 * recipe): model opened with an int8 .tflite dequantized, calibrated on
 * the input sets of calib, and eval's input sets (eval NULL: none) loaded
 * into *ev (qp_input_sets_free). *s may be set on failure too; it belongs
 * to the caller (qp_session_free). Errors name the file. */
struct qp_input_sets;
enum qp_status qp_session_open_analysis(const char *model, const char *calib,
                                        const char *eval, struct qp_session **s,
                                        struct qp_input_sets *ev,
                                        struct qp_error *err);

/* Adds calibration input sets: every .npy/.pb file of the folder path is
 * one set (or path itself, one file). *added (may be NULL) counts them.
 * Errors name the file. */
enum qp_status qp_session_add_calib(struct qp_session *s, const char *path,
                                    size_t *added, struct qp_error *err);

/* Adds one calibration input set; the session takes feed (also on
 * failure). */
enum qp_status qp_session_add_calib_feed(struct qp_session *s,
                                         struct qp_tensor **feed,
                                         struct qp_error *err);

size_t qp_session_calib_count(const struct qp_session *s);

/* Calibration set i (g->n_inputs tensors, borrowed from the session). */
struct qp_tensor *const *qp_session_calib_set(const struct qp_session *s,
                                              size_t i);

/* ---- plans ------------------------------------------------------------- */

struct qp_session_cfg {
    enum qp_run_mode mode;           /* QP_MODE_FAKE or QP_MODE_INT */
    const struct qp_scheme *scheme;  /* one of scheme, recipe, assign; none */
    const struct qp_recipe *recipe;  /* in the int mode of a model with its */
    const struct qp_qassign *assign; /* own quantization (QDQ) */
    enum qp_rq_flavor flavor;
    bool flavor_given;               /* else the recipe's, else tflite (ort
                                        for a QDQ model's own) */
    bool qa_given;                   /* the activation quantizer, else the */
    enum qp_qa_flavor qa;            /* flavor's runtime's own */
};

struct qp_splan;

/* A plan for cfg: weights quantized (or taken from the cache), activation
 * ranges from the calibration inputs (fed now where no observer has them
 * yet). Needs at least one calibration set when the plan quantizes
 * activations. *out belongs to the caller (qp_splan_free) and must not
 * outlive s. Errors name the layer. */
enum qp_status qp_session_plan(struct qp_session *s,
                               const struct qp_session_cfg *cfg,
                               struct qp_splan **out, struct qp_error *err);
void qp_splan_free(struct qp_splan *p);

/* The plan's mode, and its qplan (NULL for the int mode of a QDQ model's
 * own quantization). */
enum qp_run_mode qp_splan_mode(const struct qp_splan *p);
const struct qp_qplan *qp_splan_qplan(const struct qp_splan *p);
/* Nodes fused into integer kernels (QDQ plans), else 0. */
int qp_splan_qdq_fused(const struct qp_splan *p);

/* ---- GPTQ --------------------------------------------------------------- */

/* How the session makes GPTQ weights (zeroed: sequential, silent). */
struct qp_session_gptq_opts {
    /* every layer's Hessian from the float model's inputs instead of the
     * inputs computed with the earlier layers quantized */
    bool fp32_inputs;
    const struct qp_progress *progress;
    /* each layer made (model/gptq-graph.h), e.g. for a --report log */
    enum qp_status (*on_layer)(void *ctx, const struct qp_gptq_graph_layer *l,
                               struct qp_error *err);
    /* a '@gptq' layer that GPTQ cannot run (a ConvTranspose, a shared
     * weight, ...: model/gptq-view.h), rounded to nearest on the same
     * grid instead; why says which */
    void (*on_fallback)(void *ctx, int node, const char *why);
    void *ctx;
};

void qp_session_set_gptq(struct qp_session *s,
                         const struct qp_session_gptq_opts *o);

/* The assignment plans quantize with for a: a copy where every '@gptq'
 * node GPTQ cannot run gets the same grid rounded to nearest (and
 * on_fallback hears of it). *out belongs to the caller. */
enum qp_status qp_session_gptq_assign(struct qp_session *s,
                                      const struct qp_qassign *a,
                                      struct qp_qassign **out,
                                      struct qp_error *err);

/* The GPTQ weights of assignment a (as qp_session_gptq_assign returns
 * it) with weight rounding r, made now over the calibration inputs where
 * the cache does not hold them yet: key[n_nodes] (may be NULL) receives
 * each node's cache key (0 for nodes not GPTQ'd) and w[n_nodes] (may be
 * NULL) the weights, borrowed from the session (NULL entries elsewhere).
 * Needs calibration inputs when a layer is to be made. Errors name the
 * layer. */
enum qp_status qp_session_gptq(struct qp_session *s, const struct qp_qassign *a,
                               enum qp_round r, uint64_t *key,
                               const struct qp_wquant **w,
                               struct qp_error *err);

/* ---- runs -------------------------------------------------------------- */

/* The values of one run on one input set, kept for reuse. */
struct qp_memo;
enum qp_status qp_memo_new(const struct qp_session *s, struct qp_memo **out,
                           struct qp_error *err);
void qp_memo_free(struct qp_memo *m);
/* Bytes of values the memo holds. */
size_t qp_memo_bytes(const struct qp_memo *m);
/* The memo's tensor of value v (borrowed), or NULL. */
const struct qp_tensor *qp_memo_value(const struct qp_memo *m, int v);

struct qp_session_run_opts {
    const char *capture; /* glob of values handed to on_capture; NULL none */
    enum qp_status (*on_capture)(void *ctx, const struct qp_graph *g, int value,
                                 const struct qp_tensor *t, struct qp_error *err);
    void *capture_ctx;
    const struct qp_progress *progress;
    /* Reuse and record: the memo of an earlier run on the same inputs; the
     * run reuses every value it can, then the memo holds this run's
     * values when record is set (NULL: neither). A memo used with other
     * inputs is refilled (record) or not used. */
    struct qp_memo *memo;
    bool record;         /* false: reuse the memo only, leave it as it was */
    /* Teacher forcing: every node reads, for each activation input found
     * in this dump (by value name), the dump's tensor instead, as the
     * plan represents that value (fake-quantized, or quantized in the int
     * mode). Not combined with memo. */
    struct qp_dump *local;
    /* The same from a memo of an earlier run (e.g. the fp32 reference
     * recorded with no_fusion) instead of a dump. */
    const struct qp_memo *local_memo;
    /* The memo is filled from a run without fused passes, so that every
     * value materializes (more reuse later, one slower run now). */
    bool no_fusion;
    /* the run's state for stateful operators (qp_op_ctx.state) */
    void *state;
    /* release mapped weights after their last reader (qp_exec_opts) */
    bool release_weights;
};

struct qp_session_run_stats {
    double seconds;
    size_t peak_bytes;
    size_t nodes_run, nodes_reused;
};

/* Runs the model on feed (g->n_inputs tensors, borrowed) in fp32 (plan
 * NULL) or under plan. outputs[k] receive new tensors for g->outputs[k]
 * (the caller frees them); stats may be NULL. */
enum qp_status qp_session_run(struct qp_session *s, const struct qp_splan *plan,
                              const struct qp_tensor *const *feed,
                              const struct qp_session_run_opts *o,
                              struct qp_tensor **outputs,
                              struct qp_session_run_stats *stats,
                              struct qp_error *err);

struct qp_session_stats qp_session_stats(const struct qp_session *s);

/* The bytes weighted node `node`'s weight takes at scheme ws (qp_rtn_bytes
 * of its quantized form, from the session's weight cache), or in fp32 when
 * ws is NULL. */
enum qp_status qp_session_weight_bytes(struct qp_session *s, int node,
                                       const struct qp_wscheme *ws, size_t *out,
                                       struct qp_error *err);

/* Multiply-accumulates of every node (macs[g->n_nodes]) for inputs shaped
 * like feed (model/infer.h); 0 where unknown or not counted. */
enum qp_status qp_session_node_macs(const struct qp_session *s,
                                    const struct qp_tensor *const *feed,
                                    uint64_t *macs, struct qp_error *err);

#endif
