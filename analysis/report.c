/* analysis/report.c: the report folder (analysis/report.h): inputs told
 * apart by their headers, the page assembled section by section, and the
 * screenshot. The sections are analysis/report-sections.c and
 * analysis/report-depth.c. */
#include "analysis/report.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "analysis/report-sections.h"
#include "analysis/sweep-csv.h"
#include "core/outfile.h"

const char *qp_report_kind_name(enum qp_report_kind k)
{
    static const char *const names[] = {"sweep", "diff", "sensitivity", "ladder",
                                        "recipe"};
    _Static_assert(sizeof names / sizeof names[0] == QP_REPORT_KIND_COUNT, "kinds");
    return (unsigned)k < QP_REPORT_KIND_COUNT ? names[k] : "?";
}

/* True when header starts with the n columns of want. */
static bool starts(const char *const *header, size_t ncols,
                   const char *const *want, size_t n)
{
    if (ncols < n)
        return false;
    for (size_t k = 0; k < n; k++)
        if (strcmp(header[k], want[k]))
            return false;
    return true;
}

/* A ladder: index,name,block, then groups of four LABEL_ columns. */
static bool is_ladder(const char *const *header, size_t ncols)
{
    static const char *const head[] = {"index", "name", "block"};
    static const char *const sfx[] = {"_vs_first_db", "_vs_prev_db", "_prev_max_lsb",
                                      "_prev_mismatches"};
    if (!starts(header, ncols, head, 3) || ncols < 7 || (ncols - 3) % 4)
        return false;
    for (size_t k = 3; k < ncols; k++) {
        size_t len = strlen(header[k]), sl = strlen(sfx[(k - 3) % 4]);
        if (len <= sl || strcmp(header[k] + len - sl, sfx[(k - 3) % 4]))
            return false;
    }
    return true;
}

bool qp_report_kind_of(const char *const *header, size_t ncols,
                       enum qp_report_kind *out)
{
    static const char *const diff[] = {"rank", "name", "shape", "numel", "sqnr_db",
                                       "cosine"};
    static const char *const sens[] = {"rank", "unit", "kind", "params",
                                       "bytes_fp32", "bytes_scheme", "macs"};
    static const char *const recipe[] = {"step", "unit", "scheme", "predicted_gain",
                                         "measured_gain", "calib_sqnr", "calib_kl",
                                         "eval_sqnr", "eval_kl", "bytes"};
    if (qp_sweep_header_is(header, ncols))
        *out = QP_REPORT_SWEEP;
    else if (starts(header, ncols, diff, 6))
        *out = QP_REPORT_DIFF;
    else if (starts(header, ncols, sens, 7))
        *out = QP_REPORT_SENS;
    else if (is_ladder(header, ncols))
        *out = QP_REPORT_LADDER;
    else if (starts(header, ncols, recipe, 10))
        *out = QP_REPORT_RECIPE;
    else
        return false;
    return true;
}

/* ---- inputs ---------------------------------------------------------------------- */

struct input {
    const char *path;
    enum qp_report_kind kind;
    struct qp_csv *t;
};

static enum qp_status load(const char *path, struct input *in, struct qp_error *err)
{
    in->path = path;
    enum qp_status st = qp_csv_load(path, &in->t, err);
    if (st)
        return st;
    if (qp_report_kind_of((const char *const *)in->t->header, in->t->ncols, &in->kind))
        return QP_OK;
    char head[200] = "";
    size_t len = 0;
    for (size_t k = 0; k < in->t->ncols && k < 4 && len < sizeof head; k++)
        len += (size_t)snprintf(head + len, sizeof head - len, "%s%s", k ? "," : "",
                                in->t->header[k]);
    return qp_fail(err, QP_E_FORMAT, "'%s': not a table qprobe writes (its header "
                   "starts '%s'); report reads sweep, diff, sensitivity, ladder "
                   "and recipe --pareto CSVs", path, head);
}

/* ---- the page ---------------------------------------------------------------------- */

typedef enum qp_status (*section_fn)(struct qp_report_ctx *c, struct qp_error *err);

static const section_fn sections[] = {qp_report_sweep, qp_report_diff,
                                      qp_report_sens, qp_report_ladder,
                                      qp_report_recipe};
_Static_assert(sizeof sections / sizeof sections[0] == QP_REPORT_KIND_COUNT,
               "a section per kind");

static void contents(FILE *f, const struct input *in, size_t n)
{
    fputs("<nav>\n<p>Inputs, as sections:</p>\n<ul>\n", f);
    for (int k = 0; k < QP_REPORT_KIND_COUNT; k++)
        for (size_t i = 0, seq = 0; i < n; i++)
            if (in[i].kind == (enum qp_report_kind)k) {
                fprintf(f, "<li><a href=\"#%s-%zu\">%s</a>: <span class=\"mono\">",
                        qp_report_kind_name(in[i].kind), ++seq,
                        qp_report_kind_name(in[i].kind));
                qp_html_text(f, in[i].path);
                fprintf(f, "</span> (%zu rows)</li>\n", in[i].t->nrows);
            }
    fputs("</ul>\n</nav>\n", f);
}

static enum qp_status page(const char *dir, const struct input *in, size_t n,
                           const struct qp_report_opts *o,
                           struct qp_report_summary *sum, struct qp_error *err)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/index.html", dir);
    FILE *f = fopen(path, "w");
    if (!f)
        return qp_fail(err, QP_E_IO, "'%s': %s", path, strerror(errno));
    const char *title = o && o->title ? o->title : "qprobe report";
    qp_html_begin(f, title);
    contents(f, in, n);
    enum qp_status st = QP_OK;
    for (int k = 0; !st && k < QP_REPORT_KIND_COUNT; k++)
        for (size_t i = 0, seq = 0; !st && i < n; i++) {
            if (in[i].kind != (enum qp_report_kind)k)
                continue;
            struct qp_report_ctx c = {f, dir, in[i].path, in[i].t, (int)++seq, "", sum};
            snprintf(c.id, sizeof c.id, "%s-%zu", qp_report_kind_name(in[i].kind), seq);
            st = sections[k](&c, err);
            if (st)
                qp_error_prefix(err, "'%s': ", in[i].path);
        }
    if (o && o->screenshot)
        fputs("<p class=\"legend\">This page as drawn by headless Chromium: "
              "<a href=\"screenshot.png\">screenshot.png</a>.</p>\n", f);
    fputs("<p class=\"legend\">Made by qprobe report. Each plot's .gp script "
          "draws it again from its .dat (cd to this folder; gnuplot NAME.gp, or "
          "gnuplot -e \"qp_out='NAME.svg'\" NAME.gp).</p>\n", f);
    qp_html_end(f);
    if (fflush(f) || ferror(f)) {
        if (!st)
            st = qp_fail(err, QP_E_IO, "'%s': write failed", path);
    }
    fclose(f);
    return st;
}

/* ---- the screenshot ------------------------------------------------------------------ */

/* Runs headless Chromium on dir/index.html into dir/screenshot.png, at
 * most 120 s. */
static enum qp_status screenshot(const char *dir, struct qp_error *err)
{
    const char *prog = getenv("QP_CHROMIUM");
    if (!prog || !*prog)
        prog = "chromium";
    char *abs = realpath(dir, NULL);
    if (!abs)
        return qp_fail(err, QP_E_IO, "'%s': %s", dir, strerror(errno));
    char url[4200], shot[4200], arg[4300];
    snprintf(url, sizeof url, "file://%s/index.html", abs);
    snprintf(shot, sizeof shot, "%s/screenshot.png", abs);
    snprintf(arg, sizeof arg, "--screenshot=%s", shot);
    free(abs);
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0)
        return qp_fail(err, QP_E_IO, "cannot run '%s': %s", prog, strerror(errno));
    if (pid == 0) {
        int null = open("/dev/null", O_RDWR);
        if (null >= 0) {
            dup2(null, 0);
            dup2(null, 1);
            dup2(null, 2);
        }
        char *argv[12];
        int a = 0;
        argv[a++] = (char *)prog;
        argv[a++] = "--headless";
        if (geteuid() == 0) /* Chromium refuses to run as root sandboxed */
            argv[a++] = "--no-sandbox";
        argv[a++] = "--disable-gpu";
        argv[a++] = "--hide-scrollbars";
        argv[a++] = "--window-size=1280,2400";
        argv[a++] = "--virtual-time-budget=3000";
        argv[a++] = arg;
        argv[a++] = url;
        argv[a] = NULL;
        execvp(prog, argv);
        _exit(127);
    }
    int status = 0;
    struct timespec wait = {0, 50 * 1000 * 1000};
    for (int k = 0; k < 2400; k++) {
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid)
            break;
        if (r < 0 && errno != EINTR)
            break;
        if (k == 2399) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            return qp_fail(err, QP_E_IO, "'%s' took more than 120 s", prog);
        }
        nanosleep(&wait, NULL);
    }
    struct stat sb;
    if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
        return qp_fail(err, QP_E_IO, "cannot run '%s' (install the Debian package "
                       "chromium, or set QP_CHROMIUM)", prog);
    if (!WIFEXITED(status) || WEXITSTATUS(status) || stat(shot, &sb) || !sb.st_size)
        return qp_fail(err, QP_E_IO, "'%s' made no screenshot of the page", prog);
    return QP_OK;
}

enum qp_status qp_report_write(const char *const *in, size_t n, const char *dir,
                               const struct qp_report_opts *o,
                               struct qp_report_summary *sum,
                               struct qp_error *err)
{
    *sum = (struct qp_report_summary){0};
    struct input *inputs = calloc(n + 1, sizeof *inputs);
    if (!inputs)
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    enum qp_status st = n ? QP_OK : qp_fail(err, QP_E_INVAL, "no input table");
    for (size_t i = 0; !st && i < n; i++)
        if (!(st = load(in[i], &inputs[i], err)))
            sum->inputs[inputs[i].kind]++;
    struct qp_outdir *od = NULL;
    if (!st)
        st = qp_outdir_open(dir, &od, err);
    if (!st)
        st = page(od->tmp_path, inputs, n, o, sum, err);
    if (!st && o && o->screenshot)
        st = screenshot(od->tmp_path, err);
    if (!st) {
        st = qp_outdir_commit(od, err);
        od = NULL;
    }
    qp_outdir_abort(od);
    for (size_t i = 0; i < n; i++)
        qp_csv_free(inputs[i].t);
    free(inputs);
    return st;
}
