/* Unit tests of the streaming safetensors writer (qp_st_stream_*,
 * formats/safetensors.h): declared tensors written in pieces that straddle
 * tensor boundaries and read back through the header parser, and each
 * misuse it refuses. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/fileio.h"
#include "formats/safetensors.h"
#include "tests/test.h"
#include "tests/unit/dump-test-util.h"

static void make_descs(struct qp_tensor **t, const char *second)
{
    int64_t s0[2] = {3, 5}, s1[1] = {4};
    struct qp_error err;
    qp_tensor_new_desc("w", QP_DTYPE_BF16, 2, s0, &t[0], &err);
    qp_tensor_new_desc(second, QP_DTYPE_I32, 1, s1, &t[1], &err);
}

QP_TEST(st_stream_writes_declared_tensors_in_pieces)
{
    struct qp_error err;
    char *path = qp_test_path(ctx, "s.safetensors");
    struct qp_tensor *t[2];
    make_descs(t, "idx");
    struct qp_dump_meta meta = {0};
    REQUIRE_OK(qp_dump_meta_set(&meta, "format", "pt", &err), &err);
    struct qp_st_stream *s;
    REQUIRE_OK(qp_st_stream_open(path, t, 2, &meta, &s, &err), &err);
    CHECK(access(path, F_OK) != 0); /* nothing visible before commit */
    unsigned char data[46];
    for (int i = 0; i < 46; i++)
        data[i] = (unsigned char)(3 * i + 1);
    /* pieces that straddle the boundary between the tensors (30 bytes) */
    CHECK_OK(qp_st_stream_write(s, data, 7, &err), &err);
    CHECK_OK(qp_st_stream_write(s, data + 7, 29, &err), &err);
    CHECK_FAILS(qp_st_stream_write(s, data + 36, 11, &err), QP_E_INVAL, &err,
                "1 bytes more than the 46 declared");
    CHECK_OK(qp_st_stream_write(s, data + 36, 10, &err), &err);
    REQUIRE_OK(qp_st_stream_commit(s, &err), &err);
    qp_dump_meta_release(&meta);

    char *bytes;
    size_t len;
    REQUIRE_OK(qp_read_file(path, 1 << 20, &bytes, &len, &err), &err);
    struct qp_st_header *h;
    REQUIRE_OK(qp_st_parse(path, bytes, len, &h, &err), &err);
    CHECK_INT(h->count, 2);
    CHECK_INT(h->data_start % 8, 0);
    CHECK_STR(h->tensors[0].desc->name, "w");
    CHECK_INT(h->tensors[0].desc->dtype, QP_DTYPE_BF16);
    CHECK_INT(h->tensors[1].begin, 30);
    CHECK_INT(h->tensors[1].desc->dtype, QP_DTYPE_I32);
    CHECK_INT(len, h->data_start + 46);
    CHECK(!memcmp(bytes + h->data_start, data, 46));
    CHECK_STR(qp_dump_meta_get(&h->meta, "format"), "pt");
    qp_st_header_free(h);
    free(bytes);
    dt_free_all(t, 2);
    free(path);
}

QP_TEST(st_stream_refuses_short_data_duplicates_and_packed_types)
{
    struct qp_error err;
    char *path = qp_test_path(ctx, "s.safetensors");
    struct qp_tensor *t[2];
    make_descs(t, "idx");
    struct qp_st_stream *s;
    REQUIRE_OK(qp_st_stream_open(path, t, 2, NULL, &s, &err), &err);
    unsigned char zero[32] = {0};
    CHECK_OK(qp_st_stream_write(s, zero, 32, &err), &err);
    CHECK_FAILS(qp_st_stream_commit(s, &err), QP_E_INVAL, &err,
                "32 of 46 data bytes written (tensor 'idx' is incomplete)");
    CHECK(access(path, F_OK) != 0);
    dt_free_all(t, 2);

    make_descs(t, "w");
    CHECK_FAILS(qp_st_stream_open(path, t, 2, NULL, &s, &err), QP_E_INVAL, &err,
                "tensor name 'w' is used twice");
    dt_free_all(t, 2);
    int64_t shape[1] = {8};
    REQUIRE_OK(qp_tensor_new_desc("q", QP_DTYPE_I4, 1, shape, &t[0], &err), &err);
    CHECK_FAILS(qp_st_stream_open(path, t, 1, NULL, &s, &err), QP_E_UNSUPPORTED, &err,
                "tensor 'q': dtype i4 cannot be streamed");
    qp_tensor_free(t[0]);
    CHECK_INT(dt_count_files(qp_test_tmpdir(ctx)), 0);
    free(path);
}
