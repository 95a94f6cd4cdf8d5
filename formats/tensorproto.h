/* formats/tensorproto.h: ONNX TensorProto `.pb` files (the format of the
 * ONNX test data, test_data_set_N/input_0.pb) and ONNX element types.
 *
 * Reading accepts every ONNX data type qprobe has a dtype for:
 *
 *   FLOAT f32   UINT8 u8    INT8 i8     UINT16 u16   INT16 i16   INT32 i32
 *   INT64 i64   BOOL bool   FLOAT16 f16 DOUBLE f64   UINT32 u32  UINT64 u64
 *   BFLOAT16 bf16   FLOAT8E4M3FN f8e4m3   FLOAT8E5M2 f8e5m2
 *   UINT4 u4 / INT4 i4 (two per byte, low nibble first)
 *   UINT2 u2 / INT2 i2 (four per byte, lowest bits first)
 *
 * and refuses STRING, COMPLEX64/128, the FNUZ float8 variants, FLOAT4E2M1,
 * FLOAT8E8M0 and unknown types with a message naming the type. Data comes
 * from raw_data (little-endian), from the typed fields (float_data;
 * int32_data, which also carries int8/uint8/int16/uint16/bool/float16/
 * bfloat16/float8 values one per element and 4-/2-bit values as packed
 * bytes; int64_data; double_data; uint64_data, which also carries uint32),
 * or from external data (data_location EXTERNAL: "location", "offset",
 * "length" relative to the file's directory; absolute paths and paths that
 * leave that directory, also through symlinks, are refused). Every size is
 * validated: raw_data and external lengths equal the shape's byte size,
 * typed fields hold exactly one value per element (per packed byte for
 * 4-/2-bit types) and each value fits its type, external ranges lie inside
 * their file. Segmented tensors are refused. A tensor with both embedded
 * and external data, or data in two fields, is refused.
 *
 * Memory: raw_data and external data that are aligned for their element
 * type are borrowed from the file mapping (the tensor holds a reference on
 * it); unaligned data, bool data (normalised to 0/1) and typed fields are
 * copied into memory the tensor owns.
 *
 * Writing produces a TensorProto with name, dims, data_type and raw_data.
 * Quantization parameters have no place in a TensorProto: single files
 * refuse them and `.pb` dump directories write NAME.scale / NAME.zero_point
 * companions (formats/dump.h). */
#ifndef QP_FORMATS_TENSORPROTO_H
#define QP_FORMATS_TENSORPROTO_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "core/tensor.h"

/* ONNX TensorProto.DataType values (onnx.proto; Debian's copy predates
 * 17..26, so they are spelled out here). */
enum qp_onnx_type {
    QP_ONNX_UNDEFINED = 0,
    QP_ONNX_FLOAT = 1,
    QP_ONNX_UINT8 = 2,
    QP_ONNX_INT8 = 3,
    QP_ONNX_UINT16 = 4,
    QP_ONNX_INT16 = 5,
    QP_ONNX_INT32 = 6,
    QP_ONNX_INT64 = 7,
    QP_ONNX_STRING = 8,
    QP_ONNX_BOOL = 9,
    QP_ONNX_FLOAT16 = 10,
    QP_ONNX_DOUBLE = 11,
    QP_ONNX_UINT32 = 12,
    QP_ONNX_UINT64 = 13,
    QP_ONNX_COMPLEX64 = 14,
    QP_ONNX_COMPLEX128 = 15,
    QP_ONNX_BFLOAT16 = 16,
    QP_ONNX_FLOAT8E4M3FN = 17,
    QP_ONNX_FLOAT8E4M3FNUZ = 18,
    QP_ONNX_FLOAT8E5M2 = 19,
    QP_ONNX_FLOAT8E5M2FNUZ = 20,
    QP_ONNX_UINT4 = 21,
    QP_ONNX_INT4 = 22,
    QP_ONNX_FLOAT4E2M1 = 23,
    QP_ONNX_FLOAT8E8M0 = 24,
    QP_ONNX_UINT2 = 25,
    QP_ONNX_INT2 = 26,
    QP_ONNX_TYPE_COUNT
};

/* The qprobe dtype of ONNX data type t. QP_E_UNSUPPORTED for the types
 * listed above as refused, QP_E_FORMAT for undefined or unknown values; the
 * message names the type, e.g. "ONNX data type STRING (8) is not supported:
 * string tensors have no numeric value". */
enum qp_status qp_fmt_onnx_dtype(int32_t t, enum qp_dtype *out,
                                 struct qp_error *err);

/* The ONNX data type of a qprobe dtype, or QP_ONNX_UNDEFINED when ONNX has
 * none (3-bit types). */
enum qp_onnx_type qp_fmt_onnx_type_of(enum qp_dtype dtype);

/* "FLOAT", "INT8", ... or "unknown". */
const char *qp_fmt_onnx_type_name(int32_t t);

/* Parses the serialized TensorProto buf[0..len). `what` names the file in
 * messages. The tensor is named by TensorProto.name, or `name` when that is
 * empty. When map is non-NULL and buf lies inside it, data may be borrowed
 * from the mapping. dir is the root for external data (NULL refuses
 * external data). With header_only the result is a descriptor (data NULL,
 * nbytes set) after the same validation. *out belongs to the caller. */
enum qp_status qp_fmt_pb_parse(const char *what, const void *buf, size_t len,
                               struct qp_mmap *map, const char *dir,
                               const char *name, bool header_only,
                               struct qp_tensor **out, struct qp_error *err);

/* Maps path and parses it; external data is relative to path's directory.
 * Unnamed tensors get `name`, or when that is NULL the file's base name
 * without ".pb". */
enum qp_status qp_fmt_pb_read(const char *path, const char *name,
                              bool header_only, struct qp_tensor **out,
                              struct qp_error *err);

/* qp_fmt_pb_read(path, NULL, false, out, err): the whole tensor. */
enum qp_status qp_fmt_pb_load(const char *path, struct qp_tensor **out,
                              struct qp_error *err);

/* Writes t (with data, without quantization parameters) as a TensorProto
 * with raw_data to fp. QP_E_UNSUPPORTED for dtypes ONNX lacks and for data
 * over protobuf's 2 GiB limit. */
enum qp_status qp_fmt_pb_write(FILE *fp, const struct qp_tensor *t,
                               struct qp_error *err);

/* Writes t to path atomically (temporary name, then rename). */
enum qp_status qp_fmt_pb_save(const char *path, const struct qp_tensor *t,
                              struct qp_error *err);

#endif
