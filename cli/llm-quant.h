/* cli/llm-quant.h: the quantization options the LLM commands share (eval,
 * generate): --mode, --scheme, --recipe and --calib, their checks, and the
 * plan they make. */
#ifndef QP_CLI_LLM_QUANT_H
#define QP_CLI_LLM_QUANT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cli/cli.h"
#include "cli/gptq-cli.h"
#include "cli/opt-types.h"
#include "model/llm.h"
#include "quant/recipe.h"
#include "quant/scheme.h"

struct qp_cli_llm_quant {
    enum qp_run_mode mode;
    struct qp_scheme scheme;
    bool has_scheme;
    const char *recipe, *calib;
    bool fp32_inputs;            /* --gptq-inputs fp32 */
    struct qp_cli_gptq gptq;     /* @gptq's messages, while plans live */
    bool gptq_on;
};

/* The option entries (append them to a command's table) binding q. */
#define QP_CLI_LLM_QUANT_OPTS(q)                                                  \
    QP_OPT_PARSE_("mode", 'm', "MODE", "fp32 (default), fake or int", &(q).mode,  \
                  qp_opt_mode),                                                   \
    QP_OPT_PARSE_("scheme", 's', "S", "quantization scheme, e.g. w4g128 or "      \
                  "w8c+a8d", &(q).scheme, qp_opt_scheme),                         \
    QP_OPT_STR_("recipe", 'r', "FILE", "per-layer recipe JSON", &(q).recipe),     \
    QP_OPT_STR_("calib", 0, "FILE", "calibration tokens (.npy ids, a dump's "     \
                "input_ids, or text) for static activation ranges and @gptq: at " \
                "most 16 sequences of the context length", &(q).calib),           \
    QP_OPT_GPTQ_INPUTS_(&(q).fp32_inputs)

/* After qp_cli_parse: records --scheme, refuses inconsistent options
 * (exit 2, the usage message printed); QP_CLI_GO when they are fine. */
int qp_cli_llm_quant_check(const struct qp_cli *cli, const struct qp_cli_opt *opts,
                           struct qp_cli_llm_quant *q);

/* The plan of the quantized modes (*plan NULL for fp32; *recipe loaded
 * when given, the caller frees both), calibrated on --calib or else on
 * fallback[n] (at most ctx tokens of it, the message naming `what` it is).
 * '@gptq' layers take their Hessians from --calib only (no fallback):
 * each linear layer's inputs on the calibration sequences, the layers
 * before it quantized (model/gptq-graph.h); a summary goes to stderr
 * unless quiet. QP_EXIT_OK, or QP_EXIT_FAIL with err set. Release q with
 * qp_cli_llm_quant_release after the plan. */
int qp_cli_llm_plan(struct qp_cli_llm_quant *q, struct qp_llm *m,
                    const int32_t *fallback, size_t n, int64_t ctx,
                    const char *what, bool quiet, struct qp_recipe **recipe,
                    struct qp_splan **plan, struct qp_error *err);

/* What qp_cli_llm_plan kept for '@gptq' (nothing else; idempotent). */
void qp_cli_llm_quant_release(struct qp_cli_llm_quant *q);

#endif
