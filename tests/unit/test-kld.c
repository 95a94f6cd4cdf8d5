/* tests/unit/test-kld.c: llama.cpp's perplexity and KL-divergence arithmetic
 * (analysis/kld.h) on small logit arrays whose values are known in closed
 * form, and the --kl-divergence-base file: layout, round trip, and every
 * malformed file refused. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/kld.h"
#include "tests/test.h"

QP_TEST(kld_nll_closed_form)
{
    float flat[4] = {0, 0, 0, 0};
    CHECK_NEAR(qp_kld_nll(flat, 4, 2), log(4.0), 1e-7);
    float l[3] = {1, 2, 3};
    /* -log p(3) = log(e + e^2 + e^3) - 3 = log(1 + e^-1 + e^-2) */
    CHECK_NEAR(qp_kld_nll(l, 3, 2), 0.40760596444438, 1e-6);
    CHECK_NEAR(qp_kld_nll(l, 3, 0), 2.40760596444438, 1e-6);
    uint16_t row[8];
    CHECK_NEAR(qp_kld_encode_row(l, 3, 0, row), 2.40760596444438, 1e-6);
}

QP_TEST(kld_encode_row_layout)
{
    /* max 2, min clipped to 2 - 16 = -14: scale 16 / 65535, values
     * round((l + 14) * 65535 / 16); -20 is below the clip: 0 */
    float l[5] = {0, -1, -20, 2, -14};
    uint16_t row[10];
    memset(row, 0xff, sizeof row);
    CHECK_INT(qp_kld_row_u16(5), 10);
    qp_kld_encode_row(l, 5, 3, row);
    float scale, minlp;
    memcpy(&scale, row, 4);
    memcpy(&minlp, row + 2, 4);
    CHECK(scale == 16.0f / 65535.0f);
    double lse = log(exp(-2.0) + exp(-3.0) + exp(-22.0) + 1 + exp(-16.0));
    CHECK_NEAR(minlp, -16 - lse, 1e-6);
    CHECK_INT(row[4], 57343); /* 14 * 65535 / 16 = 57343.125 */
    CHECK_INT(row[5], 53247); /* 13 * 4095.9375 = 53247.19 */
    CHECK_INT(row[6], 0);
    CHECK_INT(row[7], 65535);
    CHECK_INT(row[8], 0);     /* exactly at the clip: not above it */
    CHECK_INT(row[9], 0);     /* the pad of an odd vocabulary */
    /* log p back from the row: scale * q + min_log_prob */
    CHECK_NEAR(scale * row[4] + minlp, 0 - 2 - lse, 1e-4);
    float flat[2] = {3, 3};
    uint16_t r2[6];
    qp_kld_encode_row(flat, 2, 0, r2);
    memcpy(&scale, r2, 4);
    CHECK(scale == 0.0f && r2[4] == 0 && r2[5] == 0);
}

QP_TEST(kld_add_closed_form)
{
    /* base P = softmax(0, ln 3) = (1/4, 3/4); current Q = (1/2, 1/2):
     * KL(P||Q) = 1/4 ln(1/2) + 3/4 ln(3/2) */
    float base[2] = {0, logf(3)}, cur[2] = {0, 0};
    uint16_t row[6];
    qp_kld_encode_row(base, 2, 1, row);
    struct qp_kld_acc a = {0};
    struct qp_error err;
    REQUIRE_OK(qp_kld_add(&a, cur, 2, row, 1, &err), &err);
    double kl = 0.25 * log(0.5) + 0.75 * log(1.5);
    CHECK_NEAR(a.sum_kld, kl, 1e-4);
    CHECK_NEAR(a.sum_nll, log(2.0), 1e-6);
    CHECK_NEAR(a.sum_nll_base, -log(0.75), 1e-4);
    CHECK_NEAR(a.p_diff[0], 0.5 - 0.75, 1e-4);
    CHECK_INT(a.n_same_top, 0); /* argmax Q = 0 (first of a tie), argmax P = 1 */
    /* a row against its own base: KL ~ 0, same top, no change of p */
    REQUIRE_OK(qp_kld_add(&a, base, 2, row, 0, &err), &err);
    CHECK(fabs(a.kld[1]) < 1e-5);
    CHECK_INT(a.n_same_top, 1);
    CHECK(fabs(a.p_diff[1]) < 1e-5);
    CHECK_INT(a.count, 2);
    qp_kld_acc_release(&a);
}

QP_TEST(kld_ppl_result_closed_form)
{
    struct qp_ppl_acc a = {0};
    qp_ppl_add(&a, 1);
    qp_ppl_add(&a, 2);
    qp_ppl_add(&a, 3);
    double ppl, unc;
    qp_ppl_result(&a, &ppl, &unc);
    /* exp(2); variance 14/3 - 4 = 2/3 over n - 1 = 2 */
    CHECK_NEAR(ppl, exp(2.0), 1e-12);
    CHECK_NEAR(unc, exp(2.0) * sqrt(1.0 / 3.0), 1e-12);
}

QP_TEST(kld_stats_closed_form)
{
    /* 20 rows whose base and current probabilities of the next token are
     * set by hand: nll = i / 10, nll_base = i / 20 (i = 1..20) */
    struct qp_kld_acc a = {0};
    struct qp_error err;
    for (int i = 1; i <= 20; i++) {
        /* two tokens: p(tok) = exp(-nll) exactly when logits are
         * (0, log(p / (1 - p))) and tok = 1 */
        double p = exp(-i / 10.0), pb = exp(-i / 20.0);
        float cur[2] = {0, (float)log(p / (1 - p))};
        float bl[2] = {0, (float)log(pb / (1 - pb))};
        uint16_t row[6];
        qp_kld_encode_row(bl, 2, 1, row);
        REQUIRE_OK(qp_kld_add(&a, cur, 2, row, 1, &err), &err);
    }
    struct qp_kld_stats s;
    qp_kld_stats(&a, &s);
    CHECK_INT(s.count, 20);
    /* mean nll 1.05, mean base nll 0.525 */
    CHECK_NEAR(s.ppl, exp(1.05), 1e-4);
    CHECK_NEAR(s.ppl_base, exp(0.525), 1e-3);
    CHECK_NEAR(s.ln_ratio, 0.525, 2e-4);
    /* nll and nll_base are perfectly correlated: the ratio's variance is
     * (sd - sd_b)^2 / (n - 1) with sd = 0.5766, sd_b = 0.2883 */
    double sd = sqrt((2870 / 100.0 / 20) - 1.05 * 1.05);
    CHECK_NEAR(s.cor, 1.0, 1e-3);
    CHECK_NEAR(s.ln_ratio_unc, (sd - sd / 2) / sqrt(19.0), 1e-3);
    CHECK_NEAR(s.ppl_unc, exp(1.05) * sd / sqrt(19.0), 1e-3);
    /* same top: p > 1/2 for the current model when nll < ln 2 (i <= 6),
     * for the base when i <= 13: agreement on i <= 6 and i >= 14 */
    CHECK_NEAR(s.same_top, 13.0 / 20.0, 1e-12);
    CHECK_NEAR(s.same_top_unc, sqrt(0.65 * 0.35 / 19), 1e-12);
    qp_kld_acc_release(&a);
}

QP_TEST(kld_percentiles_as_llama_cpp)
{
    /* percentiles of 1..10 with llama.cpp's interpolation */
    struct qp_kld_acc a = {0};
    a.count = 10;
    a.cap = 10;
    a.kld = malloc(10 * sizeof *a.kld);
    a.p_diff = malloc(10 * sizeof *a.p_diff);
    REQUIRE(a.kld && a.p_diff);
    for (int i = 0; i < 10; i++) {
        a.kld[i] = (float)(10 - i); /* unsorted: stats sorts */
        a.p_diff[i] = (float)(i - 5) / 10;
    }
    struct qp_kld_stats s;
    qp_kld_stats(&a, &s);
    CHECK_NEAR(s.kld_pct[0], 10, 0);          /* max */
    CHECK_NEAR(s.kld_pct[2], 9.91, 1e-5);     /* 99: 0.99 * 9 = 8.91 */
    CHECK_NEAR(s.kld_pct[4], 9.1, 1e-5);      /* 90: 8.1 */
    CHECK_NEAR(s.kld_pct[5], 5.5, 0);         /* median of an even count */
    CHECK_NEAR(s.kld_pct[6], 1.9, 1e-5);      /* 10: 0.9 */
    CHECK_NEAR(s.kld_pct[10], 1, 0);          /* min */
    CHECK_NEAR(s.dp_pct[6], -0.05, 1e-6);     /* median of -0.5 .. 0.4 */
    CHECK_NEAR(s.dp_pct[5], 0.175, 1e-6);     /* 75: 6.75 -> 0.1 + .75 * .1 */
    qp_kld_acc_release(&a);
}

/* ---- the file -------------------------------------------------------------------- */

static bool write_bytes(const char *path, const void *p, size_t n)
{
    return qp_test_write_file(path, p, n);
}

QP_TEST(kld_file_round_trip)
{
    char *path = qp_test_path(ctx, "base.kl");
    int n_ctx = 6, vocab = 3, chunks = 2, rows = qp_kld_rows(n_ctx);
    CHECK_INT(rows, 2); /* positions 3 and 4 */
    int32_t tokens[12];
    for (int i = 0; i < 12; i++)
        tokens[i] = i % 3;
    struct qp_kld_writer w;
    struct qp_error err;
    REQUIRE_OK(qp_kld_writer_open(path, n_ctx, vocab, chunks, tokens, &w, &err),
               &err);
    size_t nv = qp_kld_row_u16(vocab);
    uint16_t enc[2][2 * 8];
    for (int c = 0; c < chunks; c++) {
        for (int r = 0; r < rows; r++) {
            float l[3] = {(float)c, (float)r, -1.5f};
            qp_kld_encode_row(l, vocab, 1, enc[c] + r * nv);
        }
        REQUIRE_OK(qp_kld_writer_chunk(&w, enc[c], &err), &err);
    }
    REQUIRE_OK(qp_kld_writer_commit(&w, &err), &err);
    /* the bytes llama.cpp writes: magic, three int32, tokens, rows */
    FILE *f = fopen(path, "rb");
    REQUIRE(f);
    unsigned char b[512];
    size_t len = fread(b, 1, sizeof b, f);
    fclose(f);
    CHECK_INT(len, 20 + 12 * 4 + 2 * 2 * nv * 2);
    CHECK(!memcmp(b, "_logits_\x06\0\0\0\x03\0\0\0\x02\0\0\0", 20));
    CHECK(!memcmp(b + 20, tokens, sizeof tokens));
    CHECK(!memcmp(b + 68, enc, sizeof enc));
    struct qp_kld_file *kf;
    REQUIRE_OK(qp_kld_file_open(path, &kf, &err), &err);
    CHECK_INT(kf->n_ctx, 6);
    CHECK_INT(kf->n_vocab, 3);
    CHECK_INT(kf->n_chunk, 2);
    CHECK_INT(kf->tokens[11], 2);
    CHECK(!memcmp(qp_kld_file_row(kf, 1, 1), enc[1] + nv, nv * 2));
    qp_kld_file_close(kf);
    /* a writer given fewer chunks than promised leaves nothing */
    char *p2 = qp_test_path(ctx, "short.kl");
    REQUIRE_OK(qp_kld_writer_open(p2, n_ctx, vocab, chunks, tokens, &w, &err), &err);
    REQUIRE_OK(qp_kld_writer_chunk(&w, enc[0], &err), &err);
    CHECK_FAILS(qp_kld_writer_commit(&w, &err), QP_E_INVAL, &err, "1 of 2 chunks");
    CHECK(fopen(p2, "rb") == NULL);
    free(p2);
    free(path);
}

QP_TEST(kld_file_refuses_malformed)
{
    char *path = qp_test_path(ctx, "bad.kl");
    struct qp_kld_file *kf;
    struct qp_error err;
    REQUIRE(write_bytes(path, "_logitz_\x06\0\0\0\x03\0\0\0\0\0\0\0", 20));
    CHECK_FAILS(qp_kld_file_open(path, &kf, &err), QP_E_FORMAT, &err,
                "no \"_logits_\" header");
    CHECK_CONTAINS(err.msg, "bad.kl");
    REQUIRE(write_bytes(path, "_logits_\x06\0\0", 11));
    CHECK_FAILS(qp_kld_file_open(path, &kf, &err), QP_E_FORMAT, &err, "header");
    REQUIRE(write_bytes(path, "_logits_\x01\0\0\0\x03\0\0\0\0\0\0\0", 20));
    CHECK_FAILS(qp_kld_file_open(path, &kf, &err), QP_E_FORMAT, &err,
                "n_ctx 1, n_vocab 3, n_chunk 0");
    /* one chunk promised, no data */
    REQUIRE(write_bytes(path, "_logits_\x06\0\0\0\x03\0\0\0\x01\0\0\0", 20));
    CHECK_FAILS(qp_kld_file_open(path, &kf, &err), QP_E_FORMAT, &err,
                "20 bytes, but n_ctx 6, n_vocab 3 and n_chunk 1 make 76");
    /* sizes whose product overflows */
    REQUIRE(write_bytes(path, "_logits_\xff\xff\xff\x7f\xff\xff\xff\x7f\xff\xff\xff\x7f",
                        20));
    CHECK_FAILS(qp_kld_file_open(path, &kf, &err), QP_E_FORMAT, &err, "make");
    free(path);
}
