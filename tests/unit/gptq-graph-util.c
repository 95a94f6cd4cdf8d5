/* tests/unit/gptq-graph-util.c: the GPTQ pipeline tests' model, inputs
 * and log (tests/unit/gptq-graph-util.h). */
#include "tests/unit/gptq-graph-util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/unit/gptq-test-util.h"
#include "tests/unit/test-qdq-model.h"

static const char *const wname[GG_LAYERS] = {"WA", "WB", "WC", "WD"};

/* A weight of normals (scale 0.2) with every 11th element an outlier. */
static void weight(struct pbe *g, const char *name, int nd, const int64_t *dims,
                   uint64_t seed)
{
    size_t n = 1;
    for (int d = 0; d < nd; d++)
        n *= (size_t)dims[d];
    float *w = malloc(n * sizeof *w);
    for (size_t i = 0; i < n; i++)
        w[i] = (float)(gt_normal(&seed) * (i % 11 == 3 ? 0.9 : 0.2));
    qm_init(g, name, T_F32, nd, dims, w, n * sizeof *w);
    free(w);
}

char *gg_model(struct qp_test_ctx *ctx)
{
    struct pbe g = {0}, m;
    pb_value(&g, G_INPUT, "x", T_F32, (const int64_t[]){2, 4, 6, 6}, 4);
    pb_value(&g, G_OUTPUT, "y", T_F32, (const int64_t[]){72, 7}, 2);
    weight(&g, "WA", 4, (const int64_t[]){12, 4, 3, 3}, 11);
    weight(&g, "WB", 4, (const int64_t[]){12, 6, 3, 3}, 12);
    weight(&g, "WC", 2, (const int64_t[]){12, 10}, 13);
    weight(&g, "WD", 2, (const int64_t[]){7, 10}, 14);
    int64_t shape[2] = {-1, 10};
    qm_init(&g, "shape", 7, 1, (const int64_t[]){2}, shape, sizeof shape);
    qm_node(&g, "Conv", "x,WA", "a", "is:pads=1,1,1,1");
    qm_node(&g, "Relu", "a", "ar", NULL);
    qm_node(&g, "Conv", "ar,WB", "b", "is:pads=1,1,1,1;i:group=2");
    qm_node(&g, "Relu", "b", "br", NULL);
    qm_node(&g, "Transpose", "br", "bt", "is:perm=0,2,3,1");
    qm_node(&g, "MatMul", "bt,WC", "c", NULL);
    qm_node(&g, "Relu", "c", "cr", NULL);
    qm_node(&g, "Reshape", "cr,shape", "cf", NULL);
    qm_node(&g, "Gemm", "cf,WD", "y", "i:transB=1");
    qm_model(&g, &m);
    char *path = qp_test_path(ctx, "gg.onnx");
    if (!path || !qp_test_write_file(path, m.p, m.n)) {
        qp_test_failf(ctx, __FILE__, __LINE__, "cannot write the model");
        free(path);
        path = NULL;
    }
    free(m.p);
    return path;
}

struct qp_tensor **gg_input(unsigned seed, bool nan)
{
    struct qp_tensor **feed = calloc(1, sizeof *feed);
    struct qp_error err;
    int64_t shape[4] = {2, 4, 6, 6};
    if (!feed || qp_tensor_new("x", QP_DTYPE_F32, 4, shape, &feed[0], &err)) {
        free(feed);
        return NULL;
    }
    float *x = feed[0]->data;
    uint64_t s = seed * 7919u + 1;
    for (int n = 0; n < 2; n++)
        for (int p = 0; p < 36; p++) {
            double common = gt_normal(&s);
            for (int c = 0; c < 4; c++)
                x[(n * 4 + c) * 36 + p] =
                    (float)(0.8 * common + (0.3 + 0.6 * c) * gt_normal(&s));
        }
    if (nan)
        x[77] = NAN;
    return feed;
}

struct qp_session *gg_session(struct qp_test_ctx *ctx, const char *path, int n)
{
    struct qp_error err;
    struct qp_session *s = NULL;
    enum qp_status st = path ? qp_session_open(path, NULL, &s, &err)
                             : qp_fail(&err, QP_E_INVAL, "no model");
    for (int i = 1; !st && i <= n; i++)
        st = qp_session_add_calib_feed(s, gg_input((unsigned)i, false), &err);
    if (st) {
        qp_test_failf(ctx, __FILE__, __LINE__, "session: %s", err.msg);
        qp_session_free(s);
        return NULL;
    }
    return s;
}

int gg_node(const struct qp_graph *g, int l)
{
    for (int i = 0; i < g->n_nodes; i++)
        if (g->nodes[i].n_in > 1 && g->nodes[i].in[1] >= 0 &&
            !strcmp(g->values[g->nodes[i].in[1]].name, wname[l]))
            return i;
    return -1;
}

static enum qp_status log_layer(void *ctx, const struct qp_gptq_graph_layer *l,
                                struct qp_error *err)
{
    (void)err;
    struct gg_log *log = ctx;
    for (int k = 0; k < GG_LAYERS; k++)
        if (gg_node(log->g, k) == l->node) {
            log->made[k]++;
            log->out_err[k] = l->res->out_err;
            log->rtn_out_err[k] = l->res->rtn_out_err;
            log->few_tokens[k] = l->res->few_tokens;
        }
    return QP_OK;
}

static void log_fallback(void *ctx, int node, const char *why)
{
    (void)node;
    (void)why;
    ((struct gg_log *)ctx)->fallbacks++;
}

void gg_log_attach(struct gg_log *log, struct qp_session *s, bool fp32_inputs)
{
    memset(log, 0, sizeof *log);
    log->g = qp_session_graph(s);
    struct qp_session_gptq_opts o = {fp32_inputs, NULL, log_layer, log_fallback,
                                     log};
    qp_session_set_gptq(s, &o);
}

struct qp_splan *gg_plan(struct qp_test_ctx *ctx, struct qp_session *s,
                         const char *scheme, enum qp_run_mode mode)
{
    struct qp_error err;
    struct qp_scheme sc;
    struct qp_splan *p = NULL;
    enum qp_status st = qp_scheme_parse(scheme, &sc, NULL, &err);
    struct qp_session_cfg cfg = {.mode = mode, .scheme = &sc,
                                 .flavor = QP_RQ_TFLITE_DOUBLE};
    if (!st)
        st = qp_session_plan(s, &cfg, &p, &err);
    if (st)
        qp_test_failf(ctx, __FILE__, __LINE__, "plan '%s': %s", scheme, err.msg);
    return p;
}

const struct qp_tensor *gg_fake(const struct qp_splan *p, int l)
{
    const struct qp_qplan *q = qp_splan_qplan(p);
    int i = gg_node(q->g, l);
    return i >= 0 ? q->n[i].w_fake : NULL;
}

bool gg_same(const struct qp_tensor *a, const struct qp_tensor *b)
{
    return a && b && a->nbytes == b->nbytes && !memcmp(a->data, b->data, a->nbytes);
}
