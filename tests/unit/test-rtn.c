/* Unit tests of quant/rtn and quant/pack: for every granularity, symmetry,
 * bit width and layout, scales and zero points equal their closed form
 * (computed here from brute-force per-scale ranges), and every element
 * dequantized by core/ lies within scale/2 of the original inside the clip
 * range and on the clip bound outside it. Plus packing against hand-made
 * bytes, ties, partial groups, and a round trip through a dump. */
#include <float.h>
#include <stdlib.h>
#include <string.h>

#include "core/half.h"
#include "formats/dump.h"
#include "quant/pack.h"
#include "quant/rtn.h"
#include "tests/test.h"

static uint64_t rng_state;
static float rnd(void) /* uniform in [-1, 1) */
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (float)((rng_state >> 11) * 0x1p-53 * 2 - 1);
}

/* Weights with a heavy tail: mostly small, a few large, some exact zeros. */
static void fill(float *x, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        float v = rnd() * rnd();
        if (i % 37 == 5)
            v *= 20;
        if (i % 53 == 7)
            v = 0;
        x[i] = v;
    }
}

static struct qp_tensor *make_f32(const char *name, int ndim,
                                  const int64_t *shape)
{
    struct qp_tensor *t = NULL;
    struct qp_error err;
    if (qp_tensor_new(name, QP_DTYPE_F32, ndim, shape, &t, &err))
        return NULL;
    fill(t->data, qp_tensor_numel(t));
    return t;
}

/* Scale index of element e for parameters (axis, block) of shape. */
static size_t onnx_index(const struct qp_tensor *t, size_t e)
{
    const struct qp_qparams *q = t->qp;
    if (q->axis < 0)
        return 0;
    size_t inner = 1, dim = (size_t)t->shape[q->axis];
    for (int d = q->axis + 1; d < t->ndim; d++)
        inner *= (size_t)t->shape[d];
    size_t in = e % inner, a = e / inner % dim, o = e / (inner * dim);
    if (!q->block_size)
        return a;
    size_t b = (size_t)q->block_size, nblk = (dim + b - 1) / b;
    return (o * nblk + a / b) * inner + in;
}

static double round_mode(double v, enum qp_round r)
{
    return r == QP_ROUND_HALF_AWAY ? round(v) : rint(v);
}

/* Checks t (quantized from x with format f) against the closed forms and
 * the scale/2 bound; returns the number of failures. */
static int check_quantized(struct qp_test_ctx *ctx, const char *label,
                           const float *x, const struct qp_tensor *t,
                           const struct qp_qformat *f, enum qp_round r)
{
    const struct qp_qparams *q = t->qp;
    size_t n = qp_tensor_numel(t);
    int32_t qmin = f->asym ? 0 : -(1 << (f->bits - 1)) + (f->narrow ? 1 : 0);
    int32_t qmax = f->asym ? (1 << f->bits) - 1 : (1 << (f->bits - 1)) - 1;
    double *lo = malloc(q->count * sizeof *lo), *hi = malloc(q->count * sizeof *hi);
    float *deq = malloc(n * sizeof *deq);
    for (size_t i = 0; i < q->count; i++) {
        lo[i] = INFINITY;
        hi[i] = -INFINITY;
    }
    for (size_t e = 0; e < n; e++) {
        size_t i = onnx_index(t, e);
        lo[i] = fmin(lo[i], x[e]);
        hi[i] = fmax(hi[i], x[e]);
    }
    int fails = 0;
    for (size_t i = 0; i < q->count && fails < 5; i++) {
        double es;
        int32_t ez = 0;
        if (!f->asym) {
            double amax = fmax(fabs(lo[i]), fabs(hi[i]));
            es = amax == 0 ? 1.0 : (float)(amax / qmax);
        } else {
            double l = fmin(lo[i], 0), h = fmax(hi[i], 0);
            es = h == l ? 1.0 : (float)((h - l) / qmax);
            double z = -round_mode(l / (float)es, r);
            ez = (int32_t)fmin(fmax(z, 0), qmax);
        }
        int32_t z = q->zero_point ? q->zero_point[i] : 0;
        if (q->scale[i] != (float)es || z != ez || (!f->asym && q->zero_point)) {
            qp_test_failf(ctx, __FILE__, __LINE__, "%s: scale %zu is %.9g z %d, "
                          "closed form %.9g z %d", label, i, q->scale[i], z, es, ez);
            fails++;
        }
    }
    qp_tensor_read_f32(t, 0, n, deq);
    for (size_t e = 0; e < n && fails < 5; e++) {
        size_t i = onnx_index(t, e);
        float s = q->scale[i];
        int32_t z = q->zero_point ? q->zero_point[i] : 0;
        int32_t raw;
        qp_pack_load(t->dtype, t->data, e, 1, &raw);
        float cmin = (float)(qmin - z) * s, cmax = (float)(qmax - z) * s;
        bool ok = raw >= qmin && raw <= qmax;
        if (x[e] >= cmin && x[e] <= cmax)
            ok = ok && fabs((double)x[e] - deq[e]) <=
                           0.5 * s + 4e-7 * fabs(x[e]) + 1e-30;
        else
            ok = ok && deq[e] == (x[e] < cmin ? cmin : cmax);
        if (!ok) {
            qp_test_failf(ctx, __FILE__, __LINE__, "%s: element %zu: x %.9g q %d "
                          "-> %.9g (scale %.9g z %d, clip [%g, %g])", label, e,
                          x[e], raw, deq[e], s, z, cmin, cmax);
            fails++;
        }
    }
    free(lo);
    free(hi);
    free(deq);
    return fails;
}

QP_TEST(rtn_every_granularity_symmetry_and_bits)
{
    static const unsigned bits[] = {2, 3, 4, 5, 8, 16};
    static const struct {
        int ndim;
        int64_t shape[4];
        enum qp_wlayout l;
    } shapes[] = {
        {2, {6, 10}, QP_WLAYOUT_TORCH},
        {4, {4, 5, 3, 3}, QP_WLAYOUT_TORCH},
        {4, {4, 3, 3, 5}, QP_WLAYOUT_TFLITE},
        {2, {10, 6}, QP_WLAYOUT_KERAS},
        {4, {5, 1, 3, 3}, QP_WLAYOUT_TORCH},
        {1, {37}, QP_WLAYOUT_TORCH},
    };
    static const struct {
        enum qp_gran g;
        int64_t group;
    } grans[] = {{QP_GRAN_TENSOR, 0}, {QP_GRAN_CHANNEL, 0}, {QP_GRAN_GROUP, 3},
                 {QP_GRAN_GROUP, 4}, {QP_GRAN_GROUP, 64}};
    rng_state = 0x1234567;
    int runs = 0, fails = 0;
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
        struct qp_tensor *w = make_f32("w", shapes[si].ndim, shapes[si].shape);
        REQUIRE(w);
        for (size_t b = 0; b < sizeof bits / sizeof bits[0]; b++)
            for (int sym = 0; sym < 3; sym++)
                for (size_t gi = 0; gi < sizeof grans / sizeof grans[0]; gi++)
                    for (int r = 0; r < QP_ROUND_COUNT && fails < 5; r++) {
                        struct qp_wscheme ws = {
                            .f = {bits[b], sym == 1, sym == 2},
                            .gran = grans[gi].g, .group = grans[gi].group};
                        struct qp_wquant_opts o = {(enum qp_round)r,
                                                   shapes[si].l};
                        struct qp_tensor *t;
                        struct qp_error err;
                        char label[96];
                        snprintf(label, sizeof label,
                                 "shape %zu bits %u sym %d gran %zu round %d", si,
                                 bits[b], sym, gi, r);
                        if (qp_rtn_quantize(w, &ws, &o, &t, &err)) {
                            qp_test_failf(ctx, __FILE__, __LINE__, "%s: %s",
                                          label, err.msg);
                            fails++;
                            continue;
                        }
                        if (t->dtype != qp_qformat_dtype(&ws.f) ||
                            !qp_shape_equal(t->ndim, t->shape, w->ndim, w->shape) ||
                            strcmp(t->name, "w")) {
                            qp_test_failf(ctx, __FILE__, __LINE__, "%s: %s %s",
                                          label, t->name, qp_dtype_name(t->dtype));
                            fails++;
                        }
                        fails += check_quantized(ctx, label, w->data, t, &ws.f,
                                                 (enum qp_round)r);
                        qp_tensor_free(t);
                        runs++;
                    }
        qp_tensor_free(w);
    }
    CHECK(runs > 1000);
}

QP_TEST(rtn_hand_computed_per_channel_int8)
{
    /* rows: amax 63.5 -> s = 0.5; amax 31.75 -> s = 0.25 */
    float x[8] = {1.25f, -1.25f, 0.75f, 63.5f, 31.75f, -0.125f, 0.375f, -31.75f};
    int64_t shape[2] = {2, 4};
    struct qp_tensor *w, *t;
    struct qp_error err;
    REQUIRE_OK(qp_tensor_wrap("fc.weight", QP_DTYPE_F32, 2, shape, x, sizeof x,
                              NULL, &w, &err), &err);
    struct qp_wscheme ws = {.f = {8, false, false}, .gran = QP_GRAN_CHANNEL};
    struct qp_wquant_opts away = {QP_ROUND_HALF_AWAY, QP_WLAYOUT_TORCH};
    struct qp_wquant_opts even = {QP_ROUND_HALF_EVEN, QP_WLAYOUT_TORCH};
    REQUIRE_OK(qp_rtn_quantize(w, &ws, &away, &t, &err), &err);
    CHECK_INT(t->dtype, QP_DTYPE_I8);
    CHECK_INT(t->qp->axis, 0);
    CHECK_INT(t->qp->count, 2);
    CHECK(t->qp->scale[0] == 0.5f);
    CHECK(t->qp->scale[1] == 0.25f);
    CHECK(t->qp->zero_point == NULL);
    /* x / s = 2.5, -2.5, 1.5, 127 | 127, -0.5, 1.5, -127 */
    static const int8_t want_away[8] = {3, -3, 2, 127, 127, -1, 2, -127};
    static const int8_t want_even[8] = {2, -2, 2, 127, 127, 0, 2, -127};
    CHECK(!memcmp(t->data, want_away, 8));
    qp_tensor_free(t);
    REQUIRE_OK(qp_rtn_quantize(w, &ws, &even, &t, &err), &err);
    CHECK(!memcmp(t->data, want_even, 8));
    qp_tensor_free(t);
    qp_tensor_free(w);
}

QP_TEST(rtn_asymmetric_u4_packed_bytes)
{
    /* range [-1, 14] -> s = 1, z = 1: q = x + 1 */
    float x[5] = {-1, 0, 3, 14, 6.5f};
    int64_t shape[2] = {1, 5};
    struct qp_tensor *w, *t;
    struct qp_error err;
    REQUIRE_OK(qp_tensor_wrap("w", QP_DTYPE_F32, 2, shape, x, sizeof x, NULL, &w,
                              &err), &err);
    struct qp_wscheme ws = {.f = {4, true, false}, .gran = QP_GRAN_TENSOR};
    struct qp_wquant_opts o = {QP_ROUND_HALF_EVEN, QP_WLAYOUT_TORCH};
    REQUIRE_OK(qp_rtn_quantize(w, &ws, &o, &t, &err), &err);
    CHECK_INT(t->dtype, QP_DTYPE_U4);
    CHECK_INT(t->nbytes, 3);
    CHECK(t->qp->scale[0] == 1.0f);
    REQUIRE(t->qp->zero_point);
    CHECK_INT(t->qp->zero_point[0], 1);
    /* x / s = -1, 0, 3, 14, 6.5 (-> 6, even); q = that + 1 = 0, 1, 4, 15, 7;
     * low nibble first, zero padded */
    const unsigned char *p = t->data;
    CHECK_INT(p[0], 0x10);
    CHECK_INT(p[1], 0xf4);
    CHECK_INT(p[2], 0x07);
    qp_tensor_free(t);
    qp_tensor_free(w);
}

QP_TEST(rtn_partial_last_group_has_its_own_range)
{
    /* [2, 5], groups of 2 along the row: (0,1) (2,3) (4) */
    float x[10] = {1, -2, 3, 4, -5, 0.5f, 0.25f, 7, -1, 0.1f};
    int64_t shape[2] = {2, 5};
    struct qp_tensor *w, *t;
    struct qp_error err;
    REQUIRE_OK(qp_tensor_wrap("w", QP_DTYPE_F32, 2, shape, x, sizeof x, NULL, &w,
                              &err), &err);
    struct qp_wscheme ws = {.f = {4, false, false}, .gran = QP_GRAN_GROUP,
                            .group = 2};
    struct qp_wquant_opts o = {QP_ROUND_HALF_AWAY, QP_WLAYOUT_TORCH};
    REQUIRE_OK(qp_rtn_quantize(w, &ws, &o, &t, &err), &err);
    CHECK_INT(t->qp->axis, 1);
    CHECK_INT(t->qp->block_size, 2);
    CHECK_INT(t->qp->count, 6);
    static const float want[6] = {(float)(2.0 / 7), (float)(4.0 / 7),
                                  (float)(5.0 / 7), (float)(0.5 / 7), 1.0f,
                                  (float)((double)0.1f / 7)};
    for (int i = 0; i < 6; i++)
        CHECK(t->qp->scale[i] == want[i]);
    /* the one-element groups reconstruct their element exactly (q = -7, 7) */
    CHECK_INT(qp_packed_get(QP_DTYPE_I4, t->data, 4), -7);
    CHECK_INT(qp_packed_get(QP_DTYPE_I4, t->data, 9), 7);
    float d[10];
    qp_tensor_read_f32(t, 0, 10, d);
    CHECK_NEAR(d[4], -5.0f, 1e-6);
    CHECK_NEAR(d[9], 0.1f, 1e-7);
    qp_tensor_free(t);
    qp_tensor_free(w);
}

QP_TEST(rtn_degenerate_tensors)
{
    float zeros[6] = {0}, consts[6] = {-2, -2, -2, -2, -2, -2};
    int64_t shape[2] = {2, 3};
    struct qp_error err;
    for (int k = 0; k < 2; k++)
        for (int asym = 0; asym < 2; asym++) {
            struct qp_tensor *w, *t;
            float *x = k ? consts : zeros;
            REQUIRE_OK(qp_tensor_wrap("w", QP_DTYPE_F32, 2, shape, x, sizeof zeros,
                                      NULL, &w, &err), &err);
            struct qp_wscheme ws = {.f = {4, asym, false},
                                    .gran = QP_GRAN_CHANNEL,
                                    .algo = QP_WALGO_MSE};
            struct qp_wquant_opts o = {QP_ROUND_HALF_AWAY, QP_WLAYOUT_TORCH};
            REQUIRE_OK(qp_rtn_quantize(w, &ws, &o, &t, &err), &err);
            float d[6];
            qp_tensor_read_f32(t, 0, 6, d);
            for (int i = 0; i < 6; i++)
                CHECK(d[i] == x[i]);
            for (size_t i = 0; i < t->qp->count; i++)
                CHECK(t->qp->scale[i] > 0 && isfinite(t->qp->scale[i]));
            qp_tensor_free(t);
            qp_tensor_free(w);
        }
    /* an empty tensor quantizes to an empty tensor */
    int64_t empty[2] = {0, 4};
    struct qp_tensor *w, *t;
    REQUIRE_OK(qp_tensor_new("e", QP_DTYPE_F32, 2, empty, &w, &err), &err);
    struct qp_wscheme ws = {.f = {8, false, false}, .gran = QP_GRAN_CHANNEL};
    struct qp_wquant_opts o = {QP_ROUND_HALF_AWAY, QP_WLAYOUT_TORCH};
    REQUIRE_OK(qp_rtn_quantize(w, &ws, &o, &t, &err), &err);
    CHECK_INT(qp_tensor_numel(t), 0);
    qp_tensor_free(t);
    qp_tensor_free(w);
}

QP_TEST(rtn_f16_input_matches_its_f32_values)
{
    int64_t shape[2] = {3, 8};
    struct qp_tensor *h, *f, *th, *tf;
    struct qp_error err;
    REQUIRE_OK(qp_tensor_new("w", QP_DTYPE_F16, 2, shape, &h, &err), &err);
    REQUIRE_OK(qp_tensor_new("w", QP_DTYPE_F32, 2, shape, &f, &err), &err);
    rng_state = 99;
    for (int i = 0; i < 24; i++) {
        ((uint16_t *)h->data)[i] = qp_f32_to_f16(rnd() * 3);
        ((float *)f->data)[i] = qp_f16_to_f32(((uint16_t *)h->data)[i]);
    }
    struct qp_wscheme ws = {.f = {4, true, false}, .gran = QP_GRAN_GROUP,
                            .group = 4};
    struct qp_wquant_opts o = {QP_ROUND_HALF_AWAY, QP_WLAYOUT_TORCH};
    REQUIRE_OK(qp_rtn_quantize(h, &ws, &o, &th, &err), &err);
    REQUIRE_OK(qp_rtn_quantize(f, &ws, &o, &tf, &err), &err);
    CHECK_INT(th->nbytes, tf->nbytes);
    CHECK(!memcmp(th->data, tf->data, tf->nbytes));
    CHECK(!memcmp(th->qp->scale, tf->qp->scale, tf->qp->count * sizeof(float)));
    qp_tensor_free(h);
    qp_tensor_free(f);
    qp_tensor_free(th);
    qp_tensor_free(tf);
}

QP_TEST(rtn_refusals_name_the_tensor)
{
    float x[4] = {1, 2, NAN, 4};
    int64_t shape[2] = {2, 2};
    struct qp_tensor *w, *t;
    struct qp_error err;
    REQUIRE_OK(qp_tensor_wrap("conv.w", QP_DTYPE_F32, 2, shape, x, sizeof x, NULL,
                              &w, &err), &err);
    struct qp_wscheme ws = {.f = {8, false, false}, .gran = QP_GRAN_CHANNEL};
    struct qp_wquant_opts o = {QP_ROUND_HALF_AWAY, QP_WLAYOUT_TORCH};
    CHECK_FAILS(qp_rtn_quantize(w, &ws, &o, &t, &err), QP_E_INVAL, &err,
                "tensor 'conv.w': element 2 is nan, only finite values");
    x[2] = 3;
    ws.algo = QP_WALGO_GPTQ;
    CHECK_FAILS(qp_rtn_quantize(w, &ws, &o, &t, &err), QP_E_UNSUPPORTED, &err,
                "tensor 'conv.w': GPTQ needs calibration data");
    qp_tensor_free(w);
    int32_t iv[4] = {1, 2, 3, 4};
    REQUIRE_OK(qp_tensor_wrap("idx", QP_DTYPE_I32, 2, shape, iv, sizeof iv, NULL,
                              &w, &err), &err);
    ws.algo = QP_WALGO_RTN;
    CHECK_FAILS(qp_rtn_quantize(w, &ws, &o, &t, &err), QP_E_UNSUPPORTED, &err,
                "tensor 'idx': only float tensors can be quantized, this one is i32");
    qp_tensor_free(w);
}

QP_TEST(pack_hand_made_bytes)
{
    unsigned char b[8];
    memset(b, 0xff, sizeof b);
    int32_t i4[5] = {1, -2, 7, -8, -1};
    qp_pack_store(QP_DTYPE_I4, i4, 5, b, 0);
    CHECK_INT(b[0], 0xe1);
    CHECK_INT(b[1], 0x87);
    CHECK_INT(b[2], 0x0f); /* high nibble is padding: cleared */
    int32_t u2[6] = {0, 1, 2, 3, 3, 1};
    memset(b, 0xff, sizeof b);
    qp_pack_store(QP_DTYPE_U2, u2, 6, b, 0);
    CHECK_INT(b[0], 0xe4);
    CHECK_INT(b[1], 0x07);
    int32_t i3[8] = {-4, -3, -2, -1, 0, 1, 2, 3};
    memset(b, 0, sizeof b);
    qp_pack_store(QP_DTYPE_I3, i3, 8, b, 0);
    CHECK_INT(b[0], 0xac);
    CHECK_INT(b[1], 0x8f);
    CHECK_INT(b[2], 0x68);
    CHECK_INT(b[3], 0);
    /* a store at an aligned offset leaves earlier bytes alone */
    qp_pack_store(QP_DTYPE_I3, i3, 3, b, 8);
    CHECK_INT(b[0], 0xac);
    CHECK_INT(b[3], 0xac);
    CHECK_INT(b[4], 0x01); /* element 10: bits 6..8 hold -2 = 110b -> bit 8 */
    CHECK_INT(qp_pack_align(QP_DTYPE_U3), 8);
    CHECK_INT(qp_pack_align(QP_DTYPE_I8), 1);
}

QP_TEST(pack_round_trips_every_storage_dtype)
{
    static const enum qp_dtype dts[] = {QP_DTYPE_I2, QP_DTYPE_U2, QP_DTYPE_I3,
                                        QP_DTYPE_U3, QP_DTYPE_I4, QP_DTYPE_U4,
                                        QP_DTYPE_I8, QP_DTYPE_U8, QP_DTYPE_I16,
                                        QP_DTYPE_U16};
    rng_state = 7;
    for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++) {
        const struct qp_dtype_traits *tr = qp_dtype_traits(dts[d]);
        for (size_t n = 0; n < 45; n++) {
            int32_t q[64], back[64];
            for (size_t k = 0; k < n; k++)
                q[k] = (int32_t)(tr->min + (int64_t)((rnd() + 1) / 2 *
                                                     (double)(tr->max - tr->min + 1)));
            q[0] = n ? (int32_t)tr->min : 0;
            unsigned char data[160];
            memset(data, 0xa5, sizeof data);
            size_t nbytes;
            REQUIRE(qp_dtype_bytes(dts[d], n, &nbytes));
            /* in two stores, the second at an aligned offset */
            size_t cut = n / 16 * 8;
            qp_pack_store(dts[d], q, cut, data, 0);
            qp_pack_store(dts[d], q + cut, n - cut, data, cut);
            qp_pack_load(dts[d], data, 0, n, back);
            for (size_t k = 0; k < n; k++) {
                if (back[k] != q[k] ||
                    (tr->bits < 8 && qp_packed_get(dts[d], data, k) != q[k])) {
                    qp_test_failf(ctx, __FILE__, __LINE__, "%s n %zu element %zu: "
                                  "%d -> %d", tr->name, n, k, q[k], back[k]);
                    return;
                }
            }
            /* packed padding bits in the last byte are zero */
            if (tr->bits < 8 && (n * tr->bits) % 8)
                CHECK_INT(data[nbytes - 1] >> ((n * tr->bits) % 8), 0);
            CHECK_INT(data[nbytes], 0xa5); /* nothing written past the end */
        }
    }
}

/* Writes t to path, reads it back, and checks dtype, parameters and the
 * dequantized values are unchanged. */
static void round_trip(struct qp_test_ctx *ctx, const struct qp_tensor *t,
                       const char *path)
{
    struct qp_tensor *back;
    struct qp_dump_writer *wr;
    struct qp_dump *d;
    struct qp_error err;
    REQUIRE_OK(qp_dump_writer_open(path, QP_DUMP_AUTO, &wr, &err), &err);
    REQUIRE_OK(qp_dump_writer_add(wr, t, &err), &err);
    REQUIRE_OK(qp_dump_writer_commit(wr, &err), &err);
    REQUIRE_OK(qp_dump_open(path, QP_DUMP_AUTO, &d, &err), &err);
    CHECK_INT(qp_dump_count(d), 1);
    REQUIRE_OK(qp_dump_load(d, 0, &back, &err), &err);
    CHECK_STR(back->name, "conv/w:0");
    CHECK_INT(back->dtype, t->dtype);
    if (back->qp) {
        CHECK_INT(back->qp->axis, t->qp->axis);
        CHECK_INT(back->qp->block_size, t->qp->block_size);
        CHECK_INT(back->nbytes, t->nbytes);
        CHECK(!memcmp(back->data, t->data, t->nbytes));
        size_t n = qp_tensor_numel(t);
        float *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b);
        qp_tensor_read_f32(t, 0, n, a);
        qp_tensor_read_f32(back, 0, n, b);
        CHECK(!memcmp(a, b, n * sizeof *a));
        free(a);
        free(b);
    } else {
        qp_test_failf(ctx, __FILE__, __LINE__, "%s: parameters lost", path);
    }
    qp_tensor_free(back);
    qp_dump_close(d);
}

QP_TEST(rtn_result_round_trips_through_every_container)
{
    int64_t shape[4] = {6, 8, 3, 3};
    rng_state = 5;
    struct qp_tensor *w = make_f32("conv/w:0", 4, shape);
    REQUIRE(w);
    static const struct {
        const char *name;
        struct qp_wscheme ws;
        bool npy; /* byte-sized storage and a scale shape that says it all */
    } cases[] = {
        {"i8c", {.f = {8, false, false}, .gran = QP_GRAN_CHANNEL}, true},
        {"u8g4", {.f = {8, true, false}, .gran = QP_GRAN_GROUP, .group = 4},
         true},
        {"i6g2", {.f = {6, false, false}, .gran = QP_GRAN_GROUP, .group = 2,
                  .algo = QP_WALGO_MSE}, true},
        {"u16t", {.f = {16, true, false}, .gran = QP_GRAN_TENSOR}, true},
        {"i4g3", {.f = {4, false, false}, .gran = QP_GRAN_GROUP, .group = 3},
         false},
        /* 8 = 5 + 3: two groups, which a scale shape alone reads as 4 + 4 */
        {"u4g5", {.f = {4, true, false}, .gran = QP_GRAN_GROUP, .group = 5,
                  .algo = QP_WALGO_MSE}, false},
        {"u3g5", {.f = {3, true, false}, .gran = QP_GRAN_GROUP, .group = 5},
         false},
        {"i2cn", {.f = {2, false, true}, .gran = QP_GRAN_CHANNEL}, false},
    };
    static const char *const exts[] = {"", ".safetensors", ".npz", ".h5"};
    struct qp_wquant_opts o = {QP_ROUND_HALF_EVEN, QP_WLAYOUT_TORCH};
    struct qp_error err;
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        struct qp_tensor *t;
        REQUIRE_OK(qp_rtn_quantize(w, &cases[k].ws, &o, &t, &err), &err);
        for (size_t e = cases[k].npy ? 0 : 1; e < 4; e++) {
            char name[64];
            snprintf(name, sizeof name, "%s%s", cases[k].name, exts[e]);
            char *path = qp_test_path(ctx, name);
            round_trip(ctx, t, path);
            free(path);
        }
        qp_tensor_free(t);
    }
    qp_tensor_free(w);
}

QP_TEST(rtn_default_selection_and_device_bytes)
{
    int64_t s2[2] = {4, 64}, s1[1] = {64}, s4[4] = {8, 3, 3, 3};
    struct qp_tensor *w, *b, *c, *i, *t;
    struct qp_error err;
    REQUIRE_OK(qp_tensor_new("w", QP_DTYPE_F32, 2, s2, &w, &err), &err);
    REQUIRE_OK(qp_tensor_new("b", QP_DTYPE_F32, 1, s1, &b, &err), &err);
    REQUIRE_OK(qp_tensor_new("c", QP_DTYPE_F16, 4, s4, &c, &err), &err);
    REQUIRE_OK(qp_tensor_new("i", QP_DTYPE_I8, 2, s2, &i, &err), &err);
    CHECK(qp_rtn_default_selected(w));
    CHECK(!qp_rtn_default_selected(b));
    CHECK(qp_rtn_default_selected(c));
    CHECK(!qp_rtn_default_selected(i));
    /* w4g32z on [4, 64]: 128 bytes of nibbles, 8 scales (32 bytes), 8
     * zero points stored as uint8 (8 bytes: every writer stores zero
     * points in the narrowest integer type holding them) */
    struct qp_wscheme ws = {.f = {4, true, false}, .gran = QP_GRAN_GROUP,
                            .group = 32};
    struct qp_wquant_opts o = {QP_ROUND_HALF_AWAY, QP_WLAYOUT_TORCH};
    REQUIRE_OK(qp_rtn_quantize(w, &ws, &o, &t, &err), &err);
    CHECK_INT(qp_rtn_bytes(t), 128 + 32 + 8);
    qp_tensor_free(t);
    /* w3c on [8,3,3,3]: 216 elements * 3 bits = 81 bytes, 8 scales */
    ws = (struct qp_wscheme){.f = {3, false, false}, .gran = QP_GRAN_CHANNEL};
    REQUIRE_OK(qp_rtn_quantize(c, &ws, &o, &t, &err), &err);
    CHECK_INT(qp_rtn_bytes(t), 81 + 32);
    qp_tensor_free(t);
    CHECK_INT(qp_rtn_bytes(b), 256);
    qp_tensor_free(w);
    qp_tensor_free(b);
    qp_tensor_free(c);
    qp_tensor_free(i);
}

QP_TEST(rtn_weights_near_flt_max_dequantize_to_finite_values)
{
    /* the fuzzing campaign's case: asymmetric schemes on weights of
     * +-3.4e38 wrote -inf with --fake (the grid's low end beyond FLT_MAX) */
    static const char *const schemes[] = {"w4g8z", "w8cz", "w2tz", "w16cz",
                                          "w4g8z@mse", "w8c", "w4g8"};
    float x[16];
    for (int i = 0; i < 16; i++)
        x[i] = i % 2 ? 3.4e38f : -3.4e38f;
    x[3] = 1.0f;
    x[8] = -FLT_MAX;
    x[13] = FLT_MAX;
    int64_t shape[2] = {2, 8};
    struct qp_error err;
    for (size_t k = 0; k < sizeof schemes / sizeof schemes[0]; k++) {
        struct qp_scheme sc;
        REQUIRE_OK(qp_scheme_parse(schemes[k], &sc, NULL, &err), &err);
        struct qp_tensor *w, *t;
        REQUIRE_OK(qp_tensor_wrap("w", QP_DTYPE_F32, 2, shape, x, sizeof x, NULL,
                                  &w, &err), &err);
        struct qp_wquant_opts o = {QP_ROUND_HALF_AWAY, QP_WLAYOUT_TORCH};
        REQUIRE_OK(qp_rtn_quantize(w, &sc.w, &o, &t, &err), &err);
        float d[16];
        qp_tensor_read_f32(t, 0, 16, d);
        for (int i = 0; i < 16; i++) {
            /* finite, and within a step of a +-FLT_MAX range */
            double tol = 2.02 * FLT_MAX / ((1 << sc.w.f.bits) - 2);
            if (!isfinite(d[i]) || fabs((double)d[i] - (double)x[i]) > tol)
                qp_test_failf(ctx, __FILE__, __LINE__, "%s: element %d: %g -> %g",
                              schemes[k], i, x[i], d[i]);
        }
        qp_tensor_free(t);
        qp_tensor_free(w);
    }
}
