/* analysis/sweep-onnx.h: sweep rows of a graph model (ONNX, TFLite)
 * through one session (model/session.h).
 *
 * Once: the session (model, calibration ranges, the weight cache shared by
 * every row), the evaluation inputs, and on each of them an fp32 run whose
 * every value is kept (a memo). Per row: its plan, one run per evaluation
 * input (recorded in a memo of its own, so that the next row recomputes
 * only what changed), scored on the graph output against fp32
 * (analysis/outcome.h: sqnr_db, cosine, and kl / top1 for an output of
 * classes) and on every other float tensor: the one of lowest SQNR over
 * the inputs is the row's worst tensor. Prices from the plan
 * (analysis/price.h). Time: the best of `repeat` forward passes on the
 * first input without memo or capture, as `qprobe run` makes them. */
#ifndef QP_ANALYSIS_SWEEP_ONNX_H
#define QP_ANALYSIS_SWEEP_ONNX_H

#include "analysis/sweep-backend.h"
#include "model/session.h"

/* A backend over session s (calibrated as the rows need; taken, also on
 * failure) and evaluation sets sets[0..nsets) (each g->n_inputs tensors;
 * taken, freed with qp_session_free_inputs). output is the index of the
 * scored graph output; model_digest names the model in every hash. */
enum qp_status qp_sweep_onnx_new(struct qp_session *s, struct qp_tensor ***sets,
                                 size_t nsets, int output,
                                 const unsigned char model_digest[QP_SHA256_BYTES],
                                 int64_t repeat, struct qp_sweep_backend **out,
                                 struct qp_error *err);

/* Opens src->model and its inputs (calibration from src->calib, else from
 * the evaluation inputs; evaluation from src->eval, else the calibration
 * inputs) into such a backend. */
enum qp_status qp_sweep_onnx_open(const struct qp_sweep_src *src,
                                  struct qp_sweep_backend **out,
                                  struct qp_error *err);

#endif
