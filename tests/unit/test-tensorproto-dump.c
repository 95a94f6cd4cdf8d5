/* Dumps of TensorProto .pb files (formats/dump-pb.c): single files and
 * directories, names and order, companions, atomic writers. */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "formats/dump.h"
#include "formats/tensorproto.h"
#include "tests/test.h"
#include "tests/unit/pbtest.h"

/* Writes an f32 [1] TensorProto holding v, named name (NULL: unnamed). */
static void write_scalar_pb(const char *path, const char *name, float v)
{
    struct pbe e = {0};
    int64_t one = 1;
    pbe_tensor_head(&e, &one, 1, 1, name);
    pbe_bytes(&e, 9, &v, 4);
    qp_test_write_file(path, e.p, e.n);
    free(e.p);
}

static float first_f32(struct qp_dump *d, size_t i, struct qp_error *err)
{
    struct qp_tensor *t;
    if (qp_dump_load(d, i, &t, err))
        return NAN;
    float v;
    qp_tensor_read_f32(t, 0, 1, &v);
    qp_tensor_free(t);
    return v;
}

QP_TEST(pb_dir_names_and_natural_order)
{
    struct qp_error err;
    const char *dir = qp_test_tmpdir(ctx);
    /* unnamed files in an order where plain strcmp would be wrong, one
     * named tensor, and a nested folder */
    static const struct {
        const char *file, *name;
        float v;
    } files[] = {
        {"input_10.pb", NULL, 10}, {"input_2.pb", NULL, 2},
        {"input_0.pb", NULL, 0},   {"input_1.pb", "named", 1},
        {"out%2Fx.pb", NULL, 7},
    };
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        char *p = qp_test_path(ctx, files[i].file);
        write_scalar_pb(p, files[i].name, files[i].v);
        free(p);
    }
    struct qp_dump *d;
    REQUIRE_OK(qp_dump_open(dir, QP_DUMP_AUTO, &d, &err), &err);
    CHECK_INT(d->format, QP_DUMP_PB_DIR);
    REQUIRE(qp_dump_count(d) == 5);
    static const char *const names[] = {"input_0", "named", "input_2",
                                        "input_10", "out/x"};
    static const float vals[] = {0, 1, 2, 10, 7};
    for (size_t i = 0; i < 5; i++) {
        CHECK_STR(qp_dump_entry(d, i)->name, names[i]);
        CHECK_NEAR(first_f32(d, i, &err), vals[i], 0);
    }
    qp_dump_close(d);
}

QP_TEST(pb_dump_of_an_onnx_test_data_set)
{
    struct qp_error err;
    struct qp_dump *d;
    REQUIRE_OK(qp_dump_open("/usr/share/libonnx-testdata/data/node/"
                            "test_quantizelinear/test_data_set_0",
                            QP_DUMP_AUTO, &d, &err), &err);
    CHECK_INT(d->format, QP_DUMP_PB_DIR);
    REQUIRE(qp_dump_count(d) == 4);
    CHECK_STR(qp_dump_entry(d, 0)->name, "x");
    CHECK_STR(qp_dump_entry(d, 1)->name, "y_scale");
    CHECK_STR(qp_dump_entry(d, 2)->name, "y_zero_point");
    CHECK_STR(qp_dump_entry(d, 3)->name, "y");
    CHECK_INT(qp_dump_entry(d, 3)->dtype, QP_DTYPE_U8);
    CHECK(qp_dump_entry(d, 3)->data == NULL); /* a listing */
    CHECK_NEAR(first_f32(d, 1, &err), 2.0, 0);
    qp_dump_close(d);
    /* a single .pb file is a one-tensor dump */
    REQUIRE_OK(qp_dump_open("/usr/share/libonnx-testdata/data/node/"
                            "test_quantizelinear/test_data_set_0/output_0.pb",
                            QP_DUMP_AUTO, &d, &err), &err);
    CHECK_INT(d->format, QP_DUMP_PB);
    REQUIRE(qp_dump_count(d) == 1);
    CHECK_STR(qp_dump_entry(d, 0)->name, "y");
    struct qp_tensor *t;
    REQUIRE_OK(qp_dump_load(d, 0, &t, &err), &err);
    CHECK(t->nbytes == 6 && ((uint8_t *)t->data)[2] == 130);
    qp_tensor_free(t);
    qp_dump_close(d);
}

QP_TEST(pb_dir_writer_roundtrip_with_companions)
{
    struct qp_error err;
    char *out = qp_test_path(ctx, "dump");
    struct qp_dump_writer *w;
    REQUIRE_OK(qp_dump_writer_open(out, QP_DUMP_PB_DIR, &w, &err), &err);
    struct qp_tensor *b, *a, *q;
    int64_t s2[2] = {2, 3}, s1 = 4;
    REQUIRE_OK(qp_tensor_new("b/out:0", QP_DTYPE_F32, 2, s2, &b, &err), &err);
    REQUIRE_OK(qp_tensor_new("a", QP_DTYPE_I64, 1, &s1, &a, &err), &err);
    REQUIRE_OK(qp_tensor_new("q", QP_DTYPE_I8, 2, s2, &q, &err), &err);
    for (int i = 0; i < 6; i++) {
        ((float *)b->data)[i] = (float)i - 2.5f;
        ((int8_t *)q->data)[i] = (int8_t)(i * 40 - 100);
    }
    ((int64_t *)a->data)[3] = -9;
    const float scale[2] = {0.5f, 0.25f};
    const int32_t zp[2] = {3, -4};
    REQUIRE_OK(qp_tensor_set_qparams(q, 2, scale, zp, 0, 0, &err), &err);
    CHECK_OK(qp_dump_writer_add(w, b, &err), &err);
    CHECK_OK(qp_dump_writer_add(w, a, &err), &err);
    CHECK_OK(qp_dump_writer_add(w, q, &err), &err);
    CHECK_FAILS(qp_dump_writer_add(w, a, &err), QP_E_INVAL, &err, "added twice");
    struct stat sb;
    CHECK(stat(out, &sb) != 0); /* nothing at the path before commit */
    REQUIRE_OK(qp_dump_writer_commit(w, &err), &err);

    struct qp_dump *d;
    REQUIRE_OK(qp_dump_open(out, QP_DUMP_AUTO, &d, &err), &err);
    CHECK_INT(d->format, QP_DUMP_PB_DIR);
    REQUIRE(qp_dump_count(d) == 3); /* companions hidden */
    CHECK_STR(qp_dump_entry(d, 0)->name, "b/out:0"); /* order of writing */
    CHECK_STR(qp_dump_entry(d, 1)->name, "a");
    CHECK_STR(qp_dump_entry(d, 2)->name, "q");
    struct qp_tensor *t;
    REQUIRE_OK(qp_dump_load(d, 2, &t, &err), &err);
    CHECK(!memcmp(t->data, q->data, 6));
    REQUIRE(t->qp != NULL);
    CHECK_INT(t->qp->axis, 0);
    CHECK(t->qp->scale[1] == 0.25f && t->qp->zero_point[1] == -4);
    float v;
    qp_tensor_read_f32(t, 3, 1, &v); /* row 1: (20 - (-4)) * 0.25 */
    CHECK_NEAR(v, 6.0, 0);
    qp_tensor_free(t);
    REQUIRE_OK(qp_dump_load(d, 0, &t, &err), &err);
    CHECK(!memcmp(t->data, b->data, 24));
    qp_tensor_free(t);
    REQUIRE_OK(qp_dump_load(d, 1, &t, &err), &err);
    CHECK(((int64_t *)t->data)[3] == -9);
    qp_tensor_free(t);
    qp_dump_close(d);

    /* an aborted writer leaves nothing; a single .pb holds one tensor */
    char *out2 = qp_test_path(ctx, "dump2");
    REQUIRE_OK(qp_dump_writer_open(out2, QP_DUMP_PB_DIR, &w, &err), &err);
    CHECK_OK(qp_dump_writer_add(w, b, &err), &err);
    qp_dump_writer_abort(w);
    CHECK(stat(out2, &sb) != 0);
    char *one = qp_test_path(ctx, "one.pb");
    REQUIRE_OK(qp_dump_writer_open(one, QP_DUMP_PB, &w, &err), &err);
    CHECK_OK(qp_dump_writer_add(w, b, &err), &err);
    CHECK_FAILS(qp_dump_writer_add(w, a, &err), QP_E_INVAL, &err,
                "a .pb file holds one tensor");
    qp_dump_writer_abort(w);
    CHECK(stat(one, &sb) != 0);
    REQUIRE_OK(qp_dump_writer_open(one, QP_DUMP_PB, &w, &err), &err);
    CHECK_FAILS(qp_dump_writer_add(w, q, &err), QP_E_UNSUPPORTED, &err,
                "cannot carry the quantization parameters of 'q'");
    qp_dump_writer_abort(w);
    REQUIRE_OK(qp_dump_writer_open(one, QP_DUMP_AUTO, &w, &err), &err);
    CHECK_INT(w->format, QP_DUMP_PB_DIR); /* .pb with AUTO: a directory */
    qp_dump_writer_abort(w);
    qp_tensor_free(a);
    qp_tensor_free(b);
    qp_tensor_free(q);
    free(out);
    free(out2);
    free(one);
}

QP_TEST(pb_dir_refuses_a_bad_file_naming_it)
{
    struct qp_error err;
    char *p = qp_test_path(ctx, "input_0.pb");
    write_scalar_pb(p, "x", 1);
    free(p);
    p = qp_test_path(ctx, "input_1.pb");
    qp_test_write_file(p, "\x08\x02\x10\x01\x4a\x10\x00", 7);
    struct qp_dump *d = NULL;
    CHECK_FAILS(qp_dump_open(qp_test_tmpdir(ctx), QP_DUMP_PB_DIR, &d, &err),
                QP_E_FORMAT, &err, "input_1.pb': not a valid TensorProto "
                "protobuf: field length beyond the end of its message at "
                "byte 5");
    CHECK(d == NULL);
    /* two files carrying the same tensor name */
    write_scalar_pb(p, "x", 2);
    CHECK_FAILS(qp_dump_open(qp_test_tmpdir(ctx), QP_DUMP_PB_DIR, &d, &err),
                QP_E_FORMAT, &err, "tensor name 'x' appears twice");
    free(p);
}
