/* cli/commands.h: one entry point per command, each in cli/cmd-<name>.c. */
#ifndef QP_CLI_COMMANDS_H
#define QP_CLI_COMMANDS_H

int cmd_inspect(int argc, char **argv);
int cmd_quantize(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_diff(int argc, char **argv);
int cmd_ladder(int argc, char **argv);
int cmd_detect(int argc, char **argv);
int cmd_sensitivity(int argc, char **argv);
int cmd_recipe(int argc, char **argv);
int cmd_sweep(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_requant(int argc, char **argv);
int cmd_kernel(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_demo(int argc, char **argv);
int cmd_eval(int argc, char **argv);
int cmd_generate(int argc, char **argv);
int cmd_tokenize(int argc, char **argv);

#endif
