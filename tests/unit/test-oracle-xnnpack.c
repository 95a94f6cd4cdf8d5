/* Live oracle: random int8 fully-connected layers (qs8, per-tensor scale)
 * and per-channel convolutions (qc8) run through XNNPACK's operator API
 * (Debian libxnnpack 0.0~git20220216) and through our kernels with the
 * xnnpack-fp32 flavor, whose scale is derived from the same float scales;
 * the outputs must be equal byte for byte, for every instruction set. */
#include <stdlib.h>
#include <string.h>
#include <xnnpack.h>

#include "kernels/conv-s8.h"
#include "kernels/gemm-s8.h"
#include "tests/test.h"
#include "tests/unit/kern-test.h"

/* uniform float in [lo, hi) */
static float frand(uint64_t *r, float lo, float hi)
{
    return lo + (hi - lo) * (float)(kt_next(r) >> 40) / (float)(1 << 24);
}

struct layer {
    int8_t izp, ozp, qmin, qmax;
    float in_scale, out_scale, *w_scale;
    int32_t *bias;
};

/* Scales that keep the outputs inside the int8 range most of the time, so
 * rounding (not only clamping) is exercised: |acc| ~ 128 * 128 * sqrt(k). */
static bool layer_init(uint64_t *r, struct layer *l, size_t oc, size_t k,
                       bool per_channel)
{
    l->izp = (int8_t)kt_range(r, -128, 127);
    l->ozp = (int8_t)kt_range(r, -60, 60);
    l->qmin = (int8_t)(kt_next(r) % 3 ? -128 : kt_range(r, -128, -2));
    l->qmax = (int8_t)(kt_next(r) % 3 ? 127 : kt_range(r, 1, 127));
    l->in_scale = frand(r, 0.002f, 0.05f);
    l->w_scale = malloc(oc * sizeof *l->w_scale);
    l->bias = malloc(oc * sizeof *l->bias);
    if (!l->w_scale || !l->bias)
        return false;
    float w0 = frand(r, 0.001f, 0.02f);
    for (size_t j = 0; j < oc; j++) {
        l->w_scale[j] = per_channel ? frand(r, 0.001f, 0.02f) : w0;
        l->bias[j] = kt_range(r, -20000, 20000);
    }
    double spread = 128.0 * 128.0 * sqrt((double)k) / 40.0;
    l->out_scale = (float)(l->in_scale * w0 * spread) * frand(r, 0.5f, 2.0f);
    return true;
}

static void layer_free(struct layer *l)
{
    free(l->w_scale);
    free(l->bias);
}

static bool our_rq(struct qp_test_ctx *ctx, const struct layer *l, size_t oc,
                   struct qp_rq *rq)
{
    struct qp_error err;
    if (qp_rq_prepare_scales(rq, QP_RQ_XNNPACK_FP32, l->in_scale, l->w_scale,
                             oc, l->out_scale, l->ozp, QP_DTYPE_I8, l->qmin,
                             l->qmax, &err)) {
        qp_test_failf(ctx, __FILE__, __LINE__, "rq: %s", err.msg);
        return false;
    }
    return true;
}

static void compare(struct qp_test_ctx *ctx, const char *what, int it,
                    enum qp_kern_isa isa, const int8_t *got,
                    const int8_t *want, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (got[i] != want[i]) {
            qp_test_failf(ctx, __FILE__, __LINE__,
                          "%s case %d [%s]: element %zu is %d, XNNPACK %d",
                          what, it, qp_kern_isa_name(isa), i, got[i], want[i]);
            return;
        }
}

QP_TEST(oracle_xnnpack_qs8_fully_connected)
{
    REQUIRE(xnn_initialize(NULL) == xnn_status_success);
    uint64_t r = 0xfc;
    enum qp_kern_isa isas[QP_KERN_ISA_COUNT];
    size_t nisa = kt_isas(isas);
    for (int it = 0; it < 80; it++) {
        size_t m = 1 + kt_next(&r) % 6, k = 1 + kt_next(&r) % 300;
        size_t n = 1 + kt_next(&r) % 70;
        struct layer l;
        int8_t *a = malloc(m * k), *b = malloc(n * k);
        int8_t *want = malloc(m * n), *got = malloc(m * n);
        REQUIRE(a && b && want && got && layer_init(&r, &l, n, k, false));
        kt_fill8(&r, (uint8_t *)a, m * k, it % 7 == 0);
        kt_fill8(&r, (uint8_t *)b, n * k, it % 7 == 0);
        xnn_operator_t op = NULL;
        REQUIRE(xnn_create_fully_connected_nc_qs8(
                    k, n, k, n, l.izp, l.in_scale, l.w_scale[0], b, l.bias,
                    l.ozp, l.out_scale, l.qmin, l.qmax, 0, &op) ==
                xnn_status_success);
        REQUIRE(xnn_setup_fully_connected_nc_qs8(op, m, a, want, NULL) ==
                xnn_status_success);
        REQUIRE(xnn_run_operator(op, NULL) == xnn_status_success);
        xnn_delete_operator(op);

        struct qp_rq rq;
        REQUIRE(our_rq(ctx, &l, 1, &rq));
        struct qp_gemm_s8_params p = {
            .n = n, .k = k, .a_dtype = QP_DTYPE_I8, .b_dtype = QP_DTYPE_I8,
            .a_zero_point = l.izp, .bias = l.bias, .rq = &rq};
        for (size_t i = 0; i < nisa; i++) {
            struct qp_gemm_s8 g;
            struct qp_error err;
            p.isa = isas[i];
            REQUIRE_OK(qp_gemm_s8_prepare(&g, &p, b, k, &err), &err);
            void *s = malloc(qp_gemm_s8_scratch_size(&g, m) + 1);
            memset(got, 0x55, m * n);
            CHECK_OK(qp_gemm_s8_run(&g, a, m, k, got, n, s, &err), &err);
            compare(ctx, "fc", it, isas[i], got, want, m * n);
            free(s);
            qp_gemm_s8_release(&g);
        }
        qp_rq_release(&rq);
        layer_free(&l);
        free(a);
        free(b);
        free(want);
        free(got);
    }
}

QP_TEST(oracle_xnnpack_qc8_convolution)
{
    REQUIRE(xnn_initialize(NULL) == xnn_status_success);
    uint64_t r = 0xc8;
    enum qp_kern_isa isas[QP_KERN_ISA_COUNT];
    size_t nisa = kt_isas(isas);
    for (int it = 0; it < 60; it++) {
        size_t batch = 1 + kt_next(&r) % 2, h = 1 + kt_next(&r) % 10;
        size_t w = 1 + kt_next(&r) % 10, kh = 1 + kt_next(&r) % 3;
        size_t kw = 1 + kt_next(&r) % 3, s = 1 + kt_next(&r) % 2;
        size_t d = 1 + kt_next(&r) % 2, pad = kt_next(&r) % 2;
        size_t groups = it % 4 == 0 ? 1 + kt_next(&r) % 3 : 1;
        size_t icg = 1 + kt_next(&r) % 24, ocg = 1 + kt_next(&r) % 40;
        if (it % 5 == 1) { /* depthwise: one input channel per group */
            groups = 1 + kt_next(&r) % 16;
            icg = 1;
            ocg = 1 + kt_next(&r) % 2;
        }
        while (d * (kh - 1) + 1 > h + 2 * pad)
            kh--;
        while (d * (kw - 1) + 1 > w + 2 * pad)
            kw--;
        size_t ic = groups * icg, oc = groups * ocg;
        size_t oh = (h + 2 * pad - d * (kh - 1) - 1) / s + 1;
        size_t ow = (w + 2 * pad - d * (kw - 1) - 1) / s + 1;
        size_t nin = batch * h * w * ic, nf = oc * kh * kw * icg;
        size_t nout = batch * oh * ow * oc;
        struct layer l;
        int8_t *in = malloc(nin), *f = malloc(nf);
        int8_t *want = malloc(nout), *got = malloc(nout);
        REQUIRE(in && f && want && got &&
                layer_init(&r, &l, oc, kh * kw * icg, true));
        kt_fill8(&r, (uint8_t *)in, nin, it % 9 == 0);
        kt_fill8(&r, (uint8_t *)f, nf, it % 9 == 0);
        xnn_operator_t op = NULL;
        uint32_t p32 = (uint32_t)pad;
        REQUIRE(xnn_create_convolution2d_nhwc_qc8(
                    p32, p32, p32, p32, (uint32_t)kh, (uint32_t)kw,
                    (uint32_t)s, (uint32_t)s, (uint32_t)d, (uint32_t)d,
                    (uint32_t)groups, icg, ocg, ic, oc, l.izp, l.in_scale,
                    l.w_scale, f, l.bias, l.ozp, l.out_scale, l.qmin, l.qmax,
                    0, &op) == xnn_status_success);
        REQUIRE(xnn_setup_convolution2d_nhwc_qc8(op, batch, h, w, in, want,
                                                 NULL) == xnn_status_success);
        REQUIRE(xnn_run_operator(op, NULL) == xnn_status_success);
        xnn_delete_operator(op);

        struct qp_rq rq;
        REQUIRE(our_rq(ctx, &l, oc, &rq));
        struct qp_conv_s8_params p = {
            .layout = QP_CONV_NHWC,
            .geom = {h, w, kh, kw, s, s, d, d, pad, pad, pad, pad},
            .in_c = ic, .out_c = oc, .groups = groups,
            .in_dtype = QP_DTYPE_I8, .filter_dtype = QP_DTYPE_I8,
            .input_zero_point = l.izp, .bias = l.bias, .rq = &rq};
        for (size_t i = 0; i < nisa; i++) {
            struct qp_conv_s8 c;
            struct qp_error err;
            p.isa = isas[i];
            REQUIRE_OK(qp_conv_s8_prepare(&c, &p, f, &err), &err);
            void *sc = malloc(qp_conv_s8_scratch_size(&c, batch) + 1);
            memset(got, 0x55, nout);
            CHECK_OK(qp_conv_s8_run(&c, in, batch, got, sc, &err), &err);
            compare(ctx, "conv", it, isas[i], got, want, nout);
            free(sc);
            qp_conv_s8_release(&c);
        }
        qp_rq_release(&rq);
        layer_free(&l);
        free(in);
        free(f);
        free(want);
        free(got);
    }
}
