/* Unit tests of formats/npz.c: round trips, archives built by libzip and
 * by hand the way numpy.savez writes them (zip64 local headers, stored
 * and deflated members), and one test per malformed case. */
#include <stdlib.h>
#include <string.h>
#include <zip.h>
#include <zlib.h>

#include "core/fileio.h"
#include "formats/dump.h"
#include "formats/npy.h"
#include "formats/npz.h"
#include "tests/test.h"
#include "tests/unit/dump-test-util.h"

/* ---- a minimal zip writer, independent of libzip ----------------------- */

struct zmember {
    const char *name;
    const void *data;
    size_t len;
    int method;  /* 0 stored, 8 deflated */
    bool zip64;  /* zip64 extra field in the local header (numpy.savez) */
    bool bad_crc;
};

static void put16(unsigned char **p, unsigned v)
{
    (*p)[0] = (unsigned char)v;
    (*p)[1] = (unsigned char)(v >> 8);
    *p += 2;
}

static void put32(unsigned char **p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        (*p)[i] = (unsigned char)(v >> (8 * i));
    *p += 4;
}

static void put64(unsigned char **p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        (*p)[i] = (unsigned char)(v >> (8 * i));
    *p += 8;
}

/* The fields local and central headers share: version needed, flags,
 * method, time, date, crc, sizes (0xffffffff when a zip64 extra field
 * holds them) and the name length. */
static void put_fields(unsigned char **p, const struct zmember *m, uint32_t crc,
                       size_t clen, bool zip64)
{
    put16(p, m->zip64 ? 45 : 20);
    put16(p, 0);
    put16(p, (unsigned)m->method);
    put16(p, 0);
    put16(p, 0x21);
    put32(p, crc);
    put32(p, zip64 ? 0xffffffffu : (uint32_t)clen);
    put32(p, zip64 ? 0xffffffffu : (uint32_t)m->len);
    put16(p, (unsigned)strlen(m->name));
}

/* Raw deflate of data into a malloc'd buffer. */
static unsigned char *deflate_raw(const void *data, size_t len, size_t *out)
{
    z_stream z = {0};
    deflateInit2(&z, 6, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY);
    size_t cap = deflateBound(&z, (uLong)len);
    unsigned char *buf = malloc(cap);
    z.next_in = (Bytef *)data;
    z.avail_in = (uInt)len;
    z.next_out = buf;
    z.avail_out = (uInt)cap;
    deflate(&z, Z_FINISH);
    *out = cap - z.avail_out;
    deflateEnd(&z);
    return buf;
}

/* Writes a zip of m[0..n). zip64: every size and offset in zip64 extra
 * fields, with a zip64 end of central directory (what a writer does for
 * archives over 4 GiB); otherwise only members flagged zip64 get the
 * local extra field numpy.savez writes. */
static bool write_zip(const char *path, const struct zmember *m, size_t n,
                      bool zip64)
{
    size_t cap = 1024;
    for (size_t i = 0; i < n; i++)
        cap += 2 * m[i].len + 2 * strlen(m[i].name) + 256;
    unsigned char *buf = malloc(cap), *p = buf;
    uint64_t *offs = calloc(n, sizeof *offs);
    uint32_t *crcs = calloc(n, sizeof *crcs);
    size_t *csz = calloc(n, sizeof *csz);
    for (size_t i = 0; i < n; i++) {
        size_t clen = m[i].len;
        unsigned char *comp = m[i].method ? deflate_raw(m[i].data, m[i].len, &clen)
                                          : NULL;
        bool z = zip64 || m[i].zip64;
        crcs[i] = (uint32_t)crc32(0, m[i].data, (uInt)m[i].len) ^ (m[i].bad_crc ? 1 : 0);
        csz[i] = clen;
        offs[i] = (uint64_t)(p - buf);
        put32(&p, 0x04034b50);
        put_fields(&p, &m[i], crcs[i], clen, z);
        put16(&p, z ? 20 : 0);
        memcpy(p, m[i].name, strlen(m[i].name));
        p += strlen(m[i].name);
        if (z) {
            put16(&p, 1);
            put16(&p, 16);
            put64(&p, m[i].len);
            put64(&p, clen);
        }
        memcpy(p, comp ? comp : m[i].data, clen);
        p += clen;
        free(comp);
    }
    unsigned char *cd = p;
    for (size_t i = 0; i < n; i++) {
        put32(&p, 0x02014b50);
        put16(&p, 0x032d);
        put_fields(&p, &m[i], crcs[i], csz[i], zip64);
        put16(&p, zip64 ? 28 : 0);
        put16(&p, 0);
        put16(&p, 0);
        put16(&p, 0);
        put32(&p, 0x01800000);
        put32(&p, zip64 ? 0xffffffffu : (uint32_t)offs[i]);
        memcpy(p, m[i].name, strlen(m[i].name));
        p += strlen(m[i].name);
        if (zip64) { /* sizes and offset, in that order */
            put16(&p, 1);
            put16(&p, 24);
            put64(&p, m[i].len);
            put64(&p, csz[i]);
            put64(&p, offs[i]);
        }
    }
    size_t cdlen = (size_t)(p - cd);
    if (zip64) { /* zip64 end of central directory, then its locator */
        uint64_t at = (uint64_t)(p - buf);
        put32(&p, 0x06064b50);
        put64(&p, 44);
        put16(&p, 45);
        put16(&p, 45);
        put32(&p, 0);
        put32(&p, 0);
        put64(&p, n);
        put64(&p, n);
        put64(&p, cdlen);
        put64(&p, (uint64_t)(cd - buf));
        put32(&p, 0x07064b50);
        put32(&p, 0);
        put64(&p, at);
        put32(&p, 1);
    }
    put32(&p, 0x06054b50);
    put16(&p, 0);
    put16(&p, 0);
    put16(&p, zip64 ? 0xffff : (unsigned)n);
    put16(&p, zip64 ? 0xffff : (unsigned)n);
    put32(&p, zip64 ? 0xffffffffu : (uint32_t)cdlen);
    put32(&p, zip64 ? 0xffffffffu : (uint32_t)(cd - buf));
    put16(&p, 0);
    bool ok = qp_test_write_file(path, buf, (size_t)(p - buf));
    free(buf);
    free(offs);
    free(crcs);
    free(csz);
    return ok;
}

/* The .npy image of t, malloc'd. */
static unsigned char *npy_image(const struct qp_tensor *t, size_t *len)
{
    char *buf = NULL;
    FILE *f = open_memstream(&buf, len);
    qp_fmt_npy_write(f, t, NULL);
    fclose(f);
    return (unsigned char *)buf;
}

/* ---- tests --------------------------------------------------------------- */

QP_TEST(npz_roundtrip_every_dtype_bit_identical)
{
    struct qp_error err;
    char *path = qp_test_path(ctx, "all.npz");
    struct qp_tensor *src[DT_EVERY_DTYPE_MAX];
    size_t n = dt_every_dtype_set(src, "layer/1:0 \"odd\" ünï");
    REQUIRE(dt_write_dump(path, QP_DUMP_AUTO, src, n, NULL, &err));
    dt_check_dump(ctx, path, src, n);

    /* the archive as libzip sees it: stored .npy members named after the
     * tensors, plus the description of the types numpy lacks */
    int code;
    zip_t *za = zip_open(path, ZIP_RDONLY | ZIP_CHECKCONS, &code);
    REQUIRE(za != NULL);
    CHECK_INT(zip_get_num_entries(za, 0), n + 1);
    zip_stat_t zs;
    REQUIRE(zip_stat(za, "t.f32.npy", 0, &zs) == 0);
    CHECK_INT(zs.comp_method, ZIP_CM_STORE);
    CHECK(zip_name_locate(za, "layer/1:0 \"odd\" ünï.npy", 0) >= 0);
    CHECK(zip_name_locate(za, QP_NPZ_INFO_MEMBER, 0) >= 0);
    zip_file_t *zf = zip_fopen(za, QP_NPZ_INFO_MEMBER, 0);
    char info[4096] = {0};
    REQUIRE(zf != NULL);
    zip_fread(zf, info, sizeof info - 1);
    zip_fclose(zf);
    CHECK_CONTAINS(info, "\"t.bf16\":{\"dtype\":\"bf16\",\"shape\":[2,3,5]}");
    CHECK_CONTAINS(info, "\"t.i3\":{\"dtype\":\"i3\",\"shape\":[2,3,5]}");
    /* a numpy dtype member is a plain npy file */
    zf = zip_fopen(za, "t.i16.npy", 0);
    unsigned char img[256];
    REQUIRE(zf != NULL);
    zip_int64_t got = zip_fread(zf, img, sizeof img);
    zip_fclose(zf);
    size_t start = 10 + (size_t)(img[8] | img[9] << 8);
    CHECK(!memcmp(img, "\x93NUMPY\x01", 7));
    CHECK(memmem(img, start, "'descr': '<i2'", 14) != NULL);
    CHECK_INT(got, start + 60);
    CHECK(got == (zip_int64_t)start + 60 &&
          !memcmp(img + start, src[QP_DTYPE_I16]->data, 60));
    zip_close(za);
    dt_free_all(src, n);
    free(path);
}

QP_TEST(npz_quantized_tensors_and_metadata_roundtrip)
{
    struct qp_error err;
    char *path = qp_test_path(ctx, "q.npz");
    struct qp_tensor *src[6];
    size_t n = dt_quantized_set(src);
    const char *meta[] = {"scheme:per_axis", "w8c", "note", "two words", NULL};
    REQUIRE(dt_write_dump(path, QP_DUMP_NPZ, src, n, meta, &err));
    dt_check_dump(ctx, path, src, n);
    struct qp_dump *d;
    REQUIRE_OK(qp_dump_open(path, QP_DUMP_AUTO, &d, &err), &err);
    CHECK_INT(qp_dump_meta_count(d), 2);
    CHECK_STR(qp_dump_meta(d, "scheme:per_axis"), "w8c");
    CHECK_STR(qp_dump_meta(d, "note"), "two words");
    qp_dump_close(d);
    dt_free_all(src, n);
    free(path);
}

QP_TEST(npz_reads_numpy_savez_style_and_zip64_archives)
{
    /* numpy.savez: stored members with zip64 extra fields in the local
     * headers; savez_compressed: the same, deflated; archives over 4 GiB
     * also have zip64 central directory fields and end records */
    int64_t s[2] = {3, 4};
    struct qp_tensor *a = dt_pattern_tensor("a", QP_DTYPE_F32, 2, s, 1);
    struct qp_tensor *b = dt_pattern_tensor("b", QP_DTYPE_I16, 1, s, 2);
    size_t la, lb;
    unsigned char *ia = npy_image(a, &la), *ib = npy_image(b, &lb);
    char *path = qp_test_path(ctx, "np.npz");
    for (int method = 0; method <= 8; method += 8)
        for (int z = 0; z < 2; z++) { /* and as a full zip64 archive */
            struct zmember m[2] = {{"a.npy", ia, la, method, true, false},
                                   {"b.npy", ib, lb, method, true, false}};
            REQUIRE(write_zip(path, m, 2, z));
            struct qp_tensor *want[2] = {a, b};
            dt_check_dump(ctx, path, want, 2);
        }
    free(ia);
    free(ib);
    qp_tensor_free(a);
    qp_tensor_free(b);
    free(path);
}

QP_TEST(npz_reads_libzip_archives_with_deflated_and_stored_members)
{
    char *path = qp_test_path(ctx, "lz.npz");
    int64_t s[1] = {100};
    struct qp_tensor *t[3] = {
        dt_pattern_tensor("deflated", QP_DTYPE_F64, 1, s, 3),
        dt_pattern_tensor("stored", QP_DTYPE_U16, 1, s, 4),
        dt_pattern_tensor("no_suffix", QP_DTYPE_I8, 1, s, 5),
    };
    int code;
    zip_t *za = zip_open(path, ZIP_CREATE | ZIP_TRUNCATE, &code);
    REQUIRE(za != NULL);
    const char *names[3] = {"deflated.npy", "stored.npy", "no_suffix"};
    zip_add_dir(za, "folder/");
    for (int i = 0; i < 3; i++) {
        size_t len;
        unsigned char *img = npy_image(t[i], &len);
        zip_source_t *src = zip_source_buffer(za, img, len, 1);
        zip_int64_t idx = zip_file_add(za, names[i], src, 0);
        REQUIRE(idx >= 0);
        zip_set_file_compression(za, (zip_uint64_t)idx,
                                 i == 1 ? ZIP_CM_STORE : ZIP_CM_DEFLATE, 9);
    }
    REQUIRE(zip_close(za) == 0);
    za = zip_open(path, ZIP_RDONLY, &code);
    zip_stat_t zs;
    zip_stat(za, "deflated.npy", 0, &zs);
    CHECK_INT(zs.comp_method, ZIP_CM_DEFLATE); /* really compressed */
    CHECK(zs.comp_size < zs.size);
    zip_close(za);
    dt_check_dump(ctx, path, t, 3);
    for (int i = 0; i < 3; i++)
        qp_tensor_free(t[i]);
    free(path);
}

QP_TEST(npz_lists_from_headers_and_checks_crc_when_loading)
{
    /* a member whose data is corrupt still lists (only its header is
     * read); loading it checks the CRC */
    struct qp_error err;
    int64_t s[1] = {64};
    struct qp_tensor *a = dt_pattern_tensor("a", QP_DTYPE_F32, 1, s, 1);
    size_t la;
    unsigned char *ia = npy_image(a, &la);
    char *path = qp_test_path(ctx, "crc.npz");
    struct zmember m[1] = {{"a.npy", ia, la, 8, false, true}};
    REQUIRE(write_zip(path, m, 1, false));
    struct qp_dump *d;
    REQUIRE_OK(qp_dump_open(path, QP_DUMP_AUTO, &d, &err), &err);
    REQUIRE(qp_dump_count(d) == 1);
    CHECK_INT(qp_dump_entry(d, 0)->shape[0], 64);
    struct qp_tensor *t;
    CHECK_FAILS(qp_dump_load(d, 0, &t, &err), QP_E_FORMAT, &err,
                "crc.npz': member 'a.npy': CRC error");
    qp_dump_close(d);
    free(ia);
    qp_tensor_free(a);
    free(path);
}

QP_TEST(npz_rejects_malformed_archives)
{
    struct qp_error err;
    struct qp_dump *d;
    char *path = qp_test_path(ctx, "bad.npz");
    int64_t s[1] = {8};
    struct qp_tensor *a = dt_pattern_tensor("a", QP_DTYPE_F32, 1, s, 1);
    size_t la;
    unsigned char *ia = npy_image(a, &la);

    REQUIRE(qp_test_write_file(path, "", 0));
    CHECK_FAILS(qp_dump_open(path, QP_DUMP_AUTO, &d, &err), QP_E_FORMAT, &err,
                "bad.npz': empty file, not an npz archive");
    REQUIRE(qp_test_write_file(path, "not a zip at all, just text", 27));
    CHECK_FAILS(qp_dump_open(path, QP_DUMP_AUTO, &d, &err), QP_E_FORMAT, &err,
                "bad.npz': cannot open as a zip archive: Not a zip archive");

    /* truncated archive: the central directory is gone */
    struct zmember one[1] = {{"a.npy", ia, la, 0, false, false}};
    REQUIRE(write_zip(path, one, 1, false));
    char *bytes;
    size_t len;
    REQUIRE_OK(qp_read_file(path, 1 << 20, &bytes, &len, &err), &err);
    REQUIRE(qp_test_write_file(path, bytes, len - 30));
    CHECK_FAILS(qp_dump_open(path, QP_DUMP_AUTO, &d, &err), QP_E_FORMAT, &err,
                "bad.npz': cannot open as a zip archive");
    free(bytes);

    /* a member that is not an npy file; one whose data is short */
    struct zmember junk[1] = {{"j.npy", "\x93NUMPX\x01\x00\x10\x00", 10, 0, false,
                               false}};
    REQUIRE(write_zip(path, junk, 1, false));
    CHECK_FAILS(qp_dump_open(path, QP_DUMP_AUTO, &d, &err), QP_E_FORMAT, &err,
                "bad.npz: member j.npy': not an npy file (bad magic)");
    struct zmember shortm[1] = {{"a.npy", ia, la - 4, 0, false, false}};
    REQUIRE(write_zip(path, shortm, 1, false));
    CHECK_FAILS(qp_dump_open(path, QP_DUMP_AUTO, &d, &err), QP_E_FORMAT, &err,
                "bad.npz: member a.npy': npy data needs 32 bytes, file has 28");
    struct zmember hdr[1] = {{"a.npy", ia, 40, 8, false, false}};
    REQUIRE(write_zip(path, hdr, 1, false));
    CHECK_FAILS(qp_dump_open(path, QP_DUMP_AUTO, &d, &err), QP_E_FORMAT, &err,
                "member a.npy': npy header length 118 exceeds the file (40 bytes)");

    /* the same member twice; two members naming the same tensor */
    struct zmember dup[2] = {{"a.npy", ia, la, 0, false, false},
                             {"a.npy", ia, la, 8, false, false}};
    REQUIRE(write_zip(path, dup, 2, false));
    CHECK_FAILS(qp_dump_open(path, QP_DUMP_AUTO, &d, &err), QP_E_FORMAT, &err,
                "bad.npz': two members of the archive have the same name");
    dup[1].name = "a";
    REQUIRE(write_zip(path, dup, 2, false));
    CHECK_FAILS(qp_dump_open(path, QP_DUMP_AUTO, &d, &err), QP_E_FORMAT, &err,
                "bad.npz': tensor name 'a' appears twice");

    /* broken or inconsistent descriptions */
    static const struct {
        const char *info;
        enum qp_status status;
        const char *msg;
    } infos[] = {
        {"{\"tensors\": ", QP_E_FORMAT, "member __qprobe__.json: invalid JSON"},
        {"{\"tensors\": {\"x\": {\"axis\": 0}}}", QP_E_FORMAT,
         "metadata describes tensor 'x', which is not in the file"},
        {"{\"tensors\": {\"a\": {\"dtype\": \"bf16\", \"shape\": [4]}}}", QP_E_FORMAT,
         "tensor 'a' should hold the 8 bytes of bf16 [4] as a 1-D u8 tensor, it "
         "is f32 of 32 bytes"},
        {"{\"tensors\": {\"a\": {\"dtype\": \"f99\", \"shape\": [4]}}}", QP_E_FORMAT,
         "tensor 'a': unknown dtype"},
        {"{\"tensors\": {\"a\": {\"dtype\": \"i4\"}}}", QP_E_FORMAT,
         "tensor 'a' needs both dtype and shape"},
        {"{\"tensors\": {\"a\": {\"block_size\": 4}}}", QP_E_FORMAT,
         "tensor 'a': block_size must be a non-negative integer beside an axis"},
        {"{\"tensors\": {\"a\": {\"layout\": 4}}}", QP_E_FORMAT,
         "tensor 'a': layout is not a string"},
        {"{\"tensors\": {\"a\": {}, \"a\": {}}}", QP_E_FORMAT,
         "key \"a\" appears twice in \"tensors\""},
        {"{\"tensors\": [], \"version\": 1}", QP_E_FORMAT,
         "tensors is a array, expected an object"},
        {"{\"version\": 2}", QP_E_UNSUPPORTED, "unknown version"},
        {"{\"metadata\": {\"k\": 1}}", QP_E_FORMAT,
         "metadata value 'k' is a number, expected a string"},
    };
    for (size_t i = 0; i < sizeof infos / sizeof infos[0]; i++) {
        struct zmember m[2] = {{"a.npy", ia, la, 0, false, false},
                               {QP_NPZ_INFO_MEMBER, infos[i].info,
                                strlen(infos[i].info), 8, false, false}};
        REQUIRE(write_zip(path, m, 2, false));
        CHECK_FAILS(qp_dump_open(path, QP_DUMP_AUTO, &d, &err), infos[i].status,
                    &err, infos[i].msg);
        CHECK_CONTAINS(err.msg, "bad.npz");
    }
    free(ia);
    qp_tensor_free(a);
    free(path);
}

QP_TEST(npz_writer_is_atomic_and_refuses_companion_clashes)
{
    struct qp_error err;
    const char *dir = qp_test_tmpdir(ctx);
    char *path = qp_test_path(ctx, "out.npz");
    int64_t s[1] = {2};
    struct qp_tensor *q = dt_pattern_tensor("q", QP_DTYPE_I8, 1, s, 1);
    float sc = 0.5f;
    REQUIRE_OK(qp_tensor_set_qparams(q, 1, &sc, NULL, -1, 0, &err), &err);
    struct qp_tensor *c = dt_pattern_tensor("q.scale", QP_DTYPE_F32, 1, s, 1);
    struct qp_dump_writer *w;
    REQUIRE_OK(qp_dump_writer_open(path, QP_DUMP_AUTO, &w, &err), &err);
    CHECK_INT(w->format, QP_DUMP_NPZ);
    REQUIRE_OK(qp_dump_writer_add(w, q, &err), &err);
    CHECK_FAILS(qp_dump_writer_add(w, c, &err), QP_E_INVAL, &err,
                "tensor name 'q.scale' is taken");
    CHECK_INT(dt_count_files(dir), 1); /* the hidden temporary folder */
    qp_dump_writer_abort(w);
    CHECK_INT(dt_count_files(dir), 0);
    /* an empty dump still makes a readable archive */
    REQUIRE(dt_write_dump(path, QP_DUMP_NPZ, NULL, 0, NULL, &err));
    struct qp_dump *d;
    REQUIRE_OK(qp_dump_open(path, QP_DUMP_AUTO, &d, &err), &err);
    CHECK_INT(qp_dump_count(d), 0);
    qp_dump_close(d);
    qp_tensor_free(q);
    qp_tensor_free(c);
    free(path);
}
