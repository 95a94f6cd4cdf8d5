/* Tests of the multiplier derivation (kernels/ref/requant-derive.c):
 * golden quantize-multiplier and per-channel-multiplier cases captured
 * from TFLite's QuantizeMultiplier / PopulateConvolutionQuantizationParams,
 * hand-computed edge cases, XNNPACK's rndnu parameters and limits, and
 * TFLite's activation ranges. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/requant.h"
#include "tests/test.h"
#include "tests/unit/test-requant.h"

static void quantize_multiplier_golden(struct qp_test_ctx *ctx,
                                       enum qp_rq_flavor f)
{
    static char names[GOLDEN_MAX_CASES][512];
    char sub[64];
    snprintf(sub, sizeof sub, "quantize-multiplier/%s", qp_rq_flavor_name(f));
    int n = golden_cases(ctx, sub, names, GOLDEN_MAX_CASES);
    size_t total = 0;
    for (int i = 0; i < n; i++) {
        struct qp_tensor *r = golden_npy(ctx, names[i], "real_multiplier", false);
        struct qp_tensor *em = golden_npy(ctx, names[i], "expected_multiplier", false);
        struct qp_tensor *es = golden_npy(ctx, names[i], "expected_shift", false);
        if (r && em && es && r->dtype == QP_DTYPE_F64 &&
            qp_tensor_numel(em) == qp_tensor_numel(r)) {
            size_t k = qp_tensor_numel(r);
            int32_t *m = calloc(k, sizeof *m), *s = calloc(k, sizeof *s);
            struct qp_error err;
            CHECK_OK(qp_rq_derive(f, r->data, k, m, s, &err), &err);
            int bad = 0;
            for (size_t j = 0; j < k; j++)
                if ((m[j] != tensor_int(em, j) || s[j] != tensor_int(es, j)) &&
                    bad++ < 3)
                    qp_test_failf(ctx, __FILE__, __LINE__,
                                  "%s [%zu] %a: got (%d, %d), expected (%lld, %lld)",
                                  names[i], j, ((double *)r->data)[j], m[j], s[j],
                                  (long long)tensor_int(em, j),
                                  (long long)tensor_int(es, j));
            total += k;
            free(m);
            free(s);
        } else {
            qp_test_failf(ctx, __FILE__, __LINE__, "%s: unreadable case", names[i]);
        }
        qp_tensor_free(r);
        qp_tensor_free(em);
        qp_tensor_free(es);
    }
    CHECK_INT(n, 4);
    CHECK(total >= 100);
}

QP_TEST(requant_golden_quantize_multiplier_double)
{
    quantize_multiplier_golden(ctx, QP_RQ_TFLITE_DOUBLE);
}

QP_TEST(requant_golden_quantize_multiplier_single)
{
    quantize_multiplier_golden(ctx, QP_RQ_TFLITE_SINGLE);
}

static float hex_float(struct qp_test_ctx *ctx, const struct qp_json *j,
                       const char *key)
{
    return (float)strtod(golden_str(ctx, j, key), NULL);
}

static void per_channel_case(struct qp_test_ctx *ctx, enum qp_rq_flavor f,
                             const char *dir)
{
    struct qp_error err;
    struct qp_json *j = golden_json(ctx, dir);
    struct qp_tensor *ws = golden_npy(ctx, dir, "weight_scale", false);
    struct qp_tensor *em = golden_npy(ctx, dir, "expected_multiplier", false);
    struct qp_tensor *es = golden_npy(ctx, dir, "expected_shift", false);
    if (!j || !ws || !em || !es || ws->dtype != QP_DTYPE_F32)
        goto done;
    float in = hex_float(ctx, j, "input_scale_hex");
    float out = hex_float(ctx, j, "output_scale_hex");
    CHECK(in == (float)golden_num(ctx, j, "input_scale"));
    size_t nc = qp_tensor_numel(em), nw = qp_tensor_numel(ws);
    CHECK(nw == nc || nw == 1);
    float *w = malloc(nc * sizeof *w);
    int32_t *m = malloc(nc * sizeof *m), *s = malloc(nc * sizeof *s);
    for (size_t c = 0; c < nc; c++)
        w[c] = ((const float *)ws->data)[nw == 1 ? 0 : c];
    CHECK_OK(qp_rq_derive_per_channel(f, QP_RQ_PRODUCT_DOUBLE, in, w, nc, out, m,
                                      s, &err), &err);
    for (size_t c = 0; c < nc; c++)
        if (m[c] != tensor_int(em, c) || s[c] != tensor_int(es, c))
            qp_test_failf(ctx, __FILE__, __LINE__,
                          "%s channel %zu: got (%d, %d), expected (%lld, %lld)",
                          dir, c, m[c], s[c], (long long)tensor_int(em, c),
                          (long long)tensor_int(es, c));
    /* the same multipliers through qp_rq_prepare_scales */
    enum qp_dtype odt = QP_DTYPE_I8;
    CHECK(qp_dtype_from_name(golden_str(ctx, j, "output_dtype"), &odt));
    const struct qp_dtype_traits *tr = qp_dtype_traits(odt);
    int32_t zp = (int32_t)golden_int(ctx, j, "output_zero_point");
    struct qp_rq rq;
    if (odt == QP_DTYPE_I8 || odt == QP_DTYPE_I16) {
        CHECK_OK(qp_rq_prepare_scales(&rq, f, in, w, nc, out, zp, odt,
                                      (int32_t)tr->min, (int32_t)tr->max, &err), &err);
        for (size_t c = 0; c < nc && rq.multiplier; c++)
            CHECK(rq.multiplier[c] == m[c] && rq.shift[c] == s[c]);
        qp_rq_release(&rq);
    }
    /* the activation range */
    enum qp_rq_act act = QP_RQ_ACT_NONE;
    CHECK(qp_rq_act_from_name(golden_str(ctx, j, "activation"), &act));
    int32_t amin = 0, amax = 0;
    CHECK_OK(qp_rq_activation_range(act, out, zp, (int32_t)tr->min,
                                    (int32_t)tr->max, &amin, &amax, &err), &err);
    CHECK_INT(amin, golden_int(ctx, j, "expected_activation_min"));
    CHECK_INT(amax, golden_int(ctx, j, "expected_activation_max"));
    /* the legacy uint8 path: product rounded to float first */
    if (qp_json_get(j, "legacy_multiplier")) {
        int32_t lm, ls;
        CHECK_OK(qp_rq_derive_per_channel(f, QP_RQ_PRODUCT_LEGACY_FLOAT, in, w, 1,
                                          out, &lm, &ls, &err), &err);
        CHECK_INT(lm, golden_int(ctx, j, "legacy_multiplier"));
        CHECK_INT(ls, golden_int(ctx, j, "legacy_shift"));
        CHECK_INT(-ls, golden_int(ctx, j, "legacy_shift_as_returned"));
    }
    free(w);
    free(m);
    free(s);
done:
    qp_tensor_free(ws);
    qp_tensor_free(em);
    qp_tensor_free(es);
    qp_json_free(j);
}

static void per_channel_golden(struct qp_test_ctx *ctx, enum qp_rq_flavor f)
{
    static char names[GOLDEN_MAX_CASES][512];
    char sub[64];
    snprintf(sub, sizeof sub, "per-channel-multiplier/%s", qp_rq_flavor_name(f));
    int n = golden_cases(ctx, sub, names, GOLDEN_MAX_CASES);
    for (int i = 0; i < n; i++)
        per_channel_case(ctx, f, names[i]);
    CHECK_INT(n, 10);
}

QP_TEST(requant_golden_per_channel_double)
{
    per_channel_golden(ctx, QP_RQ_TFLITE_DOUBLE);
}

QP_TEST(requant_golden_per_channel_single)
{
    per_channel_golden(ctx, QP_RQ_TFLITE_SINGLE);
}
