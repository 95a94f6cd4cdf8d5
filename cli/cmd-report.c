/* cli/cmd-report.c: placeholder until the command is built. */
#include "cli/cli.h"
#include "cli/commands.h"

int cmd_report(int argc, char **argv)
{
    return qp_cli_not_yet("report", "plots and an HTML page from CSV files", argc, argv);
}
