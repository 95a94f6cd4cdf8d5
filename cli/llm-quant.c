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

int qp_cli_llm_plan(const struct qp_cli_llm_quant *q, struct qp_llm *m,
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
    bool acts = *recipe || q->scheme.has_acts;
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
    return QP_EXIT_OK;
}
