/* analysis/diff-dumps.c: two dumps on disk compared (analysis/diff-dumps.h). */
#include "analysis/diff-dumps.h"

#include <stdlib.h>

enum qp_status qp_diff_dumps_open(const char *ref_path, const char *test_path,
                                  const char *map_path,
                                  const struct qp_diff_opts *o,
                                  struct qp_diff_dumps *out,
                                  struct qp_error *err)
{
    *out = (struct qp_diff_dumps){0};
    const char **rn = NULL, **tn = NULL;
    enum qp_status st = qp_dump_open(ref_path, QP_DUMP_AUTO, &out->ref, err);
    if (!st)
        st = qp_dump_open(test_path, QP_DUMP_AUTO, &out->test, err);
    if (!st && map_path)
        st = qp_align_map_load(map_path, &out->map, err);
    if (!st) {
        size_t nr = qp_dump_count(out->ref), nt = qp_dump_count(out->test);
        rn = calloc(nr + 1, sizeof *rn);
        tn = calloc(nt + 1, sizeof *tn);
        if (!rn || !tn)
            st = qp_fail(err, QP_E_NOMEM, "out of memory");
        for (size_t i = 0; !st && i < nr; i++)
            rn[i] = qp_dump_entry(out->ref, i)->name;
        for (size_t i = 0; !st && i < nt; i++)
            tn[i] = qp_dump_entry(out->test, i)->name;
        if (!st)
            st = qp_align_names(rn, nr, tn, nt, out->map, &out->al, err);
    }
    free(rn);
    free(tn);
    if (!st)
        st = qp_diff_plan(out->ref, out->test, &out->al, o, &out->d, err);
    if (st)
        return st;
    const struct qp_align *al = &out->al;
    if (!out->d.nrows)
        out->problem = al->npairs ? "every pair was refused"
                                  : "no tensor names pair up (see --map)";
    else if (o->strict && (out->d.nrefused || al->nref_only || al->ntest_only))
        out->problem = "--strict: some tensors are unpaired or refused";
    else if (o->strict && al->nnotes)
        out->problem = "--strict: the alignment has notes (map entries naming "
                       "absent tensors, or ambiguities)";
    return QP_OK;
}

enum qp_status qp_diff_dumps_compute(struct qp_diff_dumps *dd,
                                     const struct qp_progress *progress,
                                     struct qp_error *err)
{
    return qp_diff_compute(dd->ref, dd->test, &dd->d, progress, err);
}

void qp_diff_dumps_release(struct qp_diff_dumps *dd)
{
    qp_diff_release(&dd->d);
    qp_align_release(&dd->al);
    qp_align_map_free(dd->map);
    qp_dump_close(dd->ref);
    qp_dump_close(dd->test);
    *dd = (struct qp_diff_dumps){0};
}
