/* tests/unit/test-graph-util.h: helpers for the model/ tests: tensors from
 * literals, one-node graphs run through the executor, value checks. */
#ifndef QP_TESTS_GRAPH_UTIL_H
#define QP_TESTS_GRAPH_UTIL_H

#include <stdlib.h>
#include <string.h>

#include "model/exec.h"
#include "model/graph.h"
#include "tests/test.h"

/* New tensor named name with dtype dt, shape and (optional) values given as
 * doubles (converted element by element). */
static inline struct qp_tensor *tt(const char *name, enum qp_dtype dt, int ndim,
                                   const int64_t *shape, const double *vals)
{
    struct qp_tensor *t = NULL;
    struct qp_error err;
    if (qp_tensor_new(name, dt, ndim, shape, &t, &err))
        return NULL;
    size_t n = qp_tensor_numel(t);
    for (size_t i = 0; vals && i < n; i++) {
        if (qp_dtype_traits(dt)->is_float)
            qp_elem_set_f64(dt, t->data, i, vals[i]);
        else
            qp_elem_set_i64(dt, t->data, i, (int64_t)vals[i]);
    }
    return t;
}

/* Fills t's float32 data with LCG values ((seed >> 8) % 2001 - 1000) / div,
 * in [-1000/div, 1000/div]: the same numbers for the same seed. */
static inline void fill_lcg(struct qp_tensor *t, unsigned seed, float div)
{
    size_t n = t ? qp_tensor_numel(t) : 0;
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        ((float *)t->data)[i] = ((float)((seed >> 8) % 2001) - 1000.0f) / div;
    }
}

/* Finalizes a graph built with ok tracking every step: g, or NULL (g freed)
 * with a test failure naming what and err's message. */
static inline struct qp_graph *graph_done(struct qp_test_ctx *ctx,
                                          struct qp_graph *g, bool ok,
                                          const char *what, struct qp_error *err)
{
    if (ok && !qp_graph_finalize(g, err))
        return g;
    qp_test_failf(ctx, __FILE__, __LINE__, "%s: %s", what, err->msg);
    qp_graph_free(g);
    return NULL;
}

#define SHAPE(...) ((const int64_t[]){__VA_ARGS__})
#define VALS(...) ((const double[]){__VA_ARGS__})
#define TF32(name, nd, shape, vals) tt(name, QP_DTYPE_F32, nd, shape, vals)
#define TI64(name, nd, shape, vals) tt(name, QP_DTYPE_I64, nd, shape, vals)

/* One node over graph inputs "in0".. (NULL tensors are absent inputs) with
 * outputs "out0"... */
struct one_node {
    struct qp_graph *g;
    struct qp_tensor *in[16];
    const struct qp_tensor *feed[16];
    int n_in, n_feed, n_out;
    struct qp_tensor *out[16];
};

/* Builds the graph; returns the node for attribute setting (NULL on
 * failure, with err set). Takes ownership of the input tensors. */
static inline struct qp_node *one_begin(struct one_node *o, const char *op,
                                        int opset, int n_in,
                                        struct qp_tensor **ins, int n_out,
                                        struct qp_error *err)
{
    memset(o, 0, sizeof *o);
    const char *in_names[16], *out_names[16];
    char names[32][16];
    if (qp_graph_new("test", &o->g, err))
        return NULL;
    o->n_in = n_in;
    o->n_out = n_out;
    for (int i = 0; i < n_in; i++) {
        o->in[i] = ins[i];
        in_names[i] = NULL;
        if (!ins[i])
            continue;
        snprintf(names[i], sizeof names[i], "in%d", i);
        in_names[i] = names[i];
        if (qp_graph_add_input(o->g, names[i], ins[i]->dtype, ins[i]->ndim,
                               NULL, err))
            return NULL;
        o->feed[o->n_feed++] = ins[i];
    }
    for (int k = 0; k < n_out; k++) {
        snprintf(names[16 + k], sizeof names[16 + k], "out%d", k);
        out_names[k] = names[16 + k];
    }
    int id;
    if (qp_graph_add_node(o->g, op, "", opset, "n0", n_in, in_names, n_out,
                          out_names, &id, err))
        return NULL;
    for (int k = 0; k < n_out; k++)
        if (qp_graph_add_output(o->g, out_names[k], err))
            return NULL;
    return &o->g->nodes[id];
}

static inline enum qp_status one_run(struct one_node *o, struct qp_error *err)
{
    enum qp_status st = qp_graph_finalize(o->g, err);
    if (st)
        return st;
    return qp_exec_run(o->g, o->feed, o->n_feed, NULL, o->out, NULL, err);
}

static inline void one_end(struct one_node *o)
{
    for (int i = 0; i < o->n_in; i++)
        qp_tensor_free(o->in[i]);
    for (int k = 0; k < o->n_out; k++)
        qp_tensor_free(o->out[k]);
    qp_graph_free(o->g);
}

/* Declares o, err and n (the node, for attributes), runs setup, then the
 * one-node graph op with nout outputs, expecting success. */
#define RUN(op, opset, nin, ins, nout, setup)                                  \
    struct one_node o;                                                         \
    struct qp_error err;                                                       \
    struct qp_node *n = one_begin(&o, op, opset, nin, ins, nout, &err);        \
    REQUIRE(n);                                                                \
    setup;                                                                     \
    CHECK_OK(one_run(&o, &err), &err)

#define RUN1(op, opset, nin, ins, setup) RUN(op, opset, nin, ins, 1, setup)

/* Same with one output, expecting failure with code and needle. */
#define RUN_FAILS(op, opset, nin, ins, setup, code, needle)                    \
    struct one_node o;                                                         \
    struct qp_error err;                                                       \
    struct qp_node *n = one_begin(&o, op, opset, nin, ins, 1, &err);           \
    REQUIRE(n);                                                                \
    setup;                                                                     \
    CHECK_FAILS(one_run(&o, &err), code, &err, needle)

/* Checks t's shape and values (read as double) against expected. */
#define CHECK_TENSOR(t, nd, shp, vals, tol)                                  \
    do {                                                                       \
        const struct qp_tensor *t_ = (t);                                      \
        REQUIRE(t_ != NULL);                                                   \
        CHECK_INT(t_->ndim, (nd));                                             \
        bool same_ = t_->ndim == (nd);                                         \
        for (int d_ = 0; same_ && d_ < (nd); d_++)                             \
            same_ = t_->shape[d_] == (shp)[d_];                              \
        CHECK(same_);                                                          \
        if (same_) {                                                           \
            size_t n_ = qp_tensor_numel(t_);                                   \
            for (size_t i_ = 0; i_ < n_; i_++)                                 \
                CHECK_NEAR(qp_elem_get_f64(t_->dtype, t_->data, i_),          \
                           (vals)[i_], (tol));                                 \
        }                                                                      \
    } while (0)

#endif
