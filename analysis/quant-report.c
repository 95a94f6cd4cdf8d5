/* analysis/quant-report.c: the quantize report (analysis/quant-report.h). */
#include "analysis/quant-report.h"

#include <math.h>

#include "analysis/diff-report.h"
#include "analysis/metrics.h"

enum qp_status qp_quant_report_open(const char *path, struct qp_csv_writer **out,
                                    struct qp_error *err)
{
    static const char *const cols[] = {
        "name", "shape", "scheme", "bits", "sqnr_db", "cosine", "mae",
        "max_abs", "bytes_fp32", "bytes_quantized"};
    enum qp_status st = qp_csv_open(path, out, err);
    if (!st)
        qp_csv_row(*out, cols, sizeof cols / sizeof cols[0]);
    return st;
}

enum qp_status qp_quant_report_row(void *ctx, const struct qp_ckpt_row *r,
                                   struct qp_error *err)
{
    struct qp_csv_writer *w = ctx;
    const struct qp_tensor *ref = r->ref;
    char shape[200], scheme[QP_SCHEME_MAX + 1] = "fp32";
    qp_diff_shape_field(ref->ndim, ref->shape, shape, sizeof shape);
    unsigned bits = qp_dtype_traits(ref->dtype)->bits;
    struct qp_metrics m;
    qp_metrics_init(&m);
    if (r->scheme) {
        qp_scheme_format(r->scheme, scheme, sizeof scheme);
        bits = r->scheme->w.f.bits;
        enum qp_status st = qp_metrics_tensors(ref, r->q, &m, err);
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
    qp_csv_end_row(w);
    return QP_OK;
}
