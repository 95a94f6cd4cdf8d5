/* cli/cmd-sweep.c: placeholder until the command is built. */
#include "cli/cli.h"
#include "cli/commands.h"

int cmd_sweep(int argc, char **argv)
{
    return qp_cli_not_yet("sweep", "evaluate a grid of schemes into one CSV", argc, argv);
}
