#include "analysis/diff-report.h"

#include "analysis/plot-depth.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void qp_diff_shape_field(int ndim, const int64_t *shape, char *buf, size_t size)
{
    if (ndim == 0) {
        snprintf(buf, size, "scalar");
        return;
    }
    size_t len = 0;
    buf[0] = '\0';
    for (int i = 0; i < ndim && len < size; i++)
        len += (size_t)snprintf(buf + len, size - len, "%s%lld", i ? "x" : "",
                                (long long)shape[i]);
}

/* order[ref_index] = the row's place in reference order (NULL: no memory). */
static size_t *ref_order(const struct qp_diff *d)
{
    size_t top = 0;
    for (size_t i = 0; i < d->nrows; i++)
        top = d->rows[i].ref_index + 1 > top ? d->rows[i].ref_index + 1 : top;
    size_t *order = calloc(top + 1, sizeof *order);
    for (size_t i = 0; order && i < d->nrows; i++)
        order[d->rows[i].ref_index] = 1;
    for (size_t k = 0, n = 0; order && k < top; k++) {
        size_t had = order[k];
        order[k] = n;
        n += had;
    }
    return order;
}

void qp_diff_write_csv(struct qp_csv_writer *w, const struct qp_diff *d)
{
    static const char *const header[] = {
        "rank", "name", "shape", "numel", "sqnr_db", "cosine", "mae", "max_abs",
        "rel_l2", "ref_absmax", "nonfinite", "kl", "top1", "test_name",
        "mae_lsb", "max_lsb", "rmse_lsb", "mismatches", "order"};
    qp_csv_row(w, header, sizeof header / sizeof header[0]);
    size_t *order = ref_order(d);
    for (size_t i = 0; i < d->nrows; i++) {
        const struct qp_diff_row *r = &d->rows[i];
        char shape[200];
        qp_diff_shape_field(r->ndim, r->shape, shape, sizeof shape);
        qp_csv_int(w, (int64_t)i + 1);
        qp_csv_str(w, r->name);
        qp_csv_str(w, shape);
        qp_csv_int(w, (int64_t)r->numel);
        for (int m = QP_DM_SQNR; m <= QP_DM_REF_ABSMAX; m++)
            qp_csv_num(w, qp_diff_value(r, (enum qp_diff_metric)m));
        qp_csv_int(w, (int64_t)r->m.nonfinite);
        if (r->logits) {
            qp_csv_num(w, r->kl);
            qp_csv_num(w, r->top1);
        } else {
            qp_csv_str(w, NULL);
            qp_csv_str(w, NULL);
        }
        qp_csv_str(w, r->test_name);
        if (r->lsb.valid) {
            qp_csv_num(w, qp_lsb_mae(&r->lsb));
            qp_csv_num(w, r->lsb.max);
            qp_csv_num(w, qp_lsb_rmse(&r->lsb));
            qp_csv_int(w, (int64_t)r->lsb.mismatches);
        } else {
            for (int k = 0; k < 4; k++)
                qp_csv_str(w, NULL);
        }
        if (order)
            qp_csv_int(w, (int64_t)order[r->ref_index]);
        else
            qp_csv_str(w, NULL);
        qp_csv_end_row(w);
    }
    free(order);
}

enum qp_status qp_diff_align_entries(const struct qp_dump *ref,
                                     const struct qp_dump *test,
                                     const struct qp_align *al,
                                     const struct qp_diff *d,
                                     void (*fn)(void *ctx,
                                                const struct qp_align_entry *e),
                                     void *ctx, struct qp_error *err)
{
    size_t nref = qp_dump_count(ref);
    const struct qp_diff_row **row = calloc(nref + 1, sizeof *row);
    const char **refused = calloc(nref + 1, sizeof *refused);
    if (!row || !refused) {
        free(row);
        free(refused);
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    }
    for (size_t i = 0; i < d->nrows; i++)
        row[d->rows[i].ref_index] = &d->rows[i];
    for (size_t i = 0; i < d->nrefused; i++)
        refused[d->refused[i].ref_index] = d->refused[i].reason;
    for (size_t i = 0; i < al->npairs; i++) {
        const struct qp_align_pair *p = &al->pairs[i];
        char detail[160] = "";
        size_t len = 0;
        if (p->how == QP_ALIGN_MAP_RULE)
            len += (size_t)snprintf(detail, sizeof detail, "rule %d", p->rule);
        if (row[p->ref] && row[p->ref]->permuted[0])
            snprintf(detail + len, sizeof detail - len, "%slayout %s",
                     len ? "; " : "", row[p->ref]->permuted);
        struct qp_align_entry e = {
            qp_dump_entry(ref, p->ref)->name, qp_dump_entry(test, p->test)->name,
            refused[p->ref] ? "refused" : qp_align_how_name(p->how),
            refused[p->ref] ? refused[p->ref] : detail};
        fn(ctx, &e);
    }
    for (size_t i = 0; i < al->nref_only; i++)
        fn(ctx, &(struct qp_align_entry){qp_dump_entry(ref, al->ref_only[i])->name,
                                         NULL, "ref-only", ""});
    for (size_t i = 0; i < al->ntest_only; i++)
        fn(ctx, &(struct qp_align_entry){
                    NULL, qp_dump_entry(test, al->test_only[i])->name,
                    "test-only", ""});
    for (size_t i = 0; i < al->nnotes; i++)
        fn(ctx, &(struct qp_align_entry){NULL, NULL, "note", al->notes[i]});
    free(row);
    free(refused);
    return QP_OK;
}

static void align_row(void *ctx, const struct qp_align_entry *e)
{
    const char *f[4] = {e->ref, e->test, e->how, e->detail};
    qp_csv_row(ctx, f, 4);
}

enum qp_status qp_diff_write_align(struct qp_csv_writer *w,
                                   const struct qp_dump *ref,
                                   const struct qp_dump *test,
                                   const struct qp_align *al,
                                   const struct qp_diff *d,
                                   struct qp_error *err)
{
    static const char *const header[] = {"ref", "test", "how", "detail"};
    qp_csv_row(w, header, 4);
    return qp_diff_align_entries(ref, test, al, d, align_row, w, err);
}

static int cmp_ref_index(const void *a, const void *b)
{
    const struct qp_diff_row *x = *(const struct qp_diff_row *const *)a;
    const struct qp_diff_row *y = *(const struct qp_diff_row *const *)b;
    return (x->ref_index > y->ref_index) - (x->ref_index < y->ref_index);
}

enum qp_status qp_diff_plot(const char *out, const char *title,
                            const struct qp_diff *d, size_t worst,
                            struct qp_plot **pending, struct qp_error *err)
{
    *pending = NULL;
    size_t n = d->nrows;
    const struct qp_diff_row **order = calloc(n + 1, sizeof *order);
    const char **names = calloc(n + 1, sizeof *names);
    double *v = calloc(n + 1, sizeof *v);
    int *block = calloc(n + 1, sizeof *block);
    size_t *marked = calloc(n + 1, sizeof *marked), nm = 0, *pos = NULL;
    pos = calloc(n + 1, sizeof *pos);
    enum qp_status st = QP_OK;
    if (!order || !names || !v || !block || !marked || !pos)
        st = qp_fail(err, QP_E_NOMEM, "out of memory");
    for (size_t i = 0; !st && i < n; i++)
        order[i] = &d->rows[i];
    if (!st)
        qsort(order, n, sizeof *order, cmp_ref_index);
    bool blocks = false;
    for (size_t i = 0; !st && i < n; i++) {
        names[i] = order[i]->name;
        v[i] = qp_diff_value(order[i], QP_DM_SQNR);
        block[i] = qp_depth_block_of(order[i]->name);
        blocks |= block[i] >= 0;
        pos[order[i] - d->rows] = i; /* diff rank -> plot position */
    }
    for (size_t r = 0; !st && r < n && r < worst; r++)
        marked[nm++] = pos[r];
    if (!st) {
        struct qp_depth_series s = {"SQNR", v};
        struct qp_depth_plot p = {title, "SQNR (dB)", n, names,
                                  blocks ? block : NULL, &s, 1, marked, nm,
                                  NULL};
        st = qp_plot_depth(out, &p, pending, err);
    }
    free(order);
    free(names);
    free(v);
    free(block);
    free(marked);
    free(pos);
    return st;
}
