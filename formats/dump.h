/* formats/dump.h: a dump is a set of named tensors in one of several
 * containers. Readers list every entry up front (descriptors: name, dtype,
 * shape, quantization parameters, layout) and load one tensor at a time, so
 * a consumer can stream a dump whose size exceeds memory.
 *
 * Containers (DESIGN.md §4 "Dumps"):
 *   FILE.safetensors   (also a sharded "model.safetensors.index.json")
 *   FILE.npz           stored or deflated members
 *   FILE.h5 / .hdf5    one dataset per tensor, attributes scale/zero_point/axis
 *   FILE.npy / FILE.pb a single tensor
 *   FILE.gguf          GGUF: ggml block types read as f32 (formats/dump-gguf.c)
 *   FILE.onnx          the model's weights: initializers, then Constant
 *                      node values named by their output (read-only)
 *   FILE.tflite        the model's weights with their quantization
 *                      (read-only, formats/dump-tflite.c)
 *   DIR/               *.npy files, ONNX TensorProto *.pb files, or *.raw /
 *                      *.bin files with JSON sidecars
 *
 * Quantization parameters travel with their tensor: HDF5 as dataset
 * attributes, raw directories in the sidecar, and for containers without
 * per-tensor metadata (safetensors, npz, npy directories) as companion
 * tensors "NAME.scale" (f32) and "NAME.zero_point" (i32) beside an integer
 * tensor NAME. Readers attach companions to their tensor and hide them from
 * the listing (qp_dump_attach_companions); writers emit them. */
#ifndef QP_FORMATS_DUMP_H
#define QP_FORMATS_DUMP_H

#include <stdbool.h>
#include <stddef.h>

#include "core/strmap.h"
#include "core/tensor.h"

enum qp_dump_format {
    QP_DUMP_AUTO = 0,    /* from the path: extension, or a directory's files */
    QP_DUMP_SAFETENSORS,
    QP_DUMP_NPZ,
    QP_DUMP_HDF5,
    QP_DUMP_NPY,         /* one tensor */
    QP_DUMP_PB,          /* one ONNX TensorProto */
    QP_DUMP_ONNX,        /* model initializers, read-only */
    QP_DUMP_NPY_DIR,
    QP_DUMP_PB_DIR,
    QP_DUMP_RAW_DIR,
    QP_DUMP_GGUF,        /* GGUF (formats/dump-gguf.c) */
    QP_DUMP_TFLITE,      /* TFLite model weights, read-only */
    QP_DUMP_FORMAT_COUNT
};

struct qp_dump;

/* String key/value metadata of a dump (e.g. the quantization scheme of each
 * tensor, recorded by `qprobe quantize`). Keys are unique; values are
 * arbitrary strings. Stored by each container in its own way: safetensors
 * __metadata__, HDF5 root attributes, an npz member "__qprobe__.json", the
 * index JSON of a raw directory, ".qprobe-meta.json" in an npy directory
 * (a pb directory ignores it). */
struct qp_dump_meta {
    char **keys, **values; /* owned */
    size_t count, cap;
};

/* The key containers reserve for their own bookkeeping; writers refuse it. */
#define QP_DUMP_META_RESERVED "__qprobe__"

/* A backend. open fills d->entries / d->count (descriptors, owned by the
 * dump) and may keep private state in d->impl; load returns a new tensor
 * for entry i (data owned or borrowed from a mapping; the caller frees it);
 * close releases impl. Entries hidden by qp_dump_attach_companions are
 * removed from the listing, so load receives indices into d->backing. */
struct qp_dump_ops {
    const char *name;
    enum qp_status (*open)(struct qp_dump *d, struct qp_error *err);
    enum qp_status (*load)(struct qp_dump *d, size_t backing_index,
                           struct qp_tensor **out, struct qp_error *err);
    void (*close)(struct qp_dump *d);
};

struct qp_dump {
    const struct qp_dump_ops *ops;
    enum qp_dump_format format;
    char *path;
    struct qp_tensor **entries; /* listing shown to users, owned */
    size_t *backing;            /* entries[i] is backend entry backing[i] */
    size_t count;
    void *impl;                 /* backend state */
    struct qp_dump_meta meta;   /* filled by the backend's open */
    struct qp_strmap index;     /* entry name -> index, built after open */
};

/* Opens path as a dump (format QP_DUMP_AUTO detects it). *out belongs to
 * the caller (qp_dump_close). Errors name the path. */
enum qp_status qp_dump_open(const char *path, enum qp_dump_format format,
                            struct qp_dump **out, struct qp_error *err);

static inline size_t qp_dump_count(const struct qp_dump *d) { return d->count; }

/* Descriptor of entry i (data NULL), borrowed from the dump. */
static inline const struct qp_tensor *qp_dump_entry(const struct qp_dump *d,
                                                    size_t i)
{
    return d->entries[i];
}

/* Index of the entry named name, or -1. */
long qp_dump_find(const struct qp_dump *d, const char *name);

/* Loads entry i with its data and quantization parameters. *out belongs to
 * the caller. */
enum qp_status qp_dump_load(struct qp_dump *d, size_t i, struct qp_tensor **out,
                            struct qp_error *err);

void qp_dump_close(struct qp_dump *d);

/* Metadata value of key, or NULL; borrowed from the dump. */
const char *qp_dump_meta(const struct qp_dump *d, const char *key);

/* Number of metadata entries and entry i (0 <= i < count), in the order the
 * container holds them. */
static inline size_t qp_dump_meta_count(const struct qp_dump *d)
{
    return d->meta.count;
}
void qp_dump_meta_at(const struct qp_dump *d, size_t i, const char **key,
                     const char **value);

/* For backends opened from something other than a path (an HDF5 file
 * image): qp_dump_open with format's reader, whose open finds impl in
 * d->impl; impl (malloc'd, NULL allowed) is the dump's from then on (freed
 * by the reader's close, or with free when the dump cannot be made). */
enum qp_status qp_dump_open_impl(const char *path, enum qp_dump_format format,
                                 void *impl, struct qp_dump **out,
                                 struct qp_error *err);

/* For backends: called at the end of open, after the backend filled
 * d->entries with all its tensors (d->backing may be NULL: identity). For
 * every integer entry NAME with an f32/f16/f64 entry NAME.scale (and
 * optionally an integer entry NAME.zero_point), loads the companions,
 * infers axis and block size from the scale's shape (see
 * qp_qparams_infer), attaches them to the descriptor, and removes the
 * companions from the listing. Loaded tensors get the descriptor's
 * parameters in qp_dump_load. */
enum qp_status qp_dump_attach_companions(struct qp_dump *d,
                                         struct qp_error *err);

/* Infers (axis, block_size) for a tensor of shape `shape` from the shape of
 * its scale tensor, first rule that applies:
 *   1 element                              -> per-tensor (-1, 0)
 *   1-D of length shape[a]                 -> per-axis, the first such a
 *   same rank, all 1 but dim a = shape[a]  -> per-axis a ([1,C,1,1] form)
 *   same rank, all equal but dim a = s     -> blocked along a, block
 *                                             ceil(shape[a]/s), which must
 *                                             give back s
 *   same rank, all equal                   -> blocks of 1 on the last axis
 * Returns false when the shapes are not compatible. */
bool qp_qparams_infer(int ndim, const int64_t *shape, int sndim,
                      const int64_t *sshape, int *axis, int64_t *block_size);

/* ---- writing ----------------------------------------------------------- */

struct qp_dump_writer;

struct qp_dump_writer_ops {
    const char *name;
    enum qp_status (*open)(struct qp_dump_writer *w, struct qp_error *err);
    enum qp_status (*add)(struct qp_dump_writer *w, const struct qp_tensor *t,
                          struct qp_error *err);
    enum qp_status (*commit)(struct qp_dump_writer *w, struct qp_error *err);
    void (*abort)(struct qp_dump_writer *w);
};

struct qp_dump_writer {
    const struct qp_dump_writer_ops *ops;
    enum qp_dump_format format;
    char *path;
    void *impl;
    /* names taken so far (tensors and the companions of quantized ones), to
     * refuse duplicates and collisions */
    struct qp_strmap names;
    size_t count;             /* tensors added */
    struct qp_dump_meta meta; /* written by the backend's commit */
};

/* Starts writing a dump at path; nothing appears at path until commit.
 * QP_DUMP_AUTO picks the format from the extension (.safetensors, .npz,
 * .h5/.hdf5, .gguf; .npy and .pb are directories of those files); a path
 * without an extension (or ending in '/') is an npy directory. QP_E_INVAL,
 * naming the path, for an unknown extension with QP_DUMP_AUTO, a format
 * that contradicts a known extension (x.h5 as npz), or a file format for a
 * path ending in '/'. */
enum qp_status qp_dump_writer_open(const char *path, enum qp_dump_format format,
                                   struct qp_dump_writer **out,
                                   struct qp_error *err);

/* Adds a tensor (copied or written through immediately; the caller keeps
 * ownership of t). Duplicate names are refused, and so is a name equal to a
 * companion (NAME.scale, NAME.zero_point) of a quantized tensor added before
 * or after it. */
enum qp_status qp_dump_writer_add(struct qp_dump_writer *w,
                                  const struct qp_tensor *t,
                                  struct qp_error *err);

/* Sets metadata key to value (copied; a second call replaces the value).
 * Any time before commit. QP_E_INVAL for an empty key or the reserved
 * QP_DUMP_META_RESERVED. */
enum qp_status qp_dump_writer_set_meta(struct qp_dump_writer *w,
                                       const char *key, const char *value,
                                       struct qp_error *err);

/* Finishes the dump and renames it into place; frees w. */
enum qp_status qp_dump_writer_commit(struct qp_dump_writer *w,
                                     struct qp_error *err);

/* Drops everything written; frees w. NULL is ignored. */
void qp_dump_writer_abort(struct qp_dump_writer *w);

/* Parses a format name ("safetensors", "npz", "h5", "npy", "pb", "raw",
 * "onnx", "npy-dir", "pb-dir", "raw-dir", "tflite"). */
bool qp_dump_format_from_name(const char *name, enum qp_dump_format *out);
const char *qp_dump_format_name(enum qp_dump_format f);

/* For writers without native quantization metadata: builds the companion
 * tensors of a quantized tensor t: NAME.scale (f32) and NAME.zero_point
 * (i32, only when t's zero points are non-NULL), in the first shape that
 * qp_qparams_infer reads back as t's axis and block size: [1] per-tensor;
 * [C] or [1,..,C,..,1] per-axis; t's shape with the axis dim replaced by the
 * block count when blocked. QP_E_UNSUPPORTED when no shape is unambiguous.
 * *scale and *zp belong to the caller; *zp may be NULL. */
enum qp_status qp_dump_companions(const struct qp_tensor *t,
                                  struct qp_tensor **scale,
                                  struct qp_tensor **zp, struct qp_error *err);



/* The companions of t in the given shape (whose element count must be
 * t's scale count): for writers that record axis and block size elsewhere
 * and need a shape qp_dump_companions would not pick. */
enum qp_status qp_dump_companions_shaped(const struct qp_tensor *t, int ndim,
                                         const int64_t *shape,
                                         struct qp_tensor **scale,
                                         struct qp_tensor **zp,
                                         struct qp_error *err);

/* ---- metadata helpers for backends ------------------------------------ */

/* Sets (or replaces) key in m; both strings copied. */
enum qp_status qp_dump_meta_set(struct qp_dump_meta *m, const char *key,
                                const char *value, struct qp_error *err);

/* Value of key in m, or NULL. */
const char *qp_dump_meta_get(const struct qp_dump_meta *m, const char *key);

/* Frees the entries of m and zeroes it. */
void qp_dump_meta_release(struct qp_dump_meta *m);

struct qp_json;

/* Adds (or replaces) every member of JSON object obj in m; each value must
 * be a string and each key unique in obj (QP_E_FORMAT naming `what` and
 * the key otherwise). Members named QP_DUMP_META_RESERVED are skipped. */
enum qp_status qp_dump_meta_from_json(struct qp_dump_meta *m,
                                      const struct qp_json *obj,
                                      const char *what, struct qp_error *err);

/* Adds m's entries as string members of JSON object obj; false on no
 * memory. */
bool qp_dump_meta_to_json(const struct qp_dump_meta *m, struct qp_json *obj);

/* A metadata file {"metadata": {"k": "v", ...}} for containers without a
 * place of their own (npy directories): save writes it atomically; load
 * adds its entries to m and does nothing when path does not exist. */
enum qp_status qp_dump_meta_save(const char *path, const struct qp_dump_meta *m,
                                 struct qp_error *err);
enum qp_status qp_dump_meta_load(const char *path, struct qp_dump_meta *m,
                                 struct qp_error *err);

/* ---- helpers for directory backends (formats/dump-files.c) --------------- */

/* malloc'd file name for a tensor name: bytes outside [A-Za-z0-9._-] (and
 * a leading '.') become %XX, then ext is appended. */
char *qp_dump_escape_name(const char *name, const char *ext);

/* Decodes %XX escapes in place. */
void qp_dump_unescape_name(char *s);

/* Files ending in ext below root (up to 8 levels, hidden entries skipped),
 * relative to root: first in the order of root/.qprobe-order, then the
 * rest in natural order. *files (each entry and the array) belongs to the
 * caller. */
enum qp_status qp_dump_scan_dir(const char *root, const char *ext,
                                char ***files, size_t *count,
                                struct qp_error *err);

#endif
