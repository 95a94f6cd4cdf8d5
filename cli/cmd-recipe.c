/* cli/cmd-recipe.c: qprobe recipe MODEL --calib X --eval Y --base S
 * --promote S2[,S3] (--target-sqnr DB | --target-kl K | --target-ppl-delta P
 *  | --budget-bytes N)
 * -o R.json: a mixed-precision recipe found by measurement
 * (analysis/recipe-search.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/recipe-report.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "cli/opt-types.h"
#include "formats/json.h"
#include "model/inputs.h"
#include "model/session.h"

static const struct qp_cli cli = {
    "recipe", "MODEL --calib DIR --eval DIR --base S --promote S2[,S3...] "
              "(--target-sqnr DB | --target-kl K | --target-ppl-delta P | "
              "--budget-bytes N) -o R.json "
              "[options]",
    "Searches a mixed-precision recipe: from the uniform --base, promotes one "
    "layer or activation at a time through the --promote list, measuring the "
    "whole model after each step, until the target is met on the calibration "
    "inputs; then validates it on the --eval inputs it never saw.",
    "Greedy (default): candidates ranked by the quality each adds on its own "
    "per extra byte of\n"
    "weights (free promotions such as activation bits by their gain), re-ranked "
    "when a\n"
    "promotion's measured gain departs from the prediction. --method binary: "
    "AIMET AMP's\n"
    "variant, the shortest prefix of the ranked list meeting the target, by "
    "bisection.\n"
    "Promotion levels are schemes (w8c+a16t: weights and output; w8c: weights "
    "only; a16t\n"
    "is not a level) or fp32. --keep GLOB: never quantized; --pin GLOB=S: fixed "
    "at S.\n"
    "Priced in weight bytes (data, scales, zero points) and BitOps (MACs x "
    "weight bits x\n"
    "input activation bits). The recipe JSON (read by quantize, run, eval) "
    "carries a\n"
    "'derived' block with the target and what was reached on each set.",
    1, 1, "one MODEL",
};

static const char *const method_names[] = {"greedy", "binary", NULL};

static enum qp_status parse_level(const char *s, struct qp_level *l,
                                  struct qp_error *err)
{
    *l = (struct qp_level){0};
    if (!strcmp(s, "fp32")) {
        l->fp32 = true;
        return QP_OK;
    }
    return qp_scheme_parse(s, &l->s, NULL, err);
}

struct args {
    const char *calib, *eval, *out, *pareto, *plot, *output;
    struct qp_scheme base;
    struct qp_level promote[8];
    size_t npromote;
    struct qp_rpin pins[32];
    size_t npins;
    struct qp_cli_list keep, groups;
    enum qp_run_mode mode;
    enum qp_rq_flavor flavor;
    bool has_flavor, quiet;
    int method;
    double sqnr, kl, ppl, budget;
};

static enum qp_status parse_promote(const char *arg, void *dest,
                                    struct qp_error *err)
{
    struct args *a = dest;
    char buf[512];
    snprintf(buf, sizeof buf, "%s", arg);
    a->npromote = 0;
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t;
         t = strtok_r(NULL, ",", &save)) {
        if (a->npromote == 8)
            return qp_fail(err, QP_E_INVAL, "at most 8 promotion levels");
        enum qp_status st = parse_level(t, &a->promote[a->npromote], err);
        if (st)
            return st;
        a->npromote++;
    }
    return a->npromote ? QP_OK : qp_fail(err, QP_E_INVAL, "no level given");
}

static enum qp_status parse_pin(const char *arg, void *dest, struct qp_error *err)
{
    struct args *a = dest;
    const char *eq = strrchr(arg, '=');
    if (!eq || eq == arg || !eq[1])
        return qp_fail(err, QP_E_INVAL, "'%s': expected GLOB=SCHEME", arg);
    if (a->npins == 32)
        return qp_fail(err, QP_E_INVAL, "at most 32 pins");
    struct qp_rpin *p = &a->pins[a->npins];
    enum qp_status st = parse_level(eq + 1, &p->level, err);
    if (st)
        return st;
    p->glob = strndup(arg, (size_t)(eq - arg));
    if (!p->glob)
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    a->npins++;
    return QP_OK;
}

static void print_state(const char *what, const struct qp_rstate *s, size_t fp32)
{
    printf("%-10s calib %7.2f dB", what, s->calib_sqnr);
    if (isfinite(s->eval_sqnr) || isinf(s->eval_sqnr))
        printf(", eval %7.2f dB", s->eval_sqnr);
    if (!isnan(s->calib_kl))
        printf(", kl %.4g", s->calib_kl);
    if (!isnan(s->calib_dppl))
        printf(", ppl %+.4g (eval %+.4g)", s->calib_dppl, s->eval_dppl);
    printf(", weights %.3f MB (%.1f%% of fp32), %.3g BitOps, %zu transitions\n",
           (double)s->bytes / 1e6, 100.0 * (double)s->bytes / (double)(fp32 ? fp32 : 1),
           s->bitops, s->transitions);
}

/* A change of the target's metric in its own units: dB, or the change of
 * KL or of perplexity (the metric is their negation). */
static const char *gain(const struct qp_rsearch_opts *o, double g, char *buf,
                        size_t size)
{
    if (o->target == QP_RT_KL)
        snprintf(buf, size, "KL %+.4g", -g);
    else if (o->target == QP_RT_PPL)
        snprintf(buf, size, "PPL %+.4g", -g);
    else
        snprintf(buf, size, "%+7.2f dB", g);
    return buf;
}

static void print(const struct qp_rsearch_result *res,
                  const struct qp_rsearch_opts *o, bool quiet)
{
    print_state("base", &res->steps[0].at, res->bytes_fp32);
    for (size_t k = 1; !quiet && k < res->nsteps; k++) {
        const struct qp_rstep *s = &res->steps[k];
        char lv[QP_SCHEME_MAX + 8], m[48], p[48];
        gain(o, s->measured, m, sizeof m);
        gain(o, s->predicted, p, sizeof p);
        switch (s->kind) {
        case QP_STEP_PROBE:
            printf("  probe: first %zu candidates promoted: %.2f dB\n", s->count,
                   s->at.calib_sqnr);
            continue;
        case QP_STEP_BULK:
            printf("  %3zu  %zu free promotions together (activation bits)    "
                   "%s (predicted %s)\n", k, s->count, m, p);
            continue;
        case QP_STEP_REVERT:
            printf("  %3zu  %zu free promotions undone (the target holds "
                   "without them)  %s\n", k, s->count, m);
            continue;
        default:
            break;
        }
        qp_rsearch_level_name(o, s->level, lv, sizeof lv);
        printf("  %3zu  %-32s -> %-10s %s (predicted %s)%s\n", k,
               res->units.u[s->unit].name, lv, m, p,
               s->reranked ? "  re-ranked" : "");
    }
    print_state("recipe", &res->steps[res->nsteps - 1].at, res->bytes_fp32);
    const char *t = o->target == QP_RT_SQNR ? "SQNR"
                    : o->target == QP_RT_KL ? "KL"
                    : o->target == QP_RT_PPL ? "perplexity - fp32's" : NULL;
    if (t) {
        printf("target %s %s %g: %s on calibration data, %s on held-out data\n",
               t, o->target == QP_RT_SQNR ? ">=" : "<=", o->value,
               res->reached_calib ? "reached" : "NOT reached",
               res->reached_eval ? "reached" : "NOT reached");
        if (!res->reached_calib)
            printf("the target cannot be met with these promotions; the best "
                   "recipe found is written\n");
        else if (!res->reached_eval)
            printf("reached on calibration but missed on the held-out inputs: "
                   "calibrate on more varied data or aim higher\n");
    } else {
        printf("budget %.0f bytes: %zu bytes used\n", o->value,
               res->steps[res->nsteps - 1].at.bytes);
    }
    printf("cost: %.1f forward-pass equivalents per calibration input in %zu "
           "measurements\n", res->passes, res->runs);
}

static enum qp_status write_recipe(const char *path, const struct qp_graph *g,
                                   const struct qp_rsearch_result *res,
                                   const struct qp_rsearch_opts *o,
                                   const struct args *a, struct qp_error *err)
{
    struct qp_recipe *r;
    struct qp_json *doc = NULL;
    enum qp_status st = qp_rsearch_recipe(g, res, o, &r, err);
    if (!st)
        st = qp_recipe_to_json(r, &doc, err);
    if (!st)
        st = qp_rsearch_derived(doc, res, o, a->calib, a->eval, err);
    if (!st)
        st = qp_json_save(path, doc, true, err);
    qp_json_free(doc);
    qp_recipe_free(r);
    return st;
}

static int run(struct args *a, const char *model)
{
    struct qp_error err;
    struct qp_session *s = NULL;
    struct qp_input_sets ev = {0};
    struct qp_rsearch_result res = {0};
    struct qp_csv_writer *csv = NULL;
    struct qp_plot *plot = NULL;
    enum qp_status st = qp_session_open_analysis(model, a->calib, a->eval, &s,
                                                 &ev, &err);
    const struct qp_graph *g = s ? qp_session_graph(s) : NULL;
    int out = 0;
    for (int k = 0; g && a->output && k < g->n_outputs; k++)
        out = strcmp(g->values[g->outputs[k]].name, a->output) ? out : k;
    struct qp_progress prog = qp_cli_progress(a->quiet);
    struct qp_rsearch_opts o = {
        a->mode, &a->base, a->promote, a->npromote, a->flavor, a->has_flavor,
        a->sqnr == a->sqnr ? QP_RT_SQNR : a->kl == a->kl ? QP_RT_KL
        : a->ppl == a->ppl ? QP_RT_PPL : QP_RT_BYTES,
        a->sqnr == a->sqnr ? a->sqnr : a->kl == a->kl ? a->kl
        : a->ppl == a->ppl ? a->ppl : a->budget,
        a->keep.v, a->keep.n, a->pins, a->npins, a->groups.v, a->groups.n,
        a->method == 1, out, 0, &prog};
    if (!st)
        st = qp_recipe_search(s, ev.set, ev.n, &o, &res, &err);
    qp_cli_progress_done();
    if (!st && a->pareto && !(st = qp_csv_open(a->pareto, &csv, &err)))
        qp_rsearch_write_csv(csv, &res, &o);
    if (!st && a->plot) {
        char title[600];
        snprintf(title, sizeof title, "recipe search: quality vs size, %s", model);
        st = qp_rsearch_plot(a->plot, title, &res, &plot, &err);
    }
    if (!st)
        st = write_recipe(a->out, g, &res, &o, a, &err);
    if (!st && csv) {
        st = qp_csv_commit(csv, &err);
        csv = NULL;
    }
    if (!st && plot) {
        st = qp_plot_commit(plot, &err);
        plot = NULL;
    }
    if (!st)
        print(&res, &o, a->quiet);
    qp_csv_abort(csv);
    qp_plot_abort(plot);
    qp_rsearch_release(&res);
    qp_input_sets_release(g, &ev);
    qp_session_free(s);
    return st ? qp_cli_fail(&err) : QP_EXIT_OK;
}

int cmd_recipe(int argc, char **argv)
{
    struct args a = {.mode = QP_MODE_FAKE, .sqnr = NAN, .kl = NAN, .ppl = NAN,
                     .budget = NAN};
    struct qp_cli_opt opts[] = {
        QP_OPT_STR_("calib", 0, "DIR", "calibration inputs: activation ranges, "
                    "and every decision of the search", &a.calib),
        QP_OPT_STR_("eval", 0, "DIR", "held-out inputs the recipe is validated "
                    "on (never used to decide)", &a.eval),
        QP_OPT_PARSE_("base", 0, "S", "the uniform starting scheme, e.g. "
                      "w8c+a8t", &a.base, qp_opt_scheme),
        QP_OPT_PARSE_("promote", 0, "S2[,S3]", "the promotion levels in order "
                      "(schemes or fp32), e.g. w8c+a16t,fp32", &a, parse_promote),
        QP_OPT_NUM_("target-sqnr", 0, "DB", "stop when the output SQNR vs fp32 "
                    "reaches DB", &a.sqnr, -1e6, 1e6),
        QP_OPT_NUM_("target-kl", 0, "K", "stop when the output KL vs fp32 falls "
                    "to K", &a.kl, 0, 1e6),
        QP_OPT_NUM_("target-ppl-delta", 0, "P", "language models: stop when "
                    "the perplexity exceeds fp32's by at most P", &a.ppl, -1e6,
                    1e6),
        QP_OPT_NUM_("budget-bytes", 0, "N", "best SQNR with weights of at most N "
                    "bytes", &a.budget, 0, 1e18),
        QP_OPT_STR_("output", 'o', "R.json", "the recipe", &a.out),
        QP_OPT_STR_("pareto", 0, "CSV", "one row per step: bytes, BitOps, "
                    "quality on calib and eval", &a.pareto),
        QP_OPT_PARSE_("plot", 0, "FILE", "quality vs size (.png or .svg)",
                      &a.plot, qp_opt_plot),
        QP_OPT_LIST_("keep", 0, "GLOB", "units never quantized (repeatable)",
                     &a.keep),
        QP_OPT_PARSE_("pin", 0, "GLOB=S", "units fixed at scheme S or fp32 "
                      "(repeatable)", &a, parse_pin),
        QP_OPT_LIST_("group", 0, "GLOB", "promote the units under GLOB together "
                     "(as sensitivity --group)", &a.groups),
        QP_OPT_CHOICE_("method", 0, "M", "greedy (default) or binary (AIMET "
                       "AMP's bisection)", &a.method, method_names),
        QP_OPT_PARSE_("mode", 'm', "MODE", "fake (default) or int", &a.mode,
                      qp_opt_mode),
        QP_OPT_PARSE_("requant", 0, "FLAVOR", "requantization flavor (default "
                      "tflite)", &a.flavor, qp_opt_flavor),
        QP_OPT_STR_("output-name", 0, "NAME", "the graph output scored (default "
                    "the first)", &a.output),
        QP_OPT_FLAG_("quiet", 'q', "no progress, no per-step lines", &a.quiet),
        QP_OPT_END_,
    };
    int first, rc = qp_cli_parse(&cli, opts, argc, argv, &first);
    a.has_flavor = qp_cli_given(opts, "requant");
    int targets = qp_cli_given(opts, "target-sqnr") + qp_cli_given(opts, "target-kl") +
                  qp_cli_given(opts, "target-ppl-delta") +
                  qp_cli_given(opts, "budget-bytes");
    if (rc == QP_CLI_GO && (!a.calib || !qp_cli_given(opts, "base") || !a.npromote ||
                            !a.out))
        rc = qp_cli_usage(&cli, "--calib, --base, --promote and -o are required");
    else if (rc == QP_CLI_GO && targets != 1)
        rc = qp_cli_usage(&cli, "give one of --target-sqnr, --target-kl, "
                          "--target-ppl-delta and "
                          "--budget-bytes");
    else if (rc == QP_CLI_GO && a.mode == QP_MODE_FP32)
        rc = qp_cli_usage(&cli, "--mode must be fake or int");
    if (rc == QP_CLI_GO)
        rc = run(&a, argv[first]);
    for (size_t i = 0; i < a.npins; i++)
        free((char *)a.pins[i].glob);
    qp_cli_list_release(&a.keep);
    qp_cli_list_release(&a.groups);
    return rc;
}
