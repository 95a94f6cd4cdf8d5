/* Unit tests of formats/hdf5*.c: round trips, h5dump's view of our files,
 * files written with the HDF5 API the way other tools write them, and one
 * test per malformed case the reader rejects. */
#include <hdf5.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/fileio.h"
#include "formats/dump.h"
#include "tests/test.h"
#include "tests/unit/dump-test-util.h"

QP_TEST(hdf5_roundtrip_every_dtype_quantized_and_metadata)
{
    struct qp_error err;
    char *path = qp_test_path(ctx, "all.h5");
    struct qp_tensor *src[DT_EVERY_DTYPE_MAX + 6];
    size_t n = dt_every_dtype_set(src, "/model/layers.0/MatMul_output_0");
    n += dt_quantized_set(src + n);
    const char *meta[] = {"scheme:w4", "w4g4", "made by", "qprobe \"test\"", NULL};
    REQUIRE(dt_write_dump(path, QP_DUMP_AUTO, src, n, meta, &err));
    dt_check_dump(ctx, path, src, n);
    struct qp_dump *d;
    REQUIRE_OK(qp_dump_open(path, QP_DUMP_AUTO, &d, &err), &err);
    CHECK_INT(d->format, QP_DUMP_HDF5);
    CHECK_INT(qp_dump_meta_count(d), 2);
    const char *k, *v;
    qp_dump_meta_at(d, 1, &k, &v);
    CHECK_STR(k, "made by");
    CHECK_STR(v, "qprobe \"test\"");
    qp_dump_close(d);
    dt_free_all(src, n);
    free(path);
}

QP_TEST(hdf5_names_become_groups_or_escape_cleanly)
{
    struct qp_error err;
    char *path = qp_test_path(ctx, "names.h5");
    int64_t s[1] = {2};
    /* groups list in creation order, so "g/b" comes right after "g/a" */
    const char *names[] = {"g/a", "x", "g/b", "x/y", "", "a//b", "./c", "d/..",
                           "/g/c", "ü/ñ"};
    size_t n = sizeof names / sizeof names[0];
    struct qp_tensor *t[10];
    for (size_t i = 0; i < n; i++)
        t[i] = dt_pattern_tensor(names[i], QP_DTYPE_F32, 1, s, (unsigned)i);
    REQUIRE(dt_write_dump(path, QP_DUMP_HDF5, t, n, NULL, &err));
    struct qp_tensor *want[10] = {t[0], t[2], t[8], t[1], t[3],
                                  t[4], t[5], t[6], t[7], t[9]};
    dt_check_dump(ctx, path, want, n);
    /* as h5py would see them */
    char cmd[600];
    snprintf(cmd, sizeof cmd, "h5ls -r '%s'", path);
    FILE *p = popen(cmd, "r");
    char out[4096] = {0};
    REQUIRE(p != NULL);
    size_t got = fread(out, 1, sizeof out - 1, p);
    out[got] = '\0';
    pclose(p);
    CHECK_CONTAINS(out, "/g/a ");
    CHECK_CONTAINS(out, "/g/b ");
    CHECK_CONTAINS(out, "/g/c "); /* "/g/c": a path, its name in an attribute */
    CHECK_CONTAINS(out, "/x%2Fy ");      /* x is a dataset: escaped at the root */
    CHECK_CONTAINS(out, "/~0 ");         /* the empty name */
    CHECK_CONTAINS(out, "/a%2F%2Fb ");
    CHECK_CONTAINS(out, "/%2E%2Fc ");
    CHECK_CONTAINS(out, "/\\303\\274/\\303\\261 "); /* h5ls prints "/ü/ñ" in octal */
    dt_free_all(t, n);
    free(path);
}

/* Runs a command and returns its output (malloc'd). */
static char *run(const char *cmd)
{
    FILE *p = popen(cmd, "r");
    if (!p)
        return NULL;
    size_t cap = 1 << 16, n = 0;
    char *out = malloc(cap);
    size_t k;
    while (out && (k = fread(out + n, 1, cap - n - 1, p)) > 0)
        n += k;
    if (out)
        out[n] = '\0';
    pclose(p);
    return out;
}

QP_TEST(hdf5_files_read_by_h5dump_with_names_types_and_attributes)
{
    struct qp_error err;
    char *path = qp_test_path(ctx, "dump.h5");
    int64_t s[2] = {2, 3};
    struct qp_tensor *t[4] = {
        dt_pattern_tensor("encoder/conv1/weight", QP_DTYPE_I8, 2, s, 1),
        dt_pattern_tensor("encoder/act", QP_DTYPE_F32, 2, s, 2),
        dt_pattern_tensor("half", QP_DTYPE_F16, 2, s, 3),
        dt_pattern_tensor("w4", QP_DTYPE_I4, 2, s, 4),
    };
    float sc[2] = {0.5f, 0.25f};
    int32_t zp[2] = {3, -1};
    REQUIRE_OK(qp_tensor_set_qparams(t[0], 2, sc, zp, 0, 0, &err), &err);
    REQUIRE_OK(qp_tensor_set_layout(t[1], "NHWC", &err), &err);
    const char *meta[] = {"scheme", "w8c", NULL};
    REQUIRE(dt_write_dump(path, QP_DUMP_HDF5, t, 4, meta, &err));
    char cmd[600];
    snprintf(cmd, sizeof cmd, "h5dump -H -A '%s' 2>&1", path);
    char *out = run(cmd);
    REQUIRE(out != NULL);
    CHECK_CONTAINS(out, "GROUP \"encoder\"");
    CHECK_CONTAINS(out, "GROUP \"conv1\"");
    CHECK_CONTAINS(out, "DATASET \"weight\" {\n            DATATYPE  H5T_STD_I8LE\n"
                        "            DATASPACE  SIMPLE { ( 2, 3 ) / ( 2, 3 ) }");
    CHECK_CONTAINS(out, "ATTRIBUTE \"scale\" {\n               DATATYPE  "
                        "H5T_IEEE_F32LE\n               DATASPACE  SIMPLE { ( 2 ) / ( 2 ) }");
    CHECK_CONTAINS(out, "ATTRIBUTE \"zero_point\"");
    CHECK_CONTAINS(out, "ATTRIBUTE \"axis\" {\n               DATATYPE  H5T_STD_I32LE\n"
                        "               DATASPACE  SCALAR");
    CHECK_CONTAINS(out, "ATTRIBUTE \"block_size\"");
    CHECK_CONTAINS(out, "DATASET \"act\" {\n         DATATYPE  H5T_IEEE_F32LE");
    CHECK_CONTAINS(out, "ATTRIBUTE \"layout\"");
    CHECK_CONTAINS(out, "16-bit little-endian floating-point");
    CHECK_CONTAINS(out, "ATTRIBUTE \"scheme\"");
    free(out);
    /* values: the scales and the unpacked 4-bit data */
    snprintf(cmd, sizeof cmd, "h5dump -a /encoder/conv1/weight/scale -a /w4/dtype "
             "-d /w4 '%s' 2>&1", path);
    out = run(cmd);
    REQUIRE(out != NULL);
    CHECK_CONTAINS(out, "(0): 0.5, 0.25");
    CHECK_CONTAINS(out, "\"i4\"");
    char row[64];
    snprintf(row, sizeof row, "(0,0): %d, %d, %d,",
             (int)qp_packed_get(QP_DTYPE_I4, t[3]->data, 0),
             (int)qp_packed_get(QP_DTYPE_I4, t[3]->data, 1),
             (int)qp_packed_get(QP_DTYPE_I4, t[3]->data, 2));
    CHECK_CONTAINS(out, row);
    free(out);
    dt_free_all(t, 4);
    free(path);
}

/* A dataset written with the HDF5 API; dcpl may be H5P_DEFAULT. */
static hid_t make_ds(hid_t loc, const char *name, hid_t type, int nd,
                     const hsize_t *dims, hid_t dcpl, const void *data)
{
    hid_t sp = nd ? H5Screate_simple(nd, dims, NULL) : H5Screate(H5S_SCALAR);
    hid_t ds = H5Dcreate2(loc, name, type, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    if (data)
        H5Dwrite(ds, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data);
    H5Sclose(sp);
    return ds;
}

static void attr(hid_t obj, const char *name, hid_t type, hsize_t n,
                 const void *v)
{
    hid_t sp = n ? H5Screate_simple(1, &n, NULL) : H5Screate(H5S_SCALAR);
    hid_t a = H5Acreate2(obj, name, type, sp, H5P_DEFAULT, H5P_DEFAULT);
    H5Awrite(a, type, v);
    H5Aclose(a);
    H5Sclose(sp);
}

static void fixed_str_attr(hid_t obj, const char *name, const char *v)
{
    hid_t t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, strlen(v) + 3);
    H5Tset_strpad(t, H5T_STR_SPACEPAD);
    char buf[64];
    snprintf(buf, sizeof buf, "%s   ", v);
    attr(obj, name, t, 0, buf);
    H5Tclose(t);
}

QP_TEST(hdf5_reads_chunked_compressed_and_foreign_files)
{
    struct qp_error err;
    char *path = qp_test_path(ctx, "foreign.h5");
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    REQUIRE(f >= 0);
    /* a chunked, shuffled, gzip-compressed f32 [6,5] */
    float v[30];
    for (int i = 0; i < 30; i++)
        v[i] = (float)i * 0.5f - 3;
    hsize_t d65[2] = {6, 5}, chunk[2] = {4, 2};
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_chunk(dcpl, 2, chunk);
    H5Pset_shuffle(dcpl);
    H5Pset_deflate(dcpl, 6);
    hid_t ds = make_ds(f, "zipped", H5T_NATIVE_FLOAT, 2, d65, dcpl, v);
    int32_t id = 5; /* attributes another tool means otherwise: ignored */
    attr(ds, "name", H5T_NATIVE_INT32, 0, &id);
    fixed_str_attr(ds, "dtype", "float32");
    H5Dclose(ds);
    H5Pclose(dcpl);
    /* big-endian int16 with quantization attributes but no axis */
    int16_t q[6] = {-3, -2, -1, 1, 2, 300};
    hsize_t d23[2] = {2, 3};
    ds = make_ds(f, "be", H5T_STD_I16BE, 2, d23, H5P_DEFAULT, NULL);
    H5Dwrite(ds, H5T_NATIVE_INT16, H5S_ALL, H5S_ALL, H5P_DEFAULT, q);
    double sc[3] = {0.5, 0.25, 2};
    int64_t zp[3] = {1, 0, -1};
    attr(ds, "scale", H5T_IEEE_F64LE, 3, sc);
    attr(ds, "zero_point", H5T_STD_I64LE, 3, zp);
    fixed_str_attr(ds, "layout", "NC");
    H5Dclose(ds);
    /* a group without creation order: its datasets list in name order */
    hid_t g = H5Gcreate2(f, "grp", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    uint8_t b1[3] = {1, 0, 1};
    hid_t bt = H5Tenum_create(H5T_NATIVE_INT8);
    int8_t e0 = 0, e1 = 1;
    H5Tenum_insert(bt, "FALSE", &e0);
    H5Tenum_insert(bt, "TRUE", &e1);
    hsize_t d3[1] = {3};
    H5Dclose(make_ds(g, "zbool", bt, 1, d3, H5P_DEFAULT, b1));
    uint16_t h[3] = {0x3c00, 0xc000, 0x7c00}; /* 1, -2, inf */
    hid_t ht = H5Tcopy(H5T_IEEE_F32BE);       /* a big-endian half */
    H5Tset_fields(ht, 15, 10, 5, 0, 10);
    H5Tset_size(ht, 2);
    H5Tset_ebias(ht, 15);
    hid_t hm = H5Tcopy(H5T_IEEE_F32LE);
    H5Tset_fields(hm, 15, 10, 5, 0, 10);
    H5Tset_size(hm, 2);
    H5Tset_ebias(hm, 15);
    ds = make_ds(g, "ahalf", ht, 1, d3, H5P_DEFAULT, NULL);
    H5Dwrite(ds, hm, H5S_ALL, H5S_ALL, H5P_DEFAULT, h);
    H5Dclose(ds);
    H5Tclose(ht);
    H5Tclose(hm);
    H5Tclose(bt);
    H5Gclose(g);
    int32_t num = 7;
    attr(f, "a_number", H5T_STD_I32LE, 0, &num); /* not metadata: skipped */
    fixed_str_attr(f, "origin", "tool");
    H5Fclose(f);

    struct qp_dump *dp;
    REQUIRE_OK(qp_dump_open(path, QP_DUMP_AUTO, &dp, &err), &err);
    REQUIRE(qp_dump_count(dp) == 4);
    CHECK_STR(qp_dump_entry(dp, 0)->name, "be"); /* root in name order too */
    CHECK_STR(qp_dump_entry(dp, 1)->name, "grp/ahalf");
    CHECK_STR(qp_dump_entry(dp, 2)->name, "grp/zbool");
    CHECK_STR(qp_dump_entry(dp, 3)->name, "zipped");
    CHECK_INT(qp_dump_meta_count(dp), 1);
    CHECK_STR(qp_dump_meta(dp, "origin"), "tool");
    struct qp_tensor *t;
    REQUIRE_OK(qp_dump_load(dp, 3, &t, &err), &err);
    CHECK_INT(t->dtype, QP_DTYPE_F32);
    CHECK(t->ndim == 2 && t->shape[0] == 6 && t->shape[1] == 5);
    CHECK(!memcmp(t->data, v, sizeof v));
    qp_tensor_free(t);
    REQUIRE_OK(qp_dump_load(dp, 0, &t, &err), &err);
    CHECK_INT(t->dtype, QP_DTYPE_I16);
    CHECK(!memcmp(t->data, q, sizeof q));
    REQUIRE(t->qp != NULL);
    CHECK_INT(t->qp->axis, 1); /* inferred: the dim of length 3 */
    CHECK_STR(t->layout, "NC");
    float deq[6];
    qp_tensor_read_f32(t, 0, 6, deq);
    CHECK_NEAR(deq[0], 0.5 * (-3 - 1), 0);
    CHECK_NEAR(deq[2], 2 * (-1 + 1), 0);
    CHECK_NEAR(deq[5], 2 * (300 + 1), 0);
    qp_tensor_free(t);
    REQUIRE_OK(qp_dump_load(dp, 1, &t, &err), &err);
    CHECK_INT(t->dtype, QP_DTYPE_F16);
    CHECK(!memcmp(t->data, h, sizeof h)); /* converted from big-endian */
    qp_tensor_free(t);
    REQUIRE_OK(qp_dump_load(dp, 2, &t, &err), &err);
    CHECK_INT(t->dtype, QP_DTYPE_BOOL);
    CHECK(!memcmp(t->data, b1, 3));
    qp_tensor_free(t);
    qp_dump_close(dp);
    free(path);
}

QP_TEST(hdf5_rejects_malformed_files)
{
    struct qp_error err;
    struct qp_dump *d;
    char *path = qp_test_path(ctx, "bad.h5");
    REQUIRE(qp_test_write_file(path, "not hdf5 at all", 15));
    CHECK_FAILS(qp_dump_open(path, QP_DUMP_HDF5, &d, &err), QP_E_FORMAT, &err,
                "bad.h5': cannot open as HDF5: not an HDF5 file");
    CHECK_FAILS(qp_dump_open("/nonexistent/x.h5", QP_DUMP_AUTO, &d, &err),
                QP_E_IO, &err, "'/nonexistent/x.h5': cannot open");

    /* a good file, then truncated */
    int64_t s[1] = {4096};
    struct qp_tensor *t = dt_pattern_tensor("x", QP_DTYPE_F32, 1, s, 1);
    REQUIRE(dt_write_dump(path, QP_DUMP_HDF5, &t, 1, NULL, &err));
    qp_tensor_free(t);
    char *bytes;
    size_t len;
    REQUIRE_OK(qp_read_file(path, 1 << 24, &bytes, &len, &err), &err);
    REQUIRE(qp_test_write_file(path, bytes, len / 2));
    free(bytes);
    struct qp_tensor *lt = NULL;
    if (qp_dump_open(path, QP_DUMP_AUTO, &d, &err) == QP_OK) {
        /* the header may survive: then reading the data must fail */
        CHECK_FAILS(qp_dump_load(d, 0, &lt, &err), QP_E_FORMAT, &err,
                    "bad.h5': dataset 'x'");
        qp_dump_close(d);
    } else {
        CHECK_CONTAINS(err.msg, "bad.h5'");
    }

    static const struct {
        const char *what;
        enum qp_status status;
        const char *msg;
    } cases[] = {
        {"compound", QP_E_UNSUPPORTED, "dataset 'd': HDF5 compound type is not supported"},
        {"string", QP_E_UNSUPPORTED, "dataset 'd': HDF5 string type is not supported"},
        {"null", QP_E_UNSUPPORTED, "dataset 'd': has no data (null dataspace)"},
        {"9dims", QP_E_UNSUPPORTED, "dataset 'd': 9 dims, at most 8 are supported"},
        {"float24", QP_E_UNSUPPORTED,
         "dataset 'd': 3-byte floats with 8 exponent and 15 mantissa bits"},
        {"packed_range", QP_E_FORMAT, "dataset 'd': value 9 at element 1 is outside i4"},
        {"packed_type", QP_E_FORMAT,
         "dataset 'd': attribute dtype 'i4' does not describe i16 data"},
        {"zp_count", QP_E_FORMAT,
         "dataset 'd': attribute 'zero_point' has 2 values, 'scale' has 3"},
        {"scale_str", QP_E_FORMAT, "dataset 'd': attribute 'scale' is a string, "
                                   "expected numbers"},
        {"no_axis", QP_E_FORMAT, "dataset 'd': 4 scales but no 'axis' attribute"},
        {"bad_axis", QP_E_SHAPE, "dataset 'd': tensor 'd': 3 scales given, axis 0 "
                                 "block 0 needs 2"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *w = cases[i].what;
        hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
        REQUIRE(f >= 0);
        hsize_t d23[2] = {2, 3}, d1[9] = {1, 1, 1, 1, 1, 1, 1, 1, 2};
        int8_t q[6] = {1, 9, 0, 0, 0, 0};
        float sc[4] = {1, 2, 3, 4};
        int32_t zp[2] = {0, 0}, ax = 0;
        hid_t ds;
        if (!strcmp(w, "compound")) {
            hid_t ct = H5Tcreate(H5T_COMPOUND, 8);
            H5Tinsert(ct, "a", 0, H5T_NATIVE_FLOAT);
            H5Tinsert(ct, "b", 4, H5T_NATIVE_FLOAT);
            ds = make_ds(f, "d", ct, 2, d23, H5P_DEFAULT, NULL);
            H5Tclose(ct);
        } else if (!strcmp(w, "string")) {
            hid_t st = H5Tcopy(H5T_C_S1);
            H5Tset_size(st, 8);
            ds = make_ds(f, "d", st, 2, d23, H5P_DEFAULT, NULL);
            H5Tclose(st);
        } else if (!strcmp(w, "null")) {
            hid_t sp = H5Screate(H5S_NULL);
            ds = H5Dcreate2(f, "d", H5T_NATIVE_FLOAT, sp, H5P_DEFAULT, H5P_DEFAULT,
                            H5P_DEFAULT);
            H5Sclose(sp);
        } else if (!strcmp(w, "9dims")) {
            ds = make_ds(f, "d", H5T_NATIVE_FLOAT, 9, d1, H5P_DEFAULT, NULL);
        } else if (!strcmp(w, "float24")) {
            hid_t ft = H5Tcopy(H5T_IEEE_F32LE);
            H5Tset_fields(ft, 23, 15, 8, 0, 15);
            H5Tset_size(ft, 3);
            ds = make_ds(f, "d", ft, 2, d23, H5P_DEFAULT, NULL);
            H5Tclose(ft);
        } else {
            ds = make_ds(f, "d", !strcmp(w, "packed_type") ? H5T_NATIVE_INT16
                                                           : H5T_NATIVE_INT8,
                         2, d23, H5P_DEFAULT, NULL);
            H5Dwrite(ds, H5T_NATIVE_INT8, H5S_ALL, H5S_ALL, H5P_DEFAULT, q);
        }
        if (!strcmp(w, "packed_range") || !strcmp(w, "packed_type")) {
            hid_t st = H5Tcopy(H5T_C_S1);
            H5Tset_size(st, 2);
            attr(ds, "dtype", st, 0, "i4");
            H5Tclose(st);
        }
        if (!strcmp(w, "zp_count") || !strcmp(w, "bad_axis")) {
            attr(ds, "scale", H5T_NATIVE_FLOAT, 3, sc);
            if (w[0] == 'z')
                attr(ds, "zero_point", H5T_NATIVE_INT32, 2, zp);
            else
                attr(ds, "axis", H5T_NATIVE_INT32, 0, &ax);
        }
        if (!strcmp(w, "no_axis"))
            attr(ds, "scale", H5T_NATIVE_FLOAT, 4, sc);
        if (!strcmp(w, "scale_str"))
            fixed_str_attr(ds, "scale", "0.5");
        H5Dclose(ds);
        H5Fclose(f);
        enum qp_status st = qp_dump_open(path, QP_DUMP_AUTO, &d, &err);
        if (!st) { /* value checks happen when loading */
            st = qp_dump_load(d, 0, &lt, &err);
            qp_tensor_free(lt);
            qp_dump_close(d);
        }
        CHECK_FAILS(st, cases[i].status, &err, cases[i].msg);
        CHECK_CONTAINS(err.msg, "bad.h5'");
    }
    free(path);
}

QP_TEST(hdf5_writer_is_atomic)
{
    struct qp_error err;
    const char *dir = qp_test_tmpdir(ctx);
    char *path = qp_test_path(ctx, "w.h5");
    int64_t s[1] = {3};
    struct qp_tensor *t = dt_pattern_tensor("a/b", QP_DTYPE_F64, 1, s, 1);
    struct qp_dump_writer *w;
    REQUIRE_OK(qp_dump_writer_open(path, QP_DUMP_AUTO, &w, &err), &err);
    CHECK_INT(w->format, QP_DUMP_HDF5);
    REQUIRE_OK(qp_dump_writer_add(w, t, &err), &err);
    CHECK(access(path, F_OK) != 0); /* only a hidden temporary so far */
    CHECK_INT(dt_count_files(dir), 1);
    qp_dump_writer_abort(w);
    CHECK_INT(dt_count_files(dir), 0);
    qp_tensor_free(t);
    free(path);
}

QP_TEST(hdf5_scale_attributes_over_64k)
{
    /* 131072 block scales: 512 KiB, past the 64 KiB limit of compact
     * attribute storage */
    struct qp_error err;
    char *path = qp_test_path(ctx, "big.h5");
    int64_t s[2] = {256, 1024};
    struct qp_tensor *t = dt_pattern_tensor("w", QP_DTYPE_I4, 2, s, 3);
    size_t n = 256 * 512;
    float *sc = malloc(n * sizeof *sc);
    for (size_t i = 0; i < n; i++)
        sc[i] = 1.0f / (float)(i + 1);
    REQUIRE_OK(qp_tensor_set_qparams(t, n, sc, NULL, 1, 2, &err), &err);
    REQUIRE(dt_write_dump(path, QP_DUMP_HDF5, &t, 1, NULL, &err));
    dt_check_dump(ctx, path, &t, 1);
    free(sc);
    qp_tensor_free(t);
    free(path);
}
