/* analysis/recipe-report.c: the recipe search's CSV, plot and derived
 * block (analysis/recipe-report.h). */
#include "analysis/recipe-report.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "analysis/recipe-state.h"

void qp_rsearch_level_name(const struct qp_rsearch_opts *o, int l, char *buf,
                           size_t size)
{
    const struct qp_level *lv = qp_search_level(o, l);
    if (!lv)
        snprintf(buf, size, "base");
    else if (lv->fp32)
        snprintf(buf, size, "fp32");
    else
        qp_scheme_format(&lv->s, buf, size);
}

static void num(struct qp_csv_writer *w, double v)
{
    if (isnan(v))
        qp_csv_str(w, NULL);
    else
        qp_csv_num(w, v);
}

void qp_rsearch_write_csv(struct qp_csv_writer *w,
                          const struct qp_rsearch_result *res,
                          const struct qp_rsearch_opts *o)
{
    static const char *const head[] = {
        "step", "unit", "scheme", "predicted_gain", "measured_gain", "calib_sqnr",
        "calib_kl", "eval_sqnr", "eval_kl", "bytes", "bitops", "transitions",
        "reranked", "kind", "units", "calib_ppl_delta", "eval_ppl_delta"};
    qp_csv_row(w, head, sizeof head / sizeof head[0]);
    for (size_t k = 0; k < res->nsteps; k++) {
        const struct qp_rstep *s = &res->steps[k];
        char lv[QP_SCHEME_MAX + 8] = "";
        qp_csv_int(w, (int64_t)k);
        qp_csv_str(w, s->unit >= 0 ? res->units.u[s->unit].name : NULL);
        if (s->unit >= 0)
            qp_rsearch_level_name(o, s->level, lv, sizeof lv);
        qp_csv_str(w, s->unit >= 0 ? lv : NULL);
        num(w, k ? s->predicted : NAN);
        num(w, k ? s->measured : NAN);
        num(w, s->at.calib_sqnr);
        num(w, s->at.calib_kl);
        num(w, s->at.eval_sqnr);
        num(w, s->at.eval_kl);
        qp_csv_int(w, (int64_t)s->at.bytes);
        qp_csv_num(w, s->at.bitops);
        qp_csv_int(w, (int64_t)s->at.transitions);
        qp_csv_int(w, s->reranked);
        qp_csv_str(w, qp_rstep_kind_name(s->kind));
        qp_csv_int(w, (int64_t)(s->kind == QP_STEP_PROMOTE ? 1 : s->count));
        num(w, s->at.calib_dppl);
        num(w, s->at.eval_dppl);
        qp_csv_end_row(w);
    }
}

enum qp_status qp_rsearch_plot(const char *out, const char *title,
                               const struct qp_rsearch_result *res,
                               struct qp_plot **pending, struct qp_error *err)
{
    struct qp_plot_text t;
    enum qp_status st = qp_plot_text_open(&t, err);
    if (st)
        return st;
    fprintf(t.dat, "# step weight_MB calib_sqnr eval_sqnr (NaN: not measured)\n");
    for (size_t k = 0; k < res->nsteps; k++) {
        const struct qp_rstep *s = &res->steps[k];
        double c = s->at.calib_sqnr, e = s->at.eval_sqnr;
        fprintf(t.dat, "%zu %.9g %.9g %.9g\n", k, (double)s->at.bytes / 1e6,
                isfinite(c) ? c : NAN, isfinite(e) ? e : NAN);
    }
    fputs("set title ", t.body);
    qp_plot_quote(t.body, title);
    fprintf(t.body, "\nset xlabel 'weights (MB)'\nset ylabel 'output SQNR vs "
                    "fp32 (dB)'\nset grid\nset key left top\nset datafile "
                    "missing 'nan'\nplot qp_dat using 2:3 with linespoints pt 7 "
                    "ps 0.6 lc rgb '#4477aa' title 'calibration', \\\n     qp_dat "
                    "using 2:4 with linespoints pt 5 ps 0.6 lc rgb '#ee6677' "
                    "title 'held-out'\n");
    return qp_plot_text_render(&t, out, false, pending, err);
}

static bool put_num(struct qp_json *o, const char *k, double v)
{
    return isfinite(v) ? qp_json_add_num(o, k, v) != NULL
                       : qp_json_add_null(o, k) != NULL;
}

enum qp_status qp_rsearch_derived(struct qp_json *doc,
                                  const struct qp_rsearch_result *res,
                                  const struct qp_rsearch_opts *o,
                                  const char *calib, const char *eval,
                                  struct qp_error *err)
{
    static const char *const tnames[] = {"sqnr_db", "kl", "budget_bytes",
                                         "ppl_delta"};
    _Static_assert(sizeof tnames / sizeof tnames[0] == QP_RT_COUNT, "targets");
    const struct qp_rstate *end = &res->steps[res->nsteps - 1].at;
    char base[QP_SCHEME_MAX + 1];
    qp_scheme_format(o->base, base, sizeof base);
    struct qp_json *d = qp_json_add_object(doc, "derived"), *prom = NULL;
    bool ok = d && qp_json_add_str(d, "by", "qprobe recipe") &&
              qp_json_add_str(d, "method", o->binary ? "binary" : "greedy") &&
              qp_json_add_str(d, "target", tnames[o->target]) &&
              qp_json_add_num(d, "target_value", o->value) &&
              qp_json_add_str(d, "base", base) &&
              (prom = qp_json_add_array(d, "promote"));
    for (size_t k = 0; ok && k < o->npromote; k++) {
        char lv[QP_SCHEME_MAX + 8];
        qp_rsearch_level_name(o, (int)k + 1, lv, sizeof lv);
        ok = qp_json_add_str(prom, NULL, lv) != NULL;
    }
    ok = ok && qp_json_add_str(d, "calib", calib ? calib : "") &&
         qp_json_add_str(d, "eval", eval ? eval : "") &&
         put_num(d, "calib_sqnr_db", end->calib_sqnr) &&
         put_num(d, "calib_kl", end->calib_kl) &&
         put_num(d, "eval_sqnr_db", end->eval_sqnr) &&
         put_num(d, "eval_kl", end->eval_kl) &&
         put_num(d, "calib_ppl_delta", end->calib_dppl) &&
         put_num(d, "eval_ppl_delta", end->eval_dppl) &&
         qp_json_add_bool(d, "reached_calib", res->reached_calib) &&
         qp_json_add_bool(d, "reached_eval", res->reached_eval) &&
         qp_json_add_num(d, "weight_bytes", (double)end->bytes) &&
         qp_json_add_num(d, "weight_bytes_fp32", (double)res->bytes_fp32) &&
         qp_json_add_num(d, "weight_bytes_base", (double)res->steps[0].at.bytes) &&
         qp_json_add_num(d, "bitops", end->bitops) &&
         qp_json_add_num(d, "precision_transitions", (double)end->transitions) &&
         qp_json_add_num(d, "steps", (double)res->nsteps - 1);
    return ok ? QP_OK : qp_fail(err, QP_E_NOMEM, "out of memory");
}
