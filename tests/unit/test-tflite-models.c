/* tests/unit/test-tflite-models.c: the real TFLite models of
 * ../shared/tflite (README there: provenance, licences, expected values)
 * imported and run in both flavors:
 *   - person_detect, micro_speech, hello_world and the uint8 MobileNet on
 *     their inputs give the outputs TFLite 2.9 gives (the README's
 *     numbers; every intermediate is compared with TFLite itself in
 *     tests/cli/test-tflite.sh);
 *   - the 127 single-layer int16x8 SEANet models of TFLite Micro's
 *     integration tests reproduce their golden CSVs (made by TFLite's
 *     reference kernels) element for element.
 * Skipped, with a message, when the shared folder is absent. */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>

#include "core/fileio.h"
#include "formats/npy.h"
#include "model/exec.h"
#include "model/tflite-import.h"
#include "tests/test.h"

static const char *tflite_dir(char *buf, size_t size)
{
    const char *sh = qp_test_shared_dir();
    if (!sh) {
        printf("  (skipped: no shared folder with tflite/)\n");
        return NULL;
    }
    snprintf(buf, size, "%s/tflite", sh);
    return buf;
}

/* Runs model on the given inputs; *out receives the graph's first output. */
static enum qp_status run_model(const char *path, enum qp_tfl_flavor f,
                                struct qp_tensor **in, int n_in,
                                struct qp_tensor **out, struct qp_error *err)
{
    struct qp_graph *g;
    struct qp_tflite_opts o = {f, false};
    enum qp_status st = qp_model_load_tflite(path, &o, &g, err);
    if (st)
        return st;
    struct qp_tensor *outs[8] = {0};
    if (g->n_inputs != n_in || g->n_outputs > 8)
        st = qp_fail(err, QP_E_INVAL, "%d inputs, %d outputs", g->n_inputs,
                     g->n_outputs);
    if (!st)
        st = qp_exec_run(g, (const struct qp_tensor *const *)in, n_in, NULL,
                         outs, NULL, err);
    for (int k = 1; k < 8; k++)
        qp_tensor_free(outs[k]);
    *out = outs[0];
    qp_graph_free(g);
    return st;
}

/* The model's output on one .npy input, as integers. */
static bool run_npy(struct qp_test_ctx *ctx, const char *dir, const char *model,
                    const char *input, enum qp_tfl_flavor f, int64_t *vals,
                    size_t n)
{
    char mp[512], ip[512];
    struct qp_error err;
    struct qp_tensor *x, *y = NULL;
    snprintf(mp, sizeof mp, "%s/models/%s", dir, model);
    snprintf(ip, sizeof ip, "%s/inputs/%s", dir, input);
    if (qp_fmt_npy_load(ip, NULL, false, &x, &err)) {
        qp_test_failf(ctx, __FILE__, __LINE__, "%s", err.msg);
        return false;
    }
    enum qp_status st = run_model(mp, f, &x, 1, &y, &err);
    qp_tensor_free(x);
    if (st || qp_tensor_numel(y) != n) {
        qp_test_failf(ctx, __FILE__, __LINE__, "%s on %s: %s", model, input,
                      st ? err.msg : "output size");
        qp_tensor_free(y);
        return false;
    }
    for (size_t i = 0; i < n; i++)
        vals[i] = qp_elem_get_i64(y->dtype, y->data, i);
    qp_tensor_free(y);
    return true;
}

QP_TEST(tflite_person_detect_scores)
{
    char buf[512];
    const char *dir = tflite_dir(buf, sizeof buf);
    if (!dir)
        return;
    for (int f = 0; f < QP_TFL_FLAVOR_COUNT; f++) {
        int64_t v[2];
        if (run_npy(ctx, dir, "person_detect.tflite", "person_detect_person.npy",
                    f, v, 2)) {
            CHECK_INT(v[0], -113);
            CHECK_INT(v[1], 113);
        }
        if (run_npy(ctx, dir, "person_detect.tflite",
                    "person_detect_no_person.npy", f, v, 2)) {
            CHECK_INT(v[0], 57);
            CHECK_INT(v[1], -57);
        }
    }
}

QP_TEST(tflite_micro_speech_and_hello_world)
{
    char buf[512];
    const char *dir = tflite_dir(buf, sizeof buf);
    if (!dir)
        return;
    static const int64_t yes[4] = {-128, -128, 127, -128},
                         no[4] = {-128, -114, -128, 114};
    static const struct { const char *in; int64_t y; } hw[] = {
        {"hello_world_-96.npy", 89}, {"hello_world_-63.npy", 125},
        {"hello_world_-34.npy", 93}, {"hello_world_0.npy", 4}};
    for (int f = 0; f < QP_TFL_FLAVOR_COUNT; f++) {
        int64_t v[4];
        if (run_npy(ctx, dir, "micro_speech_quantized.tflite",
                    "micro_speech_yes.npy", f, v, 4))
            for (int i = 0; i < 4; i++)
                CHECK_INT(v[i], yes[i]);
        if (run_npy(ctx, dir, "micro_speech_quantized.tflite",
                    "micro_speech_no.npy", f, v, 4))
            for (int i = 0; i < 4; i++)
                CHECK_INT(v[i], no[i]);
        for (size_t k = 0; k < sizeof hw / sizeof hw[0]; k++)
            if (run_npy(ctx, dir, "hello_world_int8.tflite", hw[k].in, f, v, 1))
                CHECK_INT(v[0], hw[k].y);
    }
}

QP_TEST(tflite_mobilenet_uint8_top5)
{
    char buf[512];
    const char *dir = tflite_dir(buf, sizeof buf);
    if (!dir)
        return;
    /* TFLite-x86's top-5 (README); class 0 is "background" */
    static const struct { const char *in; int cls[5], score[5]; } want[] = {
        {"mobilenet_v1_0.25_128_bird.npy", {20, 129, 17, 19, 132},
         {69, 60, 31, 16, 14}},
        {"mobilenet_v1_0.25_128_cat.npy", {282, 283, 286, 185, 192},
         {74, 74, 44, 12, 6}},
    };
    int64_t *v = calloc(1001, sizeof *v);
    REQUIRE(v);
    for (size_t k = 0; k < 2; k++) {
        if (!run_npy(ctx, dir, "mobilenet_v1_0.25_128_quant.tflite", want[k].in,
                     QP_TFL_X86, v, 1001))
            continue;
        for (int r = 0; r < 5; r++)
            CHECK_INT(v[want[k].cls[r]], want[k].score[r]);
        /* nothing else scores as high as the fifth */
        int above = 0;
        for (int c = 0; c < 1001; c++)
            above += v[c] >= want[k].score[4];
        CHECK(above >= 5 && above <= 6);
    }
    free(v);
}

/* ---- the SEANet int16x8 conformance models --------------------------- */

/* One CSV line of integers into a new tensor shaped like v's declaration. */
static struct qp_tensor *csv_tensor(const char *path, enum qp_dtype dt,
                                    int ndim, const int64_t *shape,
                                    struct qp_error *err)
{
    char *text = NULL;
    size_t len;
    struct qp_tensor *t = NULL;
    if (qp_read_file(path, 64 << 20, &text, &len, err) ||
        qp_tensor_new("csv", dt, ndim, shape, &t, err)) {
        free(text);
        return NULL;
    }
    size_t n = qp_tensor_numel(t), i = 0;
    char *p = text, *end;
    for (; i < n; i++) {
        long long x = strtoll(p, &end, 10);
        if (end == p)
            break;
        qp_elem_set_i64(dt, t->data, i, x);
        p = end;
        while (*p == ',' || *p == '\n' || *p == ' ' || *p == '\r')
            p++;
    }
    bool rest = *p != 0;
    free(text);
    if (i != n || rest) {
        qp_fail(err, QP_E_FORMAT, "'%s': %zu values for %zu elements", path, i,
                n);
        qp_tensor_free(t);
        return NULL;
    }
    return t;
}

/* Runs dir/NAME.tflite on its input CSVs; true when the golden matches. */
static bool seanet_one(struct qp_test_ctx *ctx, const char *dir,
                       const char *name, enum qp_tfl_flavor f, int *diffs)
{
    char path[1024];
    struct qp_error err;
    struct qp_graph *g;
    struct qp_tflite_opts o = {f, false};
    snprintf(path, sizeof path, "%s/%s.tflite", dir, name);
    if (qp_model_load_tflite(path, &o, &g, &err)) {
        qp_test_failf(ctx, __FILE__, __LINE__, "%s", err.msg);
        return false;
    }
    struct qp_tensor *in[4] = {0}, *out[4] = {0}, *gold = NULL;
    bool ok = g->n_inputs <= 4 && g->n_outputs == 1;
    for (int k = 0; ok && k < g->n_inputs; k++) {
        const struct qp_value *v = &g->values[g->inputs[k]];
        snprintf(path, sizeof path, "%s/%s_input%d_%s.csv", dir, name, k,
                 v->dtype == QP_DTYPE_I32 ? "int32" : "int16");
        ok = (in[k] = csv_tensor(path, v->dtype, v->ndim, v->shape, &err));
    }
    if (ok)
        ok = !qp_exec_run(g, (const struct qp_tensor *const *)in, g->n_inputs,
                          NULL, out, NULL, &err);
    if (ok) {
        snprintf(path, sizeof path, "%s/%s_golden_%s.csv", dir, name,
                 out[0]->dtype == QP_DTYPE_I32 ? "int32" : "int16");
        ok = (gold = csv_tensor(path, out[0]->dtype, out[0]->ndim,
                                out[0]->shape, &err));
    }
    if (!ok)
        qp_test_failf(ctx, __FILE__, __LINE__, "%s: %s", name, err.msg);
    else if (memcmp(gold->data, out[0]->data, gold->nbytes)) {
        size_t n = qp_tensor_numel(gold), bad = 0;
        for (size_t i = 0; i < n; i++)
            bad += qp_elem_get_i64(gold->dtype, gold->data, i) !=
                   qp_elem_get_i64(gold->dtype, out[0]->data, i);
        (*diffs)++;
        printf("  %s (%s): %zu of %zu elements differ from the golden\n", name,
               qp_tfl_flavor_name(f), bad, n);
        ok = false;
    }
    for (int k = 0; k < 4; k++) {
        qp_tensor_free(in[k]);
        qp_tensor_free(out[k]);
    }
    qp_tensor_free(gold);
    qp_graph_free(g);
    return ok;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

QP_TEST(tflite_seanet_int16_goldens)
{
    char buf[512], sub[768];
    const char *dir = tflite_dir(buf, sizeof buf);
    if (!dir)
        return;
    static const char *const ops[] = {"add", "conv", "leaky_relu", "pad",
                                      "quantize", "strided_slice", "sub",
                                      "transpose_conv"};
    for (int f = 0; f < QP_TFL_FLAVOR_COUNT; f++) {
        int models = 0, exact = 0, diffs = 0;
        for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++) {
            snprintf(sub, sizeof sub, "%s/seanet/%s", dir, ops[o]);
            DIR *d = opendir(sub);
            REQUIRE(d);
            char *names[64];
            int n = 0;
            struct dirent *e;
            while ((e = readdir(d)) && n < 64) {
                size_t l = strlen(e->d_name);
                if (l > 7 && !strcmp(e->d_name + l - 7, ".tflite"))
                    names[n++] = strndup(e->d_name, l - 7);
            }
            closedir(d);
            qsort(names, (size_t)n, sizeof *names, cmp_str);
            for (int i = 0; i < n; i++) {
                models++;
                exact += seanet_one(ctx, sub, names[i], f, &diffs);
                free(names[i]);
            }
        }
        printf("  seanet (%s): %d models, %d match their golden\n",
               qp_tfl_flavor_name(f), models, exact);
        CHECK_INT(models, 127);
        CHECK_INT(exact, 127);
        CHECK_INT(diffs, 0);
    }
}
