/* Unit tests of quant/qparams: integer ranges, the closed forms of scales
 * and zero points, degenerate ranges, ties in both rounding modes, weight
 * layouts, and the geometry of per-tensor/per-channel/group-wise scales
 * (checked element by element against the ONNX index formula). */
#include <float.h>
#include <stdlib.h>
#include <string.h>

#include "formats/dump.h"
#include "kernels/requant.h"
#include "quant/qparams.h"
#include "tests/test.h"

static struct qp_qformat fmt(unsigned bits, bool asym, bool narrow)
{
    return (struct qp_qformat){bits, asym, narrow};
}

QP_TEST(qparams_integer_ranges_and_dtypes)
{
    static const struct {
        unsigned bits;
        bool asym, narrow;
        int32_t qmin, qmax;
        enum qp_dtype dt;
    } cases[] = {
        {8, false, false, -128, 127, QP_DTYPE_I8},
        {8, false, true, -127, 127, QP_DTYPE_I8},
        {8, true, false, 0, 255, QP_DTYPE_U8},
        {4, false, false, -8, 7, QP_DTYPE_I4},
        {4, false, true, -7, 7, QP_DTYPE_I4},
        {4, true, false, 0, 15, QP_DTYPE_U4},
        {3, false, false, -4, 3, QP_DTYPE_I3},
        {3, true, false, 0, 7, QP_DTYPE_U3},
        {2, false, false, -2, 1, QP_DTYPE_I2},
        {2, false, true, -1, 1, QP_DTYPE_I2},
        {2, true, false, 0, 3, QP_DTYPE_U2},
        {5, false, false, -16, 15, QP_DTYPE_I8},
        {7, true, false, 0, 127, QP_DTYPE_U8},
        {16, false, false, -32768, 32767, QP_DTYPE_I16},
        {16, true, false, 0, 65535, QP_DTYPE_U16},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct qp_qformat f = fmt(cases[i].bits, cases[i].asym, cases[i].narrow);
        int32_t lo, hi;
        qp_qformat_range(&f, &lo, &hi);
        CHECK_INT(lo, cases[i].qmin);
        CHECK_INT(hi, cases[i].qmax);
        CHECK_INT(qp_qformat_dtype(&f), cases[i].dt);
    }
}

QP_TEST(qparams_closed_forms)
{
    float s;
    int32_t z;
    struct qp_qformat f = fmt(8, false, false);
    /* symmetric: s = max(|lo|, |hi|) / qmax */
    qp_qparams_from_range(&f, QP_ROUND_HALF_AWAY, -2.0f, 1.0f, &s, &z);
    CHECK(s == (float)(2.0 / 127));
    CHECK_INT(z, 0);
    qp_qparams_from_range(&f, QP_ROUND_HALF_AWAY, -0.5f, 3.0f, &s, &z);
    CHECK(s == (float)(3.0 / 127));
    f = fmt(4, false, true); /* narrow 4-bit: qmax 7 */
    qp_qparams_from_range(&f, QP_ROUND_HALF_AWAY, -7.0f, 3.5f, &s, &z);
    CHECK(s == 1.0f);
    /* asymmetric: s = (hi - lo) / 255, z = -round(lo / s) */
    f = fmt(8, true, false);
    qp_qparams_from_range(&f, QP_ROUND_HALF_AWAY, -1.0f, 3.0f, &s, &z);
    CHECK(s == (float)(4.0 / 255));
    CHECK_INT(z, 64); /* -1 / (4/255) = -63.75 */
    /* the range is widened to hold zero */
    qp_qparams_from_range(&f, QP_ROUND_HALF_AWAY, 2.0f, 6.0f, &s, &z);
    CHECK(s == (float)(6.0 / 255));
    CHECK_INT(z, 0);
    qp_qparams_from_range(&f, QP_ROUND_HALF_AWAY, -6.0f, -2.0f, &s, &z);
    CHECK(s == (float)(6.0 / 255));
    CHECK_INT(z, 255);
    /* a zero point on a tie follows the rounding mode: lo / s = -0.5 */
    f = fmt(2, true, false);
    qp_qparams_from_range(&f, QP_ROUND_HALF_AWAY, -0.5f, 2.5f, &s, &z);
    CHECK(s == 1.0f);
    CHECK_INT(z, 1);
    qp_qparams_from_range(&f, QP_ROUND_HALF_EVEN, -0.5f, 2.5f, &s, &z);
    CHECK_INT(z, 0);
    qp_qparams_from_range(&f, QP_ROUND_HALF_EVEN, -1.5f, 1.5f, &s, &z);
    CHECK_INT(z, 2); /* -1.5 -> -2 (even) */
    /* 16 bits */
    f = fmt(16, false, false);
    qp_qparams_from_range(&f, QP_ROUND_HALF_AWAY, -1.0f, 1.0f, &s, &z);
    CHECK(s == (float)(1.0 / 32767));
}

/* Defect 16: per-channel weights of PP-OCRv4's recognizer have channels
 * decayed to denormals (|w| ~ 1e-40) or to ~1e-37 .. 1e-13; their closed-form
 * scales (<= FLT_MIN) made the requantization scale in * w / out denormal,
 * which XNNPACK (and so --requant xnnpack-fp32) refuses, and TFLite flushed
 * the multiplier to zero (the channel's bias lost). A negligible channel
 * gets scale 1 instead; its elements quantize to 0. */
QP_TEST(qparams_negligible_channel_scale_every_flavor_accepts)
{
    static const float amax[] = {0.0f, 1e-40f, 1e-37f, 1e-12f,
                                 127.0f * 0x1p-33f, 127.0f * 0x1p-32f, 0.5f};
    enum { C = sizeof amax / sizeof amax[0] };
    struct qp_qformat f = fmt(8, false, false);
    float ws[C];
    for (size_t c = 0; c < C; c++) {
        int32_t z;
        qp_qparams_from_range(&f, QP_ROUND_HALF_AWAY, -amax[c], amax[c], &ws[c], &z);
        CHECK_INT(z, 0);
        int32_t q = qp_quantize_f32(amax[c], ws[c], 0, -128, 127, QP_ROUND_HALF_AWAY);
        CHECK_INT(q, c < 5 ? 0 : 127);
    }
    for (size_t c = 0; c < 5; c++)
        CHECK(ws[c] == 1.0f);
    CHECK(ws[5] == 0x1p-32f); /* the smallest scale kept */
    CHECK(ws[6] == 0.5f / 127.0f);
    /* the asymmetric form too: [-1e-40, 3e-39] */
    int32_t z;
    float s;
    f = fmt(8, true, false);
    qp_qparams_from_range(&f, QP_ROUND_HALF_AWAY, -1e-40f, 3e-39f, &s, &z);
    CHECK(s == 1.0f);
    CHECK_INT(z, 0);
    /* every flavor prepares a conv layer with the negligible channels'
     * scales and a normal one (input scale 0.02, output 0.05, as in the
     * recognizer's layers), and no fixed-point flavor flushes one of them
     * to a zero multiplier */
    const float layer[6] = {ws[0], ws[1], ws[2], ws[3], ws[4], ws[6]};
    for (int fl = 0; fl < QP_RQ_COUNT; fl++) {
        struct qp_rq rq;
        struct qp_error err;
        enum qp_dtype dt = qp_rq_flavor_acc64((enum qp_rq_flavor)fl)
                               ? QP_DTYPE_I16 : QP_DTYPE_I8;
        int32_t lo = dt == QP_DTYPE_I16 ? -32768 : -128;
        int32_t hi = dt == QP_DTYPE_I16 ? 32767 : 127;
        enum qp_status st = qp_rq_prepare_scales(&rq, (enum qp_rq_flavor)fl,
                                                 0.02f, layer, 6, 0.05f, 0, dt,
                                                 lo, hi, &err);
        if (st != QP_OK) {
            qp_test_failf(ctx, __FILE__, __LINE__, "%s: %s",
                          qp_rq_flavor_name((enum qp_rq_flavor)fl), err.msg);
            continue;
        }
        for (size_t c = 0; rq.multiplier && c < 6; c++)
            if (rq.multiplier[c] == 0)
                qp_test_failf(ctx, __FILE__, __LINE__, "%s: channel %zu flushed",
                              qp_rq_flavor_name((enum qp_rq_flavor)fl), c);
        qp_rq_release(&rq);
    }
}

QP_TEST(qparams_degenerate_ranges_give_finite_nonzero_scales)
{
    static const float ranges[][2] = {
        {0, 0}, {3, 3}, {-3, -3}, {1e-45f, 1e-45f}, {-1e-40f, 1e-40f},
        {-FLT_MAX, FLT_MAX}, {FLT_MAX, FLT_MAX}, {-FLT_MAX, -FLT_MAX}};
    for (unsigned b = 2; b <= 16; b++) {
        if (b > 8 && b < 16)
            continue;
        for (int a = 0; a < 2; a++)
            for (size_t i = 0; i < sizeof ranges / sizeof ranges[0]; i++) {
                struct qp_qformat f = fmt(b, a, false);
                float s;
                int32_t z, qmin, qmax;
                qp_qformat_range(&f, &qmin, &qmax);
                qp_qparams_from_range(&f, QP_ROUND_HALF_EVEN, ranges[i][0],
                                      ranges[i][1], &s, &z);
                if (!(s > 0 && isfinite(s)) || z < qmin || z > qmax)
                    qp_test_failf(ctx, __FILE__, __LINE__,
                                  "bits %u asym %d range [%g, %g]: s %g z %d", b,
                                  a, ranges[i][0], ranges[i][1], s, z);
            }
    }
    float s;
    int32_t z;
    struct qp_qformat f = fmt(8, true, false);
    qp_qparams_from_range(&f, QP_ROUND_HALF_AWAY, 0, 0, &s, &z);
    CHECK(s == 1.0f);
    CHECK_INT(z, 0);
    f = fmt(8, false, false);
    qp_qparams_from_range(&f, QP_ROUND_HALF_AWAY, 0, 0, &s, &z);
    CHECK(s == 1.0f);
    qp_qparams_from_range(&f, QP_ROUND_HALF_AWAY, 1e-45f, 1e-45f, &s, &z);
    CHECK(s == 1.0f); /* all denormal: negligible, as all zero */
    /* a constant tensor reconstructs exactly: c / (c / 127) = 127 */
    qp_qparams_from_range(&f, QP_ROUND_HALF_AWAY, 3.0f, 3.0f, &s, &z);
    CHECK_INT(qp_quantize_f32(3.0f, s, z, -128, 127, QP_ROUND_HALF_AWAY), 127);
}

QP_TEST(qparams_ties_in_both_rounding_modes)
{
    static const struct {
        float v;
        int32_t away, even;
    } cases[] = {
        {0.5f, 1, 0},     {-0.5f, -1, 0},   {1.5f, 2, 2},      {-1.5f, -2, -2},
        {2.5f, 3, 2},     {-2.5f, -3, -2},  {3.5f, 4, 4},      {-126.5f, -127, -126},
        {127.5f, 128, 128}, {0.49999997f, 0, 0}, {-0.49999997f, 0, 0},
        {2.5000002f, 3, 3}, {2.4999998f, 2, 2}, {0.0f, 0, 0},  {-0.0f, 0, 0},
        {7.0f, 7, 7},     {8388607.5f, 8388608, 8388608},
        {8388606.5f, 8388607, 8388606}, {-8388606.5f, -8388607, -8388606},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int32_t a = qp_round_f32(cases[i].v, QP_ROUND_HALF_AWAY);
        int32_t e = qp_round_f32(cases[i].v, QP_ROUND_HALF_EVEN);
        if (a != cases[i].away || e != cases[i].even)
            qp_test_failf(ctx, __FILE__, __LINE__, "%.9g: away %d even %d, "
                          "expected %d %d", cases[i].v, a, e, cases[i].away,
                          cases[i].even);
    }
    /* through the division: s = 0.5 */
    CHECK_INT(qp_quantize_f32(1.25f, 0.5f, 0, -128, 127, QP_ROUND_HALF_AWAY), 3);
    CHECK_INT(qp_quantize_f32(1.25f, 0.5f, 0, -128, 127, QP_ROUND_HALF_EVEN), 2);
    CHECK_INT(qp_quantize_f32(-0.25f, 0.5f, 0, -128, 127, QP_ROUND_HALF_AWAY), -1);
    CHECK_INT(qp_quantize_f32(-0.25f, 0.5f, 0, -128, 127, QP_ROUND_HALF_EVEN), 0);
    /* the zero point is added after rounding: 2.5 + 10 */
    CHECK_INT(qp_quantize_f32(1.25f, 0.5f, 10, 0, 255, QP_ROUND_HALF_EVEN), 12);
    /* clamping */
    CHECK_INT(qp_quantize_f32(1e30f, 0.5f, 0, -128, 127, QP_ROUND_HALF_AWAY), 127);
    CHECK_INT(qp_quantize_f32(-1e30f, 0.5f, 0, -127, 127, QP_ROUND_HALF_AWAY), -127);
    CHECK_INT(qp_quantize_f32(-1e30f, FLT_MIN, 3, 0, 15, QP_ROUND_HALF_AWAY), 0);
    CHECK_INT(qp_quantize_f32(1e30f, FLT_MIN, 3, 0, 15, QP_ROUND_HALF_AWAY), 15);
    enum qp_round r;
    CHECK(qp_round_from_name("half-even", &r) && r == QP_ROUND_HALF_EVEN);
    CHECK(qp_round_from_name("away", &r) && r == QP_ROUND_HALF_AWAY);
    CHECK(!qp_round_from_name("nearest", &r));
    CHECK_STR(qp_round_name(QP_ROUND_HALF_AWAY), "half-away");
}

QP_TEST(qparams_layout_axes)
{
    static const struct {
        enum qp_wlayout l;
        int ndim, out, in;
    } cases[] = {
        {QP_WLAYOUT_TORCH, 2, 0, 1},  {QP_WLAYOUT_TORCH, 4, 0, 1},
        {QP_WLAYOUT_TORCH, 3, 0, 1},  {QP_WLAYOUT_TFLITE, 2, 0, 1},
        {QP_WLAYOUT_TFLITE, 4, 0, 3}, {QP_WLAYOUT_KERAS, 2, 1, 0},
        {QP_WLAYOUT_KERAS, 4, 3, 2},  {QP_WLAYOUT_TORCH, 1, -1, 0},
        {QP_WLAYOUT_KERAS, 1, -1, 0}, {QP_WLAYOUT_TORCH, 0, -1, -1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int o, in;
        qp_wlayout_axes(cases[i].l, cases[i].ndim, &o, &in);
        CHECK_INT(o, cases[i].out);
        CHECK_INT(in, cases[i].in);
    }
    enum qp_wlayout l;
    CHECK(qp_wlayout_from_name("TFLite", &l) && l == QP_WLAYOUT_TFLITE);
    CHECK(!qp_wlayout_from_name("nchw", &l));
}

struct geo_case {
    int ndim;
    int64_t shape[4];
    enum qp_gran gran;
    int64_t group;
    enum qp_wlayout l;
    int axis;
    int64_t block;
    size_t count;
    bool storable;
};

QP_TEST(qparams_geometry_normalised_and_storable)
{
    static const struct geo_case cases[] = {
        {2, {4, 6}, QP_GRAN_TENSOR, 0, QP_WLAYOUT_TORCH, -1, 0, 1, true},
        {2, {4, 6}, QP_GRAN_CHANNEL, 0, QP_WLAYOUT_TORCH, 0, 0, 4, true},
        {2, {4, 6}, QP_GRAN_GROUP, 3, QP_WLAYOUT_TORCH, 1, 3, 8, true},
        /* partial last group: 6 = 4 + 2, and ceil(6 / 2) = 3 != 4 */
        {2, {4, 6}, QP_GRAN_GROUP, 4, QP_WLAYOUT_TORCH, 1, 4, 8, false},
        {2, {4, 10}, QP_GRAN_GROUP, 4, QP_WLAYOUT_TORCH, 1, 4, 12, true},
        /* one group per row is per-channel */
        {2, {4, 6}, QP_GRAN_GROUP, 6, QP_WLAYOUT_TORCH, 0, 0, 4, true},
        {2, {4, 6}, QP_GRAN_GROUP, 128, QP_WLAYOUT_TORCH, 0, 0, 4, true},
        {2, {4, 96}, QP_GRAN_GROUP, 64, QP_WLAYOUT_TORCH, 1, 64, 8, false},
        {2, {4, 96}, QP_GRAN_GROUP, 32, QP_WLAYOUT_TORCH, 1, 32, 12, true},
        /* one output channel: per-tensor */
        {2, {1, 6}, QP_GRAN_CHANNEL, 0, QP_WLAYOUT_TORCH, -1, 0, 1, true},
        {1, {5}, QP_GRAN_CHANNEL, 0, QP_WLAYOUT_TORCH, -1, 0, 1, true},
        {1, {100}, QP_GRAN_GROUP, 32, QP_WLAYOUT_TORCH, 0, 32, 4, false},
        {1, {100}, QP_GRAN_GROUP, 100, QP_WLAYOUT_TORCH, -1, 0, 1, true},
        {0, {0}, QP_GRAN_GROUP, 8, QP_WLAYOUT_TORCH, -1, 0, 1, true},
        /* conv OIHW: groups along I, a scale per (o, group, h, w) */
        {4, {8, 3, 3, 3}, QP_GRAN_GROUP, 2, QP_WLAYOUT_TORCH, 1, 2, 144, true},
        {4, {8, 3, 3, 3}, QP_GRAN_CHANNEL, 0, QP_WLAYOUT_TORCH, 0, 0, 8, true},
        /* depthwise [C,1,kh,kw]: the input axis fits in one group, which
         * is then the whole reduction: per-channel */
        {4, {8, 1, 3, 3}, QP_GRAN_GROUP, 32, QP_WLAYOUT_TORCH, 0, 0, 8, true},
        {4, {8, 3, 3, 3}, QP_GRAN_GROUP, 4, QP_WLAYOUT_TORCH, 0, 0, 8, true},
        {4, {3, 3, 2, 8}, QP_GRAN_GROUP, 4, QP_WLAYOUT_KERAS, 3, 0, 8, true},
        /* rank 4 with the out axis of size 1 and one group: per-tensor */
        {4, {1, 2, 3, 3}, QP_GRAN_GROUP, 4, QP_WLAYOUT_TORCH, -1, 0, 1, true},
        /* a scale per element: blocks of 1 on the last axis */
        {2, {3, 2}, QP_GRAN_GROUP, 1, QP_WLAYOUT_KERAS, 1, 1, 6, true},
        /* 1x1 conv, one group per row: per-channel */
        {4, {8, 16, 1, 1}, QP_GRAN_GROUP, 32, QP_WLAYOUT_TORCH, 0, 0, 8, true},
        {4, {8, 3, 3, 16}, QP_GRAN_GROUP, 4, QP_WLAYOUT_TFLITE, 3, 4, 288, true},
        {4, {8, 3, 3, 16}, QP_GRAN_CHANNEL, 0, QP_WLAYOUT_TFLITE, 0, 0, 8, true},
        {4, {3, 3, 16, 8}, QP_GRAN_CHANNEL, 0, QP_WLAYOUT_KERAS, 3, 0, 8, true},
        {2, {6, 4}, QP_GRAN_CHANNEL, 0, QP_WLAYOUT_KERAS, 1, 0, 4, true},
        {2, {6, 4}, QP_GRAN_GROUP, 4, QP_WLAYOUT_KERAS, 0, 4, 8, false},
        {2, {8, 4}, QP_GRAN_GROUP, 4, QP_WLAYOUT_KERAS, 0, 4, 8, true},
        {2, {0, 4}, QP_GRAN_CHANNEL, 0, QP_WLAYOUT_TORCH, 0, 0, 0, true},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const struct geo_case *c = &cases[i];
        struct qp_qgeom g;
        struct qp_error err;
        REQUIRE_OK(qp_qgeom_init(&g, c->ndim, c->shape, c->gran, c->group, c->l,
                                 &err), &err);
        if (g.axis != c->axis || g.block != c->block || g.count != c->count ||
            qp_qgeom_storable(&g, c->ndim, c->shape) != c->storable)
            qp_test_failf(ctx, __FILE__, __LINE__,
                          "case %zu: axis %d block %lld count %zu storable %d",
                          i, g.axis, (long long)g.block, g.count,
                          qp_qgeom_storable(&g, c->ndim, c->shape));
    }
    struct qp_qgeom g;
    struct qp_error err;
    int64_t shape[2] = {4, 4};
    CHECK_FAILS(qp_qgeom_init(&g, 2, shape, QP_GRAN_GROUP, 0, QP_WLAYOUT_TORCH,
                              &err), QP_E_INVAL, &err, "at least 1");
}

/* The ONNX scale index of flat element e: axis decomposition by division. */
static size_t oracle_index(const struct qp_qgeom *g, size_t e)
{
    if (g->axis < 0)
        return 0;
    size_t in = e % g->inner, a = e / g->inner % g->dim,
           o = e / (g->inner * g->dim);
    if (!g->block)
        return a;
    return (o * g->nblk + a / (size_t)g->block) * g->inner + in;
}

QP_TEST(qparams_segments_tile_the_tensor_with_onnx_indices)
{
    static const int64_t shapes[][4] = {{5, 7, 3, 2}, {3, 10, 1, 1},
                                        {2, 3, 4, 5}, {9, 1, 3, 3}};
    static const int64_t groups[] = {1, 2, 3, 4, 7, 64};
    size_t checked = 0;
    for (size_t si = 0; si < 4; si++)
        for (int nd = 1; nd <= 4; nd++)
            for (int l = 0; l < QP_WLAYOUT_COUNT; l++)
                for (int gr = 0; gr < QP_GRAN_COUNT; gr++)
                    for (size_t gi = 0; gi < 6; gi++) {
                        struct qp_qgeom g;
                        struct qp_error err;
                        REQUIRE_OK(qp_qgeom_init(&g, nd, shapes[si],
                                                 (enum qp_gran)gr, groups[gi],
                                                 (enum qp_wlayout)l, &err), &err);
                        size_t numel = g.outer * g.dim * g.inner, next = 0;
                        size_t *hits = calloc(g.count, sizeof *hits);
                        struct qp_qseg_iter it;
                        struct qp_qseg s;
                        qp_qseg_begin(&it, &g);
                        while (qp_qseg_next(&it, &s)) {
                            CHECK_INT(s.off, next);
                            for (size_t k = 0; k < s.len; k++) {
                                size_t idx = s.idx + (s.vec ? k : 0);
                                if (idx != oracle_index(&g, s.off + k)) {
                                    qp_test_failf(ctx, __FILE__, __LINE__,
                                                  "element %zu: index %zu, "
                                                  "expected %zu", s.off + k, idx,
                                                  oracle_index(&g, s.off + k));
                                    free(hits);
                                    return;
                                }
                                hits[idx]++;
                            }
                            next = s.off + s.len;
                            checked += s.len;
                        }
                        CHECK_INT(next, numel);
                        for (size_t i = 0; i < g.count; i++)
                            if (hits[i] != qp_qgeom_members(&g, i))
                                qp_test_failf(ctx, __FILE__, __LINE__,
                                              "index %zu: %zu members, "
                                              "members() says %zu", i, hits[i],
                                              qp_qgeom_members(&g, i));
                        free(hits);
                    }
    CHECK(checked > 10000);
}

QP_TEST(qparams_minmax_per_index_and_nonfinite)
{
    /* [2, 5] with groups of 2 along the rows: (0,1) (2,3) (4) per row */
    float x[10] = {1, -2, 3, 4, -5, 0, 0, 7, -1, 2};
    int64_t shape[2] = {2, 5};
    struct qp_qgeom g;
    struct qp_error err;
    REQUIRE_OK(qp_qgeom_init(&g, 2, shape, QP_GRAN_GROUP, 2, QP_WLAYOUT_TORCH,
                             &err), &err);
    float lo[6], hi[6];
    REQUIRE_OK(qp_qgeom_minmax(&g, x, "tensor 'w'", lo, hi, &err), &err);
    static const float elo[6] = {-2, 3, -5, 0, -1, 2}, ehi[6] = {1, 4, -5, 0, 7, 2};
    for (int i = 0; i < 6; i++) {
        CHECK(lo[i] == elo[i]);
        CHECK(hi[i] == ehi[i]);
    }
    /* per-channel, keras [5 in, 2 out]: columns */
    int64_t kshape[2] = {5, 2};
    REQUIRE_OK(qp_qgeom_init(&g, 2, kshape, QP_GRAN_CHANNEL, 0, QP_WLAYOUT_KERAS,
                             &err), &err);
    REQUIRE_OK(qp_qgeom_minmax(&g, x, "tensor 'w'", lo, hi, &err), &err);
    CHECK(lo[0] == -5 && hi[0] == 3);
    CHECK(lo[1] == -2 && hi[1] == 7);
    x[7] = NAN;
    CHECK_FAILS(qp_qgeom_minmax(&g, x, "tensor 'w'", lo, hi, &err), QP_E_INVAL,
                &err, "tensor 'w': element 7 is nan");
    x[7] = -INFINITY;
    CHECK_FAILS(qp_qgeom_minmax(&g, x, "tensor 'w'", lo, hi, &err), QP_E_INVAL,
                &err, "element 7 is -inf");
}

QP_TEST(qparams_grids_of_ranges_near_flt_max_are_finite)
{
    /* w4g8z on weights of +-3.4e38: s = 6.8e38 / 15, z = 8, so q = 0
     * dequantized to -8 s = -3.6e38, which is -inf in float */
    static const float ranges[][2] = {
        {-FLT_MAX, FLT_MAX}, {-3.4e38f, 3.4e38f}, {-FLT_MAX, 1}, {-1, FLT_MAX},
        {-FLT_MAX, FLT_MAX / 3}, {-1e38f, FLT_MAX}};
    for (unsigned b = 2; b <= 16; b++) {
        if (b > 8 && b < 16)
            continue;
        for (int rm = 0; rm < 4; rm++)
            for (size_t i = 0; i < sizeof ranges / sizeof ranges[0]; i++) {
                /* asymmetric and symmetric, each in both rounding modes */
                struct qp_qformat f = fmt(b, rm < 2, false);
                float s, lo = ranges[i][0], hi = ranges[i][1];
                int32_t z, qmin, qmax;
                qp_qformat_range(&f, &qmin, &qmax);
                qp_qparams_from_range(&f, (enum qp_round)(rm % 2), lo, hi, &s,
                                      &z);
                float g0 = s * (float)(qmin - z), g1 = s * (float)(qmax - z);
                /* finite, and the range's ends within one step (of the
                 * unclipped scale) of the grid */
                double step = (f.asym ? ((double)fmaxf(hi, 0) - fminf(lo, 0)) /
                                            (qmax - qmin)
                                      : fmax(-(double)lo, hi) / qmax) * 1.001;
                if (!isfinite(g0) || !isfinite(g1) ||
                    (double)g0 > (double)lo + step ||
                    (double)g1 < (double)hi - step)
                    qp_test_failf(ctx, __FILE__, __LINE__,
                                  "bits %u range [%g, %g]: s %g z %d grid [%g, %g]",
                                  b, lo, hi, s, z, g0, g1);
            }
    }
}
