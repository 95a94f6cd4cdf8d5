/* tests/unit/planted-net.c: the test network with a planted outlier
 * (tests/unit/planted-net.h). */
#include "tests/unit/planted-net.h"

#include <stdlib.h>

#include "tests/unit/test-graph-util.h"

/* The network of the header; weights from a fixed LCG. */
struct qp_graph *qp_planted_net(struct qp_test_ctx *ctx)
{
    struct qp_graph *g;
    struct qp_error err;
    if (qp_graph_new("net", &g, &err))
        return NULL;
    bool ok = !qp_graph_add_input(g, "x", QP_DTYPE_F32, 2, SHAPE(8, QP_PLANTED_W), &err);
    const char *prev = "x";
    static const char *const wn[] = {"W0", "W1", "W2"}, *hn[] = {"h0", "h1", "y"},
                             *rn[] = {"r0", "r1", NULL};
    unsigned seed = 11;
    for (int l = 0; ok && l < 3; l++) {
        struct qp_tensor *w = TF32(wn[l], 2, SHAPE(QP_PLANTED_W, QP_PLANTED_W), NULL);
        for (int i = 0; w && i < QP_PLANTED_W * QP_PLANTED_W; i++) {
            seed = seed * 1103515245u + 12345u;
            ((float *)w->data)[i] = ((float)((seed >> 8) % 2001) - 1000.0f) / 3000.0f;
        }
        if (w && l == 0) /* column 0 of h0 (and so of r0) is zero */
            for (int i = 0; i < QP_PLANTED_W; i++)
                ((float *)w->data)[i * QP_PLANTED_W] = 0.0f;
        if (w && l == 1)
            ((float *)w->data)[5] = 66.0f; /* row 0: the planted outlier */
        const char *mi[2] = {prev, wn[l]}, *mo[1] = {hn[l]};
        ok = w && !qp_graph_add_const(g, w, &err) &&
             !qp_graph_add_node(g, "MatMul", "", 13, hn[l], 2, mi, 1, mo, NULL,
                                &err);
        if (ok && rn[l]) {
            const char *ri[1] = {hn[l]}, *ro[1] = {rn[l]};
            ok = !qp_graph_add_node(g, "Relu", "", 13, rn[l], 1, ri, 1, ro, NULL,
                                    &err);
        }
        prev = rn[l] ? rn[l] : hn[l];
    }
    ok = ok && !qp_graph_add_output(g, "y", &err) && !qp_graph_finalize(g, &err);
    if (!ok) {
        qp_test_failf(ctx, __FILE__, __LINE__, "net: %s", err.msg);
        qp_graph_free(g);
        return NULL;
    }
    return g;
}

struct qp_tensor **qp_planted_input(unsigned seed)
{
    struct qp_tensor **feed = calloc(1, sizeof *feed);
    feed[0] = TF32("x", 2, SHAPE(8, QP_PLANTED_W), NULL);
    for (int i = 0; i < 8 * QP_PLANTED_W; i++) {
        seed = seed * 1103515245u + 12345u;
        ((float *)feed[0]->data)[i] = ((float)((seed >> 8) % 2001) - 1000.0f) / 1000.0f;
    }
    return feed;
}

