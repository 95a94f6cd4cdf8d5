/* Unit tests of the int8 GEMM (kernels/gemm-s8.h): the reference against
 * hand-computed values, every SIMD variant against the reference on random
 * and adversarial inputs, and the parameter checks. */
#include <stdlib.h>
#include <string.h>

#include "kernels/gemm-s8.h"
#include "tests/test.h"
#include "tests/unit/kern-test.h"

/* Prepares and runs one gemm; false (and a test failure) on error. */
static bool gemm(struct qp_test_ctx *ctx, const struct qp_gemm_s8_params *p,
                 const void *b, size_t ldb, const void *a, size_t m,
                 size_t lda, void *c, size_t ldc)
{
    struct qp_gemm_s8 g;
    struct qp_error err;
    if (qp_gemm_s8_prepare(&g, p, b, ldb, &err)) {
        qp_test_failf(ctx, __FILE__, __LINE__, "prepare: %s", err.msg);
        return false;
    }
    void *s = malloc(qp_gemm_s8_scratch_size(&g, m) + 1);
    enum qp_status st = qp_gemm_s8_run(&g, a, m, lda, c, ldc, s, &err);
    if (st)
        qp_test_failf(ctx, __FILE__, __LINE__, "run: %s", err.msg);
    free(s);
    qp_gemm_s8_release(&g);
    return st == QP_OK;
}

QP_TEST(gemm_ref_hand_computed)
{
    /* A = [[1, -2, 3], [-128, 127, 0]] int8, a_zp = -1 (TFLite offset +1)
     * B = [[2, 0, -1], [5, 5, 5]] int8, b_zp = [0, 1], bias = [10, -7]
     * row 0: 10 + (2)(2) + (-1)(0) + (4)(-1) = 10;  -7 + (2+(-1)+4)*4 = 13
     * row 1: 10 + (-127)(2) + 128*0 + 1*(-1) = -245;
     *        -7 + (-127 + 128 + 1) * 4 = 1 */
    static const int8_t a[] = {1, -2, 3, -128, 127, 0};
    static const int8_t b[] = {2, 0, -1, 5, 5, 5};
    static const int32_t bias[] = {10, -7}, bzp[] = {0, 1};
    struct qp_gemm_s8_params p = {
        .n = 2, .k = 3, .a_dtype = QP_DTYPE_I8, .b_dtype = QP_DTYPE_I8,
        .a_zero_point = -1, .b_zero_point = bzp, .b_zero_points = 2,
        .bias = bias};
    enum qp_kern_isa isas[QP_KERN_ISA_COUNT];
    size_t n = kt_isas(isas);
    for (size_t i = 0; i < n; i++) {
        int32_t c[4] = {0};
        p.isa = isas[i];
        REQUIRE(gemm(ctx, &p, b, 3, a, 2, 3, c, 2));
        CHECK_INT(c[0], 10);
        CHECK_INT(c[1], 13);
        CHECK_INT(c[2], -245);
        CHECK_INT(c[3], 1);
    }
}

QP_TEST(gemm_uint8_operands_and_zero_points)
{
    /* ONNX MatMulInteger style: A uint8 with zp 128, B uint8 with zp 3
     * A = [[255, 0]], B = [[3, 4], [0, 255]]
     * c0 = 127*0 + (-128)*1 = -128;  c1 = 127*(-3) + (-128)*252 = -32637 */
    static const uint8_t a[] = {255, 0}, b[] = {3, 4, 0, 255};
    static const int32_t bzp = 3;
    struct qp_gemm_s8_params p = {
        .n = 2, .k = 2, .a_dtype = QP_DTYPE_U8, .b_dtype = QP_DTYPE_U8,
        .a_zero_point = 128, .b_zero_point = &bzp, .b_zero_points = 1};
    enum qp_kern_isa isas[QP_KERN_ISA_COUNT];
    size_t n = kt_isas(isas);
    for (size_t i = 0; i < n; i++) {
        int32_t c[2] = {0};
        p.isa = isas[i];
        REQUIRE(gemm(ctx, &p, b, 2, a, 1, 2, c, 2));
        CHECK_INT(c[0], -128);
        CHECK_INT(c[1], -32637);
    }
}

QP_TEST(gemm_int32_wraps_modulo_2_32)
{
    /* 70000 products of (-128 - 127) * (-128 - 127) = 65025 sum to
     * 4551750000, which wraps to 4551750000 - 2^32 = 256782704; with
     * bias INT32_MAX it wraps again. Every variant must wrap alike. */
    size_t k = 70000;
    int8_t *a = malloc(k), *b = malloc(k);
    REQUIRE(a && b);
    memset(a, -128, k);
    memset(b, -128, k);
    int32_t bias = INT32_MAX, bzp = 127;
    struct qp_gemm_s8_params p = {
        .n = 1, .k = k, .a_dtype = QP_DTYPE_I8, .b_dtype = QP_DTYPE_I8,
        .a_zero_point = 127, .b_zero_point = &bzp, .b_zero_points = 1};
    enum qp_kern_isa isas[QP_KERN_ISA_COUNT];
    size_t n = kt_isas(isas);
    for (size_t i = 0; i < n; i++) {
        int32_t c = 0;
        p.isa = isas[i];
        p.bias = NULL;
        REQUIRE(gemm(ctx, &p, b, k, a, 1, k, &c, 1));
        CHECK_INT(c, 256782704);
        p.bias = &bias;
        REQUIRE(gemm(ctx, &p, b, k, a, 1, k, &c, 1));
        CHECK_INT(c, (int32_t)(256782704u + 2147483647u));
    }
    free(a);
    free(b);
}

/* One random problem: every variant against the reference. */
struct problem {
    size_t m, n, k, lda, ldb, ldc;
    enum qp_dtype adt, bdt;
    int extreme, per_channel_zp, bias, requant, threads;
    int32_t azp;
};

static void check_problem(struct qp_test_ctx *ctx, uint64_t *rng,
                          const struct problem *q)
{
    uint8_t *a = malloc(q->m * q->lda), *b = malloc(q->n * q->ldb);
    int32_t *bias = malloc(q->n * 4), *bzp = malloc(q->n * 4);
    int32_t *mult = malloc(q->n * 4), *shift = malloc(q->n * 4);
    size_t cbytes = q->m * q->ldc * 4;
    char *want = malloc(cbytes), *got = malloc(cbytes);
    REQUIRE(a && b && bias && bzp && mult && shift && want && got);
    kt_fill8(rng, a, q->m * q->lda, q->extreme);
    kt_fill8(rng, b, q->n * q->ldb, q->extreme);
    for (size_t j = 0; j < q->n; j++) {
        bias[j] = q->extreme ? (j % 2 ? INT32_MAX : INT32_MIN)
                             : kt_range(rng, -100000, 100000);
        bzp[j] = q->extreme ? (j % 3 ? -128 : 255) : kt_range(rng, -128, 255);
        mult[j] = kt_range(rng, 1 << 30, INT32_MAX);
        shift[j] = kt_range(rng, -14, 0);
    }
    struct qp_rq rq;
    struct qp_error err;
    bool u8 = q->bdt == QP_DTYPE_U8; /* output dtype: any, follow B */
    REQUIRE_OK(qp_rq_prepare_fixed(&rq, QP_RQ_TFLITE_DOUBLE, mult, shift, q->n,
                                   u8 ? kt_range(rng, 0, 40)
                                      : kt_range(rng, -20, 20),
                                   u8 ? QP_DTYPE_U8 : QP_DTYPE_I8,
                                   u8 ? 0 : -128, u8 ? 255 : 127, &err),
               &err);
    struct qp_gemm_s8_params p = {
        .n = q->n, .k = q->k, .a_dtype = q->adt, .b_dtype = q->bdt,
        .a_zero_point = q->azp, .b_zero_point = bzp,
        .b_zero_points = q->per_channel_zp ? q->n : 1,
        .bias = q->bias ? bias : NULL, .rq = q->requant ? &rq : NULL,
        .threads = q->threads};
    memset(want, 0x33, cbytes);
    qp_gemm_s8_ref(&p, b, q->ldb, a, q->m, q->lda, want, q->ldc);
    enum qp_kern_isa isas[QP_KERN_ISA_COUNT];
    size_t niso = kt_isas(isas);
    for (size_t i = 0; i < niso; i++) {
        p.isa = isas[i];
        memset(got, 0x33, cbytes);
        if (!gemm(ctx, &p, b, q->ldb, a, q->m, q->lda, got, q->ldc))
            break;
        if (memcmp(got, want, cbytes))
            qp_test_failf(ctx, __FILE__, __LINE__,
                          "[%s] m %zu n %zu k %zu %s x %s azp %d extreme %d "
                          "rq %d threads %d differs from the reference",
                          qp_kern_isa_name(isas[i]), q->m, q->n, q->k,
                          qp_dtype_name(q->adt), qp_dtype_name(q->bdt),
                          q->azp, q->extreme, q->requant, q->threads);
    }
    qp_rq_release(&rq);
    free(a);
    free(b);
    free(bias);
    free(bzp);
    free(mult);
    free(shift);
    free(want);
    free(got);
}

QP_TEST(gemm_variants_match_reference_on_odd_shapes)
{
    /* sizes around every tile height, panel width and K group */
    static const size_t ms[] = {1, 2, 5, 7, 8, 9, 17, 33, 70};
    static const size_t ns[] = {1, 3, 8, 15, 16, 17, 47, 48, 49, 100};
    static const size_t ks[] = {1, 2, 3, 4, 5, 63, 64, 65, 130};
    static const enum qp_dtype dts[] = {QP_DTYPE_I8, QP_DTYPE_U8};
    uint64_t rng = 0x1234567;
    size_t i = 0;
    for (size_t im = 0; im < sizeof ms / sizeof ms[0]; im++)
        for (size_t in = 0; in < sizeof ns / sizeof ns[0]; in++)
            for (size_t ik = 0; ik < sizeof ks / sizeof ks[0]; ik++, i++) {
                if (i % 3) /* a third of the grid keeps the test quick */
                    continue;
                struct problem q = {
                    .m = ms[im], .n = ns[in], .k = ks[ik],
                    .adt = dts[kt_next(&rng) % 2],
                    .bdt = dts[kt_next(&rng) % 2],
                    .extreme = (int)(i % 5 == 0),
                    .per_channel_zp = (int)(kt_next(&rng) % 2),
                    .bias = (int)(kt_next(&rng) % 4 != 0),
                    .requant = (int)(kt_next(&rng) % 2),
                    .threads = 1 + (int)(kt_next(&rng) % 2)};
                q.lda = q.k + (i % 4 == 1 ? 3 : 0);
                q.ldb = q.k + (i % 4 == 2 ? 5 : 0);
                q.ldc = q.n + (i % 4 == 3 ? 2 : 0);
                q.azp = q.extreme ? (i % 2 ? INT32_MIN : INT32_MAX)
                                  : kt_range(&rng, -128, 255);
                check_problem(ctx, &rng, &q);
            }
}

QP_TEST(gemm_variants_match_reference_threaded_large)
{
    /* big enough for both threads to split rows, then columns */
    uint64_t rng = 99;
    struct problem q = {.m = 300, .n = 200, .k = 301, .lda = 301, .ldb = 301,
                        .ldc = 200, .adt = QP_DTYPE_I8, .bdt = QP_DTYPE_I8,
                        .per_channel_zp = 1, .bias = 1, .requant = 1,
                        .threads = 2, .azp = -3};
    check_problem(ctx, &rng, &q);
    struct problem r = {.m = 3, .n = 1000, .k = 1000, .lda = 1000,
                        .ldb = 1000, .ldc = 1000, .adt = QP_DTYPE_U8,
                        .bdt = QP_DTYPE_I8, .bias = 1, .requant = 1,
                        .threads = 2, .azp = 128};
    check_problem(ctx, &rng, &r);
}

QP_TEST(gemm_rejects_bad_parameters)
{
    static const int8_t b[4];
    static const int32_t zps[3];
    struct qp_gemm_s8 g;
    struct qp_error err;
    struct qp_gemm_s8_params ok = {.n = 2, .k = 2, .a_dtype = QP_DTYPE_I8,
                                   .b_dtype = QP_DTYPE_I8};
    struct qp_gemm_s8_params p = ok;
    p.n = 0;
    CHECK_FAILS(qp_gemm_s8_prepare(&g, &p, b, 2, &err), QP_E_INVAL, &err,
                "n and k must be >= 1");
    p = ok;
    p.a_dtype = QP_DTYPE_I16;
    CHECK_FAILS(qp_gemm_s8_prepare(&g, &p, b, 2, &err), QP_E_INVAL, &err,
                "must be int8 or uint8, not i16 and i8");
    p = ok;
    p.b_zero_point = zps;
    p.b_zero_points = 3;
    CHECK_FAILS(qp_gemm_s8_prepare(&g, &p, b, 2, &err), QP_E_INVAL, &err,
                "3 weight zero points for 2 channels");
    p = ok;
    CHECK_FAILS(qp_gemm_s8_prepare(&g, &p, b, 1, &err), QP_E_INVAL, &err,
                "weight row stride 1 < k 2");
    struct qp_rq rq = {.flavor = QP_RQ_TFLITE_DOUBLE, .channels = 3,
                       .out_dtype = QP_DTYPE_I8};
    p.rq = &rq;
    CHECK_FAILS(qp_gemm_s8_prepare(&g, &p, b, 2, &err), QP_E_INVAL, &err,
                "requantization has 3 channels for 2 outputs");
    rq.channels = 1;
    rq.flavor = QP_RQ_TFLITE_INT64_DOUBLE;
    CHECK_FAILS(qp_gemm_s8_prepare(&g, &p, b, 2, &err), QP_E_UNSUPPORTED,
                &err, "'tflite-int64-double' needs int64 accumulators");
    rq.flavor = QP_RQ_TFLITE_DOUBLE;
    rq.out_dtype = QP_DTYPE_F32;
    CHECK_FAILS(qp_gemm_s8_prepare(&g, &p, b, 2, &err), QP_E_INVAL, &err,
                "output dtype f32");
    p = ok;
    p.isa = QP_KERN_NEONDOT;
#if !defined(__aarch64__)
    CHECK_FAILS(qp_gemm_s8_prepare(&g, &p, b, 2, &err), QP_E_UNSUPPORTED,
                &err, "'neon-dot' is not available");
#endif
    /* run: strides and scratch */
    p = ok;
    REQUIRE_OK(qp_gemm_s8_prepare(&g, &p, b, 2, &err), &err);
    int8_t a[4] = {0};
    int32_t c[4];
    CHECK_FAILS(qp_gemm_s8_run(&g, a, 2, 1, c, 2, NULL, &err), QP_E_INVAL,
                &err, "row strides lda 1, ldc 2 below k 2, n 2");
    if (qp_gemm_s8_scratch_size(&g, 2))
        CHECK_FAILS(qp_gemm_s8_run(&g, a, 2, 2, c, 2, NULL, &err), QP_E_INVAL,
                    &err, "no scratch");
    qp_gemm_s8_release(&g);
}

QP_TEST(dispatch_qp_kernels_caps_the_instruction_set)
{
    const char *old = getenv("QP_KERNELS");
    char *saved = old ? strdup(old) : NULL;
    bool avx2 = qp_kern_isa_available(QP_KERN_AVX2);
    bool vnni = qp_kern_isa_available(QP_KERN_AVX512VNNI);
    setenv("QP_KERNELS", "ref", 1);
    CHECK(qp_kern_isa_allowed(QP_KERN_REF));
    CHECK(!qp_kern_isa_allowed(QP_KERN_AVX2));
    CHECK(!qp_kern_isa_allowed(QP_KERN_AVX512VNNI));
    setenv("QP_KERNELS", "avx2", 1);
    CHECK_INT(qp_kern_isa_allowed(QP_KERN_AVX2), avx2);
    CHECK(!qp_kern_isa_allowed(QP_KERN_AVX512));
    CHECK(!qp_kern_isa_allowed(QP_KERN_AVXVNNI));
    setenv("QP_KERNELS", "avx-vnni", 1);
    CHECK(!qp_kern_isa_allowed(QP_KERN_AVX512));
    CHECK_INT(qp_kern_isa_allowed(QP_KERN_AVX2), avx2);
    setenv("QP_KERNELS", "avx512", 1);
    CHECK(!qp_kern_isa_allowed(QP_KERN_AVX512VNNI));
    CHECK(!qp_kern_isa_allowed(QP_KERN_AVXVNNI));
    /* no cap for the table; qp_kern_init refuses it (test-kern-startup.c) */
    setenv("QP_KERNELS", "bogus", 1);
    CHECK_INT(qp_kern_isa_allowed(QP_KERN_AVX512VNNI), vnni);
    if (saved)
        setenv("QP_KERNELS", saved, 1);
    else
        unsetenv("QP_KERNELS");
    free(saved);
    CHECK_STR(qp_kern_isa_name(QP_KERN_AVX512VNNI), "avx512-vnni");
    CHECK_STR(qp_kern_isa_name(QP_KERN_ISA_COUNT), "?");
    CHECK(qp_kern_isa_available(QP_KERN_REF));
    CHECK_CONTAINS(qp_kern_describe(), "gemm-s8=");
    CHECK_CONTAINS(qp_kern_describe(), " requant=");
}
