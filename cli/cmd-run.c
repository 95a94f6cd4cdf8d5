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
#include "cli/run-input.h"
#include "core/fileio.h"
#include "formats/dump.h"
#include "model/exec.h"
#include "model/onnx-import.h"
#include "model/qdq.h"
#include "model/qplan.h"
#include "model/tflite-import.h"
#include "quant/recipe.h"
#include "quant/scheme.h"

enum { OPT_INPUT, OPT_DUMP, OPT_CAPTURE, OPT_FORMAT, OPT_MODE, OPT_SCHEME,
       OPT_RECIPE, OPT_CALIB, OPT_REQUANT, OPT_KEEP_BN, OPT_QUIET };

static const struct qp_cli_opt opts[] = {
    [OPT_INPUT] = {"input", 'i', true, "[NAME=]FILE",
                   "an input tensor: .npy, .pb or a dump holding it; repeat "
                   "to make a batch (stacked along axis 0)"},
    [OPT_DUMP] = {"dump", 'o', true, "OUT",
                  "write every captured tensor to OUT (.h5, .npz, "
                  ".safetensors, or a directory of .npy files)"},
    [OPT_CAPTURE] = {"capture", 0, true, "GLOB",
                     "capture the values whose names match GLOB (default "
                     "'*': all; graph outputs are always written)"},
    [OPT_FORMAT] = {"format", 'f', true, "NAME",
                    "dump format when OUT's name does not tell: npy-dir, "
                    "pb-dir, raw-dir, npz, h5, safetensors"},
    [OPT_MODE] = {"mode", 'm', true, "MODE", "fp32 (default), fake or int"},
    [OPT_SCHEME] = {"scheme", 's', true, "S",
                    "quantization scheme for fake/int modes, e.g. w8c+a8t"},
    [OPT_RECIPE] = {"recipe", 'r', true, "FILE",
                    "per-layer recipe JSON for fake/int modes"},
    [OPT_CALIB] = {"calib", 0, true, "DIR",
                   "calibration inputs for the activation ranges: every .npy "
                   "or .pb file of DIR (or one file) is one run (default: the "
                   "--input batch)"},
    [OPT_REQUANT] = {"requant", 0, true, "FLAVOR",
                     "requantization flavor (default: the recipe's, else "
                     "tflite; ort for a model's own quantization)"},
    [OPT_KEEP_BN] = {"keep-batchnorm", 0, false, NULL,
                     "do not fold BatchNormalization into the preceding Conv "
                     "(capture the conv outputs too)"},
    [OPT_QUIET] = {"quiet", 'q', false, NULL, "no progress on stderr"},
    {0},
};

static const struct qp_cli cli = {
    "run", "MODEL --input FILE... [--dump OUT] [options]",
    "Run an ONNX model on inputs and capture every named intermediate "
    "tensor into a dump.",
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
    "A .tflite model runs TFLite's own integer arithmetic: --requant tflite "
    "(TFLite Micro,\ndefault) or tflite-x86 (TFLite's x86 kernels); "
    "--mode fp32 runs its dequantized float\nreference.",
    opts,
};

struct run_args {
    const char *model, *dump, *capture, *format;
    enum qp_run_mode mode;
    const char *scheme, *recipe, *calib, *requant;
    const char **inputs;
    int n_inputs;
    bool keep_bn, quiet, mode_given;
};

/* ---- quantized modes ---------------------------------------------------- */

struct quant {
    struct qp_scheme scheme;
    struct qp_recipe *recipe;
    struct qp_qplan *plan;
    struct qp_qdq *qdq;           /* int mode of a QDQ / QLinear model */
    struct qp_exec_hooks hooks;
    bool active;
};

static void quant_release(struct quant *q)
{
    qp_qplan_free(q->plan);
    qp_qdq_free(q->qdq);
    qp_recipe_free(q->recipe);
}

/* --mode int on a model with its own quantization, no scheme. */
static int qdq_setup(const struct run_args *a, const struct qp_graph *g,
                     struct quant *q)
{
    struct qp_error err;
    enum qp_rq_flavor f = QP_RQ_ORT;
    if (a->requant && !qp_rq_flavor_from_name(a->requant, &f))
        return qp_cli_usage(&cli, "unknown requantization flavor '%s'",
                            a->requant);
    if (qp_qdq_new(g, f, &q->qdq, &err))
        return qp_cli_fail(&err);
    qp_qdq_hooks(q->qdq, &q->hooks);
    q->active = true;
    if (!a->quiet)
        fprintf(stderr, "the model's own quantization: %d nodes fused into "
                "integer kernels (%s)\n", qp_qdq_fused(q->qdq),
                qp_rq_flavor_name(f));
    return QP_EXIT_OK;
}

/* One calibration run per file of DIR (or the single file) */
static enum qp_status calibrate_path(const struct qp_graph *g, struct quant *q,
                                     const char *path, size_t *runs,
                                     struct qp_error *err)
{
    char **files = NULL;
    size_t n = 0;
    enum qp_status st = QP_OK;
    if (qp_is_dir(path)) {
        char **npy = NULL, **pb = NULL;
        size_t nn = 0, np = 0;
        if ((st = qp_dump_scan_dir(path, ".npy", &npy, &nn, err)) ||
            (st = qp_dump_scan_dir(path, ".pb", &pb, &np, err))) {
            for (size_t i = 0; i < nn; i++)
                free(npy[i]);
            free(npy);
            return st;
        }
        files = calloc(nn + np + 1, sizeof *files);
        for (size_t i = 0; files && i < nn + np; i++)
            files[n++] = qp_path_join(path, i < nn ? npy[i] : pb[i - nn]);
        for (size_t i = 0; i < nn; i++)
            free(npy[i]);
        for (size_t i = 0; i < np; i++)
            free(pb[i]);
        free(npy);
        free(pb);
        if (!files)
            return qp_fail(err, QP_E_NOMEM, "out of memory");
        if (!n)
            st = qp_fail(err, QP_E_NOTFOUND, "'%s': no .npy or .pb calibration "
                         "inputs", path);
    } else {
        files = calloc(2, sizeof *files);
        if (!files || !(files[0] = strdup(path)))
            st = qp_fail(err, QP_E_NOMEM, "out of memory");
        n = 1;
    }
    for (size_t i = 0; !st && i < n; i++) {
        struct qp_tensor **feed;
        const char *spec[1] = {files[i]};
        if ((st = qp_run_inputs_load(g, spec, 1, &feed, err)))
            break;
        st = qp_qplan_calibrate(q->plan, (const struct qp_tensor *const *)feed, err);
        qp_run_inputs_free(g, feed);
        (*runs)++;
    }
    for (size_t i = 0; files && i < n; i++)
        free(files[i]);
    free(files);
    return st;
}

static int quant_setup(const struct run_args *a, const struct qp_graph *g,
                       struct qp_tensor **feed, struct quant *q)
{
    struct qp_error err;
    struct qp_qplan_opts o = {a->mode, NULL, NULL, QP_RQ_TFLITE_DOUBLE};
    if (!a->scheme && !a->recipe) {
        if (a->mode == QP_MODE_INT && qp_qdq_model(g))
            return qdq_setup(a, g, q);
        return qp_cli_usage(&cli, "mode %s needs --scheme or --recipe%s",
                            qp_run_mode_name(a->mode),
                            qp_qdq_model(g) ? " (the fp32 run of this QDQ model "
                            "already simulates its quantization)" : "");
    }
    if (a->scheme) {
        if (qp_scheme_parse(a->scheme, &q->scheme, NULL, &err))
            return qp_cli_fail(&err);
        o.scheme = &q->scheme;
    } else {
        if (qp_recipe_load(a->recipe, &q->recipe, &err))
            return qp_cli_fail(&err);
        o.recipe = q->recipe;
        if (q->recipe->requant)
            o.flavor = q->recipe->flavor;
    }
    if (a->requant && !qp_rq_flavor_from_name(a->requant, &o.flavor))
        return qp_cli_usage(&cli, "unknown requantization flavor '%s'",
                            a->requant);
    if (qp_qplan_new(g, &o, &q->plan, &err))
        return qp_cli_fail(&err);
    size_t runs = 0;
    enum qp_status st;
    if (a->calib) {
        st = calibrate_path(g, q, a->calib, &runs, &err);
    } else {
        if (o.scheme ? o.scheme->has_acts : true)
            qp_cli_warn("no --calib: activation ranges come from the inputs "
                        "themselves");
        st = qp_qplan_calibrate(q->plan, (const struct qp_tensor *const *)feed,
                                &err);
    }
    if (st || (st = qp_qplan_finish(q->plan, &err)))
        return qp_cli_fail(&err);
    qp_qplan_hooks(q->plan, &q->hooks);
    q->active = true;
    if (!a->quiet && a->calib)
        fprintf(stderr, "calibrated on %zu input%s from %s\n", runs,
                runs == 1 ? "" : "s", a->calib);
    return QP_EXIT_OK;
}

/* ---- capture into the dump writer ------------------------------------ */

struct sink {
    struct qp_dump_writer *w;
    bool *written; /* per value id */
    size_t count;
};

static enum qp_status sink_capture(void *ctx, const struct qp_graph *g, int v,
                                   const struct qp_tensor *t,
                                   struct qp_error *err)
{
    struct sink *s = ctx;
    (void)g;
    enum qp_status st = qp_dump_writer_add(s->w, t, err);
    if (!st) {
        s->written[v] = true;
        s->count++;
    }
    return st;
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

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int run(const struct run_args *a)
{
    struct qp_error err;
    struct qp_graph *g = NULL;
    struct qp_tensor **feed = NULL, **outs = NULL;
    struct sink sink = {0};
    struct quant quant = {0};
    int rc = QP_EXIT_FAIL;
    struct qp_import_opts io = {a->keep_bn, false};
    /* a .tflite model runs its own arithmetic (--requant tflite|tflite-x86) */
    bool tfl = qp_str_ends_with(a->model, ".tflite");
    /* --mode fp32 given: the float reference of a quantized model */
    struct qp_tflite_opts to = {QP_TFL_MICRO, a->mode_given &&
                                              a->mode == QP_MODE_FP32};
    if (tfl && a->requant && !qp_tfl_flavor_from_name(a->requant, &to.flavor))
        return qp_cli_usage(&cli, "unknown TFLite flavor '%s' (tflite, "
                            "tflite-x86)", a->requant);
    if (tfl && (a->scheme || a->recipe))
        return qp_cli_usage(&cli, "--scheme and --recipe do not apply to a "
                            "TFLite model yet: it runs its own quantization "
                            "(--mode fp32 gives its float reference)");
    if (tfl ? qp_model_load_tflite(a->model, &to, &g, &err)
            : qp_model_load_onnx(a->model, &io, &g, &err))
        return qp_cli_fail(&err);
    if (qp_run_inputs_load(g, a->inputs, a->n_inputs, &feed, &err))
        goto done;
    outs = calloc((size_t)(g->n_outputs ? g->n_outputs : 1), sizeof *outs);
    sink.written = calloc((size_t)(g->n_values ? g->n_values : 1), 1);
    if (!outs || !sink.written) {
        qp_fail(&err, QP_E_NOMEM, "out of memory");
        goto done;
    }
    if (a->mode != QP_MODE_FP32 && !(tfl && !a->scheme && !a->recipe) &&
        (rc = quant_setup(a, g, feed, &quant)) != QP_EXIT_OK)
        goto done_quiet;
    rc = QP_EXIT_FAIL;
    enum qp_dump_format fmt = QP_DUMP_AUTO;
    if (a->format && !qp_dump_format_from_name(a->format, &fmt)) {
        rc = qp_cli_usage(&cli, "unknown dump format '%s'", a->format);
        goto done_quiet;
    }
    if (a->dump && qp_dump_writer_open(a->dump, fmt, &sink.w, &err))
        goto done;
    struct qp_progress prog = qp_cli_progress(a->quiet);
    struct qp_exec_opts eo = {a->dump ? a->capture : NULL, sink_capture, &sink,
                              quant.active ? &quant.hooks : NULL, &prog};
    struct qp_exec_stats stats;
    double t0 = now_ms();
    enum qp_status st = qp_exec_run(g, (const struct qp_tensor *const *)feed,
                                    g->n_inputs, &eo, outs, &stats, &err);
    double ms = now_ms() - t0;
    qp_cli_progress_done();
    if (st)
        goto done;
    for (int k = 0; sink.w && k < g->n_outputs; k++)
        if (!sink.written[g->outputs[k]]) {
            if (qp_dump_writer_add(sink.w, outs[k], &err))
                goto done;
            sink.written[g->outputs[k]] = true;
            sink.count++;
        }
    if (sink.w) {
        st = qp_dump_writer_commit(sink.w, &err);
        sink.w = NULL;
        if (st)
            goto done;
    }
    printf("%s: %s, %d nodes in %.1f ms, peak activations %.1f MiB\n", a->model,
           !tfl ? qp_run_mode_name(a->mode) : to.dequantize
           ? "fp32 (dequantized)" : qp_tfl_flavor_name(to.flavor), g->n_nodes, ms,
           (double)stats.peak_bytes / (1 << 20));
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
    qp_dump_writer_abort(sink.w);
    quant_release(&quant);
    free(sink.written);
    for (int k = 0; outs && k < g->n_outputs; k++)
        qp_tensor_free(outs[k]);
    free(outs);
    qp_run_inputs_free(g, feed);
    qp_graph_free(g);
    return rc;
}

int cmd_run(int argc, char **argv)
{
    struct run_args a = {0};
    a.capture = "*";
    const char *mode = "fp32";
    struct qp_cli_state s = {0};
    const char *arg;
    int o, rc = QP_EXIT_OK;
    a.inputs = calloc((size_t)argc + 1, sizeof *a.inputs);
    if (!a.inputs) {
        qp_cli_error("out of memory");
        return QP_EXIT_FAIL;
    }
    while ((o = qp_cli_next(&s, argc, argv, &cli, &arg)) != QP_CLI_END) {
        switch (o) {
        case QP_CLI_HELP: free(a.inputs); return QP_EXIT_OK;
        case QP_CLI_ERROR: free(a.inputs); return QP_EXIT_USAGE;
        case OPT_INPUT: a.inputs[a.n_inputs++] = arg; break;
        case OPT_DUMP: a.dump = arg; break;
        case OPT_CAPTURE: a.capture = arg; break;
        case OPT_FORMAT: a.format = arg; break;
        case OPT_MODE: mode = arg; a.mode_given = true; break;
        case OPT_SCHEME: a.scheme = arg; break;
        case OPT_RECIPE: a.recipe = arg; break;
        case OPT_CALIB: a.calib = arg; break;
        case OPT_REQUANT: a.requant = arg; break;
        case OPT_KEEP_BN: a.keep_bn = true; break;
        case OPT_QUIET: a.quiet = true; break;
        }
    }
    if (s.optind != argc - 1)
        rc = qp_cli_usage(&cli, "expected one MODEL, got %d operands",
                          argc - s.optind);
    else if (!a.n_inputs)
        rc = qp_cli_usage(&cli, "--input is required");
    else if (!qp_run_mode_from_name(mode, &a.mode))
        rc = qp_cli_usage(&cli, "unknown mode '%s' (fp32, fake or int)", mode);
    else if (a.scheme && a.recipe)
        rc = qp_cli_usage(&cli, "give --scheme or --recipe, not both");
    else if (a.mode == QP_MODE_FP32 && (a.scheme || a.recipe || a.calib ||
                                        (a.requant && !qp_str_ends_with(
                                            argv[argc - 1], ".tflite"))))
        rc = qp_cli_usage(&cli, "--scheme, --recipe, --calib and --requant need "
                          "--mode fake or int");
    if (rc == QP_EXIT_OK) {
        a.model = argv[s.optind];
        rc = run(&a);
    }
    free(a.inputs);
    return rc;
}
