/* Unit tests of formats/tensorproto.c: TensorProto .pb files, crafted byte
 * by byte with tests/unit/pbtest.h, every data type through raw_data and
 * through the typed fields, external data, every refusal, the writer. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/fileio.h"

#include "core/half.h"
#include "formats/tensorproto.h"
#include "tests/test.h"
#include "tests/unit/pbtest.h"

enum { F_DIMS = 1, F_TYPE = 2, F_SEGMENT = 3, F_FLOAT = 4, F_INT32 = 5,
       F_STRING = 6, F_INT64 = 7, F_NAME = 8, F_RAW = 9, F_DOUBLE = 10,
       F_UINT64 = 11, F_EXTERNAL = 13, F_LOCATION = 14 };

static enum qp_status parse(const struct pbe *e, struct qp_tensor **t,
                            struct qp_error *err)
{
    return qp_fmt_pb_parse("t.pb", e->p, e->n, NULL, NULL, "fallback", false,
                           t, err);
}

/* A tensor [n] of the given type with raw bytes. */
static struct pbe raw_tensor(int type, int64_t n, const void *bytes,
                             size_t len)
{
    struct pbe e = {0};
    pbe_tensor_head(&e, &n, 1, type, "x");
    pbe_bytes(&e, F_RAW, bytes, len);
    return e;
}

QP_TEST(tensorproto_raw_data_every_type)
{
    struct qp_error err;
    struct qp_tensor *t;
    /* FLOAT [2,2] named "w" */
    const float f[4] = {1.5f, -2.0f, 0.0f, 3e38f};
    struct pbe e = {0};
    int64_t dims[2] = {2, 2};
    pbe_tensor_head(&e, dims, 2, 1, "w");
    pbe_bytes(&e, F_RAW, f, sizeof f);
    REQUIRE_OK(parse(&e, &t, &err), &err);
    CHECK_STR(t->name, "w");
    CHECK_INT(t->dtype, QP_DTYPE_F32);
    CHECK(t->ndim == 2 && t->shape[0] == 2 && t->shape[1] == 2);
    CHECK(t->nbytes == 16 && !memcmp(t->data, f, 16));
    CHECK(t->owns_data); /* not from a mapping: copied */
    qp_tensor_free(t);
    free(e.p);

    /* each type: ONNX code, expected dtype, bytes, values as f32 */
    static const struct {
        int type;
        enum qp_dtype dt;
        int64_t n;
        uint8_t bytes[16];
        size_t len;
        float want[4];
    } cases[] = {
        {2, QP_DTYPE_U8, 3, {0, 200, 255}, 3, {0, 200, 255}},
        {3, QP_DTYPE_I8, 3, {0x80, 0x7f, 0xff}, 3, {-128, 127, -1}},
        {4, QP_DTYPE_U16, 2, {0xff, 0xff, 0x01, 0x02}, 4, {65535, 513}},
        {5, QP_DTYPE_I16, 2, {0x00, 0x80, 0xfe, 0xff}, 4, {-32768, -2}},
        {6, QP_DTYPE_I32, 2, {0xf9, 0xff, 0xff, 0xff, 0x10, 0x27, 0, 0}, 8,
         {-7, 10000}},
        {7, QP_DTYPE_I64, 1, {0xfb, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff},
         8, {-5}},
        {9, QP_DTYPE_BOOL, 3, {0, 1, 1}, 3, {0, 1, 1}},
        {10, QP_DTYPE_F16, 2, {0x00, 0x3c, 0x00, 0xc0}, 4, {1.0f, -2.0f}},
        {11, QP_DTYPE_F64, 1, {0, 0, 0, 0, 0, 0, 0xf8, 0x3f}, 8, {1.5f}},
        {12, QP_DTYPE_U32, 1, {0x00, 0x28, 0x6b, 0xee}, 4, {4000000000.0f}},
        {13, QP_DTYPE_U64, 1, {1, 0, 0, 0, 0, 0, 0, 0}, 8, {1}},
        {16, QP_DTYPE_BF16, 2, {0x80, 0x3f, 0x49, 0x40}, 4, {1.0f, 3.140625f}},
        {17, QP_DTYPE_F8E4M3, 2, {0x38, 0x7e}, 2, {1.0f, 448.0f}},
        {19, QP_DTYPE_F8E5M2, 2, {0x3c, 0xc0}, 2, {1.0f, -2.0f}},
        /* INT4 [-8, 7, -1]: low nibble first, last high nibble padding */
        {22, QP_DTYPE_I4, 3, {0x78, 0x0f}, 2, {-8, 7, -1}},
        {21, QP_DTYPE_U4, 3, {0xf1, 0x09}, 2, {1, 15, 9}},
        /* INT2 [-2, 1, -1, 0]: bits 0-1 first */
        {26, QP_DTYPE_I2, 4, {0x36}, 1, {-2, 1, -1, 0}},
        {25, QP_DTYPE_U2, 4, {0xe4}, 1, {0, 1, 2, 3}},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        e = raw_tensor(cases[k].type, cases[k].n, cases[k].bytes, cases[k].len);
        REQUIRE_OK(parse(&e, &t, &err), &err);
        CHECK_INT(t->dtype, cases[k].dt);
        CHECK_INT(t->shape[0], cases[k].n);
        CHECK(t->nbytes == cases[k].len &&
              !memcmp(t->data, cases[k].bytes, cases[k].len));
        float v[4];
        qp_tensor_read_f32(t, 0, (size_t)cases[k].n, v);
        for (int i = 0; i < cases[k].n; i++)
            if (v[i] != cases[k].want[i])
                qp_test_failf(ctx, __FILE__, __LINE__,
                              "type %d element %d: %g, expected %g",
                              cases[k].type, i, v[i], cases[k].want[i]);
        qp_tensor_free(t);
        free(e.p);
    }
    /* bool bytes other than 0/1 read as true */
    e = raw_tensor(9, 2, "\x00\x07", 2);
    REQUIRE_OK(parse(&e, &t, &err), &err);
    CHECK(((uint8_t *)t->data)[0] == 0 && ((uint8_t *)t->data)[1] == 1);
    qp_tensor_free(t);
    free(e.p);
}

QP_TEST(tensorproto_typed_fields_every_type)
{
    struct qp_error err;
    struct qp_tensor *t;
    struct pbe e = {0};
    int64_t n3 = 3;
    /* float_data */
    const float f[3] = {1.0f, 2.5f, -3.0f};
    pbe_tensor_head(&e, &n3, 1, 1, "f");
    pbe_packed_fixed(&e, F_FLOAT, f, 3, 4);
    REQUIRE_OK(parse(&e, &t, &err), &err);
    CHECK(!memcmp(t->data, f, sizeof f));
    qp_tensor_free(t);
    free(e.p);
    e = (struct pbe){0};
    /* double_data */
    const double d[3] = {0.1, -1e300, 2.0};
    pbe_tensor_head(&e, &n3, 1, 11, "d");
    pbe_packed_fixed(&e, F_DOUBLE, d, 3, 8);
    REQUIRE_OK(parse(&e, &t, &err), &err);
    CHECK(!memcmp(t->data, d, sizeof d));
    qp_tensor_free(t);
    free(e.p);
    e = (struct pbe){0};
    /* int64_data, with negative values (10-byte varints) */
    const int64_t l[3] = {-5, (int64_t)1 << 40, INT64_MIN};
    pbe_tensor_head(&e, &n3, 1, 7, "l");
    pbe_packed_varint(&e, F_INT64, l, 3);
    REQUIRE_OK(parse(&e, &t, &err), &err);
    CHECK(!memcmp(t->data, l, sizeof l));
    qp_tensor_free(t);
    free(e.p);

    /* int32_data carries the narrow types one per element, 4-/2-bit types
     * as packed bytes; uint64_data carries uint32 and uint64 */
    static const struct {
        int type, field;
        int64_t n;
        int64_t vals[4];
        size_t nvals;
        uint8_t bytes[16];
        size_t len;
    } cases[] = {
        {3, F_INT32, 3, {-128, 127, 5}, 3, {0x80, 0x7f, 0x05}, 3},
        {2, F_INT32, 2, {0, 255}, 2, {0x00, 0xff}, 2},
        {5, F_INT32, 2, {-32768, 32767}, 2, {0x00, 0x80, 0xff, 0x7f}, 4},
        {4, F_INT32, 1, {65535}, 1, {0xff, 0xff}, 2},
        {6, F_INT32, 2, {-7, INT32_MAX}, 2, {0xf9, 0xff, 0xff, 0xff, 0xff,
                                            0xff, 0xff, 0x7f}, 8},
        {9, F_INT32, 3, {0, 1, 7}, 3, {0, 1, 1}, 3},
        {10, F_INT32, 2, {0x3c00, 0xc000}, 2, {0x00, 0x3c, 0x00, 0xc0}, 4},
        {10, F_INT32, 1, {-16384}, 1, {0x00, 0xc0}, 2}, /* sign-extended */
        {16, F_INT32, 1, {0x3f80}, 1, {0x80, 0x3f}, 2},
        {17, F_INT32, 2, {0x38, 0x7e}, 2, {0x38, 0x7e}, 2},
        {19, F_INT32, 1, {0xc0}, 1, {0xc0}, 1},
        {22, F_INT32, 3, {0x78, 0x0f}, 2, {0x78, 0x0f}, 2},
        {21, F_INT32, 4, {0xf1, 0x29}, 2, {0xf1, 0x29}, 2},
        {26, F_INT32, 5, {0x36, 0x01}, 2, {0x36, 0x01}, 2},
        {12, F_UINT64, 1, {4000000000}, 1, {0x00, 0x28, 0x6b, 0xee}, 4},
        {13, F_UINT64, 1, {-1}, 1, {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
                                    0xff}, 8},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        e = (struct pbe){0};
        pbe_tensor_head(&e, &cases[k].n, 1, cases[k].type, "v");
        pbe_packed_varint(&e, (unsigned)cases[k].field, cases[k].vals,
                          cases[k].nvals);
        REQUIRE_OK(parse(&e, &t, &err), &err);
        if (t->nbytes != cases[k].len ||
            memcmp(t->data, cases[k].bytes, cases[k].len))
            qp_test_failf(ctx, __FILE__, __LINE__, "case %zu (type %d): "
                          "wrong bytes", k, cases[k].type);
        qp_tensor_free(t);
        free(e.p);
    }
    /* packed int4 values decode as the elements they hold */
    e = (struct pbe){0};
    int64_t n5 = 5, packed[3] = {0x9f, 0x70, 0x08};
    pbe_tensor_head(&e, &n5, 1, 22, "q");
    pbe_packed_varint(&e, F_INT32, packed, 3);
    REQUIRE_OK(parse(&e, &t, &err), &err);
    static const int32_t q[5] = {-1, -7, 0, 7, -8};
    for (int i = 0; i < 5; i++)
        CHECK_INT(qp_packed_get(QP_DTYPE_I4, t->data, (size_t)i), q[i]);
    qp_tensor_free(t);
    free(e.p);
}

QP_TEST(tensorproto_scalar_empty_and_names)
{
    struct qp_error err;
    struct qp_tensor *t;
    /* scalar: no dims, one value */
    struct pbe e = {0};
    pbe_int(&e, F_TYPE, 1);
    const float one = 42.0f;
    pbe_bytes(&e, F_RAW, &one, 4);
    REQUIRE_OK(parse(&e, &t, &err), &err);
    CHECK_INT(t->ndim, 0);
    CHECK_STR(t->name, "fallback"); /* no name in the proto */
    CHECK_NEAR(*(float *)t->data, 42.0, 0);
    qp_tensor_free(t);
    free(e.p);
    /* empty tensor [0,3] without any data field */
    e = (struct pbe){0};
    int64_t dims[2] = {0, 3};
    pbe_tensor_head(&e, dims, 2, 1, "empty");
    REQUIRE_OK(parse(&e, &t, &err), &err);
    CHECK(t->shape[0] == 0 && t->shape[1] == 3 && t->nbytes == 0);
    qp_tensor_free(t);
    free(e.p);
    /* file base name when the proto has no name */
    e = (struct pbe){0};
    pbe_int(&e, F_TYPE, 6);
    pbe_bytes(&e, F_RAW, "\x01\x00\x00\x00", 4);
    char *path = qp_test_path(ctx, "input_3.pb");
    REQUIRE(qp_test_write_file(path, e.p, e.n));
    REQUIRE_OK(qp_fmt_pb_load(path, &t, &err), &err);
    CHECK_STR(t->name, "input_3");
    CHECK_INT(*(int32_t *)t->data, 1);
    qp_tensor_free(t);
    free(e.p);
    free(path);
}

/* Expects e to be refused with code and a message containing needle. */
#define CHECK_REFUSED(e, code, needle)                                         \
    do {                                                                       \
        struct qp_tensor *t_ = NULL;                                           \
        CHECK_FAILS(parse(&(e), &t_, &err), code, &err, needle);               \
        CHECK(t_ == NULL);                                                     \
        free((e).p);                                                           \
        (e) = (struct pbe){0};                                                 \
    } while (0)

QP_TEST(tensorproto_refuses_types_it_cannot_hold)
{
    struct qp_error err;
    struct pbe e = {0};
    int64_t n = 1;
    pbe_tensor_head(&e, &n, 1, 8, "s");
    pbe_str(&e, F_STRING, "hello");
    CHECK_REFUSED(e, QP_E_UNSUPPORTED, "ONNX data type STRING (8) is not "
                  "supported: string tensors");
    pbe_tensor_head(&e, &n, 1, 14, "c");
    pbe_bytes(&e, F_RAW, "12345678", 8);
    CHECK_REFUSED(e, QP_E_UNSUPPORTED, "COMPLEX64 (14)");
    pbe_tensor_head(&e, &n, 1, 18, "f8");
    pbe_bytes(&e, F_RAW, "1", 1);
    CHECK_REFUSED(e, QP_E_UNSUPPORTED, "FLOAT8E4M3FNUZ (18) is not supported");
    pbe_tensor_head(&e, &n, 1, 20, "f8");
    CHECK_REFUSED(e, QP_E_UNSUPPORTED, "FLOAT8E5M2FNUZ");
    pbe_tensor_head(&e, &n, 1, 23, "f4");
    CHECK_REFUSED(e, QP_E_UNSUPPORTED, "FLOAT4E2M1");
    pbe_tensor_head(&e, &n, 1, 99, "u");
    CHECK_REFUSED(e, QP_E_FORMAT, "'t.pb': tensor 'u': ONNX data type 99 is "
                  "unknown");
    pbe_tensor_head(&e, &n, 1, 0, "z");
    CHECK_REFUSED(e, QP_E_FORMAT, "ONNX data type 0 is undefined");
    pbe_str(&e, F_NAME, "nt"); /* no data_type at all */
    CHECK_REFUSED(e, QP_E_FORMAT, "tensor 'nt': has no data_type");
}

QP_TEST(tensorproto_refuses_bad_sizes)
{
    struct qp_error err;
    struct pbe e = {0};
    int64_t dims[2] = {2, 4};
    /* the message of the quality bar */
    pbe_tensor_head(&e, dims, 2, 1, "w");
    pbe_bytes(&e, F_RAW, "0123456789ab", 12);
    CHECK_REFUSED(e, QP_E_FORMAT, "'t.pb': tensor 'w': raw_data has 12 bytes, "
                  "shape [2,4] f32 needs 32");
    /* packed int4 [3] needs 2 bytes */
    int64_t n3 = 3;
    pbe_tensor_head(&e, &n3, 1, 22, "q");
    pbe_bytes(&e, F_RAW, "\x11\x22\x33", 3);
    CHECK_REFUSED(e, QP_E_FORMAT, "raw_data has 3 bytes, shape [3] i4 needs 2");
    /* typed field counts */
    const float f[3] = {1, 2, 3};
    pbe_tensor_head(&e, dims, 2, 1, "w");
    pbe_packed_fixed(&e, F_FLOAT, f, 3, 4);
    CHECK_REFUSED(e, QP_E_FORMAT, "float_data has 3 values, shape [2,4] f32 "
                  "needs 8");
    const int64_t v[3] = {1, 2, 3};
    pbe_tensor_head(&e, &n3, 1, 22, "q"); /* int4 [3]: 2 packed bytes */
    pbe_packed_varint(&e, F_INT32, v, 3);
    CHECK_REFUSED(e, QP_E_FORMAT, "int32_data has 3 values, shape [3] i4 "
                  "needs 2");
    /* values that do not fit */
    const int64_t big[3] = {1, 200, 3};
    pbe_tensor_head(&e, &n3, 1, 3, "i8");
    pbe_packed_varint(&e, F_INT32, big, 3);
    CHECK_REFUSED(e, QP_E_FORMAT, "int32_data[1] = 200 does not fit i8");
    const int64_t neg[1] = {-1};
    int64_t n1 = 1;
    pbe_tensor_head(&e, &n1, 1, 2, "u8");
    pbe_packed_varint(&e, F_INT32, neg, 1);
    CHECK_REFUSED(e, QP_E_FORMAT, "int32_data[0] = -1 does not fit u8");
    const int64_t u33[1] = {(int64_t)1 << 32};
    pbe_tensor_head(&e, &n1, 1, 12, "u32");
    pbe_packed_varint(&e, F_UINT64, u33, 1);
    CHECK_REFUSED(e, QP_E_FORMAT, "uint64_data[0] = 4294967296 does not fit u32");
    /* the wrong typed field for the type */
    pbe_tensor_head(&e, &n1, 1, 3, "i8");
    pbe_packed_fixed(&e, F_FLOAT, f, 1, 4);
    CHECK_REFUSED(e, QP_E_FORMAT, "float_data cannot hold i8 values (ONNX "
                  "stores them in int32_data)");
    /* data in two places */
    pbe_tensor_head(&e, &n1, 1, 1, "two");
    pbe_bytes(&e, F_RAW, f, 4);
    pbe_packed_fixed(&e, F_FLOAT, f, 1, 4);
    CHECK_REFUSED(e, QP_E_FORMAT, "has both raw_data and float_data");
    /* no data */
    pbe_tensor_head(&e, dims, 2, 1, "none");
    CHECK_REFUSED(e, QP_E_FORMAT, "has no data");
    /* absurd dims */
    int64_t huge[2] = {(int64_t)1 << 40, (int64_t)1 << 40};
    pbe_tensor_head(&e, huge, 2, 1, "huge");
    pbe_bytes(&e, F_RAW, f, 4);
    CHECK_REFUSED(e, QP_E_OVERFLOW, "element count overflows");
    int64_t bytes_ovf[1] = {(int64_t)1 << 62};
    pbe_tensor_head(&e, bytes_ovf, 1, 1, "ovf");
    CHECK_REFUSED(e, QP_E_OVERFLOW, "byte size overflows");
    int64_t negdim[2] = {2, -1};
    pbe_tensor_head(&e, negdim, 2, 1, "neg");
    CHECK_REFUSED(e, QP_E_FORMAT, "dim 1 is negative (-1)");
    int64_t nine[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    pbe_tensor_head(&e, nine, 9, 1, "deep");
    CHECK_REFUSED(e, QP_E_UNSUPPORTED, "9 dims, at most 8");
    /* a huge raw_data claim for a small file */
    int64_t hundred = 100;
    pbe_tensor_head(&e, &hundred, 1, 1, "big");
    pbe_bytes(&e, F_RAW, f, 12);
    CHECK_REFUSED(e, QP_E_FORMAT, "raw_data has 12 bytes, shape [100] f32 "
                  "needs 400");
    /* segments */
    pbe_tensor_head(&e, &n1, 1, 1, "seg");
    struct pbe s = {0};
    pbe_int(&s, 1, 0);
    pbe_int(&s, 2, 1);
    pbe_msg(&e, F_SEGMENT, &s);
    pbe_bytes(&e, F_RAW, f, 4);
    CHECK_REFUSED(e, QP_E_UNSUPPORTED, "segmented tensors are not supported");
}

QP_TEST(tensorproto_refuses_malformed_protobuf)
{
    struct qp_error err;
    struct pbe e = {0};
    int64_t n = 4;
    const float f[4] = {1, 2, 3, 4};
    pbe_tensor_head(&e, &n, 1, 1, "w");
    pbe_bytes(&e, F_RAW, f, sizeof f);
    /* truncated in the middle of raw_data: the length runs past the end */
    struct pbe cut = {0};
    pbe_raw(&cut, e.p, e.n - 5);
    CHECK_REFUSED(cut, QP_E_FORMAT, "field length beyond the end of its "
                  "message");
    /* truncated inside a varint */
    pbe_raw(&cut, "\x08\x80", 2);
    CHECK_REFUSED(cut, QP_E_FORMAT, "truncated varint at byte 0");
    /* invalid wire types and groups */
    pbe_raw(&cut, "\x0f", 1);
    CHECK_REFUSED(cut, QP_E_FORMAT, "invalid wire type at byte 0");
    pbe_raw(&cut, "\x0b\x0c", 2);
    CHECK_REFUSED(cut, QP_E_FORMAT, "groups are not supported");
    /* field number 0 */
    pbe_raw(&cut, "\x00\x01", 2);
    CHECK_REFUSED(cut, QP_E_FORMAT, "invalid field number");
    /* a field of the wrong wire type for its declaration (data_type as a
     * length-delimited field) is caught by protobuf-c */
    pbe_bytes(&cut, F_TYPE, "ab", 2);
    CHECK_REFUSED(cut, QP_E_FORMAT, "not a valid TensorProto protobuf");
    free(e.p);
    /* an empty file is a TensorProto without a type */
    CHECK_REFUSED(cut, QP_E_FORMAT, "has no data_type");
}

/* Writes a TensorProto [4] f32 with external data keys to dir/name. */
static char *write_ext(struct qp_test_ctx *ctx, const char *name,
                       const char *loc, const char *off, const char *len)
{
    struct pbe e = {0};
    int64_t n = 4;
    pbe_tensor_head(&e, &n, 1, 1, "e");
    const char *keys[3] = {"location", "offset", "length"};
    const char *vals[3] = {loc, off, len};
    for (int i = 0; i < 3; i++) {
        if (!vals[i])
            continue;
        struct pbe kv = {0};
        pbe_str(&kv, 1, keys[i]);
        pbe_str(&kv, 2, vals[i]);
        pbe_msg(&e, F_EXTERNAL, &kv);
    }
    pbe_int(&e, F_LOCATION, 1);
    char *path = qp_test_path(ctx, name);
    qp_test_write_file(path, e.p, e.n);
    free(e.p);
    return path;
}

QP_TEST(tensorproto_external_data)
{
    struct qp_error err;
    struct qp_tensor *t;
    /* weights.bin: 4 floats at offset 4 (aligned), 4 more at 21 */
    uint8_t bin[40] = {0};
    const float a[4] = {1, -2, 3.5f, 1e-3f}, b[4] = {5, 6, 7, 8};
    memcpy(bin + 4, a, 16);
    memcpy(bin + 21, b, 16);
    char *bp = qp_test_path(ctx, "weights.bin");
    REQUIRE(qp_test_write_file(bp, bin, sizeof bin));
    free(bp);

    char *p = write_ext(ctx, "ok.pb", "weights.bin", "4", "16");
    REQUIRE_OK(qp_fmt_pb_load(p, &t, &err), &err);
    CHECK(!memcmp(t->data, a, 16));
    CHECK(t->map != NULL && !t->owns_data); /* aligned: borrowed */
    qp_tensor_free(t);
    free(p);
    /* unaligned offset: copied; no length key: taken from the shape */
    p = write_ext(ctx, "unaligned.pb", "weights.bin", "21", NULL);
    REQUIRE_OK(qp_fmt_pb_load(p, &t, &err), &err);
    CHECK(!memcmp(t->data, b, 16));
    CHECK(t->owns_data && t->map == NULL);
    qp_tensor_free(t);
    free(p);
    /* a subdirectory is fine */
    char *sub = qp_test_path(ctx, "sub");
    REQUIRE(mkdir(sub, 0755) == 0);
    char *sb = qp_test_path(ctx, "sub/w.bin");
    REQUIRE(qp_test_write_file(sb, a, 16));
    p = write_ext(ctx, "subdir.pb", "sub/w.bin", NULL, NULL);
    REQUIRE_OK(qp_fmt_pb_load(p, &t, &err), &err);
    CHECK(!memcmp(t->data, a, 16));
    qp_tensor_free(t);
    free(p);

    static const struct {
        const char *loc, *off, *len, *msg;
        int code;
    } bad[] = {
        {"weights.bin", "30", "16", "offset 30 + length 16 is beyond the file "
         "(40 bytes)", QP_E_FORMAT},
        {"weights.bin", "41", NULL, "offset 41 + length 16 is beyond the file",
         QP_E_FORMAT},
        {"weights.bin", "18446744073709551615", "16", "is beyond the file",
         QP_E_FORMAT},
        {"weights.bin", "0", "12", "has length 12, the shape needs 16 bytes",
         QP_E_FORMAT},
        {"weights.bin", "-4", NULL, "offset '-4' is not a non-negative integer",
         QP_E_FORMAT},
        {"weights.bin", "99999999999999999999999", NULL, "is not a non-negative",
         QP_E_FORMAT},
        {"../weights.bin", NULL, NULL, "location '../weights.bin' leaves the "
         "model's directory", QP_E_FORMAT},
        {"sub/../../x.bin", NULL, NULL, "leaves the model's directory",
         QP_E_FORMAT},
        {"/etc/passwd", NULL, NULL, "location '/etc/passwd' is absolute",
         QP_E_FORMAT},
        {"escape.bin", NULL, NULL, "resolves outside the model's directory",
         QP_E_FORMAT},
        {"missing.bin", NULL, NULL, "external data file", QP_E_IO},
        {NULL, "0", NULL, "external data has no location", QP_E_FORMAT},
    };
    /* escape.bin is a symlink leaving the directory */
    char *link = qp_test_path(ctx, "escape.bin");
    REQUIRE(symlink("/etc/passwd", link) == 0);
    free(link);
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        p = write_ext(ctx, "bad.pb", bad[k].loc, bad[k].off, bad[k].len);
        t = NULL;
        CHECK_FAILS(qp_fmt_pb_load(p, &t, &err), bad[k].code, &err, bad[k].msg);
        CHECK(t == NULL);
        free(p);
    }
    /* external data with embedded data too */
    struct pbe e = {0};
    int64_t n = 4;
    pbe_tensor_head(&e, &n, 1, 1, "e");
    struct pbe kv = {0};
    pbe_str(&kv, 1, "location");
    pbe_str(&kv, 2, "weights.bin");
    pbe_msg(&e, F_EXTERNAL, &kv);
    pbe_int(&e, F_LOCATION, 1);
    pbe_bytes(&e, F_RAW, a, 16);
    p = qp_test_path(ctx, "both.pb");
    REQUIRE(qp_test_write_file(p, e.p, e.n));
    CHECK_FAILS(qp_fmt_pb_load(p, &t, &err), QP_E_FORMAT, &err,
                "has both external data and raw_data");
    free(p);
    free(e.p);
    /* parsed from memory there is no directory to resolve against */
    e = (struct pbe){0};
    pbe_tensor_head(&e, &n, 1, 1, "e");
    kv = (struct pbe){0};
    pbe_str(&kv, 1, "location");
    pbe_str(&kv, 2, "weights.bin");
    pbe_msg(&e, F_EXTERNAL, &kv);
    pbe_int(&e, F_LOCATION, 1);
    CHECK_REFUSED(e, QP_E_UNSUPPORTED, "needs the file's directory");
    free(sub);
    free(sb);
}

QP_TEST(tensorproto_mapped_raw_data_is_borrowed_when_aligned)
{
    struct qp_error err;
    struct qp_tensor *t;
    /* the header before raw_data is 1+1 (dims) 2 (type) 2 (len) = 6 bytes,
     * so data starts at 6: an i16 is aligned, an f32 is not */
    int64_t n = 2;
    char *p = qp_test_path(ctx, "a.pb");
    struct pbe e = {0};
    pbe_tensor_head(&e, &n, 1, 5, NULL);
    pbe_bytes(&e, F_RAW, "\x01\x00\x02\x00", 4);
    REQUIRE(e.n == 10);
    REQUIRE(qp_test_write_file(p, e.p, e.n));
    REQUIRE_OK(qp_fmt_pb_load(p, &t, &err), &err);
    CHECK(t->map != NULL && !t->owns_data);
    CHECK(((int16_t *)t->data)[1] == 2);
    qp_tensor_free(t);
    free(e.p);
    e = (struct pbe){0};
    pbe_tensor_head(&e, &n, 1, 1, NULL);
    pbe_bytes(&e, F_RAW, "\x00\x00\x80\x3f\x00\x00\x00\x40", 8);
    REQUIRE(qp_test_write_file(p, e.p, e.n));
    REQUIRE_OK(qp_fmt_pb_load(p, &t, &err), &err);
    CHECK(t->owns_data && t->map == NULL);
    CHECK(((float *)t->data)[0] == 1.0f && ((float *)t->data)[1] == 2.0f);
    qp_tensor_free(t);
    free(e.p);
    free(p);
}

QP_TEST(tensorproto_writer_roundtrips_every_type)
{
    static const enum qp_dtype dts[] = {
        QP_DTYPE_F32, QP_DTYPE_F16, QP_DTYPE_BF16, QP_DTYPE_F64, QP_DTYPE_I8,
        QP_DTYPE_U8, QP_DTYPE_I16, QP_DTYPE_U16, QP_DTYPE_I32, QP_DTYPE_U32,
        QP_DTYPE_I64, QP_DTYPE_U64, QP_DTYPE_I4, QP_DTYPE_U4, QP_DTYPE_BOOL,
        QP_DTYPE_F8E4M3, QP_DTYPE_F8E5M2, QP_DTYPE_I2, QP_DTYPE_U2};
    static const int onnx[] = {1, 10, 16, 11, 3, 2, 5, 4, 6, 12, 7, 13, 22, 21,
                               9, 17, 19, 26, 25};
    struct qp_error err;
    char *path = qp_test_path(ctx, "rt.pb");
    for (size_t k = 0; k < sizeof dts / sizeof dts[0]; k++) {
        struct qp_tensor *t, *u;
        int64_t shape[3] = {3, 1, 5};
        REQUIRE_OK(qp_tensor_new("layer.0/out:0", dts[k], 3, shape, &t, &err),
                   &err);
        uint8_t *p = t->data;
        for (size_t i = 0; i < t->nbytes; i++)
            p[i] = dts[k] == QP_DTYPE_BOOL ? (uint8_t)(i % 3 == 0)
                                           : (uint8_t)(i * 29 + k);
        REQUIRE_OK(qp_fmt_pb_save(path, t, &err), &err);
        /* the file, read by the independent reader: dims, type, name, raw */
        size_t len;
        char *buf;
        REQUIRE_OK(qp_read_file(path, 1 << 20, &buf, &len, &err), &err);
        struct pbr r = {(const uint8_t *)buf, (const uint8_t *)buf + len};
        struct pbf f;
        bool ok = true;
        int ndims = 0, type = -1;
        char name[64] = "";
        size_t raw = 0;
        while (pbr_next(&r, &f, &ok)) {
            if (f.field == F_DIMS && f.wt == 0)
                CHECK_INT(f.v, shape[ndims++]);
            if (f.field == F_TYPE)
                type = (int)f.v;
            if (f.field == F_NAME)
                pbr_str(&f.body, name, sizeof name);
            if (f.field == F_RAW) {
                raw = (size_t)(f.body.end - f.body.p);
                CHECK(raw == t->nbytes && !memcmp(f.body.p, t->data, raw));
            }
        }
        CHECK(ok);
        CHECK_INT(ndims, 3);
        CHECK_INT(type, onnx[k]);
        CHECK_STR(name, "layer.0/out:0");
        CHECK_INT(raw, t->nbytes);
        free(buf);
        REQUIRE_OK(qp_fmt_pb_load(path, &u, &err), &err);
        CHECK_STR(u->name, "layer.0/out:0");
        CHECK_INT(u->dtype, dts[k]);
        CHECK(qp_shape_equal(u->ndim, u->shape, 3, shape));
        CHECK(u->nbytes == t->nbytes && !memcmp(u->data, t->data, t->nbytes));
        qp_tensor_free(t);
        qp_tensor_free(u);
    }
    /* 3-bit tensors have no ONNX type; quantized tensors do not fit */
    struct qp_tensor *t;
    int64_t n = 8;
    REQUIRE_OK(qp_tensor_new("t", QP_DTYPE_I3, 1, &n, &t, &err), &err);
    CHECK_FAILS(qp_fmt_pb_save(path, t, &err), QP_E_UNSUPPORTED, &err,
                "ONNX has no data type for i3");
    qp_tensor_free(t);
    REQUIRE_OK(qp_tensor_new("q", QP_DTYPE_I8, 1, &n, &t, &err), &err);
    float s = 0.5f;
    REQUIRE_OK(qp_tensor_set_qparams(t, 1, &s, NULL, -1, 0, &err), &err);
    CHECK_FAILS(qp_fmt_pb_save(path, t, &err), QP_E_UNSUPPORTED, &err,
                "cannot carry the quantization parameters of 'q'");
    qp_tensor_free(t);
    free(path);
}
