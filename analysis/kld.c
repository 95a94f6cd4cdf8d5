/* analysis/kld.c: llama.cpp's perplexity / KL-divergence arithmetic and
 * base-logits file (analysis/kld.h). The float and double steps mirror
 * tools/perplexity/perplexity.cpp line by line; keep them that way. */
#include "analysis/kld.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/size.h"

const char *const qp_kld_pct_names[11] = {"max", "99.9", "99", "95", "90",
                                          "median", "10", "5", "1", "0.1",
                                          "min"};
const char *const qp_dp_pct_names[13] = {"max", "99.9", "99", "95", "90", "75",
                                         "median", "25", "10", "5", "1", "0.1",
                                         "min"};

static inline float fmaxf_(float a, float b) { return a < b ? b : a; }
static inline float fminf_(float a, float b) { return b < a ? b : a; }

/* Rounding to nearest with the float trick llama.cpp uses. */
static inline int nearest_int(float fval)
{
    float val = fval + 12582912.f;
    int i;
    memcpy(&i, &val, sizeof i);
    return (i & 0x007fffff) - 0x00400000;
}

double qp_kld_nll(const float *logits, int n_vocab, int tok)
{
    float max_logit = logits[0];
    for (int i = 0; i < n_vocab; i++)
        max_logit = fmaxf_(max_logit, logits[i]);
    double sum_exp = 0.0;
    for (int i = 0; i < n_vocab; i++)
        sum_exp += expf(logits[i] - max_logit);
    double log_softmax = (double)(logits[tok] - max_logit) - log(sum_exp);
    return -log_softmax;
}

double qp_kld_encode_row(const float *logits, int n_vocab, int tok,
                         uint16_t *out)
{
    float max_logit = logits[0], min_logit = logits[0];
    for (int i = 1; i < n_vocab; i++) {
        max_logit = fmaxf_(max_logit, logits[i]);
        min_logit = fminf_(min_logit, logits[i]);
    }
    min_logit = fmaxf_(min_logit, max_logit - 16);
    double sum_exp = 0.0;
    for (int i = 0; i < n_vocab; i++)
        sum_exp += expf(logits[i] - max_logit);
    const float log_sum_exp = (float)log(sum_exp);
    const float min_log_prob = min_logit - max_logit - log_sum_exp;
    const float scale = (max_logit - min_logit) / 65535.f;
    memcpy(out, &scale, sizeof scale);
    memcpy(out + 2, &min_log_prob, sizeof min_log_prob);
    uint16_t *q = out + 4;
    if (scale) {
        const float inv_scale = 1 / scale;
        for (int i = 0; i < n_vocab; i++)
            q[i] = logits[i] > min_logit
                       ? (uint16_t)nearest_int(inv_scale * (logits[i] - min_logit))
                       : 0;
    } else {
        memset(q, 0, (size_t)n_vocab * sizeof *q);
    }
    if (n_vocab % 2)
        q[n_vocab] = 0;
    return max_logit + log_sum_exp - logits[tok];
}

void qp_ppl_result(const struct qp_ppl_acc *a, double *ppl, double *unc)
{
    if (!a->count) {
        *ppl = *unc = 0;
        return;
    }
    double nll = a->nll / (double)a->count, nll2 = a->nll2 / (double)a->count;
    *ppl = exp(nll);
    nll2 -= nll * nll;
    *unc = nll2 > 0 && a->count > 1 ? sqrt(nll2 / (double)(a->count - 1)) * *ppl
                                    : 0;
}

/* ---- KL divergence --------------------------------------------------------- */

static enum qp_status grow(struct qp_kld_acc *a, struct qp_error *err)
{
    if (a->count < a->cap)
        return QP_OK;
    size_t cap = a->cap ? 2 * a->cap : 1024;
    float *k = realloc(a->kld, cap * sizeof *k);
    if (k)
        a->kld = k;
    float *p = k ? realloc(a->p_diff, cap * sizeof *p) : NULL;
    if (!k || !p)
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    a->p_diff = p;
    a->cap = cap;
    return QP_OK;
}

enum qp_status qp_kld_add(struct qp_kld_acc *a, const float *logits, int n_vocab,
                          const uint16_t *base, int tok, struct qp_error *err)
{
    enum qp_status st = grow(a, err);
    if (st)
        return st;
    float max_logit = logits[0];
    int imax = 0;
    for (int i = 1; i < n_vocab; ++i)
        if (logits[i] > max_logit) {
            max_logit = logits[i];
            imax = i;
        }
    double sum_exp = 0.0;
    for (int i = 0; i < n_vocab; ++i)
        sum_exp += expf(logits[i] - max_logit);
    const float log_sum_exp = (float)log(sum_exp);
    float scale, min_log_prob;
    memcpy(&scale, base, sizeof scale);
    memcpy(&min_log_prob, base + 2, sizeof min_log_prob);
    const uint16_t *bq = base + 4;

    const float nll = max_logit + log_sum_exp - logits[tok];
    a->sum_nll += nll;
    a->sum_nll2 += nll * nll;
    const float nll_base = -(scale * bq[tok] + min_log_prob);
    a->sum_nll_base += nll_base;
    a->sum_nll_base2 += nll_base * nll_base;
    a->sum_nll_nll_base += nll * nll_base;

    max_logit += log_sum_exp;
    double sum = 0;
    int imax_base = -1;
    float p_log_base_max = 0;
    for (int i = 0; i < n_vocab; ++i) {
        const float p_log_base = scale * bq[i] + min_log_prob;
        if (i == 0 || p_log_base > p_log_base_max) {
            p_log_base_max = p_log_base;
            imax_base = i;
        }
        if (p_log_base > -16.f) {
            const float p_base = expf(p_log_base);
            sum += p_base * (p_log_base - logits[i] + max_logit);
        }
    }
    a->sum_kld += sum;
    a->sum_kld2 += sum * sum;
    if (imax == imax_base)
        a->n_same_top++;

    const float p_base = expf(-nll_base);
    const float p = expf(-nll);
    const float p_diff = p - p_base;
    a->sum_p_diff += p_diff;
    const double p_diff2 = p_diff * p_diff;
    a->sum_p_diff2 += p_diff2;
    a->sum_p_diff4 += p_diff2 * p_diff2;
    a->max_p_diff = fmaxf_(a->max_p_diff, fabsf(p_diff));
    a->kld[a->count] = (float)sum;
    a->p_diff[a->count] = p_diff;
    a->count++;
    return QP_OK;
}

void qp_kld_acc_release(struct qp_kld_acc *a)
{
    free(a->kld);
    free(a->p_diff);
    memset(a, 0, sizeof *a);
}

/* ---- statistics ---------------------------------------------------------------- */

static void mean_unc(double sum, double sum2, size_t count, double *f, double *df)
{
    *f = *df = 0;
    if (count < 1)
        return;
    *f = sum / (double)count;
    double d = sum2 / (double)count - *f * *f;
    *df = d > 0 && count > 10 ? sqrt(d / (double)(count - 1)) : 0.;
}

static double covariance(double suma, double sumb, double sumab, size_t count)
{
    if (count < 10)
        return 0.0;
    double var = sumab / (double)count - (suma / (double)count) * (sumb / (double)count);
    return var / (double)(count - 1);
}

static int cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return x < y ? -1 : x > y;
}

static float percentile(const float *v, size_t n, float fraction)
{
    if (fraction <= 0)
        return v[0];
    if (fraction >= 1)
        return v[n - 1];
    float p = fraction * (float)(n - 1);
    size_t ip = (size_t)p;
    p -= (float)ip;
    return (1 - p) * v[ip] + p * v[ip + 1 < n - 1 ? ip + 1 : n - 1];
}

static float median(const float *v, size_t n)
{
    return n % 2 == 0 ? 0.5f * (v[n / 2] + v[n / 2 - 1]) : v[n / 2];
}

void qp_kld_stats(struct qp_kld_acc *a, struct qp_kld_stats *o)
{
    memset(o, 0, sizeof *o);
    size_t n = a->count;
    o->count = n;
    if (!n)
        return;
    double lp, lpu, lb, lbu;
    mean_unc(a->sum_nll, a->sum_nll2, n, &lp, &lpu);
    mean_unc(a->sum_nll_base, a->sum_nll_base2, n, &lb, &lbu);
    o->ppl = exp(lp);
    o->ppl_unc = o->ppl * lpu;
    o->ppl_base = exp(lb);
    o->ppl_base_unc = o->ppl_base * lbu;
    double cov = covariance(a->sum_nll, a->sum_nll_base, a->sum_nll_nll_base, n);
    o->cor = cov / (lpu * lbu);
    o->ln_ratio = lp - lb;
    o->ln_ratio_unc = sqrt(lpu * lpu + lbu * lbu - 2.0 * cov);
    o->ratio = exp(o->ln_ratio);
    o->ratio_unc = o->ratio * o->ln_ratio_unc;
    double ppl_cov = o->ppl * o->ppl_base * cov;
    o->diff = o->ppl - o->ppl_base;
    o->diff_unc = sqrt(o->ppl_unc * o->ppl_unc + o->ppl_base_unc * o->ppl_base_unc -
                       2.0 * ppl_cov);
    mean_unc(a->sum_kld, a->sum_kld2, n, &o->kld, &o->kld_unc);
    mean_unc(a->sum_p_diff, a->sum_p_diff2, n, &o->dp, &o->dp_unc);
    double mse, mse_unc;
    mean_unc(a->sum_p_diff2, a->sum_p_diff4, n, &mse, &mse_unc);
    o->rms_dp = sqrt(mse);
    o->rms_dp_unc = 0.5 / o->rms_dp * mse_unc;
    o->same_top = 1.0 * (double)a->n_same_top / (double)n;
    o->same_top_unc = n > 1 ? sqrt(o->same_top * (1.0 - o->same_top) / (double)(n - 1))
                            : 0;
    qsort(a->kld, n, sizeof *a->kld, cmp_float);
    qsort(a->p_diff, n, sizeof *a->p_diff, cmp_float);
    static const float kf[11] = {1, 0.999f, 0.990f, 0.950f, 0.900f, -1,
                                 0.100f, 0.050f, 0.010f, 0.001f, 0};
    static const float df[13] = {1, 0.999f, 0.990f, 0.950f, 0.900f, 0.750f, -1,
                                 0.250f, 0.100f, 0.050f, 0.010f, 0.001f, 0};
    for (int i = 0; i < 11; i++)
        o->kld_pct[i] = kf[i] < 0 ? median(a->kld, n) : percentile(a->kld, n, kf[i]);
    for (int i = 0; i < 13; i++)
        o->dp_pct[i] = df[i] < 0 ? median(a->p_diff, n)
                                 : percentile(a->p_diff, n, df[i]);
}

/* ---- the file -------------------------------------------------------------------- */

#define HEADER_BYTES 20 /* magic + three int32 */

static enum qp_status file_size(int n_ctx, int n_vocab, int n_chunk, size_t *total)
{
    size_t t, rows, b;
    bool over = qp_size_mul((size_t)n_ctx, (size_t)n_chunk, &t) ||
                qp_size_mul(t, 4, &t) ||
                qp_size_mul((size_t)qp_kld_rows(n_ctx), qp_kld_row_u16(n_vocab), &rows) ||
                qp_size_mul(rows, 2, &rows) ||
                qp_size_mul(rows, (size_t)n_chunk, &b) ||
                qp_size_add(t, b, &t) || qp_size_add(t, HEADER_BYTES, &t);
    *total = t;
    return over ? QP_E_OVERFLOW : QP_OK;
}

static int32_t rd32(const unsigned char *p)
{
    uint32_t v = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
                 (uint32_t)p[3] << 24;
    int32_t s;
    memcpy(&s, &v, sizeof s);
    return s;
}

enum qp_status qp_kld_file_check(struct qp_kld_file *f, const unsigned char *buf,
                                 size_t len, const char *what,
                                 struct qp_error *err)
{
    size_t total = 0;
    if (len < HEADER_BYTES || memcmp(buf, "_logits_", 8))
        return qp_fail(err, QP_E_FORMAT, "%s: not a llama.cpp "
                       "--kl-divergence-base file (no \"_logits_\" header)", what);
    f->n_ctx = rd32(buf + 8);
    f->n_vocab = rd32(buf + 12);
    f->n_chunk = rd32(buf + 16);
    if (f->n_ctx < 2 || f->n_vocab < 1 || f->n_chunk < 0)
        return qp_fail(err, QP_E_FORMAT, "%s: header says n_ctx %d, n_vocab %d, "
                       "n_chunk %d", what, f->n_ctx, f->n_vocab, f->n_chunk);
    if (file_size(f->n_ctx, f->n_vocab, f->n_chunk, &total) || total != len)
        return qp_fail(err, QP_E_FORMAT, "%s: %zu bytes, but n_ctx %d, n_vocab %d "
                       "and n_chunk %d make %zu", what, len, f->n_ctx, f->n_vocab,
                       f->n_chunk, total);
    f->data = buf;
    f->tokens = (const int32_t *)(buf + HEADER_BYTES);
    f->data_off = HEADER_BYTES + (size_t)f->n_ctx * (size_t)f->n_chunk * 4;
    return QP_OK;
}

enum qp_status qp_kld_file_open(const char *path, struct qp_kld_file **out,
                                struct qp_error *err)
{
    *out = NULL;
    struct qp_mmap *m;
    enum qp_status st = qp_mmap_open(path, &m, err);
    if (st)
        return st;
    struct qp_kld_file *f = calloc(1, sizeof *f);
    if (!f) {
        qp_mmap_unref(m);
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    }
    f->map = m;
    char what[4200];
    snprintf(what, sizeof what, "'%s'", path);
    if ((st = qp_kld_file_check(f, m->data, m->size, what, err))) {
        qp_kld_file_close(f);
        return st;
    }
    *out = f;
    return QP_OK;
}

void qp_kld_file_close(struct qp_kld_file *f)
{
    if (!f)
        return;
    qp_mmap_unref(f->map);
    free(f);
}

const uint16_t *qp_kld_file_row(const struct qp_kld_file *f, int c, int r)
{
    size_t nv = qp_kld_row_u16(f->n_vocab);
    size_t row = (size_t)c * (size_t)qp_kld_rows(f->n_ctx) + (size_t)r;
    return (const uint16_t *)(f->data + f->data_off + row * nv * 2);
}

static enum qp_status write_all(struct qp_kld_writer *w, const void *p, size_t n,
                                struct qp_error *err)
{
    if (n && fwrite(p, 1, n, w->of->fp) != n)
        return qp_fail(err, QP_E_IO, "'%s': write failed", w->of->path);
    return QP_OK;
}

enum qp_status qp_kld_writer_open(const char *path, int n_ctx, int n_vocab,
                                  int n_chunk, const int32_t *tokens,
                                  struct qp_kld_writer *w, struct qp_error *err)
{
    memset(w, 0, sizeof *w);
    size_t total;
    if (n_ctx < 2 || n_vocab < 1 || n_chunk < 0 ||
        file_size(n_ctx, n_vocab, n_chunk, &total))
        return qp_fail(err, QP_E_INVAL, "'%s': n_ctx %d, n_vocab %d, n_chunk %d",
                       path, n_ctx, n_vocab, n_chunk);
    enum qp_status st = qp_outfile_open(path, &w->of, err);
    if (st)
        return st;
    w->n_ctx = n_ctx;
    w->n_vocab = n_vocab;
    w->n_chunk = n_chunk;
    int32_t head[3] = {n_ctx, n_vocab, n_chunk};
    st = write_all(w, "_logits_", 8, err);
    if (!st)
        st = write_all(w, head, sizeof head, err);
    if (!st)
        st = write_all(w, tokens, (size_t)n_ctx * (size_t)n_chunk * 4, err);
    if (st)
        qp_kld_writer_abort(w);
    return st;
}

enum qp_status qp_kld_writer_chunk(struct qp_kld_writer *w, const uint16_t *rows,
                                   struct qp_error *err)
{
    if (w->chunks_written >= w->n_chunk)
        return qp_fail(err, QP_E_INVAL, "'%s': more than %d chunks", w->of->path,
                       w->n_chunk);
    w->chunks_written++;
    return write_all(w, rows, (size_t)qp_kld_rows(w->n_ctx) *
                                  qp_kld_row_u16(w->n_vocab) * 2, err);
}

enum qp_status qp_kld_writer_commit(struct qp_kld_writer *w, struct qp_error *err)
{
    if (w->chunks_written != w->n_chunk) {
        enum qp_status st = qp_fail(err, QP_E_INVAL, "'%s': %d of %d chunks "
                                    "written", w->of->path, w->chunks_written,
                                    w->n_chunk);
        qp_kld_writer_abort(w);
        return st;
    }
    enum qp_status st = qp_outfile_commit(w->of, err);
    w->of = NULL;
    return st;
}

void qp_kld_writer_abort(struct qp_kld_writer *w)
{
    qp_outfile_abort(w->of);
    w->of = NULL;
}
