/* The prepared integer add (kernels/add-s8.h: lookup tables and the SIMD
 * requantization of the sum) against the reference qp_add_s8_ref, byte for
 * byte: every int32 flavor the add takes, int8 and uint8, random scales
 * derived as TFLite derives them, zero points, activation ranges and a
 * broadcast second input. */
#include <math.h>
#include <string.h>

#include "kernels/add-s8.h"
#include "tests/test.h"
#include "tests/unit/kern-test.h"

QP_TEST(add_s8_prepared_matches_the_reference)
{
    static const enum qp_rq_flavor flavors[] = {
        QP_RQ_TFLITE_DOUBLE, QP_RQ_TFLITE_SINGLE, QP_RQ_CMSIS_NN_DOUBLE,
        QP_RQ_CMSIS_NN_SINGLE, QP_RQ_GEMMLOWP};
    enum { N = 777 };
    uint8_t x1[N], x2[N], want[N], got[N];
    uint64_t r = 3;
    int cases = 0, bad = 0;
    for (size_t fi = 0; fi < sizeof flavors / sizeof flavors[0]; fi++)
        for (int t = 0; t < 40; t++) {
            enum qp_dtype dt = t % 2 ? QP_DTYPE_U8 : QP_DTYPE_I8;
            int32_t lo = dt == QP_DTYPE_I8 ? -128 : 0, hi = lo + 255;
            double s1 = ldexp(1.0 + (double)(kt_next(&r) % 1000) / 1000, kt_range(&r, -12, 2));
            double s2 = ldexp(1.0 + (double)(kt_next(&r) % 1000) / 1000, kt_range(&r, -12, 2));
            double so = ldexp(1.0 + (double)(kt_next(&r) % 1000) / 1000, kt_range(&r, -12, 2));
            double twice = 2 * fmax(s1, s2);
            struct qp_add_s8_params p = {
                .flavor = flavors[fi], .dtype = dt, .left_shift = 20,
                .zero_point1 = kt_range(&r, lo, hi), .zero_point2 = kt_range(&r, lo, hi),
                .out_zero_point = kt_range(&r, lo, hi), .act_min = lo + t % 7,
                .act_max = hi - t % 5};
            qp_rq_quantize_multiplier(p.flavor, s1 / twice, &p.multiplier1, &p.shift1);
            qp_rq_quantize_multiplier(p.flavor, s2 / twice, &p.multiplier2, &p.shift2);
            qp_rq_quantize_multiplier(p.flavor, twice / ((1 << 20) * so),
                                      &p.out_multiplier, &p.out_shift);
            struct qp_error err;
            struct qp_add_s8 a;
            if (qp_add_s8_check(&p, NULL))
                continue; /* a shift outside the flavor's range */
            REQUIRE_OK(qp_add_s8_prepare(&a, &p, &err), &err);
            kt_fill8(&r, x1, N, t % 3 == 0);
            kt_fill8(&r, x2, N, t % 4 == 0);
            size_t n2 = t % 3 == 1 ? 7 : N; /* N is a multiple of 7 */
            qp_add_s8_ref(&p, x1, x2, N, n2, want);
            qp_add_s8_run(&a, x1, x2, N, n2, got);
            bad += memcmp(want, got, N) != 0;
            cases++;
            qp_add_s8_release(&a);
        }
    printf("prepared add: %d parameter sets\n", cases);
    CHECK(cases > 150);
    CHECK_INT(bad, 0);
}
