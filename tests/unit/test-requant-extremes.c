/* The int32 fixed-point flavors on the whole int32 input range, against
 * the values the upstream functions return (tests/golden/requant-extremes/,
 * captured from CMSIS-NN, TFLite Micro and gemmlowp; README there): acc
 * near +-2^31, multipliers 0, 2^30, 2^31-1 and negative ones, every shift
 * in [-31, 30], products whose shifted value does not fit 32 bits. Checked
 * on the reference's scaling step and, through the epilogue (int32 zero
 * point add, clamp), on every variant this machine runs (reference rows,
 * AVX2, AVX-512, NEON), per channel and per tensor. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/npy.h"
#include "kernels/requant.h"
#include "tests/test.h"

static const struct {
    const char *file;
    enum qp_rq_flavor flavor;
} flavors[] = {
    {"cmsis-nn-single", QP_RQ_CMSIS_NN_SINGLE},
    {"cmsis-nn-double", QP_RQ_CMSIS_NN_DOUBLE},
    {"tflite-single", QP_RQ_TFLITE_SINGLE},
    {"tflite-double", QP_RQ_TFLITE_DOUBLE},
    {"gemmlowp", QP_RQ_GEMMLOWP},
};
enum { NFLAVORS = sizeof flavors / sizeof flavors[0] };

/* Rows of the grid part of inputs.npy: 62 shifts x 18 accs x 11
 * multipliers, multiplier fastest (README). */
enum { GRID_ACCS = 18, GRID_MULS = 11, GRID_ROWS = 62 * GRID_ACCS * GRID_MULS };

/* Loads tests/golden/requant-extremes/<name>.npy as int32 with `cols`
 * columns; NULL (failure recorded) when missing or of another form. */
static struct qp_tensor *load(struct qp_test_ctx *ctx, const char *name,
                              int cols)
{
    const char *g = qp_test_golden_dir();
    if (!g) {
        qp_test_failf(ctx, __FILE__, __LINE__,
                      "tests/golden not found (run from the repository root "
                      "or set QP_ROOT)");
        return NULL;
    }
    char path[600];
    snprintf(path, sizeof path, "%s/requant-extremes/%s.npy", g, name);
    struct qp_tensor *t = NULL;
    struct qp_error err;
    if (qp_fmt_npy_load(path, NULL, false, &t, &err) != QP_OK) {
        qp_test_failf(ctx, __FILE__, __LINE__, "%s", err.msg);
        return NULL;
    }
    bool ok = t->dtype == QP_DTYPE_I32 && t->ndim == (cols > 1 ? 2 : 1) &&
              (cols == 1 || t->shape[1] == cols) && t->shape[0] > GRID_ROWS;
    if (!ok) {
        qp_test_failf(ctx, __FILE__, __LINE__, "%s: not int32 [N%s]", path,
                      cols > 1 ? ", 3" : "");
        qp_tensor_free(t);
        return NULL;
    }
    return t;
}

struct vectors {
    struct qp_tensor *in;   /* [n, 3] (acc, multiplier, shift) */
    size_t n;
    int32_t *acc, *mul, *shift; /* [n] columns of in */
};

static void vectors_free(struct vectors *v)
{
    qp_tensor_free(v->in);
    free(v->acc);
    free(v->mul);
    free(v->shift);
}

static bool vectors_load(struct qp_test_ctx *ctx, struct vectors *v)
{
    memset(v, 0, sizeof *v);
    v->in = load(ctx, "inputs", 3);
    if (!v->in)
        return false;
    v->n = (size_t)v->in->shape[0];
    v->acc = malloc(v->n * sizeof *v->acc);
    v->mul = malloc(v->n * sizeof *v->mul);
    v->shift = malloc(v->n * sizeof *v->shift);
    if (!v->acc || !v->mul || !v->shift) {
        qp_test_failf(ctx, __FILE__, __LINE__, "out of memory");
        vectors_free(v);
        return false;
    }
    const int32_t *d = v->in->data;
    for (size_t i = 0; i < v->n; i++) {
        v->acc[i] = d[3 * i];
        v->mul[i] = d[3 * i + 1];
        v->shift[i] = d[3 * i + 2];
    }
    return true;
}

QP_TEST(requant_extremes_reference_matches_upstream)
{
    struct vectors v;
    if (!vectors_load(ctx, &v))
        return;
    for (size_t f = 0; f < NFLAVORS; f++) {
        struct qp_tensor *want = load(ctx, flavors[f].file, 1);
        if (!want)
            continue;
        CHECK_INT(want->shape[0], (int64_t)v.n);
        const int32_t *w = want->data;
        int bad = 0;
        for (size_t i = 0; i < v.n && (size_t)want->shape[0] == v.n; i++) {
            int32_t got = qp_rq_scale_fixed(flavors[f].flavor, v.acc[i],
                                            v.mul[i], v.shift[i]);
            if (got != w[i] && bad++ < 5)
                qp_test_failf(ctx, __FILE__, __LINE__,
                              "%s: acc %d multiplier %d shift %d: %d, "
                              "upstream %d", flavors[f].file, v.acc[i],
                              v.mul[i], v.shift[i], got, w[i]);
        }
        CHECK_INT(bad, 0);
        qp_tensor_free(want);
    }
    /* the case of the defect report, by hand: CMSIS-NN's single rounding
     * keeps 64 bits until after its last shift */
    CHECK_INT(qp_rq_scale_fixed(QP_RQ_CMSIS_NN_SINGLE, INT32_MIN, 1353689675, 0),
              -1353689675);
    vectors_free(&v);
}

/* clamp(scaled + zp as an int32 add, qmin, qmax), the epilogue of the
 * TFLite / CMSIS-NN / gemmlowp flavors */
static int32_t epilogue(int32_t scaled, int32_t zp, int32_t qmin, int32_t qmax)
{
    int32_t o = (int32_t)((uint32_t)scaled + (uint32_t)zp);
    return o < qmin ? qmin : o > qmax ? qmax : o;
}

static int32_t out_at(enum qp_dtype dt, const void *out, size_t i)
{
    return dt == QP_DTYPE_I16 ? ((const int16_t *)out)[i]
           : dt == QP_DTYPE_I8 ? ((const int8_t *)out)[i]
                               : ((const uint8_t *)out)[i];
}

/* Requantizes the n accumulators with rq on isa and compares with the
 * upstream values want[idx[i]] through the epilogue. */
static int compare(struct qp_test_ctx *ctx, enum qp_rq_isa isa,
                   const struct qp_rq *rq, const int32_t *acc, size_t n,
                   const int32_t *want, const char *what)
{
    int16_t *out = calloc(n, sizeof *out);
    if (!out) {
        qp_test_failf(ctx, __FILE__, __LINE__, "out of memory");
        return 1;
    }
    qp_rq_apply_i32_isa(isa, rq, acc, 1, n, out);
    int bad = 0;
    for (size_t i = 0; i < n; i++) {
        int32_t e = epilogue(want[i], rq->zero_point, rq->qmin, rq->qmax);
        int32_t g = out_at(rq->out_dtype, out, i);
        if (g != e && bad++ < 3)
            qp_test_failf(ctx, __FILE__, __LINE__,
                          "%s %s %s zp %d: element %zu (acc %d): %d, want %d",
                          qp_rq_isa_name(isa), qp_rq_flavor_name(rq->flavor),
                          what, rq->zero_point, i, acc[i], g, e);
    }
    free(out);
    return bad;
}

/* Output dtypes and zero points: the int16 window sees scaled values in
 * [-65535, 65535], the others the sign of the rest (and the wrapping zero
 * point add near +-2^31). */
static const struct {
    enum qp_dtype dt;
    int32_t zp;
} outs[] = {
    {QP_DTYPE_I16, 0}, {QP_DTYPE_I16, 32767}, {QP_DTYPE_I16, -32768},
    {QP_DTYPE_I8, -5}, {QP_DTYPE_U8, 255},
};

static void check_variant(struct qp_test_ctx *ctx, enum qp_rq_isa isa,
                          enum qp_rq_flavor f, const struct vectors *v,
                          const int32_t *want)
{
    for (size_t o = 0; o < sizeof outs / sizeof outs[0]; o++) {
        const struct qp_dtype_traits *t = qp_dtype_traits(outs[o].dt);
        int32_t qmin = (int32_t)t->min, qmax = (int32_t)t->max;
        struct qp_rq rq;
        struct qp_error err;
        /* per channel: row i is channel i */
        REQUIRE_OK(qp_rq_prepare_fixed(&rq, f, v->mul, v->shift, v->n,
                                       outs[o].zp, outs[o].dt, qmin, qmax,
                                       &err), &err);
        CHECK_INT(compare(ctx, isa, &rq, v->acc, v->n, want, "per-channel"), 0);
        qp_rq_release(&rq);
        /* per tensor: for each (shift, multiplier) of the grid, its 18
         * accumulators (a full vector and a tail) */
        for (size_t s = 0; s < 62; s++)
            for (size_t m = 0; m < GRID_MULS; m++) {
                int32_t acc[GRID_ACCS], w[GRID_ACCS];
                size_t r0 = s * GRID_ACCS * GRID_MULS + m;
                for (size_t a = 0; a < GRID_ACCS; a++) {
                    acc[a] = v->acc[r0 + a * GRID_MULS];
                    w[a] = want[r0 + a * GRID_MULS];
                }
                REQUIRE_OK(qp_rq_prepare_fixed(&rq, f, &v->mul[r0],
                                               &v->shift[r0], 1, outs[o].zp,
                                               outs[o].dt, qmin, qmax, &err),
                           &err);
                int bad = compare(ctx, isa, &rq, acc, GRID_ACCS, w,
                                  "per-tensor");
                qp_rq_release(&rq);
                if (bad)
                    return;
            }
    }
}

QP_TEST(requant_extremes_every_variant_matches_upstream)
{
    struct vectors v;
    if (!vectors_load(ctx, &v))
        return;
    int variants = 0;
    for (int isa = 0; isa < QP_RQ_ISA_COUNT; isa++) {
        if (!qp_rq_isa_available((enum qp_rq_isa)isa))
            continue;
        variants++;
        for (size_t f = 0; f < NFLAVORS; f++) {
            struct qp_tensor *want = load(ctx, flavors[f].file, 1);
            if (!want)
                continue;
            if ((size_t)want->shape[0] == v.n)
                check_variant(ctx, (enum qp_rq_isa)isa, flavors[f].flavor, &v,
                              want->data);
            qp_tensor_free(want);
        }
    }
    CHECK(variants >= 1);
    vectors_free(&v);
}
