/* model/qplan.h: how a graph runs quantized, in the fake and int modes of
 * `qprobe run`.
 *
 * Weights. Every Conv, ConvTranspose, MatMul and Gemm whose weight (input
 * 1) is a float constant gets the weight scheme of --scheme, or of the
 * recipe rule matching the weight's name (a weight folded with a
 * BatchNormalization, "W:bn", is looked up as "W"; "fp32" leaves the layer
 * in float). Weights are quantized by round-to-nearest (quant/rtn.h) with
 * the flavor's rounding (half away from zero for the TFLite family and
 * gemmlowp, half to even for ONNX, ORT and XNNPACK), per output channel
 * along ONNX's layouts (Conv/ConvTranspose [O, I, ...], MatMul [K, N]).
 * Biases are rounded to the int32 grid of in_scale * w_scale[c].
 *
 * Activations. With an activation part in the scheme (the recipe's
 * default), every float activation (graph inputs and node outputs) is
 * quantized per tensor with the format the scheme names. A recipe rule
 * that matches a layer's weight also sets that layer's output activation:
 * the rule's activation part when it has one ("w8c+a16t"), none when the
 * rule is "fp32" (the output stays float), the default's when the rule
 * names weights only ("w4c"); ranges come from
 * observers (min/max, ema, percentile, MSE, KL as the scheme says) fed by
 * fp32 runs over the calibration inputs. Operators that only move values
 * (Reshape, Flatten, Squeeze, Unsqueeze, Transpose, Identity, Dropout,
 * Slice, Split, Gather, MaxPool, nearest Resize) keep their input's
 * parameters, as devices do, so their outputs need no requantization.
 *
 * fake: weights are replaced by their dequantized values and every
 * activation is quantized then dequantized (the flavor's activation
 * quantizer, kernels/quantize-act.h) after the node making it: what
 * PyTorch and ONNX Runtime simulate. Dynamic activations ('a8d') take
 * each row's (last axis) own min/max range at run time.
 *
 * int: activations are carried as 8-bit integers with their scale and zero
 * point. Conv (2-D), MatMul and Gemm run in the integer kernels
 * (kernels/conv-s8.h, kernels/gemm-s8.h) with the chosen requantization
 * flavor; Add runs TFLite's integer add (kernels/add-s8.h) for the
 * fixed-point flavors and in float for the float flavors (xnnpack-fp32,
 * ort, onnx-ref: their runtimes add dequantized values); the operators
 * above that only move values run on the integers; elementwise operators
 * of one or two quantized inputs (their other inputs scalar constants:
 * activations, x + c, x * c, x * y, ...) run as a lookup table of the
 * float operator on every input code, as NPUs do (the same values as
 * dequantizing, computing in float and quantizing each element); every
 * other operator dequantizes its inputs, computes in float and quantizes
 * its outputs. The int mode needs 8-bit activations and per-tensor or
 * per-channel weights of up to 8 bits (narrower ones unpacked to int8, as
 * devices feed 4-bit weights to 8-bit kernels: exact); group-wise weights
 * are refused. That is the node-by-node run (qp_exec_tune.no_fusion, and
 * qp_qplan_run_int); with fusion on, the hooks' run_span computes the same
 * bytes in fewer passes (model/qexec-fuse.h, model/qexec-int.h).
 *
 * Weight-only int mode (a scheme without activations, e.g. w4g128): only
 * for graphs whose weighted operators take integer weights
 * (QP_TRAIT_QWEIGHT, model/op.h: the LLM operators of model/op-llm.h).
 * They run on the integer weights, dequantized tile by tile inside the
 * product (kernels/gemm-wq.h), activations stay float. The fake mode of
 * those operators computes the same thing (it hands them the integer
 * weight too); format-specific integer kernels (8da4w: int8 dynamic
 * activations x int4 group-wise weights) are a node kind of their own. */
#ifndef QP_MODEL_QPLAN_H
#define QP_MODEL_QPLAN_H

#include <stdbool.h>

#include "kernels/conv-s8.h"
#include "kernels/gemm-qd8.h"
#include "kernels/gemm-s8.h"
#include "kernels/quantize-act.h"
#include "kernels/requant.h"
#include "model/exec.h"
#include "model/qassign.h"
#include "model/wcache.h"
#include "quant/observer.h"
#include "quant/recipe.h"
#include "quant/scheme.h"

enum qp_run_mode {
    QP_MODE_FP32 = 0,
    QP_MODE_FAKE,
    QP_MODE_INT,
    QP_MODE_COUNT
};

/* The weight rounding of a requantization flavor's runtime: half to even
 * for ONNX, ORT and XNNPACK, half away from zero for the others. */
enum qp_round qp_qplan_weight_round(enum qp_rq_flavor f);

/* "fp32", "fake", "int". */
const char *qp_run_mode_name(enum qp_run_mode m);
bool qp_run_mode_from_name(const char *name, enum qp_run_mode *out);

/* How each node runs in the int mode. */
enum qp_qkind {
    QP_QK_FLOAT = 0, /* dequantize, float operator, quantize */
    QP_QK_PASS,      /* the operator on the integers; parameters kept */
    QP_QK_CONV,
    QP_QK_MATMUL,
    QP_QK_GEMM,
    QP_QK_ADD,
    QP_QK_DA8W4,     /* an LLM Linear on kernels/gemm-qd8.h (8da4w,
                        model/qexec-da8w4.h) */
    QP_QK_COUNT
};

/* Quantization of one value. */
struct qp_qval {
    bool f32;            /* calibration saw it as a float activation */
    bool quant;          /* an activation carried / simulated quantized */
    bool inherited;      /* parameters taken from the input of a PASS node */
    float scale;
    int32_t zp;
    enum qp_dtype dtype; /* i8 (symmetric) or u8 (asymmetric) */
    int32_t qmin, qmax;
    bool has_as;         /* quantized with scheme `as` (else left float) */
    struct qp_ascheme as;
};

struct qp_qnode {
    enum qp_qkind kind;
    bool wq;                     /* its weight is quantized */
    struct qp_wscheme ws;
    const struct qp_tensor *w_q; /* integer weight with its parameters */
    const struct qp_tensor *w_fake; /* dequantized weight (float, same shape);
                                       both borrowed from the weight cache;
                                       NULL for QP_TRAIT_QWEIGHT operators,
                                       which read w_q (unless a g_idx) */
    uint64_t wkey;               /* the weight's calibration key (GPTQ), or 0 */
    struct qp_tensor *b_fake;    /* bias on its int32 grid (float) */
    int32_t *b_int;              /* [out channels] */
    size_t out_c;
    /* int mode */
    struct qp_rq rq;
    bool rq_ready;
    struct qp_gemm_s8 gemm;      /* MatMul/Gemm with a constant weight */
    bool gemm_ready;
    struct qp_conv_s8 conv;      /* prepared for conv_h x conv_w inputs */
    bool conv_ready;
    size_t conv_h, conv_w;
    void *kernel_weight;         /* int8 weight in the kernels' layout */
    struct qp_qb4w *qb4w;        /* QP_QK_DA8W4: the prepared weight */
    /* an elementwise operator of one or two quantized inputs (other
     * inputs scalar constants): a lookup table of the float operator on
     * every input code (256 or 65536 entries), built at the first run */
    bool lut_ok;
    uint8_t *lut;
    /* GlobalAveragePool on codes: its input codes' values over gap_unit,
     * integers of magnitude up to gap_most (NULL: they are not, the sums
     * run in double), found at the first run */
    bool gap_ready;
    int64_t *gap_in;
    double gap_unit, gap_most;
};

struct qp_qplan_opts {
    enum qp_run_mode mode;          /* QP_MODE_FAKE or QP_MODE_INT */
    const struct qp_scheme *scheme; /* one of scheme, recipe and assign */
    const struct qp_recipe *recipe;
    enum qp_rq_flavor flavor;
    const struct qp_qassign *assign; /* per-layer schemes (model/qassign.h) */
    /* where quantized weights come from (shared across plans; must outlive
     * the plan); NULL: a private cache */
    struct qp_wcache *wcache;
    /* [g->n_nodes] or NULL: the key under which a calibrated (GPTQ)
     * weight of each node was put in wcache (model/wcache.h), 0 for weights
     * rounded to nearest; a GPTQ scheme without a key is refused */
    const uint64_t *wkey;
    /* the activation quantizer when not the flavor's runtime's own
     * (qp_qa_for_requant); a device may pair one runtime's requantization
     * with another's activation rounding */
    bool qa_given;
    enum qp_qa_flavor qa;
};

struct qp_qplan {
    const struct qp_graph *g;     /* borrowed; must outlive the plan */
    struct qp_wcache *wcache;     /* weights come from here */
    struct qp_wcache *own_wcache; /* a private one, or NULL */
    bool resolved;                /* qp_qplan_resolve ran */
    enum qp_run_mode mode;
    enum qp_rq_flavor flavor;
    enum qp_qa_flavor qa;
    enum qp_round round;
    bool has_acts;
    bool da8w4;                   /* the int mode's 8da4w plan (dynamic
                                     activations, model/qexec-da8w4.h) */
    struct qp_ascheme acts;
    struct qp_qval *v;            /* [g->n_values] */
    struct qp_qnode *n;           /* [g->n_nodes] */
    struct qp_observer **obs;     /* [g->n_values] during calibration */
    size_t calib_batches;
    bool finished;
    struct qp_qfuse_cache *fuse;  /* the int mode's composed tables, or NULL
                                     (model/qexec-fuse.h) */
};

/* Plans g for o's mode: schemes per layer, weights quantized, observers
 * ready. *out belongs to the caller (qp_qplan_free). Errors name the layer
 * (e.g. a scheme the int mode cannot run). */
enum qp_status qp_qplan_new(const struct qp_graph *g,
                            const struct qp_qplan_opts *o,
                            struct qp_qplan **out, struct qp_error *err);

void qp_qplan_free(struct qp_qplan *p);

/* Runs g in fp32 on one calibration input set (inputs[i] for
 * g->inputs[i]) feeding the observers of every float activation. At
 * least one run is needed, also without activations in the scheme (it
 * tells which values are float). */
enum qp_status qp_qplan_calibrate(struct qp_qplan *p,
                                  const struct qp_tensor *const *inputs,
                                  struct qp_error *err);

/* Turns the observed ranges into activation parameters (needs at least
 * one calibration batch when the scheme has activations), rounds biases,
 * and prepares the int kernels' requantization. */
enum qp_status qp_qplan_finish(struct qp_qplan *p, struct qp_error *err);

/* The two halves of qp_qplan_finish, for a caller that keeps calibration
 * elsewhere (model/session.h): resolve decides which values are quantized
 * from f32[v] (g->n_values entries: the value is a float activation, as a
 * run of the model shows; NULL: what qp_qplan_calibrate saw), after which
 * qp_qplan_needs_range tells which values need a static range; then
 * finish_ranges asks fn for each of those ranges and finishes the plan.
 * fn gets the value's planned quantization (its scheme in q->as) and the
 * plan's rounding. */
typedef enum qp_status (*qp_qplan_range_fn)(void *ctx, int value,
                                            const struct qp_qval *q,
                                            enum qp_round r, float *lo,
                                            float *hi, struct qp_error *err);
enum qp_status qp_qplan_resolve(struct qp_qplan *p, const bool *f32,
                                struct qp_error *err);
bool qp_qplan_needs_range(const struct qp_qplan *p, int value);
enum qp_status qp_qplan_finish_ranges(struct qp_qplan *p, qp_qplan_range_fn fn,
                                      void *ctx, struct qp_error *err);

/* How node `node` behaves in the plan, as a 64-bit signature: 0 when it
 * runs as in fp32 (no quantized weight, no quantized output), else a hash
 * of the mode, flavor, its weight scheme and its outputs' quantization.
 * Two plans in which a node and all its ancestors have equal signatures
 * compute the same values there on the same inputs (model/session.h
 * reuses them). p NULL (fp32) gives 0. qp_qplan_input_sig is the same for
 * a graph input. p must be finished. */
uint64_t qp_qplan_node_sig(const struct qp_qplan *p, int node);
uint64_t qp_qplan_input_sig(const struct qp_qplan *p, int value);

/* The int kernels' requantization parameters and packed weights, from
 * finished activation parameters (model/qexec.c; called by finish). */
enum qp_status qp_qplan_prepare_int(struct qp_qplan *p, struct qp_error *err);

/* Executor hooks running the plan's mode (fake or int); p must be
 * finished. */
void qp_qplan_hooks(struct qp_qplan *p, struct qp_exec_hooks *h);

/* The int mode's computation of one node (c->in are its inputs as the int
 * mode carries them): new tensors in out[k] for every used output. For the
 * per-layer check of the int kernels against the fake mode. */
enum qp_status qp_qplan_run_int(struct qp_qplan *p, const struct qp_op_ctx *c,
                                struct qp_tensor **out, struct qp_error *err);

/* Value v's float tensor x as the plan carries it: quantized with its
 * parameters in the int mode, quantized then dequantized in the fake mode,
 * a copy when v is not quantized. *out is new. */
enum qp_status qp_qplan_represent(const struct qp_qplan *p, int v,
                                  const struct qp_tensor *x,
                                  struct qp_tensor **out, struct qp_error *err);

/* A new integer tensor named name holding x quantized with value v's
 * parameters (the flavor's activation quantizer); qparams attached. */
enum qp_status qp_qplan_quantize(const struct qp_qplan *p,
                                 const struct qp_qval *v,
                                 const struct qp_tensor *x, const char *name,
                                 struct qp_tensor **out, struct qp_error *err);

#endif
