/* formats/gguf.h: GGUF files (ggml's docs/gguf.md, version 3; version 2
 * reads too: it differs only in not declaring big-endian support).
 *
 * Layout, all little-endian:
 *   "GGUF", u32 version, u64 tensor count, u64 KV count,
 *   KVs:          string key, u32 value type, value
 *                 (string = u64 length + bytes, no terminator; bool = one
 *                 byte 0 or 1; array = u32 element type, u64 count,
 *                 elements, which may be arrays themselves)
 *   tensor infos: string name, u32 n_dims, u64 ne[n_dims] (ne[0] innermost,
 *                 ggml order: a [out, in] matrix has ne = {in, out}),
 *                 u32 ggml type, u64 offset (from the data section)
 *   zero padding to general.alignment (u32, a power of two, default 32),
 *   the data section: each tensor at its offset, a multiple of the
 *   alignment, tensors padded with zeros to the alignment.
 *
 * Reader: the file is mapped and every count, length and offset is checked
 * against the bytes left before it is used: strings and keys (at most
 * 65535 bytes for a key, no NUL bytes in keys and names), array counts
 * against the bytes they need, array nesting at most QP_GGUF_MAX_DEPTH,
 * bools 0 or 1, known value types, unique keys, general.alignment a u32
 * power of two, unique tensor names, 0..4 dims each >= 0 with a product
 * and byte size that fit, ne[0] a multiple of the type's block, offsets
 * aligned and [offset, offset + bytes) inside the file. Tensor types qprobe
 * does not know (core/ggml-block.h) are refused naming the tensor and the
 * type (ggml's name for ggml's other types, e.g. q5_K). Errors start with
 * "'PATH': " and name the key or tensor.
 *
 * Writer: KVs and tensors are declared first (in file order), then commit
 * writes the header with offsets computed from the declarations, and each
 * tensor's data in turn (from memory, or from a callback filling a buffer
 * of the tensor's size), padded as ggml pads; the file appears at its path
 * only when complete (core/outfile.h). Given the same KVs and tensors in
 * the same order, the bytes equal those of ggml's gguf_write_to_file.
 * Tensor names are limited to 63 bytes, as llama.cpp's GGML_MAX_NAME (64,
 * with the terminator) requires. */
#ifndef QP_FORMATS_GGUF_H
#define QP_FORMATS_GGUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/ggml-block.h"
#include "core/mmap.h"
#include "core/status.h"
#include "core/strmap.h"

#define QP_GGUF_VERSION 3
#define QP_GGUF_DEFAULT_ALIGNMENT 32
#define QP_GGUF_MAX_DIMS 4
#define QP_GGUF_MAX_KEY 65535
#define QP_GGUF_MAX_NAME 63
#define QP_GGUF_MAX_DEPTH 8
#define QP_GGUF_KEY_ALIGNMENT "general.alignment"

/* Metadata value types; the values are the file's. Only grows. */
enum qp_gguf_type {
    QP_GGUF_U8 = 0,
    QP_GGUF_I8,
    QP_GGUF_U16,
    QP_GGUF_I16,
    QP_GGUF_U32,
    QP_GGUF_I32,
    QP_GGUF_F32,
    QP_GGUF_BOOL,
    QP_GGUF_STRING,
    QP_GGUF_ARRAY,
    QP_GGUF_U64,
    QP_GGUF_I64,
    QP_GGUF_F64,
    QP_GGUF_TYPE_COUNT
};

/* "u8", "i8", ..., "f32", "bool", "string", "array", "u64", "i64", "f64";
 * "?" for other values. */
const char *qp_gguf_type_name(enum qp_gguf_type t);

/* A value as it lies in the file (borrowed from the reader's mapping, or
 * from the writer's buffers). */
struct qp_gguf_value {
    enum qp_gguf_type type;
    enum qp_gguf_type elem;   /* QP_GGUF_ARRAY: element type */
    uint64_t count;           /* QP_GGUF_STRING: bytes; QP_GGUF_ARRAY: elements */
    const unsigned char *p;   /* payload: the scalar, the string's bytes, or
                               * the array's elements */
    size_t size;              /* payload bytes */
    const uint64_t *offs;     /* arrays of strings or arrays read by
                               * qp_gguf_load: offset of each element in p;
                               * NULL otherwise */
};

struct qp_gguf_kv {
    char *key;                /* owned, NUL-terminated */
    struct qp_gguf_value val;
};

struct qp_gguf_tensor {
    char *name;               /* owned */
    int ndim;                 /* 0..QP_GGUF_MAX_DIMS (ggml writes >= 1) */
    int64_t ne[QP_GGUF_MAX_DIMS]; /* ggml order; 1 beyond ndim */
    enum qp_ggml_type type;
    uint64_t offset;          /* from the data section */
    const void *data;         /* in the mapping */
    size_t nbytes;
};

struct qp_gguf {
    char *path;               /* for messages */
    struct qp_mmap *map;      /* NULL for qp_gguf_parse */
    uint32_t version;
    uint32_t alignment;
    size_t data_offset;       /* file offset of the data section */
    struct qp_gguf_kv *kv;
    size_t n_kv;
    struct qp_gguf_tensor *tensors;
    size_t n_tensors;
    struct qp_strmap kv_index, tensor_index;
};

/* Maps and validates path. *out belongs to the caller (qp_gguf_free). */
enum qp_status qp_gguf_load(const char *path, struct qp_gguf **out,
                            struct qp_error *err);

/* The same over a file image in memory (kept alive by the caller for the
 * result's lifetime); `what` stands for the path in messages. */
enum qp_status qp_gguf_parse(const void *data, size_t size, const char *what,
                             struct qp_gguf **out, struct qp_error *err);

/* Frees g and drops its mapping. NULL is ignored. */
void qp_gguf_free(struct qp_gguf *g);

/* The KV with key, or NULL. */
const struct qp_gguf_kv *qp_gguf_find(const struct qp_gguf *g, const char *key);

/* Index of the tensor called name, or -1. */
long qp_gguf_find_tensor(const struct qp_gguf *g, const char *name);

/* Typed look-ups. QP_E_NOTFOUND for a missing key, QP_E_FORMAT for a value
 * of another kind, naming the file, the key and both types:
 *   get_int   any integer type, in int64 (a u64 above INT64_MAX fails)
 *   get_float f32 or f64
 *   get_bool  bool
 *   get_str   string: *s points into the file, *len bytes, no terminator
 *   get_array an array whose elements have type elem */
enum qp_status qp_gguf_get_int(const struct qp_gguf *g, const char *key,
                               int64_t *out, struct qp_error *err);
enum qp_status qp_gguf_get_float(const struct qp_gguf *g, const char *key,
                                 double *out, struct qp_error *err);
enum qp_status qp_gguf_get_bool(const struct qp_gguf *g, const char *key,
                                bool *out, struct qp_error *err);
enum qp_status qp_gguf_get_str(const struct qp_gguf *g, const char *key,
                               const char **s, size_t *len,
                               struct qp_error *err);
enum qp_status qp_gguf_get_array(const struct qp_gguf *g, const char *key,
                                 enum qp_gguf_type elem,
                                 struct qp_gguf_value *out,
                                 struct qp_error *err);

/* Element i (< a->count) of array a, as a value of its own (O(1) for
 * fixed-size elements and arrays read by qp_gguf_load, else a walk). */
void qp_gguf_array_at(const struct qp_gguf_value *a, uint64_t i,
                      struct qp_gguf_value *out);

/* Scalar v as an integer (integer types and bool), or as a double (every
 * numeric type); false for other types or a u64 above INT64_MAX. */
bool qp_gguf_value_int(const struct qp_gguf_value *v, int64_t *out);
bool qp_gguf_value_float(const struct qp_gguf_value *v, double *out);

/* Elements of t (product of ne). */
size_t qp_gguf_tensor_numel(const struct qp_gguf_tensor *t);

/* All of t's values as f32 (core/ggml-block.h decoders) into out[numel]. */
void qp_gguf_tensor_read_f32(const struct qp_gguf_tensor *t, float *out);

/* ---- writer ---------------------------------------------------------------- */

struct qp_gguf_writer;

/* Fills buf (nbytes, the tensor's size) with a tensor's data; called once,
 * during commit. */
typedef enum qp_status (*qp_gguf_fill_fn)(void *ctx, void *buf, size_t nbytes,
                                          struct qp_error *err);

/* A writer for path; nothing is created before commit. *out belongs to the
 * caller until commit or qp_gguf_writer_free. */
enum qp_status qp_gguf_writer_new(const char *path, struct qp_gguf_writer **out,
                                  struct qp_error *err);

/* KVs, in file order. Keys are printable ASCII, 1..65535 bytes, unique
 * (QP_E_INVAL naming the file and key otherwise). general.alignment may
 * only be a u32 power of two; it sets the writer's alignment. */
enum qp_status qp_gguf_add_u32(struct qp_gguf_writer *w, const char *key,
                               uint32_t v, struct qp_error *err);
enum qp_status qp_gguf_add_i32(struct qp_gguf_writer *w, const char *key,
                               int32_t v, struct qp_error *err);
enum qp_status qp_gguf_add_u64(struct qp_gguf_writer *w, const char *key,
                               uint64_t v, struct qp_error *err);
enum qp_status qp_gguf_add_f32(struct qp_gguf_writer *w, const char *key,
                               float v, struct qp_error *err);
enum qp_status qp_gguf_add_bool(struct qp_gguf_writer *w, const char *key,
                                bool v, struct qp_error *err);
/* s: NUL-terminated. */
enum qp_status qp_gguf_add_str(struct qp_gguf_writer *w, const char *key,
                               const char *s, struct qp_error *err);
/* An array of n fixed-size elements of type elem (not string, array or
 * bool) from data (n * element size bytes, copied); e.g. QP_GGUF_I32 for
 * tokenizer.ggml.token_type, QP_GGUF_F32 for tokenizer.ggml.scores. */
enum qp_status qp_gguf_add_array(struct qp_gguf_writer *w, const char *key,
                                 enum qp_gguf_type elem, const void *data,
                                 size_t n, struct qp_error *err);
/* An array of n strings; lens[i] bytes of s[i], or strlen when lens is
 * NULL (strings may hold NUL bytes only with lens). Copied. */
enum qp_status qp_gguf_add_str_array(struct qp_gguf_writer *w, const char *key,
                                     const char *const *s, const size_t *lens,
                                     size_t n, struct qp_error *err);
/* Any value as read (a copy of a KV from another file; nested arrays too). */
enum qp_status qp_gguf_add_value(struct qp_gguf_writer *w, const char *key,
                                 const struct qp_gguf_value *v,
                                 struct qp_error *err);

/* Declares a tensor: name (1..63 bytes, unique), ne[ndim] in ggml order
 * (1 <= ndim <= 4, ne >= 0, ne[0] a multiple of type's block), written as
 * given (ggml's own writer drops trailing 1s). data (the exact
 * qp_ggml_row_bytes size, in GGUF's layout) is borrowed until commit. */
enum qp_status qp_gguf_add_tensor(struct qp_gguf_writer *w, const char *name,
                                  int ndim, const int64_t *ne,
                                  enum qp_ggml_type type, const void *data,
                                  struct qp_error *err);
/* The same with the data produced during commit by fill(ctx, ...). */
enum qp_status qp_gguf_add_tensor_fill(struct qp_gguf_writer *w,
                                       const char *name, int ndim,
                                       const int64_t *ne, enum qp_ggml_type type,
                                       qp_gguf_fill_fn fill, void *ctx,
                                       struct qp_error *err);

/* Writes the file and renames it into place; frees w whatever happens. On
 * error (a fill callback's included) no file is left at path. */
enum qp_status qp_gguf_writer_commit(struct qp_gguf_writer *w,
                                     struct qp_error *err);

/* Drops everything; frees w. NULL is ignored. */
void qp_gguf_writer_free(struct qp_gguf_writer *w);

#endif
