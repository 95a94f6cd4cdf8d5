/* formats/tflite.h: TensorFlow Lite models (.tflite, FlatBuffers schema
 * tensorflow/lite/schema/schema.fbs, identifier "TFL3"), read-only.
 *
 * What is read: subgraph 0 (the main graph; others are counted), its
 * tensors (shape, shape_signature, type, name, buffer, quantization
 * scale / zero_point / quantized_dimension, is_variable, whether sparse),
 * inputs, outputs and operators (opcode, inputs with -1 for absent
 * optional ones, outputs, the builtin options of the operators qprobe
 * runs), the operator codes (builtin code = max(deprecated_builtin_code,
 * builtin_code), as TFLite resolves them; custom code; version), the
 * buffers (inline data, or the offset/size of data stored after the
 * FlatBuffer in models above 2 GB) and the description.
 *
 * Verification (formats/flatbuf.h) comes before every use: a truncated
 * file, an offset or vector past the end, a string without terminator, a
 * wrong identifier, an index out of range (tensor, buffer, opcode), a
 * buffer whose size does not match its tensor, an unknown tensor type or
 * a rank above QP_MAX_DIMS is refused with QP_E_FORMAT (QP_E_UNSUPPORTED
 * for valid types qprobe has no dtype for: string, complex, resource,
 * variant, int4) naming the file and the tensor or operator.
 *
 * Quantization: scale and zero_point must have the same length (or
 * zero_point absent: zeros); per-axis parameters need 0 <= quantized_
 * dimension < rank and scale count == shape[dim]. A 1-D tensor whose
 * quantized_dimension is out of range (the converter writes 3 on the
 * depthwise biases of some models; TFLite Micro accepts it, TFLite 2.9
 * refuses it) is read with dimension 0, and a note records it.
 *
 * Strings (names) point into the file mapping, which the model keeps;
 * arrays are copied, within a budget proportional to the file size (so
 * shared vectors cannot blow memory up). */
#ifndef QP_FORMATS_TFLITE_H
#define QP_FORMATS_TFLITE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/mmap.h"
#include "core/tensor.h"

/* TFLite's TensorType values. */
enum qp_tfl_type {
    QP_TFL_FLOAT32 = 0, QP_TFL_FLOAT16 = 1, QP_TFL_INT32 = 2, QP_TFL_UINT8 = 3,
    QP_TFL_INT64 = 4, QP_TFL_STRING = 5, QP_TFL_BOOL = 6, QP_TFL_INT16 = 7,
    QP_TFL_COMPLEX64 = 8, QP_TFL_INT8 = 9, QP_TFL_FLOAT64 = 10,
    QP_TFL_COMPLEX128 = 11, QP_TFL_UINT64 = 12, QP_TFL_RESOURCE = 13,
    QP_TFL_VARIANT = 14, QP_TFL_UINT32 = 15, QP_TFL_UINT16 = 16,
    QP_TFL_INT4 = 17,
};

/* The builtin operators qprobe names in code (the others by number and
 * qp_tfl_op_name). Values are TFLite's BuiltinOperator. */
enum qp_tfl_builtin {
    QP_TFL_ADD = 0, QP_TFL_AVERAGE_POOL_2D = 1, QP_TFL_CONCATENATION = 2,
    QP_TFL_CONV_2D = 3, QP_TFL_DEPTHWISE_CONV_2D = 4, QP_TFL_DEQUANTIZE = 6,
    QP_TFL_FULLY_CONNECTED = 9, QP_TFL_LOGISTIC = 14, QP_TFL_MAX_POOL_2D = 17,
    QP_TFL_MUL = 18, QP_TFL_RELU = 19, QP_TFL_RELU_N1_TO_1 = 20,
    QP_TFL_RELU6 = 21, QP_TFL_RESHAPE = 22, QP_TFL_SOFTMAX = 25,
    QP_TFL_TANH = 28, QP_TFL_CUSTOM = 32, QP_TFL_PAD = 34,
    QP_TFL_TRANSPOSE = 39, QP_TFL_MEAN = 40, QP_TFL_SUB = 41,
    QP_TFL_SQUEEZE = 43, QP_TFL_STRIDED_SLICE = 45, QP_TFL_TRANSPOSE_CONV = 67,
    QP_TFL_LEAKY_RELU = 98, QP_TFL_QUANTIZE = 114, QP_TFL_HARD_SWISH = 117,
};

/* ActivationFunctionType. */
enum qp_tfl_act {
    QP_TFL_ACT_NONE = 0, QP_TFL_ACT_RELU = 1, QP_TFL_ACT_RELU_N1_TO_1 = 2,
    QP_TFL_ACT_RELU6 = 3, QP_TFL_ACT_TANH = 4, QP_TFL_ACT_SIGN_BIT = 5,
};

struct qp_tfl_quant {
    size_t count;          /* scales; 0: no quantization parameters */
    float *scale;          /* [count], owned */
    int64_t *zero_point;   /* [count], owned (zeros when the file has none) */
    int32_t dim;           /* quantized_dimension as used (see above) */
    int32_t file_dim;      /* as written in the file */
    size_t dim_slot;       /* byte position of the field in the file, 0 if
                              absent (for qp_tfl_fix_quant_dims) */
};

struct qp_tfl_tensor {
    const char *name;      /* in the mapping; "" when unnamed */
    char *alias;           /* owned; set when name is empty or taken by an
                              earlier tensor: "tensor_<i>" or "NAME#<i>" */
    int32_t type;          /* enum qp_tfl_type */
    enum qp_dtype dtype;
    int ndim;
    int64_t shape[QP_MAX_DIMS];
    bool has_signature;    /* shape_signature present (-1 = dynamic dim) */
    int64_t signature[QP_MAX_DIMS];
    uint32_t buffer;       /* index into buffers; 0 = none */
    const uint8_t *data;   /* the buffer's bytes, NULL when none */
    size_t nbytes;
    bool is_variable, sparse;
    struct qp_tfl_quant q;
};

/* Builtin options of the operators qprobe runs (TFLite's defaults when the
 * table or a field is absent). */
struct qp_tfl_options {
    int8_t padding;         /* 0 SAME, 1 VALID */
    int32_t stride_w, stride_h, dilation_w, dilation_h;
    int32_t filter_w, filter_h, depth_multiplier;
    int8_t act;             /* enum qp_tfl_act */
    int32_t axis;           /* concatenation */
    bool keep_dims;         /* reducers */
    bool keep_num_dims;     /* fully connected */
    int8_t weights_format;  /* fully connected: 0 default */
    bool pot_scale_int16;   /* add/sub, default true */
    float beta, alpha;      /* softmax; leaky relu */
    int32_t begin_mask, end_mask, ellipsis_mask, new_axis_mask,
        shrink_axis_mask;   /* strided slice */
    bool offset;            /* strided slice */
    int64_t new_shape[QP_MAX_DIMS]; /* reshape */
    int n_new_shape;        /* -1: absent */
    int32_t squeeze_dims[QP_MAX_DIMS];
    int n_squeeze_dims;
};

struct qp_tfl_op {
    uint32_t opcode;       /* index into opcodes */
    int32_t builtin;       /* the resolved builtin code */
    int *in, n_in;         /* tensor indices, -1 absent; owned */
    int *out, n_out;
    uint8_t options_type;  /* BuiltinOptions union type (0 none) */
    struct qp_tfl_options opt;
};

struct qp_tfl_opcode {
    int32_t builtin;       /* max(deprecated_builtin_code, builtin_code) */
    const char *custom;    /* custom_code or NULL */
    int32_t version;
};

struct qp_tfl_model {
    char *path;
    struct qp_mmap *map;
    const uint8_t *bytes;      /* the whole file (in map, or the caller's) */
    size_t size;
    uint32_t version;
    const char *description;   /* NULL when absent */
    size_t n_subgraphs;
    struct qp_tfl_opcode *opcodes;
    size_t n_opcodes;
    size_t n_buffers;
    struct qp_tfl_tensor *tensors; /* subgraph 0 */
    size_t n_tensors;
    int *inputs, n_inputs, *outputs, n_outputs;
    struct qp_tfl_op *ops;
    size_t n_ops;
    char **notes;              /* tolerated irregularities, owned */
    size_t n_notes;
    size_t budget;             /* bytes of arrays still allowed */
    size_t outputs_slot;       /* byte position of subgraph 0's outputs
                                  field, 0 if absent */
};

/* Maps path and parses it (see above). *out belongs to the caller
 * (qp_tfl_model_free). Errors name the file. */
enum qp_status qp_tfl_load(const char *path, struct qp_tfl_model **out,
                           struct qp_error *err);

/* Parses buf[0..len) (named what in messages). When map is non-NULL, buf
 * lies in it and the model takes a reference; otherwise the caller keeps
 * buf alive as long as the model. */
enum qp_status qp_tfl_parse(const char *what, const void *buf, size_t len,
                            struct qp_mmap *map, struct qp_tfl_model **out,
                            struct qp_error *err);

void qp_tfl_model_free(struct qp_tfl_model *m);

/* Tensor i's unique name: its alias when it has one, else its name. */
static inline const char *qp_tfl_tensor_name(const struct qp_tfl_model *m,
                                             size_t i)
{
    return m->tensors[i].alias ? m->tensors[i].alias : m->tensors[i].name;
}

/* Elements of tensor t (its shape's product; checked at parse). */
static inline size_t qp_tfl_tensor_numel(const struct qp_tfl_tensor *t)
{
    size_t n = 1;
    for (int d = 0; d < t->ndim; d++)
        n *= (size_t)t->shape[d];
    return n;
}

/* "CONV_2D", "DEPTHWISE_CONV_2D", ... for builtin codes TFLite defines,
 * NULL otherwise. */
const char *qp_tfl_op_name(int32_t builtin);

/* "CONV_2D" or, for an unknown code, "builtin 999" into buf; for CUSTOM
 * "CUSTOM 'name'". Returns buf. */
const char *qp_tfl_op_label(const struct qp_tfl_model *m,
                            const struct qp_tfl_op *op, char *buf,
                            size_t size);

/* TFLite's TensorType name ("INT8"), or NULL when unknown. */
const char *qp_tfl_type_name(int32_t type);

/* A new tensor for tensor i: its data (borrowed from the mapping when
 * aligned for its dtype, else copied; a descriptor when it has no buffer)
 * with its quantization parameters (per-tensor when one scale, per-axis
 * along dim otherwise). Integer zero points must fit int32. */
enum qp_status qp_tfl_tensor_new(const struct qp_tfl_model *m, size_t i,
                                 struct qp_tensor **out, struct qp_error *err);

/* ---- editing (formats/tflite-edit.c), for driving TFLite itself ---- */

/* A copy of the model's bytes in which subgraph 0's outputs are `outputs`
 * (n tensor indices): a new vector appended at the end (padded to 4
 * bytes; data stored after the FlatBuffer keeps its absolute offsets) and
 * the outputs field pointed at it. The field must exist in the file.
 * *buf (malloc'd) and *len belong to the caller. */
enum qp_status qp_tfl_with_outputs(const struct qp_tfl_model *m,
                                   const int *outputs, int n, uint8_t **buf,
                                   size_t *len, struct qp_error *err);

/* In buf (a copy of m's bytes, e.g. from qp_tfl_with_outputs): sets the
 * quantized_dimension of every 1-D tensor whose file value is out of range
 * to 0 (the notes' tensors), so that TFLite accepts the file. Returns the
 * number of tensors changed in *changed. */
enum qp_status qp_tfl_fix_quant_dims(const struct qp_tfl_model *m,
                                     uint8_t *buf, size_t len, size_t *changed,
                                     struct qp_error *err);

#endif
