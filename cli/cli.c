#include "cli/cli.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct tables {
    struct option *longopts;
    char *shortopts;
};

static void tables_free(struct qp_cli_state *s)
{
    struct tables *t = s->priv;
    if (t) {
        free(t->longopts);
        free(t->shortopts);
        free(t);
        s->priv = NULL;
    }
}

static struct tables *tables_build(const struct qp_cli *cli)
{
    size_t n = 0;
    while (cli->opts && cli->opts[n].name)
        n++;
    struct tables *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->longopts = calloc(n + 2, sizeof *t->longopts);
    t->shortopts = calloc(2 * n + 4, 1);
    if (!t->longopts || !t->shortopts) {
        free(t->longopts);
        free(t->shortopts);
        free(t);
        return NULL;
    }
    size_t k = 0;
    t->shortopts[k++] = ':'; /* report missing arguments as ':' */
    t->shortopts[k++] = 'h';
    for (size_t i = 0; i < n; i++) {
        const struct qp_cli_opt *o = &cli->opts[i];
        t->longopts[i] = (struct option){o->name, o->has_arg ? required_argument
                                                            : no_argument,
                                         NULL, 1000 + (int)i};
        if (o->short_name) {
            t->shortopts[k++] = (char)o->short_name;
            if (o->has_arg)
                t->shortopts[k++] = ':';
        }
    }
    t->longopts[n] = (struct option){"help", no_argument, NULL, 'h'};
    return t;
}

int qp_cli_next(struct qp_cli_state *s, int argc, char **argv,
                const struct qp_cli *cli, const char **arg)
{
    if (!s->priv) {
        s->priv = tables_build(cli);
        if (!s->priv) {
            qp_cli_error("out of memory");
            return QP_CLI_ERROR;
        }
        optind = 0; /* glibc: full re-initialisation */
        opterr = 0;
    }
    struct tables *t = s->priv;
    int c = getopt_long(argc, argv, t->shortopts, t->longopts, NULL);
    s->optind = optind;
    *arg = optarg;
    if (c == -1) {
        tables_free(s);
        return QP_CLI_END;
    }
    if (c == 'h') {
        qp_cli_help(cli);
        tables_free(s);
        return QP_CLI_HELP;
    }
    if (c >= 1000)
        return c - 1000;
    for (int i = 0; cli->opts && cli->opts[i].name; i++)
        if (cli->opts[i].short_name && cli->opts[i].short_name == c)
            return i;
    const char *bad = argv[optind - 1];
    if (c == ':')
        qp_cli_usage(cli, "option '%s' needs an argument", bad);
    else
        qp_cli_usage(cli, "unknown option '%s'", bad);
    tables_free(s);
    return QP_CLI_ERROR;
}

void qp_cli_help(const struct qp_cli *cli)
{
    printf("usage: qprobe %s %s\n\n%s\n\noptions:\n", cli->cmd, cli->usage,
           cli->summary);
    for (int i = 0; cli->opts && cli->opts[i].name; i++) {
        const struct qp_cli_opt *o = &cli->opts[i];
        char left[96];
        int n = 0;
        if (o->short_name)
            n = snprintf(left, sizeof left, "-%c, ", o->short_name);
        else
            n = snprintf(left, sizeof left, "    ");
        snprintf(left + n, sizeof left - (size_t)n, "--%s%s%s", o->name,
                 o->has_arg ? " " : "", o->has_arg ? o->arg_name : "");
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
    va_list ap;
    va_start(ap, fmt);
    fflush(stdout);
    fprintf(stderr, "qprobe %s: ", cli->cmd);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "; see 'qprobe %s --help'\n", cli->cmd);
    va_end(ap);
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
