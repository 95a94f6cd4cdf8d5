/* cli/cmd-kernel.c: placeholder until the command is written. */
#include "cli/cli.h"
#include "cli/commands.h"

int cmd_kernel(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    qp_cli_error("'kernel' is not implemented yet");
    return QP_EXIT_FAIL;
}
