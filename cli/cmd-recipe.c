/* cli/cmd-recipe.c: placeholder until the command is built. */
#include "cli/cli.h"
#include "cli/commands.h"

int cmd_recipe(int argc, char **argv)
{
    return qp_cli_not_yet("recipe", "search a mixed-precision recipe priced in bytes", argc, argv);
}
