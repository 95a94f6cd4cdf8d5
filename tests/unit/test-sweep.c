/* tests/unit/test-sweep.c: the sweep engine on a small graph: rows equal
 * to independent runs (quality, worst tensor, bytes, BitOps), resume after
 * a torn row, shards merged equal to one run, conflicts refused, hashes
 * that change with what a row depends on, the table's lock and header. */
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/outcome.h"
#include "analysis/sweep-csv.h"
#include "analysis/sweep-onnx.h"
#include "core/fileio.h"
#include "model/session.h"
#include "tests/test.h"
#include "tests/unit/test-graph-util.h"

#define W 16

/* x[8,W] -> MatMul W0 -> h0 -> Relu -> r0 -> MatMul W1 -> y[8,W] */
static struct qp_graph *net(struct qp_test_ctx *ctx)
{
    struct qp_graph *g;
    struct qp_error err;
    if (qp_graph_new("net", &g, &err))
        return NULL;
    bool ok = !qp_graph_add_input(g, "x", QP_DTYPE_F32, 2, SHAPE(8, W), &err);
    static const char *const wn[] = {"W0", "W1"}, *in[] = {"x", "r0"},
                             *on[] = {"h0", "y"};
    for (int l = 0; ok && l < 2; l++) {
        struct qp_tensor *w = TF32(wn[l], 2, SHAPE(W, W), NULL);
        fill_lcg(w, 5u + 7u * (unsigned)l, 2000.0f);
        const char *mi[2] = {in[l], wn[l]}, *mo[1] = {on[l]};
        ok = w && !qp_graph_add_const(g, w, &err) &&
             !qp_graph_add_node(g, "MatMul", "", 13, on[l], 2, mi, 1, mo, NULL, &err);
        if (ok && l == 0) {
            const char *ri[1] = {"h0"}, *ro[1] = {"r0"};
            ok = !qp_graph_add_node(g, "Relu", "", 13, "relu", 1, ri, 1, ro, NULL,
                                    &err);
        }
    }
    ok = ok && !qp_graph_add_output(g, "y", &err);
    return graph_done(ctx, g, ok, "net", &err);
}

static struct qp_tensor **input(unsigned seed)
{
    struct qp_tensor **feed = calloc(1, sizeof *feed);
    if (feed)
        fill_lcg(feed[0] = TF32("x", 2, SHAPE(8, W), NULL), seed, 500.0f);
    return feed;
}

/* A calibrated session over net() (three calibration sets). */
static struct qp_session *session(struct qp_test_ctx *ctx)
{
    struct qp_error err;
    struct qp_session *s;
    struct qp_graph *g = net(ctx);
    if (!g || qp_session_new(g, "net", &s, &err))
        return NULL;
    for (unsigned k = 1; k <= 3; k++)
        if (qp_session_add_calib_feed(s, input(k), &err)) {
            qp_session_free(s);
            return NULL;
        }
    return s;
}

/* A backend on eval sets seeded eval0, eval0 + 1. */
static struct qp_sweep_backend *backend(struct qp_test_ctx *ctx, unsigned eval0)
{
    struct qp_error err;
    struct qp_session *s = session(ctx);
    struct qp_tensor ***sets = calloc(2, sizeof *sets);
    struct qp_sweep_backend *b = NULL;
    static const unsigned char model[QP_SHA256_BYTES] = {1, 2, 3};
    if (!s || !sets)
        return NULL;
    sets[0] = input(eval0);
    sets[1] = input(eval0 + 1);
    if (qp_sweep_onnx_new(s, sets, 2, 0, model, 1, &b, &err))
        qp_test_failf(ctx, __FILE__, __LINE__, "backend: %s", err.msg);
    return b;
}

static const struct qp_sweep_grid_opts fake = {QP_MODE_FAKE, QP_RQ_TFLITE_DOUBLE,
                                               false};

static bool grid_of(struct qp_sweep_grid *g, const char *spec)
{
    struct qp_error err;
    *g = (struct qp_sweep_grid){0};
    return !qp_sweep_grid_controls(g, &fake, &err) &&
           !qp_sweep_grid_add(g, spec, "--grid", &fake, &err);
}

static enum qp_status sweep(struct qp_sweep_backend *b, const struct qp_sweep_grid *g,
                            const char *csv, size_t shard, size_t n,
                            struct qp_sweep_summary *sum, struct qp_error *err)
{
    struct qp_sweep_opts o = {g, csv, shard, n, "test", NULL, NULL};
    return qp_sweep_run(b, &o, sum, err);
}

static double field(const struct qp_csv *t, size_t r, const char *col)
{
    double v = NAN;
    long c = qp_csv_column(t, col);
    if (c >= 0)
        qp_csv_to_num(t->rows[r][c], &v);
    return v;
}

static const char *sfield(const struct qp_csv *t, size_t r, const char *col)
{
    long c = qp_csv_column(t, col);
    return c >= 0 ? t->rows[r][c] : NULL;
}

/* Tables equal row for row but for the timing columns. */
static bool same_rows(const struct qp_csv *a, const struct qp_csv *b)
{
    if (a->nrows != b->nrows)
        return false;
    for (size_t r = 0; r < a->nrows; r++)
        for (size_t c = 0; c < QP_SWEEP_NCOLS; c++)
            if (!qp_sweep_column_is_timing(qp_sweep_columns[c]) &&
                strcmp(a->rows[r][c], b->rows[r][c]))
                return false;
    return true;
}

static enum qp_status keep(void *ctx, const struct qp_graph *g, int v,
                           const struct qp_tensor *t, struct qp_error *err)
{
    struct qp_tensor **out = ctx;
    (void)g;
    (void)v;
    return qp_tensor_clone(t, out, err);
}

/* The SQNR of value `name` and of the output, scheme S vs fp32, over the
 * two evaluation sets, from fresh runs of a new session. */
static void reference_sqnr(struct qp_test_ctx *ctx, const char *scheme,
                           const char *name, unsigned eval0, double *tensor_db,
                           double *out_db, double *kl)
{
    struct qp_error err;
    struct qp_session *s = session(ctx);
    struct qp_scheme sc;
    struct qp_splan *p = NULL;
    struct qp_session_cfg cfg = {.mode = QP_MODE_FAKE, .scheme = &sc};
    *tensor_db = *out_db = *kl = NAN;
    if (!s || qp_scheme_parse(scheme, &sc, NULL, &err) ||
        qp_session_plan(s, &cfg, &p, &err)) {
        qp_session_free(s);
        return;
    }
    struct qp_metrics m;
    struct qp_outcome oc;
    qp_metrics_init(&m);
    qp_outcome_init(&oc);
    for (unsigned k = 0; k < 2; k++) {
        struct qp_tensor **feed = input(eval0 + k), *vals[2] = {NULL, NULL},
                         *outs[2][1];
        for (int run = 0; run < 2; run++) {
            struct qp_session_run_opts o = {.capture = name, .on_capture = keep,
                                            .capture_ctx = &vals[run]};
            qp_session_run(s, run ? p : NULL, (const struct qp_tensor *const *)feed,
                           &o, outs[run], NULL, &err);
        }
        struct qp_metrics one;
        if (vals[0] && vals[1] && !qp_metrics_tensors(vals[0], vals[1], &one, &err))
            qp_metrics_merge(&m, &one);
        qp_outcome_add(&oc, outs[0][0], outs[1][0], &err);
        for (int run = 0; run < 2; run++) {
            qp_tensor_free(vals[run]);
            qp_tensor_free(outs[run][0]);
        }
        qp_session_free_inputs(s, feed);
    }
    *tensor_db = qp_metrics_sqnr_db(&m);
    *out_db = qp_outcome_sqnr(&oc);
    *kl = qp_outcome_kl(&oc);
    qp_splan_free(p);
    qp_session_free(s);
}

QP_TEST(sweep_rows_equal_independent_runs)
{
    struct qp_error err;
    struct qp_sweep_grid g;
    REQUIRE(grid_of(&g, "w4t+a8t,w8c+a8t,int:w8c+a8t,int:w4g4+a8t"));
    struct qp_sweep_backend *b = backend(ctx, 20);
    REQUIRE(b);
    char *csv = qp_test_path(ctx, "s.csv");
    struct qp_sweep_summary sum;
    REQUIRE_OK(sweep(b, &g, csv, 0, 1, &sum, &err), &err);
    CHECK_INT(sum.configs, 6);
    CHECK_INT(sum.computed, 5);
    CHECK_INT(sum.failed, 1); /* group-wise weights in the int mode */
    CHECK_INT(sum.state[5], QP_SWEEP_FAILED);
    struct qp_csv *t;
    REQUIRE_OK(qp_csv_load(csv, &t, &err), &err);
    REQUIRE(t->nrows == 6);
    /* fp32: the reference itself, every tensor exact */
    CHECK_STR(sfield(t, 0, "name"), "fp32");
    CHECK(isinf(field(t, 0, "sqnr_db")) && field(t, 0, "sqnr_db") > 0);
    CHECK_NEAR(field(t, 0, "cosine"), 1, 0);
    CHECK_STR(sfield(t, 0, "worst_tensor"), "");
    CHECK_NEAR(field(t, 0, "weight_bytes"), 2 * W * W * 4, 0);
    CHECK_NEAR(field(t, 0, "params"), 2 * W * W, 0);
    CHECK_NEAR(field(t, 0, "bits_per_weight"), 32, 0);
    /* two MatMuls of 8 x W x W MACs: fp32 x fp32, then 8-bit weights with
     * float inputs (w8c), then 8 x 8 bits */
    CHECK_NEAR(field(t, 0, "bitops"), 2.0 * 8 * W * W * 32 * 32, 0);
    CHECK_NEAR(field(t, 1, "bitops"), 2.0 * 8 * W * W * 8 * 32, 0);
    CHECK_NEAR(field(t, 3, "bitops"), 2.0 * 8 * W * W * 8 * 8, 0);
    /* w8c: int8 data and a float scale per output channel */
    CHECK_NEAR(field(t, 1, "weight_bytes"), 2 * (W * W + 4 * W), 0);
    CHECK_NEAR(field(t, 2, "weight_bytes"), 2 * (W * W / 2 + 4), 0); /* w4t */
    /* the w4t+a8t row: its output and worst tensor as fresh runs give them */
    const char *worst = sfield(t, 2, "worst_tensor");
    REQUIRE(worst && *worst);
    double tdb, odb, kl;
    reference_sqnr(ctx, "w4t+a8t", worst, 20, &tdb, &odb, &kl);
    CHECK_NEAR(field(t, 2, "sqnr_db"), odb, 1e-5);
    CHECK_NEAR(field(t, 2, "kl"), kl, 1e-7);
    CHECK_NEAR(field(t, 2, "worst_sqnr_db"), tdb, 1e-5);
    CHECK(field(t, 2, "worst_sqnr_db") <= field(t, 2, "sqnr_db") + 1e-9 ||
          strcmp(worst, "y") != 0);
    CHECK(field(t, 3, "sqnr_db") > field(t, 2, "sqnr_db") + 3); /* 8 > 4 bits */
    /* the int mode within a few dB of fake, in its own row */
    CHECK_STR(sfield(t, 4, "mode"), "int");
    CHECK(fabs(field(t, 4, "sqnr_db") - field(t, 3, "sqnr_db")) < 3);
    CHECK(strcmp(sfield(t, 3, "hash"), sfield(t, 4, "hash")) != 0);
    /* the failed row: its message, no measurements */
    CHECK_STR(sfield(t, 5, "status"), "error");
    CHECK_CONTAINS(sfield(t, 5, "error"), "group-wise");
    CHECK_STR(sfield(t, 5, "sqnr_db"), "");
    /* LLM columns stay empty for a graph model */
    for (size_t r = 0; r < 5; r++) {
        CHECK_STR(sfield(t, r, "ppl"), "");
        CHECK_STR(sfield(t, r, "task_acc"), "");
        CHECK_STR(sfield(t, r, "status"), "ok");
        CHECK(field(t, r, "ms_per_input") >= 0);
    }
    qp_csv_free(t);
    qp_sweep_summary_release(&sum);
    qp_sweep_backend_free(b);
    qp_sweep_grid_release(&g);
    free(csv);
}

/* Cuts the file to its first `keep` bytes. */
static bool cut(const char *path, size_t keep)
{
    return truncate(path, (off_t)keep) == 0;
}

QP_TEST(sweep_resumes_after_a_torn_row)
{
    struct qp_error err;
    struct qp_sweep_grid g;
    REQUIRE(grid_of(&g, "w{4,8}t+a8t"));
    struct qp_sweep_backend *b = backend(ctx, 30);
    REQUIRE(b);
    char *whole = qp_test_path(ctx, "whole.csv"), *part = qp_test_path(ctx, "p.csv");
    struct qp_sweep_summary sum;
    REQUIRE_OK(sweep(b, &g, whole, 0, 1, &sum, &err), &err);
    CHECK_INT(sum.computed, 4);
    qp_sweep_summary_release(&sum);
    /* the same command again: nothing to do */
    REQUIRE_OK(sweep(b, &g, whole, 0, 1, &sum, &err), &err);
    CHECK_INT(sum.computed, 0);
    CHECK_INT(sum.done_before, 4);
    qp_sweep_summary_release(&sum);
    /* a copy killed in the middle of its third row */
    char *text;
    size_t len;
    REQUIRE_OK(qp_read_file(whole, 1 << 20, &text, &len, &err), &err);
    size_t nl = 0, pos = 0;
    for (; pos < len && nl < 3; pos++) /* the header and two rows */
        nl += text[pos] == '\n';
    REQUIRE(qp_test_write_file(part, text, len));
    REQUIRE(cut(part, pos + 17));
    REQUIRE_OK(sweep(b, &g, part, 0, 1, &sum, &err), &err);
    CHECK_INT(sum.torn_bytes, 17);
    CHECK_INT(sum.done_before, 2);
    CHECK_INT(sum.computed, 2);
    qp_sweep_summary_release(&sum);
    struct qp_csv *ta, *tb;
    REQUIRE_OK(qp_csv_load(whole, &ta, &err), &err);
    REQUIRE_OK(qp_csv_load(part, &tb, &err), &err);
    CHECK(same_rows(ta, tb));
    qp_csv_free(ta);
    qp_csv_free(tb);
    /* torn inside the header: not a table to append to */
    REQUIRE(cut(part, 20));
    CHECK_INT(sweep(b, &g, part, 0, 1, &sum, &err), QP_E_FORMAT);
    CHECK_CONTAINS(err.msg, "no complete header line");
    qp_sweep_summary_release(&sum);
    free(text);
    free(whole);
    free(part);
    qp_sweep_backend_free(b);
    qp_sweep_grid_release(&g);
}

QP_TEST(sweep_shards_merge_into_one_run)
{
    struct qp_error err;
    struct qp_sweep_grid g;
    REQUIRE(grid_of(&g, "w{2,4,8}t+a8t,w4c"));
    struct qp_sweep_backend *b = backend(ctx, 40);
    REQUIRE(b);
    char *one = qp_test_path(ctx, "one.csv"), *s0 = qp_test_path(ctx, "s0.csv"),
         *s1 = qp_test_path(ctx, "s1.csv"), *m = qp_test_path(ctx, "m.csv"),
         *bad = qp_test_path(ctx, "bad.csv");
    struct qp_sweep_summary sum;
    REQUIRE_OK(sweep(b, &g, one, 0, 1, &sum, &err), &err);
    qp_sweep_summary_release(&sum);
    REQUIRE_OK(sweep(b, &g, s1, 1, 2, &sum, &err), &err);
    CHECK_INT(sum.in_shard, 3); /* configurations 1, 3, 5 */
    CHECK_INT(sum.state[0], QP_SWEEP_OTHER_SHARD);
    CHECK_INT(sum.state[3], QP_SWEEP_COMPUTED);
    qp_sweep_summary_release(&sum);
    REQUIRE_OK(sweep(b, &g, s0, 0, 2, &sum, &err), &err);
    CHECK_INT(sum.in_shard, 3);
    qp_sweep_summary_release(&sum);
    /* shard 1 first: the merge orders by index */
    const char *in[] = {s1, s0};
    size_t rows, dups;
    REQUIRE_OK(qp_sweep_merge(in, 2, m, &rows, &dups, &err), &err);
    CHECK_INT(rows, 6);
    CHECK_INT(dups, 0);
    struct qp_csv *ta, *tb;
    REQUIRE_OK(qp_csv_load(one, &ta, &err), &err);
    REQUIRE_OK(qp_csv_load(m, &tb, &err), &err);
    CHECK(same_rows(ta, tb));
    qp_csv_free(tb);
    /* duplicates collapse */
    const char *twice[] = {m, one, s0};
    REQUIRE_OK(qp_sweep_merge(twice, 3, m, &rows, &dups, &err), &err);
    CHECK_INT(rows, 6);
    CHECK_INT(dups, 9);
    /* a row that differs in a measurement is a conflict; in a timing not */
    char *text;
    size_t len;
    REQUIRE_OK(qp_read_file(one, 1 << 20, &text, &len, &err), &err);
    char *row2 = text;
    for (int k = 0; k < 3; k++)
        row2 = strchr(row2, '\n') + 1;
    const char *sq = sfield(ta, 2, "sqnr_db");
    char *at = strstr(row2, sq);
    REQUIRE(at);
    at[strlen(sq) - 1] = at[strlen(sq) - 1] == '1' ? '2' : '1';
    REQUIRE(qp_test_write_file(bad, text, len));
    const char *conflict[] = {one, bad};
    CHECK_INT(qp_sweep_merge(conflict, 2, m, NULL, NULL, &err), QP_E_FORMAT);
    CHECK_CONTAINS(err.msg, "conflicting rows for 'w2t+a8t'");
    CHECK_CONTAINS(err.msg, "differ in sqnr_db");
    CHECK_CONTAINS(err.msg, "row 3");
    /* a torn input is refused */
    REQUIRE(qp_test_write_file(bad, text, len - 5));
    const char *torn[] = {bad};
    CHECK_INT(qp_sweep_merge(torn, 1, m, NULL, NULL, &err), QP_E_FORMAT);
    CHECK_CONTAINS(err.msg, "torn");
    free(text);
    qp_csv_free(ta);
    free(one);
    free(s0);
    free(s1);
    free(m);
    free(bad);
    qp_sweep_backend_free(b);
    qp_sweep_grid_release(&g);
}

QP_TEST(sweep_hashes_follow_what_rows_depend_on)
{
    struct qp_error err;
    struct qp_sweep_grid g;
    REQUIRE(grid_of(&g, "w8c+a8t"));
    struct qp_sweep_backend *b1 = backend(ctx, 50), *b2 = backend(ctx, 50),
                            *b3 = backend(ctx, 51);
    REQUIRE(b1 && b2 && b3);
    struct qp_sha256 h1, h2, h3, h4;
    REQUIRE_OK(qp_sweep_base_hash(b1, "1.0", &h1, &err), &err);
    REQUIRE_OK(qp_sweep_base_hash(b2, "1.0", &h2, &err), &err);
    REQUIRE_OK(qp_sweep_base_hash(b3, "1.0", &h3, &err), &err);
    REQUIRE_OK(qp_sweep_base_hash(b1, "1.1", &h4, &err), &err);
    char a[QP_SHA256_HEX], c[QP_SHA256_HEX], d[QP_SHA256_HEX], e[QP_SHA256_HEX],
        f[QP_SHA256_HEX];
    qp_sweep_cfg_hash(&h1, &g.c[2], a);
    qp_sweep_cfg_hash(&h2, &g.c[2], c);
    qp_sweep_cfg_hash(&h3, &g.c[2], d);
    qp_sweep_cfg_hash(&h4, &g.c[2], e);
    qp_sweep_cfg_hash(&h1, &g.c[1], f);
    CHECK_INT(strlen(a), 64);
    CHECK_STR(a, c);                 /* same model, data, recipe, version */
    CHECK(strcmp(a, d) != 0);        /* other evaluation data */
    CHECK(strcmp(a, e) != 0);        /* another qprobe */
    CHECK(strcmp(a, f) != 0);        /* another recipe */
    qp_sweep_backend_free(b1);
    qp_sweep_backend_free(b2);
    qp_sweep_backend_free(b3);
    qp_sweep_grid_release(&g);
}

QP_TEST(sweep_table_lock_and_header)
{
    struct qp_error err;
    char *csv = qp_test_path(ctx, "t.csv"), *other = qp_test_path(ctx, "o.csv");
    struct qp_sweep_file *f1, *f2;
    REQUIRE_OK(qp_sweep_file_open(csv, &f1, &err), &err);
    CHECK_INT(f1->rows->nrows, 0);
    CHECK_INT(qp_sweep_file_open(csv, &f2, &err), QP_E_IO);
    CHECK_CONTAINS(err.msg, "another sweep is writing it");
    qp_sweep_file_close(f1);
    REQUIRE_OK(qp_sweep_file_open(csv, &f2, &err), &err);
    qp_sweep_file_close(f2);
    REQUIRE(qp_test_write_file(other, "rank,name\n1,x\n", 14));
    CHECK_INT(qp_sweep_file_open(other, &f2, &err), QP_E_FORMAT);
    CHECK_CONTAINS(err.msg, "not a sweep table");
    const char *in[] = {other};
    CHECK_INT(qp_sweep_merge(in, 1, csv, NULL, NULL, &err), QP_E_FORMAT);
    /* the failed merge left the output as it was: the header alone */
    REQUIRE_OK(qp_sweep_file_open(csv, &f1, &err), &err);
    CHECK_INT(f1->rows->nrows, 0);
    qp_sweep_file_close(f1);
    free(csv);
    free(other);
}
