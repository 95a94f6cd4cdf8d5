/* cli/cmd-report.c: placeholder until the command is written. */
#include "cli/cli.h"
#include "cli/commands.h"

int cmd_report(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    qp_cli_error("'report' is not implemented yet");
    return QP_EXIT_FAIL;
}
