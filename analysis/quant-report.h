/* analysis/quant-report.h: the per-tensor report of `qprobe quantize
 * --report`: one CSV row per float tensor of the checkpoint,
 *   name,shape,scheme,bits,sqnr_db,cosine,mae,max_abs,bytes_fp32,
 *   bytes_quantized
 * with the metrics of the tensor against its dequantized form
 * (analysis/metrics.h; a tensor copied as it is has sqnr inf) and
 * bytes_quantized the bytes the output holds for it (quant/rtn.h's
 * qp_rtn_bytes). */
#ifndef QP_ANALYSIS_QUANT_REPORT_H
#define QP_ANALYSIS_QUANT_REPORT_H

#include "formats/csv.h"
#include "quant/ckpt.h"

/* Opens the report at path and writes its header. *out belongs to the
 * caller until qp_csv_commit or qp_csv_abort (formats/csv.h). */
enum qp_status qp_quant_report_open(const char *path, struct qp_csv_writer **out,
                                    struct qp_error *err);

/* An on_row callback for qp_ckpt_quantize: ctx is the report's writer. */
enum qp_status qp_quant_report_row(void *ctx, const struct qp_ckpt_row *r,
                                   struct qp_error *err);

#endif
