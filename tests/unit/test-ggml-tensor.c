/* tests/unit/test-ggml-tensor.c: weight tensors in ggml types: rows along
 * the input axis, raw blocks in ggml order, fake quantization through
 * qp_rtn_quantize, and the refusals (rows that do not divide, non-finite
 * values, scales that overflow fp16, integer tensors). The row quantizers
 * themselves are checked against ggml in test-ggml-quant.c. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/half.h"
#include "model/graph.h"
#include "model/wcache.h"
#include "quant/ggml-quant.h"
#include "quant/rtn.h"
#include "quant/scheme.h"
#include "tests/test.h"

static float val(size_t i)
{
    /* deterministic, varied magnitudes, no two rows alike */
    return (float)(sin(0.37 * (double)i) * (1.0 + (double)(i % 97) / 13.0)) *
           0.05f;
}

static struct qp_tensor *make(const char *name, int64_t r, int64_t c)
{
    int64_t shape[2] = {r, c};
    struct qp_tensor *t;
    struct qp_error err;
    if (qp_tensor_new(name, QP_DTYPE_F32, 2, shape, &t, &err))
        return NULL;
    for (size_t i = 0; i < (size_t)(r * c); i++)
        ((float *)t->data)[i] = val(i);
    return t;
}

QP_TEST(ggml_quantize_tensor_rows_are_the_last_axis)
{
    struct qp_tensor *w = make("blk.0.ffn_up.weight", 3, 512);
    REQUIRE(w);
    struct qp_error err;
    for (int t = QP_GGML_Q8_0; t <= QP_GGML_Q6_K; t++) {
        struct qp_ggml_data d;
        REQUIRE_OK(qp_ggml_quantize_tensor(w, (enum qp_ggml_type)t, &d, &err),
                   &err);
        CHECK_INT(d.type, t);
        CHECK_INT(d.ndim, 2);
        CHECK_INT(d.ne[0], 512);
        CHECK_INT(d.ne[1], 3);
        size_t rb;
        REQUIRE(qp_ggml_row_bytes((enum qp_ggml_type)t, 512, &rb));
        CHECK_INT(d.nbytes, 3 * rb);
        unsigned char *row = malloc(rb);
        REQUIRE(row);
        for (int r = 0; r < 3; r++) {
            qp_ggml_quantize_row((enum qp_ggml_type)t, (float *)w->data + 512 * r,
                                 row, 512);
            CHECK(!memcmp(row, (unsigned char *)d.data + r * rb, rb));
        }
        /* the fake values are the decoded blocks */
        struct qp_tensor *f;
        REQUIRE_OK(qp_ggml_fake_quantize(w, (enum qp_ggml_type)t,
                                         QP_WLAYOUT_TORCH, &f, &err), &err);
        CHECK_INT(f->dtype, QP_DTYPE_F32);
        CHECK_STR(f->name, "blk.0.ffn_up.weight");
        float *y = malloc(3 * 512 * sizeof *y);
        REQUIRE(y);
        qp_ggml_dequantize_row((enum qp_ggml_type)t, d.data, y, 3 * 512);
        CHECK(!memcmp(y, f->data, 3 * 512 * sizeof *y));
        /* and they are close: a wrong decoder or row order would not be */
        double err2 = 0, ref2 = 0;
        for (size_t i = 0; i < 3 * 512; i++) {
            double e = (double)y[i] - ((float *)w->data)[i];
            err2 += e * e;
            ref2 += (double)((float *)w->data)[i] * ((float *)w->data)[i];
        }
        double sqnr = 10 * log10(ref2 / err2);
        CHECK(sqnr > (t == QP_GGML_Q8_0 ? 35 : t == QP_GGML_Q6_K ? 28 : 15));
        free(y);
        free(row);
        free(d.data);
        qp_tensor_free(f);
    }
    qp_tensor_free(w);
}

/* Under a [in, out] layout the rows run down the columns: the same values
 * as quantizing the transposed [out, in] matrix. */
QP_TEST(ggml_fake_quantize_follows_the_input_axis)
{
    struct qp_tensor *w = make("w", 4, 256), *wt;
    REQUIRE(w);
    int64_t ts[2] = {256, 4};
    struct qp_error err;
    REQUIRE_OK(qp_tensor_new("w", QP_DTYPE_F32, 2, ts, &wt, &err), &err);
    for (int r = 0; r < 4; r++)
        for (int c = 0; c < 256; c++)
            ((float *)wt->data)[c * 4 + r] = ((float *)w->data)[r * 256 + c];
    struct qp_tensor *a, *b;
    REQUIRE_OK(qp_ggml_fake_quantize(w, QP_GGML_Q4_K, QP_WLAYOUT_TORCH, &a, &err),
               &err);
    REQUIRE_OK(qp_ggml_fake_quantize(wt, QP_GGML_Q4_K, QP_WLAYOUT_KERAS, &b,
                                     &err), &err);
    int same = 0;
    for (int r = 0; r < 4; r++)
        for (int c = 0; c < 256; c++)
            same += ((float *)a->data)[r * 256 + c] ==
                    ((float *)b->data)[c * 4 + r];
    CHECK_INT(same, 1024);
    /* the same tensor read as torch has rows of 4: refused */
    struct qp_tensor *bad;
    CHECK_FAILS(qp_ggml_fake_quantize(wt, QP_GGML_Q4_K, QP_WLAYOUT_TORCH, &bad,
                                      &err), QP_E_SHAPE, &err,
                "tensor 'w': rows of 4 values (axis 1) are not a multiple of "
                "q4_K's block of 256");
    qp_tensor_free(a);
    qp_tensor_free(b);
    qp_tensor_free(w);
    qp_tensor_free(wt);
}

/* The scheme path: qp_rtn_quantize with "q6_k" gives the fake values. */
QP_TEST(ggml_scheme_through_rtn_quantize)
{
    struct qp_tensor *w = make("lm_head.weight", 2, 256), *q, *f;
    REQUIRE(w);
    struct qp_scheme s;
    struct qp_error err;
    REQUIRE_OK(qp_scheme_parse("q6_k+a8d", &s, NULL, &err), &err);
    struct qp_wquant_opts o = {QP_ROUND_HALF_AWAY, QP_WLAYOUT_TORCH};
    REQUIRE_OK(qp_rtn_quantize(w, &s.w, &o, &q, &err), &err);
    REQUIRE_OK(qp_ggml_fake_quantize(w, QP_GGML_Q6_K, QP_WLAYOUT_TORCH, &f, &err),
               &err);
    CHECK_INT(q->dtype, QP_DTYPE_F32);
    CHECK(!q->qp);
    CHECK(!memcmp(q->data, f->data, 512 * sizeof(float)));
    float back[512];
    qp_tensor_read_f32(q, 0, 512, back);
    CHECK(!memcmp(back, f->data, sizeof back));
    size_t bytes;
    CHECK(qp_ggml_weight_bytes(QP_GGML_Q6_K, w->ndim, w->shape, QP_WLAYOUT_TORCH,
                               &bytes));
    CHECK_INT(bytes, 2 * 210);
    qp_tensor_free(q);
    qp_tensor_free(f);
    qp_tensor_free(w);
}

QP_TEST(ggml_tensor_refusals_name_the_tensor)
{
    struct qp_tensor *w = make("enc.weight", 2, 64), *out;
    REQUIRE(w);
    struct qp_error err;
    struct qp_ggml_data d;
    CHECK_FAILS(qp_ggml_quantize_tensor(w, QP_GGML_Q6_K, &d, &err), QP_E_SHAPE,
                &err, "tensor 'enc.weight': rows of 64 values (axis 1) are not "
                "a multiple of q6_K's block of 256; llama.cpp falls back to "
                "q8_0");
    CHECK(d.data == NULL);
    ((float *)w->data)[70] = NAN;
    CHECK_FAILS(qp_ggml_quantize_tensor(w, QP_GGML_Q8_0, &d, &err), QP_E_INVAL,
                &err, "tensor 'enc.weight': element 70 is nan");
    CHECK_FAILS(qp_ggml_fake_quantize(w, QP_GGML_Q8_0, QP_WLAYOUT_TORCH, &out,
                                      &err), QP_E_INVAL, &err, "element 70");
    CHECK(out == NULL);
    ((float *)w->data)[70] = 0;
    /* q4_0: d = max / -8 = 1e6 / 8 overflows fp16 (65504) in row 1, block 1 */
    ((float *)w->data)[64 + 40] = 1e6f;
    CHECK_FAILS(qp_ggml_quantize_tensor(w, QP_GGML_Q4_0, &d, &err), QP_E_INVAL,
                &err, "tensor 'enc.weight': row 1, block 1: values too large "
                "for q4_0 (its fp16 scale overflows)");
    CHECK_FAILS(qp_ggml_fake_quantize(w, QP_GGML_Q4_0, QP_WLAYOUT_TORCH, &out,
                                      &err), QP_E_INVAL, &err, "row 1, block 1");
    /* f16 itself overflows above 65504 */
    CHECK_FAILS(qp_ggml_quantize_tensor(w, QP_GGML_F16, &d, &err), QP_E_INVAL,
                &err, "tensor 'enc.weight': row 1, element 40: 1e+06 is beyond "
                "the range of f16");
    /* bf16 holds it */
    CHECK_OK(qp_ggml_quantize_tensor(w, QP_GGML_BF16, &d, &err), &err);
    CHECK_INT(d.nbytes, 2 * 64 * 2);
    uint16_t h;
    memcpy(&h, (unsigned char *)d.data + 2 * (64 + 40), 2);
    CHECK(qp_bf16_to_f32(h) == 999424.0f); /* 1e6 to nearest bf16 */
    free(d.data);
    qp_tensor_free(w);
    int64_t shape[1] = {32};
    struct qp_tensor *iw;
    REQUIRE_OK(qp_tensor_new("ids", QP_DTYPE_I32, 1, shape, &iw, &err), &err);
    CHECK_FAILS(qp_ggml_quantize_tensor(iw, QP_GGML_Q8_0, &d, &err),
                QP_E_UNSUPPORTED, &err, "tensor 'ids': only float tensors");
    int64_t fs[1] = {32};
    struct qp_tensor *fw;
    REQUIRE_OK(qp_tensor_new("f", QP_DTYPE_F32, 1, fs, &fw, &err), &err);
    CHECK_FAILS(qp_ggml_quantize_tensor(fw, QP_GGML_I32, &d, &err),
                QP_E_UNSUPPORTED, &err, "i32 is not a type qprobe quantizes to");
    qp_tensor_free(fw);
    qp_tensor_free(iw);
}

/* A rank-1 and an f16 input: rows are the whole vector; f16 values are
 * widened exactly before quantizing. */
QP_TEST(ggml_quantize_tensor_f16_and_rank1)
{
    int64_t shape[1] = {64};
    struct qp_tensor *h, *f;
    struct qp_error err;
    REQUIRE_OK(qp_tensor_new("norm", QP_DTYPE_F16, 1, shape, &h, &err), &err);
    REQUIRE_OK(qp_tensor_new("norm", QP_DTYPE_F32, 1, shape, &f, &err), &err);
    for (int i = 0; i < 64; i++) {
        ((uint16_t *)h->data)[i] = qp_f32_to_f16(val((size_t)i * 7));
        ((float *)f->data)[i] = qp_f16_to_f32(((uint16_t *)h->data)[i]);
    }
    struct qp_ggml_data a, b;
    REQUIRE_OK(qp_ggml_quantize_tensor(h, QP_GGML_Q5_0, &a, &err), &err);
    REQUIRE_OK(qp_ggml_quantize_tensor(f, QP_GGML_Q5_0, &b, &err), &err);
    CHECK_INT(a.ndim, 1);
    CHECK_INT(a.ne[0], 64);
    CHECK_INT(a.nbytes, 2 * 22);
    CHECK(a.nbytes == b.nbytes && !memcmp(a.data, b.data, a.nbytes));
    free(a.data);
    free(b.data);
    qp_tensor_free(h);
    qp_tensor_free(f);
}

/* The weight cache keys on the whole scheme: q4_1 and w4g32z share their
 * nominal fields (4 bits, asymmetric, groups of 32) but not their values. */
QP_TEST(ggml_scheme_is_its_own_cache_entry)
{
    struct qp_scheme a, b, c;
    struct qp_error err;
    REQUIRE_OK(qp_scheme_parse("q4_1", &a, NULL, &err), &err);
    REQUIRE_OK(qp_scheme_parse("w4g32z", &b, NULL, &err), &err);
    REQUIRE_OK(qp_scheme_parse("q4_1+a8t", &c, NULL, &err), &err);
    CHECK(a.w.f.bits == b.w.f.bits && a.w.f.asym == b.w.f.asym &&
          a.w.gran == b.w.gran && a.w.group == b.w.group);
    CHECK(!qp_wscheme_equal(&a.w, &b.w));
    CHECK(qp_wscheme_equal(&a.w, &c.w));
    struct qp_graph *g;
    REQUIRE_OK(qp_graph_new("g", &g, &err), &err);
    REQUIRE_OK(qp_graph_add_const(g, make("w", 2, 64), &err), &err);
    int v = qp_graph_find(g, "w");
    struct qp_wcache *wc;
    REQUIRE_OK(qp_wcache_new(&wc, &err), &err);
    struct qp_wquant_opts o = {QP_ROUND_HALF_AWAY, QP_WLAYOUT_TORCH};
    const struct qp_wquant *qa, *qb, *qc;
    REQUIRE_OK(qp_wcache_get(wc, g, v, &a.w, &o, false, &qa, &err), &err);
    REQUIRE_OK(qp_wcache_get(wc, g, v, &b.w, &o, false, &qb, &err), &err);
    REQUIRE_OK(qp_wcache_get(wc, g, v, &c.w, &o, false, &qc, &err), &err);
    CHECK(qa != qb && qa == qc);
    CHECK_INT(qp_wcache_stats(wc).made, 2);
    /* the float copies are made on request (model/wcache.h) */
    const struct qp_tensor *fa, *fb;
    REQUIRE_OK(qp_wcache_fake(wc, qa, &fa, &err), &err);
    REQUIRE_OK(qp_wcache_fake(wc, qb, &fb, &err), &err);
    CHECK(memcmp(fa->data, fb->data, 128 * sizeof(float)) != 0);
    struct qp_tensor *f;
    REQUIRE_OK(qp_ggml_fake_quantize(g->values[v].konst, QP_GGML_Q4_1,
                                     QP_WLAYOUT_TORCH, &f, &err), &err);
    CHECK(!memcmp(fa->data, f->data, 128 * sizeof(float)));
    qp_tensor_free(f);
    qp_wcache_free(wc);
    qp_graph_free(g);
}
