#include "analysis/diff.h"

#include <ctype.h>
#include <fnmatch.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/logits.h"

/* ---- metrics by name ------------------------------------------------------------ */

static const struct {
    const char *name;
    int worse; /* +1: higher is worse, -1: lower is worse */
} metric_info[] = {
    [QP_DM_SQNR] = {"sqnr_db", -1},      [QP_DM_COSINE] = {"cosine", -1},
    [QP_DM_MAE] = {"mae", 1},            [QP_DM_MAX_ABS] = {"max_abs", 1},
    [QP_DM_REL_L2] = {"rel_l2", 1},      [QP_DM_REF_ABSMAX] = {"ref_absmax", 1},
    [QP_DM_NONFINITE] = {"nonfinite", 1}, [QP_DM_NUMEL] = {"numel", 1},
    [QP_DM_KL] = {"kl", 1},              [QP_DM_TOP1] = {"top1", -1},
    [QP_DM_ORDER] = {"order", -1},
};
_Static_assert(sizeof metric_info / sizeof metric_info[0] == QP_DM_COUNT,
               "a name per metric");

bool qp_diff_metric_from_name(const char *name, enum qp_diff_metric *out)
{
    for (int i = 0; i < QP_DM_COUNT; i++)
        if (!strcmp(name, metric_info[i].name)) {
            *out = (enum qp_diff_metric)i;
            return true;
        }
    return false;
}

const char *qp_diff_metric_name(enum qp_diff_metric m)
{
    return (unsigned)m < QP_DM_COUNT ? metric_info[m].name : "?";
}

double qp_diff_value(const struct qp_diff_row *r, enum qp_diff_metric m)
{
    switch (m) {
    case QP_DM_SQNR: return qp_metrics_sqnr_db(&r->m);
    case QP_DM_COSINE: return qp_metrics_cosine(&r->m);
    case QP_DM_MAE: return qp_metrics_mae(&r->m);
    case QP_DM_MAX_ABS: return qp_metrics_max_abs(&r->m);
    case QP_DM_REL_L2: return qp_metrics_rel_l2(&r->m);
    case QP_DM_REF_ABSMAX: return r->m.ref_absmax;
    case QP_DM_NONFINITE: return (double)r->m.nonfinite;
    case QP_DM_NUMEL: return (double)r->numel;
    case QP_DM_KL: return r->logits ? r->kl : NAN;
    case QP_DM_TOP1: return r->logits ? r->top1 : NAN;
    case QP_DM_ORDER: return (double)r->ref_index;
    case QP_DM_COUNT: break;
    }
    return NAN;
}

/* ---- layouts -------------------------------------------------------------------- */

/* Upper-cased copy of a layout of 1..8 distinct letters; false otherwise. */
static bool layout_norm(const char *s, char out[QP_MAX_DIMS + 1])
{
    size_t n = strlen(s);
    if (n < 1 || n > QP_MAX_DIMS)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = (char)toupper((unsigned char)s[i]);
        if (c < 'A' || c > 'Z' || memchr(out, c, i))
            return false;
        out[i] = c;
    }
    out[n] = '\0';
    return true;
}

/* perm[i] = position in `from` of the letter to[i]; false when the two are
 * not permutations of each other. */
static bool layout_perm(const char *from, const char *to, int *perm)
{
    size_t n = strlen(to);
    if (strlen(from) != n)
        return false;
    for (size_t i = 0; i < n; i++) {
        const char *p = strchr(from, to[i]);
        if (!p)
            return false;
        perm[i] = (int)(p - from);
    }
    return true;
}

enum qp_status qp_layout_decl_parse(const char *s, struct qp_layout_decl *out,
                                    struct qp_error *err)
{
    *out = (struct qp_layout_decl){{0}, {0}};
    const char *colon = strchr(s, ':');
    char ref[24] = "", test[24] = "";
    if (!colon || strlen(s) > 2 * QP_MAX_DIMS + 1)
        return qp_fail(err, QP_E_INVAL,
                       "layout '%s': expected REF:TEST, e.g. NCHW:NHWC", s);
    memcpy(ref, s, (size_t)(colon - s));
    strcpy(test, colon + 1);
    if (!*ref && !*test)
        return qp_fail(err, QP_E_INVAL, "layout '%s': both sides are empty", s);
    if ((*ref && !layout_norm(ref, out->ref)) ||
        (*test && !layout_norm(test, out->test)))
        return qp_fail(err, QP_E_INVAL,
                       "layout '%s': each side is 1 to %d distinct letters", s,
                       QP_MAX_DIMS);
    int perm[QP_MAX_DIMS];
    if (*ref && *test && !layout_perm(out->test, out->ref, perm))
        return qp_fail(err, QP_E_INVAL,
                       "layout '%s': both sides must use the same letters", s);
    return QP_OK;
}

/* The layout of t on one side (tag first, then declarations), or false. */
static bool side_layout(const struct qp_tensor *t, const struct qp_diff_opts *o,
                        bool test_side, char out[QP_MAX_DIMS + 1])
{
    if (t->ndim < 1)
        return false;
    if (t->layout && strlen(t->layout) == (size_t)t->ndim &&
        layout_norm(t->layout, out))
        return true;
    for (size_t i = 0; i < o->nlayouts; i++) {
        const char *l = test_side ? o->layouts[i].test : o->layouts[i].ref;
        if (strlen(l) == (size_t)t->ndim) {
            strcpy(out, l);
            return true;
        }
    }
    return false;
}

/* ---- checking a pair from the listings --------------------------------------------- */

/* How a pair is compared, decided from the listings. */
struct plan {
    bool permute;
    int perm[QP_MAX_DIMS];
    char note[2 * QP_MAX_DIMS + 4];
    char warning[QP_DIFF_WARN_MAX];
};

/* Decides how to compare descriptors r and t; a malloc'd reason in
 * *refusal when they cannot be. */
static enum qp_status plan_pair(const struct qp_tensor *r, const struct qp_tensor *t,
                                const struct qp_diff_opts *o, struct plan *p,
                                char **refusal, struct qp_error *err)
{
    char lr[QP_MAX_DIMS + 1], lt[QP_MAX_DIMS + 1], why[1024] = "";
    char sr[200], st[200], sp[240] = "";
    int64_t shape[QP_MAX_DIMS];
    *p = (struct plan){0};
    *refusal = NULL;
    qp_shape_str(r->ndim, r->shape, sr, sizeof sr);
    qp_shape_str(t->ndim, t->shape, st, sizeof st);
    memcpy(shape, t->shape, sizeof shape);
    bool kr = side_layout(r, o, false, lr), kt = side_layout(t, o, true, lt);
    if (kr != kt && r->ndim >= 3 && r->ndim == t->ndim) {
        /* one side says how its dims are ordered, the other does not: the
         * same shape may still hold a different order */
        snprintf(p->warning, sizeof p->warning, "layout %s known on the %s "
                 "side only; compared as stored (declare --layout REF:TEST)",
                 kr ? lr : lt, kr ? "reference" : "test");
        if (o->strict)
            snprintf(why, sizeof why, "%s; refused under --strict", p->warning);
    }
    if (kr && kt && r->ndim == t->ndim && strcmp(lr, lt)) {
        if (!layout_perm(lt, lr, p->perm)) {
            snprintf(why, sizeof why, "layouts %s (reference) and %s (test) do "
                     "not have the same letters", lr, lt);
        } else if (qp_dtype_is_packed(t->dtype)) {
            snprintf(why, sizeof why, "test layout %s differs from %s, but "
                     "packed %s data cannot be permuted", lt, lr,
                     qp_dtype_name(t->dtype));
        } else if (t->qp && t->qp->block_size && t->ndim > 1) {
            snprintf(why, sizeof why, "test layout %s differs from %s, but "
                     "block-quantized data cannot be permuted", lt, lr);
        } else {
            p->permute = true;
            snprintf(p->note, sizeof p->note, "%s->%s", lt, lr);
            for (int i = 0; i < t->ndim; i++)
                shape[i] = t->shape[p->perm[i]];
            char s2[200];
            qp_shape_str(t->ndim, shape, s2, sizeof s2);
            snprintf(sp, sizeof sp, " (%s after %s)", s2, p->note);
        }
    }
    if (!why[0] && !qp_shape_equal(r->ndim, r->shape, t->ndim, shape))
        snprintf(why, sizeof why, "shapes differ: reference %s, test %s%s; not "
                 "compared%s", sr, st, sp,
                 p->permute || qp_tensor_numel(r) != qp_tensor_numel(t) ? ""
                 : " (declare layouts with --layout REF:TEST, e.g. NCHW:NHWC)");
    if (why[0] && !(*refusal = strdup(why)))
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    return QP_OK;
}

/* ---- running ----------------------------------------------------------------------- */

static bool is_logits(const char *name, const struct qp_diff_opts *o)
{
    for (size_t i = 0; i < o->nlogits; i++)
        if (fnmatch(o->logits_globs[i], name, 0) == 0)
            return true;
    return false;
}

static void release_pages(const struct qp_tensor *t)
{
    if (t && t->map && t->nbytes)
        qp_mmap_release_range(t->map,
                              (size_t)((const unsigned char *)t->data - t->map->data),
                              t->nbytes);
}

static void prefetch_pages(const struct qp_tensor *t)
{
    if (t && t->map && t->nbytes)
        qp_mmap_prefetch(t->map,
                         (size_t)((const unsigned char *)t->data - t->map->data),
                         t->nbytes);
}

/* Loads and compares the planned pair of row. */
static enum qp_status compare_pair(struct qp_dump *ref, struct qp_dump *test,
                                   struct qp_diff_row *row, struct qp_error *err)
{
    struct qp_tensor *r = NULL, *t = NULL, *tp = NULL;
    enum qp_status st = qp_dump_load(ref, row->ref_index, &r, err);
    if (!st)
        st = qp_dump_load(test, row->test_index, &t, err);
    if (!st) {
        prefetch_pages(r);
        prefetch_pages(t);
    }
    if (!st && row->permute) {
        st = qp_tensor_permute(t, row->perm, &tp, err);
        release_pages(t);
    }
    const struct qp_tensor *tc = tp ? tp : t;
    if (!st)
        st = qp_metrics_tensors(r, tc, &row->m, err);
    if (!st)
        st = qp_lsb_tensors(r, tc, &row->lsb, err);
    if (!st && row->logits) {
        struct qp_logits l;
        st = qp_logits_tensors(r, tc, &l, err);
        row->kl = qp_logits_kl(&l);
        row->top1 = qp_logits_top1(&l);
    }
    release_pages(r);
    release_pages(t);
    qp_tensor_free(r);
    qp_tensor_free(t);
    qp_tensor_free(tp);
    return st;
}

static enum qp_status add_refusal(struct qp_diff *d, size_t ref_index,
                                  const char *rn, const char *tn, char *reason,
                                  struct qp_error *err)
{
    struct qp_diff_refusal *nr =
        realloc(d->refused, (d->nrefused + 1) * sizeof *nr);
    if (!nr) {
        free(reason);
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    }
    d->refused = nr;
    struct qp_diff_refusal *f = &d->refused[d->nrefused];
    *f = (struct qp_diff_refusal){strdup(rn), strdup(tn), ref_index, reason};
    d->nrefused++;
    if (!f->ref_name || !f->test_name)
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    return QP_OK;
}

enum qp_status qp_diff_plan(const struct qp_dump *ref,
                            const struct qp_dump *test,
                            const struct qp_align *al,
                            const struct qp_diff_opts *opts, struct qp_diff *out,
                            struct qp_error *err)
{
    *out = (struct qp_diff){0};
    out->rows = calloc(al->npairs + 1, sizeof *out->rows);
    if (!out->rows)
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    enum qp_status st = QP_OK;
    for (size_t i = 0; i < al->npairs && !st; i++) {
        const struct qp_align_pair *pr = &al->pairs[i];
        const struct qp_tensor *re = qp_dump_entry(ref, pr->ref);
        const struct qp_tensor *te = qp_dump_entry(test, pr->test);
        struct plan plan;
        char *refusal;
        st = plan_pair(re, te, opts, &plan, &refusal, err);
        if (!st && refusal) {
            st = add_refusal(out, pr->ref, re->name, te->name, refusal, err);
            continue;
        }
        struct qp_diff_row *row = &out->rows[out->nrows];
        *row = (struct qp_diff_row){
            .ref_index = pr->ref, .test_index = pr->test, .how = pr->how,
            .ndim = re->ndim, .permute = plan.permute,
            .logits = is_logits(re->name, opts), .kl = NAN, .top1 = NAN};
        memcpy(row->shape, re->shape, sizeof row->shape);
        memcpy(row->perm, plan.perm, sizeof row->perm);
        row->numel = qp_tensor_numel(re);
        strcpy(row->permuted, plan.note);
        strcpy(row->warning, plan.warning);
        row->name = strdup(re->name);
        row->test_name = strdup(te->name);
        out->nrows++;
        if (!row->name || !row->test_name)
            st = qp_fail(err, QP_E_NOMEM, "out of memory");
    }
    return st;
}

enum qp_status qp_diff_compute(struct qp_dump *ref, struct qp_dump *test,
                               struct qp_diff *d,
                               const struct qp_progress *progress,
                               struct qp_error *err)
{
    for (size_t i = 0; i < d->nrows; i++) {
        qp_progress_report(progress, "diff", i, d->nrows);
        enum qp_status st = compare_pair(ref, test, &d->rows[i], err);
        if (st)
            return st;
    }
    qp_progress_report(progress, "diff", d->nrows, d->nrows);
    return QP_OK;
}

enum qp_status qp_diff_run(struct qp_dump *ref, struct qp_dump *test,
                           const struct qp_align *al,
                           const struct qp_diff_opts *opts, struct qp_diff *out,
                           struct qp_error *err)
{
    enum qp_status st = qp_diff_plan(ref, test, al, opts, out, err);
    return st ? st : qp_diff_compute(ref, test, out, opts->progress, err);
}

void qp_diff_release(struct qp_diff *d)
{
    for (size_t i = 0; i < d->nrows; i++) {
        free(d->rows[i].name);
        free(d->rows[i].test_name);
    }
    for (size_t i = 0; i < d->nrefused; i++) {
        free(d->refused[i].ref_name);
        free(d->refused[i].test_name);
        free(d->refused[i].reason);
    }
    free(d->rows);
    free(d->refused);
    *d = (struct qp_diff){0};
}

/* ---- sorting -------------------------------------------------------------------------- */

static int cmp_rows(const void *a, const void *b, void *arg)
{
    const struct qp_diff_row *x = a, *y = b;
    enum qp_diff_metric m = *(const enum qp_diff_metric *)arg;
    uint64_t bx = x->m.nonfinite + x->m.ref_nonfinite,
             by = y->m.nonfinite + y->m.ref_nonfinite;
    if (m != QP_DM_ORDER && bx != by)
        return bx > by ? -1 : 1;
    double vx = qp_diff_value(x, m), vy = qp_diff_value(y, m);
    if (isnan(vx) != isnan(vy))
        return isnan(vx) ? 1 : -1;
    if (!isnan(vx) && vx != vy) {
        bool x_worse = metric_info[m].worse > 0 ? vx > vy : vx < vy;
        return x_worse ? -1 : 1;
    }
    return (x->ref_index > y->ref_index) - (x->ref_index < y->ref_index);
}

void qp_diff_sort(struct qp_diff *d, enum qp_diff_metric by)
{
    if (d->nrows > 1)
        qsort_r(d->rows, d->nrows, sizeof *d->rows, cmp_rows, &by);
}

/* ---- --fail-if --------------------------------------------------------------------------- */

enum qp_status qp_diff_cond_parse(const char *s, struct qp_diff_cond *out,
                                  struct qp_error *err)
{
    static const struct {
        const char *text;
        enum qp_cond_op op;
    } ops[] = {{"<=", QP_OP_LE}, {">=", QP_OP_GE}, {"==", QP_OP_EQ},
               {"!=", QP_OP_NE}, {"<", QP_OP_LT},  {">", QP_OP_GT}};
    *out = (struct qp_diff_cond){0};
    const char *p = s;
    while (isspace((unsigned char)*p))
        p++;
    char name[32];
    size_t n = 0;
    while ((isalnum((unsigned char)*p) || *p == '_') && n + 1 < sizeof name)
        name[n++] = *p++;
    name[n] = '\0';
    if (!qp_diff_metric_from_name(name, &out->metric) ||
        out->metric == QP_DM_ORDER)
        return qp_fail(err, QP_E_INVAL,
                       "condition '%s': unknown metric '%s' (one of sqnr_db, "
                       "cosine, mae, max_abs, rel_l2, ref_absmax, nonfinite, "
                       "numel, kl, top1)", s, name);
    while (isspace((unsigned char)*p))
        p++;
    size_t k = 0;
    while (k < sizeof ops / sizeof ops[0] &&
           strncmp(p, ops[k].text, strlen(ops[k].text)))
        k++;
    if (k == sizeof ops / sizeof ops[0])
        return qp_fail(err, QP_E_INVAL,
                       "condition '%s': expected one of < <= > >= == != after "
                       "'%s'", s, name);
    out->op = ops[k].op;
    p += strlen(ops[k].text);
    char *end;
    out->value = strtod(p, &end);
    while (isspace((unsigned char)*end))
        end++;
    if (end == p || *end || isnan(out->value))
        return qp_fail(err, QP_E_INVAL, "condition '%s': expected a number "
                       "after '%s'", s, ops[k].text);
    snprintf(out->text, sizeof out->text, "%s", s);
    return QP_OK;
}

/* The error metrics that a comparison with NaN/Inf must fail. */
static bool error_metric(enum qp_diff_metric m)
{
    return m == QP_DM_SQNR || m == QP_DM_COSINE || m == QP_DM_MAE ||
           m == QP_DM_MAX_ABS || m == QP_DM_REL_L2;
}

bool qp_diff_cond_hit(const struct qp_diff_cond *c, const struct qp_diff_row *r)
{
    /* NaN is never a pass: a pair with NaN/Inf crosses every threshold on
     * an error metric, whatever the comparison */
    if (error_metric(c->metric) && (r->m.nonfinite || r->m.ref_nonfinite))
        return true;
    double v = qp_diff_value(r, c->metric);
    if (isnan(v))
        return false;
    switch (c->op) {
    case QP_OP_LT: return v < c->value;
    case QP_OP_LE: return v <= c->value;
    case QP_OP_GT: return v > c->value;
    case QP_OP_GE: return v >= c->value;
    case QP_OP_EQ: return v == c->value;
    case QP_OP_NE: return v != c->value;
    }
    return false;
}

enum qp_status qp_diff_conds_add(const char *arg, struct qp_diff_cond **conds,
                                 size_t *n, struct qp_error *err)
{
    size_t len = strlen(arg);
    const char *p = arg;
    if (!len)
        return qp_fail(err, QP_E_INVAL, "an empty condition (expected e.g. "
                       "'sqnr_db<25')");
    for (;;) {
        const char *comma = strchr(p, ',');
        size_t l = comma ? (size_t)(comma - p) : strlen(p);
        char item[128];
        size_t lead = 0;
        while (lead < l && isspace((unsigned char)p[lead]))
            lead++;
        if (lead == l)
            return qp_fail(err, QP_E_INVAL, "'%s': an empty condition between "
                           "commas (expected e.g. 'sqnr_db<25,cosine<0.99')",
                           arg);
        if (l >= sizeof item)
            return qp_fail(err, QP_E_INVAL, "condition '%.40s...' is too long",
                           p);
        memcpy(item, p, l);
        item[l] = '\0';
        struct qp_diff_cond *nc = realloc(*conds, (*n + 1) * sizeof *nc);
        if (!nc)
            return qp_fail(err, QP_E_NOMEM, "out of memory");
        *conds = nc;
        enum qp_status st = qp_diff_cond_parse(item, &nc[*n], err);
        if (st)
            return st;
        (*n)++;
        if (!comma)
            return QP_OK;
        p = comma + 1;
    }
}
