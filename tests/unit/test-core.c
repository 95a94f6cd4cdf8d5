/* Unit tests of core/: dtype traits, half/bf16/f8 conversions, tensors,
 * quantization-parameter reads, permutation, atomic outputs. */
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/dtype.h"
#include "core/fileio.h"
#include "core/half.h"
#include "core/outfile.h"
#include "core/parallel.h"
#include "core/tensor.h"
#include "tests/test.h"

static uint32_t bits(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    return x;
}

static float fbits(uint32_t x)
{
    float f;
    memcpy(&f, &x, 4);
    return f;
}

QP_TEST(f16_roundtrip_all_values)
{
    /* every f16 widens exactly and narrows back to itself (NaNs stay NaN) */
    for (uint32_t h = 0; h < 65536; h++) {
        float f = qp_f16_to_f32((uint16_t)h);
        uint16_t back = qp_f32_to_f16(f);
        bool nan = (h & 0x7c00) == 0x7c00 && (h & 0x3ff);
        if (nan)
            CHECK(isnan(f) && (back & 0x7c00) == 0x7c00 && (back & 0x3ff));
        else if (back != h)
            qp_test_failf(ctx, __FILE__, __LINE__, "f16 0x%04x -> %a -> 0x%04x",
                          h, f, back);
    }
}

QP_TEST(f16_known_values_and_ties)
{
    CHECK_INT(qp_f32_to_f16(1.0f), 0x3c00);
    CHECK_INT(qp_f32_to_f16(-2.0f), 0xc000);
    CHECK_INT(qp_f32_to_f16(65504.0f), 0x7bff);
    CHECK_INT(qp_f32_to_f16(65519.99f), 0x7bff);
    CHECK_INT(qp_f32_to_f16(65520.0f), 0x7c00);   /* tie rounds to even: inf */
    CHECK_INT(qp_f32_to_f16(INFINITY), 0x7c00);
    CHECK_INT(qp_f32_to_f16(-0.0f), 0x8000);
    CHECK_INT(qp_f32_to_f16(0x1p-24f), 0x0001);   /* smallest subnormal */
    CHECK_INT(qp_f32_to_f16(0x1p-25f), 0x0000);   /* tie between 0 and 1: even */
    CHECK_INT(qp_f32_to_f16(0x1.8p-24f), 0x0002); /* tie 1.5 -> 2 */
    CHECK_INT(qp_f32_to_f16(0x1.000002p-25f), 0x0001); /* just above the tie */
    /* 1 + 2^-11 is a tie between 1 and 1+2^-10: even mantissa (1.0) */
    CHECK_INT(qp_f32_to_f16(1.0f + 0x1p-11f), 0x3c00);
    /* 1 + 3*2^-11 is a tie between 1+2^-10 and 1+2^-9: even is 1+2^-9 */
    CHECK_INT(qp_f32_to_f16(1.0f + 3 * 0x1p-11f), 0x3c02);
    CHECK_INT(qp_f32_to_f16(0x1.ffcp-15f), 0x0400); /* tie: rounds up to 2^-14 */
    CHECK(isnan(qp_f16_to_f32(qp_f32_to_f16(NAN))));
    CHECK_NEAR(qp_f16_to_f32(0x0001), 0x1p-24, 0);
    CHECK_NEAR(qp_f16_to_f32(0x3555), 0.333251953125, 0);
}

QP_TEST(bf16_rounding)
{
    CHECK_INT(qp_f32_to_bf16(1.0f), 0x3f80);
    /* 1 + 2^-8 is a tie: even (1.0); 1 + 3*2^-8 ties up to 1 + 2^-6 */
    CHECK_INT(qp_f32_to_bf16(fbits(0x3f808000)), 0x3f80);
    CHECK_INT(qp_f32_to_bf16(fbits(0x3f818000)), 0x3f82);
    CHECK_INT(qp_f32_to_bf16(fbits(0x3f808001)), 0x3f81);
    CHECK_INT(qp_f32_to_bf16(fbits(0x7f7fffff)), 0x7f80); /* max rounds to inf */
    CHECK_INT(qp_f32_to_bf16(-INFINITY), 0xff80);
    CHECK(isnan(qp_bf16_to_f32(qp_f32_to_bf16(NAN))));
    CHECK_INT(bits(qp_bf16_to_f32(0x0001)), 0x00010000); /* subnormal kept */
}

QP_TEST(f8_decoding)
{
    CHECK_NEAR(qp_f8e4m3_to_f32(0x38), 1.0, 0);
    CHECK_NEAR(qp_f8e4m3_to_f32(0x7e), 448.0, 0);
    CHECK(isnan(qp_f8e4m3_to_f32(0x7f)));
    CHECK_NEAR(qp_f8e4m3_to_f32(0x01), 0x1p-9, 0);
    CHECK_NEAR(qp_f8e4m3_to_f32(0xb8), -1.0, 0);
    CHECK_NEAR(qp_f8e5m2_to_f32(0x3c), 1.0, 0);
    CHECK(isinf(qp_f8e5m2_to_f32(0x7c)));
    CHECK_NEAR(qp_f8e5m2_to_f32(0x7b), 57344.0, 0);
}

QP_TEST(dtype_names_and_sizes)
{
    enum qp_dtype d;
    CHECK(qp_dtype_from_name("float32", &d) && d == QP_DTYPE_F32);
    CHECK(qp_dtype_from_name("UINT8", &d) && d == QP_DTYPE_U8);
    CHECK(qp_dtype_from_name("bf16", &d) && d == QP_DTYPE_BF16);
    CHECK(!qp_dtype_from_name("complex64", &d));
    size_t n;
    CHECK(qp_dtype_bytes(QP_DTYPE_I4, 7, &n) && n == 4);
    CHECK(qp_dtype_bytes(QP_DTYPE_F64, 3, &n) && n == 24);
    CHECK(!qp_dtype_bytes(QP_DTYPE_F64, SIZE_MAX / 4, &n));
}

QP_TEST(shape_checks_refuse_overflow)
{
    struct qp_error err;
    size_t nb;
    int64_t huge[3] = {1ll << 40, 1ll << 40, 4};
    CHECK_FAILS(qp_shape_check("t", QP_DTYPE_F32, 3, huge, &nb, &err),
                QP_E_OVERFLOW, &err, "overflows");
    int64_t neg[2] = {2, -1};
    CHECK_FAILS(qp_shape_check("t", QP_DTYPE_F32, 2, neg, &nb, &err),
                QP_E_FORMAT, &err, "negative");
    int64_t nine[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    CHECK_FAILS(qp_shape_check("t", QP_DTYPE_F32, 9, nine, &nb, &err),
                QP_E_UNSUPPORTED, &err, "at most 8");
    int64_t ok[2] = {0, 5};
    CHECK_OK(qp_shape_check("t", QP_DTYPE_F32, 2, ok, &nb, &err), &err);
    CHECK_INT(nb, 0);
}

QP_TEST(read_f32_dequantizes_per_tensor_axis_and_blocks)
{
    struct qp_error err;
    struct qp_tensor *t;
    int64_t shape[2] = {2, 5};
    REQUIRE_OK(qp_tensor_new("w", QP_DTYPE_I8, 2, shape, &t, &err), &err);
    int8_t *q = t->data;
    for (int i = 0; i < 10; i++)
        q[i] = (int8_t)(i - 4);
    float out[10];

    float s1 = 0.5f;
    int32_t z1 = 2;
    REQUIRE_OK(qp_tensor_set_qparams(t, 1, &s1, &z1, -1, 0, &err), &err);
    qp_tensor_read_f32(t, 0, 10, out);
    for (int i = 0; i < 10; i++)
        CHECK_NEAR(out[i], 0.5 * (i - 4 - 2), 0);

    float s2[2] = {1.0f, 0.25f};
    REQUIRE_OK(qp_tensor_set_qparams(t, 2, s2, NULL, 0, 0, &err), &err);
    qp_tensor_read_f32(t, 3, 7, out); /* from the middle of row 0 */
    for (int k = 0; k < 7; k++) {
        int i = 3 + k;
        CHECK_NEAR(out[k], s2[i / 5] * (i - 4), 0);
    }

    /* blocks of 2 along axis 1: 3 blocks per row, the last one partial */
    float s3[6] = {1, 2, 3, 4, 5, 6};
    int32_t z3[6] = {0, 1, 0, -1, 0, 1};
    REQUIRE_OK(qp_tensor_set_qparams(t, 6, s3, z3, 1, 2, &err), &err);
    qp_tensor_read_f32(t, 1, 9, out);
    for (int k = 0; k < 9; k++) {
        int i = 1 + k, r = i / 5, c = i % 5, j = r * 3 + c / 2;
        CHECK_NEAR(out[k], s3[j] * (i - 4 - z3[j]), 0);
    }
    CHECK_FAILS(qp_tensor_set_qparams(t, 5, s3, NULL, 1, 2, &err), QP_E_SHAPE,
                &err, "needs 6");
    qp_tensor_free(t);
}

QP_TEST(read_f32_packed_int4)
{
    struct qp_error err;
    struct qp_tensor *t;
    int64_t shape[1] = {5};
    REQUIRE_OK(qp_tensor_new("p", QP_DTYPE_I4, 1, shape, &t, &err), &err);
    CHECK_INT(t->nbytes, 3);
    uint8_t *p = t->data;
    p[0] = 0x8f; /* e0 = 0xf = -1, e1 = 0x8 = -8 */
    p[1] = 0x70; /* e2 = 0, e3 = 7 */
    p[2] = 0x03; /* e4 = 3 */
    float out[5];
    qp_tensor_read_f32(t, 0, 5, out);
    CHECK_NEAR(out[0], -1, 0);
    CHECK_NEAR(out[1], -8, 0);
    CHECK_NEAR(out[2], 0, 0);
    CHECK_NEAR(out[3], 7, 0);
    CHECK_NEAR(out[4], 3, 0);
    qp_tensor_free(t);
}

QP_TEST(permute_nchw_to_nhwc)
{
    struct qp_error err;
    struct qp_tensor *t, *u;
    int64_t shape[4] = {1, 3, 2, 4};
    REQUIRE_OK(qp_tensor_new("x", QP_DTYPE_F32, 4, shape, &t, &err), &err);
    float *x = t->data;
    for (int i = 0; i < 24; i++)
        x[i] = (float)i;
    int perm[4] = {0, 2, 3, 1};
    REQUIRE_OK(qp_tensor_permute(t, perm, &u, &err), &err);
    CHECK_INT(u->shape[1], 2);
    CHECK_INT(u->shape[3], 3);
    const float *y = u->data;
    for (int h = 0; h < 2; h++)
        for (int w = 0; w < 4; w++)
            for (int c = 0; c < 3; c++)
                CHECK_NEAR(y[(h * 4 + w) * 3 + c], x[(c * 2 + h) * 4 + w], 0);
    qp_tensor_free(t);
    qp_tensor_free(u);
}

QP_TEST(outfile_is_atomic)
{
    struct qp_error err;
    char *path = qp_test_path(ctx, "out.txt");
    struct qp_outfile *of;
    REQUIRE_OK(qp_outfile_open(path, &of, &err), &err);
    fputs("partial", of->fp);
    CHECK(access(path, F_OK) != 0); /* nothing at the final name yet */
    qp_outfile_abort(of);
    CHECK(access(path, F_OK) != 0);
    REQUIRE_OK(qp_outfile_open(path, &of, &err), &err);
    fputs("whole", of->fp);
    REQUIRE_OK(qp_outfile_commit(of, &err), &err);
    char *text;
    REQUIRE_OK(qp_read_file(path, 1 << 20, &text, NULL, &err), &err);
    CHECK_STR(text, "whole");
    free(text);
    CHECK_FAILS(qp_outfile_open("/nonexistent-dir/x", &of, &err), QP_E_IO, &err,
                "/nonexistent-dir/x");
    free(path);
}

struct sum_ctx {
    const int *v;
    size_t n;
    long long part[16];
};

static void sum_part(void *p, int t, int nt)
{
    struct sum_ctx *c = p;
    size_t b, e;
    qp_parallel_split(c->n, t, nt, 8, &b, &e);
    for (size_t i = b; i < e; i++)
        c->part[t] += c->v[i];
}

QP_TEST(parallel_split_covers_everything_once)
{
    int v[1003];
    for (int i = 0; i < 1003; i++)
        v[i] = i;
    for (int nt = 1; nt <= 5; nt++) {
        struct sum_ctx c = {v, 1003, {0}};
        qp_parallel_run(sum_part, &c, nt);
        long long s = 0;
        for (int t = 0; t < nt; t++)
            s += c.part[t];
        CHECK_INT(s, 1003LL * 1002 / 2);
    }
}

/* qp_parallel_threads_for: one thread below twice the minimum, then one
 * per minimum, capped. */
QP_TEST(parallel_threads_follow_the_work)
{
    CHECK_INT(qp_parallel_threads_for(0, 100, 4), 1);
    CHECK_INT(qp_parallel_threads_for(199, 100, 4), 1);
    CHECK_INT(qp_parallel_threads_for(200, 100, 4), 2);
    CHECK_INT(qp_parallel_threads_for(399, 100, 4), 3);
    CHECK_INT(qp_parallel_threads_for(1e9, 100, 4), 4);
    CHECK_INT(qp_parallel_threads_for(1e9, 100, 1), 1);
    CHECK_INT(qp_parallel_threads_for(1e9, 0, 4), 1);
    CHECK(qp_parallel_threads_for(1e9, 1, 0) == qp_parallel_threads());
}

struct chunk_ctx {
    _Atomic int hits[1000];
    _Atomic int bad;
    int nt;
};

static void count_chunk(void *p, int t, size_t b, size_t e)
{
    struct chunk_ctx *c = p;
    if (t < 0 || t >= c->nt || b >= e || e > 1000)
        c->bad++;
    for (size_t i = b; i < e && i < 1000; i++)
        c->hits[i]++;
}

/* qp_parallel_chunks runs every item once, in chunks of the given length
 * (the last shorter), each on a thread index below nthreads, over hot
 * runs in a row and plain runs between them. */
QP_TEST(parallel_chunks_cover_every_item_once)
{
    static struct chunk_ctx c;
    static const size_t ns[] = {1, 7, 64, 999, 1000};
    for (int rep = 0; rep < 50; rep++)
        for (size_t k = 0; k < sizeof ns / sizeof *ns; k++)
            for (int nt = 1; nt <= 3; nt++) {
                memset(&c, 0, sizeof c);
                c.nt = nt;
                qp_parallel_chunks(count_chunk, &c, ns[k], 1 + (size_t)rep % 9,
                                   nt);
                int wrong = c.bad;
                for (size_t i = 0; i < 1000; i++)
                    wrong += c.hits[i] != (i < ns[k]);
                if (wrong) {
                    qp_test_failf(ctx, __FILE__, __LINE__, "n %zu, %d threads, "
                                  "chunk %d: %d items wrong", ns[k], nt,
                                  1 + rep % 9, wrong);
                    return;
                }
                struct sum_ctx s = {NULL, 0, {0}};
                qp_parallel_run(sum_part, &s, nt); /* a plain run between */
            }
}

QP_TEST(packed_2_3_4_bit_roundtrip_and_layout)
{
    static const enum qp_dtype dts[] = {QP_DTYPE_I2, QP_DTYPE_U2, QP_DTYPE_I3,
                                        QP_DTYPE_U3, QP_DTYPE_I4, QP_DTYPE_U4};
    for (size_t k = 0; k < sizeof dts / sizeof dts[0]; k++) {
        const struct qp_dtype_traits *tr = qp_dtype_traits(dts[k]);
        size_t nb;
        REQUIRE(qp_dtype_bytes(dts[k], 13, &nb));
        CHECK_INT(nb, (13 * tr->bits + 7) / 8);
        unsigned char buf[8] = {0};
        for (size_t i = 0; i < 13; i++)
            qp_packed_set(dts[k], buf, i, (int32_t)(tr->min + (int64_t)(i * 5) % (tr->max - tr->min + 1)));
        for (size_t i = 0; i < 13; i++)
            CHECK_INT(qp_packed_get(dts[k], buf, i),
                      tr->min + (int64_t)(i * 5) % (tr->max - tr->min + 1));
    }
    /* 3-bit layout: elements 0..2 = 1, 2, 7 -> bits 001 010 111 from bit 0:
     * byte0 = 0b11_010_001 = 0xd1, byte1 bit0 = 1 */
    unsigned char b[2] = {0};
    qp_packed_set(QP_DTYPE_U3, b, 0, 1);
    qp_packed_set(QP_DTYPE_U3, b, 1, 2);
    qp_packed_set(QP_DTYPE_U3, b, 2, 7);
    CHECK_INT(b[0], 0xd1);
    CHECK_INT(b[1], 0x01);
    CHECK_INT(qp_packed_get(QP_DTYPE_I3, b, 2), -1);
}

struct nest_ctx {
    int hits[4][4];
};

static void inner(void *p, int t, int nt)
{
    (void)nt;
    int *row = p;
    row[t]++;
}

static void outer(void *p, int t, int nt)
{
    struct nest_ctx *c = p;
    (void)nt;
    qp_parallel_run(inner, c->hits[t], 4); /* nested: runs on this thread */
}

QP_TEST(parallel_nested_calls_run_every_share_once)
{
    for (int rep = 0; rep < 200; rep++) {
        struct nest_ctx c = {{{0}}};
        qp_parallel_run(outer, &c, 4);
        for (int a = 0; a < 4; a++)
            for (int b = 0; b < 4; b++)
                if (c.hits[a][b] != 1) {
                    qp_test_failf(ctx, __FILE__, __LINE__,
                                  "rep %d: share (%d,%d) ran %d times", rep, a,
                                  b, c.hits[a][b]);
                    return;
                }
    }
}

/* Element i of t dequantized the slow, obvious way: coordinates by
 * division, scale index from them. */
static float dequant_at(const struct qp_tensor *t, size_t i)
{
    int64_t c[QP_MAX_DIMS];
    size_t r = i;
    for (int d = t->ndim - 1; d >= 0; d--) {
        c[d] = (int64_t)(r % (size_t)t->shape[d]);
        r /= (size_t)t->shape[d];
    }
    const struct qp_qparams *q = t->qp;
    size_t j = 0;
    if (q->axis >= 0 && !q->block_size) {
        j = (size_t)c[q->axis];
    } else if (q->axis >= 0) {
        for (int d = 0; d < t->ndim; d++) {
            int64_t dim = t->shape[d], cd = c[d];
            if (d == q->axis) {
                dim = (dim + q->block_size - 1) / q->block_size;
                cd /= q->block_size;
            }
            j = j * (size_t)dim + (size_t)cd;
        }
    }
    double raw;
    if (qp_dtype_is_packed(t->dtype))
        raw = qp_packed_get(t->dtype, t->data, i);
    else if (t->dtype == QP_DTYPE_I8)
        raw = ((const int8_t *)t->data)[i];
    else if (t->dtype == QP_DTYPE_U8)
        raw = ((const uint8_t *)t->data)[i];
    else if (t->dtype == QP_DTYPE_I16)
        raw = ((const int16_t *)t->data)[i];
    else
        raw = ((const int32_t *)t->data)[i];
    return (float)(raw - (q->zero_point ? q->zero_point[j] : 0)) * q->scale[j];
}

QP_TEST(read_f32_matches_elementwise_dequantization_in_random_chunks)
{
    static const enum qp_dtype dts[] = {QP_DTYPE_I8, QP_DTYPE_U8, QP_DTYPE_I16,
                                        QP_DTYPE_I32, QP_DTYPE_I4, QP_DTYPE_U3};
    /* (axis, block): per-tensor, per-axis 0/1/2, blocked on inner and outer */
    static const int cfg[][2] = {{-1, 0}, {0, 0}, {1, 0}, {2, 0},
                                 {2, 4}, {1, 2}, {0, 3}};
    struct qp_error err;
    uint32_t rng = 12345;
    int64_t shape[3] = {5, 6, 10};
    for (size_t di = 0; di < sizeof dts / sizeof dts[0]; di++)
        for (size_t ci = 0; ci < sizeof cfg / sizeof cfg[0]; ci++) {
            struct qp_tensor *t;
            REQUIRE_OK(qp_tensor_new("t", dts[di], 3, shape, &t, &err), &err);
            const struct qp_dtype_traits *tr = qp_dtype_traits(dts[di]);
            for (size_t i = 0; i < 300; i++) {
                rng = rng * 1103515245u + 12345u;
                int64_t v = tr->min + (int64_t)(rng >> 8) % (tr->max - tr->min + 1);
                if (qp_dtype_is_packed(dts[di]))
                    qp_packed_set(dts[di], t->data, i, (int32_t)v);
                else if (tr->bits == 8)
                    ((uint8_t *)t->data)[i] = (uint8_t)v;
                else if (tr->bits == 16)
                    ((int16_t *)t->data)[i] = (int16_t)v;
                else
                    ((int32_t *)t->data)[i] = (int32_t)v;
            }
            int axis = cfg[ci][0];
            int64_t block = cfg[ci][1];
            size_t count = 1;
            for (int d = 0; d < 3 && axis >= 0; d++)
                count *= d == axis ? (block ? (size_t)((shape[d] + block - 1) / block)
                                            : (size_t)shape[d])
                                   : (block ? (size_t)shape[d] : 1);
            float sc[300];
            int32_t zp[300];
            for (size_t j = 0; j < count; j++) {
                sc[j] = 0.01f * (float)(j + 1);
                zp[j] = (int32_t)(j % 5) - 2;
            }
            REQUIRE_OK(qp_tensor_set_qparams(t, count, sc, zp, axis, block, &err),
                       &err);
            float out[300];
            for (size_t k = 0; k < 300;) {
                rng = rng * 1103515245u + 12345u;
                size_t len = 1 + (rng >> 16) % 37;
                if (len > 300 - k)
                    len = 300 - k;
                qp_tensor_read_f32(t, k, len, out + k);
                k += len;
            }
            for (size_t i = 0; i < 300; i++)
                if (out[i] != dequant_at(t, i)) {
                    qp_test_failf(ctx, __FILE__, __LINE__,
                                  "%s axis %d block %lld element %zu: %g, expected %g",
                                  qp_dtype_name(dts[di]), axis, (long long)block,
                                  i, out[i], dequant_at(t, i));
                    break;
                }
            qp_tensor_free(t);
        }
}

static void count_share(void *p, int t, int nt)
{
    (void)nt;
    __atomic_add_fetch((int *)p + t, 1, __ATOMIC_RELAXED);
}

QP_TEST(parallel_pool_works_in_a_forked_child)
{
    int hits[2] = {0, 0};
    qp_parallel_run(count_share, hits, 2); /* the parent's pool has a worker */
    CHECK(hits[0] == 1 && hits[1] == 1);
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        int h[3] = {0, 0, 0};
        qp_parallel_run(count_share, h, 3); /* would hang on the parent's state */
        _exit(h[0] == 1 && h[1] == 1 && h[2] == 1 ? 0 : 1);
    }
    int status = 0;
    for (int i = 0; i < 500; i++) { /* up to 5 s */
        if (waitpid(pid, &status, WNOHANG) == pid)
            break;
        usleep(10000);
        if (i == 499) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            qp_test_failf(ctx, __FILE__, __LINE__, "child hung in qp_parallel_run");
            return;
        }
    }
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}
