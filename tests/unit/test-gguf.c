/* tests/unit/test-gguf.c: the GGUF reader on a file ggml wrote
 * (tests/golden/ggml/ggml-written.gguf), the writer reproducing that file
 * byte for byte, and round trips of every value kind and tensor type. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/fileio.h"
#include "core/half.h"
#include "formats/gguf.h"
#include "quant/ggml-quant.h"
#include "tests/test.h"

#define GOLDEN "tests/golden/ggml/"

/* Input vector v of tests/golden/ggml/inputs.bin (see its README), first n
 * values, into x. */
static bool golden_input(int v, size_t n, float *x)
{
    char *buf;
    size_t len, off = 12;
    struct qp_error err;
    if (qp_read_file(GOLDEN "inputs.bin", 1 << 22, &buf, &len, &err))
        return false;
    uint32_t nv;
    memcpy(&nv, buf + 8, 4);
    bool ok = false;
    for (uint32_t i = 0; i < nv && off + 8 <= len; i++) {
        uint32_t k;
        memcpy(&k, buf + off + 4, 4);
        if ((int)i == v && k >= n && off + 8 + 4 * (size_t)n <= len) {
            memcpy(x, buf + off + 8, 4 * n);
            ok = true;
            break;
        }
        off += 8 + 4 * (size_t)k;
    }
    free(buf);
    return ok;
}

static void check_int(struct qp_test_ctx *ctx, const struct qp_gguf *g,
                      const char *key, enum qp_gguf_type t, int64_t want)
{
    const struct qp_gguf_kv *kv = qp_gguf_find(g, key);
    int64_t v = 0;
    struct qp_error err;
    if (!kv || kv->val.type != t || qp_gguf_get_int(g, key, &v, &err) ||
        v != want)
        qp_test_failf(ctx, __FILE__, __LINE__, "key '%s': %s %lld, expected "
                      "%s %lld", key, kv ? qp_gguf_type_name(kv->val.type) : "-",
                      (long long)v, qp_gguf_type_name(t), (long long)want);
}

QP_TEST(gguf_reads_a_file_ggml_wrote)
{
    struct qp_gguf *g;
    struct qp_error err;
    REQUIRE_OK(qp_gguf_load(GOLDEN "ggml-written.gguf", &g, &err), &err);
    CHECK_INT(g->version, 3);
    CHECK_INT(g->alignment, 32);
    CHECK_INT(g->n_kv, 15);
    CHECK_INT(g->n_tensors, 4);
    CHECK_INT(g->data_offset, 704); /* ggml's reader says the same */
    check_int(ctx, g, "test.u8", QP_GGUF_U8, 200);
    check_int(ctx, g, "test.i8", QP_GGUF_I8, -100);
    check_int(ctx, g, "test.u16", QP_GGUF_U16, 60000);
    check_int(ctx, g, "test.i16", QP_GGUF_I16, -30000);
    check_int(ctx, g, "test.u32", QP_GGUF_U32, 4000000000LL);
    check_int(ctx, g, "test.i32", QP_GGUF_I32, -2000000000LL);
    check_int(ctx, g, "test.i64", QP_GGUF_I64, -9000000000000000000LL);
    /* u64 above INT64_MAX: not an int64, but a float */
    int64_t iv;
    CHECK_FAILS(qp_gguf_get_int(g, "test.u64", &iv, &err), QP_E_FORMAT, &err,
                "'" GOLDEN "ggml-written.gguf': key 'test.u64' is too large");
    double d;
    CHECK(qp_gguf_value_float(&qp_gguf_find(g, "test.u64")->val, &d) &&
          d == 18000000000000000000.0);
    CHECK_OK(qp_gguf_get_float(g, "test.f32", &d, &err), &err);
    CHECK(d == (double)0.1f);
    CHECK_OK(qp_gguf_get_float(g, "test.f64", &d, &err), &err);
    CHECK(d == 2.718281828459045);
    bool b = false;
    CHECK_OK(qp_gguf_get_bool(g, "test.bool", &b, &err), &err);
    CHECK(b);
    const char *s;
    size_t len;
    CHECK_OK(qp_gguf_get_str(g, "general.name", &s, &len, &err), &err);
    CHECK(len == 13 && !memcmp(s, "qprobe oracle", 13));
    struct qp_gguf_value a, e;
    REQUIRE_OK(qp_gguf_get_array(g, "tokenizer.ggml.tokens", QP_GGUF_STRING, &a,
                                 &err), &err);
    CHECK_INT(a.count, 4);
    static const char *const toks[] = {"<s>", "</s>", "\xc4\xa0the", ""};
    for (int i = 3; i >= 0; i--) { /* out of order: offsets, not a walk */
        qp_gguf_array_at(&a, (uint64_t)i, &e);
        CHECK(e.type == QP_GGUF_STRING && e.size == strlen(toks[i]) &&
              !memcmp(e.p, toks[i], e.size));
    }
    REQUIRE_OK(qp_gguf_get_array(g, "test.arr_i32", QP_GGUF_I32, &a, &err), &err);
    qp_gguf_array_at(&a, 1, &e);
    CHECK(a.count == 3 && qp_gguf_value_int(&e, &iv) && iv == -2);
    REQUIRE_OK(qp_gguf_get_array(g, "test.arr_f32", QP_GGUF_F32, &a, &err), &err);
    qp_gguf_array_at(&a, 1, &e);
    CHECK(qp_gguf_value_float(&e, &d) && d == -1.25);
    /* typed look-ups name the file, key and types */
    CHECK_FAILS(qp_gguf_get_int(g, "general.name", &iv, &err), QP_E_FORMAT,
                &err, "key 'general.name' is string, expected an integer");
    CHECK_FAILS(qp_gguf_get_array(g, "test.arr_i32", QP_GGUF_F32, &a, &err),
                QP_E_FORMAT, &err, "is an array of i32, expected f32");
    CHECK_FAILS(qp_gguf_get_bool(g, "llama.block_count", &b, &err),
                QP_E_NOTFOUND, &err, "no key 'llama.block_count'");

    /* tensors: names, ggml order, types, offsets, data */
    const struct qp_gguf_tensor *t = &g->tensors[0];
    CHECK_STR(t->name, "a.f32");
    CHECK(t->ndim == 2 && t->ne[0] == 3 && t->ne[1] == 2 && t->ne[2] == 1);
    CHECK(t->type == QP_GGML_F32 && t->offset == 0 && t->nbytes == 24);
    float y[512], x[512];
    qp_gguf_tensor_read_f32(t, y);
    for (int i = 0; i < 6; i++)
        CHECK(y[i] == 0.25f * i - 0.5f);
    t = &g->tensors[1];
    CHECK(t->type == QP_GGML_F16 && t->offset == 32 && t->ndim == 1);
    qp_gguf_tensor_read_f32(t, y);
    CHECK(y[4] == 6.0f);
    long ci = qp_gguf_find_tensor(g, "blk.0.c.q4_0");
    REQUIRE(ci == 2);
    t = &g->tensors[ci];
    CHECK(t->type == QP_GGML_Q4_0 && t->ne[0] == 64 && t->ne[1] == 2 &&
          t->offset == 64 && t->nbytes == 4 * 18);
    unsigned char blk[2 * 144];
    REQUIRE(golden_input(0, 128, x));
    qp_ggml_quantize_row_q4_0_ref(x, blk, 128);
    CHECK(!memcmp(blk, t->data, 4 * 18));
    t = &g->tensors[3];
    CHECK(t->type == QP_GGML_Q4_K && t->ndim == 3 && t->ne[2] == 2 &&
          t->offset == 160 && t->nbytes == 2 * 144);
    REQUIRE(golden_input(1, 512, x));
    qp_ggml_quantize_row(QP_GGML_Q4_K, x, blk, 512);
    CHECK(!memcmp(blk, t->data, 2 * 144));
    CHECK_INT(qp_gguf_find_tensor(g, "missing"), -1);
    qp_gguf_free(g);
}

/* Every KV and tensor of ggml's file, re-added in order, writes the same
 * bytes: qprobe's writer lays files out as ggml's does. */
QP_TEST(gguf_writer_reproduces_ggml_bytes)
{
    struct qp_gguf *g;
    struct qp_error err;
    REQUIRE_OK(qp_gguf_load(GOLDEN "ggml-written.gguf", &g, &err), &err);
    char *path = qp_test_path(ctx, "copy.gguf");
    struct qp_gguf_writer *w;
    REQUIRE_OK(qp_gguf_writer_new(path, &w, &err), &err);
    for (size_t i = 0; i < g->n_kv; i++)
        CHECK_OK(qp_gguf_add_value(w, g->kv[i].key, &g->kv[i].val, &err), &err);
    for (size_t i = 0; i < g->n_tensors; i++) {
        const struct qp_gguf_tensor *t = &g->tensors[i];
        CHECK_OK(qp_gguf_add_tensor(w, t->name, t->ndim, t->ne, t->type, t->data,
                                    &err), &err);
    }
    REQUIRE_OK(qp_gguf_writer_commit(w, &err), &err);
    char *a, *b;
    size_t la, lb;
    REQUIRE_OK(qp_read_file(GOLDEN "ggml-written.gguf", 1 << 20, &a, &la, &err),
               &err);
    REQUIRE_OK(qp_read_file(path, 1 << 20, &b, &lb, &err), &err);
    CHECK_INT(lb, la);
    CHECK(la == lb && !memcmp(a, b, la));
    free(a);
    free(b);
    free(path);
    qp_gguf_free(g);
}

struct fill_ctx {
    int calls;
    float v;
};

static enum qp_status fill_f32(void *ctx, void *buf, size_t nbytes,
                               struct qp_error *err)
{
    struct fill_ctx *f = ctx;
    (void)err;
    f->calls++;
    for (size_t i = 0; i < nbytes / 4; i++)
        ((float *)buf)[i] = f->v * (float)i;
    return QP_OK;
}

/* Everything the writer can add reads back: each typed KV, nested arrays
 * copied as values, a non-default alignment, every tensor type, a tensor
 * from a callback. */
QP_TEST(gguf_round_trip_of_everything)
{
    char *path = qp_test_path(ctx, "all.gguf");
    struct qp_gguf_writer *w;
    struct qp_error err;
    REQUIRE_OK(qp_gguf_writer_new(path, &w, &err), &err);
    CHECK_OK(qp_gguf_add_str(w, "general.architecture", "llama", &err), &err);
    CHECK_OK(qp_gguf_add_u32(w, "general.alignment", 64, &err), &err);
    CHECK_OK(qp_gguf_add_u32(w, "llama.context_length", 2048, &err), &err);
    CHECK_OK(qp_gguf_add_i32(w, "x.i32", -7, &err), &err);
    CHECK_OK(qp_gguf_add_u64(w, "x.u64", 1ull << 40, &err), &err);
    CHECK_OK(qp_gguf_add_f32(w, "llama.attention.layer_norm_rms_epsilon", 1e-5f,
                             &err), &err);
    CHECK_OK(qp_gguf_add_bool(w, "x.bool", false, &err), &err);
    static const char *const toks[] = {"a", "", "b\0c", "\xe2\x96\x81hi"};
    static const size_t lens[] = {1, 0, 3, 5};
    CHECK_OK(qp_gguf_add_str_array(w, "tokenizer.ggml.tokens", toks, lens, 4,
                                   &err), &err);
    CHECK_OK(qp_gguf_add_str_array(w, "tokenizer.ggml.merges", toks, NULL, 2,
                                   &err), &err);
    int32_t types[3] = {1, 3, -6};
    float scores[2] = {-1.5f, 0.25f};
    CHECK_OK(qp_gguf_add_array(w, "tokenizer.ggml.token_type", QP_GGUF_I32,
                               types, 3, &err), &err);
    CHECK_OK(qp_gguf_add_array(w, "tokenizer.ggml.scores", QP_GGUF_F32, scores,
                               2, &err), &err);
    CHECK_OK(qp_gguf_add_array(w, "x.empty", QP_GGUF_U8, NULL, 0, &err), &err);
    /* a nested array, as a value: [[1, 2], ["s"]] */
    unsigned char nest[64];
    size_t nn = 0;
    uint32_t u;
    uint64_t c;
    u = QP_GGUF_U16, memcpy(nest + nn, &u, 4), nn += 4;
    c = 2, memcpy(nest + nn, &c, 8), nn += 8;
    uint16_t h[2] = {1, 2};
    memcpy(nest + nn, h, 4), nn += 4;
    u = QP_GGUF_STRING, memcpy(nest + nn, &u, 4), nn += 4;
    c = 1, memcpy(nest + nn, &c, 8), nn += 8;
    c = 1, memcpy(nest + nn, &c, 8), nn += 8;
    nest[nn++] = 's';
    struct qp_gguf_value nv = {QP_GGUF_ARRAY, QP_GGUF_ARRAY, 2, nest, nn, NULL};
    CHECK_OK(qp_gguf_add_value(w, "x.nested", &nv, &err), &err);

    /* tensors of every type, rows of 256 */
    float x[512];
    for (int i = 0; i < 512; i++)
        x[i] = (float)sin(i * 0.1) * 0.3f;
    void *data[QP_GGML_TYPE_COUNT] = {0};
    size_t nbytes[QP_GGML_TYPE_COUNT];
    for (int t = 0; t < QP_GGML_TYPE_COUNT; t++) {
        REQUIRE(qp_ggml_row_bytes((enum qp_ggml_type)t, 512, &nbytes[t]));
        data[t] = calloc(1, nbytes[t]);
        REQUIRE(data[t]);
        if (!qp_ggml_quantize_row((enum qp_ggml_type)t, x, data[t], 512))
            for (size_t k = 0; k < nbytes[t]; k++)
                ((unsigned char *)data[t])[k] = (unsigned char)(k * 7 + t);
        char name[32];
        snprintf(name, sizeof name, "t.%s", qp_ggml_type_info(t)->name);
        int64_t ne[2] = {256, 2};
        CHECK_OK(qp_gguf_add_tensor(w, name, 2, ne, (enum qp_ggml_type)t,
                                    data[t], &err), &err);
    }
    struct fill_ctx fc = {0, 0.5f};
    int64_t ne4[4] = {3, 1, 2, 2};
    CHECK_OK(qp_gguf_add_tensor_fill(w, "filled", 4, ne4, QP_GGML_F32, fill_f32,
                                     &fc, &err), &err);
    int64_t ne0[1] = {0};
    CHECK_OK(qp_gguf_add_tensor(w, "empty", 1, ne0, QP_GGML_Q4_K, NULL, &err),
             &err);
    REQUIRE_OK(qp_gguf_writer_commit(w, &err), &err);
    CHECK_INT(fc.calls, 1);

    struct qp_gguf *g;
    REQUIRE_OK(qp_gguf_load(path, &g, &err), &err);
    CHECK_INT(g->alignment, 64);
    CHECK_INT(g->data_offset % 64, 0);
    CHECK_INT(g->n_kv, 13);
    CHECK_STR(g->kv[0].key, "general.architecture");
    CHECK_STR(g->kv[12].key, "x.nested");
    int64_t iv;
    CHECK(!qp_gguf_get_int(g, "llama.context_length", &iv, &err) && iv == 2048);
    CHECK(!qp_gguf_get_int(g, "x.i32", &iv, &err) && iv == -7);
    CHECK(!qp_gguf_get_int(g, "x.u64", &iv, &err) && iv == 1LL << 40);
    double d;
    CHECK(!qp_gguf_get_float(g, "llama.attention.layer_norm_rms_epsilon", &d,
                             &err) && d == (double)1e-5f);
    bool b = true;
    CHECK(!qp_gguf_get_bool(g, "x.bool", &b, &err) && !b);
    struct qp_gguf_value a, e, ee;
    REQUIRE_OK(qp_gguf_get_array(g, "tokenizer.ggml.tokens", QP_GGUF_STRING, &a,
                                 &err), &err);
    for (int i = 0; i < 4; i++) {
        qp_gguf_array_at(&a, (uint64_t)i, &e);
        CHECK(e.size == lens[i] && !memcmp(e.p, toks[i], lens[i]));
    }
    REQUIRE_OK(qp_gguf_get_array(g, "tokenizer.ggml.merges", QP_GGUF_STRING, &a,
                                 &err), &err);
    CHECK_INT(a.count, 2);
    REQUIRE_OK(qp_gguf_get_array(g, "tokenizer.ggml.token_type", QP_GGUF_I32,
                                 &a, &err), &err);
    qp_gguf_array_at(&a, 2, &e);
    CHECK(qp_gguf_value_int(&e, &iv) && iv == -6);
    REQUIRE_OK(qp_gguf_get_array(g, "x.empty", QP_GGUF_U8, &a, &err), &err);
    CHECK_INT(a.count, 0);
    REQUIRE_OK(qp_gguf_get_array(g, "x.nested", QP_GGUF_ARRAY, &a, &err), &err);
    qp_gguf_array_at(&a, 1, &e); /* ["s"] */
    CHECK(e.type == QP_GGUF_ARRAY && e.elem == QP_GGUF_STRING && e.count == 1);
    qp_gguf_array_at(&e, 0, &ee);
    CHECK(ee.size == 1 && ee.p[0] == 's');
    qp_gguf_array_at(&a, 0, &e); /* [1, 2] as u16 */
    qp_gguf_array_at(&e, 1, &ee);
    CHECK(e.elem == QP_GGUF_U16 && qp_gguf_value_int(&ee, &iv) && iv == 2);

    CHECK_INT(g->n_tensors, QP_GGML_TYPE_COUNT + 2);
    for (int t = 0; t < QP_GGML_TYPE_COUNT; t++) {
        const struct qp_gguf_tensor *gt = &g->tensors[t];
        CHECK_INT(gt->type, t);
        CHECK(gt->nbytes == nbytes[t] && !memcmp(gt->data, data[t], nbytes[t]));
        CHECK_INT(gt->offset % 64, 0);
        free(data[t]);
    }
    const struct qp_gguf_tensor *ft = &g->tensors[QP_GGML_TYPE_COUNT];
    CHECK(ft->ndim == 4 && ft->ne[3] == 2 && qp_gguf_tensor_numel(ft) == 12);
    float y[12];
    qp_gguf_tensor_read_f32(ft, y);
    CHECK(y[11] == 5.5f);
    CHECK_INT(g->tensors[QP_GGML_TYPE_COUNT + 1].nbytes, 0);
    qp_gguf_free(g);
    free(path);
}

static enum qp_status fill_fails(void *ctx, void *buf, size_t nbytes,
                                 struct qp_error *err)
{
    (void)ctx, (void)buf, (void)nbytes;
    return qp_fail(err, QP_E_IO, "the source went away");
}

QP_TEST(gguf_writer_refusals)
{
    char *path = qp_test_path(ctx, "bad.gguf");
    struct qp_gguf_writer *w;
    struct qp_error err;
    REQUIRE_OK(qp_gguf_writer_new(path, &w, &err), &err);
    CHECK_OK(qp_gguf_add_u32(w, "a.b", 1, &err), &err);
    CHECK_FAILS(qp_gguf_add_str(w, "a.b", "x", &err), QP_E_INVAL, &err,
                "key 'a.b' added twice");
    CHECK_FAILS(qp_gguf_add_u32(w, "", 1, &err), QP_E_INVAL, &err,
                "key of 0 bytes");
    CHECK_FAILS(qp_gguf_add_u32(w, "has space", 1, &err), QP_E_INVAL, &err,
                "key 'has space': byte 3 is not printable ASCII");
    CHECK_FAILS(qp_gguf_add_u32(w, "general.alignment", 48, &err), QP_E_INVAL,
                &err, "key 'general.alignment' must be a u32 power of two");
    CHECK_FAILS(qp_gguf_add_f32(w, "general.alignment", 32, &err), QP_E_INVAL,
                &err, "must be a u32 power of two");
    CHECK_FAILS(qp_gguf_add_array(w, "x", QP_GGUF_STRING, NULL, 0, &err),
                QP_E_INVAL, &err, "arrays of string need their own function");
    int64_t ne[2] = {256, 2};
    char longname[80];
    memset(longname, 'n', 64);
    longname[64] = '\0';
    CHECK_FAILS(qp_gguf_add_tensor(w, longname, 2, ne, QP_GGML_F32, NULL, &err),
                QP_E_INVAL, &err, "is 64 bytes; GGUF (llama.cpp) allows 1 to 63");
    longname[63] = '\0';
    float z[512] = {0};
    CHECK_OK(qp_gguf_add_tensor(w, longname, 2, ne, QP_GGML_F32, z, &err), &err);
    CHECK_FAILS(qp_gguf_add_tensor(w, longname, 2, ne, QP_GGML_F32, z, &err),
                QP_E_INVAL, &err, "added twice");
    int64_t odd[2] = {100, 2};
    CHECK_FAILS(qp_gguf_add_tensor(w, "odd", 2, odd, QP_GGML_Q4_0, z, &err),
                QP_E_SHAPE, &err, "tensor 'odd': rows of 100 values are not a "
                "multiple of q4_0's block of 32");
    CHECK_FAILS(qp_gguf_add_tensor(w, "five", 5, ne, QP_GGML_F32, z, &err),
                QP_E_INVAL, &err, "has 5 dims (1 to 4)");
    int64_t neg[1] = {-1};
    CHECK_FAILS(qp_gguf_add_tensor(w, "neg", 1, neg, QP_GGML_F32, z, &err),
                QP_E_INVAL, &err, "dim 0 (-1) is negative or too large");
    CHECK_OK(qp_gguf_add_tensor_fill(w, "late", 2, ne, QP_GGML_F32, fill_fails,
                                     NULL, &err), &err);
    CHECK_FAILS(qp_gguf_writer_commit(w, &err), QP_E_IO, &err,
                "tensor 'late': the source went away");
    CHECK(strstr(err.msg, path) != NULL);
    struct stat sb;
    CHECK(stat(path, &sb) != 0); /* nothing at the path */
    /* an unwritable directory: refused at commit, naming the path */
    REQUIRE_OK(qp_gguf_writer_new("/nonexistent-dir/x.gguf", &w, &err), &err);
    CHECK_FAILS(qp_gguf_writer_commit(w, &err), QP_E_IO, &err,
                "/nonexistent-dir/x.gguf");
    free(path);
}
