/* cli/cmd-sensitivity.c: placeholder until the command is built. */
#include "cli/cli.h"
#include "cli/commands.h"

int cmd_sensitivity(int argc, char **argv)
{
    return qp_cli_not_yet("sensitivity", "quantize one layer at a time and rank the damage", argc, argv);
}
