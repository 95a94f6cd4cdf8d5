/* cli/cmd-sweep.c: qprobe sweep MODEL --grid S1,S2,... --csv OUT: one row
 * per configuration, resumable and shardable (analysis/sweep.h); qprobe
 * sweep --merge A.csv B.csv ... -o ALL.csv joins shards. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/sweep-backend.h"
#include "analysis/sweep-csv.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "cli/opt-types.h"
#include "cli/table.h"
#include "core/version.h"
#include "formats/json.h"

static const struct qp_cli cli = {
    "sweep", "MODEL (--grid SPEC | --grid-file F)... [--calib DIR] [--eval DIR] "
             "--csv OUT [options]\n       qprobe sweep --merge A.csv B.csv ... "
             "-o ALL.csv",
    "Evaluates every configuration of a grid on one model and appends one "
    "row per configuration to a CSV: quality against fp32, size, BitOps, "
    "time, the worst tensor, and the row's full recipe.",
    "Grid entries: fp32, a scheme (w4g128@gptq+a8t), or a recipe file "
    "(r.json); 'int:' or\n"
    "'fake:' before one picks its mode (default --mode). Commas separate "
    "entries, braces\n"
    "make products: 'w{4,8}g{32,128}' is w4g32,w4g128,w8g32,w8g128; "
    "'w4g32{,@gptq}' adds\n"
    "the GPTQ variant. A grid file holds entries, one or more a line ('#' "
    "comments).\n"
    "The control rows fp32 and w8c come first (--no-controls leaves them "
    "out).\n"
    "Each row is named by a content hash (its recipe, the model, the "
    "calibration and\n"
    "evaluation data, the qprobe version) and written whole (one write, "
    "fsync) when it\n"
    "is done: rerunning the same command skips the rows already in the CSV, "
    "so an\n"
    "interrupted sweep (even SIGKILL) resumes; a torn last line is dropped.\n"
    "--shard i/N evaluates configurations i, i+N, i+2N, ...: run N of them "
    "(GNU parallel,\n"
    "a Slurm job array; scripts/sweep/) into N CSVs, then --merge them: rows "
    "of one hash\n"
    "collapse, two that differ in anything but timings are an error.\n"
    "Quality of ONNX/TFLite rows: SQNR and cosine of the output vs fp32 on "
    "the --eval inputs\n"
    "(default the --calib ones), KL and top-1 for outputs of classes.\n"
    "Language models (a Llama-family folder): perplexity on --text or "
    "--tokens (chunks of\n"
    "--ctx tokens, as qprobe eval), KL and same-top-p against the fp32 "
    "model's logits\n"
    "(or --kl-base), --choices accuracy and --exact-match rate, tokens/s; "
    "--calib is\n"
    "a token file (default: the stream's first chunk).\n"
    "The CSV's columns: qprobe sweep --columns.",
    0, -1, "MODEL",
};

struct args {
    struct qp_cli_list grids, grid_files;
    const char *calib, *eval, *csv, *output, *json, *merge_out;
    enum qp_run_mode mode;
    enum qp_rq_flavor flavor;
    bool has_flavor, no_controls, quiet, merge, columns;
    size_t shard, nshards;
    int64_t repeat;
    struct qp_sweep_src src;
};

static enum qp_status parse_shard(const char *arg, void *dest,
                                  struct qp_error *err)
{
    struct args *a = dest;
    const char *slash = strchr(arg, '/');
    int64_t i, n;
    char head[32];
    if (!slash || (size_t)(slash - arg) >= sizeof head)
        return qp_fail(err, QP_E_INVAL, "'%s': expected i/N, e.g. 0/4", arg);
    memcpy(head, arg, (size_t)(slash - arg));
    head[slash - arg] = '\0';
    if (!qp_cli_parse_i64(head, &i) || !qp_cli_parse_i64(slash + 1, &n) ||
        n < 1 || n > 1000000 || i < 0 || i >= n)
        return qp_fail(err, QP_E_INVAL, "'%s': expected i/N with 0 <= i < N, "
                       "e.g. 0/4", arg);
    a->shard = (size_t)i;
    a->nshards = (size_t)n;
    return QP_OK;
}

/* ---- output ------------------------------------------------------------------ */

static void on_row(void *ctx, const struct qp_sweep_event *e)
{
    const struct args *a = ctx;
    if (a->quiet)
        return;
    double eta = e->done ? e->elapsed / (double)e->done * (double)(e->todo - e->done)
                         : 0;
    if (e->error)
        fprintf(stderr, "sweep: [%zu/%zu] %s: error: %s\n", e->done, e->todo,
                e->cfg->name, e->error);
    else if (isnan(e->r->sqnr_db) && !isnan(e->r->ppl))
        fprintf(stderr, "sweep: [%zu/%zu] %s: PPL %.3f, KL %.4g, %.3f MB, %.1f s "
                "(ETA %.0f s)\n", e->done, e->todo, e->cfg->name, e->r->ppl,
                e->r->kl, e->r->weight_bytes / 1e6, e->r->seconds, eta);
    else
        fprintf(stderr, "sweep: [%zu/%zu] %s: %.2f dB, %.3f MB, %.1f s (ETA %.0f s)\n",
                e->done, e->todo, e->cfg->name, e->r->sqnr_db,
                e->r->weight_bytes / 1e6, e->r->seconds, eta);
}

/* A field of the CSV row as a number for the table, "" when empty. */
static const char *cell(char **row, const struct qp_csv *t, const char *col,
                        double scale, const char *fmt, char *buf, size_t n)
{
    long c = qp_csv_column(t, col);
    double v;
    if (c < 0 || !qp_csv_to_num(row[c], &v))
        return "";
    return qp_table_num(v * scale, fmt, buf, n);
}

/* A column of the table printed after a sweep. */
struct tcol {
    const char *head, *csv;
    double scale;
    const char *fmt;
};

/* Graph models' columns and language models' (the last: the worst tensor
 * or the row's error, for both). */
static const struct tcol graph_cols[] = {
    {"sqnr_db", "sqnr_db", 1, "%.2f"}, {"cosine", "cosine", 1, "%.5f"},
    {"kl", "kl", 1, "%.3g"}, {"top1", "top1", 1, "%.3f"},
    {"MB", "weight_bytes", 1e-6, "%.3f"}, {"bits/w", "bits_per_weight", 1, "%.2f"},
    {"ms", "ms_per_input", 1, "%.1f"}, {"worst tensor", NULL, 0, NULL}};
static const struct tcol llm_cols[] = {
    {"ppl", "ppl", 1, "%.3f"}, {"+/-", "ppl_err", 1, "%.3f"},
    {"kl", "kl", 1, "%.3g"}, {"+/-", "kl_err", 1, "%.2g"},
    {"same_top", "top1", 1, "%.3f"}, {"task", "task_acc", 1, "%.3f"},
    {"exact", "exact_match", 1, "%.3f"}, {"MB", "weight_bytes", 1e-6, "%.3f"},
    {"bits/w", "bits_per_weight", 1, "%.2f"}, {"tok/s", "tokens_per_s", 1, "%.0f"},
    {"error", NULL, 0, NULL}};
#define TCOLS_MAX 16

/* The shard's rows as a table, from the CSV as it is now. */
static void print_rows(const struct args *a, const struct qp_sweep_grid *g,
                       const struct qp_sweep_summary *sum, bool llm)
{
    struct qp_csv *t;
    struct qp_error err;
    if (qp_csv_load(a->csv, &t, &err)) {
        qp_cli_warn("%s", err.msg);
        return;
    }
    const struct tcol *tc = llm ? llm_cols : graph_cols;
    size_t nc = llm ? sizeof llm_cols / sizeof llm_cols[0]
                    : sizeof graph_cols / sizeof graph_cols[0];
    const char *head[TCOLS_MAX + 2] = {"#", "name"};
    char align[TCOLS_MAX + 3] = "rl";
    for (size_t j = 0; j < nc; j++) {
        head[2 + j] = tc[j].head;
        align[2 + j] = tc[j].csv ? 'r' : 'l';
    }
    struct qp_table *tab = qp_table_new(nc + 2, head, align);
    long hc = qp_csv_column(t, "hash"), ec = qp_csv_column(t, "error"),
         wc = qp_csv_column(t, "worst_tensor");
    for (size_t k = 0; tab && k < g->n; k++) {
        if (sum->state[k] == QP_SWEEP_OTHER_SHARD)
            continue;
        for (size_t r = 0; r < t->nrows; r++) {
            char **row = t->rows[r];
            if (strcmp(row[hc], sum->hash[k]))
                continue;
            char b[TCOLS_MAX][32], idx[24], worst[64];
            snprintf(idx, sizeof idx, "%zu", k);
            snprintf(worst, sizeof worst, "%.60s", row[ec][0] ? row[ec] : row[wc]);
            const char *cells[TCOLS_MAX + 2] = {idx, g->c[k].name};
            for (size_t j = 0; j < nc; j++)
                cells[2 + j] = tc[j].csv ? cell(row, t, tc[j].csv, tc[j].scale,
                                                tc[j].fmt, b[j], 32)
                                         : worst;
            qp_table_add(tab, cells);
            break;
        }
    }
    if (tab)
        qp_table_print(tab, stdout);
    qp_table_free(tab);
    qp_csv_free(t);
}

static int write_json(const struct args *a, const char *model,
                      const struct qp_sweep_grid *g, const struct qp_sweep_summary *s)
{
    struct qp_json *root = qp_json_new_object(), *rows = NULL;
    bool ok = root && qp_json_add_str(root, "model", model) &&
              qp_json_add_str(root, "backend", qp_sweep_backend_for(model)) &&
              qp_json_add_str(root, "csv", a->csv) &&
              qp_json_add_num(root, "configs", (double)s->configs) &&
              qp_json_add_num(root, "shard", (double)a->shard) &&
              qp_json_add_num(root, "nshards", (double)a->nshards) &&
              qp_json_add_num(root, "in_shard", (double)s->in_shard) &&
              qp_json_add_num(root, "done_before", (double)s->done_before) &&
              qp_json_add_num(root, "computed", (double)s->computed) &&
              qp_json_add_num(root, "failed", (double)s->failed) &&
              qp_json_add_num(root, "torn_bytes_dropped", (double)s->torn_bytes) &&
              qp_json_add_num(root, "seconds", s->seconds) &&
              (rows = qp_json_add_array(root, "rows"));
    for (size_t k = 0; ok && k < g->n; k++) {
        struct qp_json *r = qp_json_add_object(rows, NULL);
        ok = r && qp_json_add_num(r, "index", (double)k) &&
             qp_json_add_str(r, "name", g->c[k].name) &&
             qp_json_add_str(r, "hash", s->hash[k]) &&
             qp_json_add_str(r, "state", qp_sweep_state_name(s->state[k]));
    }
    struct qp_error err;
    int rc = QP_EXIT_OK;
    if (!ok) {
        rc = qp_cli_fail(&(struct qp_error){QP_E_NOMEM, "out of memory"});
    } else if (!strcmp(a->json, "-")) {
        char *text = qp_json_print(root, true);
        if (text)
            printf("%s\n", text);
        free(text);
    } else if (qp_json_save(a->json, root, true, &err)) {
        rc = qp_cli_fail(&err);
    }
    qp_json_free(root);
    return rc;
}

/* ---- the commands --------------------------------------------------------------- */

static int make_grid(const struct args *a, struct qp_sweep_grid *g)
{
    struct qp_error err;
    struct qp_sweep_grid_opts o = {a->mode, a->flavor, a->has_flavor};
    enum qp_status st = a->no_controls ? QP_OK : qp_sweep_grid_controls(g, &o, &err);
    for (size_t i = 0; !st && i < a->grids.n; i++)
        st = qp_sweep_grid_add(g, a->grids.v[i], "--grid", &o, &err);
    /* a malformed --grid is a usage error; a file that fails is not */
    if (st == QP_E_INVAL)
        return qp_cli_usage(&cli, "%s", err.msg);
    for (size_t i = 0; !st && i < a->grid_files.n; i++)
        st = qp_sweep_grid_add_file(g, a->grid_files.v[i], &o, &err);
    if (!st && !g->n)
        st = qp_fail(&err, QP_E_INVAL, "the grid is empty");
    return st ? qp_cli_fail(&err) : QP_EXIT_OK;
}

static int sweep(struct args *a, const char *model)
{
    struct qp_sweep_grid g = {0};
    int rc = make_grid(a, &g);
    if (rc != QP_EXIT_OK) {
        qp_sweep_grid_release(&g);
        return rc;
    }
    struct qp_error err;
    struct qp_sweep_backend *b = NULL;
    struct qp_sweep_summary sum = {0};
    a->src.model = model;
    a->src.calib = a->calib;
    a->src.eval = a->eval;
    a->src.output = a->output;
    a->src.repeat = a->repeat;
    if (!a->quiet && g.dropped)
        qp_cli_warn("%zu grid entr%s repeated a configuration and %s dropped",
                    g.dropped, g.dropped == 1 ? "y" : "ies",
                    g.dropped == 1 ? "was" : "were");
    enum qp_status st = qp_sweep_backend_open(&a->src, &b, &err);
    struct qp_sweep_opts o = {&g, a->csv, a->shard, a->nshards, QP_VERSION,
                              on_row, a};
    if (!st)
        st = qp_sweep_run(b, &o, &sum, &err);
    if (!st && sum.torn_bytes && !a->quiet)
        qp_cli_warn("'%s': dropped a torn last line (%zu bytes) left by an "
                    "interrupted sweep", a->csv, sum.torn_bytes);
    rc = st ? qp_cli_fail(&err) : QP_EXIT_OK;
    if (!st) {
        printf("sweep: %zu configurations, %zu in shard %zu/%zu: %zu computed, "
               "%zu done before, %zu failed (%.1f s); rows in %s\n", sum.configs,
               sum.in_shard, a->shard, a->nshards, sum.computed, sum.done_before,
               sum.failed, sum.seconds, a->csv);
        if (!a->quiet)
            print_rows(a, &g, &sum,
                       !strcmp(qp_sweep_backend_for(a->src.model), "llm"));
    }
    if (!st && a->json)
        rc = write_json(a, model, &g, &sum);
    if (!st && sum.failed) {
        qp_cli_error("%zu configuration%s failed: %s row%s hold%s the message",
                     sum.failed, sum.failed == 1 ? "" : "s",
                     sum.failed == 1 ? "its" : "their", sum.failed == 1 ? "" : "s",
                     sum.failed == 1 ? "s" : "");
        rc = QP_EXIT_FAIL;
    }
    qp_sweep_summary_release(&sum);
    qp_sweep_backend_free(b);
    qp_sweep_grid_release(&g);
    return rc;
}

static int merge(const struct args *a, char **in, int n)
{
    struct qp_error err;
    size_t rows, dups;
    if (qp_sweep_merge((const char *const *)in, (size_t)n, a->merge_out, &rows,
                       &dups, &err))
        return qp_cli_fail(&err);
    if (!a->quiet)
        printf("merged %d table%s into %s: %zu rows (%zu duplicates collapsed)\n",
               n, n == 1 ? "" : "s", a->merge_out, rows, dups);
    return QP_EXIT_OK;
}

static const char *const lm_opts[] = {"text", "tokens", "kl-base", "choices",
                                      "exact-match", "ctx", "chunks"};

static int check(const struct args *a, const struct qp_cli_opt *opts, int nops,
                 char **ops)
{
    if (a->columns) {
        for (int c = 0; c < QP_SWEEP_NCOLS; c++)
            printf("%s%s", c ? "," : "", qp_sweep_columns[c]);
        printf("\n");
        return QP_EXIT_OK;
    }
    if (a->merge) {
        if (!nops || !a->merge_out)
            return qp_cli_usage(&cli, "--merge needs the tables to merge and -o");
        if (a->grids.n || a->grid_files.n || a->csv)
            return qp_cli_usage(&cli, "--merge takes tables, not --grid or --csv");
        return QP_CLI_GO;
    }
    if (nops != 1)
        return qp_cli_usage(&cli, "one MODEL is needed (or --merge)");
    if (!a->grids.n && !a->grid_files.n)
        return qp_cli_usage(&cli, "--grid or --grid-file is required");
    if (!a->csv)
        return qp_cli_usage(&cli, "--csv is required");
    if (a->merge_out)
        return qp_cli_usage(&cli, "-o goes with --merge (the sweep writes --csv)");
    if (a->mode == QP_MODE_FP32)
        return qp_cli_usage(&cli, "--mode must be fake or int (fp32 is a grid "
                            "entry)");
    bool folder = !strcmp(qp_sweep_backend_for(ops[0]), "llm");
    for (size_t i = 0; !folder && i < sizeof lm_opts / sizeof lm_opts[0]; i++)
        if (qp_cli_given(opts, lm_opts[i]))
            return qp_cli_usage(&cli, "--%s is for language models (a model "
                                "folder)", lm_opts[i]);
    if (!folder && !a->calib && !a->eval)
        return qp_cli_usage(&cli, "--calib or --eval is required");
    return QP_CLI_GO;
}

int cmd_sweep(int argc, char **argv)
{
    struct args a = {.mode = QP_MODE_FAKE, .nshards = 1, .repeat = 1};
    struct qp_cli_opt opts[] = {
        QP_OPT_LIST_("grid", 'g', "SPEC", "configurations: entries separated by "
                     "',' with {a,b} products (repeatable)", &a.grids),
        QP_OPT_LIST_("grid-file", 0, "FILE", "configurations, one or more a "
                     "line (repeatable)", &a.grid_files),
        QP_OPT_STR_("calib", 0, "DIR", "calibration inputs: activation ranges "
                    "(default: the --eval inputs; language models: a token file, "
                    "default the stream's first chunk)", &a.calib),
        QP_OPT_STR_("eval", 0, "DIR", "evaluation inputs the rows are scored "
                    "on (default: the --calib inputs)", &a.eval),
        QP_OPT_STR_("csv", 0, "FILE", "the table: created, or resumed", &a.csv),
        QP_OPT_PARSE_("mode", 'm', "MODE", "fake (default) or int, for entries "
                      "without a prefix", &a.mode, qp_opt_mode),
        QP_OPT_PARSE_("requant", 0, "FLAVOR", "requantization flavor of every "
                      "row (default: a recipe's, else tflite)", &a.flavor,
                      qp_opt_flavor),
        QP_OPT_PARSE_("shard", 0, "i/N", "evaluate only configurations k with "
                      "k mod N == i", &a, parse_shard),
        QP_OPT_FLAG_("no-controls", 0, "leave out the fp32 and w8c control rows",
                     &a.no_controls),
        QP_OPT_INT_("repeat", 0, "N", "timed forward passes per row, the best "
                    "kept (default 1; 0: no timing)", &a.repeat, 0, 1000),
        QP_OPT_STR_("output", 0, "NAME", "the graph output scored (default the "
                    "first)", &a.output),
        QP_OPT_STR_("json", 0, "FILE", "a JSON summary ('-': stdout)", &a.json),
        QP_OPT_FLAG_("merge", 0, "merge the sweep tables given as operands into "
                     "-o", &a.merge),
        QP_OPT_STR_("out", 'o', "FILE", "--merge: the merged table", &a.merge_out),
        QP_OPT_FLAG_("columns", 0, "print the CSV's columns and exit", &a.columns),
        QP_OPT_STR_("text", 0, "FILE", "language models: text to score "
                    "perplexity on", &a.src.text),
        QP_OPT_STR_("tokens", 0, "IDS", "language models: token ids (.npy)",
                    &a.src.tokens),
        QP_OPT_STR_("kl-base", 0, "FILE", "language models: base logits "
                    "(default: the fp32 model's, made once)", &a.src.kl_base),
        QP_OPT_STR_("choices", 0, "FILE", "language models: multiple-choice "
                    "items (.jsonl)", &a.src.choices),
        QP_OPT_STR_("exact-match", 0, "FILE", "language models: prompt/answer "
                    "items (.jsonl)", &a.src.exact),
        QP_OPT_INT_("ctx", 0, "N", "language models: tokens per chunk (default "
                    "512)", &a.src.ctx, 2, 1 << 20),
        QP_OPT_INT_("chunks", 0, "N", "language models: chunks scored (0: all)",
                    &a.src.chunks, 0, 1e9),
        QP_OPT_FLAG_("quiet", 'q', "no progress lines, no table", &a.quiet),
        QP_OPT_END_,
    };
    int first, rc = qp_cli_parse(&cli, opts, argc, argv, &first);
    a.has_flavor = qp_cli_given(opts, "requant");
    if (rc == QP_CLI_GO)
        rc = check(&a, opts, argc - first, argv + first);
    if (rc == QP_CLI_GO)
        rc = a.merge ? merge(&a, argv + first, argc - first) : sweep(&a, argv[first]);
    qp_cli_list_release(&a.grids);
    qp_cli_list_release(&a.grid_files);
    return rc;
}
