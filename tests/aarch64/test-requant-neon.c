/* tests/aarch64/test-requant-neon.c: NEON requantization
 * (kernels/arm/requant-neon.c) against the reference on a grid of corner
 * cases, beside the random ones of tests/unit/test-requant-simd.c: every
 * shift of each flavor's range crossed with multipliers and accumulators
 * at the int32 ends (SQRDMULH's only saturation, INT32_MIN * INT32_MIN;
 * SQSHL's saturating and SSHL's wrapping left shifts; the wrap of
 * single rounding's final narrowing), a
 * dense run of small accumulators (every rounding tie of
 * RoundingDivideByPOT and of the float flavors with scales 2^-e), and
 * float scales across XNNPACK's limits. Outputs are int16 with zero point
 * 0 where the flavor allows it, so the clamp hides as little as possible,
 * and int8/uint8 with a zero point and an activation clamp for the
 * narrowing stores. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/requant.h"
#include "tests/test.h"

static const int32_t acc_edges[] = {
    INT32_MIN, INT32_MIN + 1, -(1 << 30) - 1, -(1 << 30), -(1 << 24) - 1,
    -65537, -65536, -32769, -256, -129, -128, 127, 128, 255, 256, 32767,
    65535, 65536, (1 << 24) + 1, (1 << 30) - 1, 1 << 30, INT32_MAX - 1,
    INT32_MAX};
#define DENSE 300 /* accumulators -DENSE .. DENSE */

static const int32_t mult_edges[] = {
    INT32_MIN, INT32_MIN + 1, -(1 << 30), -1, 0, 1, 3, 1 << 29,
    (1 << 30) - 1, 1 << 30, (1 << 30) + 1, 0x5A5A5A5A, INT32_MAX - 1,
    INT32_MAX};
#define NM (sizeof mult_edges / sizeof mult_edges[0])

static const double scale_edges[] = {
    1.0, 0.5, 0.25, 0.125, 1.5, 2.5, 1.0 / 3, 0x1.fffffep-1, 0x1p-20,
    0x1.8p-30, 1e-7, 3.0517578125e-05, 7.75, 255.75};
#define NS (sizeof scale_edges / sizeof scale_edges[0])

enum { ROWS = (int)(sizeof acc_edges / sizeof acc_edges[0]) + 2 * DENSE + 1 };

/* Row r of the accumulator matrix: the edges, then -DENSE .. DENSE;
 * every column of a row holds the same value. */
static void fill_acc(int32_t *acc, size_t cols)
{
    size_t ne = sizeof acc_edges / sizeof acc_edges[0];
    for (size_t r = 0; r < (size_t)ROWS; r++)
        for (size_t c = 0; c < cols; c++)
            acc[r * cols + c] = r < ne ? acc_edges[r] : (int32_t)(r - ne) - DENSE;
}

/* Applies rq with the reference and with NEON (rows at once, and as a
 * plane of channel c = cols - 1 when per-tensor), compares the bytes.
 * Returns the number of outputs compared. */
static size_t compare(struct qp_test_ctx *ctx, const struct qp_rq *rq,
                      const int32_t *acc, size_t cols, const char *what)
{
    size_t n = (size_t)ROWS * cols, es = rq->out_dtype == QP_DTYPE_I16 ? 2 : 1;
    unsigned char *ref = malloc(n * es), *neon = malloc(n * es);
    if (!ref || !neon) {
        qp_test_failf(ctx, __FILE__, __LINE__, "out of memory");
        free(ref);
        free(neon);
        return 0;
    }
    memset(ref, 0xA5, n * es);
    memset(neon, 0x5A, n * es);
    qp_rq_apply_i32_isa(QP_RQ_ISA_REF, rq, acc, ROWS, cols, ref);
    qp_rq_apply_i32_isa(QP_RQ_ISA_NEON, rq, acc, ROWS, cols, neon);
    size_t bad = 0;
    while (bad < n * es && ref[bad] == neon[bad])
        bad++;
    if (bad < n * es) {
        size_t e = bad / es;
        size_t k = rq->channels == 1 ? 0 : e % cols;
        qp_test_failf(ctx, __FILE__, __LINE__,
                      "%s %s %s: acc %d, multiplier %d, shift %d, scale %g "
                      "differs", qp_rq_flavor_name(rq->flavor), what,
                      qp_dtype_name(rq->out_dtype), acc[e],
                      rq->multiplier ? rq->multiplier[k] : 0,
                      rq->shift ? rq->shift[k] : 0,
                      rq->scale ? rq->scale[k] : rq->scale_d ? rq->scale_d[k] : 0);
    }
    if (rq->channels == 1) { /* a plane: tails of n % 4 too */
        memset(ref, 0xA5, n * es);
        memset(neon, 0x5A, n * es);
        qp_rq_apply_plane_isa(QP_RQ_ISA_REF, rq, 0, acc, n - 3, ref);
        qp_rq_apply_plane_isa(QP_RQ_ISA_NEON, rq, 0, acc, n - 3, neon);
        if (memcmp(ref, neon, (n - 3) * es))
            qp_test_failf(ctx, __FILE__, __LINE__, "%s %s plane differs",
                          qp_rq_flavor_name(rq->flavor), what);
    }
    free(ref);
    free(neon);
    return n;
}

/* The output settings to try: int16 full range (where allowed), int8 and
 * uint8 with a zero point and a clamp inside the range. */
struct out {
    enum qp_dtype dt;
    int32_t zp, qmin, qmax;
};
static const struct out outs[] = {
    {QP_DTYPE_I16, 0, INT16_MIN, INT16_MAX},
    {QP_DTYPE_I8, -5, -100, 120},
    {QP_DTYPE_U8, 131, 3, 255},
};

static bool xnnpack(enum qp_rq_flavor f)
{
    return f == QP_RQ_XNNPACK_FP32 || f == QP_RQ_XNNPACK_RNDNU;
}

/* Checks one prepared rq (st: what its prepare returned) on the
 * accumulator matrix with `cols` columns, then releases it. */
static size_t check(struct qp_test_ctx *ctx, enum qp_status st,
                    struct qp_rq *rq, const struct qp_error *err, int32_t *acc,
                    size_t cols, const char *what)
{
    if (st) {
        qp_test_failf(ctx, __FILE__, __LINE__, "%s", err->msg);
        return 0;
    }
    fill_acc(acc, cols);
    size_t n = compare(ctx, rq, acc, cols, what);
    qp_rq_release(rq);
    return n;
}

/* Fixed-point flavor f: every shift of its range, one column per
 * multiplier edge (per-channel), plus per-tensor 2^30 (ties). */
static size_t grid_fixed(struct qp_test_ctx *ctx, enum qp_rq_flavor f,
                         int32_t *acc)
{
    int32_t lo, hi, m[NM], sh[NM], half = 1 << 30;
    qp_rq_shift_range(f, &lo, &hi);
    size_t nm = 0;
    for (size_t i = 0; i < NM; i++) /* rndnu: multipliers >= 0 only */
        if (f != QP_RQ_XNNPACK_RNDNU || mult_edges[i] >= 0)
            m[nm++] = mult_edges[i];
    size_t done = 0;
    struct qp_rq rq;
    struct qp_error err;
    for (size_t o = xnnpack(f) ? 1 : 0; o < 3; o++)
        for (int32_t s = lo; s <= hi; s++) {
            const struct out *u = &outs[o];
            for (size_t i = 0; i < nm; i++)
                sh[i] = s;
            done += check(ctx, qp_rq_prepare_fixed(&rq, f, m, sh, nm, u->zp,
                                                   u->dt, u->qmin, u->qmax,
                                                   &err),
                          &rq, &err, acc, nm, "per-channel");
            done += check(ctx, qp_rq_prepare_fixed(&rq, f, &half, &s, 1,
                                                   u->zp, u->dt, u->qmin,
                                                   u->qmax, &err),
                          &rq, &err, acc, 1, "per-tensor");
        }
    return done;
}

/* Float flavor f: one column per scale edge (per-channel), then each
 * scale per-tensor. */
static size_t grid_float(struct qp_test_ctx *ctx, enum qp_rq_flavor f,
                         int32_t *acc)
{
    size_t done = 0;
    struct qp_rq rq;
    struct qp_error err;
    for (size_t o = xnnpack(f) ? 1 : 0; o < 3; o++) {
        const struct out *u = &outs[o];
        done += check(ctx, qp_rq_prepare_float(&rq, f, scale_edges, NS, u->zp,
                                               u->dt, u->qmin, u->qmax, &err),
                      &rq, &err, acc, NS, "per-channel");
        for (size_t i = 0; i < NS; i++)
            done += check(ctx, qp_rq_prepare_float(&rq, f, &scale_edges[i], 1,
                                                   u->zp, u->dt, u->qmin,
                                                   u->qmax, &err),
                          &rq, &err, acc, 1, "per-tensor");
    }
    return done;
}

QP_TEST(aarch64_requant_neon_corner_grid)
{
    REQUIRE(qp_rq_isa_available(QP_RQ_ISA_NEON));
    int32_t *acc = malloc((size_t)ROWS * (NM > NS ? NM : NS) * sizeof *acc);
    REQUIRE(acc);
    int flavors = 0;
    for (int i = 0; i < QP_RQ_COUNT; i++) {
        enum qp_rq_flavor f = (enum qp_rq_flavor)i;
        if (!qp_rq_isa_covers(QP_RQ_ISA_NEON, f))
            continue;
        size_t n = qp_rq_flavor_fixed(f) ? grid_fixed(ctx, f, acc)
                                         : grid_float(ctx, f, acc);
        /* fixed: >= 40 shifts x 2 outputs x ROWS x (NM - 4 + 1); float:
         * 2 outputs x ROWS x 2 NS */
        CHECK(n >= (size_t)2 * ROWS * 2 * NS);
        flavors++;
    }
    CHECK_INT(flavors, 9);
    free(acc);
}

/* Ties of the float flavors one ulp apart: acc * scale lands exactly on
 * k + 0.5 for scale 2^-e, and one float ulp below or above it when the
 * scale is nudged; SCVTF of |acc| > 2^24 rounds before the multiply. */
QP_TEST(aarch64_requant_neon_float_ties)
{
    static const enum qp_rq_flavor fl[] = {QP_RQ_XNNPACK_FP32, QP_RQ_ORT,
                                           QP_RQ_ONNX_REF};
    enum { N = 4096 };
    int32_t *acc = malloc(N * sizeof *acc);
    int8_t ref[N], neon[N];
    REQUIRE(acc);
    for (int i = 0; i < N; i++) /* odd accumulators: ties at scale 2^-1 */
        acc[i] = i < N / 2 ? 2 * i - N / 2 + 1 : (1 << 24) + 2 * i + 1;
    int tested = 0;
    for (size_t f = 0; f < 3; f++)
        for (int e = 1; e <= 24; e++)
            for (int nudge = -1; nudge <= 1; nudge++) {
                double s = nextafterf(ldexpf(1.0f, -e),
                                      nudge < 0 ? 0.0f : nudge > 0 ? 1.0f
                                                                   : ldexpf(1.0f, -e));
                struct qp_rq rq;
                struct qp_error err;
                REQUIRE_OK(qp_rq_prepare_float(&rq, fl[f], &s, 1, 0,
                                               QP_DTYPE_I8, -128, 127, &err),
                           &err);
                qp_rq_apply_i32_isa(QP_RQ_ISA_REF, &rq, acc, 1, N, ref);
                qp_rq_apply_i32_isa(QP_RQ_ISA_NEON, &rq, acc, 1, N, neon);
                if (memcmp(ref, neon, N))
                    qp_test_failf(ctx, __FILE__, __LINE__, "%s scale %a "
                                  "differs", qp_rq_flavor_name(fl[f]), s);
                qp_rq_release(&rq);
                tested++;
            }
    CHECK_INT(tested, 3 * 24 * 3);
    free(acc);
}
