/* formats/tensorproto-pb.h: TensorProto messages (protobuf-c) to tensors,
 * for formats/ only: the `.pb` reader and the ONNX model reader share it.
 * Public callers use formats/tensorproto.h and formats/onnx.h. */
#ifndef QP_FORMATS_TENSORPROTO_PB_H
#define QP_FORMATS_TENSORPROTO_PB_H

#include <stdbool.h>

#include "core/tensor.h"
#include "formats/pbwire.h"
#include "onnx.pb-c.h"

struct qp_tp_ext; /* external-data files mapped so far */

/* Where the tensors of one parsed file come from. */
struct qp_tp_ctx {
    const char *file;            /* named in messages */
    const uint8_t *base;         /* the buffer msg's spans index */
    struct qp_mmap *map;         /* mapping holding base, or NULL: copy */
    const struct qp_pb_msg *msg; /* the unpacked message and its spans */
    const char *dir;             /* external data root; NULL refuses it */
    bool header_only;            /* build descriptors, validate only */
    struct qp_tp_ext *ext;       /* filled lazily; qp_tp_ctx_release */
};

/* Unpacks buf[0..len), a message of type desc (kind names it in messages,
 * what the file), into m, and sets c up to convert its tensors: the
 * buffer, map when it holds buf, dir for external data. Release both with
 * qp_tp_ctx_release and qp_pb_msg_release, also after a failure. */
enum qp_status qp_tp_unpack(struct qp_tp_ctx *c, struct qp_pb_msg *m,
                            const ProtobufCMessageDescriptor *desc,
                            const char *kind, const char *what,
                            const void *buf, size_t len, struct qp_mmap *map,
                            const char *dir, struct qp_error *err);

/* malloc'd directory part of path, with its '/' ("." when none); NULL when
 * out of memory. */
char *qp_tp_dir_of(const char *path);

/* Drops the context's external-data mappings (tensors keep their own
 * references). */
void qp_tp_ctx_release(struct qp_tp_ctx *c);

/* Converts tp into a new tensor named name. label says what tp is for
 * messages ("initializer 'w'"), which read "'FILE': LABEL: problem".
 * *out belongs to the caller. */
enum qp_status qp_fmt_tensorproto_to_tensor(struct qp_tp_ctx *c,
                                            const Onnx__TensorProto *tp,
                                            const char *label, const char *name,
                                            struct qp_tensor **out,
                                            struct qp_error *err);

#endif
