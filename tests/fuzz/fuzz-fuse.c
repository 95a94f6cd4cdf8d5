/* tests/fuzz/fuzz-fuse.c: fused passes against node by node, on graphs
 * the input bytes describe: an input of up to 4 dims, then a chain of
 * up to 24 nodes, each an elementwise function (unary, Clip with constant
 * bounds, binary with a scalar, per-channel, per-row, full or earlier
 * operand), a Conv (1x1, 3x3 or depthwise; its output then starts a
 * pass) or a node no pass takes (GlobalAveragePool, Transpose); some
 * values are also graph outputs. Every graph output of the fused run
 * must have the bits of the node-by-node run (any NaN equals any NaN);
 * a difference aborts. Graphs the operators refuse (shapes that do not
 * broadcast) are skipped. Seeds: a few hand-made byte strings. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/exec.h"

struct bytes {
    const uint8_t *p;
    size_t n, at;
};

static unsigned next(struct bytes *b)
{
    return b->at < b->n ? b->p[b->at++] : 0;
}

/* Not instrumented for coverage under libFuzzer: the per-element loops of
 * the harness itself (the callbacks on their compares were a tenth of the
 * target's time). */
#if defined(__has_feature)
#if __has_feature(coverage_sanitizer)
#define HARNESS_LOOP __attribute__((no_sanitize("coverage")))
#endif
#endif
#ifndef HARNESS_LOOP
#define HARNESS_LOOP
#endif

/* n values from the bytes: (byte % m - m / 2) / d. */
HARNESS_LOOP static void fill(float *p, size_t n, struct bytes *b, unsigned m,
                              float d)
{
    for (size_t i = 0; i < n; i++)
        p[i] = ((float)(int)(next(b) % m) - (float)(m / 2)) / d;
}

struct gen {
    struct qp_graph *g;
    struct qp_error err;
    int64_t shape[4]; /* of x, [N, C, H, W] */
    int nvals;        /* values made so far: v0 .. v(nvals-1) */
    int nconst;
    bool ok;
};

static void name_of(char *buf, size_t size, int v)
{
    snprintf(buf, size, "v%d", v);
}

/* A constant of nd dims (the trailing ones of x's shape, or 1 where
 * mask bit d is clear), values from the bytes. */
static void add_const(struct gen *q, struct bytes *b, unsigned mask, char *name,
                      size_t size)
{
    int64_t sh[4];
    for (int d = 0; d < 4; d++)
        sh[d] = mask >> d & 1 ? q->shape[d] : 1;
    snprintf(name, size, "k%d", q->nconst++);
    struct qp_tensor *t;
    if (qp_tensor_new(name, QP_DTYPE_F32, 4, sh, &t, &q->err)) {
        q->ok = false;
        return;
    }
    fill(t->data, qp_tensor_numel(t), b, 33, 4.0f);
    q->ok = q->ok && !qp_graph_add_const(q->g, t, &q->err);
}

static int add_node(struct gen *q, const char *op, int n_in,
                    const char *const *in)
{
    char out[16];
    name_of(out, sizeof out, q->nvals);
    const char *o[1] = {out};
    int id = -1;
    q->ok = q->ok && !qp_graph_add_node(q->g, op, "", 13, out, n_in, in, 1, o,
                                        &id, &q->err);
    q->nvals++;
    return id;
}

static void add_conv(struct gen *q, struct bytes *b, const char *x)
{
    unsigned kind = next(b) % 3; /* 1x1, 3x3, depthwise 3x3 */
    int64_t c = q->shape[1], k = kind ? 3 : 1, icg = kind == 2 ? 1 : c;
    char wn[16], bn[16];
    snprintf(wn, sizeof wn, "k%d", q->nconst++);
    snprintf(bn, sizeof bn, "k%d", q->nconst++);
    int64_t ws[4] = {c, icg, k, k}, bs[1] = {c};
    struct qp_tensor *w, *bias;
    if (qp_tensor_new(wn, QP_DTYPE_F32, 4, ws, &w, &q->err) ||
        qp_tensor_new(bn, QP_DTYPE_F32, 1, bs, &bias, &q->err)) {
        q->ok = false;
        return;
    }
    fill(w->data, qp_tensor_numel(w), b, 17, 8.0f);
    fill(bias->data, (size_t)c, b, 9, 4.0f);
    q->ok = q->ok && !qp_graph_add_const(q->g, w, &q->err) &&
            !qp_graph_add_const(q->g, bias, &q->err);
    const char *in[3] = {x, wn, bn};
    int id = add_node(q, "Conv", 3, in);
    if (!q->ok)
        return;
    int64_t pads[4] = {k / 2, k / 2, k / 2, k / 2};
    q->ok = !qp_node_set_ints(&q->g->nodes[id], "pads", pads, 4, &q->err) &&
            !qp_node_set_int(&q->g->nodes[id], "group", kind == 2 ? c : 1,
                             &q->err);
}

static const char *const unary[] = {"Relu", "Sigmoid", "HardSigmoid",
                                    "HardSwish", "Neg", "Abs", "Tanh",
                                    "LeakyRelu", "Sqrt", "Exp"};
static const char *const binary[] = {"Add", "Sub", "Mul", "Div", "Max", "Min"};

/* One node reading value v (and maybe another operand). */
static void add_step(struct gen *q, struct bytes *b)
{
    char x[16], y[16], lo[16], hi[16];
    unsigned op = next(b);
    name_of(x, sizeof x, q->nvals - 1 - (int)(next(b) % 3 % (unsigned)q->nvals));
    switch (op % 8) {
    case 0: case 1: {
        const char *in[1] = {x};
        add_node(q, unary[next(b) % (sizeof unary / sizeof unary[0])], 1, in);
        break;
    }
    case 2: {
        add_const(q, b, 0, lo, sizeof lo);
        add_const(q, b, 0, hi, sizeof hi);
        const char *in[3] = {x, lo, hi};
        add_node(q, "Clip", 3, in);
        break;
    }
    case 3: case 4: case 5: {
        /* the other operand: a constant broadcasting along some dims, or
         * an earlier value */
        unsigned how = next(b);
        if (how % 4 == 3)
            name_of(y, sizeof y, (int)(next(b) % (unsigned)q->nvals));
        else
            add_const(q, b, how % 4 == 0 ? 0 : how % 4 == 1 ? 2 : next(b) % 16,
                      y, sizeof y);
        bool swap = next(b) & 1;
        const char *in[2] = {swap ? y : x, swap ? x : y};
        add_node(q, binary[next(b) % (sizeof binary / sizeof binary[0])], 2, in);
        break;
    }
    case 6:
        add_conv(q, b, x);
        break;
    default: {
        /* a node that ends passes and keeps the shape */
        const char *in[1] = {x};
        int id = add_node(q, next(b) & 1 ? "Transpose" : "Identity", 1, in);
        if (q->ok && !strcmp(q->g->nodes[id].op_type, "Transpose")) {
            int64_t perm[4] = {0, 1, 2, 3};
            q->ok = !qp_node_set_ints(&q->g->nodes[id], "perm", perm, 4, &q->err);
        }
        break;
    }
    }
}

HARNESS_LOOP static bool same_bits(const struct qp_tensor *a,
                                   const struct qp_tensor *b)
{
    if (!a || !b || a->nbytes != b->nbytes)
        return false;
    if (!memcmp(a->data, b->data, a->nbytes))
        return true;
    const float *x = a->data, *y = b->data;
    for (size_t i = 0, n = qp_tensor_numel(a); i < n; i++)
        if (memcmp(&x[i], &y[i], 4) && !(isnan(x[i]) && isnan(y[i])))
            return false;
    return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct bytes b = {data, size, 0};
    struct gen q = {NULL, {0}, {1, 1, 1, 1}, 1, 0, true};
    if (qp_graph_new("fuzz-fuse", &q.g, &q.err))
        return 0;
    for (int d = 0; d < 4; d++)
        q.shape[d] = 1 + (int64_t)(next(&b) % (d == 0 ? 2 : d == 3 ? 40 : 7));
    q.ok = !qp_graph_add_input(q.g, "v0", QP_DTYPE_F32, 4, q.shape, &q.err);
    int steps = 1 + (int)(next(&b) % 24);
    unsigned outs = next(&b);
    for (int s = 0; s < steps && q.ok; s++)
        add_step(&q, &b);
    char name[16];
    for (int v = 1; q.ok && v < q.nvals; v++)
        if (v == q.nvals - 1 || (outs >> (v % 8) & 1)) {
            name_of(name, sizeof name, v);
            q.ok = !qp_graph_add_output(q.g, name, &q.err);
        }
    struct qp_tensor *x = NULL, *out[2][32] = {{0}};
    if (q.ok && q.g->n_outputs <= 32 && !qp_graph_finalize(q.g, &q.err) &&
        !qp_tensor_new("v0", QP_DTYPE_F32, 4, q.shape, &x, &q.err)) {
        fill(x->data, qp_tensor_numel(x), &b, 65, 8.0f);
        const struct qp_tensor *feed[1] = {x};
        struct qp_exec_tune alone = {true, NULL, NULL};
        bool r0 = !qp_exec_run_tuned(q.g, feed, 1, NULL, &alone, out[0], NULL,
                                     &q.err);
        bool r1 = !qp_exec_run_tuned(q.g, feed, 1, NULL, NULL, out[1], NULL,
                                     &q.err);
        if (r0 != r1)
            abort(); /* fusion must not change whether the graph runs */
        for (int k = 0; r0 && k < q.g->n_outputs; k++)
            if (!same_bits(out[0][k], out[1][k]))
                abort();
        for (int r = 0; r < 2; r++)
            for (int k = 0; k < 32; k++)
                qp_tensor_free(out[r][k]);
    }
    qp_tensor_free(x);
    qp_graph_free(q.g);
    return 0;
}
