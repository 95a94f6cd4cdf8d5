/* analysis/export.c: the export formats and the pipeline that runs one
 * (analysis/export.h). */
#include "analysis/export.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "analysis/export-enc.h"
#include "analysis/export-gguf.h"
#include "analysis/export-gptq.h"
#include "analysis/export-llm.h"
#include "analysis/export-ort.h"
#include "analysis/export-qdq.h"
#include "core/fileio.h"
#include "model/llama-import.h"
#include "model/qassign.h"
#include "model/session.h"

static const struct qp_export_format_info formats[] = {
    {"onnx-qdq", "QDQ ONNX model: int8/int4/int16 weights, int32 biases, "
     "calibrated activations", QP_EXPORT_MODEL_ONNX, true, false, true},
    {"encodings", "AIMET/QNN encodings JSON of every weight and activation",
     QP_EXPORT_MODEL_ONNX, true, false, true},
    {"qnn-overrides", "QNN --quantization_overrides JSON of the recipe's rules",
     QP_EXPORT_MODEL_ONNX, true, true, true},
    {"ort-overrides", "onnxruntime quantize_static TensorQuantOverrides JSON",
     QP_EXPORT_MODEL_ONNX, true, true, true},
    {"llama-tensor-type", "llama-quantize --tensor-type arguments",
     QP_EXPORT_MODEL_LLM, false, true, true},
    {"gptqmodel-dynamic", "GPTQModel QuantizeConfig with its dynamic dict",
     QP_EXPORT_MODEL_LLM, false, true, true},
    {"gguf", "GGUF v3 of a Llama-family checkpoint (llama.cpp's tensors, "
     "metadata and tokenizer)", QP_EXPORT_MODEL_LLM, true, false, true},
    {"gptq", "GPTQModel/AutoGPTQ checkpoint of a Llama-family folder",
     QP_EXPORT_MODEL_LLM, true, false, true},
};
_Static_assert(sizeof formats / sizeof formats[0] == QP_EXPORT_FORMAT_COUNT,
               "a row per format");

const struct qp_export_format_info *qp_export_format_info(enum qp_export_format f)
{
    return (unsigned)f < QP_EXPORT_FORMAT_COUNT ? &formats[f] : NULL;
}

bool qp_export_format_from_name(const char *name, enum qp_export_format *out)
{
    for (int f = 0; f < QP_EXPORT_FORMAT_COUNT; f++)
        if (!strcmp(name, formats[f].name)) {
            *out = (enum qp_export_format)f;
            return true;
        }
    return false;
}

enum qp_export_model qp_export_model_kind(const char *path)
{
    if (qp_str_ends_with(path, ".onnx"))
        return QP_EXPORT_MODEL_ONNX;
    if (qp_str_ends_with(path, ".tflite"))
        return QP_EXPORT_MODEL_TFLITE;
    if (qp_is_dir(path) || qp_str_ends_with(path, ".safetensors") ||
        qp_str_ends_with(path, ".gguf") || qp_str_ends_with(path, ".json"))
        return QP_EXPORT_MODEL_LLM;
    return QP_EXPORT_MODEL_NONE;
}

static const char *kind_name(enum qp_export_model k)
{
    static const char *const names[] = {"an unknown kind of file", "an ONNX graph",
                                        "a Llama-family checkpoint",
                                        "a TFLite model"};
    _Static_assert(sizeof names / sizeof names[0] == QP_EXPORT_MODEL_COUNT,
                   "kinds");
    return names[k];
}

void qp_export_note(struct qp_export_result *r, const char *fmt, ...)
{
    size_t len = strlen(r->notes);
    if (len + 2 >= sizeof r->notes)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->notes + len, sizeof r->notes - len, fmt, ap);
    va_end(ap);
    len = strlen(r->notes);
    if (len + 1 < sizeof r->notes)
        strcat(r->notes, "\n");
}

void qp_export_result_release(struct qp_export_result *r)
{
    free(r->unused);
    memset(r, 0, sizeof *r);
}

/* ---- the ONNX formats ------------------------------------------------------- */

/* The recipe's rules that decide nothing in g, into r. */
static enum qp_status unused_rules(const struct qp_graph *g,
                                   const struct qp_export_opts *o,
                                   struct qp_export_result *r,
                                   struct qp_error *err)
{
    if (!o->recipe)
        return QP_OK;
    bool *used = calloc(o->recipe->nrules + 1, sizeof *used);
    r->unused = calloc(o->recipe->nrules + 1, sizeof *r->unused);
    struct qp_qassign *a = NULL;
    if (!used || !r->unused) {
        free(used);
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    }
    enum qp_status st = qp_qassign_recipe(g, o->recipe, &a, used, err);
    for (size_t i = 0; !st && i < o->recipe->nrules; i++) {
        r->unused[i] = !used[i];
        r->n_unused += !used[i];
    }
    qp_qassign_free(a);
    free(used);
    return st;
}

/* Fails naming the first unused rule under --strict. */
static enum qp_status strict_check(const struct qp_export_opts *o,
                                   const struct qp_export_result *r,
                                   const char *where, struct qp_error *err)
{
    if (!o->strict || !r->n_unused)
        return QP_OK;
    for (size_t i = 0; i < o->recipe->nrules; i++)
        if (r->unused[i])
            return qp_fail(err, QP_E_NOTFOUND, "--strict: recipe '%s': layers "
                           "\"%s\" matches no layer of '%s' (%zu rule%s match "
                           "nothing); nothing was written",
                           o->recipe_name ? o->recipe_name : "", o->recipe->rules[i].glob,
                           where, r->n_unused, r->n_unused == 1 ? "" : "s");
    return QP_OK;
}

/* A session on o->model with its calibration inputs, and the fake-mode
 * plan of the ort flavor (ONNX's rounding: weights and activations half
 * to even, as quantize_static). */
static enum qp_status onnx_plan(const struct qp_export_opts *o,
                                struct qp_export_result *r,
                                struct qp_session **s, struct qp_splan **plan,
                                struct qp_error *err)
{
    enum qp_status st = qp_session_open(o->model, NULL, s, err);
    if (st)
        return st;
    if (!st && o->calib)
        st = qp_session_add_calib(*s, o->calib, &r->calib_sets, err);
    if (!st)
        st = unused_rules(qp_session_graph(*s), o, r, err);
    if (!st)
        st = strict_check(o, r, o->model, err);
    struct qp_session_cfg cfg = {.mode = QP_MODE_FAKE, .scheme = o->scheme,
                                 .recipe = o->recipe, .flavor = QP_RQ_ORT,
                                 .flavor_given = true};
    if (!st)
        st = qp_session_plan(*s, &cfg, plan, err);
    return st;
}

static enum qp_status run_onnx_qdq(const struct qp_export_opts *o,
                                   struct qp_export_result *r,
                                   struct qp_session *s, struct qp_splan *plan,
                                   struct qp_error *err)
{
    char note[512];
    char sch[QP_SCHEME_MAX] = "";
    if (o->scheme)
        qp_scheme_format(o->scheme, sch, sizeof sch);
    snprintf(note, sizeof note, "%s %s, %zu calibration input%s", o->scheme
             ? "scheme" : "recipe", o->scheme ? sch : o->recipe_name, r->calib_sets,
             r->calib_sets == 1 ? "" : "s");
    struct qp_export_qdq_opts qo = {.convert = !o->no_convert, .note = note,
                                    .save = {.external = o->external}};
    struct qp_export_qdq_stats st0;
    enum qp_status st = qp_export_qdq(s, qp_splan_qplan(plan), o->out, &qo, &st0,
                                      err);
    if (!st)
        snprintf(r->summary, sizeof r->summary, "%s: QDQ ONNX at opset %d: %zu "
                 "quantized weights, %zu int32 biases, %zu activation Q/DQ pairs, "
                 "%zu converts, %zu nodes; %zu bytes%s%s", o->out, st0.opset,
                 st0.weights, st0.biases, st0.activations, st0.converts, st0.nodes,
                 st0.save.model_bytes + st0.save.external_bytes,
                 st0.save.external ? " with external data in " : "",
                 st0.save.external ? st0.save.data_name : "");
    if (!st && st0.u8s8_wide)
        qp_export_note(r, "%zu of %zu int8 weights read uint8 activations and "
                       "hold values beyond +-64: ONNX Runtime on x86 CPUs without "
                       "VNNI (AVX2 only) sums their products in int16 pairs, "
                       "which can saturate, so its results there can differ "
                       "from `run --mode int --requant ort`; 7-bit weights (w7c, "
                       "ONNX Runtime's reduce_range) cannot saturate",
                       st0.u8s8_wide, st0.weights);
    return st;
}

static enum qp_status run_onnx(const struct qp_export_opts *o,
                               struct qp_export_result *r, struct qp_error *err)
{
    struct qp_session *s = NULL;
    struct qp_splan *plan = NULL;
    enum qp_status st;
    if (o->format == QP_EXPORT_ORT_OVERRIDES && !o->calib) {
        /* types only: quantize_static calibrates itself */
        if (!(st = qp_session_open(o->model, NULL, &s, err)) &&
            !(st = unused_rules(qp_session_graph(s), o, r, err)) &&
            !(st = strict_check(o, r, o->model, err)))
            st = qp_export_ort_overrides(s, NULL, o->recipe, !o->no_convert,
                                         o->out, r->summary, sizeof r->summary,
                                         err);
        qp_session_free(s);
        return st;
    }
    st = onnx_plan(o, r, &s, &plan, err);
    if (!st) {
        const struct qp_qplan *p = qp_splan_qplan(plan);
        switch (o->format) {
        case QP_EXPORT_ONNX_QDQ:
            st = run_onnx_qdq(o, r, s, plan, err);
            break;
        case QP_EXPORT_ENCODINGS:
        case QP_EXPORT_QNN_OVERRIDES:
            st = qp_export_encodings(s, p, o->format == QP_EXPORT_QNN_OVERRIDES
                                     ? o->recipe : NULL, o->out, r->summary,
                                     sizeof r->summary, err);
            break;
        default:
            st = qp_export_ort_overrides(s, p, o->recipe, !o->no_convert,
                                         o->out, r->summary, sizeof r->summary,
                                         err);
        }
    }
    qp_splan_free(plan);
    qp_session_free(s);
    return st;
}

/* ---- GGUF ------------------------------------------------------------------------ */

static enum qp_status run_gguf(const struct qp_export_opts *o,
                               struct qp_export_result *r, struct qp_error *err)
{
    if (!qp_llama_is_model_dir(o->model))
        return qp_fail(err, QP_E_UNSUPPORTED, "--to gguf needs a Hugging Face "
                       "model folder (config.json, safetensors, tokenizer.json); "
                       "'%s' is not one", o->model);
    struct qp_graph *g = NULL;
    struct qp_llama_config cfg;
    struct qp_qassign *a = NULL;
    enum qp_status st = qp_llama_load(o->model, &g, &cfg, err);
    if (!st)
        st = unused_rules(g, o, r, err);
    if (!st)
        st = strict_check(o, r, o->model, err);
    if (!st)
        st = o->scheme ? qp_qassign_uniform(g, o->scheme, &a, err)
                       : qp_qassign_recipe(g, o->recipe, &a, NULL, err);
    struct qp_export_gguf_in in = {o->model, g, &cfg, a, o->float_type, o->out};
    if (!st)
        st = qp_export_gguf(&in, r, err);
    qp_qassign_free(a);
    qp_graph_free(g);
    return st;
}

/* ---- dispatch ----------------------------------------------------------------- */

static enum qp_status check_opts(const struct qp_export_opts *o,
                                 const struct qp_export_format_info *fi,
                                 struct qp_error *err)
{
    if (!fi)
        return qp_fail(err, QP_E_INVAL, "no such export format");
    if (o->model) {
        struct stat sb;
        if (stat(o->model, &sb))
            return qp_fail(err, QP_E_IO, "'%s': no such file or folder", o->model);
        enum qp_export_model k = qp_export_model_kind(o->model);
        if (k != fi->kind)
            return qp_fail(err, QP_E_UNSUPPORTED, "--to %s applies to %s, and "
                           "'%s' is %s", fi->name, kind_name(fi->kind), o->model,
                           kind_name(k));
    }
    if (!fi->built)
        return qp_fail(err, QP_E_UNSUPPORTED, "--to %s is not built yet",
                       fi->name);
    if (!o->scheme == !o->recipe)
        return qp_fail(err, QP_E_INVAL, "give one of a scheme and a recipe");
    if (fi->recipe_only && !o->recipe)
        return qp_fail(err, QP_E_INVAL, "--to %s translates a recipe's rules: "
                       "give --recipe", fi->name);
    if (fi->model_required && !o->model)
        return qp_fail(err, QP_E_INVAL, "--to %s needs MODEL (%s)", fi->name,
                       kind_name(fi->kind));
    return QP_OK;
}

enum qp_status qp_export_run(const struct qp_export_opts *o,
                             struct qp_export_result *r, struct qp_error *err)
{
    memset(r, 0, sizeof *r);
    const struct qp_export_format_info *fi = qp_export_format_info(o->format);
    enum qp_status st = check_opts(o, fi, err);
    if (st)
        return st;
    switch (fi->kind) {
    case QP_EXPORT_MODEL_ONNX:
        return run_onnx(o, r, err);
    default: {
        if (o->format == QP_EXPORT_GGUF)
            return run_gguf(o, r, err);
        struct qp_export_llm_opts lo = {o->model, o->recipe, o->recipe_name,
                                        o->layers, o->strict};
        if (o->format == QP_EXPORT_GPTQ)
            return qp_export_gptq(o, r, err);
        return o->format == QP_EXPORT_LLAMA_TENSOR_TYPE
                   ? qp_export_llama_tensor_type(&lo, o->out, r, err)
                   : qp_export_gptqmodel_dynamic(&lo, o->out, r, err);
    }
    }
}
