/* The ONNX node tests of libonnx-testdata for QuantizeLinear,
 * DequantizeLinear and DynamicQuantizeLinear (outputs of the ONNX reference
 * implementation) through kernels/quantize-act.h, bit for bit. The axis
 * attribute comes from each model.onnx. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/onnx.h"
#include "formats/tensorproto.h"
#include "kernels/quantize-act.h"
#include "tests/test.h"

#define NODE_DIR "/usr/share/libonnx-testdata/data/node"

static struct qp_tensor *pb(struct qp_test_ctx *ctx, const char *dir,
                            const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s.pb", dir, name);
    struct qp_error err;
    struct qp_tensor *t = NULL;
    if (qp_fmt_pb_load(path, &t, &err) != QP_OK)
        qp_test_failf(ctx, __FILE__, __LINE__, "%s", err.msg);
    return t;
}

/* The model's single node, checked to be op; NULL with a failure. */
static struct qp_onnx_model *node_model(struct qp_test_ctx *ctx,
                                        const char *test, const char *op,
                                        const struct qp_onnx_node **node)
{
    char path[512];
    snprintf(path, sizeof path, NODE_DIR "/%s/model.onnx", test);
    struct qp_error err;
    struct qp_onnx_model *m = NULL;
    if (qp_onnx_load(path, &m, &err) != QP_OK) {
        qp_test_failf(ctx, __FILE__, __LINE__, "%s", err.msg);
        return NULL;
    }
    *node = NULL;
    for (size_t i = 0; i < m->graph->n_nodes; i++)
        if (qp_onnx_node_is(&m->graph->nodes[i], op))
            *node = &m->graph->nodes[i];
    if (!*node) {
        qp_test_failf(ctx, __FILE__, __LINE__, "%s: no %s node", path, op);
        qp_onnx_model_free(m);
        return NULL;
    }
    return m;
}

/* [outer, channels, inner] of x for a scale of `ns` values along axis. */
static bool split_axis(const struct qp_tensor *x, int64_t axis, size_t ns,
                       size_t *outer, size_t *channels, size_t *inner)
{
    *outer = 1;
    *channels = 1;
    *inner = qp_tensor_numel(x);
    if (ns == 1)
        return true;
    if (axis < 0)
        axis += x->ndim;
    if (axis < 0 || axis >= x->ndim || (size_t)x->shape[axis] != ns)
        return false;
    *inner = 1;
    for (int d = 0; d < x->ndim; d++) {
        if (d < axis)
            *outer *= (size_t)x->shape[d];
        else if (d > axis)
            *inner *= (size_t)x->shape[d];
    }
    *channels = ns;
    return true;
}

/* Zero points as int32 (NULL when absent). */
static int32_t *zero_points(const struct qp_tensor *z)
{
    if (!z)
        return NULL;
    size_t n = qp_tensor_numel(z);
    int32_t *v = malloc(n * sizeof *v);
    for (size_t i = 0; v && i < n; i++)
        v[i] = z->dtype == QP_DTYPE_U8 ? ((const uint8_t *)z->data)[i]
             : z->dtype == QP_DTYPE_I8 ? ((const int8_t *)z->data)[i]
                                       : ((const int32_t *)z->data)[i];
    return v;
}

/* Runs test_data_set_0 of a Quantize/DequantizeLinear node test. */
static int run_linear(struct qp_test_ctx *ctx, const char *test, bool quantize)
{
    const struct qp_onnx_node *node;
    struct qp_onnx_model *m = node_model(ctx, test, quantize ? "QuantizeLinear"
                                                             : "DequantizeLinear", &node);
    if (!m)
        return 0;
    struct qp_error err;
    int64_t axis = 1;
    CHECK_OK(qp_onnx_attr_int(node, "axis", 1, &axis, &err), &err);
    char dir[512];
    snprintf(dir, sizeof dir, NODE_DIR "/%s/test_data_set_0", test);
    struct qp_tensor *x = pb(ctx, dir, "input_0"), *s = pb(ctx, dir, "input_1");
    struct qp_tensor *z = node->n_inputs > 2 && node->inputs[2][0] ? pb(ctx, dir, "input_2")
                                                                   : NULL;
    struct qp_tensor *y = pb(ctx, dir, "output_0");
    int checked = 0;
    size_t outer, ch, inner;
    if (!x || !s || !y || s->dtype != QP_DTYPE_F32 ||
        !split_axis(x, axis, qp_tensor_numel(s), &outer, &ch, &inner)) {
        qp_test_failf(ctx, __FILE__, __LINE__, "%s: unexpected inputs", test);
        goto done;
    }
    int32_t *zp = zero_points(z);
    size_t n = qp_tensor_numel(x);
    void *out = calloc(n, 4);
    if (quantize) {
        CHECK_INT(y->dtype, z ? z->dtype : QP_DTYPE_U8);
        CHECK_OK(qp_qa_quantize(QP_QA_ONNX, x->data, outer, ch, inner, s->data, zp,
                                y->dtype, out, &err), &err);
        CHECK(!memcmp(out, y->data, y->nbytes));
    } else {
        CHECK_INT(y->dtype, QP_DTYPE_F32);
        CHECK_OK(qp_qa_dequantize(x->data, x->dtype, outer, ch, inner, s->data, zp, out,
                                  &err), &err);
        for (size_t i = 0; i < n; i++)
            if (((float *)out)[i] != ((float *)y->data)[i])
                qp_test_failf(ctx, __FILE__, __LINE__, "%s [%zu]: %g, expected %g", test,
                              i, (double)((float *)out)[i], (double)((float *)y->data)[i]);
    }
    checked = (int)n;
    free(out);
    free(zp);
done:
    qp_tensor_free(x);
    qp_tensor_free(s);
    qp_tensor_free(z);
    qp_tensor_free(y);
    qp_onnx_model_free(m);
    return checked;
}

QP_TEST(onnx_node_quantize_dequantize_linear)
{
    CHECK(run_linear(ctx, "test_quantizelinear", true) > 0);
    CHECK(run_linear(ctx, "test_quantizelinear_axis", true) > 0);
    CHECK(run_linear(ctx, "test_dequantizelinear", false) > 0);
    CHECK(run_linear(ctx, "test_dequantizelinear_axis", false) > 0);
}

QP_TEST(onnx_node_dynamic_quantize_linear)
{
    static const char *const tests[] = {
        "test_dynamicquantizelinear", "test_dynamicquantizelinear_expanded",
        "test_dynamicquantizelinear_max_adjusted",
        "test_dynamicquantizelinear_max_adjusted_expanded",
        "test_dynamicquantizelinear_min_adjusted",
        "test_dynamicquantizelinear_min_adjusted_expanded"};
    for (size_t k = 0; k < sizeof tests / sizeof tests[0]; k++) {
        char dir[512];
        snprintf(dir, sizeof dir, NODE_DIR "/%s/test_data_set_0", tests[k]);
        struct qp_tensor *x = pb(ctx, dir, "input_0"), *y = pb(ctx, dir, "output_0"),
                         *ys = pb(ctx, dir, "output_1"), *yz = pb(ctx, dir, "output_2");
        if (x && y && ys && yz && x->dtype == QP_DTYPE_F32 && y->dtype == QP_DTYPE_U8 &&
            ys->dtype == QP_DTYPE_F32 && yz->dtype == QP_DTYPE_U8) {
            size_t n = qp_tensor_numel(x);
            uint8_t *q = calloc(n, 1), zp;
            float s;
            qp_qa_dynamic_u8(x->data, n, &s, &zp, q);
            CHECK(s == *(const float *)ys->data);
            CHECK_INT(zp, *(const uint8_t *)yz->data);
            CHECK(!memcmp(q, y->data, n));
            free(q);
        } else {
            qp_test_failf(ctx, __FILE__, __LINE__, "%s: unexpected tensors", tests[k]);
        }
        qp_tensor_free(x);
        qp_tensor_free(y);
        qp_tensor_free(ys);
        qp_tensor_free(yz);
    }
}
