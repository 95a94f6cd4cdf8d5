/* tests/aarch64/test-kernels-neon.c: the aarch64 kernel variants
 * (kernels/arm/) beyond what the generic unit tests check (make
 * test-aarch64 links those too: tests/unit/test-gemm.c, test-conv.c,
 * test-requant-simd.c and the golden-vector tests compare every variant
 * the CPU has with the reference).
 *
 * Here: the run-time choice against what the harness says the (emulated)
 * CPU has (QP_A64_EXPECT, set by tests/aarch64/run.sh); the GEMM and
 * depthwise micro-kernels called directly on their documented layouts
 * against an oracle in 64-bit arithmetic (not the reference's uint32
 * code), including wrap-around; and the GEMM driver around the SDOT
 * kernel (signed packing of A) on every dtype pair and K across the
 * kernel's 16-byte main loop and 4-byte tail. */
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>

#include "kernels/depthwise-s8-ukernel.h"
#include "kernels/dispatch.h"
#include "kernels/gemm-s8-ukernel.h"
#include "kernels/gemm-s8.h"
#include "kernels/requant.h"
#include "tests/test.h"
#include "tests/unit/kern-test.h"

#ifndef HWCAP_ASIMDDP
#define HWCAP_ASIMDDP (1UL << 20)
#endif

static bool has_dotprod(void)
{
    return (getauxval(AT_HWCAP) & HWCAP_ASIMDDP) != 0;
}

QP_TEST(aarch64_dispatch_follows_the_cpu)
{
    /* run.sh names the variants the emulated CPU must get, e.g.
     * "kernels: gemm-s8=neon-dot depthwise-s8=neon requant=neon" */
    const char *want = getenv("QP_A64_EXPECT");
    if (want) { /* every "family=variant" named must be in the line */
        char buf[512], tok[96];
        snprintf(buf, sizeof buf, "%s", want);
        for (char *t = strtok(buf, " "); t; t = strtok(NULL, " ")) {
            snprintf(tok, sizeof tok, " %s", t);
            if (strchr(t, '='))
                CHECK_CONTAINS(qp_kern_describe(), tok);
        }
    }
    CHECK(qp_kern_isa_available(QP_KERN_NEON));
    CHECK_INT(qp_kern_isa_available(QP_KERN_NEONDOT), has_dotprod());
    for (int i = QP_KERN_AVX2; i <= QP_KERN_AVX512VNNI; i++)
        CHECK(!qp_kern_isa_available((enum qp_kern_isa)i));
    CHECK_STR(qp_kern_isa_name(QP_KERN_NEON), "neon");
    CHECK_STR(qp_kern_isa_name(QP_KERN_NEONDOT), "neon-dot");

    bool ok;
    const struct qp_gemm_s8_ukernel *g = qp_kern_gemm_s8(QP_KERN_NEONDOT, &ok);
    CHECK_INT(ok, has_dotprod());
    if (ok)
        CHECK(g == &qp_gemm_s8_neondot);
    CHECK(!qp_kern_gemm_s8(QP_KERN_NEON, &ok)); /* no plain NEON GEMM */
    const struct qp_dw_s8_ukernel *d = qp_kern_depthwise_s8(QP_KERN_NEON, &ok);
    CHECK(ok && d == &qp_dw_s8_neon);

    /* requantization: NEON on every aarch64 CPU, every int32 flavor */
    CHECK(qp_rq_isa_available(QP_RQ_ISA_NEON));
    CHECK(!qp_rq_isa_available(QP_RQ_ISA_AVX2));
    CHECK_STR(qp_rq_isa_name(QP_RQ_ISA_NEON), "neon");
    int covered = 0;
    for (int f = 0; f < QP_RQ_COUNT; f++) {
        bool c = qp_rq_isa_covers(QP_RQ_ISA_NEON, (enum qp_rq_flavor)f);
        CHECK_INT(c, !qp_rq_flavor_acc64((enum qp_rq_flavor)f));
        covered += c;
    }
    CHECK_INT(covered, 9);
}

QP_TEST(aarch64_qp_kernels_caps_neon)
{
    const char *old = getenv("QP_KERNELS");
    char *saved = old ? strdup(old) : NULL;
    setenv("QP_KERNELS", "ref", 1);
    CHECK(qp_kern_isa_allowed(QP_KERN_REF));
    CHECK(!qp_kern_isa_allowed(QP_KERN_NEON));
    CHECK(!qp_kern_isa_allowed(QP_KERN_NEONDOT));
    setenv("QP_KERNELS", "neon", 1);
    CHECK(qp_kern_isa_allowed(QP_KERN_NEON));
    CHECK(!qp_kern_isa_allowed(QP_KERN_NEONDOT));
    setenv("QP_KERNELS", "neon-dot", 1);
    CHECK(qp_kern_isa_allowed(QP_KERN_NEON));
    CHECK_INT(qp_kern_isa_allowed(QP_KERN_NEONDOT), has_dotprod());
    if (saved)
        setenv("QP_KERNELS", saved, 1);
    else
        unsetenv("QP_KERNELS");
    free(saved);
}

/* ---- GEMM micro-kernel on its packed layout ---------------------------- */

/* One call of tile (rows = mr) or tile1 (rows = 1) on random packed
 * operands: a [rows][kp] s8, b [kp/4][nr][4] s8; c has ldc = nr + 3 and
 * the columns beyond nr must stay untouched. */
static void check_tile(struct qp_test_ctx *ctx, const struct qp_gemm_s8_ukernel
                       *uk, unsigned rows, size_t kp, int extreme, uint64_t *rng)
{
    size_t nr = uk->nr, ldc = nr + 3;
    int8_t *a = malloc(rows * kp), *b = malloc(nr * kp);
    int32_t init[64], *c = malloc(rows * ldc * sizeof *c);
    REQUIRE(a && b && c && nr <= 64);
    kt_fill8(rng, (uint8_t *)a, rows * kp, extreme);
    kt_fill8(rng, (uint8_t *)b, nr * kp, extreme);
    for (size_t j = 0; j < nr; j++) /* near the int32 ends: sums wrap */
        init[j] = extreme ? INT32_MAX - kt_range(rng, 0, 1000)
                          : (int32_t)kt_next(rng);
    for (size_t i = 0; i < rows * ldc; i++)
        c[i] = 0x5a5a5a5a;
    (rows == 1 ? uk->tile1 : uk->tile)(kp, a, b, init, c, ldc);
    int bad = 0;
    for (size_t r = 0; r < rows; r++) {
        for (size_t j = 0; j < nr; j++) {
            uint64_t s = (uint64_t)(int64_t)init[j];
            for (size_t k = 0; k < kp; k++)
                s += (uint64_t)((int64_t)a[r * kp + k] *
                                b[((k / 4) * nr + j) * 4 + k % 4]);
            if (c[r * ldc + j] != (int32_t)(uint32_t)s && bad++ < 3)
                qp_test_failf(ctx, __FILE__, __LINE__, "%s rows %u kp %zu: "
                              "c[%zu][%zu] = %d, expected %d", uk->name, rows,
                              kp, r, j, c[r * ldc + j], (int32_t)(uint32_t)s);
        }
        for (size_t j = nr; j < ldc; j++)
            if (c[r * ldc + j] != 0x5a5a5a5a && bad++ < 3)
                qp_test_failf(ctx, __FILE__, __LINE__, "%s wrote column %zu",
                              uk->name, j);
    }
    free(a);
    free(b);
    free(c);
}

QP_TEST(aarch64_gemm_neondot_tile_layout)
{
    bool ok;
    const struct qp_gemm_s8_ukernel *uk = qp_kern_gemm_s8(QP_KERN_NEONDOT, &ok);
    if (!has_dotprod()) { /* -cpu without dot product: the reference */
        CHECK(!ok && !uk);
        return;
    }
    REQUIRE(ok && uk);
    CHECK_INT(uk->mr, 8);
    CHECK_INT(uk->nr, 8);
    CHECK_INT(uk->kr, 4);
    CHECK_INT(uk->a_elem, 1);
    CHECK_INT(uk->b_elem, 1);
    CHECK_INT(uk->a_signed, 1);
    uint64_t rng = 0xd07;
    /* every K from one group to past four 16-byte steps, then long ones */
    for (size_t kp = 4; kp <= 80; kp += 4)
        for (int e = 0; e < 2; e++) {
            check_tile(ctx, uk, uk->mr, kp, e, &rng);
            check_tile(ctx, uk, 1, kp, e, &rng);
        }
    check_tile(ctx, uk, uk->mr, 4092, 1, &rng);
    check_tile(ctx, uk, 1, 4096, 1, &rng);
}

/* ---- GEMM driver with signed packing ----------------------------------- */

/* C (int32, no requantization: every accumulator bit is visible) of the
 * neon-dot gemm against the reference, for one shape and dtype pair. */
static void check_gemm(struct qp_test_ctx *ctx, size_t m, size_t n, size_t k,
                       enum qp_dtype adt, enum qp_dtype bdt, int extreme,
                       uint64_t *rng)
{
    uint8_t *a = malloc(m * k), *b = malloc(n * k);
    int32_t *bias = malloc(n * 4), *bzp = malloc(n * 4);
    int32_t *want = malloc(m * n * 4), *got = malloc(m * n * 4);
    REQUIRE(a && b && bias && bzp && want && got);
    kt_fill8(rng, a, m * k, extreme);
    kt_fill8(rng, b, n * k, extreme);
    for (size_t j = 0; j < n; j++) {
        bias[j] = (int32_t)kt_next(rng);
        /* 0 or 128 (no per-row term for int8 or uint8 B) or anything */
        bzp[j] = j % 3 == 0 ? (bdt == QP_DTYPE_U8 ? 128 : 0)
                 : extreme  ? (j % 2 ? INT32_MIN : INT32_MAX)
                            : kt_range(rng, -300, 300);
    }
    int32_t azp = extreme ? (int32_t)kt_next(rng) : kt_range(rng, -128, 255);
    struct qp_gemm_s8_params p = {
        .n = n, .k = k, .a_dtype = adt, .b_dtype = bdt, .a_zero_point = azp,
        .b_zero_point = bzp, .b_zero_points = n, .bias = bias,
        .isa = QP_KERN_NEONDOT, .threads = 1};
    qp_gemm_s8_ref(&p, b, k, a, m, k, want, n);
    struct qp_gemm_s8 g;
    struct qp_error err;
    REQUIRE_OK(qp_gemm_s8_prepare(&g, &p, b, k, &err), &err);
    CHECK_STR(qp_gemm_s8_variant(&g), "neon-dot");
    void *s = malloc(qp_gemm_s8_scratch_size(&g, m) + 1);
    REQUIRE(s);
    memset(got, 0x33, m * n * 4);
    CHECK_OK(qp_gemm_s8_run(&g, a, m, k, got, n, s, &err), &err);
    if (memcmp(got, want, m * n * 4)) {
        size_t i = 0;
        while (got[i] == want[i])
            i++;
        qp_test_failf(ctx, __FILE__, __LINE__, "m %zu n %zu k %zu %s x %s "
                      "azp %d extreme %d: C[%zu][%zu] = %d, reference %d", m,
                      n, k, qp_dtype_name(adt), qp_dtype_name(bdt), azp,
                      extreme, i / n, i % n, got[i], want[i]);
    }
    free(s);
    qp_gemm_s8_release(&g);
    free(a);
    free(b);
    free(bias);
    free(bzp);
    free(want);
    free(got);
}

QP_TEST(aarch64_gemm_neondot_driver_every_k_and_dtype)
{
    if (!has_dotprod())
        return; /* the generic tests cover the reference */
    static const enum qp_dtype dts[] = {QP_DTYPE_I8, QP_DTYPE_U8};
    static const size_t ms[] = {1, 2, 3, 8, 9, 17};
    static const size_t ns[] = {1, 7, 8, 9, 24};
    uint64_t rng = 0x5d07;
    int runs = 0;
    for (size_t k = 1; k <= 40; k++)
        for (int d = 0; d < 4; d++) {
            size_t m = ms[(k + (size_t)d) % 6], n = ns[(k * 3 + (size_t)d) % 5];
            check_gemm(ctx, m, n, k, dts[d / 2], dts[d % 2], (int)(k % 4 == 0),
                       &rng);
            runs++;
        }
    /* wrap-around: 70000 extreme products per accumulator */
    for (int d = 0; d < 4; d++, runs++)
        check_gemm(ctx, 9, 9, 70000, dts[d / 2], dts[d % 2], 1, &rng);
    CHECK_INT(runs, 164);
}

/* ---- depthwise pixel kernel -------------------------------------------- */

QP_TEST(aarch64_depthwise_neon_pixel)
{
    bool ok;
    const struct qp_dw_s8_ukernel *uk = qp_kern_depthwise_s8(QP_KERN_NEON, &ok);
    REQUIRE(ok && uk);
    enum { TAPS = 9, MAXC = 40 };
    uint8_t x[TAPS][MAXC];
    int32_t w[TAPS][MAXC], init[MAXC], acc[MAXC + 4];
    const uint8_t *xp[TAPS];
    const int32_t *wp[TAPS];
    static const int32_t zps[] = {0, -128, 127, 255, INT32_MIN, INT32_MAX, 77};
    uint64_t rng = 0xd1d1;
    int bad = 0, checked = 0;
    for (size_t n = 1; n <= MAXC; n++)
        for (size_t taps = 0; taps <= TAPS; taps += 3)
            for (int v = 0; v < 4; v++) {
                bool s = v & 1, extreme = v & 2;
                int32_t zp = zps[kt_next(&rng) % 7];
                for (size_t t = 0; t < taps; t++) {
                    /* the taps need not be consecutive in memory */
                    xp[taps - 1 - t] = x[t];
                    wp[taps - 1 - t] = w[t];
                    kt_fill8(&rng, x[t], n, extreme);
                    for (size_t c = 0; c < n; c++)
                        w[t][c] = extreme ? (c % 2 ? INT32_MIN : INT32_MAX)
                                          : (int32_t)kt_next(&rng);
                }
                for (size_t c = 0; c < n; c++)
                    init[c] = (int32_t)kt_next(&rng);
                for (size_t c = 0; c < MAXC + 4; c++)
                    acc[c] = 0x11111111;
                uk->pixel(n, taps, xp, wp, s, zp, init, acc);
                for (size_t c = 0; c < n; c++) {
                    uint64_t e = (uint64_t)(int64_t)init[c];
                    for (size_t t = 0; t < taps; t++) {
                        int64_t xv = s ? (int8_t)xp[t][c] : xp[t][c];
                        e += (uint64_t)(xv - zp) * (uint64_t)(int64_t)wp[t][c];
                    }
                    if (acc[c] != (int32_t)(uint32_t)e && bad++ < 3)
                        qp_test_failf(ctx, __FILE__, __LINE__, "n %zu taps "
                                      "%zu signed %d zp %d: acc[%zu] = %d, "
                                      "expected %d", n, taps, s, zp, c,
                                      acc[c], (int32_t)(uint32_t)e);
                    checked++;
                }
                for (size_t c = n; c < MAXC + 4; c++)
                    if (acc[c] != 0x11111111 && bad++ < 3)
                        qp_test_failf(ctx, __FILE__, __LINE__, "n %zu: wrote "
                                      "acc[%zu]", n, c);
            }
    CHECK_INT(checked, 4 * 4 * (MAXC * (MAXC + 1) / 2));
}
