/* formats/pbwire.h: protobuf messages parsed without copying their bulk
 * bytes (internal to formats/; the only users of protobuf-c are
 * formats/tensorproto*.c and formats/onnx*.c).
 *
 * protobuf-c copies every bytes field while unpacking, so a model's weights
 * would be duplicated on the heap. qp_pb_unpack first rewrites the message
 * (a walk over the wire format guided by the protobuf-c descriptors): every
 * TensorProto.raw_data field, wherever it is nested, is replaced by a 4-byte
 * marker holding the index of a span (offset, length) into the original
 * buffer, and message lengths are re-encoded. protobuf-c then unpacks the
 * small rewritten message, and tensors take their bytes from the spans: a
 * mapped file's bytes stay in the mapping.
 *
 * The walk also bounds message nesting (QP_PB_MAX_DEPTH), so a hostile file
 * cannot exhaust the stack in protobuf-c's recursive parser, and refuses
 * malformed wire data (truncated varints and fields, lengths beyond their
 * message, groups, invalid wire types) with a message giving the byte
 * offset. */
#ifndef QP_FORMATS_PBWIRE_H
#define QP_FORMATS_PBWIRE_H

#include <stddef.h>
#include <stdint.h>

#include <protobuf-c/protobuf-c.h>

#include "core/status.h"

#define QP_PB_MAX_DEPTH 64

struct qp_pb_span {
    size_t off, len; /* raw_data bytes at base + off */
};

struct qp_pb_msg {
    ProtobufCMessage *msg;     /* unpacked, rewritten message (owned) */
    struct qp_pb_span *spans;  /* raw_data spans by marker index (owned) */
    size_t n_spans;
};

/* Rewrites and unpacks data[0..len) as a message of type desc. `what` names
 * the file in messages ("'%s': not a valid ... protobuf: ..."), `kind`
 * the message ("ONNX model", "TensorProto"). On success m is filled and
 * belongs to the caller (qp_pb_msg_release). */
enum qp_status qp_pb_unpack(const char *what, const char *kind,
                            const uint8_t *data, size_t len,
                            const ProtobufCMessageDescriptor *desc,
                            struct qp_pb_msg *m, struct qp_error *err);

void qp_pb_msg_release(struct qp_pb_msg *m);

/* The span of a rewritten raw_data field (has, bytes as unpacked): *span is
 * NULL when the field is absent. QP_E_FORMAT when the marker is invalid
 * (which only a bug can cause). */
enum qp_status qp_pb_raw_span(const struct qp_pb_msg *m, int has,
                              const ProtobufCBinaryData *bytes,
                              const struct qp_pb_span **span,
                              struct qp_error *err);

#endif
