/* The int mode's fused passes under the session's memo (model/session.h):
 * a memo recorded by a fused run lacks the values its passes never
 * materialized; a later run of a plan that differs in one layer, reusing
 * that memo, must recompute what it lacks, skip what it has, and give
 * every captured value the bits of a fresh node-by-node run. On the real
 * PP-OCRv4 classifier and detector. */
#include <stdlib.h>

#include "model/session.h"
#include "tests/test.h"
#include "tests/unit/ppocr-models.h"

#define MAX_CAPS 1024

struct caps {
    int n;
    int value[MAX_CAPS];
    uint64_t hash[MAX_CAPS];
};

static uint64_t fnv(const void *p, size_t n)
{
    const unsigned char *b = p;
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

static enum qp_status keep(void *ctx, const struct qp_graph *g, int v,
                           const struct qp_tensor *t, struct qp_error *err)
{
    (void)g;
    (void)err;
    struct caps *c = ctx;
    if (c->n < MAX_CAPS) {
        c->value[c->n] = v;
        c->hash[c->n++] = fnv(t->data, t->nbytes) ^ (uint64_t)t->dtype << 56;
    }
    return QP_OK;
}

/* One run of plan p (capture everything into caps when given). */
static bool run(struct qp_test_ctx *ctx, struct qp_session *s,
                const struct qp_splan *p, struct qp_tensor **feed,
                struct qp_memo *m, bool no_fusion, struct caps *caps,
                struct qp_session_run_stats *rs)
{
    struct qp_error err;
    struct qp_tensor *out[4] = {0};
    struct qp_session_run_opts o = {.capture = caps ? "*" : NULL,
        .on_capture = caps ? keep : NULL, .capture_ctx = caps, .memo = m,
        .record = m != NULL, .no_fusion = no_fusion};
    if (caps)
        caps->n = 0;
    enum qp_status st = qp_session_run(s, p, (const struct qp_tensor *const *)feed,
                                       &o, out, rs, &err);
    if (st)
        qp_test_failf(ctx, __FILE__, __LINE__, "run: %s", err.msg);
    for (int k = 0; k < 4; k++)
        qp_tensor_free(out[k]);
    return !st;
}

/* The n-th Conv with a quantized weight in the order, or -1. */
static int nth_conv(const struct qp_graph *g, const struct qp_qassign *a, int n)
{
    for (int i = 0; i < g->n_nodes; i++) {
        int node = g->order[i];
        if (a->wq[node] && !strcmp(g->nodes[node].op_type, "Conv") && n-- == 0)
            return node;
    }
    return -1;
}

static void check_model(struct qp_test_ctx *ctx, const char *path,
                        const int64_t *shape, enum qp_rq_flavor flavor)
{
    struct qp_error err;
    struct qp_session *s;
    REQUIRE_OK(qp_session_open(path, NULL, &s, &err), &err);
    const struct qp_graph *g = qp_session_graph(s);
    struct qp_tensor **calib = calloc(1, sizeof *calib);
    struct qp_tensor **feed = calloc(1, sizeof *feed);
    const char *in = g->values[g->inputs[0]].name;
    REQUIRE(calib && feed);
    REQUIRE_OK(qp_tensor_new(in, QP_DTYPE_F32, 4, shape, &calib[0], &err), &err);
    REQUIRE_OK(qp_tensor_new(in, QP_DTYPE_F32, 4, shape, &feed[0], &err), &err);
    for (size_t i = 0; i < qp_tensor_numel(feed[0]); i++) {
        ((float *)calib[0]->data)[i] = (float)((i * 2654435761u) % 2001) / 1000.0f - 1.0f;
        ((float *)feed[0]->data)[i] = (float)((i * 40503u) % 1000) / 500.0f - 1.0f;
    }
    REQUIRE_OK(qp_session_add_calib_feed(s, calib, &err), &err);
    struct qp_scheme u;
    struct qp_qassign *a;
    REQUIRE_OK(qp_scheme_parse("w8c+a8t", &u, NULL, &err), &err);
    REQUIRE_OK(qp_qassign_uniform(g, &u, &a, &err), &err);
    struct qp_session_cfg cfg = {.mode = QP_MODE_INT, .assign = a,
        .flavor = flavor, .flavor_given = true};
    struct qp_splan *pa = NULL, *pb = NULL;
    struct qp_memo *m = NULL;
    static struct caps ref, got;
    struct qp_session_run_stats rs;
    REQUIRE_OK(qp_session_plan(s, &cfg, &pa, &err), &err);
    REQUIRE_OK(qp_memo_new(s, &m, &err), &err);
    /* record with fusion: the memo lacks what the passes kept inside */
    REQUIRE(run(ctx, s, pa, feed, m, false, NULL, &rs));
    /* plan b: a middle convolution keeps float weights */
    int mid = nth_conv(g, a, 10);
    REQUIRE(mid >= 0);
    a->wq[mid] = false;
    REQUIRE_OK(qp_session_plan(s, &cfg, &pb, &err), &err);
    REQUIRE(run(ctx, s, pb, feed, NULL, true, &ref, NULL));
    REQUIRE(run(ctx, s, pb, feed, m, false, &got, &rs));
    CHECK(rs.nodes_reused > 0);
    CHECK(rs.nodes_run > 0);
    CHECK_INT(got.n, ref.n);
    for (int i = 0; i < ref.n && i < got.n; i++)
        if (got.value[i] != ref.value[i] || got.hash[i] != ref.hash[i]) {
            qp_test_failf(ctx, __FILE__, __LINE__, "%s: '%s' differs from the "
                          "fresh node-by-node run", path,
                          g->values[ref.value[i]].name);
            break;
        }
    /* once more from the memo b recorded, capturing nothing, fused */
    REQUIRE(run(ctx, s, pb, feed, m, false, NULL, &rs));
    REQUIRE(run(ctx, s, pb, feed, m, false, &got, &rs));
    CHECK_INT(got.n, ref.n);
    for (int i = 0; i < ref.n && i < got.n; i++)
        if (got.hash[i] != ref.hash[i]) {
            qp_test_failf(ctx, __FILE__, __LINE__, "%s: '%s' differs after "
                          "reuse", path, g->values[ref.value[i]].name);
            break;
        }
    qp_memo_free(m);
    qp_splan_free(pa);
    qp_splan_free(pb);
    qp_qassign_free(a);
    qp_session_free_inputs(s, feed);
    qp_session_free(s);
}

QP_TEST(qfuse_session_memo_reuse_bit_identical)
{
    char paths[PPOCR_COUNT][512];
    REQUIRE(ppocr_paths(ctx, paths));
    static const int64_t cls[4] = {1, 3, 48, 192}, det[4] = {1, 3, 128, 160};
    check_model(ctx, paths[PPOCR_CLS], cls, QP_RQ_TFLITE_DOUBLE);
    check_model(ctx, paths[PPOCR_CLS], cls, QP_RQ_ORT);
    check_model(ctx, paths[PPOCR_DET], det, QP_RQ_TFLITE_DOUBLE);
}
