/* core/tensor.h: the tensor every module passes around.
 *
 * A tensor has a name, a dtype, up to QP_MAX_DIMS dims (row-major, C order),
 * and data that is owned (malloc'd, freed with the tensor), borrowed from a
 * mapped file (a reference on the mapping is held) or borrowed from memory
 * the caller keeps alive. Integer tensors may carry quantization parameters:
 * real = scale * (q - zero_point), with the ONNX layout of scales:
 *
 *   per-tensor : axis = -1, count = 1
 *   per-axis   : axis = a, block_size = 0, count = shape[a]
 *   blocked    : axis = a, block_size = B > 0; scales have the tensor's shape
 *                with shape[a] replaced by ceil(shape[a] / B) (group-wise
 *                quantization: groups of B consecutive elements along a).
 *
 * A tensor whose data is NULL is a descriptor (a dump's listing). */
#ifndef QP_CORE_TENSOR_H
#define QP_CORE_TENSOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/dtype.h"
#include "core/mmap.h"
#include "core/status.h"

#define QP_MAX_DIMS 8

struct qp_qparams {
    float *scale;        /* [count], owned */
    int32_t *zero_point; /* [count], owned; NULL means all zero */
    size_t count;
    int axis;            /* -1 per-tensor */
    int64_t block_size;  /* 0 unless blocked along axis */
};

struct qp_tensor {
    char *name;          /* owned */
    enum qp_dtype dtype;
    int ndim;            /* 0 (scalar) .. QP_MAX_DIMS */
    int64_t shape[QP_MAX_DIMS];
    void *data;          /* nbytes bytes, or NULL for a descriptor */
    size_t nbytes;
    bool owns_data;      /* data is malloc'd and freed with the tensor */
    struct qp_mmap *map; /* non-NULL: data lies in this mapping (ref held) */
    struct qp_qparams *qp; /* optional, owned */
    char *layout;        /* optional layout tag ("NCHW", "NHWC"), owned */
};

/* Number of elements (1 for a scalar). Shapes are validated at creation so
 * this cannot overflow for a tensor built by the functions below. */
size_t qp_tensor_numel(const struct qp_tensor *t);

/* Checks ndim and dims (non-negative, product and byte size fit in size_t)
 * and returns the byte size for dtype in *nbytes. The message names `what`. */
enum qp_status qp_shape_check(const char *what, enum qp_dtype dtype, int ndim,
                              const int64_t *shape, size_t *nbytes,
                              struct qp_error *err);

/* New tensor with zero-filled owned data. *out belongs to the caller
 * (qp_tensor_free). QP_E_NOMEM naming the tensor and its size when the
 * data would exceed the allocation limit (core/memlimit.h). */
enum qp_status qp_tensor_new(const char *name, enum qp_dtype dtype, int ndim,
                             const int64_t *shape, struct qp_tensor **out,
                             struct qp_error *err);

/* QP_OK when nbytes of data for t are within the allocation limit
 * (core/memlimit.h); otherwise qp_tensor_new's QP_E_NOMEM naming t, its
 * dtype and shape (QP_E_INVAL for an invalid QP_MAX_ALLOC). Cheap when
 * within: the message is formatted only on failure. */
enum qp_status qp_tensor_check_limit(const struct qp_tensor *t, size_t nbytes,
                                     struct qp_error *err);

/* New descriptor (data NULL) carrying name, dtype and shape. */
enum qp_status qp_tensor_new_desc(const char *name, enum qp_dtype dtype,
                                  int ndim, const int64_t *shape,
                                  struct qp_tensor **out, struct qp_error *err);

/* New tensor over borrowed data of exactly the shape's byte size. When map is
 * non-NULL the tensor takes a reference on it; otherwise the caller keeps
 * data alive for the tensor's lifetime. Data beyond the allocation limit
 * (core/memlimit.h) is refused as qp_tensor_new refuses it: whoever asks
 * for a tensor reads it whole (a sparse file can declare terabytes). */
enum qp_status qp_tensor_wrap(const char *name, enum qp_dtype dtype, int ndim,
                              const int64_t *shape, const void *data,
                              size_t nbytes, struct qp_mmap *map,
                              struct qp_tensor **out, struct qp_error *err);

/* Frees the tensor, its owned data and parameters, and drops its mapping
 * reference. NULL is ignored. */
void qp_tensor_free(struct qp_tensor *t);

/* Deep copy (data copied into owned memory; a descriptor stays one). */
enum qp_status qp_tensor_clone(const struct qp_tensor *t,
                               struct qp_tensor **out, struct qp_error *err);

/* Replaces the tensor's name. */
enum qp_status qp_tensor_rename(struct qp_tensor *t, const char *name,
                                struct qp_error *err);

/* Sets quantization parameters (copied). zero_point may be NULL. count must
 * agree with axis/block_size and the shape as described above. */
enum qp_status qp_tensor_set_qparams(struct qp_tensor *t, size_t count,
                                     const float *scale,
                                     const int32_t *zero_point, int axis,
                                     int64_t block_size, struct qp_error *err);

/* Copies the layout tag (NULL clears it). */
enum qp_status qp_tensor_set_layout(struct qp_tensor *t, const char *layout,
                                    struct qp_error *err);

/* Element i of a packed (2/3/4-bit) tensor's data, sign-extended for the
 * signed types; and the store that writes it (the data must be zeroed or
 * hold earlier elements: other bits of the bytes are kept). */
int32_t qp_packed_get(enum qp_dtype dtype, const void *data, size_t i);
void qp_packed_set(enum qp_dtype dtype, void *data, size_t i, int32_t v);

/* Reads elements [start, start + n) as f32, dequantizing integer tensors
 * with their parameters (an integer tensor without parameters reads as its
 * integer values). Requires data and start + n <= numel. */
void qp_tensor_read_f32(const struct qp_tensor *t, size_t start, size_t n,
                        float *out);

/* Writes "[d0,d1,...]" (or "[]" for a scalar) into buf, truncated to size. */
void qp_shape_str(int ndim, const int64_t *shape, char *buf, size_t size);

bool qp_shape_equal(int ndim_a, const int64_t *a, int ndim_b,
                    const int64_t *b);

/* New owned tensor with dims permuted: out.shape[i] = t.shape[perm[i]].
 * Quantization parameters follow their axis; layout is cleared. */
enum qp_status qp_tensor_permute(const struct qp_tensor *t, const int *perm,
                                 struct qp_tensor **out, struct qp_error *err);

#endif
