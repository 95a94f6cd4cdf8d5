/* cli/cmd-generate.c: qprobe generate MODEL_DIR --prompt TEXT -n N: greedy
 * generation with a KV cache, in fp32 or under a scheme, so a user sees
 * whether a quantized model still writes sense. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/commands.h"
#include "cli/llm-quant.h"
#include "cli/opt-types.h"
#include "model/llm-generate.h"
#include "quant/recipe.h"
#include "quant/scheme.h"

static const struct qp_cli cli = {
    "generate", "MODEL_DIR (--prompt TEXT | --prompt-ids IDS) [-n N] [options]",
    "Greedy generation with a KV cache from a Hugging Face Llama-family "
    "model, in fp32 or quantized.",
    "The prompt is tokenized with the model's tokenizer (BOS added when it "
    "adds one);\nthe text is printed as it is generated (ids with "
    "--print-ids or without a tokenizer),\nand generation stops at the "
    "model's EOS token or after N tokens.",
    1, 1, "one MODEL_DIR",
};

struct gen_args {
    const char *model, *prompt, *prompt_ids;
    int64_t n;
    struct qp_cli_llm_quant q;
    bool print_ids, quiet;
};

struct printer {
    struct qp_llm *m;
    bool ids;
    int32_t *held;    /* tokens whose text is not printed yet */
    size_t nheld;
    size_t printed;   /* bytes of their text already out */
};

/* Prints the text the tokens so far add (decoding all of them: a token may
 * complete a character its predecessor began). */
static enum qp_status print_token(void *ctx, int32_t id, struct qp_error *err)
{
    struct printer *p = ctx;
    if (p->ids) {
        printf(" %d", id);
        fflush(stdout);
        return QP_OK;
    }
    int32_t *h = realloc(p->held, (p->nheld + 1) * sizeof *h);
    if (!h)
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    p->held = h;
    h[p->nheld++] = id;
    char *text;
    size_t len;
    enum qp_status st = qp_llm_decode(p->m, h, p->nheld, &text, &len, err);
    if (st)
        return st;
    if (len > p->printed)
        fwrite(text + p->printed, 1, len - p->printed, stdout);
    fflush(stdout);
    p->printed = len;
    free(text);
    return QP_OK;
}

static int generate(struct gen_args *a)
{
    struct qp_error err;
    struct qp_llm *m = NULL;
    struct qp_recipe *recipe = NULL;
    struct qp_splan *plan = NULL;
    int32_t *prompt = NULL, *out = NULL;
    size_t np = 0, nout;
    int rc = QP_EXIT_FAIL;
    if (qp_llm_open(a->model, &m, &err))
        return qp_cli_fail(&err);
    struct printer pr = {m, a->print_ids, NULL, 0, 0};
    if (a->prompt_ids ? qp_llm_read_ids(a->prompt_ids, m->vocab, &prompt, &np,
                                        NULL, NULL, &err)
                      : qp_llm_encode(m, a->prompt, strlen(a->prompt), true,
                                      &prompt, &np, &err))
        goto fail;
    if (qp_cli_llm_plan(&a->q, m, prompt, np, 512, "the prompt", a->quiet, &recipe,
                        &plan, &err))
        goto fail;
    pr.ids = a->print_ids || a->prompt_ids;
    for (size_t i = 0; pr.ids && i < np; i++)
        printf("%s%d", i ? " " : "", prompt[i]);
    if (!pr.ids)
        printf("%s", a->prompt);
    fflush(stdout);
    struct qp_gen_opts o = {(size_t)a->n, qp_llm_eos(m), false, print_token, &pr,
                            NULL};
    struct qp_gen_stats gs;
    if (qp_llm_generate(m, plan, prompt, np, &o, &out, &nout, &gs, &err)) {
        printf("\n");
        goto fail;
    }
    printf("\n");
    if (!a->quiet)
        fprintf(stderr, "%s: %s, %zu prompt tokens in %.2f s, %zu generated in "
                "%.2f s (%.1f tokens/s)\n", a->model, qp_run_mode_name(a->q.mode),
                gs.prompt_tokens, gs.prefill_seconds, gs.new_tokens,
                gs.decode_seconds, gs.new_tokens > 1 && gs.decode_seconds > 0
                    ? (double)(gs.new_tokens - 1) / gs.decode_seconds : 0.0);
    rc = QP_EXIT_OK;
    goto done;
fail:
    qp_cli_fail(&err);
done:
    free(pr.held);
    free(out);
    free(prompt);
    qp_splan_free(plan);
    qp_recipe_free(recipe);
    qp_cli_llm_quant_release(&a->q);
    qp_llm_free(m);
    return rc;
}

int cmd_generate(int argc, char **argv)
{
    struct gen_args a = {.n = 32};
    struct qp_cli_opt opts[] = {
        QP_OPT_STR_("prompt", 'p', "TEXT", "the prompt text", &a.prompt),
        QP_OPT_STR_("prompt-ids", 0, "IDS", "the prompt as token ids (.npy)",
                    &a.prompt_ids),
        QP_OPT_INT_("new-tokens", 'n', "N", "generate at most N tokens (default 32)",
                    &a.n, 1, 1 << 20),
        QP_CLI_LLM_QUANT_OPTS(a.q),
        QP_OPT_FLAG_("print-ids", 0, "print token ids instead of text",
                     &a.print_ids),
        QP_OPT_FLAG_("quiet", 'q', "no timing line on stderr", &a.quiet),
        QP_OPT_END_,
    };
    qp_cli_exclusive(opts, "scheme", "recipe");
    qp_cli_exclusive(opts, "prompt", "prompt-ids");
    int first, rc = qp_cli_parse(&cli, opts, argc, argv, &first);
    if (rc != QP_CLI_GO || (rc = qp_cli_llm_quant_check(&cli, opts, &a.q)) != QP_CLI_GO)
        return rc;
    if (!a.prompt && !a.prompt_ids)
        return qp_cli_usage(&cli, "--prompt or --prompt-ids is required");
    a.model = argv[first];
    return generate(&a);
}
