/* Unit tests of the convolution kernels (kernels/conv-s8.h,
 * kernels/depthwise-s8.h): the references against hand-computed values and
 * against each other (layouts, depthwise vs grouped conv), every variant
 * against the reference on random and adversarial shapes, and the
 * parameter checks. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/conv-s8.h"
#include "kernels/depthwise-s8.h"
#include "tests/test.h"
#include "tests/unit/kern-test.h"

static bool conv(struct qp_test_ctx *ctx, const struct qp_conv_s8_params *p,
                 const void *f, const void *in, size_t batch, void *out)
{
    struct qp_conv_s8 c;
    struct qp_error err;
    if (qp_conv_s8_prepare(&c, p, f, &err)) {
        qp_test_failf(ctx, __FILE__, __LINE__, "prepare: %s", err.msg);
        return false;
    }
    void *s = malloc(qp_conv_s8_scratch_size(&c, batch) + 1);
    enum qp_status st = qp_conv_s8_run(&c, in, batch, out, s, &err);
    if (st)
        qp_test_failf(ctx, __FILE__, __LINE__, "run: %s", err.msg);
    free(s);
    qp_conv_s8_release(&c);
    return st == QP_OK;
}

static bool dwconv(struct qp_test_ctx *ctx, const struct qp_dw_s8_params *p,
                   const void *f, const void *in, size_t batch, void *out)
{
    struct qp_dw_s8 d;
    struct qp_error err;
    if (qp_dw_s8_prepare(&d, p, f, &err)) {
        qp_test_failf(ctx, __FILE__, __LINE__, "prepare: %s", err.msg);
        return false;
    }
    void *s = malloc(qp_dw_s8_scratch_size(&d, batch) + 1);
    enum qp_status st = qp_dw_s8_run(&d, in, batch, out, s, &err);
    if (st)
        qp_test_failf(ctx, __FILE__, __LINE__, "run: %s", err.msg);
    free(s);
    qp_dw_s8_release(&d);
    return st == QP_OK;
}

static struct qp_conv_geom geom(size_t h, size_t w, size_t kh, size_t kw,
                                size_t s, size_t d, size_t pt, size_t pl,
                                size_t pb, size_t pr)
{
    return (struct qp_conv_geom){h, w, kh, kw, s, s, d, d, pt, pl, pb, pr};
}

QP_TEST(conv_ref_hand_computed_padding_and_zero_point)
{
    /* in 3x3 = [[1,2,3],[4,5,6],[7,8,9]], zp 1; filter 2x2 [[1,0],[0,-1]];
     * pad_top 1: out[oy][ox] = (in[oy-1][ox]-1) - (in[oy][ox+1]-1), the
     * first term skipped for oy = 0 (a padded tap adds nothing) */
    static const int8_t in[] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
    static const int8_t f[] = {1, 0, 0, -1};
    static const int32_t want[] = {-1, -2, -4, -4, -4, -4};
    struct qp_conv_s8_params p = {
        .geom = geom(3, 3, 2, 2, 1, 1, 1, 0, 0, 0), .in_c = 1, .out_c = 1,
        .groups = 1, .in_dtype = QP_DTYPE_I8, .filter_dtype = QP_DTYPE_I8,
        .input_zero_point = 1};
    enum qp_kern_isa isas[QP_KERN_ISA_COUNT];
    size_t n = kt_isas(isas);
    for (int layout = 0; layout < 2; layout++) /* C = 1: same bytes */
        for (size_t i = 0; i < n; i++) {
            int32_t out[6] = {0};
            p.layout = (enum qp_conv_layout)layout;
            p.isa = isas[i];
            REQUIRE(conv(ctx, &p, f, in, 1, out));
            for (int j = 0; j < 6; j++)
                CHECK_INT(out[j], want[j]);
        }
}

QP_TEST(conv_ref_hand_computed_stride_dilation_groups)
{
    /* in 5x5 x 2 channels: channel 0 = 5y + x, channel 1 = -(5y + x);
     * 2 groups, each a 2x2 filter of ones (group 1: of twos), dilation 2,
     * stride 2: out[oy][ox][g] = w_g * sum of in at (2oy + {0,2},
     * 2ox + {0,2}) */
    int8_t in[50];
    for (int y = 0; y < 5; y++)
        for (int x = 0; x < 5; x++) {
            in[(y * 5 + x) * 2] = (int8_t)(5 * y + x);
            in[(y * 5 + x) * 2 + 1] = (int8_t)-(5 * y + x);
        }
    static const int8_t f[] = {1, 1, 1, 1, 2, 2, 2, 2};
    static const int32_t bias[] = {100, 0};
    static const int32_t want[] = {124, -48, 132, -64, 164, -128, 172, -144};
    struct qp_conv_s8_params p = {
        .geom = geom(5, 5, 2, 2, 2, 2, 0, 0, 0, 0), .in_c = 2, .out_c = 2,
        .groups = 2, .in_dtype = QP_DTYPE_I8, .filter_dtype = QP_DTYPE_I8,
        .bias = bias};
    enum qp_kern_isa isas[QP_KERN_ISA_COUNT];
    size_t n = kt_isas(isas);
    for (size_t i = 0; i < n; i++) {
        int32_t out[8] = {0};
        p.isa = isas[i];
        REQUIRE(conv(ctx, &p, f, in, 1, out));
        for (int j = 0; j < 8; j++)
            CHECK_INT(out[j], want[j]);
    }
}

/* A random convolution problem. */
struct cprob {
    enum qp_conv_layout layout;
    size_t batch, h, w, ic, oc, groups, kh, kw, stride, dil, pt, pl, pb, pr;
    enum qp_dtype idt, fdt;
    int32_t izp;
    int extreme, requant, per_channel, bias, threads;
    int wide_fzp; /* filter zero points past int16 from the weights */
};

static void random_cprob(uint64_t *r, struct cprob *q)
{
    memset(q, 0, sizeof *q);
    q->layout = (enum qp_conv_layout)(kt_next(r) % 2);
    q->batch = 1 + kt_next(r) % 2;
    q->h = 1 + kt_next(r) % 9;
    q->w = 1 + kt_next(r) % 9;
    q->kh = 1 + kt_next(r) % 3;
    q->kw = 1 + kt_next(r) % 3;
    q->stride = 1 + kt_next(r) % 3;
    q->dil = 1 + kt_next(r) % 2;
    q->pt = kt_next(r) % 3;
    q->pl = kt_next(r) % 3;
    q->pb = kt_next(r) % 3;
    q->pr = kt_next(r) % 3;
    /* the dilated kernel must fit the padded input */
    while (q->dil * (q->kh - 1) + 1 > q->h + q->pt + q->pb)
        q->kh > 1 ? q->kh-- : q->pb++;
    while (q->dil * (q->kw - 1) + 1 > q->w + q->pl + q->pr)
        q->kw > 1 ? q->kw-- : q->pr++;
    switch (kt_next(r) % 4) {
    case 0: /* depthwise, depth multiplier 1..3 */
        q->ic = q->groups = 1 + kt_next(r) % 20;
        q->oc = q->ic * (1 + kt_next(r) % 3);
        break;
    case 1: /* grouped */
        q->groups = 2 + kt_next(r) % 3;
        q->ic = q->groups * (1 + kt_next(r) % 5);
        q->oc = q->groups * (1 + kt_next(r) % 20);
        break;
    default:
        q->groups = 1;
        q->ic = 1 + kt_next(r) % 40;
        q->oc = 1 + kt_next(r) % 70;
    }
    q->idt = kt_next(r) % 3 ? QP_DTYPE_I8 : QP_DTYPE_U8;
    q->fdt = kt_next(r) % 4 ? QP_DTYPE_I8 : QP_DTYPE_U8;
    q->extreme = kt_next(r) % 6 == 0;
    switch (kt_next(r) % 8) {
    case 0: /* not a value of the dtype: the reference path */
        q->izp = q->idt == QP_DTYPE_I8 ? 128 : -1;
        break;
    case 1:
        q->izp = q->idt == QP_DTYPE_I8 ? -128 : 255;
        break;
    default:
        q->izp = q->idt == QP_DTYPE_I8 ? kt_range(r, -128, 127)
                                       : kt_range(r, 0, 255);
    }
    q->requant = kt_next(r) % 3 != 0;
    q->per_channel = kt_next(r) % 2;
    q->bias = kt_next(r) % 4 != 0;
    q->threads = 1 + kt_next(r) % 2;
}

static void check_cprob(struct qp_test_ctx *ctx, uint64_t *r,
                        const struct cprob *q)
{
    size_t oh = (q->h + q->pt + q->pb - q->dil * (q->kh - 1) - 1) / q->stride + 1;
    size_t ow = (q->w + q->pl + q->pr - q->dil * (q->kw - 1) - 1) / q->stride + 1;
    size_t nin = q->batch * q->h * q->w * q->ic;
    size_t nf = q->oc * q->kh * q->kw * (q->ic / q->groups);
    size_t nout = q->batch * oh * ow * q->oc * 4;
    uint8_t *in = malloc(nin), *f = malloc(nf);
    int32_t *bias = malloc(q->oc * 4), *fzp = malloc(q->oc * 4);
    int32_t *mult = malloc(q->oc * 4), *shift = malloc(q->oc * 4);
    char *want = malloc(nout), *got = malloc(nout);
    REQUIRE(in && f && bias && fzp && mult && shift && want && got);
    kt_fill8(r, in, nin, q->extreme);
    kt_fill8(r, f, nf, q->extreme);
    for (size_t j = 0; j < q->oc; j++) {
        bias[j] = q->extreme ? INT32_MAX - (int32_t)j : kt_range(r, -5000, 5000);
        fzp[j] = q->wide_fzp ? kt_range(r, 40000, 50000)
                 : q->fdt == QP_DTYPE_I8 ? kt_range(r, -10, 10)
                                         : kt_range(r, 100, 150);
        mult[j] = kt_range(r, 1 << 30, INT32_MAX);
        shift[j] = kt_range(r, -10, 1);
    }
    struct qp_rq rq;
    struct qp_error err;
    REQUIRE_OK(qp_rq_prepare_fixed(&rq, QP_RQ_TFLITE_SINGLE, mult, shift,
                                   q->per_channel ? q->oc : 1, 5, QP_DTYPE_I8,
                                   -100, 120, &err),
               &err);
    struct qp_conv_s8_params p = {
        .layout = q->layout,
        .geom = {q->h, q->w, q->kh, q->kw, q->stride, q->stride, q->dil,
                 q->dil, q->pt, q->pl, q->pb, q->pr},
        .in_c = q->ic, .out_c = q->oc, .groups = q->groups,
        .in_dtype = q->idt, .filter_dtype = q->fdt,
        .input_zero_point = q->izp, .filter_zero_point = fzp,
        .filter_zero_points = q->per_channel ? q->oc : 1,
        .bias = q->bias ? bias : NULL, .rq = q->requant ? &rq : NULL,
        .threads = q->threads};
    memset(want, 0x11, nout);
    qp_conv_s8_ref(&p, f, in, q->batch, want);
    enum qp_kern_isa isas[QP_KERN_ISA_COUNT];
    size_t n = kt_isas(isas);
    for (size_t i = 0; i < n; i++) {
        p.isa = isas[i];
        memset(got, 0x11, nout);
        if (!conv(ctx, &p, f, in, q->batch, got))
            break;
        if (memcmp(got, want, nout))
            qp_test_failf(ctx, __FILE__, __LINE__,
                          "[%s] %s N%zu %zux%zux%zu -> %zu, groups %zu, "
                          "kernel %zux%zu stride %zu dil %zu pad %zu,%zu,%zu,"
                          "%zu %s x %s zp %d differs from the reference",
                          qp_kern_isa_name(isas[i]),
                          q->layout ? "NCHW" : "NHWC", q->batch, q->h, q->w,
                          q->ic, q->oc, q->groups, q->kh, q->kw, q->stride,
                          q->dil, q->pt, q->pl, q->pb, q->pr,
                          qp_dtype_name(q->idt), qp_dtype_name(q->fdt), q->izp);
    }
    qp_rq_release(&rq);
    free(in);
    free(f);
    free(bias);
    free(fzp);
    free(mult);
    free(shift);
    free(want);
    free(got);
}

QP_TEST(conv_variants_match_reference_random)
{
    uint64_t r = 0xc0ffee;
    for (int i = 0; i < 150; i++) {
        struct cprob q;
        random_cprob(&r, &q);
        check_cprob(ctx, &r, &q);
    }
}

QP_TEST(conv_variants_match_reference_paths)
{
    uint64_t r = 7;
    /* 1x1 stride 1: the input is the GEMM operand */
    struct cprob q = {.layout = QP_CONV_NHWC, .batch = 2, .h = 7, .w = 5,
                      .ic = 37, .oc = 50, .groups = 1, .kh = 1, .kw = 1,
                      .stride = 1, .dil = 1, .idt = QP_DTYPE_I8,
                      .fdt = QP_DTYPE_I8, .izp = -7, .requant = 1,
                      .per_channel = 1, .bias = 1, .threads = 2};
    check_cprob(ctx, &r, &q);
    /* big enough to use both threads, with padding */
    q.h = q.w = 24;
    q.ic = 16;
    q.oc = 40;
    q.kh = q.kw = 3;
    q.pt = q.pl = q.pb = q.pr = 1;
    check_cprob(ctx, &r, &q);
    /* the same in NCHW with uint8 input */
    q.layout = QP_CONV_NCHW;
    q.idt = QP_DTYPE_U8;
    q.izp = 131;
    check_cprob(ctx, &r, &q);
    /* few pixels, many channels: threads share tiles of 8 pixels */
    struct cprob few = q;
    few.h = few.w = 4;
    few.ic = 64;
    few.oc = 500;
    check_cprob(ctx, &r, &few);
    /* depthwise with depth multiplier 2, threaded */
    q.groups = q.ic = 24;
    q.oc = 48;
    q.layout = QP_CONV_NHWC;
    check_cprob(ctx, &r, &q);
}

/* [N][H][W][C] -> [N][C][H][W] */
static void to_nchw(const uint8_t *s, uint8_t *d, size_t n, size_t hw,
                    size_t c, size_t es)
{
    for (size_t b = 0; b < n; b++)
        for (size_t i = 0; i < hw; i++)
            for (size_t j = 0; j < c; j++)
                memcpy(d + ((b * c + j) * hw + i) * es,
                       s + ((b * hw + i) * c + j) * es, es);
}

QP_TEST(conv_ref_nchw_equals_transposed_nhwc)
{
    /* the reference's NCHW indexing against its NHWC indexing */
    uint64_t r = 5;
    enum { B = 2, H = 6, W = 5, IC = 4, OC = 6, G = 2, KH = 3, KW = 2 };
    uint8_t in[B * H * W * IC], in2[sizeof in];
    uint8_t f[OC * KH * KW * (IC / G)], f2[sizeof f];
    int32_t o1[B * 3 * 4 * OC], o2[sizeof o1 / 4], o3[sizeof o1 / 4];
    kt_fill8(&r, in, sizeof in, 0);
    kt_fill8(&r, f, sizeof f, 0);
    struct qp_conv_s8_params p = {
        .layout = QP_CONV_NHWC, .geom = geom(H, W, KH, KW, 2, 1, 1, 2, 0, 1),
        .in_c = IC, .out_c = OC, .groups = G, .in_dtype = QP_DTYPE_I8,
        .filter_dtype = QP_DTYPE_I8, .input_zero_point = 3};
    size_t oh, ow;
    struct qp_error err;
    REQUIRE_OK(qp_conv_geom_out(&p.geom, "conv", &oh, &ow, &err), &err);
    CHECK_INT(oh, 3); /* (6 + 1 + 0 - 3) / 2 + 1 */
    CHECK_INT(ow, 4); /* (5 + 2 + 1 - 2) / 2 + 1 */
    qp_conv_s8_ref(&p, f, in, B, o1);
    to_nchw(in, in2, B, H * W, IC, 1);
    to_nchw(f, f2, OC, KH * KW, IC / G, 1); /* OHWI -> OIHW */
    p.layout = QP_CONV_NCHW;
    qp_conv_s8_ref(&p, f2, in2, B, o2);
    to_nchw((uint8_t *)o1, (uint8_t *)o3, B, oh * ow, OC, 4);
    CHECK(!memcmp(o2, o3, sizeof o2));
}

QP_TEST(depthwise_ref_equals_grouped_conv_ref)
{
    /* TFLite depthwise [1,KH,KW,IC*dm] against conv with IC groups and the
     * filter rearranged to OHWI [IC*dm,KH,KW,1] */
    uint64_t r = 11;
    enum { B = 1, H = 7, W = 6, IC = 5, DM = 3, OC = IC * DM, KH = 3, KW = 3 };
    uint8_t in[B * H * W * IC], f[KH * KW * OC], f2[sizeof f];
    int32_t o1[B * 4 * 3 * OC], o2[sizeof o1 / 4], bias[OC], fzp[OC];
    kt_fill8(&r, in, sizeof in, 0);
    kt_fill8(&r, f, sizeof f, 0);
    for (int j = 0; j < OC; j++) {
        bias[j] = kt_range(&r, -1000, 1000);
        fzp[j] = kt_range(&r, -3, 3);
    }
    for (int oc = 0; oc < OC; oc++)
        for (int t = 0; t < KH * KW; t++)
            f2[oc * KH * KW + t] = f[t * OC + oc];
    struct qp_conv_geom g = geom(H, W, KH, KW, 2, 1, 1, 0, 1, 1);
    struct qp_dw_s8_params d = {
        .geom = g, .in_c = IC, .depth_multiplier = DM,
        .in_dtype = QP_DTYPE_I8, .filter_dtype = QP_DTYPE_I8,
        .input_zero_point = -9, .filter_zero_point = fzp,
        .filter_zero_points = OC, .bias = bias};
    struct qp_conv_s8_params c = {
        .geom = g, .in_c = IC, .out_c = OC, .groups = IC,
        .in_dtype = QP_DTYPE_I8, .filter_dtype = QP_DTYPE_I8,
        .input_zero_point = -9, .filter_zero_point = fzp,
        .filter_zero_points = OC, .bias = bias};
    qp_dw_s8_ref(&d, f, in, B, o1);
    qp_conv_s8_ref(&c, f2, in, B, o2);
    CHECK(!memcmp(o1, o2, sizeof o1));
    /* and the variants of the depthwise kernel agree */
    enum qp_kern_isa isas[QP_KERN_ISA_COUNT];
    size_t n = kt_isas(isas);
    for (size_t i = 0; i < n; i++) {
        int32_t o3[sizeof o1 / 4];
        d.isa = isas[i];
        REQUIRE(dwconv(ctx, &d, f, in, B, o3));
        CHECK(!memcmp(o1, o3, sizeof o1));
    }
}

QP_TEST(depthwise_variants_match_reference_random)
{
    uint64_t r = 0xd1;
    enum qp_kern_isa isas[QP_KERN_ISA_COUNT];
    size_t n = kt_isas(isas);
    for (int it = 0; it < 60; it++) {
        struct cprob q;
        random_cprob(&r, &q);
        size_t dm = 1 + kt_next(&r) % 3, ic = 1 + kt_next(&r) % 35;
        size_t oc = ic * dm;
        size_t oh = (q.h + q.pt + q.pb - q.dil * (q.kh - 1) - 1) / q.stride + 1;
        size_t ow = (q.w + q.pl + q.pr - q.dil * (q.kw - 1) - 1) / q.stride + 1;
        size_t nin = q.batch * q.h * q.w * ic, nf = q.kh * q.kw * oc;
        size_t nout = q.batch * oh * ow * oc;
        uint8_t *in = malloc(nin), *f = malloc(nf);
        int8_t *want = malloc(nout), *got = malloc(nout);
        int32_t *mult = malloc(oc * 4), *shift = malloc(oc * 4);
        REQUIRE(in && f && want && got && mult && shift);
        kt_fill8(&r, in, nin, q.extreme);
        kt_fill8(&r, f, nf, q.extreme);
        for (size_t j = 0; j < oc; j++) {
            mult[j] = kt_range(&r, 1 << 30, INT32_MAX);
            shift[j] = kt_range(&r, -9, 0);
        }
        struct qp_rq rq;
        struct qp_error err;
        REQUIRE_OK(qp_rq_prepare_fixed(&rq, QP_RQ_TFLITE_DOUBLE, mult, shift,
                                       oc, -3, QP_DTYPE_I8, -128, 127, &err),
                   &err);
        int32_t fzp = q.fdt == QP_DTYPE_U8 ? 128 : 0;
        struct qp_dw_s8_params d = {
            .geom = {q.h, q.w, q.kh, q.kw, q.stride, q.stride, q.dil, q.dil,
                     q.pt, q.pl, q.pb, q.pr},
            .in_c = ic, .depth_multiplier = dm, .in_dtype = q.idt,
            .filter_dtype = q.fdt, .input_zero_point = q.izp,
            .filter_zero_point = &fzp, .filter_zero_points = 1, .rq = &rq,
            .threads = q.threads};
        qp_dw_s8_ref(&d, f, in, q.batch, want);
        for (size_t i = 0; i < n; i++) {
            d.isa = isas[i];
            memset(got, 0x22, nout);
            if (!dwconv(ctx, &d, f, in, q.batch, got))
                break;
            if (memcmp(got, want, nout))
                qp_test_failf(ctx, __FILE__, __LINE__,
                              "[%s] case %d (%zux%zu c%zu dm%zu) differs",
                              qp_kern_isa_name(isas[i]), it, q.h, q.w, ic, dm);
        }
        qp_rq_release(&rq);
        free(in);
        free(f);
        free(want);
        free(got);
        free(mult);
        free(shift);
    }
}

QP_TEST(conv_rejects_bad_parameters)
{
    static const int8_t f[64];
    struct qp_conv_s8 c;
    struct qp_dw_s8 d;
    struct qp_error err;
    struct qp_conv_s8_params ok = {
        .geom = geom(4, 4, 3, 3, 1, 1, 0, 0, 0, 0), .in_c = 4, .out_c = 4,
        .groups = 2, .in_dtype = QP_DTYPE_I8, .filter_dtype = QP_DTYPE_I8};
    struct qp_conv_s8_params p = ok;
    p.groups = 3;
    CHECK_FAILS(qp_conv_s8_prepare(&c, &p, f, &err), QP_E_INVAL, &err,
                "3 groups must divide 4 input and 4 output channels");
    p = ok;
    p.geom.kernel_h = 5;
    CHECK_FAILS(qp_conv_s8_prepare(&c, &p, f, &err), QP_E_INVAL, &err,
                "dilated kernel 5x3 is larger than the padded input 4x4");
    p = ok;
    p.geom.dilation_w = 2; /* 3 taps 2 apart span 5 > 4 */
    CHECK_FAILS(qp_conv_s8_prepare(&c, &p, f, &err), QP_E_INVAL, &err,
                "dilated kernel 3x5");
    p = ok;
    p.geom.stride_w = 0;
    CHECK_FAILS(qp_conv_s8_prepare(&c, &p, f, &err), QP_E_INVAL, &err,
                "stride 1,0 and dilation 1,1 must be >= 1");
    p = ok;
    p.geom.in_h = 0;
    CHECK_FAILS(qp_conv_s8_prepare(&c, &p, f, &err), QP_E_INVAL, &err,
                "must not be empty");
    p = ok;
    p.layout = QP_CONV_LAYOUT_COUNT;
    CHECK_FAILS(qp_conv_s8_prepare(&c, &p, f, &err), QP_E_INVAL, &err,
                "unknown layout");
    p = ok;
    p.filter_dtype = QP_DTYPE_I4;
    CHECK_FAILS(qp_conv_s8_prepare(&c, &p, f, &err), QP_E_INVAL, &err,
                "conv: input and weights must be int8 or uint8");
    struct qp_dw_s8_params dp = {.geom = ok.geom, .in_c = 4,
                                 .depth_multiplier = 0,
                                 .in_dtype = QP_DTYPE_I8,
                                 .filter_dtype = QP_DTYPE_I8};
    CHECK_FAILS(qp_dw_s8_prepare(&d, &dp, f, &err), QP_E_INVAL, &err,
                "depthwise: 4 channels x depth multiplier 0");
    dp.depth_multiplier = 1;
    dp.geom.pad_top = 1; /* fine */
    dp.geom.stride_h = 0;
    CHECK_FAILS(qp_dw_s8_prepare(&d, &dp, f, &err), QP_E_INVAL, &err,
                "depthwise: stride 0,1");
}

QP_TEST(conv_chooses_gemm_depthwise_or_reference)
{
    static const int8_t f[4 * 9 * 4];
    const struct qp_kern_table *t = qp_kern_table();
    struct qp_conv_s8 c;
    struct qp_error err;
    char buf[64];
    struct qp_conv_s8_params p = {
        .geom = geom(4, 4, 3, 3, 1, 1, 1, 1, 1, 1), .in_c = 4, .out_c = 4,
        .groups = 1, .in_dtype = QP_DTYPE_I8, .filter_dtype = QP_DTYPE_I8};
    REQUIRE_OK(qp_conv_s8_prepare(&c, &p, f, &err), &err);
    if (t->gemm_s8)
        CHECK_CONTAINS(qp_conv_s8_variant(&c, buf, sizeof buf), "gemm/");
    else
        CHECK_STR(qp_conv_s8_variant(&c, buf, sizeof buf), "ref");
    qp_conv_s8_release(&c);
    p.groups = 4; /* one input channel per group */
    REQUIRE_OK(qp_conv_s8_prepare(&c, &p, f, &err), &err);
    if (t->depthwise_s8)
        CHECK_CONTAINS(qp_conv_s8_variant(&c, buf, sizeof buf), "depthwise/");
    qp_conv_s8_release(&c);
    p.groups = 1;
    p.input_zero_point = 200; /* no int8 byte pads with it */
    REQUIRE_OK(qp_conv_s8_prepare(&c, &p, f, &err), &err);
    CHECK_STR(qp_conv_s8_variant(&c, buf, sizeof buf), "ref");
    qp_conv_s8_release(&c);
    p.input_zero_point = 0;
    p.isa = QP_KERN_REF;
    REQUIRE_OK(qp_conv_s8_prepare(&c, &p, f, &err), &err);
    CHECK_STR(qp_conv_s8_variant(&c, buf, sizeof buf), "ref");
    qp_conv_s8_release(&c);
}

/* NCHW with one group runs without transposes (kernels/conv-s8-nchw.h):
 * planes of several blocks of 192 pixels and a partial one, both threads,
 * the 1x1 direct rows (int8 input) and gathered ones (uint8, strides,
 * dilation, padding), channel counts off the 8-row tiles, uint8 weights
 * with per-channel zero points, batches. */
QP_TEST(conv_nchw_direct_matches_reference)
{
    uint64_t r = 0x5eed;
    struct cprob q = {.layout = QP_CONV_NCHW, .batch = 2, .h = 23, .w = 29,
                      .ic = 19, .oc = 13, .groups = 1, .kh = 1, .kw = 1,
                      .stride = 1, .dil = 1, .idt = QP_DTYPE_I8,
                      .fdt = QP_DTYPE_I8, .izp = -3, .requant = 1,
                      .per_channel = 1, .bias = 1, .threads = 2};
    check_cprob(ctx, &r, &q);             /* 1x1: the input's own rows */
    q.idt = QP_DTYPE_U8;
    q.izp = 200;
    check_cprob(ctx, &r, &q);             /* 1x1 gathered (uint8 flipped) */
    q.kh = q.kw = 3;
    q.pt = q.pl = q.pb = q.pr = 1;
    q.oc = 24;
    check_cprob(ctx, &r, &q);             /* 3x3 pad 1 */
    q.stride = 2;
    q.fdt = QP_DTYPE_U8;
    check_cprob(ctx, &r, &q);             /* stride 2, uint8 weights */
    struct cprob wide = q;                /* rows of 36 pixels at stride 2: */
    wide.h = 5;                           /* the vector gather, flipped */
    wide.w = 71;                          /* (uint8) then not (int8) */
    check_cprob(ctx, &r, &wide);
    wide.idt = QP_DTYPE_I8;
    wide.izp = -3;
    check_cprob(ctx, &r, &wide);
    q.stride = 1;
    q.dil = 2;
    q.kh = q.kw = 5;
    q.pt = 0;
    q.pl = 3;
    q.pb = 4;
    q.pr = 2;
    q.per_channel = 0;
    q.bias = 0;
    check_cprob(ctx, &r, &q);             /* 5x5 dilated, uneven padding */
    q.h = 1;
    q.w = 300;
    q.kh = 1;
    q.pt = q.pb = 0;
    q.extreme = 1;
    q.ic = 40;
    q.oc = 50;
    check_cprob(ctx, &r, &q);             /* a 1-D row, extreme values */
    /* one pixel: a tile's channels requantized together; then
     * per-tensor, one tile */
    struct cprob px = {.layout = QP_CONV_NCHW, .batch = 2, .h = 1, .w = 1,
                       .ic = 37, .oc = 70, .groups = 1, .kh = 1, .kw = 1,
                       .stride = 1, .dil = 1, .idt = QP_DTYPE_I8,
                       .fdt = QP_DTYPE_I8, .izp = -3, .requant = 1,
                       .per_channel = 1, .bias = 1, .threads = 2};
    check_cprob(ctx, &r, &px);
    px.per_channel = 0;
    px.oc = 9;
    check_cprob(ctx, &r, &px);
    /* depthwise planes (kernels/depthwise-s8-nchw.h): depth multiplier 2,
     * padding, both threads; then 5x5 dilated, int8 */
    struct cprob dq = {.layout = QP_CONV_NCHW, .batch = 2, .h = 30, .w = 70,
                       .ic = 24, .oc = 48, .groups = 24, .kh = 3, .kw = 3,
                       .stride = 1, .dil = 1, .pt = 1, .pl = 1, .pb = 1,
                       .pr = 1, .idt = QP_DTYPE_U8, .fdt = QP_DTYPE_I8,
                       .izp = 77, .requant = 1, .per_channel = 1, .bias = 1,
                       .threads = 2};
    check_cprob(ctx, &r, &dq);
    dq.kh = dq.kw = 5;
    dq.dil = 2;
    dq.pt = 4;
    dq.pb = 2;
    dq.pl = 0;
    dq.pr = 3;
    dq.idt = QP_DTYPE_I8;
    dq.izp = -9;
    dq.oc = 24;
    check_cprob(ctx, &r, &dq);
    /* 5x5 and 7x7 undilated: AVX-512 VNNI rows, four taps a lane (two
     * groups per kernel row; channels whose weights leave int8 take the
     * plain rows), int8 then uint8 input with extreme values */
    dq.dil = 1;
    dq.pt = dq.pl = dq.pb = dq.pr = 2;
    check_cprob(ctx, &r, &dq);
    dq.kh = dq.kw = 7;
    dq.pt = dq.pl = dq.pb = dq.pr = 3;
    dq.idt = QP_DTYPE_U8;
    dq.izp = 201;
    dq.extreme = 1;
    check_cprob(ctx, &r, &dq);
    /* 9x9 (three groups a row): the rows without constant loops */
    dq.kh = dq.kw = 9;
    dq.pt = dq.pl = dq.pb = dq.pr = 4;
    check_cprob(ctx, &r, &dq);
    /* rows of 93 (5 x 16 + 8 + 5 pixels: each loop of the AVX2 rows, the
     * pairs of taps with one left over), then filter zero points that
     * take the weights past int16 (the rows without pairs) */
    dq.kh = dq.kw = 3;
    dq.pt = dq.pl = dq.pb = dq.pr = 1;
    dq.w = 93;
    dq.extreme = 0;
    check_cprob(ctx, &r, &dq);
    dq.wide_fzp = 1;
    check_cprob(ctx, &r, &dq);
}

/* Splits by work (kernels' MIN_THREAD_MACS, chunks claimed by whichever
 * thread is free): 1, 2 and 3 threads give the reference's bytes on
 * shapes past the thresholds with partial chunks and tails: an NCHW 3x3
 * conv of few output channels (det's head), NCHW depthwise planes, and
 * two output rows of many channels (the classifier's late blocks): NHWC
 * depthwise rows, and planes of two rows. */
QP_TEST(conv_thread_splits_match_reference_on_any_thread_count)
{
    uint64_t r = 0x7ead5;
    struct cprob cq = {.layout = QP_CONV_NCHW, .batch = 2, .h = 41, .w = 53,
                       .ic = 16, .oc = 24, .groups = 1, .kh = 3, .kw = 3,
                       .stride = 1, .dil = 1, .pt = 1, .pl = 1, .pb = 1,
                       .pr = 1, .idt = QP_DTYPE_I8, .fdt = QP_DTYPE_I8,
                       .izp = 0, .requant = 1, .per_channel = 1, .bias = 1};
    struct cprob dq = cq;
    dq.ic = dq.oc = dq.groups = 40;
    dq.h = 29;
    dq.w = 70;
    struct cprob hq = dq; /* out_h 2, rows of 61: the NHWC kernel */
    hq.ic = hq.oc = hq.groups = 232;
    hq.h = 4;
    hq.w = 61;
    hq.pt = hq.pb = 0;
    hq.idt = QP_DTYPE_U8;
    hq.izp = 113;
    struct cprob wq = hq; /* rows of 97: planes where AVX-512 VNNI is */
    wq.w = 97;
    for (int t = 1; t <= 3; t++) {
        cq.threads = dq.threads = hq.threads = wq.threads = t;
        check_cprob(ctx, &r, &cq);
        check_cprob(ctx, &r, &dq);
        check_cprob(ctx, &r, &hq);
        check_cprob(ctx, &r, &wq);
    }
}
