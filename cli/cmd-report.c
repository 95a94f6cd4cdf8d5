/* cli/cmd-report.c: qprobe report INPUT... -o DIR: the tables qprobe writes
 * (sweep, diff, sensitivity, ladder, recipe Pareto) as one page with plots
 * (analysis/report.h). */
#include <stdio.h>

#include "analysis/report.h"
#include "cli/cli.h"
#include "cli/commands.h"

static const struct qp_cli cli = {
    "report", "INPUT.csv... -o DIR [options]",
    "Gathers CSV tables qprobe wrote into one folder: DIR/index.html, one "
    "self-contained page (no network), and plots drawn by gnuplot as PNG and "
    "SVG with their .gp and .dat kept.",
    "Inputs are recognized by their header:\n"
    "  sweep        qprobe sweep --csv: the table (best per column marked), "
    "quality vs size\n"
    "               and vs time with their Pareto fronts\n"
    "  diff         qprobe diff --csv: SQNR across depth, the worst tensors\n"
    "  sensitivity  qprobe sensitivity --csv: the ranking with its hints\n"
    "  ladder       qprobe ladder --csv: every rung across depth, each "
    "rung's largest step\n"
    "  recipe       qprobe recipe --pareto: quality vs size per step\n"
    "DIR appears whole or not at all; an existing DIR is replaced. "
    "--screenshot draws the\npage with headless Chromium into "
    "DIR/screenshot.png (the Debian package chromium;\n$QP_CHROMIUM names "
    "another program).",
    1, -1, "INPUT.csv",
};

int cmd_report(int argc, char **argv)
{
    const char *out = NULL, *title = NULL;
    bool shot = false, quiet = false;
    struct qp_cli_opt opts[] = {
        QP_OPT_STR_("out", 'o', "DIR", "the report folder", &out),
        QP_OPT_STR_("title", 0, "TEXT", "the page's title (default 'qprobe "
                    "report')", &title),
        QP_OPT_FLAG_("screenshot", 0, "draw the page into DIR/screenshot.png "
                     "(headless Chromium)", &shot),
        QP_OPT_FLAG_("quiet", 'q', "print nothing on success", &quiet),
        QP_OPT_END_,
    };
    int first, rc = qp_cli_parse(&cli, opts, argc, argv, &first);
    if (rc == QP_CLI_GO && !out)
        rc = qp_cli_usage(&cli, "-o DIR is required");
    if (rc != QP_CLI_GO)
        return rc;
    struct qp_report_opts o = {title, shot};
    struct qp_report_summary sum;
    struct qp_error err;
    if (qp_report_write((const char *const *)argv + first, (size_t)(argc - first), out,
                        &o, &sum, &err))
        return qp_cli_fail(&err);
    if (!quiet) {
        printf("report: %s/index.html:", out);
        for (int k = 0; k < QP_REPORT_KIND_COUNT; k++)
            if (sum.inputs[k])
                printf(" %zu %s", sum.inputs[k], qp_report_kind_name((enum qp_report_kind)k));
        printf("; %zu plots (PNG and SVG), %zu table rows%s\n", sum.plots, sum.rows,
               shot ? "; screenshot.png" : "");
    }
    return QP_EXIT_OK;
}
