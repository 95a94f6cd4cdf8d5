/* tests/unit/test-report.c: the report's pieces: every CSV kind told apart
 * by its header (and near misses refused), best-per-column marks, escaping
 * and sort keys of the HTML tables, and Pareto fronts. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/report-html.h"
#include "analysis/report-plots.h"
#include "analysis/report.h"
#include "analysis/sweep-csv.h"
#include "tests/test.h"

/* The kind of a header given as one comma-separated string, or -1. */
static int kind(const char *header)
{
    char buf[1024], *cols[64];
    size_t n = 0;
    snprintf(buf, sizeof buf, "%s", header);
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t && n < 64;
         t = strtok_r(NULL, ",", &save))
        cols[n++] = t;
    enum qp_report_kind k;
    return qp_report_kind_of((const char *const *)cols, n, &k) ? (int)k : -1;
}

QP_TEST(report_tells_every_table_by_its_header)
{
    char sweep[1024] = "";
    for (int c = 0; c < QP_SWEEP_NCOLS; c++)
        snprintf(sweep + strlen(sweep), sizeof sweep - strlen(sweep), "%s%s",
                 c ? "," : "", qp_sweep_columns[c]);
    CHECK_INT(kind(sweep), QP_REPORT_SWEEP);
    CHECK_INT(kind("rank,name,shape,numel,sqnr_db,cosine,mae,max_abs,rel_l2,"
                   "ref_absmax,nonfinite,kl,top1,test_name,mae_lsb,max_lsb,"
                   "rmse_lsb,mismatches,order"), QP_REPORT_DIFF);
    /* a diff of an older qprobe, without the order column */
    CHECK_INT(kind("rank,name,shape,numel,sqnr_db,cosine,mae,max_abs,rel_l2,"
                   "ref_absmax,nonfinite"), QP_REPORT_DIFF);
    CHECK_INT(kind("rank,unit,kind,params,bytes_fp32,bytes_scheme,macs,in_w_sqnr,"
                   "in_a_sqnr,in_wa_sqnr,hint"), QP_REPORT_SENS);
    CHECK_INT(kind("index,name,block,fake_vs_first_db,fake_vs_prev_db,"
                   "fake_prev_max_lsb,fake_prev_mismatches,int_vs_first_db,"
                   "int_vs_prev_db,int_prev_max_lsb,int_prev_mismatches"),
              QP_REPORT_LADDER);
    CHECK_INT(kind("step,unit,scheme,predicted_gain,measured_gain,calib_sqnr,"
                   "calib_kl,eval_sqnr,eval_kl,bytes,bitops,transitions,reranked"),
              QP_REPORT_RECIPE);
    /* the headers main writes today (recipe step kinds and perplexity,
     * sensitivity's one-out, weight statistics and local columns) */
    CHECK_INT(kind("step,unit,scheme,predicted_gain,measured_gain,calib_sqnr,"
                   "calib_kl,eval_sqnr,eval_kl,bytes,bitops,transitions,reranked,"
                   "kind,units,calib_ppl_delta,eval_ppl_delta"), QP_REPORT_RECIPE);
    CHECK_INT(kind("rank,unit,kind,params,bytes_fp32,bytes_scheme,macs,in_w_sqnr,"
                   "in_a_sqnr,in_wa_sqnr,in_wa_kl,in_wa_top1,out_w_sqnr,out_a_sqnr,"
                   "out_wa_sqnr,out_wa_kl,weight_sqnr,kurtosis,outliers_6sigma,"
                   "channel_spread,clip_share,act_range,local_sqnr,accum_sqnr,hint"),
              QP_REPORT_SENS);
    /* near misses */
    CHECK_INT(kind("rank,name,shape,numel,sqnr"), -1);
    CHECK_INT(kind("index,name,block,fake_vs_first_db,fake_vs_prev_db,"
                   "fake_prev_max_lsb"), -1); /* a rung cut short */
    CHECK_INT(kind("index,name,block,a_vs_first,a_vs_prev_db,a_prev_max_lsb,"
                   "a_prev_mismatches"), -1);
    char cut[1024];
    snprintf(cut, sizeof cut, "%.*s", (int)(strrchr(sweep, ',') - sweep), sweep);
    CHECK_INT(kind(cut), -1); /* a sweep table without its last column */
    CHECK_INT(kind("a,b,c"), -1);
}

/* The table written into a string. */
static char *written(const struct qp_html_table *t)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return NULL;
    qp_html_table_write(f, "t", t);
    fclose(f);
    return buf;
}

QP_TEST(report_tables_mark_the_best_of_eligible_rows)
{
    struct qp_error err;
    static const struct qp_html_col cols[] = {
        {"name", 0, NULL}, {"sqnr", 1, "higher is better"}, {"bytes", -1, NULL}};
    struct qp_html_table t;
    qp_html_table_init(&t, cols, 3);
    /* the reference has the highest SQNR but is not eligible */
    const char *r0[] = {"fp32", "inf", "400"}, *r1[] = {"w8<b>", "30.5", "100"},
               *r2[] = {"w4", "12.0", "50"}, *r3[] = {"w4'", "30.5", ""};
    double k0[] = {NAN, INFINITY, 400}, k1[] = {NAN, 30.5, 100}, k2[] = {NAN, 12, 50},
           k3[] = {NAN, 30.5, NAN};
    REQUIRE_OK(qp_html_table_add(&t, r0, k0, false, "ref", &err), &err);
    REQUIRE_OK(qp_html_table_add(&t, r1, k1, true, NULL, &err), &err);
    REQUIRE_OK(qp_html_table_add(&t, r2, k2, true, "front", &err), &err);
    REQUIRE_OK(qp_html_table_add(&t, r3, k3, true, NULL, &err), &err);
    char *html = written(&t);
    REQUIRE(html);
    /* 30.5 twice (a tie), never the ineligible inf; the fewest bytes */
    CHECK_CONTAINS(html, "<td class=\"best\" data-k=\"30.5\">30.5</td>");
    const char *second = strstr(strstr(html, "best\" data-k=\"30.5\"") + 1,
                                "best\" data-k=\"30.5\"");
    CHECK(second != NULL);
    CHECK(strstr(html, "data-k=\"Infinity\">inf</td>") != NULL);
    CHECK(strstr(html, "best\" data-k=\"Infinity\"") == NULL);
    CHECK_CONTAINS(html, "<td class=\"best\" data-k=\"50\">50</td>");
    CHECK(strstr(html, "data-k=\"400\">400</td>") != NULL);
    /* text escaped, classes and tooltips kept */
    CHECK_CONTAINS(html, "w8&lt;b&gt;");
    CHECK_CONTAINS(html, "w4&#39;");
    CHECK(strstr(html, "<b>") == NULL);
    CHECK_CONTAINS(html, "<tr class=\"ref\">");
    CHECK_CONTAINS(html, "<tr class=\"front\">");
    CHECK_CONTAINS(html, "title=\"higher is better\"");
    CHECK_CONTAINS(html, "<table class=\"sortable\" id=\"t\">");
    free(html);
    qp_html_table_release(&t);
}

QP_TEST(report_pareto_front)
{
    /* cost, quality: (1,10) (2,20) (2,15) (3,20) (4,30) (5,nan) (0.5,inf) */
    double cost[] = {1, 2, 2, 3, 4, 5, 0.5}, q[] = {10, 20, 15, 20, 30, NAN, INFINITY};
    bool f[7];
    qp_pareto_front(cost, q, 7, f);
    CHECK(f[0] && f[1] && f[4]);
    CHECK(!f[2]); /* (2,20) beats it */
    CHECK(!f[3]); /* as good as (2,20) but costlier */
    CHECK(!f[5] && !f[6]); /* not finite */
    /* equal points do not beat each other */
    double c2[] = {1, 1}, q2[] = {5, 5};
    qp_pareto_front(c2, q2, 2, f);
    CHECK(f[0] && f[1]);
}
