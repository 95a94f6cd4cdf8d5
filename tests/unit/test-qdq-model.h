/* tests/unit/test-qdq-model.h: ONNX models with QuantizeLinear /
 * DequantizeLinear nodes built byte by byte for the QDQ tests
 * (tests/unit/pbtest.h; field numbers from onnx.proto). */
#ifndef QP_TESTS_QDQ_MODEL_H
#define QP_TESTS_QDQ_MODEL_H

#include <stdlib.h>
#include <string.h>

#include "formats/onnx.h"
#include "model/onnx-import.h"
#include "tests/test.h"
#include "tests/unit/test-exec-onnx.h"

enum { G_NODE = 1, G_INIT = 5, G_INPUT = 11, G_OUTPUT = 12 };
/* TensorProto data types */
enum { T_F32 = 1, T_U8 = 2, T_I8 = 3, T_I32 = 6 };

/* An initializer: raw bytes of a tensor of type and dims. */
static inline void qm_init(struct pbe *g, const char *name, int type, int nd,
                           const int64_t *dims, const void *raw, size_t bytes)
{
    struct pbe t = {0};
    pbe_tensor_head(&t, dims, nd, type, name);
    pbe_bytes(&t, 9, raw, bytes);
    pbe_msg(g, G_INIT, &t);
}

static inline void qm_scalar_f(struct pbe *g, const char *name, float v)
{
    qm_init(g, name, T_F32, 0, NULL, &v, 4);
}

/* A scalar zero point of type (T_I8 or T_U8). */
static inline void qm_scalar_q(struct pbe *g, const char *name, int type,
                               int32_t v)
{
    uint8_t b = (uint8_t)v;
    qm_init(g, name, type, 0, NULL, &b, 1);
}

/* A node op(ins) -> out (ins comma-separated; "" for an absent input)
 * named after out, with attributes "kind:name=values;..." where kind is
 * i (INT), f (FLOAT) or is (INTS), e.g. "is:pads=1,1,1,1;f:alpha=0.1". */
static inline void qm_node(struct pbe *g, const char *op, const char *ins,
                           const char *out, const char *attrs)
{
    struct pbe n = {0};
    for (const char *s = ins; s;) {
        const char *comma = strchr(s, ',');
        size_t len = comma ? (size_t)(comma - s) : strlen(s);
        pbe_bytes(&n, 1, s, len);
        s = comma ? comma + 1 : NULL;
    }
    pbe_str(&n, 2, out);
    pbe_str(&n, 3, out);
    pbe_str(&n, 4, op);
    char buf[256];
    snprintf(buf, sizeof buf, "%s", attrs ? attrs : "");
    for (char *a = buf[0] ? buf : NULL, *next; a; a = next) {
        next = strchr(a, ';');
        if (next)
            *next++ = '\0';
        char *colon = strchr(a, ':'), *eq = strchr(a, '=');
        if (!colon || !eq)
            continue;
        *colon = *eq = '\0';
        struct pbe at = {0};
        pbe_str(&at, 1, colon + 1);
        if (!strcmp(a, "f")) {
            pbe_f32(&at, 2, strtof(eq + 1, NULL));
            pbe_int(&at, 20, 1);
        } else if (!strcmp(a, "i")) {
            pbe_int(&at, 3, strtoll(eq + 1, NULL, 10));
            pbe_int(&at, 20, 2);
        } else {
            for (char *v = eq + 1; v && *v;) {
                pbe_int(&at, 8, strtoll(v, &v, 10));
                v = *v == ',' ? v + 1 : NULL;
            }
            pbe_int(&at, 20, 7);
        }
        pbe_msg(&n, 5, &at);
    }
    pbe_msg(g, G_NODE, &n);
}

/* The model bytes of graph g (opset 13), in *out (malloc'd). */
static inline void qm_model(struct pbe *g, struct pbe *m)
{
    struct pbe o = {0};
    memset(m, 0, sizeof *m);
    pbe_int(m, 1, 8);
    pbe_str(&o, 1, "");
    pbe_int(&o, 2, 13);
    pbe_msg(m, 8, &o);
    pbe_msg(m, 7, g);
}

static inline struct qp_graph *qm_load(struct qp_test_ctx *ctx,
                                       const struct pbe *m)
{
    struct qp_error err;
    struct qp_onnx_model *om;
    struct qp_graph *g = NULL;
    enum qp_status st = qp_onnx_parse("qdq.onnx", m->p, m->n, NULL, NULL, &om, &err);
    if (!st)
        st = qp_model_from_onnx(om, NULL, &g, &err);
    CHECK_OK(st, &err);
    return g;
}

#endif
