/* analysis/ladder.c: the bisection ladder (analysis/ladder.h). */
#include "analysis/ladder.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "analysis/diff-dumps.h"

#define SQNR_CAP 200.0

void qp_ladder_release(struct qp_ladder *l)
{
    for (size_t k = 0; l->labels && k < l->nrungs; k++)
        free(l->labels[k]);
    for (size_t t = 0; l->names && t < l->ntensors; t++)
        free(l->names[t]);
    free(l->labels);
    free(l->names);
    free(l->cells);
    free(l->jumps);
    *l = (struct qp_ladder){0};
}

/* 0 fp32, 1 fake, 2 int, 3 device, -1 other. */
static int stage(const char *label)
{
    static const struct {
        const char *prefix;
        int stage;
    } known[] = {{"fp32", 0}, {"float", 0}, {"ref", 0},   {"fake", 1},
                 {"sim", 1},  {"int", 2},   {"host", 2},  {"device", 3},
                 {"dev", 3},  {"npu", 3},   {"dsp", 3},   {"target", 3}};
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (!strncasecmp(label, known[i].prefix, strlen(known[i].prefix)))
            return known[i].stage;
    return -1;
}

const char *qp_ladder_step_kind(const char *from, const char *to)
{
    int a = stage(from), b = stage(to);
    if (a == 0 && b == 1)
        return "scheme error";
    if (a == 1 && b == 2)
        return "kernel error";
    if (a == 2 && b == 3)
        return "device error";
    if (a == 0 && b == 2)
        return "scheme+kernel error";
    if (a == 1 && b == 3)
        return "kernel+device error";
    if (a == 0 && b == 3)
        return "all errors";
    return "error";
}

static double capped(double v)
{
    if (isnan(v))
        return -SQNR_CAP;
    return v > SQNR_CAP ? SQNR_CAP : v < -SQNR_CAP ? -SQNR_CAP : v;
}

static void find_jump(struct qp_ladder *l, size_t k, double jump)
{
    struct qp_ladder_jump *j = &l->jumps[k];
    double prev = 0;
    j->worst_sqnr = j->last_sqnr = INFINITY;
    for (size_t t = 0; t < l->ntensors; t++) {
        const struct qp_ladder_cell *c = qp_ladder_cell(l, t, k);
        if (!c->have)
            continue;
        double s = capped(c->vs_prev);
        j->last_sqnr = c->vs_prev;
        if (s < j->worst_sqnr) {
            j->worst_sqnr = s;
            j->worst = t;
        }
        if (j->differs && !j->found && s < prev - jump) {
            j->found = true;
            j->tensor = t;
            j->drop = prev - s;
        }
        if (!j->differs && s < SQNR_CAP) {
            j->differs = true;
            j->first_diff = t;
        }
        prev = s;
    }
}

/* Compares rung `a` (as reference) with rung `b`: dd holds the rows. */
static enum qp_status compare(const char *a, const char *b,
                              const struct qp_ladder_opts *o,
                              struct qp_diff_dumps *dd, struct qp_error *err)
{
    struct qp_diff_opts d = {.layouts = o->layouts, .nlayouts = o->nlayouts,
                             .progress = NULL};
    enum qp_status st = qp_diff_dumps_open(a, b, o->map, &d, dd, err);
    if (!st && dd->problem)
        st = qp_fail(err, QP_E_NOTFOUND, "'%s' vs '%s': %s", a, b, dd->problem);
    if (!st)
        st = qp_diff_dumps_compute(dd, o->progress, err);
    return st;
}

enum qp_status qp_ladder_compute(const char *const *paths,
                                 const char *const *labels, size_t n,
                                 const struct qp_ladder_opts *o,
                                 struct qp_ladder *out, struct qp_error *err)
{
    *out = (struct qp_ladder){0};
    if (n < 2 || n > QP_LADDER_MAX_RUNGS)
        return qp_fail(err, QP_E_INVAL, "a ladder has 2 to %d rungs, not %zu",
                       QP_LADDER_MAX_RUNGS, n);
    struct qp_dump *d0 = NULL;
    enum qp_status st = qp_dump_open(paths[0], QP_DUMP_AUTO, &d0, err);
    out->nrungs = n;
    out->labels = calloc(n, sizeof *out->labels);
    out->jumps = calloc(n, sizeof *out->jumps);
    if (!st && (!out->labels || !out->jumps))
        st = qp_fail(err, QP_E_NOMEM, "out of memory");
    for (size_t k = 0; !st && k < n; k++) {
        char def[32]; /* "rung" and any size_t: -O1 builds check the bound */
        snprintf(def, sizeof def, "rung%zu", k);
        if (!(out->labels[k] = strdup(labels && labels[k] ? labels[k] : def)))
            st = qp_fail(err, QP_E_NOMEM, "out of memory");
    }
    size_t nt = d0 ? qp_dump_count(d0) : 0;
    if (!st) {
        out->ntensors = nt;
        out->names = calloc(nt + 1, sizeof *out->names);
        out->cells = calloc(nt * n + 1, sizeof *out->cells);
        if (!out->names || !out->cells)
            st = qp_fail(err, QP_E_NOMEM, "out of memory");
    }
    for (size_t t = 0; !st && t < nt; t++)
        if (!(out->names[t] = strdup(qp_dump_entry(d0, t)->name)))
            st = qp_fail(err, QP_E_NOMEM, "out of memory");
    qp_dump_close(d0);
    /* rung k's dump index -> the first rung's tensor, from the previous
     * rung's comparison with the first */
    size_t *prev_map = NULL;
    for (size_t k = 1; !st && k < n; k++) {
        struct qp_diff_dumps dd;
        if ((st = compare(paths[0], paths[k], o, &dd, err)))
            qp_diff_dumps_release(&dd);
        size_t nk = st ? 0 : qp_dump_count(dd.test);
        size_t *map = st ? NULL : malloc((nk + 1) * sizeof *map);
        if (!st && !map)
            st = qp_fail(err, QP_E_NOMEM, "out of memory");
        for (size_t i = 0; !st && i < nk; i++)
            map[i] = SIZE_MAX;
        for (size_t r = 0; !st && r < dd.d.nrows; r++) {
            const struct qp_diff_row *row = &dd.d.rows[r];
            struct qp_ladder_cell *c = &out->cells[row->ref_index * n + k];
            c->have = true;
            c->vs_first = c->vs_prev = qp_diff_value(row, QP_DM_SQNR);
            c->lsb = row->lsb;
            map[row->test_index] = row->ref_index;
        }
        if (!st)
            qp_diff_dumps_release(&dd);
        if (!st && k >= 2) { /* against the previous rung */
            if (!(st = compare(paths[k - 1], paths[k], o, &dd, err)))
                for (size_t r = 0; r < dd.d.nrows; r++) {
                    const struct qp_diff_row *row = &dd.d.rows[r];
                    size_t t = prev_map[row->ref_index];
                    if (t == SIZE_MAX || !out->cells[t * n + k].have)
                        continue;
                    out->cells[t * n + k].vs_prev = qp_diff_value(row, QP_DM_SQNR);
                    out->cells[t * n + k].lsb = row->lsb;
                }
            qp_diff_dumps_release(&dd);
        }
        free(prev_map);
        prev_map = map;
    }
    free(prev_map);
    out->first_rung = out->worst_rung = -1;
    for (size_t k = 1; !st && k < n; k++) {
        find_jump(out, k, o->jump > 0 ? o->jump : 6);
        if (out->first_rung < 0 && out->jumps[k].found)
            out->first_rung = (int)k;
        double s = capped(out->jumps[k].last_sqnr);
        if (out->jumps[k].differs &&
            (out->worst_rung < 0 ||
             s < capped(out->jumps[out->worst_rung].last_sqnr)))
            out->worst_rung = (int)k;
    }
    return st;
}
