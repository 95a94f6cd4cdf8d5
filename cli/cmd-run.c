/* cli/cmd-run.c: qprobe run MODEL --input X ... [--dump OUT]: a forward
 * pass of an ONNX model with every named intermediate captured into a
 * dump (names = the model's value names). */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "cli/commands.h"
#include "cli/gptq-cli.h"
#include "cli/opt-types.h"
#include "core/fileio.h"
#include "formats/dump.h"
#include "model/llama-import.h"
#include "model/llm.h"
#include "model/sink.h"
#include "model/session.h"
#include "model/tflite-import.h"
#include "quant/recipe.h"
#include "quant/scheme.h"

static const struct qp_cli cli = {
    "run", "MODEL (--input FILE... | --tokens IDS) [--dump OUT] [options]",
    "Run an ONNX model or a Hugging Face Llama-family folder on inputs and "
    "capture every named intermediate tensor into a dump.",
    "Modes:\n"
    "  fp32  float32, matmul and conv through OpenBLAS\n"
    "  fake  weights and activations quantized then dequantized per the "
    "scheme or recipe,\n"
    "        activation ranges from the --calib runs with the scheme's "
    "observer\n"
    "  int   Conv, MatMul, Gemm and Add in the integer kernels with the "
    "--requant flavor,\n"
    "        activations carried as 8-bit integers, other operators "
    "dequantize, compute in\n"
    "        float and requantize. Without a scheme, a QDQ or QLinear model "
    "runs with its\n"
    "        own parameters and ONNX Runtime's fusions.\n"
    "Names in the dump are the model's value names, so two runs (or a run "
    "and a device\ndump) align in 'qprobe diff'; the int mode writes "
    "integers with their scales.\nBatchNormalization after a Conv is folded "
    "into it (its output keeps the BN's name)\nunless --keep-batchnorm. "
    "Without --dump, the outputs are summarised on stdout.\n"
    "A '@gptq' scheme (e.g. w4g128@gptq, w4c@gptq:act; see 'qprobe quantize "
    "--help')\nquantizes those weights by GPTQ on the --calib inputs first "
    "(activations stay\nfloat while it runs); a recipe may mix it with other "
    "schemes.\n"
    "A .tflite model runs TFLite's own integer arithmetic (the int mode, its "
    "default):\n--requant tflite (TFLite Micro, default) or tflite-x86 "
    "(TFLite's x86 kernels);\n--mode fp32 runs its dequantized float "
    "reference, --mode fake quantizes that\nreference (or a float .tflite) "
    "per the scheme or recipe, as for an ONNX model.\n"
    "A model folder (config.json + safetensors: Llama, Mistral, Qwen2, "
    "SmolLM) runs on\n--tokens ids.npy ([T] or [B, T] int32/int64) or --text "
    "FILE; values "
    "carry Hugging Face's module\nnames (model.layers.N.mlp.down_proj, "
    "lm_head, ...), [T, F] or [B, T, F]; --calib\ntakes token ids or text, "
    "split into sequences of 512.\n"
    "--scheme 8da4w (= w4g32+a8dz; 8da4w:gN for groups of N) is ExecuTorch's "
    "8da4w: --mode int\nruns its linear layers as XNNPACK does (int8 "
    "per-token rows, int4 block weights, int32\nsums per block), every "
    "other value in float.",
    1, 1, "one MODEL",
};

struct run_args {
    const char *model, *dump, *capture, *recipe, *calib, *local, *tokens, *text;
    enum qp_dump_format format;
    enum qp_run_mode mode;
    struct qp_scheme scheme;
    bool has_scheme, has_flavor, mode_given, tfl;
    const char *requant;
    enum qp_rq_flavor flavor;
    enum qp_tfl_flavor tfl_flavor;
    struct qp_cli_list inputs;
    bool keep_bn, quiet, fp32_inputs;
};

/* ---- quantized modes ---------------------------------------------------- */

static void report_unused(const struct qp_recipe *r, const struct qp_graph *g,
                          const char *path)
{
    bool *used = calloc(r->nrules + 1, sizeof *used);
    struct qp_qassign *a;
    struct qp_error err;
    if (used && !qp_qassign_recipe(g, r, &a, used, &err)) {
        for (size_t i = 0; i < r->nrules; i++)
            if (!used[i])
                qp_cli_warn("'%s': layers \"%s\" matches no layer of the model",
                            path, r->rules[i].glob);
        qp_qassign_free(a);
    }
    free(used);
}

/* The session's plan for the run's mode; calibration from --calib, else
 * from the inputs themselves. */
static int make_plan(const struct run_args *a, struct qp_session *s,
                     struct qp_llm *llm, struct qp_tensor **feed,
                     struct qp_recipe *recipe, struct qp_splan **plan)
{
    struct qp_error err;
    struct qp_session_cfg cfg = {.mode = a->mode,
        .scheme = a->has_scheme ? &a->scheme : NULL, .recipe = recipe,
        .flavor = a->flavor, .flavor_given = a->has_flavor && !a->tfl};
    const struct qp_graph *g = qp_session_graph(s);
    size_t runs = 0;
    enum qp_status st = QP_OK;
    bool own_quant = !cfg.scheme && !cfg.recipe;
    if (own_quant && (a->mode != QP_MODE_INT || !qp_session_own_quant(s)))
        return qp_cli_usage(&cli, "mode %s needs --scheme or --recipe%s",
                            qp_run_mode_name(a->mode),
                            qp_session_own_quant(s)
                                ? " (the fp32 run of this QDQ model already "
                                  "simulates its quantization)" : "");
    if (recipe)
        report_unused(recipe, g, a->recipe);
    if (a->calib && llm) {
        int32_t *ids;
        size_t n;
        st = qp_llm_read_tokens(llm, a->calib, &ids, &n, &err);
        if (!st) {
            st = qp_llm_add_calib_ids(llm, ids, n, 512, 0, &runs, &err);
            free(ids);
        }
    } else if (a->calib) {
        st = qp_session_add_calib(s, a->calib, &runs, &err);
    } else if (!own_quant) {
        if (a->has_scheme ? a->scheme.has_acts : true)
            qp_cli_warn("no --calib: activation ranges come from the inputs "
                        "themselves");
        struct qp_tensor **copy = calloc((size_t)g->n_inputs + 1, sizeof *copy);
        if (!copy)
            st = qp_fail(&err, QP_E_NOMEM, "out of memory");
        for (int i = 0; !st && i < g->n_inputs; i++)
            st = qp_tensor_clone(feed[i], &copy[i], &err);
        if (!st)
            st = qp_session_add_calib_feed(s, copy, &err);
        else
            qp_session_free_inputs(s, copy);
    }
    if (!st)
        st = qp_session_plan(s, &cfg, plan, &err);
    if (st)
        return qp_cli_fail(&err);
    if (!a->quiet && own_quant)
        fprintf(stderr, "the model's own quantization: %d nodes fused into "
                "integer kernels (%s)\n", qp_splan_qdq_fused(*plan),
                qp_rq_flavor_name(a->has_flavor ? a->flavor : QP_RQ_ORT));
    if (!a->quiet && a->calib)
        fprintf(stderr, "calibrated on %zu input%s from %s\n", runs,
                runs == 1 ? "" : "s", a->calib);
    return QP_EXIT_OK;
}

/* ---- output summary -------------------------------------------------- */

static void summarise(const struct qp_tensor *t)
{
    char shape[128];
    qp_shape_str(t->ndim, t->shape, shape, sizeof shape);
    size_t n = qp_tensor_numel(t);
    double lo = INFINITY, hi = -INFINITY, sum = 0;
    for (size_t i = 0; i < n; i++) {
        float v;
        qp_tensor_read_f32(t, i, 1, &v);
        lo = v < lo ? v : lo;
        hi = v > hi ? v : hi;
        sum += v;
    }
    printf("%-32s %-6s %-18s min %-12.6g max %-12.6g mean %.6g\n", t->name,
           qp_dtype_name(t->dtype), shape, lo, hi, n ? sum / (double)n : NAN);
}

static int run(struct run_args *a)
{
    struct qp_error err;
    struct qp_session *s = NULL;
    struct qp_tensor **feed = NULL, **outs = NULL;
    struct qp_sink sink = {0};
    struct qp_splan *plan = NULL;
    struct qp_recipe *recipe = NULL;
    struct qp_dump *local = NULL;
    int rc = QP_EXIT_FAIL;
    struct qp_session_opts so = {.keep_bn = a->keep_bn,
        .tfl_flavor = a->tfl_flavor,
        /* a .tflite's float reference: fp32, or quantized by qprobe */
        .dequantize = a->tfl && a->mode_given &&
                      (a->mode != QP_MODE_INT || a->has_scheme || a->recipe)};
    struct qp_llm *llm = NULL;
    if (qp_llama_is_model_dir(a->model) ? qp_llm_open(a->model, &llm, &err)
                                        : qp_session_open(a->model, &so, &s, &err))
        return qp_cli_fail(&err);
    if (llm)
        s = llm->s;
    struct qp_cli_gptq gc;
    if (qp_cli_gptq_init(&gc, s, a->fp32_inputs, a->quiet, &err)) {
        if (llm)
            qp_llm_free(llm);
        else
            qp_session_free(s);
        return qp_cli_fail(&err);
    }
    const struct qp_graph *g = qp_session_graph(s);
    if (a->tfl && !a->mode_given) /* its own arithmetic, or float */
        a->mode = qp_session_own_quant(s) ? QP_MODE_INT : QP_MODE_FP32;
    if (a->recipe && qp_recipe_load(a->recipe, &recipe, &err))
        goto done;
    if (a->local && qp_dump_open(a->local, QP_DUMP_AUTO, &local, &err))
        goto done;
    if (llm && !a->tokens && !a->text) {
        rc = qp_cli_usage(&cli, "'%s' is a model folder: give --tokens or --text",
                          a->model);
        goto done_quiet;
    }
    if (!llm && (a->tokens || a->text)) {
        rc = qp_cli_usage(&cli, "--tokens and --text are for model folders; '%s' "
                          "takes --input", a->model);
        goto done_quiet;
    }
    if (llm ? (a->text ? qp_llm_text_feed(llm, a->text, &feed, &err)
                       : qp_llm_load_feed(llm, a->tokens, &feed, &err))
            : qp_session_load_inputs(s, a->inputs.v, (int)a->inputs.n, &feed,
                                     &err))
        goto done;
    if (llm && llm->cfg.max_pos &&
        feed[0]->shape[feed[0]->ndim - 1] > llm->cfg.max_pos)
        qp_cli_warn("%lld tokens are more than the model's %lld positions "
                    "(max_position_embeddings)",
                    (long long)feed[0]->shape[feed[0]->ndim - 1],
                    (long long)llm->cfg.max_pos);
    outs = calloc((size_t)(g->n_outputs ? g->n_outputs : 1), sizeof *outs);
    if (!outs) {
        qp_fail(&err, QP_E_NOMEM, "out of memory");
        goto done;
    }
    if (a->mode != QP_MODE_FP32 &&
        (rc = make_plan(a, s, llm, feed, recipe, &plan)) != QP_EXIT_OK)
        goto done_quiet;
    rc = QP_EXIT_FAIL;
    if (a->dump && qp_sink_open(&sink, g, a->dump, a->format, &err))
        goto done;
    struct qp_progress prog = qp_cli_progress(a->quiet);
    struct qp_session_run_opts ro = {
        .capture = a->dump ? a->capture : NULL, .on_capture = qp_sink_capture,
        .capture_ctx = &sink, .progress = &prog, .local = local,
        .release_weights = llm && llm->release_weights};
    struct qp_session_run_stats stats;
    enum qp_status st = qp_session_run(s, plan, (const struct qp_tensor *const *)feed,
                                       &ro, outs, &stats, &err);
    qp_cli_progress_done();
    if (st || (sink.w && qp_sink_commit(&sink, g, outs, &err)))
        goto done;
    const char *how = qp_run_mode_name(a->mode);
    if (a->tfl && so.dequantize && a->mode == QP_MODE_FP32)
        how = "fp32 (dequantized)";
    else if (a->tfl && a->mode == QP_MODE_INT && !so.dequantize)
        how = qp_tfl_flavor_name(a->tfl_flavor);
    printf("%s: %s%s, %d nodes in %.1f ms, peak activations %.1f MiB\n",
           a->model, how, local ? " (local)" : "", g->n_nodes,
           stats.seconds * 1e3, (double)stats.peak_bytes / (1 << 20));
    if (a->dump)
        printf("%zu tensors written to %s\n", sink.count, a->dump);
    else
        for (int k = 0; k < g->n_outputs; k++)
            summarise(outs[k]);
    rc = QP_EXIT_OK;
done:
    if (rc != QP_EXIT_OK)
        qp_cli_fail(&err);
done_quiet:
    qp_sink_abort(&sink);
    qp_splan_free(plan);
    qp_recipe_free(recipe);
    qp_dump_close(local);
    for (int k = 0; outs && k < g->n_outputs; k++)
        qp_tensor_free(outs[k]);
    free(outs);
    qp_session_free_inputs(s, feed);
    qp_cli_gptq_release(&gc);
    if (llm)
        qp_llm_free(llm);
    else
        qp_session_free(s);
    return rc;
}

int cmd_run(int argc, char **argv)
{
    struct run_args a = {.capture = "*", .format = QP_DUMP_AUTO};
    struct qp_cli_opt opts[] = {
        QP_OPT_LIST_("input", 'i', "[NAME=]FILE", "an input tensor: .npy, .pb or "
                     "a dump holding it; repeat to make a batch (stacked along "
                     "axis 0)", &a.inputs),
        QP_OPT_STR_("tokens", 0, "IDS", "token ids for a model folder: .npy [T] "
                    "or [B, T], or a dump's input_ids", &a.tokens),
        QP_OPT_STR_("text", 0, "FILE", "text for a model folder, tokenized with its "
                    "tokenizer (BOS added when it adds one)", &a.text),
        QP_OPT_STR_("dump", 'o', "OUT", "write every captured tensor to OUT "
                    "(.h5, .npz, .safetensors, or a directory of .npy files)",
                    &a.dump),
        QP_OPT_STR_("capture", 0, "GLOB", "capture the values whose names match "
                    "GLOB (default '*': all; graph outputs are always written)",
                    &a.capture),
        QP_OPT_PARSE_("format", 'f', "NAME", "dump format when OUT's name does "
                      "not tell: npy-dir, pb-dir, raw-dir, npz, h5, safetensors",
                      &a.format, qp_opt_dump_format),
        QP_OPT_PARSE_("mode", 'm', "MODE", "fp32 (default), fake or int",
                      &a.mode, qp_opt_mode),
        QP_OPT_PARSE_("scheme", 's', "S", "quantization scheme for fake/int "
                      "modes, e.g. w8c+a8t", &a.scheme, qp_opt_scheme),
        QP_OPT_STR_("recipe", 'r', "FILE", "per-layer recipe JSON for fake/int "
                    "modes", &a.recipe),
        QP_OPT_STR_("calib", 0, "DIR", "calibration inputs for the activation "
                    "ranges: every .npy or .pb file of DIR (or one file) is one "
                    "run (default: the --input batch)", &a.calib),
        QP_OPT_STR_("requant", 0, "FLAVOR", "requantization flavor (default: "
                    "the recipe's, else tflite; ort for a model's own "
                    "quantization; for a .tflite model tflite or tflite-x86)",
                    &a.requant),
        QP_OPT_STR_("local", 0, "REF", "teacher forcing: every node reads its "
                    "activation inputs from the dump REF (e.g. the fp32 run), "
                    "so that each layer's error is its own", &a.local),
        QP_OPT_GPTQ_INPUTS_(&a.fp32_inputs),
        QP_OPT_FLAG_("keep-batchnorm", 0, "do not fold BatchNormalization into "
                     "the preceding Conv (capture the conv outputs too)",
                     &a.keep_bn),
        QP_OPT_FLAG_("quiet", 'q', "no progress on stderr", &a.quiet),
        QP_OPT_END_,
    };
    qp_cli_exclusive(opts, "scheme", "recipe");
    qp_cli_exclusive(opts, "input", "tokens");
    qp_cli_exclusive(opts, "input", "text");
    qp_cli_exclusive(opts, "tokens", "text");
    int first, rc = qp_cli_parse(&cli, opts, argc, argv, &first);
    a.has_scheme = qp_cli_given(opts, "scheme");
    a.has_flavor = qp_cli_given(opts, "requant");
    a.mode_given = qp_cli_given(opts, "mode");
    if (rc == QP_CLI_GO) {
        a.model = argv[first];
        a.tfl = qp_str_ends_with(a.model, ".tflite");
    }
    if (rc != QP_CLI_GO)
        ;
    else if (!a.inputs.n && !a.tokens && !a.text)
        rc = qp_cli_usage(&cli, "--input is required (--tokens for a model "
                          "folder)");
    else if (a.tfl && a.requant &&
             !qp_tfl_flavor_from_name(a.requant, &a.tfl_flavor))
        rc = qp_cli_usage(&cli, "unknown TFLite flavor '%s' (tflite, "
                          "tflite-x86)", a.requant);
    else if (!a.tfl && a.requant && !qp_rq_flavor_from_name(a.requant, &a.flavor))
        rc = qp_cli_usage(&cli, "unknown requantization flavor '%s' (%s)",
                          a.requant, qp_rq_flavor_list());
    else if (a.mode == QP_MODE_FP32 && (a.has_scheme || a.recipe || a.calib ||
                                        (a.has_flavor && !a.tfl)))
        rc = qp_cli_usage(&cli, "--scheme, --recipe, --calib and --requant need "
                          "--mode fake or int");
    if (rc == QP_CLI_GO)
        rc = run(&a);
    qp_cli_list_release(&a.inputs);
    return rc;
}
