/* kernels/conv-f32.h: float convolution, transposed convolution and
 * pooling over 1 to 3 spatial dims, channels-first (N, C, [D,] [H,] W).
 *
 * Geometry is one struct for all of them. Dims are given for nsp spatial
 * axes; internally 1-D and 2-D are 3-D with leading extents of 1. Padding
 * at the end of an axis is implied by the output size the caller computed
 * (ONNX rules live in model/op-conv.c and model/op-pool.c); the kernels
 * read zero (conv) or skip (pool) every position outside the input.
 *
 * Conv: x [N, IC, in...], w [OC, IC/groups, kernel...], bias [OC] or NULL,
 * y [N, OC, out...]; out = (in + pads - dilation*(kernel-1) - 1)/stride + 1
 * as computed by the caller. The portable path (qp_conv_f32_gemm,
 * kernels/conv-f32-gemm.c) runs a direct loop for depthwise (IC/groups ==
 * 1), a plain GEMM for 1x1/stride 1/no pad, otherwise im2col in column
 * tiles and GEMM (OpenBLAS through kernels/blas.h). qp_conv_f32 runs the
 * SIMD variant the dispatch table chose (kernels/conv-f32-ukernel.h:
 * direct convolution, no im2col) when it supports the geometry, else the
 * GEMM path; the two differ by rounding only (both are checked against
 * naive loops in double, tests/unit/test-conv-f32.c).
 *
 * ConvTranspose: x [N, IC, in...], w [IC, OC/groups, kernel...], y [N, OC,
 * out...] with out as the caller computed (output_padding and output_shape
 * included): the GEMM path runs a GEMM into columns then col2im
 * accumulation; a SIMD variant may take the geometries it supports
 * (kernel equal to stride, no padding: every output a single sum).
 *
 * The kernels never allocate: callers ask _scratch_size (in floats) and
 * pass that much scratch. */
#ifndef QP_KERNELS_CONV_F32_H
#define QP_KERNELS_CONV_F32_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define QP_CONV_MAX_SPATIAL 3

struct qp_conv_nd {
    int nsp;                   /* spatial dims, 1..3 */
    size_t batch;              /* N */
    size_t in_c, out_c;        /* IC, OC (pooling: in_c = out_c = C) */
    size_t groups;             /* divides in_c and out_c; 1 for pooling */
    int64_t in[QP_CONV_MAX_SPATIAL];       /* input extents */
    int64_t out[QP_CONV_MAX_SPATIAL];      /* output extents */
    int64_t kernel[QP_CONV_MAX_SPATIAL];
    int64_t stride[QP_CONV_MAX_SPATIAL];   /* >= 1 */
    int64_t dilation[QP_CONV_MAX_SPATIAL]; /* >= 1 */
    int64_t pad[QP_CONV_MAX_SPATIAL];      /* padding before each axis */
    int64_t pad_end[QP_CONV_MAX_SPATIAL];  /* after (pooling divisor) */
};

/* Work to do on parts of a convolution's output as soon as they are
 * final, while they are still in cache (a fused activation): fn(ctx,
 * begin, end) for flat element ranges [begin, end) of y that together
 * cover it once, called from any of the pool's threads, never twice at
 * the same time for overlapping ranges. */
struct qp_conv_epilogue {
    void (*fn)(void *ctx, size_t begin, size_t end);
    void *ctx;
};

/* Floats of scratch qp_conv_f32 needs (0 for depthwise and 1x1). */
size_t qp_conv_f32_scratch_size(const struct qp_conv_nd *g);

struct qp_pool;

/* Every kernel below splits its work over pool (core/parallel.h; NULL:
 * threads started per call). epi may be NULL. */
void qp_conv_f32(struct qp_pool *pool, const struct qp_conv_nd *g,
                 const float *x, const float *w, const float *bias, float *y,
                 float *scratch, const struct qp_conv_epilogue *epi);

/* The GEMM path alone (what qp_conv_f32 does without a SIMD variant),
 * with its own scratch size. */
size_t qp_conv_f32_gemm_scratch_size(const struct qp_conv_nd *g);
void qp_conv_f32_gemm(struct qp_pool *pool, const struct qp_conv_nd *g,
                     const float *x, const float *w, const float *bias,
                     float *y, float *scratch,
                     const struct qp_conv_epilogue *epi);

/* The im2col matrix of batch element n and group `group` of x [N, IC,
 * in...] for output positions [p0, p0 + count): col [IC/groups * kvol,
 * count] (kvol the kernel volume), row ic * kvol + tap (taps row-major
 * over the kernel), holding the input each position reads through that
 * tap, 0 in the padding. What the GEMM path multiplies the weight
 * [OC/groups, IC/groups * kvol] with; also the layer inputs whose
 * Hessian GPTQ needs. */
void qp_conv_f32_im2col(struct qp_pool *pool, const struct qp_conv_nd *g,
                        const float *x, size_t n, size_t group, size_t p0,
                        size_t count, float *col);

/* The variant qp_conv_f32 runs for g: "gemm", "avx512", ... (static). */
const char *qp_conv_f32_path(const struct qp_conv_nd *g);

size_t qp_conv_transpose_f32_scratch_size(const struct qp_conv_nd *g);

void qp_conv_transpose_f32(struct qp_pool *pool,
                           const struct qp_conv_nd *g, const float *x,
                           const float *w, const float *bias, float *y,
                           float *scratch, const struct qp_conv_epilogue *epi);

/* The GEMM path alone, as for qp_conv_f32_gemm. */
size_t qp_conv_transpose_f32_gemm_scratch_size(const struct qp_conv_nd *g);
void qp_conv_transpose_f32_gemm(struct qp_pool *pool,
                               const struct qp_conv_nd *g, const float *x,
                               const float *w, const float *bias, float *y,
                               float *scratch,
                               const struct qp_conv_epilogue *epi);

/* The variant qp_conv_transpose_f32 runs for g (static). */
const char *qp_conv_transpose_f32_path(const struct qp_conv_nd *g);

/* Pooling over x [N, C, in...] -> y [N, C, out...] (in_c == out_c == C).
 * Max: positions outside the input are skipped; a window with no input
 * position gives -inf. indices (optional, [N, C, out...]) receives the flat
 * index of each maximum in x, row-major (storage_order 0) or with the
 * spatial dims column-major (storage_order 1), as ONNX MaxPool. */
void qp_maxpool_f32(struct qp_pool *pool, const struct qp_conv_nd *g,
                    const float *x, float *y, int64_t *indices,
                    bool col_major_indices);

/* Average: the window is clipped to [-pad, in + pad_end) and then to the
 * input; the divisor is the clipped-to-padding size when
 * count_include_pad, else the number of input positions (ONNX Runtime's
 * rule, also the ONNX reference's). */
void qp_avgpool_f32(struct qp_pool *pool, const struct qp_conv_nd *g,
                    const float *x, float *y, bool count_include_pad);

#endif
