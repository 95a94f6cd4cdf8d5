/* cli/cmd-quantize.c: placeholder until the command is written. */
#include "cli/cli.h"
#include "cli/commands.h"

int cmd_quantize(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    qp_cli_error("'quantize' is not implemented yet");
    return QP_EXIT_FAIL;
}
