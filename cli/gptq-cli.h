/* cli/gptq-cli.h: what the commands that make GPTQ weights share: the
 * session's GPTQ options wired to stderr (progress when it is a terminal,
 * a warning per layer that GPTQ cannot run or whose calibration inputs
 * are too few for its width), the --gptq-inputs option, and the per-layer
 * log kept for quantize's report and checkpoint. */
#ifndef QP_CLI_GPTQ_CLI_H
#define QP_CLI_GPTQ_CLI_H

#include <stdbool.h>

#include "analysis/quant-report.h"
#include "core/strmap.h"
#include "model/session.h"
#include "quant/ckpt.h"

/* --gptq-inputs: "quantized" (sequential, default) or "fp32". */
enum qp_status qp_opt_gptq_inputs(const char *arg, void *dest,
                                  struct qp_error *err);

/* The --gptq-inputs option writing bool *d (true: fp32). */
#define QP_OPT_GPTQ_INPUTS_(d)                                                 \
    QP_OPT_PARSE_("gptq-inputs", 0, "WHICH", "@gptq: each layer's Hessian "    \
                  "from the inputs computed with the earlier layers "          \
                  "quantized (quantized, default: the reference's "            \
                  "sequential mode) or from the float model's (fp32)", d,      \
                  qp_opt_gptq_inputs)

struct qp_cli_gptq {
    const struct qp_graph *g;          /* borrowed */
    size_t n;                          /* g's nodes (release needs no g) */
    struct qp_progress progress;
    bool *warned;                      /* [n_nodes] */
    struct qp_quant_report_gptq *log;  /* [n_nodes] */
    bool *logged;                      /* [n_nodes] */
    char **layer;                      /* [n_nodes] node names, owned */
    size_t layers;
    double out_err, rtn_out_err, seconds; /* sums over the layers */
    /* quantize: weight name -> node, and the weights (borrowed from the
     * session) */
    struct qp_strmap byname;
    const struct qp_wquant **w;        /* [n_nodes] */
};

/* Wires s's GPTQ options to c (fp32_inputs as --gptq-inputs said). c
 * must outlive every plan of s. QP_E_NOMEM. */
enum qp_status qp_cli_gptq_init(struct qp_cli_gptq *c, struct qp_session *s,
                                bool fp32_inputs, bool quiet,
                                struct qp_error *err);
void qp_cli_gptq_release(struct qp_cli_gptq *c);

/* quantize: makes the GPTQ weights of assignment a with rounding r and
 * indexes them by weight name for qp_cli_gptq_calibrated. */
enum qp_status qp_cli_gptq_make(struct qp_cli_gptq *c, struct qp_session *s,
                                const struct qp_qassign *a, enum qp_round r,
                                struct qp_error *err);

/* The ckpt's calibrated callback (quant/ckpt.h); ctx is the struct
 * qp_cli_gptq. A tensor no layer reads as a weight is warned of. */
bool qp_cli_gptq_calibrated(void *ctx, const char *name,
                            struct qp_ckpt_calibrated *out);

/* The report's GPTQ log lookup (analysis/quant-report.h). */
const struct qp_quant_report_gptq *qp_cli_gptq_log(void *ctx, const char *name);

#endif
