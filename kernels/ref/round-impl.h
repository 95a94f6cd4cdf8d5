/* kernels/ref/round-impl.h: rounding helpers the float-arithmetic kernels
 * share (internal to kernels/). */
#ifndef QP_KERNELS_REF_ROUND_IMPL_H
#define QP_KERNELS_REF_ROUND_IMPL_H

#include <math.h>

/* Round half to even without the floating-point environment: y - floor(y)
 * is exact for every float (0 once |y| >= 2^23, where y is an integer). */
static inline float qp_round_even_f(float y)
{
    float f = floorf(y);
    float d = y - f;
    if (d > 0.5f || (d == 0.5f && fmodf(f, 2.0f) != 0.0f))
        f += 1.0f;
    return f;
}

#endif
