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
#include "formats/dump.h"
#include "model/exec.h"
#include "model/onnx-import.h"

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
                   "calibration inputs for activation ranges (each file one "
                   "input)"},
    [OPT_REQUANT] = {"requant", 0, true, "FLAVOR",
                     "requantization flavor of int mode (default: the "
                     "recipe's, else tflite)"},
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
    "fp32 runs in float32 (matmul and conv through OpenBLAS). Names in the "
    "dump are the\nmodel's value names, so two runs (or a run and a device "
    "dump) align in 'qprobe diff'.\nBatchNormalization after a Conv is "
    "folded into it (its output keeps the BN's name)\nunless "
    "--keep-batchnorm. Without --dump, the outputs are summarised on stdout.",
    opts,
};

struct run_args {
    const char *model, *dump, *capture, *format, *mode;
    const char *scheme, *recipe, *calib, *requant;
    const char **inputs;
    int n_inputs;
    bool keep_bn, quiet;
};

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
    int rc = QP_EXIT_FAIL;
    struct qp_import_opts io = {a->keep_bn, false};
    if (qp_model_load_onnx(a->model, &io, &g, &err))
        return qp_cli_fail(&err);
    if (qp_run_inputs_load(g, a->inputs, a->n_inputs, &feed, &err))
        goto done;
    outs = calloc((size_t)(g->n_outputs ? g->n_outputs : 1), sizeof *outs);
    sink.written = calloc((size_t)(g->n_values ? g->n_values : 1), 1);
    if (!outs || !sink.written) {
        qp_fail(&err, QP_E_NOMEM, "out of memory");
        goto done;
    }
    enum qp_dump_format fmt = QP_DUMP_AUTO;
    if (a->format && !qp_dump_format_from_name(a->format, &fmt)) {
        rc = qp_cli_usage(&cli, "unknown dump format '%s'", a->format);
        goto done_quiet;
    }
    if (a->dump && qp_dump_writer_open(a->dump, fmt, &sink.w, &err))
        goto done;
    struct qp_progress prog = qp_cli_progress(a->quiet);
    struct qp_exec_opts eo = {a->dump ? a->capture : NULL, sink_capture, &sink,
                              NULL, &prog};
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
    printf("%s: %d nodes in %.1f ms, peak activations %.1f MiB\n", a->model,
           g->n_nodes, ms, (double)stats.peak_bytes / (1 << 20));
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
    a.mode = "fp32";
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
        case OPT_MODE: a.mode = arg; break;
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
    else if (strcmp(a.mode, "fp32"))
        rc = qp_cli_usage(&cli, "mode '%s': only fp32 is available in this "
                          "build", a.mode);
    if (rc == QP_EXIT_OK) {
        a.model = argv[s.optind];
        rc = run(&a);
    }
    free(a.inputs);
    return rc;
}
