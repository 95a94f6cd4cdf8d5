/* cli/cmd-eval.c: qprobe eval MODEL_DIR (--tokens F | --text F): perplexity
 * with llama.cpp's semantics, KL divergence against base logits in
 * llama.cpp's file format, in fp32 or under a scheme or recipe. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/llm-eval.h"
#include "analysis/llm-tasks.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "cli/llm-quant.h"
#include "cli/opt-types.h"
#include "formats/json.h"
#include "model/llm.h"
#include "quant/recipe.h"
#include "quant/scheme.h"

static const struct qp_cli cli = {
    "eval", "MODEL_DIR (--tokens IDS | --text FILE) [--choices F] "
    "[--exact-match F] [options]",
    "Language-model quality of a Hugging Face Llama-family model, in fp32 or "
    "quantized: perplexity as llama.cpp's perplexity tool computes it, and KL "
    "divergence against base logits.",
    "Perplexity: the token stream is cut into chunks of --ctx tokens (a "
    "partial last one is\ndropped); each chunk runs alone with BOS in place of "
    "its first token (when the model\nhas one), and only its second half is "
    "scored, so every scored token has at least\nctx/2 tokens of context: "
    "llama.cpp's numbers on the same tokens. --save-logits writes\nllama.cpp's "
    "--kl-divergence-base file, and --kl-base reads one (from here or from\n"
    "llama.cpp) and adds KL divergence, ln(PPL/PPL_base), Δp and same-top-p "
    "statistics,\nas llama.cpp's --kl-divergence prints them; the base must "
    "come from the same\nvocabulary, context size and token stream.\n"
    "--choices scores multiple-choice items ({\"context\", \"choices\", "
    "\"label\"} per line) by\nthe summed log-probability of each choice after "
    "the context (acc, and acc_norm per\nbyte); --exact-match generates "
    "greedily after each {\"prompt\"} as many tokens as\nits \"answer\" has "
    "and counts exact matches. Items may give \"*_ids\" token lists\ninstead "
    "of text.",
    1, 1, "one MODEL_DIR",
};

struct eval_args {
    const char *model, *tokens, *text, *kl_base, *save, *json;
    const char *choices, *exact;
    int64_t ctx, chunks, batch;
    struct qp_cli_llm_quant q;
    bool no_bos, quiet;
};

/* ---- output --------------------------------------------------------------- */

static void print_kld(const struct qp_kld_stats *k)
{
    printf("Mean PPL(Q)                   : %10.6f ± %10.6f\n", k->ppl, k->ppl_unc);
    printf("Mean PPL(base)                : %10.6f ± %10.6f\n", k->ppl_base,
           k->ppl_base_unc);
    printf("Cor(ln(PPL(Q)), ln(PPL(base))): %6.2f%%\n", 100.0 * k->cor);
    printf("Mean ln(PPL(Q)/PPL(base))     : %10.6f ± %10.6f\n", k->ln_ratio,
           k->ln_ratio_unc);
    printf("Mean PPL(Q)/PPL(base)         : %10.6f ± %10.6f\n", k->ratio,
           k->ratio_unc);
    printf("Mean PPL(Q)-PPL(base)         : %10.6f ± %10.6f\n", k->diff, k->diff_unc);
    printf("Mean    KLD: %10.6f ± %10.6f\n", k->kld, k->kld_unc);
    for (int i = 0; i < 11; i++)
        printf("%-7s KLD: %10.6f\n", qp_kld_pct_names[i], (double)k->kld_pct[i]);
    printf("Mean    Δp: %6.3f ± %5.3f %%\n", 100.0 * k->dp, 100.0 * k->dp_unc);
    for (int i = 0; i < 13; i++)
        printf("%-7s Δp: %6.3f%%\n", qp_dp_pct_names[i], 100.0 * k->dp_pct[i]);
    printf("RMS Δp    : %6.3f ± %5.3f %%\n", 100.0 * k->rms_dp, 100.0 * k->rms_dp_unc);
    printf("Same top p: %6.3f ± %5.3f %%\n", 100.0 * k->same_top,
           100.0 * k->same_top_unc);
}

static struct qp_json *kld_json(struct qp_json *root, const struct qp_kld_stats *k)
{
    struct qp_json *o = qp_json_add_object(root, "kl");
    if (!o)
        return NULL;
    const struct { const char *name; double v; } f[] = {
        {"ppl", k->ppl}, {"ppl_unc", k->ppl_unc}, {"ppl_base", k->ppl_base},
        {"ppl_base_unc", k->ppl_base_unc}, {"cor_ln_ppl", k->cor},
        {"ln_ppl_ratio", k->ln_ratio}, {"ln_ppl_ratio_unc", k->ln_ratio_unc},
        {"ppl_ratio", k->ratio}, {"ppl_ratio_unc", k->ratio_unc},
        {"ppl_diff", k->diff}, {"ppl_diff_unc", k->diff_unc},
        {"kld", k->kld}, {"kld_unc", k->kld_unc}, {"dp", k->dp},
        {"dp_unc", k->dp_unc}, {"rms_dp", k->rms_dp}, {"rms_dp_unc", k->rms_dp_unc},
        {"same_top", k->same_top}, {"same_top_unc", k->same_top_unc},
        {"count", (double)k->count}};
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
        qp_json_add_num(o, f[i].name, f[i].v);
    struct qp_json *kp = qp_json_add_object(o, "kld_percentiles");
    struct qp_json *dp = qp_json_add_object(o, "dp_percentiles");
    for (int i = 0; kp && i < 11; i++)
        qp_json_add_num(kp, qp_kld_pct_names[i], k->kld_pct[i]);
    for (int i = 0; dp && i < 13; i++)
        qp_json_add_num(dp, qp_dp_pct_names[i], k->dp_pct[i]);
    return o;
}

/* Everything one evaluation measured. */
struct results {
    bool has_ppl, has_mc, has_em;
    struct qp_ppl_result ppl;
    struct qp_task_result mc, em;
};

static void items_json(struct qp_json *o, const struct qp_task_result *t, bool mc)
{
    struct qp_json *list = qp_json_add_array(o, "per_item");
    for (size_t i = 0; list && i < t->items; i++) {
        const struct qp_task_item *it = &t->item[i];
        struct qp_json *e = qp_json_add_object(list, NULL);
        if (!e)
            return;
        qp_json_add_num(e, "line", (double)it->line);
        if (!mc) {
            qp_json_add_bool(e, "match", it->hit);
            qp_json_add_num(e, "generated_tokens", (double)it->n_generated);
            if (it->text)
                qp_json_add_str(e, "text", it->text);
            continue;
        }
        qp_json_add_num(e, "label", it->label);
        qp_json_add_num(e, "pred", it->pred);
        qp_json_add_num(e, "pred_norm", it->pred_norm);
        struct qp_json *lp = qp_json_add_array(e, "logprob");
        for (size_t c = 0; lp && c < it->n_choices; c++)
            qp_json_add_num(lp, NULL, it->logprob[c]);
    }
}

static void task_json(struct qp_json *root, const char *key,
                      const struct qp_task_result *t, bool norm)
{
    struct qp_json *o = qp_json_add_object(root, key);
    if (!o)
        return;
    qp_json_add_num(o, "items", (double)t->items);
    qp_json_add_num(o, norm ? "acc" : "match_rate", t->acc);
    qp_json_add_num(o, norm ? "acc_unc" : "match_rate_unc", t->acc_unc);
    if (norm) {
        qp_json_add_num(o, "acc_norm", t->acc_norm);
        qp_json_add_num(o, "acc_norm_unc", t->acc_norm_unc);
    }
    qp_json_add_num(o, "seconds", t->seconds);
    items_json(o, t, norm);
}

static int write_json(const struct eval_args *a, const struct results *res)
{
    struct qp_json *root = qp_json_new_object();
    struct qp_error err;
    if (!root)
        return qp_cli_fail(&(struct qp_error){QP_E_NOMEM, "out of memory"});
    qp_json_add_str(root, "model", a->model);
    qp_json_add_str(root, "mode", qp_run_mode_name(a->q.mode));
    const struct qp_ppl_result *r = &res->ppl;
    struct qp_json *p = res->has_ppl ? qp_json_add_object(root, "perplexity") : NULL;
    if (p) {
        qp_json_add_num(p, "ppl", r->ppl);
        qp_json_add_num(p, "ppl_unc", r->ppl_unc);
        qp_json_add_num(p, "ctx", (double)r->ctx);
        qp_json_add_num(p, "chunks", (double)r->chunks);
        qp_json_add_num(p, "tokens_scored", (double)r->count);
        qp_json_add_num(p, "seconds", r->seconds);
    }
    if (res->has_ppl && r->has_kld)
        kld_json(root, &r->kld);
    if (res->has_mc)
        task_json(root, "choices", &res->mc, true);
    if (res->has_em)
        task_json(root, "exact_match", &res->em, false);
    int rc = QP_EXIT_OK;
    if (!strcmp(a->json, "-")) {
        char *text = qp_json_print(root, true);
        if (text)
            printf("%s\n", text);
        free(text);
    } else if (qp_json_save(a->json, root, true, &err)) {
        rc = qp_cli_fail(&err);
    }
    qp_json_free(root);
    return rc;
}

/* ---- the run ----------------------------------------------------------------- */

static void print_task(const char *what, const struct qp_task_result *t, bool norm)
{
    printf("%s: %zu items, %s %.2f +/- %.2f %%", what, t->items,
           norm ? "acc" : "match", 100 * t->acc, 100 * t->acc_unc);
    if (norm)
        printf(", acc_norm %.2f +/- %.2f %%", 100 * t->acc_norm,
               100 * t->acc_norm_unc);
    printf(" (%.1f s)\n", t->seconds);
}

static int eval(struct eval_args *a)
{
    struct qp_error err;
    struct qp_llm *m = NULL;
    struct qp_recipe *recipe = NULL;
    struct qp_splan *plan = NULL;
    int32_t *ids = NULL;
    size_t n = 0;
    struct results res = {0};
    int rc = QP_EXIT_FAIL;
    const char *stream = a->tokens ? a->tokens : a->text;
    if (qp_llm_open(a->model, &m, &err))
        return qp_cli_fail(&err);
    if (stream && (a->tokens ? qp_llm_read_ids(a->tokens, m->vocab, &ids, &n, NULL,
                                               NULL, &err)
                             : qp_llm_read_text(m, a->text, &ids, &n, &err)))
        goto fail;
    int64_t ctx = a->ctx ? a->ctx : 512;
    if (stream && m->cfg.max_pos && ctx > m->cfg.max_pos)
        qp_cli_warn("a context of %lld tokens is longer than the model's %lld "
                    "(max_position_embeddings)", (long long)ctx,
                    (long long)m->cfg.max_pos);
    if (qp_cli_llm_plan(&a->q, m, ids, n, ctx, "the first chunk of the evaluated "
                        "tokens", a->quiet, &recipe, &plan, &err))
        goto fail;
    struct qp_progress prog = qp_cli_progress(a->quiet);
    const char *mode = qp_run_mode_name(a->q.mode);
    if (stream) {
        struct qp_ppl_opts po = {a->ctx, a->chunks, a->batch,
                                 a->no_bos ? -1 : qp_llm_bos(m), a->kl_base,
                                 a->save, &prog};
        struct qp_ppl_result *r = &res.ppl;
        enum qp_status st = qp_llm_perplexity(m, plan, ids, n, &po, r, &err);
        qp_cli_progress_done();
        if (st)
            goto fail;
        res.has_ppl = true;
        printf("%s: %s, %lld chunks of %lld tokens, %zu scored, %.1f s (%.0f "
               "tokens/s)\n", a->model, mode, (long long)r->chunks,
               (long long)r->ctx, r->count, r->seconds,
               r->seconds > 0 ? (double)(r->chunks * r->ctx) / r->seconds : 0.0);
        printf("PPL = %.4f +/- %.5f\n", r->ppl, r->ppl_unc);
        if (r->has_kld)
            print_kld(&r->kld);
        if (a->save)
            printf("logits written to %s\n", a->save);
    }
    if (a->choices) {
        enum qp_status st = qp_llm_choices(m, plan, a->choices, &prog, &res.mc, &err);
        qp_cli_progress_done();
        if (st)
            goto fail;
        res.has_mc = true;
        print_task("choices", &res.mc, true);
    }
    if (a->exact) {
        enum qp_status st = qp_llm_exact_match(m, plan, a->exact, &prog, &res.em,
                                               &err);
        qp_cli_progress_done();
        if (st)
            goto fail;
        res.has_em = true;
        print_task("exact-match", &res.em, false);
    }
    rc = a->json ? write_json(a, &res) : QP_EXIT_OK;
    goto done;
fail:
    qp_cli_fail(&err);
done:
    qp_task_result_release(&res.mc);
    qp_task_result_release(&res.em);
    qp_splan_free(plan);
    qp_recipe_free(recipe);
    free(ids);
    qp_cli_llm_quant_release(&a->q);
    qp_llm_free(m);
    return rc;
}

int cmd_eval(int argc, char **argv)
{
    struct eval_args a = {0};
    struct qp_cli_opt opts[] = {
        QP_OPT_STR_("tokens", 0, "IDS", "the token stream: ids (.npy, or a dump's "
                    "input_ids)", &a.tokens),
        QP_OPT_STR_("text", 0, "FILE", "the token stream: text, tokenized with the "
                    "model's tokenizer (BOS added when it adds one)", &a.text),
        QP_OPT_INT_("ctx", 'c', "N", "tokens per chunk (default 512, or the "
                    "base file's)", &a.ctx, 2, 1 << 24),
        QP_OPT_INT_("chunks", 0, "K", "evaluate at most K chunks", &a.chunks, 1,
                    1e9),
        QP_OPT_INT_("batch", 'b', "B", "chunks per forward pass (default 1)",
                    &a.batch, 1, 1024),
        QP_OPT_STR_("kl-base", 0, "FILE", "base logits (llama.cpp's "
                    "--kl-divergence-base format) to compare with", &a.kl_base),
        QP_OPT_STR_("save-logits", 0, "FILE", "write this run's logits as a base "
                    "file", &a.save),
        QP_CLI_LLM_QUANT_OPTS(a.q),
        QP_OPT_FLAG_("no-bos", 0, "do not put BOS at the start of each chunk",
                     &a.no_bos),
        QP_OPT_STR_("choices", 0, "FILE.jsonl", "multiple-choice items to score",
                    &a.choices),
        QP_OPT_STR_("exact-match", 0, "FILE.jsonl", "prompt/answer items for "
                    "greedy exact match", &a.exact),
        QP_OPT_STR_("json", 0, "FILE", "every figure as JSON into FILE ('-': "
                    "stdout, after the table)", &a.json),
        QP_OPT_FLAG_("quiet", 'q', "no progress on stderr", &a.quiet),
        QP_OPT_END_,
    };
    qp_cli_exclusive(opts, "scheme", "recipe");
    qp_cli_exclusive(opts, "tokens", "text");
    int first, rc = qp_cli_parse(&cli, opts, argc, argv, &first);
    if (rc != QP_CLI_GO || (rc = qp_cli_llm_quant_check(&cli, opts, &a.q)) != QP_CLI_GO)
        return rc;
    if (!a.tokens && !a.text && !a.choices && !a.exact)
        return qp_cli_usage(&cli, "give --tokens or --text (and/or --choices, "
                            "--exact-match)");
    if (!a.tokens && !a.text && (a.kl_base || a.save))
        return qp_cli_usage(&cli, "--kl-base and --save-logits need --tokens or "
                            "--text");
    a.model = argv[first];
    return eval(&a);
}
