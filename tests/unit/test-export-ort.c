/* The QDQ ONNX export in ONNX Runtime (the pinned onnxruntime-node,
 * scripts/ort-setup.sh; fails, never skips, without node): ONNX Runtime
 * loads and runs every exported model, and at every QuantizeLinear of the
 * export (each made a graph output by scripts/ort-reference.js
 * --names-from) its integers are compared with qprobe's `run --mode int
 * --requant ort` of the same export, and with qprobe's fake mode of the
 * original model (the fake value quantized with the plan's parameters,
 * which it lies on), on the small model of export-test-util.h and on the
 * real PP-OCRv4 detector, recognizer and classifier with w8c+a8tz (uint8
 * activations: every group ONNX Runtime fuses into its integer
 * operators; w7c+a8tz on x86 without VNNI, where ONNX Runtime's uint8
 * kernels saturate 8-bit weights: tests/unit/ort-cpu.h). Each test
 * prints, per model: boundaries compared, bit-exact count, the largest
 * deviation from the fake mode in steps of the boundary's scale, and the
 * output's SQNR against the fake mode. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/export-qdq.h"
#include "formats/dump.h"
#include "model/sink.h"
#include "tests/test.h"
#include "tests/unit/export-test-util.h"
#include "tests/unit/ort-cpu.h"
#include "tests/unit/ppocr-models.h"

static const char SUFFIX[] = "_QuantizeLinear_Output";

/* ort-reference.js's file name of a value (formats/dump-npy.c's escape). */
static void npy_name(const char *name, char *buf, size_t size)
{
    size_t k = 0;
    for (const unsigned char *p = (const unsigned char *)name; *p && k + 4 < size; p++) {
        bool plain = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                     (*p >= '0' && *p <= '9') || *p == '.' || *p == '_' || *p == '-';
        if (plain && !(p == (const unsigned char *)name && *p == '.'))
            buf[k++] = (char)*p;
        else
            k += (size_t)snprintf(buf + k, size - k, "%%%02X", *p);
    }
    snprintf(buf + k, size - k, ".npy");
}

/* Runs s (plan NULL: fp32, or a plan) on input, every node fed its inputs
 * from local when given (teacher forcing), writing the values whose names
 * match glob into the npy folder dir; *y (may be NULL) gets the first
 * output. */
static bool run_dump(struct qp_test_ctx *ctx, struct qp_session *s,
                     const struct qp_splan *plan, const char *input,
                     struct qp_dump *local, const char *glob, const char *dir,
                     struct qp_tensor **y)
{
    struct qp_error err;
    struct qp_tensor **feed = NULL;
    const struct qp_graph *g = qp_session_graph(s);
    struct qp_tensor **outs = calloc((size_t)g->n_outputs + 1, sizeof *outs);
    struct qp_sink sink = {0};
    const char *spec[1] = {input};
    bool ok = outs && !qp_session_load_inputs(s, spec, 1, &feed, &err) &&
              !qp_sink_open(&sink, g, dir, QP_DUMP_NPY_DIR, &err);
    struct qp_session_run_opts o = {.capture = glob, .on_capture = qp_sink_capture,
                                    .capture_ctx = &sink, .local = local};
    ok = ok && !qp_session_run(s, plan, (const struct qp_tensor *const *)feed, &o,
                               outs, NULL, &err) &&
         !qp_sink_commit(&sink, g, outs, &err);
    if (!ok)
        qp_test_failf(ctx, __FILE__, __LINE__, "run: %s", err.msg);
    qp_sink_abort(&sink);
    qp_session_free_inputs(s, feed);
    for (int k = 0; outs && k < g->n_outputs; k++) {
        if (k == 0 && y)
            *y = outs[0];
        else
            qp_tensor_free(outs[k]);
    }
    free(outs);
    return ok;
}

static struct qp_tensor *load_npy(const char *dir, const char *name)
{
    char file[1024], path[2100];
    struct qp_error err;
    struct qp_tensor *t = NULL;
    npy_name(name, file, sizeof file);
    snprintf(path, sizeof path, "%s/%s", dir, file);
    return qp_fmt_npy_load(path, name, false, &t, &err) ? NULL : t;
}

/* ONNX Runtime's integers at every boundary of the export (the npy folder
 * odir), dequantized with the plan's parameters under the original's
 * value names, as a dump at dir (opened into *out): what each node of the
 * original reads when fed ONNX Runtime's values. */
static bool ort_values(struct qp_test_ctx *ctx, const struct qp_graph *ge,
                       const struct qp_graph *g, const struct qp_qplan *p,
                       const char *odir, const char *dir, struct qp_dump **out)
{
    struct qp_error err;
    struct qp_dump_writer *w = NULL;
    bool ok = !qp_dump_writer_open(dir, QP_DUMP_NPY_DIR, &w, &err);
    size_t sl = sizeof SUFFIX - 1;
    for (int v = 0; ok && v < ge->n_values; v++) {
        const char *name = ge->values[v].name;
        size_t len = strlen(name);
        char orig[1024];
        if (len <= sl || strcmp(name + len - sl, SUFFIX) || strstr(name, "_convert_") ||
            len - sl >= sizeof orig)
            continue;
        snprintf(orig, sizeof orig, "%.*s", (int)(len - sl), name);
        int ov = qp_graph_find(g, orig);
        struct qp_tensor *q = ov >= 0 ? load_npy(odir, name) : NULL, *f = NULL;
        if (!q)
            continue;
        ok = !qp_tensor_new(orig, QP_DTYPE_F32, q->ndim, q->shape, &f, &err);
        for (size_t i = 0; ok && i < qp_tensor_numel(q); i++)
            ((float *)f->data)[i] =
                ((float)qp_elem_get_i64(q->dtype, q->data, i) - (float)p->v[ov].zp) *
                p->v[ov].scale;
        ok = ok && !qp_dump_writer_add(w, f, &err);
        qp_tensor_free(f);
        qp_tensor_free(q);
    }
    if (ok) {
        ok = !qp_dump_writer_commit(w, &err);
        w = NULL;
    }
    ok = ok && !qp_dump_open(dir, QP_DUMP_AUTO, out, &err);
    if (!ok)
        qp_test_failf(ctx, __FILE__, __LINE__, "ONNX Runtime's values: %s", err.msg);
    qp_dump_writer_abort(w);
    return ok;
}



struct tally {
    int boundaries, exact, elements_off;
    double max_lsb_int;   /* ONNX Runtime against qprobe's int mode */
    double max_lsb_fake;  /* against the fake mode */
    int within1;          /* boundaries within 1 step of the fake mode */
    double sqnr_fake;     /* the output against the fake mode's */
    double sqnr_quant;    /* the fake mode's output against fp32's */
    double sqnr_ort;      /* ONNX Runtime's output against fp32's */
    double max_lsb_local; /* against the fake mode fed the same inputs */
    int compared_local;
};

static double sqnr(const struct qp_tensor *ref, const struct qp_tensor *t)
{
    double s = 0, e = 0;
    size_t n = qp_tensor_numel(ref);
    for (size_t i = 0; i < n; i++) {
        float a, b;
        qp_tensor_read_f32(ref, i, 1, &a);
        qp_tensor_read_f32(t, i, 1, &b);
        s += (double)a * a;
        e += ((double)a - b) * ((double)a - b);
    }
    return e == 0 ? INFINITY : 10 * log10(s / e);
}

/* The whole check of one export: p is the plan it came from (over s, the
 * original's session), export the exported file. */
static void check_export(struct qp_test_ctx *ctx, struct qp_session *s,
                         const struct qp_splan *plan, const char *export,
                         const char *input, const char *tag, struct tally *t)
{
    struct qp_error err;
    struct qp_session *e;
    struct qp_splan *eint;
    char qdir[1024], odir[1024], fdir[1024], f32dir[1024], idir[1024], ldir[1024];
    const char *tmp = qp_test_tmpdir(ctx);
    snprintf(qdir, sizeof qdir, "%s/%s-int", tmp, tag);
    snprintf(odir, sizeof odir, "%s/%s-ort", tmp, tag);
    snprintf(fdir, sizeof fdir, "%s/%s-fake", tmp, tag);
    snprintf(f32dir, sizeof f32dir, "%s/%s-fp32", tmp, tag);
    snprintf(idir, sizeof idir, "%s/%s-ortvalues", tmp, tag);
    snprintf(ldir, sizeof ldir, "%s/%s-local", tmp, tag);
    memset(t, 0, sizeof *t);
    REQUIRE_OK(qp_session_open(export, NULL, &e, &err), &err);
    struct qp_session_cfg cfg = {.mode = QP_MODE_INT, .flavor = QP_RQ_ORT,
                                 .flavor_given = true};
    REQUIRE_OK(qp_session_plan(e, &cfg, &eint, &err), &err);
    struct qp_tensor *yfake = NULL, *yint = NULL, *yf32 = NULL;
    char glob[64];
    snprintf(glob, sizeof glob, "*%s", SUFFIX);
    bool ok = run_dump(ctx, e, eint, input, NULL, glob, qdir, &yint) &&
              run_dump(ctx, s, plan, input, NULL, "*", fdir, &yfake) &&
              run_dump(ctx, s, NULL, input, NULL, "", f32dir, &yf32) &&
              ex_ort(ctx, export, input, qdir, odir);
    struct qp_dump *local = NULL;
    ok = ok && ort_values(ctx, qp_session_graph(e), qp_session_graph(s),
                          qp_splan_qplan(plan), odir, idir, &local) &&
         run_dump(ctx, s, plan, input, local, "*", ldir, NULL);
    qp_dump_close(local);
    const struct qp_graph *ge = qp_session_graph(e), *g = qp_session_graph(s);
    const struct qp_qplan *p = qp_splan_qplan(plan);
    for (int v = 0; ok && v < ge->n_values; v++) {
        const char *name = ge->values[v].name;
        size_t len = strlen(name), sl = sizeof SUFFIX - 1;
        if (len <= sl || strcmp(name + len - sl, SUFFIX))
            continue;
        struct qp_tensor *mine = load_npy(qdir, name), *ort = load_npy(odir, name);
        CHECK(mine && ort);
        if (!mine || !ort || mine->nbytes != ort->nbytes) {
            qp_tensor_free(mine);
            qp_tensor_free(ort);
            continue;
        }
        t->boundaries++;
        /* the value this boundary quantizes, in the original graph */
        char vname[1024];
        snprintf(vname, sizeof vname, "%.*s", (int)(len - sl), name);
        char *conv = strstr(vname, "_convert");
        int ov = conv ? -1 : qp_graph_find(g, vname);
        struct qp_tensor *fake = ov >= 0 ? load_npy(fdir, vname) : NULL;
        struct qp_tensor *lf = ov >= 0 ? load_npy(ldir, vname) : NULL;
        t->compared_local += lf && qp_tensor_numel(lf) == qp_tensor_numel(ort);
        size_t n = qp_tensor_numel(ort), off = 0;
        double dev = 0;
        for (size_t i = 0; i < n; i++) {
            int32_t a = (int32_t)qp_elem_get_i64(ort->dtype, ort->data, i);
            int32_t b = (int32_t)qp_elem_get_i64(mine->dtype, mine->data, i);
            off += a != b;
            t->max_lsb_int = fmax(t->max_lsb_int, fabs((double)a - b));
            if (fake && qp_tensor_numel(fake) == n) {
                float fv;
                qp_tensor_read_f32(fake, i, 1, &fv);
                double q = nearbyint(fv / p->v[ov].scale) + p->v[ov].zp;
                dev = fmax(dev, fabs((double)a - q));
            }
            if (lf && qp_tensor_numel(lf) == n) {
                float lv;
                qp_tensor_read_f32(lf, i, 1, &lv);
                double q = nearbyint(lv / p->v[ov].scale) + p->v[ov].zp;
                t->max_lsb_local = fmax(t->max_lsb_local, fabs((double)a - q));
            }
        }
        t->max_lsb_fake = fmax(t->max_lsb_fake, dev);
        t->within1 += fake && dev <= 1;
        t->exact += off == 0;
        t->elements_off += (int)off;
        qp_tensor_free(fake);
        qp_tensor_free(lf);
        qp_tensor_free(mine);
        qp_tensor_free(ort);
    }
    /* the model's output: ONNX Runtime's float against the fake mode's,
     * and qprobe's int mode (the DequantizeLinear of the same integers) */
    struct qp_tensor *yort = ok ? load_npy(odir, ge->values[ge->outputs[0]].name) : NULL;
    CHECK(yort && yfake && yint);
    if (yort && yfake && yint && yf32) {
        t->sqnr_fake = sqnr(yfake, yort);
        t->sqnr_quant = sqnr(yf32, yfake);
        t->sqnr_ort = sqnr(yf32, yort);
        /* equal integers everywhere: the same output floats */
        if (t->exact == t->boundaries)
            CHECK(yort->nbytes == yint->nbytes &&
                  !memcmp(yort->data, yint->data, yort->nbytes));
    }
    printf("%s: %d QuantizeLinear boundaries, %d bit-exact against qprobe's int "
           "mode (%d elements off, max %g steps); against the fake mode of the "
           "original: fed the same inputs, every layer within %g step%s (%d "
           "compared); run end to end, %d within 1 step (max %g), output SQNR "
           "%.2f dB; against fp32, ONNX Runtime %.2f dB and the fake mode %.2f "
           "dB\n", tag, t->boundaries, t->exact, t->elements_off, t->max_lsb_int,
           t->max_lsb_local, t->max_lsb_local == 1 ? "" : "s", t->compared_local,
           t->within1, t->max_lsb_fake, t->sqnr_fake, t->sqnr_ort, t->sqnr_quant);
    qp_tensor_free(yort);
    qp_tensor_free(yf32);
    qp_tensor_free(yfake);
    qp_tensor_free(yint);
    qp_splan_free(eint);
    qp_session_free(e);
}

QP_TEST(export_ort_small_model_bit_exact)
{
    char model[1024], calib[1024], xdir[1024], input[1024], out[1024];
    const char *tmp = qp_test_tmpdir(ctx);
    snprintf(model, sizeof model, "%s/small.onnx", tmp);
    snprintf(calib, sizeof calib, "%s/calib", tmp);
    snprintf(xdir, sizeof xdir, "%s/x", tmp);
    snprintf(input, sizeof input, "%s/x/in0.npy", tmp);
    snprintf(out, sizeof out, "%s/small-q.onnx", tmp);
    REQUIRE(ex_model(ctx, model, 13) && ex_inputs(ctx, calib, 3, 11) &&
            ex_inputs(ctx, xdir, 1, 99));
    struct qp_error err;
    struct qp_session *s;
    struct qp_recipe *r;
    struct qp_splan *plan;
    char scheme[32], tag[64];
    snprintf(scheme, sizeof scheme, "%s+a8tz", ort_u8_weights());
    snprintf(tag, sizeof tag, "small %s", scheme);
    REQUIRE(ex_plan(ctx, model, calib, scheme, NULL, &s, &r, &plan));
    REQUIRE_OK(qp_export_qdq(s, qp_splan_qplan(plan), out, NULL, NULL, &err), &err);
    struct tally t;
    check_export(ctx, s, plan, out, input, tag, &t);
    CHECK_INT(t.boundaries, 10);
    CHECK_INT(t.exact, t.boundaries);
    CHECK(t.max_lsb_fake <= 1);
    CHECK_INT(t.within1, t.boundaries);
    CHECK(t.max_lsb_local <= 1);
    CHECK_INT(t.compared_local, t.boundaries);
    qp_splan_free(plan);
    qp_session_free(s);
}

/* Synthetic document images from scripts/ort-reference.js. */
static bool images(struct qp_test_ctx *ctx, const char *shape, const char *norm,
                   int seed, const char *out)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "node scripts/ort-reference.js image --shape %s "
             "--seed %d --norm %s -o '%s'", shape, seed, norm, out);
    if (system(cmd)) {
        qp_test_failf(ctx, __FILE__, __LINE__, "%s failed", cmd);
        return false;
    }
    return true;
}

QP_TEST(export_ort_ppocr_bit_exact)
{
    char paths[PPOCR_COUNT][512];
    REQUIRE(ppocr_paths(ctx, paths));
    static const char *const tags[PPOCR_COUNT] = {"det", "rec", "cls"};
    static const char *const shapes[PPOCR_COUNT] = {"1,3,160,224", "1,3,48,320",
                                                    "1,3,48,192"};
    static const char *const norms[PPOCR_COUNT] = {"imagenet", "ocr", "ocr"};
    const char *tmp = qp_test_tmpdir(ctx);
    for (int k = 0; k < PPOCR_COUNT; k++) {
        char calib[1024], file[1100], input[1024], out[1024], tag[64];
        char scheme[32];
        snprintf(scheme, sizeof scheme, "%s+a8tz", ort_u8_weights());
        snprintf(calib, sizeof calib, "%s/calib-%s", tmp, tags[k]);
        snprintf(input, sizeof input, "%s/in-%s.npy", tmp, tags[k]);
        snprintf(out, sizeof out, "%s/%s-q.onnx", tmp, tags[k]);
        mkdir(calib, 0755);
        for (int c = 0; c < 3; c++) {
            snprintf(file, sizeof file, "%s/c%d.npy", calib, c);
            REQUIRE(images(ctx, shapes[k], norms[k], 10 * k + c + 1, file));
        }
        REQUIRE(images(ctx, shapes[k], norms[k], 77 + k, input));
        struct qp_error err;
        struct qp_session *s;
        struct qp_recipe *r;
        struct qp_splan *plan;
        REQUIRE(ex_plan(ctx, paths[k], calib, scheme, NULL, &s, &r, &plan));
        struct qp_export_qdq_stats st;
        REQUIRE_OK(qp_export_qdq(s, qp_splan_qplan(plan), out, NULL, &st, &err), &err);
        snprintf(tag, sizeof tag, "PP-OCRv4 %s %s", tags[k], scheme);
        struct tally t;
        check_export(ctx, s, plan, out, input, tag, &t);
        CHECK(t.boundaries >= 150);
        CHECK_INT(t.boundaries, (int)st.activations);
        CHECK_INT(t.exact, t.boundaries);
        CHECK_INT(t.elements_off, 0);
        /* fed the same inputs, every integer layer of ONNX Runtime is
         * within a step of the fake mode; run end to end those steps grow
         * through the layers as any quantization error does */
        CHECK(t.max_lsb_local <= 1);
        CHECK(t.compared_local >= t.boundaries - 1); /* all but the input's */
        CHECK(t.sqnr_fake > 15);
        qp_splan_free(plan);
        qp_session_free(s);
    }
}

/* Types ONNX Runtime does not fuse on x86, run in ONNX Runtime, with what
 * was measured (printed):
 *   int4 weights (w4c+a8tz): the convolutions run in float in both (qprobe's
 *   int kernels take 8-bit weights; ONNX Runtime's x86 QLinearConv too):
 *   every layer within a step of the fake mode fed ONNX Runtime's values;
 *   float convolutions sum in another order than qprobe's, which moves a
 *   value across a rounding boundary now and then, so bit-exactness is not
 *   asserted;
 *   a mixed recipe (16-bit layers and converts; the 8-bit layers' weights
 *   from tests/unit/ort-cpu.h): within a few 16-bit steps (and the 8-bit
 *   copies a convert makes, which the fake mode does not);
 *   int8 activations (w8c+a8t): ONNX Runtime 1.20 fuses DQ -> Softmax -> Q
 *   into its int8 QLinearSoftmax even on x86, which wraps probabilities
 *   above 127 steps (0.888 at a step of 0.00699 comes out as -127): neither
 *   qprobe's int mode (which runs int8 groups in float, model/qdq.h) nor
 *   the fake mode does that, so only "ONNX Runtime runs it" is asserted;
 *   for ONNX Runtime on x86, export uint8 ('z') activations. */
QP_TEST(export_ort_ppocr_rec_unfused_types)
{
    char paths[PPOCR_COUNT][512];
    REQUIRE(ppocr_paths(ctx, paths));
    const char *tmp = qp_test_tmpdir(ctx);
    char calib[1024], file[1100], input[1024];
    snprintf(calib, sizeof calib, "%s/calib", tmp);
    snprintf(input, sizeof input, "%s/in.npy", tmp);
    mkdir(calib, 0755);
    for (int c = 0; c < 3; c++) {
        snprintf(file, sizeof file, "%s/c%d.npy", calib, c);
        REQUIRE(images(ctx, "1,3,48,320", "ocr", 31 + c, file));
    }
    REQUIRE(images(ctx, "1,3,48,320", "ocr", 88, input));
    static const struct {
        const char *tag, *scheme, *recipe;
        double local; /* steps of the local check; < 0 none */
    } cases[] = {
        {"rec w8c+a8t", "w8c+a8t", NULL, -1},
        {"rec w4c+a8tz", "w4c+a8tz", NULL, 1},
        {"rec mixed a16tz", NULL,
         "{\"qprobe_recipe\": 1, \"default\": \"%s+a8tz\", \"layers\": "
         "{\"conv2d_186.w_0\": \"w8c+a16tz\", \"softmax_*\": \"a16tz\"}}", 4},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        struct qp_error err;
        struct qp_session *s;
        struct qp_recipe *r;
        struct qp_splan *plan;
        char out[1024];
        snprintf(out, sizeof out, "%s/e%zu.onnx", tmp, k);
        char recipe[512];
        if (cases[k].recipe) /* its default's weights: tests/unit/ort-cpu.h */
            snprintf(recipe, sizeof recipe, cases[k].recipe, ort_u8_weights());
        REQUIRE(ex_plan(ctx, paths[PPOCR_REC], calib, cases[k].scheme,
                        cases[k].recipe ? recipe : NULL, &s, &r, &plan));
        struct qp_export_qdq_stats st;
        struct qp_export_qdq_opts o = {.convert = true};
        REQUIRE_OK(qp_export_qdq(s, qp_splan_qplan(plan), out, &o, &st, &err), &err);
        if (cases[k].recipe)
            CHECK(st.converts > 0);
        struct tally t;
        check_export(ctx, s, plan, out, input, cases[k].tag, &t);
        CHECK_INT(t.boundaries, (int)(st.activations + st.converts));
        CHECK(cases[k].local < 0 || t.max_lsb_local <= cases[k].local);
        qp_splan_free(plan);
        qp_recipe_free(r);
        qp_session_free(s);
    }
}
