/* cli/llm-quant.c: the LLM commands' quantization options (cli/llm-quant.h). */
#include "cli/llm-quant.h"

#include <stdio.h>
#include <stdlib.h>

int qp_cli_llm_quant_check(const struct qp_cli *cli, const struct qp_cli_opt *opts,
                           struct qp_cli_llm_quant *q)
{
    q->has_scheme = qp_cli_given(opts, "scheme");
    if (q->mode == QP_MODE_FP32 && (q->has_scheme || q->recipe || q->calib))
        return qp_cli_usage(cli, "--scheme, --recipe and --calib need --mode fake "
                            "or int");
    if (q->mode != QP_MODE_FP32 && !q->has_scheme && !q->recipe)
        return qp_cli_usage(cli, "--mode %s needs --scheme or --recipe",
                            qp_run_mode_name(q->mode));
    return QP_CLI_GO;
}

/* True when the scheme or a rule of recipe r is '@gptq'. */
static bool uses_gptq(const struct qp_cli_llm_quant *q, const struct qp_recipe *r)
{
    bool any = q->has_scheme && q->scheme.w.algo == QP_WALGO_GPTQ;
    any |= r && r->has_default && !r->def.w_float &&
           r->def.scheme.w.algo == QP_WALGO_GPTQ;
    for (size_t i = 0; r && i < r->nrules; i++)
        any |= r->rules[i].w_said && !r->rules[i].w_float &&
               r->rules[i].scheme.w.algo == QP_WALGO_GPTQ;
    return any;
}

void qp_cli_llm_quant_release(struct qp_cli_llm_quant *q)
{
    if (q->gptq_on)
        qp_cli_gptq_release(&q->gptq);
    q->gptq_on = false;
}

int qp_cli_llm_plan(struct qp_cli_llm_quant *q, struct qp_llm *m,
                    const int32_t *fallback, size_t n, int64_t ctx,
                    const char *what, bool quiet, struct qp_recipe **recipe,
                    struct qp_splan **plan, struct qp_error *err)
{
    *plan = NULL;
    *recipe = NULL;
    if (q->mode == QP_MODE_FP32)
        return QP_EXIT_OK;
    if (q->recipe && qp_recipe_load(q->recipe, recipe, err))
        return QP_EXIT_FAIL;
    int32_t *calib = NULL;
    size_t ncal = 0;
    if (q->calib && qp_llm_read_tokens(m, q->calib, &calib, &ncal, err))
        return QP_EXIT_FAIL;
    bool acts = *recipe || q->scheme.has_acts, gptq = uses_gptq(q, *recipe);
    if (gptq && !calib) {
        qp_fail(err, QP_E_INVAL, "'@gptq' needs --calib: the layers' "
                "Hessians come from calibration tokens");
        return QP_EXIT_FAIL;
    }
    if (gptq && qp_cli_gptq_init(&q->gptq, m->s, q->fp32_inputs, quiet, err)) {
        free(calib);
        return QP_EXIT_FAIL;
    }
    q->gptq_on = gptq;
    if (acts && !calib && !fallback) {
        qp_fail(err, QP_E_INVAL, "quantized activations need --calib");
        return QP_EXIT_FAIL;
    }
    if (acts && !calib)
        qp_cli_warn("no --calib: activation ranges come from %s", what);
    struct qp_session_cfg cfg = {.mode = q->mode,
                                 .scheme = q->has_scheme ? &q->scheme : NULL,
                                 .recipe = *recipe, .flavor = QP_RQ_TFLITE_DOUBLE};
    const int32_t *cs = calib ? calib : acts ? fallback : NULL;
    size_t cn = calib ? ncal : n < (size_t)ctx ? n : (size_t)ctx, seqs;
    enum qp_status st = qp_llm_plan(m, &cfg, cs, cn, ctx, 16, &seqs, plan, err);
    free(calib);
    if (st)
        return QP_EXIT_FAIL;
    if (!quiet && seqs)
        fprintf(stderr, "calibrated on %zu sequence%s of up to %lld tokens\n", seqs,
                seqs == 1 ? "" : "s", (long long)ctx);
    const struct qp_cli_gptq *g = &q->gptq;
    if (!quiet && gptq)
        fprintf(stderr, "gptq: %zu layers (%s inputs) in %.2f s; mean out_err "
                "%.4g, RTN %.4g\n", g->layers,
                q->fp32_inputs ? "fp32" : "quantized", g->seconds,
                g->layers ? g->out_err / (double)g->layers : 0,
                g->layers ? g->rtn_out_err / (double)g->layers : 0);
    return QP_EXIT_OK;
}
