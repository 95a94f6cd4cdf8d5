/* cli/cmd-detect.c: qprobe detect MODEL --input X --device DUMP: which
 * requantization flavor reproduces a device's integer dump
 * (analysis/detect.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/detect.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "cli/opt-types.h"
#include "cli/table.h"

static const struct qp_cli cli = {
    "detect", "MODEL --input X --device DUMP [--scheme S | --recipe R] "
              "[--calib DIR] [options]",
    "Runs the int mode in every requantization flavor (each with its "
    "runtime's activation rounding, or every rounding with --all-rounding) "
    "and says which reproduces the device's integer dump bit for bit, or "
    "comes closest.",
    "Without --scheme or --recipe the model's own quantization (QDQ / QLinear "
    "nodes) runs.\n"
    "Tensors pair by name as in 'qprobe diff' (--map for device names); each "
    "is compared\n"
    "code for code, errors counted in steps of the device tensor's scale. "
    "Candidates rank\n"
    "by bit-exact tensors, then mismatched elements. When none matches, the "
    "first tensor\n"
    "every candidate misses is named: where the device does something none of "
    "them does.",
    1, 1, "one MODEL",
};

static void print(const struct qp_detect *d, size_t top)
{
    static const char *const head[] = {"rank", "flavor", "rounding", "exact",
                                       "mismatched", "max_lsb", "first differs"};
    struct qp_table *t = qp_table_new(7, head, "rllrrrl");
    size_t shown = 0;
    for (size_t k = 0; t && k < d->ncand && shown < top; k++) {
        const struct qp_detect_cand *c = &d->cand[d->order[k]];
        char rank[24], ex[48], mm[48], lsb[32];
        snprintf(rank, sizeof rank, "%zu", k + 1);
        if (c->failed) {
            const char *cells[7] = {rank, qp_rq_flavor_name(c->flavor), "-", "-",
                                    "-", "-", c->why};
            qp_table_add(t, cells);
            shown++;
            continue;
        }
        snprintf(ex, sizeof ex, "%zu/%zu", c->exact, c->compared);
        snprintf(mm, sizeof mm, "%llu", (unsigned long long)c->mismatched);
        snprintf(lsb, sizeof lsb, "%.3g", c->max_lsb);
        const char *cells[7] = {rank, qp_rq_flavor_name(c->flavor),
                                qp_qa_flavor_name(c->qa), ex, mm, lsb,
                                c->first_diff < 0 ? "-" : d->names[c->first_diff]};
        qp_table_add(t, cells);
        shown++;
    }
    qp_table_print(t, stdout);
    qp_table_free(t);
    const struct qp_detect_cand *best = &d->cand[d->order[0]];
    if (!best->failed && best->compared && best->exact == best->compared) {
        printf("match: %s (activation rounding %s) reproduces all %zu tensors "
               "bit for bit", qp_rq_flavor_name(best->flavor),
               qp_qa_flavor_name(best->qa), best->compared);
        int ties = 0;
        for (size_t k = 1; k < d->ncand; k++) {
            const struct qp_detect_cand *c = &d->cand[d->order[k]];
            if (!c->failed && c->exact == best->exact &&
                c->mismatched == best->mismatched)
                printf("%s%s/%s", ties++ ? ", " : "; so do ",
                       qp_rq_flavor_name(c->flavor), qp_qa_flavor_name(c->qa));
        }
        printf("%s\n", ties ? " (equivalent on this model)" : "");
    } else if (d->all_miss >= 0) {
        printf("no match: every candidate differs from the device first at "
               "'%s'\n", d->names[d->all_miss]);
    } else {
        printf("no exact match; closest: %s\n", qp_rq_flavor_name(best->flavor));
    }
    if (d->skipped)
        printf("(%zu aligned pairs skipped: their shapes differ)\n", d->skipped);
}

int cmd_detect(int argc, char **argv)
{
    const char *device = NULL, *recipe_path = NULL, *calib = NULL, *map = NULL;
    struct qp_cli_list inputs = {0};
    struct qp_scheme scheme;
    bool all_qa = false, quiet = false;
    int64_t top = 12;
    struct qp_cli_opt opts[] = {
        QP_OPT_LIST_("input", 'i', "[NAME=]FILE", "the input the device ran",
                     &inputs),
        QP_OPT_STR_("device", 0, "DUMP", "the device's dump (integers with "
                    "their scales)", &device),
        QP_OPT_PARSE_("scheme", 's', "S", "the scheme the device model was "
                      "quantized with", &scheme, qp_opt_scheme),
        QP_OPT_STR_("recipe", 'r', "FILE", "a recipe instead", &recipe_path),
        QP_OPT_STR_("calib", 0, "DIR", "calibration inputs (default: the "
                    "input)", &calib),
        QP_OPT_STR_("map", 0, "FILE", "name map to the device's names (as qprobe "
                    "diff)", &map),
        QP_OPT_FLAG_("all-rounding", 0, "try every activation rounding with "
                     "every flavor", &all_qa),
        QP_OPT_INT_("top", 'n', "N", "candidates shown (default 12)", &top, 1,
                    1e6),
        QP_OPT_FLAG_("quiet", 'q', "no progress on stderr", &quiet),
        QP_OPT_END_,
    };
    qp_cli_exclusive(opts, "scheme", "recipe");
    int first, rc = qp_cli_parse(&cli, opts, argc, argv, &first);
    bool has_scheme = qp_cli_given(opts, "scheme");
    if (rc == QP_CLI_GO && (!inputs.n || !device))
        rc = qp_cli_usage(&cli, "--input and --device are required");
    if (rc != QP_CLI_GO) {
        qp_cli_list_release(&inputs);
        return rc;
    }
    struct qp_error err;
    struct qp_session *s = NULL;
    struct qp_recipe *recipe = NULL;
    struct qp_tensor **feed = NULL;
    struct qp_detect d = {0};
    enum qp_status st = qp_session_open(argv[first], NULL, &s, &err);
    if (!st && recipe_path)
        st = qp_recipe_load(recipe_path, &recipe, &err);
    if (!st && (has_scheme || recipe))
        st = qp_session_add_calib(s, calib ? calib : inputs.v[0], NULL, &err);
    if (!st)
        st = qp_session_load_inputs(s, inputs.v, (int)inputs.n, &feed, &err);
    struct qp_progress prog = qp_cli_progress(quiet);
    struct qp_detect_opts o = {has_scheme ? &scheme : NULL, recipe, map, all_qa,
                               &prog};
    if (!st)
        st = qp_detect_run(s, (const struct qp_tensor *const *)feed, device, &o,
                           &d, &err);
    qp_cli_progress_done();
    if (!st)
        print(&d, (size_t)top);
    qp_detect_release(&d);
    if (s)
        qp_session_free_inputs(s, feed);
    qp_recipe_free(recipe);
    qp_session_free(s);
    qp_cli_list_release(&inputs);
    return st ? qp_cli_fail(&err) : QP_EXIT_OK;
}
