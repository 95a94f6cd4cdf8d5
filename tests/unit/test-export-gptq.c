/* tests/unit/test-export-gptq.c: --to gptq (analysis/export-gptq.h) on a
 * tiny random Llama folder: the checkpoint read back with qprobe's own
 * safetensors reader and dequantized here, by AutoGPTQ's formula written
 * out in plain loops (w = scales[g] * (q - (qzeros[g] + 1)), g = g_idx),
 * equals bit for bit the fake-quant weights GPTQ makes in the session for
 * the same layers, scheme (with ':half') and calibration tokens; the
 * other tensors are the folder's bytes; the config files say what was
 * done; and the refusals leave nothing behind. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "analysis/export.h"
#include "core/fileio.h"
#include "core/half.h"
#include "formats/dump.h"
#include "formats/json.h"
#include "model/gptq-view.h"
#include "model/llm.h"
#include "model/qassign.h"
#include "quant/scheme.h"
#include "tests/test.h"
#include "tests/unit/llama-test-util.h"

#define N_CALIB 200

/* A folder with the tiny model and calibration ids beside it (made once
 * per test). */
static bool setup(struct qp_test_ctx *ctx, char **dir, char **calib)
{
    struct tl_cfg c = tl_default(); /* hidden 32, inter 48, kv 16, vocab 50 */
    struct stat sb;
    *dir = qp_test_path(ctx, "m");
    *calib = qp_test_path(ctx, "calib.safetensors");
    if (!*dir || !*calib)
        return false;
    if (!stat(*calib, &sb))
        return true;
    if (mkdir(*dir, 0755) || !tl_write_model(*dir, &c, NULL))
        return false;
    struct qp_tensor *t;
    struct qp_dump_writer *w;
    struct qp_error err;
    if (qp_tensor_new("input_ids", QP_DTYPE_I32, 1, (const int64_t[]){N_CALIB},
                      &t, &err))
        return false;
    unsigned s = 7;
    for (int i = 0; i < N_CALIB; i++) {
        s = s * 1103515245u + 12345u;
        ((int32_t *)t->data)[i] = (int32_t)((s >> 16) % 50u);
    }
    bool ok = !qp_dump_writer_open(*calib, QP_DUMP_SAFETENSORS, &w, &err) &&
              !qp_dump_writer_add(w, t, &err) && !qp_dump_writer_commit(w, &err);
    qp_tensor_free(t);
    return ok;
}

static enum qp_status export(const char *dir, const char *calib, const char *out,
                             const char *scheme, struct qp_error *err)
{
    struct qp_scheme s;
    enum qp_status st = qp_scheme_parse(scheme, &s, NULL, err);
    struct qp_export_opts o = {.format = QP_EXPORT_GPTQ, .model = dir,
                               .scheme = &s, .calib = calib, .out = out};
    struct qp_export_result r;
    if (!st)
        st = qp_export_run(&o, &r, err);
    qp_export_result_release(&r);
    return st;
}

/* The session's GPTQ weights of the decoder's Linear layers under scheme
 * (with ':half'), the other layers float: w[n_nodes], borrowed from m. */
static enum qp_status reference(struct qp_llm *m, const char *calib,
                                const char *scheme, const struct qp_wquant **w,
                                struct qp_error *err)
{
    struct qp_scheme s;
    int32_t *ids = NULL;
    size_t n = 0;
    struct qp_qassign *a = NULL;
    const struct qp_graph *g = qp_session_graph(m->s);
    enum qp_status st = qp_scheme_parse(scheme, &s, NULL, err);
    if (!st)
        st = qp_llm_read_tokens(m, calib, &ids, &n, err);
    if (!st)
        st = qp_llm_add_calib_ids(m, ids, n, 512, 16, NULL, err);
    if (!st)
        st = qp_qassign_new(g, &a, err);
    s.w.gptq.half_scales = true;
    char name[256];
    for (int i = 0; !st && i < g->n_nodes; i++) {
        if (!qp_node_weighted(g, i, NULL) || !qp_gview_llm_linear(&g->nodes[i]))
            continue;
        qp_node_weight_name(g, i, name, sizeof name);
        a->wq[i] = !strncmp(name, "model.layers.", 13);
        a->ws[i] = s.w;
    }
    if (!st)
        st = qp_session_gptq(m->s, a, QP_ROUND_HALF_AWAY, NULL, w, err);
    qp_qassign_free(a);
    free(ids);
    return st;
}

static const struct qp_tensor *need(struct qp_test_ctx *ctx, struct qp_dump *d,
                                    const char *prefix, const char *suffix,
                                    struct qp_tensor **hold)
{
    char name[300];
    snprintf(name, sizeof name, "%s.%s", prefix, suffix);
    long i = qp_dump_find(d, name);
    struct qp_error err;
    *hold = NULL;
    if (i < 0 || qp_dump_load(d, (size_t)i, hold, &err))
        qp_test_failf(ctx, __FILE__, __LINE__, "'%s' not in the checkpoint", name);
    return *hold;
}

/* Dequantizes layer prefix of d (bits) into out [rows, cols]. */
static bool dequantize(struct qp_test_ctx *ctx, struct qp_dump *d,
                       const char *prefix, unsigned bits, size_t rows, size_t cols,
                       float *out)
{
    struct qp_tensor *h[4];
    const struct qp_tensor *qw = need(ctx, d, prefix, "qweight", &h[0]),
                           *qz = need(ctx, d, prefix, "qzeros", &h[1]),
                           *sc = need(ctx, d, prefix, "scales", &h[2]),
                           *gi = need(ctx, d, prefix, "g_idx", &h[3]);
    bool ok = qw && qz && sc && gi && qw->dtype == QP_DTYPE_I32 &&
              qz->dtype == QP_DTYPE_I32 && sc->dtype == QP_DTYPE_F16 &&
              gi->dtype == QP_DTYPE_I32;
    size_t per = 32 / bits, mask = (1u << bits) - 1;
    ok = ok && (size_t)qw->shape[0] == cols / per && (size_t)qw->shape[1] == rows &&
         (size_t)qz->shape[1] == rows / per && (size_t)sc->shape[1] == rows &&
         qz->shape[0] == sc->shape[0] && (size_t)gi->shape[0] == cols;
    for (size_t i = 0; ok && i < cols; i++) {
        int32_t g = ((const int32_t *)gi->data)[i];
        ok = g >= 0 && g < sc->shape[0];
        for (size_t o = 0; ok && o < rows; o++) {
            uint32_t word = ((const uint32_t *)qw->data)[i / per * rows + o];
            uint32_t zw = ((const uint32_t *)qz->data)[(size_t)g * (rows / per) + o / per];
            int32_t q = (int32_t)((word >> (bits * (i % per))) & mask);
            int32_t z = (int32_t)((zw >> (bits * (o % per))) & mask) + 1;
            float s = qp_f16_to_f32(((const uint16_t *)sc->data)[(size_t)g * rows + o]);
            out[o * cols + i] = s * (float)(q - z);
        }
    }
    for (int k = 0; k < 4; k++)
        qp_tensor_free(h[k]);
    return ok;
}

/* Exports scheme, and checks every decoder layer against the session's
 * fake weights bit for bit; returns the number of layers checked. */
static int check_scheme(struct qp_test_ctx *ctx, const char *scheme, unsigned bits,
                        const char *outname, bool *trivial_gidx)
{
    char *dir, *calib, *out = qp_test_path(ctx, outname);
    struct qp_error err;
    struct qp_llm *m = NULL;
    struct qp_dump *d = NULL;
    const struct qp_wquant **w = NULL;
    int checked = 0;
    *trivial_gidx = true;
    if (!setup(ctx, &dir, &calib)) {
        qp_test_failf(ctx, __FILE__, __LINE__, "setup failed");
        goto done;
    }
    CHECK_OK(export(dir, calib, out, scheme, &err), &err);
    char *st = qp_path_join(out, "model.safetensors");
    CHECK_OK(qp_dump_open(st, QP_DUMP_SAFETENSORS, &d, &err), &err);
    free(st);
    CHECK_OK(qp_llm_open(dir, &m, &err), &err);
    if (!d || !m)
        goto done;
    const struct qp_graph *g = qp_session_graph(m->s);
    w = calloc((size_t)g->n_nodes + 1, sizeof *w);
    CHECK_OK(reference(m, calib, scheme, w, &err), &err);
    for (int i = 0; w && i < g->n_nodes; i++) {
        if (!w[i])
            continue;
        const struct qp_tensor *fake = w[i]->fake;
        size_t rows = (size_t)fake->shape[0], cols = (size_t)fake->shape[1];
        char prefix[256];
        qp_node_weight_name(g, i, prefix, sizeof prefix);
        prefix[strlen(prefix) - 7] = '\0'; /* ".weight" */
        float *deq = malloc(rows * cols * sizeof *deq);
        if (deq && dequantize(ctx, d, prefix, bits, rows, cols, deq)) {
            size_t diff = 0;
            for (size_t k = 0; k < rows * cols; k++)
                diff += memcmp(&deq[k], &((const float *)fake->data)[k], 4) != 0;
            if (diff)
                qp_test_failf(ctx, __FILE__, __LINE__, "%s %s: %zu of %zu weights "
                              "differ from the fake-quant ones", scheme, prefix,
                              diff, rows * cols);
            checked++;
        } else {
            qp_test_failf(ctx, __FILE__, __LINE__, "%s: layer %s malformed",
                          scheme, prefix);
        }
        *trivial_gidx &= !w[i]->g_idx;
        free(deq);
    }
    /* the untouched tensors are the folder's */
    long e = qp_dump_find(d, "model.embed_tokens.weight");
    CHECK(e >= 0);
    CHECK(qp_dump_find(d, "model.layers.0.mlp.down_proj.weight") < 0);
    struct qp_dump *src = NULL;
    CHECK_OK(qp_dump_open(dir, QP_DUMP_SAFETENSORS, &src, &err), &err);
    struct qp_tensor *a = NULL, *b = NULL;
    long se = src ? qp_dump_find(src, "model.embed_tokens.weight") : -1;
    if (e >= 0 && se >= 0 && !qp_dump_load(d, (size_t)e, &a, &err) &&
        !qp_dump_load(src, (size_t)se, &b, &err))
        CHECK(a->nbytes == b->nbytes && !memcmp(a->data, b->data, a->nbytes));
    qp_tensor_free(a);
    qp_tensor_free(b);
    qp_dump_close(src);
done:
    free(w);
    qp_dump_close(d);
    qp_llm_free(m);
    free(dir);
    free(calib);
    free(out);
    return checked;
}

QP_TEST(export_gptq_dequantizes_to_the_fake_weights)
{
    bool trivial;
    /* 2 layers x 7 Linear: groups of 16 (two per row of 32 inputs, three
     * of down_proj's 48) */
    CHECK_INT(check_scheme(ctx, "w4g16@gptq", 4, "g16", &trivial), 14);
    CHECK(trivial);
    /* act-order: the groups' order is g_idx's */
    CHECK_INT(check_scheme(ctx, "w4g16@gptq:act", 4, "act", &trivial), 14);
    CHECK(!trivial);
    /* 8 bits per channel: 4 rows a word, one group */
    CHECK_INT(check_scheme(ctx, "w8c@gptq", 8, "c8", &trivial), 14);
}

QP_TEST(export_gptq_config_files)
{
    char *dir, *calib, *out = qp_test_path(ctx, "o");
    struct qp_error err;
    REQUIRE(setup(ctx, &dir, &calib));
    REQUIRE_OK(export(dir, calib, out, "w4g16@gptq:act,damp0.05", &err), &err);
    char *p = qp_path_join(out, "quantize_config.json");
    struct qp_json *qc = NULL, *cfg = NULL;
    CHECK_OK(qp_json_load(p, &qc, &err), &err);
    free(p);
    p = qp_path_join(out, "config.json");
    CHECK_OK(qp_json_load(p, &cfg, &err), &err);
    free(p);
    double v = 0;
    bool b = false;
    const char *str = NULL;
    CHECK(qc && qp_json_num(qp_json_get(qc, "bits"), &v) && v == 4);
    CHECK(qc && qp_json_num(qp_json_get(qc, "group_size"), &v) && v == 16);
    CHECK(qc && qp_json_bool(qp_json_get(qc, "desc_act"), &b) && b);
    CHECK(qc && qp_json_bool(qp_json_get(qc, "sym"), &b) && b);
    CHECK(qc && qp_json_num(qp_json_get(qc, "damp_percent"), &v) && v == 0.05);
    CHECK(qc && qp_json_str(qp_json_get(qc, "checkpoint_format"), &str) &&
          !strcmp(str, "gptq"));
    const struct qp_json *q = cfg ? qp_json_get(cfg, "quantization_config") : NULL;
    CHECK(q && qp_json_num(qp_json_get(q, "bits"), &v) && v == 4);
    CHECK(q && qp_json_str(qp_json_get(q, "quant_method"), &str) &&
          !strcmp(str, "gptq"));
    /* the rest of config.json is the folder's */
    CHECK(cfg && qp_json_num(qp_json_get(cfg, "hidden_size"), &v) && v == 32);
    qp_json_free(qc);
    qp_json_free(cfg);
    free(dir);
    free(calib);
    free(out);
}

QP_TEST(export_gptq_refusals)
{
    char *dir, *calib, *out = qp_test_path(ctx, "o");
    struct qp_error err;
    REQUIRE(setup(ctx, &dir, &calib));
    CHECK_FAILS(export(dir, calib, out, "w4g16", &err), QP_E_UNSUPPORTED, &err,
                "weight-only '@gptq'");
    CHECK_FAILS(export(dir, calib, out, "w3g16@gptq", &err), QP_E_UNSUPPORTED,
                &err, "3-bit");
    CHECK_FAILS(export(dir, calib, out, "w4t@gptq", &err), QP_E_UNSUPPORTED,
                &err, "has no GPTQModel form");
    CHECK_FAILS(export(dir, NULL, out, "w4g16@gptq", &err), QP_E_INVAL, &err,
                "needs --calib");
    CHECK_FAILS(export(dir, calib, dir, "w4g16@gptq", &err), QP_E_INVAL, &err,
                "is the model folder");
    CHECK_FAILS(export(calib, calib, out, "w4g16@gptq", &err), QP_E_UNSUPPORTED,
                &err, "not a Hugging Face model folder");
    struct stat sb;
    CHECK(stat(out, &sb) != 0);
    free(dir);
    free(calib);
    free(out);
}
