/* analysis/sweep-backend.h: which backend evaluates a sweep's rows
 * (analysis/sweep.h), chosen by the model: a folder (a Hugging Face
 * Llama-family checkpoint) goes to the language-model backend, a file
 * (.onnx, .tflite) to the ONNX backend (analysis/sweep-onnx.h).
 *
 * The language-model backend reports perplexity with its
 * uncertainty (ppl, ppl_err), KL against the fp32 model's logits (kl,
 * kl_err), same-top-p (top1, top1_err), multiple-choice accuracy
 * (task_acc) and exact match (exact_match) from a token stream and task
 * files, and tokens/s, through the Llama runtime (model/llm.h) and
 * analysis/llm-eval.h (analysis/sweep-llm.c says how). */
#ifndef QP_ANALYSIS_SWEEP_BACKEND_H
#define QP_ANALYSIS_SWEEP_BACKEND_H

#include <stdint.h>

#include "analysis/sweep.h"
#include "core/progress.h"
#include "model/session.h"

/* Everything a backend is opened from (the sweep command's options). */
struct qp_sweep_src {
    const char *model;      /* file or folder */
    const char *calib;      /* calibration inputs (folder or file), or NULL */
    const char *eval;       /* evaluation inputs, or NULL: the calibration
                               ones */
    const char *output;     /* the graph output scored, or NULL: the first */
    int64_t repeat;         /* timed forward passes per row (best kept);
                               0: no timing */
    /* language models */
    const char *text;       /* text to score perplexity on, or */
    const char *tokens;     /* token ids (.npy) */
    const char *kl_base;    /* base logits (llama.cpp's file), or NULL: made
                               by the fp32 row */
    const char *choices;    /* multiple-choice items (.jsonl), or NULL */
    const char *exact;      /* exact-match items (.jsonl), or NULL */
    int64_t ctx, chunks;    /* tokens per chunk, chunks scored (0: all) */
};

/* Opens the backend for src->model. *out belongs to the caller
 * (qp_sweep_backend_free). Errors name the model or the input file. */
enum qp_status qp_sweep_backend_open(const struct qp_sweep_src *src,
                                     struct qp_sweep_backend **out,
                                     struct qp_error *err);

/* The session configuration of a (non-fp32) row c: its mode, scheme or
 * recipe, and its flavor (given for a scheme row, as the CSV's requant
 * column says). out points into c. */
void qp_sweep_session_cfg(const struct qp_sweep_cfg *c, struct qp_session_cfg *out);

/* The backend a model path goes to ("onnx", "llm"). */
const char *qp_sweep_backend_for(const char *model);

/* The language-model backend (analysis/sweep-llm.c). */
enum qp_status qp_sweep_llm_open(const struct qp_sweep_src *src,
                                 struct qp_sweep_backend **out,
                                 struct qp_error *err);

#endif
