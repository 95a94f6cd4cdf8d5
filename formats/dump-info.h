/* formats/dump-info.h: what a container cannot say natively about a tensor,
 * kept as a small JSON document beside its tensors (safetensors
 * __metadata__["__qprobe__"], npz member "__qprobe__.json"):
 *
 *   {"version": 1,
 *    "metadata": {"key": "value", ...},                 (npz only)
 *    "tensors": {"NAME": {"dtype": "i4", "shape": [4, 6],  stored as bytes
 *                         "axis": 0, "block_size": 32,     quantized
 *                         "layout": "NHWC"}}}
 *
 * A tensor whose dtype the container lacks (packed 2/3/4-bit; for npz also
 * bf16 and float8) is stored as a 1-D u8 tensor of its bytes; "dtype" and
 * "shape" restore it. "axis" and "block_size" make the companion tensors
 * NAME.scale / NAME.zero_point unambiguous where their shape alone would
 * be read as another granularity. Shared by formats/safetensors.c and
 * formats/npz.c. */
#ifndef QP_FORMATS_DUMP_INFO_H
#define QP_FORMATS_DUMP_INFO_H

#include <stdbool.h>

#include "formats/dump.h"

struct qp_dump_info {
    char *name;                  /* owned */
    bool bytes;                  /* stored as u8 [nbytes] of this dtype/shape */
    enum qp_dtype dtype;
    int ndim;
    int64_t shape[QP_MAX_DIMS];
    bool quant;                  /* axis/block_size given */
    int axis;
    int64_t block_size;
    char *layout;                /* owned, or NULL */
};

struct qp_dump_infos {
    struct qp_dump_info *v;
    size_t n, cap;
    bool sorted;                 /* v sorted by name (after the first find) */
};

void qp_dump_infos_release(struct qp_dump_infos *s);

/* Writing: records what the container needs to know about t beyond its
 * stored dtype and shape (nothing is recorded when nothing is needed).
 * as_bytes: t is stored as the u8 view of qp_dump_bytes_view. */
enum qp_status qp_dump_infos_add(struct qp_dump_infos *s,
                                 const struct qp_tensor *t, bool as_bytes,
                                 struct qp_error *err);

/* Builds the JSON document (compact, malloc'd) of s with, when meta is
 * non-NULL and not empty, a "metadata" object. NULL on no memory. */
char *qp_dump_infos_print(const struct qp_dump_infos *s,
                          const struct qp_dump_meta *meta);

/* Reading: parses a document and appends its tensors to s; `what` names
 * the document in messages. With meta non-NULL, its "metadata" object is
 * added to meta. Every malformed field is QP_E_FORMAT naming the tensor. */
enum qp_status qp_dump_infos_parse(const char *text, const char *what,
                                   struct qp_dump_infos *s,
                                   struct qp_dump_meta *meta,
                                   struct qp_error *err);

/* The info of tensor name, or NULL. Sorts s on first use. */
const struct qp_dump_info *qp_dump_infos_find(struct qp_dump_infos *s,
                                              const char *name);

/* A u8 [nbytes] tensor borrowing t's data (for storing t as bytes). *out
 * belongs to the caller; t must outlive it. */
enum qp_status qp_dump_bytes_view(const struct qp_tensor *t,
                                  struct qp_tensor **out, struct qp_error *err);

/* Turns a stored u8 [n] tensor or descriptor t back into info's dtype and
 * shape, in place (the bytes are kept). QP_E_FORMAT naming `what` when t
 * is not a 1-D u8 tensor of exactly the bytes the dtype and shape need. */
enum qp_status qp_dump_info_retype(struct qp_tensor *t,
                                   const struct qp_dump_info *info,
                                   const char *what, struct qp_error *err);

/* After qp_dump_attach_companions: gives every entry of d that s
 * describes its quantization axis / block size and layout. QP_E_FORMAT
 * when s describes a tensor d lacks, or gives quantization to a tensor
 * without a NAME.scale companion. */
enum qp_status qp_dump_infos_apply(struct qp_dump *d, struct qp_dump_infos *s,
                                   struct qp_error *err);

/* Stores one tensor as the container holds it. */
typedef enum qp_status (*qp_dump_store_fn)(void *ctx,
                                           const struct qp_tensor *stored,
                                           struct qp_error *err);

/* For writers: records t in s and calls write(ctx, stored, err) for t as
 * the container stores it (its u8 view when as_bytes), then for its
 * companions when t is quantized (qp_dump_info_companions). */
enum qp_status qp_dump_info_write(struct qp_dump_infos *s,
                                  const struct qp_tensor *t, bool as_bytes,
                                  qp_dump_store_fn write, void *ctx,
                                  struct qp_error *err);

/* Companion tensors of quantized t (see qp_dump_companions), falling back
 * to the canonical scale shape (t's shape with the axis dim replaced by
 * the block count, [1,..,C,..,1] per axis) when no shape is unambiguous:
 * readers then rely on the info's axis and block_size. */
enum qp_status qp_dump_info_companions(const struct qp_tensor *t,
                                       struct qp_tensor **scale,
                                       struct qp_tensor **zp,
                                       struct qp_error *err);

/* Reads a JSON number that must be an integer in [lo, hi]; false
 * otherwise. Shared by the JSON-reading backends. */
bool qp_dump_json_int(const struct qp_json *n, int64_t lo, int64_t hi,
                      int64_t *out);

/* Reads a JSON array of at most QP_MAX_DIMS non-negative integers into
 * shape; QP_E_FORMAT naming `what` otherwise. */
enum qp_status qp_dump_json_shape(const struct qp_json *n, const char *what,
                                  int *ndim, int64_t *shape,
                                  struct qp_error *err);

#endif
