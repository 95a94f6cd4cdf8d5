/* analysis/ladder-report.c: the ladder's CSV and plot
 * (analysis/ladder-report.h). */
#include "analysis/ladder-report.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "analysis/plot-depth.h"

void qp_ladder_write_csv(struct qp_csv_writer *w, const struct qp_ladder *l)
{
    char col[200];
    qp_csv_str(w, "index");
    qp_csv_str(w, "name");
    qp_csv_str(w, "block");
    static const char *const sfx[] = {"vs_first_db", "vs_prev_db", "prev_max_lsb",
                                      "prev_mismatches"};
    for (size_t k = 1; k < l->nrungs; k++)
        for (int s = 0; s < 4; s++) {
            snprintf(col, sizeof col, "%s_%s", l->labels[k], sfx[s]);
            qp_csv_str(w, col);
        }
    qp_csv_end_row(w);
    for (size_t t = 0; t < l->ntensors; t++) {
        qp_csv_int(w, (int64_t)t);
        qp_csv_str(w, l->names[t]);
        int b = qp_depth_block_of(l->names[t]);
        if (b >= 0)
            qp_csv_int(w, b);
        else
            qp_csv_str(w, NULL);
        for (size_t k = 1; k < l->nrungs; k++) {
            const struct qp_ladder_cell *c = qp_ladder_cell(l, t, k);
            if (!c->have) {
                for (int s = 0; s < 4; s++)
                    qp_csv_str(w, NULL);
                continue;
            }
            qp_csv_num(w, c->vs_first);
            qp_csv_num(w, c->vs_prev);
            if (c->lsb.valid) {
                qp_csv_num(w, c->lsb.max);
                qp_csv_int(w, (int64_t)c->lsb.mismatches);
            } else {
                qp_csv_str(w, NULL);
                qp_csv_str(w, NULL);
            }
        }
        qp_csv_end_row(w);
    }
}

enum qp_status qp_ladder_plot(const char *out, const char *title,
                              const struct qp_ladder *l, struct qp_plot **pending,
                              struct qp_error *err)
{
    size_t n = l->ntensors, ns = l->nrungs - 1;
    double *v = malloc((n * ns + 1) * sizeof *v);
    int *block = malloc((n + 1) * sizeof *block);
    size_t *marked = malloc((ns + 1) * sizeof *marked), nm = 0;
    size_t *mseries = malloc((ns + 1) * sizeof *mseries);
    struct qp_depth_series *series = calloc(ns + 1, sizeof *series);
    if (!v || !block || !marked || !series || !mseries) {
        free(mseries);
        free(v);
        free(block);
        free(marked);
        free(series);
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    }
    bool blocks = false;
    for (size_t t = 0; t < n; t++) {
        block[t] = qp_depth_block_of(l->names[t]);
        blocks |= block[t] >= 0;
    }
    for (size_t k = 1; k <= ns; k++) {
        series[k - 1].title = l->labels[k];
        series[k - 1].value = v + (k - 1) * n;
        for (size_t t = 0; t < n; t++) {
            const struct qp_ladder_cell *c = qp_ladder_cell(l, t, k);
            v[(k - 1) * n + t] = c->have ? c->vs_first : NAN;
        }
        if (l->jumps[k].found) {
            mseries[nm] = k - 1;
            marked[nm++] = l->jumps[k].tensor;
        }
    }
    struct qp_depth_plot p = {title, "SQNR vs the first rung (dB)", n,
                              (const char *const *)l->names,
                              blocks ? block : NULL, series,
                              ns > 8 ? 8 : ns, marked, nm, mseries};
    enum qp_status st = qp_plot_depth(out, &p, pending, err);
    free(v);
    free(block);
    free(marked);
    free(mseries);
    free(series);
    return st;
}
