/* Unit tests of analysis/diff.c and analysis/logits.c: layout conversion
 * and refusals, dequantized comparison, logits metrics, ranking, --fail-if
 * conditions, and the memory a streamed diff needs. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/diff.h"
#include "analysis/logits.h"
#include "tests/test.h"

/* ---- helpers -------------------------------------------------------------------- */

static struct qp_tensor *f32(const char *name, int nd, const int64_t *shape,
                             const float *v)
{
    struct qp_tensor *t;
    if (qp_tensor_new(name, QP_DTYPE_F32, nd, shape, &t, NULL))
        return NULL;
    if (v)
        memcpy(t->data, v, t->nbytes);
    return t;
}

/* Writes the tensors (freeing them) as an npy directory under the test's
 * tmpdir; returns its malloc'd path. */
static char *write_dump(struct qp_test_ctx *ctx, const char *name,
                        struct qp_tensor **ts, size_t n)
{
    char *path = qp_test_path(ctx, name);
    struct qp_dump_writer *w;
    struct qp_error err;
    bool ok = qp_dump_writer_open(path, QP_DUMP_NPY_DIR, &w, &err) == QP_OK;
    for (size_t i = 0; ok && i < n; i++)
        ok = qp_dump_writer_add(w, ts[i], &err) == QP_OK;
    ok = ok && qp_dump_writer_commit(w, &err) == QP_OK;
    if (!ok)
        qp_test_failf(ctx, __FILE__, __LINE__, "writing %s: %s", name, err.msg);
    for (size_t i = 0; i < n; i++)
        qp_tensor_free(ts[i]);
    return path;
}

/* Opens both dumps, aligns by name and runs the diff with opts. */
static enum qp_status diff_paths(const char *rp, const char *tp,
                                 const struct qp_diff_opts *o, struct qp_diff *d,
                                 struct qp_error *err)
{
    struct qp_dump *r = NULL, *t = NULL;
    struct qp_align a = {0};
    *d = (struct qp_diff){0};
    enum qp_status st = qp_dump_open(rp, QP_DUMP_AUTO, &r, err);
    if (!st)
        st = qp_dump_open(tp, QP_DUMP_AUTO, &t, err);
    if (!st) {
        const char *rn[16], *tn[16];
        for (size_t i = 0; i < r->count && i < 16; i++)
            rn[i] = r->entries[i]->name;
        for (size_t i = 0; i < t->count && i < 16; i++)
            tn[i] = t->entries[i]->name;
        st = qp_align_names(rn, r->count, tn, t->count, NULL, &a, err);
    }
    if (!st)
        st = qp_diff_run(r, t, &a, o, d, err);
    qp_align_release(&a);
    qp_dump_close(r);
    qp_dump_close(t);
    return st;
}

/* ---- layouts ------------------------------------------------------------------------ */

QP_TEST(diff_layout_decl_parse)
{
    struct qp_layout_decl l;
    struct qp_error err;
    REQUIRE_OK(qp_layout_decl_parse("nchw:NHWC", &l, &err), &err);
    CHECK_STR(l.ref, "NCHW");
    CHECK_STR(l.test, "NHWC");
    REQUIRE_OK(qp_layout_decl_parse(":NWC", &l, &err), &err);
    CHECK_STR(l.ref, "");
    CHECK_STR(l.test, "NWC");
    static const struct {
        const char *s, *needle;
    } bad[] = {{"NCHW", "expected REF:TEST"},  {":", "both sides are empty"},
               {"NCHW:NHWD", "same letters"},  {"NCHW:NHW", "same letters"},
               {"NN:NN", "distinct letters"},  {"N1:1N", "distinct letters"},
               {"ABCDEFGHI:", "1 to 8 distinct letters"},
               {"ABCDEFGHI:ABCDEFGHI", "expected REF:TEST"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK_FAILS(qp_layout_decl_parse(bad[i].s, &l, &err), QP_E_INVAL, &err,
                    bad[i].needle);
}

/* ref x[n,c,h,w] = 10n + 3c + 2h + w (NCHW, [2,3,2,2]); the test holds
 * the same values in NHWC as int8 per-channel (axis 3) with scales
 * {1, 0.5, 0.25} and zero points {0, 4, -8}, except one element 1 off. */
static void layout_dumps(struct qp_test_ctx *ctx, char **rp, char **tp)
{
    int64_t rs[4] = {2, 3, 2, 2}, ts[4] = {2, 2, 2, 3};
    float v[24];
    struct qp_tensor *q;
    struct qp_error err;
    for (int i = 0; i < 24; i++) {
        int n = i / 12, c = i / 4 % 3, h = i / 2 % 2, w = i % 2;
        v[i] = (float)(10 * n + 3 * c + 2 * h + w);
    }
    struct qp_tensor *r = f32("act", 4, rs, v);
    if (qp_tensor_new("act", QP_DTYPE_I8, 4, ts, &q, &err))
        return;
    const float sc[3] = {1, 0.5f, 0.25f};
    const int32_t zp[3] = {0, 4, -8};
    qp_tensor_set_qparams(q, 3, sc, zp, 3, 0, &err);
    int8_t *qd = q->data;
    for (int i = 0; i < 24; i++) { /* i indexes NCHW */
        int n = i / 12, c = i / 4 % 3, h = i / 2 % 2, w = i % 2;
        int j = ((n * 2 + h) * 2 + w) * 3 + c;
        qd[j] = (int8_t)(v[i] / sc[c] + (float)zp[c]);
    }
    qd[((1 * 2 + 1) * 2 + 0) * 3 + 2] += 4; /* n1 h1 w0 c2: +4 * 0.25 = +1 */
    *rp = write_dump(ctx, "ref", &r, 1);
    *tp = write_dump(ctx, "test", &q, 1);
}

QP_TEST(diff_permutes_declared_layouts_and_dequantizes)
{
    char *rp, *tp;
    layout_dumps(ctx, &rp, &tp);
    struct qp_layout_decl l;
    struct qp_error err;
    REQUIRE_OK(qp_layout_decl_parse("NCHW:NHWC", &l, &err), &err);
    struct qp_diff_opts o = {&l, 1, NULL, 0, NULL, false};
    struct qp_diff d;
    REQUIRE_OK(diff_paths(rp, tp, &o, &d, &err), &err);
    REQUIRE(d.nrows == 1);
    CHECK_INT(d.nrefused, 0);
    const struct qp_diff_row *row = &d.rows[0];
    CHECK_STR(row->permuted, "NHWC->NCHW");
    CHECK_INT(row->m.numel, 24);
    CHECK_NEAR(row->m.sum_err2, 1, 0);   /* one element, 1 off */
    CHECK_NEAR(row->m.max_abs_err, 1, 0);
    CHECK_NEAR(row->m.ref_absmax, 19, 0); /* 10 + 3*2 + 2 + 1 */
    CHECK_INT(row->shape[1], 3);
    qp_diff_release(&d);
    free(rp);
    free(tp);
}

QP_TEST(diff_refuses_unreconciled_shapes)
{
    char *rp, *tp;
    layout_dumps(ctx, &rp, &tp);
    struct qp_error err;
    struct qp_diff_opts o = {NULL, 0, NULL, 0, NULL, false};
    struct qp_diff d;
    REQUIRE_OK(diff_paths(rp, tp, &o, &d, &err), &err);
    CHECK_INT(d.nrows, 0);
    REQUIRE(d.nrefused == 1);
    CHECK_STR(d.refused[0].reason,
              "shapes differ: reference [2,3,2,2], test [2,2,2,3]; not compared "
              "(declare layouts with --layout REF:TEST, e.g. NCHW:NHWC)");
    qp_diff_release(&d);
    /* a declaration for another rank changes nothing; a wrong one is
     * refused naming the converted shape */
    struct qp_layout_decl l[2];
    REQUIRE_OK(qp_layout_decl_parse("NCW:NWC", &l[0], &err), &err);
    REQUIRE_OK(qp_layout_decl_parse("NCHW:NCWH", &l[1], &err), &err);
    o = (struct qp_diff_opts){l, 2, NULL, 0, NULL, false};
    REQUIRE_OK(diff_paths(rp, tp, &o, &d, &err), &err);
    REQUIRE(d.nrefused == 1);
    CHECK_STR(d.refused[0].reason,
              "shapes differ: reference [2,3,2,2], test [2,2,2,3] ([2,2,3,2] "
              "after NCWH->NCHW); not compared");
    qp_diff_release(&d);
    free(rp);
    free(tp);
}

QP_TEST(diff_honours_layout_tags_of_listed_tensors)
{
    char *rp, *tp;
    layout_dumps(ctx, &rp, &tp);
    struct qp_error err;
    struct qp_dump *r, *t;
    REQUIRE_OK(qp_dump_open(rp, QP_DUMP_AUTO, &r, &err), &err);
    REQUIRE_OK(qp_dump_open(tp, QP_DUMP_AUTO, &t, &err), &err);
    /* as a raw-dir sidecar would: the device tensor says NHWC; only the
     * reference side is declared */
    REQUIRE_OK(qp_tensor_set_layout(t->entries[0], "nhwc", &err), &err);
    struct qp_layout_decl l;
    REQUIRE_OK(qp_layout_decl_parse("NCHW:", &l, &err), &err);
    struct qp_diff_opts o = {&l, 1, NULL, 0, NULL, false};
    const char *names[1] = {"act"};
    struct qp_align a;
    REQUIRE_OK(qp_align_names(names, 1, names, 1, NULL, &a, &err), &err);
    struct qp_diff d;
    REQUIRE_OK(qp_diff_run(r, t, &a, &o, &d, &err), &err);
    REQUIRE(d.nrows == 1);
    CHECK_STR(d.rows[0].permuted, "NHWC->NCHW");
    CHECK_NEAR(d.rows[0].m.sum_err2, 1, 0);
    qp_diff_release(&d);
    qp_align_release(&a);
    qp_dump_close(r);
    qp_dump_close(t);
    free(rp);
    free(tp);
}

QP_TEST(diff_packed_test_cannot_be_permuted)
{
    int64_t rs[2] = {2, 4}, ts[2] = {4, 2};
    struct qp_tensor *r = f32("w", 2, rs, NULL), *q;
    struct qp_error err;
    REQUIRE_OK(qp_tensor_new("w", QP_DTYPE_I4, 2, ts, &q, &err), &err);
    struct qp_dump d0 = {0}, d1 = {0};
    struct qp_tensor *re[1] = {r}, *te[1] = {q};
    d0.entries = re;
    d0.count = 1;
    d1.entries = te;
    d1.count = 1;
    struct qp_layout_decl l;
    REQUIRE_OK(qp_layout_decl_parse("OI:IO", &l, &err), &err);
    struct qp_diff_opts o = {&l, 1, NULL, 0, NULL, false};
    struct qp_align_pair p = {0, 0, QP_ALIGN_EXACT, -1};
    struct qp_align a = {.pairs = &p, .npairs = 1};
    struct qp_diff d;
    /* refused from the listings alone: nothing is loaded */
    REQUIRE_OK(qp_diff_run(&d0, &d1, &a, &o, &d, &err), &err);
    REQUIRE(d.nrefused == 1);
    CHECK_STR(d.refused[0].reason, "test layout IO differs from OI, but packed "
                                   "i4 data cannot be permuted");
    qp_diff_release(&d);
    qp_tensor_free(r);
    qp_tensor_free(q);
}

/* ---- logits --------------------------------------------------------------------------- */

QP_TEST(logits_kl_and_top1_hand_computed)
{
    /* row 0: p = (1/2, 1/2), q = (1/4, 3/4): KL = 1/2 ln 2 + 1/2 ln 2/3
     * = 1/2 ln 4/3; argmax 0 vs 1 disagree.
     * row 1: identical: KL 0, agree.
     * row 2: test has a NaN: out of kl, disagrees. */
    int64_t shape[2] = {3, 2};
    const float r[6] = {0, 0, 1, -2, 5, 1};
    const float t[6] = {0, (float)log(3.0), 1, -2, NAN, 1};
    struct qp_tensor *a = f32("logits", 2, shape, r), *b = f32("logits", 2, shape, t);
    REQUIRE(a && b);
    struct qp_logits l;
    struct qp_error err;
    REQUIRE_OK(qp_logits_tensors(a, b, &l, &err), &err);
    CHECK_INT(l.rows, 3);
    CHECK_INT(l.finite_rows, 2);
    CHECK_INT(l.agree, 1);
    CHECK_NEAR(qp_logits_kl(&l), 0.5 * 0.5 * log(4.0 / 3.0), 1e-8);
    CHECK_NEAR(qp_logits_top1(&l), 1.0 / 3.0, 1e-15);
    bool agree;
    CHECK_NEAR(qp_logits_row_kl(r, t, 2, &agree), 0.5 * log(4.0 / 3.0), 1e-8);
    CHECK(!agree);
    /* a large common offset changes nothing (log-sum-exp) */
    const float big_r[2] = {1000, 1000}, big_t[2] = {1000, 1000 + (float)log(3.0)};
    CHECK_NEAR(qp_logits_row_kl(big_r, big_t, 2, &agree), 0.5 * log(4.0 / 3.0),
               1e-4);
    qp_tensor_free(a);
    qp_tensor_free(b);
}

QP_TEST(logits_rows_on_threads_and_no_rows)
{
    /* 40000 rows of 4 classes (above the threading threshold): every row
     * of the test is the reference shifted by a constant, so KL is 0 and
     * every argmax agrees */
    int64_t shape[3] = {200, 200, 4};
    struct qp_tensor *a = f32("l", 3, shape, NULL), *b = f32("l", 3, shape, NULL);
    REQUIRE(a && b);
    float *x = a->data, *y = b->data;
    for (size_t i = 0; i < 160000; i++) {
        x[i] = (float)((i * 7) % 13) * 0.25f;
        y[i] = x[i] + 1.5f;
    }
    setenv("QP_THREADS", "2", 1);
    struct qp_logits l;
    struct qp_error err;
    CHECK_OK(qp_logits_tensors(a, b, &l, &err), &err);
    unsetenv("QP_THREADS");
    CHECK_INT(l.rows, 40000);
    CHECK_INT(l.agree, 40000);
    CHECK_NEAR(qp_logits_kl(&l), 0, 1e-12);
    qp_tensor_free(a);
    qp_tensor_free(b);
    int64_t z[2] = {3, 0};
    a = f32("z", 2, z, NULL);
    b = f32("z", 2, z, NULL);
    CHECK_OK(qp_logits_tensors(a, b, &l, &err), &err);
    CHECK(isnan(qp_logits_kl(&l)) && isnan(qp_logits_top1(&l)));
    qp_tensor_free(a);
    qp_tensor_free(b);
}

QP_TEST(diff_marks_logits_by_glob)
{
    int64_t shape[2] = {1, 2};
    const float r[2] = {0, 0}, t[2] = {0, (float)log(3.0)};
    struct qp_tensor *ra[2] = {f32("model/logits", 2, shape, r), f32("h", 2, shape, r)};
    struct qp_tensor *ta[2] = {f32("model/logits", 2, shape, t), f32("h", 2, shape, t)};
    char *rp = write_dump(ctx, "ref", ra, 2), *tp = write_dump(ctx, "test", ta, 2);
    const char *globs[1] = {"*logits"};
    struct qp_diff_opts o = {NULL, 0, globs, 1, NULL, false};
    struct qp_diff d;
    struct qp_error err;
    REQUIRE_OK(diff_paths(rp, tp, &o, &d, &err), &err);
    REQUIRE(d.nrows == 2);
    CHECK(d.rows[0].logits);
    CHECK_NEAR(d.rows[0].kl, 0.5 * log(4.0 / 3.0), 1e-8);
    CHECK_NEAR(d.rows[0].top1, 0, 0);
    CHECK(!d.rows[1].logits);
    CHECK(isnan(qp_diff_value(&d.rows[1], QP_DM_KL)));
    qp_diff_release(&d);
    free(rp);
    free(tp);
}

/* ---- ranking and conditions --------------------------------------------------------------- */

static struct qp_diff_row row(size_t idx, double err2, uint64_t nonfinite)
{
    struct qp_diff_row r = {.ref_index = idx, .kl = NAN, .top1 = NAN};
    r.m.sum_ref2 = 100;
    r.m.sum_test2 = 100;
    r.m.sum_err2 = err2;
    r.m.sum_abs_err = err2;
    r.m.numel = 10;
    r.m.nonfinite = nonfinite;
    return r;
}

QP_TEST(diff_sort_worst_first)
{
    /* sqnr: idx0 20 dB (err 1), idx1 inf (err 0), idx2 10 dB (err 10),
     * idx3 20 dB but 2 non-finite values, idx4 20 dB (tie with idx0),
     * idx5 30 dB with 1 non-finite value */
    struct qp_diff_row rows[6] = {row(0, 1, 0), row(1, 0, 0), row(2, 10, 0),
                                  row(3, 1, 2), row(4, 1, 0), row(5, 0.1, 1)};
    struct qp_diff d = {rows, 6, NULL, 0};
    qp_diff_sort(&d, QP_DM_SQNR);
    const size_t want[6] = {3, 5, 2, 0, 4, 1};
    for (int i = 0; i < 6; i++)
        CHECK_INT(d.rows[i].ref_index, want[i]);
    CHECK_NEAR(qp_diff_value(&d.rows[2], QP_DM_SQNR), 10, 1e-12);
    /* mae: higher is worse */
    qp_diff_sort(&d, QP_DM_MAE);
    const size_t want_mae[6] = {3, 5, 2, 0, 4, 1};
    for (int i = 0; i < 6; i++)
        CHECK_INT(d.rows[i].ref_index, want_mae[i]);
    /* kl: NaN for all (no logits) -> dump order after the non-finite */
    qp_diff_sort(&d, QP_DM_KL);
    const size_t want_kl[6] = {3, 5, 0, 1, 2, 4};
    for (int i = 0; i < 6; i++)
        CHECK_INT(d.rows[i].ref_index, want_kl[i]);
    qp_diff_sort(&d, QP_DM_ORDER); /* plain dump order, even non-finite */
    const size_t want_order[6] = {0, 1, 2, 3, 4, 5};
    for (int i = 0; i < 6; i++)
        CHECK_INT(d.rows[i].ref_index, want_order[i]);
}

QP_TEST(diff_conditions)
{
    struct qp_diff_cond c;
    struct qp_error err;
    REQUIRE_OK(qp_diff_cond_parse(" sqnr_db < 25 ", &c, &err), &err);
    CHECK_INT(c.metric, QP_DM_SQNR);
    CHECK_INT(c.op, QP_OP_LT);
    CHECK_NEAR(c.value, 25, 0);
    struct qp_diff_row r20 = row(0, 1, 0), rinf = row(1, 0, 0);
    CHECK(qp_diff_cond_hit(&c, &r20));
    CHECK(!qp_diff_cond_hit(&c, &rinf));
    REQUIRE_OK(qp_diff_cond_parse("sqnr_db<=20", &c, &err), &err);
    CHECK(qp_diff_cond_hit(&c, &r20));
    REQUIRE_OK(qp_diff_cond_parse("nonfinite>0", &c, &err), &err);
    CHECK(!qp_diff_cond_hit(&c, &r20));
    struct qp_diff_row rn = row(0, 1, 3);
    CHECK(qp_diff_cond_hit(&c, &rn));
    REQUIRE_OK(qp_diff_cond_parse("sqnr_db==inf", &c, &err), &err);
    CHECK(qp_diff_cond_hit(&c, &rinf));
    REQUIRE_OK(qp_diff_cond_parse("kl>=0", &c, &err), &err);
    CHECK(!qp_diff_cond_hit(&c, &r20)); /* NaN (no logits) never crosses */
    REQUIRE_OK(qp_diff_cond_parse("cosine!=1e0", &c, &err), &err);
    CHECK_INT(c.op, QP_OP_NE);
    static const struct {
        const char *s, *needle;
    } bad[] = {{"snr<3", "unknown metric 'snr'"},
               {"order<3", "unknown metric 'order'"},
               {"sqnr_db=3", "expected one of"},
               {"sqnr_db<", "expected a number"},
               {"sqnr_db<3x", "expected a number"},
               {"sqnr_db<nan", "expected a number"},
               {"", "unknown metric ''"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK_FAILS(qp_diff_cond_parse(bad[i].s, &c, &err), QP_E_INVAL, &err,
                    bad[i].needle);
    enum qp_diff_metric m;
    CHECK(qp_diff_metric_from_name("rel_l2", &m) && m == QP_DM_REL_L2);
    CHECK_STR(qp_diff_metric_name(QP_DM_TOP1), "top1");
}

/* ---- streaming -------------------------------------------------------------------------------- */

/* A line "Key:   N kB" of /proc/self/status, in KiB; -1 when absent. */
static long status_kib(const char *key)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long v = -1;
    size_t kl = strlen(key);
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, key, kl))
            v = strtol(line + kl, NULL, 10);
    if (f)
        fclose(f);
    return v;
}

/* Resets the peak RSS (VmHWM) to the current RSS (Linux >= 4.0). */
static bool reset_peak_rss(void)
{
    FILE *f = fopen("/proc/self/clear_refs", "w");
    bool ok = f && fputs("5", f) >= 0;
    return f ? (fclose(f) == 0 && ok) : false;
}

QP_TEST(diff_streams_one_pair_at_a_time)
{
    /* two dumps of 16 tensors x 4 MiB = 64 MiB each; streamed, the diff
     * holds about one pair (8 MiB), not the 128 MiB of both dumps */
    enum { N = 16 };
    int64_t shape[1] = {1 << 20};
    struct qp_tensor *r[N], *t[N];
    for (int k = 0; k < N; k++) {
        char name[16];
        snprintf(name, sizeof name, "t%02d", k);
        r[k] = f32(name, 1, shape, NULL);
        t[k] = f32(name, 1, shape, NULL);
        REQUIRE(r[k] && t[k]);
        float *x = r[k]->data, *y = t[k]->data;
        for (int i = 0; i < 1 << 20; i++) {
            x[i] = (float)(i % 1000) * 0.001f;
            y[i] = x[i] + (float)k * 1e-4f;
        }
    }
    char *paths[2] = {write_dump(ctx, "ref", r, N), write_dump(ctx, "test", t, N)};
    REQUIRE(reset_peak_rss());
    long base = status_kib("VmRSS:");
    struct qp_diff_opts o = {NULL, 0, NULL, 0, NULL, false};
    struct qp_diff d;
    struct qp_error err;
    CHECK_OK(diff_paths(paths[0], paths[1], &o, &d, &err), &err);
    long peak = status_kib("VmHWM:");
    CHECK_INT(d.nrows, N);
    qp_diff_release(&d);
    REQUIRE(base > 0 && peak > 0);
    long grew = peak - base;
    /* one pair is 8 MiB; allow 3 pairs of slack, far below the 128 MiB */
    if (grew > 24 * 1024)
        qp_test_failf(ctx, __FILE__, __LINE__,
                      "diff of 2 x 64 MiB grew the peak RSS by %ld KiB", grew);
    free(paths[0]);
    free(paths[1]);
}
