/* model/session.c: loading, calibration inputs, observers and plans of a
 * session (model/session.h). Runs and memos are in model/session-run.c. */
#include "model/session-impl.h"

#include <stdlib.h>
#include <string.h>

#include "core/fileio.h"
#include "model/infer.h"
#include "quant/rtn.h"
#include "model/inputs.h"
#include "model/llama-import.h"
#include "model/onnx-import.h"
#include "model/qdq.h"
#include "model/tflite-import.h"

/* ---- the session ---------------------------------------------------------- */

/* A TFLite graph computing on integers somewhere (an integer activation). */
static bool tfl_quantized(const struct qp_graph *g)
{
    for (int v = 0; v < g->n_values; v++)
        if (!g->values[v].konst && g->values[v].typed &&
            !qp_dtype_traits(g->values[v].dtype)->is_float)
            return true;
    return false;
}

enum qp_status qp_session_open(const char *path,
                               const struct qp_session_opts *o,
                               struct qp_session **out, struct qp_error *err)
{
    *out = NULL;
    struct qp_import_opts io = {o && o->keep_bn, false};
    struct qp_graph *g;
    bool tfl = qp_str_ends_with(path, ".tflite");
    struct qp_tflite_opts to = {o ? o->tfl_flavor : QP_TFL_MICRO,
                                o && o->dequantize};
    enum qp_status st = tfl ? qp_model_load_tflite(path, &to, &g, err)
                        : qp_llama_is_model_dir(path)
                            ? qp_llama_load(path, &g, NULL, err)
                            : qp_model_load_onnx(path, &io, &g, err);
    if (!st)
        st = qp_session_new(g, path, out, err);
    if (!st && tfl && !to.dequantize)
        (*out)->tfl_int = tfl_quantized(g);
    return st;
}

enum qp_status qp_session_new(struct qp_graph *g, const char *name,
                              struct qp_session **out, struct qp_error *err)
{
    *out = NULL;
    struct qp_session *s = calloc(1, sizeof *s);
    if (!s || !(s->path = strdup(name ? name : "model"))) {
        free(s);
        qp_graph_free(g);
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    }
    s->g = g;
    enum qp_status st = qp_wcache_new(&s->wc, err);
    if (!st)
        st = qp_exec_buffers_new(&s->buf, err);
    if (!st && !(s->f32 = calloc((size_t)s->g->n_values + 1, sizeof *s->f32)))
        st = qp_fail(err, QP_E_NOMEM, "out of memory");
    if (st) {
        qp_session_free(s);
        return st;
    }
    *out = s;
    return QP_OK;
}

void qp_session_free(struct qp_session *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->ncalib; i++)
        qp_inputs_free(s->g, s->calib[i]);
    free(s->calib);
    for (size_t i = 0; i < s->nobs; i++)
        qp_observer_free(s->obs[i].obs);
    free(s->obs);
    qp_wcache_free(s->wc);
    qp_exec_buffers_free(s->buf);
    free(s->f32);
    qp_graph_free(s->g);
    free(s->path);
    free(s);
}

enum qp_status qp_session_node_macs(const struct qp_session *s,
                                    const struct qp_tensor *const *feed,
                                    uint64_t *macs, struct qp_error *err)
{
    const struct qp_graph *g = s->g;
    struct qp_tdesc *in = calloc((size_t)g->n_inputs + 1, sizeof *in);
    struct qp_tdesc *d = calloc((size_t)g->n_values + 1, sizeof *d);
    bool *known = calloc((size_t)g->n_values + 1, sizeof *known);
    enum qp_status st = in && d && known ? QP_OK
                                         : qp_fail(err, QP_E_NOMEM, "out of memory");
    for (int i = 0; !st && i < g->n_inputs; i++)
        qp_tdesc_of(feed[i], &in[i]);
    if (!st)
        st = qp_graph_infer(g, in, d, known, err);
    if (!st)
        qp_graph_node_macs(g, d, known, macs);
    free(in);
    free(d);
    free(known);
    return st;
}

enum qp_status qp_session_weight_bytes(struct qp_session *s, int node,
                                       const struct qp_wscheme *ws, size_t *out,
                                       struct qp_error *err)
{
    enum qp_wlayout layout;
    if (!qp_node_weighted(s->g, node, &layout))
        return qp_fail(err, QP_E_INVAL, "node %d has no weight", node);
    int wv = s->g->nodes[node].in[1];
    if (!ws) {
        *out = qp_tensor_numel(s->g->values[wv].konst) * 4;
        return QP_OK;
    }
    /* a GPTQ weight costs what RTN on its grid costs, plus its g_idx */
    struct qp_wscheme grid = *ws;
    size_t extra = 0;
    if (ws->algo == QP_WALGO_GPTQ) {
        const struct qp_tensor *w = s->g->values[wv].konst;
        int oa, ia;
        qp_wlayout_axes(layout, w->ndim, &oa, &ia);
        if (ws->gptq.act_order && !ws->gptq.static_groups &&
            ws->gran == QP_GRAN_GROUP && oa >= 0)
            extra = qp_tensor_numel(w) / (size_t)w->shape[oa] * sizeof(int32_t);
        grid.algo = QP_WALGO_RTN;
        grid.gptq = (struct qp_gptq_options){0};
    }
    struct qp_wquant_opts o = {QP_ROUND_HALF_AWAY, layout};
    const struct qp_wquant *wq;
    enum qp_status st = qp_wcache_get(s->wc, s->g, wv, &grid, &o, false, &wq,
                                      err);
    if (!st)
        *out = qp_rtn_bytes(wq->q) + extra;
    return st;
}

bool qp_session_own_quant(const struct qp_session *s)
{
    return s->tfl_int || qp_qdq_model(s->g);
}

const struct qp_graph *qp_session_graph(const struct qp_session *s)
{
    return s->g;
}

const char *qp_session_path(const struct qp_session *s)
{
    return s->path;
}

struct qp_session_stats qp_session_stats(const struct qp_session *s)
{
    struct qp_session_stats st = s->stats;
    struct qp_wcache_stats w = qp_wcache_stats(s->wc);
    st.weights_made = w.made;
    st.weights_reused = w.hits;
    return st;
}

/* ---- inputs ------------------------------------------------------------------ */

enum qp_status qp_session_load_inputs(const struct qp_session *s,
                                      const char *const *specs, int n,
                                      struct qp_tensor ***feed,
                                      struct qp_error *err)
{
    enum qp_status st = qp_inputs_load(s->g, specs, n, feed, err);
    if (st == QP_E_SHAPE) /* a file that does not fit this model */
        qp_error_in_file(err, s->path);
    return st;
}

void qp_session_free_inputs(const struct qp_session *s, struct qp_tensor **feed)
{
    qp_inputs_free(s->g, feed);
}

enum qp_status qp_session_add_calib_feed(struct qp_session *s,
                                         struct qp_tensor **feed,
                                         struct qp_error *err)
{
    struct qp_tensor ***c = realloc(s->calib, (s->ncalib + 1) * sizeof *c);
    if (!c) {
        qp_inputs_free(s->g, feed);
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    }
    s->calib = c;
    s->calib[s->ncalib++] = feed;
    s->calib_hashed = false; /* GPTQ weights made so far are for the others */
    /* observers fed so far miss the new set: feed them again from scratch */
    for (size_t i = 0; i < s->nobs; i++)
        qp_observer_free(s->obs[i].obs);
    s->nobs = 0;
    return QP_OK;
}

enum qp_status qp_session_add_calib(struct qp_session *s, const char *path,
                                    size_t *added, struct qp_error *err)
{
    char **files;
    size_t n;
    if (added)
        *added = 0;
    enum qp_status st = qp_inputs_files(path, &files, &n, err);
    for (size_t i = 0; !st && i < n; i++) {
        struct qp_tensor **feed;
        const char *spec[1] = {files[i]};
        if ((st = qp_session_load_inputs(s, spec, 1, &feed, err)) ||
            (st = qp_session_add_calib_feed(s, feed, err)))
            break;
        if (added)
            (*added)++;
    }
    qp_inputs_files_free(files, n);
    return st;
}

enum qp_status qp_session_open_analysis(const char *model, const char *calib,
                                        const char *eval, struct qp_session **s,
                                        struct qp_input_sets *ev,
                                        struct qp_error *err)
{
    /* an int8 .tflite: its dequantized float model is the reference */
    struct qp_session_opts so = {.dequantize = true};
    *s = NULL;
    enum qp_status st = qp_session_open(model, &so, s, err);
    if (!st)
        st = qp_session_add_calib(*s, calib, NULL, err);
    if (!st && eval)
        st = qp_input_sets_load(qp_session_graph(*s), eval, ev, err);
    return st;
}

size_t qp_session_calib_count(const struct qp_session *s)
{
    return s->ncalib;
}

struct qp_tensor *const *qp_session_calib_set(const struct qp_session *s,
                                              size_t i)
{
    return i < s->ncalib ? s->calib[i] : NULL;
}

/* ---- observers --------------------------------------------------------------- */

static bool same_method(const struct qp_observer_opts *a,
                        const struct qp_observer_opts *b)
{
    return a->method == b->method && a->pct == b->pct && a->ema_c == b->ema_c &&
           a->bins == b->bins;
}

static struct obs_entry *find_obs(struct qp_session *s, int v,
                                  const struct qp_observer_opts *o)
{
    for (size_t i = 0; i < s->nobs; i++)
        if (s->obs[i].value == v && same_method(&s->obs[i].opts, o))
            return &s->obs[i];
    return NULL;
}

/* What one calibration pass feeds: per value, the observers still empty. */
struct calib_pass {
    struct qp_session *s;
    size_t first;  /* observers [first, nobs) are being fed */
};

static enum qp_status calib_capture(void *ctx, const struct qp_graph *g, int v,
                                    const struct qp_tensor *t,
                                    struct qp_error *err)
{
    struct calib_pass *cp = ctx;
    struct qp_session *s = cp->s;
    const struct qp_value *val = &g->values[v];
    bool act = !val->konst && (val->producer >= 0 || val->is_input);
    if (t->dtype != QP_DTYPE_F32 || !act)
        return QP_OK;
    s->f32[v] = true;
    for (size_t i = cp->first; i < s->nobs; i++)
        if (s->obs[i].value == v) {
            enum qp_status st = qp_observer_add(s->obs[i].obs, t->data,
                                                qp_tensor_numel(t), err);
            if (st)
                return st;
        }
    return QP_OK;
}

/* One fp32 run over every calibration set, feeding observers
 * [first, nobs) and learning which values are float activations. */
static enum qp_status calib_run(struct qp_session *s, size_t first,
                                struct qp_error *err)
{
    struct calib_pass cp = {s, first};
    const struct qp_graph *g = s->g;
    struct qp_tensor **outs = calloc((size_t)g->n_outputs + 1, sizeof *outs);
    if (!outs)
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    enum qp_status st = QP_OK;
    for (size_t i = 0; !st && i < s->ncalib; i++) {
        struct qp_exec_opts eo = {.capture = "*", .on_capture = calib_capture,
                                  .capture_ctx = &cp};
        st = qp_exec_run(g, (const struct qp_tensor *const *)s->calib[i],
                         g->n_inputs, &eo, outs, NULL, err);
        for (int k = 0; k < g->n_outputs; k++) {
            qp_tensor_free(outs[k]);
            outs[k] = NULL;
        }
        if (st)
            qp_error_prefix(err, "calibration input %zu: ", i + 1);
    }
    free(outs);
    if (!st) {
        s->stats.calib_passes++;
        s->f32_known = true;
    }
    return st;
}

/* A new empty observer of value v with method oo. */
static enum qp_status add_observer(struct qp_session *s, int v,
                                   const struct qp_observer_opts *oo,
                                   struct qp_error *err)
{
    if (s->nobs == s->cap_obs) {
        size_t cap = s->cap_obs ? 2 * s->cap_obs : 64;
        struct obs_entry *e = realloc(s->obs, cap * sizeof *e);
        if (!e)
            return qp_fail(err, QP_E_NOMEM, "out of memory");
        s->obs = e;
        s->cap_obs = cap;
    }
    struct obs_entry *e = &s->obs[s->nobs];
    e->value = v;
    e->opts = *oo;
    enum qp_status st = qp_observer_new(oo, &e->obs, err);
    if (!st) {
        s->nobs++;
        s->stats.observers++;
    }
    return st;
}

/* Observers for the static activations of plan p (all candidates before
 * the float activations are known: the first pass tells and feeds them),
 * then one calibration pass feeding the new ones. */
static enum qp_status ensure_observers(struct qp_session *s,
                                       const struct qp_qplan *p,
                                       struct qp_error *err)
{
    const struct qp_graph *g = s->g;
    size_t first = s->nobs;
    enum qp_status st = QP_OK;
    for (int v = 0; !st && v < g->n_values; v++) {
        const struct qp_value *val = &g->values[v];
        bool act = !val->konst && (val->producer >= 0 || val->is_input);
        bool want = s->f32_known ? qp_qplan_needs_range(p, v)
                                 : act && p->v[v].has_as && !p->v[v].as.dynamic;
        if (!want)
            continue;
        struct qp_observer_opts oo = qp_observer_opts_from_scheme(&p->v[v].as);
        if (!find_obs(s, v, &oo))
            st = add_observer(s, v, &oo, err);
    }
    if (!st && (s->nobs > first || !s->f32_known))
        st = calib_run(s, first, err);
    return st;
}

static enum qp_status session_range(void *ctx, int v, const struct qp_qval *q,
                                    enum qp_round r, float *lo, float *hi,
                                    struct qp_error *err)
{
    struct qp_session *s = ctx;
    struct qp_observer_opts oo = qp_observer_opts_from_scheme(&q->as);
    struct obs_entry *e = find_obs(s, v, &oo);
    if (!e)
        return qp_fail(err, QP_E_INVAL, "no observer");
    return qp_observer_range(e->obs, &q->as.f, r, lo, hi, err);
}

/* ---- plans ------------------------------------------------------------------- */

void qp_splan_free(struct qp_splan *p)
{
    if (!p)
        return;
    qp_qplan_free(p->q);
    qp_qdq_free(p->qdq);
    free(p);
}

enum qp_run_mode qp_splan_mode(const struct qp_splan *p)
{
    return p->mode;
}

const struct qp_qplan *qp_splan_qplan(const struct qp_splan *p)
{
    return p->q;
}

int qp_splan_qdq_fused(const struct qp_splan *p)
{
    return p->qdq ? qp_qdq_fused(p->qdq) : 0;
}

/* For a plan with '@gptq' layers: the assignment it runs (fallbacks to
 * RTN applied) and the GPTQ weights' keys, with the weights made; both
 * NULL when the plan has no GPTQ layer. Owned by the caller. */
static enum qp_status plan_gptq(struct qp_session *s,
                                const struct qp_session_cfg *cfg,
                                enum qp_rq_flavor f, struct qp_qassign **ga,
                                uint64_t **keys, struct qp_error *err)
{
    *ga = NULL;
    *keys = NULL;
    const struct qp_qassign *a = cfg->assign;
    struct qp_qassign *own = NULL;
    enum qp_status st = QP_OK;
    if (!a && cfg->scheme && cfg->scheme->w.algo != QP_WALGO_GPTQ)
        return QP_OK;
    if (!a)
        st = cfg->scheme ? qp_qassign_uniform(s->g, cfg->scheme, &own, err)
                         : qp_qassign_recipe(s->g, cfg->recipe, &own, NULL, err);
    if (!a)
        a = own;
    if (!st && qp_session_gptq_any(a)) {
        st = qp_session_gptq_assign(s, a, ga, err);
        if (!st && !(*keys = calloc((size_t)s->g->n_nodes + 1, sizeof **keys)))
            st = qp_fail(err, QP_E_NOMEM, "out of memory");
        if (!st)
            st = qp_session_gptq(s, *ga, qp_qplan_weight_round(f), *keys, NULL,
                                 err);
    }
    qp_qassign_free(own);
    if (st) {
        qp_qassign_free(*ga);
        free(*keys);
        *ga = NULL;
        *keys = NULL;
    }
    return st;
}

enum qp_status qp_session_plan(struct qp_session *s,
                               const struct qp_session_cfg *cfg,
                               struct qp_splan **out, struct qp_error *err)
{
    *out = NULL;
    struct qp_splan *p = calloc(1, sizeof *p);
    if (!p)
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    p->mode = cfg->mode;
    enum qp_status st = QP_OK;
    if (cfg->mode != QP_MODE_FAKE && cfg->mode != QP_MODE_INT) {
        st = qp_fail(err, QP_E_INVAL, "a plan is for the fake or int mode");
    } else if (s->tfl_int && (cfg->scheme || cfg->recipe || cfg->assign ||
                              cfg->flavor_given || cfg->mode != QP_MODE_INT)) {
        st = qp_fail(err, QP_E_INVAL, "'%s': a quantized TFLite model runs its "
                     "own integer arithmetic (the int mode, its flavor chosen "
                     "when the model is opened); schemes, recipes and the fake "
                     "mode apply to its dequantized float model, "
                     "opened as such", s->path);
    } else if (s->tfl_int) {
        ; /* the plain executor runs TFLite's integer kernels */
    } else if (!cfg->scheme && !cfg->recipe && !cfg->assign) {
        if (cfg->mode == QP_MODE_INT && qp_qdq_model(s->g)) {
            enum qp_rq_flavor f = cfg->flavor_given ? cfg->flavor : QP_RQ_ORT;
            st = qp_qdq_new(s->g, f, &p->qdq, err);
        } else {
            st = qp_fail(err, QP_E_INVAL, "mode %s needs a scheme or a recipe%s",
                         qp_run_mode_name(cfg->mode),
                         qp_qdq_model(s->g) ? " (the fp32 run of this QDQ model "
                         "already simulates its quantization)" : "");
        }
    } else {
        struct qp_qplan_opts o = {.mode = cfg->mode, .scheme = cfg->scheme,
            .recipe = cfg->recipe, .flavor = QP_RQ_TFLITE_DOUBLE,
            .assign = cfg->assign, .wcache = s->wc, .qa_given = cfg->qa_given,
            .qa = cfg->qa};
        if (cfg->recipe && cfg->recipe->requant)
            o.flavor = cfg->recipe->flavor;
        if (cfg->flavor_given)
            o.flavor = cfg->flavor;
        struct qp_qassign *ga;
        uint64_t *keys;
        st = plan_gptq(s, cfg, o.flavor, &ga, &keys, err);
        if (!st && ga) {
            o.assign = ga;
            o.scheme = NULL;
            o.recipe = NULL;
            o.wkey = keys;
        }
        if (!st && (st = qp_qplan_new(s->g, &o, &p->q, err)))
            qp_error_in_file(err, s->path); /* the model's weights, quantized */
        qp_qassign_free(ga);
        free(keys);
        if (!st && p->q->has_acts && !s->ncalib)
            st = qp_fail(err, QP_E_INVAL, "'%s': quantized activations need "
                         "calibration inputs", s->path);
        /* before the first pass nobody knows which values are float
         * activations: observers for every candidate, fed by that pass */
        if (!st && p->q->has_acts && !s->f32_known)
            st = ensure_observers(s, p->q, err);
        if (!st)
            st = qp_qplan_resolve(p->q, s->f32, err);
        if (!st && p->q->has_acts)
            st = ensure_observers(s, p->q, err);
        if (!st)
            st = qp_qplan_finish_ranges(p->q, session_range, s, err);
    }
    if (st) {
        qp_splan_free(p);
        return st;
    }
    *out = p;
    return QP_OK;
}
