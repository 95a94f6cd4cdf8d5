/* cli/cmd-generate.c: qprobe generate MODEL_DIR --prompt TEXT -n N: greedy
 * generation with a KV cache, in fp32 or under a scheme, so a user sees
 * whether a quantized model still writes sense. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/commands.h"
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
    const char *model, *prompt, *prompt_ids, *recipe, *calib;
    int64_t n;
    enum qp_run_mode mode;
    struct qp_scheme scheme;
    bool has_scheme, print_ids, quiet;
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

static int generate(const struct gen_args *a)
{
    struct qp_error err;
    struct qp_llm *m = NULL;
    struct qp_recipe *recipe = NULL;
    struct qp_splan *plan = NULL;
    int32_t *prompt = NULL, *calib = NULL, *out = NULL;
    size_t np = 0, ncal = 0, nout;
    int rc = QP_EXIT_FAIL;
    if (qp_llm_open(a->model, &m, &err))
        return qp_cli_fail(&err);
    struct printer pr = {m, a->print_ids, NULL, 0, 0};
    if (a->recipe && qp_recipe_load(a->recipe, &recipe, &err))
        goto fail;
    if (a->prompt_ids ? qp_llm_read_ids(a->prompt_ids, m->vocab, &prompt, &np,
                                        NULL, NULL, &err)
                      : qp_llm_encode(m, a->prompt, strlen(a->prompt), true,
                                      &prompt, &np, &err))
        goto fail;
    if (a->calib && qp_llm_read_tokens(m, a->calib, &calib, &ncal, &err))
        goto fail;
    if (a->mode != QP_MODE_FP32) {
        struct qp_session_cfg cfg = {.mode = a->mode,
                                     .scheme = a->has_scheme ? &a->scheme : NULL,
                                     .recipe = recipe,
                                     .flavor = QP_RQ_TFLITE_DOUBLE};
        bool acts = recipe || a->scheme.has_acts;
        if (acts && !calib)
            qp_cli_warn("no --calib: activation ranges come from the prompt");
        if (qp_llm_plan(m, &cfg, calib ? calib : acts ? prompt : NULL,
                        calib ? ncal : np, 512, 16, NULL, &plan, &err))
            goto fail;
    }
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
                "%.2f s (%.1f tokens/s)\n", a->model, qp_run_mode_name(a->mode),
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
    free(calib);
    qp_splan_free(plan);
    qp_recipe_free(recipe);
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
        QP_OPT_INT_("tokens", 'n', "N", "generate at most N tokens (default 32)",
                    &a.n, 1, 1 << 20),
        QP_OPT_PARSE_("mode", 'm', "MODE", "fp32 (default), fake or int", &a.mode,
                      qp_opt_mode),
        QP_OPT_PARSE_("scheme", 's', "S", "quantization scheme, e.g. w4g128",
                      &a.scheme, qp_opt_scheme),
        QP_OPT_STR_("recipe", 'r', "FILE", "per-layer recipe JSON", &a.recipe),
        QP_OPT_STR_("calib", 0, "FILE", "calibration tokens (.npy ids or text) for "
                    "static activation ranges", &a.calib),
        QP_OPT_FLAG_("print-ids", 0, "print token ids instead of text",
                     &a.print_ids),
        QP_OPT_FLAG_("quiet", 'q', "no timing line on stderr", &a.quiet),
        QP_OPT_END_,
    };
    qp_cli_exclusive(opts, "scheme", "recipe");
    qp_cli_exclusive(opts, "prompt", "prompt-ids");
    int first, rc = qp_cli_parse(&cli, opts, argc, argv, &first);
    a.has_scheme = qp_cli_given(opts, "scheme");
    if (rc != QP_CLI_GO)
        return rc;
    if (!a.prompt && !a.prompt_ids)
        return qp_cli_usage(&cli, "--prompt or --prompt-ids is required");
    if (a.mode == QP_MODE_FP32 && (a.has_scheme || a.recipe || a.calib))
        return qp_cli_usage(&cli, "--scheme, --recipe and --calib need --mode "
                            "fake or int");
    if (a.mode != QP_MODE_FP32 && !a.has_scheme && !a.recipe)
        return qp_cli_usage(&cli, "--mode %s needs --scheme or --recipe",
                            qp_run_mode_name(a.mode));
    a.model = argv[first];
    return generate(&a);
}
