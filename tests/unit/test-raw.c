/* Unit tests of formats/dump-raw*.c and formats/qnn-encodings.c: round
 * trips through the index, sidecars, qnn-net-run folders with QNN / AIMET
 * encodings, and one test per malformed case. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/fileio.h"
#include "formats/dump-raw.h"
#include "formats/json.h"
#include "formats/qnn-encodings.h"
#include "tests/test.h"
#include "tests/unit/dump-test-util.h"

/* Writes text (or len bytes of data) to dir/rel, creating folders. */
static bool put(const char *dir, const char *rel, const void *data, size_t len)
{
    char *p = qp_path_join(dir, rel);
    for (char *s = strchr(p + strlen(dir) + 1, '/'); s; s = strchr(s + 1, '/')) {
        *s = '\0';
        mkdir(p, 0755);
        *s = '/';
    }
    bool ok = qp_test_write_file(p, data, len);
    free(p);
    return ok;
}

static bool put_text(const char *dir, const char *rel, const char *text)
{
    return put(dir, rel, text, strlen(text));
}

static char *subdir(struct qp_test_ctx *ctx, const char *name)
{
    char *d = qp_test_path(ctx, name);
    mkdir(d, 0755);
    return d;
}

QP_TEST(raw_roundtrip_every_dtype_quantized_and_metadata)
{
    struct qp_error err;
    char *dir = qp_test_path(ctx, "dump");
    struct qp_tensor *src[DT_EVERY_DTYPE_MAX + 6];
    size_t n = dt_every_dtype_set(src, "/conv1/Conv_output_0:0 \"x\"");
    n += dt_quantized_set(src + n);
    const char *meta[] = {"device", "htp v73", NULL};
    REQUIRE(dt_write_dump(dir, QP_DUMP_RAW_DIR, src, n, meta, &err));
    dt_check_dump(ctx, dir, src, n);
    struct qp_dump *d;
    REQUIRE_OK(qp_dump_open(dir, QP_DUMP_AUTO, &d, &err), &err);
    CHECK_INT(d->format, QP_DUMP_RAW_DIR);
    CHECK_STR(qp_dump_meta(d, "device"), "htp v73");
    qp_dump_close(d);
    /* the files themselves: bare bytes, and the index describing them */
    char *f = qp_path_join(dir, "t.i16.raw"), *bytes;
    size_t len;
    REQUIRE_OK(qp_read_file(f, 1 << 20, &bytes, &len, &err), &err);
    CHECK(len == 60 && !memcmp(bytes, src[QP_DTYPE_I16]->data, 60));
    free(bytes);
    free(f);
    f = qp_path_join(dir, "%2Fconv1%2FConv_output_0%3A0%20%22x%22.raw");
    CHECK(access(f, F_OK) == 0);
    free(f);
    f = qp_path_join(dir, QP_RAW_INDEX);
    struct qp_json *idx;
    REQUIRE_OK(qp_json_load(f, &idx, &err), &err);
    const struct qp_json *w4 = qp_json_get(qp_json_get(idx, "tensors"), "w4");
    const char *s;
    double v;
    CHECK(qp_json_str(qp_json_get(w4, "file"), &s) && !strcmp(s, "w4.raw"));
    CHECK(qp_json_str(qp_json_get(w4, "dtype"), &s) && !strcmp(s, "i4"));
    CHECK(qp_json_num(qp_json_get(w4, "block_size"), &v) && v == 4);
    CHECK_INT(qp_json_size(qp_json_get(w4, "scale")), 6); /* [3, 2] blocks */
    qp_json_free(idx);
    free(f);
    dt_free_all(src, n);
    free(dir);
}

QP_TEST(raw_sidecars_and_defaults)
{
    struct qp_error err;
    char *dir = subdir(ctx, "side");
    const int8_t q[6] = {-4, 0, 4, 8, -128, 127};
    const float fl[4] = {1.5f, -2, 0.25f, 8};
    REQUIRE(put(dir, "act.raw", q, 6));
    REQUIRE(put_text(dir, "act.json",
                     "{\"dtype\": \"int8\", \"shape\": [2, 3], \"layout\": \"NHWC\","
                     " \"scale\": [0.5, 0.25, 2], \"zero_point\": [1, 0, -1]}"));
    REQUIRE(put(dir, "plain.bin", fl, 16));
    REQUIRE(put(dir, "shaped.raw", fl, 16));
    REQUIRE(put_text(dir, "shaped.json", "{\"shape\": [2, 2]}"));
    REQUIRE(put(dir, "sub/deep%3A0.raw", fl, 8));
    REQUIRE(put_text(dir, "notes.json", "{\"unrelated\": true}")); /* ignored */
    struct qp_dump *d;
    REQUIRE_OK(qp_dump_open(dir, QP_DUMP_AUTO, &d, &err), &err);
    CHECK_INT(d->format, QP_DUMP_RAW_DIR);
    REQUIRE(qp_dump_count(d) == 4);
    CHECK_STR(qp_dump_entry(d, 0)->name, "act");
    CHECK_STR(qp_dump_entry(d, 1)->name, "plain");
    CHECK_STR(qp_dump_entry(d, 2)->name, "shaped");
    CHECK_STR(qp_dump_entry(d, 3)->name, "sub/deep:0");
    const struct qp_tensor *e = qp_dump_entry(d, 0);
    CHECK_INT(e->dtype, QP_DTYPE_I8);
    CHECK_STR(e->layout, "NHWC");
    REQUIRE(e->qp != NULL);
    CHECK_INT(e->qp->axis, 1); /* 3 scales: the dim of length 3 */
    e = qp_dump_entry(d, 1);
    CHECK(e->dtype == QP_DTYPE_F32 && e->ndim == 1 && e->shape[0] == 4);
    e = qp_dump_entry(d, 2);
    CHECK(e->dtype == QP_DTYPE_F32 && e->ndim == 2 && e->shape[1] == 2);
    struct qp_tensor *t;
    REQUIRE_OK(qp_dump_load(d, 0, &t, &err), &err);
    float out[6];
    qp_tensor_read_f32(t, 0, 6, out);
    CHECK_NEAR(out[0], 0.5 * (-4 - 1), 0);
    CHECK_NEAR(out[1], 0.25 * 0, 0);
    CHECK_NEAR(out[2], 2 * (4 + 1), 0);
    CHECK_NEAR(out[4], 0.25 * -128, 0);
    CHECK(t->map != NULL); /* mapped, not copied */
    qp_tensor_free(t);
    REQUIRE_OK(qp_dump_load(d, 3, &t, &err), &err);
    CHECK_NEAR(((float *)t->data)[1], -2, 0);
    qp_tensor_free(t);
    qp_dump_close(d);
    free(dir);
}

QP_TEST(raw_qnn_net_run_folder_with_legacy_encodings)
{
    struct qp_error err;
    char *dir = subdir(ctx, "qnn");
    const float fl[4] = {0.5f, 1, -1, 2};
    const uint8_t u[4] = {0, 3, 131, 255};
    const int16_t s16[2] = {-300, 300};
    REQUIRE(put(dir, "Result_0/_conv1_Conv_output_0.raw", fl, 16));
    REQUIRE(put(dir, "Result_0/logits_native.raw", u, 4));
    REQUIRE(put(dir, "Result_0/_7_native.raw", s16, 4));
    REQUIRE(put_text(dir, "model.encodings",
                     "{\"activation_encodings\": {"
                     " \"/conv1/Conv_output_0\": [{\"bitwidth\": 8, \"offset\": -128,"
                     "   \"scale\": 0.1, \"min\": -12.8, \"max\": 12.7}],"
                     " \"logits\": [{\"bitwidth\": 8, \"dtype\": \"int\", \"offset\": -3,"
                     "   \"scale\": 0.5, \"is_symmetric\": \"False\"}],"
                     " \"7\": [{\"bitwidth\": 16, \"offset\": 0, \"scale\": 0.01,"
                     "   \"is_symmetric\": \"True\"}],"
                     " \"minmax_only\": [{\"bitwidth\": 8, \"min\": 0, \"max\": 1}],"
                     " \"fp\": [{\"bitwidth\": 16, \"dtype\": \"float\"}]},"
                     " \"param_encodings\": {}}"));
    struct qp_dump *d;
    REQUIRE_OK(qp_dump_open(dir, QP_DUMP_AUTO, &d, &err), &err);
    REQUIRE(qp_dump_count(d) == 3);
    /* Result_0/ dropped; _native dropped; floats stay floats */
    CHECK_STR(qp_dump_entry(d, 0)->name, "_7");
    CHECK_STR(qp_dump_entry(d, 1)->name, "_conv1_Conv_output_0");
    CHECK_STR(qp_dump_entry(d, 2)->name, "logits");
    CHECK_INT(qp_dump_entry(d, 1)->dtype, QP_DTYPE_F32);
    CHECK(qp_dump_entry(d, 1)->qp == NULL);
    const struct qp_tensor *e = qp_dump_entry(d, 2);
    CHECK_INT(e->dtype, QP_DTYPE_U8);
    REQUIRE(e->qp != NULL);
    CHECK_INT(e->qp->zero_point[0], 3); /* QNN offset -3 is zero point 3 */
    e = qp_dump_entry(d, 0);
    CHECK_INT(e->dtype, QP_DTYPE_I16); /* symmetric with offset 0: signed */
    struct qp_tensor *t;
    REQUIRE_OK(qp_dump_load(d, 2, &t, &err), &err);
    float out[4];
    qp_tensor_read_f32(t, 0, 4, out);
    CHECK_NEAR(out[0], 0.5 * (0 - 3), 0);
    CHECK_NEAR(out[2], 0.5 * (131 - 3), 0);
    CHECK_NEAR(out[3], 0.5 * (255 - 3), 0);
    qp_tensor_free(t);
    REQUIRE_OK(qp_dump_load(d, 0, &t, &err), &err);
    qp_tensor_read_f32(t, 0, 2, out);
    CHECK_NEAR(out[0], -3, 1e-5);
    qp_tensor_free(t);
    qp_dump_close(d);

    /* two inputs: Result_0 and Result_1 keep their folders; a float and a
     * native file of one output keep both names */
    REQUIRE(put(dir, "Result_1/logits.raw", fl, 16));
    REQUIRE(put(dir, "Result_1/logits_native.raw", u, 4));
    REQUIRE_OK(qp_dump_open(dir, QP_DUMP_AUTO, &d, &err), &err);
    REQUIRE(qp_dump_count(d) == 5);
    CHECK_STR(qp_dump_entry(d, 2)->name, "Result_0/logits");
    CHECK_STR(qp_dump_entry(d, 3)->name, "Result_1/logits");
    CHECK_STR(qp_dump_entry(d, 4)->name, "Result_1/logits_native");
    CHECK_INT(qp_dump_entry(d, 4)->dtype, QP_DTYPE_F32); /* no encoding named so */
    qp_dump_close(d);
    free(dir);
}

QP_TEST(raw_aimet_v1_encodings_per_channel)
{
    struct qp_error err;
    char *dir = subdir(ctx, "v1");
    const int8_t w[8] = {1, 2, 3, 4, -1, -2, -3, -4};
    REQUIRE(put(dir, "w.raw", w, 8));
    REQUIRE(put_text(dir, "w.json", "{\"dtype\": \"i8\", \"shape\": [2, 4]}"));
    REQUIRE(put_text(dir, "enc.json",
                     "{\"version\": \"1.0.0\", \"activation_encodings\": [],"
                     " \"param_encodings\": [{\"name\": \"w\", \"bw\": 8,"
                     " \"dtype\": \"INT\", \"enc_type\": \"PER_CHANNEL\","
                     " \"is_sym\": true, \"scale\": [0.1, 0.2, 0.3, 0.4],"
                     " \"offset\": [0, 0, 0, 0]}]}"));
    struct qp_dump *d;
    REQUIRE_OK(qp_dump_open(dir, QP_DUMP_AUTO, &d, &err), &err);
    REQUIRE(qp_dump_count(d) == 1);
    const struct qp_tensor *e = qp_dump_entry(d, 0);
    REQUIRE(e->qp != NULL);
    CHECK_INT(e->qp->axis, 1); /* channels last */
    CHECK_INT(e->qp->count, 4);
    struct qp_tensor *t;
    REQUIRE_OK(qp_dump_load(d, 0, &t, &err), &err);
    float out[8];
    qp_tensor_read_f32(t, 0, 8, out);
    CHECK_NEAR(out[3], 0.4f * 4, 1e-6);
    CHECK_NEAR(out[5], 0.2f * -2, 1e-6);
    qp_tensor_free(t);
    qp_dump_close(d);
    free(dir);
}

QP_TEST(raw_qnn_name_mangling)
{
    char out[64];
    qp_qnn_mangle("/conv1/Conv_output_0", true, out);
    CHECK_STR(out, "_conv1_Conv_output_0");
    qp_qnn_mangle("7", true, out);
    CHECK_STR(out, "_7");
    qp_qnn_mangle("a::b.c", true, out);
    CHECK_STR(out, "a_b_c");
    qp_qnn_mangle("a::b.c", false, out);
    CHECK_STR(out, "a__b_c");
}

/* Opens dir expecting failure with status and message. */
#define CHECK_OPEN_FAILS(dir, status, msg)                                      \
    do {                                                                       \
        struct qp_dump *d_;                                                    \
        CHECK_FAILS(qp_dump_open(dir, QP_DUMP_RAW_DIR, &d_, &err), status,     \
                    &err, msg);                                                \
    } while (0)

QP_TEST(raw_rejects_malformed_sidecars_and_sizes)
{
    struct qp_error err;
    char *dir = subdir(ctx, "bad");
    const int8_t q[6] = {0};
    REQUIRE(put(dir, "x.raw", q, 6));
    static const struct {
        const char *sidecar;
        enum qp_status status;
        const char *msg;
    } cases[] = {
        {"{\"dtype\": 5}", QP_E_FORMAT, "x.json': dtype must be a dtype name"},
        {"{\"dtype\": \"int7\"}", QP_E_FORMAT, "x.json': dtype must be a dtype name"},
        {"{\"shape\": \"2\"}", QP_E_FORMAT, "x.json': shape is a string, expected an array"},
        {"{\"shape\": [2, -3]}", QP_E_FORMAT, "x.json': shape[1] is not a non-negative"},
        {"{\"dtype\": \"i8\", \"scale\": \"x\"}", QP_E_FORMAT,
         "x.json': scale must be a finite number or an array of them"},
        {"{\"dtype\": \"i8\", \"scale\": [], \"zero_point\": []}", QP_E_FORMAT,
         "x.json': scale is empty"},
        {"{\"dtype\": \"i8\", \"scale\": 1, \"zero_point\": 1.5}", QP_E_FORMAT,
         "x.json': zero_point must be a 32-bit integer or an array of them"},
        {"{\"dtype\": \"i8\", \"scale\": [1, 2], \"zero_point\": [1]}", QP_E_FORMAT,
         "x.json': zero_point has 1 values, scale has 2"},
        {"{\"dtype\": \"i8\", \"scale\": 1, \"axis\": 9}", QP_E_FORMAT,
         "x.json': axis must be an integer in [-1, 7]"},
        {"{\"dtype\": \"i8\", \"scale\": 1, \"block_size\": 2}", QP_E_FORMAT,
         "x.json': block_size must be a non-negative integer beside an axis"},
        {"{\"dtype\": \"i8\", \"axis\": 0}", QP_E_FORMAT, "x.json': axis without scale"},
        {"{\"layout\": [1]}", QP_E_FORMAT, "x.json': layout must be a string"},
        {"[1, 2]", QP_E_FORMAT, "x.json' is a array, expected an object"},
        {"{\"dtype\": \"i8\",", QP_E_FORMAT, "x.json': invalid JSON at line 1"},
        {"{\"dtype\": \"i8\", \"shape\": [5]}", QP_E_FORMAT,
         "x.raw': i8 [5] needs 5 bytes, the file has 6"},
        {"{\"shape\": [2]}", QP_E_FORMAT,
         "x.raw': no dtype given, and f32 [2] needs 8 bytes, the file has 6"},
        {"{\"dtype\": \"f32\"}", QP_E_FORMAT,
         "x.raw': 6 bytes are not a whole number of f32 values"},
        {"{\"dtype\": \"i4\"}", QP_E_FORMAT, "x.raw': packed i4 data needs a shape"},
        {"{\"dtype\": \"i8\", \"shape\": [6], \"scale\": [1, 2, 3, 4]}", QP_E_FORMAT,
         "x.raw': 4 scales fit no dim of [6]"},
        {"{\"dtype\": \"i8\", \"shape\": [2, 3], \"scale\": [1, 2], \"axis\": 1}",
         QP_E_SHAPE, "x.raw': tensor 'x': 2 scales given, axis 1 block 0 needs 3"},
        {"{}", QP_E_FORMAT, "x.raw': 6 bytes are not a whole number of f32 values "
                            "(no dtype given)"},
        /* a repeated key was read as its first value */
        {"{\"dtype\": \"i8\", \"dtype\": \"f32\"}", QP_E_FORMAT,
         "x.json': key \"dtype\" appears twice in the top-level object"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        REQUIRE(put_text(dir, "x.json", cases[i].sidecar));
        CHECK_OPEN_FAILS(dir, cases[i].status, cases[i].msg);
    }
    free(dir);
}

QP_TEST(raw_rejects_malformed_indexes_and_encodings)
{
    struct qp_error err;
    char *dir = subdir(ctx, "badidx");
    const float f[2] = {1, 2};
    REQUIRE(put(dir, "a.raw", f, 8));
    static const struct {
        const char *file, *text;
        enum qp_status status;
        const char *msg;
    } cases[] = {
        {QP_RAW_INDEX, "{\"tensors\": [1]}", QP_E_FORMAT,
         "index.json': tensors is a array, expected an object"},
        {QP_RAW_INDEX, "{\"tensors\": {\"a\": {\"dtype\": \"f32\"}}}", QP_E_FORMAT,
         "index.json': tensor 'a': file must name a file inside the folder"},
        {QP_RAW_INDEX, "{\"tensors\": {\"a\": {\"file\": \"../a.raw\"}}}", QP_E_FORMAT,
         "index.json': tensor 'a': file must name a file inside the folder"},
        {QP_RAW_INDEX, "{\"tensors\": {\"a\": {\"file\": \"gone.raw\"}}}", QP_E_IO,
         "gone.raw': cannot open: not a readable file"},
        {QP_RAW_INDEX, "{\"tensors\": {\"a\": {\"file\": \"a.raw\", \"dtype\": 1}}}",
         QP_E_FORMAT, "index.json': tensor 'a': dtype must be a dtype name"},
        {QP_RAW_INDEX, "{\"metadata\": {\"k\": 1}, \"tensors\": {}}", QP_E_FORMAT,
         "index.json': metadata value 'k' is a number, expected a string"},
        {QP_RAW_INDEX, "{\"tensors\": {\"b\": {\"file\": \"a.raw\"},"
                       " \"b\": {\"file\": \"a.raw\"}}}", QP_E_FORMAT,
         "key \"b\" appears twice in \"tensors\""},
        {QP_RAW_INDEX, "{\"tensors\": ", QP_E_FORMAT, "index.json': invalid JSON"},
        {"e.json", "{\"activation_encodings\": 3}", QP_E_FORMAT,
         "e.json': activation_encodings is a number, expected an object or a list"},
        {"e.json", "{\"activation_encodings\": {\"a\": [{\"bitwidth\": \"8\","
                   " \"scale\": 1}]}}", QP_E_FORMAT,
         "e.json': activation_encodings['a']: bitwidth is not an integer in [1, 32]"},
        {"e.json", "{\"activation_encodings\": {\"a\": [{\"bitwidth\": 8,"
                   " \"scale\": \"1\"}]}}", QP_E_FORMAT,
         "e.json': activation_encodings['a'][0]: scale is not a finite number"},
        {"e.json", "{\"param_encodings\": {\"a\": [{\"bitwidth\": 8, \"scale\": 1,"
                   " \"offset\": 0.5}]}}", QP_E_FORMAT,
         "e.json': param_encodings['a'][0]: offset is not an integer"},
        {"e.json", "{\"param_encodings\": {\"a\": [3]}}", QP_E_FORMAT,
         "e.json': param_encodings['a'] is a number, expected a list of encoding"},
        {"e.json", "{\"param_encodings\": [{\"bw\": 8, \"scale\": [1]}]}", QP_E_FORMAT,
         "e.json': param_encodings[0] is not an object with a name"},
        {"e.json", "{\"param_encodings\": [{\"name\": \"a\", \"bw\": 8, \"scale\": [1, 2],"
                   " \"offset\": [0]}]}", QP_E_FORMAT,
         "e.json': param_encodings['a']: scale and offset have different lengths"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *p = qp_path_join(dir, cases[i].file);
        REQUIRE(put_text(dir, cases[i].file, cases[i].text));
        CHECK_OPEN_FAILS(dir, cases[i].status, cases[i].msg);
        CHECK_CONTAINS(err.msg, "badidx");
        unlink(p);
        free(p);
    }
    /* two indexes */
    REQUIRE(put_text(dir, "i1.json", "{\"tensors\": {}}"));
    REQUIRE(put_text(dir, "i2.json", "{\"tensors\": {}}"));
    CHECK_OPEN_FAILS(dir, QP_E_FORMAT, "two index files");
    free(dir);
    /* a native file whose encoding has no integer type of its width */
    dir = subdir(ctx, "native4");
    REQUIRE(put(dir, "q_native.raw", f, 2));
    REQUIRE(put_text(dir, "e.json", "{\"activation_encodings\": {\"q\": [{\"bitwidth\":"
                                    " 4, \"scale\": 1, \"offset\": 0}]}}"));
    CHECK_OPEN_FAILS(dir, QP_E_UNSUPPORTED,
                     "q_native.raw': no dtype for the 4-bit encoding of this native "
                     "file; give one in a sidecar");
    free(dir);
}

QP_TEST(raw_writer_is_atomic_and_refuses_nonfinite_scales)
{
    struct qp_error err;
    const char *tmp = qp_test_tmpdir(ctx);
    char *dir = qp_test_path(ctx, "out");
    int64_t s[1] = {2};
    struct qp_tensor *t = dt_pattern_tensor("q", QP_DTYPE_I8, 1, s, 1);
    float sc = INFINITY;
    REQUIRE_OK(qp_tensor_set_qparams(t, 1, &sc, NULL, -1, 0, &err), &err);
    struct qp_dump_writer *w;
    REQUIRE_OK(qp_dump_writer_open(dir, QP_DUMP_RAW_DIR, &w, &err), &err);
    CHECK_INT(dt_count_files(tmp), 1); /* the hidden temporary folder */
    CHECK_FAILS(qp_dump_writer_add(w, t, &err), QP_E_UNSUPPORTED, &err,
                "tensor 'q': scale 0 is not finite");
    qp_dump_writer_abort(w);
    CHECK_INT(dt_count_files(tmp), 0);
    qp_tensor_free(t);
    free(dir);
}
