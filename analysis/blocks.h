/* analysis/blocks.h: tensors of any dtype walked as f32, on all threads.
 *
 * The elements [0, numel) of one or two tensors of equal element count are
 * split into one contiguous share per thread (core/parallel.h). Each thread
 * calls fn on consecutive pieces of its share, in order: f32 tensors are
 * passed straight from their data (no copy); other dtypes are converted
 * with qp_tensor_read_f32 (integer tensors dequantized) into per-thread
 * buffers of QP_BLOCK_ELEMS elements. fn keeps per-thread results in ctx,
 * indexed by thread; the caller merges them in thread order, so a result
 * depends only on the data and the thread count. */
#ifndef QP_ANALYSIS_BLOCKS_H
#define QP_ANALYSIS_BLOCKS_H

#include <stddef.h>

#include "core/tensor.h"

#define QP_BLOCK_ELEMS 4096

/* Below this many elements a tensor is walked on the calling thread. */
#define QP_BLOCK_PARALLEL_MIN ((size_t)1 << 18)

/* x[k] points at elements [start, start + n) of tensor k. */
typedef void (*qp_block_fn)(void *ctx, int thread, const float *const *x,
                            size_t start, size_t n);

/* Threads qp_blocks_run uses for numel elements (>= 1). */
int qp_blocks_threads(size_t numel);

/* Walks nt (1 or 2) tensors holding data, each of at least numel elements,
 * on nthreads threads (from qp_blocks_threads). */
void qp_blocks_run(const struct qp_tensor *const *ts, int nt, size_t numel,
                   int nthreads, qp_block_fn fn, void *ctx);

#endif
