/* tests/unit/test-gemm-wq.c: the weight-decoding GEMM (kernels/gemm-wq.h):
 * every decoded element equals qp_tensor_read_f32's dequantization (the
 * fake mode's float copy) bit for bit, for float and integer weights of
 * every granularity, partial groups and odd widths included; the product
 * equals a double-precision one; bias and threads. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/half.h"
#include "core/parallel.h"
#include "kernels/gemm-wq.h"
#include "quant/rtn.h"
#include "quant/scheme.h"
#include "tests/test.h"

static struct qp_tensor *rand_weight(const char *name, int64_t n, int64_t k,
                                     unsigned seed)
{
    struct qp_tensor *t;
    struct qp_error err;
    int64_t shape[2] = {n, k};
    if (qp_tensor_new(name, QP_DTYPE_F32, 2, shape, &t, &err))
        return NULL;
    float *w = t->data;
    for (int64_t i = 0; i < n * k; i++) {
        seed = seed * 1664525u + 1013904223u;
        w[i] = ((float)(seed >> 8) / 16777216.0f - 0.5f) * (1.0f + (float)(i % 7));
    }
    return t;
}

static struct qp_tensor *quantized(const struct qp_tensor *w, const char *scheme)
{
    struct qp_scheme s;
    struct qp_error err;
    struct qp_tensor *q = NULL;
    struct qp_wquant_opts o = {QP_ROUND_HALF_EVEN, QP_WLAYOUT_TORCH};
    if (qp_scheme_parse(scheme, &s, NULL, &err) || qp_rtn_quantize(w, &s.w, &o, &q, &err))
        return NULL;
    return q;
}

/* y = x W^T in double with W as qp_tensor_read_f32 reads it. */
static void ref_gemm(const struct qp_tensor *w, const float *x, size_t m,
                     const float *bias, double *y)
{
    size_t n = (size_t)w->shape[0], k = (size_t)w->shape[1];
    float *row = malloc(k * sizeof *row);
    for (size_t j = 0; j < n; j++) {
        qp_tensor_read_f32(w, j * k, k, row);
        for (size_t r = 0; r < m; r++) {
            double s = bias ? bias[j] : 0;
            for (size_t i = 0; i < k; i++)
                s += (double)x[r * k + i] * row[i];
            y[r * n + j] = s;
        }
    }
    free(row);
}

/* Decode bit-exact against qp_tensor_read_f32 on rows [1, n-1) and columns
 * [3, k-2); the product within float rounding of the double one. */
static void check_weight(struct qp_test_ctx *ctx, const struct qp_tensor *w,
                         size_t m)
{
    struct qp_wq wq;
    struct qp_error err;
    REQUIRE_OK(qp_wq_init(&wq, w, &err), &err);
    size_t n = wq.n, k = wq.k, ni = k - 5;
    float *dec = malloc(n * k * sizeof *dec), *row = malloc(k * sizeof *row);
    qp_wq_decode(&wq, 1, n - 2, 3, ni, dec, ni);
    size_t bad = 0;
    for (size_t j = 1; j + 1 < n; j++) {
        qp_tensor_read_f32(w, j * k + 3, ni, row);
        bad += memcmp(row, dec + (j - 1) * ni, ni * sizeof *row) != 0;
    }
    if (bad)
        qp_test_failf(ctx, __FILE__, __LINE__, "'%s' (%s): %zu rows decode "
                      "differently", w->name, qp_dtype_name(w->dtype), bad);
    float *x = malloc(m * k * sizeof *x), *y = malloc(m * n * sizeof *y);
    float *bias = malloc(n * sizeof *bias);
    double *ref = malloc(m * n * sizeof *ref);
    for (size_t i = 0; i < m * k; i++)
        x[i] = (float)((int)(i * 37 % 101) - 50) / 25.0f;
    for (size_t j = 0; j < n; j++)
        bias[j] = (float)j / 8.0f;
    ref_gemm(w, x, m, bias, ref);
    struct qp_pool *pool = qp_pool_new(2), *serial = qp_pool_new(1);
    void *scratch = malloc(qp_gemm_wq_scratch_size(&wq, m, 2) + 16);
    qp_gemm_wq(pool, serial, &wq, x, k, m, bias, y, n, scratch);
    double e = 0, r = 0;
    for (size_t i = 0; i < m * n; i++) {
        e += (y[i] - ref[i]) * (y[i] - ref[i]);
        r += ref[i] * ref[i];
    }
    if (!(sqrt(e / r) < 1e-6))
        qp_test_failf(ctx, __FILE__, __LINE__, "'%s' (%s): product rel L2 %.3g",
                      w->name, qp_dtype_name(w->dtype), sqrt(e / r));
    qp_pool_free(pool);
    qp_pool_free(serial);
    free(scratch);
    free(dec);
    free(row);
    free(x);
    free(y);
    free(bias);
    free(ref);
}

QP_TEST(gemm_wq_float_weights)
{
    struct qp_tensor *w = rand_weight("w", 300, 515, 1);
    REQUIRE(w);
    check_weight(ctx, w, 37);
    /* the same values as bf16 and f16 */
    enum qp_dtype dts[2] = {QP_DTYPE_BF16, QP_DTYPE_F16};
    for (int d = 0; d < 2; d++) {
        struct qp_tensor *h;
        struct qp_error err;
        REQUIRE_OK(qp_tensor_new("wh", dts[d], 2, w->shape, &h, &err), &err);
        uint16_t *p = h->data;
        for (size_t i = 0; i < qp_tensor_numel(w); i++) {
            float v = ((float *)w->data)[i];
            p[i] = d ? qp_f32_to_f16(v) : qp_f32_to_bf16(v);
        }
        check_weight(ctx, h, d ? 5 : 1);
        qp_tensor_free(h);
    }
    qp_tensor_free(w);
}

QP_TEST(gemm_wq_integer_weights)
{
    /* k 515: odd (int4 rows start mid-byte), groups of 32 with a partial
     * last one; per channel, per tensor, symmetric and asymmetric */
    struct qp_tensor *w = rand_weight("w", 290, 515, 2);
    REQUIRE(w);
    const char *schemes[] = {"w4g32", "w4g128z", "w8c", "w8cz", "w4c", "w8t",
                             "w3g32", "w2c", "w6g64z"};
    for (size_t i = 0; i < sizeof schemes / sizeof schemes[0]; i++) {
        struct qp_tensor *q = quantized(w, schemes[i]);
        if (!q) {
            qp_test_failf(ctx, __FILE__, __LINE__, "quantize %s", schemes[i]);
            continue;
        }
        struct qp_wq wq;
        struct qp_error err;
        CHECK_OK(qp_wq_init(&wq, q, &err), &err);
        bool group = strchr(schemes[i], 'g') != NULL;
        if (group && !strcmp(schemes[i], "w4g32"))
            CHECK_INT(wq.gran, QP_WQ_GROUP);
        check_weight(ctx, q, i % 3 == 2 ? 1 : i % 2 ? 3 : 64);
        qp_tensor_free(q);
    }
    qp_tensor_free(w);
}

QP_TEST(gemm_wq_refuses_other_weights)
{
    struct qp_tensor *t;
    struct qp_error err;
    struct qp_wq wq;
    REQUIRE_OK(qp_tensor_new("w", QP_DTYPE_I8, 2, (int64_t[]){4, 4}, &t, &err), &err);
    CHECK_FAILS(qp_wq_init(&wq, t, &err), QP_E_UNSUPPORTED, &err,
                "weight 'w': i8 is not");
    qp_tensor_free(t);
    REQUIRE_OK(qp_tensor_new("v", QP_DTYPE_F32, 1, (int64_t[]){4}, &t, &err), &err);
    CHECK_FAILS(qp_wq_init(&wq, t, &err), QP_E_UNSUPPORTED, &err, "rank 1");
    qp_tensor_free(t);
}
