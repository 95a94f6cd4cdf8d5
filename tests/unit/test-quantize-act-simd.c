/* The activation quantizer's rows (kernels/quantize-act.h) on every
 * variant this machine has, against the reference qp_qa_quantize_one,
 * element by element: every flavor and output dtype, ties (x = (k + 1/2)
 * s), values beyond the range, NaN and infinities, subnormal and large
 * scales, zero points at the range ends, lengths that leave every tail. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/quantize-act.h"
#include "tests/test.h"
#include "tests/unit/kern-test.h"

static const enum qp_dtype dtypes[5] = {QP_DTYPE_I8, QP_DTYPE_U8, QP_DTYPE_I16,
                                        QP_DTYPE_U16, QP_DTYPE_I32};

static int64_t elem(enum qp_dtype dt, const void *p, size_t i)
{
    switch (dt) {
    case QP_DTYPE_I8: return ((const int8_t *)p)[i];
    case QP_DTYPE_U8: return ((const uint8_t *)p)[i];
    case QP_DTYPE_I16: return ((const int16_t *)p)[i];
    case QP_DTYPE_U16: return ((const uint16_t *)p)[i];
    default: return ((const int32_t *)p)[i];
    }
}

/* values around the grid of scale s: ties, near-ties, wide and special */
static void fill(uint64_t *r, float *x, size_t n, float s)
{
    for (size_t i = 0; i < n; i++) {
        int32_t k = kt_range(r, -70000, 70000);
        switch (kt_next(r) % 6) {
        case 0: x[i] = ((float)k + 0.5f) * s; break;
        case 1: x[i] = nextafterf(((float)k + 0.5f) * s, kt_next(r) & 1 ? INFINITY : -INFINITY); break;
        case 2: x[i] = (float)k * s * 0.01f; break;
        case 3: x[i] = (float)(int64_t)kt_next(r) * 1e-12f; break;
        default: x[i] = ((float)kt_range(r, -300, 300) + 0.5f) * s; break;
        }
    }
    static const float special[] = {NAN, INFINITY, -INFINITY, 0.0f, -0.0f, 3e38f, -3e38f};
    for (size_t i = 0; i < 7 && i < n; i++)
        x[kt_next(r) % n] = special[i];
}

QP_TEST(quantize_act_rows_match_the_reference_on_every_variant)
{
    enum { N = 1000 };
    float *x = malloc(N * sizeof *x), *y = malloc(N * sizeof *y);
    int32_t *got = malloc(N * sizeof *got);
    REQUIRE(x && y && got);
    const float scales[] = {1.0f, 0.5f, 0.0123f, 3.0e-6f, 1e-40f, 7.5e3f};
    uint64_t r = 7;
    int variants = 0, bad = 0;
    for (int isa = 0; isa < QP_RQ_ISA_COUNT; isa++) {
        if (!qp_rq_isa_available((enum qp_rq_isa)isa))
            continue;
        variants++;
        for (int f = 0; f < QP_QA_COUNT; f++)
            for (size_t si = 0; si < sizeof scales / sizeof scales[0]; si++)
                for (int d = 0; d < 5; d++) {
                    enum qp_dtype dt = dtypes[d];
                    const struct qp_dtype_traits *t = qp_dtype_traits(dt);
                    int32_t qmin = (int32_t)t->min, qmax = (int32_t)t->max;
                    int32_t zps[3] = {qmin, qmax, (int32_t)((t->min + t->max) / 2) + 3};
                    if (dt == QP_DTYPE_I32) { /* keep the float clamp exact */
                        qmin = -100000;
                        qmax = 100000;
                        zps[0] = qmin;
                        zps[1] = qmax;
                        zps[2] = 17;
                    }
                    for (int zi = 0; zi < 3; zi++) {
                        size_t n = 1 + kt_next(&r) % N;
                        fill(&r, x, n, scales[si]);
                        qp_qa_quantize_row_isa((enum qp_rq_isa)isa, (enum qp_qa_flavor)f,
                                               x, n, scales[si], zps[zi], qmin, qmax,
                                               dt, got);
                        qp_qa_fake_row_isa((enum qp_rq_isa)isa, (enum qp_qa_flavor)f, x,
                                           n, scales[si], zps[zi], qmin, qmax, y);
                        for (size_t i = 0; i < n; i++) {
                            int32_t want = qp_qa_quantize_one((enum qp_qa_flavor)f, x[i],
                                                              scales[si], zps[zi], qmin,
                                                              qmax);
                            float fwant = ((float)want - (float)zps[zi]) * scales[si];
                            if (elem(dt, got, i) != want ||
                                memcmp(&y[i], &fwant, sizeof fwant)) {
                                if (bad++ < 5)
                                    qp_test_failf(ctx, __FILE__, __LINE__,
                                                  "%s %s %s s=%g zp=%d x=%a: got %lld (%a), "
                                                  "want %d (%a)",
                                                  qp_rq_isa_name((enum qp_rq_isa)isa),
                                                  qp_qa_flavor_name((enum qp_qa_flavor)f),
                                                  qp_dtype_name(dt), (double)scales[si],
                                                  zps[zi], (double)x[i],
                                                  (long long)elem(dt, got, i), (double)y[i],
                                                  want, (double)fwant);
                            }
                        }
                    }
                }
    }
    printf("quantize-act rows: %d variants checked (chosen: %s)\n", variants,
           qp_qa_variant());
    CHECK(variants >= 1);
    CHECK_INT(bad, 0);
    free(x);
    free(y);
    free(got);
}

QP_TEST(quantize_act_rows_hand_values)
{
    /* s = 0.5, zp = 3, int8: 1.25 / 0.5 = 2.5 -> 2 (even) or 3 (away);
     * -1.25 -> -2 or -3; 100 -> 200 clamps to 127 - 3; NaN -> -128 */
    const float x[5] = {1.25f, -1.25f, 100.0f, NAN, 0.75f};
    int8_t q[5];
    qp_qa_quantize_row(QP_QA_ONNX, x, 5, 0.5f, 3, -128, 127, QP_DTYPE_I8, q);
    const int8_t even[5] = {5, 1, 127, -128, 5};
    CHECK(!memcmp(q, even, 5));
    qp_qa_quantize_row(QP_QA_TFLITE, x, 5, 0.5f, 3, -128, 127, QP_DTYPE_I8, q);
    const int8_t away[5] = {6, 0, 127, -128, 5};
    CHECK(!memcmp(q, away, 5));
    float y[5];
    qp_qa_fake_row(QP_QA_TFLITE, x, 5, 0.5f, 3, -128, 127, y);
    CHECK_NEAR(y[0], 1.5, 0);
    CHECK_NEAR(y[1], -1.5, 0);
    CHECK_NEAR(y[2], 62.0, 0);
    CHECK_NEAR(y[3], -65.5, 0);
    const uint8_t u[3] = {0, 10, 255};
    float d[3];
    qp_qa_dequantize_row(u, QP_DTYPE_U8, 3, 0.25f, 10, d);
    CHECK_NEAR(d[0], -2.5, 0);
    CHECK_NEAR(d[1], 0.0, 0);
    CHECK_NEAR(d[2], 61.25, 0);
}
