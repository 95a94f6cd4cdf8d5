/* analysis/sweep.c: hashing, sharding and resuming rows (analysis/sweep.h). */
#include "analysis/sweep.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "analysis/sweep-csv.h"
#include "core/rss.h"
#include "core/strmap.h"

void qp_sweep_result_clear(struct qp_sweep_result *r)
{
    double *v[] = {&r->sqnr_db, &r->cosine, &r->kl, &r->kl_err, &r->top1,
                   &r->top1_err, &r->ppl, &r->ppl_err, &r->task_acc,
                   &r->task_acc_err, &r->exact_match, &r->exact_match_err,
                   &r->weight_bytes, &r->params, &r->bitops, &r->worst_sqnr_db,
                   &r->ms_per_input, &r->tokens_per_s, &r->peak_rss_mb,
                   &r->seconds};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
        *v[i] = NAN;
    r->worst[0] = '\0';
}

void qp_sweep_backend_free(struct qp_sweep_backend *b)
{
    if (!b)
        return;
    if (b->free)
        b->free(b->self);
    free(b);
}

const char *qp_sweep_state_name(enum qp_sweep_state s)
{
    static const char *const names[] = {"other-shard", "done-before", "computed",
                                        "failed"};
    _Static_assert(sizeof names / sizeof names[0] == QP_SWEEP_STATE_COUNT, "states");
    return (unsigned)s < QP_SWEEP_STATE_COUNT ? names[s] : "?";
}

void qp_sweep_summary_release(struct qp_sweep_summary *s)
{
    free(s->state);
    free(s->hash);
    *s = (struct qp_sweep_summary){0};
}

static double now_seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* ---- hashes ---------------------------------------------------------------- */

enum qp_status qp_sweep_base_hash(struct qp_sweep_backend *b, const char *version,
                                  struct qp_sha256 *base, struct qp_error *err)
{
    qp_sha256_init(base);
    qp_sha256_str(base, "qprobe sweep row 1");
    qp_sha256_str(base, version);
    qp_sha256_str(base, b->name);
    return b->digest(b->self, base, err);
}

void qp_sweep_cfg_hash(const struct qp_sha256 *base, const struct qp_sweep_cfg *c,
                       char out[QP_SHA256_HEX])
{
    struct qp_sha256 h = *base;
    unsigned char d[QP_SHA256_BYTES];
    qp_sha256_str(&h, qp_run_mode_name(c->mode));
    qp_sha256_str(&h, c->recipe_json);
    qp_sha256_final(&h, d);
    qp_sha256_hex(d, out);
}

/* ---- the run ------------------------------------------------------------------ */

/* What the table already holds: hash -> row. */
static enum qp_status index_rows(const struct qp_csv *t, struct qp_strmap *m,
                                 struct qp_error *err)
{
    qp_strmap_init(m);
    enum qp_status st = QP_OK;
    for (size_t r = 0; !st && r < t->nrows; r++)
        st = qp_strmap_put(m, t->rows[r][6], r, NULL, err); /* "hash" */
    return st;
}

/* Evaluates configuration k and appends its row. */
static enum qp_status one_row(struct qp_sweep_backend *b,
                              const struct qp_sweep_opts *o, size_t k,
                              struct qp_sweep_file *f, struct qp_sweep_summary *sum,
                              size_t *done, size_t todo, double t_start,
                              struct qp_error *err)
{
    const struct qp_sweep_cfg *c = &o->grid->c[k];
    struct qp_sweep_result r;
    struct qp_error e = {0};
    qp_sweep_result_clear(&r);
    qp_rss_reset_peak();
    double t0 = now_seconds();
    enum qp_status st = b->eval(b->self, c, &r, &e);
    if (st == QP_E_NOMEM || st == QP_E_IO) {
        *err = e;
        return qp_error_prefix(err, "'%s': ", c->name);
    }
    r.seconds = now_seconds() - t0;
    r.peak_rss_mb = (double)qp_rss_peak_bytes() / (1 << 20);
    char *line;
    size_t len;
    if ((st = qp_sweep_format_row(k, c, sum->hash[k], &r, st ? e.msg : NULL,
                                  &line, &len, err)))
        return st;
    bool failed = e.status != QP_OK;
    st = qp_sweep_file_append(f, line, len, err);
    free(line);
    if (st)
        return st;
    sum->state[k] = failed ? QP_SWEEP_FAILED : QP_SWEEP_COMPUTED;
    sum->computed += !failed;
    sum->failed += failed;
    if (o->on_row) {
        struct qp_sweep_event ev = {++*done, todo, c, &r,
                                    failed ? e.msg : NULL,
                                    now_seconds() - t_start};
        o->on_row(o->ctx, &ev);
    }
    return QP_OK;
}

enum qp_status qp_sweep_run(struct qp_sweep_backend *b,
                            const struct qp_sweep_opts *o,
                            struct qp_sweep_summary *sum, struct qp_error *err)
{
    double t_start = now_seconds();
    const struct qp_sweep_grid *g = o->grid;
    *sum = (struct qp_sweep_summary){.configs = g->n};
    if (!o->nshards || o->shard >= o->nshards)
        return qp_fail(err, QP_E_INVAL, "shard %zu of %zu does not exist",
                       o->shard, o->nshards);
    sum->state = calloc(g->n + 1, sizeof *sum->state);
    sum->hash = calloc(g->n + 1, sizeof *sum->hash);
    if (!sum->state || !sum->hash)
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    struct qp_sha256 base;
    enum qp_status st = qp_sweep_base_hash(b, o->version, &base, err);
    for (size_t k = 0; !st && k < g->n; k++)
        qp_sweep_cfg_hash(&base, &g->c[k], sum->hash[k]);
    struct qp_sweep_file *f = NULL;
    struct qp_strmap have;
    qp_strmap_init(&have);
    if (!st)
        st = qp_sweep_file_open(o->csv, &f, err);
    if (!st) {
        sum->torn_bytes = f->torn_bytes;
        st = index_rows(f->rows, &have, err);
    }
    size_t todo = 0;
    for (size_t k = 0; !st && k < g->n; k++) {
        size_t r;
        if (k % o->nshards != o->shard)
            continue;
        sum->in_shard++;
        if (!qp_strmap_get(&have, sum->hash[k], &r)) {
            todo++;
            continue;
        }
        bool failed = !strcmp(f->rows->rows[r][7], "error"); /* "status" */
        sum->state[k] = failed ? QP_SWEEP_FAILED : QP_SWEEP_DONE_BEFORE;
        sum->done_before += !failed;
        sum->failed += failed;
    }
    size_t done = 0;
    for (size_t k = 0; !st && k < g->n; k++)
        if (k % o->nshards == o->shard && sum->state[k] == QP_SWEEP_OTHER_SHARD)
            st = one_row(b, o, k, f, sum, &done, todo, t_start, err);
    qp_strmap_release(&have);
    qp_sweep_file_close(f);
    sum->seconds = now_seconds() - t_start;
    return st;
}
