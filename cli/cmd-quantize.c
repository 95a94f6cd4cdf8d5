/* cli/cmd-quantize.c: qprobe quantize MODEL (--scheme S | --recipe R) -o OUT
 *
 * Post-training quantization of a checkpoint's weights (quant/ckpt.h),
 * with the report of analysis/quant-report.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/quant-report.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "cli/gptq-cli.h"
#include "cli/opt-types.h"
#include "core/strmap.h"
#include "formats/dump.h"
#include "model/llama-import.h"
#include "model/llm.h"
#include "model/wlayout.h"
#include "quant/ckpt.h"
#include "quant/recipe.h"

static const struct qp_cli cli = {
    "quantize",
    "MODEL (--scheme S | --recipe R) -o OUT [options]",
    "Quantizes the weights of a checkpoint (safetensors, ONNX, npz, HDF5, npy) "
    "round-to-nearest, or of an ONNX model by GPTQ on calibration inputs.",
    "Selected by default: float 2-D and 4-D tensors (linear/matmul and conv\n"
    "weights); biases, norms and other 1-D tensors stay as they are.\n"
    "--include/--exclude (globs on tensor names, or names without their last\n"
    ".component) override; with a recipe, the first matching rule gives the\n"
    "scheme of a selected tensor, \"fp32\" keeps it.\n\n"
    "Schemes: w BITS (t | c | g N) [z | n] [@rtn | @mse | @gptq[:OPTS]], BITS\n"
    "2..8 or 16; t per-tensor, c per output channel, g N groups of N along the\n"
    "input axis (a last partial group is allowed); z asymmetric (unsigned), n\n"
    "narrow symmetric; @mse searches the clipping range per channel/group.\n"
    "@gptq (an .onnx MODEL and --calib DIR, or a Hugging Face Llama folder and\n"
    "--calib TOKENS): GPTQ on the inputs each Conv, MatMul, Gemm and Linear\n"
    "sees on the calibration data, layer after layer with the earlier layers\n"
    "already quantized (--gptq-inputs fp32: the float model's inputs for\n"
    "every layer), on the grid RTN would use. OPTS, comma-separated:\n"
    "  act     act-order: columns by decreasing Hessian diagonal (the groups\n"
    "          then go to OUT as NAME.g_idx: each input element's scale index)\n"
    "  static  static groups: group scales from the original weights first\n"
    "          (with act: no g_idx needed)\n"
    "  mse     clipping ranges from the reference's --mse grid\n"
    "  dampD   dampening D x mean(diag H), 0 < D < 1 (default 0.01; doubled\n"
    "          while the Cholesky factorization fails)\n"
    "  blkN    columns per lazy batch update (default 128)\n"
    "e.g. w4g128@gptq, w4g32z@gptq:act,static, w4c@gptq:damp0.05. A recipe may\n"
    "mix @gptq and other schemes per layer. ConvTranspose, weights shared by\n"
    "two layers and tensors no layer reads as a weight are rounded to nearest\n"
    "on the same grid (warned). With --report, each GPTQ weight's row adds\n"
    "layer, rows, cols, groups, tokens, samples, damp, retries, gptq_loss\n"
    "(1/2 sum (w-q)^2 / U_ii^2), out_err (||WX - QX||^2 / ||WX||^2 on the\n"
    "calibration inputs), rtn_out_err (the same for RTN) and seconds.\n"
    "q8_0, q4_0, q4_1, q5_0, q4_k, q6_k: ggml's block types, quantized as\n"
    "ggml's reference code does (rows along the input axis); their blocks\n"
    "go to a .gguf OUT (rows must be the tensor's last axis), or --fake.\n\n"
    "OUT holds each quantized tensor as integers (packed below 8 bits) with\n"
    "NAME.scale and NAME.zero_point, and its scheme in the metadata key\n"
    "scheme:NAME. Zero points are stored in the narrowest integer type that\n"
    "holds them; the report's bytes_quantized is what OUT holds per tensor\n"
    "(data, 4 bytes per scale, and those zero points).",
    1, 1, "one MODEL",
};

static bool graph_layout(void *ctx, const char *name, enum qp_wlayout *out)
{
    size_t l;
    if (!qp_strmap_get(ctx, name, &l))
        return false;
    *out = (enum qp_wlayout)l;
    return true;
}

static const char *human_bytes(double v, char *buf, size_t size)
{
    if (v < 1e4)
        snprintf(buf, size, "%.0f B", v);
    else if (v < 1e7)
        snprintf(buf, size, "%.1f kB", v / 1e3);
    else
        snprintf(buf, size, "%.1f MB", v / 1e6);
    return buf;
}

/* Rules and globs that matched no tensor: likely typos. */
static void warn_unused(const struct qp_ckpt_opts *o, const struct qp_ckpt_result *r,
                        const char *recipe_path)
{
    for (size_t i = 0; o->recipe && i < o->recipe->nrules; i++)
        if (!r->rule_used[i])
            qp_cli_warn("'%s': layers \"%s\" matches no tensor", recipe_path,
                        o->recipe->rules[i].glob);
    for (size_t i = 0; i < o->ninclude; i++)
        if (!r->include_used[i])
            qp_cli_warn("--include '%s' matches no tensor", o->include[i]);
    for (size_t i = 0; i < o->nexclude; i++)
        if (!r->exclude_used[i])
            qp_cli_warn("--exclude '%s' matches no tensor", o->exclude[i]);
}

static bool any_unused(const struct qp_ckpt_opts *o, const struct qp_ckpt_result *r)
{
    bool u = false;
    for (size_t i = 0; o->recipe && i < o->recipe->nrules; i++)
        u |= !r->rule_used[i];
    for (size_t i = 0; i < o->ninclude; i++)
        u |= !r->include_used[i];
    for (size_t i = 0; i < o->nexclude; i++)
        u |= !r->exclude_used[i];
    return u;
}

struct args {
    const char *out, *recipe_path, *report, *calib;
    struct qp_scheme scheme;
    bool has_scheme, fake, quiet, strict, layout_given, fp32_inputs;
    struct qp_cli_list include, exclude;
    struct qp_wquant_opts wq;
};

/* True when the scheme or a rule of the recipe is '@gptq'. */
static bool uses_gptq(const struct args *a, const struct qp_recipe *r)
{
    if (!r)
        return a->scheme.w.algo == QP_WALGO_GPTQ;
    bool any = r->has_default && !r->def.w_float &&
               r->def.scheme.w.algo == QP_WALGO_GPTQ;
    for (size_t i = 0; i < r->nrules; i++)
        any |= r->rules[i].w_said && !r->rules[i].w_float &&
               r->rules[i].scheme.w.algo == QP_WALGO_GPTQ;
    return any;
}

/* Calibration sequences of a model folder: LLM_CALIB_SEQS of
 * LLM_CALIB_CTX tokens at most, as eval's --calib. */
#define LLM_CALIB_CTX 512
#define LLM_CALIB_SEQS 16

/* Opens the model folder `model` as an LLM session (*llm; *s borrows its
 * session) with --calib's tokens (ids or text) as calibration sequences;
 * *n counts them. */
static enum qp_status open_llm(const struct args *a, const char *model,
                               struct qp_llm **llm, struct qp_session **s,
                               size_t *n, struct qp_error *err)
{
    int32_t *ids = NULL;
    size_t nid = 0;
    enum qp_status st = qp_llm_open(model, llm, err);
    if (!st)
        st = qp_llm_read_tokens(*llm, a->calib, &ids, &nid, err);
    if (!st)
        st = qp_llm_add_calib_ids(*llm, ids, nid, LLM_CALIB_CTX, LLM_CALIB_SEQS,
                                  n, err);
    free(ids);
    *s = *llm ? (*llm)->s : NULL;
    return st;
}

/* The GPTQ weights of the checkpoint's selection, made over --calib
 * through the model's graph (BatchNormalization kept: the weights are
 * the file's; a model folder's graph: model/llama-import.h), wired into
 * o. *llm is the model folder's LLM (NULL for an .onnx model), which
 * owns *s. */
static enum qp_status make_gptq(const struct args *a, const char *model,
                                struct qp_ckpt_opts *o, struct qp_session **s,
                                struct qp_llm **llm, struct qp_cli_gptq *c,
                                struct qp_error *err)
{
    struct qp_session_opts so = {.keep_bn = true};
    struct qp_qassign *as = NULL;
    size_t n = 0;
    bool dir = qp_llama_is_model_dir(model);
    enum qp_status st = dir ? open_llm(a, model, llm, s, &n, err)
                            : qp_session_open(model, &so, s, err);
    if (!st && !dir)
        st = qp_session_add_calib(*s, a->calib, &n, err);
    if (!st && !n)
        st = qp_fail(err, QP_E_NOTFOUND, dir ? "--calib '%s': no tokens"
                     : "--calib '%s': no .npy or .pb inputs there", a->calib);
    if (!st)
        st = qp_cli_gptq_init(c, *s, a->fp32_inputs, a->quiet, err);
    const struct qp_graph *g = st ? NULL : qp_session_graph(*s);
    if (!st)
        st = qp_qassign_ckpt(g, o, &as, err);
    if (!st)
        st = qp_cli_gptq_make(c, *s, as, a->wq.round, err);
    if (!st && !a->quiet)
        fprintf(stderr, "gptq: %zu layers on %zu calibration %s%s (%s "
                "inputs) in %.2f s; mean out_err %.4g, RTN %.4g\n", c->layers,
                n, dir ? "sequence" : "input", n == 1 ? "" : "s",
                a->fp32_inputs ? "fp32" : "quantized",
                c->seconds, c->layers ? c->out_err / (double)c->layers : 0,
                c->layers ? c->rtn_out_err / (double)c->layers : 0);
    qp_qassign_free(as);
    o->calibrated = qp_cli_gptq_calibrated;
    o->calibrated_ctx = c;
    return st;
}

static int run(const struct args *a, const char *model)
{
    struct qp_error err;
    struct qp_recipe *recipe = NULL;
    struct qp_dump *in = NULL;
    struct qp_dump_writer *w = NULL;
    struct qp_quant_report rep = {0};
    struct qp_session *sess = NULL;
    struct qp_llm *llm = NULL;
    struct qp_cli_gptq gc = {0};
    struct qp_strmap layouts;
    struct qp_ckpt_result res = {0};
    qp_strmap_init(&layouts);
    struct qp_progress prog = qp_cli_progress(a->quiet);
    struct qp_ckpt_opts o = {
        a->has_scheme ? &a->scheme : NULL, NULL, a->recipe_path, a->include.v,
        a->include.n, a->exclude.v, a->exclude.n, a->fake, a->wq, NULL, &layouts,
        NULL, &prog, NULL, NULL};
    enum qp_status st = QP_OK;
    if (a->recipe_path && (st = qp_recipe_load(a->recipe_path, &recipe, &err)))
        goto done;
    o.recipe = recipe;
    bool gptq = uses_gptq(a, recipe);
    if (a->calib && !gptq) {
        st = qp_fail(&err, QP_E_INVAL, "--calib '%s': only '@gptq' schemes use "
                     "calibration data, and %s has none", a->calib,
                     recipe ? "the recipe" : "the scheme");
        goto done;
    }
    if ((st = qp_dump_open(model, QP_DUMP_AUTO, &in, &err)))
        goto done;
    if (!a->layout_given && in->format == QP_DUMP_ONNX) {
        struct qp_error lerr;
        if (qp_onnx_weight_layouts(model, &layouts, &lerr))
            qp_cli_warn("%s; weight layouts default to torch ([out, in], OIHW): "
                        "pass --layout to choose", lerr.msg);
        else {
            o.layout_of = graph_layout;
            o.layout_note = "onnx-graph";
        }
    }
    if (gptq && a->calib && in->format != QP_DUMP_ONNX &&
        !qp_llama_is_model_dir(model)) {
        st = qp_fail(&err, QP_E_UNSUPPORTED, "'%s': GPTQ runs the model on the "
                     "calibration inputs, which needs its graph: give the .onnx "
                     "model or the Hugging Face model folder", model);
        goto done;
    }
    if ((st = qp_dump_writer_open(a->out, QP_DUMP_AUTO, &w, &err)))
        goto done;
    /* the checks that need no calibration come first */
    struct qp_ckpt_opts pre = o;
    pre.calibrated = gptq && a->calib ? qp_cli_gptq_calibrated : NULL;
    if ((st = qp_ckpt_check(in, w->format, a->out, &pre, &err)) ||
        (gptq && a->calib && (st = make_gptq(a, model, &o, &sess, &llm, &gc, &err))) ||
        (a->report &&
         (st = qp_quant_report_open(a->report, gptq && a->calib, &rep, &err))))
        goto done;
    rep.gptq_of = qp_cli_gptq_log;
    rep.ctx = &gc;
    if (gptq && a->calib &&
        ((st = qp_dump_writer_set_meta(w, "quantize:gptq_inputs",
                                       a->fp32_inputs ? "fp32" : "quantized",
                                       &err)) ||
         (st = qp_dump_writer_set_meta(w, "quantize:calib", a->calib, &err))))
        goto done;
    st = qp_ckpt_quantize(in, w, &o, rep.csv ? qp_quant_report_row : NULL, &rep,
                          &res, &err);
    qp_cli_progress_done();
    if (!st) {
        warn_unused(&o, &res, a->recipe_path);
        if (a->strict && any_unused(&o, &res))
            st = qp_fail(&err, QP_E_NOTFOUND, "--strict: a rule or glob matches "
                         "no tensor of '%s'", model);
    }
    if (!st) {
        st = qp_dump_writer_commit(w, &err);
        w = NULL;
    }
    if (!st && rep.csv) {
        st = qp_csv_commit(rep.csv, &err);
        rep.csv = NULL;
    }
    if (!st && !a->quiet) {
        char b0[32], b1[32];
        printf("%s: %zu tensors quantized, %zu kept; %s -> %s%s\n", a->out,
               res.quantized, res.kept, human_bytes(res.bytes_in, b0, sizeof b0),
               human_bytes(res.bytes_out, b1, sizeof b1),
               a->fake ? " as integers (written dequantized to fp32)" : "");
    }
done:
    qp_dump_writer_abort(w);
    qp_csv_abort(rep.csv);
    qp_dump_close(in);
    if (sess)
        qp_cli_gptq_release(&gc);
    if (llm)
        qp_llm_free(llm);
    else
        qp_session_free(sess);
    qp_strmap_release(&layouts);
    qp_recipe_free(recipe);
    qp_ckpt_result_release(&res);
    return st ? qp_cli_fail(&err) : QP_EXIT_OK;
}

int cmd_quantize(int argc, char **argv)
{
    struct args a = {0};
    struct qp_cli_opt opts[] = {
        QP_OPT_PARSE_("scheme", 's', "S", "quantize every selected tensor with "
                      "scheme S (w8c, w4g128, w4g32z@mse, ...)", &a.scheme,
                      qp_opt_scheme),
        QP_OPT_STR_("recipe", 'r', "R", "recipe JSON: a scheme (or \"fp32\") "
                    "per tensor glob", &a.recipe_path),
        QP_OPT_STR_("output", 'o', "OUT", "output checkpoint: .safetensors, "
                    ".npz, .h5, .gguf, or a directory of .npy", &a.out),
        QP_OPT_FLAG_("fake", 0, "write dequantized FP32 tensors (same names and "
                     "shapes) instead of integers", &a.fake),
        QP_OPT_STR_("report", 0, "CSV", "per-tensor error and size report",
                    &a.report),
        QP_OPT_LIST_("include", 0, "GLOB", "also quantize float tensors matching "
                     "GLOB (repeatable)", &a.include),
        QP_OPT_LIST_("exclude", 0, "GLOB", "never quantize tensors matching GLOB "
                     "(repeatable)", &a.exclude),
        QP_OPT_PARSE_("layout", 0, "L", "weight layout of every tensor: torch "
                      "([out,in], OIHW), tflite (OHWI), keras ([in,out], HWIO), "
                      "io ([in,out,...]); default: read from the graph for .onnx "
                      "models, else torch", &a.wq.layout, qp_opt_wlayout),
        QP_OPT_PARSE_("round", 0, "MODE", "half-away (default) or half-even",
                      &a.wq.round, qp_opt_round),
        QP_OPT_STR_("calib", 0, "DIR", "calibration inputs for @gptq: every "
                    ".npy or .pb file of DIR (or one file) is one input set of "
                    "the .onnx MODEL; for a model folder, tokens (.npy ids or "
                    "text): at most 16 sequences of 512", &a.calib),
        QP_OPT_GPTQ_INPUTS_(&a.fp32_inputs),
        QP_OPT_FLAG_("strict", 0, "fail when a recipe rule, --include or "
                     "--exclude matches no tensor", &a.strict),
        QP_OPT_FLAG_("quiet", 'q', "no progress output", &a.quiet),
        QP_OPT_END_,
    };
    int first, rc = qp_cli_parse(&cli, opts, argc, argv, &first);
    a.has_scheme = qp_cli_given(opts, "scheme");
    a.layout_given = qp_cli_given(opts, "layout");
    if (rc != QP_CLI_GO)
        ;
    else if (a.has_scheme == (a.recipe_path != NULL))
        rc = qp_cli_usage(&cli, "give exactly one of --scheme and --recipe");
    else if (!a.out)
        rc = qp_cli_usage(&cli, "-o OUT is missing");
    else
        rc = run(&a, argv[first]);
    qp_cli_list_release(&a.include);
    qp_cli_list_release(&a.exclude);
    return rc;
}
