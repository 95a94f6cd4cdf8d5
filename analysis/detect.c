/* analysis/detect.c: requantization flavor detection (analysis/detect.h). */
#include "analysis/detect.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/align.h"
#include "analysis/lsb.h"
#include "formats/dump.h"

void qp_detect_release(struct qp_detect *d)
{
    for (size_t i = 0; d->names && i < d->nnames; i++)
        free(d->names[i]);
    free(d->names);
    free(d->cand);
    free(d->order);
    *d = (struct qp_detect){0};
}

/* The device's tensors, aligned with the graph's values. */
struct device {
    struct qp_dump *dump;
    struct qp_tensor **by_value;  /* [n_values]: the device tensor, or NULL */
    long *slot;                   /* [n_values]: index into names, or -1 */
    bool *hit;                    /* [nnames * ncand]: exact */
};

static void device_release(const struct qp_graph *g, struct device *d)
{
    for (int v = 0; d->by_value && v < g->n_values; v++)
        qp_tensor_free(d->by_value[v]);
    free(d->by_value);
    free(d->slot);
    free(d->hit);
    qp_dump_close(d->dump);
}

static enum qp_status device_load(const struct qp_graph *g, const char *path,
                                  const char *map_path, struct device *d,
                                  struct qp_detect *out, struct qp_error *err)
{
    struct qp_align_map *map = NULL;
    struct qp_align al = {0};
    const char **vn = calloc((size_t)g->n_values + 1, sizeof *vn), **dn = NULL;
    d->by_value = calloc((size_t)g->n_values + 1, sizeof *d->by_value);
    d->slot = malloc(((size_t)g->n_values + 1) * sizeof *d->slot);
    enum qp_status st = vn && d->by_value && d->slot
                            ? qp_dump_open(path, QP_DUMP_AUTO, &d->dump, err)
                            : qp_fail(err, QP_E_NOMEM, "out of memory");
    if (!st && map_path)
        st = qp_align_map_load(map_path, &map, err);
    size_t nd = st ? 0 : qp_dump_count(d->dump);
    if (!st && !(dn = calloc(nd + 1, sizeof *dn)))
        st = qp_fail(err, QP_E_NOMEM, "out of memory");
    for (int v = 0; !st && v < g->n_values; v++) {
        vn[v] = g->values[v].name;
        d->slot[v] = -1;
    }
    for (size_t i = 0; !st && i < nd; i++)
        dn[i] = qp_dump_entry(d->dump, i)->name;
    if (!st)
        st = qp_align_names(vn, (size_t)g->n_values, dn, nd, map, &al, err);
    for (size_t i = 0; !st && i < al.npairs; i++) {
        int v = (int)al.pairs[i].ref;
        if (g->values[v].konst)
            continue;
        st = qp_dump_load(d->dump, al.pairs[i].test, &d->by_value[v], err);
    }
    /* slots in model order (graph inputs, then node outputs) */
    out->names = calloc((size_t)g->n_values + 1, sizeof *out->names);
    if (!st && !out->names)
        st = qp_fail(err, QP_E_NOMEM, "out of memory");
    for (int k = 0; !st && k < g->n_inputs; k++)
        if (d->by_value[g->inputs[k]]) {
            d->slot[g->inputs[k]] = (long)out->nnames;
            if (!(out->names[out->nnames++] = strdup(vn[g->inputs[k]])))
                st = qp_fail(err, QP_E_NOMEM, "out of memory");
        }
    for (int oi = 0; !st && oi < g->n_nodes; oi++) {
        const struct qp_node *n = &g->nodes[g->order[oi]];
        for (int k = 0; !st && k < n->n_out; k++) {
            int v = n->out[k];
            if (v < 0 || !d->by_value[v])
                continue;
            d->slot[v] = (long)out->nnames;
            if (!(out->names[out->nnames++] = strdup(vn[v])))
                st = qp_fail(err, QP_E_NOMEM, "out of memory");
        }
    }
    if (!st && !out->nnames)
        st = qp_fail(err, QP_E_NOTFOUND, "'%s': no tensor pairs up with the "
                     "model's values (see --map)", path);
    qp_align_release(&al);
    qp_align_map_free(map);
    free(vn);
    free(dn);
    return st;
}

struct compare {
    struct device *d;
    struct qp_detect_cand *c;
    size_t ci;
    size_t ncand;
    struct qp_detect *out;
};

static enum qp_status on_value(void *ctx, const struct qp_graph *g, int v,
                               const struct qp_tensor *t, struct qp_error *err)
{
    struct compare *c = ctx;
    const struct qp_tensor *dev = c->d->by_value[v];
    (void)g;
    if (!dev)
        return QP_OK;
    if (!qp_shape_equal(dev->ndim, dev->shape, t->ndim, t->shape)) {
        c->out->skipped++;
        return QP_OK;
    }
    /* codes in steps of the device's scale; a float device tensor against
     * our integers in ours */
    struct qp_lsb l;
    enum qp_status st = qp_lsb_applies(dev) ? qp_lsb_tensors(t, dev, &l, err)
                                            : qp_lsb_tensors(dev, t, &l, err);
    if (st)
        return st;
    struct qp_detect_cand *k = c->c;
    bool exact = l.valid ? l.mismatches == 0 : !memcmp(dev->data, t->data,
                                                       t->nbytes < dev->nbytes
                                                           ? t->nbytes : dev->nbytes);
    k->compared++;
    k->exact += exact;
    k->elements += qp_tensor_numel(t);
    k->mismatched += l.valid ? l.mismatches : exact ? 0 : qp_tensor_numel(t);
    if (l.valid && l.max > k->max_lsb)
        k->max_lsb = l.max;
    long slot = c->d->slot[v];
    if (!exact && (k->first_diff < 0 || slot < k->first_diff))
        k->first_diff = slot;
    c->d->hit[(size_t)slot * c->ncand + c->ci] = exact;
    return QP_OK;
}

static int cmp_cand(const void *a, const void *b, void *arg)
{
    const struct qp_detect_cand *c = arg;
    const struct qp_detect_cand *x = &c[*(const size_t *)a], *y = &c[*(const size_t *)b];
    if (x->failed != y->failed)
        return x->failed ? 1 : -1;
    if (x->exact != y->exact)
        return x->exact > y->exact ? -1 : 1;
    if (x->mismatched != y->mismatched)
        return x->mismatched < y->mismatched ? -1 : 1;
    return (*(const size_t *)a > *(const size_t *)b) -
           (*(const size_t *)a < *(const size_t *)b);
}

enum qp_status qp_detect_run(struct qp_session *s,
                             const struct qp_tensor *const *feed,
                             const char *device_path,
                             const struct qp_detect_opts *o,
                             struct qp_detect *out, struct qp_error *err)
{
    *out = (struct qp_detect){0};
    const struct qp_graph *g = qp_session_graph(s);
    struct device d = {0};
    enum qp_status st = device_load(g, device_path, o->map, &d, out, err);
    size_t nq = o->all_qa ? QP_QA_COUNT : 1;
    out->ncand = (size_t)QP_RQ_COUNT * nq;
    out->cand = calloc(out->ncand + 1, sizeof *out->cand);
    out->order = calloc(out->ncand + 1, sizeof *out->order);
    d.hit = calloc(out->nnames * out->ncand + 1, sizeof *d.hit);
    if (!st && (!out->cand || !out->order || !d.hit))
        st = qp_fail(err, QP_E_NOMEM, "out of memory");
    struct qp_tensor **outs = calloc((size_t)g->n_outputs + 1, sizeof *outs);
    if (!st && !outs)
        st = qp_fail(err, QP_E_NOMEM, "out of memory");
    for (size_t ci = 0; !st && ci < out->ncand; ci++) {
        struct qp_detect_cand *c = &out->cand[ci];
        c->flavor = (enum qp_rq_flavor)(ci / nq);
        c->qa_own = !o->all_qa;
        c->qa = o->all_qa ? (enum qp_qa_flavor)(ci % nq) : qp_qa_for_requant(c->flavor);
        c->qa_own |= c->qa == qp_qa_for_requant(c->flavor);
        c->first_diff = -1;
        out->order[ci] = ci;
        struct qp_session_cfg cfg = {.mode = QP_MODE_INT, .scheme = o->scheme,
            .recipe = o->recipe, .flavor = c->flavor, .flavor_given = true,
            .qa_given = o->all_qa, .qa = c->qa};
        struct qp_splan *p = NULL;
        struct qp_error ferr;
        if (qp_session_plan(s, &cfg, &p, &ferr)) {
            /* a flavor that cannot run the model (16-bit only, say) */
            c->failed = true;
            snprintf(c->why, sizeof c->why, "%.150s", ferr.msg);
            continue;
        }
        struct compare cc = {&d, c, ci, out->ncand, out};
        struct qp_session_run_opts ro = {.capture = "*", .on_capture = on_value,
                                         .capture_ctx = &cc};
        if (qp_session_run(s, p, feed, &ro, outs, NULL, &ferr)) {
            /* some flavors fail only when a kernel meets the model */
            size_t keep = out->skipped;
            *c = (struct qp_detect_cand){c->flavor, c->qa, c->qa_own, true, "",
                                         0, 0, 0, 0, 0, -1};
            snprintf(c->why, sizeof c->why, "%.150s", ferr.msg);
            for (size_t t = 0; t < out->nnames; t++)
                d.hit[t * out->ncand + ci] = false;
            out->skipped = keep;
        }
        for (int k = 0; k < g->n_outputs; k++) {
            qp_tensor_free(outs[k]);
            outs[k] = NULL;
        }
        qp_splan_free(p);
        qp_progress_report(o->progress, "detect", ci + 1, out->ncand);
    }
    if (!st)
        qsort_r(out->order, out->ncand, sizeof *out->order, cmp_cand, out->cand);
    out->all_miss = -1;
    for (size_t t = 0; !st && t < out->nnames && out->all_miss < 0; t++) {
        bool any = false;
        for (size_t ci = 0; ci < out->ncand; ci++)
            any |= d.hit[t * out->ncand + ci];
        if (!any)
            out->all_miss = (long)t;
    }
    free(outs);
    device_release(g, &d);
    return st;
}
