/* The int mode's Add of the fixed-point flavors runs as a pair table
 * (model/qexec.c: qp_qadd on every pair of codes, built once per plan):
 * on the real PP-OCR classifier's Adds, for three fixed-point flavors,
 * the node's int run gives the bytes qp_qadd (TFLite's integer add)
 * gives on the same inputs: random codes of the node's shape, and a
 * second input broadcast per channel and as a scalar; a second run of
 * the node (the table kept in the plan) gives them again. */
#include <stdlib.h>
#include <string.h>

#include "model/infer.h"
#include "model/onnx-import.h"
#include "model/op-quant.h"
#include "model/qplan.h"
#include "tests/test.h"
#include "tests/unit/kern-test.h"
#include "tests/unit/ppocr-models.h"

/* Random codes of shape[nd] carrying v's dtype and parameters. */
static struct qp_tensor *codes(uint64_t *r, const struct qp_qval *v, int nd,
                               const int64_t *shape)
{
    struct qp_tensor *t;
    struct qp_error err;
    if (qp_tensor_new("x", v->dtype, nd, shape, &t, &err))
        return NULL;
    kt_fill8(r, t->data, t->nbytes, 0);
    if (qp_tensor_set_qparams(t, 1, &v->scale, &v->zp, -1, 0, &err)) {
        qp_tensor_free(t);
        return NULL;
    }
    return t;
}

/* Node i's int run on (a, b) against qp_qadd's; the number of Adds
 * checked grows in *checked. */
static void check_add(struct qp_test_ctx *ctx, struct qp_qplan *p, int i,
                      struct qp_tensor *a, struct qp_tensor *b, int *checked)
{
    const struct qp_graph *g = p->g;
    const struct qp_node *n = &g->nodes[i];
    const struct qp_tensor *in[2] = {a, b};
    struct qp_scratch scratch = {0};
    struct qp_op_ctx c = {g, i, n, in, 2, &scratch, NULL, NULL};
    struct qp_tensor *out[QP_OP_MAX_IO] = {0}, *want = NULL;
    struct qp_error err;
    const struct qp_qval *vo = &p->v[n->out[0]];
    REQUIRE_OK(qp_qplan_run_int(p, &c, out, &err), &err);
    REQUIRE_OK(qp_tensor_new("y", vo->dtype, out[0]->ndim, out[0]->shape, &want,
                             &err), &err);
    bool done = false;
    struct qp_qside qa = {p->v[n->in[0]].scale, p->v[n->in[0]].zp};
    struct qp_qside qb = {p->v[n->in[1]].scale, p->v[n->in[1]].zp};
    struct qp_qside qy = {vo->scale, vo->zp};
    REQUIRE_OK(qp_qadd(&c, p->flavor, a, qa, b, qb, qy, want, &done, &err), &err);
    CHECK(done);
    CHECK_INT(out[0]->nbytes, want->nbytes);
    if (out[0]->nbytes == want->nbytes && memcmp(out[0]->data, want->data, want->nbytes))
        qp_test_failf(ctx, __FILE__, __LINE__, "%s (%s): the table's bytes "
                      "differ from qp_qadd's", n->name,
                      qp_rq_flavor_name(p->flavor));
    (*checked)++;
    qp_tensor_free(out[0]);
    qp_tensor_free(want);
    qp_scratch_release(&scratch);
}

QP_TEST(qexec_int_add_table_matches_the_integer_add)
{
    char paths[PPOCR_COUNT][512];
    REQUIRE(ppocr_paths(ctx, paths));
    struct qp_graph *g;
    struct qp_error err;
    REQUIRE_OK(qp_model_load_onnx(paths[PPOCR_CLS], NULL, &g, &err), &err);
    struct qp_tdesc d0 = {QP_DTYPE_F32, 4, {1, 3, 48, 192}};
    struct qp_tdesc *d = calloc((size_t)g->n_values, sizeof *d);
    bool *known = calloc((size_t)g->n_values, 1);
    struct qp_tensor *x = NULL;
    REQUIRE(d && known);
    REQUIRE_OK(qp_graph_infer(g, &d0, d, known, &err), &err);
    REQUIRE_OK(qp_tensor_new(g->values[g->inputs[0]].name, QP_DTYPE_F32, 4,
                             d0.shape, &x, &err), &err);
    for (size_t i = 0; i < qp_tensor_numel(x); i++)
        ((float *)x->data)[i] = (float)((i * 2654435761u) % 1000) / 500.0f - 1.0f;
    static const enum qp_rq_flavor flavors[] = {
        QP_RQ_TFLITE_DOUBLE, QP_RQ_TFLITE_SINGLE, QP_RQ_GEMMLOWP};
    uint64_t r = 0xadd;
    int checked = 0;
    for (size_t f = 0; f < sizeof flavors / sizeof *flavors; f++) {
        struct qp_scheme sc;
        struct qp_qplan_opts o = {.mode = QP_MODE_INT, .scheme = &sc,
            .flavor = flavors[f]};
        struct qp_qplan *p = NULL;
        const struct qp_tensor *feed[1] = {x};
        REQUIRE_OK(qp_scheme_parse("w8c+a8t", &sc, NULL, &err), &err);
        REQUIRE_OK(qp_qplan_new(g, &o, &p, &err), &err);
        REQUIRE_OK(qp_qplan_calibrate(p, feed, &err), &err);
        REQUIRE_OK(qp_qplan_finish(p, &err), &err);
        for (int i = 0; i < g->n_nodes; i++) {
            const struct qp_node *n = &g->nodes[i];
            if (p->n[i].kind != QP_QK_ADD || !known[n->in[0]])
                continue;
            const struct qp_tdesc *s = &d[n->in[0]];
            int64_t per_c[4] = {1, s->shape[1], 1, 1}, one[1] = {1};
            struct qp_tensor *a = codes(&r, &p->v[n->in[0]], s->ndim, s->shape);
            struct qp_tensor *b = codes(&r, &p->v[n->in[1]], s->ndim, s->shape);
            struct qp_tensor *bc = codes(&r, &p->v[n->in[1]], 4, per_c);
            struct qp_tensor *b1 = codes(&r, &p->v[n->in[1]], 1, one);
            REQUIRE(a && b && bc && b1 && s->ndim == 4);
            check_add(ctx, p, i, a, b, &checked);
            check_add(ctx, p, i, a, b, &checked); /* the kept table */
            check_add(ctx, p, i, a, bc, &checked);
            check_add(ctx, p, i, a, b1, &checked);
            qp_tensor_free(a);
            qp_tensor_free(b);
            qp_tensor_free(bc);
            qp_tensor_free(b1);
        }
        qp_qplan_free(p);
    }
    CHECK(checked >= 3 * 4 * 7); /* the classifier's seven int Adds */
    qp_tensor_free(x);
    free(d);
    free(known);
    qp_graph_free(g);
}
