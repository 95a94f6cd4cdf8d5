/* formats/tflite-names.c: names of TFLite's builtin operators and tensor
 * types (formats/tflite.h), in the order of schema.fbs's enums. */
#include <stdio.h>

#include "formats/tflite.h"

static const char *const op_names[] = {
    "ADD", "AVERAGE_POOL_2D", "CONCATENATION", "CONV_2D", "DEPTHWISE_CONV_2D",
    "DEPTH_TO_SPACE", "DEQUANTIZE", "EMBEDDING_LOOKUP", "FLOOR",
    "FULLY_CONNECTED", "HASHTABLE_LOOKUP", "L2_NORMALIZATION", "L2_POOL_2D",
    "LOCAL_RESPONSE_NORMALIZATION", "LOGISTIC", "LSH_PROJECTION", "LSTM",
    "MAX_POOL_2D", "MUL", "RELU", "RELU_N1_TO_1", "RELU6", "RESHAPE",
    "RESIZE_BILINEAR", "RNN", "SOFTMAX", "SPACE_TO_DEPTH", "SVDF", "TANH",
    "CONCAT_EMBEDDINGS", "SKIP_GRAM", "CALL", "CUSTOM",
    "EMBEDDING_LOOKUP_SPARSE", "PAD", "UNIDIRECTIONAL_SEQUENCE_RNN", "GATHER",
    "BATCH_TO_SPACE_ND", "SPACE_TO_BATCH_ND", "TRANSPOSE", "MEAN", "SUB",
    "DIV", "SQUEEZE", "UNIDIRECTIONAL_SEQUENCE_LSTM", "STRIDED_SLICE",
    "BIDIRECTIONAL_SEQUENCE_RNN", "EXP", "TOPK_V2", "SPLIT", "LOG_SOFTMAX",
    "DELEGATE", "BIDIRECTIONAL_SEQUENCE_LSTM", "CAST", "PRELU", "MAXIMUM",
    "ARG_MAX", "MINIMUM", "LESS", "NEG", "PADV2", "GREATER", "GREATER_EQUAL",
    "LESS_EQUAL", "SELECT", "SLICE", "SIN", "TRANSPOSE_CONV",
    "SPARSE_TO_DENSE", "TILE", "EXPAND_DIMS", "EQUAL", "NOT_EQUAL", "LOG",
    "SUM", "SQRT", "RSQRT", "SHAPE", "POW", "ARG_MIN", "FAKE_QUANT",
    "REDUCE_PROD", "REDUCE_MAX", "PACK", "LOGICAL_OR", "ONE_HOT",
    "LOGICAL_AND", "LOGICAL_NOT", "UNPACK", "REDUCE_MIN", "FLOOR_DIV",
    "REDUCE_ANY", "SQUARE", "ZEROS_LIKE", "FILL", "FLOOR_MOD", "RANGE",
    "RESIZE_NEAREST_NEIGHBOR", "LEAKY_RELU", "SQUARED_DIFFERENCE",
    "MIRROR_PAD", "ABS", "SPLIT_V", "UNIQUE", "CEIL", "REVERSE_V2", "ADD_N",
    "GATHER_ND", "COS", "WHERE", "RANK", "ELU", "REVERSE_SEQUENCE",
    "MATRIX_DIAG", "QUANTIZE", "MATRIX_SET_DIAG", "ROUND", "HARD_SWISH", "IF",
    "WHILE", "NON_MAX_SUPPRESSION_V4", "NON_MAX_SUPPRESSION_V5", "SCATTER_ND",
    "SELECT_V2", "DENSIFY", "SEGMENT_SUM", "BATCH_MATMUL",
    "PLACEHOLDER_FOR_GREATER_OP_CODES", "CUMSUM", "CALL_ONCE", "BROADCAST_TO",
    "RFFT2D", "CONV_3D", "IMAG", "REAL", "COMPLEX_ABS", "HASHTABLE",
    "HASHTABLE_FIND", "HASHTABLE_IMPORT", "HASHTABLE_SIZE", "REDUCE_ALL",
    "CONV_3D_TRANSPOSE", "VAR_HANDLE", "READ_VARIABLE", "ASSIGN_VARIABLE",
    "BROADCAST_ARGS", "RANDOM_STANDARD_NORMAL", "BUCKETIZE", "RANDOM_UNIFORM",
    "MULTINOMIAL", "GELU", "DYNAMIC_UPDATE_SLICE", "RELU_0_TO_1",
    "UNSORTED_SEGMENT_PROD", "UNSORTED_SEGMENT_MAX", "UNSORTED_SEGMENT_SUM",
    "ATAN2", "UNSORTED_SEGMENT_MIN", "SIGN", "BITCAST", "BITWISE_XOR",
    "RIGHT_SHIFT",
};
_Static_assert(sizeof op_names / sizeof op_names[0] == 162,
               "BuiltinOperator 0..161");

const char *qp_tfl_op_name(int32_t builtin)
{
    return builtin >= 0 && builtin < (int32_t)(sizeof op_names / sizeof *op_names)
               ? op_names[builtin]
               : NULL;
}

const char *qp_tfl_op_label(const struct qp_tfl_model *m,
                            const struct qp_tfl_op *op, char *buf, size_t size)
{
    const char *name = qp_tfl_op_name(op->builtin);
    const char *custom = op->opcode < m->n_opcodes
                             ? m->opcodes[op->opcode].custom
                             : NULL;
    if (op->builtin == QP_TFL_CUSTOM)
        snprintf(buf, size, "CUSTOM '%s'", custom ? custom : "");
    else if (name)
        snprintf(buf, size, "%s", name);
    else
        snprintf(buf, size, "builtin %d", (int)op->builtin);
    return buf;
}

const char *qp_tfl_type_name(int32_t type)
{
    static const char *const names[] = {
        "FLOAT32", "FLOAT16", "INT32", "UINT8", "INT64", "STRING", "BOOL",
        "INT16", "COMPLEX64", "INT8", "FLOAT64", "COMPLEX128", "UINT64",
        "RESOURCE", "VARIANT", "UINT32", "UINT16", "INT4",
    };
    return type >= 0 && type < (int32_t)(sizeof names / sizeof *names)
               ? names[type]
               : NULL;
}
