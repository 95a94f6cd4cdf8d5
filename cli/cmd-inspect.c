/* cli/cmd-inspect.c: qprobe inspect FILE: per-tensor statistics of any
 * dump or checkpoint, one tensor in memory at a time. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/diff-report.h"
#include "analysis/stats.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "cli/opt-types.h"
#include "cli/table.h"
#include "formats/csv.h"
#include "formats/dump.h"

static const struct qp_cli cli = {
    "inspect", "FILE [options]",
    "Per-tensor statistics of a checkpoint or dump: dtype, shape, min, max, "
    "mean, std, absmax, kurtosis, outlier share, and the quantization "
    "parameters of integer tensors.",
    "Statistics are over the finite values (NaN/Inf are counted in "
    "'nonfinite'), in double, in\n"
    "two passes: moments first (merged per block, Pebay's update), then the "
    "outliers.\n"
    "  std       population standard deviation, sqrt(sum (x-mean)^2 / n)\n"
    "  kurtosis  EXCESS kurtosis n*M4/M2^2 - 3 (0 for a normal distribution, "
    "nan when std is 0)\n"
    "  outliers  share of values with |x - mean| > 6 std\n"
    "Integer tensors with a scale are described by their dequantized values, "
    "s*(q - zp);\n"
    "'quant' shows bits, granularity (per-tensor, per-axis A, group G axis A), "
    "and the\n"
    "scale and zero-point ranges.\n"
    "CSV columns: name,dtype,shape,numel,min,max,mean,std,absmax,kurtosis,"
    "outlier_ratio,\n"
    "nonfinite,q_bits,q_granularity,q_scale_min,q_scale_max,q_zero_point_min,"
    "q_zero_point_max\n"
    "(shape as 1x8x4x4; the q_ columns are empty for tensors without "
    "quantization parameters).",
    1, 1, "one FILE",
};

struct row {
    const struct qp_tensor *desc; /* borrowed from the dump */
    struct qp_stats s;
    struct qp_qparam_summary q;   /* bits == 0: no parameters */
};

static void quant_cell(const struct row *r, char *buf, size_t size)
{
    if (!r->q.bits) {
        buf[0] = '\0';
        return;
    }
    char s0[32], s1[32];
    qp_table_num(r->q.scale_min, "%.4g", s0, sizeof s0);
    qp_table_num(r->q.scale_max, "%.4g", s1, sizeof s1);
    if (r->q.scale_min == r->q.scale_max && r->q.zp_min == r->q.zp_max)
        snprintf(buf, size, "%u-bit %s s=%s zp=%lld", r->q.bits,
                 r->q.granularity, s0, (long long)r->q.zp_min);
    else
        snprintf(buf, size, "%u-bit %s s=[%s,%s] zp=[%lld,%lld]", r->q.bits,
                 r->q.granularity, s0, s1, (long long)r->q.zp_min,
                 (long long)r->q.zp_max);
}

static bool print_table(const struct row *rows, size_t n, FILE *f)
{
    static const char *const head[] = {"name", "dtype", "shape", "min", "max",
                                       "mean", "std", "absmax", "kurtosis",
                                       "outliers", "nonfinite", "quant"};
    struct qp_table *t = qp_table_new(12, head, "lllrrrrrrrrl");
    bool ok = t != NULL;
    for (size_t i = 0; ok && i < n; i++) {
        const struct row *r = &rows[i];
        char shape[200], c[8][32], quant[160], nf[24];
        qp_shape_str(r->desc->ndim, r->desc->shape, shape, sizeof shape);
        const double v[8] = {r->s.count ? r->s.min : NAN,
                             r->s.count ? r->s.max : NAN,
                             r->s.count ? r->s.mean : NAN, qp_stats_std(&r->s),
                             r->s.absmax, qp_stats_kurtosis(&r->s),
                             qp_stats_outlier_ratio(&r->s), 0};
        for (int k = 0; k < 7; k++)
            qp_table_num(v[k], "%.4g", c[k], sizeof c[k]);
        snprintf(nf, sizeof nf, "%llu", (unsigned long long)r->s.nonfinite);
        quant_cell(r, quant, sizeof quant);
        const char *cells[12] = {r->desc->name, qp_dtype_name(r->desc->dtype),
                                 shape, c[0], c[1], c[2], c[3], c[4], c[5],
                                 c[6], nf, quant};
        ok = qp_table_add(t, cells);
    }
    ok = ok && qp_table_print(t, f);
    qp_table_free(t);
    return ok;
}

static void write_csv(struct qp_csv_writer *w, const struct row *rows, size_t n)
{
    static const char *const head[] = {
        "name", "dtype", "shape", "numel", "min", "max", "mean", "std",
        "absmax", "kurtosis", "outlier_ratio", "nonfinite", "q_bits",
        "q_granularity", "q_scale_min", "q_scale_max", "q_zero_point_min",
        "q_zero_point_max"};
    qp_csv_row(w, head, sizeof head / sizeof head[0]);
    for (size_t i = 0; i < n; i++) {
        const struct row *r = &rows[i];
        char shape[200];
        qp_diff_shape_field(r->desc->ndim, r->desc->shape, shape, sizeof shape);
        qp_csv_str(w, r->desc->name);
        qp_csv_str(w, qp_dtype_name(r->desc->dtype));
        qp_csv_str(w, shape);
        qp_csv_int(w, (int64_t)qp_tensor_numel(r->desc));
        qp_csv_num(w, r->s.count ? r->s.min : NAN);
        qp_csv_num(w, r->s.count ? r->s.max : NAN);
        qp_csv_num(w, r->s.count ? r->s.mean : NAN);
        qp_csv_num(w, qp_stats_std(&r->s));
        qp_csv_num(w, r->s.absmax);
        qp_csv_num(w, qp_stats_kurtosis(&r->s));
        qp_csv_num(w, qp_stats_outlier_ratio(&r->s));
        qp_csv_int(w, (int64_t)r->s.nonfinite);
        if (r->q.bits) {
            qp_csv_int(w, r->q.bits);
            qp_csv_str(w, r->q.granularity);
            qp_csv_num(w, r->q.scale_min);
            qp_csv_num(w, r->q.scale_max);
            qp_csv_int(w, r->q.zp_min);
            qp_csv_int(w, r->q.zp_max);
        } else {
            for (int k = 0; k < 6; k++)
                qp_csv_str(w, NULL);
        }
        qp_csv_end_row(w);
    }
}

/* Statistics of every tensor of d into rows[]. */
static enum qp_status collect(struct qp_dump *d, struct row *rows, bool quiet,
                              struct qp_error *err)
{
    struct qp_progress prog = qp_cli_progress(quiet);
    size_t n = qp_dump_count(d);
    for (size_t i = 0; i < n; i++) {
        qp_progress_report(&prog, "inspect", i, n);
        struct qp_tensor *t;
        enum qp_status st = qp_dump_load(d, i, &t, err);
        if (!st)
            st = qp_stats_tensor(t, &rows[i].s, err);
        rows[i].desc = qp_dump_entry(d, i);
        if (!st && t->qp && qp_dtype_is_int(t->dtype))
            qp_qparam_summarise(t, &rows[i].q);
        qp_tensor_free(t);
        if (st)
            return st;
    }
    qp_cli_progress_done();
    return QP_OK;
}

int cmd_inspect(int argc, char **argv)
{
    const char *csv = NULL, *output = NULL;
    enum qp_dump_format format = QP_DUMP_AUTO;
    bool quiet = false;
    struct qp_cli_opt opts[] = {
        QP_OPT_STR_("csv", 0, "FILE", "also write the statistics as CSV ('-' "
                    "for stdout: then only the CSV goes there)", &csv),
        QP_OPT_STR_("output", 'o', "FILE", "write the table to FILE instead of "
                    "stdout", &output),
        QP_OPT_PARSE_("format", 'f', "NAME", "container format when the path "
                      "does not tell: safetensors, npz, h5, npy, pb, onnx, "
                      "gguf, tflite, "
                      "npy-dir, pb-dir, raw-dir", &format, qp_opt_dump_format),
        QP_OPT_FLAG_("quiet", 'q', "no progress on stderr", &quiet),
        QP_OPT_END_,
    };
    int first, rc = qp_cli_parse(&cli, opts, argc, argv, &first);
    if (rc != QP_CLI_GO)
        return rc;
    struct qp_error err = {0};
    struct qp_dump *d;
    if (qp_dump_open(argv[first], format, &d, &err))
        return qp_cli_fail(&err);
    size_t n = qp_dump_count(d);
    struct row *rows = calloc(n + 1, sizeof *rows);
    enum qp_status st = rows ? collect(d, rows, quiet, &err)
                             : qp_fail(&err, QP_E_NOMEM, "out of memory");
    struct qp_csv_writer *w = NULL;
    struct qp_text_out out = {0};
    if (!st && csv && !(st = qp_csv_open(csv, &w, &err)))
        write_csv(w, rows, n);
    if (!st && !(st = qp_text_out_open(output, &out, &err)) && out.fp &&
        !print_table(rows, n, out.fp))
        st = qp_fail(&err, QP_E_IO, "'%s': write failed", output);
    if (!st && w) {
        st = qp_csv_commit(w, &err);
        w = NULL;
    }
    enum qp_status s2 = qp_text_out_close(&out, !st, &err);
    st = st ? st : s2;
    qp_csv_abort(w);
    /* stdout last: the files are complete even if the reader stops early */
    bool csv_stdout = csv && !strcmp(csv, "-"); /* then stdout is the CSV's */
    if (!st && (!output || !strcmp(output, "-")) && !csv_stdout &&
        (!print_table(rows, n, stdout) || fflush(stdout)))
        st = qp_fail(&err, QP_E_IO, "stdout: write failed");
    free(rows);
    qp_dump_close(d);
    return st ? qp_cli_fail(&err) : QP_EXIT_OK;
}
