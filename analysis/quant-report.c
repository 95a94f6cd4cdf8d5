/* analysis/quant-report.c: the quantize report (analysis/quant-report.h). */
#include "analysis/quant-report.h"

#include <math.h>

#include "analysis/diff-report.h"
#include "analysis/metrics.h"

enum qp_status qp_quant_report_open(const char *path, bool gptq,
                                    struct qp_quant_report *r,
                                    struct qp_error *err)
{
    static const char *const cols[] = {
        "name", "shape", "scheme", "bits", "sqnr_db", "cosine", "mae",
        "max_abs", "bytes_fp32", "bytes_quantized",
        "layer", "rows", "cols", "groups", "tokens", "samples", "damp",
        "retries", "gptq_loss", "out_err", "rtn_out_err", "seconds"};
    *r = (struct qp_quant_report){NULL, gptq, NULL, NULL};
    enum qp_status st = qp_csv_open(path, &r->csv, err);
    if (!st)
        qp_csv_row(r->csv, cols, gptq ? 22 : 10);
    return st;
}

/* The GPTQ columns of a row (empty without a log). */
static void gptq_fields(struct qp_csv_writer *w, const struct qp_quant_report_gptq *g)
{
    if (!g) {
        for (int k = 0; k < 12; k++)
            qp_csv_str(w, "");
        return;
    }
    qp_csv_str(w, g->layer);
    qp_csv_int(w, (int64_t)g->rows);
    qp_csv_int(w, (int64_t)g->cols);
    qp_csv_int(w, (int64_t)g->groups);
    qp_csv_int(w, (int64_t)g->tokens);
    qp_csv_int(w, (int64_t)g->samples);
    qp_csv_num(w, g->damp);
    qp_csv_int(w, g->retries);
    qp_csv_num(w, g->loss);
    qp_csv_num(w, g->out_err);
    qp_csv_num(w, g->rtn_out_err);
    qp_csv_num(w, g->seconds);
}

enum qp_status qp_quant_report_row(void *ctx, const struct qp_ckpt_row *r,
                                   struct qp_error *err)
{
    const struct qp_quant_report *rep = ctx;
    struct qp_csv_writer *w = rep->csv;
    const struct qp_tensor *ref = r->ref;
    char shape[200], scheme[QP_SCHEME_MAX + 1] = "fp32";
    qp_diff_shape_field(ref->ndim, ref->shape, shape, sizeof shape);
    unsigned bits = qp_dtype_traits(ref->dtype)->bits;
    struct qp_metrics m;
    qp_metrics_init(&m);
    if (r->scheme) {
        qp_scheme_format(r->scheme, scheme, sizeof scheme);
        bits = r->scheme->w.f.bits;
        enum qp_status st = qp_metrics_tensors(ref, r->fake ? r->fake : r->q,
                                               &m, err);
        if (st)
            return st;
    }
    qp_csv_str(w, ref->name);
    qp_csv_str(w, shape);
    qp_csv_str(w, scheme);
    qp_csv_int(w, bits);
    qp_csv_num(w, r->scheme ? qp_metrics_sqnr_db(&m) : INFINITY);
    qp_csv_num(w, r->scheme ? qp_metrics_cosine(&m) : 1);
    qp_csv_num(w, r->scheme ? qp_metrics_mae(&m) : 0);
    qp_csv_num(w, r->scheme ? qp_metrics_max_abs(&m) : 0);
    qp_csv_int(w, (int64_t)qp_tensor_numel(ref) * 4);
    qp_csv_int(w, (int64_t)r->bytes_out);
    if (rep->gptq)
        gptq_fields(w, rep->gptq_of ? rep->gptq_of(rep->ctx, ref->name) : NULL);
    qp_csv_end_row(w);
    return QP_OK;
}
