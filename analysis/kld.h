/* analysis/kld.h: perplexity and KL-divergence statistics exactly as
 * llama.cpp's perplexity tool computes them (tools/perplexity/
 * perplexity.cpp, checked at ggml-org/llama.cpp 050fc7f3), and its
 * --kl-divergence-base file, so that numbers and files compare with its
 * users' both ways.
 *
 * A scored row is the logits [n_vocab] at one position and the token that
 * follows it. Float arithmetic follows llama.cpp's types step by step
 * (float maxima and log-sum-exp, sums in double), so a row gives the bits
 * llama.cpp gives, up to the order in which its threads add their partial
 * sums.
 *
 * The base file ("KL file"), all little-endian:
 *   "_logits_"                   8 bytes
 *   n_ctx, n_vocab, n_chunk      int32 each
 *   tokens                       int32 [n_chunk * n_ctx] (the evaluated
 *                                stream, before any BOS replacement)
 *   per chunk, for each of its n_ctx - 1 - n_ctx/2 scored rows (positions
 *   n_ctx/2 .. n_ctx - 2), nv = 2 * ((n_vocab + 1) / 2) + 4 uint16:
 *     float scale, float min_log_prob (the first 4 uint16), then per token
 *     q = round((logit - min_logit) / scale) with min_logit =
 *     max(min logit, max logit - 16) (0 for logits at or below it), so
 *     log p = scale * q + min_log_prob; the last uint16 pads an odd
 *     vocabulary (0). */
#ifndef QP_ANALYSIS_KLD_H
#define QP_ANALYSIS_KLD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/mmap.h"
#include "core/outfile.h"
#include "core/status.h"

/* uint16 values per stored row. */
static inline size_t qp_kld_row_u16(int n_vocab)
{
    return 2 * (((size_t)n_vocab + 1) / 2) + 4;
}

/* Scored rows of a chunk of n_ctx tokens: positions n_ctx/2 .. n_ctx - 2. */
static inline int qp_kld_rows(int n_ctx)
{
    return n_ctx - 1 - n_ctx / 2;
}

/* -log p(tok) of a row as llama.cpp's perplexity computes it without a
 * logits file. */
double qp_kld_nll(const float *logits, int n_vocab, int tok);

/* The row encoded for the base file into out[qp_kld_row_u16(n_vocab)];
 * returns -log p(tok) as llama.cpp's perplexity computes it while writing
 * the file. */
double qp_kld_encode_row(const float *logits, int n_vocab, int tok,
                         uint16_t *out);

/* Perplexity over scored rows. */
struct qp_ppl_acc {
    double nll, nll2;
    size_t count;
};
static inline void qp_ppl_add(struct qp_ppl_acc *a, double nll)
{
    a->nll += nll;
    a->nll2 += nll * nll;
    a->count++;
}
/* PPL = exp(mean nll) and its uncertainty ppl * sqrt((mean(nll^2) -
 * mean^2) / (count - 1)) (0 when that variance is not positive). */
void qp_ppl_result(const struct qp_ppl_acc *a, double *ppl, double *unc);

/* KL divergence and token-probability statistics against base rows. */
struct qp_kld_acc {
    double sum_nll, sum_nll2, sum_nll_base, sum_nll_base2, sum_nll_nll_base;
    double sum_kld, sum_kld2, sum_p_diff, sum_p_diff2, sum_p_diff4;
    float max_p_diff;
    size_t n_same_top, count;
    float *kld, *p_diff;  /* per row, [count] (owned; grown as rows come) */
    size_t cap;
};

/* Compares a row with its base row base[qp_kld_row_u16(n_vocab)]. */
enum qp_status qp_kld_add(struct qp_kld_acc *a, const float *logits, int n_vocab,
                          const uint16_t *base, int tok, struct qp_error *err);
void qp_kld_acc_release(struct qp_kld_acc *a);

/* The figures llama.cpp prints after a --kl-divergence run (its
 * percentile interpolation in float, medians of an even count as the mean
 * of the middle two). Uncertainties need more than 10 rows (else 0), the
 * covariance at least 10. */
struct qp_kld_stats {
    size_t count;
    double ppl, ppl_unc, ppl_base, ppl_base_unc, cor;
    double ln_ratio, ln_ratio_unc, ratio, ratio_unc, diff, diff_unc;
    double kld, kld_unc;
    /* max, 99.9, 99, 95, 90, median, 10, 5, 1, 0.1, min */
    float kld_pct[11];
    double dp, dp_unc;
    /* max, 99.9, 99, 95, 90, 75, median, 25, 10, 5, 1, 0.1, min */
    float dp_pct[13];
    double rms_dp, rms_dp_unc, same_top, same_top_unc;
};
/* Sorts a's per-row values (in place) and computes the figures. */
void qp_kld_stats(struct qp_kld_acc *a, struct qp_kld_stats *out);

/* The percentile names of qp_kld_stats's arrays ("max", "99.9", ...). */
extern const char *const qp_kld_pct_names[11];
extern const char *const qp_dp_pct_names[13];

/* ---- the base file ------------------------------------------------------- */

struct qp_kld_file {
    struct qp_mmap *map;
    const unsigned char *data; /* the file's bytes (the mapping's) */
    int n_ctx, n_vocab, n_chunk;
    const int32_t *tokens;    /* [n_chunk * n_ctx] (in the mapping) */
    size_t data_off;          /* file offset of chunk 0's rows */
};

/* Checks a file image buf[len] named `what` ("'path'") in messages:
 * magic, header values (n_ctx >= 2, n_vocab >= 1, n_chunk >= 0) and a size
 * of exactly what they imply; fills f's sizes and pointers into buf (map
 * left as it is). QP_E_FORMAT names the file and what is wrong. */
enum qp_status qp_kld_file_check(struct qp_kld_file *f, const unsigned char *buf,
                                 size_t len, const char *what,
                                 struct qp_error *err);

/* Maps path and checks it (qp_kld_file_check). *out belongs to the caller
 * (qp_kld_file_close). */
enum qp_status qp_kld_file_open(const char *path, struct qp_kld_file **out,
                                struct qp_error *err);
void qp_kld_file_close(struct qp_kld_file *f);

/* Row r of chunk c (r < qp_kld_rows(n_ctx)). */
const uint16_t *qp_kld_file_row(const struct qp_kld_file *f, int c, int r);

/* Writing: header and tokens now, then the chunks' rows in order, then
 * commit (the file appears whole or not at all). */
struct qp_kld_writer {
    struct qp_outfile *of;
    int n_ctx, n_vocab, n_chunk;
    int chunks_written;
};
enum qp_status qp_kld_writer_open(const char *path, int n_ctx, int n_vocab,
                                  int n_chunk, const int32_t *tokens,
                                  struct qp_kld_writer *w, struct qp_error *err);
/* Appends rows[qp_kld_rows(n_ctx) * qp_kld_row_u16(n_vocab)], one chunk. */
enum qp_status qp_kld_writer_chunk(struct qp_kld_writer *w, const uint16_t *rows,
                                   struct qp_error *err);
/* QP_E_INVAL unless every chunk was written. */
enum qp_status qp_kld_writer_commit(struct qp_kld_writer *w, struct qp_error *err);
void qp_kld_writer_abort(struct qp_kld_writer *w);

#endif
