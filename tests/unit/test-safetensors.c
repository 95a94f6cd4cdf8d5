/* Unit tests of formats/safetensors.c: round trips through the dump
 * writer and reader, hand-built files, sharded checkpoints, and one test
 * per malformed case the reader rejects. */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/fileio.h"
#include "formats/dump.h"
#include "formats/safetensors.h"
#include "tests/test.h"
#include "tests/unit/dump-test-util.h"

/* Writes 8-byte length + header + data to path. */
static bool write_st(const char *path, const char *header, const void *data,
                     size_t n)
{
    size_t h = strlen(header);
    unsigned char *buf = malloc(8 + h + n + 1);
    for (int i = 0; i < 8; i++)
        buf[i] = (unsigned char)((uint64_t)h >> (8 * i));
    memcpy(buf + 8, header, h);
    if (n)
        memcpy(buf + 8 + h, data, n);
    bool ok = qp_test_write_file(path, buf, 8 + h + n);
    free(buf);
    return ok;
}

QP_TEST(safetensors_roundtrip_every_dtype_bit_identical)
{
    struct qp_error err;
    char *path = qp_test_path(ctx, "all.safetensors");
    struct qp_tensor *src[DT_EVERY_DTYPE_MAX];
    size_t n = dt_every_dtype_set(src, "odd \"name\"/with:0\\ and\nnewline");
    REQUIRE(dt_write_dump(path, QP_DUMP_AUTO, src, n, NULL, &err));

    /* the file itself, checked without the reader's load path */
    char *bytes;
    size_t len;
    REQUIRE_OK(qp_read_file(path, (size_t)1 << 24, &bytes, &len, &err), &err);
    struct qp_st_header *h;
    REQUIRE_OK(qp_st_parse(path, bytes, len, &h, &err), &err);
    CHECK_INT(h->data_start % 8, 0);          /* padded like the reference */
    CHECK_INT(bytes[h->data_start - 1], ' '); /* with spaces */
    CHECK_INT(h->count, n);
    for (size_t i = 0; i < h->count; i++) { /* back to back, in add order */
        const struct qp_st_tensor *t = &h->tensors[i];
        CHECK_STR(t->desc->name, src[i]->name);
        CHECK_INT(t->begin, i ? h->tensors[i - 1].end : 0);
        bool packed = qp_dtype_is_packed(src[i]->dtype);
        CHECK_INT(t->desc->dtype, packed ? QP_DTYPE_U8 : src[i]->dtype);
        CHECK(t->end - t->begin == src[i]->nbytes &&
              !memcmp(bytes + h->data_start + t->begin, src[i]->data,
                      src[i]->nbytes));
    }
    CHECK_CONTAINS(bytes + 8, "\"dtype\":\"F8_E4M3\"");
    CHECK_CONTAINS(bytes + 8, "\"dtype\":\"BF16\"");
    CHECK_CONTAINS(bytes + 8, "\"dtype\":\"BOOL\"");
    qp_st_header_free(h);
    free(bytes);

    dt_check_dump(ctx, path, src, n);
    dt_free_all(src, n);
    free(path);
}

QP_TEST(safetensors_quantized_tensors_keep_axis_block_and_values)
{
    struct qp_error err;
    char *path = qp_test_path(ctx, "q.safetensors");
    struct qp_tensor *src[6];
    size_t n = dt_quantized_set(src);
    REQUIRE(dt_write_dump(path, QP_DUMP_SAFETENSORS, src, n, NULL, &err));
    dt_check_dump(ctx, path, src, n);
    /* companions are ordinary tensors in the file */
    char *bytes;
    size_t len;
    REQUIRE_OK(qp_read_file(path, (size_t)1 << 24, &bytes, &len, &err), &err);
    CHECK_CONTAINS(bytes + 8, "\"per_axis.scale\":{\"dtype\":\"F32\",\"shape\":[1,4]");
    /* zero points in the narrowest integer type holding them */
    CHECK_CONTAINS(bytes + 8, "\"per_tensor.zero_point\":{\"dtype\":\"I8\",\"shape\":[1]");
    free(bytes);
    dt_free_all(src, n);
    free(path);
}

QP_TEST(safetensors_metadata_roundtrip_and_reserved_key)
{
    struct qp_error err;
    char *path = qp_test_path(ctx, "m.safetensors");
    int64_t s[1] = {2};
    struct qp_tensor *t = dt_pattern_tensor("x", QP_DTYPE_F32, 1, s, 1);
    const char *meta[] = {"scheme:x", "w8c", "format", "pt", "empty", "", NULL};
    REQUIRE(dt_write_dump(path, QP_DUMP_SAFETENSORS, &t, 1, meta, &err));
    struct qp_dump *d;
    REQUIRE_OK(qp_dump_open(path, QP_DUMP_AUTO, &d, &err), &err);
    CHECK_INT(qp_dump_meta_count(d), 3);
    CHECK_STR(qp_dump_meta(d, "scheme:x"), "w8c");
    CHECK_STR(qp_dump_meta(d, "empty"), "");
    CHECK(qp_dump_meta(d, "missing") == NULL);
    const char *k, *v;
    qp_dump_meta_at(d, 1, &k, &v);
    CHECK_STR(k, "format");
    CHECK_STR(v, "pt");
    qp_dump_close(d);
    struct qp_dump_writer *w;
    REQUIRE_OK(qp_dump_writer_open(path, QP_DUMP_AUTO, &w, &err), &err);
    CHECK_FAILS(qp_dump_writer_set_meta(w, QP_DUMP_META_RESERVED, "x", &err),
                QP_E_INVAL, &err, "reserved");
    CHECK_FAILS(qp_dump_writer_set_meta(w, "", "x", &err), QP_E_INVAL, &err,
                "empty");
    qp_dump_writer_abort(w);
    qp_tensor_free(t);
    free(path);
}

QP_TEST(safetensors_reads_hand_built_file_with_misaligned_tensor)
{
    struct qp_error err;
    char *path = qp_test_path(ctx, "hand.safetensors");
    /* an I8 [3] then an F32 [2] starting at data byte 3 (misaligned), an
     * unused gap, HF-style metadata and the key order of another writer */
    unsigned char data[16] = {0xff, 2, 0x80};
    float f[2] = {1.5f, -0.25f};
    memcpy(data + 3, f, sizeof f);
    const char *hdr =
        "{\"b\":{\"data_offsets\":[3,11],\"shape\":[2],\"dtype\":\"F32\"},"
        "\"__metadata__\":{\"format\":\"pt\"},"
        "\"a\":{\"dtype\":\"I8\",\"shape\":[3],\"data_offsets\":[0,3]}}   ";
    REQUIRE(write_st(path, hdr, data, sizeof data));
    struct qp_dump *d;
    REQUIRE_OK(qp_dump_open(path, QP_DUMP_AUTO, &d, &err), &err);
    REQUIRE(qp_dump_count(d) == 2);
    CHECK_STR(qp_dump_entry(d, 0)->name, "a"); /* listed by offset */
    CHECK_STR(qp_dump_meta(d, "format"), "pt");
    struct qp_tensor *t;
    REQUIRE_OK(qp_dump_load(d, 1, &t, &err), &err);
    CHECK_STR(t->name, "b");
    CHECK((uintptr_t)t->data % 4 == 0); /* copied to aligned memory */
    CHECK_NEAR(((float *)t->data)[0], 1.5, 0);
    CHECK_NEAR(((float *)t->data)[1], -0.25, 0);
    qp_tensor_free(t);
    REQUIRE_OK(qp_dump_load(d, 0, &t, &err), &err);
    CHECK_INT(((int8_t *)t->data)[0], -1);
    CHECK_INT(((int8_t *)t->data)[2], -128);
    CHECK(t->map != NULL); /* borrowed from the mapping */
    qp_tensor_free(t);
    qp_dump_close(d);
    free(path);
}

/* Each malformed file is refused with its status and a message naming the
 * file and the problem. */
QP_TEST(safetensors_rejects_malformed_files)
{
    struct qp_error err;
    struct qp_dump *d;
    static const float data[4] = {1, 2, 3, 4};
    static const struct {
        const char *header;
        size_t ndata;
        enum qp_status status;
        const char *msg;
    } cases[] = {
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,12]}}", 16,
         QP_E_FORMAT, "tensor 'a': data_offsets [0,12] hold 12 bytes, F32 [2] needs 8"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}", 12,
         QP_E_FORMAT, "tensor 'a': data_offsets [0,16] exceed the data section (12 bytes)"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
         "\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,16]}}", 16,
         QP_E_FORMAT, "key \"a\" appears twice in the top-level object"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
         "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}", 16,
         QP_E_FORMAT, "tensors 'a' [0,8] and 'b' [4,12] overlap"},
        {"{\"a\": {\"dtype\": \"F32\", ", 16, QP_E_FORMAT,
         "header: invalid JSON at line 1"},
        {"[1, 2]", 16, QP_E_FORMAT, "header is not a JSON object"},
        {"{\"a\":{\"dtype\":\"F4\",\"shape\":[2],\"data_offsets\":[0,1]}}", 16,
         QP_E_UNSUPPORTED, "tensor 'a': dtype 'F4' is not supported"},
        {"{\"a\":{\"dtype\":7,\"shape\":[2],\"data_offsets\":[0,8]}}", 16,
         QP_E_FORMAT, "tensor 'a': dtype missing or not a string"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[-2],\"data_offsets\":[0,8]}}", 16,
         QP_E_FORMAT, "tensor 'a': shape[0] is not a non-negative integer"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1.5],\"data_offsets\":[0,8]}}", 16,
         QP_E_FORMAT, "tensor 'a': shape[0] is not a non-negative integer"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":\"2\",\"data_offsets\":[0,8]}}", 16,
         QP_E_FORMAT, "tensor 'a': shape is a string, expected an array"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1,1,2],"
         "\"data_offsets\":[0,8]}}", 16, QP_E_UNSUPPORTED, "has 9 dims"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,0]}}", 16,
         QP_E_FORMAT, "tensor 'a': data_offsets must be [begin, end]"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0]}}", 16,
         QP_E_FORMAT, "tensor 'a': data_offsets must be [begin, end]"},
        {"{\"a\":[1,2]}", 16, QP_E_FORMAT, "tensor 'a': entry is a array"},
        {"{\"__metadata__\":{\"k\":3}}", 0, QP_E_FORMAT,
         "__metadata__: metadata value 'k' is a number, expected a string"},
        {"{\"__metadata__\":[]}", 0, QP_E_FORMAT,
         "__metadata__: metadata is a array"},
        {"{\"__metadata__\":{},\"__metadata__\":{}}", 0, QP_E_FORMAT,
         "key \"__metadata__\" appears twice in the top-level object"},
        {"{\"__metadata__\":{\"k\":\"1\",\"k\":\"2\"}}", 0, QP_E_FORMAT,
         "key \"k\" appears twice in \"__metadata__\""},
        {"{\"__metadata__\":{\"__qprobe__\":\"{oops\"}}", 0, QP_E_FORMAT,
         "__metadata__ __qprobe__: invalid JSON"},
        {"{\"__metadata__\":{\"__qprobe__\":\"{\\\"tensors\\\":{\\\"w\\\":{\\\"axis\\\":0}}}\"}}",
         0, QP_E_FORMAT, "metadata describes tensor 'w', which is not in the file"},
        {"{\"__metadata__\":{\"__qprobe__\":\"{\\\"tensors\\\":{\\\"w\\\":{\\\"dtype\\\":"
         "\\\"i4\\\",\\\"shape\\\":[5]}}}\"},"
         "\"w\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,2]}}", 16,
         QP_E_FORMAT, "tensor 'w' should hold the 3 bytes of i4 [5] as a 1-D u8 "
         "tensor, it is u8 of 2 bytes"},
        {"{\"__metadata__\":{\"__qprobe__\":\"{\\\"tensors\\\":{\\\"w\\\":{\\\"axis\\\":0}}}\"},"
         "\"w\":{\"dtype\":\"I8\",\"shape\":[2],\"data_offsets\":[0,2]}}", 16,
         QP_E_FORMAT, "tensor 'w' has quantization metadata but no 'w.scale' tensor"},
        {"{\"__metadata__\":{\"__qprobe__\":\"{\\\"tensors\\\":{\\\"w\\\":{\\\"axis\\\":1,"
         "\\\"block_size\\\":1}}}\"},"
         "\"w\":{\"dtype\":\"I8\",\"shape\":[2,2],\"data_offsets\":[0,4]},"
         "\"w.scale\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", 16,
         QP_E_SHAPE, "tensor 'w': 1 scales given, axis 1 block 1 needs 4"},
        /* an I64 zero point of the bytes of 3.0f, 4.0f: outside int32, where
         * a cast to int32 is undefined */
        {"{\"w\":{\"dtype\":\"I8\",\"shape\":[2],\"data_offsets\":[0,2]},"
         "\"w.scale\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]},"
         "\"w.zero_point\":{\"dtype\":\"I64\",\"shape\":[1],\"data_offsets\":[8,16]}}",
         16, QP_E_FORMAT, "zero_point of 'w' holds 4.64771482e+18 at [0], outside int32"},
    };
    char *path = qp_test_path(ctx, "bad.safetensors");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        REQUIRE(write_st(path, cases[i].header, data, cases[i].ndata));
        CHECK_FAILS(qp_dump_open(path, QP_DUMP_AUTO, &d, &err), cases[i].status,
                    &err, cases[i].msg);
        CHECK_CONTAINS(err.msg, "bad.safetensors");
    }
    /* truncated before the length; length beyond the file; beyond the limit;
     * a NUL inside the header */
    REQUIRE(qp_test_write_file(path, "\x10\0\0", 3));
    CHECK_FAILS(qp_dump_open(path, QP_DUMP_AUTO, &d, &err), QP_E_FORMAT, &err,
                "bad.safetensors': truncated: 3 bytes");
    CHECK_CONTAINS(err.msg, "bad.safetensors");
    REQUIRE(qp_test_write_file(path, "\x40\0\0\0\0\0\0\0{}", 10));
    CHECK_FAILS(qp_dump_open(path, QP_DUMP_AUTO, &d, &err), QP_E_FORMAT, &err,
                "header length 64 exceeds the file (10 bytes)");
    REQUIRE(qp_test_write_file(path, "\0\0\0\0\x10\0\0\0{}", 10));
    CHECK_FAILS(qp_dump_open(path, QP_DUMP_AUTO, &d, &err), QP_E_FORMAT, &err,
                "header length 68719476736 exceeds the limit of 100000000 bytes");
    REQUIRE(qp_test_write_file(path, "\x04\0\0\0\0\0\0\0{\0}\n", 12));
    CHECK_FAILS(qp_dump_open(path, QP_DUMP_AUTO, &d, &err), QP_E_FORMAT, &err,
                "header holds a NUL byte");
    /* a real file cut inside its data */
    int64_t s[1] = {8};
    struct qp_tensor *t = dt_pattern_tensor("x", QP_DTYPE_F32, 1, s, 3);
    REQUIRE(dt_write_dump(path, QP_DUMP_SAFETENSORS, &t, 1, NULL, &err));
    char *bytes;
    size_t len;
    REQUIRE_OK(qp_read_file(path, 1 << 20, &bytes, &len, &err), &err);
    REQUIRE(qp_test_write_file(path, bytes, len - 1));
    CHECK_FAILS(qp_dump_open(path, QP_DUMP_AUTO, &d, &err), QP_E_FORMAT, &err,
                "exceed the data section (31 bytes)");
    free(bytes);
    qp_tensor_free(t);
    free(path);
}

/* Writes a shard with tensors "<prefix>0" and "<prefix>1". */
static bool write_shard(const char *path, const char *prefix, unsigned seed)
{
    struct qp_error err;
    struct qp_tensor *t[2];
    int64_t s[2] = {2, 3};
    for (int i = 0; i < 2; i++) {
        char name[32];
        snprintf(name, sizeof name, "%s%d", prefix, i);
        t[i] = dt_pattern_tensor(name, QP_DTYPE_F32, 2, s, seed + (unsigned)i);
    }
    bool ok = dt_write_dump(path, QP_DUMP_SAFETENSORS, t, 2, NULL, &err);
    qp_tensor_free(t[0]);
    qp_tensor_free(t[1]);
    return ok;
}

QP_TEST(safetensors_sharded_checkpoint_through_index_and_directory)
{
    struct qp_error err;
    const char *dir = qp_test_tmpdir(ctx);
    char *s1 = qp_test_path(ctx, "model-00001-of-00002.safetensors");
    char *s2 = qp_test_path(ctx, "model-00002-of-00002.safetensors");
    char *idx = qp_test_path(ctx, "model.safetensors.index.json");
    REQUIRE(write_shard(s2, "layers.1.w", 20)); /* written first on purpose */
    REQUIRE(write_shard(s1, "layers.0.w", 10));
    const char *index =
        "{\"metadata\": {\"total_size\": 96}, \"weight_map\": {"
        "\"layers.0.w0\": \"model-00001-of-00002.safetensors\","
        "\"layers.0.w1\": \"model-00001-of-00002.safetensors\","
        "\"layers.1.w0\": \"model-00002-of-00002.safetensors\","
        "\"layers.1.w1\": \"model-00002-of-00002.safetensors\"}}";
    REQUIRE(qp_test_write_file(idx, index, strlen(index)));
    const char *paths[2] = {idx, dir};
    for (int p = 0; p < 2; p++) {
        struct qp_dump *d;
        REQUIRE_OK(qp_dump_open(paths[p], QP_DUMP_AUTO, &d, &err), &err);
        CHECK_INT(d->format, QP_DUMP_SAFETENSORS);
        REQUIRE(qp_dump_count(d) == 4);
        static const char *names[4] = {"layers.0.w0", "layers.0.w1", "layers.1.w0",
                                       "layers.1.w1"};
        static const unsigned seeds[4] = {10, 11, 20, 21};
        for (size_t i = 0; i < 4; i++) {
            CHECK_STR(qp_dump_entry(d, i)->name, names[i]);
            struct qp_tensor *t;
            REQUIRE_OK(qp_dump_load(d, i, &t, &err), &err);
            int64_t s[2] = {2, 3};
            struct qp_tensor *want = dt_pattern_tensor("", QP_DTYPE_F32, 2, s,
                                                       seeds[i]);
            CHECK(!memcmp(t->data, want->data, 24));
            qp_tensor_free(want);
            qp_tensor_free(t);
        }
        qp_dump_close(d);
    }
    /* malformed indexes and shards */
    static const struct {
        const char *index;
        enum qp_status status;
        const char *msg;
    } bad[] = {
        {"{\"weight_map\": [1]}", QP_E_FORMAT, "weight_map is missing or not an object"},
        {"{\"weight_map\": {\"a\": 3}}", QP_E_FORMAT,
         "weight_map['a'] is a number, expected a shard file name"},
        {"{\"weight_map\": {\"a\": \"../x.safetensors\"}}", QP_E_FORMAT,
         "shard '../x.safetensors' is not a path inside the index's directory"},
        {"{\"weight_map\": {}}", QP_E_FORMAT, "weight_map is empty"},
        {"{\"weight_map\": {\"a\": \"missing.safetensors\"}}", QP_E_IO,
         "missing.safetensors': cannot open"},
        {"{\"weight_map\": {\"layers.0.w0\": \"model-00002-of-00002.safetensors\","
         "\"layers.1.w0\": \"model-00001-of-00002.safetensors\"}}", QP_E_FORMAT,
         "weight_map puts tensor 'layers.0.w0' in 'model-00002-of-00002.safetensors', "
         "which does not hold it"},
        {"{\"weight_map\": {\"layers.0.w0\": ", QP_E_FORMAT, "invalid JSON"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        REQUIRE(qp_test_write_file(idx, bad[i].index, strlen(bad[i].index)));
        struct qp_dump *d;
        CHECK_FAILS(qp_dump_open(idx, QP_DUMP_AUTO, &d, &err), bad[i].status, &err,
                    bad[i].msg);
        CHECK_CONTAINS(err.msg, "model");
    }
    /* the same tensor in two shards */
    REQUIRE(write_shard(s2, "layers.0.w", 30));
    REQUIRE(qp_test_write_file(idx, index, strlen(index)));
    struct qp_dump *d;
    CHECK_FAILS(qp_dump_open(idx, QP_DUMP_AUTO, &d, &err), QP_E_FORMAT, &err,
                "model-00001-of-00002.safetensors' and '");
    CHECK_CONTAINS(err.msg, "both hold tensor 'layers.0.w0'");
    free(s1);
    free(s2);
    free(idx);
}

QP_TEST(safetensors_writer_leaves_nothing_behind)
{
    struct qp_error err;
    const char *dir = qp_test_tmpdir(ctx);
    char *path = qp_test_path(ctx, "out.safetensors");
    int64_t s[1] = {1000};
    struct qp_tensor *t = dt_pattern_tensor("x", QP_DTYPE_F32, 1, s, 5);
    struct qp_dump_writer *w;
    REQUIRE_OK(qp_dump_writer_open(path, QP_DUMP_AUTO, &w, &err), &err);
    REQUIRE_OK(qp_dump_writer_add(w, t, &err), &err);
    CHECK_INT(dt_count_files(dir), 1); /* the output's temporary only */
    qp_dump_writer_abort(w);
    CHECK_INT(dt_count_files(dir), 0);
    /* a companion name colliding with a tensor is refused when added */
    int64_t s2[1] = {2};
    struct qp_tensor *q = dt_pattern_tensor("q", QP_DTYPE_I8, 1, s2, 1);
    float sc = 0.5f;
    REQUIRE_OK(qp_tensor_set_qparams(q, 1, &sc, NULL, -1, 0, &err), &err);
    struct qp_tensor *c = dt_pattern_tensor("q.scale", QP_DTYPE_F32, 1, s2, 1);
    REQUIRE_OK(qp_dump_writer_open(path, QP_DUMP_AUTO, &w, &err), &err);
    REQUIRE_OK(qp_dump_writer_add(w, q, &err), &err);
    CHECK_FAILS(qp_dump_writer_add(w, c, &err), QP_E_INVAL, &err,
                "tensor name 'q.scale' is taken");
    qp_dump_writer_abort(w);
    CHECK_INT(dt_count_files(dir), 0);
    qp_tensor_free(q);
    qp_tensor_free(c);
    qp_tensor_free(t);
    free(path);
}
