/* tests/unit/dump-test-util.h: helpers shared by the container tests
 * (safetensors, npz, HDF5, raw directories). */
#ifndef QP_TESTS_DUMP_TEST_UTIL_H
#define QP_TESTS_DUMP_TEST_UTIL_H

#include "core/tensor.h"
#include "formats/dump.h"
#include "tests/test.h"

/* A new tensor whose bytes follow a pattern of seed: every byte for byte
 * types (0/1 for bool), every element through qp_packed_set for packed
 * types (padding bits stay zero). Aborts on failure. */
struct qp_tensor *dt_pattern_tensor(const char *name, enum qp_dtype dtype,
                                    int ndim, const int64_t *shape,
                                    unsigned seed);

/* Writes tensors t[0..n) and the metadata pairs meta (key, value, ...,
 * NULL; may be NULL) to path as format. */
bool dt_write_dump(const char *path, enum qp_dump_format format,
                   struct qp_tensor *const *t, size_t n, const char *const *meta,
                   struct qp_error *err);

/* Opens path and checks it lists exactly src[0..n), in order, with the same
 * names, dtypes, shapes, bytes, layouts and quantization parameters, and
 * that every quantized tensor dequantizes to scale * (q - zero_point)
 * computed here element by element. */
void dt_check_dump(struct qp_test_ctx *ctx, const char *path,
                   struct qp_tensor *const *src, size_t n);

/* Fills out[0..6) with quantized tensors: per-tensor i8, per-axis u8 on
 * axis 1, blocked i8 whose block count is ambiguous, packed i4 blocked,
 * packed u3 per-axis, packed i2 per-tensor with a layout. Returns 6. */
size_t dt_quantized_set(struct qp_tensor **out);

/* Fills out[0..QP_DTYPE_COUNT + 3) with a [2,3,5] tensor of every dtype
 * named "t.<dtype>", then an 8-dim f32 tensor named odd_name, an f64
 * scalar "scalar" and an empty i16 [3,0,2] "empty". Returns the count. */
#define DT_EVERY_DTYPE_MAX (QP_DTYPE_COUNT + 3)
size_t dt_every_dtype_set(struct qp_tensor **out, const char *odd_name);

void dt_free_all(struct qp_tensor **t, size_t n);

/* Entries of dir, hidden ones included ("." and ".." excluded). */
int dt_count_files(const char *dir);

#endif
