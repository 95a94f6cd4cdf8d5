/* cli/main.c: the qprobe command table. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/commands.h"
#include "core/outfile.h"
#include "kernels/blas.h"
#include "kernels/dispatch.h"
#include "kernels/startup.h"

#include "core/version.h"

static const struct {
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *summary;
} commands[] = {
    {"inspect", cmd_inspect, "per-tensor statistics of a checkpoint or dump"},
    {"quantize", cmd_quantize, "post-training quantization of the weights"},
    {"run", cmd_run, "forward pass in fp32, fake-quant or integer mode, "
                     "capturing every tensor"},
    {"diff", cmd_diff, "per-tensor error metrics between two dumps, worst first"},
    {"ladder", cmd_ladder, "bisection ladder: where along fp32 -> fake -> int "
                           "-> device the error jumps"},
    {"detect", cmd_detect, "which requantization flavor reproduces a device's "
                           "integer dump"},
    {"sensitivity", cmd_sensitivity, "quantize one layer at a time and rank "
                                     "the damage, with a hint per layer"},
    {"recipe", cmd_recipe, "search a mixed-precision recipe priced in bytes, "
                           "validated on held-out data"},
    {"sweep", cmd_sweep, "evaluate a grid of schemes or recipes into one "
                       "resumable CSV"},
    {"report", cmd_report, "plots and one HTML page from sweep, diff, "
                         "sensitivity, ladder and recipe CSVs"},
    {"requant", cmd_requant, "device-exact requantization of int32 "
                             "accumulators"},
    {"kernel", cmd_kernel, "run one integer layer (conv, depthwise, fc) with "
                           "device conventions"},
    {"export", cmd_export, "a scheme or recipe as QDQ ONNX, QNN/AIMET encodings, "
                           "ORT overrides, llama.cpp or GPTQModel configs"},
    {"demo", cmd_demo, "the whole job on the bundled model"},
    {"eval", cmd_eval, "LLM perplexity and KL divergence (llama.cpp's "
                       "semantics and files)"},
    {"generate", cmd_generate, "greedy LLM generation with a KV cache, any "
                               "scheme"},
    {"tokenize", cmd_tokenize, "text to token ids and back (HF tokenizer.json)"},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: qprobe COMMAND [options]   (qprobe COMMAND --help)\n\n"
               "commands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-12s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "\n  --version    version and the kernels chosen for this CPU\n");
}

/* Exit code rc, or a failure when what went to stdout could not be
 * written (a full disk, a closed terminal): results must not be lost
 * silently. */
static int stdout_checked(int rc)
{
    if (fflush(stdout) == 0 && !ferror(stdout))
        return rc;
    fprintf(stderr, "qprobe: error: cannot write to standard output: %s\n",
            strerror(errno));
    return rc ? rc : QP_EXIT_FAIL;
}

int main(int argc, char **argv)
{
    struct qp_error err;
    if (qp_kern_startup(argv, &err)) {
        qp_cli_error("%s", err.msg);
        return QP_EXIT_USAGE;
    }
    qp_outfile_cleanup_install(); /* no temporary outlives an interrupt */
    if (argc < 2) {
        usage(stderr);
        return QP_EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help") || !strcmp(cmd, "help")) {
        usage(stdout);
        return stdout_checked(QP_EXIT_OK);
    }
    if (!strcmp(cmd, "--version") || !strcmp(cmd, "version")) {
        printf("qprobe %s\n%s\n%s\n", QP_VERSION, qp_kern_describe(),
               qp_blas_describe());
        return stdout_checked(QP_EXIT_OK);
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(cmd, commands[i].name))
            return stdout_checked(commands[i].fn(argc - 1, argv + 1));
    fprintf(stderr, "qprobe: '%s' is not a command; see 'qprobe --help'\n", cmd);
    return QP_EXIT_USAGE;
}
