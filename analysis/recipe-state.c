/* analysis/recipe-state.c: states of the recipe search, measured and priced
 * (analysis/recipe-state.h). */
#include "analysis/recipe-state.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/price.h"

static const struct qp_level fp32_level = {.fp32 = true};

const struct qp_level *qp_search_level(const struct qp_rsearch_opts *o, int l)
{
    if (l == 0)
        return NULL;
    if (l == QP_LEVEL_FP32)
        return &fp32_level;
    if (l <= QP_LEVEL_PIN0)
        return &o->pins[QP_LEVEL_PIN0 - l].level;
    return &o->promote[l - 1];
}

/* Unit u's parts at level lv (NULL: the base) into a. */
static void apply(const struct qp_qassign *base, const struct qp_unit *u,
                  const struct qp_level *lv, struct qp_qassign *a)
{
    for (size_t k = 0; k < u->nnodes; k++) {
        int i = u->nodes[k];
        a->wq[i] = lv ? !lv->fp32 : base->wq[i];
        a->ws[i] = lv && !lv->fp32 ? lv->s.w : base->ws[i];
    }
    for (size_t k = 0; k < u->nvalues; k++) {
        int v = u->values[k];
        bool set = lv && !lv->fp32 && lv->s.has_acts;
        a->aq[v] = !lv ? base->aq[v] : lv->fp32 ? false : set ? true : base->aq[v];
        a->as[v] = set ? lv->s.a : base->as[v];
    }
}

enum qp_status qp_search_assignment(const struct qp_search *q,
                                    struct qp_qassign **out, struct qp_error *err)
{
    enum qp_status st = qp_qassign_clone(q->base, out, err);
    for (size_t u = 0; !st && u < q->res->units.n; u++)
        apply(q->base, &q->res->units.u[u], qp_search_level(q->o, q->res->level[u]),
              *out);
    return st;
}

bool qp_search_level_changes(const struct qp_search *q, size_t u, int l)
{
    const struct qp_unit *x = &q->res->units.u[u];
    const struct qp_level *a = qp_search_level(q->o, q->res->level[u]);
    const struct qp_level *b = qp_search_level(q->o, l);
    bool aw = a ? !a->fp32 : true, bw = b ? !b->fp32 : true;
    if (x->nnodes && (aw != bw ||
                      (aw && !qp_wscheme_equal(a ? &a->s.w : &q->base->ws[x->nodes[0]],
                                               b ? &b->s.w : &q->base->ws[x->nodes[0]]))))
        return true;
    if (!x->nvalues)
        return false;
    /* the output: float, the base's, or a scheme's activation part */
    int av = a ? (a->fp32 ? 0 : a->s.has_acts ? 2 : 1) : 1;
    int bv = b ? (b->fp32 ? 0 : b->s.has_acts ? 2 : 1) : 1;
    if (av != bv)
        return true;
    if (av == 2) {
        char sa[QP_SCHEME_MAX + 1], sb[QP_SCHEME_MAX + 1];
        qp_ascheme_format(&a->s.a, sa, sizeof sa);
        qp_ascheme_format(&b->s.a, sb, sizeof sb);
        return strcmp(sa, sb) != 0;
    }
    return false;
}

/* ---- prices ------------------------------------------------------------ */

enum qp_status qp_search_bytes(struct qp_search *q, size_t u, size_t *out,
                               struct qp_error *err)
{
    const struct qp_unit *x = &q->res->units.u[u];
    const struct qp_level *lv = qp_search_level(q->o, q->res->level[u]);
    enum qp_status st = QP_OK;
    *out = 0;
    for (size_t k = 0; !st && k < x->nnodes; k++) {
        int i = x->nodes[k];
        const struct qp_wscheme *ws = !lv ? (q->base->wq[i] ? &q->base->ws[i] : NULL)
                                      : lv->fp32 ? NULL : &lv->s.w;
        size_t b;
        if (!(st = qp_session_weight_bytes(q->s, i, ws, &b, err)))
            *out += b;
    }
    return st;
}

static void price(const struct qp_search *q, const struct qp_qplan *p,
                  struct qp_rstate *s)
{
    struct qp_price pr;
    qp_price_plan(q->g, p, q->macs, &pr);
    s->bytes = pr.bytes;
    s->bitops = pr.bitops;
    s->transitions = pr.transitions;
}

/* ---- measuring ----------------------------------------------------------- */

/* Plan p on every set with memos (recorded or read), scored against refs. */
static enum qp_status score(struct qp_search *q, const struct qp_splan *p,
                            struct qp_tensor **const *sets, size_t n,
                            struct qp_memo **memos, struct qp_tensor **refs,
                            bool record, double *sqnr, double *kl,
                            double *dppl, struct qp_error *err)
{
    const struct qp_graph *g = q->g;
    struct qp_tensor **outs = calloc((size_t)g->n_outputs + 1, sizeof *outs);
    if (!outs)
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    struct qp_outcome oc;
    qp_outcome_init(&oc);
    enum qp_status st = QP_OK;
    for (size_t k = 0; !st && k < n; k++) {
        struct qp_session_run_opts ro = {.memo = memos[k], .record = record,
                                         .no_fusion = record};
        struct qp_session_run_stats rs;
        st = qp_session_run(q->s, p, (const struct qp_tensor *const *)sets[k], &ro,
                            outs, &rs, err);
        if (!st) {
            q->nodes += rs.nodes_run;
            if (refs[k])
                st = qp_outcome_add_tokens(&oc, sets[k][0], refs[k],
                                           outs[q->o->output], err);
            else
                st = qp_tensor_clone(outs[q->o->output], &refs[k], err);
        }
        for (int j = 0; j < g->n_outputs; j++) {
            qp_tensor_free(outs[j]);
            outs[j] = NULL;
        }
    }
    free(outs);
    q->res->runs++;
    *sqnr = qp_outcome_sqnr(&oc);
    *kl = qp_outcome_kl(&oc);
    *dppl = qp_outcome_ppl_delta(&oc);
    return st;
}

static struct qp_tensor **const *calib_sets(const struct qp_search *q,
                                            struct qp_tensor ***buf)
{
    for (size_t k = 0; k < q->ncal; k++)
        buf[k] = (struct qp_tensor **)qp_session_calib_set(q->s, k);
    return buf;
}

static enum qp_status measure(struct qp_search *q, struct qp_rstate *out,
                              bool record, bool near_fp32, struct qp_error *err)
{
    struct qp_qassign *a;
    struct qp_splan *p = NULL;
    *out = (struct qp_rstate){NAN, NAN, NAN, NAN, NAN, NAN, 0, 0, 0};
    enum qp_status st = qp_search_assignment(q, &a, err);
    struct qp_session_cfg cfg = {.mode = q->o->mode, .assign = a,
                                 .flavor = q->o->flavor,
                                 .flavor_given = q->o->flavor_given};
    if (!st)
        st = qp_session_plan(q->s, &cfg, &p, err);
    struct qp_tensor ***cal = calloc(q->ncal + 1, sizeof *cal);
    if (!st && !cal)
        st = qp_fail(err, QP_E_NOMEM, "out of memory");
    if (!st)
        st = score(q, p, calib_sets(q, cal), q->ncal,
                   near_fp32 ? q->fmemo : q->cmemo, q->cref, record && !near_fp32,
                   &out->calib_sqnr, &out->calib_kl, &out->calib_dppl, err);
    if (!st && record && !near_fp32 && q->neval)
        st = score(q, p, q->eval, q->neval, q->ememo, q->eref, true,
                   &out->eval_sqnr, &out->eval_kl, &out->eval_dppl, err);
    if (!st)
        price(q, qp_splan_qplan(p), out);
    free(cal);
    qp_splan_free(p);
    qp_qassign_free(a);
    return st;
}

enum qp_status qp_search_measure(struct qp_search *q, struct qp_rstate *out,
                                 bool record, struct qp_error *err)
{
    return measure(q, out, record, false, err);
}

enum qp_status qp_search_measure_near_fp32(struct qp_search *q,
                                           struct qp_rstate *out,
                                           struct qp_error *err)
{
    return measure(q, out, false, true, err);
}

/* ---- setup ---------------------------------------------------------------- */

static enum qp_status memos(struct qp_session *s, size_t n, struct qp_memo ***m,
                            struct qp_tensor ***refs, struct qp_error *err)
{
    *m = calloc(n + 1, sizeof **m);
    *refs = calloc(n + 1, sizeof **refs);
    enum qp_status st = *m && *refs ? QP_OK : qp_fail(err, QP_E_NOMEM, "out of memory");
    for (size_t k = 0; !st && k < n; k++)
        st = qp_memo_new(s, &(*m)[k], err);
    return st;
}

enum qp_status qp_search_open(struct qp_search *q, struct qp_session *s,
                              struct qp_tensor **const *eval, size_t neval,
                              const struct qp_rsearch_opts *o,
                              struct qp_rsearch_result *res, struct qp_error *err)
{
    *q = (struct qp_search){s, qp_session_graph(s), o, res, NULL, NULL,
                            qp_session_calib_count(s), neval, eval,
                            NULL, NULL, NULL, NULL, NULL, 0};
    const struct qp_graph *g = q->g;
    struct qp_splan *bp = NULL;
    enum qp_status st = QP_OK;
    if (!q->ncal || o->output < 0 || o->output >= g->n_outputs || !o->npromote)
        return qp_fail(err, QP_E_INVAL, "the recipe search needs calibration "
                       "inputs, an output of the model and promotion levels");
    if (!(q->macs = calloc((size_t)g->n_nodes + 1, sizeof *q->macs)))
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    struct qp_tensor **unused = NULL;
    if (!(st = memos(s, q->ncal, &q->cmemo, &q->cref, err)))
        st = memos(s, neval, &q->ememo, &q->eref, err);
    if (!st)
        st = memos(s, q->ncal, &q->fmemo, &unused, err);
    free(unused);
    if (!st)
        st = qp_session_node_macs(s, (const struct qp_tensor *const *)
                                         qp_session_calib_set(s, 0), q->macs, err);
    if (!st)
        st = qp_qassign_uniform(g, o->base, &q->base, err);
    struct qp_session_cfg cfg = {.mode = o->mode, .assign = q->base,
                                 .flavor = o->flavor,
                                 .flavor_given = o->flavor_given};
    if (!st)
        st = qp_session_plan(s, &cfg, &bp, err);
    if (!st)
        st = qp_units_of(g, qp_splan_qplan(bp), o->groups, o->ngroups, q->macs,
                         &res->units, err);
    size_t nu = res->units.n;
    if (!st) {
        res->level = calloc(nu + 1, sizeof *res->level);
        res->fixed = calloc(nu + 1, sizeof *res->fixed);
        if (!res->level || !res->fixed)
            st = qp_fail(err, QP_E_NOMEM, "out of memory");
    }
    /* the fp32 references, recorded for the near-fp32 states */
    struct qp_tensor ***cal = calloc(q->ncal + 1, sizeof *cal);
    double sq, kl, dp;
    if (!st && !cal)
        st = qp_fail(err, QP_E_NOMEM, "out of memory");
    if (!st)
        st = score(q, NULL, calib_sets(q, cal), q->ncal, q->fmemo, q->cref, true,
                   &sq, &kl, &dp, err);
    if (!st && neval)
        st = score(q, NULL, eval, neval, q->ememo, q->eref, true, &sq, &kl,
                   &dp, err);
    free(cal);
    for (int i = 0; !st && i < g->n_nodes; i++)
        if (qp_node_weighted(g, i, NULL))
            res->bytes_fp32 += qp_tensor_numel(g->values[g->nodes[i].in[1]].konst) * 4;
    res->fp32_ref = (struct qp_rstate){INFINITY, 0, INFINITY, 0, 0, 0,
                                       res->bytes_fp32,
                                       0, 0};
    qp_splan_free(bp);
    return st;
}

void qp_search_close(struct qp_search *q)
{
    for (size_t k = 0; q->cmemo && k < q->ncal; k++)
        qp_memo_free(q->cmemo[k]);
    for (size_t k = 0; q->ememo && k < q->neval; k++)
        qp_memo_free(q->ememo[k]);
    for (size_t k = 0; q->fmemo && k < q->ncal; k++)
        qp_memo_free(q->fmemo[k]);
    free(q->fmemo);
    for (size_t k = 0; q->cref && k < q->ncal; k++)
        qp_tensor_free(q->cref[k]);
    for (size_t k = 0; q->eref && k < q->neval; k++)
        qp_tensor_free(q->eref[k]);
    free(q->cmemo);
    free(q->ememo);
    free(q->cref);
    free(q->eref);
    free(q->macs);
    qp_qassign_free(q->base);
    if (q->g && q->res)
        q->res->passes = q->g->n_nodes && q->ncal
                             ? (double)q->nodes / (double)q->g->n_nodes /
                                   (double)q->ncal
                             : 0;
}
