/* cli/cmd-ladder.c: placeholder until the command is written. */
#include "cli/cli.h"
#include "cli/commands.h"

int cmd_ladder(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    qp_cli_error("'ladder' is not implemented yet");
    return QP_EXIT_FAIL;
}
