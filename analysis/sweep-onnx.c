/* analysis/sweep-onnx.c: sweep rows of a graph model through one session
 * (analysis/sweep-onnx.h). */
#include "analysis/sweep-onnx.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/outcome.h"
#include "analysis/price.h"
#include "model/inputs.h"

struct onnx {
    struct qp_session *s;
    struct qp_tensor ***sets;
    size_t nsets;
    int output;
    unsigned char model[QP_SHA256_BYTES];
    int64_t repeat;
    uint64_t *macs;             /* [n_nodes] for the first set's shapes */
    struct qp_memo **ref, **row;/* [nsets] fp32 values, the last row's */
    struct qp_tensor **ref_out; /* [nsets] the scored output in fp32 */
    struct qp_metrics *vm;      /* [n_values] the row's per tensor */
};

static void onnx_free(void *self)
{
    struct onnx *x = self;
    if (!x)
        return;
    for (size_t k = 0; k < x->nsets; k++) {
        if (x->ref)
            qp_memo_free(x->ref[k]);
        if (x->row)
            qp_memo_free(x->row[k]);
        if (x->ref_out)
            qp_tensor_free(x->ref_out[k]);
        if (x->sets)
            qp_session_free_inputs(x->s, x->sets[k]);
    }
    free(x->ref);
    free(x->row);
    free(x->ref_out);
    free(x->sets);
    free(x->macs);
    free(x->vm);
    qp_session_free(x->s);
    free(x);
}

/* A tensor's dtype, shape and bytes. */
static void hash_tensor(struct qp_sha256 *h, const struct qp_tensor *t)
{
    qp_sha256_u64(h, (uint64_t)t->dtype);
    qp_sha256_u64(h, (uint64_t)t->ndim);
    for (int d = 0; d < t->ndim; d++)
        qp_sha256_u64(h, (uint64_t)t->shape[d]);
    qp_sha256_u64(h, t->nbytes);
    qp_sha256_update(h, t->data, t->nbytes);
}

static enum qp_status onnx_digest(void *self, struct qp_sha256 *h,
                                  struct qp_error *err)
{
    struct onnx *x = self;
    const struct qp_graph *g = qp_session_graph(x->s);
    (void)err;
    qp_sha256_update(h, x->model, sizeof x->model);
    qp_sha256_str(h, g->values[g->outputs[x->output]].name);
    size_t nc = qp_session_calib_count(x->s);
    qp_sha256_str(h, "calibration");
    qp_sha256_u64(h, nc);
    for (size_t k = 0; k < nc; k++)
        for (int i = 0; i < g->n_inputs; i++)
            hash_tensor(h, qp_session_calib_set(x->s, k)[i]);
    qp_sha256_str(h, "evaluation");
    qp_sha256_u64(h, x->nsets);
    for (size_t k = 0; k < x->nsets; k++)
        for (int i = 0; i < g->n_inputs; i++)
            hash_tensor(h, x->sets[k][i]);
    return QP_OK;
}

/* Runs plan p (NULL: fp32) on set k into memo m (recorded); *out gets the
 * scored output (the caller frees it). */
static enum qp_status run_set(struct onnx *x, const struct qp_splan *p, size_t k,
                              struct qp_memo *m, struct qp_tensor **out,
                              struct qp_error *err)
{
    const struct qp_graph *g = qp_session_graph(x->s);
    struct qp_tensor **outs = calloc((size_t)g->n_outputs + 1, sizeof *outs);
    if (!outs)
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    struct qp_session_run_opts ro = {.memo = m, .record = true, .no_fusion = true};
    enum qp_status st = qp_session_run(x->s, p, (const struct qp_tensor *const *)
                                       x->sets[k], &ro, outs, NULL, err);
    for (int j = 0; j < g->n_outputs; j++)
        if (j == x->output && !st)
            *out = outs[j];
        else
            qp_tensor_free(outs[j]);
    free(outs);
    return st;
}

/* Adds set k's tensors of the row's memo against fp32 into x->vm. */
static enum qp_status compare_tensors(struct onnx *x, size_t k,
                                      struct qp_error *err)
{
    const struct qp_graph *g = qp_session_graph(x->s);
    for (int v = 0; v < g->n_values; v++) {
        const struct qp_tensor *a = qp_memo_value(x->ref[k], v);
        const struct qp_tensor *b = qp_memo_value(x->row[k], v);
        if (g->values[v].konst || g->values[v].is_input || !a || !b ||
            !qp_dtype_traits(a->dtype)->is_float ||
            qp_tensor_numel(a) != qp_tensor_numel(b))
            continue;
        struct qp_metrics m;
        enum qp_status st = qp_metrics_tensors(a, b, &m, err);
        if (st)
            return qp_error_prefix(err, "tensor '%s': ", g->values[v].name);
        qp_metrics_merge(&x->vm[v], &m);
    }
    return QP_OK;
}

/* The tensor of lowest SQNR (the first of equals), unless all are +inf. */
static void worst_tensor(const struct onnx *x, struct qp_sweep_result *r)
{
    const struct qp_graph *g = qp_session_graph(x->s);
    int worst = -1;
    double lo = INFINITY;
    for (int v = 0; v < g->n_values; v++) {
        if (!x->vm[v].numel && !x->vm[v].nonfinite && !x->vm[v].ref_nonfinite)
            continue;
        double q = qp_metrics_sqnr_db(&x->vm[v]);
        if (q < lo || (isnan(q) && worst < 0)) {
            lo = q;
            worst = v;
        }
    }
    if (worst >= 0) {
        snprintf(r->worst, sizeof r->worst, "%s", g->values[worst].name);
        r->worst_sqnr_db = lo;
    }
}

/* Best of x->repeat plain forward passes on the first set, in ms. */
static enum qp_status timing(struct onnx *x, const struct qp_splan *p,
                             double *ms, struct qp_error *err)
{
    const struct qp_graph *g = qp_session_graph(x->s);
    struct qp_tensor **outs = calloc((size_t)g->n_outputs + 1, sizeof *outs);
    if (!outs)
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    enum qp_status st = QP_OK;
    double best = INFINITY;
    for (int64_t r = 0; !st && r < x->repeat; r++) {
        struct qp_session_run_stats rs;
        st = qp_session_run(x->s, p, (const struct qp_tensor *const *)x->sets[0],
                            NULL, outs, &rs, err);
        for (int j = 0; j < g->n_outputs; j++) {
            qp_tensor_free(outs[j]);
            outs[j] = NULL;
        }
        if (!st && rs.seconds < best)
            best = rs.seconds;
    }
    free(outs);
    *ms = x->repeat > 0 ? best * 1e3 : NAN;
    return st;
}

static enum qp_status onnx_eval(void *self, const struct qp_sweep_cfg *c,
                                struct qp_sweep_result *r, struct qp_error *err)
{
    struct onnx *x = self;
    const struct qp_graph *g = qp_session_graph(x->s);
    struct qp_splan *p = NULL;
    enum qp_status st = QP_OK;
    if (c->kind != QP_SWEEP_FP32) {
        struct qp_session_cfg cfg;
        qp_sweep_session_cfg(c, &cfg);
        st = qp_session_plan(x->s, &cfg, &p, err);
    }
    struct qp_outcome oc;
    qp_outcome_init(&oc);
    for (int v = 0; v < g->n_values; v++)
        qp_metrics_init(&x->vm[v]);
    for (size_t k = 0; !st && k < x->nsets; k++) {
        struct qp_tensor *out = NULL;
        st = run_set(x, p, k, x->row[k], &out, err);
        if (!st)
            st = qp_outcome_add(&oc, x->ref_out[k], out, err);
        if (!st)
            st = compare_tensors(x, k, err);
        qp_tensor_free(out);
    }
    if (!st) {
        r->sqnr_db = qp_outcome_sqnr(&oc);
        r->cosine = qp_outcome_cosine(&oc);
        r->kl = qp_outcome_kl(&oc);
        r->top1 = qp_outcome_top1(&oc);
        worst_tensor(x, r);
        st = timing(x, p, &r->ms_per_input, err);
    }
    if (!st) {
        struct qp_price pr;
        qp_price_plan(g, p ? qp_splan_qplan(p) : NULL, x->macs, &pr);
        r->weight_bytes = (double)pr.bytes;
        r->params = (double)pr.params;
        r->bitops = pr.bitops;
    }
    qp_splan_free(p);
    return st;
}

enum qp_status qp_sweep_onnx_new(struct qp_session *s, struct qp_tensor ***sets,
                                 size_t nsets, int output,
                                 const unsigned char model_digest[QP_SHA256_BYTES],
                                 int64_t repeat, struct qp_sweep_backend **out,
                                 struct qp_error *err)
{
    *out = NULL;
    const struct qp_graph *g = qp_session_graph(s);
    struct onnx *x = calloc(1, sizeof *x);
    struct qp_sweep_backend *b = calloc(1, sizeof *b);
    if (!x || !b) {
        free(x);
        free(b);
        for (size_t k = 0; k < nsets; k++)
            qp_session_free_inputs(s, sets[k]);
        free(sets);
        qp_session_free(s);
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    }
    *x = (struct onnx){s, sets, nsets, output, {0}, repeat, NULL, NULL, NULL,
                       NULL, NULL};
    memcpy(x->model, model_digest, QP_SHA256_BYTES);
    *b = (struct qp_sweep_backend){"onnx", x, onnx_digest, onnx_eval, onnx_free};
    enum qp_status st = QP_OK;
    if (!nsets || output < 0 || output >= g->n_outputs)
        st = qp_fail(err, QP_E_INVAL, "a sweep needs evaluation inputs and an "
                     "output of the model");
    x->macs = calloc((size_t)g->n_nodes + 1, sizeof *x->macs);
    x->ref = calloc(nsets + 1, sizeof *x->ref);
    x->row = calloc(nsets + 1, sizeof *x->row);
    x->ref_out = calloc(nsets + 1, sizeof *x->ref_out);
    x->vm = calloc((size_t)g->n_values + 1, sizeof *x->vm);
    if (!st && (!x->macs || !x->ref || !x->row || !x->ref_out || !x->vm))
        st = qp_fail(err, QP_E_NOMEM, "out of memory");
    if (!st)
        st = qp_session_node_macs(s, (const struct qp_tensor *const *)sets[0],
                                  x->macs, err);
    /* the fp32 references, every value kept */
    for (size_t k = 0; !st && k < nsets; k++) {
        if (!(st = qp_memo_new(s, &x->ref[k], err)))
            st = qp_memo_new(s, &x->row[k], err);
        if (!st)
            st = run_set(x, NULL, k, x->ref[k], &x->ref_out[k], err);
    }
    if (st) {
        qp_sweep_backend_free(b);
        return st;
    }
    *out = b;
    return QP_OK;
}

/* The index of the graph output named name (NULL: 0), or -1. */
static int output_index(const struct qp_graph *g, const char *name)
{
    for (int k = 0; name && k < g->n_outputs; k++)
        if (!strcmp(g->values[g->outputs[k]].name, name))
            return k;
    return name ? -1 : 0;
}

enum qp_status qp_sweep_onnx_open(const struct qp_sweep_src *src,
                                  struct qp_sweep_backend **out,
                                  struct qp_error *err)
{
    *out = NULL;
    if (!src->calib && !src->eval)
        return qp_fail(err, QP_E_INVAL, "'%s': a sweep needs --calib or --eval "
                       "inputs", src->model);
    unsigned char digest[QP_SHA256_BYTES];
    struct qp_sha256 h;
    qp_sha256_init(&h);
    enum qp_status st = qp_sha256_file(&h, src->model, err);
    if (st)
        return st;
    qp_sha256_final(&h, digest);
    struct qp_session *s;
    /* an int8 .tflite: its dequantized float model is the reference */
    struct qp_session_opts so = {.dequantize = true};
    if ((st = qp_session_open(src->model, &so, &s, err)))
        return st;
    const struct qp_graph *g = qp_session_graph(s);
    int output = output_index(g, src->output);
    struct qp_input_sets ev = {0};
    if (output < 0)
        st = qp_fail(err, QP_E_NOTFOUND, "'%s': no graph output named '%s'",
                     src->model, src->output);
    if (!st && src->calib)
        st = qp_session_add_calib(s, src->calib, NULL, err);
    if (!st)
        st = qp_input_sets_load(g, src->eval ? src->eval : src->calib, &ev, err);
    /* no calibration inputs: the evaluation inputs calibrate */
    for (size_t k = 0; !st && !src->calib && k < ev.n; k++) {
        struct qp_tensor **copy = calloc((size_t)g->n_inputs + 1, sizeof *copy);
        if (!copy)
            st = qp_fail(err, QP_E_NOMEM, "out of memory");
        for (int i = 0; !st && i < g->n_inputs; i++)
            st = qp_tensor_clone(ev.set[k][i], &copy[i], err);
        if (!st)
            st = qp_session_add_calib_feed(s, copy, err);
        else if (copy)
            qp_session_free_inputs(s, copy);
    }
    if (st) {
        qp_input_sets_release(g, &ev);
        qp_session_free(s);
        return st;
    }
    return qp_sweep_onnx_new(s, ev.set, ev.n, output, digest, src->repeat, out, err);
}
