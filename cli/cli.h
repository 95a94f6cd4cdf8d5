/* cli/cli.h: what every command shares: typed, bound options (in the style
 * of git's parse-options) that also write --help, error and progress
 * output, and number parsing.
 *
 * A command declares its options once, as a local array whose entries name
 * the variable each option writes (QP_OPT_* macros below), and calls
 * qp_cli_parse, which reads argv with getopt_long (options may follow
 * operands), converts and checks every value (a malformed value is a usage
 * error, exit 2, naming the option), refuses two options of one exclusive
 * group, and checks the operand count. Commands never read option strings
 * by hand.
 *
 * Only cli/ prints. Exit codes (DESIGN.md §4): 0 ok, 1 failure, 2 usage
 * error, 3 a --fail-if threshold was crossed. */
#ifndef QP_CLI_CLI_H
#define QP_CLI_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/progress.h"
#include "core/status.h"

enum { QP_EXIT_OK = 0, QP_EXIT_FAIL = 1, QP_EXIT_USAGE = 2, QP_EXIT_THRESHOLD = 3 };

/* What an option's argument becomes. */
enum qp_opt_kind {
    QP_OPT_END = 0, /* ends the table */
    QP_OPT_FLAG,    /* bool *: set to true; no argument */
    QP_OPT_STR,     /* const char **: the argument (the last one wins) */
    QP_OPT_LIST,    /* struct qp_cli_list *: every argument, in order */
    QP_OPT_INT,     /* int64_t *: a whole decimal number in [min, max] */
    QP_OPT_NUM,     /* double *: a finite number in [min, max] */
    QP_OPT_CHOICE,  /* int *: index of the argument in choices[] */
    QP_OPT_PARSE,   /* any: parse(arg, dest, err) converts it; a failure is a
                       usage error with err's message */
    QP_OPT_KIND_COUNT
};

/* Arguments of a repeatable option (borrowed from argv). */
struct qp_cli_list {
    const char **v;
    size_t n;
};

struct qp_cli_opt {
    const char *name;     /* long name, without "--" */
    int short_name;       /* 0 for none */
    enum qp_opt_kind kind;
    const char *arg_name; /* shown in --help, e.g. "FILE" */
    const char *help;
    void *dest;
    const char *const *choices; /* QP_OPT_CHOICE: ends with NULL */
    double min, max;            /* QP_OPT_INT / QP_OPT_NUM bounds */
    enum qp_status (*parse)(const char *arg, void *dest, struct qp_error *err);
    int group;   /* options sharing a group > 0 exclude each other */
    bool given;  /* set by qp_cli_parse */
};

#define QP_OPT_FLAG_(n, s, h, d) {n, s, QP_OPT_FLAG, NULL, h, d, NULL, 0, 0, NULL, 0, false}
#define QP_OPT_STR_(n, s, a, h, d) {n, s, QP_OPT_STR, a, h, d, NULL, 0, 0, NULL, 0, false}
#define QP_OPT_LIST_(n, s, a, h, d) {n, s, QP_OPT_LIST, a, h, d, NULL, 0, 0, NULL, 0, false}
#define QP_OPT_INT_(n, s, a, h, d, lo, hi) {n, s, QP_OPT_INT, a, h, d, NULL, lo, hi, NULL, 0, false}
#define QP_OPT_NUM_(n, s, a, h, d, lo, hi) {n, s, QP_OPT_NUM, a, h, d, NULL, lo, hi, NULL, 0, false}
#define QP_OPT_CHOICE_(n, s, a, h, d, c) {n, s, QP_OPT_CHOICE, a, h, d, c, 0, 0, NULL, 0, false}
#define QP_OPT_PARSE_(n, s, a, h, d, fn) {n, s, QP_OPT_PARSE, a, h, d, NULL, 0, 0, fn, 0, false}
#define QP_OPT_END_ {NULL, 0, QP_OPT_END, NULL, NULL, NULL, NULL, 0, 0, NULL, 0, false}

struct qp_cli {
    const char *cmd;      /* "diff" */
    const char *usage;    /* "REF TEST [options]" */
    const char *summary;  /* one sentence */
    const char *details;  /* optional paragraph after the options, or NULL */
    int min_operands, max_operands; /* max < 0: any number */
    const char *operands_what;      /* "MODEL", "REF and TEST": for messages */
};

/* qp_cli_parse returns QP_CLI_GO when the command should run; anything
 * else is the exit code to return at once (0 after --help, 2 after a usage
 * message). */
#define QP_CLI_GO (-1)

/* Parses argv[1..argc) into the options' destinations (argv[0] is the
 * command name). Operands are argv[*first .. argc) after the call (getopt
 * moves them to the end). Groups: set opts[i].group > 0 before the call;
 * two given options of one group are refused. */
int qp_cli_parse(const struct qp_cli *cli, struct qp_cli_opt *opts, int argc,
                 char **argv, int *first);

/* Makes the options named a and b exclude each other (a new group). */
void qp_cli_exclusive(struct qp_cli_opt *opts, const char *a, const char *b);

/* True when the option named name was given (after qp_cli_parse). */
bool qp_cli_given(const struct qp_cli_opt *opts, const char *name);

/* Prints the command's help to stdout. */
void qp_cli_help(const struct qp_cli *cli, const struct qp_cli_opt *opts);

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

/* A command that is listed but not built yet: --help says so (exit 0),
 * anything else is an error saying so (exit 1). */
int qp_cli_not_yet(const char *cmd, const char *summary, int argc,
                   char **argv);

/* Frees a list's array (its strings are argv's). */
void qp_cli_list_release(struct qp_cli_list *l);

#endif
