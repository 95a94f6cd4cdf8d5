/* analysis/export.h: `qprobe export`: what qprobe decides (a scheme, a
 * recipe, calibrated ranges) in the formats real runtimes and tools load.
 *
 * The formats, and what each needs:
 *
 *   onnx-qdq           a QDQ ONNX model of an ONNX model (analysis/export-qdq.h);
 *                      MODEL (.onnx) and, for quantized activations, --calib
 *   encodings          AIMET / QNN encodings of the whole plan: every
 *                      quantized weight and calibrated activation
 *                      (analysis/export-enc.h); MODEL (.onnx) and --calib
 *   qnn-overrides      the same format for qnn-onnx-converter's
 *                      --quantization_overrides, holding only what the
 *                      recipe's rules decide (analysis/export-enc.h); MODEL
 *   ort-overrides      TensorQuantOverrides for onnxruntime.quantization's
 *                      quantize_static extra_options (analysis/export-ort.h);
 *                      MODEL (the tensor names come from the graph)
 *   llama-tensor-type  llama-quantize arguments: --tensor-type lines with
 *                      anchored regexes over llama.cpp's tensor names and
 *                      the --output-tensor-type / --token-embedding-type
 *                      flags (analysis/export-llm.h); recipe-only, with the
 *                      layer count from MODEL (a checkpoint) or --layers
 *   gptqmodel-dynamic  GPTQModel's QuantizeConfig with its `dynamic` dict
 *                      (analysis/export-llm.h); recipe-only, MODEL optional
 *   gguf               a Llama-family model folder as GGUF v3 for llama.cpp
 *                      (analysis/export-gguf.h); MODEL (a folder)
 *   gptq               a Llama-family folder quantized by GPTQ, written
 *                      as AutoGPTQ / GPTQModel checkpoints are
 *                      (analysis/export-gptq.h); MODEL (a folder), --scheme
 *                      '@gptq' and --calib tokens
 *
 * A format refuses a model of the wrong kind (GGUF from an ONNX CNN, a
 * QDQ ONNX from a checkpoint) naming both. Recipe rules that match no
 * layer of the model are reported (the result's unused[]); with strict
 * they are an error, and nothing is written. Every output is written
 * under a temporary name and renamed into place when complete
 * (core/outfile.h). */
#ifndef QP_ANALYSIS_EXPORT_H
#define QP_ANALYSIS_EXPORT_H

#include <stdbool.h>
#include <stddef.h>

#include "core/ggml-block.h"
#include "core/progress.h"
#include "core/status.h"
#include "quant/recipe.h"
#include "quant/scheme.h"

/* Only grows; ends in _COUNT. */
enum qp_export_format {
    QP_EXPORT_ONNX_QDQ = 0,
    QP_EXPORT_ENCODINGS,
    QP_EXPORT_QNN_OVERRIDES,
    QP_EXPORT_ORT_OVERRIDES,
    QP_EXPORT_LLAMA_TENSOR_TYPE,
    QP_EXPORT_GPTQMODEL_DYNAMIC,
    QP_EXPORT_GGUF,
    QP_EXPORT_GPTQ,
    QP_EXPORT_FORMAT_COUNT
};

/* What a format reads its model as. */
enum qp_export_model {
    QP_EXPORT_MODEL_NONE = 0, /* recipe-only: a model is optional */
    QP_EXPORT_MODEL_ONNX,     /* an ONNX graph (.onnx) */
    QP_EXPORT_MODEL_LLM,      /* a Llama-family checkpoint (folder, .safetensors, .gguf) */
    QP_EXPORT_MODEL_TFLITE,   /* a .tflite model: no export takes one yet */
    QP_EXPORT_MODEL_COUNT
};

struct qp_export_format_info {
    const char *name;         /* "onnx-qdq" */
    const char *summary;      /* one line */
    enum qp_export_model kind;
    bool model_required;
    bool recipe_only;         /* takes --recipe only, not --scheme */
    bool built;               /* false: listed, refused with a note */
};

const struct qp_export_format_info *qp_export_format_info(enum qp_export_format f);

/* The format named name; false when none. */
bool qp_export_format_from_name(const char *name, enum qp_export_format *out);

/* The kind of the model at path: .onnx files are ONNX graphs; folders
 * (config.json), .safetensors and .gguf files are checkpoints; .tflite
 * files TFLite models. */
enum qp_export_model qp_export_model_kind(const char *path);

struct qp_export_opts {
    enum qp_export_format format;
    const char *model;               /* NULL: recipe-only */
    const struct qp_scheme *scheme;  /* one of scheme and recipe */
    const struct qp_recipe *recipe;
    const char *recipe_name;         /* for messages and metadata */
    const char *calib;               /* calibration inputs (file or folder) */
    const char *out;
    bool strict;                     /* unused recipe rules are an error */
    bool no_convert;                 /* onnx-qdq: no DQ -> Q at precision boundaries */
    bool external;                   /* onnx-qdq: external data */
    int layers;                      /* llama-tensor-type without MODEL; 0 none */
    enum qp_ggml_type float_type;    /* gguf: weights that stay float (F32 = 0,
                                      * F16, BF16) */
    const struct qp_progress *progress;
};

struct qp_export_result {
    bool *unused;         /* [recipe->nrules] a rule matching nothing; owned */
    size_t n_unused;
    size_t calib_sets;    /* calibration inputs used */
    /* what was written, for the command's summary line */
    char summary[512];
    /* things the user should know (one a line), or "" */
    char notes[2048];
};

/* Runs the export o describes. r receives the unused rules (also on an
 * error caused by them) and the summary; release it with
 * qp_export_result_release. */
enum qp_status qp_export_run(const struct qp_export_opts *o,
                             struct qp_export_result *r, struct qp_error *err);

void qp_export_result_release(struct qp_export_result *r);

/* Appends one line (printf-style, a newline added) to r->notes; dropped
 * when the notes are full. */
void qp_export_note(struct qp_export_result *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif
