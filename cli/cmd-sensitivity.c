/* cli/cmd-sensitivity.c: placeholder until the command is written. */
#include "cli/cli.h"
#include "cli/commands.h"

int cmd_sensitivity(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    qp_cli_error("'sensitivity' is not implemented yet");
    return QP_EXIT_FAIL;
}
