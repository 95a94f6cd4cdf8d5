/* The conv, depthwise and fully-connected kernels against the golden
 * vectors captured from TFLite Micro's reference kernels
 * (../shared/golden/public/kernels/, README there): every case, both
 * rounding flavors, every instruction set this machine has, bit for bit. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fileio.h"
#include "formats/json.h"
#include "formats/npy.h"
#include "kernels/conv-s8.h"
#include "kernels/depthwise-s8.h"
#include "kernels/gemm-s8.h"
#include "tests/test.h"
#include "tests/unit/kern-test.h"

#define PATH 1024

/* buf = a "/" b; false when it does not fit */
static bool join(char *buf, const char *a, const char *b)
{
    int n = snprintf(buf, PATH, "%s/%s", a, b);
    return n > 0 && n < PATH;
}

struct gcase {
    const char *name;
    struct qp_json *json;
    struct qp_tensor *input, *filter, *bias, *mult, *shift, *expected;
    struct qp_rq rq;
    int32_t input_zp;
};

static void gcase_free(struct gcase *g)
{
    qp_json_free(g->json);
    qp_tensor_free(g->input);
    qp_tensor_free(g->filter);
    qp_tensor_free(g->bias);
    qp_tensor_free(g->mult);
    qp_tensor_free(g->shift);
    qp_tensor_free(g->expected);
    qp_rq_release(&g->rq);
}

/* An integer member of the case's JSON; sets *ok false when missing. */
static long jint(const struct gcase *g, const char *key, bool *ok)
{
    double v;
    if (!qp_json_num(qp_json_get(g->json, key), &v)) {
        *ok = false;
        return 0;
    }
    return (long)v;
}

static bool load_npy(const char *dir, const char *name, enum qp_dtype dt,
                     struct qp_tensor **t, struct qp_error *err)
{
    char path[PATH], file[64];
    snprintf(file, sizeof file, "%s.npy", name);
    if (!join(path, dir, file)) {
        qp_fail(err, QP_E_INVAL, "path too long");
        return false;
    }
    if (qp_fmt_npy_load(path, NULL, false, t, err))
        return false;
    if ((*t)->dtype != dt) {
        qp_fail(err, QP_E_FORMAT, "'%s': dtype %s, expected %s", path,
                qp_dtype_name((*t)->dtype), qp_dtype_name(dt));
        return false;
    }
    return true;
}

static bool gcase_load(struct qp_test_ctx *ctx, const char *dir,
                       const char *flavor, struct gcase *g)
{
    struct qp_error err;
    memset(g, 0, sizeof *g);
    g->name = dir;
    char path[PATH];
    bool ok = join(path, dir, "case.json") &&
              !qp_json_load(path, &g->json, &err) &&
              load_npy(dir, "input", QP_DTYPE_I8, &g->input, &err) &&
              load_npy(dir, "filter", QP_DTYPE_I8, &g->filter, &err) &&
              load_npy(dir, "bias", QP_DTYPE_I32, &g->bias, &err) &&
              load_npy(dir, "multiplier", QP_DTYPE_I32, &g->mult, &err) &&
              load_npy(dir, "shift", QP_DTYPE_I32, &g->shift, &err) &&
              load_npy(dir, "expected", QP_DTYPE_I8, &g->expected, &err);
    if (!ok) {
        qp_test_failf(ctx, __FILE__, __LINE__, "%s: %s", dir, err.msg);
        return false;
    }
    enum qp_rq_flavor f;
    bool jok = true;
    long in_off = jint(g, "input_offset", &jok);
    long out_off = jint(g, "output_offset", &jok);
    long amin = jint(g, "activation_min", &jok);
    long amax = jint(g, "activation_max", &jok);
    if (!jok || !qp_rq_flavor_from_name(flavor, &f)) {
        qp_test_failf(ctx, __FILE__, __LINE__, "%s: bad case.json", dir);
        return false;
    }
    g->input_zp = (int32_t)-in_off; /* TFLite adds input_offset = -zp */
    if (qp_rq_prepare_fixed(&g->rq, f, g->mult->data, g->shift->data,
                            qp_tensor_numel(g->mult), (int32_t)out_off,
                            QP_DTYPE_I8, (int32_t)amin, (int32_t)amax,
                            &err)) {
        qp_test_failf(ctx, __FILE__, __LINE__, "%s: %s", dir, err.msg);
        return false;
    }
    return true;
}

/* The geometry of a conv or depthwise case: input NHWC, filter
 * [.., KH, KW, ..] (OHWI or 1HWO) */
static struct qp_conv_geom case_geom(const struct gcase *g, bool *ok)
{
    const int64_t *is = g->input->shape, *fs = g->filter->shape;
    struct qp_conv_geom geo = {
        (size_t)is[1], (size_t)is[2], (size_t)fs[1], (size_t)fs[2],
        (size_t)jint(g, "stride_h", ok), (size_t)jint(g, "stride_w", ok),
        (size_t)jint(g, "dilation_h", ok), (size_t)jint(g, "dilation_w", ok),
        (size_t)jint(g, "pad_top", ok), (size_t)jint(g, "pad_left", ok),
        (size_t)jint(g, "pad_bottom", ok), (size_t)jint(g, "pad_right", ok)};
    return geo;
}

/* Runs one case with one instruction set into out; false on error. */
typedef bool (*run_fn)(struct qp_test_ctx *ctx, struct gcase *g,
                       enum qp_kern_isa isa, int threads, int8_t *out);

static bool run_conv(struct qp_test_ctx *ctx, struct gcase *g,
                     enum qp_kern_isa isa, int threads, int8_t *out)
{
    bool ok = true;
    const int64_t *is = g->input->shape, *fs = g->filter->shape;
    struct qp_conv_s8_params p = {
        .layout = QP_CONV_NHWC, .geom = case_geom(g, &ok),
        .in_c = (size_t)is[3], .out_c = (size_t)fs[0],
        .groups = (size_t)jint(g, "groups", &ok),
        .in_dtype = QP_DTYPE_I8, .filter_dtype = QP_DTYPE_I8,
        .input_zero_point = g->input_zp, .bias = g->bias->data, .rq = &g->rq,
        .isa = isa, .threads = threads};
    struct qp_conv_s8 c;
    struct qp_error err;
    if (!ok) {
        qp_test_failf(ctx, __FILE__, __LINE__, "%s: case.json lacks a "
                      "geometry field", g->name);
        return false;
    }
    if (qp_conv_s8_prepare(&c, &p, g->filter->data, &err)) {
        qp_test_failf(ctx, __FILE__, __LINE__, "%s: %s", g->name, err.msg);
        return false;
    }
    size_t batch = (size_t)is[0];
    void *s = malloc(qp_conv_s8_scratch_size(&c, batch) + 1);
    ok = s && !qp_conv_s8_run(&c, g->input->data, batch, out, s, &err);
    free(s);
    qp_conv_s8_release(&c);
    return ok;
}

static bool run_depthwise(struct qp_test_ctx *ctx, struct gcase *g,
                          enum qp_kern_isa isa, int threads, int8_t *out)
{
    bool ok = true;
    const int64_t *is = g->input->shape;
    struct qp_dw_s8_params p = {
        .geom = case_geom(g, &ok),
        .in_c = (size_t)is[3],
        .depth_multiplier = (size_t)jint(g, "depth_multiplier", &ok),
        .in_dtype = QP_DTYPE_I8, .filter_dtype = QP_DTYPE_I8,
        .input_zero_point = g->input_zp, .bias = g->bias->data, .rq = &g->rq,
        .isa = isa, .threads = threads};
    struct qp_dw_s8 d;
    struct qp_error err;
    if (!ok) {
        qp_test_failf(ctx, __FILE__, __LINE__, "%s: case.json lacks a "
                      "geometry field", g->name);
        return false;
    }
    if (qp_dw_s8_prepare(&d, &p, g->filter->data, &err)) {
        qp_test_failf(ctx, __FILE__, __LINE__, "%s: %s", g->name, err.msg);
        return false;
    }
    size_t batch = (size_t)is[0];
    void *s = malloc(qp_dw_s8_scratch_size(&d, batch) + 1);
    ok = s && !qp_dw_s8_run(&d, g->input->data, batch, out, s, &err);
    free(s);
    qp_dw_s8_release(&d);
    return ok;
}

static bool run_fc(struct qp_test_ctx *ctx, struct gcase *g,
                   enum qp_kern_isa isa, int threads, int8_t *out)
{
    bool ok = true;
    /* per-tensor FullyConnected: acc += (filter + weights_offset) * ... */
    int32_t wzp = (int32_t)-jint(g, "weights_offset", &ok);
    if (!ok) {
        qp_test_failf(ctx, __FILE__, __LINE__, "%s: case.json lacks a "
                      "geometry field", g->name);
        return false;
    }
    const int64_t *is = g->input->shape, *fs = g->filter->shape;
    struct qp_gemm_s8_params p = {
        .n = (size_t)fs[0], .k = (size_t)fs[1], .a_dtype = QP_DTYPE_I8,
        .b_dtype = QP_DTYPE_I8, .a_zero_point = g->input_zp,
        .b_zero_point = &wzp, .b_zero_points = 1, .bias = g->bias->data,
        .rq = &g->rq, .isa = isa, .threads = threads};
    struct qp_gemm_s8 gm;
    struct qp_error err;
    if (qp_gemm_s8_prepare(&gm, &p, g->filter->data, p.k, &err)) {
        qp_test_failf(ctx, __FILE__, __LINE__, "%s: %s", g->name, err.msg);
        return false;
    }
    size_t m = (size_t)is[0];
    void *s = malloc(qp_gemm_s8_scratch_size(&gm, m) + 1);
    ok = s && !qp_gemm_s8_run(&gm, g->input->data, m, p.k, out, p.n, s, &err);
    free(s);
    qp_gemm_s8_release(&gm);
    return ok;
}

/* Every case of kernels/<op>/<flavor>; returns the number checked. */
static size_t run_folder(struct qp_test_ctx *ctx, const char *op,
                         const char *flavor, run_fn fn)
{
    const char *shared = qp_test_shared_dir();
    if (!shared) {
        qp_test_failf(ctx, __FILE__, __LINE__, "no shared golden folder "
                      "(set QP_SHARED)");
        return 0;
    }
    char dir[PATH], sub[128];
    snprintf(sub, sizeof sub, "golden/public/kernels/%s/%s", op, flavor);
    DIR *d = join(dir, shared, sub) ? opendir(dir) : NULL;
    if (!d) {
        qp_test_failf(ctx, __FILE__, __LINE__, "missing '%s'", dir);
        return 0;
    }
    enum qp_kern_isa isas[QP_KERN_ISA_COUNT];
    size_t nisa = kt_isas(isas), cases = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (strncmp(e->d_name, "case_", 5))
            continue;
        char cdir[PATH];
        struct gcase g = {0};
        if (join(cdir, dir, e->d_name) && gcase_load(ctx, cdir, flavor, &g)) {
            size_t n = g.expected->nbytes;
            int8_t *out = malloc(n);
            for (size_t i = 0; out && i < nisa; i++) {
                memset(out, 0x5a, n);
                if (!fn(ctx, &g, isas[i], 1 + (int)(i % 2), out))
                    continue;
                size_t bad = 0;
                while (bad < n && out[bad] == ((int8_t *)g.expected->data)[bad])
                    bad++;
                if (bad < n)
                    qp_test_failf(ctx, __FILE__, __LINE__,
                                  "%s [%s]: element %zu is %d, expected %d",
                                  cdir, qp_kern_isa_name(isas[i]), bad,
                                  out[bad], ((int8_t *)g.expected->data)[bad]);
            }
            free(out);
            cases++;
        }
        gcase_free(&g);
    }
    closedir(d);
    return cases;
}

QP_TEST(kernels_golden_conv)
{
    CHECK_INT(run_folder(ctx, "conv", "tflite-double", run_conv), 30);
    CHECK_INT(run_folder(ctx, "conv", "tflite-single", run_conv), 30);
}

QP_TEST(kernels_golden_depthwise)
{
    CHECK_INT(run_folder(ctx, "depthwise", "tflite-double", run_depthwise),
              20);
    CHECK_INT(run_folder(ctx, "depthwise", "tflite-single", run_depthwise),
              20);
}

QP_TEST(kernels_golden_fc)
{
    CHECK_INT(run_folder(ctx, "fc", "tflite-double", run_fc), 20);
    CHECK_INT(run_folder(ctx, "fc", "tflite-single", run_fc), 20);
}
