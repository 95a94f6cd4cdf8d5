/* formats/safetensors.h: safetensors files (huggingface/safetensors).
 *
 * A file is an 8-byte little-endian header length N, N bytes of JSON
 *   {"__metadata__": {"k": "v"},
 *    "NAME": {"dtype": "F32", "shape": [2, 3], "data_offsets": [B, E]}, ...}
 * and the data section, where each tensor occupies [B, E) (relative to the
 * section start), C order, little-endian.
 *
 * As a dump (formats/dump.h, QP_DUMP_SAFETENSORS) the path may be one file,
 * a sharded checkpoint's "model.safetensors.index.json" (its weight_map
 * names the shard files, relative to the index), or a directory holding an
 * index or *.safetensors files. Data is borrowed from the mapping (copied
 * only when a tensor's offset is misaligned for its element size). Packed
 * 2/3/4-bit tensors, which safetensors lacks, are stored as U8 tensors of
 * their bytes with the logical dtype and shape in __metadata__["__qprobe__"]
 * (formats/dump-info.h), which also holds each quantized tensor's axis and
 * block size beside its NAME.scale / NAME.zero_point companions. Other
 * __metadata__ entries are the dump's metadata.
 *
 * The writer streams tensor data into a hidden temporary file beside the
 * output and assembles header + data at commit; the header is padded with
 * spaces so data starts at a multiple of 8 bytes, and tensors are laid out
 * back to back in the order they were added (readers list them by offset,
 * so that order is kept). */
#ifndef QP_FORMATS_SAFETENSORS_H
#define QP_FORMATS_SAFETENSORS_H

#include <stdint.h>

#include "core/tensor.h"
#include "formats/dump.h"

/* Largest header accepted (the reference implementation's limit). */
#define QP_SAFETENSORS_MAX_HEADER ((uint64_t)100000000)

struct qp_st_tensor {
    struct qp_tensor *desc; /* stored dtype and shape (data NULL), owned */
    uint64_t begin, end;    /* byte range in the data section */
};

struct qp_st_header {
    struct qp_st_tensor *tensors; /* sorted by begin */
    size_t count;
    uint64_t data_start;          /* 8 + N: file offset of the data section */
    char *info;                   /* __metadata__["__qprobe__"], or NULL */
    struct qp_dump_meta meta;     /* the rest of __metadata__ */
};

/* Parses and validates the header of the file image buf[0..len) named
 * `what` in messages: header length within the file and at most
 * QP_SAFETENSORS_MAX_HEADER, well-formed JSON object, each dtype known,
 * shapes valid, every range inside the data section and exactly the bytes
 * dtype x shape needs, no overlapping ranges, no duplicate names,
 * __metadata__ a map of strings. Only the header bytes are read. *out
 * belongs to the caller (qp_st_header_free). */
enum qp_status qp_st_parse(const char *what, const void *buf, size_t len,
                           struct qp_st_header **out, struct qp_error *err);

void qp_st_header_free(struct qp_st_header *h);

/* The safetensors dtype name ("F32", "BF16", "F8_E4M3", ...) of dtype, or
 * NULL for packed types safetensors lacks. */
const char *qp_st_dtype_name(enum qp_dtype dtype);

/* ---- streaming writer ------------------------------------------------------
 *
 * For files too large to hold in memory (synthetic checkpoints of
 * billions of parameters): every tensor is declared first, which fixes the
 * header; the data bytes then follow in declaration order, in pieces of
 * any size, straight into the output (one pass, no temporary copy). The
 * file is a hidden temporary beside path until commit (core/outfile.h). */
struct qp_st_stream;

/* Declares descs[0..n) (name, dtype, shape; their data is ignored) and
 * writes the header with meta (NULL: none) as __metadata__. QP_E_INVAL for
 * a duplicate name, QP_E_UNSUPPORTED for a dtype safetensors lacks,
 * QP_E_OVERFLOW for sizes that do not fit, QP_E_IO naming path. *out
 * belongs to the caller until commit or abort. */
enum qp_status qp_st_stream_open(const char *path,
                                 struct qp_tensor *const *descs, size_t n,
                                 const struct qp_dump_meta *meta,
                                 struct qp_st_stream **out,
                                 struct qp_error *err);

/* Appends len data bytes (the next bytes of the declared tensors, C order,
 * little-endian). QP_E_INVAL when they go past the declared total. */
enum qp_status qp_st_stream_write(struct qp_st_stream *s, const void *data,
                                  size_t len, struct qp_error *err);

/* Checks that exactly the declared bytes were written (QP_E_INVAL naming
 * the incomplete tensor otherwise, and nothing appears at path), then
 * renames the file into place. Frees s either way. */
enum qp_status qp_st_stream_commit(struct qp_st_stream *s, struct qp_error *err);

/* Drops the file; frees s. NULL is ignored. */
void qp_st_stream_abort(struct qp_st_stream *s);

#endif
