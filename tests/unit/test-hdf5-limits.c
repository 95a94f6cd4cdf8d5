/* formats/hdf5.c against files that declare more than they hold: chunked
 * datasets of gigabytes in a kilobyte, data in other files, and the same
 * reader on an in-memory file image (the fuzz target's way in). */
#include <hdf5.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "core/fileio.h"
#include "formats/dump.h"
#include "formats/hdf5.h"
#include "tests/test.h"
#include "tests/unit/dump-test-util.h"

/* A file with one f32 dataset "d" of dims, chunked by chunk, deflated
 * when deflate, holding data (or nothing: every chunk unwritten). */
static bool write_chunked(const char *path, int nd, const hsize_t *dims,
                          const hsize_t *chunk, bool deflate, const float *data)
{
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    hid_t sp = H5Screate_simple(nd, dims, NULL);
    bool ok = f >= 0 && dcpl >= 0 && sp >= 0 && H5Pset_chunk(dcpl, nd, chunk) >= 0 &&
              (!deflate || H5Pset_deflate(dcpl, 9) >= 0);
    hid_t ds = ok ? H5Dcreate2(f, "d", H5T_IEEE_F32LE, sp, H5P_DEFAULT, dcpl,
                               H5P_DEFAULT)
                  : H5I_INVALID_HID;
    ok = ds >= 0 && (!data || H5Dwrite(ds, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL,
                                       H5P_DEFAULT, data) >= 0);
    if (ds >= 0)
        H5Dclose(ds);
    H5Sclose(sp);
    H5Pclose(dcpl);
    return H5Fclose(f) >= 0 && ok;
}

static long file_size(const char *path)
{
    struct stat sb;
    return stat(path, &sb) ? -1 : (long)sb.st_size;
}

QP_TEST(hdf5_declared_size_beyond_the_file_is_refused_at_once)
{
    /* the fuzzing campaign's file: a chunked dataset of 2^31 f32 in a few
     * kilobytes made inspect and quantize allocate 8 GiB and read fill
     * values for minutes */
    struct qp_error err;
    char *path = qp_test_path(ctx, "huge.h5");
    hsize_t dims[2] = {(hsize_t)1 << 16, (hsize_t)1 << 15}, chunk[2] = {256, 256};
    for (int deflate = 0; deflate < 2; deflate++) {
        REQUIRE(write_chunked(path, 2, dims, chunk, deflate, NULL));
        CHECK(file_size(path) < 8192);
        struct qp_dump *d;
        REQUIRE_OK(qp_dump_open(path, QP_DUMP_AUTO, &d, &err), &err);
        struct qp_tensor *t = NULL;
        clock_t t0 = clock();
        CHECK_FAILS(qp_dump_load(d, 0, &t, &err), QP_E_FORMAT, &err,
                    "huge.h5': dataset 'd': declares 8589934592 bytes, but the "
                    "file stores 0 bytes of it");
        CHECK(t == NULL);
        CHECK((double)(clock() - t0) / CLOCKS_PER_SEC < 1.0);
        qp_dump_close(d);
    }
    free(path);
}

QP_TEST(hdf5_a_filter_libhdf5_lacks_expands_nothing)
{
    /* the campaign's 2-second input: a 12.9 KB file whose 256 MiB dataset
     * passed the size check behind a filter id no libhdf5 has (33, named
     * "fletcher32"), taken for one of unbounded expansion; libhdf5 skips
     * an optional filter it lacks, so it expands nothing */
    struct qp_error err;
    char *path = qp_test_path(ctx, "optional.h5");
    hsize_t dims[1] = {(hsize_t)1 << 24}, chunk[1] = {1 << 14};
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE), sp = H5Screate_simple(1, dims, NULL);
    REQUIRE(H5Pset_chunk(dcpl, 1, chunk) >= 0);
    REQUIRE(H5Zfilter_avail(33) == 0);
    REQUIRE(H5Pset_filter(dcpl, 33, H5Z_FLAG_OPTIONAL, 0, NULL) >= 0);
    hid_t ds = H5Dcreate2(f, "d", H5T_IEEE_F32LE, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    REQUIRE(ds >= 0);
    qp_h5_close(3, (hid_t[]){ds, sp, dcpl});
    REQUIRE(H5Fclose(f) >= 0);
    struct qp_dump *d;
    REQUIRE_OK(qp_dump_open(path, QP_DUMP_AUTO, &d, &err), &err);
    struct qp_tensor *t = NULL;
    CHECK_FAILS(qp_dump_load(d, 0, &t, &err), QP_E_FORMAT, &err,
                "optional.h5': dataset 'd': declares 67108864 bytes, but the "
                "file stores 0 bytes of it, which its filters expand 1:1 at most");
    CHECK(t == NULL);
    qp_dump_close(d);
    free(path);
}

QP_TEST(hdf5_millions_of_tiny_chunks_are_refused_before_reading)
{
    /* the fuzzing campaign's OOM: a 12.9 KB file declaring 100 MB of u16 in
     * chunks of 3 behind the scale-offset filter (whose expansion has no
     * bound) made libhdf5 allocate 1.37 GB of chunk records. Here 2^20
     * chunks of one value, one of them written. */
    struct qp_error err;
    char *path = qp_test_path(ctx, "tiny.h5");
    hsize_t dims[1] = {(hsize_t)1 << 20}, chunk[1] = {1};
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE), sp = H5Screate_simple(1, dims, NULL);
    REQUIRE(H5Pset_chunk(dcpl, 1, chunk) >= 0);
    REQUIRE(H5Pset_scaleoffset(dcpl, H5Z_SO_INT, H5Z_SO_INT_MINBITS_DEFAULT) >= 0);
    hid_t ds = H5Dcreate2(f, "d", H5T_STD_U16LE, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    hsize_t start[1] = {5}, count[1] = {1};
    uint16_t v = 7;
    hid_t ms = H5Screate_simple(1, count, NULL);
    H5Sselect_hyperslab(sp, H5S_SELECT_SET, start, NULL, count, NULL);
    CHECK(H5Dwrite(ds, H5T_NATIVE_UINT16, ms, sp, H5P_DEFAULT, &v) >= 0);
    qp_h5_close(4, (hid_t[]){ms, ds, sp, dcpl});
    REQUIRE(H5Fclose(f) >= 0);
    long size = file_size(path);
    CHECK(size > 0 && size < 16384);
    struct qp_dump *d;
    REQUIRE_OK(qp_dump_open(path, QP_DUMP_AUTO, &d, &err), &err);
    struct qp_tensor *t = NULL;
    char want[160];
    snprintf(want, sizeof want, "tiny.h5': dataset 'd': declares 1048576 chunks "
             "of 2 bytes, more than a file of %ld bytes can hold (at most %ld)",
             size, size / 8 + 524288 + 1);
    CHECK_FAILS(qp_dump_load(d, 0, &t, &err), QP_E_FORMAT, &err, want);
    CHECK(t == NULL);
    qp_dump_close(d);

    /* the same data in chunks of 2 (2^19 of them, the fill value's 1 MiB
     * allowance of 4-byte chunks is 262144, plus the file's): still refused;
     * in chunks of 4096, read */
    for (hsize_t c = 2; c <= 4096; c *= 2048) {
        f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
        dcpl = H5Pcreate(H5P_DATASET_CREATE);
        sp = H5Screate_simple(1, dims, NULL);
        H5Pset_chunk(dcpl, 1, &c);
        H5Pset_scaleoffset(dcpl, H5Z_SO_INT, H5Z_SO_INT_MINBITS_DEFAULT);
        ds = H5Dcreate2(f, "d", H5T_STD_U16LE, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
        ms = H5Screate_simple(1, count, NULL);
        H5Sselect_hyperslab(sp, H5S_SELECT_SET, start, NULL, count, NULL);
        CHECK(H5Dwrite(ds, H5T_NATIVE_UINT16, ms, sp, H5P_DEFAULT, &v) >= 0);
        qp_h5_close(4, (hid_t[]){ms, ds, sp, dcpl});
        REQUIRE(H5Fclose(f) >= 0);
        REQUIRE_OK(qp_dump_open(path, QP_DUMP_AUTO, &d, &err), &err);
        enum qp_status st = qp_dump_load(d, 0, &t, &err);
        if (c == 2) {
            CHECK(st == QP_E_FORMAT && strstr(err.msg, "declares 524288 chunks"));
        } else {
            REQUIRE_OK(st, &err);
            float got[2];
            qp_tensor_read_f32(t, 5, 1, got);
            qp_tensor_read_f32(t, 6, 1, got + 1);
            CHECK(got[0] == 7 && got[1] == 0);
            qp_tensor_free(t);
        }
        qp_dump_close(d);
    }
    free(path);
}

QP_TEST(hdf5_deflated_and_partly_written_datasets_still_read)
{
    /* 8 MiB of zeros deflate about 1000:1; a dataset with one chunk of
     * 16 unwritten reads its fill value (both within what the check allows) */
    struct qp_error err;
    char *path = qp_test_path(ctx, "zeros.h5");
    size_t n = (size_t)2 << 20;
    float *z = calloc(n, sizeof *z);
    REQUIRE(z);
    hsize_t dims[1] = {n}, chunk[1] = {(hsize_t)1 << 18};
    REQUIRE(write_chunked(path, 1, dims, chunk, true, z));
    CHECK(file_size(path) < 64 << 10);
    struct qp_dump *d;
    struct qp_tensor *t;
    REQUIRE_OK(qp_dump_open(path, QP_DUMP_AUTO, &d, &err), &err);
    REQUIRE_OK(qp_dump_load(d, 0, &t, &err), &err);
    CHECK(!memcmp(t->data, z, n * sizeof *z));
    qp_tensor_free(t);
    qp_dump_close(d);
    free(z);

    float v[4] = {1, 2, 3, 4};
    hsize_t d2[1] = {64}, c2[1] = {4};
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE), sp = H5Screate_simple(1, d2, NULL);
    H5Pset_chunk(dcpl, 1, c2);
    hid_t ds = H5Dcreate2(f, "d", H5T_IEEE_F32LE, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    hsize_t start[1] = {0}, count[1] = {4};
    hid_t ms = H5Screate_simple(1, count, NULL);
    H5Sselect_hyperslab(sp, H5S_SELECT_SET, start, NULL, count, NULL);
    CHECK(H5Dwrite(ds, H5T_NATIVE_FLOAT, ms, sp, H5P_DEFAULT, v) >= 0);
    H5Sclose(ms);
    H5Dclose(ds);
    H5Sclose(sp);
    H5Pclose(dcpl);
    H5Fclose(f);
    REQUIRE_OK(qp_dump_open(path, QP_DUMP_AUTO, &d, &err), &err);
    REQUIRE_OK(qp_dump_load(d, 0, &t, &err), &err);
    float got[2];
    qp_tensor_read_f32(t, 3, 2, got);
    CHECK(got[0] == 4 && got[1] == 0);
    qp_tensor_free(t);
    qp_dump_close(d);
    free(path);
}

QP_TEST(hdf5_data_in_other_files_is_not_read)
{
    struct qp_error err;
    char *path = qp_test_path(ctx, "ext.h5"), *raw = qp_test_path(ctx, "secret");
    REQUIRE(qp_test_write_file(raw, "0123456789abcdef", 16));
    hsize_t dims[1] = {4};
    for (int k = 0; k < 2; k++) {
        hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
        hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
        hid_t sp = H5Screate_simple(1, dims, NULL);
        if (k == 0) { /* contiguous data in a raw file the creator names */
            H5Pset_external(dcpl, raw, 0, 16);
        } else { /* a virtual dataset made of another file's dataset */
            hid_t src = H5Screate_simple(1, dims, NULL);
            H5Pset_virtual(dcpl, sp, "other.h5", "/x", src);
            H5Sclose(src);
        }
        hid_t ds = H5Dcreate2(f, "d", H5T_IEEE_F32LE, sp, H5P_DEFAULT, dcpl,
                              H5P_DEFAULT);
        CHECK(ds >= 0);
        H5Dclose(ds);
        H5Sclose(sp);
        H5Pclose(dcpl);
        H5Fclose(f);
        struct qp_dump *d;
        struct qp_tensor *t = NULL;
        REQUIRE_OK(qp_dump_open(path, QP_DUMP_AUTO, &d, &err), &err);
        CHECK_FAILS(qp_dump_load(d, 0, &t, &err), QP_E_UNSUPPORTED, &err,
                    k ? "ext.h5': dataset 'd': a virtual dataset (data from "
                        "other datasets or files) is not read"
                      : "ext.h5': dataset 'd': data in external files is not read");
        qp_dump_close(d);
    }
    free(raw);
    free(path);
}

QP_TEST(hdf5_file_image_reads_as_the_file)
{
    struct qp_error err;
    char *path = qp_test_path(ctx, "img.h5");
    struct qp_tensor *src[8];
    size_t n = dt_quantized_set(src);
    const char *meta[] = {"k", "v", NULL};
    REQUIRE(dt_write_dump(path, QP_DUMP_HDF5, src, n, meta, &err));
    char *bytes;
    size_t len;
    REQUIRE_OK(qp_read_file(path, 1 << 24, &bytes, &len, &err), &err);
    struct qp_dump *a, *b;
    REQUIRE_OK(qp_dump_open(path, QP_DUMP_AUTO, &a, &err), &err);
    REQUIRE_OK(qp_h5_open_image("image", bytes, len, &b, &err), &err);
    free(bytes); /* libhdf5 keeps its own copy */
    REQUIRE(qp_dump_count(a) == qp_dump_count(b));
    CHECK_STR(qp_dump_meta(b, "k"), "v");
    for (size_t i = 0; i < qp_dump_count(a); i++) {
        struct qp_tensor *x, *y;
        REQUIRE_OK(qp_dump_load(a, i, &x, &err), &err);
        REQUIRE_OK(qp_dump_load(b, i, &y, &err), &err);
        CHECK_STR(x->name, y->name);
        CHECK(x->nbytes == y->nbytes && !memcmp(x->data, y->data, x->nbytes));
        CHECK((x->qp == NULL) == (y->qp == NULL));
        qp_tensor_free(x);
        qp_tensor_free(y);
    }
    qp_dump_close(a);
    qp_dump_close(b);
    /* a broken image fails naming it */
    CHECK_FAILS(qp_h5_open_image("junk", "not an hdf5 file", 16, &b, &err),
                QP_E_FORMAT, &err, "'junk': cannot open as HDF5");
    dt_free_all(src, n);
    free(path);
}

/* One dataset "d" of 6 values (mem-typed v) of type base cut to prec
 * bits. */
static bool write_six(const char *path, hid_t base, size_t prec, hid_t mem,
                      const void *v)
{
    hsize_t dims[1] = {6};
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    hid_t t = H5Tcopy(base), sp = H5Screate_simple(1, dims, NULL);
    bool ok = f >= 0 && t >= 0 && sp >= 0 && H5Tset_precision(t, prec) >= 0;
    hid_t ds = ok ? H5Dcreate2(f, "d", t, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT)
                  : H5I_INVALID_HID;
    ok = ds >= 0 && H5Dwrite(ds, mem, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) >= 0;
    if (ds >= 0)
        H5Dclose(ds);
    H5Sclose(sp);
    H5Tclose(t);
    return H5Fclose(f) >= 0 && ok;
}

/* Rewrites the n bytes of datatype message msg in path with at[0..k) set to
 * the bytes of val, and expects opening and loading "d" to fail naming the
 * file, the dataset and want. */
static void refused_after_patch(struct qp_test_ctx *ctx, const char *path,
                                const unsigned char *msg, size_t n, size_t at,
                                const unsigned char *val, size_t k,
                                const char *want)
{
    struct qp_error err = {0};
    char *bytes;
    size_t len;
    REQUIRE_OK(qp_read_file(path, 1 << 20, &bytes, &len, &err), &err);
    unsigned char *m = memmem(bytes, len, msg, n);
    REQUIRE(m != NULL);
    memcpy(m + at, val, k);
    FILE *fp = fopen(path, "wb");
    REQUIRE(fp && fwrite(bytes, 1, len, fp) == len && fclose(fp) == 0);
    free(bytes);
    struct qp_dump *d;
    struct qp_tensor *t = NULL;
    enum qp_status st = qp_dump_open(path, QP_DUMP_AUTO, &d, &err);
    if (st == QP_OK) {
        st = qp_dump_load(d, 0, &t, &err);
        CHECK(t == NULL);
        qp_dump_close(d);
    }
    CHECK(st == QP_E_FORMAT);
    CHECK_CONTAINS(err.msg, "bits.h5");
    CHECK_CONTAINS(err.msg, "dataset 'd'");
    CHECK_CONTAINS(err.msg, want);
}

QP_TEST(hdf5_number_type_with_bits_outside_its_bytes_is_refused)
{
    /* the campaign's slow unit: a 2-byte integer declaring precision 65535
     * at offset 65535, which libhdf5 opens and converts bit by bit (5.6 s
     * for a 12 KB file); an n-bit type (12 bits in 2 bytes) still reads */
    struct qp_error err = {0};
    char *path = qp_test_path(ctx, "bits.h5");
    const int16_t v[6] = {-2048, -1, 0, 1, 1000, 2047};
    REQUIRE(write_six(path, H5T_STD_I16LE, 12, H5T_NATIVE_INT16, v));
    struct qp_dump *d;
    struct qp_tensor *t = NULL;
    REQUIRE_OK(qp_dump_open(path, QP_DUMP_AUTO, &d, &err), &err);
    REQUIRE_OK(qp_dump_load(d, 0, &t, &err), &err);
    CHECK(t->dtype == QP_DTYPE_I16 && t->nbytes == sizeof v &&
          !memcmp(t->data, v, sizeof v));
    qp_tensor_free(t);
    qp_dump_close(d);

    /* the fixed-point datatype message (version 1, signed, 2 bytes, offset
     * 0, precision 16) with offset and precision set to 65535 */
    REQUIRE(write_six(path, H5T_STD_I16LE, 16, H5T_NATIVE_INT16, v));
    static const unsigned char imsg[12] = {0x10, 0x08, 0, 0, 2, 0, 0, 0, 0, 0, 16, 0};
    static const unsigned char ff[4] = {0xff, 0xff, 0xff, 0xff};
    refused_after_patch(ctx, path, imsg, sizeof imsg, 8, ff, 4,
                        "2-byte integer type places bits outside its bytes "
                        "(precision 65535, offset 65535)");

    /* the IEEE float message (little-endian f32: sign bit 31, exponent 8
     * bits at 23, mantissa 23 bits at 0, bias 127) with its mantissa moved
     * to bit 48, past the 32 bits */
    const float fv[6] = {-2, -1, 0, 0.5f, 1, 3};
    REQUIRE(write_six(path, H5T_IEEE_F32LE, 32, H5T_NATIVE_FLOAT, fv));
    static const unsigned char fmsg[20] = {0x11, 0x20, 0x1f, 0, 4, 0, 0, 0, 0, 0,
                                           32, 0, 23, 8, 0, 23, 127, 0, 0, 0};
    static const unsigned char at48[1] = {48};
    refused_after_patch(ctx, path, fmsg, sizeof fmsg, 14, at48, 1,
                        "4-byte float type places bits outside its bytes (sign "
                        "at bit 31, exponent 8 bits at 23, mantissa 23 bits at 48)");
    free(path);
}
