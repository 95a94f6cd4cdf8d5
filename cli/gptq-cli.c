/* cli/gptq-cli.c: GPTQ options and messages of the commands
 * (cli/gptq-cli.h). */
#include "cli/gptq-cli.h"

#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

enum qp_status qp_opt_gptq_inputs(const char *arg, void *dest,
                                  struct qp_error *err)
{
    bool *fp32 = dest;
    if (!strcmp(arg, "quantized") || !strcmp(arg, "fp32")) {
        *fp32 = !strcmp(arg, "fp32");
        return QP_OK;
    }
    return qp_fail(err, QP_E_INVAL, "'%s': expected quantized (each layer's "
                   "inputs computed with the earlier layers quantized) or fp32",
                   arg);
}

static enum qp_status on_layer(void *ctx, const struct qp_gptq_graph_layer *l,
                               struct qp_error *err)
{
    (void)err;
    struct qp_cli_gptq *c = ctx;
    const struct qp_gptq_layer_result *r = l->res;
    char lab[256];
    if (r->few_tokens)
        qp_cli_warn("layer '%s' (%s): %llu calibration rows for %zu input "
                    "features: its Hessian is singular and the dampening "
                    "(%g x mean diagonal) dominates; give more calibration "
                    "data", l->name, qp_node_label(c->g, l->node, lab, sizeof lab),
                    (unsigned long long)r->tokens, l->cols, r->damp);
    if (r->retries)
        qp_cli_warn("layer '%s': the Hessian needed dampening %g (%d "
                    "factorizations failed)", l->name, r->damp, r->retries);
    free(c->layer[l->node]);
    c->layer[l->node] = strdup(c->g->nodes[l->node].name);
    c->log[l->node] = (struct qp_quant_report_gptq){
        c->layer[l->node] ? c->layer[l->node] : "", l->rows, l->cols, l->parts,
        r->tokens, l->samples, r->damp, r->retries, r->loss, r->out_err,
        r->rtn_out_err, r->seconds};
    if (!c->logged[l->node])
        c->layers++;
    c->logged[l->node] = true;
    c->out_err += r->out_err;
    c->rtn_out_err += r->rtn_out_err;
    c->seconds += r->seconds;
    return QP_OK;
}

static void on_fallback(void *ctx, int node, const char *why)
{
    struct qp_cli_gptq *c = ctx;
    char lab[256];
    if (c->warned[node])
        return;
    c->warned[node] = true;
    qp_cli_warn("%s: '@gptq' rounds this layer to nearest on the same grid "
                "instead: %s", qp_node_label(c->g, node, lab, sizeof lab), why);
}

enum qp_status qp_cli_gptq_init(struct qp_cli_gptq *c, struct qp_session *s,
                                bool fp32_inputs, bool quiet,
                                struct qp_error *err)
{
    memset(c, 0, sizeof *c);
    c->g = qp_session_graph(s);
    qp_strmap_init(&c->byname);
    size_t n = (size_t)c->g->n_nodes + 1;
    c->n = n - 1;
    c->warned = calloc(n, sizeof *c->warned);
    c->log = calloc(n, sizeof *c->log);
    c->logged = calloc(n, sizeof *c->logged);
    c->layer = calloc(n, sizeof *c->layer);
    c->w = calloc(n, sizeof *c->w);
    if (!c->warned || !c->log || !c->logged || !c->layer || !c->w) {
        qp_cli_gptq_release(c);
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    }
    c->progress = qp_cli_progress(quiet);
    struct qp_session_gptq_opts o = {fp32_inputs, &c->progress, on_layer,
                                     on_fallback, c};
    qp_session_set_gptq(s, &o);
    return QP_OK;
}

void qp_cli_gptq_release(struct qp_cli_gptq *c)
{
    for (size_t i = 0; c->layer && i < c->n; i++)
        free(c->layer[i]);
    free(c->layer);
    free(c->warned);
    free(c->log);
    free(c->logged);
    free(c->w);
    qp_strmap_release(&c->byname);
    memset(c, 0, sizeof *c);
}

enum qp_status qp_cli_gptq_make(struct qp_cli_gptq *c, struct qp_session *s,
                                const struct qp_qassign *a, enum qp_round r,
                                struct qp_error *err)
{
    struct qp_qassign *ga;
    enum qp_status st = qp_session_gptq_assign(s, a, &ga, err);
    if (!st)
        st = qp_session_gptq(s, ga, r, NULL, c->w, err);
    qp_cli_progress_done();
    char name[256];
    for (int i = 0; !st && i < c->g->n_nodes; i++) {
        if (!qp_node_weighted(c->g, i, NULL))
            continue;
        bool dup;
        qp_node_weight_name(c->g, i, name, sizeof name);
        st = qp_strmap_put(&c->byname, name, (size_t)i, &dup, err);
    }
    qp_qassign_free(ga);
    return st;
}

bool qp_cli_gptq_calibrated(void *ctx, const char *name,
                            struct qp_ckpt_calibrated *out)
{
    struct qp_cli_gptq *c = ctx;
    size_t i;
    if (!qp_strmap_get(&c->byname, name, &i)) {
        qp_cli_warn("tensor '%s': no Conv, MatMul, Gemm or Linear of the model reads "
                    "it as its weight, so GPTQ has no inputs for it: rounded "
                    "to nearest on the same grid", name);
        return false;
    }
    if (!c->w[i]) /* a layer GPTQ cannot run: warned of already */
        return false;
    *out = (struct qp_ckpt_calibrated){c->w[i]->q, c->w[i]->fake, c->w[i]->g_idx};
    return true;
}

const struct qp_quant_report_gptq *qp_cli_gptq_log(void *ctx, const char *name)
{
    const struct qp_cli_gptq *c = ctx;
    size_t i;
    return qp_strmap_get(&c->byname, name, &i) && c->logged[i] ? &c->log[i]
                                                                : NULL;
}
