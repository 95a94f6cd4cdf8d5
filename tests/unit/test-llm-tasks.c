/* tests/unit/test-llm-tasks.c: multiple-choice and exact-match scores
 * (analysis/llm-tasks.h) on a tiny random model with pre-tokenized items:
 * predictions and matches against the reference forward, and malformed
 * files refused naming the line. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "analysis/llm-tasks.h"
#include "tests/test.h"
#include "tests/unit/llama-test-util.h"

/* log p of cont[nt] after ctx[nc] by the reference forward. */
static double ref_lp(const struct tl_model *tm, const int32_t *ctx, int nc,
                     const int32_t *cont, int nt)
{
    int32_t seq[64];
    memcpy(seq, ctx, (size_t)nc * sizeof *seq);
    memcpy(seq + nc, cont, (size_t)nt * sizeof *seq);
    int V = tm->c.vocab, T = nc + nt;
    double *l = malloc((size_t)T * V * sizeof *l), lp = 0;
    tl_ref_forward(tm, seq, T, l, NULL);
    for (int k = 0; k < nt; k++) {
        const double *row = l + (size_t)(nc - 1 + k) * V;
        double mx = row[0], s = 0;
        for (int v = 1; v < V; v++)
            mx = row[v] > mx ? row[v] : mx;
        for (int v = 0; v < V; v++)
            s += exp(row[v] - mx);
        lp += row[cont[k]] - mx - log(s);
    }
    free(l);
    return lp;
}

static struct qp_llm *open_model(struct qp_test_ctx *ctx, struct tl_model *tm)
{
    struct tl_cfg c = tl_default();
    c.seed = 21;
    char *dir = qp_test_path(ctx, "m");
    struct qp_llm *m = NULL;
    struct qp_error err;
    if (dir && mkdir(dir, 0755) == 0 && tl_write_model(dir, &c, tm) &&
        qp_llm_open(dir, &m, &err))
        qp_test_failf(ctx, __FILE__, __LINE__, "open: %s", err.msg);
    free(dir);
    return m;
}

static void write_text(const char *path, const char *text)
{
    qp_test_write_file(path, text, strlen(text));
}

QP_TEST(llm_tasks_choices_against_reference)
{
    struct tl_model tm;
    struct qp_llm *m = open_model(ctx, &tm);
    REQUIRE(m);
    int32_t ctxs[3][3] = {{1, 5, 9}, {1, 44, 2}, {1, 30, 31}};
    int32_t ch[3][3] = {{3, 0, 0}, {7, 8, 0}, {20, 21, 22}};
    int len[3] = {1, 2, 3};
    int pred[3], pred_norm[3];
    bool differ = false;
    for (int i = 0; i < 3; i++) {
        double best = -INFINITY, bn = -INFINITY;
        for (int c = 0; c < 3; c++) {
            double lp = ref_lp(&tm, ctxs[i], 3, ch[c], len[c]);
            if (lp > best)
                best = lp, pred[i] = c;
            if (lp / len[c] > bn)
                bn = lp / len[c], pred_norm[i] = c;
        }
        differ |= pred[i] != pred_norm[i];
    }
    /* labels: item 0 the prediction, item 1 the normalised one, item 2
     * neither when possible */
    int label[3] = {pred[0], pred_norm[1], 0};
    while (label[2] == pred[2] || label[2] == pred_norm[2])
        label[2]++;
    char text[1024];
    size_t len0 = 0;
    for (int i = 0; i < 3; i++)
        len0 += (size_t)snprintf(text + len0, sizeof text - len0,
                                 "{\"context_ids\": [%d, %d, %d], \"choices_ids\": "
                                 "[[3], [7, 8], [20, 21, 22]], \"label\": %d}\n\n",
                                 ctxs[i][0], ctxs[i][1], ctxs[i][2], label[i]);
    char *path = qp_test_path(ctx, "mc.jsonl");
    write_text(path, text);
    struct qp_task_result r;
    struct qp_error err;
    REQUIRE_OK(qp_llm_choices(m, NULL, path, NULL, &r, &err), &err);
    CHECK_INT(r.items, 3);
    size_t want = (label[0] == pred[0]) + (label[1] == pred[1]) + 0;
    size_t want_n = (label[0] == pred_norm[0]) + (label[1] == pred_norm[1]);
    CHECK_INT(r.correct, want);
    CHECK_INT(r.correct_norm, want_n);
    CHECK_NEAR(r.acc, want / 3.0, 1e-12);
    CHECK_NEAR(r.acc_unc, sqrt(want / 3.0 * (1 - want / 3.0) / 2), 1e-12);
    if (!differ)
        fprintf(stderr, "note: acc and acc_norm agreed on every item\n");
    for (int i = 0; i < 3; i++)
        CHECK(r.item[i].pred == pred[i] && r.item[i].pred_norm == pred_norm[i] &&
              r.item[i].n_choices == 3 && r.item[i].line == (size_t)(2 * i + 1));
    qp_task_result_release(&r);
    /* malformed items name the line */
    write_text(path, "{\"context_ids\": [1], \"choices_ids\": [[3], [4]], \"label\": 0}\n"
                     "{\"context_ids\": [1], \"choices_ids\": [[3], [4]], \"label\": 2}\n");
    CHECK_FAILS(qp_llm_choices(m, NULL, path, NULL, &r, &err), QP_E_FORMAT, &err,
                "line 2: 'choices_ids' must list at least two choices");
    write_text(path, "{\"context_ids\": [1], \"choices_ids\": [[3], [50]], "
                     "\"label\": 0}\n");
    CHECK_FAILS(qp_llm_choices(m, NULL, path, NULL, &r, &err), QP_E_FORMAT, &err,
                "line 1: choice 1: element 0 is not a token id in [0, 50)");
    write_text(path, "{\"context_ids\": [1], \n");
    CHECK_FAILS(qp_llm_choices(m, NULL, path, NULL, &r, &err), QP_E_FORMAT, &err,
                "line 1");
    write_text(path, "\n\n");
    CHECK_FAILS(qp_llm_choices(m, NULL, path, NULL, &r, &err), QP_E_FORMAT, &err,
                "no items");
    free(path);
    tl_model_free(&tm);
    qp_llm_free(m);
}

QP_TEST(llm_tasks_exact_match_against_reference)
{
    struct tl_model tm;
    struct qp_llm *m = open_model(ctx, &tm);
    REQUIRE(m);
    /* the reference's greedy continuation of 3 tokens (no EOS in it: the
     * config's EOS is 2, which the test avoids by checking) */
    int32_t seq[8] = {1, 4, 6};
    double l[8 * 50];
    for (int t = 3; t < 6; t++) {
        tl_ref_forward(&tm, seq, t, l, NULL);
        const double *row = l + (t - 1) * 50;
        int best = 0;
        for (int v = 1; v < 50; v++)
            best = row[v] > row[best] ? v : best;
        seq[t] = best;
    }
    bool eos = seq[3] == 2 || seq[4] == 2 || seq[5] == 2;
    char text[512];
    snprintf(text, sizeof text,
             "{\"prompt_ids\": [1, 4, 6], \"answer_ids\": [%d, %d, %d]}\n"
             "{\"prompt_ids\": [1, 4, 6], \"answer_ids\": [%d, %d, %d]}\n",
             seq[3], seq[4], seq[5], seq[3], seq[4], (seq[5] + 1) % 50);
    char *path = qp_test_path(ctx, "em.jsonl");
    write_text(path, text);
    struct qp_task_result r;
    struct qp_error err;
    REQUIRE_OK(qp_llm_exact_match(m, NULL, path, NULL, &r, &err), &err);
    CHECK_INT(r.items, 2);
    if (!eos)
        CHECK_INT(r.correct, 1);
    CHECK(r.item[0].n_generated == 3 && !r.item[0].text);
    qp_task_result_release(&r);
    write_text(path, "{\"prompt_ids\": [1, 4]}\n");
    CHECK_FAILS(qp_llm_exact_match(m, NULL, path, NULL, &r, &err), QP_E_FORMAT, &err,
                "line 1: 'answer' (a string) is missing");
    free(path);
    tl_model_free(&tm);
    qp_llm_free(m);
}
