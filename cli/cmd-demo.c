/* cli/cmd-demo.c: the demo lives in the source tree (scripts/demo.sh, run
 * by `make demo`): it builds its generator, makes the sample data and
 * fetches the pinned model, none of which an installed binary has. */

#include "cli/cli.h"
#include "cli/commands.h"

static const struct qp_cli cli = {
    "demo",
    "",
    "The whole job on bundled data: run 'make demo' in the source tree.",
    "make demo generates a host reference and a device dump with one damaged\n"
    "layer, inspects and diffs them, then fetches PP-OCRv4's recognizer\n"
    "(pinned) and quantizes it, runs it in fp32, fake-quant and int8 and\n"
    "diffs the runs; the report lands in reports/demo/ (see data/README.md).",
    0, 0, NULL,
};

int cmd_demo(int argc, char **argv)
{
    struct qp_cli_opt opts[] = {QP_OPT_END_};
    int first, rc = qp_cli_parse(&cli, opts, argc, argv, &first);
    if (rc != QP_CLI_GO)
        return rc;
    qp_cli_error("the demo runs from the source tree: 'make demo' (it builds "
                 "its data generator and fetches the model; see 'qprobe demo "
                 "--help')");
    return QP_EXIT_FAIL;
}
