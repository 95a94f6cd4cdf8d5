/* cli/cmd-diff.c: qprobe diff REF TEST: per-tensor error metrics between
 * two dumps, worst first (DESIGN.md §4). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/diff-dumps.h"
#include "analysis/diff-report.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "cli/table.h"

static const struct qp_cli cli = {
    "diff", "REF TEST [options]",
    "Per-tensor error metrics between a reference dump and a test dump "
    "(e.g. host vs device), worst first. A dump is a .h5, .safetensors, .npz, "
    ".npy or .pb file, or a directory of .npy, .pb or .raw+.json files; "
    "integer tensors are dequantized with their scale / zero point first.",
    "Alignment: names pair by --map explicit pairs, then exactly, then "
    "normalised (case,\n"
    "separators and suffixes such as ':0' and '_output_0' ignored), then by "
    "--map rules.\n"
    "It is summarised on stderr (-v: every pair) and written by --align-report."
    "\n"
    "Map file: {\"pairs\": {\"REF\": \"TEST\"}, \"rules\": [{\"test\": \"REGEX\", "
    "\"ref\": \"TEMPLATE\"}]}\n"
    "  a test name the POSIX extended REGEX matches whole pairs with the "
    "reference named\n"
    "  by TEMPLATE (\\1..\\9: groups); e.g. {\"test\": \"^b([0-9]+)_c([0-9]+)$\", "
    "\"ref\": \"block\\\\1.conv\\\\2\"}.\n"
    "Shapes must match after --layout conversion (a tensor's own layout tag, "
    "from a sidecar,\n"
    "overrides the declared one); other pairs are refused, never compared "
    "flattened.\n"
    "Metrics, in double over the pairs where both values are finite:\n"
    "  sqnr_db = 10 log10(sum ref^2 / sum (ref-test)^2), inf when the error is "
    "0\n"
    "  cosine = sum ref*test / (|ref| |test|), 1 when both are 0; mae = mean "
    "|ref-test|;\n"
    "  max_abs = max |ref-test|; rel_l2 = |ref-test| / |ref|; ref_absmax = max "
    "|ref|;\n"
    "  nonfinite = NaN/Inf in the test tensor (such tensors rank first).\n"
    "  Logits (--logits): kl = mean over rows of KL(softmax(ref) || "
    "softmax(test)),\n"
    "  top1 = share of rows whose argmax agrees (rows with NaN/Inf: left out of "
    "kl,\n"
    "  disagreeing in top1).\n"
    "CSV columns: rank,name,shape,numel,sqnr_db,cosine,mae,max_abs,rel_l2,"
    "ref_absmax,\n"
    "nonfinite,kl,top1,test_name,mae_lsb,max_lsb,rmse_lsb,mismatches,order "
    "(shape as\n1x8x4x4; kl, top1 empty for non-logits; the four LSB columns, "
    "for an integer test\ntensor, count the error in steps of its own scale, "
    "mismatches the codes that differ;\norder: the place in the reference's "
    "order).\n"
    "Exit codes: 0 ok, 1 failure, 2 usage error, 3 a --fail-if condition was "
    "met.",
    2, 2, "REF and TEST",
};

struct args {
    const char *map, *csv, *plot, *align, *output;
    struct qp_layout_decl layouts[QP_MAX_DIMS];
    size_t nlayouts;
    struct qp_cli_list logits;
    struct qp_diff_cond *conds;
    size_t nconds;
    enum qp_diff_metric sort;
    int64_t top, mark;
    bool strict, verbose, quiet;
};

static enum qp_status parse_layout(const char *arg, void *dest,
                                   struct qp_error *err)
{
    struct args *a = dest;
    if (a->nlayouts == QP_MAX_DIMS)
        return qp_fail(err, QP_E_INVAL, "at most %d layouts", QP_MAX_DIMS);
    enum qp_status st = qp_layout_decl_parse(arg, &a->layouts[a->nlayouts], err);
    if (!st)
        a->nlayouts++;
    return st;
}

static enum qp_status parse_fail_if(const char *arg, void *dest,
                                    struct qp_error *err)
{
    struct args *a = dest;
    return qp_diff_conds_add(arg, &a->conds, &a->nconds, err);
}

static enum qp_status parse_sort(const char *arg, void *dest,
                                 struct qp_error *err)
{
    if (!qp_diff_metric_from_name(arg, dest))
        return qp_fail(err, QP_E_INVAL, "unknown metric '%s'", arg);
    return QP_OK;
}

static enum qp_status parse_plot(const char *arg, void *dest,
                                 struct qp_error *err)
{
    if (!qp_plot_path_ok(arg))
        return qp_fail(err, QP_E_INVAL, "'%s' must end in .png or .svg", arg);
    *(const char **)dest = arg;
    return QP_OK;
}

/* ---- alignment on stderr ------------------------------------------------------- */

struct align_print {
    bool verbose;
    size_t counts[QP_ALIGN_HOW_COUNT];
};

static void print_entry(void *ctx, const struct qp_align_entry *e)
{
    const struct align_print *p = ctx;
    if (!strcmp(e->how, "exact") && !p->verbose && !e->detail[0])
        return;
    if (e->ref && e->test)
        fprintf(stderr, "  %-10s  %s <- %s%s%s\n", e->how, e->ref, e->test,
                e->detail[0] ? ": " : "", e->detail);
    else
        fprintf(stderr, "  %-10s  %s\n", e->how,
                e->ref ? e->ref : e->test ? e->test : e->detail);
}

static enum qp_status print_alignment(const struct qp_dump *ref,
                                      const struct qp_dump *test,
                                      const struct qp_align *al,
                                      const struct qp_diff *d, bool verbose,
                                      struct qp_error *err)
{
    struct align_print p = {verbose, {0}};
    for (size_t i = 0; i < al->npairs; i++)
        p.counts[al->pairs[i].how]++;
    fflush(stdout);
    fprintf(stderr, "alignment: %zu pairs (", al->npairs);
    for (int h = 0, first = 1; h < QP_ALIGN_HOW_COUNT; h++)
        if (p.counts[h]) {
            fprintf(stderr, "%s%zu %s", first ? "" : ", ", p.counts[h],
                    qp_align_how_name((enum qp_align_how)h));
            first = 0;
        }
    fprintf(stderr, "), %zu refused; %zu only in '%s', %zu only in '%s'\n",
            d->nrefused, al->nref_only, ref->path, al->ntest_only, test->path);
    return qp_diff_align_entries(ref, test, al, d, print_entry, &p, err);
}

/* ---- results --------------------------------------------------------------------- */

static bool print_table(const struct qp_diff *d, const struct args *a,
                        const char *ref, const char *test, FILE *f)
{
    bool logits = false;
    for (size_t i = 0; i < d->nrows; i++)
        logits = logits || d->rows[i].logits;
    static const char *const head[] = {"rank", "name", "shape", "sqnr_db",
                                       "cosine", "mae", "max_abs", "rel_l2",
                                       "nonfinite", "kl", "top1"};
    size_t ncols = logits ? 11 : 9;
    struct qp_table *t = qp_table_new(ncols, head, "rllrrrrrrrr");
    size_t n = a->top && (size_t)a->top < d->nrows ? (size_t)a->top : d->nrows;
    bool ok = t != NULL;
    for (size_t i = 0; ok && i < n; i++) {
        const struct qp_diff_row *r = &d->rows[i];
        static const char *const fmt[] = {"%.2f", "%.6f", "%.4g", "%.4g", "%.4g"};
        char rank[24], shape[200], c[5][32], nf[24], kl[32] = "", top1[32] = "";
        snprintf(rank, sizeof rank, "%zu", i + 1);
        qp_shape_str(r->ndim, r->shape, shape, sizeof shape);
        for (int k = 0; k < 5; k++)
            qp_table_num(qp_diff_value(r, (enum qp_diff_metric)(QP_DM_SQNR + k)),
                         fmt[k], c[k], sizeof c[k]);
        snprintf(nf, sizeof nf, "%llu", (unsigned long long)r->m.nonfinite);
        if (r->logits) {
            qp_table_num(r->kl, "%.4g", kl, sizeof kl);
            qp_table_num(r->top1, "%.4f", top1, sizeof top1);
        }
        const char *cells[11] = {rank, r->name, shape, c[0], c[1], c[2], c[3],
                                 c[4], nf, kl, top1};
        ok = qp_table_add(t, cells);
    }
    fprintf(f, "%s vs %s: %zu tensors compared, worst first by %s\n", ref, test,
            d->nrows, qp_diff_metric_name(a->sort));
    ok = ok && qp_table_print(t, f);
    if (ok && n < d->nrows)
        fprintf(f, "(%zu more; --top 0 shows all, --csv writes all)\n",
                d->nrows - n);
    qp_table_free(t);
    return ok && !ferror(f);
}

/* Renders and writes every requested output; all appear or none. */
static enum qp_status write_outputs(const struct args *a, struct qp_dump *ref,
                                    struct qp_dump *test, const struct qp_align *al,
                                    const struct qp_diff *d, struct qp_error *err)
{
    struct qp_plot *plot = NULL;
    struct qp_csv_writer *csv = NULL, *align = NULL;
    struct qp_text_out out = {0};
    enum qp_status st = QP_OK;
    if (a->plot) {
        char title[512];
        snprintf(title, sizeof title, "SQNR per tensor: %s vs %s", ref->path,
                 test->path);
        st = qp_diff_plot(a->plot, title, d, (size_t)a->mark, &plot, err);
    }
    if (!st && a->csv && !(st = qp_csv_open(a->csv, &csv, err)))
        qp_diff_write_csv(csv, d);
    if (!st && a->align && !(st = qp_csv_open(a->align, &align, err)))
        st = qp_diff_write_align(align, ref, test, al, d, err);
    if (!st && !(st = qp_text_out_open(a->output, &out, err)) && out.fp &&
        !print_table(d, a, ref->path, test->path, out.fp))
        st = qp_fail(err, QP_E_IO, "'%s': write failed", a->output);
    if (!st && plot) {
        st = qp_plot_commit(plot, err);
        plot = NULL;
    }
    if (!st && csv) {
        st = qp_csv_commit(csv, err);
        csv = NULL;
    }
    if (!st && align) {
        st = qp_csv_commit(align, err);
        align = NULL;
    }
    enum qp_status s2 = qp_text_out_close(&out, !st, err);
    st = st ? st : s2;
    qp_plot_abort(plot);
    qp_csv_abort(csv);
    qp_csv_abort(align);
    /* stdout last: the files are complete even if the reader stops early */
    bool csv_stdout = a->csv && !strcmp(a->csv, "-"); /* stdout is the CSV's */
    if (!st && (!a->output || !strcmp(a->output, "-")) && !csv_stdout &&
        (!print_table(d, a, ref->path, test->path, stdout) || fflush(stdout)))
        st = qp_fail(err, QP_E_IO, "stdout: write failed");
    return st;
}

/* Lists the tensors meeting each --fail-if condition; true if any did. */
static bool check_conds(const struct args *a, const struct qp_diff *d)
{
    bool crossed = false;
    for (size_t c = 0; c < a->nconds; c++) {
        const struct qp_diff_cond *cond = &a->conds[c];
        size_t hits = 0;
        for (size_t i = 0; i < d->nrows; i++) {
            if (!qp_diff_cond_hit(cond, &d->rows[i]))
                continue;
            if (hits++ < 20) {
                char v[32];
                qp_table_num(qp_diff_value(&d->rows[i], cond->metric), "%.6g", v,
                             sizeof v);
                fprintf(stderr, "qprobe: threshold crossed: %s: '%s' (%s = %s)\n",
                        cond->text, d->rows[i].name,
                        qp_diff_metric_name(cond->metric), v);
            }
        }
        if (hits > 20)
            fprintf(stderr, "qprobe: threshold crossed: %s: %zu more tensors\n",
                    cond->text, hits - 20);
        crossed = crossed || hits;
    }
    return crossed;
}

/* ---- the command --------------------------------------------------------------------- */

static void print_warnings(const struct qp_diff *d)
{
    for (size_t i = 0; i < d->nrows; i++)
        if (d->rows[i].warning[0])
            qp_cli_warn("'%s': %s", d->rows[i].name, d->rows[i].warning);
}

static int run(struct args *a, const char *ref_path, const char *test_path)
{
    struct qp_error err = {0};
    struct qp_diff_dumps dd;
    static const char *const default_logits[] = {"*logits*"};
    struct qp_progress prog = qp_cli_progress(a->quiet);
    struct qp_diff_opts o = {
        .layouts = a->layouts, .nlayouts = a->nlayouts,
        .logits_globs = a->logits.n ? a->logits.v : default_logits,
        .nlogits = a->logits.n ? a->logits.n : 1, .progress = &prog,
        .strict = a->strict};
    enum qp_status st = qp_diff_dumps_open(ref_path, test_path, a->map, &o, &dd,
                                           &err);
    /* the alignment (with the refusals, known from the listings) is shown
     * before the long part starts */
    if (!st && !a->quiet)
        st = print_alignment(dd.ref, dd.test, &dd.al, &dd.d, a->verbose, &err);
    if (!st)
        print_warnings(&dd.d);
    if (!st && dd.problem) {
        for (size_t i = 0; i < dd.d.nrefused && i < 10; i++)
            qp_cli_error("'%s' <- '%s': %s", dd.d.refused[i].ref_name,
                         dd.d.refused[i].test_name, dd.d.refused[i].reason);
        st = qp_fail(&err, QP_E_NOTFOUND, "'%s' vs '%s': %s", ref_path, test_path,
                     dd.problem);
    }
    if (!st)
        st = qp_diff_dumps_compute(&dd, &prog, &err);
    qp_cli_progress_done();
    if (!st) {
        qp_diff_sort(&dd.d, a->sort);
        st = write_outputs(a, dd.ref, dd.test, &dd.al, &dd.d, &err);
    }
    int rc = st ? qp_cli_fail(&err)
                : check_conds(a, &dd.d) ? QP_EXIT_THRESHOLD : QP_EXIT_OK;
    qp_diff_dumps_release(&dd);
    return rc;
}

int cmd_diff(int argc, char **argv)
{
    struct args a = {.sort = QP_DM_SQNR, .top = 20, .mark = 5};
    struct qp_cli_opt opts[] = {
        QP_OPT_STR_("map", 0, "FILE", "name map (JSON: explicit pairs and regex "
                    "rules; see below)", &a.map),
        QP_OPT_PARSE_("layout", 0, "REF:TEST", "declare layouts, e.g. "
                      "NCHW:NHWC; the test tensor is permuted into the "
                      "reference's (repeatable, one per rank)", &a,
                      parse_layout),
        QP_OPT_LIST_("logits", 0, "GLOB", "reference names treated as logits "
                     "(kl, top1 over the last axis); repeatable; default "
                     "'*logits*'", &a.logits),
        QP_OPT_PARSE_("sort", 0, "METRIC", "rank by sqnr_db (default), cosine, "
                      "mae, max_abs, rel_l2, ref_absmax, nonfinite, numel, kl, "
                      "top1 or order", &a.sort, parse_sort),
        QP_OPT_INT_("top", 'n', "N", "rows of the terminal table (default 20, "
                    "0: all)", &a.top, 0, 1e15),
        QP_OPT_STR_("csv", 0, "FILE", "write every row as CSV ('-' for stdout: "
                    "then only the CSV goes there)", &a.csv),
        QP_OPT_PARSE_("plot", 0, "FILE", "SQNR per tensor in dump order, "
                      "FILE.png or FILE.svg (gnuplot; the .gp and .dat are "
                      "kept beside it)", &a.plot, parse_plot),
        QP_OPT_INT_("mark", 0, "N", "worst tensors marked on the plot (default "
                    "5)", &a.mark, 0, 1e15),
        QP_OPT_STR_("align-report", 0, "FILE", "write the alignment (pairs, "
                    "how, unpaired names) as CSV", &a.align),
        QP_OPT_PARSE_("fail-if", 0, "COND", "exit 3 when a tensor meets COND, "
                      "e.g. 'sqnr_db<25'; repeatable, or several joined by ','",
                      &a, parse_fail_if),
        QP_OPT_FLAG_("strict", 0, "fail (exit 1) when a tensor is unpaired, a "
                     "pair is refused, a map entry names no tensor, or a layout "
                     "is known on one side only", &a.strict),
        QP_OPT_STR_("output", 'o', "FILE", "write the table to FILE instead of "
                    "stdout", &a.output),
        QP_OPT_FLAG_("verbose", 'v', "list every pair of the alignment, exact "
                     "ones too", &a.verbose),
        QP_OPT_FLAG_("quiet", 'q', "no alignment summary and no progress on "
                     "stderr", &a.quiet),
        QP_OPT_END_,
    };
    int first, rc = qp_cli_parse(&cli, opts, argc, argv, &first);
    if (rc == QP_CLI_GO)
        rc = run(&a, argv[first], argv[first + 1]);
    qp_cli_list_release(&a.logits);
    free(a.conds);
    return rc;
}
