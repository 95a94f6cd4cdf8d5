/* GPTQ against the reference implementation (IST-DASLab/gptq gptq.py,
 * quant.py) on a small layer: the vectors and their provenance are in
 * tests/golden/gptq/README.md. Same weights to float rounding (no element
 * on another grid point), same loss. */
#include <math.h>
#include <stdlib.h>

#include "formats/npy.h"
#include "quant/gptq.h"
#include "tests/test.h"
#include "tests/unit/gptq-test-util.h"

#define DIR "tests/golden/gptq/"

static struct qp_tensor *load(struct qp_test_ctx *ctx, const char *file)
{
    struct qp_tensor *t = NULL;
    struct qp_error err;
    char path[256];
    snprintf(path, sizeof path, DIR "%s", file);
    if (qp_fmt_npy_load(path, file, false, &t, &err))
        qp_test_failf(ctx, __FILE__, __LINE__, "%s", err.msg);
    return t;
}

QP_TEST(gptq_matches_the_reference_implementation)
{
    static const struct {
        const char *file, *scheme;
        double error;
    } cases[] = {
        {"q-g16.npy", "w4g16z@gptq:blk16", 0.9283542633056641},
        {"q-g16-act.npy", "w4g16z@gptq:act,blk16", 0.6768642067909241},
        {"q-g16-act-static.npy", "w4g16z@gptq:act,static,blk16",
         0.7321449518203735},
        {"q-c-act.npy", "w4cz@gptq:act,blk16", 1.3401339054107666},
        {"q-c-mse.npy", "w4cz@gptq:mse,blk16", 1.7008610963821411},
    };
    struct qp_tensor *x = load(ctx, "x.npy"), *w = load(ctx, "w.npy");
    REQUIRE(x && w && x->ndim == 2 && w->ndim == 2);
    enum { SEQ = 32 };
    size_t tokens = (size_t)x->shape[0], cols = (size_t)x->shape[1];
    size_t rows = (size_t)w->shape[0];
    REQUIRE(tokens == 128 && cols == 64 && rows == 16);
    struct qp_hessian *h = gt_hessian(x->data, tokens, cols, SEQ);
    REQUIRE(h);
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        struct qp_tensor *ref = load(ctx, cases[k].file);
        REQUIRE(ref && qp_tensor_numel(ref) == rows * cols);
        struct qp_wscheme ws = gt_scheme(cases[k].scheme);
        struct qp_gptq_opts o = {&ws, QP_ROUND_HALF_EVEN, "ref", NULL};
        struct qp_gptq_result res;
        struct qp_error err;
        REQUIRE_OK(qp_gptq_quantize(w, h, &o, &res, &err), &err);
        float *d = gt_dequant(res.q, res.g_idx);
        REQUIRE(d);
        const float *r = ref->data;
        int far = 0, exact = 0;
        for (size_t i = 0; i < rows * cols; i++) {
            far += !(fabsf(d[i] - r[i]) <= 1e-5f * fabsf(r[i]) + 1e-9f);
            exact += d[i] == r[i];
        }
        if (far)
            qp_test_failf(ctx, __FILE__, __LINE__, "%s: %d weights differ from "
                          "the reference", cases[k].scheme, far);
        CHECK(exact > (int)(rows * cols / 2));
        /* the reference's H counts sequences: 32 times qprobe's */
        CHECK_NEAR(res.loss * SEQ, cases[k].error, 1e-5 * cases[k].error);
        free(d);
        qp_tensor_free(ref);
        qp_gptq_result_release(&res);
    }
    qp_hessian_free(h);
    qp_tensor_free(x);
    qp_tensor_free(w);
}
