/* analysis/quant-report.h: the per-tensor report of `qprobe quantize
 * --report`: one CSV row per float tensor of the checkpoint,
 *   name,shape,scheme,bits,sqnr_db,cosine,mae,max_abs,bytes_fp32,
 *   bytes_quantized
 * with the metrics of the tensor against its dequantized form
 * (analysis/metrics.h; a tensor copied as it is has sqnr inf) and
 * bytes_quantized the bytes the output holds for it (quant/rtn.h's
 * qp_rtn_bytes, plus a GPTQ weight's g_idx).
 *
 * When the run uses GPTQ, the GPTQ log of each such weight follows
 * (empty for the other tensors):
 *   layer,rows,cols,groups,tokens,samples,damp,retries,gptq_loss,out_err,
 *   rtn_out_err,seconds
 * layer the node, rows x cols the weight as GPTQ sees it per convolution
 * group (outputs x input features: in * kh * kw for a conv), groups the
 * groups quantized apart, tokens the input rows per group's Hessian,
 * samples the calibration inputs, damp the dampening used (fraction of
 * mean diag H) and retries the factorizations that failed before it,
 * gptq_loss the reference's error figure (1/2 sum (w - q)^2 / U_ii^2),
 * out_err = ||W X - What X||^2 / ||W X||^2 on the calibration inputs
 * and rtn_out_err the same for round-to-nearest on the same grid,
 * seconds the time GPTQ took on the layer (quant/gptq-layer.h). */
#ifndef QP_ANALYSIS_QUANT_REPORT_H
#define QP_ANALYSIS_QUANT_REPORT_H

#include <stdbool.h>

#include "formats/csv.h"
#include "quant/ckpt.h"

/* One weight's GPTQ log. */
struct qp_quant_report_gptq {
    const char *layer;
    size_t rows, cols, groups;
    uint64_t tokens, samples;
    double damp;
    int retries;
    double loss, out_err, rtn_out_err, seconds;
};

struct qp_quant_report {
    struct qp_csv_writer *csv;
    bool gptq; /* the GPTQ columns */
    /* the GPTQ log of tensor name, or NULL */
    const struct qp_quant_report_gptq *(*gptq_of)(void *ctx, const char *name);
    void *ctx;
};

/* Opens the report at path and writes its header (with the GPTQ columns
 * when gptq). r->csv belongs to the caller until qp_csv_commit or
 * qp_csv_abort (formats/csv.h); the caller sets gptq_of and ctx. */
enum qp_status qp_quant_report_open(const char *path, bool gptq,
                                    struct qp_quant_report *r,
                                    struct qp_error *err);

/* An on_row callback for qp_ckpt_quantize: ctx is a struct
 * qp_quant_report. */
enum qp_status qp_quant_report_row(void *ctx, const struct qp_ckpt_row *r,
                                   struct qp_error *err);

#endif
