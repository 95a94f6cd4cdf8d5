/* quant/qparams.h: integer ranges, rounding, scales and zero points, and
 * the geometry of per-tensor / per-channel / group-wise parameters.
 *
 * Conventions (DESIGN.md §3): q = clamp(round(x / s) + z, qmin, qmax) with
 * x / s an IEEE float division, and x^ = s * (q - z).
 *
 *   symmetric : z = 0, qmin = -2^(b-1) (narrow: -2^(b-1) + 1), qmax = 2^(b-1) - 1,
 *               s = amax / qmax with amax = max(|lo|, |hi|)
 *   asymmetric: qmin = 0, qmax = 2^b - 1; the range is widened to hold 0
 *               (lo' = min(lo, 0), hi' = max(hi, 0)), s = (hi' - lo') / qmax,
 *               z = clamp(qmin - round(lo' / s), qmin, qmax)
 *
 * Scales are computed in double and rounded once to float. A range whose
 * closed-form scale is below QP_SCALE_MIN = 2^-32 is negligible: an
 * all-zero or all-denormal channel, or one decayed to |x| < qmax * 2^-32
 * (3e-8 for 8 bits; trained models have such channels). It gets s = 1 (z
 * as for the range [0, 0]): its elements quantize to the zero point, a
 * bias on the grid in_scale * s keeps the input's resolution, and the
 * requantization scale in_scale * s / out_scale stays in every flavor's
 * range, where a scale near 2^-32 or below would be flushed to a zero
 * multiplier by TFLite (the channel's bias lost) and refused by XNNPACK
 * (below 2^-32 for rndnu, denormal products for fp32). Every scale is so
 * in [2^-32, FLT_MAX] or 1: never zero, denormal, NaN or infinite.
 * Every grid value s * (q - z), q in [qmin, qmax], is a finite float: for
 * a range near +-FLT_MAX (where an end of the grid would lie beyond
 * FLT_MAX) s is lowered to FLT_MAX / max(z - qmin, qmax - z), clipping the
 * range's ends by at most a step.
 *
 * Geometry. A tensor is viewed as [outer, dim, inner] around its
 * quantization axis. Per-channel uses the output axis, group-wise blocks of
 * G consecutive elements along the input axis (for a conv, a scale per
 * output channel, input block and kernel position); when G does not divide
 * the axis the last group is partial (the ONNX blocked layout: ceil(dim / G)
 * scales along the axis), and its parameters come from its own elements.
 * When the input axis fits in one group, the group is the output channel's
 * whole reduction: per-channel (a depthwise conv [C,1,kh,kw] under g32 gets
 * one scale per channel, not one per kernel position). Parameter tensors
 * follow core/tensor.h (ONNX layout). */
#ifndef QP_QUANT_QPARAMS_H
#define QP_QUANT_QPARAMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/dtype.h"
#include "core/status.h"
#include "quant/scheme.h"

enum qp_round {
    QP_ROUND_HALF_AWAY = 0, /* ties away from zero (default, TFLite) */
    QP_ROUND_HALF_EVEN,     /* ties to even (ONNX, PyTorch) */
    QP_ROUND_COUNT
};

/* "half-away" / "half-even"; from_name also accepts "away" and "even". */
const char *qp_round_name(enum qp_round r);
bool qp_round_from_name(const char *name, enum qp_round *out);

/* Rounds v (|v| < 2^23) to an integer in mode r; exact (v - trunc(v) is
 * representable), no libm, independent of the floating-point environment. */
static inline int32_t qp_round_f32(float v, enum qp_round r)
{
    int32_t i = (int32_t)v; /* toward zero */
    float f = v - (float)i; /* exact: the fraction of v */
    if (r == QP_ROUND_HALF_AWAY)
        return i + (f >= 0.5f) - (f <= -0.5f);
    return i + (f > 0.5f || (f == 0.5f && (i & 1))) -
           (f < -0.5f || (f == -0.5f && (i & 1)));
}

/* q = clamp(round(x / s) + z, qmin, qmax) for one finite x. Clamping
 * x / s to [qmin - z, qmax - z] before rounding gives the same result (the
 * bounds are integers) and keeps the rounding argument small. */
static inline int32_t qp_quantize_f32(float x, float s, int32_t z, int32_t qmin,
                                      int32_t qmax, enum qp_round r)
{
    float v = x / s, lo = (float)(qmin - z), hi = (float)(qmax - z);
    v = v < lo ? lo : v;
    v = v > hi ? hi : v;
    return qp_round_f32(v, r) + z;
}

/* Integer range of a format. */
void qp_qformat_range(const struct qp_qformat *f, int32_t *qmin, int32_t *qmax);

/* Storage dtype: signed (symmetric) or unsigned (asymmetric); 2, 3 and 4
 * bits packed, 5..8 bits in a byte, 16 bits in two. */
enum qp_dtype qp_qformat_dtype(const struct qp_qformat *f);

/* The smallest scale qp_qparams_from_range gives a non-negligible range
 * (above). */
#define QP_SCALE_MIN 0x1p-32

/* Scale and zero point for the real range [lo, hi] (lo <= hi, finite),
 * by the closed forms above; rounding r is used for the zero point. */
void qp_qparams_from_range(const struct qp_qformat *f, enum qp_round r,
                           float lo, float hi, float *scale, int32_t *zp);

/* Which axes of a weight tensor are output and input. */
enum qp_wlayout {
    QP_WLAYOUT_TORCH = 0, /* [out, in, ...]: linear [O,I], conv OIHW (ONNX) */
    QP_WLAYOUT_TFLITE,    /* [out, ..., in]: linear [O,I], conv OHWI */
    QP_WLAYOUT_KERAS,     /* [..., in, out]: dense [I,O], conv HWIO */
    QP_WLAYOUT_IO,        /* [in, out, ...]: ONNX MatMul B [K,N], ConvTranspose
                           * IOHW */
    QP_WLAYOUT_COUNT
};

/* "torch" / "tflite" / "keras". */
const char *qp_wlayout_name(enum qp_wlayout l);
bool qp_wlayout_from_name(const char *name, enum qp_wlayout *out);

/* The layout of an ONNX operator's weight input (input 1): Conv's W is
 * torch (OIHW), ConvTranspose's W io (IOHW), MatMul's B keras ([.., K, N]),
 * Gemm's B torch with transB, else keras. False for other operators. */
bool qp_wlayout_of_onnx_op(const char *op_type, bool trans_b,
                           enum qp_wlayout *out);

/* Output and input axes of a tensor of rank ndim under layout l. Rank 0
 * and 1 have no output axis (-1) and input axis ndim - 1 (-1 for rank 0). */
void qp_wlayout_axes(enum qp_wlayout l, int ndim, int *out_axis, int *in_axis);

struct qp_qgeom {
    int axis;            /* -1 per-tensor */
    int64_t block;       /* 0 unless group-wise */
    size_t count;        /* number of scales */
    size_t outer, dim, inner; /* numel = outer * dim * inner */
    size_t nblk;         /* scales along the axis: dim, or ceil(dim / block) */
};

/* Geometry of granularity gran (group size for QP_GRAN_GROUP) on a tensor
 * of shape [ndim] under layout l. A tensor without an output axis (rank 0
 * or 1) is per-tensor under 'c'; a scalar is per-tensor under any
 * granularity. The result is normalised to the (axis, block) that
 * qp_qparams_infer (formats/dump.h) reads back from the scale shape
 * whenever both describe the same partition of the elements (one scale:
 * per-tensor; one group along the axis: block = dim or per-axis; a scale
 * per element: blocks of 1 on the last axis), so companions round-trip.
 * QP_E_INVAL for group < 1. */
enum qp_status qp_qgeom_init(struct qp_qgeom *g, int ndim, const int64_t *shape,
                             enum qp_gran gran, int64_t group,
                             enum qp_wlayout l, struct qp_error *err);

/* True when qp_qparams_infer reads g's (axis, block) back from the shape
 * of its scales, i.e. when companion tensors can carry them. False only
 * for group-wise geometries whose block size the scale shape does not
 * determine: a partial last group with ceil(dim / ceil(dim / G)) != G
 * (e.g. dim 96, G 64), or several groups on a rank-1 tensor. */
bool qp_qgeom_storable(const struct qp_qgeom *g, int ndim, const int64_t *shape);

/* A run of consecutive elements [off, off + len) whose scale index is idx
 * for every element (vec false) or idx + k for element off + k (vec true). */
struct qp_qseg {
    size_t off, len, idx;
    bool vec;
};

/* Segments tile the tensor in increasing element order. */
struct qp_qseg_iter {
    const struct qp_qgeom *g;
    size_t o, a; /* next (outer, axis) position */
    bool done;
};

void qp_qseg_begin(struct qp_qseg_iter *it, const struct qp_qgeom *g);
bool qp_qseg_next(struct qp_qseg_iter *it, struct qp_qseg *s);

/* Number of elements sharing scale index idx (a partial group has fewer). */
size_t qp_qgeom_members(const struct qp_qgeom *g, size_t idx);

/* Per-scale min and max of x (numel = outer * dim * inner elements).
 * QP_E_INVAL names the first non-finite element (`what` names the tensor). */
enum qp_status qp_qgeom_minmax(const struct qp_qgeom *g, const float *x,
                               const char *what, float *lo, float *hi,
                               struct qp_error *err);

#endif
