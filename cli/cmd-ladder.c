/* cli/cmd-ladder.c: qprobe ladder DUMP... | MODEL --input X --device DUMP:
 * where along fp32 -> fake -> int -> device the error jumps
 * (analysis/ladder.h). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analysis/ladder-report.h"
#include "analysis/ladder-run.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "cli/opt-types.h"
#include "core/outfile.h"

static const struct qp_cli cli = {
    "ladder", "DUMP DUMP... [--labels L1,L2,...] [options]\n"
              "       qprobe ladder MODEL --input X --device DUMP (--scheme S | "
              "--recipe R) [--calib DIR] [options]",
    "The bisection ladder: every rung (a dump of the same input) against the "
    "first and the previous one, per tensor in model order, and the first rung "
    "and layer where the error jumps: scheme error (fp32 -> fake), kernel "
    "error (fake -> int) or device error (int -> device).",
    "A rung jumps at the first tensor whose SQNR against the previous rung "
    "falls more than\n"
    "--jump dB (default 6) below the tensor before it. Rungs align as in "
    "'qprobe diff'\n"
    "(names, --map, --layout).\n"
    "With a MODEL, qprobe builds the fp32, fake and int rungs itself on the "
    "--input, the\n"
    "--device dump is the last rung, and a second ladder teacher-forced from "
    "fp32 (every\n"
    "layer fed the reference: its own scheme and kernel error) is added "
    "unless --no-local.",
    1, QP_LADDER_MAX_RUNGS, "DUMP DUMP... or one MODEL",
};

struct args {
    const char *labels, *device, *recipe_path, *calib, *map, *csv, *plot, *dumps;
    struct qp_cli_list inputs;
    struct qp_scheme scheme;
    bool has_scheme, has_flavor, no_local, quiet;
    enum qp_rq_flavor flavor;
    double jump;
    struct qp_layout_decl layouts[QP_MAX_DIMS];
    size_t nlayouts;
};

static enum qp_status parse_layout(const char *arg, void *dest,
                                   struct qp_error *err)
{
    struct args *a = dest;
    if (a->nlayouts == QP_MAX_DIMS)
        return qp_fail(err, QP_E_INVAL, "at most %d layouts", QP_MAX_DIMS);
    enum qp_status st = qp_layout_decl_parse(arg, &a->layouts[a->nlayouts], err);
    a->nlayouts += !st;
    return st;
}

/* Splits "a,b,c" into labels[] (pointers into buf); the count. */
static size_t split_labels(char *buf, const char **labels, size_t max)
{
    size_t n = 0;
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t && n < max;
         t = strtok_r(NULL, ",", &save))
        labels[n++] = t;
    return n;
}

static double median_prev(const struct qp_ladder *l, size_t k)
{
    double *v = malloc((l->ntensors + 1) * sizeof *v);
    size_t n = 0;
    for (size_t t = 0; v && t < l->ntensors; t++) {
        const struct qp_ladder_cell *c = qp_ladder_cell(l, t, k);
        if (c->have)
            v[n++] = isnan(c->vs_prev) ? -INFINITY : c->vs_prev;
    }
    double m = NAN;
    if (n) { /* insertion sort is enough for a summary */
        for (size_t i = 1; i < n; i++)
            for (size_t j = i; j > 0 && v[j] < v[j - 1]; j--) {
                double x = v[j];
                v[j] = v[j - 1];
                v[j - 1] = x;
            }
        m = v[n / 2];
    }
    free(v);
    return m;
}

static void print_ladder(const struct qp_ladder *l, const char *title)
{
    printf("%s: ", title);
    for (size_t k = 0; k < l->nrungs; k++)
        printf("%s%s", k ? " -> " : "", l->labels[k]);
    printf(" (%zu tensors)\n", l->ntensors);
    for (size_t k = 1; k < l->nrungs; k++) {
        const struct qp_ladder_jump *j = &l->jumps[k];
        size_t exact = 0, paired = 0;
        for (size_t t = 0; t < l->ntensors; t++) {
            const struct qp_ladder_cell *c = qp_ladder_cell(l, t, k);
            paired += c->have;
            exact += c->have && isinf(c->vs_prev) && c->vs_prev > 0;
        }
        printf("  %-12s %-13s vs %s: output %.1f dB, median %.1f dB, %zu of %zu "
               "exact", l->labels[k],
               qp_ladder_step_kind(l->labels[k - 1], l->labels[k]),
               l->labels[k - 1], j->last_sqnr, median_prev(l, k), exact, paired);
        if (j->differs)
            printf("; appears at '%s'", l->names[j->first_diff]);
        if (j->found)
            printf(", jumps at '%s' (%.1f dB below the tensor before)",
                   l->names[j->tensor], j->drop);
        printf("\n");
    }
    if (l->worst_rung < 0) {
        printf("  finding: every rung is exact against the previous one\n");
        return;
    }
    size_t k = (size_t)l->worst_rung;
    const struct qp_ladder_jump *j = &l->jumps[k];
    printf("  finding: the output loses most at '%s' (%s, %.1f dB against "
           "'%s'); it appears at '%s'", l->labels[k],
           qp_ladder_step_kind(l->labels[k - 1], l->labels[k]), j->last_sqnr,
           l->labels[k - 1], l->names[j->first_diff]);
    if (j->found)
        printf(" and jumps at '%s' (%.1f dB vs '%s', %.1f dB below the tensor "
               "before)", l->names[j->tensor],
               qp_ladder_cell(l, j->tensor, k)->vs_prev, l->labels[k - 1],
               j->drop);
    printf("\n");
}

/* Computes, prints and writes one ladder (csv / plot: NULL for none). */
static enum qp_status ladder(const char *const *paths, const char *const *labels,
                             size_t n, const struct args *a, const char *title,
                             const char *csv, const char *plot, struct qp_error *err)
{
    struct qp_progress prog = qp_cli_progress(a->quiet);
    struct qp_ladder_opts o = {a->map, a->layouts, a->nlayouts, a->jump, &prog};
    struct qp_ladder l;
    struct qp_csv_writer *w = NULL;
    struct qp_plot *p = NULL;
    enum qp_status st = qp_ladder_compute(paths, labels, n, &o, &l, err);
    qp_cli_progress_done();
    if (!st && csv && !(st = qp_csv_open(csv, &w, err)))
        qp_ladder_write_csv(w, &l);
    if (!st && plot)
        st = qp_ladder_plot(plot, title, &l, &p, err);
    if (!st && w) {
        st = qp_csv_commit(w, err);
        w = NULL;
    }
    if (!st && p) {
        st = qp_plot_commit(p, err);
        p = NULL;
    }
    if (!st && !(csv && !strcmp(csv, "-")))
        print_ladder(&l, title);
    qp_csv_abort(w);
    qp_plot_abort(p);
    qp_ladder_release(&l);
    return st;
}

/* "out.csv" -> "out-local.csv" for the second ladder. */
static char *local_name(const char *path)
{
    if (!path)
        return NULL;
    const char *dot = strrchr(path, '.'), *slash = strrchr(path, '/');
    size_t cut = dot && (!slash || dot > slash) ? (size_t)(dot - path) : strlen(path);
    char *s = malloc(strlen(path) + 8);
    if (s)
        snprintf(s, strlen(path) + 8, "%.*s-local%s", (int)cut, path, path + cut);
    return s;
}

static int run_model(const struct args *a, const char *model)
{
    struct qp_error err;
    struct qp_session *s = NULL;
    struct qp_recipe *recipe = NULL;
    char *paths[5] = {0}, tmpdir[] = "/tmp/qprobe-ladder-XXXXXX";
    size_t n = 0;
    const char *dir = a->dumps;
    enum qp_status st = QP_OK;
    if (dir && mkdir(dir, 0777) && errno != EEXIST)
        st = qp_fail(&err, QP_E_IO, "'%s': %s", dir, strerror(errno));
    if (!st && !dir && !(dir = mkdtemp(tmpdir)))
        st = qp_fail(&err, QP_E_IO, "cannot create a temporary folder: %s",
                     strerror(errno));
    if (!st && a->recipe_path)
        st = qp_recipe_load(a->recipe_path, &recipe, &err);
    if (!st)
        /* an int8 .tflite: its dequantized float model (the reference) */
        st = qp_session_open(model, &(struct qp_session_opts){.dequantize = true},
                             &s, &err);
    if (!st && a->calib)
        st = qp_session_add_calib(s, a->calib, NULL, &err);
    if (!st && !a->calib) {
        qp_cli_warn("no --calib: activation ranges come from the input itself");
        st = qp_session_add_calib(s, a->inputs.v[0], NULL, &err);
    }
    struct qp_ladder_build b = {a->inputs.v, a->inputs.n,
                                a->has_scheme ? &a->scheme : NULL, recipe,
                                a->flavor, a->has_flavor, !a->no_local, dir};
    if (!st)
        st = qp_ladder_make_rungs(s, &b, paths, &n, &err);
    const char *acc[4] = {paths[0], paths[1], paths[2], a->device};
    const char *acc_l[4] = {"fp32", "fake", "int", "device"};
    if (!st)
        st = ladder(acc, acc_l, 4, a, "ladder", a->csv, a->plot, &err);
    if (!st && n == 5) {
        const char *loc[3] = {paths[0], paths[3], paths[4]};
        const char *loc_l[3] = {"fp32", "fake-local", "int-local"};
        char *lcsv = local_name(a->csv && strcmp(a->csv, "-") ? a->csv : NULL);
        char *lplot = local_name(a->plot);
        printf("\n");
        st = ladder(loc, loc_l, 3, a, "local ladder (every layer fed fp32)", lcsv,
                    lplot, &err);
        free(lcsv);
        free(lplot);
    }
    for (size_t k = 0; k < n; k++)
        free(paths[k]);
    if (!a->dumps && dir)
        qp_rmtree(dir);
    qp_recipe_free(recipe);
    qp_session_free(s);
    return st ? qp_cli_fail(&err) : QP_EXIT_OK;
}

int cmd_ladder(int argc, char **argv)
{
    struct args a = {.jump = 6};
    struct qp_cli_opt opts[] = {
        QP_OPT_STR_("labels", 'l', "L1,L2,...", "rung labels (default rung0, "
                    "rung1, ...); fp32/fake/int/device name the steps",
                    &a.labels),
        QP_OPT_NUM_("jump", 0, "DB", "an SQNR drop that counts as a jump "
                    "(default 6)", &a.jump, 0, 1e6),
        QP_OPT_STR_("map", 0, "FILE", "name map between rungs (as qprobe diff)",
                    &a.map),
        QP_OPT_PARSE_("layout", 0, "REF:TEST", "declare layouts (as qprobe diff)",
                      &a, parse_layout),
        QP_OPT_STR_("csv", 0, "FILE", "per-tensor CSV ('-': stdout)", &a.csv),
        QP_OPT_PARSE_("plot", 0, "FILE", "SQNR across depth per rung (.png or "
                      ".svg)", &a.plot, qp_opt_plot),
        QP_OPT_LIST_("input", 'i', "[NAME=]FILE", "with a MODEL: the input the "
                     "rungs run on", &a.inputs),
        QP_OPT_STR_("device", 0, "DUMP", "with a MODEL: the device's dump of "
                    "that input (the last rung)", &a.device),
        QP_OPT_PARSE_("scheme", 's', "S", "with a MODEL: the scheme of the fake "
                      "and int rungs", &a.scheme, qp_opt_scheme),
        QP_OPT_STR_("recipe", 'r', "FILE", "with a MODEL: a recipe instead",
                    &a.recipe_path),
        QP_OPT_STR_("calib", 0, "DIR", "with a MODEL: calibration inputs "
                    "(default: the input)", &a.calib),
        QP_OPT_PARSE_("requant", 0, "FLAVOR", "with a MODEL: the int rung's "
                      "flavor (default tflite)", &a.flavor, qp_opt_flavor),
        QP_OPT_FLAG_("no-local", 0, "with a MODEL: no teacher-forced ladder",
                     &a.no_local),
        QP_OPT_STR_("dumps", 0, "DIR", "with a MODEL: keep the rungs' dumps in "
                    "DIR", &a.dumps),
        QP_OPT_FLAG_("quiet", 'q', "no progress on stderr", &a.quiet),
        QP_OPT_END_,
    };
    qp_cli_exclusive(opts, "scheme", "recipe");
    int first, rc = qp_cli_parse(&cli, opts, argc, argv, &first);
    a.has_scheme = qp_cli_given(opts, "scheme");
    a.has_flavor = qp_cli_given(opts, "requant");
    int nops = argc - first;
    if (rc == QP_CLI_GO && a.device) {
        if (nops != 1)
            rc = qp_cli_usage(&cli, "with --device, give one MODEL");
        else if (!a.inputs.n)
            rc = qp_cli_usage(&cli, "with --device, --input is required");
        else if (!a.has_scheme && !a.recipe_path)
            rc = qp_cli_usage(&cli, "with --device, give --scheme or --recipe");
        else
            rc = run_model(&a, argv[first]);
    } else if (rc == QP_CLI_GO) {
        char *buf = a.labels ? strdup(a.labels) : NULL;
        const char *labels[QP_LADDER_MAX_RUNGS + 1];
        size_t nl = buf ? split_labels(buf, labels, QP_LADDER_MAX_RUNGS + 1) : 0;
        if (nops < 2)
            rc = qp_cli_usage(&cli, "give two or more DUMPs (or a MODEL with "
                              "--device)");
        else if (a.inputs.n || a.has_scheme || a.recipe_path || a.calib)
            rc = qp_cli_usage(&cli, "--input, --scheme, --recipe and --calib go "
                              "with a MODEL and --device");
        else if (buf && nl != (size_t)nops)
            rc = qp_cli_usage(&cli, "%zu labels for %d dumps", nl, nops);
        else {
            struct qp_error err;
            rc = ladder((const char *const *)argv + first, buf ? labels : NULL,
                        (size_t)nops, &a, "ladder", a.csv, a.plot, &err)
                     ? qp_cli_fail(&err) : QP_EXIT_OK;
        }
        free(buf);
    }
    qp_cli_list_release(&a.inputs);
    return rc;
}
