/* Unit tests of dump metadata (formats/dump-meta.c) through every
 * container that stores it. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/fileio.h"
#include "formats/dump.h"
#include "tests/test.h"
#include "tests/unit/dump-test-util.h"

QP_TEST(dump_metadata_roundtrips_through_every_writable_container)
{
    struct qp_error err;
    static const struct {
        const char *path;
        enum qp_dump_format format;
    } outs[] = {
        {"m.safetensors", QP_DUMP_SAFETENSORS}, {"m.npz", QP_DUMP_NPZ},
        {"m.h5", QP_DUMP_HDF5},                 {"m-raw", QP_DUMP_RAW_DIR},
        {"m-npy", QP_DUMP_NPY_DIR},
    };
    const char *meta[] = {"scheme:layer.0", "w4g128@gptq",
                          "note", "quotes \" and\nnewline, ünïcode",
                          "empty", "",
                          "scheme:layer.0", "w8c", /* set twice: the last wins */
                          NULL};
    int64_t s[1] = {3};
    struct qp_tensor *t = dt_pattern_tensor("x", QP_DTYPE_F32, 1, s, 1);
    for (size_t i = 0; i < sizeof outs / sizeof outs[0]; i++) {
        char *path = qp_test_path(ctx, outs[i].path);
        REQUIRE(dt_write_dump(path, outs[i].format, &t, 1, meta, &err));
        struct qp_dump *d;
        REQUIRE_OK(qp_dump_open(path, QP_DUMP_AUTO, &d, &err), &err);
        CHECK_INT(d->format, outs[i].format);
        CHECK_INT(qp_dump_meta_count(d), 3);
        CHECK_STR(qp_dump_meta(d, "scheme:layer.0"), "w8c");
        CHECK_STR(qp_dump_meta(d, "note"), "quotes \" and\nnewline, ünïcode");
        CHECK_STR(qp_dump_meta(d, "empty"), "");
        const char *k, *v;
        qp_dump_meta_at(d, 0, &k, &v); /* the order they were first set in */
        CHECK_STR(k, "scheme:layer.0");
        qp_dump_meta_at(d, 2, &k, &v);
        CHECK_STR(k, "empty");
        CHECK_INT(qp_dump_count(d), 1);
        qp_dump_close(d);
        free(path);
    }
    qp_tensor_free(t);
}

QP_TEST(dump_metadata_file_of_npy_folders_is_validated)
{
    struct qp_error err;
    char *dir = qp_test_path(ctx, "npy");
    int64_t s[1] = {2};
    struct qp_tensor *t = dt_pattern_tensor("x", QP_DTYPE_I8, 1, s, 1);
    REQUIRE(dt_write_dump(dir, QP_DUMP_NPY_DIR, &t, 1, NULL, &err));
    char *f = qp_path_join(dir, ".qprobe-meta.json");
    CHECK(access(f, F_OK) != 0); /* written only when there is metadata */
    struct qp_dump *d;
    REQUIRE(qp_test_write_file(f, "{\"metadata\": {\"k\": [1]}}", 24));
    CHECK_FAILS(qp_dump_open(dir, QP_DUMP_AUTO, &d, &err), QP_E_FORMAT, &err,
                ".qprobe-meta.json': metadata value 'k' is a array, expected a string");
    REQUIRE(qp_test_write_file(f, "{\"meta", 6));
    CHECK_FAILS(qp_dump_open(dir, QP_DUMP_AUTO, &d, &err), QP_E_FORMAT, &err,
                ".qprobe-meta.json': invalid JSON");
    REQUIRE(qp_test_write_file(f, "{}", 2));
    CHECK_FAILS(qp_dump_open(dir, QP_DUMP_AUTO, &d, &err), QP_E_FORMAT, &err,
                ".qprobe-meta.json': no metadata object");
    free(f);
    qp_tensor_free(t);
    free(dir);
}
