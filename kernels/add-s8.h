/* kernels/add-s8.h: TFLite's quantized elementwise add with rescale
 * (reference_integer_ops::Add): both inputs are brought to a common scale
 * with a left shift and their own multipliers, summed, and rescaled:
 *
 *   v1  = S(m1, s1, (x1[i] - zp1) * 2^left_shift)
 *   v2  = S(m2, s2, (x2[i % n2] - zp2) * 2^left_shift)
 *   out = clamp(S(mo, so, v1 + v2) + out_zp, act_min, act_max)
 *
 * S is the flavor's fixed-point scaling, qp_rq_scale_fixed (TFLite's
 * MultiplyByQuantizedMultiplierSmallerThanOneExp: double rounding in the
 * default build, single rounding with TFLITE_SINGLE_ROUNDING). TFLite
 * derives, with twice_max = 2 * max(scale1, scale2): m1 from scale1 /
 * twice_max, m2 from scale2 / twice_max, mo from twice_max /
 * (2^left_shift * out_scale); left_shift is 20 for int8/uint8. Sums are
 * int32 arithmetic modulo 2^32, as the compiled runtime on the inputs
 * TFLite accepts. Zero points are subtracted (TFLite's offsets are their
 * negation). */
#ifndef QP_KERNELS_ADD_S8_H
#define QP_KERNELS_ADD_S8_H

#include <stddef.h>
#include <stdint.h>

#include "core/dtype.h"
#include "core/status.h"
#include "kernels/requant.h"

struct qp_add_s8_params {
    enum qp_rq_flavor flavor;  /* an int32 fixed-point flavor */
    enum qp_dtype dtype;       /* inputs and output: int8 or uint8 */
    int32_t zero_point1, zero_point2, out_zero_point;
    int left_shift;            /* 0..30; TFLite: 20 */
    int32_t multiplier1, shift1;
    int32_t multiplier2, shift2;
    int32_t out_multiplier, out_shift;
    int32_t act_min, act_max;  /* inside the dtype's range */
};

/* QP_E_INVAL naming the parameter: a float or int64 flavor, another
 * dtype, left_shift outside 0..30, a shift outside the flavor's range, or
 * an activation range that is empty or leaves the dtype. */
enum qp_status qp_add_s8_check(const struct qp_add_s8_params *p,
                               struct qp_error *err);

/* out[i] for i < n; x2 has n2 elements (n2 divides n) repeated along x1:
 * a scalar, or a per-channel vector of the innermost dimension. To
 * broadcast x1 instead, swap the inputs with their parameters (the sum is
 * symmetric). p must pass qp_add_s8_check. */
void qp_add_s8_ref(const struct qp_add_s8_params *p, const void *x1,
                   const void *x2, size_t n, size_t n2, void *out);

/* One input's rescaled value, S(m, shift, (x - zp) * 2^left_shift) in
 * int32 arithmetic: the reference's step, shared by the prepared add's
 * tables. */
int32_t qp_add_s8_rescale(const struct qp_add_s8_params *p, int32_t x,
                          int32_t zp, int32_t m, int32_t shift);

/* A prepared add: each input's rescaled value S(m, s, (x - zp) <<
 * left_shift) depends on its byte alone, so it is looked up in a table of
 * 256 entries built with the reference's arithmetic; the int32 sum is then
 * requantized with the output multiplier as a struct qp_rq of the same
 * flavor (whose fixed-point epilogue is the reference's: scale, int32 add
 * of the zero point, clamp), which runs the SIMD requantization. The same
 * bytes as qp_add_s8_ref (tested on random inputs and parameters). */
struct qp_add_s8 {
    struct qp_add_s8_params p;
    int32_t t1[256], t2[256];     /* by byte value (uint8 view of the input) */
    struct qp_rq rq;
};

/* qp_add_s8_check, then the tables and the output rq (owned). On failure
 * a is left released. */
enum qp_status qp_add_s8_prepare(struct qp_add_s8 *a,
                                 const struct qp_add_s8_params *p,
                                 struct qp_error *err);
void qp_add_s8_release(struct qp_add_s8 *a);

/* As qp_add_s8_ref with a's parameters. */
void qp_add_s8_run(const struct qp_add_s8 *a, const void *x1, const void *x2,
                   size_t n, size_t n2, void *out);

#endif
