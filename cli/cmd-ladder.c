/* cli/cmd-ladder.c: placeholder until the command is built. */
#include "cli/cli.h"
#include "cli/commands.h"

int cmd_ladder(int argc, char **argv)
{
    return qp_cli_not_yet("ladder", "bisection ladder: where along a chain of dumps the error jumps", argc, argv);
}
