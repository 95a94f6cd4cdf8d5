/* tests/unit/test-gemm-qd8.c: the 8da4w product (kernels/gemm-qd8.h).
 * (a) Vectors captured from XNNPACK's own scalar ukernels
 *     (tests/golden/qd8/README.md: repository, commit, build flags): the
 *     row quantization (codes, scale, zero point) and the product equal
 *     them bit for bit, for the reference and every variant this CPU runs.
 * (b) The AVX-512 VNNI and AVX2 variants equal the reference bit for bit on random
 *     shapes XNNPACK does not take too (partial last blocks, odd k, n not
 *     a multiple of the tile, one row, zero rows, bias or none).
 * (c) The product is the dequantized one to float rounding (a wrong
 *     order of the same terms would still pass (c), not (a)). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/parallel.h"
#include "formats/dump.h"
#include "kernels/gemm-qd8-impl.h"
#include "quant/scheme.h"
#include "tests/test.h"
#include "tests/unit/kern-test.h"

#define VECTORS "tests/golden/qd8/qd8-qb4w.safetensors"

/* An int4 [n, k] weight with block scales (zero points absent). */
static struct qp_tensor *i4_weight(const int8_t *w, size_t n, size_t k,
                                   const float *scale, size_t group)
{
    struct qp_tensor *t;
    struct qp_error err;
    int64_t shape[2] = {(int64_t)n, (int64_t)k};
    if (qp_tensor_new("w", QP_DTYPE_I4, 2, shape, &t, &err))
        return NULL;
    memset(t->data, 0, (n * k + 1) / 2);
    for (size_t e = 0; e < n * k; e++)
        qp_packed_set(QP_DTYPE_I4, t->data, e, w[e]);
    size_t groups = (k + group - 1) / group;
    if (qp_tensor_set_qparams(t, n * groups, scale, NULL, 1, (int64_t)group,
                              &err)) {
        qp_tensor_free(t);
        return NULL;
    }
    return t;
}

static struct qp_tensor *load(struct qp_dump *d, const char *c, const char *nm)
{
    char name[64];
    snprintf(name, sizeof name, "%s.%s", c, nm);
    long i = qp_dump_find(d, name);
    struct qp_tensor *t = NULL;
    struct qp_error err;
    if (i < 0 || qp_dump_load(d, (size_t)i, &t, &err))
        return NULL;
    return t;
}

/* The variants to check: the reference and every one this CPU runs. */
static size_t variants(const struct qp_qd8_variant **v)
{
    size_t n = 0;
    v[n++] = &qp_qd8_ref;
#if defined(__x86_64__)
    if (qp_kern_isa_available(qp_qd8_avx512vnni.isa))
        v[n++] = &qp_qd8_avx512vnni;
    if (qp_kern_isa_available(qp_qd8_avx2.isa))
        v[n++] = &qp_qd8_avx2;
#endif
    return n;
}

/* y with variant v (packing b for it); NULL when out of memory. */
static float *product(const struct qp_qd8_variant *v, struct qp_qb4w *b,
                      const float *x, size_t m, const float *bias,
                      struct qp_pool *pool)
{
    free(b->packed);
    b->packed = v->pack ? v->pack(b) : NULL;
    size_t need = qp_gemm_qd8_scratch_size(b, m);
    void *s = aligned_alloc(64, (need + 63) / 64 * 64);
    float *y = malloc(m * b->n * sizeof *y + 1);
    if (s && y)
        qp_gemm_qd8_run(v, pool, b, x, b->k, m, bias, y, b->n, s);
    free(s);
    return y;
}

static bool same_bits(const float *a, const float *b, size_t n, size_t *at)
{
    for (size_t i = 0; i < n; i++)
        if (memcmp(&a[i], &b[i], sizeof *a)) {
            *at = i;
            return false;
        }
    return true;
}

QP_TEST(gemm_qd8_xnnpack_vectors)
{
    struct qp_dump *d;
    struct qp_error err;
    REQUIRE_OK(qp_dump_open(VECTORS, QP_DUMP_AUTO, &d, &err), &err);
    const char *cases[] = {"c0", "c1", "c2", "c3", "c4", "c5", "c6"};
    const struct qp_qd8_variant *v[4];
    size_t nv = variants(v), checked = 0;
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        struct qp_tensor *x = load(d, cases[c], "x"), *w = load(d, cases[c], "w"),
                         *sc = load(d, cases[c], "scale"),
                         *bias = load(d, cases[c], "bias"),
                         *q = load(d, cases[c], "q"), *qs = load(d, cases[c], "q_scale"),
                         *qz = load(d, cases[c], "q_zp"), *y = load(d, cases[c], "y");
        REQUIRE(x && w && sc && q && qs && qz && y);
        size_t m = (size_t)x->shape[0], k = (size_t)x->shape[1];
        size_t n = (size_t)w->shape[0], group = k / (size_t)sc->shape[1];
        /* step 1: the codes and parameters of every row */
        int8_t *qr = malloc(k);
        for (size_t r = 0; r < m; r++) {
            struct qp_qd8_params p;
            qp_qd8_quantize_row((const float *)x->data + r * k, k, &p, qr);
            CHECK(!memcmp(qr, (const int8_t *)q->data + r * k, k));
            CHECK(!memcmp(&p.scale, (const float *)qs->data + r, sizeof p.scale));
            CHECK_INT(p.zp, ((const int32_t *)qz->data)[r]);
        }
        free(qr);
        struct qp_tensor *wt = i4_weight(w->data, n, k, sc->data, group);
        REQUIRE(wt);
        struct qp_wq wq;
        struct qp_qb4w b;
        REQUIRE_OK(qp_wq_init(&wq, wt, &err), &err);
        REQUIRE_OK(qp_qb4w_init(&b, &wq, &err), &err);
        CHECK(b.xnnpack_shape);
        for (size_t i = 0; i < nv; i++) {
            float *out = product(v[i], &b, x->data, m, bias ? bias->data : NULL,
                                 NULL);
            size_t at = 0;
            REQUIRE(out);
            if (!same_bits(out, y->data, m * n, &at))
                qp_test_failf(ctx, __FILE__, __LINE__, "%s %s: y[%zu] %.9g, "
                              "XNNPACK %.9g", cases[c], v[i]->name, at,
                              (double)out[at], (double)((float *)y->data)[at]);
            free(out);
            checked++;
        }
        /* (c): near the product of the dequantized codes and weights */
        for (size_t r = 0; r < m; r++)
            for (size_t j = 0; j < n; j++) {
                double acc = 0, mag = 0, sx = ((const float *)qs->data)[r];
                int32_t z = ((const int32_t *)qz->data)[r];
                for (size_t i = 0; i < k; i++) {
                    double qi = ((const int8_t *)q->data)[r * k + i];
                    double ws = ((const int8_t *)w->data)[j * k + i] *
                                (double)qp_qd8_bf16(b.scale[j * b.groups + i / group]);
                    acc += (qi - z) * sx * ws;
                    /* the kernel sums q * w and z * w apart (ksum): a zero
                     * row's output is bias plus their rounding, not bias */
                    mag += (fabs(qi) + abs(z)) * sx * fabs(ws);
                }
                acc += bias ? ((const float *)bias->data)[j] : 0;
                double got = ((const float *)y->data)[r * n + j];
                if (fabs(got - acc) > 1e-6 * mag + 1e-6)
                    qp_test_failf(ctx, __FILE__, __LINE__, "%s y[%zu][%zu] "
                                  "%.9g, dequantized %.9g", cases[c], r, j,
                                  got, acc);
            }
        qp_qb4w_release(&b);
        qp_tensor_free(wt);
        struct qp_tensor *all[] = {x, w, sc, bias, q, qs, qz, y};
        for (size_t i = 0; i < 8; i++)
            qp_tensor_free(all[i]);
    }
    CHECK_INT(checked, 7 * nv);
    qp_dump_close(d);
}

QP_TEST(gemm_qd8_params_edges)
{
    /* a zero row: multiplier 1, zero point 127 (XNNPACK's tie rule) */
    struct qp_qd8_params p;
    qp_qd8_params_from_range(0.0f, 0.0f, &p);
    CHECK(p.mul == 1.0f && p.scale == 1.0f);
    CHECK_INT(p.zp, 127);
    /* [-1, 3]: m = 255/4, z = -128 + 63.75 -> 64 (half to even of -64.25?
     * no: -128 - (-63.75) = -64.25 -> -64) */
    qp_qd8_params_from_range(-1.0f, 3.0f, &p);
    CHECK(p.mul == 63.75f);
    CHECK_INT(p.zp, -64);
    /* all positive: lo clamps to 0, z = -128 */
    qp_qd8_params_from_range(2.0f, 5.0f, &p);
    CHECK(p.mul == 51.0f);
    CHECK_INT(p.zp, -128);
    /* all negative: hi clamps to 0, z = 127 */
    qp_qd8_params_from_range(-4.0f, -1.0f, &p);
    CHECK(p.mul == 63.75f);
    CHECK_INT(p.zp, 127);
}

QP_TEST(gemm_qd8_variants_agree)
{
    const struct qp_qd8_variant *v[4];
    size_t nv = variants(v);
    struct qp_pool *pool = qp_pool_new(2);
    uint64_t seed = 7;
    /* n, k, group, m */
    const size_t shapes[][4] = {
        {17, 64, 32, 5},   {33, 100, 32, 1},  {16, 344, 32, 9},
        {40, 256, 128, 4}, {5, 24, 8, 3},     {70, 520, 64, 7},
        {3, 9, 16, 2},     {129, 512, 256, 13},
    };
    for (size_t c = 0; c < sizeof shapes / sizeof shapes[0]; c++) {
        size_t n = shapes[c][0], k = shapes[c][1], group = shapes[c][2];
        size_t m = shapes[c][3], groups = (k + group - 1) / group;
        int8_t *w = malloc(n * k);
        float *sc = malloc(n * groups * sizeof *sc), *x = malloc(m * k * sizeof *x);
        float *bias = malloc(n * sizeof *bias);
        REQUIRE(w && sc && x && bias);
        for (size_t i = 0; i < n * k; i++)
            w[i] = (int8_t)kt_range(&seed, -8, 7);
        for (size_t i = 0; i < n * groups; i++)
            sc[i] = 0.001f + (float)kt_range(&seed, 1, 1000) * 1e-4f;
        for (size_t i = 0; i < m * k; i++)
            x[i] = (float)kt_range(&seed, -30000, 30000) * 1e-4f *
                   (float)(1 + (i / k) % 3);
        for (size_t i = 0; i < k && m > 2; i++)
            x[1 * k + i] = 0.0f; /* a zero row */
        for (size_t j = 0; j < n; j++)
            bias[j] = (float)kt_range(&seed, -100, 100) * 0.01f;
        struct qp_tensor *wt = i4_weight(w, n, k, sc, group);
        REQUIRE(wt);
        struct qp_wq wq;
        struct qp_qb4w b;
        struct qp_error err;
        REQUIRE_OK(qp_wq_init(&wq, wt, &err), &err);
        REQUIRE_OK(qp_qb4w_init(&b, &wq, &err), &err);
        float *ref = product(&qp_qd8_ref, &b, x, m, c % 2 ? NULL : bias, NULL);
        REQUIRE(ref);
        for (size_t i = 1; i < nv; i++) {
            float *out = product(v[i], &b, x, m, c % 2 ? NULL : bias,
                                 c % 3 ? pool : NULL);
            size_t at = 0;
            REQUIRE(out);
            CHECK(b.packed != NULL);
            if (!same_bits(out, ref, m * n, &at))
                qp_test_failf(ctx, __FILE__, __LINE__, "shape %zu %s: y[%zu] "
                              "%.9g, reference %.9g", c, v[i]->name, at,
                              (double)out[at], (double)ref[at]);
            free(out);
        }
        free(ref);
        qp_qb4w_release(&b);
        qp_tensor_free(wt);
        free(w);
        free(sc);
        free(x);
        free(bias);
    }
    qp_pool_free(pool);
}

QP_TEST(gemm_qd8_refuses_other_weights)
{
    struct qp_error err;
    struct qp_wq wq;
    struct qp_qb4w b;
    int8_t w[64] = {1, -2, 3};
    float sc[2] = {0.5f, 0.25f};
    struct qp_tensor *t = i4_weight(w, 1, 64, sc, 32);
    REQUIRE(t);
    REQUIRE_OK(qp_wq_init(&wq, t, &err), &err);
    /* a zero point */
    int32_t zp[2] = {0, 3};
    wq.zp = zp;
    CHECK_FAILS(qp_qb4w_init(&b, &wq, &err), QP_E_UNSUPPORTED, &err, "symmetric");
    wq.zp = NULL;
    /* a scale XNNPACK refuses */
    float bad[2] = {0.5f, 0.0f};
    wq.scale = bad;
    CHECK_FAILS(qp_qb4w_init(&b, &wq, &err), QP_E_UNSUPPORTED, &err, "bfloat16");
    /* not int4 */
    wq.scale = sc;
    wq.dtype = QP_DTYPE_I8;
    CHECK_FAILS(qp_qb4w_init(&b, &wq, &err), QP_E_UNSUPPORTED, &err, "int4");
    qp_tensor_free(t);
}

QP_TEST(gemm_qd8_scheme_alias)
{
    struct qp_scheme s, t;
    struct qp_error err;
    char buf[QP_SCHEME_MAX];
    REQUIRE_OK(qp_scheme_parse("8da4w", &s, NULL, &err), &err);
    REQUIRE_OK(qp_scheme_parse("w4g32+a8dz", &t, NULL, &err), &err);
    CHECK(qp_wscheme_equal(&s.w, &t.w));
    CHECK(s.has_acts && s.a.dynamic && s.a.f.asym && s.a.f.bits == 8);
    qp_scheme_format(&s, buf, sizeof buf);
    CHECK_STR(buf, "w4g32+a8dz");
    REQUIRE_OK(qp_scheme_parse("8da4w:g128", &s, NULL, &err), &err);
    qp_scheme_format(&s, buf, sizeof buf);
    CHECK_STR(buf, "w4g128+a8dz");
    const char *bad[] = {"8da4w:", "8da4w:g", "8da4w:g12x", "8da4wg32", "8da4w:128"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK(qp_scheme_parse(bad[i], &s, NULL, &err) == QP_E_INVAL);
}
