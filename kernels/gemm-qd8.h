/* kernels/gemm-qd8.h: ExecuTorch's 8da4w linear layer as XNNPACK computes
 * it: int8 per-token asymmetric dynamic activations (XNNPACK "qd8") times
 * int4 symmetric group-wise weights ("qb4w": one bfloat16 scale per block
 * of `group` elements along k), int32 sums per group, float combination.
 *
 *   y[m, n] = x[m, k] . W^T (+ bias[n]),  W [n, k] row-major, int4
 *
 * The arithmetic, checked against google/XNNPACK at commit
 * 75db3c093b6d74fe90b8df82670cd8a01102ba38 (2026-08-21):
 *   src/xnnpack/quantization.h   xnn_qd8_asymmetric_quantization_params
 *   src/operator-run.c           xnn_compute_f32_qx8_convert
 *   src/f32-qs8-vcvt/gen/f32-qs8-vcvt-scalar-fmagic-u1.c
 *   src/reference/packing.cc     xnn_pack_qs8_qb4w_gemm_goi_w (ksum)
 *   src/microparams-init.c       xnn_init_blockwise_scale_bf16_params
 *   src/qd8-f32-qb4w-gemm/gen/qd8-f32-qb4w-gemm-{1x2,4x4}-minmax-scalar.c
 * every step in float32, each operation rounded on its own (no fused
 * multiply-add):
 *
 *  1. Per row of x: lo = min(0, min x), hi = max(0, max x);
 *     m = lo == hi ? 1 : 255 / (hi - lo)          (the quantizing multiplier)
 *     dl = lo * m, dh = hi * m;
 *     z = (-128 + dl) + (127 + dh) > 0 ? -128 - dl : 127 - dh,
 *     clamped to [-128, 127] and rounded half to even (lrintf);
 *     q[i] = clamp(rne(x[i] * m), -128 - z, 127 - z) + z;
 *     s_x = 1 / m                                 (the row's scale)
 *  2. Per weight block: s = bf16(scale) (round to nearest even; XNNPACK
 *     takes bfloat16 block scales and stores bf16(s) / 16 against weights
 *     kept shifted left by 4, which gives the same products).
 *  3. Per output column j, once: ksum[j] = 0, then for each pair of
 *     elements (2p, 2p + 1) in order: ksum -= (float)(w[2p] + w[2p+1]) * s
 *     of their block (XNNPACK's scalar packing, kr = 1; a lone last
 *     element pairs with 0). XNNPACK's SIMD configurations pack with kr
 *     4 or 8 and sum ksum in runs of 2 kr elements instead: their outputs
 *     may differ from the scalar ukernels' in the last bits; this follows
 *     the scalar ones.
 *  4. out = ksum[j] * (float)z; for each block b in order:
 *     acc = sum q[i] * w[j, i] (int32, exact); out += (float)acc * s_b;
 *     then out *= s_x; out += bias[j].
 *
 * XNNPACK requires k % group == 0 and group % 32 == 0 (qp_qb4w_init says
 * so in `xnnpack_shape`); the same order extends here to a partial last
 * block (the layers torchao would leave in float). Non-finite inputs are
 * outside the contract (XNNPACK's results for them are not defined either).
 *
 * Every variant (kernels/dispatch.h) gives the same bytes as the
 * reference in kernels/ref/gemm-qd8.c. */
#ifndef QP_KERNELS_GEMM_QD8_H
#define QP_KERNELS_GEMM_QD8_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/status.h"
#include "kernels/gemm-wq.h"

struct qp_pool;

/* One row's dynamic quantization (step 1). */
struct qp_qd8_params {
    float mul;   /* m: q = rne(x * m) + z */
    float scale; /* s_x = 1 / m */
    int32_t zp;  /* z in [-128, 127] */
};

/* Step 1's parameters from a row's min and max. */
void qp_qd8_params_from_range(float min, float max, struct qp_qd8_params *p);

/* Quantizes x[k] (k >= 1) into q[k] with parameters derived from its own
 * range (*p). */
void qp_qd8_quantize_row(const float *x, size_t k, struct qp_qd8_params *p,
                         int8_t *q);

/* A weight prepared for the product. Owns its buffers (qp_qb4w_release). */
struct qp_qb4w {
    size_t n, k, group, groups;
    const uint8_t *w;  /* borrowed: int4, two per byte, low nibble first,
                          element j * k + i, two's complement */
    uint16_t *scale;   /* [n * groups] bf16 block scales (step 2) */
    float *ksum;       /* [n] (step 3) */
    void *packed;      /* the SIMD variant's layout, or NULL */
    bool xnnpack_shape; /* k % group == 0 and group % 32 == 0 */
};

/* Prepares an int4 group-wise symmetric weight described by wq (dtype
 * QP_DTYPE_I4, QP_WQ_GROUP, zero points absent or zero). QP_E_UNSUPPORTED
 * naming the weight for any other form, or a block scale whose bf16 is
 * not finite and positive (XNNPACK refuses those); QP_E_NOMEM. */
enum qp_status qp_qb4w_init(struct qp_qb4w *b, const struct qp_wq *wq,
                            struct qp_error *err);
void qp_qb4w_release(struct qp_qb4w *b);

/* Scratch bytes qp_gemm_qd8 needs for m rows. */
size_t qp_gemm_qd8_scratch_size(const struct qp_qb4w *b, size_t m);

/* y[r * ldy + j] for r < m, j < n as steps 1-4 (bias may be NULL), the
 * columns split over pool's threads (NULL: one). scratch holds
 * qp_gemm_qd8_scratch_size(b, m) bytes (any alignment). */
void qp_gemm_qd8(struct qp_pool *pool, const struct qp_qb4w *b, const float *x,
                 size_t ldx, size_t m, const float *bias, float *y, size_t ldy,
                 void *scratch);

#endif
