/* cli/cmd-export.c: qprobe export [MODEL] (--scheme S | --recipe R)
 * [--calib X] --to FORMAT -o OUT: the export pipelines of
 * analysis/export.h, with their warnings and summary printed here. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/export.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "cli/opt-types.h"
#include "quant/recipe.h"

static const struct qp_cli cli = {
    "export", "[MODEL] (--scheme S | --recipe R) [--calib X] --to FORMAT -o OUT",
    "Writes a scheme or recipe, and the ranges calibrated for it, in a format "
    "a runtime or quantization tool loads.",
    "Formats (--to):\n"
    "  onnx-qdq           MODEL.onnx as a QDQ ONNX model (opset 13, or 21 for 4-\n"
    "                     and 16-bit tensors): QuantizeLinear/DequantizeLinear\n"
    "                     named and placed as onnxruntime's quantize_static does;\n"
    "                     per-channel int8 (int4, int16) weights, int32 biases,\n"
    "                     calibrated activations (uint8 for 'z' schemes); with a\n"
    "                     recipe, DQ->Q converts where a layer computes at another\n"
    "                     precision than its input (--no-convert: none, qprobe's\n"
    "                     fake mode exactly). Runs in ONNX Runtime.\n"
    "  encodings          AIMET/QNN encodings JSON of every quantized weight and\n"
    "                     calibrated activation of MODEL.onnx (offset = -zero point\n"
    "                     on the unsigned grid, min = offset * scale)\n"
    "  qnn-overrides      the same for qnn-onnx-converter --quantization_overrides,\n"
    "                     holding only what the recipe's rules decide\n"
    "  ort-overrides      TensorQuantOverrides JSON for quantize_static (MODEL.onnx\n"
    "                     gives the tensor names; with --calib, scales too):\n"
    "                         import json\n"
    "                         from onnxruntime.quantization import QuantType, quantize_static\n"
    "                         ov = json.load(open('OUT'))\n"
    "                         for t in ov.values():\n"
    "                             for d in t:\n"
    "                                 for k in ('quant_type',):\n"
    "                                     if k in d: d[k] = QuantType[d[k]]\n"
    "                                 if 'convert' in d:\n"
    "                                     d['convert']['quant_type'] = QuantType[d['convert']['quant_type']]\n"
    "                         quantize_static('model.onnx', 'model-q.onnx', reader,\n"
    "                             per_channel=True, extra_options={'TensorQuantOverrides': ov})\n"
    "  llama-tensor-type  llama-quantize arguments, one a line: --tensor-type with\n"
    "                     anchored regexes over llama.cpp's tensor names (HF names\n"
    "                     mapped: model.layers.N.self_attn.q_proj -> blk.N.attn_q,\n"
    "                     mlp.down_proj -> ffn_down, ...), --output-tensor-type and\n"
    "                     --token-embedding-type; then the type to pass:\n"
    "                         llama-quantize $(cat OUT) in-f16.gguf out.gguf TYPE\n"
    "                     Needs the layer count: MODEL (a checkpoint) or --layers N\n"
    "  gptqmodel-dynamic  GPTQModel's QuantizeConfig (bits, group_size, sym,\n"
    "                     desc_act) with the `dynamic` dict of the recipe's rules\n"
    "                     (\"+:regex\" overrides, \"-:regex\" skips a module)\n"
    "  gguf               a Hugging Face Llama/Mistral folder as GGUF v3 for\n"
    "                     llama.cpp (architecture llama, its hyperparameters and\n"
    "                     tokenizer, q/k rows in ggml's rope order): weights in\n"
    "                     the ggml type of their scheme (q8_0, q4_0, q4_1, q5_0,\n"
    "                     q4_k, q6_k; llama.cpp's fallback for rows that do not\n"
    "                     divide, reported), --float-type for the others, norms\n"
    "                     f32. Load it with llama.cpp: llama-cli -m OUT\n"
    "  gptq               a Llama-family MODEL folder quantized by GPTQ on --calib\n"
    "                     tokens (.npy ids or text) into the folder OUT as AutoGPTQ\n"
    "                     and GPTQModel write it: model.safetensors (qweight, qzeros,\n"
    "                     fp16 scales, g_idx per decoder layer), quantize_config.json,\n"
    "                     config.json with quantization_config; --scheme w4g128@gptq\n"
    "                     (2, 4 or 8 bits; the scales are rounded to fp16 while GPTQ\n"
    "                     runs: the weights are those of the scheme with ':half')\n\n"
    "MODEL is needed by the ONNX formats; the recipe-only formats take one to\n"
    "check that the recipe names real tensors. A rule that matches nothing is\n"
    "a warning (--strict: an error). OUT appears only when complete.",
    0, 1, "at most one MODEL",
};

static enum qp_status opt_format(const char *arg, void *dest, struct qp_error *err)
{
    if (qp_export_format_from_name(arg, dest))
        return QP_OK;
    char list[512] = "";
    for (int f = 0; f < QP_EXPORT_FORMAT_COUNT; f++) {
        strncat(list, f ? ", " : "", sizeof list - strlen(list) - 1);
        strncat(list, qp_export_format_info((enum qp_export_format)f)->name,
                sizeof list - strlen(list) - 1);
    }
    return qp_fail(err, QP_E_INVAL, "'%s' is not an export format (%s)", arg, list);
}

static enum qp_status opt_float_type(const char *arg, void *dest,
                                     struct qp_error *err)
{
    static const enum qp_ggml_type types[] = {QP_GGML_F32, QP_GGML_F16,
                                              QP_GGML_BF16};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        if (!strcmp(arg, qp_ggml_type_info(types[i])->name)) {
            *(enum qp_ggml_type *)dest = types[i];
            return QP_OK;
        }
    return qp_fail(err, QP_E_INVAL, "'%s' is not a float type (f32, f16, bf16)",
                   arg);
}

struct args {
    const char *recipe_path, *calib, *out;
    struct qp_scheme scheme;
    enum qp_export_format format;
    int64_t layers;
    enum qp_ggml_type float_type;
    bool strict, no_convert, external, quiet;
};

static int run(const struct args *a, const char *model, bool has_scheme)
{
    struct qp_error err;
    struct qp_recipe *recipe = NULL;
    struct qp_export_result r = {0};
    if (a->recipe_path && qp_recipe_load(a->recipe_path, &recipe, &err))
        return qp_cli_fail(&err);
    struct qp_progress prog = qp_cli_progress(a->quiet);
    struct qp_export_opts o = {
        .format = a->format, .model = model, .scheme = has_scheme ? &a->scheme : NULL,
        .recipe = recipe, .recipe_name = a->recipe_path, .calib = a->calib,
        .out = a->out, .strict = a->strict, .no_convert = a->no_convert,
        .external = a->external, .layers = (int)a->layers,
        .float_type = a->float_type, .progress = &prog};
    enum qp_status st = qp_export_run(&o, &r, &err);
    qp_cli_progress_done();
    for (size_t i = 0; recipe && r.unused && i < recipe->nrules; i++)
        if (r.unused[i] && !a->strict)
            qp_cli_warn("'%s': layers \"%s\" matches no tensor of '%s'",
                        a->recipe_path, recipe->rules[i].glob,
                        model ? model : "the model");
    for (char *line = r.notes, *end; *line; line = end + 1) {
        if (!(end = strchr(line, '\n')))
            break;
        *end = '\0';
        qp_cli_warn("%s", line);
    }
    if (!st && !a->quiet) {
        if (a->calib)
            printf("calibrated on %zu input%s from %s\n", r.calib_sets,
                   r.calib_sets == 1 ? "" : "s", a->calib);
        printf("%s\n", r.summary);
    }
    qp_export_result_release(&r);
    qp_recipe_free(recipe);
    return st ? qp_cli_fail(&err) : QP_EXIT_OK;
}

int cmd_export(int argc, char **argv)
{
    struct args a = {0};
    struct qp_cli_opt opts[] = {
        QP_OPT_PARSE_("to", 't', "FORMAT", "onnx-qdq, encodings, qnn-overrides, "
                      "ort-overrides, llama-tensor-type, gptqmodel-dynamic, gguf, "
                      "gptq", &a.format, opt_format),
        QP_OPT_STR_("output", 'o', "OUT", "the file to write (the folder, for gptq)", &a.out),
        QP_OPT_PARSE_("scheme", 's', "S", "one scheme for every layer (w8c+a8tz, "
                      "w4c, ...)", &a.scheme, qp_opt_scheme),
        QP_OPT_STR_("recipe", 'r', "R", "a recipe JSON: a scheme per layer glob",
                    &a.recipe_path),
        QP_OPT_STR_("calib", 0, "X", "calibration inputs for the activation ranges: "
                    "every .npy or .pb file of folder X (or one file) is one run",
                    &a.calib),
        QP_OPT_FLAG_("strict", 0, "fail (and write nothing) when a recipe rule "
                     "matches no tensor of MODEL", &a.strict),
        QP_OPT_FLAG_("no-convert", 0, "onnx-qdq: no DQ->Q converts at precision "
                     "boundaries (every consumer reads a value at its own "
                     "precision, as qprobe's fake mode)", &a.no_convert),
        QP_OPT_FLAG_("external-data", 0, "onnx-qdq: weights in OUT.data beside OUT "
                     "(automatic past 2 GiB)", &a.external),
        QP_OPT_INT_("layers", 0, "N", "llama-tensor-type without MODEL: the number "
                    "of transformer blocks", &a.layers, 1, 100000),
        QP_OPT_PARSE_("float-type", 0, "T", "gguf: the type of weights that stay "
                      "float: f32 (default), f16, bf16", &a.float_type,
                      opt_float_type),
        QP_OPT_FLAG_("quiet", 'q', "no summary on stdout", &a.quiet),
        QP_OPT_END_,
    };
    qp_cli_exclusive(opts, "scheme", "recipe");
    int first, rc = qp_cli_parse(&cli, opts, argc, argv, &first);
    bool has_scheme = qp_cli_given(opts, "scheme");
    if (rc != QP_CLI_GO)
        return rc;
    if (!qp_cli_given(opts, "to"))
        return qp_cli_usage(&cli, "--to FORMAT is required");
    if (!a.out)
        return qp_cli_usage(&cli, "-o OUT is missing");
    if (!has_scheme && !a.recipe_path)
        return qp_cli_usage(&cli, "give --scheme or --recipe");
    const struct qp_export_format_info *fi = qp_export_format_info(a.format);
    if (fi->recipe_only && has_scheme)
        return qp_cli_usage(&cli, "--to %s translates a recipe's rules: give "
                            "--recipe, not --scheme", fi->name);
    if (fi->model_required && first >= argc)
        return qp_cli_usage(&cli, "--to %s needs MODEL", fi->name);
    return run(&a, first < argc ? argv[first] : NULL, has_scheme);
}
