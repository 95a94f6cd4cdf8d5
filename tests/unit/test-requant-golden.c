/* Golden tests of kernels/requant.h: every case of
 * ../shared/golden/public/requant/<flavor>/ (captured from TFLite Micro,
 * CMSIS-NN, gemmlowp and XNNPACK), bit for bit, through the reference and
 * every SIMD variant this CPU has; scaled.npy against the scaling step
 * alone. */
#include <stdlib.h>
#include <string.h>

#include "kernels/requant.h"
#include "tests/test.h"
#include "tests/unit/test-requant.h"

/* Compares out (n values of dtype) with expected; reports the first
 * mismatches. Returns the number of mismatches. */
static int compare_out(struct qp_test_ctx *ctx, const char *dir,
                       const char *what, const struct qp_tensor *expected,
                       const void *out)
{
    size_t n = qp_tensor_numel(expected);
    int bad = 0;
    for (size_t i = 0; i < n; i++) {
        int64_t want = tensor_int(expected, i), got;
        if (expected->dtype == QP_DTYPE_I8)
            got = ((const int8_t *)out)[i];
        else if (expected->dtype == QP_DTYPE_U8)
            got = ((const uint8_t *)out)[i];
        else
            got = ((const int16_t *)out)[i];
        if (got != want && bad++ < 3)
            qp_test_failf(ctx, __FILE__, __LINE__, "%s %s [%zu]: got %lld, expected %lld",
                          dir, what, i, (long long)got, (long long)want);
    }
    return bad;
}

/* Runs one requant case; returns the number of elements checked. */
static size_t run_case(struct qp_test_ctx *ctx, enum qp_rq_flavor f,
                       const char *dir)
{
    struct qp_error err;
    struct qp_json *j = golden_json(ctx, dir);
    struct qp_tensor *acc = golden_npy(ctx, dir, "acc", false);
    struct qp_tensor *exp = golden_npy(ctx, dir, "expected", false);
    struct qp_tensor *mul = golden_npy(ctx, dir, "multiplier", true);
    struct qp_tensor *sh = golden_npy(ctx, dir, "shift", true);
    struct qp_tensor *sc = golden_npy(ctx, dir, "scale", true);
    struct qp_tensor *scaled = golden_npy(ctx, dir, "scaled", true);
    size_t checked = 0;
    struct qp_rq rq = {0};
    void *out = NULL;
    if (!j || !acc || !exp || acc->ndim != 2)
        goto done;
    enum qp_rq_flavor jf;
    CHECK(qp_rq_flavor_from_name(golden_str(ctx, j, "flavor"), &jf) && jf == f);
    enum qp_dtype odt = QP_DTYPE_I8;
    CHECK(qp_dtype_from_name(golden_str(ctx, j, "output_dtype"), &odt));
    CHECK_INT(exp->dtype, odt);
    CHECK_INT(acc->dtype, qp_rq_flavor_acc64(f) ? QP_DTYPE_I64 : QP_DTYPE_I32);
    int32_t zp = (int32_t)golden_int(ctx, j, "output_zero_point");
    int32_t qmin = (int32_t)golden_int(ctx, j, "qmin");
    int32_t qmax = (int32_t)golden_int(ctx, j, "qmax");
    size_t rows = (size_t)acc->shape[0], cols = (size_t)acc->shape[1];
    enum qp_status st;
    if (qp_rq_flavor_fixed(f)) {
        if (!mul || !sh || mul->dtype != QP_DTYPE_I32 || sh->dtype != QP_DTYPE_I32) {
            qp_test_failf(ctx, __FILE__, __LINE__, "%s: multiplier/shift", dir);
            goto done;
        }
        st = qp_rq_prepare_fixed(&rq, f, mul->data, sh->data, qp_tensor_numel(mul),
                                 zp, odt, qmin, qmax, &err);
    } else {
        if (!sc || sc->dtype != QP_DTYPE_F32) {
            qp_test_failf(ctx, __FILE__, __LINE__, "%s: scale", dir);
            goto done;
        }
        size_t nc = qp_tensor_numel(sc);
        double s[64];
        if (nc > 64)
            goto done;
        for (size_t c = 0; c < nc; c++)
            s[c] = ((const float *)sc->data)[c];
        st = qp_rq_prepare_float(&rq, f, s, nc, zp, odt, qmin, qmax, &err);
    }
    if (st != QP_OK) {
        qp_test_failf(ctx, __FILE__, __LINE__, "%s: %s", dir, err.msg);
        goto done;
    }
    CHECK(rq.channels == 1 || rq.channels == cols);
    out = calloc(rows * cols, 2);
    if (!out)
        goto done;
    if (qp_rq_flavor_acc64(f)) {
        qp_rq_apply_i64(&rq, acc->data, rows, cols, out);
        compare_out(ctx, dir, "apply_i64", exp, out);
    } else {
        for (int isa = 0; isa < QP_RQ_ISA_COUNT; isa++) {
            if (!qp_rq_isa_available((enum qp_rq_isa)isa))
                continue;
            memset(out, 0x5a, rows * cols * 2);
            qp_rq_apply_i32_isa((enum qp_rq_isa)isa, &rq, acc->data, rows, cols, out);
            compare_out(ctx, dir, qp_rq_isa_name((enum qp_rq_isa)isa), exp, out);
        }
        memset(out, 0x5a, rows * cols * 2);
        qp_rq_apply_i32(&rq, acc->data, rows, cols, out);
        compare_out(ctx, dir, "apply_i32", exp, out);
    }
    /* qp_rq_one agrees, and the raw scaling step matches scaled.npy */
    int bad = 0;
    for (size_t i = 0; i < rows * cols; i++) {
        size_t c = i % cols, k = rq.channels == 1 ? 0 : c;
        int64_t a = tensor_int(acc, i);
        if (qp_rq_one(&rq, c, a) != tensor_int(exp, i) && bad++ < 3)
            qp_test_failf(ctx, __FILE__, __LINE__, "%s: qp_rq_one [%zu]", dir, i);
        if (scaled && qp_rq_scale_fixed(f, a, rq.multiplier[k], rq.shift[k]) !=
                          tensor_int(scaled, i) && bad++ < 3)
            qp_test_failf(ctx, __FILE__, __LINE__, "%s: scaled [%zu] = %d, expected %lld",
                          dir, i, qp_rq_scale_fixed(f, a, rq.multiplier[k], rq.shift[k]),
                          (long long)tensor_int(scaled, i));
    }
    CHECK(scaled || !qp_rq_flavor_fixed(f));
    checked = rows * cols;
done:
    free(out);
    qp_rq_release(&rq);
    qp_tensor_free(acc);
    qp_tensor_free(exp);
    qp_tensor_free(mul);
    qp_tensor_free(sh);
    qp_tensor_free(sc);
    qp_tensor_free(scaled);
    qp_json_free(j);
    return checked;
}

static void run_flavor(struct qp_test_ctx *ctx, enum qp_rq_flavor f)
{
    static char names[GOLDEN_MAX_CASES][512];
    char sub[64];
    snprintf(sub, sizeof sub, "requant/%s", qp_rq_flavor_name(f));
    int n = golden_cases(ctx, sub, names, GOLDEN_MAX_CASES);
    size_t total = 0;
    for (int i = 0; i < n; i++)
        total += run_case(ctx, f, names[i]);
    CHECK_INT(n, 30);
    CHECK(total > 1000);
}

QP_TEST(requant_golden_tflite_double) { run_flavor(ctx, QP_RQ_TFLITE_DOUBLE); }
QP_TEST(requant_golden_tflite_single) { run_flavor(ctx, QP_RQ_TFLITE_SINGLE); }
QP_TEST(requant_golden_tflite_int64_double) { run_flavor(ctx, QP_RQ_TFLITE_INT64_DOUBLE); }
QP_TEST(requant_golden_tflite_int64_single) { run_flavor(ctx, QP_RQ_TFLITE_INT64_SINGLE); }
QP_TEST(requant_golden_cmsis_nn_double) { run_flavor(ctx, QP_RQ_CMSIS_NN_DOUBLE); }
QP_TEST(requant_golden_cmsis_nn_single) { run_flavor(ctx, QP_RQ_CMSIS_NN_SINGLE); }
QP_TEST(requant_golden_cmsis_nn_s64) { run_flavor(ctx, QP_RQ_CMSIS_NN_S64); }
QP_TEST(requant_golden_gemmlowp) { run_flavor(ctx, QP_RQ_GEMMLOWP); }
QP_TEST(requant_golden_xnnpack_fp32) { run_flavor(ctx, QP_RQ_XNNPACK_FP32); }
