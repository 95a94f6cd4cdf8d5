/* The int mode's fused passes (model/qexec-fuse.h) on the real PP-OCRv4
 * detector, recognizer and classifier, for several schemes in a
 * fixed-point flavor (tflite-double) and a float one (ort): against the
 * node-by-node run (qp_exec_tune.no_fusion, each node through
 * qp_qplan_run_int as before fusion existed), every captured value has
 * the same bits when everything is captured, the graph outputs when
 * nothing is, and so do the values a partial glob captures (fused passes
 * then materialize only those); most table nodes must actually have run
 * inside another node's pass. */
#include <stdlib.h>

#include "model/exec.h"
#include "model/onnx-import.h"
#include "model/qplan.h"
#include "tests/test.h"
#include "tests/unit/ppocr-models.h"

#define MAX_CAPS 1024

/* Captured values as (name, bytes, hash). */
struct caps {
    int n;
    int value[MAX_CAPS];
    size_t nbytes[MAX_CAPS];
    uint64_t hash[MAX_CAPS];
    bool overflow;
};

static uint64_t fnv(const void *p, size_t n)
{
    const unsigned char *b = p;
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

static enum qp_status keep(void *ctx, const struct qp_graph *g, int v,
                           const struct qp_tensor *t, struct qp_error *err)
{
    (void)g;
    (void)err;
    struct caps *c = ctx;
    if (c->n == MAX_CAPS) {
        c->overflow = true;
        return QP_OK;
    }
    c->value[c->n] = v;
    c->nbytes[c->n] = t->nbytes;
    c->hash[c->n++] = fnv(t->data, t->nbytes) ^ (uint64_t)t->dtype << 56;
    return QP_OK;
}

struct setup {
    const char *model;
    struct qp_graph *g;
    struct qp_tensor *x, *calib;
    struct qp_qplan *p;
    struct qp_exec_hooks h;
    int *pass;
};

/* One int run of s (capture glob, NULL: none) into caps and outputs. */
static bool run(struct qp_test_ctx *ctx, struct setup *s, bool fused,
                const char *glob, struct caps *caps, uint64_t *out_hash)
{
    struct qp_error err;
    struct qp_tensor *outs[4] = {0};
    const struct qp_tensor *feed[1] = {s->x};
    struct qp_exec_tune t = {!fused, NULL, s->pass};
    struct qp_exec_opts o = {.capture = glob, .on_capture = glob ? keep : NULL,
        .capture_ctx = caps, .hooks = &s->h};
    caps->n = 0;
    for (int i = 0; i < s->g->n_nodes; i++)
        s->pass[i] = -1;
    if (qp_exec_run_tuned(s->g, feed, 1, &o, &t, outs, NULL, &err)) {
        qp_test_failf(ctx, __FILE__, __LINE__, "%s: %s", s->model, err.msg);
        return false;
    }
    for (int k = 0; k < s->g->n_outputs; k++) {
        out_hash[k] = fnv(outs[k]->data, outs[k]->nbytes);
        qp_tensor_free(outs[k]);
    }
    return !caps->overflow;
}

/* The captures of the fused run equal the reference's, in order. */
static void same_caps(struct qp_test_ctx *ctx, const struct setup *s,
                      const char *what, const struct caps *ref,
                      const struct caps *got)
{
    CHECK_INT(got->n, ref->n);
    for (int i = 0; i < ref->n && i < got->n; i++)
        if (got->value[i] != ref->value[i] || got->nbytes[i] != ref->nbytes[i] ||
            got->hash[i] != ref->hash[i]) {
            qp_test_failf(ctx, __FILE__, __LINE__, "%s %s: captured '%s' "
                          "differs from the node-by-node run", s->model, what,
                          s->g->values[ref->value[i]].name);
            return;
        }
}

static void fill(struct qp_tensor *x, unsigned m)
{
    float *p = x->data;
    for (size_t i = 0; i < qp_tensor_numel(x); i++)
        p[i] = (float)((i * 2654435761u) % m) / (float)(m / 2) - 1.0f;
}

/* Nodes that ran inside a pass another node started. */
static int fused_nodes(const struct setup *s)
{
    int n = 0;
    for (int i = 0; i < s->g->n_nodes; i++)
        n += s->pass[i] >= 0 && s->pass[i] != i;
    return n;
}

/* Counts of the checks made, for the report. */
struct tally {
    int configs, tensors;
};

static void check_config(struct qp_test_ctx *ctx, struct setup *s,
                         const char *glob, int min_fused, struct tally *ty)
{
    static struct caps ref, got;
    uint64_t ro[4], fo[4];
    if (!run(ctx, s, false, "*", &ref, ro) || !run(ctx, s, true, "*", &got, fo))
        return;
    same_caps(ctx, s, "capture '*'", &ref, &got);
    for (int k = 0; k < s->g->n_outputs; k++)
        CHECK(fo[k] == ro[k]);
    ty->tensors += got.n;
    /* nothing captured: the most fusion */
    if (!run(ctx, s, true, NULL, &got, fo))
        return;
    for (int k = 0; k < s->g->n_outputs; k++)
        if (fo[k] != ro[k])
            qp_test_failf(ctx, __FILE__, __LINE__, "%s: output %d differs "
                          "from the node-by-node run", s->model, k);
    if (fused_nodes(s) < min_fused)
        qp_test_failf(ctx, __FILE__, __LINE__, "%s: %d nodes fused, expected "
                      "at least %d", s->model, fused_nodes(s), min_fused);
    /* a partial glob: fused passes export exactly those */
    if (!run(ctx, s, false, glob, &ref, ro) || !run(ctx, s, true, glob, &got, fo))
        return;
    CHECK(ref.n >= 5);
    same_caps(ctx, s, glob, &ref, &got);
    ty->tensors += got.n;
    ty->configs++;
}

static bool setup(struct qp_test_ctx *ctx, struct setup *s, const char *scheme,
                  enum qp_rq_flavor flavor)
{
    struct qp_scheme sc;
    struct qp_error err;
    struct qp_qplan_opts o = {.mode = QP_MODE_INT, .scheme = &sc,
        .flavor = flavor};
    const struct qp_tensor *cf[1] = {s->calib};
    if (qp_scheme_parse(scheme, &sc, NULL, &err) ||
        qp_qplan_new(s->g, &o, &s->p, &err) || qp_qplan_calibrate(s->p, cf, &err) ||
        qp_qplan_finish(s->p, &err)) {
        qp_test_failf(ctx, __FILE__, __LINE__, "%s %s: %s", s->model, scheme,
                      err.msg);
        return false;
    }
    qp_qplan_hooks(s->p, &s->h);
    return true;
}

QP_TEST(qfuse_ppocr_int_bit_identical)
{
    char paths[PPOCR_COUNT][512];
    REQUIRE(ppocr_paths(ctx, paths));
    static const int64_t shapes[PPOCR_COUNT][4] = {
        {1, 3, 192, 256}, {1, 3, 48, 200}, {2, 3, 48, 192}};
    /* PaddlePaddle names: batch norms' outputs, the activations' ... */
    static const char *const globs[PPOCR_COUNT] = {"hardswish_*", "*swish_*",
                                                   "relu_*"};
    /* table nodes of the detector, recognizer, classifier: at least these
     * many must run inside another node's pass */
    static const int min_fused[PPOCR_COUNT] = {200, 200, 60};
    static const char *const schemes[] = {"w8c+a8t", "w8t+a8tz", "w4c+a8t"};
    static const enum qp_rq_flavor flavors[] = {QP_RQ_TFLITE_DOUBLE, QP_RQ_ORT};
    struct tally ty = {0, 0};
    for (int k = 0; k < PPOCR_COUNT; k++) {
        struct qp_error err;
        struct setup s = {paths[k], NULL, NULL, NULL, NULL, {0}, NULL};
        if (qp_model_load_onnx(paths[k], NULL, &s.g, &err)) {
            qp_test_failf(ctx, __FILE__, __LINE__, "%s", err.msg);
            continue;
        }
        const char *in = s.g->values[s.g->inputs[0]].name;
        s.pass = calloc((size_t)s.g->n_nodes, sizeof *s.pass);
        if (s.pass && s.g->n_outputs <= 4 &&
            !qp_tensor_new(in, QP_DTYPE_F32, 4, shapes[k], &s.x, &err) &&
            !qp_tensor_new(in, QP_DTYPE_F32, 4, shapes[k], &s.calib, &err)) {
            fill(s.x, 1000);
            fill(s.calib, 2001);
            for (size_t a = 0; a < sizeof schemes / sizeof *schemes; a++)
                for (size_t f = 0; f < sizeof flavors / sizeof *flavors; f++) {
                    if (setup(ctx, &s, schemes[a], flavors[f]))
                        check_config(ctx, &s, globs[k], min_fused[k], &ty);
                    qp_qplan_free(s.p);
                    s.p = NULL;
                }
        } else {
            CHECK(false);
        }
        free(s.pass);
        qp_tensor_free(s.x);
        qp_tensor_free(s.calib);
        qp_graph_free(s.g);
    }
    /* every model, scheme and flavor checked */
    CHECK_INT(ty.configs, PPOCR_COUNT * 3 * 2);
    printf("  qfuse: %d configurations, %d captured tensors compared bit for "
           "bit\n", ty.configs, ty.tensors);
}
