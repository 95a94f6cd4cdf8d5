/* analysis/sensitivity.c: one-in / one-out sensitivity over memos
 * (analysis/sensitivity.h). The evidence for the hints is in
 * analysis/sens-evidence.c. */
#include "analysis/sensitivity.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "analysis/sens-evidence.h"

const char *qp_sens_part_name(enum qp_sens_part p)
{
    static const char *const names[] = {"w", "a", "wa"};
    _Static_assert(sizeof names / sizeof names[0] == QP_SP_COUNT, "parts");
    return (unsigned)p < QP_SP_COUNT ? names[p] : "?";
}

static const unsigned part_bits[QP_SP_COUNT] = {QP_PART_W, QP_PART_A, QP_PART_WA};

void qp_sens_release(struct qp_sens_result *res)
{
    qp_units_release(&res->units);
    free(res->rows);
    *res = (struct qp_sens_result){0};
}

double qp_sens_rank_value(const struct qp_sens_result *res, size_t r)
{
    const struct qp_sens_row *row = &res->rows[r];
    static const int order[] = {QP_SP_WA, QP_SP_W, QP_SP_A};
    for (int k = 0; k < 3; k++)
        if (row->in[order[k]].done)
            return row->in[order[k]].sqnr;
    for (int k = 0; k < 3; k++)
        if (row->out[order[k]].done) /* gain from keeping it float: negate */
            return res->all.sqnr - row->out[order[k]].sqnr;
    return INFINITY;
}

static double now_seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* What every scored run shares. */
struct eval {
    struct qp_session *s;
    struct qp_tensor **const *sets;
    size_t nsets;
    struct qp_memo **ref;      /* [nsets] fp32 memos */
    struct qp_memo **all;      /* [nsets] all-quantized memos */
    struct qp_tensor **ref_out;/* [nsets] the scored fp32 output */
    const struct qp_sens_opts *o;
    size_t nodes;              /* computed by all runs */
    size_t runs;
};

/* Runs plan p on every set (reusing memos[set] when given, read-only) and
 * scores the output against fp32. */
static enum qp_status score(struct eval *e, const struct qp_splan *p,
                            struct qp_memo **memos, bool record,
                            struct qp_sens_score *sc, struct qp_error *err)
{
    const struct qp_graph *g = qp_session_graph(e->s);
    struct qp_tensor **outs = calloc((size_t)g->n_outputs + 1, sizeof *outs);
    if (!outs)
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    struct qp_outcome oc;
    qp_outcome_init(&oc);
    enum qp_status st = QP_OK;
    for (size_t k = 0; !st && k < e->nsets; k++) {
        struct qp_session_run_opts ro = {.memo = memos ? memos[k] : NULL,
                                         .record = record, .no_fusion = record};
        struct qp_session_run_stats rs;
        st = qp_session_run(e->s, p, (const struct qp_tensor *const *)e->sets[k],
                            &ro, outs, &rs, err);
        if (!st) {
            e->nodes += rs.nodes_run;
            if (e->ref_out[k])
                st = qp_outcome_add(&oc, e->ref_out[k], outs[e->o->output], err);
            else /* the fp32 run itself: keep its output */
                st = qp_tensor_clone(outs[e->o->output], &e->ref_out[k], err);
        }
        for (int j = 0; j < g->n_outputs; j++) {
            qp_tensor_free(outs[j]);
            outs[j] = NULL;
        }
    }
    free(outs);
    e->runs++;
    if (!st && sc)
        *sc = (struct qp_sens_score){true, qp_outcome_sqnr(&oc),
                                     qp_outcome_cosine(&oc), qp_outcome_kl(&oc),
                                     qp_outcome_top1(&oc)};
    return st;
}

static enum qp_status plan_for(struct eval *e, const struct qp_qassign *a,
                               struct qp_splan **p, struct qp_error *err)
{
    struct qp_session_cfg cfg = {.mode = e->o->mode, .assign = a,
        .flavor = e->o->flavor, .flavor_given = e->o->flavor_given};
    return qp_session_plan(e->s, &cfg, p, err);
}

/* One unit's runs for the asked methods and parts. */
static enum qp_status unit_runs(struct eval *e, const struct qp_qassign *base,
                                const struct qp_units *u, size_t i,
                                struct qp_sens_row *row, struct qp_error *err)
{
    enum qp_status st = QP_OK;
    for (int m = 0; !st && m < 2; m++) {
        bool one_in = m == 0;
        if (!(e->o->methods & (one_in ? QP_SENS_IN : QP_SENS_OUT)))
            continue;
        struct qp_sens_score *dst = one_in ? row->in : row->out;
        for (int p = 0; !st && p < QP_SP_COUNT; p++) {
            if (!(e->o->parts & (1u << p)) || !qp_unit_has(&u->u[i], part_bits[p]))
                continue;
            /* both parts when the unit has only one: the same runs */
            if (p == QP_SP_WA && (!u->u[i].nnodes || !u->u[i].nvalues)) {
                int same = u->u[i].nnodes ? QP_SP_W : QP_SP_A;
                if (dst[same].done) {
                    dst[p] = dst[same];
                    continue;
                }
            }
            struct qp_qassign *a;
            struct qp_splan *pl = NULL;
            if ((st = qp_units_assign(base, u, i, one_in, part_bits[p], &a, err)))
                break;
            st = plan_for(e, a, &pl, err);
            if (!st)
                st = score(e, pl, one_in ? e->ref : e->all, false, &dst[p], err);
            if (st)
                qp_error_prefix(err, "%s (%s, %s): ", u->u[i].name,
                                one_in ? "one-in" : "one-out",
                                qp_sens_part_name((enum qp_sens_part)p));
            qp_splan_free(pl);
            qp_qassign_free(a);
        }
    }
    return st;
}

static void eval_release(struct eval *e)
{
    for (size_t k = 0; k < e->nsets; k++) {
        if (e->ref)
            qp_memo_free(e->ref[k]);
        if (e->all)
            qp_memo_free(e->all[k]);
        if (e->ref_out)
            qp_tensor_free(e->ref_out[k]);
    }
    free(e->ref);
    free(e->all);
    free(e->ref_out);
}

enum qp_status qp_sensitivity(struct qp_session *s,
                              struct qp_tensor **const *sets, size_t nsets,
                              const struct qp_sens_opts *o,
                              struct qp_sens_result *res, struct qp_error *err)
{
    *res = (struct qp_sens_result){0};
    const struct qp_graph *g = qp_session_graph(s);
    double t0 = now_seconds();
    struct eval e = {s, sets, nsets, NULL, NULL, NULL, o, 0, 0};
    struct qp_qassign *base = NULL;
    struct qp_splan *bp = NULL;
    uint64_t *macs = calloc((size_t)g->n_nodes + 1, sizeof *macs);
    e.ref = calloc(nsets + 1, sizeof *e.ref);
    e.all = calloc(nsets + 1, sizeof *e.all);
    e.ref_out = calloc(nsets + 1, sizeof *e.ref_out);
    enum qp_status st = QP_OK;
    if (!macs || !e.ref || !e.all || !e.ref_out)
        st = qp_fail(err, QP_E_NOMEM, "out of memory");
    if (!st && (!nsets || o->output < 0 || o->output >= g->n_outputs))
        st = qp_fail(err, QP_E_INVAL, "sensitivity needs evaluation inputs and "
                     "an output of the model");
    for (size_t k = 0; !st && k < nsets; k++)
        if (!(st = qp_memo_new(s, &e.ref[k], err)))
            st = qp_memo_new(s, &e.all[k], err);
    if (!st)
        st = qp_session_node_macs(s, (const struct qp_tensor *const *)sets[0],
                                  macs, err);
    if (!st)
        st = qp_qassign_uniform(g, o->scheme, &base, err);
    if (!st)
        st = plan_for(&e, base, &bp, err);
    /* the references: fp32 and everything quantized, recorded */
    if (!st)
        st = score(&e, NULL, e.ref, true, NULL, err);
    if (!st)
        st = score(&e, bp, e.all, true, &res->all, err);
    res->fp32_ref = (struct qp_sens_score){true, INFINITY, 1, 0, 1};
    if (!st)
        st = qp_units_of(g, qp_splan_qplan(bp), o->groups, o->ngroups, macs,
                         &res->units, err);
    if (!st && !(res->rows = calloc(res->units.n + 1, sizeof *res->rows)))
        st = qp_fail(err, QP_E_NOMEM, "out of memory");
    for (size_t i = 0; !st && i < res->units.n; i++) {
        struct qp_sens_row *row = &res->rows[i];
        for (int p = 0; p < QP_SP_COUNT; p++)
            row->in[p].sqnr = row->out[p].sqnr = NAN;
        st = unit_runs(&e, base, &res->units, i, row, err);
        qp_progress_report(o->progress, "sensitivity", i + 1, res->units.n);
    }
    if (!st)
        st = qp_sens_evidence(s, bp, e.ref[0], (const struct qp_tensor *const *)sets[0],
                              res, err);
    /* per evaluation set: what one forward pass over one set costs */
    res->passes = g->n_nodes && nsets ? (double)e.nodes / (double)g->n_nodes /
                                            (double)nsets : 0;
    res->runs = e.runs;
    res->seconds = now_seconds() - t0;
    qp_splan_free(bp);
    qp_qassign_free(base);
    eval_release(&e);
    free(macs);
    return st;
}
