/* cli/cmd-sensitivity.c: qprobe sensitivity MODEL --calib X --scheme S:
 * one-in / one-out sensitivity per layer, with a hint and its evidence
 * (analysis/sensitivity.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/sens-report.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "cli/opt-types.h"
#include "cli/table.h"
#include "model/inputs.h"
#include "model/session.h"

static const struct qp_cli cli = {
    "sensitivity", "MODEL --calib DIR --scheme S [--eval DIR] [options]",
    "Quantizes one layer at a time (one-in) and all layers but one (one-out), "
    "weights, activations and both, and ranks the layers by the damage done "
    "to the model's output, with a hint and its evidence for each.",
    "A unit is a weighted layer (its weight and its output activation) or any "
    "other operator\n"
    "whose output is a quantized activation of its own (Softmax, Add, ...); "
    "--group merges\n"
    "units under a glob (e.g. 'model.layers.*.mlp': one group per layer's "
    "MLP).\n"
    "Damage: SQNR of the output against fp32 over the --eval inputs (default: "
    "the --calib\n"
    "ones), with KL and top-1 for outputs of classes. The fp32 values of each "
    "input are kept,\n"
    "so each one-in run recomputes only what depends on its unit; the cost is "
    "printed in\n"
    "forward-pass equivalents.\n"
    "Hints: error inherited from earlier layers (local vs accumulated SQNR of "
    "the unit's\n"
    "output), activation clipping (share of calibration values outside the "
    "range), weight\n"
    "outliers (kurtosis, share beyond 6 sigma), per-channel range spread under "
    "a per-tensor\n"
    "scheme.",
    1, 1, "one MODEL",
};

static const char *const method_names[] = {"in", "out", "both", NULL};

static enum qp_status parse_parts(const char *arg, void *dest,
                                  struct qp_error *err)
{
    unsigned *parts = dest, p = 0;
    char buf[64];
    snprintf(buf, sizeof buf, "%s", arg);
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t;
         t = strtok_r(NULL, ",", &save)) {
        if (!strcmp(t, "w"))
            p |= 1u << QP_SP_W;
        else if (!strcmp(t, "a"))
            p |= 1u << QP_SP_A;
        else if (!strcmp(t, "wa"))
            p |= 1u << QP_SP_WA;
        else
            return qp_fail(err, QP_E_INVAL, "'%s': parts are w, a and wa, "
                           "joined by ','", arg);
    }
    if (!p)
        return qp_fail(err, QP_E_INVAL, "no part given");
    *parts = p;
    return QP_OK;
}

static void fmt(char *buf, size_t n, bool have, double v, const char *f)
{
    if (have)
        qp_table_num(v, f, buf, n);
    else
        snprintf(buf, n, "-");
}

static void print_table(const struct qp_sens_result *res, const size_t *order,
                        size_t top, const char *scheme)
{
    static const char *const head[] = {"rank", "unit", "in:w", "in:a", "in:wa",
                                       "out:wa", "hint"};
    struct qp_table *t = qp_table_new(7, head, "rlrrrrl");
    size_t n = top && top < res->units.n ? top : res->units.n;
    for (size_t k = 0; t && k < n; k++) {
        const struct qp_sens_row *r = &res->rows[order[k]];
        char rank[24], c[4][32];
        snprintf(rank, sizeof rank, "%zu", k + 1);
        fmt(c[0], 32, r->in[QP_SP_W].done, r->in[QP_SP_W].sqnr, "%.2f");
        fmt(c[1], 32, r->in[QP_SP_A].done, r->in[QP_SP_A].sqnr, "%.2f");
        fmt(c[2], 32, r->in[QP_SP_WA].done, r->in[QP_SP_WA].sqnr, "%.2f");
        fmt(c[3], 32, r->out[QP_SP_WA].done, r->out[QP_SP_WA].sqnr, "%.2f");
        char hint[104];
        size_t hl = strlen(r->hint);
        memcpy(hint, r->hint, hl < sizeof hint ? hl + 1 : sizeof hint);
        if (hl >= sizeof hint)
            memcpy(hint + sizeof hint - 4, "...", 4);
        const char *cells[7] = {rank, res->units.u[order[k]].name, c[0], c[1],
                                c[2], c[3], hint};
        qp_table_add(t, cells);
    }
    printf("sensitivity under %s: output SQNR (dB) vs fp32 with only the unit "
           "quantized (in) or all but it (out); all quantized: %.2f dB\n",
           scheme, res->all.sqnr);
    qp_table_print(t, stdout);
    if (n < res->units.n)
        printf("(%zu more; --top 0 shows all, --csv writes all)\n",
               res->units.n - n);
    printf("cost: %.1f forward-pass equivalents in %zu runs, %.1f s\n",
           res->passes, res->runs, res->seconds);
    qp_table_free(t);
}

struct args {
    const char *calib, *eval, *csv, *plot, *output;
    struct qp_scheme scheme;
    enum qp_run_mode mode;
    enum qp_rq_flavor flavor;
    bool has_flavor, quiet;
    int method;
    unsigned parts;
    int64_t top;
    struct qp_cli_list groups;
};

static int output_index(const struct qp_graph *g, const char *name)
{
    for (int k = 0; name && k < g->n_outputs; k++)
        if (!strcmp(g->values[g->outputs[k]].name, name))
            return k;
    return name ? -1 : 0;
}

static int run(const struct args *a, const char *model)
{
    struct qp_error err;
    struct qp_session *s = NULL;
    struct qp_input_sets eval = {0};
    struct qp_sens_result res = {0};
    size_t *order = NULL;
    struct qp_csv_writer *csv = NULL;
    struct qp_plot *plot = NULL;
    enum qp_status st = qp_session_open_analysis(
        model, a->calib, a->eval ? a->eval : a->calib, &s, &eval, &err);
    const struct qp_graph *g = s ? qp_session_graph(s) : NULL;
    int out = g ? output_index(g, a->output) : 0;
    if (!st && out < 0)
        st = qp_fail(&err, QP_E_NOTFOUND, "'%s': no graph output named '%s'",
                     model, a->output);
    struct qp_progress prog = qp_cli_progress(a->quiet);
    struct qp_sens_opts o = {
        a->mode, &a->scheme, a->flavor, a->has_flavor, a->groups.v, a->groups.n,
        a->method == 0 ? QP_SENS_IN : a->method == 1 ? QP_SENS_OUT
                                                     : QP_SENS_IN | QP_SENS_OUT,
        a->parts, out, &prog};
    if (!st)
        st = qp_sensitivity(s, eval.set, eval.n, &o, &res, &err);
    qp_cli_progress_done();
    if (!st)
        st = qp_sens_order(&res, &order, &err);
    char scheme[QP_SCHEME_MAX + 1];
    qp_scheme_format(&a->scheme, scheme, sizeof scheme);
    if (!st && a->csv && !(st = qp_csv_open(a->csv, &csv, &err)))
        qp_sens_write_csv(csv, &res, order);
    if (!st && a->plot) {
        char title[600];
        snprintf(title, sizeof title, "sensitivity (%s, one-in): %s", scheme, model);
        st = qp_sens_plot(a->plot, title, &res, order, 40, &plot, &err);
    }
    if (!st && csv) {
        st = qp_csv_commit(csv, &err);
        csv = NULL;
    }
    if (!st && plot) {
        st = qp_plot_commit(plot, &err);
        plot = NULL;
    }
    if (!st && !(a->csv && !strcmp(a->csv, "-")))
        print_table(&res, order, (size_t)a->top, scheme);
    qp_csv_abort(csv);
    qp_plot_abort(plot);
    free(order);
    qp_sens_release(&res);
    qp_input_sets_release(g, &eval);
    qp_session_free(s);
    return st ? qp_cli_fail(&err) : QP_EXIT_OK;
}

int cmd_sensitivity(int argc, char **argv)
{
    struct args a = {.mode = QP_MODE_FAKE, .method = 2,
                     .parts = 1u << QP_SP_W | 1u << QP_SP_A | 1u << QP_SP_WA,
                     .top = 20};
    struct qp_cli_opt opts[] = {
        QP_OPT_STR_("calib", 0, "DIR", "calibration inputs (every .npy/.pb file "
                    "of DIR, or one file): the activation ranges", &a.calib),
        QP_OPT_STR_("eval", 0, "DIR", "evaluation inputs the damage is measured "
                    "on (default: the calibration inputs)", &a.eval),
        QP_OPT_PARSE_("scheme", 's', "S", "the base scheme, e.g. w8c+a8t",
                      &a.scheme, qp_opt_scheme),
        QP_OPT_PARSE_("mode", 'm', "MODE", "fake (default) or int", &a.mode,
                      qp_opt_mode),
        QP_OPT_PARSE_("requant", 0, "FLAVOR", "requantization flavor (default "
                      "tflite)", &a.flavor, qp_opt_flavor),
        QP_OPT_LIST_("group", 0, "GLOB", "merge the units under GLOB into one "
                     "group per match (repeatable)", &a.groups),
        QP_OPT_CHOICE_("method", 0, "M", "in (one-in), out (one-out) or both "
                       "(default)", &a.method, method_names),
        QP_OPT_PARSE_("parts", 0, "P", "w, a, wa or a list of them (default "
                      "w,a,wa)", &a.parts, parse_parts),
        QP_OPT_STR_("output", 0, "NAME", "the graph output scored (default the "
                    "first)", &a.output),
        QP_OPT_STR_("csv", 0, "FILE", "write every unit as CSV ('-': stdout)",
                    &a.csv),
        QP_OPT_PARSE_("plot", 0, "FILE", "bar chart of the 40 most sensitive "
                      "units (.png or .svg)", &a.plot, qp_opt_plot),
        QP_OPT_INT_("top", 'n', "N", "rows of the terminal table (default 20, 0: "
                    "all)", &a.top, 0, 1e15),
        QP_OPT_FLAG_("quiet", 'q', "no progress on stderr", &a.quiet),
        QP_OPT_END_,
    };
    int first, rc = qp_cli_parse(&cli, opts, argc, argv, &first);
    a.has_flavor = qp_cli_given(opts, "requant");
    if (rc == QP_CLI_GO && !a.calib)
        rc = qp_cli_usage(&cli, "--calib is required");
    else if (rc == QP_CLI_GO && !qp_cli_given(opts, "scheme"))
        rc = qp_cli_usage(&cli, "--scheme is required");
    else if (rc == QP_CLI_GO && a.mode == QP_MODE_FP32)
        rc = qp_cli_usage(&cli, "--mode must be fake or int");
    if (rc == QP_CLI_GO)
        rc = run(&a, argv[first]);
    qp_cli_list_release(&a.groups);
    return rc;
}
