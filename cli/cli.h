/* cli/cli.h: what every command shares: option parsing that also writes
 * --help, error and progress output, and number parsing.
 *
 * Only cli/ prints. Exit codes (DESIGN.md §4): 0 ok, 1 failure, 2 usage
 * error, 3 a --fail-if threshold was crossed. */
#ifndef QP_CLI_CLI_H
#define QP_CLI_CLI_H

#include <stdbool.h>
#include <stdint.h>

#include "core/progress.h"
#include "core/status.h"

enum { QP_EXIT_OK = 0, QP_EXIT_FAIL = 1, QP_EXIT_USAGE = 2, QP_EXIT_THRESHOLD = 3 };

struct qp_cli_opt {
    const char *name;    /* long name, without "--" */
    int short_name;      /* 0 for none */
    bool has_arg;
    const char *arg_name; /* shown in --help, e.g. "FILE" */
    const char *help;
};

struct qp_cli {
    const char *cmd;      /* "diff" */
    const char *usage;    /* "REF TEST [options]" */
    const char *summary;  /* one sentence */
    const char *details;  /* optional paragraph after the options, or NULL */
    const struct qp_cli_opt *opts; /* ends with {0}; -h/--help is implicit */
};

/* Iterates over argv with getopt_long (options may follow operands).
 * Returns the index into cli->opts of the next option (its argument in
 * *arg), or one of: */
enum {
    QP_CLI_END = -1,   /* no more options; operands are argv[*optind..argc) */
    QP_CLI_HELP = -2,  /* --help was printed: return QP_EXIT_OK */
    QP_CLI_ERROR = -3, /* a usage message was printed: return QP_EXIT_USAGE */
};
struct qp_cli_state {
    int optind;
    void *priv; /* getopt_long tables, freed at QP_CLI_END/HELP/ERROR */
};
int qp_cli_next(struct qp_cli_state *s, int argc, char **argv,
                const struct qp_cli *cli, const char **arg);

/* Prints the command's help to stdout. */
void qp_cli_help(const struct qp_cli *cli);

/* "qprobe: error: <msg>" on stderr. */
void qp_cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* "qprobe: warning: <msg>" on stderr. */
void qp_cli_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Prints err's message as an error and returns QP_EXIT_FAIL. */
int qp_cli_fail(const struct qp_error *err);

/* Prints "qprobe CMD: <msg>; see 'qprobe CMD --help'" and returns
 * QP_EXIT_USAGE. */
int qp_cli_usage(const struct qp_cli *cli, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* A progress reporter that draws on stderr when it is a terminal and quiet
 * is false; otherwise its fn is NULL. */
struct qp_progress qp_cli_progress(bool quiet);
/* Ends a progress line (newline) if one was drawn. */
void qp_cli_progress_done(void);

/* Strict number parsing of a whole string; false when s is not one. */
bool qp_cli_parse_i64(const char *s, int64_t *out);
bool qp_cli_parse_f64(const char *s, double *out);

#endif
