/* analysis/export-enc.h: a plan as AIMET / QNN encodings JSON
 * (formats/qnn-encodings.h writes the file).
 *
 *   encodings      every tensor of the plan: param_encodings for each
 *                  weighted layer's weight (under its own name: a weight
 *                  folded with a BatchNormalization, "W:bn", is written as
 *                  "W", which qnn-onnx-converter folds the same way), one
 *                  encoding per output channel for per-channel schemes;
 *                  activation_encodings for every quantized value (graph
 *                  inputs and node outputs; moved values with their input's
 *                  parameters, as QNN gives data movement ops); float
 *                  weights and activations as {"dtype": "float",
 *                  "bitwidth": 32}.
 *   qnn-overrides  the same entries for the tensors a recipe rule decides
 *                  (not the default), for qnn-onnx-converter's
 *                  --quantization_overrides: the converter computes every
 *                  other encoding itself (its --act_bw / --weights_bw), so
 *                  the overrides carry exactly the recipe's exceptions.
 * Biases are left out: QNN derives them from the input and weight scales
 * (--bias_bw 32).
 *
 * Parameters go on AIMET's unsigned grid: an asymmetric ('z') tensor's
 * zero point as it is, a symmetric one's (zero point 0 on the signed grid)
 * as 2^(bits-1), so offset = -zero point and min = offset * scale. The
 * reader (qp_qnn_encodings_parse) gives back those scales and zero points.
 *
 * Refused, naming the tensor: ggml block types and group-wise weights
 * (the 0.6.1 format has per-tensor and per-channel encodings only), and
 * dynamic activations (no constant encoding). */
#ifndef QP_ANALYSIS_EXPORT_ENC_H
#define QP_ANALYSIS_EXPORT_ENC_H

#include <stddef.h>

#include "formats/qnn-encodings.h"
#include "model/session.h"

struct qp_export_enc_stats {
    size_t activations, params, per_channel, floats;
};

/* The entries of plan p over s's graph into *out (n of them; names
 * borrowed from the graph, except those in *names, which the caller frees
 * with qp_export_enc_release). overrides_of: only what its rules decide.
 * stats may be NULL. */
struct qp_export_enc {
    struct qp_qnn_enc_entry *e;
    size_t n;
    char **names;      /* weight names made here */
    float **scales;    /* parameter arrays made here */
    int32_t **zps;
    size_t n_owned;
};
enum qp_status qp_export_enc_build(const struct qp_session *s,
                                   const struct qp_qplan *p,
                                   const struct qp_recipe *overrides_of,
                                   struct qp_export_enc *out,
                                   struct qp_export_enc_stats *stats,
                                   struct qp_error *err);
void qp_export_enc_release(struct qp_export_enc *x);

/* Builds and writes them to path; a one-line summary into summary. */
enum qp_status qp_export_encodings(const struct qp_session *s,
                                   const struct qp_qplan *p,
                                   const struct qp_recipe *overrides_of,
                                   const char *path, char *summary, size_t size,
                                   struct qp_error *err);

#endif
