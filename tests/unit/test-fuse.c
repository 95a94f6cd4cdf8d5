/* Unit tests of fused elementwise passes (model/fuse.c through
 * model/exec.c): every graph runs fused (the default) and node by node
 * (qp_exec_tune.no_fusion), and the outputs and captured values must be
 * the same bits; the passes the executor reports (node_pass) show what
 * was fused, so a planner that fused nothing would fail too. Values are
 * also checked against hand-computed ones where the graph is small. */
#include <stdio.h>

#include "tests/unit/test-graph-util.h"

struct fg {
    struct qp_graph *g;
    struct qp_error err;
};

static bool fg_node(struct fg *f, const char *op, int opset, int n_in,
                    const char *const *in, const char *out)
{
    const char *o[1] = {out};
    return !qp_graph_add_node(f->g, op, "", opset, out, n_in, in, 1, o, NULL,
                              &f->err);
}

#define NODE(f, op, out, ...)                                                  \
    fg_node(f, op, 13, (int)(sizeof((const char *[]){__VA_ARGS__}) /           \
                             sizeof(const char *)),                            \
            (const char *[]){__VA_ARGS__}, out)

static bool fg_const(struct fg *f, const char *name, int nd,
                     const int64_t *shape, const double *vals)
{
    struct qp_tensor *t = TF32(name, nd, shape, vals);
    return t && !qp_graph_add_const(f->g, t, &f->err);
}

/* Finalizes f's graph when ok; else fails the test and frees it. */
static struct qp_graph *fg_done(struct qp_test_ctx *ctx, struct fg *f, bool ok)
{
    if (ok && !qp_graph_finalize(f->g, &f->err))
        return f->g;
    qp_test_failf(ctx, __FILE__, __LINE__, "building the graph: %s", f->err.msg);
    qp_graph_free(f->g);
    return NULL;
}

/* Node id of the node making value name. */
static int producer(const struct qp_graph *g, const char *name)
{
    int v = qp_graph_find(g, name);
    return v >= 0 ? g->values[v].producer : -1;
}

struct run_result {
    struct qp_tensor *out[4];
    int pass[64];
    struct qp_tensor *cap[8]; /* captured, in capture order */
    int n_cap;
};

static enum qp_status keep(void *ctx, const struct qp_graph *g, int v,
                           const struct qp_tensor *t, struct qp_error *err)
{
    (void)g;
    (void)v;
    struct run_result *r = ctx;
    if (r->n_cap == 8)
        return QP_OK;
    return qp_tensor_clone(t, &r->cap[r->n_cap++], err);
}

static bool run(struct qp_test_ctx *ctx, const struct qp_graph *g,
                const struct qp_tensor *const *feed, int n_feed, bool fused,
                const char *capture, struct run_result *r)
{
    struct qp_error err;
    memset(r, 0, sizeof *r);
    for (int i = 0; i < 64; i++)
        r->pass[i] = -1;
    struct qp_exec_tune t = {!fused, NULL, r->pass};
    struct qp_exec_opts o = {.capture = capture, .on_capture = keep,
        .capture_ctx = r};
    if (qp_exec_run_tuned(g, feed, n_feed, &o, &t, r->out, NULL, &err)) {
        qp_test_failf(ctx, __FILE__, __LINE__, "run: %s", err.msg);
        return false;
    }
    return true;
}

static void release(struct run_result *r)
{
    for (int k = 0; k < 4; k++)
        qp_tensor_free(r->out[k]);
    for (int k = 0; k < r->n_cap; k++)
        qp_tensor_free(r->cap[k]);
}

/* Same bits (NaN: any NaN). */
static bool identical(const struct qp_tensor *a, const struct qp_tensor *b)
{
    if (!a || !b || a->nbytes != b->nbytes || a->dtype != b->dtype ||
        a->ndim != b->ndim)
        return false;
    if (a->dtype != QP_DTYPE_F32)
        return !memcmp(a->data, b->data, a->nbytes);
    const float *x = a->data, *y = b->data;
    for (size_t i = 0; i < qp_tensor_numel(a); i++)
        if (memcmp(&x[i], &y[i], 4) && !(isnan(x[i]) && isnan(y[i])))
            return false;
    return true;
}

/* Fills t with values in [-8, 8] (a quarter of them integers, so ties
 * and kinks of the activations are hit). */
static void fill(struct qp_tensor *t, unsigned seed)
{
    float *p = t->data;
    for (size_t i = 0; i < qp_tensor_numel(t); i++) {
        unsigned h = (unsigned)(i * 2654435761u + seed * 40503u);
        p[i] = i % 4 == 0 ? (float)(int)(h % 17) - 8.0f
                          : (float)(h % 16001) / 1000.0f - 8.0f;
    }
}

/* PP-OCR's affine + decomposed HardSwish block, then broadcasts per
 * channel and along W, a squeeze-excitation branch (GlobalAveragePool,
 * HardSigmoid on [N,C,1,1], Mul back), and a residual Add reading a value
 * of the first pass:
 *   m1 = 0.7 x; a1 = m1 + 0.1; c = clip(a1 + 3, 0, 6); h = a1 c / 6
 *   e = h * pc[C,1,1] - row[W]; r = relu(e)
 *   s = hardsigmoid(gap(h)); z = r * s; y = z + h */
static struct qp_graph *block(struct qp_test_ctx *ctx, int64_t c, int64_t hgt,
                              int64_t w)
{
    struct fg f;
    if (qp_graph_new("block", &f.g, &f.err))
        return NULL;
    bool ok = !qp_graph_add_input(f.g, "x", QP_DTYPE_F32, 4,
                                  SHAPE(1, c, hgt, w), &f.err);
    double pcv[64], *rowv = malloc((size_t)w * sizeof *rowv);
    for (int i = 0; i < 64; i++)
        pcv[i] = 0.25 * (i % 7) - 0.5;
    for (int64_t i = 0; rowv && i < w; i++)
        rowv[i] = 0.125 * (double)(i % 5);
    ok = ok && rowv && c <= 64 && fg_const(&f, "s1", 1, SHAPE(1), VALS(0.7)) &&
         fg_const(&f, "b1", 1, SHAPE(1), VALS(0.1)) &&
         fg_const(&f, "three", 0, NULL, VALS(3)) &&
         fg_const(&f, "zero", 0, NULL, VALS(0)) &&
         fg_const(&f, "six", 0, NULL, VALS(6)) &&
         fg_const(&f, "pc", 3, SHAPE(c, 1, 1), pcv) &&
         fg_const(&f, "row", 1, SHAPE(w), rowv);
    free(rowv);
    ok = ok && NODE(&f, "Mul", "m1", "s1", "x") && NODE(&f, "Add", "a1", "m1", "b1") &&
         NODE(&f, "Add", "a2", "a1", "three") &&
         NODE(&f, "Clip", "c", "a2", "zero", "six") &&
         NODE(&f, "Mul", "mm", "a1", "c") && NODE(&f, "Div", "h", "mm", "six") &&
         NODE(&f, "Mul", "e0", "h", "pc") && NODE(&f, "Sub", "e", "e0", "row") &&
         NODE(&f, "Relu", "r", "e") &&
         NODE(&f, "GlobalAveragePool", "p", "h") &&
         NODE(&f, "HardSigmoid", "s", "p") && NODE(&f, "Mul", "z", "r", "s") &&
         NODE(&f, "Add", "y", "z", "h") && !qp_graph_add_output(f.g, "y", &f.err);
    return fg_done(ctx, &f, ok);
}

QP_TEST(fuse_block_is_bit_identical_and_fuses_the_chains)
{
    static const int64_t dims[][3] = {{4, 6, 7}, {3, 100, 70}, {2, 3, 30000}};
    for (int d = 0; d < 3; d++) {
        struct qp_graph *g = block(ctx, dims[d][0], dims[d][1], dims[d][2]);
        REQUIRE(g);
        struct qp_tensor *x = TF32("x", 4, SHAPE(1, dims[d][0], dims[d][1],
                                                  dims[d][2]), NULL);
        REQUIRE(x);
        fill(x, (unsigned)d);
        const struct qp_tensor *feed[1] = {x};
        struct run_result a, b;
        REQUIRE(run(ctx, g, feed, 1, false, NULL, &a));
        REQUIRE(run(ctx, g, feed, 1, true, NULL, &b));
        CHECK(identical(a.out[0], b.out[0]));
        /* node by node every node is its own pass */
        for (int i = 0; i < g->n_nodes; i++)
            CHECK_INT(a.pass[i], i);
        /* fused: the affine + HardSwish + broadcasts + Relu in one pass,
         * GlobalAveragePool and HardSigmoid ([N,C,1,1]) alone, Mul + Add
         * in another */
        int m1 = producer(g, "m1"), z = producer(g, "z");
        static const char *const first[] = {"a1", "a2", "c", "mm", "h",
                                            "e0", "e", "r"};
        for (size_t i = 0; i < sizeof first / sizeof first[0]; i++)
            CHECK_INT(b.pass[producer(g, first[i])], m1);
        CHECK_INT(b.pass[producer(g, "p")], producer(g, "p"));
        CHECK_INT(b.pass[producer(g, "s")], producer(g, "s"));
        CHECK_INT(b.pass[producer(g, "y")], z);
        if (d == 0) {
            /* x[0] = -8 (i % 4 == 0, h = 0): a1 = 0.7 * -8 + 0.1 = -5.5,
             * clip(-2.5) = 0, so h, e0 = 0; e = 0 - row[0] = 0, r = 0;
             * y[0] = 0 * s + 0 = 0 */
            CHECK(((float *)x->data)[0] == -8.0f);
            CHECK(((float *)b.out[0]->data)[0] == 0.0f);
            /* element 1 by hand, in float as the graph computes it */
            float xv = ((float *)x->data)[1];
            float a1 = 0.7f * xv + 0.1f, cl = a1 + 3.0f;
            cl = cl < 0 ? 0 : cl > 6 ? 6 : cl;
            float h = a1 * cl / 6.0f, e = h * -0.5f - 0.125f;
            float r = e > 0 ? e : 0;
            float yv = ((float *)b.out[0]->data)[1];
            /* s is hardsigmoid of a channel mean: only bound it */
            CHECK(yv >= h + 0.0f * r && yv <= h + r + 1e-6f);
        }
        release(&a);
        release(&b);
        qp_tensor_free(x);
        qp_graph_free(g);
    }
}

QP_TEST(fuse_captured_values_end_segments_and_match)
{
    struct qp_graph *g = block(ctx, 4, 6, 7);
    REQUIRE(g);
    struct qp_tensor *x = TF32("x", 4, SHAPE(1, 4, 6, 7), NULL);
    REQUIRE(x);
    fill(x, 7);
    const struct qp_tensor *feed[1] = {x};
    struct run_result a, b;
    /* "c" and "e" are captured: they exist, equal the node-by-node ones,
     * and each ends its pass */
    REQUIRE(run(ctx, g, feed, 1, false, "[ce]", &a));
    REQUIRE(run(ctx, g, feed, 1, true, "[ce]", &b));
    REQUIRE(a.n_cap == 2 && b.n_cap == 2);
    CHECK_STR(a.cap[0]->name, "c");
    CHECK_STR(b.cap[0]->name, "c");
    CHECK(identical(a.cap[0], b.cap[0]));
    CHECK(identical(a.cap[1], b.cap[1]));
    CHECK(identical(a.out[0], b.out[0]));
    int m1 = producer(g, "m1"), mm = producer(g, "mm");
    CHECK_INT(b.pass[producer(g, "c")], m1);
    CHECK_INT(b.pass[producer(g, "h")], mm);
    CHECK_INT(b.pass[producer(g, "e")], mm);
    CHECK_INT(b.pass[producer(g, "r")], producer(g, "r"));
    release(&a);
    release(&b);
    /* capturing everything runs node by node */
    REQUIRE(run(ctx, g, feed, 1, true, "*", &b));
    for (int i = 0; i < g->n_nodes; i++)
        CHECK_INT(b.pass[i], i);
    release(&b);
    qp_tensor_free(x);
    qp_graph_free(g);
}

QP_TEST(fuse_falls_back_where_it_cannot_fuse)
{
    /* Clip's bound computed by a node of the run (fused Clip needs its
     * bounds' data), an f64 chain, a graph output in mid-chain */
    struct fg f;
    REQUIRE_OK(qp_graph_new("fallback", &f.g, &f.err), &f.err);
    REQUIRE_OK(qp_graph_add_input(f.g, "x", QP_DTYPE_F32, 1, SHAPE(5), &f.err),
               &f.err);
    REQUIRE_OK(qp_graph_add_input(f.g, "d", QP_DTYPE_F64, 1, SHAPE(5), &f.err),
               &f.err);
    REQUIRE(fg_const(&f, "one", 0, NULL, VALS(1)));
    REQUIRE(NODE(&f, "Neg", "lo", "one") && NODE(&f, "Relu", "hi", "one") &&
            NODE(&f, "Clip", "c", "x", "lo", "hi") &&
            NODE(&f, "Add", "c2", "c", "c") && NODE(&f, "Abs", "c3", "c2") &&
            NODE(&f, "Relu", "d1", "d") && NODE(&f, "Neg", "d2", "d1"));
    REQUIRE_OK(qp_graph_add_output(f.g, "c2", &f.err), &f.err);
    REQUIRE_OK(qp_graph_add_output(f.g, "c3", &f.err), &f.err);
    REQUIRE_OK(qp_graph_add_output(f.g, "d2", &f.err), &f.err);
    REQUIRE_OK(qp_graph_finalize(f.g, &f.err), &f.err);
    struct qp_tensor *x = TF32("x", 1, SHAPE(5), VALS(-3, -0.5, 0, 0.5, 3));
    struct qp_tensor *d = tt("d", QP_DTYPE_F64, 1, SHAPE(5), VALS(-2, -1, 0, 1, 2));
    REQUIRE(x && d);
    const struct qp_tensor *feed[2] = {x, d};
    struct run_result a, b;
    REQUIRE(run(ctx, f.g, feed, 2, false, NULL, &a));
    REQUIRE(run(ctx, f.g, feed, 2, true, NULL, &b));
    for (int k = 0; k < 3; k++)
        CHECK(identical(a.out[k], b.out[k]));
    CHECK_TENSOR(b.out[0], 1, SHAPE(5), VALS(-2, -1, 0, 1, 2), 0);
    CHECK_TENSOR(b.out[1], 1, SHAPE(5), VALS(2, 1, 0, 1, 2), 0);
    CHECK_TENSOR(b.out[2], 1, SHAPE(5), VALS(0, 0, 0, -1, -2), 0);
    const struct qp_graph *g = f.g;
    /* the bounds in one pass, which ends before Clip (its bounds do not
     * exist yet); the next pass starts at Clip, whose bounds then exist,
     * and takes Add and Abs (c2 is both an output and read by Abs); the
     * f64 nodes alone */
    int lo = producer(g, "lo"), c = producer(g, "c");
    CHECK_INT(b.pass[producer(g, "hi")], lo);
    CHECK_INT(b.pass[c], c);
    CHECK_INT(b.pass[producer(g, "c2")], c);
    CHECK_INT(b.pass[producer(g, "c3")], c);
    CHECK_INT(b.pass[producer(g, "d1")], producer(g, "d1"));
    CHECK_INT(b.pass[producer(g, "d2")], producer(g, "d2"));
    release(&a);
    release(&b);
    qp_tensor_free(x);
    qp_tensor_free(d);
    qp_graph_free(f.g);
}

/* ---- a Conv with the pass after it as its epilogue ------------------------ */

/* x [1, ic, h, w] -> Conv (k x k, stride s, pad k/2, group g) -> y0;
 * m = y0 * 0.5; a = m + b[C,1,1]; r = relu(a); out = r * y0 when reuse
 * (y0 read twice in the pass); when tail, t = gap(y0) and o2 = out + t
 * after it (y0 read outside the pass: it must exist). */
static struct qp_graph *conv_chain(struct qp_test_ctx *ctx, int64_t ic,
                                   int64_t oc, int64_t groups, int64_t k,
                                   int64_t s, int64_t h, int64_t w, bool reuse,
                                   bool tail)
{
    struct fg f;
    if (qp_graph_new("conv-chain", &f.g, &f.err))
        return NULL;
    int64_t icg = ic / groups;
    double *wv = malloc((size_t)(oc * icg * k * k) * sizeof *wv), bv[64], cb[64];
    for (int64_t i = 0; wv && i < oc * icg * k * k; i++)
        wv[i] = (double)((i * 37) % 17 - 8) / 16.0;
    for (int i = 0; i < 64; i++) {
        bv[i] = (i % 5) * 0.25 - 0.5;
        cb[i] = (i % 3) * 0.5 - 0.5;
    }
    bool ok = wv && oc <= 64 &&
              !qp_graph_add_input(f.g, "x", QP_DTYPE_F32, 4, SHAPE(1, ic, h, w),
                                  &f.err) &&
              fg_const(&f, "W", 4, SHAPE(oc, icg, k, k), wv) &&
              fg_const(&f, "B", 1, SHAPE(oc), bv) &&
              fg_const(&f, "half", 0, NULL, VALS(0.5)) &&
              fg_const(&f, "cb", 3, SHAPE(oc, 1, 1), cb);
    free(wv);
    int id;
    const char *cin[3] = {"x", "W", "B"}, *cout[1] = {"y0"};
    ok = ok && !qp_graph_add_node(f.g, "Conv", "", 13, "conv", 3, cin, 1, cout,
                                  &id, &f.err);
    ok = ok && !qp_node_set_ints(&f.g->nodes[id], "pads",
                                 (const int64_t[]){k / 2, k / 2, k / 2, k / 2}, 4,
                                 &f.err) &&
         !qp_node_set_ints(&f.g->nodes[id], "strides", (const int64_t[]){s, s}, 2,
                           &f.err) &&
         !qp_node_set_int(&f.g->nodes[id], "group", groups, &f.err);
    ok = ok && NODE(&f, "Mul", "m", "y0", "half") && NODE(&f, "Add", "a", "m", "cb") &&
         NODE(&f, "Relu", "r", "a");
    const char *last = "r";
    if (reuse) {
        ok = ok && NODE(&f, "Mul", "out", "r", "y0");
        last = "out";
    }
    if (tail) {
        ok = ok && NODE(&f, "GlobalAveragePool", "t", "y0") &&
             NODE(&f, "Add", "o2", last, "t");
        last = "o2";
    }
    ok = ok && !qp_graph_add_output(f.g, last, &f.err);
    return fg_done(ctx, &f, ok);
}

QP_TEST(fuse_conv_epilogue_is_bit_identical)
{
    /* ic, oc, groups, k, stride, h, w, reuse, tail: a 3x3 conv, a 1x1
     * (one long row), a depthwise, stride 2, y0 also read by the pass and
     * by a node after it */
    static const int64_t cases[][9] = {
        {5, 7, 1, 3, 1, 9, 11, 0, 0},   {16, 24, 1, 1, 1, 30, 37, 1, 0},
        {12, 12, 12, 3, 1, 40, 53, 1, 0}, {6, 10, 2, 3, 2, 21, 35, 0, 1},
        {8, 9, 1, 5, 1, 7, 70, 1, 1},    {32, 32, 32, 3, 2, 64, 64, 0, 0},
        /* one output element: the pass reads it as a single value, which
         * must be read after the conv wrote it (found by fuzz-fuse) */
        {1, 1, 1, 1, 1, 1, 1, 1, 0},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const int64_t *k = cases[c];
        struct qp_graph *g = conv_chain(ctx, k[0], k[1], k[2], k[3], k[4], k[5],
                                        k[6], k[7], k[8]);
        REQUIRE(g);
        struct qp_tensor *x = TF32("x", 4, SHAPE(1, k[0], k[5], k[6]), NULL);
        REQUIRE(x);
        fill(x, (unsigned)c);
        const struct qp_tensor *feed[1] = {x};
        struct run_result a, b, cap;
        REQUIRE(run(ctx, g, feed, 1, false, NULL, &a));
        REQUIRE(run(ctx, g, feed, 1, true, NULL, &b));
        /* y0 captured: it exists, equal to the node-by-node one */
        REQUIRE(run(ctx, g, feed, 1, true, "y0", &cap));
        if (!identical(a.out[0], b.out[0]))
            qp_test_failf(ctx, __FILE__, __LINE__, "case %zu differs", c);
        CHECK(identical(a.out[0], cap.out[0]));
        CHECK_INT(cap.n_cap, 1);
        int conv = producer(g, "y0");
        CHECK_INT(b.pass[producer(g, "m")], conv);
        CHECK_INT(b.pass[producer(g, "r")], conv);
        CHECK_INT(cap.pass[producer(g, "r")], conv);
        if (k[7])
            CHECK_INT(b.pass[producer(g, "out")], conv);
        if (k[8])
            CHECK_INT(b.pass[producer(g, "o2")], producer(g, "o2"));
        release(&a);
        release(&b);
        release(&cap);
        qp_tensor_free(x);
        qp_graph_free(g);
    }
}

QP_TEST(fuse_conv_epilogue_matches_captured_conv_output)
{
    /* the conv output captured while fused equals the node-by-node one */
    struct qp_graph *g = conv_chain(ctx, 8, 16, 1, 3, 1, 20, 33, true, false);
    REQUIRE(g);
    struct qp_tensor *x = TF32("x", 4, SHAPE(1, 8, 20, 33), NULL);
    REQUIRE(x);
    fill(x, 3);
    const struct qp_tensor *feed[1] = {x};
    struct run_result a, b;
    REQUIRE(run(ctx, g, feed, 1, false, "y0", &a));
    REQUIRE(run(ctx, g, feed, 1, true, "y0", &b));
    REQUIRE(a.n_cap == 1 && b.n_cap == 1);
    CHECK(identical(a.cap[0], b.cap[0]));
    CHECK(identical(a.out[0], b.out[0]));
    release(&a);
    release(&b);
    qp_tensor_free(x);
    qp_graph_free(g);
}

/* Runs g on x node by node into *a and fused into *b, failing the test
 * unless their first n_out outputs are the same bits; false (nothing to
 * release) when a run fails. */
static bool run_both(struct qp_test_ctx *ctx, const struct qp_graph *g,
                     const struct qp_tensor *x, int n_out, struct run_result *a,
                     struct run_result *b)
{
    const struct qp_tensor *feed[1] = {x};
    if (!run(ctx, g, feed, 1, false, NULL, a))
        return false;
    if (!run(ctx, g, feed, 1, true, NULL, b)) {
        release(a);
        return false;
    }
    for (int k = 0; k < n_out; k++)
        if (!identical(a->out[k], b->out[k]))
            qp_test_failf(ctx, __FILE__, __LINE__, "output %d: fused and node "
                          "by node differ", k);
    return true;
}

/* HardSwish spelled with the operands the other way round and a Mul by
 * 1/6 for the Div (model/fuse.c runs such four steps as one loop), then
 * a second one whose Add is also a graph output (so it must exist and
 * the four steps run one by one):
 *   a = 3 + x; c = clip(a, 0, 6); m = c * x; h = m * (1/6)
 *   a2 = h + 3; c2 = clip(a2, 0, 6); m2 = h * c2; y = m2 / 6 */
QP_TEST(fuse_hswish_chains_in_any_operand_order_are_bit_identical)
{
    struct fg f;
    REQUIRE_OK(qp_graph_new("hswish", &f.g, &f.err), &f.err);
    REQUIRE_OK(qp_graph_add_input(f.g, "x", QP_DTYPE_F32, 4, SHAPE(1, 3, 5, 37),
                                  &f.err), &f.err);
    REQUIRE(fg_const(&f, "three", 0, NULL, VALS(3)) &&
            fg_const(&f, "zero", 0, NULL, VALS(0)) &&
            fg_const(&f, "six", 0, NULL, VALS(6)) &&
            fg_const(&f, "sixth", 1, SHAPE(1), VALS(1.0 / 6)));
    REQUIRE(NODE(&f, "Add", "a", "three", "x") &&
            NODE(&f, "Clip", "c", "a", "zero", "six") &&
            NODE(&f, "Mul", "m", "c", "x") && NODE(&f, "Mul", "h", "m", "sixth") &&
            NODE(&f, "Add", "a2", "h", "three") &&
            NODE(&f, "Clip", "c2", "a2", "zero", "six") &&
            NODE(&f, "Mul", "m2", "h", "c2") && NODE(&f, "Div", "y", "m2", "six"));
    REQUIRE_OK(qp_graph_add_output(f.g, "y", &f.err), &f.err);
    REQUIRE_OK(qp_graph_add_output(f.g, "a2", &f.err), &f.err);
    REQUIRE_OK(qp_graph_finalize(f.g, &f.err), &f.err);
    struct qp_tensor *x = TF32("x", 4, SHAPE(1, 3, 5, 37), NULL);
    REQUIRE(x);
    fill(x, 11);
    float *xv = x->data;
    xv[0] = -4.0f; /* clip(-1) = 0 */
    xv[1] = 5.0f;  /* clip(8) = 6: h = 5, a2 = 8, y = 5 */
    struct run_result a, b;
    REQUIRE(run_both(ctx, f.g, x, 2, &a, &b));
    const float *y = b.out[0]->data, *a2 = b.out[1]->data;
    CHECK(y[0] == 0.0f && a2[0] == 3.0f);
    CHECK(a2[1] == 8.0f && y[1] == 5.0f * 6.0f / 6.0f);
    for (size_t i = 2; i < qp_tensor_numel(x); i += 61) {
        float v = xv[i], c = 3.0f + v;
        c = c < 0 ? 0 : c > 6 ? 6 : c;
        float h = c * v * (1.0f / 6.0f), c2 = h + 3.0f;
        CHECK(a2[i] == c2);
        c2 = c2 < 0 ? 0 : c2 > 6 ? 6 : c2;
        CHECK(y[i] == h * c2 / 6.0f);
    }
    /* one pass for all eight */
    for (int i = 0; i < f.g->n_nodes; i++)
        CHECK_INT(b.pass[i], producer(f.g, "a"));
    release(&a);
    release(&b);
    qp_tensor_free(x);
    qp_graph_free(f.g);
}

/* Learnable affine blocks (Mul by a single value, then Add of one; the
 * pass runs each as one loop) in both operand orders, around a Relu, and
 * one whose Mul is also a graph output (so it must exist):
 *   m = 0.5 x; a = 0.25 + m; r = relu(a); m2 = r * 3; y = m2 + -1 */
QP_TEST(fuse_affine_chains_are_bit_identical)
{
    struct fg f;
    REQUIRE_OK(qp_graph_new("affine", &f.g, &f.err), &f.err);
    REQUIRE_OK(qp_graph_add_input(f.g, "x", QP_DTYPE_F32, 4, SHAPE(1, 2, 3, 41),
                                  &f.err), &f.err);
    REQUIRE(fg_const(&f, "half", 1, SHAPE(1), VALS(0.5)) &&
            fg_const(&f, "q", 0, NULL, VALS(0.25)) &&
            fg_const(&f, "three", 0, NULL, VALS(3)) &&
            fg_const(&f, "m1", 1, SHAPE(1), VALS(-1)));
    REQUIRE(NODE(&f, "Mul", "m", "x", "half") && NODE(&f, "Add", "a", "q", "m") &&
            NODE(&f, "Relu", "r", "a") && NODE(&f, "Mul", "m2", "r", "three") &&
            NODE(&f, "Add", "y", "m2", "m1"));
    REQUIRE_OK(qp_graph_add_output(f.g, "y", &f.err), &f.err);
    REQUIRE_OK(qp_graph_add_output(f.g, "m2", &f.err), &f.err);
    REQUIRE_OK(qp_graph_finalize(f.g, &f.err), &f.err);
    struct qp_tensor *x = TF32("x", 4, SHAPE(1, 2, 3, 41), NULL);
    REQUIRE(x);
    fill(x, 5);
    const float *xv = x->data;
    struct run_result a, b;
    REQUIRE(run_both(ctx, f.g, x, 2, &a, &b));
    const float *y = b.out[0]->data, *m2 = b.out[1]->data;
    for (size_t i = 0; i < qp_tensor_numel(x); i += 17) {
        float av = 0.25f + xv[i] * 0.5f, r = av > 0 ? av : 0;
        CHECK(m2[i] == r * 3.0f);
        CHECK(y[i] == r * 3.0f + -1.0f);
    }
    for (int i = 0; i < f.g->n_nodes; i++)
        CHECK_INT(b.pass[i], producer(f.g, "m"));
    release(&a);
    release(&b);
    qp_tensor_free(x);
    qp_graph_free(f.g);
}
