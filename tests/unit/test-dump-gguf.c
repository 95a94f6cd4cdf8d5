/* tests/unit/test-dump-gguf.c: GGUF files as dumps: the plain types and
 * ggml blocks written through the dump writer read back (blocks decoded to
 * f32), metadata both ways, the refusals, and ggml's own file as a dump. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "formats/dump-gguf.h"
#include "formats/dump.h"
#include "formats/gguf.h"
#include "quant/ggml-quant.h"
#include "tests/test.h"
#include "tests/unit/dump-test-util.h"

QP_TEST(dump_gguf_round_trip)
{
    char *path = qp_test_path(ctx, "d.gguf");
    struct qp_dump_writer *w;
    struct qp_error err;
    REQUIRE_OK(qp_dump_writer_open(path, QP_DUMP_AUTO, &w, &err), &err);
    CHECK_INT(w->format, QP_DUMP_GGUF);
    static const enum qp_dtype plain[] = {QP_DTYPE_F32, QP_DTYPE_F16,
                                          QP_DTYPE_BF16, QP_DTYPE_I8,
                                          QP_DTYPE_I16, QP_DTYPE_I32,
                                          QP_DTYPE_I64, QP_DTYPE_F64};
    enum { NP = sizeof plain / sizeof plain[0] };
    struct qp_tensor *src[NP];
    int64_t s3[3] = {2, 3, 5};
    for (int i = 0; i < NP; i++) {
        char name[32];
        snprintf(name, sizeof name, "t.%s", qp_dtype_name(plain[i]));
        src[i] = dt_pattern_tensor(name, plain[i], 3, s3, (unsigned)i);
        CHECK_OK(qp_dump_writer_add(w, src[i], &err), &err);
    }
    /* a weight as q4_k blocks: [3, 256] */
    int64_t ws[2] = {3, 256};
    struct qp_tensor *wt;
    REQUIRE_OK(qp_tensor_new("blk.0.attn_q.weight", QP_DTYPE_F32, 2, ws, &wt,
                             &err), &err);
    for (int i = 0; i < 768; i++)
        ((float *)wt->data)[i] = (float)((i * 37) % 101 - 50) * 0.001f;
    struct qp_ggml_data blk;
    REQUIRE_OK(qp_ggml_quantize_tensor(wt, QP_GGML_Q4_K, &blk, &err), &err);
    CHECK_OK(qp_dump_gguf_add_ggml(w, wt->name, &blk, &err), &err);
    CHECK_FAILS(qp_dump_gguf_add_ggml(w, wt->name, &blk, &err), QP_E_INVAL,
                &err, "tensor name 'blk.0.attn_q.weight' is used twice");
    CHECK_OK(qp_dump_writer_set_meta(w, "general.name", "tiny", &err), &err);
    CHECK_OK(qp_dump_writer_set_meta(w, "quantize:fake", "0", &err), &err);
    REQUIRE_OK(qp_dump_writer_commit(w, &err), &err);

    struct qp_dump *d;
    REQUIRE_OK(qp_dump_open(path, QP_DUMP_AUTO, &d, &err), &err);
    CHECK_INT(d->format, QP_DUMP_GGUF);
    REQUIRE(qp_dump_count(d) == NP + 1);
    for (int i = 0; i < NP; i++) {
        struct qp_tensor *t;
        REQUIRE_OK(qp_dump_load(d, (size_t)i, &t, &err), &err);
        CHECK_STR(t->name, src[i]->name);
        CHECK_INT(t->dtype, plain[i]);
        CHECK(qp_shape_equal(t->ndim, t->shape, 3, s3));
        CHECK(t->nbytes == src[i]->nbytes &&
              !memcmp(t->data, src[i]->data, t->nbytes));
        qp_tensor_free(t);
    }
    struct qp_tensor *q;
    REQUIRE_OK(qp_dump_load(d, NP, &q, &err), &err);
    CHECK_INT(q->dtype, QP_DTYPE_F32);
    CHECK(qp_shape_equal(q->ndim, q->shape, 2, ws));
    float y[768];
    qp_ggml_dequantize_row(QP_GGML_Q4_K, blk.data, y, 768);
    CHECK(!memcmp(q->data, y, sizeof y));
    CHECK_STR(qp_dump_meta(d, "general.name"), "tiny");
    CHECK_STR(qp_dump_meta(d, "quantize:fake"), "0");
    CHECK_STR(qp_dump_meta(d, "scheme:blk.0.attn_q.weight"), "q4_k");
    qp_tensor_free(q);
    qp_dump_close(d);
    for (int i = 0; i < NP; i++)
        qp_tensor_free(src[i]);
    qp_tensor_free(wt);
    free(blk.data);
    free(path);
}

QP_TEST(dump_gguf_writer_refusals)
{
    char *path = qp_test_path(ctx, "r.gguf");
    struct qp_dump_writer *w;
    struct qp_error err;
    REQUIRE_OK(qp_dump_writer_open(path, QP_DUMP_GGUF, &w, &err), &err);
    int64_t s[2] = {2, 4};
    struct qp_tensor *u8 = dt_pattern_tensor("mask", QP_DTYPE_U8, 2, s, 1);
    CHECK_FAILS(qp_dump_writer_add(w, u8, &err), QP_E_UNSUPPORTED, &err,
                "tensor 'mask': GGUF has no u8 type");
    struct qp_tensor *qi = dt_pattern_tensor("w", QP_DTYPE_I8, 2, s, 2);
    float sc[2] = {0.5f, 0.25f};
    REQUIRE_OK(qp_tensor_set_qparams(qi, 2, sc, NULL, 0, 0, &err), &err);
    CHECK_FAILS(qp_dump_writer_add(w, qi, &err), QP_E_UNSUPPORTED, &err,
                "tensor 'w' holds i8 integers with scales, which GGUF cannot "
                "store; use a ggml scheme");
    int64_t s5[5] = {1, 2, 1, 2, 1};
    struct qp_tensor *five = dt_pattern_tensor("five", QP_DTYPE_F32, 5, s5, 3);
    CHECK_FAILS(qp_dump_writer_add(w, five, &err), QP_E_UNSUPPORTED, &err,
                "tensor 'five' has 5 dims; GGUF holds at most 4");
    int64_t s64[1] = {4};
    struct qp_tensor *ok = dt_pattern_tensor("ok", QP_DTYPE_F32, 1, s64, 4);
    CHECK_OK(qp_dump_writer_add(w, ok, &err), &err);
    CHECK_OK(qp_dump_writer_set_meta(w, "bad key", "v", &err), &err);
    CHECK_FAILS(qp_dump_writer_commit(w, &err), QP_E_INVAL, &err,
                "key 'bad key': byte 3 is not printable ASCII");
    struct stat sb;
    CHECK(stat(path, &sb) != 0);
    CHECK_INT(dt_count_files(qp_test_tmpdir(ctx)), 0);
    /* blocks go to GGUF writers only */
    char *npz = qp_test_path(ctx, "x.npz");
    REQUIRE_OK(qp_dump_writer_open(npz, QP_DUMP_AUTO, &w, &err), &err);
    struct qp_ggml_data d = {QP_GGML_Q8_0, 1, {32}, NULL, 0};
    CHECK_FAILS(qp_dump_gguf_add_ggml(w, "x", &d, &err), QP_E_INVAL, &err,
                "ggml blocks go to GGUF files only");
    qp_dump_writer_abort(w);
    qp_tensor_free(u8);
    qp_tensor_free(qi);
    qp_tensor_free(five);
    qp_tensor_free(ok);
    free(npz);
    free(path);
}

/* ggml's file through the dump reader: shapes reversed from ne, blocks as
 * f32, every KV rendered as text. */
QP_TEST(dump_gguf_reads_ggml_file_and_metadata)
{
    struct qp_dump *d;
    struct qp_error err;
    REQUIRE_OK(qp_dump_open("tests/golden/ggml/ggml-written.gguf", QP_DUMP_AUTO,
                            &d, &err), &err);
    REQUIRE(qp_dump_count(d) == 4);
    const struct qp_tensor *e = qp_dump_entry(d, 3);
    int64_t want[3] = {2, 1, 256};
    CHECK_STR(e->name, "d.q4_k");
    CHECK(e->dtype == QP_DTYPE_F32 && qp_shape_equal(e->ndim, e->shape, 3, want));
    CHECK_INT(qp_dump_entry(d, 1)->dtype, QP_DTYPE_F16);
    CHECK_STR(qp_dump_meta(d, "test.u8"), "200");
    CHECK_STR(qp_dump_meta(d, "test.i64"), "-9000000000000000000");
    CHECK_STR(qp_dump_meta(d, "test.u64"), "18000000000000000000");
    CHECK_STR(qp_dump_meta(d, "test.f32"), "0.1");
    CHECK_STR(qp_dump_meta(d, "test.f64"), "2.718281828459045");
    CHECK_STR(qp_dump_meta(d, "test.bool"), "true");
    CHECK_STR(qp_dump_meta(d, "general.name"), "qprobe oracle");
    CHECK_STR(qp_dump_meta(d, "tokenizer.ggml.tokens"),
              "[\"<s>\", \"</s>\", \"\xc4\xa0the\", \"\"]");
    CHECK_STR(qp_dump_meta(d, "test.arr_f32"), "[0.5, -1.25]");
    CHECK_STR(qp_dump_meta(d, "scheme:blk.0.c.q4_0"), "q4_0");
    CHECK(qp_dump_meta(d, "scheme:a.f32") == NULL);
    struct qp_tensor *t;
    REQUIRE_OK(qp_dump_load(d, 0, &t, &err), &err);
    CHECK(t->map != NULL); /* aligned f32: borrowed from the mapping */
    CHECK(((float *)t->data)[5] == 0.75f);
    qp_tensor_free(t);
    qp_dump_close(d);
}
