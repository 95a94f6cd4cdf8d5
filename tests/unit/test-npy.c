/* Unit tests of formats/npy.c and the npy directory dumps. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/fileio.h"
#include "formats/dump.h"
#include "formats/npy.h"
#include "tests/test.h"

/* Builds an .npy image with a v1 header dict and data. */
static size_t make_npy(uint8_t *buf, const char *dict, const void *data,
                       size_t n, int major)
{
    size_t dl = strlen(dict), pre = major == 1 ? 10 : 12;
    size_t hlen = (pre + dl + 1 + 15) / 16 * 16 - pre;
    memcpy(buf, "\x93NUMPY", 6);
    buf[6] = (uint8_t)major;
    buf[7] = 0;
    buf[8] = (uint8_t)(hlen & 0xff);
    buf[9] = (uint8_t)(hlen >> 8);
    if (major != 1)
        buf[10] = buf[11] = 0;
    memcpy(buf + pre, dict, dl);
    memset(buf + pre + dl, ' ', hlen - dl - 1);
    buf[pre + hlen - 1] = '\n';
    memcpy(buf + pre + hlen, data, n);
    return pre + hlen + n;
}

QP_TEST(npy_roundtrip_every_numpy_dtype)
{
    static const enum qp_dtype dts[] = {
        QP_DTYPE_F32, QP_DTYPE_F16, QP_DTYPE_F64, QP_DTYPE_I8,  QP_DTYPE_U8,
        QP_DTYPE_I16, QP_DTYPE_U16, QP_DTYPE_I32, QP_DTYPE_U32, QP_DTYPE_I64,
        QP_DTYPE_U64, QP_DTYPE_BOOL};
    struct qp_error err;
    for (size_t k = 0; k < sizeof dts / sizeof dts[0]; k++) {
        struct qp_tensor *t, *u;
        int64_t shape[3] = {2, 3, 5};
        REQUIRE_OK(qp_tensor_new("t", dts[k], 3, shape, &t, &err), &err);
        uint8_t *p = t->data;
        for (size_t i = 0; i < t->nbytes; i++)
            p[i] = (uint8_t)(i * 37 + k);
        if (dts[k] == QP_DTYPE_BOOL)
            for (size_t i = 0; i < t->nbytes; i++)
                p[i] &= 1;
        char *path = qp_test_path(ctx, "t.npy");
        REQUIRE_OK(qp_fmt_npy_save(path, t, &err), &err);
        REQUIRE_OK(qp_fmt_npy_load(path, NULL, false, &u, &err), &err);
        CHECK_STR(u->name, "t");
        CHECK_INT(u->dtype, dts[k]);
        CHECK(qp_shape_equal(u->ndim, u->shape, 3, shape));
        CHECK(u->nbytes == t->nbytes && !memcmp(u->data, t->data, t->nbytes));
        CHECK((uintptr_t)u->data % 64 == 0); /* data starts 64-aligned */
        qp_tensor_free(t);
        qp_tensor_free(u);
        free(path);
    }
}

QP_TEST(npy_scalar_and_empty)
{
    struct qp_error err;
    struct qp_tensor *t, *u;
    REQUIRE_OK(qp_tensor_new("s", QP_DTYPE_F64, 0, NULL, &t, &err), &err);
    *(double *)t->data = -2.5;
    char *path = qp_test_path(ctx, "s.npy");
    REQUIRE_OK(qp_fmt_npy_save(path, t, &err), &err);
    REQUIRE_OK(qp_fmt_npy_load(path, "s", false, &u, &err), &err);
    CHECK_INT(u->ndim, 0);
    CHECK_NEAR(*(double *)u->data, -2.5, 0);
    qp_tensor_free(t);
    qp_tensor_free(u);
    int64_t z[2] = {0, 4};
    REQUIRE_OK(qp_tensor_new("e", QP_DTYPE_F32, 2, z, &t, &err), &err);
    REQUIRE_OK(qp_fmt_npy_save(path, t, &err), &err);
    REQUIRE_OK(qp_fmt_npy_load(path, "e", false, &u, &err), &err);
    CHECK_INT(u->shape[0], 0);
    CHECK_INT(u->shape[1], 4);
    CHECK_INT(qp_tensor_numel(u), 0);
    qp_tensor_free(t);
    qp_tensor_free(u);
    free(path);
}

QP_TEST(npy_big_endian_fortran_and_v2)
{
    struct qp_error err;
    uint8_t buf[512];
    struct qp_tensor *t;
    /* big-endian int16 [2,2] = {1, 2, 3, 4} */
    const uint8_t be[8] = {0, 1, 0, 2, 0, 3, 0, 4};
    size_t n = make_npy(buf, "{'descr': '>i2', 'fortran_order': False, 'shape': (2, 2), }",
                        be, 8, 1);
    REQUIRE_OK(qp_fmt_npy_parse("be", buf, n, "x", NULL, false, &t, &err), &err);
    const int16_t *v = t->data;
    CHECK(v[0] == 1 && v[1] == 2 && v[2] == 3 && v[3] == 4);
    qp_tensor_free(t);
    /* Fortran order [2,3]: memory holds columns: a[0,0] a[1,0] a[0,1] ... */
    const float col[6] = {0, 3, 1, 4, 2, 5};
    n = make_npy(buf, "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }",
                 col, sizeof col, 2);
    REQUIRE_OK(qp_fmt_npy_parse("f", buf, n, "x", NULL, false, &t, &err), &err);
    CHECK(t->shape[0] == 2 && t->shape[1] == 3);
    const float *f = t->data;
    for (int i = 0; i < 6; i++)
        CHECK_NEAR(f[i], i, 0);
    qp_tensor_free(t);
    /* shape "(5,)" one-element tuple, python-2 style long */
    const uint8_t bytes[5] = {1, 2, 3, 4, 5};
    n = make_npy(buf, "{'shape': (5L,), 'descr': '|u1', 'fortran_order': False}",
                 bytes, 5, 3);
    REQUIRE_OK(qp_fmt_npy_parse("v3", buf, n, "x", NULL, false, &t, &err), &err);
    CHECK_INT(t->shape[0], 5);
    CHECK_INT(((uint8_t *)t->data)[4], 5);
    qp_tensor_free(t);
}

QP_TEST(npy_rejects_malformed_files)
{
    struct qp_error err;
    uint8_t buf[512];
    struct qp_tensor *t = NULL;
    const float d[4] = {1, 2, 3, 4};
    const char *ok = "{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }";
    size_t n = make_npy(buf, ok, d, sizeof d, 1);
    CHECK_OK(qp_fmt_npy_parse("ok", buf, n, "x", NULL, false, &t, &err), &err);
    qp_tensor_free(t);
    /* truncated data */
    CHECK_FAILS(qp_fmt_npy_parse("trunc.npy", buf, n - 1, "x", NULL, false, &t, &err),
                QP_E_FORMAT, &err, "'trunc.npy': npy data needs 16 bytes");
    /* truncated inside the header */
    CHECK_FAILS(qp_fmt_npy_parse("h.npy", buf, 30, "x", NULL, false, &t, &err),
                QP_E_FORMAT, &err, "header length");
    /* header length beyond the file */
    uint8_t bad[512];
    memcpy(bad, buf, n);
    bad[8] = 0xff;
    bad[9] = 0x7f;
    CHECK_FAILS(qp_fmt_npy_parse("hl.npy", bad, n, "x", NULL, false, &t, &err),
                QP_E_FORMAT, &err, "exceeds the file");
    /* bad magic */
    memcpy(bad, buf, n);
    bad[1] = 'X';
    CHECK_FAILS(qp_fmt_npy_parse("m.npy", bad, n, "x", NULL, false, &t, &err),
                QP_E_FORMAT, &err, "bad magic");
    /* trailing bytes: dtype/shape byte count disagrees with the file */
    memcpy(bad, buf, n);
    bad[n] = 0;
    CHECK_FAILS(qp_fmt_npy_parse("tr.npy", bad, n + 1, "x", NULL, false, &t, &err),
                QP_E_FORMAT, &err, "trailing");
    /* unknown descr, structured descr, missing key, negative dim, bad version */
    n = make_npy(buf, "{'descr': '<c8', 'fortran_order': False, 'shape': (2,), }", d, 16, 1);
    CHECK_FAILS(qp_fmt_npy_parse("c.npy", buf, n, "x", NULL, false, &t, &err),
                QP_E_UNSUPPORTED, &err, "'<c8'");
    n = make_npy(buf, "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }", d, 8, 1);
    CHECK_FAILS(qp_fmt_npy_parse("s.npy", buf, n, "x", NULL, false, &t, &err),
                QP_E_FORMAT, &err, "structured");
    n = make_npy(buf, "{'descr': '<f4', 'shape': (4,), }", d, 16, 1);
    CHECK_FAILS(qp_fmt_npy_parse("k.npy", buf, n, "x", NULL, false, &t, &err),
                QP_E_FORMAT, &err, "required");
    n = make_npy(buf, "{'descr': '<f4', 'fortran_order': False, 'shape': (-4,), }", d, 16, 1);
    CHECK_FAILS(qp_fmt_npy_parse("n.npy", buf, n, "x", NULL, false, &t, &err),
                QP_E_FORMAT, &err, "non-negative");
    n = make_npy(buf, ok, d, 16, 1);
    buf[6] = 4;
    CHECK_FAILS(qp_fmt_npy_parse("v.npy", buf, n, "x", NULL, false, &t, &err),
                QP_E_UNSUPPORTED, &err, "version 4");
    n = make_npy(buf, "{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296, 4), }", d, 16, 1);
    CHECK_FAILS(qp_fmt_npy_parse("o.npy", buf, n, "x", NULL, false, &t, &err),
                QP_E_OVERFLOW, &err, "overflows");
    CHECK(t == NULL);
    CHECK_FAILS(qp_fmt_npy_load("/nonexistent.npy", NULL, false, &t, &err),
                QP_E_IO, &err, "'/nonexistent.npy'");
}

QP_TEST(npy_writer_refuses_types_numpy_lacks)
{
    struct qp_error err;
    struct qp_tensor *t;
    int64_t s[1] = {4};
    REQUIRE_OK(qp_tensor_new("w", QP_DTYPE_BF16, 1, s, &t, &err), &err);
    char *path = qp_test_path(ctx, "bf.npy");
    CHECK_FAILS(qp_fmt_npy_save(path, t, &err), QP_E_UNSUPPORTED, &err, "bf16");
    CHECK(access(path, F_OK) != 0); /* no partial output */
    qp_tensor_free(t);
    free(path);
}

QP_TEST(npy_dir_dump_roundtrip_with_names_order_and_qparams)
{
    struct qp_error err;
    char *dir = qp_test_path(ctx, "dump");
    struct qp_dump_writer *w;
    REQUIRE_OK(qp_dump_writer_open(dir, QP_DUMP_AUTO, &w, &err), &err);
    CHECK_INT(w->format, QP_DUMP_NPY_DIR);
    const char *names[3] = {"zeta/conv:0", "alpha", ".hidden name"};
    for (int i = 0; i < 3; i++) {
        struct qp_tensor *t;
        int64_t shape[2] = {2, 3};
        REQUIRE_OK(qp_tensor_new(names[i], i == 1 ? QP_DTYPE_I8 : QP_DTYPE_F32,
                                 2, shape, &t, &err), &err);
        if (i == 1) {
            int8_t *q = t->data;
            for (int k = 0; k < 6; k++)
                q[k] = (int8_t)(k * 10 - 20);
            float sc[2] = {0.5f, 0.125f};
            int32_t zp[2] = {1, -3};
            REQUIRE_OK(qp_tensor_set_qparams(t, 2, sc, zp, 0, 0, &err), &err);
        } else {
            float *f = t->data;
            for (int k = 0; k < 6; k++)
                f[k] = (float)(i * 100 + k);
        }
        CHECK_OK(qp_dump_writer_add(w, t, &err), &err);
        if (i == 0)
            CHECK_FAILS(qp_dump_writer_add(w, t, &err), QP_E_INVAL, &err, "twice");
        qp_tensor_free(t);
    }
    CHECK(!qp_is_dir(dir)); /* not there before commit */
    REQUIRE_OK(qp_dump_writer_commit(w, &err), &err);
    char *f = qp_path_join(dir, "zeta%2Fconv%3A0.npy");
    CHECK(access(f, F_OK) == 0);
    free(f);

    struct qp_dump *d;
    REQUIRE_OK(qp_dump_open(dir, QP_DUMP_AUTO, &d, &err), &err);
    REQUIRE(qp_dump_count(d) == 3); /* companions hidden */
    for (int i = 0; i < 3; i++)
        CHECK_STR(qp_dump_entry(d, (size_t)i)->name, names[i]); /* added order */
    const struct qp_tensor *e = qp_dump_entry(d, 1);
    REQUIRE(e->qp != NULL);
    CHECK_INT(e->qp->axis, 0);
    struct qp_tensor *t;
    REQUIRE_OK(qp_dump_load(d, 1, &t, &err), &err);
    float out[6];
    qp_tensor_read_f32(t, 0, 6, out);
    CHECK_NEAR(out[0], 0.5 * (-20 - 1), 0);
    CHECK_NEAR(out[5], 0.125 * (30 + 3), 0);
    qp_tensor_free(t);
    REQUIRE_OK(qp_dump_load(d, 0, &t, &err), &err);
    CHECK_NEAR(((float *)t->data)[4], 4, 0);
    qp_tensor_free(t);
    qp_dump_close(d);
    free(dir);
}

QP_TEST(qparams_inference_from_scale_shapes)
{
    int axis;
    int64_t block;
    int64_t w[2] = {8, 64};
    int64_t s1[1] = {1}, s8[1] = {8}, s64[1] = {64}, sb[2] = {8, 2}, sc[2] = {1, 64};
    CHECK(qp_qparams_infer(2, w, 1, s1, &axis, &block) && axis == -1);
    CHECK(qp_qparams_infer(2, w, 1, s8, &axis, &block) && axis == 0 && block == 0);
    CHECK(qp_qparams_infer(2, w, 1, s64, &axis, &block) && axis == 1 && block == 0);
    CHECK(qp_qparams_infer(2, w, 2, sb, &axis, &block) && axis == 1 && block == 32);
    CHECK(qp_qparams_infer(2, w, 2, sc, &axis, &block) && axis == 1 && block == 0);
    int64_t w2[2] = {8, 10}, s3[2] = {8, 3}; /* 10 in blocks of 4: 3 blocks */
    CHECK(qp_qparams_infer(2, w2, 2, s3, &axis, &block) && axis == 1 && block == 4);
    int64_t s7[1] = {7};
    CHECK(!qp_qparams_infer(2, w, 1, s7, &axis, &block));
}

QP_TEST(dump_open_errors_name_the_path)
{
    struct qp_error err;
    struct qp_dump *d;
    char *unk = qp_test_path(ctx, "x.unknown");
    qp_test_write_file(unk, "x", 1);
    CHECK_FAILS(qp_dump_open(unk, QP_DUMP_AUTO, &d, &err),
                QP_E_UNSUPPORTED, &err, "x.unknown': unknown dump format");
    free(unk);
    CHECK_FAILS(qp_dump_open("x.unknown", QP_DUMP_AUTO, &d, &err), QP_E_IO,
                &err, "'x.unknown': cannot open: No such file or directory");
    CHECK_FAILS(qp_dump_open("/nonexistent.npy", QP_DUMP_AUTO, &d, &err),
                QP_E_IO, &err, "/nonexistent.npy");
    char *p = qp_test_path(ctx, "bad.npy");
    qp_test_write_file(p, "\x93NUMPY\x01\x00\xff\xff", 10);
    CHECK_FAILS(qp_dump_open(p, QP_DUMP_AUTO, &d, &err), QP_E_FORMAT, &err,
                "bad.npy");
    free(p);
}

QP_TEST(dump_writer_refuses_companion_name_collisions_both_ways)
{
    struct qp_error err;
    int64_t s[1] = {2};
    float sc = 0.5f;
    struct qp_tensor *q, *c;
    REQUIRE_OK(qp_tensor_new("q", QP_DTYPE_I8, 1, s, &q, &err), &err);
    REQUIRE_OK(qp_tensor_set_qparams(q, 1, &sc, NULL, -1, 0, &err), &err);
    REQUIRE_OK(qp_tensor_new("q.scale", QP_DTYPE_F32, 1, s, &c, &err), &err);
    char *dir = qp_test_path(ctx, "d");
    struct qp_dump_writer *w;
    /* the quantized tensor first, then a tensor named like its companion */
    REQUIRE_OK(qp_dump_writer_open(dir, QP_DUMP_NPY_DIR, &w, &err), &err);
    CHECK_OK(qp_dump_writer_add(w, q, &err), &err);
    CHECK_FAILS(qp_dump_writer_add(w, c, &err), QP_E_INVAL, &err,
                "'q.scale' is taken");
    qp_dump_writer_abort(w);
    /* the other order: the companion's name is already taken */
    REQUIRE_OK(qp_dump_writer_open(dir, QP_DUMP_NPY_DIR, &w, &err), &err);
    CHECK_OK(qp_dump_writer_add(w, c, &err), &err);
    CHECK_FAILS(qp_dump_writer_add(w, q, &err), QP_E_INVAL, &err,
                "tensor 'q' needs the name 'q.scale'");
    CHECK_INT(w->count, 1);
    qp_dump_writer_abort(w);
    CHECK(!qp_is_dir(dir));
    qp_tensor_free(q);
    qp_tensor_free(c);
    free(dir);
}

QP_TEST(dump_find_uses_the_name_index)
{
    struct qp_error err;
    char *dir = qp_test_path(ctx, "many");
    struct qp_dump_writer *w;
    REQUIRE_OK(qp_dump_writer_open(dir, QP_DUMP_NPY_DIR, &w, &err), &err);
    int64_t s[1] = {1};
    for (int i = 0; i < 300; i++) {
        char name[32];
        snprintf(name, sizeof name, "t%d", i);
        struct qp_tensor *t;
        REQUIRE_OK(qp_tensor_new(name, QP_DTYPE_F32, 1, s, &t, &err), &err);
        *(float *)t->data = (float)i;
        CHECK_OK(qp_dump_writer_add(w, t, &err), &err);
        qp_tensor_free(t);
    }
    REQUIRE_OK(qp_dump_writer_commit(w, &err), &err);
    struct qp_dump *d;
    REQUIRE_OK(qp_dump_open(dir, QP_DUMP_AUTO, &d, &err), &err);
    CHECK_INT(qp_dump_find(d, "t0"), 0);
    CHECK_INT(qp_dump_find(d, "t299"), 299);
    CHECK_INT(qp_dump_find(d, "t300"), -1);
    long i = qp_dump_find(d, "t123");
    REQUIRE(i == 123);
    struct qp_tensor *t;
    REQUIRE_OK(qp_dump_load(d, (size_t)i, &t, &err), &err);
    CHECK_NEAR(*(float *)t->data, 123, 0);
    qp_tensor_free(t);
    qp_dump_close(d);
    free(dir);
}
