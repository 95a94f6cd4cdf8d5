#include "cli/cli.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* getopt_long tables for opts: long options return 1000 + index. */
struct tables {
    struct option *longopts;
    char *shortopts;
};

static void tables_free(struct tables *t)
{
    if (t) {
        free(t->longopts);
        free(t->shortopts);
    }
}

static size_t count_opts(const struct qp_cli_opt *opts)
{
    size_t n = 0;
    while (opts && opts[n].kind != QP_OPT_END)
        n++;
    return n;
}

static bool tables_build(const struct qp_cli_opt *opts, struct tables *t)
{
    size_t n = count_opts(opts);
    t->longopts = calloc(n + 2, sizeof *t->longopts);
    t->shortopts = calloc(2 * n + 4, 1);
    if (!t->longopts || !t->shortopts) {
        tables_free(t);
        return false;
    }
    size_t k = 0;
    t->shortopts[k++] = ':'; /* report missing arguments as ':' */
    t->shortopts[k++] = 'h';
    for (size_t i = 0; i < n; i++) {
        const struct qp_cli_opt *o = &opts[i];
        bool arg = o->kind != QP_OPT_FLAG;
        t->longopts[i] = (struct option){o->name, arg ? required_argument
                                                      : no_argument,
                                         NULL, 1000 + (int)i};
        if (o->short_name) {
            t->shortopts[k++] = (char)o->short_name;
            if (arg)
                t->shortopts[k++] = ':';
        }
    }
    t->longopts[n] = (struct option){"help", no_argument, NULL, 'h'};
    return true;
}

/* "--name" for messages. */
static const char *opt_label(const struct qp_cli_opt *o, char *buf, size_t size)
{
    snprintf(buf, size, "--%s", o->name);
    return buf;
}

static void fmt_bound(double v, char *buf, size_t size)
{
    snprintf(buf, size, "%.15g", v);
}

/* Converts arg into o's destination; a usage message on failure. */
static int store(const struct qp_cli *cli, struct qp_cli_opt *o,
                 const char *arg)
{
    char lab[80], lo[40], hi[40];
    opt_label(o, lab, sizeof lab);
    fmt_bound(o->min, lo, sizeof lo);
    fmt_bound(o->max, hi, sizeof hi);
    switch (o->kind) {
    case QP_OPT_FLAG:
        *(bool *)o->dest = true;
        return QP_CLI_GO;
    case QP_OPT_STR:
        if (!*arg)
            return qp_cli_usage(cli, "%s needs a non-empty argument", lab);
        *(const char **)o->dest = arg;
        return QP_CLI_GO;
    case QP_OPT_LIST: {
        struct qp_cli_list *l = o->dest;
        if (!*arg)
            return qp_cli_usage(cli, "%s needs a non-empty argument", lab);
        const char **v = realloc(l->v, (l->n + 1) * sizeof *v);
        if (!v)
            return qp_cli_usage(cli, "out of memory");
        v[l->n++] = arg;
        l->v = v;
        return QP_CLI_GO;
    }
    case QP_OPT_INT: {
        int64_t v;
        if (!qp_cli_parse_i64(arg, &v) || (double)v < o->min || (double)v > o->max)
            return qp_cli_usage(cli, "%s must be a whole number in [%s, %s], "
                                "not '%s'", lab, lo, hi, arg);
        *(int64_t *)o->dest = v;
        return QP_CLI_GO;
    }
    case QP_OPT_NUM: {
        double v;
        if (!qp_cli_parse_f64(arg, &v) || !isfinite(v) || v < o->min || v > o->max)
            return qp_cli_usage(cli, "%s must be a number in [%s, %s], not "
                                "'%s'", lab, lo, hi, arg);
        *(double *)o->dest = v;
        return QP_CLI_GO;
    }
    case QP_OPT_CHOICE:
        for (int i = 0; o->choices[i]; i++)
            if (!strcmp(arg, o->choices[i])) {
                *(int *)o->dest = i;
                return QP_CLI_GO;
            }
        {
            char list[512] = "";
            size_t len = 0;
            for (int i = 0; o->choices[i] && len < sizeof list; i++)
                len += (size_t)snprintf(list + len, sizeof list - len, "%s%s",
                                        i ? ", " : "", o->choices[i]);
            return qp_cli_usage(cli, "%s must be one of %s, not '%s'", lab,
                                list, arg);
        }
    case QP_OPT_PARSE: {
        struct qp_error err = {0};
        if (o->parse(arg, o->dest, &err))
            return qp_cli_usage(cli, "%s: %s", lab,
                                err.msg[0] ? err.msg : "invalid value");
        return QP_CLI_GO;
    }
    default:
        return qp_cli_usage(cli, "%s: bad option table", lab);
    }
}

/* Two given options of one exclusive group. */
static int check_groups(const struct qp_cli *cli, const struct qp_cli_opt *opts)
{
    size_t n = count_opts(opts);
    for (size_t i = 0; i < n; i++)
        for (size_t j = i + 1; opts[i].given && opts[i].group > 0 && j < n; j++)
            if (opts[j].given && opts[j].group == opts[i].group)
                return qp_cli_usage(cli, "give --%s or --%s, not both",
                                    opts[i].name, opts[j].name);
    return QP_CLI_GO;
}

static int check_operands(const struct qp_cli *cli, int nops)
{
    const char *what = cli->operands_what ? cli->operands_what : "operands";
    if (nops < cli->min_operands ||
        (cli->max_operands >= 0 && nops > cli->max_operands))
        return cli->max_operands == 0
                   ? qp_cli_usage(cli, "takes no operands, got %d", nops)
                   : qp_cli_usage(cli, "expected %s, got %d operand%s", what,
                                  nops, nops == 1 ? "" : "s");
    return QP_CLI_GO;
}

int qp_cli_parse(const struct qp_cli *cli, struct qp_cli_opt *opts, int argc,
                 char **argv, int *first)
{
    struct tables t;
    *first = argc;
    if (!tables_build(opts, &t)) {
        qp_cli_error("out of memory");
        return QP_EXIT_FAIL;
    }
    optind = 0; /* glibc: full re-initialisation */
    opterr = 0;
    int rc = QP_CLI_GO, c;
    size_t n = count_opts(opts);
    while (rc == QP_CLI_GO &&
           (c = getopt_long(argc, argv, t.shortopts, t.longopts, NULL)) != -1) {
        int idx = -1;
        if (c == 'h') {
            qp_cli_help(cli, opts);
            rc = QP_EXIT_OK;
            break;
        }
        if (c >= 1000 && (size_t)(c - 1000) < n)
            idx = c - 1000;
        for (size_t i = 0; idx < 0 && i < n; i++)
            if (opts[i].short_name && opts[i].short_name == c)
                idx = (int)i;
        if (idx < 0) {
            const char *bad = argv[optind - 1];
            rc = c == ':' ? qp_cli_usage(cli, "option '%s' needs an argument", bad)
                          : qp_cli_usage(cli, "unknown option '%s'", bad);
            break;
        }
        opts[idx].given = true;
        rc = store(cli, &opts[idx], optarg);
    }
    tables_free(&t);
    if (rc == QP_CLI_GO)
        rc = check_groups(cli, opts);
    if (rc == QP_CLI_GO)
        rc = check_operands(cli, argc - optind);
    *first = optind;
    return rc;
}

void qp_cli_exclusive(struct qp_cli_opt *opts, const char *a, const char *b)
{
    int g = 0;
    for (size_t i = 0; opts[i].kind != QP_OPT_END; i++)
        g = opts[i].group > g ? opts[i].group : g;
    for (size_t i = 0; opts[i].kind != QP_OPT_END; i++)
        if (!strcmp(opts[i].name, a) || !strcmp(opts[i].name, b))
            opts[i].group = g + 1;
}

bool qp_cli_given(const struct qp_cli_opt *opts, const char *name)
{
    for (size_t i = 0; opts && opts[i].kind != QP_OPT_END; i++)
        if (!strcmp(opts[i].name, name))
            return opts[i].given;
    return false;
}

void qp_cli_list_release(struct qp_cli_list *l)
{
    free(l->v);
    l->v = NULL;
    l->n = 0;
}

void qp_cli_help(const struct qp_cli *cli, const struct qp_cli_opt *opts)
{
    printf("usage: qprobe %s %s\n\n%s\n", cli->cmd, cli->usage, cli->summary);
    if (count_opts(opts))
        printf("\noptions:\n");
    for (size_t i = 0; opts && opts[i].kind != QP_OPT_END; i++) {
        const struct qp_cli_opt *o = &opts[i];
        char left[96];
        int n = 0;
        bool arg = o->kind != QP_OPT_FLAG;
        if (o->short_name)
            n = snprintf(left, sizeof left, "-%c, ", o->short_name);
        else
            n = snprintf(left, sizeof left, "    ");
        snprintf(left + n, sizeof left - (size_t)n, "--%s%s%s", o->name,
                 arg ? " " : "", arg && o->arg_name ? o->arg_name : "");
        if (strlen(left) > 30)
            printf("  %s\n  %-30s %s\n", left, "", o->help);
        else
            printf("  %-30s %s\n", left, o->help);
    }
    printf("  %-30s %s\n", "-h, --help", "show this help");
    if (cli->details)
        printf("\n%s\n", cli->details);
}

static void vmsg(const char *kind, const char *fmt, va_list ap)
{
    fflush(stdout);
    qp_cli_progress_done();
    fprintf(stderr, "qprobe: %s: ", kind);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
}

void qp_cli_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vmsg("error", fmt, ap);
    va_end(ap);
}

void qp_cli_warn(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vmsg("warning", fmt, ap);
    va_end(ap);
}

int qp_cli_fail(const struct qp_error *err)
{
    qp_cli_error("%s", err->msg[0] ? err->msg : qp_status_name(err->status));
    return QP_EXIT_FAIL;
}

int qp_cli_usage(const struct qp_cli *cli, const char *fmt, ...)
{
    char msg[QP_ERROR_MSG_MAX + 256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fflush(stdout);
    qp_cli_progress_done();
    /* a multi-line message (a scheme with its caret) keeps its lines */
    char *nl = strchr(msg, '\n');
    if (nl)
        *nl = '\0';
    fprintf(stderr, "qprobe %s: %s; see 'qprobe %s --help'\n", cli->cmd, msg,
            cli->cmd);
    if (nl)
        fprintf(stderr, "%s\n", nl + 1);
    return QP_EXIT_USAGE;
}

/* progress: one line redrawn with \r, at most every 1% */
static int progress_drawn;
static int progress_last = -1;

static void progress_draw(void *ctx, const char *label, uint64_t done,
                          uint64_t total)
{
    (void)ctx;
    int pct = total ? (int)(100.0 * (double)done / (double)total) : 0;
    if (pct == progress_last && done != total)
        return;
    progress_last = pct;
    fprintf(stderr, "\r\033[K%s: %3d%%", label, pct);
    fflush(stderr);
    progress_drawn = 1;
}

struct qp_progress qp_cli_progress(bool quiet)
{
    struct qp_progress p = {NULL, NULL};
    if (!quiet && isatty(STDERR_FILENO))
        p.fn = progress_draw;
    return p;
}

void qp_cli_progress_done(void)
{
    if (progress_drawn) {
        fprintf(stderr, "\r\033[K");
        fflush(stderr);
        progress_drawn = 0;
        progress_last = -1;
    }
}

bool qp_cli_parse_i64(const char *s, int64_t *out)
{
    if (!s || !*s)
        return false;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || *end)
        return false;
    *out = v;
    return true;
}

bool qp_cli_parse_f64(const char *s, double *out)
{
    if (!s || !*s)
        return false;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno == ERANGE && fabs(v) == HUGE_VAL)
        return false;
    if (*end)
        return false;
    *out = v;
    return true;
}

int qp_cli_not_yet(const char *cmd, const char *summary, int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            printf("usage: qprobe %s ...\n\n%s\n\n'qprobe %s' is not built "
                   "yet: it is listed so that scripts can find it.\n", cmd,
                   summary, cmd);
            return QP_EXIT_OK;
        }
    qp_cli_error("'qprobe %s' is not built yet (%s)", cmd, summary);
    return QP_EXIT_FAIL;
}
