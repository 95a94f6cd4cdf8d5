/* analysis/recipe-search.c: greedy and bisection recipe search
 * (analysis/recipe-search.h). States and their prices are in
 * analysis/recipe-state.c. */
#include "analysis/recipe-search.h"

#include <fnmatch.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/recipe-state.h"

const char *qp_rstep_kind_name(enum qp_rstep_kind k)
{
    static const char *const names[] = {"start", "promote", "bulk", "revert",
                                        "probe"};
    _Static_assert(sizeof names / sizeof names[0] == QP_STEP_KIND_COUNT,
                   "step kinds");
    return (unsigned)k < QP_STEP_KIND_COUNT ? names[k] : "?";
}

double qp_rstate_metric(const struct qp_rstate *s, enum qp_rtarget t, bool eval)
{
    if (t == QP_RT_KL)
        return -(eval ? s->eval_kl : s->calib_kl);
    if (t == QP_RT_PPL)
        return -(eval ? s->eval_dppl : s->calib_dppl);
    return eval ? s->eval_sqnr : s->calib_sqnr;
}

bool qp_rstate_meets(const struct qp_rstate *s, const struct qp_rsearch_opts *o,
                     bool eval)
{
    switch (o->target) {
    case QP_RT_SQNR: return (eval ? s->eval_sqnr : s->calib_sqnr) >= o->value;
    case QP_RT_KL: return (eval ? s->eval_kl : s->calib_kl) <= o->value;
    case QP_RT_PPL: return (eval ? s->eval_dppl : s->calib_dppl) <= o->value;
    default: return false; /* a budget is spent, never met */
    }
}

void qp_rsearch_release(struct qp_rsearch_result *res)
{
    qp_units_release(&res->units);
    free(res->level);
    free(res->fixed);
    free(res->steps);
    qp_qassign_free(res->assign);
    *res = (struct qp_rsearch_result){0};
}

static enum qp_status push_step(struct qp_rsearch_result *res,
                                const struct qp_rstep *st, struct qp_error *err)
{
    struct qp_rstep *s = realloc(res->steps, (res->nsteps + 1) * sizeof *s);
    if (!s)
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    s[res->nsteps++] = *st;
    res->steps = s;
    return QP_OK;
}

/* ---- the damage model -----------------------------------------------------
 *
 * Quantization noise adds up: the output's noise power relative to its
 * signal is about the sum over units of the noise each causes alone
 * (HAWQ's and AIMET's additive sensitivity), so a unit's one-in run at
 * each level (everything else fp32) prices promoting it: damage removed
 * = its noise at the current level - at the next. For a KL target the
 * KLs add the same way. Predictions are checked against the measured
 * whole model after every promotion. */

/* A state's damage: relative noise power, or KL. */
static double damage(const struct qp_rstate *s, enum qp_rtarget t)
{
    if (t == QP_RT_KL)
        return isnan(s->calib_kl) ? 0 : s->calib_kl;
    if (t == QP_RT_PPL)
        return isnan(s->calib_dppl) ? 0 : s->calib_dppl;
    return isinf(s->calib_sqnr) && s->calib_sqnr > 0 ? 0
           : pow(10.0, -s->calib_sqnr / 10.0);
}

/* The metric a damage predicts. */
static double metric_of(double d, enum qp_rtarget t)
{
    if (t == QP_RT_KL || t == QP_RT_PPL)
        return -d;
    return d > 0 ? -10.0 * log10(d) : INFINITY;
}

/* dmg[u * (np + 1) + l]: unit u alone at level l (0: the base). */
struct table {
    double *dmg;
    size_t np;
};

static double unit_damage(const struct table *t, size_t u, int l)
{
    return l < 0 ? 0 : t->dmg[u * (t->np + 1) + (size_t)l];
}

static enum qp_status one_in_table(struct qp_search *q, struct table *t,
                                   struct qp_error *err)
{
    struct qp_rsearch_result *res = q->res;
    size_t nu = res->units.n, np = q->o->npromote;
    t->np = np;
    t->dmg = calloc(nu * (np + 1) + 1, sizeof *t->dmg);
    int *keep = malloc((nu + 1) * sizeof *keep);
    if (!t->dmg || !keep) {
        free(keep);
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    }
    memcpy(keep, res->level, nu * sizeof *keep);
    enum qp_status st = QP_OK;
    for (size_t u = 0; !st && u < nu; u++) {
        for (int l = 0; !st && l <= (int)np; l++) {
            const struct qp_level *lv = qp_search_level(q->o, l);
            if (lv && lv->fp32)
                continue; /* float: no damage */
            /* only u quantized (at l), every other unit float */
            for (size_t v = 0; v < nu; v++)
                res->level[v] = QP_LEVEL_FP32;
            res->level[u] = l;
            struct qp_rstate s;
            st = qp_search_measure_near_fp32(q, &s, err);
            t->dmg[u * (np + 1) + (size_t)l] = damage(&s, q->o->target);
        }
        qp_progress_report(q->o->progress, "recipe: one-in", u + 1, nu);
    }
    memcpy(res->level, keep, nu * sizeof *keep);
    free(keep);
    return st;
}

/* The table's damage of the state res->level describes: the sum over
 * units (kept and pinned units count none). */
static double table_sum(const struct qp_search *q, const struct table *t)
{
    double sum = 0;
    for (size_t u = 0; u < q->res->units.n; u++)
        sum += unit_damage(t, u, q->res->level[u]);
    return sum;
}

/* ---- candidates ---------------------------------------------------------- */

struct cand {
    size_t unit;
    int from;            /* its level now */
    int level;           /* the level it would reach */
    double gain;         /* damage removed (predicted, or measured) */
    size_t dbytes;       /* extra weight bytes */
};

/* Free promotions (no extra bytes) first, by damage removed; then damage
 * removed per byte. */
static int cmp_cand(const void *a, const void *b)
{
    const struct cand *x = a, *y = b;
    bool fx = x->dbytes == 0, fy = y->dbytes == 0;
    if (fx != fy)
        return fx ? -1 : 1;
    double rx = fx ? x->gain : x->gain / (double)x->dbytes;
    double ry = fy ? y->gain : y->gain / (double)y->dbytes;
    if (rx != ry)
        return rx > ry ? -1 : 1;
    return (x->unit > y->unit) - (x->unit < y->unit);
}

/* The next level of unit u that changes its assignment, or -1. */
static int next_level(const struct qp_search *q, size_t u)
{
    if (q->res->fixed[u])
        return -1;
    for (int l = q->res->level[u] + 1; l <= (int)q->o->npromote; l++)
        if (qp_search_level_changes(q, u, l))
            return l;
    return -1;
}

/* The weight bytes unit u takes at level l (its weights quantized or not). */
static enum qp_status unit_bytes(struct qp_search *q, size_t u, int l,
                                 size_t *out, struct qp_error *err)
{
    int keep = q->res->level[u];
    q->res->level[u] = l;
    size_t b;
    enum qp_status st = qp_search_bytes(q, u, &b, err);
    q->res->level[u] = keep;
    *out = b;
    return st;
}

/* Candidate promotion of unit u from the table; false when none helps. */
static enum qp_status candidate(struct qp_search *q, const struct table *t,
                                size_t u, struct cand *c, bool *ok,
                                struct qp_error *err)
{
    *ok = false;
    int l = next_level(q, u);
    if (l < 0)
        return QP_OK;
    size_t b0 = 0, b1 = 0;
    enum qp_status st = unit_bytes(q, u, q->res->level[u], &b0, err);
    if (!st)
        st = unit_bytes(q, u, l, &b1, err);
    double g = unit_damage(t, u, q->res->level[u]) - unit_damage(t, u, l);
    if (!st && g > 0) {
        *c = (struct cand){u, q->res->level[u], l, g, b1 > b0 ? b1 - b0 : 0};
        *ok = true;
    }
    return st;
}

static enum qp_status candidates(struct qp_search *q, const struct table *t,
                                 struct cand *c, size_t *nc, struct qp_error *err)
{
    *nc = 0;
    enum qp_status st = QP_OK;
    for (size_t u = 0; !st && u < q->res->units.n; u++) {
        bool ok;
        if (!(st = candidate(q, t, u, &c[*nc], &ok, err)) && ok)
            (*nc)++;
    }
    qsort(c, *nc, sizeof *c, cmp_cand);
    return st;
}

/* ---- greedy --------------------------------------------------------------- */

static bool over_budget(const struct qp_search *q, size_t bytes)
{
    return q->o->target == QP_RT_BYTES && (double)bytes > q->o->value;
}

/* Re-ranks the first n candidates by their measured damage removal from the
 * current state (one promotion at a time, then back). */
static enum qp_status rerank(struct qp_search *q, const struct qp_rstate *now,
                             struct cand *c, size_t nc, size_t n,
                             struct qp_error *err)
{
    double d0 = damage(now, q->o->target);
    enum qp_status st = QP_OK;
    for (size_t k = 0; !st && k < nc && k < n; k++) {
        int keep = q->res->level[c[k].unit];
        q->res->level[c[k].unit] = c[k].level;
        struct qp_rstate s;
        st = qp_search_measure(q, &s, false, err);
        q->res->level[c[k].unit] = keep;
        c[k].gain = d0 - damage(&s, q->o->target);
    }
    /* the measured ones first by their measured gain; the rest follow */
    qsort(c, nc < n ? nc : n, sizeof *c, cmp_cand);
    return st;
}

/* Applies candidate c when the model is not worse by more than 0.1 dB (or
 * its KL equivalent) and within the budget: measured read-only first, then
 * recorded. *taken tells. */
static enum qp_status try_step(struct qp_search *q, const struct table *t,
                               const struct cand *c, size_t n,
                               struct qp_rstate *now, bool *taken,
                               struct qp_rstep *step, struct qp_error *err)
{
    struct qp_rsearch_result *res = q->res;
    int *keep = malloc((res->units.n + 1) * sizeof *keep);
    if (!keep)
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    memcpy(keep, res->level, res->units.n * sizeof *keep);
    /* the prediction: the measured damage scaled as the table's sum */
    double s0 = table_sum(q, t);
    for (size_t k = 0; k < n; k++)
        res->level[c[k].unit] = c[k].level;
    double s1 = table_sum(q, t);
    struct qp_rstate s;
    enum qp_status st = qp_search_measure(q, &s, false, err);
    double m0 = qp_rstate_metric(now, q->o->target, false);
    double m1 = qp_rstate_metric(&s, q->o->target, false);
    double slack = q->o->target == QP_RT_KL ? 1e-4
                   : q->o->target == QP_RT_PPL ? 1e-3 : 0.1;
    *taken = !st && !over_budget(q, s.bytes) && !(m1 < m0 - slack);
    if (*taken)
        st = qp_search_measure(q, &s, true, err); /* the memos follow */
    else
        memcpy(res->level, keep, res->units.n * sizeof *keep);
    if (!st && *taken) {
        double d0 = damage(now, q->o->target);
        double pred = s0 > 0 ? d0 * s1 / s0 : d0;
        *step = (struct qp_rstep){n == 1 ? QP_STEP_PROMOTE : QP_STEP_BULK,
                                  n == 1 ? (long)c[0].unit : -1,
                                  n == 1 ? c[0].level : 0, n,
                                  metric_of(pred, q->o->target) - m0,
                                  qp_rstate_metric(&s, q->o->target, false) - m0,
                                  false, s};
        *now = s;
    }
    free(keep);
    return st;
}

/* Undoes (or redoes) the first k free promotions of bulk, those whose
 * unit is still where the bulk step left it. */
static void undo_prefix(struct qp_search *q, const struct cand *bulk, size_t k,
                        bool undo)
{
    for (size_t i = 0; i < k; i++) {
        int *l = &q->res->level[bulk[i].unit];
        if (*l == (undo ? bulk[i].level : bulk[i].from))
            *l = undo ? bulk[i].from : bulk[i].level;
    }
}

static int cmp_gain_up(const void *a, const void *b)
{
    const struct cand *x = a, *y = b;
    if (x->gain != y->gain)
        return x->gain < y->gain ? -1 : 1;
    return (x->unit > y->unit) - (x->unit < y->unit);
}

/* Undoes the free promotions of the bulk step (bulk[0..n)) that the target
 * does not need and that cost BitOps: the least useful first (by their
 * one-in gain), the
 * longest such list whose undoing still meets the target, by bisection,
 * as one step. */
/* True when a value of unit u feeds a node with multiply-accumulates: its
 * activation bits price BitOps there. */
static bool feeds_macs(const struct qp_search *q, size_t u)
{
    const struct qp_unit *x = &q->res->units.u[u];
    for (size_t k = 0; k < x->nvalues; k++) {
        const struct qp_value *v = &q->g->values[x->values[k]];
        for (int c = 0; c < v->n_consumers; c++)
            if (q->macs[v->consumers[c]])
                return true;
    }
    return false;
}

static enum qp_status revert_free(struct qp_search *q, struct cand *bulk,
                                  size_t n, struct qp_rstate *now,
                                  struct qp_error *err)
{
    /* only those whose bits cost BitOps: undoing the others saves nothing
     * and adds precision transitions */
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (feeds_macs(q, bulk[i].unit))
            bulk[m++] = bulk[i];
    n = m;
    qsort(bulk, n, sizeof *bulk, cmp_gain_up);
    size_t lo = 0, hi = n;
    enum qp_status st = QP_OK;
    while (!st && lo < hi) {
        size_t mid = lo + (hi - lo + 1) / 2;
        undo_prefix(q, bulk, mid, true);
        struct qp_rstate s;
        st = qp_search_measure(q, &s, false, err);
        undo_prefix(q, bulk, mid, false);
        if (!st && qp_rstate_meets(&s, q->o, false))
            lo = mid;
        else
            hi = mid - 1;
    }
    if (st || !lo)
        return st;
    double m0 = qp_rstate_metric(now, q->o->target, false);
    undo_prefix(q, bulk, lo, true);
    struct qp_rstate s;
    if (!(st = qp_search_measure(q, &s, true, err))) {
        struct qp_rstep step = {QP_STEP_REVERT, -1, 0, lo, NAN,
                                qp_rstate_metric(&s, q->o->target, false) - m0,
                                false, s};
        *now = s;
        st = push_step(q->res, &step, err);
    }
    return st;
}

static enum qp_status greedy(struct qp_search *q, const struct table *t,
                             struct qp_rstate *now, struct qp_error *err)
{
    struct qp_rsearch_result *res = q->res;
    size_t nu = res->units.n, nc = 0;
    struct cand *c = malloc((nu + 1) * sizeof *c);
    if (!c)
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    enum qp_status st = candidates(q, t, c, &nc, err);
    /* the free promotions (activation bits: no weight bytes) together: one
     * at a time each removes little while the others still add noise */
    size_t nfree = 0;
    while (nfree < nc && c[nfree].dbytes == 0)
        nfree++;
    bool taken = false;
    struct qp_rstep step;
    struct cand *bulk = NULL;
    if (!st && nfree > 1 && !qp_rstate_meets(now, q->o, false)) {
        st = try_step(q, t, c, nfree, now, &taken, &step, err);
        if (!st && taken && !(bulk = malloc(nfree * sizeof *bulk)))
            st = qp_fail(err, QP_E_NOMEM, "out of memory");
        if (!st && taken) {
            memcpy(bulk, c, nfree * sizeof *bulk);
            st = push_step(res, &step, err);
            if (!st)
                st = candidates(q, t, c, &nc, err);
        }
    }
    size_t nre = q->o->rerank ? q->o->rerank : 16;
    while (!st && nc && !qp_rstate_meets(now, q->o, false)) {
        struct cand best = c[0];
        memmove(c, c + 1, (nc - 1) * sizeof *c);
        nc--;
        if (next_level(q, best.unit) != best.level)
            continue; /* stale: the unit moved since */
        if ((st = try_step(q, t, &best, 1, now, &taken, &step, err)) || !taken)
            continue;
        /* the unit's next promotion becomes a candidate */
        bool ok;
        if ((st = candidate(q, t, best.unit, &c[nc], &ok, err)))
            break;
        nc += ok;
        qsort(c, nc, sizeof *c, cmp_cand);
        /* a measured gain far from the prediction: the model misjudges
         * what is left; measure the head of the list from here */
        double pr = step.predicted, me = step.measured;
        if (isfinite(pr) && isfinite(me) && fabs(me - pr) > 0.5 &&
            fabs(me - pr) > 0.5 * fabs(pr)) {
            st = rerank(q, now, c, nc, nre, err);
            step.reranked = true;
        }
        if (!st)
            st = push_step(res, &step, err);
        qp_progress_report(q->o->progress, "recipe: promoting", res->nsteps, nu);
    }
    if (!st && bulk && qp_rstate_meets(now, q->o, false))
        st = revert_free(q, bulk, nfree, now, err);
    free(bulk);
    free(c);
    return st;
}

/* ---- bisection (AIMET AMP) -------------------------------------------------- */

static void set_prefix(struct qp_search *q, const struct cand *c, size_t m,
                       const int *start)
{
    memcpy(q->res->level, start, q->res->units.n * sizeof *start);
    for (size_t k = 0; k < m; k++)
        if (c[k].level > q->res->level[c[k].unit])
            q->res->level[c[k].unit] = c[k].level;
}

static enum qp_status bisect(struct qp_search *q, const struct table *t,
                             struct qp_rstate *now, struct qp_error *err)
{
    struct qp_rsearch_result *res = q->res;
    size_t nu = res->units.n, np = q->o->npromote, nc = 0;
    /* every level of every unit, ranked by its own damage removal */
    struct cand *c = malloc((nu * np + 1) * sizeof *c);
    int *start = malloc((nu + 1) * sizeof *start);
    if (!c || !start) {
        free(c);
        free(start);
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    }
    memcpy(start, res->level, nu * sizeof *start);
    enum qp_status st = QP_OK;
    for (size_t u = 0; !st && u < nu; u++) {
        if (res->fixed[u])
            continue;
        size_t b0 = 0;
        st = unit_bytes(q, u, 0, &b0, err);
        for (int l = 1; !st && l <= (int)np; l++) {
            size_t b1 = 0;
            double g = unit_damage(t, u, 0) - unit_damage(t, u, l);
            if (!qp_search_level_changes(q, u, l) || !(g > 0) ||
                (st = unit_bytes(q, u, l, &b1, err)))
                continue;
            c[nc++] = (struct cand){u, 0, l, g, b1 > b0 ? b1 - b0 : 0};
        }
    }
    qsort(c, nc, sizeof *c, cmp_cand);
    size_t lo = 0, hi = nc;
    struct qp_rstate s;
    while (!st && lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        set_prefix(q, c, mid, start);
        if ((st = qp_search_measure(q, &s, false, err)))
            break;
        struct qp_rstep step = {QP_STEP_PROBE, -1, 0, mid, NAN,
                                qp_rstate_metric(&s, q->o->target, false), false, s};
        if ((st = push_step(res, &step, err)))
            break;
        if (qp_rstate_meets(&s, q->o, false) || over_budget(q, s.bytes))
            hi = mid;
        else
            lo = mid + 1;
    }
    /* a budget: lo is the first prefix over it (bytes grow with the prefix) */
    if (!st && q->o->target == QP_RT_BYTES && lo > 0) {
        set_prefix(q, c, lo, start);
        st = qp_search_measure(q, &s, false, err);
        lo -= !st && over_budget(q, s.bytes);
    }
    if (!st) {
        set_prefix(q, c, lo, start);
        st = qp_search_measure(q, now, true, err);
        struct qp_rstep step = {QP_STEP_PROBE, -1, 0, lo, NAN,
                                qp_rstate_metric(now, q->o->target, false), false,
                                *now};
        if (!st)
            st = push_step(res, &step, err);
    }
    free(c);
    free(start);
    return st;
}

/* ---- the search --------------------------------------------------------------- */

static bool any_glob(const char *const *g, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (!fnmatch(g[i], name, 0))
            return true;
    return false;
}

enum qp_status qp_recipe_search(struct qp_session *s,
                                struct qp_tensor **const *eval, size_t neval,
                                const struct qp_rsearch_opts *o,
                                struct qp_rsearch_result *res,
                                struct qp_error *err)
{
    *res = (struct qp_rsearch_result){0};
    struct qp_search q;
    enum qp_status st = qp_search_open(&q, s, eval, neval, o, res, err);
    size_t nu = res->units.n;
    for (size_t u = 0; !st && u < nu; u++) {
        const char *name = res->units.u[u].name;
        if (any_glob(o->keep, o->nkeep, name)) {
            res->fixed[u] = true;
            res->level[u] = QP_LEVEL_FP32;
        }
        for (size_t p = 0; p < o->npins; p++)
            if (!fnmatch(o->pins[p].glob, name, 0)) {
                res->fixed[u] = true;
                res->level[u] = QP_LEVEL_PIN0 - (int)p;
            }
    }
    struct qp_rstate now;
    if (!st)
        st = qp_search_measure(&q, &now, true, err);
    struct qp_rstep start = {QP_STEP_START, -1, 0, 0, 0, 0, false, now};
    if (!st)
        st = push_step(res, &start, err);
    struct table t = {0};
    if (!st && !qp_rstate_meets(&now, o, false))
        st = one_in_table(&q, &t, err);
    if (!st && t.dmg)
        st = o->binary ? bisect(&q, &t, &now, err) : greedy(&q, &t, &now, err);
    free(t.dmg);
    if (!st) {
        res->reached_calib = qp_rstate_meets(&now, o, false);
        res->reached_eval = qp_rstate_meets(&now, o, true);
        st = qp_search_assignment(&q, &res->assign, err);
    }
    qp_search_close(&q);
    return st;
}

/* ---- the recipe -------------------------------------------------------------- */

/* name with fnmatch's metacharacters escaped, malloc'd. */
static char *escape_glob(const char *name)
{
    size_t n = strlen(name);
    char *s = malloc(2 * n + 1), *p = s;
    for (size_t i = 0; s && i < n; i++) {
        if (strchr("*?[]\\", name[i]))
            *p++ = '\\';
        *p++ = name[i];
    }
    if (s)
        *p = '\0';
    return s;
}

static enum qp_status add_rule(struct qp_recipe *r, const char *name,
                               const struct qp_recipe_rule *tmpl,
                               struct qp_error *err)
{
    struct qp_recipe_rule *nr = realloc(r->rules, (r->nrules + 1) * sizeof *nr);
    if (!nr)
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    r->rules = nr;
    nr[r->nrules] = *tmpl;
    if (!(nr[r->nrules].glob = escape_glob(name)))
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    r->nrules++;
    return QP_OK;
}

/* The rules of level lv for weights (weighted) or an output alone. */
static struct qp_recipe_rule rule_of(const struct qp_level *lv, bool weights)
{
    struct qp_recipe_rule r = {0};
    if (lv->fp32) {
        r.fp32 = r.w_said = r.w_float = r.a_said = r.a_float = true;
        if (!weights)
            r.fp32 = r.w_said = r.w_float = false;
        return r;
    }
    r.scheme = lv->s;
    r.w_said = weights;
    r.a_said = r.a_set = lv->s.has_acts;
    if (!weights)
        r.scheme.has_acts = lv->s.has_acts;
    return r;
}

enum qp_status qp_rsearch_recipe(const struct qp_graph *g,
                                 const struct qp_rsearch_result *res,
                                 const struct qp_rsearch_opts *o,
                                 struct qp_recipe **out, struct qp_error *err)
{
    struct qp_recipe *r = calloc(1, sizeof *r);
    if (!r)
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    r->has_default = true;
    r->def.scheme = *o->base;
    r->def.w_said = true;
    r->def.a_said = r->def.a_set = o->base->has_acts;
    if (o->flavor_given) {
        r->flavor = o->flavor;
        r->requant = strdup(qp_rq_flavor_name(o->flavor));
    }
    enum qp_status st = o->flavor_given && !r->requant
                            ? qp_fail(err, QP_E_NOMEM, "out of memory") : QP_OK;
    /* names come from the assignment's units: weights by their rule name,
     * outputs (and the values inheriting from them) by their own */
    for (size_t u = 0; !st && u < res->units.n; u++) {
        const struct qp_level *lv = NULL;
        int l = res->level[u];
        if (l == 0)
            continue;
        lv = l == QP_LEVEL_FP32 ? &(const struct qp_level){.fp32 = true}
             : l <= QP_LEVEL_PIN0 ? &o->pins[QP_LEVEL_PIN0 - l].level
                                  : &o->promote[l - 1];
        const struct qp_unit *x = &res->units.u[u];
        struct qp_recipe_rule wr = rule_of(lv, true), ar = rule_of(lv, false);
        char name[512];
        for (size_t k = 0; !st && k < x->nnodes; k++) {
            qp_node_weight_name(g, x->nodes[k], name, sizeof name);
            st = add_rule(r, name, &wr, err);
        }
        /* weights only: the outputs stay at the base, no rule needed; a
         * weighted node's own output answers to its weight's rule */
        for (size_t k = 0; !st && ar.a_said && k < x->nvalues; k++) {
            int v = x->values[k], p = g->values[v].producer;
            if (p >= 0 && g->nodes[p].out[0] == v && qp_node_weighted(g, p, NULL))
                continue;
            st = add_rule(r, g->values[v].name, &ar, err);
        }
    }
    if (st) {
        qp_recipe_free(r);
        return st;
    }
    *out = r;
    return QP_OK;
}
